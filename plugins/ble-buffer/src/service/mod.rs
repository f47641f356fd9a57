//! The plugin's state and the tools' logic, free of WIT types: the packet
//! log, the bridge feed, and the BLE link state read from the bridge.

use crate::bridge::{self, BridgeMsg, ScannedDevice};
use crate::btsnoop;
use crate::buffer::{
    Att, DEFAULT_CAPACITY, Direction, Filter, Level, LogPage, LogQuery, PacketLog, SearchOut,
    human_bytes,
};
use crate::feed::{self, Budget, Feed, FeedConfig, FeedEvent, LinkState};
use crate::hex::Pattern;
use crate::since::{Since, parse_since};
use crate::time::{Micros, format_iso, now_us};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

mod import;
pub use import::{HandleCount, ImportMetrics, ImportRecord, ImportSummary, content_hash};
pub use plugin_kit::ToolError;

/// Environment variable with the bridge's WebSocket URL (the `--bridge-url`
/// setting).
pub const URL_VAR: &str = "BLE_BRIDGE_URL";
/// Environment variable with the buffer size in packets (the
/// `--ble-buffer-size` setting).
pub const SIZE_VAR: &str = "BLE_BUFFER_SIZE";
/// Packets get_logs and search_packets return when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 100;
/// Most packets one answer returns.
pub const MAX_LIMIT: u32 = 1000;
/// Shortest scan accepted, in milliseconds: a shorter one rarely hears an
/// advertisement.
pub const SCAN_MIN_MS: u32 = 1000;
/// Below the host's default 30 s call deadline, so a scan never traps.
pub const SCAN_MAX_MS: u32 = 25_000;
/// Warnings kept for get_metrics.
const MAX_RECENT_WARNINGS: usize = 10;
/// Per-handle rows in an import's answer.
pub const MAX_HANDLE_ROWS: usize = 64;
/// What `since` means when not given, for live traffic.
pub const DEFAULT_SINCE: &str = "30s";
/// Devices remembered from scans and connections (for completing device
/// names); the oldest are forgotten, so repeated scans stay bounded.
pub const MAX_SEEN_DEVICES: usize = 64;

/// The BLE link as the bridge reports it.
#[derive(Debug, Default, Clone)]
pub struct BleState {
    /// True while the bridge reports (or traffic shows) a BLE device connected.
    pub connected: bool,
    /// The connected (or last connected) device's name.
    pub device: Option<String>,
    /// The device a connection is being made to, while one is under way.
    pub connecting_to: Option<String>,
    /// When the BLE connection was made.
    pub connected_at: Option<Micros>,
    /// When the last packet was seen.
    pub last_activity: Option<Micros>,
}

/// The plugin's whole state: the packet buffer, the feed from the bridge and
/// what is known of the BLE link. The component holds one; the tests drive one
/// directly.
pub struct Service {
    /// Every packet and system event buffered.
    pub log: PacketLog,
    /// The WebSocket link to the bridge.
    pub feed: Feed,
    /// The BLE link as the bridge last reported it.
    pub ble: BleState,
    started: Instant,
    parse_errors: u64,
    scratch: Vec<FeedEvent>,
    imports: VecDeque<ImportRecord>,
    imports_total: u32,
    recent_warnings: VecDeque<String>,
    /// (id, name) of devices seen in scans and connections, newest last.
    seen: VecDeque<(String, String)>,
}

/// get_logs arguments in domain form.
#[derive(Debug, Default, Clone)]
pub struct LogsArgs {
    /// Where to start: a duration back from now, an ISO time, a packet id,
    /// "all" or "last" (see [`parse_since`]); none means the default window.
    pub since: Option<String>,
    /// "TX", "RX" or a hex pattern the packet must contain.
    pub filter: Option<String>,
    /// Only packets in this direction.
    pub direction: Option<Direction>,
    /// Most packets returned, 1..=[`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]).
    pub limit: Option<u32>,
    /// Reader name for since="last" (default "default").
    pub reader: Option<String>,
    /// Return the newest packets instead of the oldest when more match than
    /// fit.
    pub newest: Option<bool>,
    /// Include system events of the window (default true).
    pub include_events: Option<bool>,
    /// Only packets on this ATT attribute handle (imported packets).
    pub handle: Option<u16>,
    /// Only packets on this HCI connection handle (imported packets).
    pub connection: Option<u16>,
    /// Only packets with this ATT opcode, by name or number.
    pub opcode: Option<String>,
    /// Only packets up to this time or id (inclusive).
    pub until: Option<String>,
}

/// search_packets arguments in domain form.
#[derive(Debug, Default, Clone)]
pub struct SearchArgs {
    /// Hex bytes to find (`??` = any byte); required unless `handle` is given.
    pub hex_pattern: Option<String>,
    /// Most matches returned, 1..=[`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]);
    /// the newest are kept.
    pub limit: Option<u32>,
    /// Only packets in this direction.
    pub direction: Option<Direction>,
    /// Only packets since this point (as get_logs' since, except "last").
    pub since: Option<String>,
    /// Only packets on this ATT attribute handle.
    pub handle: Option<u16>,
    /// Only packets on this HCI connection handle.
    pub connection: Option<u16>,
    /// Only packets with this ATT opcode, by name (write-request, notification,
    /// …) or number.
    pub opcode: Option<String>,
}

/// A get_logs answer with what the page alone cannot say.
#[derive(Debug)]
pub struct Logs<'a> {
    /// The packets and counts, borrowing from the buffer.
    pub page: LogPage<'a>,
    /// Why the answer is empty, what was left out, what since meant.
    pub notes: Vec<String>,
}

/// A search_packets answer.
#[derive(Debug)]
pub struct Found<'a> {
    /// The pattern as understood (clipped when long), or empty when the
    /// search is by handle alone.
    pub pattern: String,
    /// The matches and counts, borrowing from the buffer.
    pub out: SearchOut<'a>,
    /// What was left out or how the search was narrowed, one sentence each.
    pub notes: Vec<String>,
}

