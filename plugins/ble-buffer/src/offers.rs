//! What the plugin offers besides tools: the packet buffer and the
//! connection state as resources (`ble://buffer`, `ble://buffer/{since}`,
//! `ble://connection`), which of them changed since the last look, the
//! `ble_sniff_session` prompt and argument completion. Free of WIT types;
//! `component` only forwards.

use crate::buffer::{Direction, Packet};
use crate::service::{Service, ToolError};
use crate::since::{Since, parse_since};
use crate::time::{format_iso, now_us};
use crate::{btsnoop, hex};
use serde_json::{Value, json};

/// The newest packets with the buffer's counts; subscribers hear when packets
/// arrive.
pub const BUFFER_URI: &str = "ble://buffer";
/// The BLE link and the bridge link; subscribers hear when either changes.
pub const CONNECTION_URI: &str = "ble://connection";
/// The template as written in the WIT (completion targets name it so).
pub const BUFFER_TEMPLATE: &str = "ble://buffer/{since}";
/// The prompt that walks an agent through a sniffing session.
pub const PROMPT: &str = "ble_sniff_session";
/// Packets a buffer resource shows at most.
pub const RESOURCE_PACKETS: usize = 50;
/// Payload bytes a buffer resource shows at most (a resource is read whole,
/// so it stays small whatever the packets' sizes).
pub const RESOURCE_BYTES: usize = 16 * 1024;
/// Completion values returned at most (the host caps at 100 as well).
const MAX_COMPLETIONS: usize = 50;

/// Leaves out every `null` member of the objects in `v`, at any depth: the
/// host writes a typed result's `none` fields that way (absent, not null),
/// and the resources show packets and links exactly as the tools do.
fn without_nulls(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|_, x| !x.is_null());
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// A packet as get_logs shows it (the same field names).
fn entry(p: &Packet) -> Value {
    json!({
        "id": p.id,
        "timestamp": format_iso(p.ts),
        "direction": p.dir.label(),
        "hex": hex::format_hex(&p.data),
        "size": p.data.len(),
        "att": p.att.map(|a| json!({
            "opcode": a.opcode,
            "op": btsnoop::opcode_name(a.opcode),
            "handle": a.handle,
            "connection": a.conn,
        })),
    })
}

/// `ble://connection`: the BLE link and the bridge link. Only what changes
/// with the state (no packet counts, no last-activity time, no retry
/// countdown), so its contents change exactly when subscribers are told;
/// the counts are in `ble://buffer`.
pub fn connection(s: &Service) -> String {
    without_nulls(json!({
        "connected": s.ble.connected,
        "device_name": s.ble.device,
        "connected_at": s.ble.connected_at.map(format_iso),
        "bridge": {
            "url": s.feed.url(),
            "state": s.link_state().label(),
            "mode": s.feed.mode().label(),
            "connections": s.feed.connections(),
            "last_error": s.feed.last_error(),
        },
    }))
    .to_string()
}

/// `ble://buffer/{since}`: the oldest packets after `since`, to page
/// with `next_since`. Reading never moves a get_logs reader's position, so
/// `since="last"` is refused.
pub fn buffer_since(s: &Service, since: &str) -> Result<String, ToolError> {
    match parse_since(since, now_us()) {
        Ok(Since::Last) => Err(ToolError::new(
            "BAD_SINCE",
            "ble://buffer/last has no reader to continue from: use a packet id (the next_since of the previous read), a duration such as 30s, an ISO timestamp or all",
        )),
        Ok(w) => Ok(page(s, Some(w))),
        Err(e) => Err(ToolError::new("BAD_SINCE", e.to_string())),
    }
}

/// `ble://buffer`: the newest packets.
pub fn buffer(s: &Service) -> String {
    page(s, None)
}

