//! btsnoop capture import: ATT writes and notifications from HCI ACL data.
//!
//! Supports datalink 1002 (H4/UART: Android's `btsnoop_hci.log`) and 2001
//! (Linux monitor: `btmon -w`). Header integers are big-endian; HCI, L2CAP
//! and ATT fields are little-endian. L2CAP frames split over several ACL
//! packets are reassembled per connection handle and direction.

use crate::buffer::{Direction, packet_cost};
use crate::time::Micros;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::io::{self, Read};

/// The 8 bytes every btsnoop file starts with.
pub(crate) const MAGIC: &[u8; 8] = b"btsnoop\0";
/// Datalink of H4/UART captures: Android's `btsnoop_hci.log`.
pub const DATALINK_H4: u32 = 1002;
/// Datalink of Linux monitor captures: `btmon -w`.
pub const DATALINK_MONITOR: u32 = 2001;
/// Microseconds from 0000-01-01 to 1970-01-01, as btsnoop counts.
pub const EPOCH_OFFSET_US: i64 = 0x00DC_DDB3_0F2F_8000;
const ATT_CID: u16 = 0x0004;
/// Warnings one parse keeps; further problems are only counted.
pub(crate) const MAX_WARNINGS: usize = 10;
/// Bytes of a record the parser looks at: an H4 type byte, the 4-byte ACL
/// header and the most an ACL length field can announce. The rest of a
/// longer record is read past (it is nothing the parser uses), so one
/// record never takes more memory than this, whatever it claims.
const RECORD_PREFIX: usize = 1 + 4 + 0xFFFF;
/// Bytes of L2CAP frames being reassembled at once (each counted at the
/// length its first fragment announces, which is reserved up front): real
/// captures have a handful of frames open, and without a bound a capture
/// of first fragments alone could stage 4,096 frames of 64 KiB.
pub const REASSEMBLY_BYTES: usize = 16 << 20;

/// Why a file is not a btsnoop capture this parser reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BtsnoopError {
    /// The file does not start with "btsnoop\0" (iOS .pklg and pcap files do
    /// not).
    NotBtsnoop,
    /// Shorter than the 16-byte header.
    TooShort,
    /// A header version other than 1.
    Version(u32),
    /// A datalink other than 1002 (H4) and 2001 (Linux monitor).
    Datalink(u32),
    /// The input could not be read (never for a capture in memory).
    Read(String),
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
            Self::Read(e) => write!(f, "the capture could not be read: {e}"),
        }
    }
}

/// One ATT value carried by a write or a notification/indication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttValue {
    /// The record's timestamp, in µs since 1970 UTC.
    pub ts: Micros,
    /// From the capture's direction flag: Tx = sent by the capturing host
    /// (whatever the opcode: a phone acting as GATT server sends
    /// notifications), Rx = received by it.
    pub dir: Direction,
    /// HCI connection handle (low 12 bits of the ACL header).
    pub conn: u16,
    /// ATT opcode: one of WRITE_REQUEST, WRITE_COMMAND, SIGNED_WRITE_COMMAND,
    /// NOTIFICATION, INDICATION.
    pub opcode: u8,
    /// ATT attribute handle.
    pub handle: u16,
    /// The attribute value (a signed write's 12-byte signature removed).
    pub value: Vec<u8>,
}

/// ATT opcodes imported as packets.
pub const WRITE_REQUEST: u8 = 0x12;
/// ATT Write Command (no response).
pub const WRITE_COMMAND: u8 = 0x52;
/// ATT Signed Write Command (value followed by a 12-byte signature).
pub const SIGNED_WRITE_COMMAND: u8 = 0xD2;
/// ATT Handle Value Notification.
pub const NOTIFICATION: u8 = 0x1B;
/// ATT Handle Value Indication (the peer confirms it).
pub const INDICATION: u8 = 0x1D;
/// Signed writes end with a 12-byte authentication signature.
const SIGNATURE_LEN: usize = 12;

/// True for the opcodes the importer keeps: writes, notifications and
/// indications (the traffic a bridge carries); reads and discovery are not.
pub fn is_imported_opcode(op: u8) -> bool {
    matches!(
        op,
        WRITE_REQUEST | WRITE_COMMAND | SIGNED_WRITE_COMMAND | NOTIFICATION | INDICATION
    )
}

/// True for the write opcodes (the others imported are notifications).
pub fn is_write(op: u8) -> bool {
    matches!(op, WRITE_REQUEST | WRITE_COMMAND | SIGNED_WRITE_COMMAND)
}

/// A short name for an ATT opcode, e.g. `write-command`.
pub fn opcode_name(op: u8) -> &'static str {
    match op {
        0x01 => "error-response",
        0x02 => "exchange-mtu-request",
        0x03 => "exchange-mtu-response",
        0x04 => "find-information-request",
        0x05 => "find-information-response",
        0x06 => "find-by-type-value-request",
        0x07 => "find-by-type-value-response",
        0x08 => "read-by-type-request",
        0x09 => "read-by-type-response",
        0x0A => "read-request",
        0x0B => "read-response",
        0x0C => "read-blob-request",
        0x0D => "read-blob-response",
        0x0E => "read-multiple-request",
        0x0F => "read-multiple-response",
        0x10 => "read-by-group-type-request",
        0x11 => "read-by-group-type-response",
        WRITE_REQUEST => "write-request",
        0x13 => "write-response",
        0x16 => "prepare-write-request",
        0x17 => "prepare-write-response",
        0x18 => "execute-write-request",
        0x19 => "execute-write-response",
        NOTIFICATION => "notification",
        INDICATION => "indication",
        0x1E => "confirmation",
        0x23 => "multiple-notification",
        WRITE_COMMAND => "write-command",
        SIGNED_WRITE_COMMAND => "signed-write-command",
        _ => "other",
    }
}

