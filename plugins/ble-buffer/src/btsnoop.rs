//! btsnoop capture import: ATT writes and notifications from HCI ACL data.
//!
//! Supports datalink 1002 (H4/UART: Android's `btsnoop_hci.log`) and 2001
//! (Linux monitor: `btmon -w`). Header integers are big-endian; HCI, L2CAP
//! and ATT fields are little-endian. L2CAP frames split over several ACL
//! packets are reassembled per connection handle and direction.

use crate::buffer::Direction;
use crate::time::Micros;
use std::collections::HashMap;
use std::fmt;

pub const MAGIC: &[u8; 8] = b"btsnoop\0";
pub const DATALINK_H4: u32 = 1002;
pub const DATALINK_MONITOR: u32 = 2001;
/// Microseconds from 0000-01-01 to 1970-01-01, as btsnoop counts.
pub const EPOCH_OFFSET_US: i64 = 0x00DC_DDB3_0F2F_8000;
const ATT_CID: u16 = 0x0004;
const MAX_WARNINGS: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BtsnoopError {
    NotBtsnoop,
    TooShort,
    Version(u32),
    Datalink(u32),
}

impl fmt::Display for BtsnoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotBtsnoop => write!(
                f,
                "not a btsnoop file (no \"btsnoop\\0\" magic); give an Android btsnoop_hci.log or a btmon -w capture (iOS .pklg and pcap files are not supported)"
            ),
            Self::TooShort => write!(f, "the file is shorter than the 16-byte btsnoop header"),
            Self::Version(v) => write!(f, "btsnoop version {v} is not supported (only version 1)"),
            Self::Datalink(d) => write!(
                f,
                "btsnoop datalink {d} is not supported: only 1002 (H4, Android) and 2001 (Linux monitor, btmon)"
            ),
        }
    }
}

/// One ATT value carried by a write or a notification/indication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttValue {
    pub ts: Micros,
    pub dir: Direction,
    pub handle: u16,
    pub value: Vec<u8>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Capture {
    pub datalink: u32,
    pub records: u32,
    pub values: Vec<AttValue>,
    pub skipped: u32,
    pub warnings: Vec<String>,
}

impl Capture {
    fn warn(&mut self, w: String) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        }
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

/// An L2CAP frame being reassembled.
struct Pending {
    buf: Vec<u8>,
    expected: usize,
    ts: Micros,
    record: u32,
}

pub fn parse(bytes: &[u8]) -> Result<Capture, BtsnoopError> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(BtsnoopError::NotBtsnoop);
    }
    if bytes.len() < 16 {
        return Err(BtsnoopError::TooShort);
    }
    let version = be32(&bytes[8..]);
    if version != 1 {
        return Err(BtsnoopError::Version(version));
    }
    let datalink = be32(&bytes[12..]);
    if datalink != DATALINK_H4 && datalink != DATALINK_MONITOR {
        return Err(BtsnoopError::Datalink(datalink));
    }
    let mut cap = Capture {
        datalink,
        ..Default::default()
    };
    // Keyed by (connection handle, sent-by-host).
    let mut pending: HashMap<(u16, bool), Pending> = HashMap::new();
    let mut pos = 16;
    while pos < bytes.len() {
        if bytes.len() - pos < 24 {
            cap.warn(format!(
                "truncated record header at byte {pos}; stopped there"
            ));
            break;
        }
        let h = &bytes[pos..pos + 24];
        let incl = be32(&h[4..]) as usize;
        let flags = be32(&h[8..]);
        let ts_raw = i64::from_be_bytes(h[16..24].try_into().unwrap_or([0; 8]));
        let ts = ts_raw.wrapping_sub(EPOCH_OFFSET_US);
        pos += 24;
        if bytes.len() - pos < incl {
            cap.warn(format!(
                "record {} claims {incl} bytes but only {} remain; stopped there",
                cap.records + 1,
                bytes.len() - pos
            ));
            break;
        }
        let data = &bytes[pos..pos + incl];
        pos += incl;
        cap.records += 1;
        let acl = match datalink {
            DATALINK_H4 => match data.split_first() {
                Some((0x02, rest)) => Some((rest, flags & 1 == 0)),
                _ => None,
            },
            _ => match flags & 0xFFFF {
                4 => Some((data, true)),
                5 => Some((data, false)),
                _ => None,
            },
        };
        let Some((acl, sent)) = acl else {
            cap.skipped += 1;
            continue;
        };
        if !acl_record(acl, sent, ts, cap.records, &mut pending, &mut cap) {
            cap.skipped += 1;
        }
    }
    for ((handle, _), p) in pending {
        cap.warn(format!(
            "an L2CAP frame on handle 0x{handle:03X} starting in record {} is missing {} bytes at the end of the capture",
            p.record,
            p.expected.saturating_sub(p.buf.len())
        ));
    }
    Ok(cap)
}