fn check_limit(limit: Option<u32>) -> Result<usize, ToolError> {
    match limit.unwrap_or(DEFAULT_LIMIT) {
        l @ 1..=MAX_LIMIT => Ok(l as usize),
        l => Err(ToolError::new(
            "BAD_LIMIT",
            format!(
                "limit {l} is out of range: use 1..{MAX_LIMIT} (default {DEFAULT_LIMIT}) and page with next_since"
            ),
        )),
    }
}

fn pattern(s: &str) -> Result<Pattern, ToolError> {
    Pattern::parse(s).map_err(|e| ToolError::new("BAD_PATTERN", e.to_string()))
}

impl Service {
    /// A service with a buffer of `capacity` packets (clamped to
    /// MIN_CAPACITY..=MAX_CAPACITY), fed from the bridge `cfg` names.
    pub fn new(cfg: FeedConfig, capacity: usize) -> Self {
        Self {
            log: PacketLog::new(capacity),
            feed: Feed::new(cfg),
            ble: BleState::default(),
            started: Instant::now(),
            parse_errors: 0,
            scratch: Vec::new(),
            imports: VecDeque::new(),
            imports_total: 0,
            recent_warnings: VecDeque::new(),
            seen: VecDeque::new(),
        }
    }

    /// From the plugin's settings (environment variables).
    pub fn from_env() -> Self {
        let url = std::env::var(URL_VAR)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| feed::DEFAULT_URL.to_string());
        let capacity = std::env::var(SIZE_VAR)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(DEFAULT_CAPACITY);
        Self::new(FeedConfig::new(url), capacity)
    }

    /// Time since the plugin started.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
    /// Bridge messages that could not be parsed, since the start.
    pub fn parse_errors(&self) -> u64 {
        self.parse_errors
    }

    /// Devices seen in scans and connections as (id, name), newest last;
    /// either may be empty (a connection names the device only).
    pub fn seen_devices(&self) -> impl DoubleEndedIterator<Item = (&str, &str)> {
        self.seen
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str()))
    }

    /// Remembers a device, moving it to the newest place if known.
    fn remember(&mut self, id: &str, name: &str) {
        if id.is_empty() && name.is_empty() {
            return;
        }
        // A connection names the device only: it matches a scanned entry
        // by name, and keeps that entry's address.
        let known = self
            .seen
            .iter()
            .position(|(i, n)| if id.is_empty() { n == name } else { i == id });
        let mut entry = (id.to_string(), name.to_string());
        if let Some(at) = known {
            let (old_id, old_name) = self.seen.remove(at).expect("position is in range");
            if entry.0.is_empty() {
                entry.0 = old_id;
            }
            if entry.1.is_empty() {
                entry.1 = old_name;
            }
        } else if self.seen.len() >= MAX_SEEN_DEVICES {
            self.seen.pop_front();
        }
        self.seen.push_back(entry);
    }

    /// Drains the bridge within `budget`; returns the packets added.
    pub fn pump(&mut self, budget: Budget) -> usize {
        let mut events = std::mem::take(&mut self.scratch);
        self.feed.pump(budget, &mut events);
        let now = now_us();
        let before = self.log.newest_id();
        for ev in events.drain(..) {
            self.handle(ev, now);
        }
        self.scratch = events;
        match (before, self.log.newest_id()) {
            (b, Some(n)) => (n - b.unwrap_or(0)) as usize,
            _ => 0,
        }
    }

    fn handle(&mut self, ev: FeedEvent, now: Micros) {
        match ev {
            FeedEvent::Up => {
                let msg = format!(
                    "connected to the bridge at {} ({})",
                    self.feed.url(),
                    self.feed.mode().label()
                );
                self.log.push_event(Level::Info, msg, now);
            }
            FeedEvent::Down(why) => {
                self.log.push_event(
                    Level::Warn,
                    format!("bridge connection lost: {why}; reconnecting"),
                    now,
                );
                if self.ble.connected {
                    self.ble.connected = false;
                    self.log.push_event(
                        Level::Warn,
                        "BLE state unknown while the bridge is unreachable; treated as disconnected",
                        now,
                    );
                }
            }
            FeedEvent::Binary(data) => self.packet(Direction::Rx, &data, None, now),
            FeedEvent::Text(text) => match bridge::parse_message(&text) {
                Ok(msg) => self.message(msg, now),
                Err(e) => {
                    self.parse_errors += 1;
                    if self.parse_errors == 1 {
                        self.log.push_event(
                            Level::Warn,
                            format!("unparsable bridge message ({}): {:.120}", e.0, text),
                            now,
                        );
                    }
                }
            },
        }
    }

    fn packet(&mut self, dir: Direction, data: &[u8], ts: Option<Micros>, now: Micros) {
        let ts = ts.unwrap_or(now);
        if !self.ble.connected {
            // Joining a log stream mid-session: traffic proves a connection.
            self.ble.connected = true;
            self.ble.connected_at.get_or_insert(ts);
            self.log.push_event(
                Level::Info,
                "BLE traffic seen: the bridge has a device connected",
                ts,
            );
        }
        self.ble.last_activity = Some(ts);
        self.log.push(dir, data, ts, now);
    }

    fn message(&mut self, msg: BridgeMsg, now: Micros) {
        match msg {
            BridgeMsg::Packet { dir, data, ts } => self.packet(dir, &data, ts, now),
            BridgeMsg::BleConnected { device, ts } => {
                let ts = ts.unwrap_or(now);
                let device = device.or_else(|| self.ble.connecting_to.take());
                let name = device.clone().unwrap_or_else(|| "a device".into());
                if let Some(d) = &device {
                    self.remember("", d);
                }
                self.ble = BleState {
                    connected: true,
                    device: device.or(self.ble.device.take()),
                    connecting_to: None,
                    connected_at: Some(ts),
                    last_activity: self.ble.last_activity,
                };
                self.log
                    .push_event(Level::Info, format!("BLE connected to {name}"), ts);
            }
            BridgeMsg::BleDisconnected { ts, reason } => {
                if self.ble.connected {
                    self.ble.connected = false;
                    self.log.push_event(
                        Level::Info,
                        format!("BLE disconnected ({reason})"),
                        ts.unwrap_or(now),
                    );
                }
            }
            BridgeMsg::Connecting { device } => self.ble.connecting_to = Some(device),
            BridgeMsg::Problem { level, message, ts } => {
                self.log.push_event(level, message, ts.unwrap_or(now));
            }
            BridgeMsg::ScanResult(_) | BridgeMsg::Ignored => {}
        }
    }

    /// get_logs: checks the arguments, runs the query and explains what was
    /// left out; moves the reader's position.
    pub fn get_logs(&mut self, a: &LogsArgs) -> Result<Logs<'_>, ToolError> {
        let now = now_us();
        let reader = a.reader.as_deref().unwrap_or("default");
        if reader.is_empty() || reader.len() > 64 {
            return Err(ToolError::new(
                "BAD_READER",
                "reader must be 1..64 characters",
            ));
        }
        let mut notes = Vec::new();
        let given = a.since.as_deref();
        let since = match given {
            Some(s) => parse_since(s, now).map_err(bad_since)?,
            None => match self.default_since(reader) {
                Some((since, note)) => {
                    notes.push(note);
                    since
                }
                None => parse_since(DEFAULT_SINCE, now).map_err(bad_since)?,
            },
        };
        let until = match a.until.as_deref() {
            None => None,
            Some(u) => match parse_since(u, now).map_err(|e| {
                ToolError::new("BAD_UNTIL", e.to_string().replacen("since=", "until=", 1))
            })? {
                Since::Last => {
                    return Err(ToolError::new(
                        "BAD_UNTIL",
                        "until=\"last\" has no meaning; give an ISO timestamp, a duration ago (\"5m\") or a packet id (inclusive)",
                    ));
                }
                u => Some(u),
            },
        };
        let limit = check_limit(a.limit)?;
        let (mut direction, mut pat) = (a.direction, None);
        if let Some(f) = a.filter.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
            match f.to_ascii_uppercase().as_str() {
                "TX" => direction = Some(Direction::Tx),
                "RX" => direction = Some(Direction::Rx),
                _ => pat = Some(pattern(f)?),
            }
            if a.direction.is_some_and(|d| Some(d) != direction) && pat.is_none() {
                return Err(ToolError::new(
                    "BAD_FILTER",
                    format!("filter {f:?} contradicts direction; give one of them"),
                ));
            }
        }
        let filter = Filter {
            direction,
            pattern: pat.as_ref(),
            handle: a.handle,
            conn: a.connection,
            opcode: opcode_arg(a.opcode.as_deref())?,
        };
        // What an empty answer needs to say, gathered before the query
        // (which holds the log until the answer is built).
        let ctx = self.empty_context(&since, reader, &filter, given, now);
        let page = self.log.query(&LogQuery {
            since: since.clone(),
            until,
            filter,
            limit,
            reader,
            newest: a.newest.unwrap_or(false),
            include_events: a.include_events.unwrap_or(true),
        });
        if page.truncated {
            let left = page.total_matching - page.entries.len();
            notes.push(if a.newest == Some(true) {
                format!("{left} older matching packets left out; narrow since or raise limit")
            } else {
                format!(
                    "{left} more matching packets; call again with since=\"{}\"",
                    page.next_since
                )
            });
        }
        if page.evicted_unread > 0 {
            notes.push(format!(
                "{} packets after your cursor were evicted from the buffer before being read",
                page.evicted_unread
            ));
        }
        if page.cursor_ahead {
            notes.push("since is beyond the newest packet id (the plugin restarted?); continuing from the newest".into());
        }
        if page.events_left_out > 0 {
            notes.push(format!(
                "{} older system events left out",
                page.events_left_out
            ));
        }
        if page.entries.is_empty() && !page.cursor_ahead {
            notes.push(ctx.why_empty(page.in_window));
        }
        Ok(Logs { page, notes })
    }

    /// The window a get_logs without `since` reads: while the newest
    /// packets come from an import this reader has not read to its end,
    /// that import from where the reader stopped (a capture's packets are
    /// timed when they were captured, so "the last 30 s" misses them).
    fn default_since(&self, reader: &str) -> Option<(Since, String)> {
        let newest = self.log.newest_id()?;
        let imp = self
            .imports
            .iter()
            .rev()
            .find(|r| r.last_id == Some(newest))?;
        let pos = self.log.reader_position(reader).unwrap_or(0);
        let first = imp.first_id?;
        if pos >= newest {
            return None;
        }
        let start = pos.max(first - 1);
        let from = if start >= first {
            format!(", continuing after id {start} where reader {reader:?} stopped")
        } else {
            String::new()
        };
        Some((
            Since::AfterId(start),
            format!(
                "since not given: reading the packets imported from {} ({}, captured {} to {}){from}; the usual default (the last {DEFAULT_SINCE}) counts from now and would miss a capture. Pass since=\"{DEFAULT_SINCE}\" for live traffic only",
                imp.path,
                imp.ids(),
                imp.capture_start.map_or("?".into(), format_iso),
                imp.capture_end.map_or("?".into(), format_iso),
            ),
        ))
    }

    /// Facts for explaining an empty answer.
    fn empty_context(
        &self,
        since: &Since,
        reader: &str,
        filter: &Filter<'_>,
        given: Option<&str>,
        now: Micros,
    ) -> EmptyContext {
        let newest = self.log.newest_id().and_then(|id| self.log.get(id));
        let newest_desc = newest.map(|p| {
            let from = self
                .imports
                .iter()
                .rev()
                .find(|r| {
                    r.first_id.is_some_and(|f| f <= p.id) && r.last_id.is_some_and(|l| l >= p.id)
                })
                .map_or_else(
                    || " (live)".to_string(),
                    |r| format!(", imported from {}", r.path),
                );
            format!(
                "the newest packet, id {}, is from {}{from}",
                p.id,
                format_iso(p.ts)
            )
        });
        let cursor = match since {
            Since::AfterId(id) => Some(*id),
            Since::Last => Some(self.log.reader_position(reader).unwrap_or(0)),
            Since::Time(_) => None,
        };
        let suggest_time = newest.map(|p| format_iso(p.ts - 30_000_000));
        let any_att = self.log.packets().any(|p| p.att.is_some());
        EmptyContext {
            buffer_empty: self.log.is_empty(),
            evicted: self.log.evicted(),
            bridge: format!(
                "the bridge link is {}{}",
                self.link_state().label(),
                self.feed.last_error().map_or(String::new(), |e| format!(
                    " ({})",
                    plugin_kit::text::clip(e)
                ))
            ),
            newest_id: self.log.newest_id(),
            newest_desc,
            suggest_time,
            since: since.clone(),
            since_given: given.map(|s| plugin_kit::text::clip(s).to_string()),
            cursor,
            now,
            filter_desc: describe_filter(filter),
            att_filter: filter.handle.is_some() || filter.conn.is_some() || filter.opcode.is_some(),
            any_att,
            handles: if filter.handle.is_some() {
                self.log.handles_in(since, reader, 6)
            } else {
                Vec::new()
            },
        }
    }

    /// search_packets: finds packets by hex pattern and/or handle and pairs
    /// each with its reply or request.
    pub fn search(&self, a: &SearchArgs) -> Result<Found<'_>, ToolError> {
        let pat = match a.hex_pattern.as_deref() {
            Some(p) if !p.trim().is_empty() || a.handle.is_none() => Some(pattern(p)?),
            _ => None,
        };
        if pat.is_none() && a.handle.is_none() {
            return Err(ToolError::new(
                "BAD_PATTERN",
                "give hex_pattern (bytes such as \"A7 B3\"), handle (an ATT attribute handle such as 18 for 0x0012), or both",
            ));
        }
        let limit = check_limit(a.limit)?;
        let now = now_us();
        let since = match a.since.as_deref() {
            None => None,
            Some(s) => match parse_since(s, now) {
                Ok(Since::Last) => {
                    return Err(ToolError::new(
                        "BAD_SINCE",
                        "since=\"last\" is for get_logs readers; give a duration, timestamp or packet id",
                    ));
                }
                Ok(s) => Some(s),
                Err(e) => return Err(bad_since(e)),
            },
        };
        let filter = Filter {
            direction: a.direction,
            pattern: pat.as_ref(),
            handle: a.handle,
            conn: a.connection,
            opcode: opcode_arg(a.opcode.as_deref())?,
        };
        let out = self.log.search(&filter, since.as_ref(), limit);
        let mut notes = Vec::new();
        if out.hits.is_empty() {
            let window = since.clone().unwrap_or(Since::AfterId(0));
            let ctx = self.empty_context(&window, "", &filter, a.since.as_deref(), now);
            notes.push(ctx.why_empty(out.in_window));
        }
        // The pattern as understood, clipped: a valid one may be 100 KB.
        let pattern = match &pat {
            Some(p) => plugin_kit::text::clip(&p.to_string()),
            None => String::new(),
        };
        Ok(Found {
            pattern,
            out,
            notes,
        })
    }

    /// scan_devices: asks the bridge, on a connection of its own, to scan
    /// for `duration_ms` (1000..=25000, default 5000); returns the devices
    /// and the duration used. `keep_going` is polled while waiting: when it
    /// says stop, the scan fails with CANCELLED.
    pub fn scan(
        &mut self,
        duration_ms: Option<u32>,
        keep_going: &mut dyn FnMut(Duration) -> bool,
    ) -> Result<(Vec<ScannedDevice>, u32), ToolError> {
        let d = duration_ms.unwrap_or(5000);
        if !(SCAN_MIN_MS..=SCAN_MAX_MS).contains(&d) {
            return Err(ToolError::new(
                "BAD_DURATION",
                format!(
                    "duration {d} ms is out of range: use {SCAN_MIN_MS}..{SCAN_MAX_MS} ms (default 5000)"
                ),
            ));
        }
        self.pump(Budget::default());
        if self.ble.connected {
            return Err(scan_while_connected(self.ble.device.as_deref()));
        }
        let Some(url) = self.feed.target() else {
            return Err(ToolError::new(
                "BAD_BRIDGE_URL",
                format!(
                    "{}; set {URL_VAR} (--bridge-url) to ws://HOST:PORT",
                    self.feed.last_error().unwrap_or("bad URL")
                ),
            ));
        };
        let url = url.with_resource(&format!("/?command=scan&duration={d}"));
        let mut result: Option<Result<Vec<ScannedDevice>, ToolError>> = None;
        let exchange = feed::exchange(
            &url,
            Duration::from_millis(d as u64 + 3000),
            keep_going,
            &mut |text| match bridge::parse_message(text) {
                Ok(BridgeMsg::ScanResult(devs)) => {
                    result = Some(Ok(devs));
                    true
                }
                Ok(BridgeMsg::Problem { message, .. }) => {
                    result = Some(Err(if message.contains("while connected") {
                        scan_while_connected(None)
                    } else {
                        ToolError::new(
                            "BRIDGE_ERROR",
                            format!("the bridge refused the scan: {message}"),
                        )
                    }));
                    true
                }
                _ => false,
            },
        );
        match (result, exchange) {
            (Some(r), _) => r.map(|devs| {
                for dev in &devs {
                    self.remember(&dev.id, &dev.name);
                }
                (devs, d)
            }),
            (None, Err(e)) if e == "cancelled" => {
                Err(ToolError::new("CANCELLED", "the scan was cancelled"))
            }
            (None, Err(e)) => Err(ToolError::new(
                "BRIDGE_UNAVAILABLE",
                format!(
                    "{e}. Start the bridge (for a simulated one: ble-bridge-sim), check {URL_VAR} and the plugin's network allow-list"
                ),
            )),
            (None, Ok(())) => Err(ToolError::new(
                "BRIDGE_ERROR",
                "the bridge ended the scan without a result",
            )),
        }
    }

    /// Warnings for get_metrics: recent import problems and buffer health.
    pub fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self.recent_warnings.iter().cloned().collect();
        let used = self.log.len() * 100 / self.log.capacity();
        // In u64: 100 times 64 MiB overflows a wasm32 usize.
        let used_bytes = (self.log.bytes() as u64 * 100 / self.log.byte_limit() as u64) as usize;
        if used_bytes >= 90 && used_bytes > used {
            w.push(format!(
                "the buffer is {used_bytes}% full by bytes ({} of its {} byte limit, in {} packets): further packets evict the oldest ({} evicted so far, {} of them for bytes)",
                human_bytes(self.log.bytes()),
                human_bytes(self.log.byte_limit()),
                self.log.len(),
                self.log.evicted(),
                self.log.evicted_for_bytes()
            ));
        } else if used >= 90 {
            w.push(format!(
                "the buffer is {used}% full: further packets evict the oldest ({} evicted so far)",
                self.log.evicted()
            ));
        }
        if self.parse_errors > 0 {
            w.push(format!(
                "{} bridge messages could not be parsed",
                self.parse_errors
            ));
        }
        w
    }

    /// The state of the link to the bridge: connected, connecting or
    /// disconnected.
    pub fn link_state(&self) -> LinkState {
        self.feed.state()
    }
}

