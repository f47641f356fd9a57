//! wit-bindgen glue: WIT argument records into [`Service`] calls, its
//! answers out as the WIT records, the host's tick pumping the bridge, and
//! the resources, prompt and completion of `offers`.

use crate::{btsnoop, buffer, feed, hex, offers, service, time};

wit_bindgen::generate!({
    path: "../../wit/ble-buffer",
    world: "plugin",
    generate_all,
});

use benchtop::host::{progress, resources};
use buffer::{Event, Packet};
use exports::benchtop::ble_buffer::offers as offers_wit;
use exports::benchtop::ble_buffer::tools::{self as wit, Guest};
use exports::benchtop::host::tick;
use feed::Budget;
use service::{Found, Logs, LogsArgs, SearchArgs, Service, ToolError};
use std::cell::RefCell;
use std::time::Duration;
use time::{format_iso, now_us};

thread_local! {
    static SERVICE: RefCell<Option<Service>> = const { RefCell::new(None) };
    static WATCH: RefCell<offers::Watch> = RefCell::new(offers::Watch::default());
}

/// Runs `f` on the plugin state, created from the settings on first use,
/// then tells the host which resources changed: once per call or tick
/// however many packets it drained (the host merges further).
fn with<R>(f: impl FnOnce(&mut Service) -> R) -> R {
    SERVICE.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.get_or_insert_with(Service::from_env);
        let r = f(s);
        for uri in WATCH.with(|w| w.borrow_mut().changed(s)) {
            resources::changed(uri);
        }
        r
    })
}

/// Tool calls drain what the bridge sent since the last tick first.
fn fresh<R>(f: impl FnOnce(&mut Service) -> R) -> R {
    with(|s| {
        s.pump(Budget::default());
        f(s)
    })
}

fn entry(p: &Packet) -> wit::LogEntry {
    wit::LogEntry {
        id: p.id,
        timestamp: format_iso(p.ts),
        direction: p.dir.label().into(),
        hex: hex::format_hex(&p.data),
        size: p.data.len() as u32,
        att: p.att.map(|a| wit::AttInfo {
            opcode: a.opcode,
            op: btsnoop::opcode_name(a.opcode).into(),
            handle: a.handle,
            connection: a.conn,
        }),
    }
}

fn event(e: &Event) -> wit::SystemEvent {
    wit::SystemEvent {
        id: e.id,
        timestamp: format_iso(e.ts),
        level: e.level.label().into(),
        message: e.message.clone(),
    }
}

fn err(e: ToolError) -> wit::ToolError {
    wit::ToolError {
        code: e.code.into(),
        message: e.message,
    }
}

fn dir(d: wit::Direction) -> buffer::Direction {
    match d {
        wit::Direction::Tx => buffer::Direction::Tx,
        wit::Direction::Rx => buffer::Direction::Rx,
    }
}

fn ms_between(a: i64, b: i64) -> u32 {
    ((b - a).max(0) / 1000).min(u32::MAX as i64) as u32
}

struct Component;

impl Guest for Component {
    fn get_logs(a: wit::GetLogsArgs) -> Result<wit::LogsPage, wit::ToolError> {
        let args = LogsArgs {
            since: a.since,
            filter: a.filter,
            direction: a.direction.map(dir),
            limit: a.limit,
            reader: a.reader,
            newest: a.newest,
            include_events: a.include_events,
            handle: a.handle,
            connection: a.connection,
            opcode: a.opcode,
            until: a.until,
        };
        fresh(|s| {
            let (oldest, newest) = (s.log.oldest_id(), s.log.newest_id());
            let Logs { page, notes } = s.get_logs(&args).map_err(err)?;
            let logs: Vec<_> = page.entries.iter().map(|p| entry(p)).collect();
            Ok(wit::LogsPage {
                count: logs.len() as u32,
                logs,
                total_matching: page.total_matching as u32,
                truncated: page.truncated,
                next_since: page.next_since.to_string(),
                oldest_available_id: oldest,
                newest_id: newest,
                events: page.events.iter().map(|e| event(e)).collect(),
                note: (!notes.is_empty()).then(|| notes.join("; ")),
            })
        })
    }