/// Handles one ACL packet; true when it completed an imported ATT value.
fn acl_record(
    acl: &[u8],
    sent: bool,
    ts: Micros,
    record: u32,
    pending: &mut HashMap<(u16, bool), Pending>,
    cap: &mut Capture,
) -> bool {
    if acl.len() < 4 {
        cap.warn(format!("record {record}: ACL header too short"));
        return false;
    }
    let hf = le16(acl);
    let handle = hf & 0x0FFF;
    let pb = (hf >> 12) & 3;
    let len = le16(&acl[2..]) as usize;
    let payload = &acl[4..];
    if payload.len() < len {
        cap.warn(format!(
            "record {record}: ACL payload shorter than its length field"
        ));
        return false;
    }
    let payload = &payload[..len];
    let key = (handle, sent);
    let frame = if pb == 0b01 {
        let Some(p) = pending.get_mut(&key) else {
            cap.warn(format!(
                "record {record}: continuation fragment without a start on handle 0x{handle:03X}"
            ));
            return false;
        };
        p.buf.extend_from_slice(payload);
        if p.buf.len() < p.expected {
            return false;
        }
        let p = pending.remove(&key).expect("present");
        (p.buf, p.ts)
    } else {
        if let Some(p) = pending.remove(&key) {
            cap.warn(format!(
                "record {}: L2CAP frame left unfinished by a new start",
                p.record
            ));
        }
        if payload.len() < 4 {
            cap.warn(format!("record {record}: L2CAP header too short"));
            return false;
        }
        let expected = le16(payload) as usize + 4;
        if payload.len() < expected {
            pending.insert(
                key,
                Pending {
                    buf: payload.to_vec(),
                    expected,
                    ts,
                    record,
                },
            );
            return false;
        }
        (payload.to_vec(), ts)
    };
    let (l2, ts) = frame;
    let l2len = le16(&l2) as usize;
    if le16(&l2[2..]) != ATT_CID || l2.len() < 4 + l2len || l2len < 3 {
        return false;
    }
    let att = &l2[4..4 + l2len];
    let dir = match att[0] {
        0x12 | 0x52 => Direction::Tx,
        0x1B | 0x1D => Direction::Rx,
        _ => return false,
    };
    cap.values.push(AttValue {
        ts,
        dir,
        handle: le16(&att[1..]),
        value: att[3..].to_vec(),
    });
    true
}

pub mod build {
    //! Writes btsnoop captures byte by byte from the format description:
    //! synthetic captures for tests and samples.
    use super::*;

