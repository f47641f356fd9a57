//! Hardening under load: 16 HTTP clients, 20,000 mixed calls across all
//! five plugins, the server's memory watched.
//!
//! Each test prints its figures (`cargo test -p e2e --test hardening_load --
//! --nocapture`). The tests take a lock so that they do not run beside each
//! other on a small machine and disturb each other's timings.

use e2e::hardening::{CALL_TIMEOUT, copy_dir, plugin_copy, serial, simulator};
use e2e::{free_port, is_error, repo, rss_kib, serve_http, text};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The `k`-th call of client `client`: a rotation over all five plugins,
/// each with a cycle of cheap, representative calls. Every one must succeed.
/// `machine` is the id the server minted for this client's machine.
fn load_call(client: usize, k: usize, machine: u64) -> (&'static str, Value) {
    let session = format!("load{client}");
    // Each client works on its own machine (machines belong to the client
    // that loaded them); only the first MACHINE_CLIENTS fit x86-inspect's
    // global cap, so the others spend their x86 turns on the cp1600.
    let n = k / 5;
    let mut kind = (client + k) % 5;
    if kind == 3 && client >= MACHINE_CLIENTS {
        kind = 2;
    }
    match kind {
        0 => match n % 4 {
            0 => ("rom_info", json!({"rom": "ecu/BT000001.bin"})),
            1 => (
                "list_tables",
                json!({"rom": "ecu/BT000001.bin", "limit": 20}),
            ),
            2 => (
                "read_table",
                json!({"rom": "ecu/BT000001.bin", "table": "Boost Target"}),
            ),
            _ if n % 40 == 3 => (
                "patch_table",
                json!({"rom": "ecu/BT000001.bin", "table": "Rev Limiter", "op": "set", "value": 7000}),
            ),
            _ => (
                "read_table",
                json!({"rom": "ecu/BT000001.bin", "table": "Ignition Timing Base Map", "row_count": 4}),
            ),
        },
        1 => match n % 3 {
            0 => ("list_logs", json!({})),
            1 => (
                "query_logs",
                json!({"filter": "RPM > 3000 && Knock > 0", "file": "log-2026-02-22T14-30-00-000Z.csv", "limit": 20}),
            ),
            _ => ("query_logs", json!({"filter": "RPM > 6000", "limit": 10})),
        },
        2 => match n % 5 {
            0 => ("cp1600_reset", json!({"session_id": session})),
            1 => ("cp1600_step", json!({"session_id": session, "count": 3})),
            2 => ("cp1600_get_registers", json!({"session_id": session})),
            3 => (
                "cp1600_examine_memory",
                json!({"session_id": session, "start_address": 20480, "count": 16}),
            ),
            _ => (
                "cp1600_disassemble",
                json!({"session_id": session, "start_address": 20480}),
            ),
        },
        3 => match n % 5 {
            0 => (
                "x86_load_program",
                json!({"path": "dos/sums.com", "machine": machine}),
            ),
            1 => ("x86_step", json!({"machine": machine, "count": 2})),
            2 => ("read_cpu_registers", json!({"machine": machine})),
            3 => (
                "read_memory",
                json!({"machine": machine, "address": 2416, "length": 64}),
            ),
            _ => (
                "x86_read_disassembly",
                json!({"machine": machine, "instruction_count": 8}),
            ),
        },
        _ => match n % 4 {
            0 => ("status", json!({})),
            1 => ("get_connection_state", json!({})),
            2 => ("get_logs", json!({"since": "all", "limit": 50})),
            _ => ("search_packets", json!({"hex_pattern": "01", "limit": 20})),
        },
    }
}