/// Parses an opcode given by name (as [`opcode_name`] spells it, or the
/// short forms `write`, `notify`, `indicate`) or number (`0x52`, `82`).
pub fn parse_opcode(s: &str) -> Option<u8> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        return u8::from_str_radix(h, 16).ok();
    }
    if let Ok(n) = t.parse::<u8>() {
        return Some(n);
    }
    let t = t.replace('_', "-");
    match t.as_str() {
        "write" | "write-req" => return Some(WRITE_REQUEST),
        "write-cmd" => return Some(WRITE_COMMAND),
        "notify" | "ntf" => return Some(NOTIFICATION),
        "indicate" | "ind" => return Some(INDICATION),
        _ => {}
    }
    (0..=255u8).find(|&op| opcode_name(op) == t && t != "other")
}

/// Traffic of one kind in a capture, for saying what a capture holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Contents {
    /// HCI command packets.
    pub commands: u32,
    /// HCI event packets.
    pub events: u32,
    /// ACL data packets.
    pub acl: u32,
    /// SCO (synchronous voice) packets.
    pub sco: u32,
    /// ISO (LE Audio) packets.
    pub iso: u32,
    /// Monitor records that are not HCI traffic (index, notes, logging).
    pub other_records: u32,
    /// Records the capture cut short (included length < original length),
    /// and how many of those were ACL data whose values were lost.
    pub cut: u32,
    /// Cut records that were ACL data: values in them were lost.
    pub cut_acl: u32,
    /// Connections opened in the capture (Connection Complete events).
    pub classic_links: u32,
    /// LE connections opened in the capture (LE Connection Complete events).
    pub le_links: u32,
    /// LE advertising reports (what a scan heard).
    pub le_advertising_reports: u32,
    /// ATT PDUs that are not writes or notifications (reads, discovery,
    /// responses), by opcode.
    pub att_other: BTreeMap<u8, u32>,
    /// Complete L2CAP frames per protocol label (see [`channel_label`]).
    pub channels: BTreeMap<String, u32>,
}

impl Contents {
    /// The protocols present, most frames first, e.g. `AVDTP (A2DP audio)
    /// 1585 frames`.
    pub fn channel_list(&self) -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> =
            self.channels.iter().map(|(k, n)| (k.clone(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Short kinds of traffic: `ble-att`, `a2dp`, `spp-rfcomm`, `hid`,
    /// `hci-only`, … (stable labels an agent can branch on).
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        let has = |p: &str| self.channels.keys().any(|c| c.starts_with(p));
        if has("ATT") {
            k.push("ble-att");
        }
        if has("AVDTP") {
            k.push("a2dp");
        }
        if has("AVCTP") {
            k.push("avrcp");
        }
        if has("RFCOMM") {
            k.push("spp-rfcomm");
        }
        if has("HID") {
            k.push("hid");
        }
        if has("BNEP") {
            k.push("pan-bnep");
        }
        if has("SDP") {
            k.push("sdp");
        }
        if has("SMP") {
            k.push("pairing");
        }
        if has(UNKNOWN_CHANNELS) {
            k.push("unidentified-acl");
        }
        if self.cut_acl > 0 {
            k.push("cut-acl");
        }
        if self.sco > 0 {
            k.push("sco-audio");
        }
        if self.iso > 0 {
            k.push("le-audio-iso");
        }
        if self.acl == 0 && self.sco == 0 && self.iso == 0 {
            k.push(if self.le_advertising_reports > 0 {
                "hci-only-advertising"
            } else {
                "hci-only"
            });
        }
        k
    }

    /// One sentence on what the capture holds besides imported ATT values.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.acl == 0 && self.sco == 0 && self.iso == 0 {
            let mut s = format!(
                "only HCI commands ({}) and events ({}), no ACL data: no connection traffic was captured",
                self.commands, self.events
            );
            if self.le_advertising_reports > 0 {
                s.push_str(&format!(
                    " ({} LE advertising reports: a scan)",
                    self.le_advertising_reports
                ));
            }
            return s;
        }
        let chans: Vec<String> = self
            .channel_list()
            .into_iter()
            .take(8)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        if !chans.is_empty() {
            parts.push(format!("L2CAP frames: {}", chans.join(", ")));
        }
        if !self.att_other.is_empty() {
            let other: Vec<String> = self
                .att_other
                .iter()
                .map(|(op, n)| format!("{} {n}", opcode_name(*op)))
                .collect();
            parts.push(format!("other ATT PDUs: {}", other.join(", ")));
        }
        if self.cut_acl > 0 {
            parts.push(format!(
                "ACL records cut short by the capture {} (filtered snoop log)",
                self.cut_acl
            ));
        }
        if self.sco > 0 {
            parts.push(format!("SCO (voice) packets {}", self.sco));
        }
        if self.iso > 0 {
            parts.push(format!("ISO (LE audio) packets {}", self.iso));
        }
        parts.push(format!(
            "links opened: {} classic, {} LE; HCI commands {}, events {}",
            self.classic_links, self.le_links, self.commands, self.events
        ));
        parts.join("; ")
    }
}

/// The one label of every channel whose protocol the capture does not
/// show.
pub const UNKNOWN_CHANNELS: &str =
    "unknown channels (opened before the capture started, or not L2CAP)";