    pub fn header(datalink: u32) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&1u32.to_be_bytes());
        v.extend_from_slice(&datalink.to_be_bytes());
        v
    }

    pub fn record(out: &mut Vec<u8>, flags: u32, unix_us: i64, data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&(unix_us + EPOCH_OFFSET_US).to_be_bytes());
        out.extend_from_slice(data);
    }

    /// An L2CAP frame on the ATT channel: opcode, attribute handle, value.
    pub fn att(opcode: u8, attr: u16, value: &[u8]) -> Vec<u8> {
        let mut pdu = vec![opcode];
        pdu.extend_from_slice(&attr.to_le_bytes());
        pdu.extend_from_slice(value);
        let mut l2 = (pdu.len() as u16).to_le_bytes().to_vec();
        l2.extend_from_slice(&ATT_CID.to_le_bytes());
        l2.extend_from_slice(&pdu);
        l2
    }

    /// ACL packet(s) carrying `l2cap`, split into fragments of `mtu` bytes.
    pub fn acl(handle: u16, l2cap: &[u8], mtu: usize) -> Vec<Vec<u8>> {
        l2cap
            .chunks(mtu)
            .enumerate()
            .map(|(i, frag)| {
                let pb: u16 = if i == 0 { 0b10 } else { 0b01 };
                let mut v = (handle | pb << 12).to_le_bytes().to_vec();
                v.extend_from_slice(&(frag.len() as u16).to_le_bytes());
                v.extend_from_slice(frag);
                v
            })
            .collect()
    }

    pub fn h4(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![kind];
        v.extend_from_slice(body);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    const T0: i64 = 1_753_437_600_000_000;

    fn android_capture() -> Vec<u8> {
        let mut f = header(DATALINK_H4);
        // HCI command (flags: sent, command) and event: skipped.
        record(&mut f, 0b10, T0, &h4(0x01, &[0x03, 0x0C, 0x00]));
        record(
            &mut f,
            0b11,
            T0 + 1,
            &h4(0x04, &[0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        );
        // Write command, sent.
        for frag in acl(0x0040, &att(0x52, 0x000E, &[0xA7, 0xB3, 0x02, 0xD9]), 64) {
            record(&mut f, 0b00, T0 + 1000, &h4(0x02, &frag));
        }
        // A 40-byte notification split over three ACL fragments, received.
        let value: Vec<u8> = (0..40).collect();
        for (i, frag) in acl(0x0040, &att(0x1B, 0x0010, &value), 17)
            .iter()
            .enumerate()
        {
            record(&mut f, 0b01, T0 + 2000 + i as i64, &h4(0x02, frag));
        }
        // Indication, received; a Read Request (0x0A) is not imported.
        for frag in acl(0x0040, &att(0x1D, 0x0012, &[0x01]), 64) {
            record(&mut f, 0b01, T0 + 3000, &h4(0x02, &frag));
        }
        for frag in acl(0x0040, &att(0x0A, 0x0012, &[]), 64) {
            record(&mut f, 0b00, T0 + 4000, &h4(0x02, &frag));
        }
        f
    }

    #[test]
    fn android_h4_with_fragmented_acl() {
        let cap = parse(&android_capture()).unwrap();
        assert_eq!(cap.datalink, 1002);
        assert_eq!(cap.records, 8);
        assert_eq!(cap.values.len(), 3);
        assert_eq!(
            cap.values[0],
            AttValue {
                ts: T0 + 1000,
                dir: Direction::Tx,
                handle: 0x0E,
                value: vec![0xA7, 0xB3, 0x02, 0xD9]
            }
        );
        assert_eq!(cap.values[1].dir, Direction::Rx);
        assert_eq!(cap.values[1].value, (0..40).collect::<Vec<u8>>());
        assert_eq!(
            cap.values[1].ts,
            T0 + 2000,
            "timestamp of the first fragment"
        );
        assert_eq!(cap.values[2].handle, 0x12);
        // 2 HCI + 2 non-final fragments + read request.
        assert_eq!(cap.skipped, 5);
        assert!(cap.warnings.is_empty(), "{:?}", cap.warnings);
    }

    #[test]
    fn linux_monitor_opcodes() {
        let mut f = header(DATALINK_MONITOR);
        record(&mut f, 12, T0, b"system note\0"); // SYSTEM_NOTE
        record(&mut f, 3, T0, &[0x0E, 0x00]); // EVENT
        let write = acl(0x0001, &att(0x12, 0x0003, &[0xDE, 0xAD]), 64);
        record(&mut f, (1 << 16) | 4, T0 + 10, &write[0]); // ACL_TX on hci1
        let frags = acl(0x0001, &att(0x1B, 0x0005, &[9; 30]), 10);
        for frag in &frags {
            record(&mut f, (1 << 16) | 5, T0 + 20, frag); // ACL_RX
        }
        let cap = parse(&f).unwrap();
        assert_eq!(cap.datalink, 2001);
        assert_eq!(cap.values.len(), 2);
        assert_eq!(
            (cap.values[0].dir, cap.values[0].value.as_slice()),
            (Direction::Tx, &[0xDE, 0xAD][..])
        );
        assert_eq!(
            (cap.values[1].dir, cap.values[1].value.len()),
            (Direction::Rx, 30)
        );
        assert_eq!(cap.values[1].ts, T0 + 20);
    }

    #[test]
    fn fragments_interleaved_across_handles_and_directions() {
        let mut f = header(DATALINK_H4);
        let a = acl(0x0040, &att(0x1B, 1, &[0xAA; 20]), 12);
        let b = acl(0x0041, &att(0x1B, 1, &[0xBB; 20]), 12);
        let c = acl(0x0040, &att(0x52, 2, &[0xCC; 20]), 12);
        for i in 0..a.len() {
            record(&mut f, 1, T0, &h4(2, &a[i]));
            record(&mut f, 1, T0, &h4(2, &b[i]));
            record(&mut f, 0, T0, &h4(2, &c[i]));
        }
        let cap = parse(&f).unwrap();
        let firsts: Vec<u8> = cap.values.iter().map(|v| v.value[0]).collect();
        assert_eq!(firsts, [0xAA, 0xBB, 0xCC]);
        assert!(cap.values.iter().all(|v| v.value.len() == 20));
    }

    #[test]
    fn truncation_and_bad_files_are_reported() {
        let mut f = android_capture();
        f.truncate(f.len() - 3);
        let cap = parse(&f).unwrap();
        assert_eq!(cap.values.len(), 3, "records before the cut are kept");
        assert_eq!(cap.records, 7);
        assert!(cap.warnings[0].contains("claims"));

        let mut f = header(DATALINK_H4);
        let frags = acl(0x0040, &att(0x1B, 1, &[1; 40]), 16);
        record(&mut f, 1, T0, &h4(2, &frags[0]));
        let cap = parse(&f).unwrap();
        assert!(cap.values.is_empty());
        assert!(cap.warnings[0].contains("missing"), "{:?}", cap.warnings);

        assert_eq!(parse(b"hello"), Err(BtsnoopError::NotBtsnoop));
        assert_eq!(parse(&header(1001)), Err(BtsnoopError::Datalink(1001)));
        let mut v2 = header(1002);
        v2[11] = 2;
        assert_eq!(parse(&v2), Err(BtsnoopError::Version(2)));
        assert_eq!(parse(&header(1002)[..12]), Err(BtsnoopError::TooShort));
    }
}
