//! CSV datalogs (`log_query::reader::parse`): plain, EvoScan and RomRaider
//! logs, with the format sniffing, quoting, decimal commas and mid-file
//! header changes they bring.
//!
//! The first input byte picks the file name (names select RomRaider and
//! carry the log's date); the rest is the file. A parsed log must be
//! rectangular: every column holds exactly one cell per row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_query::logs::{date_from_clock, date_from_name};
use log_query::reader::parse;

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
    let Ok(log) = parse(file, name) else {
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