/// Packets of `window` (None: the newest ones), at most
/// [`RESOURCE_PACKETS`] and [`RESOURCE_BYTES`] of payload, oldest first,
/// with the buffer's counts.
fn page(s: &Service, window: Option<Since>) -> String {
    let log = &s.log;
    let in_window = |p: &&Packet| match &window {
        None | Some(Since::Last) => true,
        Some(Since::AfterId(id)) => p.id > *id,
        Some(Since::Time(t)) => p.ts >= *t,
    };
    let (mut picked, mut bytes, mut total) = (Vec::new(), 0usize, 0usize);
    let fits = |picked: &Vec<&Packet>, bytes: usize, p: &Packet| {
        picked.len() < RESOURCE_PACKETS
            && (picked.is_empty() || bytes + p.data.len() <= RESOURCE_BYTES)
    };
    if window.is_none() {
        // The newest ones: walk back from the end.
        for p in log.packets().rev() {
            if !fits(&picked, bytes, p) {
                break;
            }
            bytes += p.data.len();
            picked.push(p);
        }
        picked.reverse();
        total = log.len();
    } else {
        for p in log.packets().filter(in_window) {
            total += 1;
            if picked.len() == total - 1 && fits(&picked, bytes, p) {
                bytes += p.data.len();
                picked.push(p);
            }
        }
    }
    let newest = log.newest_id();
    let more_after = window.is_some() && total > picked.len();
    let next_since = match picked.last() {
        Some(p) if more_after => p.id,
        _ => newest.unwrap_or(0),
    };
    let left_out = total - picked.len();
    let note = match (window.is_some(), left_out) {
        (_, 0) => None,
        (false, n) => Some(format!(
            "{n} older packets left out: read ble://buffer/{{since}} or call get_logs to page through them"
        )),
        (true, n) => Some(format!(
            "{n} more packets: read ble://buffer/{next_since} to continue"
        )),
    };
    let live = |d| log.totals(d).packets;
    let imported = log.imported(Direction::Tx).packets + log.imported(Direction::Rx).packets;
    without_nulls(json!({
        "buffer_capacity": log.capacity(),
        "buffer_used": log.len(),
        "buffer_bytes": log.bytes(),
        "buffer_byte_limit": log.byte_limit(),
        "oldest_id": log.oldest_id(),
        "newest_id": newest,
        "packets_transmitted": live(Direction::Tx),
        "packets_received": live(Direction::Rx),
        "packets_imported": imported,
        "last_activity": s.ble.last_activity.map(format_iso),
        "count": picked.len(),
        "total_matching": total,
        "next_since": next_since.to_string(),
        "logs": picked.iter().map(|p| entry(p)).collect::<Vec<_>>(),
        "note": note,
    }))
    .to_string()
}

/// Remembers what subscribers last heard of, so each pump announces a
/// resource at most once, and only when its contents changed.
#[derive(Debug, Default)]
pub struct Watch {
    connection: Option<String>,
    buffer: Option<(Option<u64>, usize)>,
}

impl Watch {
    /// The resources whose contents changed since the last call.
    pub fn changed(&mut self, s: &Service) -> Vec<&'static str> {
        let mut out = Vec::new();
        let buffer = Some((s.log.newest_id(), s.log.len()));
        if self.buffer != buffer {
            self.buffer = buffer;
            out.push(BUFFER_URI);
        }
        let conn = connection(s);
        if self.connection.as_ref() != Some(&conn) {
            self.connection = Some(conn);
            out.push(CONNECTION_URI);
        }
        out
    }
}

/// Characters of a `ble_sniff_session` goal quoted in the prompt.
const GOAL_MAX: usize = 2000;

