//! x86-inspect snapshot restore (`machine::Machine::restore`). A snapshot
//! is outside data (its CRC-32 is no seal): any payload must give a machine
//! or an error, never a panic, an overflow or an allocation past the limits.
//!
//! Random bytes rarely get past the first fields, so the input edits a real
//! snapshot instead (`shared/edits.rs` says how). The payload is
//! sealed again in a proper frame, as a crafted snapshot would be, then
//! restored; a machine that restores runs 2,000 instructions and is
//! snapshotted again. The program the snapshot names is written to a
//! scratch folder first, since restore reads it (as a load would).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "shared/edits.rs"]
mod edits;
use std::sync::OnceLock;
use x86_inspect::cpu::Model;
use x86_inspect::machine::{Machine, SNAPSHOT_MAGIC, SNAPSHOT_VERSION};

/// mov ah,9 ; mov dx,msg ; int 21h ; inc byte [msg] ; jmp short $-10 ; msg db 'hi$'
const PROGRAM: &[u8] = &[
    0xB4, 0x09, 0xBA, 0x0E, 0x01, 0xCD, 0x21, 0xFE, 0x06, 0x0E, 0x01, 0xEB, 0xF3, 0x90, b'h', b'i',
    b'$',
];

fn base() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        // One folder for every run (libFuzzer has no hook to remove it at
        // exit): concurrent runs write the same bytes.
        let dir = std::env::temp_dir().join("benchtop-fuzz-x86");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("T.COM");
        std::fs::write(&path, PROGRAM).unwrap();
        let mut m = Machine::load(1, &path, PROGRAM, "", Model::I80186, false).unwrap();
        let _ = m.run(500, &mut |_, _| true);
        let text = m.snapshot().unwrap();
        plugin_kit::blob::open(SNAPSHOT_MAGIC, SNAPSHOT_VERSION, usize::MAX, &text)
            .unwrap()
            .1
    })
}

fuzz_target!(|edits: &[u8]| {
    let payload = edits::edited(base(), edits);
    let text = plugin_kit::blob::seal(SNAPSHOT_MAGIC, SNAPSHOT_VERSION, &payload);
    let Ok(mut m) = Machine::restore(1, &text) else {
        return;
    };
    let _ = m.run(2_000, &mut |_, _| true);
    let _ = m.dos.stdout.read(0, 64);
    let _ = m.snapshot();
});