/// How many load clients hold an x86 machine: x86-inspect's global cap.
const MACHINE_CLIENTS: usize = 8;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// 16 concurrent HTTP clients make 20,000 mixed calls across all five
/// plugins (ble-buffer fed by the bridge simulator): no call fails, and the
/// server's memory stays flat once warm.
#[tokio::test]
async fn load_16_http_clients_20000_mixed_calls() {
    let _serial = serial().await;
    const CLIENTS: usize = 16;
    const CALLS: usize = 20_000;
    const _: () = assert!(CALLS.is_multiple_of(CLIENTS), "an equal share each");
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    copy_dir(&repo().join("samples"), &ws);
    let plugins = plugin_copy();
    let port = free_port();
    let _sim = simulator(port, 100);
    let config = tmp.path().join("benchtop.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugin]]\npath = {:?}\nnetwork = [\"127.0.0.1:{port}\"]\nenv = {{ BLE_BRIDGE_URL = \"ws://127.0.0.1:{port}\" }}\ntick_ms = 50\n",
            plugins.path().join("ble_buffer.wasm").display().to_string()
        ),
    )
    .unwrap();
    let root = ws.to_string_lossy().into_owned();
    let (child, url) = serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &format!("{root}:rw"),
        "--workspace",
        &root,
        "--definitions-path",
        &format!("{root}/ecu/definitions"),
        "--logs-dir",
        &format!("{root}/logs"),
        "--no-watch",
    ])
    .await;
    let pid = child.id().expect("running");

    async fn call(
        client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
        tool: &str,
        args: Value,
    ) -> Result<rmcp::model::CallToolResult, String> {
        let params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().unwrap().clone());
        match tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params)).await {
            Err(_) => Err(format!("{tool} {args}: no answer in {CALL_TIMEOUT:?}")),
            Ok(Err(e)) => Err(format!("{tool} {args}: {e}")),
            Ok(Ok(r)) if is_error(&r) => Err(format!("{tool} {args}: {}", text(&r))),
            Ok(Ok(r)) => Ok(r),
        }
    }

    // Shared state: a btsnoop capture in the buffer. Emulator sessions and
    // machines belong to the client that made them, so each client makes
    // its own below.
    let setup = ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
    call(
        &setup,
        "import_btsnoop",
        json!({"path": "ble-buffer/btsnoop_hci.log"}),
    )
    .await
    .unwrap();
    setup.cancel().await.unwrap();
    let (rss_start, _) = rss_kib(pid).unwrap();

    // RSS every 100 ms, with the number of calls done by then.
    let done = Arc::new(AtomicUsize::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (done, sampling) = (done.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut samples: Vec<(usize, u64)> = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                if let Some((rss, _)) = rss_kib(pid) {
                    samples.push((done.load(Ordering::Relaxed), rss));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            samples
        })
    };

    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (url, done) = (url.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
            let session = format!("load{c}");
            call(
                &client,
                "cp1600_create_session",
                json!({"session_id": session}),
            )
            .await
            .unwrap();
            call(
                &client,
                "cp1600_load_rom",
                json!({"session_id": session, "rom_path": "cp1600/02-counter-loop.bin"}),
            )
            .await
            .unwrap();
            let mut machine = 0;
            if c < MACHINE_CLIENTS {
                let r = call(&client, "x86_load_program", json!({"path": "dos/sums.com"}))
                    .await
                    .unwrap();
                let m = &r.structured_content.unwrap()["machine"];
                machine = m.as_u64().filter(|&m| m > 0).expect("a machine id");
            }
            let share = CALLS / CLIENTS;
            let mut latencies = Vec::with_capacity(share);
            let mut failures = Vec::new();
            for k in 0..share {
                let (tool, args) = load_call(c, k, machine);
                let t = Instant::now();
                if let Err(e) = call(&client, tool, args).await {
                    failures.push(e);
                }
                latencies.push((tool, t.elapsed()));
                done.fetch_add(1, Ordering::Relaxed);
            }
            client.cancel().await.unwrap();
            (latencies, failures)
        }));
    }
    let mut latencies = Vec::with_capacity(CALLS);
    let mut by_tool: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut failures = Vec::new();
    for t in tasks {
        let (l, f) = t.await.unwrap();
        for (tool, d) in l {
            latencies.push(d);
            by_tool.entry(tool).or_default().push(d);
        }
        failures.extend(f);
    }
    let elapsed = started.elapsed();
    sampling.store(false, Ordering::Relaxed);
    let samples = sampler.await.unwrap();
    let (rss_end, hwm) = rss_kib(pid).unwrap();
    latencies.sort();

    // Memory: warm once the first 10% of the calls are done; from there on
    // it must stay flat.
    let warm = samples
        .iter()
        .find(|(n, _)| *n >= CALLS / 10)
        .map(|(_, r)| *r)
        .unwrap_or(rss_start);
    let peak_after_warm = samples
        .iter()
        .filter(|(n, _)| *n >= CALLS / 10)
        .map(|(_, r)| *r)
        .max()
        .unwrap_or(rss_end);
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "load: {CLIENTS} HTTP clients, {} calls in {:.1} s = {:.0} calls/s; {} failed; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        elapsed.as_secs_f64(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        failures.len(),
        percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0,
        latencies.last().unwrap().as_secs_f64() * 1000.0,
    );
    println!(
        "  RSS: {:.1} MiB after setup, {:.1} MiB after {} calls, {:.1} MiB at the end, {:.1} MiB the highest sample after warm-up; peak (VmHWM) {:.1} MiB; {} samples",
        mib(rss_start),
        mib(warm),
        CALLS / 10,
        mib(rss_end),
        mib(peak_after_warm),
        mib(hwm),
        samples.len()
    );
    let mut slowest: Vec<(Duration, &str, usize)> = by_tool
        .iter_mut()
        .map(|(tool, d)| {
            d.sort();
            (percentile(d, 0.99), *tool, d.len())
        })
        .collect();
    slowest.sort();
    for (p99, tool, n) in slowest.iter().rev().take(4) {
        println!(
            "  slowest p99: {tool:<22} {:>6.1} ms over {n} calls",
            p99.as_secs_f64() * 1000.0
        );
    }
    assert!(
        failures.is_empty(),
        "{} calls failed, e.g.:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(latencies.len(), CALLS);
    // Flat: after warm-up (every instance and its linear memory at working
    // size), at most 5% + 8 MiB more for allocator slack and HTTP session
    // buffers; a leak of 1 KiB a call would add 17.6 MiB over the 18,000
    // calls that follow, and fail this.
    let bound = warm + warm / 20 + 8 * 1024;
    assert!(
        peak_after_warm <= bound && rss_end <= bound,
        "memory grew under load: {:.1} MiB when warm, {:.1} MiB highest after, {:.1} MiB at the end (bound {:.1} MiB)",
        mib(warm),
        mib(peak_after_warm),
        mib(rss_end),
        mib(bound)
    );
    drop(child);
}

