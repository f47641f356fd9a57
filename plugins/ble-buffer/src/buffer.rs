//! The packet ring buffer, the separate system-event log, reader positions
//! and the queries over them.
//!
//! Packet ids come from one global counter starting at 1 that is never
//! reset or reused, so ids in the ring are always contiguous and a cursor
//! (`after id N`) maps to a ring index by subtraction. System events have
//! their own counter and ring: they are never packets and never counted as
//! such (the original counted every INFO line as a received packet).

use crate::hex::Pattern;
use crate::since::Since;
use crate::time::Micros;
use std::collections::{BTreeMap, VecDeque};

/// Packets kept when BLE_BUFFER_SIZE / --ble-buffer-size is not given.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Smallest buffer accepted; smaller sizes are raised to it.
pub const MIN_CAPACITY: usize = 100;
/// Largest buffer accepted (about 1 M packets); larger sizes are cut to it.
pub const MAX_CAPACITY: usize = 1_000_000;
/// Bytes the ring's packets may take at most, each counted as its payload
/// plus [`PACKET_OVERHEAD`]; the oldest are evicted beyond it, as beyond the
/// packet capacity. The plugin's instance may use 512 MiB in all (its
/// memory cap: exceeding it traps and the host rebuilds the instance, losing
/// every packet), and an import stages up to this much besides the ring
/// (`btsnoop::Keep`), so ring and staging together stay at a quarter of
/// the cap. Ordinary traffic never reaches it: ATT values are at most 512
/// bytes, so 10,000 packets take under 6 MiB; it binds for captures of
/// 64 KB L2CAP frames and for a 1,000,000-packet ring of larger values.
pub const RING_BYTES: usize = 64 << 20;
/// What a packet costs the ring besides its payload: its slot in the ring
/// (32 bytes on wasm32, 48 natively) and the allocator's header and
/// rounding of its payload block, rounded up.
pub const PACKET_OVERHEAD: usize = 64;
/// System events kept; the oldest is dropped beyond this.
pub const EVENT_CAPACITY: usize = 1_000;
/// How far a reply/request is looked for, in packets.
const PARTNER_WINDOW: usize = 256;
/// Payload bytes one answer may carry (about 75 K characters of hex), so a
/// page of long packets stays within what MCP clients accept.
pub const ANSWER_BYTES: usize = 24 * 1024;
/// Named readers kept; the alphabetically first is dropped beyond this.
const MAX_READERS: usize = 256;

/// A packet's direction relative to the host (the phone or PC running the
/// bridge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host to device (a write).
    Tx,
    /// Device to host (a notification or indication).
    Rx,
}

impl Direction {
    /// "TX" or "RX", as the tools print it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Tx => "TX",
            Self::Rx => "RX",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// Where an imported packet sat in its capture: ATT opcode, attribute
/// handle and HCI connection handle. Live bridge packets carry none (the
/// bridge forwards bare values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Att {
    /// ATT opcode, e.g. 0x52 (write command) or 0x1B (notification).
    pub opcode: u8,
    /// ATT attribute handle, e.g. 0x0012.
    pub handle: u16,
    /// HCI connection handle of the link the packet travelled on.
    pub conn: u16,
}

/// One buffered BLE packet.
#[derive(Debug, Clone)]
pub struct Packet {
    /// Global sequence id, from 1; never reset or reused.
    pub id: u64,
    /// When it was seen (live) or captured (import), in µs since 1970 UTC.
    pub ts: Micros,
    /// Who sent it.
    pub dir: Direction,
    /// The ATT value (payload) bytes.
    pub data: Box<[u8]>,
    /// Opcode, handle and connection of an imported packet; none for live ones.
    pub att: Option<Att>,
}

/// What a packet must be to match, besides the window: all given parts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only packets in this direction.
    pub direction: Option<Direction>,
    /// Only packets containing this byte pattern.
    pub pattern: Option<&'a Pattern>,
    /// Only packets on this ATT attribute handle (so only imported ones).
    pub handle: Option<u16>,
    /// Only packets on this HCI connection handle.
    pub conn: Option<u16>,
    /// Only packets with this ATT opcode.
    pub opcode: Option<u8>,
}

impl Filter<'_> {
    /// True when `p` passes every given part.
    pub fn matches(&self, p: &Packet) -> bool {
        self.direction.is_none_or(|d| d == p.dir)
            && self
                .handle
                .is_none_or(|h| p.att.is_some_and(|a| a.handle == h))
            && self.conn.is_none_or(|c| p.att.is_some_and(|a| a.conn == c))
            && self
                .opcode
                .is_none_or(|o| p.att.is_some_and(|a| a.opcode == o))
            && self.pattern.is_none_or(|pat| pat.is_match(&p.data))
    }

    /// True when any part besides the window is given.
    pub fn is_set(&self) -> bool {
        self.direction.is_some()
            || self.pattern.is_some()
            || self.handle.is_some()
            || self.conn.is_some()
            || self.opcode.is_some()
    }
}

