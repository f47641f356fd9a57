//! `query_logs` on a 1,000,000-row, 12-channel CSV, first query (read +
//! parse + filter) and repeated (cached), next to DuckDB running the same
//! filter as SQL over the same file in the same run.
//!
//!     cargo bench -p log-query --bench native [-- ROWS]
//!
//! Prints markdown table rows. DuckDB comes from PyPI (`pip install duckdb`);
//! without it the DuckDB columns say so.

use log_query::logs::Cache;
use log_query::query::{QueryArgs, query_logs};
use std::time::Instant;

use log_query::duckdb::{BENCH_FILTER as FILTER, count_matching};

fn main() {
    let rows: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("log-query-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.csv");
    {
        let f = std::fs::File::create(&path).unwrap();
        let mut w = std::io::BufWriter::new(f);
        log_query::synth::write_bench_csv(&mut w, rows).unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    let args = QueryArgs {
        filter: FILTER.into(),
        file: Some("bench.csv".into()),
        ..Default::default()
    };
    let mut progress = |_: u64, _: u64, _: &str| true;

    // Warm the page cache so both engines read the file from memory.
    let _ = std::fs::read(&path).unwrap();
    let mut cache = Cache::default();
    let t = Instant::now();
    let out = query_logs(&dir, &mut cache, &args, &mut progress).unwrap();
    let first = t.elapsed().as_secs_f64() * 1000.0;
    let matched: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("rows_matched: "))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let mut repeats: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            let _ = query_logs(&dir, &mut cache, &args, &mut progress).unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    repeats.sort_by(f64::total_cmp);
    let repeat = repeats[repeats.len() / 2];

    let duck = count_matching(&path, 3);
    println!(
        "| query | rows | CSV MB | rows matched | log-query first (ms) | log-query repeat (ms) | DuckDB (ms) | first / DuckDB | repeat / DuckDB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    match duck {
        Ok(log_query::duckdb::Timing {
            median_ms: ms,
            rows: n,
            ..
        }) => {
            assert_eq!(
                n, matched,
                "DuckDB and log-query disagree on the match count"
            );
            println!(
                "| `{FILTER}` | {rows} | {:.1} | {matched} | {first:.1} | {repeat:.2} | {ms:.1} | {:.2}x | {:.3}x |",
                size as f64 / 1e6,
                first / ms,
                repeat / ms
            );
        }
        Err(e) => println!(
            "| `{FILTER}` | {rows} | {:.1} | {matched} | {first:.1} | {repeat:.2} | n/a ({e}) | | |",
            size as f64 / 1e6
        ),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
