//! import_btsnoop end to end: captures written byte by byte to files, loaded
//! through the service, then read back with get_logs and search_packets.

use ble_buffer::btsnoop::build::{acl, att, h4, header, record};
use ble_buffer::btsnoop::{DATALINK_H4, DATALINK_MONITOR};
use ble_buffer::buffer::Direction;
use ble_buffer::feed::FeedConfig;
use ble_buffer::service::{LogsArgs, SearchArgs, Service};
use ble_buffer::time::format_iso;
use std::path::PathBuf;

const T0: i64 = 1_753_437_600_000_000; // 2025-07-25T10:00:00Z

fn service() -> Service {
    Service::new(FeedConfig::new("ws://127.0.0.1:9"), 10_000)
}

fn write_temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ble-buffer-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Request/notification pairs, the notification fragmented over 3 ACL packets.
fn capture(datalink: u32) -> Vec<u8> {
    let mut f = header(datalink);
    for i in 0..50u16 {
        let t = T0 + i as i64 * 100_000;
        let req = att(0x52, 0x000E, &[0xA7, 0xB3, 0x02, (i >> 8) as u8, i as u8]);
        let value: Vec<u8> = [0xB3, 0xA7, (i >> 8) as u8, i as u8]
            .into_iter()
            .chain(0..40)
            .collect();
        let ntf = att(0x1B, 0x0010, &value);
        match datalink {
            DATALINK_H4 => {
                record(&mut f, 0b10, t, &h4(0x01, &[0x03, 0x0C, 0x00])); // an HCI command, skipped
                record(&mut f, 0b00, t, &h4(0x02, &acl(0x40, &req, 27)[0]));
                for frag in acl(0x40, &ntf, 20) {
                    record(&mut f, 0b01, t + 20_000, &h4(0x02, &frag));
                }
            }
            _ => {
                record(&mut f, 3, t, &[0x0E, 0x00]); // an HCI event, skipped
                record(&mut f, 4, t, &acl(0x40, &req, 27)[0]);
                for frag in acl(0x40, &ntf, 20) {
                    record(&mut f, 5, t + 20_000, &frag);
                }
            }
        }
    }
    f
}

#[test]
fn imports_both_datalinks_with_timestamps_and_correlation() {
    for datalink in [DATALINK_H4, DATALINK_MONITOR] {
        let path = write_temp(&format!("cap-{datalink}.log"), &capture(datalink));
        let mut s = service();
        let r = s.import_btsnoop(&path, false).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(r.datalink, datalink);
        assert_eq!((r.tx, r.rx), (50, 50));
        assert_eq!(r.records, 250);
        assert_eq!(r.skipped, 150, "HCI records and non-final fragments");
        assert_eq!((r.first_id, r.last_id), (Some(1), Some(100)));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);

        // Capture timestamps are kept: an ISO since finds the second half.
        let since = format_iso(T0 + 25 * 100_000);
        let page = s
            .get_logs(&LogsArgs {
                since: Some(since),
                limit: Some(1000),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.page.total_matching, 50);
        assert_eq!(page.page.entries[0].ts, T0 + 25 * 100_000);
        drop(page);
        // Reassembled notification: 44 bytes, correlated with its write.
        let found = s
            .search(&SearchArgs {
                hex_pattern: Some("B3 A7 00 07 00 01 02".into()),
                ..Default::default()
            })
            .unwrap();
        let out = found.out;
        assert_eq!(out.hits.len(), 1);
        let hit = &out.hits[0];
        assert_eq!((hit.packet.dir, hit.packet.data.len()), (Direction::Rx, 44));
        assert_eq!(
            &hit.request.unwrap().data[..],
            &[0xA7, 0xB3, 0x02, 0x00, 0x07]
        );
        // Imports are not live traffic.
        assert_eq!(s.log.totals(Direction::Tx).packets, 0);
        assert_eq!(s.log.imported(Direction::Tx).packets, 50);
        assert_eq!(s.import_metrics().files, 1);
    }
}

#[test]
fn bad_captures_are_clear_errors() {
    let mut s = service();
    let p = write_temp("not-a-capture.txt", b"hello world, not btsnoop");
    let e = s.import_btsnoop(&p, false).err().unwrap();
    let _ = std::fs::remove_file(&p);
    assert_eq!(e.code, "BAD_CAPTURE");
    assert!(e.message.contains("btsnoop_hci.log"));
    let p = write_temp("h1.log", &header(1001));
    let e = s.import_btsnoop(&p, false).err().unwrap();
    let _ = std::fs::remove_file(&p);
    assert!(e.message.contains("1002"));
}

#[test]
fn the_shipped_sample_capture_imports() {
    let sample =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/ble-buffer/btsnoop_hci.log");
    let mut s = service();
    let r = s.import_btsnoop(&sample, false).unwrap();
    assert_eq!(r.datalink, DATALINK_H4);
    assert!(r.tx > 0 && r.rx > r.tx, "writes and notifications");
    assert!(r.warnings.is_empty());
}
