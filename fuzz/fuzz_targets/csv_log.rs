//! CSV datalogs (`log_query::reader::parse`): plain, EvoScan, RomRaider
//! and the other loggers' layouts (preambles, units and alias rows, VCDS
//! groups), in UTF-8, Windows-1252 or UTF-16, with the detection, quoting,
//! decimal commas and mid-file header changes they bring.
//!
//! The first input byte picks the file name (names select RomRaider and
//! carry the log's date) and the size of the reads; the rest is the file. A
//! parsed log must be rectangular: every column holds exactly one cell per
//! row; and reading the file a few bytes at a time (as the plugin reads
//! logs, in pieces) must give exactly what parsing it whole does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_query::logs::{date_from_clock, date_from_name};
use log_query::reader::{Log, Need, Trickle, parse, read_columns};

const NAMES: [&str; 4] = [
    "log-2026-02-22T14-30-00-000Z.csv",
    "EvoScanDataLog_2026.02.22_10.15.00.csv",
    "romraiderlog_20260221_180000.csv",
    "fuzz.csv",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let name = NAMES[pick as usize % NAMES.len()];
    let _ = date_from_name(name);
    let whole = parse(file, name);
    let source = Trickle {
        data: file,
        most: 1 + (pick as usize >> 2) * 5,
    };
    let pieces = read_columns(source, file.len() as u64, name, &Need::All);
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => assert_same(a, b),
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!(
            "whole: {:?}, in pieces: {:?}",
            whole.is_ok(),
            pieces.is_ok()
        ),
    }
    let Ok(log) = whole else {
        return;
    };
    let rows = log.rows();
    for c in &log.columns {
        assert_eq!(c.values.len(), rows, "column `{}` is ragged", c.name);
        for r in 0..rows.min(16) {
            let _ = (c.display(r), c.cell(r), c.number(r));
        }
        let _ = c.is_textual();
    }
    if let Some(t) = log.time_column {
        assert!(t < log.columns.len(), "time column {t} out of range");
    }
    let _ = (log.channels(), log.duration_s(), log.sample_rate_hz());
    let _ = log.heap_bytes();
    if let Some(clock) = &log.start_clock {
        let _ = date_from_clock(clock);
    }
});

fn assert_same(a: &Log, b: &Log) {
    assert_eq!(a.rows(), b.rows());
    assert_eq!(
        (
            a.format,
            a.delimiter,
            a.header_changes,
            a.ragged_lines,
            a.time_column,
            a.time_unit
        ),
        (
            b.format,
            b.delimiter,
            b.header_changes,
            b.ragged_lines,
            b.time_column,
            b.time_unit
        )
    );
    assert_eq!(a.start_clock, b.start_clock);
    assert_eq!(
        (a.start_date, a.encoding, a.time_origin.to_bits()),
        (b.start_date, b.encoding, b.time_origin.to_bits())
    );
    let bits = |l: &Log| l.time().iter().map(|t| t.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(a), bits(b));
    assert_eq!(a.columns.len(), b.columns.len());
    for (x, y) in a.columns.iter().zip(&b.columns) {
        assert_eq!(
            (&x.name, x.decimals, x.special, x.text_cells, x.hidden, &x.unit),
            (&y.name, y.decimals, y.special, y.text_cells, y.hidden, &y.unit)
        );
        for r in 0..a.rows() {
            assert_eq!(x.cell(r), y.cell(r), "column `{}` row {r}", x.name);
        }
    }
}
