//! Example plugin: a destructive tool that asks first (MCP elicitation).
//!
//! `ask-keyed` works with every client: with one that answers server
//! requests (MCP 2025-06-18 and later) the call waits for the answer; with
//! one speaking MCP 2026-07-28, the first round returns `cancelled` while
//! the host sends the question back as `input_required`, and the whole call
//! runs again with the answer. So: ask before changing anything, and never
//! keep what a first round did.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::elicit::{Answer, ask_keyed};
use benchtop::host::errors::ToolError;
use exports::benchtop_example::eraser::eraser::Guest;

const SLOTS: u8 = 8;

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Eraser;

impl Guest for Eraser {
    fn erase_slot(slot: u8, confirm: Option<bool>) -> Result<String, ToolError> {
        if slot >= SLOTS {
            return Err(ToolError {
                code: "NO_SLOT".into(),
                message: format!("slot {slot} does not exist; slots are 0 to {}", SLOTS - 1),
            });
        }
        if confirm != Some(true) {
            // An empty schema asks only to confirm.
            match ask_keyed("confirm_erase", &format!("Erase slot {slot}?"), "") {
                Answer::Accepted(_) => {}
                Answer::Declined | Answer::Cancelled => {
                    return Ok(format!("slot {slot} kept: the user said no"));
                }
                Answer::Unsupported => {
                    return Err(ToolError {
                        code: "CONFIRMATION_REQUIRED".into(),
                        message: format!(
                            "this client cannot ask the user; call again with confirm: true once they agree to erase slot {slot}"
                        ),
                    });
                }
            }
        }
        Ok(format!("slot {slot} erased"))
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Eraser);
