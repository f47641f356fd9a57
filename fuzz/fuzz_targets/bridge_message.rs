//! What the web-ble-bridge sends (`ble_buffer::bridge::parse_message`: JSON
//! log lines, data, connect/disconnect, errors, scan results), and the text
//! parsers around it: `[TX] A7 B3 …` packet lines, ISO timestamps
//! (`time::parse_iso`), and the `search_packets`/`get_logs` arguments
//! (`hex::Pattern`, `since::parse_since`).
//!
//! Properties: a packet line's bytes, printed back with `format_hex`, parse
//! to the same bytes; a parsed timestamp, printed with `format_iso`, parses
//! back to itself at millisecond precision.
#![no_main]

use ble_buffer::bridge::{parse_message, parse_packet_line};
use ble_buffer::buffer::Direction;
use ble_buffer::hex::{Pattern, format_hex, parse_hex_bytes};
use ble_buffer::since::parse_since;
use ble_buffer::time::{format_iso, parse_iso};
use libfuzzer_sys::fuzz_target;

/// 2025-07-25T10:00:00Z.
const NOW: i64 = 1_753_437_600_000_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_message(text);

    if let Some((dir, bytes)) = parse_packet_line(text) {
        let tag = match dir {
            Direction::Tx => "[TX]",
            Direction::Rx => "[RX]",
        };
        let line = format!("{tag} {}", format_hex(&bytes));
        assert_eq!(parse_packet_line(&line), Some((dir, bytes)), "{text:?}");
    }

    if let Some(us) = parse_iso(text) {
        let printed = format_iso(us);
        // Four-digit years only: others have no ISO form to read back.
        if printed.len() == 24 && printed.as_bytes()[0].is_ascii_digit() {
            let ms = us - us.rem_euclid(1000);
            assert_eq!(
                parse_iso(&printed),
                Some(ms),
                "{text:?} printed as {printed}"
            );
        }
    }

    if let Ok(p) = Pattern::parse(text) {
        assert!(!p.is_empty());
        let _ = p.is_match(data);
    }
    let _ = parse_hex_bytes(text);
    let _ = parse_since(text, NOW);
});
