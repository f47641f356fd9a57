//! Issue 33, past one machine: three replicas sharing Redis behind HAProxy
//! (the repository's `deploy/haproxy.cfg`), thirty clients each driving a
//! cp1600 session and an x86 machine, one replica killed with SIGKILL
//! mid-run and started again later. Every client's final registers,
//! memory and console must equal those of the same script against one
//! process without a store; no call may fail but those in flight at the
//! kill, and a retried call (same `Idempotency-Key`) must never apply
//! twice, which the final state would show (a step counted twice).
//!
//! `make test-scale` runs it (`SCALE_CLIENTS`, `SCALE_STEPS` size it; CI
//! runs a smaller one). Ignored by `make test`: it needs `redis-server`
//! and `haproxy`, which `.ci/run` installs.

use e2e::cluster::{Cluster, McpHttp, Single};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Removes the machine ids (random per run) so two runs compare.
fn without_ids(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        map.remove("machine");
        for (_, x) in map.iter_mut() {
            *x = without_ids(x.take());
        }
    }
    v
}

/// Where `got` and `want` differ, as `path: got ≠ want` lines (at most
/// `max`), so a failure says which register or word moved.
fn differences(got: &Value, want: &Value, path: &str, max: usize, out: &mut Vec<String>) {
    if out.len() >= max || got == want {
        return;
    }
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let keys = g.keys().chain(w.keys().filter(|k| !g.contains_key(*k)));
            for key in keys.filter(|k| *k != "handles") {
                let (a, b) = (
                    &g.get(key).cloned().unwrap_or_default(),
                    &w.get(key).cloned().unwrap_or_default(),
                );
                differences(a, b, &format!("{path}.{key}"), max, out);
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                differences(a, b, &format!("{path}[{i}]"), max, out);
            }
        }
        _ => {
            let short = |v: &Value| v.to_string().chars().take(120).collect::<String>();
            out.push(format!("{path}: {} ≠ {}", short(got), short(want)));
        }
    }
}

/// One client's script: a cp1600 session running `bench-loop` and an x86
/// machine running `sums.com`, stepped in turn for `steps` rounds with
/// counts that depend on the client, with memory writes between; then
/// their whole state. `done` counts the calls made.
async fn script(c: &McpHttp, i: usize, steps: usize, done: &AtomicUsize) -> Result<Value, String> {
    let samples = e2e::repo().join("samples");
    let sid = format!("c{i}");
    let call = async |tool: &str, args: Value| {
        let r = c.call(tool, args).await;
        done.fetch_add(1, Ordering::Relaxed);
        r
    };
    call("cp1600_create_session", json!({"session_id": sid})).await?;
    call(
        "cp1600_load_rom",
        json!({"session_id": sid, "rom_path": samples.join("cp1600/bench-loop.bin")}),
    )
    .await?;
    let loaded = call(
        "x86_load_program",
        json!({"path": samples.join("dos/sums.com")}),
    )
    .await?;
    let m = loaded["machine"].clone();
    for k in 0..steps {
        call(
            "cp1600_step",
            json!({"session_id": sid, "count": (i + k) % 7 + 1}),
        )
        .await?;
        // sums.com exits after 260 instructions: step it within them.
        if k < 100 {
            call("x86_step", json!({"machine": m, "count": (i + k) % 2 + 1})).await?;
        }
        if k % 20 == 19 {
            call(
                "cp1600_write_memory",
                json!({"session_id": sid, "address": 0x0300 + k / 20, "values": [(i * 31 + k) % 65536]}),
            )
            .await?;
        }
    }
    let state = json!({
        "cp1600": call("cp1600_get_state", json!({"session_id": sid})).await?,
        "ram": call("cp1600_examine_memory", json!({"session_id": sid, "start_address": 0x0200, "count": 0x160})).await?,
        "x86_registers": call("read_cpu_registers", json!({"machine": m})).await?,
        "x86_run": call("x86_run", json!({"machine": m})).await?,
        "console": call("x86_read_console", json!({"machine": m})).await?,
    });
    let mut state = without_ids(state);
    // Which handles these were, for a failure to be traced in the logs
    // (not compared: ids differ per run).
    state["handles"] = json!([sid, m]);
    Ok(state)
}

