//! Example plugin: one tool, `convert_pressure`.
//!
//! Shows a tool's three parts: arguments (the WIT parameters), a structured
//! result (a WIT record, which the host turns into `structuredContent` and an
//! `outputSchema`) and a typed error (`tool-error`: `isError: true` with
//! `CODE: message` text an agent can act on).

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::errors::ToolError;
use exports::benchtop_example::units::convert::{Conversion, Guest};

/// Kilopascals per unit.
fn kpa_per(unit: &str) -> Option<(f64, &'static str)> {
    match unit.to_ascii_lowercase().as_str() {
        "kpa" => Some((1.0, "kPa")),
        "psi" => Some((6.894_757_293_168, "psi")),
        "bar" => Some((100.0, "bar")),
        _ => None,
    }
}

fn unknown_unit(unit: &str) -> ToolError {
    ToolError {
        code: "UNKNOWN_UNIT".into(),
        message: format!("`{unit}` is not a pressure unit this tool knows; use kpa, psi or bar"),
    }
}

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Units;

impl Guest for Units {
    fn convert_pressure(value: f64, from: String, to: String) -> Result<Conversion, ToolError> {
        if !value.is_finite() {
            return Err(ToolError {
                code: "BAD_VALUE".into(),
                message: format!("the value must be a finite number, not {value}"),
            });
        }
        let (from_kpa, from_name) = kpa_per(&from).ok_or_else(|| unknown_unit(&from))?;
        let (to_kpa, to_name) = kpa_per(&to).ok_or_else(|| unknown_unit(&to))?;
        let converted = value * from_kpa / to_kpa;
        Ok(Conversion {
            value: converted,
            unit: to_name.to_ascii_lowercase(),
            text: format!("{value} {from_name} = {converted:.2} {to_name}"),
        })
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Units);
