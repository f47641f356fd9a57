//! The reference the log-query benchmarks measure against: DuckDB (the
//! Python package) counting the rows of a CSV that match the benchmark
//! filter. Native only; used by `cargo bench -p log-query` and `make bench`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

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

/// A DuckDB process that runs `SELECT count(*) … WHERE` [`BENCH_SQL_WHERE`]
/// over one CSV each time it is asked, so that a benchmark can take turns
/// with it: a slow spell of a shared machine then falls on both sides of a
/// ratio, not on one side's block of runs.
///
/// Each query reads the CSV afresh (DuckDB keeps no cache of it), and only
/// the count is timed: the conservative comparison for `query_logs`, which
/// also renders rows.
pub struct DuckDb {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The DuckDB version the process reported.
    pub version: String,
}

impl DuckDb {
    /// Starts `python3` with DuckDB on `csv` and runs the query once,
    /// untimed (the process's first query also loads DuckDB's CSV reader).
    pub fn start(csv: &Path) -> Result<DuckDb, String> {
        let path = csv
            .to_string_lossy()
            .replace('\\', "\\\\")
            .replace('\'', "\\'");
        // One query a line read; answers "<ms> <count> <version>".
        let script = format!(
            r#"
import sys, time
try:
    import duckdb
except Exception as e:
    print("error", e, flush=True)
    sys.exit(1)
con = duckdb.connect()
for _ in sys.stdin:
    t = time.perf_counter()
    n = con.execute("SELECT count(*) FROM read_csv('{path}') WHERE {BENCH_SQL_WHERE}").fetchall()[0][0]
    print((time.perf_counter() - t) * 1000, n, duckdb.__version__, flush=True)
"#
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3: {e}"))?;
        let input = child.stdin.take().ok_or("python3: no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("python3: no stdout")?);
        let mut duck = DuckDb {
            child,
            input,
            output,
            version: String::new(),
        };
        duck.version = duck.ask()?.2;
        Ok(duck)
    }

    /// Runs the query once: its wall time in milliseconds and the rows it
    /// matched.
    pub fn query(&mut self) -> Result<(f64, u64), String> {
        self.ask().map(|(ms, rows, _)| (ms, rows))
    }

    /// One query's answer: milliseconds, rows matched, DuckDB's version.
    fn ask(&mut self) -> Result<(f64, u64, String), String> {
        // A process that could not import DuckDB has said why and ended:
        // its answer is read even when the request could not be written.
        let _ = writeln!(self.input, "run").and_then(|()| self.input.flush());
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .map_err(|e| format!("DuckDB process: {e}"))?;
        let mut parts = line.split_whitespace();
        let first = parts.next().ok_or_else(|| self.failure())?;
        if first == "error" {
            return Err(parts.collect::<Vec<_>>().join(" "));
        }
        let ms = first
            .parse()
            .map_err(|_| format!("DuckDB answered {line:?}"))?;
        let rows = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("DuckDB answered {line:?}"))?;
        let version = parts.next().unwrap_or("?").to_owned();
        Ok((ms, rows, version))
    }

    /// Why the process answered nothing: the last line of its errors.
    fn failure(&mut self) -> String {
        let _ = self.child.kill();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        err.lines()
            .last()
            .unwrap_or("python3 with DuckDB ended without an answer")
            .to_owned()
    }
}

impl Drop for DuckDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the query `runs` times in one DuckDB process (after its untimed
/// first query): the median time, the count and the version.
pub fn count_matching(csv: &Path, runs: usize) -> Result<Timing, String> {
    let mut duck = DuckDb::start(csv)?;
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    for _ in 0..runs.max(1) {
        let (ms, n) = duck.query()?;
        times.push(ms);
        rows = n;
    }
    times.sort_by(f64::total_cmp);
    Ok(Timing {
        median_ms: times[times.len() / 2],
        rows,
        version: duck.version.clone(),
    })
}
