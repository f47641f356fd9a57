//! Example plugin: a resource template, `notes://{name}`, and a tool that
//! changes what it serves.
//!
//! A plugin instance lives as long as the server (until a hot swap), so
//! state kept in a `static` survives between calls. Keep it bounded: a
//! plugin that grows without limit is reset by its memory cap, and loses
//! everything it held.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::errors::ToolError;
use benchtop::host::resources;
use exports::benchtop_example::notes::notes::Guest;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// At most this many notes are kept.
const MAX_NOTES: usize = 100;
/// At most this many bytes per note.
const MAX_TEXT: usize = 4096;

static NOTES: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn check_name(name: &str) -> Result<(), ToolError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(ToolError {
            code: "BAD_NAME".into(),
            message: "a note's name is 1 to 64 characters of a-z, 0-9 and -".into(),
        })
    }
}

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Notes;

impl Guest for Notes {
    fn write_note(name: String, text: String) -> Result<String, ToolError> {
        check_name(&name)?;
        if text.len() > MAX_TEXT {
            return Err(ToolError {
                code: "TOO_LONG".into(),
                message: format!(
                    "a note holds at most {MAX_TEXT} bytes; this one has {}",
                    text.len()
                ),
            });
        }
        let mut notes = NOTES.lock().unwrap_or_else(|e| e.into_inner());
        if notes.len() >= MAX_NOTES && !notes.contains_key(&name) {
            return Err(ToolError {
                code: "FULL".into(),
                message: format!("{MAX_NOTES} notes are kept; replace one of them"),
            });
        }
        notes.insert(name.clone(), text);
        // Subscribers of this one URI hear of it (the host coalesces bursts).
        let uri = format!("notes://{name}");
        resources::changed(&uri);
        Ok(format!("saved {uri}"))
    }

    fn note(name: String) -> Result<String, ToolError> {
        check_name(&name)?;
        let notes = NOTES.lock().unwrap_or_else(|e| e.into_inner());
        notes.get(&name).cloned().ok_or_else(|| ToolError {
            code: "NO_NOTE".into(),
            message: format!("no note named `{name}`; write one with write_note"),
        })
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Notes);
