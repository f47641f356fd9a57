//! `make bench` for ble-buffer: packets per second from the bridge simulator
//! into the buffer (over a real WebSocket, through the plugin's own client,
//! parser and ring), and search_packets over a full buffer.
//!
//!     cargo run -p ble-buffer --release --example bench [-- PACKETS]

use ble_bridge_sim::SimConfig;
use ble_buffer::feed::{Budget, FeedConfig};
use ble_buffer::hex::format_hex;
use ble_buffer::service::{SearchArgs, Service};
use std::time::{Duration, Instant};

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let bridge = ble_bridge_sim::spawn(SimConfig {
        port: 0,
        rate: 0,
        count: packets,
        wait_for_client: true,
        ..Default::default()
    })
    .expect("start the simulator");
    let mut s = Service::new(FeedConfig::new(bridge.url()), 10_000);

    // Connect first, so the clock measures the stream only.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.log.is_empty() {
        assert!(Instant::now() < deadline, "no packets from the simulator");
        s.pump(Budget::default());
    }
    let start = Instant::now();
    let first = s.log.newest_id().unwrap_or(0);
    let mut pumps = 0u64;
    while s.log.newest_id() != Some(packets) {
        s.pump(Budget::default());
        pumps += 1;
        assert!(start.elapsed() < Duration::from_secs(120), "stalled");
    }
    let secs = start.elapsed().as_secs_f64();
    let n = packets - first;
    println!(
        "ingest: {n} packets in {secs:.3} s = {:.0} packets/s ({pumps} pumps of <= 25 ms; target >= 50,000/s)",
        n as f64 / secs
    );
    assert_eq!(s.log.len(), 10_000);

    let patterns = [
        ("literal, one packet", "82 00 02 F9 B8"),
        ("wildcards", "A7 B3 0A D9 82 ?? ?? ?? ?? A0 03"),
        ("common prefix", "B3 A7"),
    ];
    for (what, pat) in patterns {
        let runs = 200;
        let t = Instant::now();
        let mut total = 0;
        for _ in 0..runs {
            let out = s
                .search(&SearchArgs {
                    hex_pattern: Some(pat.into()),
                    limit: Some(100),
                    ..Default::default()
                })
                .expect("valid pattern")
                .out;
            // Include rendering the answer, as the tool does.
            for h in &out.hits {
                total += format_hex(&h.packet.data).len();
                if let Some(r) = h.reply.or(h.request) {
                    total += format_hex(&r.data).len();
                }
            }
            total += out.total_matching;
        }
        let per = t.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        println!(
            "search_packets over 10,000 packets ({what}: {pat}): {per:.3} ms per call (target < 5 ms) [{total}]"
        );
    }
}