/// Why a scan that completed found nothing, and what to try.
pub fn empty_scan_note(ms: u32) -> String {
    format!(
        "no device advertised during the {ms} ms scan: check that the device is powered, advertising (not already connected to a phone) and in range, then scan longer (duration up to {SCAN_MAX_MS})"
    )
}

fn bad_since(e: crate::since::SinceError) -> ToolError {
    ToolError::new("BAD_SINCE", e.to_string())
}

fn opcode_arg(s: Option<&str>) -> Result<Option<u8>, ToolError> {
    match s.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => btsnoop::parse_opcode(s).map(Some).ok_or_else(|| {
            ToolError::new(
                "BAD_OPCODE",
                format!(
                    "unknown ATT opcode {:?}: give write-request, write-command, signed-write-command, notification, indication (or write, notify, indicate), or a number such as 0x52",
                    plugin_kit::text::clip(s)
                ),
            )
        }),
    }
}

fn describe_filter(f: &Filter<'_>) -> String {
    let mut parts = Vec::new();
    if let Some(d) = f.direction {
        parts.push(format!("direction {}", d.label()));
    }
    // A valid pattern may be 100 KB of hex (hardening item 11).
    if let Some(p) = f.pattern {
        parts.push(format!(
            "pattern \"{}\"",
            plugin_kit::text::clip(&p.to_string())
        ));
    }
    if let Some(h) = f.handle {
        parts.push(format!("handle 0x{h:04X}"));
    }
    if let Some(c) = f.conn {
        parts.push(format!("connection 0x{c:03X}"));
    }
    if let Some(o) = f.opcode {
        parts.push(format!("opcode {} (0x{o:02X})", btsnoop::opcode_name(o)));
    }
    parts.join(", ")
}

