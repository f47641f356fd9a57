//! Writes samples/ecu/BT000001.bin, the synthetic ROM matching the sample
//! definitions in samples/ecu/definitions (deterministic: same bytes every run).
//!
//!     cargo run -p ecu-tables --example make_sample_rom [-- OUT.bin [DEFINITIONS_DIR]]

use std::path::{Path, PathBuf};

fn main() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/ecu");
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .map_or(samples.join("BT000001.bin"), PathBuf::from);
    let defs = args
        .next()
        .map_or(samples.join("definitions"), PathBuf::from);
    let mut explorer =
        ecu_tables::Explorer::with_formats(vec![std::sync::Arc::new(ecuflash::EcuFlash)]);
    let result = ecu_tables::sample::generate(&mut explorer, &defs, &out).and_then(|image| {
        std::fs::write(&out, image).map_err(|e| format!("{}: {e}", out.display()))
    });
    match result {
        Ok(()) => println!("wrote {}", out.display()),
        Err(e) => {
            eprintln!("make_sample_rom: {e}");
            std::process::exit(1);
        }
    }
}
