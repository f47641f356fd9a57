//! The deterministic generator of samples/ecu/BT000001.bin, the synthetic
//! ROM matching the sample definitions in samples/ecu/definitions. Kept in
//! the library so a test can check that the committed image is exactly what
//! the generator produces (`cargo run -p ecu-tables --example make_sample_rom`).
//!
//! The image uses the 1 MiB M32186F8 layout because the `mitsucan` checksum
//! is defined over exactly that; everything but the id, the tables and the
//! checksum word is erased flash (0xFF), so it compresses to a few KiB.

use crate::Explorer;
use crate::checksum::Module;
use crate::definition::{Axis, AxisSource, Table};
use crate::scaling::{Kind, Scaling};
use std::path::Path;

const SIZE: usize = 0x10_0000;
const ID_ADDRESS: usize = 0x5002A;
const ID: [u8; 4] = [0x42, 0x54, 0x00, 0x01];

/// Builds the sample image from the definitions in `defs`, read through
/// `explorer`'s families, using `scratch` (a writable file path) to let the
/// definitions match the id.
pub fn generate(explorer: &mut Explorer, defs: &Path, scratch: &Path) -> Result<Vec<u8>, String> {
    let mut image = vec![0xFFu8; SIZE];
    image[ID_ADDRESS..ID_ADDRESS + 4].copy_from_slice(&ID);
    // The id alone is enough for the definition to match; the library then
    // tells us where every table and axis lives.
    std::fs::write(scratch, &image).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let opened = explorer.open(defs, scratch).map_err(|e| e.to_string())?;
    let def = opened.require_definition().map_err(|e| e.to_string())?;
    for table in &def.tables {
        fill_table(table, &mut image)?;
    }
    Module::MitsuCan
        .fix(&mut image)
        .map_err(|e| e.to_string())?;
    Ok(image)
}

/// Physical breakpoints of each sample axis, by axis name.
fn axis_values(name: &str, n: usize) -> Vec<f64> {
    let v: Vec<f64> = match name {
        "Load" => (1..=10).map(|i| f64::from(i) * 20.0).collect(),
        "RPM" if n == 12 => vec![
            800.0, 1200.0, 1600.0, 2000.0, 2500.0, 3000.0, 3500.0, 4000.0, 4500.0, 5000.0, 6000.0,
            7000.0,
        ],
        "RPM" => vec![
            2000.0, 2500.0, 3000.0, 3500.0, 4000.0, 5000.0, 6000.0, 7000.0,
        ],
        "Coolant Temp" => vec![-20.0, -10.0, 0.0, 10.0, 20.0, 40.0, 60.0, 80.0],
        _ => (0..n).map(|i| i as f64).collect(),
    };
    v.into_iter().take(n).collect()
}

/// Plausible smooth cell values in physical units.
fn cell_value(table: &str, r: usize, c: usize, y: f64, x: f64) -> f64 {
    match table {
        "Ignition Timing Base Map" => (10.0 + y / 400.0 - x / 12.0).clamp(-5.0, 45.0),
        "Fuel Map" => (14.7 - (x - 60.0).max(0.0) / 40.0 - y / 7000.0).clamp(11.0, 14.7),
        "Boost Target" => ((y - 2000.0) / 250.0 + c as f64 * 1.5).min(18.0),
        "Idle Speed Target" => {
            [1400.0, 1300.0, 1200.0, 1100.0, 1000.0, 900.0, 850.0, 800.0][r.min(7)]
        }
        "Rev Limiter" => [7000.0, 6800.0][r.min(1)],
        "Injector Scaling" => 560.0,
        "Radiator Fan On Temperature" => 95.5,
        _ => 0.0,
    }
}

fn encode(scaling: &Scaling, value: f64, out: &mut [u8]) -> Result<(), String> {
    let Kind::Numeric {
        from: Some(from), ..
    } = &scaling.kind
    else {
        return Err(format!("scaling {} cannot be written", scaling.name));
    };
    let raw = from.eval(value).round();
    let (lo, hi) = scaling.storage.int_range().unwrap_or((f64::MIN, f64::MAX));
    if !(lo..=hi).contains(&raw) {
        return Err(format!("{value} does not fit scaling {}", scaling.name));
    }
    scaling.storage.write(scaling.endian, raw, out);
    Ok(())
}

fn fill_table(table: &Table, image: &mut [u8]) -> Result<(), String> {
    let mut axis = |a: &Option<Axis>| -> Result<Vec<f64>, String> {
        let Some(a) = a else { return Ok(vec![0.0]) };
        let name = a.name.as_deref().unwrap_or("");
        let values = axis_values(name, a.len());
        if let AxisSource::Dynamic {
            address, scaling, ..
        } = &a.source
        {
            let size = scaling.storage.size();
            for (i, v) in values.iter().enumerate() {
                let at = *address as usize + i * size;
                encode(scaling, *v, &mut image[at..at + size])?;
            }
        }
        Ok(values)
    };
    let ys = axis(&table.row_axis)?;
    let xs = axis(&table.col_axis)?;
    let scaling = &table.scaling;
    if let Kind::Blobs(choices) = &scaling.kind {
        let (_, bytes) = &choices[0];
        let at = table.cell_offset(0, 0);
        image[at..at + bytes.len()].copy_from_slice(bytes);
        return Ok(());
    }
    let size = scaling.storage.size();
    for r in 0..table.rows() {
        for c in 0..table.cols() {
            let v = cell_value(
                &table.name,
                r,
                c,
                ys[r.min(ys.len() - 1)],
                xs[c.min(xs.len() - 1)],
            );
            let at = table.cell_offset(r, c);
            encode(scaling, v, &mut image[at..at + size])?;
        }
    }
    Ok(())
}
