//! A minimal plugin with world-level exports.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Greeter;

impl Guest for Greeter {
    fn hello() -> String {
        "hello from greeter".into()
    }

    fn greet(name: String) -> String {
        format!("hello, {name}")
    }
}

// Off wasm the generated export symbols clash with the host linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Greeter);
