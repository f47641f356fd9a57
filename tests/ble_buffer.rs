//! ble-buffer through benchtop, fed by the bridge simulator over a real
//! WebSocket: the plugin drains the bridge on the host's tick, within its
//! network allow-list.

use e2e::{Server, coded_error, free_port, is_error, simulator_bin, spawn_simulator};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The simulator on `port`, sending `count` packets as fast as they are taken.
fn start_simulator(port: u16, count: u64) -> tokio::process::Child {
    let count = count.to_string();
    let args = ["--rate", "0", "--count", &count, "--wait-for-client"];
    spawn_simulator(&simulator_bin(), port, &args).unwrap()
}

struct Ble {
    server: Server,
    _dir: tempfile::TempDir,
}

impl Ble {
    async fn start(port: u16) -> Ble {
        Ble::start_with(port, "").await
    }

    /// With `extra` lines in the plugin's config entry.
    async fn start_with(port: u16, extra: &str) -> Ble {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("benchtop.toml");
        std::fs::write(&config, e2e::ble_config(port) + extra).unwrap();
        let server = Server::start(&["--config", config.to_str().unwrap(), "--no-watch"]).await;
        Ble { server, _dir: dir }
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        self.server
            .ok(tool, args)
            .await
            .structured_content
            .expect("structured result")
    }

    async fn packets(&self) -> u64 {
        let s = self.ok("get_connection_state", json!({})).await;
        s["packets_transmitted"].as_u64().unwrap() + s["packets_received"].as_u64().unwrap()
    }

