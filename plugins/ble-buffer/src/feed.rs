//! The connection to the bridge: connect, handshake, drain without blocking,
//! reconnect with exponential backoff.
//!
//! Plain `std::net::TcpStream`, which on `wasm32-wasip2` goes through WASI
//! sockets, so the host's per-plugin allow-list decides what is reachable.
//! The socket is switched to non-blocking after the handshake (falling back
//! to a 1 ms read timeout where non-blocking mode is not available), and
//! each `pump` does a bounded amount of work.

use crate::ws::{self, Decoder, Message, Opcode, WsError, WsUrl};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The bridge address used when BLE_BRIDGE_URL is not set: a bridge on this
/// machine.
pub const DEFAULT_URL: &str = "ws://127.0.0.1:8080";

/// Where the bridge is and how patiently to talk to it.
#[derive(Debug, Clone)]
pub struct FeedConfig {
    /// The bridge WebSocket URL as configured (`ws://HOST:PORT`, optionally
    /// with `?device=…`).
    pub url: String,
    /// Longest wait for the TCP connection (500 ms by default: a local bridge
    /// answers at once).
    pub connect_timeout: Duration,
    /// Longest wait for the WebSocket handshake's answer (5 s by default).
    pub handshake_timeout: Duration,
    /// First reconnect delay after a failure (250 ms by default); doubles on
    /// each failure.
    pub backoff_min: Duration,
    /// Longest reconnect delay (10 s by default).
    pub backoff_max: Duration,
}

impl FeedConfig {
    /// The default timeouts and backoff for the bridge at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            connect_timeout: Duration::from_millis(500),
            handshake_timeout: Duration::from_secs(5),
            backoff_min: Duration::from_millis(250),
            backoff_max: Duration::from_secs(10),
        }
    }
}

/// How the plugin uses the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `?command=log-stream`: a passive tap on all traffic.
    LogStream,
    /// `?device=…`: the plugin is the bridge's BLE client; data frames are RX.
    Device,
}

impl Mode {
    /// "log-stream" or "device", as the tools print it.
    pub fn label(self) -> &'static str {
        match self {
            Self::LogStream => "log-stream",
            Self::Device => "device",
        }
    }
}

/// Resolves the configured URL: a bare bridge address becomes its log stream.
pub fn resolve_url(raw: &str) -> Result<(WsUrl, Mode), WsError> {
    let mut url = WsUrl::parse(raw)?;
    if url.has_param("device") || url.has_param("service") {
        return Ok((url, Mode::Device));
    }
    if url.query().is_empty() {
        url.resource = format!("{}?command=log-stream", url.resource);
    }
    Ok((url, Mode::LogStream))
}

/// What a pump saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedEvent {
    /// The WebSocket to the bridge opened.
    Up,
    /// The link was lost or refused (why); a reconnect is scheduled.
    Down(String),
    /// A text frame: a JSON message of the bridge.
    Text(String),
    /// A binary frame: a packet's bytes (device mode).
    Binary(Vec<u8>),
}

/// The plugin's link to the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// No link: waiting to (re)connect.
    Disconnected,
    /// TCP connected, the WebSocket handshake under way.
    Connecting,
    /// The WebSocket is open.
    Connected,
}

impl LinkState {
    /// "disconnected", "connecting" or "connected", as the tools print it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Disconnected => "disconnected",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
        }
    }
}

enum Link {
    Idle {
        retry_at: Option<Instant>,
    },
    Handshaking {
        stream: TcpStream,
        key: String,
        buf: Vec<u8>,
        deadline: Instant,
    },
    Open {
        stream: TcpStream,
        decoder: Decoder,
    },
}

/// Limits for one pump.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Most bytes read from the socket in one pump (8 MiB by default).
    pub max_bytes: usize,
    /// Longest time one pump spends reading (25 ms by default), so a tick stays
    /// short.
    pub max_time: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_bytes: 8 << 20,
            max_time: Duration::from_millis(25),
        }
    }
}

/// The link to the bridge: connects, handshakes, drains frames without blocking
/// and reconnects with exponential backoff.
pub struct Feed {
    cfg: FeedConfig,
    target: Result<(WsUrl, Mode), WsError>,
    link: Link,
    backoff: Duration,
    connections: u32,
    last_error: Option<String>,
    nonce: u64,
}

