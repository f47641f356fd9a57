//! RomRaider definitions (`romraider::document`, the family component's reader): the sniff, the parse,
//! and every `<rom>` of the document resolved with its `base=` chain, then
//! each table read from a 64 KiB ROM and displayed as for ECUFlash.
//! Errors are fine; panics, overflows and runaway allocations are not.
#![no_main]

#[path = "shared/definitions.rs"]
mod definitions;

use definitions::exercise;
use libfuzzer_sys::fuzz_target;
use romraider::document::{is_romraider, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = is_romraider(text);
    let Ok(document) = parse(text) else {
        return;
    };
    // A document names at most a few hundred roms; bound the work per input.
    let ids: Vec<String> = document
        .roms()
        .filter_map(|id| id.xmlid.clone())
        .take(16)
        .collect();
    for id in ids {
        if let Ok(definition) = document.definition(&id, "fuzz.xml".into()) {
            exercise(&definition);
        }
    }
});