    async fn wait_for(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let state = self.ok("get_connection_state", json!({})).await;
            if check(&state) {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {state}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn ids(page: &Value) -> Vec<u64> {
    page["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_buffer_keeps_exactly_the_newest_10000_of_25000_packets() {
    let port = free_port();
    let _sim = start_simulator(port, 25_000);
    let ble = Ble::start(port).await;
    ble.wait_for("25,000 packets", |s| {
        s["packets_transmitted"].as_u64().unwrap() + s["packets_received"].as_u64().unwrap()
            >= 25_000
    })
    .await;
    assert_eq!(ble.packets().await, 25_000);

    // Everything there is: exactly 10,000, with continuous ids.
    let page = ble
        .ok("get_logs", json!({"since": "all", "limit": 1000}))
        .await;
    assert_eq!(page["total_matching"], 10_000);
    assert_eq!(page["truncated"], true, "1,000 of 10,000 shown");
    let oldest = page["oldest_available_id"].as_u64().unwrap();
    let newest = page["newest_id"].as_u64().unwrap();
    assert_eq!(newest - oldest + 1, 10_000);
    let first = ids(&page);
    assert_eq!(first.len(), 1000);
    assert_eq!(first[0], oldest);
    assert!(first.windows(2).all(|w| w[1] == w[0] + 1), "continuous ids");

    // Paging with next_since visits every packet once.
    let mut seen = first.len();
    let mut since = page["next_since"].as_str().unwrap().to_owned();
    loop {
        let page = ble
            .ok("get_logs", json!({"since": since, "limit": 1000}))
            .await;
        let got = ids(&page);
        if got.is_empty() {
            break;
        }
        seen += got.len();
        since = page["next_since"].as_str().unwrap().to_owned();
    }
    assert_eq!(seen, 10_000);

    // A reader's `last` position.
    let a = ble
        .ok(
            "get_logs",
            json!({"since": "last", "reader": "agent", "limit": 10}),
        )
        .await;
    let b = ble
        .ok(
            "get_logs",
            json!({"since": "last", "reader": "agent", "limit": 10}),
        )
        .await;
    assert_eq!(
        ids(&b)[0],
        ids(&a)[9] + 1,
        "the reader continues where it stopped"
    );
    // Durations and ids.
    let recent = ble.ok("get_logs", json!({"since": "1h", "limit": 1})).await;
    assert_eq!(recent["total_matching"], 10_000);
    let after = ble
        .ok("get_logs", json!({"since": (newest - 5).to_string()}))
        .await;
    assert_eq!(
        ids(&after),
        vec![newest - 4, newest - 3, newest - 2, newest - 1, newest]
    );
    // An unparsable `since` is an error, not "everything".
    let r = ble
        .server
        .err("get_logs", json!({"since": "yesterday-ish"}))
        .await;
    assert!(is_error(&r));
    ble.server.stop().await;
}

/// Every ble-buffer tool returns a record: each lists an outputSchema taken
/// from the WIT (record docs as descriptions, options not required), and a
/// call's text block is its structured content as JSON.
async fn typed_results_have_schemas_and_text(ble: &Ble) {
    let tools = ble.server.tools().await;
    for name in [
        "get_logs",
        "search_packets",
        "get_connection_state",
        "status",
        "scan_devices",
        "import_btsnoop",
        "get_metrics",
    ] {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        let schema = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no outputSchema"));
        assert_eq!(
            schema.get("type"),
            Some(&json!("object")),
            "{name}: {schema:?}"
        );
    }
    let logs = tools.iter().find(|t| t.name == "get_logs").unwrap();
    let schema = Value::Object((**logs.output_schema.as_ref().unwrap()).clone());
    let entry = &schema["properties"]["logs"]["items"];
    let required: Vec<&str> = entry["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        required.contains(&"hex") && !required.contains(&"att"),
        "{entry}"
    );
    assert!(
        entry["properties"]["size"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("bytes")),
        "field docs are the descriptions: {entry}"
    );

    let r = ble
        .server
        .ok("get_logs", json!({"since": "all", "limit": 3}))
        .await;
    let text: Value = serde_json::from_str(&e2e::text(&r)).expect("the text is JSON");
    assert_eq!(
        Some(text),
        r.structured_content,
        "text and structured content agree"
    );
}

#[tokio::test]
async fn search_correlates_replies_and_scanning_is_refused_while_connected() {
    let port = free_port();
    let _sim = start_simulator(port, 400);
    let ble = Ble::start(port).await;
    ble.wait_for("a connected device and traffic", |s| {
        s["connected"] == true && s["packets_transmitted"].as_u64().unwrap() > 50
    })
    .await;
    let tx = ble
        .ok(
            "get_logs",
            json!({"since": "all", "direction": "tx", "limit": 1}),
        )
        .await;
    let hex = tx["logs"][0]["hex"].as_str().unwrap().to_owned();
    assert!(hex.len() >= 4, "{hex}");
    // A live packet has no ATT details: the field is left out, not null.
    assert!(tx["logs"][0].get("att").is_none(), "{tx}");
    typed_results_have_schemas_and_text(&ble).await;
    // The first byte, then any byte: the pattern is hex with a wildcard.
    let pattern = format!("{} ??", &hex[..2]);
    let found = ble
        .ok(
            "search_packets",
            json!({"hex_pattern": pattern, "direction": "tx"}),
        )
        .await;
    assert!(found["count"].as_u64().unwrap() > 0, "{found}");
    let first = &found["matches"][0];
    assert!(
        first["packet"]["hex"]
            .as_str()
            .unwrap()
            .starts_with(&hex[..2])
    );
    assert!(
        first["reply"].is_object(),
        "a TX match carries the reply that followed: {first}"
    );
    // A regex-looking pattern is not passed to a regex engine.
    let r = ble
        .server
        .err("search_packets", json!({"hex_pattern": "(.*"}))
        .await;
    assert!(e2e::text(&r).contains("BAD_PATTERN"), "{}", e2e::text(&r));
    // Scanning while connected is refused with a code and a way out.
    let r = ble.server.err("scan_devices", json!({})).await;
    let (code, msg) = coded_error(&r);
    assert_eq!(code, "SCAN_WHILE_CONNECTED");
    assert!(msg.to_lowercase().contains("disconnect"), "{msg}");
    ble.server.stop().await;
}

#[tokio::test]
async fn a_dropped_bridge_is_reported_reconnected_and_nothing_is_lost() {
    let port = free_port();
    let mut sim = start_simulator(port, 0);
    let ble = Ble::start(port).await;
    ble.wait_for("traffic", |s| {
        s["packets_transmitted"].as_u64().unwrap() > 100
    })
    .await;
    sim.kill().await.unwrap();
    let down = ble
        .wait_for("the disconnect", |s| s["bridge"]["state"] != "connected")
        .await;
    let kept = ble
        .ok("get_logs", json!({"since": "all", "limit": 1}))
        .await["total_matching"]
        .as_u64()
        .unwrap();
    assert!(kept > 100, "{down}");
    let _sim = start_simulator(port, 0);
    ble.wait_for("the reconnection", |s| {
        s["bridge"]["state"] == "connected" && s["bridge"]["connections"].as_u64().unwrap() >= 2
    })
    .await;
    let after = ble
        .ok("get_logs", json!({"since": "all", "limit": 1}))
        .await["total_matching"]
        .as_u64()
        .unwrap();
    assert!(
        after >= kept,
        "nothing it had was lost: {kept} then {after}"
    );
    ble.server.stop().await;
}

/// ATT values counted by the test's own reading of a btsnoop file: per
/// (connection, attribute handle), writes and notifications, and per
/// direction flag; written from the format description, sharing nothing
/// with the plugin's parser.
#[derive(Default, Debug)]
struct Reference {
    records: u64,
    /// (connection, handle) → (writes, notifications)
    per_handle: std::collections::BTreeMap<(u64, u64), (u64, u64)>,
    /// (TX, RX) by the capture's direction flag.
    by_flag: (u64, u64),
    /// Microsecond part of the first imported value's timestamp.
    first_us: Option<u64>,
}

fn reference(bytes: &[u8]) -> Reference {
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| a << 8 | x as u64);
    let le = |b: &[u8]| b.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64);
    assert_eq!(&bytes[..8], b"btsnoop\0");
    let datalink = be(&bytes[12..16]);
    let mut r = Reference::default();
    // (adapter, connection, sent) → (L2CAP bytes so far, bytes expected, timestamp)
    let mut partial = std::collections::HashMap::new();
    let mut at = 16;
    while at + 24 <= bytes.len() {
        let len = be(&bytes[at + 4..at + 8]) as usize;
        let flags = be(&bytes[at + 8..at + 12]);
        let ts = be(&bytes[at + 16..at + 24]);
        let rec = &bytes[at + 24..(at + 24 + len).min(bytes.len())];
        at += 24 + len;
        r.records += 1;
        let (acl, sent, adapter) = match datalink {
            1002 if rec.first() == Some(&2) => (&rec[1..], flags & 1 == 0, 0),
            2001 if flags & 0xFFFF == 4 || flags & 0xFFFF == 5 => {
                (rec, flags & 0xFFFF == 4, flags >> 16)
            }
            _ => continue,
        };
        if acl.len() < 4 {
            continue;
        }
        let head = le(&acl[..2]);
        let conn = head & 0xFFF;
        let body = &acl[4..(4 + le(&acl[2..4]) as usize).min(acl.len())];
        let key = (adapter, conn, sent);
        let frame: Vec<u8> = if (head >> 12) & 3 == 1 {
            let Some((mut buf, want, t0)) = partial.remove(&key) else {
                continue;
            };
            let buf: &mut Vec<u8> = &mut buf;
            buf.extend_from_slice(body);
            if buf.len() < want {
                partial.insert(key, (buf.clone(), want, t0));
                continue;
            }
            buf.clone()
        } else {
            partial.remove(&key);
            if body.len() < 4 {
                continue;
            }
            let want = le(&body[..2]) as usize + 4;
            if body.len() < want {
                partial.insert(key, (body.to_vec(), want, ts));
                continue;
            }
            body.to_vec()
        };
        if le(&frame[2..4]) != 4 || frame.len() < 7 {
            continue;
        }
        let (write, notify) = match frame[4] {
            0x12 | 0x52 | 0xD2 => (1, 0),
            0x1B | 0x1D => (0, 1),
            _ => continue,
        };
        let e = r
            .per_handle
            .entry((conn, le(&frame[5..7])))
            .or_insert((0, 0));
        e.0 += write;
        e.1 += notify;
        if sent {
            r.by_flag.0 += 1;
        } else {
            r.by_flag.1 += 1;
        }
        r.first_us.get_or_insert(ts % 1_000_000);
    }
    r
}

#[tokio::test]
async fn shared_every_real_capture_imports_with_independent_att_counts() {
    let Some(dir) = e2e::fixtures("realworld/btsnoop").map(|d| d.canonicalize().unwrap()) else {
        return;
    };
    let cfg_dir = tempfile::tempdir().unwrap();
    let config = cfg_dir.path().join("benchtop.toml");
    // No bridge listens on this port: the plugin serves imports alone.
    let mut toml = e2e::ble_config(free_port());
    toml.push_str(&format!(
        "allow = [{:?}]\n",
        format!("{}:ro", dir.display())
    ));
    std::fs::write(&config, toml).unwrap();
    let server = Server::start(&["--config", config.to_str().unwrap(), "--no-watch"]).await;
    let ok = |tool: &'static str, args: Value| {
        let server = &server;
        async move { server.ok(tool, args).await.structured_content.unwrap() }
    };

    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let (mut imported, mut with_att) = (0u64, 0);
    for (number, path) in files.iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let want = reference(&std::fs::read(path).unwrap());
        let total: u64 = want.per_handle.values().map(|(w, n)| w + n).sum();
        let r = ok("import_btsnoop", json!({"path": path})).await;
        assert_eq!(r["records"].as_u64(), Some(want.records), "{name}");
        assert_eq!(
            (r["tx"].as_u64().unwrap(), r["rx"].as_u64().unwrap()),
            want.by_flag,
            "{name}: TX/RX follow the capture's direction flag"
        );
        let mut table = std::collections::BTreeMap::new();
        for h in r["handles"].as_array().unwrap() {
            let key = (
                h["connection"].as_u64().unwrap(),
                h["handle"].as_u64().unwrap(),
            );
            let counts = (
                h["writes"].as_u64().unwrap(),
                h["notifications"].as_u64().unwrap(),
            );
            table.insert(key, counts);
        }
        assert_eq!(r["handles_left_out"], 0, "{name}");
        assert_eq!(
            table, want.per_handle,
            "{name}: writes and notifications per handle"
        );
        eprintln!(
            "{name}: {} records, {} TX / {} RX on {} handles; holds {}",
            want.records,
            want.by_flag.0,
            want.by_flag.1,
            want.per_handle.len(),
            r["holds"]
        );
        imported += total;
        if total == 0 {
            // Nothing to read: the answer says what the capture holds.
            assert!(r["since"].is_null(), "{name}: {r}");
            let note = r["note"].as_str().unwrap();
            assert!(
                note.contains("nothing was imported: it holds"),
                "{name}: {note}"
            );
            assert!(!r["holds"].as_array().unwrap().is_empty(), "{name}: {r}");
            if name.contains("a2dp") {
                assert!(
                    r["holds"].as_array().unwrap().contains(&json!("a2dp")),
                    "{r}"
                );
                assert!(note.contains("AVDTP (A2DP audio)"), "{note}");
            }
            continue;
        }
        with_att += 1;

        // get_logs right after the import, without since, returns them:
        // paging on with the same call reads exactly this import.
        let first_id = r["first_id"].as_u64().unwrap();
        let mut got = std::collections::BTreeMap::new();
        let mut next = first_id;
        loop {
            let page = ok("get_logs", json!({"limit": 1000, "include_events": false})).await;
            let logs = page["logs"].as_array().unwrap();
            if logs.is_empty() {
                let note = page["note"].as_str().unwrap_or_default();
                assert!(
                    note.contains("nothing returned"),
                    "{name}: an empty answer says why: {page}"
                );
                break;
            }
            if next == first_id {
                let note = page["note"].as_str().unwrap();
                assert!(note.contains("reading the packets imported from"), "{note}");
                let ts = logs[0]["timestamp"].as_str().unwrap();
                let frac = &ts[ts.len() - 7..ts.len() - 1];
                assert_eq!(
                    frac.parse::<u64>().ok(),
                    want.first_us,
                    "{name}: microseconds {ts}"
                );
            }
            for p in logs {
                assert_eq!(p["id"].as_u64(), Some(next), "{name}: no gaps or repeats");
                next += 1;
                let att = &p["att"];
                let key = (
                    att["connection"].as_u64().unwrap(),
                    att["handle"].as_u64().unwrap(),
                );
                let e = got.entry(key).or_insert((0u64, 0u64));
                match att["op"].as_str().unwrap() {
                    "write-request" | "write-command" | "signed-write-command" => e.0 += 1,
                    "notification" | "indication" => e.1 += 1,
                    other => panic!("{name}: unexpected opcode {other}"),
                }
            }
        }
        assert_eq!(next - first_id, total, "{name}");
        assert_eq!(got, want.per_handle, "{name}: get_logs per handle");

        // The busiest handle, by get_logs filter and by search_packets.
        let (&(conn, handle), &(w, n)) = want
            .per_handle
            .iter()
            .max_by_key(|(k, (w, n))| (w + n, std::cmp::Reverse(**k)))
            .unwrap();
        let since = r["since"].as_str().unwrap();
        let by = ok(
            "get_logs",
            json!({"since": since, "handle": handle, "connection": conn, "limit": 1}),
        )
        .await;
        assert_eq!(by["total_matching"].as_u64(), Some(w + n), "{name}");
        let found = ok(
            "search_packets",
            json!({"handle": handle, "connection": conn, "since": since, "limit": 1}),
        )
        .await;
        assert_eq!(found["total_matching"].as_u64(), Some(w + n), "{name}");
        let writes = ok(
            "get_logs",
            json!({"since": since, "handle": handle, "connection": conn, "opcode": "write-command", "limit": 1}),
        )
        .await;
        assert!(writes["total_matching"].as_u64().unwrap() <= w, "{name}");

        // The same file again adds nothing while its packets are buffered,
        // and says so.
        let again = ok("import_btsnoop", json!({"path": path})).await;
        let number = number as u64 + 1;
        assert_eq!(again["already_imported"].as_u64(), Some(number), "{again}");
        assert_eq!(again["first_id"], r["first_id"]);
        assert_eq!(again["since"], r["since"]);
        let w = again["warnings"][0].as_str().unwrap();
        assert!(w.starts_with("already imported"), "{w}");
        let status = ok("status", json!({})).await;
        assert_eq!(status["newest_id"], r["last_id"], "{name}: nothing added");
    }
    assert!(with_att > 0, "some capture has ATT traffic");
    let m = ok("get_metrics", json!({})).await;
    let im = &m["imported"];
    assert_eq!(im["files"].as_u64(), Some(files.len() as u64));
    assert_eq!(
        im["tx"].as_u64().unwrap() + im["rx"].as_u64().unwrap(),
        imported
    );
    server.stop().await;
}