/// The `ble_sniff_session` prompt: the steps of a capture session with the
/// real tools, starting from the plugin's state now.
pub fn sniff_session(s: &Service, device: Option<&str>, goal: Option<&str>) -> String {
    // Both are quoted back in the prompt, bounded (hardening item 11): a
    // device name is short, a goal is free text worth a paragraph.
    let device = device.map(str::trim).filter(|d| !d.is_empty());
    let shown = device.map(plugin_kit::text::clip);
    let goal = goal.map(str::trim).filter(|g| !g.is_empty()).map_or_else(
        || "understand the protocol the device speaks: which commands the host writes and what the device answers".to_owned(),
        |g| plugin_kit::text::head(g, GOAL_MAX),
    );
    let link = s.link_state().label();
    let now = match (&s.ble.device, s.ble.connected) {
        (Some(d), true) => format!("the bridge ({link}) has {d} connected"),
        (None, true) => format!("the bridge ({link}) has a device connected"),
        (_, false) => format!("the bridge link is {link} and no BLE device is connected"),
    };
    let buffered = match (s.log.oldest_id(), s.log.newest_id()) {
        (Some(a), Some(b)) => format!("{} packets are buffered (ids {a}..{b})", s.log.len()),
        _ => "the buffer is empty".to_string(),
    };
    let target = shown
        .as_ref()
        .map_or("the device".to_string(), |d| format!("the device {d}"));
    let connect = match &shown {
        Some(d) if s.ble.connected && s.ble.device.as_deref() == device => {
            format!("{d} is already connected: go on with step 3.")
        }
        _ if s.ble.connected => "A device is connected already; scan_devices is refused while it is (SCAN_WHILE_CONNECTED). If it is not the one you want, ask the user to disconnect it.".to_string(),
        _ => format!("Call scan_devices (duration 5000 ms or more) and find {target} by name or address; then ask the user to connect it through the bridge's client and check with get_connection_state until connected is true."),
    };
    format!(
        "You are sniffing BLE traffic with the ble-buffer tools to {goal}.\n\
         Right now {now}; {buffered}.\n\n\
         1. Call get_connection_state to confirm the bridge link (bridge.state) and the BLE connection.\n\
         2. {connect}\n\
         3. Subscribe to the resource ble://buffer to hear when packets arrive (or read it for the newest {RESOURCE_PACKETS}), and ble://connection for connects and disconnects.\n\
         4. Ask the user to perform one action on {target} at a time, then call get_logs with since set to the previous answer's next_since (reader and since=\"last\" work too), so each action's packets are read once and in order.\n\
         5. For a command you recognise, call search_packets with its hex bytes (?? matches any byte): each TX match comes with the device's reply and the latency.\n\
         6. If the user has a capture instead (Android btsnoop_hci.log or btmon -w), call import_btsnoop with its path, then get_logs with the answer's since; imported packets carry ATT handles, so filter by handle and opcode.\n\
         7. Use get_metrics to check for evicted packets or bridge problems before drawing conclusions.\n\n\
         Report the commands (TX) and answers (RX) as a table of hex patterns with what each one means, and say which ones you could not explain."
    )
}

