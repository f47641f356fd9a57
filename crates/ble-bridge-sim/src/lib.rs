//! A simulated web-ble-bridge (the 0.3.0 protocol) with a scripted BLE device.
//!
//! A real WebSocket server on 127.0.0.1:
//! - `/?command=log-stream`: every bridge console line broadcast as
//!   `{"type":"log","timestamp","level","message"}`, packets as `[TX] A7 B3 …`
//!   / `[RX] …` lines, connection lines in the bridge's own wording;
//! - `/?device=…&service=…&write=…&notify=…`: a BLE client session:
//!   `{"type":"connected","device"}`, writes as `{"type":"data","data":[…]}`
//!   answered by the device with `data` messages (notifications);
//! - `/?command=scan&duration=MS`: `{"type":"scan_result","devices":[…]}`,
//!   refused with an `error` while a device is connected.
//!
//! A scripted app can hold the BLE connection and drive request/reply
//! traffic (plus unsolicited notifications) at a set rate and count, so the
//! log stream carries live data without hardware. Every packet carries the
//! simulator's packet number (u32 big-endian at bytes 5..9), so tests can
//! check that nothing was lost or duplicated.

use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, broadcast, oneshot};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

const LOG_QUEUE: usize = 16 * 1024;

/// What the simulated bridge does: where it listens and what it sends.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// TCP port on 127.0.0.1 (0 = any free port).
    pub port: u16,
    /// The simulated peripheral's name.
    pub device_name: String,
    /// Scripted packets per second (0 = as fast as the log clients take them).
    pub rate: u32,
    /// Scripted packets in all (0 = without end).
    pub count: u64,
    /// An unsolicited notification after every N request/reply exchanges (0 = none).
    pub notify_every: u32,
    /// Start the scripted traffic only once a log-stream client is connected.
    pub wait_for_client: bool,
    /// The scripted app holds the BLE connection (false: the device is free
    /// for a device client or a scan).
    pub auto_connect: bool,
    /// Packet number stamped into the first packet.
    pub first_number: u32,
    /// Upper bound for a scan's duration, in milliseconds (tests use short scans).
    pub scan_ms_cap: Option<u64>,
    /// Print connections to stderr.
    pub verbose: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            port: 8080,
            device_name: "CS108Reader2603A7".into(),
            rate: 20,
            count: 0,
            notify_every: 4,
            wait_for_client: false,
            auto_connect: true,
            first_number: 1,
            scan_ms_cap: None,
            verbose: false,
        }
    }
}

struct Shared {
    cfg: SimConfig,
    log_tx: broadcast::Sender<Utf8Bytes>,
    log_clients: AtomicUsize,
    client_arrived: Notify,
    ble_busy: AtomicBool,
    number: AtomicU32,
    sent: AtomicU64,
    script_done: AtomicBool,
}

/// A running simulator; dropping it (or `stop`) kills it like a dead
/// process: every connection is cut.
pub struct SimHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimHandle {
    /// The address the bridge listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// The bridge's WebSocket URL (`ws://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }
    /// Scripted packets emitted so far.
    pub fn packets_sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }
    /// True once the scripted app has sent `count` packets.
    pub fn script_done(&self) -> bool {
        self.shared.script_done.load(Ordering::Relaxed)
    }
    /// Stops the bridge and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the simulator on its own thread and runtime.
