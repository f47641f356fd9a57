//! Hardening of the host itself (issue 22, items 3, 4, 7, 9): every stdio
//! line gets an answer; HTTP answers malformed bodies with JSON-RPC errors,
//! caps sessions and connections and drops half-sent headers; a plugin that
//! could write the plugins directory, the config file or the compile cache
//! is refused; a compiled artifact renamed over another's is not loaded.
//!
//! Figures: `cargo test -p e2e --test hardening_host -- --nocapture`.

use e2e::hardening::{header, http};
use e2e::{RawFailure, RawServer, bin, rss_kib, serve_http, test_plugins};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One test at a time: they count descriptors and time things.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// A server with no plugins (the framing and the transport are the host's).
async fn bare_stdio() -> (RawServer, tempfile::TempDir) {
    let empty = tempfile::tempdir().unwrap();
    let s = RawServer::start(&[
        "--plugins",
        empty.path().to_str().unwrap(),
        "--no-cache",
        "--no-watch",
    ])
    .await;
    (s, empty)
}

#[tokio::test]
async fn every_stdio_line_gets_an_answer() {
    let _serial = serial().await;
    let (mut s, _empty) = bare_stdio().await;
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let mut invalid_utf8 =
        br#"{"jsonrpc":"2.0","id":103,"method":"ping","params":{"x":"@"}}"#.to_vec();
    let at = invalid_utf8.iter().position(|b| *b == b'@').unwrap();
    invalid_utf8.splice(at..=at, [0xff, 0xfe]);
    let mut huge = br#"{"jsonrpc":"2.0","id":101,"method":"ping","params":{"x":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 17 << 20));
    huge.extend_from_slice(b"\"}}");
    // (label, line, expected id, expected code, words the message must hold)
    let cases: Vec<(&str, Vec<u8>, Value, i64, &str)> = vec![
        (
            "a line over 16 MiB",
            huge,
            json!(101),
            -32700,
            "longer than 16 MiB",
        ),
        (
            "JSON nested 200 deep",
            format!(r#"{{"jsonrpc":"2.0","id":102,"method":"ping","params":{{"x":{deep}}}}}"#)
                .into_bytes(),
            json!(102),
            -32700,
            "128 levels",
        ),
        ("invalid UTF-8", invalid_utf8, json!(103), -32700, "UTF-8"),
        (
            "a lone surrogate",
            br#"{"jsonrpc":"2.0","id":104,"method":"ping","params":{"x":"\ud800"}}"#.to_vec(),
            json!(104),
            -32700,
            "surrogate",
        ),
        (
            "id 1e400",
            br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.to_vec(),
            Value::Null,
            -32700,
            "out of range",
        ),
        (
            "a fractional id",
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(),
            Value::Null,
            -32600,
            "`id` must be a string or an integer",
        ),
        (
            "a batch",
            br#"[{"jsonrpc":"2.0","id":107,"method":"ping"}]"#.to_vec(),
            Value::Null,
            -32600,
            "batches are not supported",
        ),
        (
            "not JSON at all",
            b"\x00\x01garbage".to_vec(),
            Value::Null,
            -32700,
            "not valid JSON",
        ),
    ];
    let mut problems = Vec::new();
    for (label, line, id, code, words) in cases {
        let started = Instant::now();
        s.send_bytes(&line).await;
        // `response` also takes an error with a null id as the answer.
        let wait_for = id.as_u64().unwrap_or(u64::MAX);
        let answer = match s.response(wait_for, Duration::from_secs(10)).await {
            Ok(a) => a,
            Err(RawFailure::Timeout) => {
                problems.push(format!("{label}: no answer in 10 s"));
                continue;
            }
            Err(RawFailure::Closed) => panic!("{label}: the server died"),
        };
        println!(
            "{label}: answered in {:?}: {}",
            started.elapsed(),
            answer["error"]["message"]
        );
        if answer["id"] != id || answer["error"]["code"] != code {
            problems.push(format!(
                "{label}: expected id {id} and code {code}, got {answer}"
            ));
        }
        if !answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(words))
        {
            problems.push(format!(
                "{label}: the message should say `{words}`: {answer}"
            ));
        }
    }
    // Still in step: the next request gets its own answer.
    let r = s
        .request("ping", json!({}), Duration::from_secs(5))
        .await
        .expect("ping answered after the bad lines");
    assert!(r.get("result").is_some(), "{r}");
    assert!(s.alive());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-http","version":"1"}}}"#;
const JSON_AND_SSE: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON_BODY: (&str, &str) = ("Content-Type", "application/json");

/// `serve --http` with no plugins and `http` as the config's `[http]`.
async fn bare_http(http_section: &str) -> (tokio::process::Child, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let config = dir.path().join("benchtop.toml");
    std::fs::write(&config, format!("[http]\n{http_section}\n")).unwrap();
    let (child, url) = serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "--no-cache",
        "--no-watch",
    ])
    .await;
    (child, url, dir)
}

