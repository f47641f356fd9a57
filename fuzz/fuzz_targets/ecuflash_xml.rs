//! ECUFlash XML definitions (`ecu_tables::xml`, `definition::merge`) and
//! reading the tables they describe out of a ROM (`decode::read_table`).
//!
//! The input is one definition file. It is parsed, merged alone and as its
//! own parent (so the include-merging rules run on real content), every
//! resolved table is sized, looked up, read from a 64 KiB ROM and displayed
//! through its scaling's expression and printf format.
//! Errors are fine; panics, overflows and runaway allocations are not.
#![no_main]

use ecu_tables::checksum::Module;
use ecu_tables::decode::read_table;
use ecu_tables::definition::{ChainFile, Definition, merge};
use ecu_tables::xml::{parse_definition, parse_romid_only};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn rom() -> &'static [u8] {
    static ROM: OnceLock<Vec<u8>> = OnceLock::new();
    ROM.get_or_init(|| {
        // A fixed, varied image: a xorshift byte stream.
        let mut x = 0x2545_F491u32;
        (0..0x1_0000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    })
}

fn exercise(def: &Definition) {
    let rom = rom();
    let _ = (
        def.display_name(),
        def.vehicle(),
        def.ecu_id(),
        def.memmodel(),
    );
    for t in &def.tables {
        let _ = (t.dimensions(), t.byte_len(), t.unit());
        let _ = def.table(&t.id);
        if let Ok(data) = read_table(t, rom) {
            for r in 0..data.rows.min(8) {
                for c in 0..data.cols.min(8) {
                    let _ = data.display(r, c);
                }
            }
            for axis in [&data.row_axis, &data.col_axis].into_iter().flatten() {
                let _ = axis.labels.len();
            }
        }
    }
    let _ = def.table("Timing Map");
    let _ = def.checksum_module().map(Module::by_name);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_romid_only(text);
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