pub fn spawn(cfg: SimConfig) -> std::io::Result<SimHandle> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = rt.block_on(TcpListener::bind(("127.0.0.1", cfg.port)))?;
    let addr = listener.local_addr()?;
    let (log_tx, _) = broadcast::channel(LOG_QUEUE);
    let shared = Arc::new(Shared {
        number: AtomicU32::new(cfg.first_number),
        cfg,
        log_tx,
        log_clients: AtomicUsize::new(0),
        client_arrived: Notify::new(),
        ble_busy: AtomicBool::new(false),
        sent: AtomicU64::new(0),
        script_done: AtomicBool::new(false),
    });
    let (stop_tx, stop_rx) = oneshot::channel();
    let sh = shared.clone();
    let thread = std::thread::Builder::new()
        .name("ble-bridge-sim".into())
        .spawn(move || {
            rt.block_on(async move {
                if sh.cfg.auto_connect {
                    tokio::spawn(script(sh.clone()));
                }
                tokio::select! {
                    _ = accept_loop(listener, sh) => {}
                    _ = stop_rx => {}
                }
            });
            // Dropping the runtime cancels every task and closes every socket.
            drop(rt);
        })?;
    Ok(SimHandle {
        addr,
        shared,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// Runs the simulator on the current thread until the process ends.
pub fn run_forever(cfg: SimConfig) -> std::io::Result<()> {
    let h = spawn(cfg)?;
    eprintln!("ble-bridge-sim listening on {}", h.url());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

async fn accept_loop(listener: TcpListener, sh: Arc<Shared>) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(handle(stream, peer, sh.clone()));
    }
}

fn iso_now() -> String {
    let us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    iso_millis(us)
}

/// `2025-07-25T10:00:00.123Z`, the bridge's log timestamp, for a time in
/// microseconds since the Unix epoch.
fn iso_millis(us: i64) -> String {
    let t = plugin_kit::civil::DateTime::from_unix_secs(us.div_euclid(1_000_000));
    format!(
        "{}.{:03}Z",
        t.iso_seconds(),
        us.rem_euclid(1_000_000) / 1000
    )
}

/// Bytes as the bridge's hex: uppercase pairs separated by spaces.
pub fn format_hex(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 3);
    for (i, b) in data.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&format!("{b:02X}"));
    }
    s
}

fn log_json(level: &str, message: &str) -> String {
    serde_json::json!({"type": "log", "timestamp": iso_now(), "level": level, "message": message})
        .to_string()
}

impl Shared {
    fn log(&self, level: &str, message: &str) {
        if self.cfg.verbose {
            eprintln!("[sim] {message}");
        }
        let _ = self.log_tx.send(log_json(level, message).into());
    }

    fn next_number(&self) -> u32 {
        self.number.fetch_add(1, Ordering::Relaxed)
    }

    fn claim_ble(&self) -> bool {
        self.ble_busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn ble_connected(&self) {
        self.log("info", "[BridgeServer] New WebSocket connection");
        self.log(
            "info",
            &format!("[NobleTransport] Connecting to {}...", self.cfg.device_name),
        );
        self.log(
            "info",
            "[NobleTransport] Connected to BLE device (confirmed by event)",
        );
        self.log(
            "info",
            "[BridgeServer] BLE connected, sending connected message",
        );
    }

    fn ble_released(&self) {
        self.log("info", "[BridgeServer] WebSocket closed, disconnecting BLE");
        self.log("info", "[BridgeServer] BLE disconnected successfully");
        self.ble_busy.store(false, Ordering::Release);
    }

    /// Logs a packet the way the 0.3.0 bridge does at debug level.
    fn packet(&self, tag: &str, data: &[u8]) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.log("info", &format!("[{tag}] {}", format_hex(data)));
    }
}

/// The scripted peripheral's answers. Packet numbers are u32 BE at 5..9.
pub mod device {
    /// A request as the scripted app writes it: command `cmd`.
    pub fn request(number: u32, cmd: u8) -> Vec<u8> {
        let mut v = vec![0xA7, 0xB3, 0x0A, 0xD9, 0x82];
        v.extend_from_slice(&number.to_be_bytes());
        v.extend_from_slice(&[0xA0, cmd]);
        v
    }

    /// The device's reply to a write: for a scripted request, the command
    /// and the request's number; otherwise an echo of the first 16 bytes.
    pub fn reply(number: u32, req: &[u8]) -> Vec<u8> {
        let mut v = vec![0xB3, 0xA7, 0, 0xD9, 0x82];
        v.extend_from_slice(&number.to_be_bytes());
        if req.len() == 11 && req[..2] == [0xA7, 0xB3] {
            v.extend_from_slice(&[0xA0, req[10]]);
            v.extend_from_slice(&req[5..9]);
        } else {
            v.push(0xEE);
            v.extend_from_slice(&req[..req.len().min(16)]);
        }
        v[2] = (v.len() - 3) as u8;
        v
    }

    /// An unsolicited notification (say, an inventory tag read).
    pub fn notification(number: u32) -> Vec<u8> {
        let mut v = vec![0xB3, 0xA7, 0x09, 0xD9, 0x81];
        v.extend_from_slice(&number.to_be_bytes());
        v.extend_from_slice(&[0x81, 0x00, (number >> 8) as u8 ^ 0x30, number as u8]);
        v
    }