/// The protocol of an L2CAP channel: fixed CIDs, or the PSM its dynamic
/// CID was opened with (from the signaling in the same capture).
pub(crate) fn channel_label(cid: u16, psm: Option<u16>) -> String {
    match (cid, psm) {
        (0x0001, _) => "L2CAP signaling".into(),
        (0x0002, _) => "connectionless".into(),
        (0x0004, _) => "ATT".into(),
        (0x0005, _) => "LE L2CAP signaling".into(),
        (0x0006, _) => "SMP (LE pairing)".into(),
        (0x0007, _) => "SMP (BR/EDR pairing)".into(),
        (_, Some(psm)) => match psm {
            0x0001 => "SDP".into(),
            0x0003 => "RFCOMM (SPP, HFP, …)".into(),
            0x000F => "BNEP (PAN)".into(),
            0x0011 => "HID control".into(),
            0x0013 => "HID interrupt".into(),
            0x0017 => "AVCTP (AVRCP)".into(),
            0x0019 => "AVDTP (A2DP audio)".into(),
            0x001B => "AVCTP browsing".into(),
            0x001F => "ATT over BR/EDR".into(),
            0x0027 => "EATT".into(),
            p => format!("PSM 0x{p:04X}"),
        },
        // One label for all of them: a capture with many odd CIDs (vendor
        // diagnostics on handle 0xEDC) must not list each one.
        _ => UNKNOWN_CHANNELS.into(),
    }
}

/// Per-handle rows kept while counting; values on further handles are
/// counted in `Tally::other_handles`.
pub const MAX_TALLY_HANDLES: usize = 4096;

/// Counts of every imported value, including those not kept.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Values imported as TX (sent by the capturing host).
    pub tx: u32,
    /// Values imported as RX.
    pub rx: u32,
    /// Payload bytes of those values.
    pub bytes: u64,
    /// (connection, attribute handle) → (writes, notifications).
    pub per_handle: BTreeMap<(u16, u16), (u32, u32)>,
    /// Values on handles beyond MAX_TALLY_HANDLES distinct ones.
    pub other_handles: u32,
}

impl Tally {
    /// Every value found, TX and RX.
    pub fn total(&self) -> u32 {
        self.tx + self.rx
    }
}

/// What `parse` found in a capture.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The header's datalink: DATALINK_H4 or DATALINK_MONITOR.
    pub datalink: u32,
    /// Records in the file (complete and cut).
    pub records: u32,
    /// The newest values (all of them unless a [`Keep`] bounded them).
    pub values: VecDeque<AttValue>,
    /// Counts over every value found, kept or not.
    pub tally: Tally,
    /// Records that were not ATT writes or notifications (commands, events,
    /// other ATT).
    pub skipped: u32,
    /// Problems found (truncated records, unfinished fragments), at most
    /// MAX_WARNINGS.
    pub warnings: Vec<String>,
    /// What traffic the capture holds, for describing one without ATT values.
    pub contents: Contents,
    /// Timestamps of the first and last record.
    pub first_ts: Option<Micros>,
    /// Timestamp of the last record.
    pub last_ts: Option<Micros>,
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

/// Per-capture decoding state: reassembly, and which PSM each dynamic
/// channel was opened for. Connection handles are per adapter (btmon
/// records several), so keys carry the adapter index.
#[derive(Default)]
struct State {
    /// Keyed by (adapter, connection handle, sent-by-host).
    pending: HashMap<(u16, u16, bool), Pending>,
    /// The `expected` lengths of `pending`, bounded by REASSEMBLY_BYTES.
    pending_bytes: usize,
    /// (adapter, connection handle, CID) → PSM.
    psm: HashMap<(u16, u16, u16), u16>,
    /// Open requests (adapter, handle, identifier) → (PSM, source CIDs),
    /// answered by a response with the same identifier.
    requests: HashMap<(u16, u16, u8), (u16, Vec<u16>)>,
}

impl State {
    /// Takes a frame out of reassembly, returning its reserved bytes.
    fn take(&mut self, key: &(u16, u16, bool)) -> Option<Pending> {
        let p = self.pending.remove(key)?;
        self.pending_bytes -= p.expected;
        Some(p)
    }
}

/// Bound on tracked channels, so a hostile capture cannot grow the maps
/// without limit (real captures hold a handful).
const MAX_CHANNELS: usize = 4096;

/// Which of a capture's values a parse keeps: the newest, at most
/// `packets` of them taking at most `bytes` by [`packet_cost`], so the
/// values staged for the buffer never outgrow what the buffer keeps of
/// them (a huge capture of tiny packets, or of 64 KB notifications,
/// cannot exhaust memory). The tally still counts them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// Most values kept.
    pub packets: usize,
    /// Most bytes the kept values take, payload plus per-packet overhead.
    pub bytes: usize,
}

impl Keep {
    /// Every value.
    pub const ALL: Keep = Keep {
        packets: usize::MAX,
        bytes: usize::MAX,
    };
}

/// Parses a whole capture, keeping every value (`parse_keeping` bounds them).
pub fn parse(bytes: &[u8]) -> Result<Capture, BtsnoopError> {
    parse_keeping(bytes, Keep::ALL)
}

/// Parses a capture in memory, keeping the newest values `keep` allows.
pub fn parse_keeping(bytes: &[u8], keep: Keep) -> Result<Capture, BtsnoopError> {
    match read_keeping(&mut &bytes[..], keep) {
        Ok(parsed) => parsed,
        // Reading a slice never fails; were it to, the capture ends there.
        Err(e) => Err(BtsnoopError::Read(e.to_string())),
    }
}