/// A resource's text, parsed as JSON (or the error's text).
async fn read_json(ble: &Ble, uri: &str) -> Result<Value, String> {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let r = ble
        .server
        .client
        .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
        .await
        .map_err(|e| e.to_string())?;
    match &r.contents[0] {
        ResourceContents::TextResourceContents {
            text, mime_type, ..
        } => {
            assert_eq!(mime_type.as_deref(), Some("application/json"), "{uri}");
            Ok(serde_json::from_str(text).expect("JSON contents"))
        }
        other => panic!("text expected from {uri}, got {other:?}"),
    }
}

impl Ble {
    /// Notices received for `uri` so far.
    fn updates(&self, uri: &str) -> usize {
        let events = self.server.events.lock().unwrap();
        events.resource_updates.iter().filter(|u| *u == uri).count()
    }

    async fn wait_for_update(&self, uri: &str, after: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.updates(uri) <= after {
            assert!(Instant::now() < deadline, "no notice for {uri}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

// resources/subscribe is the legacy form, and the one today's clients send.
#[allow(deprecated)]
#[tokio::test]
async fn the_live_buffer_is_a_subscribable_rate_limited_resource() {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    let port = free_port();
    // A steady stream: 200 packets a second, without end.
    let mut sim = spawn_simulator(
        &simulator_bin(),
        port,
        &["--rate", "200", "--wait-for-client"],
    )
    .unwrap();
    let ble = Ble::start(port).await;
    let client = &ble.server.client;

    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "ble://buffer",
            "ble://connection",
            "skill://ble-sniffing/SKILL.md"
        ]
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    let templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["ble://buffer/{since}"]);
    // Resources are not tools; the tools are all still there.
    let tools: Vec<String> = ble
        .server
        .tools()
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        tools,
        [
            "get_connection_state",
            "get_logs",
            "get_metrics",
            "import_btsnoop",
            "scan_devices",
            "search_packets",
            "status"
        ]
    );

    for uri in ["ble://buffer", "ble://connection"] {
        client
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .unwrap();
    }
    ble.wait_for_update("ble://buffer", 0).await;

    // Packets keep coming, notices stay merged: over two seconds, 400
    // packets and at most one notice per 250 ms (plus the edges).
    let (n0, p0) = (ble.updates("ble://buffer"), ble.packets().await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (n1, p1) = (ble.updates("ble://buffer"), ble.packets().await);
    assert!(p1 - p0 > 100, "packets arrived: {p0} then {p1}");
    assert!(
        (1..=10).contains(&(n1 - n0)),
        "{} notices for {} packets",
        n1 - n0,
        p1 - p0
    );

    // The newest packets, in get_logs' format.
    let buf = read_json(&ble, "ble://buffer").await.unwrap();
    let logs = buf["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 50, "{buf}");
    assert_eq!(buf["count"], 50);
    assert_eq!(logs[49]["id"], buf["newest_id"]);
    assert_eq!(buf["next_since"], buf["newest_id"].to_string());
    assert_eq!(buf["total_matching"], buf["buffer_used"]);
    assert!(
        buf["note"]
            .as_str()
            .unwrap()
            .contains("older packets left out")
    );
    let first = logs[0]["id"].as_u64().unwrap();
    let same = ble
        .ok(
            "get_logs",
            json!({"since": (first - 1).to_string(), "limit": 50, "include_events": false}),
        )
        .await;
    assert_eq!(&same["logs"].as_array().unwrap()[..], &logs[..]);

    // Paging from an id, without moving get_logs readers.
    let readers = ble.ok("status", json!({})).await["readers"].clone();
    let page = read_json(&ble, &format!("ble://buffer/{first}"))
        .await
        .unwrap();
    assert_eq!(page["logs"][0]["id"].as_u64(), Some(first + 1));
    assert_eq!(ble.ok("status", json!({})).await["readers"], readers);
    let e = read_json(&ble, "ble://buffer/last").await.unwrap_err();
    assert!(e.contains("BAD_SINCE") && e.contains("packet id"), "{e}");

    let conn = read_json(&ble, "ble://connection").await.unwrap();
    assert_eq!(conn["connected"], true, "{conn}");
    assert_eq!(conn["device_name"], "CS108Reader2603A7");
    let state = ble.ok("get_connection_state", json!({})).await;
    assert_eq!(conn["connected_at"], state["connected_at"]);
    assert_eq!(conn["bridge"]["url"], state["bridge"]["url"]);
    assert_eq!(conn["bridge"]["state"], "connected");

    // Unsubscribed: packets go on arriving, notices for the buffer stop.
    client
        .unsubscribe(UnsubscribeRequestParams::new("ble://buffer"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (n2, p2) = (ble.updates("ble://buffer"), ble.packets().await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(ble.packets().await > p2 + 100, "packets still arrive");
    assert_eq!(
        ble.updates("ble://buffer"),
        n2,
        "no notice after unsubscribing"
    );

    // The bridge going away changes the connection.
    let c0 = ble.updates("ble://connection");
    sim.kill().await.unwrap();
    ble.wait_for_update("ble://connection", c0).await;
    let conn = read_json(&ble, "ble://connection").await.unwrap();
    assert_ne!(conn["bridge"]["state"], "connected", "{conn}");
    ble.server.stop().await;
}

#[allow(deprecated)] // the legacy resources/subscribe, as above
#[tokio::test]
async fn the_sniff_prompt_device_completion_and_import_notices() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
    let port = free_port();
    // An idle bridge: no device connected, so scans are allowed, and no
    // live packets: the buffer changes only by imports.
    let _sim = spawn_simulator(&simulator_bin(), port, &["--idle"]).unwrap();
    let samples = e2e::repo()
        .join("samples/ble-buffer")
        .canonicalize()
        .unwrap();
    let grant = format!("allow = [{:?}]\n", format!("{}:ro", samples.display()));
    let ble = Ble::start_with(port, &grant).await;
    let client = &ble.server.client;
    ble.wait_for("the bridge link", |s| s["bridge"]["state"] == "connected")
        .await;

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "ble_sniff_session");
    assert_eq!(
        e2e::prompt_arguments(&prompts[0]),
        [("device", Some(false)), ("goal", Some(false))]
    );

    let complete = |reference: Reference, name: &str, value: &str| {
        client.complete(CompleteRequestParams::new(
            reference,
            ArgumentInfo::new(name, value),
        ))
    };
    let device = || Reference::for_prompt("ble_sniff_session");
    let c = complete(device(), "device", "").await.unwrap();
    assert!(c.completion.values.is_empty(), "nothing seen yet");
    let scan = ble.ok("scan_devices", json!({"duration": 1000})).await;
    assert_eq!(scan["devices"].as_array().unwrap().len(), 3, "{scan}");
    let c = complete(device(), "device", "heart").await.unwrap();
    assert_eq!(c.completion.values, ["HeartRate-7"]);
    let c = complete(device(), "device", "C0:FF").await.unwrap();
    assert_eq!(c.completion.values, ["c0:ff:ee:26:03:a7"]);
    let c = complete(
        Reference::for_resource("ble://buffer/{since}"),
        "since",
        "a",
    )
    .await
    .unwrap();
    assert_eq!(c.completion.values, ["all"]);

    let mut params = GetPromptRequestParams::new("ble_sniff_session");
    params.arguments = Some(
        json!({"device": "HeartRate-7", "goal": "find the heart rate notification"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let p = client.get_prompt(params).await.unwrap();
    let message = serde_json::to_value(&p.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    let text = message["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("to find the heart rate notification"),
        "{text}"
    );
    assert!(text.contains("no BLE device is connected"), "{text}");
    for step in [
        "scan_devices",
        "the device HeartRate-7",
        "ble://buffer",
        "get_logs",
        "search_packets",
    ] {
        assert!(text.contains(step), "{step} missing: {text}");
    }
    // An import is news for subscribers of the buffer; the same capture
    // again adds nothing, and is no news.
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new("ble://buffer"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = ble.updates("ble://buffer");
    let capture = samples.join("btsnoop_hci.log");
    let r = ble.ok("import_btsnoop", json!({"path": capture})).await;
    let imported = r["tx"].as_u64().unwrap() + r["rx"].as_u64().unwrap();
    assert!(imported > 50, "{r}");
    ble.wait_for_update("ble://buffer", before).await;
    let buf = read_json(&ble, "ble://buffer").await.unwrap();
    assert_eq!(buf["packets_imported"].as_u64(), Some(imported));
    assert_eq!(buf["count"], 50);
    assert_eq!(buf["logs"][49]["id"], r["last_id"]);
    assert!(buf["logs"][49]["att"]["handle"].is_u64(), "{buf}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = ble.updates("ble://buffer");
    let again = ble.ok("import_btsnoop", json!({"path": capture})).await;
    assert!(again["already_imported"].is_u64(), "{again}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(ble.updates("ble://buffer"), after, "nothing changed");

    // Without arguments it still reads.
    let p = client
        .get_prompt(GetPromptRequestParams::new("ble_sniff_session"))
        .await
        .unwrap();
    assert!(!p.messages.is_empty());
    ble.server.stop().await;
}

/// A btsnoop capture (H4, as Android writes it) of `count` ATT
/// notifications of `size` bytes on handle 0x0015, each in one ACL packet,
/// written to `path` record by record. The first value byte is `salt`, so
/// captures differ (the same content twice would be refused).
fn write_notifications_capture(path: &std::path::Path, count: u32, size: usize, salt: u8) {
    use std::io::Write;
    const EPOCH_OFFSET_US: i64 = 0x00DC_DDB3_0F2F_8000;
    const T0: i64 = 1_753_437_600_000_000; // 2025-07-25T10:00:00Z, µs
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(b"btsnoop\0").unwrap();
    out.write_all(&1u32.to_be_bytes()).unwrap();
    out.write_all(&1002u32.to_be_bytes()).unwrap();
    let mut value = vec![0x5A; size];
    value[0] = salt;
    let att_len = 3 + size; // opcode, handle, value
    let l2cap_len = 4 + att_len;
    assert!(l2cap_len <= 0xFFFF, "one ACL packet per notification");
    for i in 0..count {
        value[1..5].copy_from_slice(&i.to_be_bytes());
        let incl = (1 + 4 + l2cap_len) as u32; // H4 type, ACL header, frame
        out.write_all(&incl.to_be_bytes()).unwrap(); // original length
        out.write_all(&incl.to_be_bytes()).unwrap(); // included length
        out.write_all(&1u32.to_be_bytes()).unwrap(); // received
        out.write_all(&0u32.to_be_bytes()).unwrap(); // drops
        let ts = T0 + i as i64 * 1000 + EPOCH_OFFSET_US;
        out.write_all(&ts.to_be_bytes()).unwrap();
        out.write_all(&[0x02]).unwrap(); // H4 ACL
        out.write_all(&(0x0040u16 | 0b10 << 12).to_le_bytes())
            .unwrap(); // first packet
        out.write_all(&(l2cap_len as u16).to_le_bytes()).unwrap();
        out.write_all(&(att_len as u16).to_le_bytes()).unwrap();
        out.write_all(&0x0004u16.to_le_bytes()).unwrap(); // ATT channel
        out.write_all(&[0x1B]).unwrap(); // notification
        out.write_all(&0x0015u16.to_le_bytes()).unwrap();
        out.write_all(&value).unwrap();
    }
    out.flush().unwrap();
}

/// Hardening item 4: the ring was bounded in packets only. Captures of
/// 65 KB notifications, each well within the 256 MiB import limit, filled
/// it past the plugin's 512 MiB memory cap: an import trapped, the host
/// rebuilt the instance, and the buffer (ids, readers, earlier imports)
/// was lost. The ring is bounded in bytes too (64 MiB), an import streams
/// the file and stages no more than the ring keeps: four 99 MiB captures
/// import one after the other into the same instance, and the answers say
/// what the buffer holds and what it let go for room.
#[tokio::test]
async fn ring_is_bounded_in_bytes_hardening_4() {
    const COUNT: u32 = 1600;
    const SIZE: usize = 65_000;
    const MIB: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let captures: Vec<_> = (0..4u8)
        .map(|k| {
            let path = dir.path().join(format!("notify-{k}.log"));
            write_notifications_capture(&path, COUNT, SIZE, k);
            path
        })
        .collect();
    let size = std::fs::metadata(&captures[0]).unwrap().len();
    assert!((64 * MIB..256 * MIB).contains(&size), "{size} bytes");
    // No bridge listens on this port: the plugin serves imports alone.
    let grant = format!("allow = [{:?}]\n", format!("{}:ro", dir.path().display()));
    let ble = Ble::start_with(free_port(), &grant).await;

    let mut last_id = 0;
    for (k, path) in captures.iter().enumerate() {
        let r = ble
            .server
            .call("import_btsnoop", json!({"path": path}))
            .await;
        assert!(
            !is_error(&r),
            "import {} of {size} bytes failed (the plugin reset?): {}",
            k + 1,
            e2e::text(&r)
        );
        let r = r.structured_content.expect("structured result");
        assert_eq!(r["rx"].as_u64(), Some(COUNT as u64), "{r}");
        // Ids are never reused: a rebuilt instance would start again at 1.
        let first = r["first_id"].as_u64().unwrap();
        assert_eq!(first, last_id + 1, "import {}: ids go on: {r}", k + 1);
        last_id = r["last_id"].as_u64().unwrap();
        let warnings: Vec<&str> = r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(
            warnings.iter().any(|w| w.starts_with(&format!(
                "{COUNT} packets imported (99.2 MiB) but the buffer keeps 64.0 MiB: only the newest"
            ))),
            "{warnings:?}"
        );
        if k > 0 {
            assert!(
                warnings[0].starts_with("this import evicted")
                    && warnings[0].contains("to stay within the buffer's byte limit of 64.0 MiB"),
                "{warnings:?}"
            );
        }
        let note = r["note"].as_str().unwrap();
        assert!(note.contains("MiB of its 64.0 MiB byte limit"), "{note}");
        // Where to read it: from the first packet it kept.
        let page = ble
            .ok("get_logs", json!({"since": r["since"], "limit": 1}))
            .await;
        assert_eq!(page["logs"][0]["size"].as_u64(), Some(SIZE as u64));
        assert_eq!(page["logs"][0]["id"], page["oldest_available_id"]);
    }

    // One instance all along: four imports counted, the ring within bytes.
    let m = ble.ok("get_metrics", json!({})).await;
    assert_eq!(m["imported"]["files"], 4, "{m}");
    // Every id went to an imported packet (the kept ones: an import
    // stages only what the ring holds).
    assert_eq!(m["imported"]["rx"].as_u64(), Some(last_id), "{m}");
    assert!(m["buffer_use_percent"].as_f64().unwrap() > 99.0, "{m}");
    let full = m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .any(|w| w.contains("full by bytes (64.0 MiB of its 64.0 MiB byte limit"));
    assert!(full, "{m}");
    let status = ble.ok("status", json!({})).await;
    assert_eq!(status["newest_id"].as_u64(), Some(last_id), "{status}");
    let used = status["log_buffer_used"].as_u64().unwrap();
    let per_packet = SIZE as u64 + 64;
    assert_eq!(used, 64 * MIB / per_packet, "{status}");
    let buf = read_json(&ble, "ble://buffer").await.unwrap();
    assert_eq!(buf["buffer_byte_limit"].as_u64(), Some(64 * MIB));
    assert_eq!(buf["buffer_bytes"].as_u64(), Some(used * per_packet));
    ble.server.stop().await;
}