/// Runs `clients` scripts at once against `url`; their final states and
/// the clients (with their retries).
async fn run_all(
    url: &str,
    clients: std::ops::Range<usize>,
    steps: usize,
    done: Arc<AtomicUsize>,
) -> Vec<(Arc<McpHttp>, Result<Value, String>)> {
    let mut tasks = Vec::new();
    for i in clients {
        let c = Arc::new(McpHttp::new(url, &format!("technician-{i}")));
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let r = script(&c, i, steps, &done).await;
            (c, r)
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs redis-server and haproxy: make test-scale"]
async fn sessions_survive_their_replica() {
    let clients = env_or("SCALE_CLIENTS", 30);
    let steps = env_or("SCALE_STEPS", 100);

    // The reference: the same scripts on one process without a store,
    // eight clients per process (one process holds at most 8 x86
    // machines, its plugin's cap).
    let mut reference = Vec::new();
    for first in (0..clients).step_by(8) {
        let single = Single::start().await;
        let batch = run_all(
            &single.url,
            first..clients.min(first + 8),
            steps,
            Arc::default(),
        )
        .await;
        reference.extend(
            batch
                .into_iter()
                .map(|(_, r)| r.expect("the script runs on one process")),
        );
    }

    let mut cluster = Cluster::start(3).await;
    let done = Arc::new(AtomicUsize::new(0));
    let expected_calls = clients * (steps + steps.min(100) + steps / 20 + 8);
    let url = cluster.url.clone();
    let run = tokio::spawn({
        let done = done.clone();
        async move { run_all(&url, 0..clients, steps, done).await }
    });
    // Kill replica 2 a third of the way through, start it again at two
    // thirds: its handles move to the others and, on its return, back.
    // Clients that fail stop early: the waits end with them, and the
    // failure is reported below.
    while done.load(Ordering::Relaxed) < expected_calls / 3 && !run.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed_at = Instant::now();
    cluster.kill(1).await;
    println!(
        "replica 2 killed with SIGKILL after {} calls",
        done.load(Ordering::Relaxed)
    );
    while done.load(Ordering::Relaxed) < expected_calls * 2 / 3 && !run.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cluster.restart(1).await;
    let restarted_at = Instant::now();
    println!(
        "replica 2 restarted after {} calls",
        done.load(Ordering::Relaxed)
    );
    let results = run.await.unwrap();
    assert!(cluster.parts_alive(), "redis or haproxy died");

    let mut retried = 0;
    let mut why_counts = std::collections::BTreeMap::<String, usize>::new();
    let mut wrong = Vec::new();
    for (i, ((client, result), want)) in results.iter().zip(&reference).enumerate() {
        let got = match result {
            Ok(got) => got,
            Err(e) => {
                wrong.push(format!("client {i}: {e}"));
                continue;
            }
        };
        let mut diff = Vec::new();
        differences(got, want, "", 8, &mut diff);
        let notices = client.notices.lock().unwrap();
        if !diff.is_empty() || !notices.is_empty() {
            wrong.push(format!(
                "client {i} ({}): the final state differs from one process's at\n  {}\n  notices: {:?}\n  retries: {:?}",
                got["handles"],
                diff.join("\n  "),
                notices.iter().take(4).collect::<Vec<_>>(),
                client.retries.lock().unwrap().iter().map(|(t, why)| (t.saturating_duration_since(killed_at), why.chars().take(100).collect::<String>())).collect::<Vec<_>>()
            ));
        }
        for (when, why) in client.retries.lock().unwrap().iter() {
            retried += 1;
            let kind: String = why.chars().take(40).collect();
            *why_counts.entry(kind).or_default() += 1;
            // Only the calls in flight at the kill (and the busy handles
            // of a dead replica's leases) failed, all soon after it; a
            // restart moves handles back without a failed call.
            let after_kill = when.saturating_duration_since(killed_at);
            assert!(
                *when >= killed_at && after_kill < Duration::from_secs(10),
                "client {i}: a call failed {:?} after the kill (restart {:?} after): {why}",
                after_kill,
                restarted_at.saturating_duration_since(killed_at)
            );
        }
    }
    if std::env::var_os("SCALE_KEEP_LOGS").is_some() {
        println!("the cluster's logs: {}", cluster.keep_logs().display());
    }
    if !wrong.is_empty() {
        panic!(
            "{}\nthe replicas' warnings:\n{}\ntheir logs: {}",
            wrong.join("\n"),
            cluster.warnings(40),
            cluster.keep_logs().display()
        );
    }
    println!(
        "{clients} clients × {} calls: every final state equals one process's; {retried} attempts retried, all within 10 s of the kill",
        done.load(Ordering::Relaxed) / clients
    );
    for (why, n) in why_counts {
        println!("  {n} × {why}…");
    }
}

/// The store's rules one call at a time, each replica addressed directly:
/// a retry with the same key on another replica is answered, not run; a
/// handle ended on one replica is gone on the other, whose copy is stale;
/// another client's handle is unknown; without the store, calls on
/// handles are refused rather than run on state it may not hold.
#[tokio::test]
#[ignore = "needs redis-server and haproxy: make test-scale"]
async fn retries_apply_once_and_every_replica_sees_the_latest_state() {
    use e2e::cluster::Failure;
    let mut cluster = Cluster::start(2).await;
    let r1 = McpHttp::new(&cluster.replica_url(0), "owner-a");
    let r2 = McpHttp::new(&cluster.replica_url(1), "owner-a");
    let rom = e2e::repo().join("samples/cp1600/bench-loop.bin");
    r1.call("cp1600_create_session", json!({"session_id": "s"}))
        .await
        .unwrap();
    r1.call(
        "cp1600_load_rom",
        json!({"session_id": "s", "rom_path": rom}),
    )
    .await
    .unwrap();
    let step = json!({"session_id": "s", "count": 5});
    let first = r1.attempt("cp1600_step", &step, "k-1").await.unwrap();
    // The answer was lost; the client retries on the other replica.
    let again = r2.attempt("cp1600_step", &step, "k-1").await.unwrap();
    assert_eq!(first, again);
    let state = r2
        .call("cp1600_get_state", json!({"session_id": "s"}))
        .await
        .unwrap();
    assert_eq!(state["instructions"], 5, "stepped once, not twice: {state}");
    // A new key is a new call, served on the state the other replica left.
    r2.attempt("cp1600_step", &step, "k-2").await.unwrap();
    let state = r1
        .call("cp1600_get_state", json!({"session_id": "s"}))
        .await
        .unwrap();
    assert_eq!(state["instructions"], 10, "{state}");

    // Another client does not reach it on any replica.
    let other = McpHttp::new(&cluster.replica_url(1), "owner-b");
    let e = other
        .call("cp1600_get_state", json!({"session_id": "s"}))
        .await
        .unwrap_err();
    assert!(e.contains("SESSION_NOT_FOUND"), "{e}");

    // Ended on one replica, it is gone on the other, which held a copy.
    r2.call("cp1600_destroy_session", json!({"session_id": "s"}))
        .await
        .unwrap();
    let e = r1
        .call("cp1600_get_state", json!({"session_id": "s"}))
        .await
        .unwrap_err();
    assert!(e.contains("SESSION_NOT_FOUND"), "{e}");

    // Without its store a replica refuses calls on handles, and says why.
    r1.call("cp1600_create_session", json!({"session_id": "t"}))
        .await
        .unwrap();
    cluster.kill_store().await;
    match r1
        .attempt("cp1600_get_state", &json!({"session_id": "t"}), "k-3")
        .await
    {
        Err(Failure::Retry(e)) => {
            assert!(e.starts_with("STATE_STORE") && e.contains("not run"), "{e}")
        }
        other => panic!("expected STATE_STORE, got {other:?}"),
    }
    let health = reqwest::get(cluster.replica_url(0).replace("/mcp", "/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 503);
}
