//! ECUFlash XML definitions (`ecuflash::xml`, `ecuflash::merge`) and
//! reading the tables they describe out of a ROM (`decode::read_table`).
//!
//! The input is one definition file. Read plainly, it must be what
//! roxmltree's parse reads. The family identifies it from its
//! head and whole (`ecuflash::EcuFlash` as ecu-tables asks it), then it is
//! parsed, merged alone and as its
//! own parent (so the include-merging rules run on real content), every
//! resolved table is sized, looked up, read from a 64 KiB ROM and displayed
//! through its scaling's expression and printf format.
//! Errors are fine; panics, overflows and runaway allocations are not.
#![no_main]

#[path = "shared/definitions.rs"]
mod definitions;

use definitions::exercise;
use ecu_model::family::{Format, HEAD_BYTES};
use ecuflash::EcuFlash;
use ecuflash::merge::{ChainFile, merge};
use ecuflash::plain::parse_plain;
use ecuflash::xml::{parse_definition, parse_document, parse_romid_only};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let head = &data[..data.len().min(HEAD_BYTES)];
    let _ = EcuFlash.claims("fuzz.xml", head);
    let _ = EcuFlash.identify("fuzz.xml", head, false);
    let _ = EcuFlash.identify("fuzz.xml", data, true);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_romid_only(text);
    // The plain reader answers as roxmltree's parse, or not at all.
    if let Some(read) = parse_plain(text) {
        assert_eq!(Ok(read), parse_document(text), "parse_plain differs");
    }
    let Ok(raw) = parse_definition(text) else {
        return;
    };
    let alone = merge(
        "fuzz.xml".into(),
        &[ChainFile {
            label: "fuzz".into(),
            raw: &raw,
        }],
    );
    exercise(&alone);
    let chained = merge(
        "fuzz.xml".into(),
        &[
            ChainFile {
                label: "base".into(),
                raw: &raw,
            },
            ChainFile {
                label: "fuzz".into(),
                raw: &raw,
            },
        ],
    );
    exercise(&chained);
});