    fn search_packets(a: wit::SearchArgs) -> Result<wit::SearchResult, wit::ToolError> {
        let args = SearchArgs {
            hex_pattern: a.hex_pattern,
            limit: a.limit,
            direction: a.direction.map(dir),
            since: a.since,
            handle: a.handle,
            connection: a.connection,
            opcode: a.opcode,
        };
        fresh(|s| {
            let Found {
                pattern,
                out,
                mut notes,
            } = s.search(&args).map_err(err)?;
            let matches: Vec<_> = out
                .hits
                .iter()
                .map(|h| {
                    let latency = match (h.reply, h.request) {
                        (Some(r), _) => Some(ms_between(h.packet.ts, r.ts)),
                        (_, Some(q)) => Some(ms_between(q.ts, h.packet.ts)),
                        _ => None,
                    };
                    wit::PacketMatch {
                        packet: entry(h.packet),
                        reply: h.reply.map(entry),
                        request: h.request.map(entry),
                        latency_ms: latency,
                    }
                })
                .collect();
            let truncated = out.total_matching > matches.len();
            if truncated {
                notes.insert(0, format!(
                    "{} older matches left out (limit or answer size cap); narrow with since, direction, handle or a longer pattern",
                    out.total_matching - matches.len()
                ));
            }
            Ok(wit::SearchResult {
                count: matches.len() as u32,
                note: (!notes.is_empty()).then(|| notes.join("; ")),
                matches,
                total_matching: out.total_matching as u32,
                truncated,
                pattern,
            })
        })
    }

    fn get_connection_state() -> wit::ConnectionState {
        fresh(|s| wit::ConnectionState {
            connected: s.ble.connected,
            device_name: s.ble.device.clone(),
            connected_at: s.ble.connected_at.map(format_iso),
            last_activity: s.ble.last_activity.map(format_iso),
            packets_transmitted: s.log.totals(buffer::Direction::Tx).packets,
            packets_received: s.log.totals(buffer::Direction::Rx).packets,
            bridge: link(s),
        })
    }

