//! ble-buffer fed by the bridge simulator: packets per second into the
//! buffer (through the WebSocket, drained on the host's tick) and
//! `search_packets` over a full buffer.

use crate::ctx::{Ctx, call_json};
use crate::table::{Goal, Table};
use crate::timing::{Samples, ms};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

const PACKETS: u64 = 50_000;

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let sim = ctx.repo.join("target/release/ble-bridge-sim");
    let sim = if sim.exists() {
        sim
    } else {
        ctx.repo.join("target/debug/ble-bridge-sim")
    };
    if !sim.exists() {
        bail!("the bridge simulator is not built: cargo build -p ble-bridge-sim");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let packets = PACKETS.to_string();
    let _sim = e2e::spawn_simulator(
        &sim,
        port,
        &["--rate", "0", "--count", &packets, "--wait-for-client"],
    )
    .context("starting the bridge simulator")?;
    let config = ctx.tmp.path().join("ble.toml");
    std::fs::write(&config, e2e::ble_config(port))?;
    let server = ctx
        .benchtop([OsStr::new("--config"), config.as_os_str()])
        .await?;
    let count = async || -> Result<u64> {
        let s = call_json(&server, "get_connection_state", json!({})).await?;
        Ok(s["packets_transmitted"].as_u64().unwrap_or(0)
            + s["packets_received"].as_u64().unwrap_or(0))
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut first = None;
    loop {
        let n = count().await?;
        if n > 0 && first.is_none() {
            first = Some((Instant::now(), n));
        }
        if n >= PACKETS {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {n} of {PACKETS} packets arrived in 120 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (start, at_start) = first.expect("packets arrived");
    let rate = (PACKETS - at_start) as f64 / start.elapsed().as_secs_f64();
    table.add(
        "ble-buffer ingest: simulator → WebSocket → buffer",
        rate,
        0,
        "packets/s",
        Goal::AtLeast(50_000.0),
        ctx.note(format!("{PACKETS} packets, drained on a 10 ms tick")),
    );

    // The buffer is full (10,000 of 50,000): search it.
    let tx = call_json(
        &server,
        "get_logs",
        json!({"since": "all", "direction": "tx", "limit": 1}),
    )
    .await?;
    let hex = tx["logs"][0]["hex"]
        .as_str()
        .context("a TX packet")?
        .to_owned();
    let pattern = format!("{} ??", &hex[..2]);
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        call_json(
            &server,
            "search_packets",
            json!({"hex_pattern": pattern, "limit": 10}),
        )
        .await?;
        times.push(t.elapsed());
    }
    let samples = Samples::new(times);
    table.add(
        "ble-buffer search_packets over a full buffer",
        ms(samples.median()),
        2,
        "ms",
        Goal::Below(5.0),
        ctx.note(format!("10,000 packets, pattern `{pattern}`, 10 matches returned; median of 50, MCP round trip included")),
    );
    server.stop().await;
    Ok(())
}