impl Feed {
    /// A feed for `cfg`; an unusable URL is kept as the last error, and nothing
    /// connects until the first pump.
    pub fn new(cfg: FeedConfig) -> Self {
        let target = resolve_url(&cfg.url);
        let last_error = target.as_ref().err().map(ToString::to_string);
        Self {
            backoff: cfg.backoff_min,
            cfg,
            target,
            link: Link::Idle { retry_at: None },
            connections: 0,
            last_error,
            nonce: seed(),
        }
    }

    /// The URL in use (the resolved one, or the configured text when it does
    /// not parse).
    pub fn url(&self) -> String {
        match &self.target {
            Ok((u, _)) => u.to_url(),
            Err(_) => self.cfg.url.clone(),
        }
    }
    /// The parsed bridge URL, none when the configured one is unusable.
    pub fn target(&self) -> Option<&WsUrl> {
        self.target.as_ref().ok().map(|(u, _)| u)
    }
    /// Whether the plugin taps the log stream or is the bridge's device client.
    pub fn mode(&self) -> Mode {
        self.target.as_ref().map_or(Mode::LogStream, |(_, m)| *m)
    }
    /// Successful connections since the start.
    pub fn connections(&self) -> u32 {
        self.connections
    }
    /// Why the last connection attempt or link failed, if it did.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }
    /// Connected, connecting or disconnected.
    pub fn state(&self) -> LinkState {
        match self.link {
            Link::Idle { .. } => LinkState::Disconnected,
            Link::Handshaking { .. } => LinkState::Connecting,
            Link::Open { .. } => LinkState::Connected,
        }
    }
    /// Time until the next reconnect attempt while disconnected (zero when one
    /// is due); none while connected or connecting.
    pub fn retry_in(&self, now: Instant) -> Option<Duration> {
        match self.link {
            Link::Idle { retry_at: Some(t) } => Some(t.saturating_duration_since(now)),
            Link::Idle { retry_at: None } => Some(Duration::ZERO),
            _ => None,
        }
    }