#[tokio::test]
async fn http_malformed_bodies_get_json_rpc_errors_and_wildcard_accept_works() {
    let _serial = serial().await;
    let (_child, url, _dir) = bare_http("").await;
    for (label, body, code) in [
        ("malformed JSON", "{\"jsonrpc\":\"2.0\",\"id\":1,", -32700),
        (
            "a lone surrogate",
            r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\ud800"}}"#,
            -32700,
        ),
        (
            "a batch",
            r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
            -32600,
        ),
    ] {
        let (status, headers, answer) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], body).await;
        println!("{label}: HTTP {status}: {answer}");
        assert_eq!(status, 400, "{label}: {answer}");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let answer: Value = serde_json::from_str(&answer).expect("a JSON-RPC error body");
        assert_eq!(answer["error"]["code"], code, "{label}: {answer}");
    }
    for accept in ["*/*", "application/*, text/*"] {
        let (status, headers, body) =
            http(&url, "POST", &[("Accept", accept), JSON_BODY], INITIALIZE).await;
        println!("initialize with Accept: {accept}: HTTP {status}");
        assert_eq!(status, 200, "Accept: {accept}: {body}");
        assert!(header(&headers, "mcp-session-id").is_some(), "{headers:?}");
        assert!(body.contains("\"protocolVersion\""), "{body}");
    }
}

#[tokio::test]
async fn methods_2026_07_28_removed_are_not_found_for_its_clients_only() {
    let _serial = serial().await;
    let (_child, url, _dir) = bare_http("").await;
    let version = ("MCP-Protocol-Version", "2026-07-28");
    for method in [
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{}}}}"#);
        let (status, _, answer) =
            http(&url, "POST", &[JSON_AND_SSE, JSON_BODY, version], &body).await;
        assert_eq!(status, 404, "{method}: {answer}");
        let answer: Value = serde_json::from_str(&answer).expect("a JSON-RPC error body");
        assert_eq!(answer["id"], 7, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("removed in MCP 2026-07-28"),
            "{answer}"
        );
    }
    // The version may ride in the request's `_meta` instead of a header.
    let body = r#"{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"x://y","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let (status, _, answer) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], body).await;
    assert_eq!(status, 404, "{answer}");
    // Clients of earlier revisions still initialize.
    let (status, _, answer) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn http_sessions_are_capped_and_idle_ones_closed() {
    let _serial = serial().await;
    let (_child, url, _dir) = bare_http("max_sessions = 3\nsession_idle_secs = 2").await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let (status, headers, body) =
            http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
        assert_eq!(status, 200, "{body}");
        sessions.push(header(&headers, "mcp-session-id").unwrap().to_owned());
    }
    let (status, headers, body) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
    println!("a 4th session with max_sessions = 3: HTTP {status}: {body}");
    assert_eq!(status, 503, "{body}");
    assert!(header(&headers, "retry-after").is_some());
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["id"], 1);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_sessions"),
        "{answer}"
    );
    // Idle for longer than 2 s: closed, and room for new sessions.
    let started = Instant::now();
    let reopened = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (status, _, _) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
        if status == 200 {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "idle sessions never closed"
        );
    };
    println!("idle sessions closed; a new one opened {reopened:?} after the refusal");
    let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    let (status, _, body) = http(
        &url,
        "POST",
        &[
            JSON_AND_SSE,
            JSON_BODY,
            ("Mcp-Session-Id", &sessions[0]),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        ping,
    )
    .await;
    assert_eq!(status, 404, "an idle-closed session is gone: {body}");
}

