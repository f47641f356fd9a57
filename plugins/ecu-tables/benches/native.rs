//! Native timings of the ECU tools, printed as markdown table rows:
//! first call (definition parse + ROM load), warm read_table, patch_table.
//! Runs on ../shared/fixtures/ecuflash when present (the targets are
//! stated for those definitions), else on samples/ecu.
//!
//!     cargo bench -p ecu-tables --bench native

use ecu_tables::Explorer;
use ecu_tables::tools::{self, Config, OpKind, PatchTable, ReadTable};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An explorer reading ECUFlash definitions through the family crate
/// linked in (the server reads them through its component).
fn explorer() -> Explorer {
    Explorer::with_formats(vec![Arc::new(ecuflash::EcuFlash)])
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = manifest.join("../../../shared/fixtures/ecuflash");
    let (label, defs, rom, table): (&str, PathBuf, PathBuf, &str) =
        if fixtures.join("roms").is_dir() {
            (
                "fixtures 56890009",
                fixtures.clone(),
                fixtures.join("roms/56890009.bin"),
                "High Octane Timing Map",
            )
        } else {
            (
                "samples BT000001",
                manifest.join("../../samples/ecu/definitions"),
                manifest.join("../../samples/ecu/BT000001.bin"),
                "Ignition Timing Base Map",
            )
        };
    let cfg = Config::with_definitions(&defs);
    let read = ReadTable {
        rom: rom.to_string_lossy().into(),
        table: table.into(),
        ..Default::default()
    };

    // First call: a fresh Explorer has nothing cached.
    let firsts: Vec<Duration> = (0..20)
        .map(|_| {
            let mut ex = explorer();
            let t = Instant::now();
            tools::read_table(&mut ex, &cfg, &read).unwrap();
            t.elapsed()
        })
        .collect();

    let mut ex = explorer();
    tools::read_table(&mut ex, &cfg, &read).unwrap();
    let warm: Vec<Duration> = (0..500)
        .map(|_| {
            let t = Instant::now();
            tools::read_table(&mut ex, &cfg, &read).unwrap();
            t.elapsed()
        })
        .collect();

    let dir = std::env::temp_dir().join(format!("ecu-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("rom.bin");
    std::fs::copy(&rom, &copy).unwrap();
    let mut perms = std::fs::metadata(&copy).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&copy, perms).unwrap();
    let patches: Vec<Duration> = (0..40)
        .map(|i| {
            let args = PatchTable {
                rom: copy.to_string_lossy().into(),
                table: table.into(),
                op: OpKind::Add,
                value: Some(if i % 2 == 0 { 1.0 } else { -1.0 }),
                min: None,
                max: None,
                row: Some(5),
                col: None,
                choice: None,
                force: false,
                rows_where: None,
                cols_where: None,
                cells: None,
            };
            let t = Instant::now();
            tools::patch_table(&mut ex, &cfg, &args).unwrap();
            t.elapsed()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);

    println!("| ecu-tables (native, {label}) | median | target |");
    println!("|---|---|---|");
    println!(
        "| read_table first call (parse + load), `{table}` | {} | < 100 ms |",
        ms(median(firsts))
    );
    println!(
        "| read_table warm, `{table}` | {} | < 2 ms |",
        ms(median(warm))
    );
    println!(
        "| patch_table round-trip (patch + checksum + atomic write + fsync) | {} | — |",
        ms(median(patches))
    );
    subarudefs(manifest);
}

/// The first rom_info over the SubaruDefs tree (333 files), natively: the
/// share of the in-component figure that is our own code, not the sandbox.
fn subarudefs(manifest: &Path) {
    let tree = manifest.join("../../../shared/fixtures/realworld/ecuflash/subarudefs_standard");
    if !tree.is_dir() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ecu-bench-sd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rom = dir.join("A2UG000N.bin");
    let mut image = vec![0u8; 0x10_0000];
    image[0x2000..0x2008].copy_from_slice(b"A2UG000N");
    std::fs::write(&rom, &image).unwrap();
    let cfg = Config::with_definitions(&tree);
    let firsts: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            tools::rom_info(&mut explorer(), &cfg, &rom.to_string_lossy()).unwrap();
            t.elapsed()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "| rom_info first call, SubaruDefs tree (333 files) | {} | < 100 ms in the component |",
        ms(median(firsts))
    );
}
