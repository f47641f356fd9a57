//! Helpers shared by the fixture tests of every definition family.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use ecu_tables::Explorer;
use ecu_tables::decode::{Cell, read_table};
use ecu_tables::definition::Definition;
use ecu_tables::patch::{self, Op, Target};
use ecu_tables::scaling::Kind;
use std::path::PathBuf;
use std::sync::Arc;

/// An explorer reading ECUFlash and RomRaider definitions through the
/// family crates linked in, as the server reads them through their
/// components.
pub fn explorer() -> Explorer {
    Explorer::with_formats(vec![
        Arc::new(ecuflash::EcuFlash),
        Arc::new(romraider::RomRaider),
    ])
}

/// An explorer with the ECUFlash family alone, as a server whose plugins
/// directory lacks romraider.wasm.
pub fn ecuflash_only() -> Explorer {
    Explorer::with_formats(vec![Arc::new(ecuflash::EcuFlash)])
}

/// A fresh scratch directory for one test (`tag`) of one process.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecu-fixtures-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Patches cell (0,0) of every table in memory to a value different from
/// the current one and checks that reading it back gives that value.
pub fn patch_round_trip(def: &Definition, image: &[u8]) -> Vec<String> {
    let mut failures = Vec::new();
    // One working copy, restored table by table (a copy per table of a
    // 1 MiB image times 100 000 tables is far too slow).
    let mut patched = image.to_vec();
    for t in &def.tables {
        let before = match read_table(t, image) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{}: read: {e}", t.id));
                continue;
            }
        };
        let op = match &t.scaling.kind {
            Kind::Blobs(choices) => {
                let current = match before.cell(0, 0) {
                    Cell::Blob(name, _) => name.clone(),
                    Cell::Num(_) => None,
                };
                let Some((name, _)) = choices.iter().find(|(n, _)| Some(n) != current.as_ref())
                else {
                    continue; // a single-choice switch cannot change
                };
                Op::Choose(name.clone())
            }
            Kind::Bit => Op::Set(1.0 - before.value(0, 0)),
            Kind::Numeric { from: None, .. } => continue, // read-only by design
            Kind::Numeric { .. } => {
                let raw = before.raw[0];
                let new_raw = if raw == 0.0 { 1.0 } else { raw - 1.0 };
                Op::Set(t.scaling.to_physical(new_raw))
            }
        };
        let target = Target::cell(0, 0);
        if let Err(e) = patch::apply(t, &before, &mut patched, &op, &target, true) {
            failures.push(format!("{}: patch {op:?}: {e}", t.id));
            continue;
        }
        let after = read_table(t, &patched).unwrap();
        let ok = match (&op, after.cell(0, 0)) {
            (Op::Choose(n), Cell::Blob(Some(got), _)) => got == n,
            (Op::Set(v), Cell::Num(got)) => (got - v).abs() <= 1e-6 * v.abs().max(1.0),
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{}: wanted {op:?}, read back {:?}",
                t.id,
                after.cell(0, 0)
            ));
        }
        // Restore the table (bit tables and blobs included) for the next one.
        let span = t.address as usize..(t.address as usize + t.byte_len()).min(image.len());
        patched[span.clone()].copy_from_slice(&image[span]);
    }
    failures
}
