//! Example plugin: a tool whose result a view draws (MCP Apps).
//!
//! The view (`src/dial.html`) speaks the MCP Apps protocol with the client
//! over `postMessage`: it asks `ui/initialize`, says
//! `ui/notifications/initialized`, then draws each
//! `ui/notifications/tool-result` it receives.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use exports::benchtop_example::gauge::gauge::{Guest, Reading};

const FULL_SCALE_KPA: f64 = 300.0;
const KPA_PER_PSI: f64 = 6.894_757_293_168;

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Gauge;

impl Guest for Gauge {
    fn show_boost(kpa: f64) -> Reading {
        // Out-of-range readings are pinned to the dial, as a real gauge does.
        let kpa = if kpa.is_finite() {
            kpa.clamp(0.0, FULL_SCALE_KPA)
        } else {
            0.0
        };
        Reading {
            kpa,
            psi: kpa / KPA_PER_PSI,
            full_scale: FULL_SCALE_KPA,
        }
    }

    fn dial() -> String {
        include_str!("dial.html").into()
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Gauge);
