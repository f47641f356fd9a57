//! MCP Apps views (`io.modelcontextprotocol/ui`) for the other plugins'
//! tools: each view is one self-contained HTML page, served as a `ui://`
//! resource (wit/views). A tool names its view with `@ui ui://…` in its own
//! WIT; the host links the two by URI alone.
//!
//! The pages live in `assets/` and are embedded at build time. Each one
//! includes the shared bridge script (`assets/bridge.js`, the postMessage
//! JSON-RPC client) where it says `/*@bridge*/`, so views share it without a
//! network fetch.

mod component;

/// The bridge script every view includes.
const BRIDGE: &str = include_str!("../assets/bridge.js");

/// The marker in a page that the bridge script replaces.
const BRIDGE_MARKER: &str = "/*@bridge*/";

/// The ECU table view's page (`ui://benchtop/ecu-table`).
pub const ECU_TABLE: &str = include_str!("../assets/ecu-table.html");

/// The log view's page (`ui://benchtop/log-plot`).
pub const LOG_PLOT: &str = include_str!("../assets/log-plot.html");

/// The emulator view's page (`ui://benchtop/emulator`, cp1600 and x86-inspect).
pub const EMULATOR: &str = include_str!("../assets/emulator.html");

/// A page with the bridge script in place of its marker.
pub fn page(source: &str) -> String {
    source.replacen(BRIDGE_MARKER, BRIDGE, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGES: [(&str, &str); 3] = [
        ("ecu-table", ECU_TABLE),
        ("log-plot", LOG_PLOT),
        ("emulator", EMULATOR),
    ];

    #[test]
    fn every_page_includes_the_bridge_once() {
        for (name, source) in PAGES {
            assert_eq!(source.matches(BRIDGE_MARKER).count(), 1, "{name}");
            let html = page(source);
            assert!(!html.contains(BRIDGE_MARKER), "{name}");
            assert!(html.contains("ui/initialize"), "{name}");
        }
    }

    #[test]
    fn pages_are_self_contained() {
        // The views run with no network (their CSP names no domain): any
        // outside reference would fail in the client's frame.
        for (name, source) in PAGES {
            let html = page(source).to_ascii_lowercase();
            for bad in [
                "http://", "https://", "//cdn", "src=\"//", "@import", "<link",
            ] {
                assert!(!html.contains(bad), "{name} refers outside itself: {bad}");
            }
            assert!(html.starts_with("<!doctype html>"), "{name}");
        }
    }
}