/// Reads as many bytes as `r` has, up to `buf.len()`; fewer only at the
/// end of the input.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Parses a capture from `r` front to back, one record in memory at a
/// time, keeping the newest values `keep` allows: an import's memory is
/// what it keeps, not the file's size. The outer error is a failed read;
/// the inner one says the input is no capture this parser reads. Reading
/// stops after the last record it could parse (the caller may read on).
pub fn read_keeping(r: &mut impl Read, keep: Keep) -> io::Result<Result<Capture, BtsnoopError>> {
    let mut head = [0u8; 16];
    let got = read_full(r, &mut head)?;
    if got < 8 || &head[..8] != MAGIC {
        return Ok(Err(BtsnoopError::NotBtsnoop));
    }
    if got < 16 {
        return Ok(Err(BtsnoopError::TooShort));
    }
    let version = be32(&head[8..]);
    if version != 1 {
        return Ok(Err(BtsnoopError::Version(version)));
    }
    let datalink = be32(&head[12..]);
    if datalink != DATALINK_H4 && datalink != DATALINK_MONITOR {
        return Ok(Err(BtsnoopError::Datalink(datalink)));
    }
    let mut cap = Capture {
        datalink,
        ..Default::default()
    };
    let keep_packets = keep.packets.max(1);
    // What the kept values take, by packet_cost.
    let mut kept_bytes = 0usize;
    let mut st = State::default();
    let mut pos: u64 = 16;
    // The record being parsed: at most RECORD_PREFIX bytes, reused.
    let mut rec = Vec::new();
    loop {
        let mut h = [0u8; 24];
        let got = read_full(r, &mut h)?;
        if got == 0 {
            break;
        }
        if got < 24 {
            cap.warn(format!(
                "truncated record header at byte {pos}; stopped there"
            ));
            break;
        }
        let orig = be32(&h) as usize;
        let incl = be32(&h[4..]) as usize;
        let flags = be32(&h[8..]);
        let ts_raw = i64::from_be_bytes(h[16..24].try_into().unwrap_or([0; 8]));
        let ts = ts_raw.wrapping_sub(EPOCH_OFFSET_US);
        pos += 24;
        let looked_at = incl.min(RECORD_PREFIX);
        rec.resize(looked_at, 0);
        let got = read_full(r, &mut rec)?;
        let rest = (incl - looked_at) as u64;
        let past = if got == looked_at {
            io::copy(&mut r.by_ref().take(rest), &mut io::sink())?
        } else {
            0
        };
        if (got as u64) + past < incl as u64 {
            cap.warn(format!(
                "record {} claims {incl} bytes but only {} remain; stopped there",
                cap.records + 1,
                got as u64 + past
            ));
            break;
        }
        pos += incl as u64;
        let data = &rec[..];
        cap.records += 1;
        let cut = incl < orig;
        cap.contents.cut += cut as u32;
        cap.first_ts.get_or_insert(ts);
        cap.last_ts = Some(ts);
        // (packet type as in H4, body, sent by the host, adapter index)
        let (kind, body, sent, adapter) = match datalink {
            DATALINK_H4 => match data.split_first() {
                Some((&k, rest)) => (k, rest, flags & 1 == 0, 0),
                None => (0, data, false, 0),
            },
            _ => {
                let adapter = (flags >> 16) as u16;
                match flags & 0xFFFF {
                    2 => (0x01, data, true, adapter),
                    3 => (0x04, data, false, adapter),
                    4 => (0x02, data, true, adapter),
                    5 => (0x02, data, false, adapter),
                    6 => (0x03, data, true, adapter),
                    7 => (0x03, data, false, adapter),
                    _ => (0, data, false, adapter),
                }
            }
        };
        let imported = match kind {
            0x01 => {
                cap.contents.commands += 1;
                false
            }
            0x04 => {
                cap.contents.events += 1;
                event(body, &mut cap.contents);
                false
            }
            0x02 => {
                cap.contents.acl += 1;
                let meta = Rec {
                    sent,
                    adapter,
                    ts,
                    number: cap.records,
                    cut,
                };
                let imported = acl_record(body, &meta, &mut st, &mut cap);
                if imported && let Some(v) = cap.values.back() {
                    kept_bytes += packet_cost(v.value.len());
                }
                // The oldest go first, as the buffer would evict them.
                while cap.values.len() > keep_packets
                    || (kept_bytes > keep.bytes && cap.values.len() > 1)
                {
                    let Some(old) = cap.values.pop_front() else {
                        break;
                    };
                    kept_bytes -= packet_cost(old.value.len());
                }
                imported
            }
            0x03 => {
                cap.contents.sco += 1;
                false
            }
            0x05 => {
                cap.contents.iso += 1;
                false
            }
            _ => {
                cap.contents.other_records += 1;
                false
            }
        };
        if !imported {
            cap.skipped += 1;
        }
    }
    if cap.contents.cut > 0 {
        // One warning, not one per record: Android's "filtered" snoop mode
        // cuts every data record.
        let w = format!(
            "{} records were cut short by the capture (included length below original length; Android's filtered snoop log mode keeps only headers), {} of them ACL data whose ATT values could not be read: capture with the full snoop log mode",
            cap.contents.cut, cap.contents.cut_acl
        );
        cap.warnings.insert(0, w);
        cap.warnings.truncate(MAX_WARNINGS);
    }
    debug_assert!(st.pending_bytes <= REASSEMBLY_BYTES);
    let mut left: Vec<_> = st.pending.into_iter().collect();
    left.sort_by_key(|(_, p)| p.record);
    for ((_, handle, _), p) in left {
        cap.warn(format!(
            "an L2CAP frame on handle 0x{handle:03X} starting in record {} is missing {} bytes at the end of the capture",
            p.record,
            p.expected.saturating_sub(p.buf.len())
        ));
    }
    Ok(Ok(cap))
}

