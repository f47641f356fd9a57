//! Many concurrent clients over streamable HTTP: 100 sessions calling
//! kitchen-sink's `hello` at once.

use crate::ctx::Ctx;
use crate::table::{Goal, Table};
use crate::timing::{Samples, us};
use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

const CLIENTS: usize = 100;
const CALLS_PER_CLIENT: usize = 50;

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let kitchen = ctx.repo.join("target/test-plugins/kitchen_sink.wasm");
    if !kitchen.exists() {
        bail!("{} is missing: run `make plugins`", kitchen.display());
    }
    let config = ctx.config("http", &[kitchen])?;
    // The default cap (64 sessions) is below this bench's 100 clients.
    let mut toml = std::fs::read_to_string(&config)?;
    toml.push_str(&format!("\n[http]\nmax_sessions = {}\n", CLIENTS + 8));
    std::fs::write(&config, toml)?;
    let mut child = tokio::process::Command::new(&ctx.bin)
        .args(["serve", "--no-watch", "--http", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("BENCHTOP_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().context("stderr")?).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(url) = line.strip_prefix("benchtop: MCP endpoint ") {
                return Ok(url.to_owned());
            }
        }
        bail!("benchtop exited before serving HTTP")
    })
    .await
    .context("waiting for the HTTP endpoint")??;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    // Sessions first, so the measurement is of calls, not handshakes.
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        clients.push(
            ().serve(StreamableHttpClientTransport::from_uri(url.clone()))
                .await?,
        );
    }
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(CLIENTS);
    for client in clients {
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(CALLS_PER_CLIENT);
            for _ in 0..CALLS_PER_CLIENT {
                let t = Instant::now();
                let r = client
                    .call_tool(CallToolRequestParams::new("hello"))
                    .await?;
                if e2e::is_error(&r) {
                    bail!("hello failed: {}", e2e::text(&r));
                }
                times.push(t.elapsed());
            }
            let _ = client.cancel().await;
            Ok(times)
        }));
    }
    let mut times = Vec::with_capacity(CLIENTS * CALLS_PER_CLIENT);
    for t in tasks {
        times.extend(t.await??);
    }
    let total = started.elapsed();
    let samples = Samples::new(times);
    let what = format!("{CLIENTS} concurrent HTTP clients × {CALLS_PER_CLIENT} hello calls");
    table.add(
        "HTTP hello, 100 concurrent clients: throughput",
        samples.len() as f64 / total.as_secs_f64(),
        0,
        "calls/s",
        Goal::None,
        ctx.note(&what),
    );
    table.add(
        "HTTP hello, 100 concurrent clients: p50",
        us(samples.median()) / 1000.0,
        2,
        "ms",
        Goal::None,
        ctx.note(""),
    );
    table.add(
        "HTTP hello, 100 concurrent clients: p99",
        us(samples.pct(99.0)) / 1000.0,
        2,
        "ms",
        Goal::None,
        ctx.note("no failed call"),
    );
    Ok(())
}