    fn next_key(&mut self) -> String {
        self.nonce = splitmix(self.nonce);
        let a = self.nonce.to_le_bytes();
        self.nonce = splitmix(self.nonce);
        let b = self.nonce.to_le_bytes();
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&a);
        k[8..].copy_from_slice(&b);
        ws::base64(&k)
    }

    fn next_mask(&mut self) -> [u8; 4] {
        self.nonce = splitmix(self.nonce);
        (self.nonce as u32).to_le_bytes()
    }

    fn fail(&mut self, now: Instant, why: String, was_open: bool, out: &mut Vec<FeedEvent>) {
        if was_open {
            out.push(FeedEvent::Down(why.clone()));
            self.backoff = self.cfg.backoff_min;
        }
        self.last_error = Some(why);
        self.link = Link::Idle {
            retry_at: Some(now + self.backoff),
        };
        self.backoff = (self.backoff * 2).min(self.cfg.backoff_max);
    }

    /// Connects, handshakes and drains as far as the budget allows; the
    /// events are appended to `out`.
    pub fn pump(&mut self, budget: Budget, out: &mut Vec<FeedEvent>) {
        let start = Instant::now();
        let Ok((url, _)) = &self.target else { return };
        let url = url.clone();
        loop {
            let now = Instant::now();
            match std::mem::replace(&mut self.link, Link::Idle { retry_at: None }) {
                Link::Idle { retry_at } => {
                    if retry_at.is_some_and(|t| now < t) {
                        self.link = Link::Idle { retry_at };
                        return;
                    }
                    let key = self.next_key();
                    match open(&url, &key, self.cfg.connect_timeout) {
                        Ok(stream) => {
                            self.link = Link::Handshaking {
                                stream,
                                key,
                                buf: Vec::new(),
                                deadline: now + self.cfg.handshake_timeout,
                            };
                        }
                        Err(e) => {
                            let hint = if e.kind() == ErrorKind::PermissionDenied {
                                " (is this address in the plugin's network allow-list?)"
                            } else {
                                " (is the bridge running there? ble-bridge-sim simulates one)"
                            };
                            let why = format!("cannot connect to {}: {e}{hint}", url.addr());
                            self.fail(now, why, false, out);
                            return;
                        }
                    }
                }
                Link::Handshaking {
                    mut stream,
                    key,
                    mut buf,
                    deadline,
                } => {
                    let mut chunk = [0u8; 4096];
                    let res = match stream.read(&mut chunk) {
                        Ok(0) => {
                            Err("the bridge closed the connection during the handshake".to_string())
                        }
                        Ok(n) => {
                            buf.extend_from_slice(&chunk[..n]);
                            ws::check_handshake_response(&buf, &key).map_err(|e| e.to_string())
                        }
                        Err(e) if would_block(&e) => Ok(None),
                        Err(e) => Err(format!("handshake read: {e}")),
                    };
                    match res {
                        Ok(Some(used)) => {
                            let mut decoder = Decoder::default();
                            decoder.feed(&buf[used..]);
                            self.connections += 1;
                            self.backoff = self.cfg.backoff_min;
                            self.last_error = None;
                            out.push(FeedEvent::Up);
                            self.link = Link::Open { stream, decoder };
                        }
                        Ok(None) if now >= deadline => {
                            self.fail(
                                now,
                                "the bridge did not complete the WebSocket handshake".into(),
                                false,
                                out,
                            );
                            return;
                        }
                        Ok(None) => {
                            self.link = Link::Handshaking {
                                stream,
                                key,
                                buf,
                                deadline,
                            };
                            if start.elapsed() >= budget.max_time {
                                return;
                            }
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err(why) => {
                            self.fail(now, why, false, out);
                            return;
                        }
                    }
                }
                Link::Open {
                    mut stream,
                    mut decoder,
                } => {
                    let res = self.drain(&mut stream, &mut decoder, start, budget, out);
                    match res {
                        Ok(()) => self.link = Link::Open { stream, decoder },
                        Err(why) => self.fail(Instant::now(), why, true, out),
                    }
                    return;
                }
            }
        }
    }

    fn drain(
        &mut self,
        stream: &mut TcpStream,
        decoder: &mut Decoder,
        start: Instant,
        budget: Budget,
        out: &mut Vec<FeedEvent>,
    ) -> Result<(), String> {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut read_total = 0usize;
        loop {
            // Messages already buffered (e.g. after the handshake) go first.
            while let Some(msg) = decoder.next_message().map_err(|e| e.to_string())? {
                match msg {
                    Message::Text(t) => out.push(FeedEvent::Text(t)),
                    Message::Binary(b) => out.push(FeedEvent::Binary(b)),
                    Message::Ping(p) => {
                        let frame = ws::encode_frame(Opcode::Pong, &p, Some(self.next_mask()));
                        write_small(stream, &frame).map_err(|e| format!("pong: {e}"))?;
                    }
                    Message::Pong => {}
                    Message::Close(code, reason) => {
                        let frame = ws::encode_frame(
                            Opcode::Close,
                            &code.unwrap_or(1000).to_be_bytes(),
                            Some(self.next_mask()),
                        );
                        let _ = write_small(stream, &frame);
                        return Err(match code {
                            Some(c) => format!("the bridge closed the WebSocket ({c} {reason})"),
                            None => "the bridge closed the WebSocket".into(),
                        });
                    }
                }
            }
            if read_total >= budget.max_bytes || start.elapsed() >= budget.max_time {
                return Ok(());
            }
            match stream.read(&mut chunk) {
                Ok(0) => return Err("the bridge closed the connection".into()),
                Ok(n) => {
                    read_total += n;
                    decoder.feed(&chunk[..n]);
                }
                Err(e) if would_block(&e) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("connection to the bridge lost: {e}")),
            }
        }
    }

    /// Sends a text message on the open link (device mode writes).
    pub fn send_text(&mut self, text: &str) -> Result<(), String> {
        let mask = self.next_mask();
        match &mut self.link {
            Link::Open { stream, .. } => {
                let frame = ws::encode_frame(Opcode::Text, text.as_bytes(), Some(mask));
                write_small(stream, &frame).map_err(|e| e.to_string())
            }
            _ => Err("not connected to the bridge".into()),
        }
    }

    /// Drops the link (and retries after the minimum backoff).
    pub fn disconnect(&mut self) {
        self.link = Link::Idle {
            retry_at: Some(Instant::now() + self.cfg.backoff_min),
        };
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Writes a small frame even on a non-blocking socket.
fn write_small(stream: &mut TcpStream, mut data: &[u8]) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !data.is_empty() {
        match stream.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if would_block(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    stream.flush()
}

fn resolve(addr: &str) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(ErrorKind::NotFound, "no address"))
}