/// Notes connections opened and advertising seen, from an HCI event.
fn event(ev: &[u8], c: &mut Contents) {
    match ev {
        // Connection Complete: status 0, link type 1 = ACL.
        [0x03, _, 0x00, rest @ ..] if rest.get(8) == Some(&0x01) => c.classic_links += 1,
        // LE Meta: (Enhanced) Connection Complete with status 0; reports.
        [0x3E, _, sub, rest @ ..] => match (*sub, rest.first()) {
            (0x01 | 0x0A | 0x29, Some(0)) => c.le_links += 1,
            (0x02 | 0x0B | 0x0D, _) => c.le_advertising_reports += 1,
            _ => {}
        },
        _ => {}
    }
}

/// A record's place and flags.
struct Rec {
    sent: bool,
    adapter: u16,
    ts: Micros,
    number: u32,
    /// The capture kept fewer bytes than the record had.
    cut: bool,
}

/// Handles one ACL packet; true when it completed an imported ATT value.
fn acl_record(acl: &[u8], rec: &Rec, st: &mut State, cap: &mut Capture) -> bool {
    let &Rec {
        sent,
        adapter,
        ts,
        number: record,
        cut,
    } = rec;
    if cut {
        cap.contents.cut_acl += 1;
        // A cut start leaves its frame unfinishable; a cut continuation
        // spoils the frame it belongs to.
        if acl.len() >= 2 {
            let handle = le16(acl) & 0x0FFF;
            st.take(&(adapter, handle, sent));
        }
        return false;
    }
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
    let key = (adapter, handle, sent);
    let (l2, ts) = if pb == 0b01 {
        let Some(p) = st.pending.get_mut(&key) else {
            cap.warn(format!(
                "record {record}: continuation fragment without a start on handle 0x{handle:03X}"
            ));
            return false;
        };
        p.buf.extend_from_slice(payload);
        if p.buf.len() < p.expected {
            return false;
        }
        let p = st.take(&key).expect("present");
        (p.buf, p.ts)
    } else {
        if let Some(p) = st.take(&key) {
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
            if st.pending.len() < MAX_CHANNELS && st.pending_bytes + expected <= REASSEMBLY_BYTES {
                // Reserved whole, so the frame never grows by doubling.
                let mut buf = Vec::with_capacity(expected);
                buf.extend_from_slice(payload);
                st.pending_bytes += expected;
                st.pending.insert(
                    key,
                    Pending {
                        buf,
                        expected,
                        ts,
                        record,
                    },
                );
            } else {
                cap.warn(format!(
                    "record {record}: an L2CAP frame of {expected} bytes on handle 0x{handle:03X} was not reassembled: {} frames ({} KiB) were being reassembled already",
                    st.pending.len(),
                    st.pending_bytes >> 10
                ));
            }
            return false;
        }
        (payload.to_vec(), ts)
    };
    let l2len = le16(&l2) as usize;
    let cid = le16(&l2[2..]);
    let Some(pdu) = l2.get(4..4 + l2len) else {
        return false;
    };
    let psm = (cid >= 0x0040)
        .then(|| st.psm.get(&(adapter, handle, cid)).copied())
        .flatten();
    *cap.contents
        .channels
        .entry(channel_label(cid, psm))
        .or_insert(0) += 1;
    match (cid, psm) {
        (0x0001 | 0x0005, _) => {
            signaling(pdu, adapter, handle, st);
            false
        }
        // ATT on the LE fixed channel, or GATT over BR/EDR (PSM 0x1F,
        // basic mode: the same PDUs on a dynamic channel).
        (0x0004, _) | (_, Some(0x001F)) => att_pdu(pdu, sent, handle, ts, cap),
        _ => false,
    }
}