    fn status() -> wit::StatusInfo {
        fresh(|s| wit::StatusInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_s: s.uptime().as_secs(),
            bridge_url: s.feed.url(),
            bridge_connected: s.link_state() == feed::LinkState::Connected,
            log_buffer_size: s.log.capacity() as u32,
            log_buffer_used: s.log.len() as u32,
            log_buffer_bytes: s.log.bytes() as u64,
            log_buffer_byte_limit: s.log.byte_limit() as u64,
            system_events: s.log.events().count() as u32,
            oldest_id: s.log.oldest_id(),
            newest_id: s.log.newest_id(),
            readers: s
                .log
                .readers()
                .map(|(name, last_id)| wit::ReaderPosition {
                    name: name.into(),
                    last_id,
                })
                .collect(),
        })
    }

    fn scan_devices(a: wit::ScanArgs) -> Result<wit::ScanResult, wit::ToolError> {
        with(|s| {
            let total = a.duration.unwrap_or(5000) as u64;
            let mut keep_going = |elapsed: Duration| {
                progress::report((elapsed.as_millis() as u64).min(total), total, "scanning")
            };
            let (devices, ms) = s.scan(a.duration, &mut keep_going).map_err(err)?;
            Ok(wit::ScanResult {
                note: devices.is_empty().then(|| service::empty_scan_note(ms)),
                devices: devices
                    .into_iter()
                    .map(|d| wit::Device {
                        id: d.id,
                        name: d.name,
                        rssi: d.rssi,
                    })
                    .collect(),
                duration_ms: ms,
            })
        })
    }

    fn import_btsnoop(a: wit::ImportArgs) -> Result<wit::ImportResult, wit::ToolError> {
        let path = plugin_kit::paths::resolve(&a.path);
        with(|s| {
            let r = s
                .import_btsnoop(&path, a.force.unwrap_or(false))
                .map_err(err)?;
            Ok(wit::ImportResult {
                datalink: r.datalink,
                records: r.records,
                tx: r.tx,
                rx: r.rx,
                skipped: r.skipped,
                first_id: r.first_id,
                last_id: r.last_id,
                warnings: r.warnings,
                since: r.since,
                evicted: r.evicted,
                content_hash: r.content_hash,
                capture_start: r.capture_start.map(format_iso),
                capture_end: r.capture_end.map(format_iso),
                holds: r.holds.into_iter().map(String::from).collect(),
                contents: r.contents,
                channels: r
                    .channels
                    .into_iter()
                    .map(|(channel, frames)| wit::ChannelCount { channel, frames })
                    .collect(),
                handles: r
                    .handles
                    .into_iter()
                    .map(|h| wit::HandleCount {
                        connection: h.conn,
                        handle: h.handle,
                        writes: h.writes,
                        notifications: h.notifications,
                    })
                    .collect(),
                handles_left_out: r.handles_left_out,
                note: r.note,
                already_imported: r.already_imported,
            })
        })
    }

    fn get_metrics() -> wit::Metrics {
        fresh(|s| {
            let now = now_us();
            let m = |d| {
                let t = s.log.totals(d);
                wit::DirectionMetrics {
                    packets: t.packets,
                    bytes: t.bytes,
                    rate_recent: s.log.rate(now, d, 10),
                    rate_minute: s.log.rate(now, d, 60),
                }
            };
            wit::Metrics {
                tx: m(buffer::Direction::Tx),
                rx: m(buffer::Direction::Rx),
                buffer_capacity: s.log.capacity() as u32,
                buffer_used: s.log.len() as u32,
                // Of the nearer limit: a ring full by bytes evicts too.
                buffer_use_percent: s.log.use_percent(),
                evicted: s.log.evicted(),
                system_events: s.log.events_total(),
                parse_errors: s.parse_errors(),
                bridge_connections: s.feed.connections(),
                imported: {
                    let m = s.import_metrics();
                    wit::ImportMetrics {
                        files: m.files,
                        tx: m.tx,
                        rx: m.rx,
                        bytes: m.bytes,
                        evicted: m.evicted,
                        last_file: m.last_file,
                    }
                },
                warnings: s.warnings(),
            }
        })
    }
}

fn link(s: &Service) -> wit::BridgeLink {
    wit::BridgeLink {
        url: s.feed.url(),
        state: s.link_state().label().into(),
        mode: s.feed.mode().label().into(),
        connections: s.feed.connections(),
        last_error: s.feed.last_error().map(str::to_string),
        retry_in_ms: s
            .feed
            .retry_in(std::time::Instant::now())
            .map(|d| d.as_millis().min(u32::MAX as u128) as u32),
    }
}

impl offers_wit::Guest for Component {
    fn skill_ble_sniffing() -> String {
        // A skill file, served as `skill://ble-sniffing/SKILL.md`.
        include_str!("../skills/ble-sniffing/SKILL.md").into()
    }

    fn buffer() -> String {
        fresh(|s| offers::buffer(s))
    }

    fn buffer_since(since: String) -> Result<String, wit::ToolError> {
        fresh(|s| offers::buffer_since(s, &since).map_err(err))
    }

    fn connection() -> String {
        fresh(|s| offers::connection(s))
    }

    fn ble_sniff_session(device: Option<String>, goal: Option<String>) -> String {
        fresh(|s| offers::sniff_session(s, device.as_deref(), goal.as_deref()))
    }

    fn complete(target: String, argument: String, value: String) -> Vec<String> {
        with(|s| offers::complete(s, &target, &argument, &value))
    }
}

impl tick::Guest for Component {
    fn tick() {
        with(|s| {
            s.pump(Budget::default());
        });
    }
}

// Natively the crate is built as a cdylib too (for the integration tests),
// and the component export names (`benchtop:…/tools@0.1.0#get-logs`) are not
// valid in an ELF linker version script: export on wasm only.
#[cfg(target_arch = "wasm32")]
export!(Component);
