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
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("benchtop.toml");
        std::fs::write(&config, e2e::ble_config(port)).unwrap();
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