/// Hardening item 3: one client, within the documented caps, reset
/// x86-inspect: five machines keeping 16 MiB per console stream printing
/// forever, then one `x86_snapshot` (which built and encoded the whole
/// console before checking its size), passed the 512 MiB instance cap.
/// Consoles now share one budget over every client's machines, and a
/// snapshot is sized before it is built; the plugin keeps serving.
#[tokio::test]
async fn consoles_within_the_caps_cannot_reset_x86_inspect() {
    let _serial = serial().await;
    let drive = tempfile::tempdir().unwrap();
    // mov ah,2 ; mov dl,'x' ; int 21h ; jmp short back
    let forever = drive.path().join("FOREVER.COM");
    std::fs::write(&forever, [0xB4, 0x02, 0xB2, b'x', 0xCD, 0x21, 0xEB, 0xF8]).unwrap();
    let plugins = e2e::only_plugin("x86_inspect.wasm");
    let allow = format!("{}:ro", drive.path().display());
    let s = e2e::Server::start(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &allow,
    ])
    .await;
    let path = forever.to_str().unwrap();
    let mut machines = Vec::new();
    let mut refused = None;
    for _ in 0..5 {
        let r = s
            .call(
                "x86_load_program",
                json!({"path": path, "console_kib": 16384, "tracking": false}),
            )
            .await;
        if is_error(&r) {
            refused = Some(text(&r));
            break;
        }
        machines.push(e2e::json(&r)["machine"].clone());
    }
    let refused = refused.expect("the consoles' budget refuses a load");
    println!(
        "{} machines with 16 MiB consoles, then: {refused}",
        machines.len()
    );
    assert_eq!(machines.len(), 2, "{refused}");
    assert!(refused.starts_with("CONSOLE_BUDGET"), "{refused}");
    for m in &machines {
        let run = e2e::json(
            &s.ok(
                "x86_run",
                json!({"machine": m, "max_instructions": 80_000_000u64}),
            )
            .await,
        );
        assert!(run["stop_reason"].is_string(), "{run}");
    }
    let started = Instant::now();
    let r = s
        .call("x86_snapshot", json!({"machine": machines[0]}))
        .await;
    println!(
        "x86_snapshot of a full 16 MiB console in {:?}: {}",
        started.elapsed(),
        text(&r)
    );
    assert!(
        is_error(&r) && text(&r).contains("smaller console_kib"),
        "{}",
        text(&r)
    );
    // Nothing was reset: both machines answer, their output kept.
    for m in &machines {
        let c = e2e::json(&s.ok("x86_read_console", json!({"machine": m})).await);
        assert!(
            c["stdout_bytes"].as_u64().unwrap() > 10 << 20,
            "{}",
            c["stdout_bytes"]
        );
    }
    s.stop().await;
}