/// TCP connect (with timeout where supported) and send the opening request.
fn open(url: &WsUrl, key: &str, timeout: Duration) -> io::Result<TcpStream> {
    let addr = resolve(&url.addr())?;
    let stream = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(s) => s,
        // Definite answers from the network (or the sandbox's allow-list).
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::TimedOut
                    | ErrorKind::PermissionDenied
                    | ErrorKind::AddrNotAvailable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
            ) =>
        {
            return Err(e);
        }
        // A platform without connect-with-timeout (a WASI libc may lack it).
        Err(_) => TcpStream::connect(addr)?,
    };
    let _ = stream.set_nodelay(true);
    let mut s = stream;
    s.write_all(ws::handshake_request(url, key).as_bytes())?;
    // A blocking read would stall the host's tick: refuse the link instead.
    if let Err(e) = s.set_nonblocking(true) {
        s.set_read_timeout(Some(Duration::from_millis(1)))
            .map_err(|e2| {
                io::Error::other(format!(
                    "the socket supports neither non-blocking mode ({e}) nor read timeouts ({e2})"
                ))
            })?;
    }
    Ok(s)
}

/// A blocking one-off request/answer exchange on its own connection (used
/// by scan): sends nothing, returns text messages until `done` says stop or
/// `timeout` passes. `keep_going` is polled (cancellation).
pub fn exchange(
    url: &WsUrl,
    timeout: Duration,
    keep_going: &mut dyn FnMut(Duration) -> bool,
    done: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let key = ws::base64(&seed().to_le_bytes().repeat(2));
    let mut stream = open(url, &key, Duration::from_secs(2))
        .map_err(|e| format!("cannot connect to the bridge at {}: {e}", url.addr()))?;
    let start = Instant::now();
    let mut buf = Vec::new();
    let mut decoder = Decoder::default();
    let mut open_yet = false;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return Err(format!(
                "the bridge did not answer within {} ms",
                timeout.as_millis()
            ));
        }
        if !keep_going(elapsed) {
            return Err("cancelled".into());
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err("the bridge closed the connection without an answer".into()),
            Ok(n) => {
                if open_yet {
                    decoder.feed(&chunk[..n]);
                } else {
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(used) =
                        ws::check_handshake_response(&buf, &key).map_err(|e| e.to_string())?
                    {
                        open_yet = true;
                        decoder.feed(&buf[used..]);
                    }
                }
                while let Some(m) = decoder.next_message().map_err(|e| e.to_string())? {
                    match m {
                        Message::Text(t) if done(&t) => return Ok(()),
                        Message::Close(c, r) => {
                            return Err(format!(
                                "the bridge closed the connection ({} {r})",
                                c.unwrap_or(1005)
                            ));
                        }
                        _ => {}
                    }
                }
            }
            Err(e) if would_block(&e) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("connection to the bridge lost: {e}")),
        }
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// A random seed for handshake keys and masks (std's hasher keys come from
/// the OS or WASI random; the clock adds variation between calls).
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(crate::time::now_us());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_address_becomes_the_log_stream() {
        let (u, m) = resolve_url("ws://127.0.0.1:8080").unwrap();
        assert_eq!(
            (u.resource.as_str(), m),
            ("/?command=log-stream", Mode::LogStream)
        );
        let (u, m) =
            resolve_url("ws://h:1/?device=CS108&service=9800&write=9900&notify=9901").unwrap();
        assert_eq!(m, Mode::Device);
        assert!(u.resource.contains("device=CS108"));
        let (u, _) = resolve_url("ws://h:1/?command=log-stream").unwrap();
        assert_eq!(u.resource, "/?command=log-stream");
    }

    #[test]
    fn unreachable_bridge_backs_off_and_reports() {
        // Bind then drop a listener to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cfg = FeedConfig::new(format!("ws://127.0.0.1:{port}"));
        cfg.backoff_min = Duration::from_millis(50);
        let mut feed = Feed::new(cfg);
        let mut ev = Vec::new();
        feed.pump(Budget::default(), &mut ev);
        assert!(ev.is_empty());
        assert_eq!(feed.state(), LinkState::Disconnected);
        assert!(feed.last_error().unwrap().contains("cannot connect"));
        let wait = feed.retry_in(Instant::now()).unwrap();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(50));
        // A second attempt right away is skipped (backoff), not retried.
        feed.pump(Budget::default(), &mut ev);
        assert!(feed.retry_in(Instant::now()).unwrap() > Duration::ZERO);
    }
}