    /// The packet number a simulator packet carries.
    pub fn number_of(packet: &[u8]) -> Option<u32> {
        Some(u32::from_be_bytes(packet.get(5..9)?.try_into().ok()?))
    }
}

/// The scripted app: holds the BLE link and drives request/reply traffic.
async fn script(sh: Arc<Shared>) {
    if sh.cfg.wait_for_client {
        while sh.log_clients.load(Ordering::Acquire) == 0 {
            // A timeout covers a client arriving between the check and the wait.
            let _ =
                tokio::time::timeout(Duration::from_millis(50), sh.client_arrived.notified()).await;
        }
    }
    while !sh.claim_ble() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sh.ble_connected();
    let start = Instant::now();
    let (count, rate) = (sh.cfg.count, sh.cfg.rate as u64);
    let mut emitted = 0u64;
    let mut exchanges = 0u32;
    'run: loop {
        let cmd = (exchanges % 8) as u8;
        let mut burst = vec![("TX", device::request(sh.next_number(), cmd))];
        let req = burst[0].1.clone();
        burst.push(("RX", device::reply(sh.next_number(), &req)));
        exchanges += 1;
        if sh.cfg.notify_every > 0 && exchanges.is_multiple_of(sh.cfg.notify_every) {
            burst.push(("RX", device::notification(sh.next_number())));
        }
        for (tag, data) in burst {
            if count > 0 && emitted >= count {
                break 'run;
            }
            sh.packet(tag, &data);
            emitted += 1;
            let n = emitted;
            // Back-pressure: never outrun the slowest log client's queue.
            while sh.log_tx.len() > LOG_QUEUE / 2 && sh.log_tx.receiver_count() > 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if let Some(us) = (n * 1_000_000).checked_div(rate) {
                let due = start + Duration::from_micros(us);
                let now = Instant::now();
                if due > now + Duration::from_millis(1) {
                    tokio::time::sleep(due - now).await;
                }
            } else if n.is_multiple_of(256) {
                tokio::task::yield_now().await;
            }
        }
        if count > 0 && emitted >= count {
            break;
        }
    }
    sh.script_done.store(true, Ordering::Release);
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn send_json(ws: &mut Ws, v: serde_json::Value) -> bool {
    ws.send(Message::text(v.to_string())).await.is_ok()
}

async fn handle(stream: TcpStream, peer: SocketAddr, sh: Arc<Shared>) {
    let mut query = String::new();
    // The error type is tungstenite's (an HTTP response), not ours to shrink.
    #[allow(clippy::result_large_err)]
    let cb = |req: &Request, resp: Response| {
        query = req.uri().query().unwrap_or("").to_string();
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, cb).await else {
        return;
    };
    if sh.cfg.verbose {
        eprintln!("[sim] {peer} connected with ?{query}");
    }
    match query_param(&query, "command") {
        Some("log-stream") => log_stream(ws, sh).await,
        Some("scan") => {
            let duration: u64 = query_param(&query, "duration")
                .and_then(|d| d.parse().ok())
                .unwrap_or(5000);
            scan(ws, duration, sh).await
        }
        Some(other) => {
            send_json(
                &mut ws,
                serde_json::json!({"type":"error","error": format!("Unknown command: {other}")}),
            )
            .await;
            let _ = ws.close(None).await;
        }
        None => device_session(ws, &query, sh).await,
    }
}

