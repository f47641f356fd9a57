//! Past one machine (issue 33): what the state store costs a stateful call,
//! calls per second and p99 through HAProxy with one and three replicas,
//! and how long a dead replica's sessions go unanswered. Needs Debian's
//! `redis-server` and `haproxy`; without them the rows say n/a.

use crate::ctx::Ctx;
use crate::table::{Goal, Table};
use crate::timing::{Samples, ms};
use anyhow::{Context, Result, anyhow};
use e2e::cluster::{Cluster, McpHttp, Single};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 30;
const CALLS: usize = 60;
const SEQUENTIAL: usize = 300;

fn rom(ctx: &Ctx) -> String {
    ctx.repo
        .join("samples/cp1600/bench-loop.bin")
        .display()
        .to_string()
}

fn program(ctx: &Ctx) -> String {
    ctx.repo.join("samples/dos/sums.com").display().to_string()
}

/// A cp1600 session and an x86 machine of `c`'s, ready to step.
async fn setup(ctx: &Ctx, c: &McpHttp, sid: &str) -> Result<Value> {
    let e = |e: String| anyhow!(e);
    c.call("cp1600_create_session", json!({"session_id": sid}))
        .await
        .map_err(e)?;
    c.call(
        "cp1600_load_rom",
        json!({"session_id": sid, "rom_path": rom(ctx)}),
    )
    .await
    .map_err(e)?;
    let loaded = c
        .call("x86_load_program", json!({"path": program(ctx)}))
        .await
        .map_err(e)?;
    Ok(loaded["machine"].clone())
}

/// Times `n` sequential calls of `tool` on one handle.
async fn sequential(c: &McpHttp, tool: &str, args: Value, n: usize) -> Result<Samples> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.call(tool, args.clone()).await.map_err(|e| anyhow!(e))?;
        times.push(t.elapsed());
    }
    Ok(Samples::new(times))
}

/// `CLIENTS` clients, each stepping its session and its machine in turn
/// `CALLS` times through `url`: calls per second and every call's time.
async fn load(ctx: &Ctx, url: &str) -> Result<(f64, Samples)> {
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let c = Arc::new(McpHttp::new(url, &format!("bench-{i}")));
        let m = setup(ctx, &c, &format!("b{i}")).await?;
        clients.push((c, m, format!("b{i}")));
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, m, sid) in clients {
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(CALLS);
            for k in 0..CALLS {
                let t = Instant::now();
                let r = if k % 2 == 0 {
                    c.call("cp1600_step", json!({"session_id": sid, "count": 3}))
                        .await
                } else {
                    c.call("x86_step", json!({"machine": m, "count": 1})).await
                };
                r.map_err(|e| anyhow!(e))?;
                times.push(t.elapsed());
            }
            anyhow::Ok(times)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    Ok((rate, Samples::new(all)))
}

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    if let Err(why) = e2e::cluster::tools_available() {
        for row in [
            "replicas: store cost per stateful call",
            "replicas: calls/s through HAProxy",
            "replicas: failover",
        ] {
            table.skip(row, "", "", why.clone());
        }
        return Ok(());
    }
    // The store's cost: one client stepping one session, with and without.
    let single = Single::start_with(&ctx.bin).await;
    let c = McpHttp::new(&single.url, "cost");
    let m = setup(ctx, &c, "cost").await?;
    let plain_cp = sequential(
        &c,
        "cp1600_step",
        json!({"session_id": "cost", "count": 1}),
        SEQUENTIAL,
    )
    .await?;
    let plain_x86 = sequential(
        &c,
        "x86_step",
        json!({"machine": m, "count": 1}),
        SEQUENTIAL / 3,
    )
    .await?;
    drop(single);
    let one = Cluster::start_with(&ctx.bin, 1).await;
    let c = McpHttp::new(&one.replica_url(0), "cost");
    let m = setup(ctx, &c, "cost").await?;
    let stored_cp = sequential(
        &c,
        "cp1600_step",
        json!({"session_id": "cost", "count": 1}),
        SEQUENTIAL,
    )
    .await?;
    let stored_x86 = sequential(
        &c,
        "x86_step",
        json!({"machine": m, "count": 1}),
        SEQUENTIAL / 3,
    )
    .await?;
    for (what, plain, stored) in [
        ("cp1600_step", &plain_cp, &stored_cp),
        ("x86_step", &plain_x86, &stored_x86),
    ] {
        table.add(
            format!("replicas: store cost per stateful call ({what}, p50)"),
            ms(stored.median()) - ms(plain.median()),
            2,
            "ms",
            Goal::None,
            ctx.note(format!(
                "p50 {:.2} ms with the store (lease, save, compressed snapshot, release) vs {:.2} ms without; one client, sequential calls over HTTP",
                ms(stored.median()),
                ms(plain.median())
            )),
        );
    }

    // Throughput and p99 through HAProxy, one replica then three.
    let (rate1, lat1) = load(ctx, &one.url).await?;
    drop(one);
    let three = Cluster::start_with(&ctx.bin, 3).await;
    let (rate3, lat3) = load(ctx, &three.url).await?;
    for (n, rate, lat) in [(1, rate1, &lat1), (3, rate3, &lat3)] {
        table.add(
            format!("replicas: calls/s through HAProxy, {n} replica{}", if n == 1 { "" } else { "s" }),
            rate,
            0,
            "calls/s",
            Goal::None,
            ctx.note(format!(
                "{CLIENTS} clients × {CALLS} steps (cp1600 and x86 in turn), each on its own handles; p99 {:.1} ms, p50 {:.1} ms",
                ms(lat.pct(99.0)),
                ms(lat.median())
            )),
        );
    }
    table.add(
        "replicas: throughput, 3 replicas / 1",
        rate3 / rate1,
        2,
        "×",
        Goal::None,
        ctx.note(format!(
            "this machine has {} cores: three replicas share them, so the ratio shows the store and balancer cost nothing that does not scale, not a speed-up",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        )),
    );
    drop(three);

    // Failover: a session living on replica 2, which is killed; the time
    // from the kill to the first answered call on it through the balancer.
    let mut cluster = Cluster::start_with(&ctx.bin, 3).await;
    let direct = McpHttp::new(&cluster.replica_url(1), "failover");
    setup(ctx, &direct, "f").await?;
    direct
        .call("cp1600_step", json!({"session_id": "f", "count": 5}))
        .await
        .map_err(|e| anyhow!(e))?;
    let through = McpHttp::new(&cluster.url, "failover");
    let killed = Instant::now();
    cluster.kill(1).await;
    let answered = through
        .call("cp1600_get_state", json!({"session_id": "f"}))
        .await
        .map_err(|e| anyhow!(e))
        .context("the session after its replica died")?;
    let gap = killed.elapsed();
    if answered["instructions"] != 5 {
        return Err(anyhow!("the session came back wrong: {answered}"));
    }
    table.add(
        "replicas: failover, replica killed → its session answered",
        ms(gap),
        1,
        "ms",
        Goal::Below(Duration::from_secs(1).as_millis() as f64),
        ctx.note(format!(
            "SIGKILL, then a call on a session that lived there: HAProxy redispatches on the refused connection, another replica restores it from Redis ({} retries by the client); a call in flight at the kill also waits out its lease (at most 2 s)",
            through.retries.lock().unwrap().len()
        )),
    );
    Ok(())
}
