//! Parsing what a web-ble-bridge sends over its WebSocket.
//!
//! Two feeds exist. The log stream (`?command=log-stream`, bridges 0.3.x to
//! early 0.4) broadcasts every console line as
//! `{"type":"log","timestamp","level","message"}`; packets are the lines with
//! `[TX] A7 B3 …` / `[RX] …` anywhere in `message`, and the BLE link state is
//! read from the bridge's own connect/disconnect lines. A device client
//! (`?device=…&service=…&write=…&notify=…`) receives `connected`, `data`
//! (notifications, so RX), `disconnected` and `error` messages instead.

use crate::buffer::{Direction, Level};
use crate::time::{Micros, parse_iso};
use serde::Deserialize;
use std::borrow::Cow;

/// A BLE device the bridge found in a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedDevice {
    /// Device id: its address (or the platform's stand-in for it).
    pub id: String,
    /// Advertised name; empty when the device advertises none.
    pub name: String,
    /// Signal strength in dBm (negative; closer to 0 is stronger).
    pub rssi: i32,
}

/// One message from the bridge, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeMsg {
    /// A `[TX]`/`[RX]` log line or a device client's `data`: one packet.
    Packet {
        /// Who sent it.
        dir: Direction,
        /// The packet's bytes.
        data: Vec<u8>,
        /// The bridge's timestamp, when it gave a readable one (else arrival
        /// time is used).
        ts: Option<Micros>,
    },
    /// The bridge reports a BLE device connected (name when known).
    BleConnected {
        /// The device name, when the bridge says it.
        device: Option<String>,
        /// The bridge's timestamp, if readable.
        ts: Option<Micros>,
    },
    /// The bridge reports the BLE device disconnected.
    BleDisconnected {
        /// The bridge's timestamp, if readable.
        ts: Option<Micros>,
        /// Why, in the bridge's words (or a stock sentence when it gives none).
        reason: String,
    },
    /// The bridge names the device it is connecting to.
    Connecting {
        /// The device's name as the bridge logs it.
        device: String,
    },
    /// A warning or error line, or an `error` message: a system event.
    Problem {
        /// Warn or error.
        level: Level,
        /// The bridge's text.
        message: String,
        /// The bridge's timestamp, if readable.
        ts: Option<Micros>,
    },
    /// The answer of a `?command=scan` connection: the devices found.
    ScanResult(Vec<ScannedDevice>),
    /// Anything else (informational log lines, keepalives).
    Ignored,
}

#[derive(Deserialize)]
struct RawDevice {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    rssi: i32,
}

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default, borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    level: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    data: Option<Vec<u8>>,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    devices: Option<Vec<RawDevice>>,
}

/// A bridge message that is not JSON of the expected shape (serde's message
/// says where).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

/// Classifies one text frame from the bridge.
pub fn parse_message(text: &str) -> Result<BridgeMsg, ParseError> {
    let raw: Raw = serde_json::from_str(text).map_err(|e| ParseError(e.to_string()))?;
    let ts = raw.timestamp.as_deref().and_then(parse_iso);
    Ok(match raw.ty.as_ref() {
        "log" => {
            let message = raw.message.as_deref().unwrap_or("");
            parse_log_line(message, raw.level.as_deref().unwrap_or("info"), ts)
        }
        "data" => match raw.data {
            Some(data) => BridgeMsg::Packet {
                dir: Direction::Rx,
                data,
                ts,
            },
            None => return Err(ParseError("a data message without data".into())),
        },
        "connected" => BridgeMsg::BleConnected {
            device: raw.device,
            ts,
        },
        "disconnected" => BridgeMsg::BleDisconnected {
            ts,
            reason: "the bridge reported the device disconnected".into(),
        },
        "error" => BridgeMsg::Problem {
            level: Level::Error,
            message: raw
                .error
                .or(raw.message.map(Cow::into_owned))
                .unwrap_or_else(|| "unspecified bridge error".into()),
            ts,
        },
        "scan_result" | "devices" => BridgeMsg::ScanResult(
            raw.devices
                .unwrap_or_default()
                .into_iter()
                .map(|d| ScannedDevice {
                    id: d.id,
                    name: d.name.unwrap_or_default(),
                    rssi: d.rssi,
                })
                .collect(),
        ),
        _ => BridgeMsg::Ignored,
    })
}

/// Finds `[TX] A7 B3 …` / `[RX] …` anywhere in a log line; the hex must run
/// to the end of the line.
pub fn parse_packet_line(message: &str) -> Option<(Direction, Vec<u8>)> {
    for (tag, dir) in [("[TX]", Direction::Tx), ("[RX]", Direction::Rx)] {
        if let Some(pos) = message.find(tag) {
            let rest = &message[pos + tag.len()..];
            if !rest.starts_with(char::is_whitespace) {
                continue;
            }
            if let Some(bytes) = parse_spaced_hex(rest.trim())
                && !bytes.is_empty()
            {
                return Some((dir, bytes));
            }
        }
    }
    None
}

/// `A7 B3 02` (pairs separated by single optional whitespace).
fn parse_spaced_hex(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 3 + 1);
    let b = s.as_bytes();
    let mut i = 0;
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        let hi = nib(b[i])?;
        let lo = nib(*b.get(i + 1)?)?;
        out.push(hi << 4 | lo);
        i += 2;
        if i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
    }
    Some(out)
}

