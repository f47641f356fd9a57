//! filtrex filters (`log_query::filter`): compile, check channel names, bind
//! to a small log and scan it.
//!
//! The input is the filter text. Besides "no panic", the scan (vectorised
//! where the filter is numeric, the interpreter elsewhere) must match
//! exactly the rows the row-at-a-time interpreter accepts: the interpreter
//! is the reference the vectorised path claims to follow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_query::filter::Filter;
use log_query::reader::{Log, parse};
use std::sync::OnceLock;

/// A little log with every kind of cell: integers, decimals, negatives,
/// empty cells, text, a column name with spaces and one with a digit first.
const CSV: &str = "\
Time,RPM,Load,AFR,Knock,Gear,Mode,Boost (psi),2nd,Note
0.00,800,12.5,14.7,0,0,idle,-10.2,1,
0.05,1200,20.25,14.1,0,1,idle,-8.0,2,start
0.10,2500,45.0,13.2,1,2,pull,0.0,3,
0.15,3500,80.5,11.8,0,3,pull,5.5,,knock?
0.20,4500,95.125,11.2,3,3,pull,12.25,5,
0.25,5200,100,10.9,0,4,pull,15,6,
0.30,6100,101.5,10.7,2,4,pull,16.5,7,limit
0.35,7000,,11.0,0,4,cut,,8,
0.40,3000,30,14.7,0,5,cruise,-2,9,
0.45,0,0,,0,N,off,-14.7,10,done
0.50,900,15,14.7,-1,0,idle,-11,11,
0.55,1e3,0.5,14.7,0,0,Idle,-10,12,
";

fn log() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| parse(CSV.as_bytes(), "fuzz.csv").expect("the fixed log parses"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(filter) = Filter::compile(source) else {
        return;
    };
    let log = log();
    let channels: Vec<&str> = log.columns.iter().map(|c| c.name.as_str()).collect();
    let _ = filter.check_channels(&channels);
    let _ = filter.channel_names().count();
    let _ = filter.missing_in(&log.columns);

    let bound = filter.bind(&log.columns);
    let rows = log.rows();
    let mut scanned = Vec::new();
    let stats = bound.scan(0..rows, |r| scanned.push(r));
    let _ = stats.first_error.map(|(_, e)| e.len());
    let reference: Vec<usize> = (0..rows)
        .filter(|&r| matches!(bound.eval_row(r), Ok(true)))
        .collect();
    assert_eq!(
        scanned,
        reference,
        "scan and interpreter disagree on {source:?} (vectorised: {})",
        bound.is_vectorised()
    );
});