/// Facts gathered before a query, for saying why its answer is empty.
struct EmptyContext {
    buffer_empty: bool,
    evicted: u64,
    bridge: String,
    newest_id: Option<u64>,
    newest_desc: Option<String>,
    suggest_time: Option<String>,
    since: Since,
    since_given: Option<String>,
    cursor: Option<u64>,
    now: Micros,
    filter_desc: String,
    att_filter: bool,
    any_att: bool,
    handles: Vec<(u16, usize)>,
}

impl EmptyContext {
    fn why_empty(&self, in_window: usize) -> String {
        if self.buffer_empty {
            return format!(
                "nothing returned: the buffer is empty ({} packets evicted so far); {}, and nothing was imported. Import a capture with import_btsnoop, or check the bridge with get_connection_state",
                self.evicted, self.bridge
            );
        }
        let newest = self.newest_desc.clone().unwrap_or_default();
        if in_window == 0 {
            return match (&self.since, self.cursor) {
                (Since::Time(t), _) => format!(
                    "nothing returned: no packet is at or after {} (since={} counts back from now, {}); {newest}. Give since=\"all\", a packet id, or a time such as \"{}\"",
                    format_iso(*t),
                    self.since_given
                        .as_deref()
                        .map_or(format!("\"{DEFAULT_SINCE}\" (the default)"), |s| format!(
                            "{s:?}"
                        )),
                    format_iso(self.now),
                    self.suggest_time.as_deref().unwrap_or("")
                ),
                (_, Some(c)) if self.newest_id.is_some_and(|n| c >= n) => format!(
                    "nothing returned: nothing after id {c}, the newest packet; call again later with the same since to get what arrives"
                ),
                _ => format!("nothing returned: no packet in the window; {newest}"),
            };
        }
        let mut s = format!(
            "nothing returned: {in_window} packets in the window, none with {}",
            self.filter_desc
        );
        if self.att_filter && !self.any_att {
            s.push_str(
                "; only imported packets carry ATT handles, opcodes and connections, and none are buffered (live bridge packets are bare values)",
            );
        }
        if !self.handles.is_empty() {
            let hs: Vec<String> = self
                .handles
                .iter()
                .map(|(h, n)| format!("0x{h:04X} ({n})"))
                .collect();
            s.push_str(&format!("; handles in the window: {}", hs.join(", ")));
        }
        s
    }
}