fn parse_log_line(message: &str, level: &str, ts: Option<Micros>) -> BridgeMsg {
    if let Some((dir, data)) = parse_packet_line(message) {
        return BridgeMsg::Packet { dir, data, ts };
    }
    // The 0.3.0 bridge's own wording (bridge-server.ts, noble-transport.ts).
    if message.contains("BLE connected") {
        return BridgeMsg::BleConnected { device: None, ts };
    }
    if message.contains("BLE disconnected") || message.contains("disconnecting BLE") {
        return BridgeMsg::BleDisconnected {
            ts,
            reason: message.to_string(),
        };
    }
    if let Some(pos) = message.find("Connecting to ") {
        let name = message[pos + 14..].trim_end_matches('.').trim();
        if !name.is_empty() {
            return BridgeMsg::Connecting {
                device: name.to_string(),
            };
        }
    }
    match level {
        "warn" | "warning" => BridgeMsg::Problem {
            level: Level::Warn,
            message: message.to_string(),
            ts,
        },
        "error" => BridgeMsg::Problem {
            level: Level::Error,
            message: message.to_string(),
            ts,
        },
        _ => BridgeMsg::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_stream_packet_lines() {
        let m = parse_message(
            r#"{"type":"log","timestamp":"2025-07-25T10:00:00.000Z","level":"info","message":"[TX] A7 B3 02 D9 82 37 00 00 A0 00"}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            BridgeMsg::Packet {
                dir: Direction::Tx,
                data: vec![0xA7, 0xB3, 0x02, 0xD9, 0x82, 0x37, 0, 0, 0xA0, 0],
                ts: Some(1_753_437_600_000_000),
            }
        );
        // 0.4-dev prefixes the logger name; lowercase hex is accepted.
        let m = parse_message(
            r#"{"type":"log","level":"info","message":"[BridgeServer] [RX] b3 a7 01"}"#,
        )
        .unwrap();
        assert!(
            matches!(m, BridgeMsg::Packet { dir: Direction::Rx, ref data, ts: None } if data == &[0xB3, 0xA7, 1])
        );
    }

    #[test]
    fn non_packet_lines() {
        for msg in [
            "[BridgeServer] Forwarding 12 bytes to WebSocket",
            "[TX] not hex",
            "[TX]A7",
            "Connected to log stream",
        ] {
            assert_eq!(
                parse_log_line(msg, "info", None),
                BridgeMsg::Ignored,
                "{msg}"
            );
        }
        assert_eq!(
            parse_log_line(
                "[BridgeServer] BLE connected, sending connected message",
                "info",
                None
            ),
            BridgeMsg::BleConnected {
                device: None,
                ts: None
            }
        );
        assert!(matches!(
            parse_log_line(
                "[BridgeServer] WebSocket closed, disconnecting BLE",
                "info",
                None
            ),
            BridgeMsg::BleDisconnected { .. }
        ));
        assert_eq!(
            parse_log_line(
                "[NobleTransport] Connecting to CS108Reader2603A7...",
                "info",
                None
            ),
            BridgeMsg::Connecting {
                device: "CS108Reader2603A7".into()
            }
        );
        assert!(matches!(
            parse_log_line("[BridgeServer] Error: No device found", "error", None),
            BridgeMsg::Problem {
                level: Level::Error,
                ..
            }
        ));
    }

    #[test]
    fn device_client_messages() {
        assert_eq!(
            parse_message(r#"{"type":"connected","device":"CS108Reader2603A7"}"#).unwrap(),
            BridgeMsg::BleConnected {
                device: Some("CS108Reader2603A7".into()),
                ts: None
            }
        );
        assert_eq!(
            parse_message(r#"{"type":"data","data":[167,179,2]}"#).unwrap(),
            BridgeMsg::Packet {
                dir: Direction::Rx,
                data: vec![167, 179, 2],
                ts: None
            }
        );
        assert!(matches!(
            parse_message(r#"{"type":"disconnected"}"#).unwrap(),
            BridgeMsg::BleDisconnected { .. }
        ));
        assert_eq!(
            parse_message(r#"{"type":"error","error":"No device found"}"#).unwrap(),
            BridgeMsg::Problem {
                level: Level::Error,
                message: "No device found".into(),
                ts: None
            }
        );
        let m = parse_message(
            r#"{"type":"scan_result","devices":[{"id":"aa:bb","name":"X","rssi":-40},{"id":"cc"}]}"#,
        )
        .unwrap();
        assert!(matches!(m, BridgeMsg::ScanResult(ref d) if d.len() == 2 && d[1].name.is_empty()));
        assert_eq!(
            parse_message(r#"{"type":"keepalive_ack"}"#).unwrap(),
            BridgeMsg::Ignored
        );
    }

    #[test]
    fn malformed_messages_are_errors() {
        for s in [
            "not json",
            r#"{"no":"type"}"#,
            r#"{"type":"data","data":[300]}"#,
            r#"{"type":"data"}"#,
        ] {
            assert!(parse_message(s).is_err(), "{s}");
        }
        // Escapes in borrowed fields still parse.
        assert!(parse_message(r#"{"type":"log","message":"a \"quoted\" [TX] 01"}"#).is_ok());
    }
}