async fn log_stream(ws: Ws, sh: Arc<Shared>) {
    let mut rx = sh.log_tx.subscribe();
    let (mut sink, mut stream) = ws.split();
    if sink
        .send(Message::text(log_json("info", "Connected to log stream")))
        .await
        .is_err()
    {
        return;
    }
    sh.log_clients.fetch_add(1, Ordering::AcqRel);
    sh.client_arrived.notify_waiters();
    let forward = async {
        loop {
            let first = match rx.recv().await {
                Ok(m) => m,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if sink.feed(Message::Text(first)).await.is_err() {
                return;
            }
            for _ in 0..1024 {
                match rx.try_recv() {
                    Ok(m) => {
                        if sink.feed(Message::Text(m)).await.is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            if sink.flush().await.is_err() {
                return;
            }
        }
    };
    let drain = async { while let Some(Ok(_)) = stream.next().await {} };
    tokio::select! {
        _ = forward => {}
        _ = drain => {}
    }
    sh.log_clients.fetch_sub(1, Ordering::AcqRel);
}

async fn scan(mut ws: Ws, duration: u64, sh: Arc<Shared>) {
    if sh.ble_busy.load(Ordering::Acquire) {
        send_json(
            &mut ws,
            serde_json::json!({"type":"error","error":"Cannot scan while connected to a device. Please disconnect first."}),
        )
        .await;
        let _ = ws.close(None).await;
        return;
    }
    sh.log(
        "info",
        &format!("[BridgeServer] Scanning for {duration} ms"),
    );
    let wait = sh.cfg.scan_ms_cap.map_or(duration, |c| duration.min(c));
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let devices = serde_json::json!([
        {"id": "c0:ff:ee:26:03:a7", "name": sh.cfg.device_name, "rssi": -48},
        {"id": "d4:36:39:aa:01:02", "name": "HeartRate-7", "rssi": -71},
        {"id": "5a:0b:1e:00:00:01", "name": null, "rssi": -89},
    ]);
    send_json(
        &mut ws,
        serde_json::json!({"type":"scan_result","devices": devices}),
    )
    .await;
    let _ = ws.close(None).await;
}

async fn device_session(mut ws: Ws, query: &str, sh: Arc<Shared>) {
    let ok = ["device", "service", "write", "notify"]
        .iter()
        .all(|p| query_param(query, p).is_some_and(|v| !v.is_empty()));
    if !ok {
        send_json(
            &mut ws,
            serde_json::json!({"type":"error","error":"Missing required parameters: device, service, write, notify"}),
        )
        .await;
        let _ = ws.close(None).await;
        return;
    }
    let prefix = query_param(query, "device").unwrap_or("");
    if !sh.cfg.device_name.starts_with(prefix) {
        sh.log("error", "[BridgeServer] Error: No device found");
        send_json(
            &mut ws,
            serde_json::json!({"type":"error","error":"No device found"}),
        )
        .await;
        let _ = ws.close(None).await;
        return;
    }
    if !sh.claim_ble() {
        sh.log(
            "warn",
            "[BridgeServer] Rejecting connection - BLE state: connected",
        );
        send_json(
            &mut ws,
            serde_json::json!({"type":"error","error":"Another connection is active"}),
        )
        .await;
        let _ = ws.close(None).await;
        return;
    }
    sh.ble_connected();
    if send_json(
        &mut ws,
        serde_json::json!({"type":"connected","device": sh.cfg.device_name}),
    )
    .await
    {
        let mut writes = 0u32;
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(t) = msg else {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) else {
                continue;
            };
            if v["type"] != "data" {
                continue;
            }
            let Some(data) = v["data"].as_array() else {
                continue;
            };
            let bytes: Vec<u8> = data
                .iter()
                .filter_map(|x| x.as_u64().and_then(|x| u8::try_from(x).ok()))
                .collect();
            sh.packet("TX", &bytes);
            let mut answers = vec![device::reply(sh.next_number(), &bytes)];
            writes += 1;
            if sh.cfg.notify_every > 0 && writes.is_multiple_of(sh.cfg.notify_every) {
                answers.push(device::notification(sh.next_number()));
            }
            for a in answers {
                sh.packet("RX", &a);
                if !send_json(&mut ws, serde_json::json!({"type":"data","data": a})).await {
                    break;
                }
            }
        }
    }
    sh.ble_released();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_timestamps_are_utc_to_the_millisecond() {
        assert_eq!(iso_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso_millis(1_753_437_600_123_456),
            "2025-07-25T10:00:00.123Z"
        );
        assert_eq!(iso_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn device_packets_carry_numbers() {
        let req = device::request(7, 3);
        assert_eq!(device::number_of(&req), Some(7));
        let rep = device::reply(8, &req);
        assert_eq!(device::number_of(&rep), Some(8));
        assert_eq!(&rep[9..11], &[0xA0, 3]);
        assert_eq!(&rep[11..15], &7u32.to_be_bytes());
        assert_eq!(rep[2] as usize, rep.len() - 3);
        let echo = device::reply(9, &[1, 2, 3]);
        assert_eq!(&echo[9..], &[0xEE, 1, 2, 3]);
        assert_eq!(device::number_of(&device::notification(10)), Some(10));
    }

    #[test]
    fn iso_now_is_well_formed() {
        let s = iso_now();
        assert_eq!(s.len(), 24);
        assert!(s.ends_with('Z') && s.as_bytes()[10] == b'T');
    }
}