/// Completion values for an argument of the prompt or a template variable,
/// starting with `value` (case ignored), at most [`MAX_COMPLETIONS`].
pub fn complete(s: &Service, target: &str, argument: &str, value: &str) -> Vec<String> {
    let pool: Vec<String> = match (target, argument) {
        (PROMPT, "device") => {
            // Newest first; names before addresses, each once.
            let mut v = Vec::new();
            for d in s.ble.device.iter() {
                v.push(d.clone());
            }
            for (id, name) in s.seen_devices().rev() {
                for x in [name, id] {
                    if !x.is_empty() && !v.iter().any(|y| y == x) {
                        v.push(x.to_string());
                    }
                }
            }
            v
        }
        (BUFFER_TEMPLATE, "since") => {
            let mut v = vec!["all".to_string()];
            if let Some(n) = s.log.newest_id() {
                v.push(n.saturating_sub(RESOURCE_PACKETS as u64).to_string());
            }
            v.extend(["30s", "5m", "1h"].map(String::from));
            v
        }
        _ => Vec::new(),
    };
    let lower = value.to_lowercase();
    pool.into_iter()
        .filter(|v| v.to_lowercase().starts_with(&lower))
        .take(MAX_COMPLETIONS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::FeedConfig;

    fn svc() -> Service {
        // Nothing listens on port 9 of 127.0.0.1 in tests.
        Service::new(FeedConfig::new("ws://127.0.0.1:9"), 100)
    }

    fn push(s: &mut Service, n: usize, size: usize) {
        let now = now_us();
        for i in 0..n {
            let dir = if i % 2 == 0 {
                Direction::Tx
            } else {
                Direction::Rx
            };
            s.log.push(dir, &vec![i as u8; size], now, now);
        }
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn ids(v: &Value) -> Vec<u64> {
        v["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn the_buffer_shows_the_newest_fifty_with_counts() {
        let mut s = svc();
        let empty = parse(&buffer(&s));
        assert_eq!(empty["count"], 0);
        assert!(
            empty.get("newest_id").is_none(),
            "none is left out: {empty}"
        );
        push(&mut s, 80, 3);
        let v = parse(&buffer(&s));
        assert_eq!(ids(&v), (31..=80).collect::<Vec<_>>());
        assert_eq!(v["buffer_used"], 80);
        assert_eq!(v["total_matching"], 80);
        assert_eq!(v["packets_transmitted"], 40);
        assert_eq!(v["packets_received"], 40);
        assert_eq!(v["next_since"], "80");
        assert!(v["note"].as_str().unwrap().starts_with("30 older packets"));
        let first = &v["logs"][0];
        assert_eq!(first["hex"], "1E 1E 1E");
        assert_eq!(first["direction"], "TX");
        assert_eq!(first["size"], 3);
        assert!(
            first.get("att").is_none(),
            "a live packet has no att: {first}"
        );
    }

    #[test]
    fn large_packets_are_bounded_by_bytes() {
        let mut s = svc();
        push(&mut s, 20, 4000);
        let v = parse(&buffer(&s));
        assert_eq!(
            ids(&v),
            vec![17, 18, 19, 20],
            "16 KiB hold four 4000-byte packets"
        );
        let v = parse(&buffer_since(&s, "0").unwrap());
        assert_eq!(ids(&v), vec![1, 2, 3, 4]);
        assert_eq!(v["next_since"], "4");
    }

    #[test]
    fn since_pages_forward_without_gaps() {
        let mut s = svc();
        push(&mut s, 120, 2);
        let mut since = "all".to_string();
        let mut seen = Vec::new();
        loop {
            let v = parse(&buffer_since(&s, &since).unwrap());
            let got = ids(&v);
            if got.is_empty() {
                break;
            }
            assert!(got.len() <= RESOURCE_PACKETS);
            seen.extend(got);
            since = v["next_since"].as_str().unwrap().to_string();
        }
        assert_eq!(
            seen,
            (21..=120).collect::<Vec<_>>(),
            "the 100 buffered, once each"
        );
        let v = parse(&buffer_since(&s, "110").unwrap());
        assert_eq!(ids(&v), (111..=120).collect::<Vec<_>>());
        assert!(v.get("note").is_none(), "nothing left out, no note: {v}");
        assert_eq!(
            parse(&buffer_since(&s, "1h").unwrap())["total_matching"],
            100
        );
    }

    #[test]
    fn bad_or_reader_bound_since_is_refused_with_the_way_out() {
        let s = svc();
        let e = buffer_since(&s, "last").unwrap_err();
        assert_eq!(e.code, "BAD_SINCE");
        assert!(e.message.contains("packet id"), "{}", e.message);
        let e = buffer_since(&s, "yesterday").unwrap_err();
        assert_eq!(e.code, "BAD_SINCE");
        assert!(e.message.contains("duration"), "{}", e.message);
    }

    #[test]
    fn reading_does_not_move_readers() {
        let mut s = svc();
        push(&mut s, 10, 1);
        buffer_since(&s, "all").unwrap();
        assert_eq!(s.log.readers().count(), 0);
    }

    #[test]
    fn watch_announces_each_change_once() {
        let mut s = svc();
        let mut w = Watch::default();
        assert_eq!(w.changed(&s), [BUFFER_URI, CONNECTION_URI], "first look");
        assert!(w.changed(&s).is_empty(), "nothing new");
        push(&mut s, 30, 1);
        assert_eq!(w.changed(&s), [BUFFER_URI], "30 packets, one notice");
        assert!(w.changed(&s).is_empty());
        s.ble.connected = true;
        s.ble.device = Some("Reader".into());
        assert_eq!(w.changed(&s), [CONNECTION_URI]);
        // Activity alone is in the buffer, not the connection.
        s.ble.last_activity = Some(now_us());
        assert!(w.changed(&s).is_empty());
        // A full buffer still changes: the newest id moves.
        push(&mut s, 200, 1);
        assert_eq!(w.changed(&s), [BUFFER_URI]);
        push(&mut s, 1, 1);
        assert_eq!(w.changed(&s), [BUFFER_URI]);
    }

    #[test]
    fn connection_is_the_state_only() {
        let mut s = svc();
        s.ble.connected = true;
        s.ble.device = Some("CS108".into());
        let v = parse(&connection(&s));
        assert_eq!(v["connected"], true);
        assert_eq!(v["device_name"], "CS108");
        assert!(
            v["bridge"]["url"]
                .as_str()
                .unwrap()
                .starts_with("ws://127.0.0.1:9")
        );
        assert!(v.get("packets_transmitted").is_none());
        // Not connected yet: no time, and no error before the first attempt,
        // left out as the tools leave out a none field.
        assert!(v.get("connected_at").is_none(), "{v}");
        assert!(v["bridge"].get("last_error").is_none(), "{v}");
    }

    #[test]
    fn the_prompt_follows_the_state() {
        let mut s = svc();
        let p = sniff_session(&s, Some("CS108"), None);
        assert!(p.contains("no BLE device is connected") && p.contains("the buffer is empty"));
        assert!(p.contains("scan_devices") && p.contains("the device CS108"));
        for tool in [
            "get_connection_state",
            "get_logs",
            "search_packets",
            "import_btsnoop",
            "get_metrics",
        ] {
            assert!(p.contains(tool), "{tool} missing");
        }
        s.ble.connected = true;
        s.ble.device = Some("CS108".into());
        push(&mut s, 3, 1);
        let p = sniff_session(&s, Some("CS108"), Some("find the battery command"));
        assert!(p.contains("to find the battery command"));
        assert!(p.contains("CS108 is already connected"));
        assert!(p.contains("3 packets are buffered (ids 1..3)"));
        let p = sniff_session(&s, Some("Other"), None);
        assert!(p.contains("SCAN_WHILE_CONNECTED"));
    }

    /// Hardening item 11: a 100 KB device or goal is quoted bounded; a
    /// device name past the clip still counts as the connected one.
    #[test]
    fn hardening_11_the_prompt_quotes_device_and_goal_bounded() {
        let mut s = svc();
        let long = "x".repeat(100_000);
        let p = sniff_session(&s, Some(&long), Some(&long));
        assert!(
            p.len() < 8192 && p.contains("(100000 characters)") && p.contains("[…cut]"),
            "{} bytes",
            p.len()
        );
        let name = "n".repeat(200);
        s.ble.connected = true;
        s.ble.device = Some(name.clone());
        let p = sniff_session(&s, Some(&name), None);
        assert!(p.contains("(200 characters) is already connected"), "{p}");
    }

    #[test]
    fn completion_offers_devices_and_since_forms() {
        let mut s = svc();
        assert!(complete(&s, PROMPT, "device", "").is_empty());
        s.ble.device = Some("CS108Reader".into());
        assert_eq!(complete(&s, PROMPT, "device", "cs"), ["CS108Reader"]);
        assert_eq!(complete(&s, PROMPT, "goal", ""), Vec::<String>::new());
        assert_eq!(complete(&s, "other", "device", ""), Vec::<String>::new());
        assert_eq!(
            complete(&s, BUFFER_TEMPLATE, "since", ""),
            ["all", "30s", "5m", "1h"]
        );
        push(&mut s, 70, 1);
        assert_eq!(complete(&s, BUFFER_TEMPLATE, "since", "2"), ["20"]);
    }
}