#[tokio::test]
async fn an_http_session_flood_is_bounded_by_the_default_cap() {
    let _serial = serial().await;
    let (child, url, _dir) = bare_http("").await;
    let pid = child.id().unwrap();
    let (before, _) = rss_kib(pid).unwrap();
    let started = Instant::now();
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..2_000 {
        match http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE)
            .await
            .0
        {
            200 => opened += 1,
            503 => refused += 1,
            other => panic!("initialize answered HTTP {other}"),
        }
    }
    let (after, peak) = rss_kib(pid).unwrap();
    println!(
        "2,000 initialize requests in {:?}: {opened} sessions opened, {refused} refused; RSS {:.1} MiB before, {:.1} MiB after (peak {:.1} MiB)",
        started.elapsed(),
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    assert_eq!(opened, 64, "the default cap is 64 sessions");
    assert!(
        after < before + 64 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test]
async fn http_half_sent_headers_are_dropped_and_connections_capped() {
    let _serial = serial().await;
    let (child, url, _dir) = bare_http("max_connections = 8\nheader_timeout_secs = 1").await;
    let pid = child.id().unwrap();
    let authority = url
        .strip_prefix("http://")
        .and_then(|u| u.split('/').next())
        .unwrap()
        .to_owned();
    let before = open_descriptors(pid);
    let mut slow = Vec::new();
    for _ in 0..24 {
        let mut s = tokio::net::TcpStream::connect(&authority).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = open_descriptors(pid);
    println!(
        "descriptors: {before} before, {during} with 24 half-sent requests (max_connections = 8)"
    );
    assert!(
        during <= before + 8 + 2,
        "the server holds {during} descriptors (was {before}); the cap is 8 connections"
    );
    // Each half-sent request is cut off after the 1 s header deadline; the
    // ones waiting in the backlog get their turn and are cut off in turn.
    let started = Instant::now();
    let (status, _, body) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
    let served = started.elapsed();
    println!("a real client was served in {served:?} behind 24 half-sent requests");
    assert_eq!(status, 200, "{body}");
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), slow[0].read(&mut buf))
        .await
        .expect("the server closes a connection whose headers never finish");
    assert!(
        matches!(closed, Ok(0) | Err(_)) || String::from_utf8_lossy(&buf).contains("408"),
        "{closed:?}"
    );
}

