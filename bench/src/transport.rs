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
/// Calls per turn: the two servers take turns, so a slow spell of this
/// machine lands on both sides of the ratio rather than on one.
const TURN: usize = 100;

/// One server's round trips, and the time its turns took.
#[derive(Default)]
struct RoundTrips {
    times: Vec<Duration>,
    busy: Duration,
}

impl RoundTrips {
    /// `n` sequential `hello` calls, each timed.
    async fn turn(&mut self, server: &Server, n: usize) -> Result<()> {
        let start = Instant::now();
        for _ in 0..n {
            self.times.push(call(server).await?);
        }
        self.busy += start.elapsed();
        Ok(())
    }

    fn done(self) -> (Samples, f64) {
        let per_sec = self.times.len() as f64 / self.busy.as_secs_f64();
        (Samples::new(self.times), per_sec)
    }
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
    let benchtop = ctx
        .benchtop([OsStr::new("--config"), config.as_os_str()])
        .await?;

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
    let native_server = connect(cmd).await?;

    let (mut ours, mut theirs) = (RoundTrips::default(), RoundTrips::default());
    for _ in 0..WARMUP {
        call(&benchtop).await?;
        call(&native_server).await?;
    }
    for _ in 0..CALLS / TURN {
        ours.turn(&benchtop, TURN).await?;
        theirs.turn(&native_server, TURN).await?;
    }
    benchtop.stop().await;
    native_server.stop().await;
    let (wasm, wasm_per_sec) = ours.done();
    let (native, native_per_sec) = theirs.done();

    let n = format!(
        "{CALLS} sequential calls after {WARMUP} warm-up, in turns of {TURN} with the native server"
    );
    let b = "hello round trip, benchtop + kitchen-sink (stdio)";
    table.add(
        format!("{b} p50"),
        us(wasm.median()),
        0,
        "µs",
        Goal::None,
        ctx.note(&n),
    );
    table.add(
        format!("{b} p99"),
        us(wasm.pct(99.0)),
        0,
        "µs",
        Goal::None,
        ctx.note(""),
    );
    table.add(
        format!("{b} throughput"),
        wasm_per_sec,
        0,
        "calls/s",
        Goal::None,
        ctx.note(""),
    );
    let b = "hello round trip, native rmcp server (stdio)";
    table.add(
        format!("{b} p50"),
        us(native.median()),
        0,
        "µs",
        Goal::None,
        "same client, same tool text",
    );
    table.add(
        format!("{b} p99"),
        us(native.pct(99.0)),
        0,
        "µs",
        Goal::None,
        "",
    );
    table.add(
        format!("{b} throughput"),
        native_per_sec,
        0,
        "calls/s",
        Goal::None,
        "",
    );
    let ratio = wasm.median().as_secs_f64() / native.median().as_secs_f64();
    table.add(
        "hello p50, benchtop / native",
        ratio,
        2,
        "x",
        Goal::AtMost(1.3),
        ctx.note(format!("{} samples each", wasm.len())),
    );
    table.target(
        Figure::new(
            "stdio hello p50, benchtop / a native rmcp server",
            format!("benchtop + kitchen-sink {:.0} µs", us(wasm.median())),
            format!("native rmcp {:.0} µs", us(native.median())),
        ),
        ratio,
        2,
        "×",
        Goal::AtMost(1.05),
    );
    Ok(())
}
