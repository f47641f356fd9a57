//! End-to-end: the plugin's feed, parser and buffer (the same code the
//! component runs) against the bridge simulator over real WebSockets.

use ble_bridge_sim::{SimConfig, device};
use ble_buffer::buffer::Direction;
use ble_buffer::feed::{Budget, FeedConfig, LinkState};
use ble_buffer::service::{LogsArgs, Service};
use ble_buffer::time::format_iso;
use std::time::{Duration, Instant};

fn sim(cfg: SimConfig) -> ble_bridge_sim::SimHandle {
    ble_bridge_sim::spawn(SimConfig { port: 0, ..cfg }).expect("start the simulator")
}

fn service(url: &str, capacity: usize) -> Service {
    let mut cfg = FeedConfig::new(url);
    cfg.backoff_min = Duration::from_millis(20);
    cfg.backoff_max = Duration::from_millis(200);
    Service::new(cfg, capacity)
}

/// Pumps (as the host's tick would) until `done` or the timeout.
fn pump_until(s: &mut Service, secs: u64, mut done: impl FnMut(&Service) -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !done(s) {
        assert!(
            Instant::now() < end,
            "timed out; buffer has {} packets, link {:?}, error {:?}",
            s.log.len(),
            s.link_state(),
            s.feed.last_error()
        );
        if s.pump(Budget::default()) == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn logs(
    s: &mut Service,
    since: &str,
    limit: u32,
    reader: Option<&str>,
) -> (Vec<u64>, bool, String, usize) {
    let page = s
        .get_logs(&LogsArgs {
            since: Some(since.into()),
            limit: Some(limit),
            reader: reader.map(Into::into),
            ..Default::default()
        })
        .unwrap();
    let page = page.page;
    (
        page.entries.iter().map(|p| p.id).collect(),
        page.truncated,
        page.next_since.to_string(),
        page.total_matching,
    )
}

fn search<'a>(
    s: &'a Service,
    pattern: &str,
    limit: Option<u32>,
    direction: Option<Direction>,
) -> ble_buffer::service::Found<'a> {
    s.search(&ble_buffer::service::SearchArgs {
        hex_pattern: Some(pattern.into()),
        limit,
        direction,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn feeds_25000_packets_and_answers_every_query_form() {
    let bridge = sim(SimConfig {
        rate: 0,
        count: 25_000,
        wait_for_client: true,
        ..Default::default()
    });
    let mut s = service(&bridge.url(), 10_000);
    pump_until(&mut s, 60, |s| s.log.newest_id() == Some(25_000));

    // Exactly the newest 10,000, continuous ids, each the simulator's packet of that number.
    assert_eq!(s.log.len(), 10_000);
    assert_eq!(s.log.oldest_id(), Some(15_001));
    for (k, p) in s.log.packets().enumerate() {
        assert_eq!(p.id, 15_001 + k as u64);
        assert_eq!(
            device::number_of(&p.data),
            Some(p.id as u32),
            "packet {} out of order or altered",
            p.id
        );
    }
    assert!(s.ble.connected);
    assert_eq!(s.ble.device.as_deref(), Some("CS108Reader2603A7"));
    let sent = s.log.totals(Direction::Tx).packets + s.log.totals(Direction::Rx).packets;
    assert_eq!(sent, 25_000, "system events are never counted as packets");
    assert!(
        s.log
            .events()
            .any(|e| e.message.contains("BLE connected to CS108Reader2603A7"))
    );

    // A packet id: the entries after it.
    let (ids, truncated, next, _) = logs(&mut s, "24990", 100, None);
    assert_eq!(ids, (24_991..=25_000).collect::<Vec<_>>());
    assert!(!truncated);
    assert_eq!(next, "25000");
    // Paging from the start: evicted packets are reported, pages chain without gaps.
    let page = s
        .get_logs(&LogsArgs {
            since: Some("0".into()),
            limit: Some(1000),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        (
            page.page.evicted_unread,
            page.page.total_matching,
            page.page.truncated
        ),
        (15_000, 10_000, true)
    );
    assert_eq!(page.page.next_since, 16_000);
    // A duration: everything arrived within the last minute.
    let (ids, truncated, _, total) = logs(&mut s, "1m", 100, None);
    assert_eq!((ids.len(), truncated, total), (100, true, 10_000));
    assert_eq!(ids[0], 15_001, "oldest first");
    // An ISO timestamp: nothing before it.
    let t = s.log.packets().nth(5_000).unwrap().ts;
    let iso = format_iso(t);
    let page = s
        .get_logs(&LogsArgs {
            since: Some(iso),
            limit: Some(1000),
            ..Default::default()
        })
        .unwrap();
    assert!(page.page.entries.iter().all(|p| p.ts >= t - 999));
    assert!(page.page.total_matching >= 5_000 && page.page.total_matching < 10_000);
    // Nothing newer than now.
    assert_eq!(
        logs(
            &mut s,
            &format_iso(ble_buffer::time::now_us() + 5_000_000),
            10,
            None
        )
        .3,
        0
    );
    // Per-reader "last" positions.
    let mut seen = Vec::new();
    loop {
        let (ids, truncated, _, _) = logs(&mut s, "last", 1000, Some("r1"));
        seen.extend(ids);
        if !truncated {
            break;
        }
    }
    assert_eq!(seen, (15_001..=25_000).collect::<Vec<_>>());
    assert!(
        logs(&mut s, "last", 10, Some("r1")).0.is_empty(),
        "nothing new: nothing returned"
    );
    assert_eq!(
        logs(&mut s, "last", 10, Some("r2")).0.first(),
        Some(&15_001),
        "readers are independent"
    );
    assert!(
        s.get_logs(&LogsArgs {
            since: Some("yesterday".into()),
            ..Default::default()
        })
        .is_err()
    );

    // Search across byte boundaries: the number 20,000 (00 00 4E 20) spans bytes 5..9.
    let out = search(&s, "82 00 00 4e 20", None, None).out;
    assert_eq!(out.total_matching, 1);
    assert_eq!(out.hits[0].packet.id, 20_000);
    // Wildcards: every scripted request with command 3, each paired with its reply.
    let found = search(&s, "A7B3 0A D9 82 ?? ?? ?? ?? A0 03", Some(1000), None);
    assert_eq!(found.pattern, "A7 B3 0A D9 82 ?? ?? ?? ?? A0 03");
    let out = found.out;
    let expected = s
        .log
        .packets()
        .filter(|p| p.dir == Direction::Tx && p.data.len() == 11 && p.data[10] == 3)
        .count();
    assert!(expected > 100);
    assert_eq!(out.total_matching, expected);
    for h in &out.hits {
        let reply = h.reply.expect("every request has a reply");
        assert_eq!(reply.dir, Direction::Rx);
        assert_eq!(
            &reply.data[11..15],
            &h.packet.data[5..9],
            "the reply answers this request"
        );
    }
    // RX matches point back at their request.
    let out = search(&s, "B3 A7 ?? D9 82", Some(5), Some(Direction::Rx)).out;
    assert_eq!(out.hits.len(), 5);
    assert!(
        out.hits
            .iter()
            .all(|h| h.request.is_some_and(|r| r.dir == Direction::Tx))
    );

    // Scanning is refused while the scripted app holds the device.
    let e = s.scan(Some(1000), &mut |_| true).unwrap_err();
    assert_eq!(e.code, "SCAN_WHILE_CONNECTED");
    assert!(e.message.contains("Disconnect"));
}

#[test]
fn bridge_killed_and_restarted_mid_stream_loses_nothing_it_had() {
    let first = sim(SimConfig {
        rate: 5_000,
        count: 0,
        wait_for_client: true,
        ..Default::default()
    });
    let port = first.addr().port();
    let url = first.url();
    let mut s = service(&url, 10_000);
    pump_until(&mut s, 30, |s| s.log.len() >= 500);
    first.stop();
    pump_until(&mut s, 10, |s| s.link_state() != LinkState::Connected);
    let had: Vec<(u64, Vec<u8>)> = s.log.packets().map(|p| (p.id, p.data.to_vec())).collect();
    assert!(
        s.log
            .events()
            .any(|e| e.message.contains("bridge connection lost"))
    );
    assert!(
        !s.ble.connected,
        "BLE state is not claimed while the bridge is gone"
    );

    // Bridge down: reconnect attempts fail and back off; nothing is lost.
    for _ in 0..5 {
        s.pump(Budget::default());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.link_state(), LinkState::Disconnected);
    assert!(s.feed.last_error().is_some());

    let second = ble_bridge_sim::spawn(SimConfig {
        port,
        rate: 0,
        count: 300,
        first_number: 1_000_000,
        wait_for_client: true,
        ..Default::default()
    })
    .expect("restart on the same port");
    let n = had.len() as u64;
    pump_until(&mut s, 30, |s| s.log.newest_id() == Some(n + 300));
    assert_eq!(s.feed.connections(), 2);
    assert!(s.ble.connected);
    let now: Vec<_> = s.log.packets().collect();
    for (p, (id, data)) in now.iter().zip(&had) {
        assert_eq!((p.id, &p.data[..]), (*id, &data[..]));
    }
    for (k, p) in now[had.len()..].iter().enumerate() {
        assert_eq!(p.id, n + 1 + k as u64, "ids continue without a gap");
        assert_eq!(device::number_of(&p.data), Some(1_000_000 + k as u32));
    }
    drop(second);
}

#[test]
fn device_client_session_and_scans() {
    let bridge = sim(SimConfig {
        auto_connect: false,
        scan_ms_cap: Some(50),
        notify_every: 2,
        ..Default::default()
    });
    // Idle device: a scan lists what the bridge found.
    let mut tap = service(&bridge.url(), 1000);
    pump_until(&mut tap, 10, |s| s.link_state() == LinkState::Connected);
    let (devices, ms) = tap.scan(Some(1000), &mut |_| true).unwrap();
    assert_eq!(ms, 1000);
    assert_eq!(devices.len(), 3);
    assert_eq!(devices[0].name, "CS108Reader2603A7");
    assert_eq!(devices[2].name, "");

    // The plugin as the bridge's BLE client (device mode).
    let url = format!(
        "{}/?device=CS108&service=9800&write=9900&notify=9901",
        bridge.url()
    );
    let mut dev = service(&url, 1000);
    pump_until(&mut dev, 10, |s| s.ble.connected);
    assert_eq!(dev.ble.device.as_deref(), Some("CS108Reader2603A7"));
    for i in 0..4u8 {
        dev.feed
            .send_text(&format!(
                r#"{{"type":"data","data":[{}]}}"#,
                device::request(i as u32, i)
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ))
            .unwrap();
    }
    // Four replies and two notifications arrive as RX data frames.
    pump_until(&mut dev, 10, |s| s.log.len() == 6);
    assert!(dev.log.packets().all(|p| p.dir == Direction::Rx));

    // The log tap saw the whole session, both directions, and the connection.
    pump_until(&mut tap, 10, |s| s.log.len() == 10);
    assert_eq!(tap.log.totals(Direction::Tx).packets, 4);
    assert!(tap.ble.connected);
    let e = tap.scan(Some(1000), &mut |_| true).unwrap_err();
    assert_eq!(e.code, "SCAN_WHILE_CONNECTED");

    // A second device client is refused by the bridge; the refusal is an event.
    let mut other = service(&url, 1000);
    pump_until(&mut other, 10, |s| {
        s.log
            .events()
            .any(|e| e.message.contains("Another connection is active"))
    });

    // Closing the session frees the device; the tap sees the disconnect.
    dev.feed.disconnect();
    drop(dev);
    pump_until(&mut tap, 10, |s| !s.ble.connected);
    assert!(
        tap.log
            .events()
            .any(|e| e.message.starts_with("BLE disconnected"))
    );
}