fn scan_while_connected(device: Option<&str>) -> ToolError {
    let dev = device.map_or(String::from("a BLE device"), |d| format!("BLE device {d}"));
    ToolError::new(
        "SCAN_WHILE_CONNECTED",
        format!(
            "cannot scan while {dev} is connected through the bridge: scanning would disturb the connection. Disconnect the device (close its bridge session) first; get_connection_state shows connected=false when it is free"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> Service {
        // Nothing listens on port 9 of 127.0.0.1 in tests.
        Service::new(FeedConfig::new("ws://127.0.0.1:9"), 100)
    }

    fn text(s: &mut Service, json: &str) {
        s.handle(FeedEvent::Text(json.into()), now_us());
    }

    /// Hardening item 11: a valid hex pattern of 100 KB is echoed clipped,
    /// in search_packets' `pattern` and in the note saying why nothing
    /// matched.
    #[test]
    fn hardening_11_a_long_pattern_is_not_echoed_whole() {
        let mut s = svc();
        let now = now_us();
        s.log.push(Direction::Tx, &[0xA7, 0xB3], now, now);
        let long = "A7".repeat(50_000);
        let found = s
            .search(&SearchArgs {
                hex_pattern: Some(long),
                since: Some("all".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(
            found.pattern.len() < 300 && found.pattern.ends_with("characters)"),
            "{}",
            found.pattern
        );
        let notes = found.notes.join("; ");
        assert!(
            notes.len() < 4096 && notes.contains("none with pattern \"A7 A7"),
            "{} bytes: {}",
            notes.len(),
            &notes[..notes.len().min(600)]
        );
    }

    #[test]
    fn seen_devices_are_bounded_and_merged_by_address_or_name() {
        let mut s = svc();
        s.remember("AA:01", "Reader");
        s.remember("AA:02", "");
        // A connection names the device only: the scanned entry moves to
        // the newest place and keeps its address.
        s.remember("", "Reader");
        let seen: Vec<_> = s.seen_devices().collect();
        assert_eq!(seen, [("AA:02", ""), ("AA:01", "Reader")]);
        for i in 0..200 {
            s.remember(&format!("BB:{i}"), "");
        }
        assert_eq!(s.seen_devices().count(), MAX_SEEN_DEVICES);
        assert_eq!(s.seen_devices().next_back(), Some(("BB:199", "")));
    }

    #[test]
    fn log_stream_lines_drive_state_and_buffer() {
        let mut s = svc();
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[NobleTransport] Connecting to CS108Reader2603A7..."}"#,
        );
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[BridgeServer] BLE connected, sending connected message"}"#,
        );
        assert!(s.ble.connected);
        assert_eq!(s.ble.device.as_deref(), Some("CS108Reader2603A7"));
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[TX] A7 B3 01"}"#,
        );
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[RX] B3 A7 01"}"#,
        );
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[BridgeServer] Forwarding 3 bytes"}"#,
        );
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[BridgeServer] BLE disconnected, closing WebSocket"}"#,
        );
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[BridgeServer] BLE disconnected successfully"}"#,
        );
        text(&mut s, "garbage");
        assert!(!s.ble.connected);
        assert_eq!(s.log.len(), 2);
        assert_eq!(s.log.totals(Direction::Rx).packets, 1);
        // connected, disconnected (once), parse error: events, not packets.
        assert_eq!(s.log.events_total(), 3);
        assert_eq!(s.parse_errors(), 1);
    }

    #[test]
    fn scan_is_refused_while_connected() {
        let mut s = svc();
        text(&mut s, r#"{"type":"connected","device":"CS108"}"#);
        let e = s.scan(None, &mut |_| true).unwrap_err();
        assert_eq!(e.code, "SCAN_WHILE_CONNECTED");
        assert!(e.message.contains("CS108") && e.message.contains("Disconnect"));
        assert_eq!(
            s.scan(Some(10), &mut |_| true).unwrap_err().code,
            "BAD_DURATION"
        );
    }

    #[test]
    fn an_empty_scan_says_why() {
        let n = empty_scan_note(5000);
        assert!(n.contains("5000 ms") && n.contains("advertising"), "{n}");
    }

    #[test]
    fn scan_without_a_bridge_says_what_to_do() {
        let mut s = svc();
        let e = s.scan(Some(1000), &mut |_| true).unwrap_err();
        assert_eq!(e.code, "BRIDGE_UNAVAILABLE");
        assert!(e.message.contains(URL_VAR));
    }

    #[test]
    fn argument_errors() {
        let mut s = svc();
        let bad = |a: LogsArgs, s: &mut Service| s.get_logs(&a).err().map(|e| e.code);
        assert_eq!(
            bad(
                LogsArgs {
                    since: Some("1y".into()),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_SINCE")
        );
        assert_eq!(
            bad(
                LogsArgs {
                    limit: Some(0),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_LIMIT")
        );
        assert_eq!(
            bad(
                LogsArgs {
                    limit: Some(1001),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_LIMIT")
        );
        assert_eq!(
            bad(
                LogsArgs {
                    filter: Some("(".into()),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_PATTERN")
        );
        assert_eq!(
            bad(
                LogsArgs {
                    filter: Some("tx".into()),
                    direction: Some(Direction::Rx),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_FILTER")
        );
        let search = |p: &str, since: Option<&str>| SearchArgs {
            hex_pattern: Some(p.into()),
            since: since.map(Into::into),
            ..Default::default()
        };
        assert!(s.search(&search("(", None)).is_err());
        assert_eq!(
            s.search(&search("A7", Some("last"))).err().map(|e| e.code),
            Some("BAD_SINCE")
        );
        assert_eq!(
            s.search(&SearchArgs::default()).err().map(|e| e.code),
            Some("BAD_PATTERN")
        );
        assert_eq!(
            bad(
                LogsArgs {
                    opcode: Some("frobnicate".into()),
                    ..Default::default()
                },
                &mut s
            ),
            Some("BAD_OPCODE")
        );
    }

    #[test]
    fn import_errors_name_the_file() {
        let mut s = svc();
        let e = s
            .import_btsnoop(Path::new("/nonexistent/btsnoop_hci.log"), false)
            .err()
            .unwrap();
        assert_eq!(e.code, "FILE_NOT_READABLE");
        assert!(e.message.contains("/nonexistent/btsnoop_hci.log"));
        // A device or pipe is refused before it is opened (a named pipe
        // would block the import until its deadline).
        let e = s
            .import_btsnoop(Path::new("/dev/null"), false)
            .err()
            .unwrap();
        assert_eq!(e.code, "FILE_NOT_READABLE");
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        // A 100 KB `since` is not echoed whole.
        let long = "9z".repeat(50_000);
        let e = s
            .search(&SearchArgs {
                hex_pattern: Some("A7".into()),
                since: Some(long),
                ..Default::default()
            })
            .err()
            .unwrap();
        assert_eq!(e.code, "BAD_SINCE");
        assert!(e.message.len() < 600, "{}", e.message);
    }

    use crate::btsnoop::build::{acl, att, h4, header, record};

    const T0: Micros = 1_637_000_000_000_000; // 2021-11-15

    /// A capture of `n` write/notification pairs on handles 0x12 / 0x15.
    fn capture(n: u16, salt: u8) -> Vec<u8> {
        let mut f = header(btsnoop::DATALINK_H4);
        for i in 0..n {
            let t = T0 + i as i64 * 1000;
            let w = att(0x52, 0x0012, &[salt, i as u8]);
            let ntf = att(0x1B, 0x0015, &[0xB3, i as u8]);
            record(&mut f, 0, t, &h4(2, &acl(0x40, &w, 64)[0]));
            record(&mut f, 1, t + 1, &h4(2, &acl(0x40, &ntf, 64)[0]));
        }
        f
    }

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ble-svc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn ids(l: &Logs<'_>) -> Vec<u64> {
        l.page.entries.iter().map(|p| p.id).collect()
    }

    #[test]
    fn imports_are_found_by_default_then_the_default_window_explains_itself() {
        let mut s = svc();
        let p = temp("default.log", &capture(40, 1));
        let r = s.import_btsnoop(&p, false).unwrap();
        assert_eq!((r.tx, r.rx, r.since.as_deref()), (40, 40, Some("0")));
        let args = LogsArgs {
            limit: Some(50),
            ..Default::default()
        };
        let l = s.get_logs(&args).unwrap();
        assert_eq!(ids(&l), (1..=50).collect::<Vec<_>>());
        assert!(
            l.notes[0].contains("since not given: reading the packets imported from"),
            "{:?}",
            l.notes
        );
        // The next call without since continues where the reader stopped.
        let l = s.get_logs(&args).unwrap();
        assert_eq!(ids(&l), (51..=80).collect::<Vec<_>>());
        assert!(
            l.notes[0].contains("continuing after id 50"),
            "{:?}",
            l.notes
        );
        // Read to the end: the usual 30 s window, empty, and it says why.
        let l = s.get_logs(&args).unwrap();
        assert!(l.page.entries.is_empty());
        let why = l.notes.join("; ");
        assert!(why.contains("no packet is at or after"), "{why}");
        assert!(
            why.contains("the newest packet, id 80, is from 2021-11-15"),
            "{why}"
        );
        assert!(why.contains("imported from"), "{why}");
        // The import's since reads it again, entries keep their ATT fields.
        let l = s
            .get_logs(&LogsArgs {
                since: r.since.clone(),
                limit: Some(2),
                ..Default::default()
            })
            .unwrap();
        let a = l.page.entries[1].att.unwrap();
        assert_eq!((a.opcode, a.handle, a.conn), (0x1B, 0x15, 0x40));
        assert_eq!(l.page.entries[1].ts, T0 + 1, "microseconds kept");
        drop(l);
        // until, to the microsecond: the first write and its notification.
        let l = s
            .get_logs(&LogsArgs {
                since: Some("all".into()),
                until: Some(format_iso(T0 + 1)),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(ids(&l), [1, 2]);
        drop(l);
        for bad in ["last", "soon"] {
            let e = s
                .get_logs(&LogsArgs {
                    until: Some(bad.into()),
                    ..Default::default()
                })
                .err()
                .unwrap();
            assert_eq!(e.code, "BAD_UNTIL", "{bad}");
        }
    }

    #[test]
    fn empty_answers_say_why() {
        let mut s = svc();
        let all = |s: &mut Service, a: LogsArgs| {
            let l = s
                .get_logs(&LogsArgs {
                    since: Some("all".into()),
                    ..a
                })
                .unwrap();
            assert!(l.page.entries.is_empty());
            l.notes.join("; ")
        };
        let why = all(&mut s, LogsArgs::default());
        assert!(
            why.contains("the buffer is empty") && why.contains("import_btsnoop"),
            "{why}"
        );
        s.import_btsnoop(&temp("why.log", &capture(3, 2)), false)
            .unwrap();
        let why = all(
            &mut s,
            LogsArgs {
                handle: Some(0x99),
                ..Default::default()
            },
        );
        assert!(
            why.contains("6 packets in the window, none with handle 0x0099"),
            "{why}"
        );
        assert!(
            why.contains("handles in the window: 0x0012 (3), 0x0015 (3)"),
            "{why}"
        );
        let l = s
            .get_logs(&LogsArgs {
                since: Some("6".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(
            l.notes
                .join("")
                .contains("nothing after id 6, the newest packet")
        );
        drop(l);
        // Live packets carry no handle: the note says handle filters need imports.
        let mut live = svc();
        text(
            &mut live,
            r#"{"type":"log","level":"info","message":"[TX] A7 B3 01"}"#,
        );
        let why = all(
            &mut live,
            LogsArgs {
                opcode: Some("write".into()),
                ..Default::default()
            },
        );
        assert!(
            why.contains("only imported packets carry ATT handles"),
            "{why}"
        );
        // Search: by handle alone, and an empty search says why.
        let found = s
            .search(&SearchArgs {
                handle: Some(0x15),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(found.out.total_matching, 3);
        let found = s
            .search(&SearchArgs {
                hex_pattern: Some("FF FF".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(
            found.notes[0].contains("none with pattern \"FF FF\""),
            "{:?}",
            found.notes
        );
    }

    #[test]
    fn the_same_capture_twice_is_refused_unless_forced() {
        let mut s = svc();
        let a = temp("twice-a.log", &capture(5, 3));
        let b = temp("twice-b.log", &capture(5, 3)); // same bytes, other name
        s.import_btsnoop(&a, false).unwrap();
        let r = s.import_btsnoop(&b, false).unwrap();
        assert_eq!(r.already_imported, Some(1));
        let w = &r.warnings[0];
        assert!(
            w.starts_with("already imported") && w.contains("twice-a.log"),
            "{w}"
        );
        assert!(w.contains("ids 1..10") && w.contains("force=true"), "{w}");
        assert_eq!(
            (r.first_id, r.last_id, r.since.as_deref()),
            (Some(1), Some(10), Some("0"))
        );
        assert_eq!((r.tx, r.rx, r.evicted), (5, 5, 0));
        assert_eq!(s.log.len(), 10, "nothing added by the refusal");
        assert_eq!(s.import_metrics().files, 1);
        let r = s.import_btsnoop(&b, true).unwrap();
        assert!(
            r.warnings[0].starts_with("duplicate: same content as import #1"),
            "{:?}",
            r.warnings
        );
        assert_eq!(r.first_id, Some(11));
        // Another capture is not a duplicate.
        let c = temp("twice-c.log", &capture(5, 4));
        assert!(s.import_btsnoop(&c, false).unwrap().warnings.is_empty());
    }

    #[test]
    fn imports_say_what_they_evicted_and_metrics_count_them() {
        let mut s = svc(); // 100 packets
        text(
            &mut s,
            r#"{"type":"log","level":"info","message":"[TX] A7 B3 01"}"#,
        );
        s.import_btsnoop(&temp("ev-a.log", &capture(30, 5)), false)
            .unwrap();
        let r = s
            .import_btsnoop(&temp("ev-b.log", &capture(30, 6)), false)
            .unwrap();
        assert_eq!(r.evicted, 21);
        assert!(
            r.warnings[0]
                .contains("evicted 21 older packets (ids 1..21, 1 of them live bridge packets)"),
            "{:?}",
            r.warnings
        );
        assert_eq!(r.since.as_deref(), Some("61"));
        let m = s.import_metrics();
        assert_eq!((m.files, m.tx, m.rx, m.evicted), (2, 60, 60, 21));
        assert!(m.last_file.unwrap().ends_with("ev-b.log"));
        let w = s.warnings();
        assert!(
            w.iter()
                .any(|w| w.contains("import #2") && w.contains("evicted 21")),
            "{w:?}"
        );
        assert!(w.iter().any(|w| w.contains("100% full")), "{w:?}");
        assert!(
            s.log
                .events()
                .any(|e| e.level == Level::Warn && e.message.contains("evicted 21"))
        );
        // More than the buffer holds: only the newest stay, since points there.
        let r = s
            .import_btsnoop(&temp("ev-c.log", &capture(80, 7)), false)
            .unwrap();
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("only the newest remain"))
        );
        assert_eq!(r.since, Some((s.log.oldest_id().unwrap() - 1).to_string()));
    }

    /// A capture of `n` notifications of `size` bytes on handle 0x15, in
    /// ACL fragments of 1000 bytes (reassembled by the import).
    fn big_capture(n: u16, size: usize, salt: u8) -> Vec<u8> {
        let mut f = header(btsnoop::DATALINK_H4);
        for i in 0..n {
            let mut value = vec![salt; size];
            value[0] = i as u8;
            for frag in acl(0x40, &att(0x1B, 0x0015, &value), 1000) {
                record(&mut f, 1, T0 + i as i64 * 1000, &h4(2, &frag));
            }
        }
        f
    }

    /// Hardening item 4: imports of large notifications are bounded by the
    /// ring's bytes, and the answers say what the buffer holds and what it
    /// let go for room.
    #[test]
    fn imports_are_bounded_by_bytes_and_say_so() {
        let mut s = svc();
        let limit = 10 * crate::buffer::packet_cost(2000);
        s.log = PacketLog::with_byte_limit(100, limit);
        let r = s
            .import_btsnoop(&temp("bytes-a.log", &big_capture(8, 2000, 1)), false)
            .unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(
            r.note
                .ends_with("the buffer holds 8 packets, 16.1 KiB of its 20.2 KiB byte limit"),
            "{}",
            r.note
        );
        let r = s
            .import_btsnoop(&temp("bytes-b.log", &big_capture(8, 2000, 2)), false)
            .unwrap();
        assert_eq!(r.evicted, 6);
        assert_eq!(
            r.warnings[0],
            "this import evicted 6 older packets (ids 1..6) to stay within the buffer's byte limit of 20.2 KiB (it holds 10 packets, 20.2 KiB)"
        );
        // More than the limit holds: the newest that fit, and since there.
        let r = s
            .import_btsnoop(&temp("bytes-c.log", &big_capture(30, 2000, 3)), false)
            .unwrap();
        assert_eq!((r.rx, r.first_id, r.last_id), (30, Some(17), Some(26)));
        assert!(
            r.warnings.iter().any(|w| w
                == "30 packets imported (58.6 KiB) but the buffer keeps 20.2 KiB: only the newest 10 remain (ids 17..26)"),
            "{:?}",
            r.warnings
        );
        assert_eq!(r.since.as_deref(), Some("16"));
        assert!(s.log.bytes() <= limit && s.log.len() == 10);
        let w = s.warnings();
        assert!(
            w.iter().any(|w| w.starts_with("the buffer is 100% full by bytes (20.2 KiB of its 20.2 KiB byte limit, in 10 packets)")),
            "{w:?}"
        );
        // The packet count still evicts as before, with its own words.
        let mut s = svc();
        let r = s
            .import_btsnoop(&temp("count.log", &capture(80, 9)), false)
            .unwrap();
        assert!(
            r.warnings.iter().any(|w| w.starts_with(
                "160 packets imported but the buffer keeps 100: only the newest remain"
            )),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn a_capture_without_att_says_what_it_holds() {
        let mut s = svc();
        let mut f = header(btsnoop::DATALINK_H4);
        record(&mut f, 0b10, T0, &h4(0x01, &[0x03, 0x0C, 0x00]));
        record(
            &mut f,
            0b11,
            T0,
            &h4(0x04, &[0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        );
        let r = s.import_btsnoop(&temp("hci.log", &f), false).unwrap();
        assert_eq!((r.tx, r.rx, r.skipped, r.since), (0, 0, 2, None));
        assert_eq!(r.holds, ["hci-only"]);
        assert!(
            r.note
                .contains("nothing was imported: it holds only HCI commands (1) and events (1)"),
            "{}",
            r.note
        );
        assert_eq!(r.content_hash.len(), "fnv1a64:".len() + 16);
    }
}