/// How serious a system event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Normal course: the bridge link made, BLE traffic seen, a device
    /// connected.
    Info,
    /// Something degraded: the bridge link lost (a reconnect follows), a
    /// message that did not parse, a warning the bridge logs.
    Warn,
    /// A failure the bridge reports, e.g. a BLE error.
    Error,
}

impl Level {
    /// "info", "warn" or "error", as the tools print it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }
}

/// A system event: bridge or BLE connect, disconnect, error. Never counted as a
/// packet.
#[derive(Debug, Clone)]
pub struct Event {
    /// Event sequence id, its own series from 1 (separate from packet ids).
    pub id: u64,
    /// When it happened, in µs since 1970 UTC.
    pub ts: Micros,
    /// How serious it is.
    pub level: Level,
    /// What happened, in a sentence.
    pub message: String,
}

/// Packet and byte counts for one direction.
#[derive(Debug, Default, Clone, Copy)]
pub struct DirTotals {
    /// Packets counted.
    pub packets: u64,
    /// Payload bytes of those packets.
    pub bytes: u64,
}

/// Packets per direction per wall-clock second, for rates.
#[derive(Debug, Default)]
struct RateBuckets {
    buckets: VecDeque<(i64, [u64; 2])>,
}

impl RateBuckets {
    fn add(&mut self, now: Micros, dir: Direction) {
        let sec = now.div_euclid(1_000_000);
        match self.buckets.back_mut() {
            Some((s, c)) if *s == sec => c[dir.index()] += 1,
            _ => {
                let mut c = [0; 2];
                c[dir.index()] = 1;
                self.buckets.push_back((sec, c));
                while self.buckets.len() > 61 {
                    self.buckets.pop_front();
                }
            }
        }
    }

    /// Mean packets per second over the `secs` seconds before now.
    fn rate(&self, now: Micros, dir: Direction, secs: i64) -> f64 {
        let cur = now.div_euclid(1_000_000);
        // Right after start-up, average over the seconds actually observed.
        let secs = match self.buckets.front() {
            Some((first, _)) => secs.min(cur - first + 1).max(1),
            None => secs,
        };
        let n: u64 = self
            .buckets
            .iter()
            .filter(|(s, _)| *s > cur - secs && *s <= cur)
            .map(|(_, c)| c[dir.index()])
            .sum();
        n as f64 / secs as f64
    }
}

/// What get_logs asks for.
#[derive(Debug, Clone)]
pub struct LogQuery<'a> {
    /// Where the window starts (exclusive of an id, inclusive of a time).
    pub since: Since,
    /// The window's end, inclusive: a time (`Since::Time`) or a packet id
    /// (`Since::AfterId`, here meaning "up to and including").
    pub until: Option<Since>,
    /// What the packets must be besides lying in the window.
    pub filter: Filter<'a>,
    /// Most packets returned, 1..=1000 (the service checks it).
    pub limit: usize,
    /// Whose `since="last"` position to use and move on ("default" unless
    /// given).
    pub reader: &'a str,
    /// When more match than fit, return the newest instead of the oldest.
    pub newest: bool,
    /// Include system events of the window.
    pub include_events: bool,
}

/// One answer of get_logs, borrowing from the buffer.
#[derive(Debug)]
pub struct LogPage<'a> {
    /// Matching packets, oldest first.
    pub entries: Vec<&'a Packet>,
    /// Packets matching window and filter before the limit.
    pub total_matching: usize,
    /// Packets in the window (since) before the filters.
    pub in_window: usize,
    /// True only when matching packets were left out.
    pub truncated: bool,
    /// The id to pass as since to continue after this page without gaps or
    /// repeats.
    pub next_since: u64,
    /// System events of the window, oldest first.
    pub events: Vec<&'a Event>,
    /// Events of the window beyond those returned.
    pub events_left_out: usize,
    /// Packets after the cursor that were evicted before being read.
    pub evicted_unread: u64,
    /// The cursor was beyond the newest id (the plugin restarted since).
    pub cursor_ahead: bool,
}

/// A search match with its request/response partner.
#[derive(Debug)]
pub struct SearchHit<'a> {
    /// The matching packet.
    pub packet: &'a Packet,
    /// For a TX match: the next RX packet after it (within 256 packets), if
    /// any.
    pub reply: Option<&'a Packet>,
    /// For an RX match: the TX packet before it (within 256 packets), if any.
    pub request: Option<&'a Packet>,
}

/// One answer of search_packets, borrowing from the buffer.
#[derive(Debug)]
pub struct SearchOut<'a> {
    /// Matches, oldest first (the newest ones when more matched than fit).
    pub hits: Vec<SearchHit<'a>>,
    /// Matching packets in the window in all.
    pub total_matching: usize,
    /// Packets in the window (since) before the filters.
    pub in_window: usize,
}

/// The bytes a packet with a payload of `len` bytes counts against
/// [`RING_BYTES`].
pub fn packet_cost(len: usize) -> usize {
    len + PACKET_OVERHEAD
}

/// A byte count as people read it: `812 B`, `48.0 KiB`, `63.9 MiB`.
pub fn human_bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let x = n as f64;
    if x < KIB {
        format!("{n} B")
    } else if x < KIB * KIB {
        format!("{:.1} KiB", x / KIB)
    } else {
        format!("{:.1} MiB", x / (KIB * KIB))
    }
}

