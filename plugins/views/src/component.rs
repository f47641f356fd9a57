//! wit-bindgen glue: each `@resource ui://…` function returns its page.

wit_bindgen::generate!({
    path: "../../wit/views",
    world: "plugin",
    generate_all,
});

use exports::benchtop::views::views;

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Component;

impl views::Guest for Component {
    fn ecu_table() -> String {
        crate::page(crate::ECU_TABLE)
    }

    fn log_plot() -> String {
        crate::page(crate::LOG_PLOT)
    }

    fn emulator() -> String {
        crate::page(crate::EMULATOR)
    }
}

// Only the component exports the WIT names: a native cdylib's linker
// version script cannot spell `benchtop:views/views@0.1.0#…`.
#[cfg(target_arch = "wasm32")]
export!(Component);