/// Records which PSM each dynamic channel carries, from connection
/// requests and responses (BR/EDR 0x02/0x03, LE credit based 0x14/0x15,
/// enhanced credit based 0x17/0x18).
fn signaling(mut pdu: &[u8], adapter: u16, handle: u16, st: &mut State) {
    // A BR/EDR signaling frame may carry several commands.
    while pdu.len() >= 4 {
        let (code, id, len) = (pdu[0], pdu[1], le16(&pdu[2..]) as usize);
        let Some(d) = pdu.get(4..4 + len) else {
            return;
        };
        pdu = &pdu[4 + len..];
        if st.psm.len() >= MAX_CHANNELS || st.requests.len() >= MAX_CHANNELS {
            return;
        }
        let psms = &mut st.psm;
        let mut map = |cid: u16, psm: u16| {
            if cid >= 0x0040 {
                psms.insert((adapter, handle, cid), psm);
            }
        };
        match code {
            0x02 if d.len() >= 4 => {
                let (psm, scid) = (le16(d), le16(&d[2..]));
                map(scid, psm);
                st.requests.insert((adapter, handle, id), (psm, vec![scid]));
            }
            0x03 if d.len() >= 2 => {
                // Matched to its request by the identifier.
                if let Some((psm, _)) = st.requests.remove(&(adapter, handle, id)) {
                    map(le16(d), psm);
                }
            }
            0x14 if d.len() >= 10 => {
                let (psm, scid) = (le16(d), le16(&d[8..]));
                map(scid, psm);
                st.requests.insert((adapter, handle, id), (psm, vec![scid]));
            }
            0x15 if d.len() >= 2 => {
                if let Some((psm, _)) = st.requests.remove(&(adapter, handle, id)) {
                    map(le16(d), psm);
                }
            }
            0x17 if d.len() >= 8 => {
                let psm = le16(d);
                let scids: Vec<u16> = d[8..].chunks_exact(2).map(le16).collect();
                for &c in &scids {
                    map(c, psm);
                }
                st.requests.insert((adapter, handle, id), (psm, scids));
            }
            0x18 if d.len() >= 8 => {
                if let Some((psm, _)) = st.requests.remove(&(adapter, handle, id)) {
                    for c in d[8..].chunks_exact(2).map(le16) {
                        map(c, psm);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Imports an ATT write or notification; counts any other ATT PDU.
fn att_pdu(att: &[u8], sent: bool, conn: u16, ts: Micros, cap: &mut Capture) -> bool {
    let Some(&opcode) = att.first() else {
        return false;
    };
    if !is_imported_opcode(opcode) || att.len() < 3 {
        *cap.contents.att_other.entry(opcode).or_insert(0) += 1;
        return false;
    }
    let mut value = &att[3..];
    if opcode == SIGNED_WRITE_COMMAND {
        value = &value[..value.len().saturating_sub(SIGNATURE_LEN)];
    }
    let handle = le16(&att[1..]);
    let t = &mut cap.tally;
    if sent {
        t.tx += 1;
    } else {
        t.rx += 1;
    }
    t.bytes += value.len() as u64;
    let known =
        t.per_handle.len() < MAX_TALLY_HANDLES || t.per_handle.contains_key(&(conn, handle));
    if known {
        let e = t.per_handle.entry((conn, handle)).or_insert((0, 0));
        if is_write(opcode) {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    } else {
        t.other_handles += 1;
    }
    cap.values.push_back(AttValue {
        ts,
        dir: if sent { Direction::Tx } else { Direction::Rx },
        conn,
        opcode,
        handle,
        value: value.to_vec(),
    });
    true
}

pub mod build {
    //! Writes btsnoop captures byte by byte from the format description:
    //! synthetic captures for tests and samples.
    use super::*;

    /// The 16-byte file header: magic, version 1, `datalink`.
    pub fn header(datalink: u32) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&1u32.to_be_bytes());
        v.extend_from_slice(&datalink.to_be_bytes());
        v
    }

    /// One record: lengths, `flags` (bit 0 set = received), no drops, and the
    /// time `unix_us` (µs since 1970) in btsnoop's epoch.
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

    /// An H4 packet: the `kind` byte (1 command, 2 ACL, 3 SCO, 4 event) before
    /// `body`.
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
                conn: 0x0040,
                opcode: WRITE_COMMAND,
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
        assert_eq!(cap.contents.att_other.get(&0x0A), Some(&1));
        assert_eq!((cap.contents.commands, cap.contents.events), (1, 1));
        assert_eq!(cap.contents.kinds(), ["ble-att"]);
    }

    #[test]
    fn direction_follows_the_capture_flag_not_the_opcode() {
        // A phone acting as GATT server sends an indication (flag: sent)
        // and receives a write (flag: received).
        let mut f = header(DATALINK_H4);
        for frag in acl(0x0003, &att(INDICATION, 0x0021, &[1, 2]), 64) {
            record(&mut f, 0b00, T0, &h4(0x02, &frag));
        }
        for frag in acl(0x0003, &att(WRITE_REQUEST, 0x0024, &[3]), 64) {
            record(&mut f, 0b01, T0 + 1, &h4(0x02, &frag));
        }
        let cap = parse(&f).unwrap();
        let got: Vec<_> = cap
            .values
            .iter()
            .map(|v| (v.dir, v.opcode, v.handle, v.conn))
            .collect();
        assert_eq!(
            got,
            [
                (Direction::Tx, INDICATION, 0x21, 3),
                (Direction::Rx, WRITE_REQUEST, 0x24, 3)
            ]
        );
    }

    #[test]
    fn signed_writes_drop_their_signature() {
        let mut f = header(DATALINK_H4);
        let mut v = vec![0xAB, 0xCD];
        v.extend([0xEE; SIGNATURE_LEN]);
        for frag in acl(0x0040, &att(SIGNED_WRITE_COMMAND, 0x0030, &v), 64) {
            record(&mut f, 0, T0, &h4(0x02, &frag));
        }
        let cap = parse(&f).unwrap();
        assert_eq!(cap.values[0].value, [0xAB, 0xCD]);
        assert!(is_write(cap.values[0].opcode));
    }

    /// An L2CAP signaling frame with one command.
    fn sig(cid: u16, code: u8, id: u8, data: &[u8]) -> Vec<u8> {
        let mut cmd = vec![code, id];
        cmd.extend_from_slice(&(data.len() as u16).to_le_bytes());
        cmd.extend_from_slice(data);
        l2(cid, &cmd)
    }

    fn l2(cid: u16, pdu: &[u8]) -> Vec<u8> {
        let mut v = (pdu.len() as u16).to_le_bytes().to_vec();
        v.extend_from_slice(&cid.to_le_bytes());
        v.extend_from_slice(pdu);
        v
    }

    fn le(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn classic_channels_are_named_from_their_psm() {
        let mut f = header(DATALINK_H4);
        // Connection Complete (status 0, handle 0x000B, ACL link).
        let cc = [0x03, 0x0B, 0x00, 0x0B, 0x00, 1, 2, 3, 4, 5, 6, 0x01, 0x00];
        record(&mut f, 0b11, T0, &h4(0x04, &cc));
        // AVDTP: request from the phone (scid 0x0041), response (dcid 0x0560).
        let req = sig(1, 0x02, 7, &le(&[0x0019, 0x0041]));
        let rsp = sig(1, 0x03, 7, &le(&[0x0560, 0x0041, 0, 0]));
        record(&mut f, 0b00, T0, &h4(0x02, &acl(0x000B, &req, 64)[0]));
        record(&mut f, 0b01, T0, &h4(0x02, &acl(0x000B, &rsp, 64)[0]));
        for _ in 0..3 {
            let media = l2(0x0560, &[0x80, 0x60, 0, 1]);
            record(&mut f, 0b00, T0, &h4(0x02, &acl(0x000B, &media, 64)[0]));
        }
        let back = l2(0x0041, &[0x02, 0x03]);
        record(&mut f, 0b01, T0, &h4(0x02, &acl(0x000B, &back, 64)[0]));
        // RFCOMM on another link, answered on a channel never opened here.
        let req = sig(1, 0x02, 1, &le(&[0x0003, 0x0042]));
        record(&mut f, 0b00, T0, &h4(0x02, &acl(0x000C, &req, 64)[0]));
        let data = l2(0x0042, &[1]);
        record(&mut f, 0b01, T0, &h4(0x02, &acl(0x000C, &data, 64)[0]));
        let stray = l2(0x0077, &[1]);
        record(&mut f, 0b01, T0, &h4(0x02, &acl(0x000C, &stray, 64)[0]));
        let cap = parse(&f).unwrap();
        assert!(cap.values.is_empty());
        let c = &cap.contents;
        assert_eq!(c.channels.get("AVDTP (A2DP audio)"), Some(&4));
        assert_eq!(c.channels.get("RFCOMM (SPP, HFP, …)"), Some(&1));
        assert_eq!(c.channels.get("L2CAP signaling"), Some(&3));
        assert_eq!(c.channels.get(UNKNOWN_CHANNELS), Some(&1));
        assert_eq!(c.classic_links, 1);
        assert_eq!(c.kinds(), ["a2dp", "spp-rfcomm", "unidentified-acl"]);
        let d = c.describe();
        assert!(d.starts_with("L2CAP frames: AVDTP (A2DP audio) 4"), "{d}");
        assert!(d.contains("1 classic"), "{d}");
    }

    #[test]
    fn le_credit_channels_and_att_over_br_edr() {
        let mut f = header(DATALINK_H4);
        // LE credit based request (SPSM 0x0080, scid 0x0040), response by id.
        let req = sig(5, 0x14, 9, &le(&[0x0080, 23, 23, 10, 0x0040]));
        let rsp = sig(5, 0x15, 9, &le(&[0x0045, 23, 23, 10, 0]));
        record(&mut f, 0, T0, &h4(0x02, &acl(1, &req, 64)[0]));
        record(&mut f, 1, T0, &h4(0x02, &acl(1, &rsp, 64)[0]));
        record(
            &mut f,
            0,
            T0,
            &h4(0x02, &acl(1, &l2(0x0045, &[0, 0]), 64)[0]),
        );
        // GATT over BR/EDR: ATT PDUs on a dynamic channel for PSM 0x1F.
        let req = sig(1, 0x02, 2, &le(&[0x001F, 0x0050]));
        let rsp = sig(1, 0x03, 2, &le(&[0x0051, 0x0050, 0, 0]));
        record(&mut f, 0, T0, &h4(0x02, &acl(2, &req, 64)[0]));
        record(&mut f, 1, T0, &h4(0x02, &acl(2, &rsp, 64)[0]));
        let ntf = [NOTIFICATION, 0x10, 0x00, 0xAA];
        record(&mut f, 1, T0, &h4(0x02, &acl(2, &l2(0x0050, &ntf), 64)[0]));
        let cap = parse(&f).unwrap();
        assert_eq!(cap.contents.channels.get("PSM 0x0080"), Some(&1));
        assert_eq!(cap.values.len(), 1);
        assert_eq!((cap.values[0].conn, cap.values[0].handle), (2, 0x10));
        assert_eq!(cap.contents.channels.get("ATT over BR/EDR"), Some(&1));
    }

    #[test]
    fn records_cut_by_the_capture_are_counted_once_not_misread() {
        let mut f = header(DATALINK_H4);
        // A write kept whole, then two records the capture cut to 9 of
        // their bytes (original length larger than included length).
        for frag in acl(0x0040, &att(WRITE_COMMAND, 0x12, &[1, 2, 3]), 64) {
            record(&mut f, 0, T0, &h4(0x02, &frag));
        }
        for _ in 0..2 {
            let whole = h4(
                0x02,
                &acl(0x0040, &att(NOTIFICATION, 0x15, &[7; 30]), 64)[0],
            );
            let at = f.len();
            record(&mut f, 1, T0, &whole[..9]);
            f[at..at + 4].copy_from_slice(&(whole.len() as u32).to_be_bytes());
        }
        let cap = parse(&f).unwrap();
        assert_eq!(cap.values.len(), 1);
        assert_eq!((cap.contents.cut, cap.contents.cut_acl), (2, 2));
        assert_eq!(cap.warnings.len(), 1, "{:?}", cap.warnings);
        assert!(cap.warnings[0].starts_with("2 records were cut short"));
        assert!(cap.contents.kinds().contains(&"cut-acl"));
        assert!(
            cap.contents
                .describe()
                .contains("cut short by the capture 2")
        );
    }

    /// Hands out a few bytes per read, as a file or stream may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(7);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Hardening item 4: an import read the whole file and staged every
    /// value the packet count allowed, 64 KB ones included. It streams now
    /// (a record longer than any ACL packet is read past, not held) and
    /// keeps only the newest values the buffer's byte limit holds.
    #[test]
    fn reading_streams_records_and_keeps_values_within_a_byte_budget() {
        let mut f = header(DATALINK_H4);
        for i in 0..5u8 {
            let frame = att(NOTIFICATION, 0x15, &vec![i; 60_000]);
            let mut body = h4(0x02, &acl(0x40, &frame, 0xFFFF)[0]);
            // Bytes after the ACL packet, beyond what its header announces.
            body.extend(std::iter::repeat_n(0xEE, 100_000));
            record(&mut f, 1, T0 + i as i64, &body);
        }
        let whole = parse(&f).unwrap();
        let streamed = read_keeping(&mut Trickle(&f), Keep::ALL).unwrap().unwrap();
        assert_eq!(streamed, whole);
        assert_eq!(
            (whole.records, whole.tally.rx, whole.values.len()),
            (5, 5, 5)
        );
        assert_eq!(whole.tally.bytes, 300_000);
        assert!(whole.warnings.is_empty(), "{:?}", whole.warnings);

        let budget = Keep {
            packets: usize::MAX,
            bytes: 3 * packet_cost(60_000) + 10,
        };
        let cap = read_keeping(&mut Trickle(&f), budget).unwrap().unwrap();
        let kept: Vec<u8> = cap.values.iter().map(|v| v.value[0]).collect();
        assert_eq!(kept, [2, 3, 4], "the newest that fit");
        assert_eq!(cap.tally, whole.tally, "counts cover every value");

        // A record claiming more than the file holds stops the parse and
        // says how much there was.
        let mut cut = f.clone();
        record(&mut cut, 1, T0, &[0x02; 10]);
        cut.truncate(cut.len() - 4);
        let cap = read_keeping(&mut Trickle(&cut), Keep::ALL)
            .unwrap()
            .unwrap();
        assert_eq!(cap.records, 5);
        assert_eq!(
            cap.warnings,
            ["record 6 claims 10 bytes but only 6 remain; stopped there"]
        );
    }

    #[test]
    fn reassembly_is_bounded_in_bytes() {
        let mut f = header(DATALINK_H4);
        let frame = att(WRITE_COMMAND, 0x12, &[0xA5; 65_000]);
        // 300 frames started on as many handles, none finished.
        for handle in 0..300u16 {
            let first = &acl(handle, &frame, 1000)[0];
            record(&mut f, 0, T0, &h4(0x02, first));
        }
        // A small frame on another handle still imports.
        record(
            &mut f,
            0,
            T0,
            &h4(0x02, &acl(0x400, &att(WRITE_COMMAND, 1, &[7]), 64)[0]),
        );
        let cap = parse(&f).unwrap();
        assert_eq!(cap.tally.tx, 1);
        let open = REASSEMBLY_BYTES / frame.len();
        assert!(
            cap.warnings[0].starts_with(&format!(
                "record {}: an L2CAP frame of {} bytes on handle 0x{open:03X} was not reassembled",
                open + 1,
                frame.len()
            )),
            "{:?}",
            cap.warnings
        );
    }

    #[test]
    fn parse_keeping_bounds_the_values_but_counts_them_all() {
        let mut f = header(DATALINK_H4);
        for i in 0..10u16 {
            for frag in acl(0x0040, &att(WRITE_COMMAND, i % 3, &[i as u8]), 64) {
                record(&mut f, 0, T0 + i as i64, &h4(0x02, &frag));
            }
        }
        let four = Keep {
            packets: 4,
            bytes: usize::MAX,
        };
        let cap = parse_keeping(&f, four).unwrap();
        let kept: Vec<u8> = cap.values.iter().map(|v| v.value[0]).collect();
        assert_eq!(kept, [6, 7, 8, 9], "the newest are kept");
        assert_eq!((cap.tally.tx, cap.tally.rx, cap.tally.total()), (10, 0, 10));
        assert_eq!(cap.tally.per_handle.get(&(0x40, 0)), Some(&(4, 0)));
        assert_eq!(cap.tally, parse(&f).unwrap().tally);
        assert_eq!(parse(&f).unwrap().values.len(), 10);
    }

    #[test]
    fn commands_and_events_only_say_so() {
        let mut f = header(DATALINK_H4);
        record(&mut f, 0b10, T0, &h4(0x01, &[0x03, 0x0C, 0x00]));
        record(
            &mut f,
            0b11,
            T0,
            &h4(0x04, &[0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        );
        record(&mut f, 0b11, T0, &h4(0x04, &[0x3E, 0x03, 0x02, 0x01, 0x00]));
        let cap = parse(&f).unwrap();
        assert_eq!(cap.skipped, 3);
        assert_eq!(cap.contents.kinds(), ["hci-only-advertising"]);
        let d = cap.contents.describe();
        assert!(d.starts_with("only HCI commands (1) and events (2)"), "{d}");
        assert!(d.contains("1 LE advertising reports"), "{d}");
    }

    #[test]
    fn opcodes_parse_by_name_and_number() {
        assert_eq!(parse_opcode("write-command"), Some(WRITE_COMMAND));
        assert_eq!(parse_opcode("Write_Request"), Some(WRITE_REQUEST));
        assert_eq!(parse_opcode("notify"), Some(NOTIFICATION));
        assert_eq!(parse_opcode("0x1d"), Some(INDICATION));
        assert_eq!(parse_opcode("82"), Some(WRITE_COMMAND));
        assert_eq!(parse_opcode("read-request"), Some(0x0A));
        assert_eq!(parse_opcode("other"), None);
        assert_eq!(parse_opcode("bogus"), None);
        assert_eq!(opcode_name(0xD2), "signed-write-command");
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
