//! `make bench`: measures benchtop in this run and prints one markdown table
//! (benchmark | value | unit | target | note).
//!
//!     cargo run -q --profile bench -p bench
//!
//! Measures `BENCHTOP_BIN`, else the `benchtop` built beside this binary
//! (`--profile bench` builds into target/release), else target/release, else
//! (with a note on every row) target/debug/benchtop. `BENCH_ONLY=x86,log-query` runs only
//! the named groups (startup, transport, http, cp1600, x86, ecu-tables, log-query, ble-buffer, registry, replicas). The DuckDB comparison needs the Python
//! package (`pip install duckdb`); without it those rows say n/a.

mod ble;
mod ctx;
mod http;
mod plugins;
mod registry;
mod replicas;
mod startup;
mod table;
mod timing;
mod transport;

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    if std::env::args().nth(1).as_deref() == Some(bench::NATIVE_HELLO_ARG) {
        return match runtime.block_on(bench::serve_stdio()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("native hello server: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    runtime.block_on(run())
}

async fn run() -> ExitCode {
    let ctx = match ctx::Ctx::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("bench: measuring {}", ctx.bin.display());
    let mut table = table::Table::default();
    let mut failed = false;
    let started = Instant::now();
    // BENCH_ONLY=x86,ecu-tables runs just those groups (for working on one).
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|g| g.trim() == name))
    };
    macro_rules! group {
        ($name:literal, $f:expr) => {{
            if !wanted($name) {
                eprintln!("bench: {} skipped (BENCH_ONLY)", $name);
            } else {
                let t = Instant::now();
                eprintln!("bench: {} …", $name);
                if let Err(e) = $f(&ctx, &mut table).await {
                    eprintln!("bench: {} failed: {e:#}", $name);
                    table.skip(
                        concat!($name, " (failed)"),
                        "",
                        "",
                        format!("error: {e:#}").replace('\n', " "),
                    );
                    failed = true;
                }
                eprintln!(
                    "bench: {} done in {:.1} s",
                    $name,
                    t.elapsed().as_secs_f64()
                );
            }
        }};
    }
    // Startup first: it fills the compile cache every later server uses.
    group!("startup", startup::run);
    group!("transport", transport::run);
    group!("http", http::run);
    group!("cp1600", plugins::cp1600);
    group!("x86", plugins::x86);
    group!("ecu-tables", plugins::ecu);
    group!("log-query", plugins::logs);
    group!("ble-buffer", ble::run);
    group!("registry", registry::run);
    group!("replicas", replicas::run);
    eprintln!("bench: total {:.1} s", started.elapsed().as_secs_f64());
    table.print();
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
