//! The reference the log-query benchmarks measure against: DuckDB (the
//! Python package) counting the rows of a CSV that match the benchmark
//! filter. Native only; used by `cargo bench -p log-query` and `make bench`.

use std::path::Path;

/// The benchmark filter, in filtrex.
pub const BENCH_FILTER: &str = "RPM > 3000 && Knock > 0";
/// The same filter as an SQL `WHERE` clause.
pub const BENCH_SQL_WHERE: &str = "RPM > 3000 AND Knock > 0";

/// DuckDB's time for the benchmark filter over `csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Median wall time of one query, in milliseconds.
    pub median_ms: f64,
    /// Rows matched.
    pub rows: u64,
    /// The DuckDB version.
    pub version: String,
}

/// Runs `SELECT count(*) … WHERE` [`BENCH_SQL_WHERE`] over `csv` `runs` times.
/// Each run reads the CSV afresh (DuckDB keeps no cache of it), and only
/// the count is timed: the conservative comparison for `query_logs`, which
/// also renders rows.
pub fn count_matching(csv: &Path, runs: usize) -> Result<Timing, String> {
    let path = csv
        .to_string_lossy()
        .replace('\\', "\\\\")
        .replace('\'', "\\'");
    let script = format!(
        r#"
import duckdb, time
con = duckdb.connect()
times = []
for _ in range({runs}):
    t = time.perf_counter()
    n = con.execute("SELECT count(*) FROM read_csv('{path}') WHERE {BENCH_SQL_WHERE}").fetchall()[0][0]
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print(times[len(times) // 2], n, duckdb.__version__)
"#
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("python3 failed").to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    let median_ms = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or("no timing")?;
    let rows = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or("no count")?;
    let version = parts.next().unwrap_or("?").to_owned();
    Ok(Timing {
        median_ms,
        rows,
        version,
    })
}