/// True when `p` lies beyond an `until` bound.
fn after(p: &Packet, until: &Since) -> bool {
    match *until {
        Since::Time(t) => p.ts > t,
        Since::AfterId(id) => p.id > id,
        Since::Last => false,
    }
}

/// The packet ring, the system-event log and named readers' positions, with the
/// running counts the metrics report.
#[derive(Debug)]
pub struct PacketLog {
    capacity: usize,
    /// Most bytes the packets may take, by [`packet_cost`].
    byte_limit: usize,
    packets: VecDeque<Packet>,
    /// What the buffered packets take now, by [`packet_cost`].
    bytes: usize,
    next_id: u64,
    evicted: u64,
    /// Of `evicted`, those pushed out for bytes rather than for the count.
    evicted_for_bytes: u64,
    events: VecDeque<Event>,
    next_event_id: u64,
    readers: BTreeMap<String, u64>,
    totals: [DirTotals; 2],
    rates: RateBuckets,
    imported: [DirTotals; 2],
    evicted_by_imports: u64,
}

impl Default for PacketLog {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl PacketLog {
    /// A buffer of `capacity` packets, clamped to 100..=1,000,000, and at
    /// most [`RING_BYTES`].
    pub fn new(capacity: usize) -> Self {
        Self::with_byte_limit(capacity, RING_BYTES)
    }

    /// A buffer of `capacity` packets (clamped as in [`PacketLog::new`])
    /// taking at most `byte_limit` bytes by [`packet_cost`], clamped to
    /// [`PACKET_OVERHEAD`]..=[`RING_BYTES`] so no caller can lift the
    /// memory bound.
    pub fn with_byte_limit(capacity: usize, byte_limit: usize) -> Self {
        let capacity = capacity.clamp(MIN_CAPACITY, MAX_CAPACITY);
        Self {
            capacity,
            byte_limit: byte_limit.clamp(PACKET_OVERHEAD, RING_BYTES),
            packets: VecDeque::with_capacity(capacity),
            bytes: 0,
            next_id: 1,
            evicted: 0,
            evicted_for_bytes: 0,
            events: VecDeque::new(),
            next_event_id: 1,
            readers: BTreeMap::new(),
            totals: Default::default(),
            rates: Default::default(),
            imported: Default::default(),
            evicted_by_imports: 0,
        }
    }

