//! Example plugin: completion for a prompt argument (`paint`'s `color`) and
//! a resource template variable (`colors://{name}`).

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::errors::ToolError;
use exports::benchtop_example::colors::colors::Guest;

const PALETTE: &[(&str, &str)] = &[
    ("amber", "#FFBF00"),
    ("aqua", "#00FFFF"),
    ("azure", "#007FFF"),
    ("crimson", "#DC143C"),
    ("cyan", "#00FFFF"),
    ("teal", "#008080"),
];

fn names_starting(prefix: &str) -> Vec<String> {
    let prefix = prefix.to_ascii_lowercase();
    PALETTE
        .iter()
        .filter(|(name, _)| name.starts_with(&prefix))
        .map(|(name, _)| name.to_string())
        .collect()
}

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Colors;

impl Guest for Colors {
    fn color(name: String) -> Result<String, ToolError> {
        PALETTE
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&name))
            .map(|(n, hex)| format!("{n}: {hex}"))
            .ok_or_else(|| ToolError {
                code: "UNKNOWN_COLOR".into(),
                message: format!("no colour named `{name}`; completion lists the names"),
            })
    }

    fn paint(color: String) -> String {
        format!("Where on a gauge dashboard does {color} work best, and for which warnings?")
    }

    fn complete(target: String, argument: String, value: String) -> Vec<String> {
        match (target.as_str(), argument.as_str()) {
            ("paint", "color") | ("colors://{name}", "name") => names_starting(&value),
            // Anything else: no suggestions (never an error).
            _ => Vec::new(),
        }
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Colors);
