//! Round trip of a trivial tool over stdio: kitchen-sink's `hello` through
//! benchtop next to the same tool served natively by rmcp.

use crate::ctx::{Ctx, connect};
use crate::table::{Figure, Goal, Table};
use crate::timing::{Samples, us};
use anyhow::{Result, bail};
use e2e::Server;
use serde_json::json;
use std::ffi::OsStr;
use std::time::{Duration, Instant};
use tokio::process::Command;

const WARMUP: usize = 200;
const CALLS: usize = 2000;

struct RoundTrips {
    samples: Samples,
    per_sec: f64,
}

/// `CALLS` sequential `hello` calls after a warm-up, each timed.
async fn measure(server: &Server) -> Result<RoundTrips> {
    for _ in 0..WARMUP {
        call(server).await?;
    }
    let mut times = Vec::with_capacity(CALLS);
    let all = Instant::now();
    for _ in 0..CALLS {
        times.push(call(server).await?);
    }
    let total = all.elapsed();
    Ok(RoundTrips {
        samples: Samples::new(times),
        per_sec: CALLS as f64 / total.as_secs_f64(),
    })
}

async fn call(server: &Server) -> Result<Duration> {
    let t = Instant::now();
    let r = server.try_call("hello", json!({})).await?;
    let elapsed = t.elapsed();
    if e2e::is_error(&r) || e2e::text(&r) != bench::HELLO_TEXT {
        bail!("unexpected hello result: {r:?}");
    }
    Ok(elapsed)
}

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let kitchen = ctx.repo.join("target/test-plugins/kitchen_sink.wasm");
    if !kitchen.exists() {
        bail!("{} is missing: run `make plugins`", kitchen.display());
    }
    let config = ctx.config("transport", &[kitchen])?;
    let server = ctx
        .benchtop([OsStr::new("--config"), config.as_os_str()])
        .await?;
    let wasm = measure(&server).await?;
    server.stop().await;

    // The native_hello binary when cargo built it beside this one, else this
    // binary in its native-server mode (the same code).
    let exe = std::env::current_exe()?;
    let sibling = exe.with_file_name("native_hello");
    let cmd = if sibling.exists() {
        Command::new(sibling)
    } else {
        let mut c = Command::new(exe);
        c.arg(bench::NATIVE_HELLO_ARG);
        c
    };
    let server = connect(cmd).await?;
    let native = measure(&server).await?;
    server.stop().await;

    let n = format!("{CALLS} sequential calls after {WARMUP} warm-up");
    let b = "hello round trip, benchtop + kitchen-sink (stdio)";
    table.add(
        format!("{b} p50"),
        us(wasm.samples.median()),
        0,
        "µs",
        Goal::None,
        ctx.note(&n),
    );
    table.add(
        format!("{b} p99"),
        us(wasm.samples.pct(99.0)),
        0,
        "µs",
        Goal::None,
        ctx.note(""),
    );
    table.add(
        format!("{b} throughput"),
        wasm.per_sec,
        0,
        "calls/s",
        Goal::None,
        ctx.note(""),
    );
    let b = "hello round trip, native rmcp server (stdio)";
    table.add(
        format!("{b} p50"),
        us(native.samples.median()),
        0,
        "µs",
        Goal::None,
        "same client, same tool text",
    );
    table.add(
        format!("{b} p99"),
        us(native.samples.pct(99.0)),
        0,
        "µs",
        Goal::None,
        "",
    );
    table.add(
        format!("{b} throughput"),
        native.per_sec,
        0,
        "calls/s",
        Goal::None,
        "",
    );
    let ratio = wasm.samples.median().as_secs_f64() / native.samples.median().as_secs_f64();
    table.add(
        "hello p50, benchtop / native",
        ratio,
        2,
        "x",
        Goal::AtMost(1.3),
        ctx.note(format!("{} samples each", wasm.samples.len())),
    );
    table.target(
        Figure::new(
            "stdio hello p50, benchtop / a native rmcp server",
            format!(
                "benchtop + kitchen-sink {:.0} µs",
                us(wasm.samples.median())
            ),
            format!("native rmcp {:.0} µs", us(native.samples.median())),
        ),
        ratio,
        2,
        "×",
        Goal::AtMost(1.05),
    );
    Ok(())
}