    /// Packets the ring holds at most, MIN_CAPACITY..=MAX_CAPACITY.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// Most bytes the packets may take (payload plus [`PACKET_OVERHEAD`]
    /// each); the oldest are evicted beyond it.
    pub fn byte_limit(&self) -> usize {
        self.byte_limit
    }
    /// Bytes the buffered packets take now, counted as for
    /// [`PacketLog::byte_limit`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// How full the ring is, in percent of whichever limit is nearer:
    /// packets or bytes.
    pub fn use_percent(&self) -> f64 {
        let by_count = self.packets.len() as f64 / self.capacity as f64;
        let by_bytes = self.bytes as f64 / self.byte_limit as f64;
        100.0 * by_count.max(by_bytes)
    }
    /// Packets buffered now.
    pub fn len(&self) -> usize {
        self.packets.len()
    }
    /// True before the first packet.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
    /// Packets evicted from the ring since the start (live and imported).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
    /// Of [`PacketLog::evicted`], the packets evicted to stay within the
    /// byte limit (the rest made room for the packet count).
    pub fn evicted_for_bytes(&self) -> u64 {
        self.evicted_for_bytes
    }
    /// Id of the oldest packet still buffered.
    pub fn oldest_id(&self) -> Option<u64> {
        self.packets.front().map(|p| p.id)
    }
    /// Id of the newest packet buffered.
    pub fn newest_id(&self) -> Option<u64> {
        self.packets.back().map(|p| p.id)
    }
    /// Every buffered packet, oldest first.
    pub fn packets(&self) -> impl DoubleEndedIterator<Item = &Packet> + ExactSizeIterator {
        self.packets.iter()
    }
    /// Kept system events, oldest first.
    pub fn events(&self) -> impl DoubleEndedIterator<Item = &Event> {
        self.events.iter()
    }
    /// System events recorded since the start (including dropped ones).
    pub fn events_total(&self) -> u64 {
        self.next_event_id - 1
    }
    /// Live packets and bytes in `dir` since the start (imports are separate).
    pub fn totals(&self, dir: Direction) -> DirTotals {
        self.totals[dir.index()]
    }
    /// Live packets per second in `dir` over the `secs` seconds before `now`.
    pub fn rate(&self, now: Micros, dir: Direction, secs: i64) -> f64 {
        self.rates.rate(now, dir, secs)
    }
    /// Named readers and the last packet id each was given, by name.
    pub fn readers(&self) -> impl Iterator<Item = (&str, u64)> {
        self.readers.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Appends a packet seen live at `ts` (arrival at `now`); returns its id.
    pub fn push(&mut self, dir: Direction, data: &[u8], ts: Micros, now: Micros) -> u64 {
        let t = &mut self.totals[dir.index()];
        t.packets += 1;
        t.bytes += data.len() as u64;
        self.rates.add(now, dir);
        self.append(dir, data.into(), ts, None).0
    }

    /// Appends an imported packet: buffered and counted as imported, not as
    /// live traffic (no rates, no link counters). Returns its id and the
    /// packets it evicted, oldest first: none, one for the packet count, or
    /// several small ones to make room for a large one.
    pub fn push_imported(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Micros,
        att: Att,
    ) -> (u64, Vec<Packet>) {
        let t = &mut self.imported[dir.index()];
        t.packets += 1;
        t.bytes += data.len() as u64;
        let (id, gone) = self.append(dir, data.into(), ts, Some(att));
        self.evicted_by_imports += gone.len() as u64;
        (id, gone)
    }

    /// Imported packets and bytes per direction since the start.
    pub fn imported(&self, dir: Direction) -> DirTotals {
        self.imported[dir.index()]
    }

    /// Packets evicted by imports (so an import can say what it pushed out).
    pub fn evicted_by_imports(&self) -> u64 {
        self.evicted_by_imports
    }

    /// The packet with this id, if still buffered.
    pub fn get(&self, id: u64) -> Option<&Packet> {
        let first = self.packets.front()?.id;
        self.packets.get(id.checked_sub(first)? as usize)
    }

    /// Buffers a packet, evicting the oldest first for the packet count,
    /// then for bytes until it fits. A packet larger than the whole byte
    /// limit would be kept alone; none is (a bridge message is at most
    /// 16 MiB, an imported value 64 KiB).
    fn append(
        &mut self,
        dir: Direction,
        data: Box<[u8]>,
        ts: Micros,
        att: Option<Att>,
    ) -> (u64, Vec<Packet>) {
        let mut gone = Vec::new();
        if self.packets.len() == self.capacity {
            gone.extend(self.pop_oldest());
        }
        let cost = packet_cost(data.len());
        while self.bytes + cost > self.byte_limit {
            let Some(p) = self.pop_oldest() else {
                break;
            };
            self.evicted_for_bytes += 1;
            gone.push(p);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.bytes += cost;
        self.packets.push_back(Packet {
            id,
            ts,
            dir,
            data,
            att,
        });
        (id, gone)
    }

    /// Evicts the oldest packet, keeping the byte count.
    fn pop_oldest(&mut self) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.bytes -= packet_cost(p.data.len());
        self.evicted += 1;
        Some(p)
    }

    /// Records a system event at `ts`, dropping the oldest beyond
    /// EVENT_CAPACITY; returns its id.
    pub fn push_event(&mut self, level: Level, message: impl Into<String>, ts: Micros) -> u64 {
        if self.events.len() == EVENT_CAPACITY {
            self.events.pop_front();
        }
        let id = self.next_event_id;
        self.next_event_id += 1;
        self.events.push_back(Event {
            id,
            ts,
            level,
            message: message.into(),
        });
        id
    }

    /// Ring index of the first packet with an id greater than `id`.
    fn index_after(&self, id: u64) -> usize {
        match self.packets.front() {
            None => 0,
            Some(first) => (id + 1)
                .saturating_sub(first.id)
                .min(self.packets.len() as u64) as usize,
        }
    }

    /// The reader's position (last id given), if it has read.
    pub fn reader_position(&self, reader: &str) -> Option<u64> {
        self.readers.get(reader).copied()
    }

    /// The attribute handles in the window, most packets first (at most
    /// `n`), for saying what a handle filter could have matched.
    pub fn handles_in(&self, since: &Since, reader: &str, n: usize) -> Vec<(u16, usize)> {
        let (start, floor, _) = self.window(since, reader);
        let mut counts: BTreeMap<u16, usize> = BTreeMap::new();
        for p in self.packets.range(start..) {
            if floor.is_some_and(|t| p.ts < t) {
                continue;
            }
            if let Some(a) = p.att {
                *counts.entry(a.handle).or_insert(0) += 1;
            }
        }
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// Resolves `since` to a ring start index and an optional time floor.
    fn window(&self, since: &Since, reader: &str) -> (usize, Option<Micros>, Option<u64>) {
        match *since {
            Since::Time(t) => (0, Some(t), None),
            Since::AfterId(id) => (self.index_after(id), None, Some(id)),
            Since::Last => {
                let id = self.readers.get(reader).copied().unwrap_or(0);
                (self.index_after(id), None, Some(id))
            }
        }
    }

    /// Runs a get_logs query and moves `q.reader`'s position to the answer's
    /// `next_since`.
    pub fn query(&mut self, q: &LogQuery<'_>) -> LogPage<'_> {
        let (start, floor, cursor) = self.window(&q.since, q.reader);
        let newest_id = self.newest_id().unwrap_or(self.next_id - 1);
        let limit = q.limit.max(1);

        let mut picked: VecDeque<usize> = VecDeque::with_capacity(limit.min(1024));
        let (mut total, mut bytes, mut full, mut in_window) = (0usize, 0usize, false, 0usize);
        for (i, p) in self.packets.range(start..).enumerate() {
            if floor.is_some_and(|t| p.ts < t) || q.until.as_ref().is_some_and(|u| after(p, u)) {
                continue;
            }
            in_window += 1;
            if !q.filter.matches(p) {
                continue;
            }
            total += 1;
            if q.newest {
                picked.push_back(start + i);
                bytes += p.data.len();
                while picked.len() > limit || (bytes > ANSWER_BYTES && picked.len() > 1) {
                    let dropped = picked.pop_front().expect("non-empty");
                    bytes -= self.packets[dropped].data.len();
                }
            } else if !full {
                if picked.len() < limit
                    && (picked.is_empty() || bytes + p.data.len() <= ANSWER_BYTES)
                {
                    picked.push_back(start + i);
                    bytes += p.data.len();
                } else {
                    full = true;
                }
            }
        }
        let truncated = total > picked.len();
        let next_since = match picked.back() {
            Some(&i) if truncated && !q.newest => self.packets[i].id,
            _ => match cursor {
                Some(c) if c > newest_id => newest_id,
                Some(c) => c.max(newest_id),
                None => newest_id,
            },
        };
        let evicted_unread = match (cursor, self.oldest_id()) {
            (Some(c), Some(old)) if c + 1 < old => old - c - 1,
            (Some(c), None) if c + 1 < self.next_id => self.next_id - 1 - c,
            _ => 0,
        };
        let cursor_ahead = cursor.is_some_and(|c| c > newest_id);

        // Events of the same period: from the window's start time on.
        let event_floor = floor.or_else(|| match cursor {
            Some(_) => self.packets.get(start).map(|p| p.ts).or(Some(Micros::MAX)),
            None => None,
        });
        let (events, events_left_out) = if q.include_events {
            let all: Vec<&Event> = self
                .events
                .iter()
                .filter(|e| event_floor.is_none_or(|t| e.ts >= t))
                .collect();
            let skip = all.len().saturating_sub(20);
            (all[skip..].to_vec(), skip)
        } else {
            (Vec::new(), 0)
        };

        if self.readers.len() >= MAX_READERS && !self.readers.contains_key(q.reader) {
            self.readers.pop_first();
        }
        self.readers.insert(q.reader.to_string(), next_since);
        let entries = picked.iter().map(|&i| &self.packets[i]).collect();
        LogPage {
            entries,
            total_matching: total,
            in_window,
            truncated,
            next_since,
            events,
            events_left_out,
            evicted_unread,
            cursor_ahead,
        }
    }

    /// Finds packets containing `pattern`, newest `limit` kept, returned
    /// oldest first, each with its reply (TX) or request (RX).
    pub fn search(
        &self,
        filter: &Filter<'_>,
        since: Option<&Since>,
        limit: usize,
    ) -> SearchOut<'_> {
        let (start, floor, _) = match since {
            Some(s) => self.window(s, ""),
            None => (0, None, None),
        };
        let limit = limit.max(1);
        let mut picked = Vec::with_capacity(limit.min(1024));
        let (mut total, mut bytes, mut in_window) = (0usize, 0usize, 0usize);
        for (i, p) in self.packets.range(start..).enumerate().rev() {
            if floor.is_some_and(|t| p.ts < t) {
                continue;
            }
            in_window += 1;
            if !filter.matches(p) {
                continue;
            }
            total += 1;
            // Each match shows its partner too: budget about twice its size.
            let cost = 2 * p.data.len();
            if picked.len() < limit && (picked.is_empty() || bytes + cost <= ANSWER_BYTES) {
                picked.push(start + i);
                bytes += cost;
            }
        }
        picked.reverse();
        let hits = picked
            .into_iter()
            .map(|i| {
                let packet = &self.packets[i];
                let (reply, request) = match packet.dir {
                    Direction::Tx => (self.next_rx(i), None),
                    Direction::Rx => (None, self.prev_tx(i)),
                };
                SearchHit {
                    packet,
                    reply,
                    request,
                }
            })
            .collect();
        SearchOut {
            hits,
            total_matching: total,
            in_window,
        }
    }

    /// Partners are on the same connection when the capture says which.
    fn same_link(a: &Packet, b: &Packet) -> bool {
        a.att.map(|x| x.conn) == b.att.map(|x| x.conn)
    }

    fn next_rx(&self, i: usize) -> Option<&Packet> {
        let me = &self.packets[i];
        self.packets
            .range(i + 1..)
            .take(PARTNER_WINDOW)
            .find(|p| p.dir == Direction::Rx && Self::same_link(me, p))
    }

    fn prev_tx(&self, i: usize) -> Option<&Packet> {
        let me = &self.packets[i];
        self.packets
            .range(..i)
            .rev()
            .take(PARTNER_WINDOW)
            .find(|p| p.dir == Direction::Tx && Self::same_link(me, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    fn filled(n: u64, cap: usize) -> PacketLog {
        let mut log = PacketLog::new(cap);
        for i in 0..n {
            let dir = if i % 2 == 0 { Tx } else { Rx };
            log.push(dir, &(i as u32).to_be_bytes(), i as i64 * 1000, 0);
        }
        log
    }

    fn q(since: Since) -> LogQuery<'static> {
        LogQuery {
            since,
            filter: Filter::default(),
            until: None,
            limit: 100,
            reader: "default",
            newest: false,
            include_events: true,
        }
    }

    fn pat_only(p: &Pattern) -> Filter<'_> {
        Filter {
            pattern: Some(p),
            ..Filter::default()
        }
    }

    fn att(opcode: u8, handle: u16, conn: u16) -> Att {
        Att {
            opcode,
            handle,
            conn,
        }
    }

    #[test]
    fn imported_packets_keep_att_fields_and_filter_by_them() {
        let mut log = PacketLog::new(100);
        log.push_imported(Tx, &[1], 10, att(0x52, 0x12, 0x40));
        log.push_imported(Rx, &[2], 11, att(0x1B, 0x15, 0x40));
        log.push_imported(Rx, &[3], 12, att(0x1B, 0x15, 0x41));
        log.push(Rx, &[4], 13, 13); // live: no ATT fields
        let ids = |log: &mut PacketLog, f: Filter<'static>| {
            let page = log.query(&LogQuery {
                filter: f,
                ..q(Since::AfterId(0))
            });
            let v: Vec<u64> = page.entries.iter().map(|p| p.id).collect();
            (v, page.in_window)
        };
        let by_handle = Filter {
            handle: Some(0x15),
            ..Filter::default()
        };
        assert_eq!(ids(&mut log, by_handle), (vec![2, 3], 4));
        let by_conn = Filter {
            conn: Some(0x40),
            ..by_handle
        };
        assert_eq!(ids(&mut log, by_conn).0, [2]);
        let by_op = Filter {
            opcode: Some(0x52),
            ..Filter::default()
        };
        assert_eq!(ids(&mut log, by_op).0, [1]);
        assert_eq!(log.get(2).and_then(|p| p.att), Some(att(0x1B, 0x15, 0x40)));
        assert!(log.get(4).unwrap().att.is_none() && log.get(9).is_none());
        // Search by handle alone, and imports counted apart from live traffic.
        let out = log.search(&by_handle, None, 10);
        assert_eq!(out.total_matching, 2);
        assert_eq!(log.imported(Rx).packets, 2);
        assert_eq!(log.totals(Rx).packets, 1);
        assert_eq!(
            log.handles_in(&Since::AfterId(0), "", 5),
            [(0x15, 2), (0x12, 1)]
        );
    }

    #[test]
    fn until_bounds_the_window_by_time_or_id() {
        let mut log = filled(10, 100); // ids 1..=10 at 0, 1000, … µs
        let ids = |log: &mut PacketLog, until| {
            let page = log.query(&LogQuery {
                until: Some(until),
                ..q(Since::AfterId(2))
            });
            page.entries.iter().map(|p| p.id).collect::<Vec<_>>()
        };
        assert_eq!(ids(&mut log, Since::AfterId(5)), [3, 4, 5]);
        assert_eq!(ids(&mut log, Since::Time(3_000)), [3, 4]);
        assert_eq!(
            ids(&mut log, Since::Time(3_001)),
            [3, 4],
            "microseconds count"
        );
        assert!(ids(&mut log, Since::Time(-1)).is_empty());
    }

    #[test]
    fn imports_report_what_they_evict() {
        let mut log = PacketLog::new(100);
        for i in 0..100 {
            log.push(Tx, &[i], 0, 0);
        }
        let (id, gone) = log.push_imported(Rx, &[7], 5, att(0x1B, 1, 1));
        assert_eq!(
            (id, gone.iter().map(|p| p.id).collect::<Vec<_>>()),
            (101, vec![1])
        );
        assert_eq!((log.evicted(), log.evicted_by_imports()), (1, 1));
    }

    /// Hardening item 4: the ring was bounded in packets only, so 10,000
    /// imported 64 KB notifications took 640 MB, over the plugin's 512 MiB
    /// memory cap. It is bounded in bytes too, evicting the oldest first.
    #[test]
    fn ring_evicts_by_bytes_and_stays_within_the_byte_limit() {
        let limit = 10 * packet_cost(1000);
        let mut log = PacketLog::with_byte_limit(MIN_CAPACITY, limit);
        assert_eq!(log.byte_limit(), limit);
        for i in 0..25u64 {
            log.push(Rx, &[i as u8; 1000], i as i64, 0);
            assert!(log.bytes() <= limit, "{} > {limit}", log.bytes());
        }
        assert_eq!(log.len(), 10);
        assert_eq!((log.oldest_id(), log.newest_id()), (Some(16), Some(25)));
        assert_eq!(log.bytes(), limit);
        assert_eq!((log.evicted(), log.evicted_for_bytes()), (15, 15));
        assert_eq!(log.use_percent(), 100.0);
        // A large packet evicts as many old ones as it needs, oldest first,
        // and an import is told which.
        let (id, gone) = log.push_imported(Tx, &[0xAB; 4500], 99, att(0x52, 1, 1));
        let gone: Vec<u64> = gone.iter().map(|p| p.id).collect();
        assert_eq!((id, gone), (26, vec![16, 17, 18, 19, 20]));
        assert_eq!(log.bytes(), 5 * packet_cost(1000) + packet_cost(4500));
        assert_eq!(log.evicted_by_imports(), 5);
        // Ids stay contiguous, so cursors keep working.
        for (k, p) in log.packets().enumerate() {
            assert_eq!(p.id, 21 + k as u64);
        }
        // Tiny packets push the six large ones out for bytes, then the
        // packet count binds, and the byte total follows what is evicted.
        for _ in 0..300 {
            log.push(Tx, &[1], 0, 0);
            assert!(log.bytes() <= limit);
        }
        assert_eq!(log.len(), MIN_CAPACITY);
        assert_eq!(log.bytes(), MIN_CAPACITY * packet_cost(1));
        assert_eq!(log.evicted_for_bytes(), 26);
        assert_eq!(log.evicted(), 326 - MIN_CAPACITY as u64);
        // No caller can lift the memory bound.
        assert_eq!(
            PacketLog::with_byte_limit(100, usize::MAX).byte_limit(),
            RING_BYTES
        );
    }

    /// The default ring fed 64 KB values (the captures of the security
    /// review) holds at most RING_BYTES of them, not 10,000.
    #[test]
    fn the_default_ring_of_64_kb_values_stays_within_ring_bytes() {
        let mut log = PacketLog::default();
        let value = vec![0x5A; 65_000];
        for i in 0..2_000 {
            log.push_imported(Rx, &value, i, att(0x1B, 0x15, 0x40));
        }
        let held: usize = log.packets().map(|p| packet_cost(p.data.len())).sum();
        assert_eq!(held, log.bytes());
        assert!(held <= RING_BYTES, "{held} bytes held");
        assert_eq!(log.len(), RING_BYTES / packet_cost(65_000));
        assert_eq!(log.newest_id(), Some(2_000));
        assert!(log.use_percent() > 99.0);
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(48 * 1024), "48.0 KiB");
        assert_eq!(human_bytes(RING_BYTES), "64.0 MiB");
    }

    #[test]
    fn replies_are_looked_for_on_the_same_connection() {
        let mut log = PacketLog::new(100);
        log.push_imported(Tx, &[0xA7], 1, att(0x52, 1, 0x40));
        log.push_imported(Rx, &[0x01], 2, att(0x1B, 2, 0x41));
        log.push_imported(Rx, &[0x02], 3, att(0x1B, 2, 0x40));
        let pat = Pattern::parse("A7").unwrap();
        let out = log.search(&pat_only(&pat), None, 10);
        assert_eq!(out.hits[0].reply.map(|p| p.id), Some(3));
    }

    #[test]
    fn keeps_exactly_capacity_with_contiguous_ids() {
        let log = filled(25_000, DEFAULT_CAPACITY);
        assert_eq!(log.len(), 10_000);
        assert_eq!(log.oldest_id(), Some(15_001));
        assert_eq!(log.newest_id(), Some(25_000));
        assert_eq!(log.evicted(), 15_000);
        for (k, p) in log.packets().enumerate() {
            assert_eq!(p.id, 15_001 + k as u64);
        }
        assert_eq!(PacketLog::new(5).capacity(), MIN_CAPACITY);
    }

    #[test]
    fn rates_average_over_observed_seconds() {
        let mut log = PacketLog::new(100);
        let t = 1_000_000_000_000;
        for i in 0..30 {
            log.push(Tx, &[1], t, t + i * 100_000); // 10 per second for 3 s
        }
        let now = t + 2_900_000;
        assert_eq!(log.rate(now, Tx, 10), 10.0);
        assert_eq!(log.rate(now, Rx, 10), 0.0);
        assert_eq!(log.rate(now + 20_000_000, Tx, 10), 0.0);
    }

    #[test]
    fn events_are_not_packets() {
        let mut log = PacketLog::new(100);
        log.push_event(Level::Info, "BLE connected", 0);
        log.push(Tx, &[1], 1, 0);
        log.push_event(Level::Error, "oops", 2);
        assert_eq!(log.len(), 1);
        assert_eq!(log.newest_id(), Some(1));
        assert_eq!(log.totals(Rx).packets, 0);
        assert_eq!(log.totals(Tx).packets, 1);
        assert_eq!(log.events_total(), 2);
    }

    #[test]
    fn after_id_pages_without_gaps_or_repeats() {
        let mut log = filled(250, 1000);
        let mut seen = Vec::new();
        let mut since = Since::AfterId(0);
        loop {
            let page = log.query(&q(since.clone()));
            seen.extend(page.entries.iter().map(|p| p.id));
            let (trunc, next) = (page.truncated, page.next_since);
            since = Since::AfterId(next);
            if !trunc {
                break;
            }
        }
        assert_eq!(seen, (1..=250).collect::<Vec<_>>());
        let page = log.query(&q(since));
        assert!(page.entries.is_empty() && !page.truncated);
        assert_eq!(page.next_since, 250);
    }

    #[test]
    fn last_is_per_reader_and_empty_when_nothing_new() {
        let mut log = filled(150, 1000);
        let a = LogQuery {
            reader: "a",
            ..q(Since::Last)
        };
        let page = log.query(&a);
        assert_eq!(page.entries.first().map(|p| p.id), Some(1));
        assert_eq!(page.entries.len(), 100);
        assert!(page.truncated);
        assert_eq!(log.query(&a).entries.len(), 50);
        assert!(
            log.query(&a).entries.is_empty(),
            "no repeat of the last entry"
        );
        // Reader b is independent and starts at the beginning.
        let b = LogQuery {
            reader: "b",
            limit: 1000,
            ..q(Since::Last)
        };
        assert_eq!(log.query(&b).entries.len(), 150);
        log.push(Rx, &[9], 0, 0);
        let page = log.query(&a);
        assert_eq!(page.entries.iter().map(|p| p.id).collect::<Vec<_>>(), [151]);
        assert_eq!(log.readers().collect::<Vec<_>>(), [("a", 151), ("b", 150)]);
    }

    #[test]
    fn time_window_with_nothing_newer_is_empty() {
        let mut log = filled(10, 100);
        let page = log.query(&q(Since::Time(1_000_000)));
        assert!(page.entries.is_empty());
        assert_eq!(page.total_matching, 0);
        let page = log.query(&q(Since::Time(5_000)));
        assert_eq!(page.entries.first().map(|p| p.id), Some(6));
    }

    #[test]
    fn filters_apply_before_the_limit_and_truncated_is_honest() {
        let mut log = filled(300, 1000);
        let query = LogQuery {
            filter: Filter {
                direction: Some(Rx),
                ..Filter::default()
            },
            limit: 100,
            ..q(Since::AfterId(0))
        };
        let page = log.query(&query);
        assert_eq!(page.total_matching, 150);
        assert_eq!(page.entries.len(), 100);
        assert!(page.entries.iter().all(|p| p.dir == Rx));
        assert!(page.truncated);
        let query = LogQuery {
            limit: 150,
            ..query
        };
        assert!(!log.query(&query).truncated);
        let newest = LogQuery {
            newest: true,
            limit: 3,
            ..q(Since::AfterId(0))
        };
        let page = log.query(&newest);
        assert_eq!(
            page.entries.iter().map(|p| p.id).collect::<Vec<_>>(),
            [298, 299, 300]
        );
        assert_eq!(page.next_since, 300);
    }

    #[test]
    fn answers_stay_within_the_byte_budget() {
        let mut log = PacketLog::new(1000);
        for _ in 0..100 {
            log.push(Rx, &[0xAB; 500], 0, 0);
        }
        let page = log.query(&LogQuery {
            limit: 1000,
            ..q(Since::AfterId(0))
        });
        let n = page.entries.len();
        assert!(n * 500 <= ANSWER_BYTES && n > 10);
        assert!(page.truncated);
        assert_eq!(
            page.next_since, n as u64,
            "continue after the last one given"
        );
        let page = log.query(&LogQuery {
            limit: 1000,
            newest: true,
            ..q(Since::AfterId(0))
        });
        assert_eq!(page.entries.last().map(|p| p.id), Some(100));
        assert_eq!(page.entries.len(), n);
        let pat = Pattern::parse("AB").unwrap();
        let out = log.search(&pat_only(&pat), None, 1000);
        assert!(out.hits.len() * 1000 <= ANSWER_BYTES);
        assert_eq!(out.total_matching, 100);
    }

    #[test]
    fn reports_evicted_unread_and_cursor_ahead() {
        let mut log = filled(300, 100);
        let page = log.query(&q(Since::AfterId(50)));
        assert_eq!(page.evicted_unread, 150);
        assert_eq!(page.entries[0].id, 201);
        let page = log.query(&q(Since::AfterId(999)));
        assert!(page.cursor_ahead && page.entries.is_empty());
        assert_eq!(page.next_since, 300);
    }

    #[test]
    fn search_correlates_replies_and_requests() {
        let mut log = PacketLog::new(100);
        log.push(Tx, &[0xA7, 0xB3, 0x01], 1_000, 0);
        log.push(Rx, &[0x99], 2_000, 0);
        log.push(Rx, &[0xB3, 0xA7, 0x01, 0x55], 5_000, 0);
        log.push(Tx, &[0xA7, 0xB3, 0x02], 6_000, 0);
        let pat = Pattern::parse("A7 B3 ??").unwrap();
        let out = log.search(&pat_only(&pat), None, 10);
        assert_eq!(out.total_matching, 2);
        assert_eq!(out.hits[0].packet.id, 1);
        assert_eq!(out.hits[0].reply.map(|p| p.id), Some(2));
        assert!(out.hits[1].reply.is_none());
        let pat = Pattern::parse("B3A7").unwrap();
        let out = log.search(
            &Filter {
                direction: Some(Rx),
                ..pat_only(&pat)
            },
            None,
            10,
        );
        assert_eq!(out.hits[0].request.map(|p| p.id), Some(1));
        // Newest matches are kept when limited; returned oldest first.
        let pat = Pattern::parse("A7").unwrap();
        let out = log.search(&pat_only(&pat), None, 2);
        assert_eq!(out.total_matching, 3);
        assert_eq!(
            out.hits.iter().map(|h| h.packet.id).collect::<Vec<_>>(),
            [3, 4]
        );
    }
}