#[tokio::test]
async fn a_real_client_is_served_behind_a_flood_of_half_sent_requests() {
    let _serial = serial().await;
    // The defaults: 256 connections, 10 s for headers (1 s once half the
    // connections are taken).
    let (_child, url, _dir) = bare_http("").await;
    let authority = url
        .strip_prefix("http://")
        .and_then(|u| u.split('/').next())
        .unwrap()
        .to_owned();
    let mut slow = Vec::new();
    for _ in 0..600 {
        let mut s = tokio::net::TcpStream::connect(&authority).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    let started = Instant::now();
    let (status, _, body) = http(&url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
    let served = started.elapsed();
    let mut cut = 0;
    for s in &slow {
        let mut buf = [0u8; 256];
        match s.try_read(&mut buf) {
            Ok(_) => cut += 1,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => cut += 1,
        }
    }
    println!(
        "a real client was served in {served:?} behind 600 half-sent requests ({cut} of them cut off by then)"
    );
    assert_eq!(status, 200, "{body}");
    assert!(served < Duration::from_secs(10), "{served:?}");
}

/// `benchtop tools ARGS…`: success and stderr.
fn tools(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(bin())
        .arg("tools")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn plugins_that_could_write_host_files_are_refused() {
    let _serial = serial().await;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let plugins = root.join("plugins");
    let data = root.join("data");
    let cfg_dir = root.join("cfg");
    let cache = root.join("cache");
    for d in [&plugins, &data, &cfg_dir, &cache] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::copy(
        test_plugins().join("greeter.wasm"),
        plugins.join("greeter.wasm"),
    )
    .unwrap();
    let config = cfg_dir.join("benchtop.toml");
    std::fs::write(&config, "").unwrap();
    let rw = |d: &Path| format!("{}:rw", d.display());
    let common = ["--plugins", s(&plugins), "--cache-dir", s(&cache)];
    // Made by a server that loaded it: a grant must name what exists.
    let other_plugin_cache = cache.join("plugin-data/ecu-tables");
    std::fs::create_dir_all(&other_plugin_cache).unwrap();
    // A grant that covers none of them: served.
    let (ok, err) = tools(
        &[
            &common[..],
            &["--allow", &rw(&data), "--config", s(&config)],
        ]
        .concat(),
    );
    assert!(ok, "{err}");
    for (label, args, words) in [
        (
            "the plugins directory",
            vec!["--allow".to_owned(), rw(&root)],
            "covers the plugins directory",
        ),
        (
            "the config file",
            vec![
                "--allow".to_owned(),
                rw(&cfg_dir),
                "--config".to_owned(),
                s(&config).to_owned(),
            ],
            "covers the config file",
        ),
        (
            "the compile cache",
            vec!["--allow".to_owned(), rw(&cache)],
            "covers the compile cache",
        ),
        (
            "another plugin's cache directory",
            vec!["--allow".to_owned(), rw(&other_plugin_cache)],
            "reaches the plugins' own cache directories",
        ),
    ] {
        let args: Vec<&str> = common
            .iter()
            .copied()
            .chain(args.iter().map(String::as_str))
            .collect();
        let (ok, err) = tools(&args);
        println!("a read-write grant over {label}: refused = {}", !ok);
        assert!(!ok, "{label}: served although a plugin could write it");
        assert!(
            err.contains("refusing to load plugin") && err.contains(words),
            "{label}: {err}"
        );
    }
    // Read-only grants are fine.
    let (ok, err) = tools(&[&common[..], &["--allow", &format!("{}:ro", root.display())]].concat());
    assert!(ok, "{err}");
}

#[tokio::test]
async fn a_compiled_artifact_renamed_over_another_is_rebuilt_not_loaded() {
    let _serial = serial().await;
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    let cache = tmp.path().join("cache");
    std::fs::create_dir(&plugins).unwrap();
    let artifacts = |dir: &Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect();
        v.sort();
        v
    };
    // Two plugins directories (their tools share names), one cache.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let args = ["--plugins", s(&plugins), "--cache-dir", s(&cache)];
    std::fs::copy(
        test_plugins().join("greeter.wasm"),
        other.join("greeter.wasm"),
    )
    .unwrap();
    let (ok, err) = tools(&["--plugins", s(&other), "--cache-dir", s(&cache)]);
    assert!(ok, "{err}");
    let greeter = artifacts(&cache);
    assert_eq!(greeter.len(), 1, "{greeter:?}");
    std::fs::copy(
        test_plugins().join("kitchen_sink.wasm"),
        plugins.join("kitchen_sink.wasm"),
    )
    .unwrap();
    let (ok, err) = tools(&args);
    assert!(ok, "{err}");
    let sink = artifacts(&cache)
        .into_iter()
        .find(|p| !greeter.contains(p))
        .expect("kitchen-sink's artifact");
    // The greeter's native code under the kitchen sink's name.
    std::fs::rename(&greeter[0], &sink).unwrap();
    let out = std::process::Command::new(bin())
        .arg("tools")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let listed = String::from_utf8_lossy(&out.stdout);
    println!(
        "after the swap: {}",
        err.lines()
            .filter(|l| l.contains("cache"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("fails its check"),
        "the swapped artifact was trusted:\n{err}"
    );
    assert!(listed.contains("kitchen-sink"), "{listed}");
}

/// A session opened over raw HTTP: its `Mcp-Session-Id`.
async fn open_session(url: &str) -> String {
    let (status, headers, body) = http(url, "POST", &[JSON_AND_SSE, JSON_BODY], INITIALIZE).await;
    assert_eq!(status, 200, "{body}");
    let id = header(&headers, "mcp-session-id").unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let with = [JSON_AND_SSE, JSON_BODY, ("Mcp-Session-Id", id.as_str())];
    let (status, _, body) = http(url, "POST", &with, initialized).await;
    assert_eq!(status, 202, "{body}");
    id
}

/// A `tools/list` in MCP 2026-07-28's form, with `headers` besides.
async fn list_2026(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}"#;
    let mut all = vec![
        JSON_AND_SSE,
        JSON_BODY,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    all.extend_from_slice(headers);
    let (status, _, answer) = http(url, "POST", &all, body).await;
    (status, answer)
}

/// Hardening item 10: a DELETEd session's `Mcp-Session-Id` still worked
/// on 2026-07-28 requests (and reached that session's emulator sessions).
#[tokio::test]
async fn a_closed_session_id_is_refused_in_every_protocol_form() {
    let _serial = serial().await;
    let (_child, url, _dir) = bare_http("").await;
    let id = open_session(&url).await;
    let (status, answer) = list_2026(&url, &[("Mcp-Session-Id", &id)]).await;
    assert_eq!(status, 200, "a live session works: {answer}");
    let (status, _, body) = http(&url, "DELETE", &[("Mcp-Session-Id", &id)], "").await;
    assert!(
        status == 200 || status == 202 || status == 204,
        "DELETE: {status} {body}"
    );
    let (status, answer) = list_2026(&url, &[("Mcp-Session-Id", &id)]).await;
    println!("a 2026-07-28 request with a closed session: HTTP {status}: {answer}");
    assert_eq!(status, 404, "{answer}");
    assert!(answer.contains("names no open session"), "{answer}");
    // Without the header a 2026-07-28 request is served as before.
    let (status, answer) = list_2026(&url, &[]).await;
    assert_eq!(status, 200, "{answer}");
}

/// Hardening item 5: each closed HTTP session left its notification task
/// and subscriptions behind (RSS 36 → 169 MiB over 12,000 cycles), and a
/// subscription could name a 1 MB URI. Cycles of open, subscribe, DELETE
/// must leave the server's memory flat; `SOAK_CYCLES` sets how many
/// (`make soak` runs 20,000).
#[tokio::test]
async fn closed_http_sessions_free_what_they_held() {
    let _serial = serial().await;
    let plugins = e2e::only_plugin("ble_buffer.wasm");
    let (child, url) =
        serve_http(&["--plugins", plugins.path().to_str().unwrap(), "--no-watch"]).await;
    let pid = child.id().unwrap();
    let subscribe = |uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{{"uri":"{uri}"}}}}"#
        )
    };
    let id = open_session(&url).await;
    let with = [JSON_AND_SSE, JSON_BODY, ("Mcp-Session-Id", id.as_str())];
    let long = format!("ble://buffer/{}", "9".repeat(1 << 20));
    let (status, _, answer) = http(&url, "POST", &with, &subscribe(&long)).await;
    assert_eq!(status, 200, "{}", &answer[..answer.len().min(300)]);
    assert!(
        answer.contains("over the 2048"),
        "{}",
        &answer[..answer.len().min(300)]
    );
    assert!(
        answer.len() < 4096,
        "the refusal is short: {} bytes",
        answer.len()
    );

    let cycles: usize = std::env::var("SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let warm = (cycles / 5).max(100);
    let mut rss_warm = 0;
    let started = Instant::now();
    for n in 0..cycles {
        let id = open_session(&url).await;
        let with = [JSON_AND_SSE, JSON_BODY, ("Mcp-Session-Id", id.as_str())];
        let (status, _, answer) = http(&url, "POST", &with, &subscribe("ble://buffer")).await;
        assert_eq!(status, 200, "{answer}");
        assert!(!answer.contains("\"error\""), "{answer}");
        let (status, _, _) = http(&url, "DELETE", &[("Mcp-Session-Id", &id)], "").await;
        assert!(status < 300, "DELETE: {status}");
        if n + 1 == warm {
            // The notification tasks look once a second whether their
            // session closed: let the last ones go before measuring.
            tokio::time::sleep(Duration::from_secs(2)).await;
            rss_warm = rss_kib(pid).unwrap().0;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_end = rss_kib(pid).unwrap().0;
    println!(
        "{cycles} open/subscribe/close cycles in {:.1} s: RSS {} KiB after {warm}, {} KiB at the end",
        started.elapsed().as_secs_f64(),
        rss_warm,
        rss_end
    );
    assert!(
        rss_end <= rss_warm + rss_warm / 10 + 2048,
        "RSS grew from {rss_warm} to {rss_end} KiB over {} closed sessions",
        cycles - warm
    );
}
