//! The plugin's state and the tools' logic, free of WIT types: the packet
//! log, the bridge feed, and the BLE link state read from the bridge.

use crate::bridge::{self, BridgeMsg, ScannedDevice};
use crate::btsnoop;
use crate::buffer::{DEFAULT_CAPACITY, Direction, Level, LogPage, LogQuery, PacketLog, SearchOut};
use crate::feed::{self, Budget, Feed, FeedConfig, FeedEvent, LinkState};
use crate::hex::Pattern;
use crate::since::{Since, parse_since};
use crate::time::{Micros, now_us};
use std::path::Path;
use std::time::{Duration, Instant};

pub const URL_VAR: &str = "BLE_BRIDGE_URL";
pub const SIZE_VAR: &str = "BLE_BUFFER_SIZE";
pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1000;
pub const SCAN_MIN_MS: u32 = 1000;
/// Below the host's default 30 s call deadline, so a scan never traps.
pub const SCAN_MAX_MS: u32 = 25_000;
const MAX_IMPORT_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: &'static str,
    pub message: String,
}

impl ToolError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The BLE link as the bridge reports it.
#[derive(Debug, Default, Clone)]
pub struct BleState {
    pub connected: bool,
    pub device: Option<String>,
    pub connecting_to: Option<String>,
    pub connected_at: Option<Micros>,
    pub last_activity: Option<Micros>,
}

pub struct Service {
    pub log: PacketLog,
    pub feed: Feed,
    pub ble: BleState,
    started: Instant,
    parse_errors: u64,
    scratch: Vec<FeedEvent>,
}

/// get_logs arguments in domain form.
#[derive(Debug, Default, Clone)]
pub struct LogsArgs {
    pub since: Option<String>,
    pub filter: Option<String>,
    pub direction: Option<Direction>,
    pub limit: Option<u32>,
    pub reader: Option<String>,
    pub newest: Option<bool>,
    pub include_events: Option<bool>,
}

pub struct ImportSummary {
    pub datalink: u32,
    pub records: u32,
    pub tx: u32,
    pub rx: u32,
    pub skipped: u32,
    pub first_id: Option<u64>,
    pub last_id: Option<u64>,
    pub warnings: Vec<String>,
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
    pub fn new(cfg: FeedConfig, capacity: usize) -> Self {
        Self {
            log: PacketLog::new(capacity),
            feed: Feed::new(cfg),
            ble: BleState::default(),
            started: Instant::now(),
            parse_errors: 0,
            scratch: Vec::new(),
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

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
    pub fn parse_errors(&self) -> u64 {
        self.parse_errors
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

    pub fn get_logs(&mut self, a: &LogsArgs) -> Result<LogPage<'_>, ToolError> {
        let since = parse_since(a.since.as_deref().unwrap_or("30s"), now_us())
            .map_err(|e| ToolError::new("BAD_SINCE", e.to_string()))?;
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
        let reader = a.reader.as_deref().unwrap_or("default");
        if reader.is_empty() || reader.len() > 64 {
            return Err(ToolError::new(
                "BAD_READER",
                "reader must be 1..64 characters",
            ));
        }
        Ok(self.log.query(&LogQuery {
            since,
            direction,
            pattern: pat.as_ref(),
            limit,
            reader,
            newest: a.newest.unwrap_or(false),
            include_events: a.include_events.unwrap_or(true),
        }))
    }

    pub fn search(
        &self,
        hex_pattern: &str,
        limit: Option<u32>,
        direction: Option<Direction>,
        since: Option<&str>,
    ) -> Result<(Pattern, SearchOut<'_>), ToolError> {
        let pat = pattern(hex_pattern)?;
        let limit = check_limit(limit)?;
        let since = match since {
            None => None,
            Some(s) => match parse_since(s, now_us()) {
                Ok(Since::Last) => {
                    return Err(ToolError::new(
                        "BAD_SINCE",
                        "since=\"last\" is for get_logs readers; give a duration, timestamp or packet id",
                    ));
                }
                Ok(s) => Some(s),
                Err(e) => return Err(ToolError::new("BAD_SINCE", e.to_string())),
            },
        };
        let out = self.log.search(&pat, direction, since.as_ref(), limit);
        Ok((pat, out))
    }

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
            (Some(r), _) => r.map(|devs| (devs, d)),
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

    pub fn import_btsnoop(&mut self, path: &Path) -> Result<ImportSummary, ToolError> {
        let shown = path.display();
        let unreadable = |e: std::io::Error| {
            ToolError::new(
                "FILE_NOT_READABLE",
                plugin_kit::paths::explain_io_error(path, &e, false),
            )
        };
        let meta = std::fs::metadata(path).map_err(unreadable)?;
        if meta.len() > MAX_IMPORT_BYTES {
            return Err(ToolError::new(
                "FILE_TOO_LARGE",
                format!(
                    "{shown} is {} MiB; the import reads at most {} MiB (split the capture)",
                    meta.len() >> 20,
                    MAX_IMPORT_BYTES >> 20
                ),
            ));
        }
        let bytes = plugin_kit::paths::read_regular_file(path).map_err(unreadable)?;
        let cap = btsnoop::parse(&bytes)
            .map_err(|e| ToolError::new("BAD_CAPTURE", format!("{shown}: {e}")))?;
        let (mut tx, mut rx, mut first, mut last) = (0, 0, None, None);
        for v in &cap.values {
            let id = self.log.push_imported(v.dir, &v.value, v.ts);
            first.get_or_insert(id);
            last = Some(id);
            match v.dir {
                Direction::Tx => tx += 1,
                Direction::Rx => rx += 1,
            }
        }
        let mut warnings = cap.warnings;
        let n = cap.values.len();
        if n > self.log.capacity() {
            warnings.push(format!(
                "{n} packets imported but the buffer keeps {}: only the newest remain",
                self.log.capacity()
            ));
        }
        self.log.push_event(
            Level::Info,
            format!("imported {n} ATT packets from {shown}"),
            now_us(),
        );
        Ok(ImportSummary {
            datalink: cap.datalink,
            records: cap.records,
            tx,
            rx,
            skipped: cap.skipped,
            first_id: first,
            last_id: last,
            warnings,
        })
    }

    pub fn link_state(&self) -> LinkState {
        self.feed.state()
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
        assert!(s.search("(", None, None, None).is_err());
        assert_eq!(
            s.search("A7", None, None, Some("last"))
                .err()
                .map(|e| e.code),
            Some("BAD_SINCE")
        );
    }

    #[test]
    fn import_errors_name_the_file() {
        let mut s = svc();
        let e = s
            .import_btsnoop(Path::new("/nonexistent/btsnoop_hci.log"))
            .err()
            .unwrap();
        assert_eq!(e.code, "FILE_NOT_READABLE");
        assert!(e.message.contains("/nonexistent/btsnoop_hci.log"));
        // A device or pipe is refused before it is opened (a named pipe
        // would block the import until its deadline).
        let e = s.import_btsnoop(Path::new("/dev/null")).err().unwrap();
        assert_eq!(e.code, "FILE_NOT_READABLE");
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        // A 100 KB `since` is not echoed whole.
        let long = "9z".repeat(50_000);
        let e = s.search("A7", None, None, Some(&long)).err().unwrap();
        assert_eq!(e.code, "BAD_SINCE");
        assert!(e.message.len() < 600, "{}", e.message);
    }
}
