//! A minimal WebSocket client protocol (RFC 6455): URL parsing, the opening
//! handshake, and frame encoding/decoding. No I/O here: the feed moves bytes,
//! so the same code runs natively and in the wasm guest.
//!
//! Hand-written because the usual crates pull in tokio or expect blocking
//! sockets; the guest reads a non-blocking WASI socket from the host's tick.

use std::fmt;

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest message accepted; a bridge message is a few hundred bytes.
pub const MAX_MESSAGE: usize = 16 << 20;

/// Why the bridge link could not be made or kept; each says what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsError {
    /// The configured URL is not a usable `ws://HOST:PORT[/path][?query]`.
    BadUrl(String),
    /// The server's answer to the opening handshake was not a valid 101
    /// upgrade.
    Handshake(String),
    /// The server broke the framing rules (RFC 6455 §5): reserved bits, an
    /// unknown opcode, a message over MAX_MESSAGE, text that is not UTF-8.
    Protocol(String),
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUrl(m) => write!(f, "bad bridge URL: {m}"),
            Self::Handshake(m) => write!(f, "WebSocket handshake failed: {m}"),
            Self::Protocol(m) => write!(f, "WebSocket protocol error: {m}"),
        }
    }
}

/// A parsed `ws://` URL (`wss://` is refused: the guest speaks no TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsUrl {
    /// Host name or IP address (an IPv6 literal keeps its brackets).
    pub host: String,
    /// TCP port (80 when the URL gives none).
    pub port: u16,
    /// Path and query, at least "/".
    pub resource: String,
}

impl WsUrl {
    /// Parses `ws://HOST[:PORT][/path][?query]`; `wss://` is refused with a
    /// hint, as the guest speaks no TLS.
    pub fn parse(s: &str) -> Result<Self, WsError> {
        let s = s.trim();
        let rest = if let Some(r) = s.strip_prefix("ws://") {
            r
        } else if s.starts_with("wss://") {
            return Err(WsError::BadUrl(format!(
                "{s}: wss:// (TLS) is not supported; use the bridge's plain ws:// address"
            )));
        } else {
            return Err(WsError::BadUrl(format!(
                "{s}: expected ws://HOST:PORT[/path][?query]"
            )));
        };
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, resource) = rest.split_at(split);
        let resource = if resource.is_empty() {
            "/".to_string()
        } else if resource.starts_with('?') {
            format!("/{resource}")
        } else {
            resource.to_string()
        };
        // The request line and Host header are built from these parts, so
        // nothing that could end a header line gets through.
        if let Some(c) = rest.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(WsError::BadUrl(format!(
                "{s}: {c:?} is not allowed in a URL"
            )));
        }
        // `[v6 literal]` or a name, then an optional `:port`.
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (inner, after) = v6
                    .split_once(']')
                    .ok_or_else(|| WsError::BadUrl(format!("{s}: unclosed `[` in the host")))?;
                if inner.is_empty()
                    || !inner
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
                {
                    return Err(WsError::BadUrl(format!("{s}: bad IPv6 address [{inner}]")));
                }
                (&authority[..inner.len() + 2], after)
            }
            None => authority.split_at(authority.find(':').unwrap_or(authority.len())),
        };
        let port = match port.strip_prefix(':') {
            Some(p) => p
                .parse()
                .map_err(|_| WsError::BadUrl(format!("{s}: bad port {p:?}")))?,
            None if port.is_empty() => 80,
            None => return Err(WsError::BadUrl(format!("{s}: bad host {authority:?}"))),
        };
        if host.is_empty() {
            return Err(WsError::BadUrl(format!("{s}: no host")));
        }
        if !host.starts_with('[')
            && !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(WsError::BadUrl(format!("{s}: bad host {host:?}")));
        }
        Ok(Self {
            host: host.to_string(),
            port,
            resource,
        })
    }

    /// `host:port` for connecting (IPv6 literals keep their brackets off).
    pub fn addr(&self) -> String {
        let h = self.host.trim_start_matches('[').trim_end_matches(']');
        if h.contains(':') {
            format!("[{h}]:{}", self.port)
        } else {
            format!("{h}:{}", self.port)
        }
    }

    /// The query string after `?`, empty when there is none.
    pub fn query(&self) -> &str {
        self.resource.split_once('?').map_or("", |(_, q)| q)
    }

    /// True when the query has a parameter `name` (with or without a value).
    pub fn has_param(&self, name: &str) -> bool {
        self.query()
            .split('&')
            .any(|kv| kv.split('=').next() == Some(name))
    }

    /// The same server with another resource (e.g. `/?command=scan`).
    pub fn with_resource(&self, resource: &str) -> Self {
        Self {
            resource: resource.to_string(),
            ..self.clone()
        }
    }

    /// The URL as text, with the port always written.
    pub fn to_url(&self) -> String {
        format!("ws://{}:{}{}", self.host, self.port, self.resource)
    }
}

/// The client's opening request.
pub fn handshake_request(url: &WsUrl, key: &str) -> String {
    let host = if url.port == 80 {
        url.host.clone()
    } else {
        format!("{}:{}", url.host, url.port)
    };
    format!(
        "GET {} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: benchtop-ble-buffer\r\n\r\n",
        url.resource
    )
}

/// The accept value the server must answer for `key`.
pub fn accept_key(key: &str) -> String {
    use sha1::Digest as _;
    // RFC 6455 section 4.2.2: base64(SHA-1(key + GUID)).
    let digest = sha1::Sha1::new()
        .chain_update(key.as_bytes())
        .chain_update(GUID.as_bytes())
        .finalize();
    base64(&digest)
}

/// Checks the server's response in `buf`: `Ok(None)` until the header is
/// complete, then the number of header bytes consumed.
pub fn check_handshake_response(buf: &[u8], key: &str) -> Result<Option<usize>, WsError> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > 16 * 1024 {
            return Err(WsError::Handshake("response header too long".into()));
        }
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&buf[..end]);
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("101") {
        return Err(WsError::Handshake(format!(
            "the server answered {status:?} instead of 101 Switching Protocols"
        )));
    }
    let expected = accept_key(key);
    let accepted = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("sec-websocket-accept") && v.trim() == expected
        })
    });
    if !accepted {
        return Err(WsError::Handshake(
            "missing or wrong Sec-WebSocket-Accept".into(),
        ));
    }
    Ok(Some(end + 4))
}

/// A WebSocket frame opcode (RFC 6455 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// A further fragment of a message.
    Continuation = 0,
    /// A UTF-8 text frame (the bridge's JSON messages).
    Text = 1,
    /// A binary frame (raw packet bytes).
    Binary = 2,
    /// Closing the connection.
    Close = 8,
    /// A keepalive the other side must answer with a Pong.
    Ping = 9,
    /// The answer to a Ping.
    Pong = 10,
}

impl Opcode {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Continuation,
            1 => Self::Text,
            2 => Self::Binary,
            8 => Self::Close,
            9 => Self::Ping,
            10 => Self::Pong,
            _ => return None,
        })
    }
}

/// A complete message (fragments joined) or a control frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message (fragments joined), valid UTF-8.
    Text(String),
    /// A binary message (fragments joined).
    Binary(Vec<u8>),
    /// A ping with its payload, to be echoed in a Pong.
    Ping(Vec<u8>),
    /// A pong (its payload is not needed).
    Pong,
    /// The server closes: status code, when given, and reason.
    Close(Option<u16>, String),
}

/// Encodes one final frame; client frames must be masked (RFC 6455 §5.3).
pub fn encode_frame(op: Opcode, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(0x80 | op as u8);
    let m = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(m | n as u8),
        n if n <= 0xFFFF => {
            out.push(m | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(m | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(k) => {
            out.extend_from_slice(&k);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ k[i & 3]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

/// Incremental frame decoder: feed it bytes as they arrive.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    pos: usize,
    partial: Option<(Opcode, Vec<u8>)>,
}

impl Decoder {
    /// Appends bytes read from the socket; old consumed bytes are dropped now
    /// and then so the buffer stays small.
    pub fn feed(&mut self, data: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes received but not yet decoded into a message.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete message, `Ok(None)` when more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<Message>, WsError> {
        loop {
            let b = &self.buf[self.pos..];
            if b.len() < 2 {
                return Ok(None);
            }
            let fin = b[0] & 0x80 != 0;
            if b[0] & 0x70 != 0 {
                return Err(WsError::Protocol(
                    "reserved bits set (no extension was negotiated)".into(),
                ));
            }
            let op = Opcode::from_u8(b[0] & 0x0F)
                .ok_or_else(|| WsError::Protocol(format!("unknown opcode {}", b[0] & 0x0F)))?;
            let masked = b[1] & 0x80 != 0;
            let (len, mut hdr) = match b[1] & 0x7F {
                126 if b.len() >= 4 => (u16::from_be_bytes([b[2], b[3]]) as u64, 4),
                127 if b.len() >= 10 => (u64::from_be_bytes(b[2..10].try_into().unwrap()), 10),
                126 | 127 => return Ok(None),
                n => (n as u64, 2),
            };
            if len > MAX_MESSAGE as u64 {
                return Err(WsError::Protocol(format!(
                    "a {len}-byte frame exceeds the limit"
                )));
            }
            let mask = if masked {
                if b.len() < hdr + 4 {
                    return Ok(None);
                }
                let k = [b[hdr], b[hdr + 1], b[hdr + 2], b[hdr + 3]];
                hdr += 4;
                Some(k)
            } else {
                None
            };
            let len = len as usize;
            if b.len() < hdr + len {
                return Ok(None);
            }
            let mut payload = b[hdr..hdr + len].to_vec();
            self.pos += hdr + len;
            if let Some(k) = mask {
                for (i, x) in payload.iter_mut().enumerate() {
                    *x ^= k[i & 3];
                }
            }
            let whole = match op {
                Opcode::Ping => return Ok(Some(Message::Ping(payload))),
                Opcode::Pong => return Ok(Some(Message::Pong)),
                Opcode::Close => {
                    let code =
                        (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                    let reason =
                        String::from_utf8_lossy(payload.get(2..).unwrap_or(&[])).into_owned();
                    return Ok(Some(Message::Close(code, reason)));
                }
                Opcode::Continuation => {
                    let Some((first, mut acc)) = self.partial.take() else {
                        return Err(WsError::Protocol(
                            "continuation without a first fragment".into(),
                        ));
                    };
                    if acc.len() + payload.len() > MAX_MESSAGE {
                        return Err(WsError::Protocol(
                            "fragmented message exceeds the limit".into(),
                        ));
                    }
                    acc.extend_from_slice(&payload);
                    if !fin {
                        self.partial = Some((first, acc));
                        continue;
                    }
                    (first, acc)
                }
                Opcode::Text | Opcode::Binary => {
                    if self.partial.is_some() {
                        return Err(WsError::Protocol(
                            "new message inside a fragmented one".into(),
                        ));
                    }
                    if !fin {
                        self.partial = Some((op, payload));
                        continue;
                    }
                    (op, payload)
                }
            };
            return Ok(Some(match whole.0 {
                Opcode::Text => Message::Text(
                    String::from_utf8(whole.1)
                        .map_err(|_| WsError::Protocol("text message is not UTF-8".into()))?,
                ),
                _ => Message::Binary(whole.1),
            }));
        }
    }
}

/// Standard base64 with padding (RFC 4648), the encoding of the handshake's
/// key and accept values.
pub fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6455_accept_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b""), "");
        // Another key, checked against Python's base64(sha1(key + GUID)).
        assert_eq!(
            accept_key("x3JJHMbDL1EzLkh9GBhXDw=="),
            "HSmrc0sMlYUkAGmm5OPpG2HaGWk="
        );
    }

    #[test]
    fn urls() {
        let u = WsUrl::parse("ws://127.0.0.1:8080").unwrap();
        assert_eq!(
            (u.addr().as_str(), u.resource.as_str()),
            ("127.0.0.1:8080", "/")
        );
        let u = WsUrl::parse("ws://localhost:9?device=CS108&service=9800").unwrap();
        assert_eq!(u.resource, "/?device=CS108&service=9800");
        assert!(u.has_param("device") && !u.has_param("command"));
        let u = WsUrl::parse("ws://[::1]:8080/x").unwrap();
        assert_eq!(u.addr(), "[::1]:8080");
        assert_eq!(WsUrl::parse("ws://h").unwrap().port, 80);
        assert!(
            WsUrl::parse("wss://h:1")
                .unwrap_err()
                .to_string()
                .contains("TLS")
        );
        assert!(WsUrl::parse("http://h:1").is_err());
        assert!(WsUrl::parse("ws://h:x").is_err());
    }

    /// Found by fuzzing (fuzz/fuzz_targets/ws_frame.rs): a host such as
    /// `a]` was taken whole with port 80, printed as `ws://a]:80/`, and that
    /// read back as the host `a]:80`; control characters reached the
    /// request line. Hosts are names or bracketed IPv6 literals now.
    #[test]
    fn urls_with_odd_hosts_are_refused_and_good_ones_print_back() {
        for bad in [
            "ws://127.0.0.1\0\u{e}x=\r\nGzz]",
            "ws://a]",
            "ws://a b:1/",
            "ws://h:1/x\r\nEvil: 1",
            "ws://[::1",
            "ws://[]:1",
            "ws://[::1]x",
            "ws://::1:80",
            "ws://h:1:2",
            "ws://:80",
        ] {
            assert!(WsUrl::parse(bad).is_err(), "{bad:?} accepted");
        }
        for good in [
            "ws://h",
            "ws://[::1]",
            "ws://[::1]:9000/x?y=z",
            "ws://a-b.c_d:1?q",
        ] {
            let u = WsUrl::parse(good).unwrap();
            assert_eq!(WsUrl::parse(&u.to_url()).unwrap(), u, "{good}");
        }
        assert_eq!(WsUrl::parse("ws://[::1]").unwrap().addr(), "[::1]:80");
    }

    #[test]
    fn handshake_checks_status_and_accept() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x00";
        assert_eq!(check_handshake_response(ok, key), Ok(Some(ok.len() - 2)));
        assert_eq!(check_handshake_response(&ok[..20], key), Ok(None));
        let bad = b"HTTP/1.1 400 Bad Request\r\n\r\n";
        assert!(check_handshake_response(bad, key).is_err());
        let wrong = b"HTTP/1.1 101 OK\r\nSec-WebSocket-Accept: nope\r\n\r\n";
        assert!(check_handshake_response(wrong, key).is_err());
        let req = handshake_request(&WsUrl::parse("ws://h:1/?a=b").unwrap(), key);
        assert!(req.starts_with("GET /?a=b HTTP/1.1\r\nHost: h:1\r\n"));
    }

    #[test]
    fn frames_round_trip_in_pieces() {
        let mut wire = Vec::new();
        wire.extend(encode_frame(Opcode::Text, b"hello", None));
        wire.extend(encode_frame(Opcode::Binary, &[7; 300], Some([1, 2, 3, 4])));
        wire.extend(encode_frame(Opcode::Text, &vec![b'x'; 70_000], None));
        wire.extend(encode_frame(Opcode::Ping, b"p", None));
        wire.extend(encode_frame(
            Opcode::Close,
            &[0x03, 0xE8, b'b', b'y', b'e'],
            None,
        ));
        let mut d = Decoder::default();
        let mut got = Vec::new();
        for chunk in wire.chunks(7) {
            d.feed(chunk);
            while let Some(m) = d.next_message().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Message::Text("hello".into()));
        assert_eq!(got[1], Message::Binary(vec![7; 300]));
        assert!(matches!(&got[2], Message::Text(s) if s.len() == 70_000));
        assert_eq!(got[3], Message::Ping(b"p".to_vec()));
        assert_eq!(got[4], Message::Close(Some(1000), "bye".into()));
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn fragments_are_joined_and_violations_rejected() {
        let mut d = Decoder::default();
        d.feed(&[0x01, 3, b'a', b'b', b'c']); // text, not final
        d.feed(&[0x89, 0]); // ping in between is allowed
        d.feed(&[0x80, 2, b'd', b'e']); // final continuation
        assert_eq!(d.next_message().unwrap(), Some(Message::Ping(vec![])));
        assert_eq!(
            d.next_message().unwrap(),
            Some(Message::Text("abcde".into()))
        );
        let mut d = Decoder::default();
        d.feed(&[0x80, 1, b'x']);
        assert!(d.next_message().is_err());
        let mut d = Decoder::default();
        d.feed(&[0xC1, 0]);
        assert!(d.next_message().is_err());
        let mut d = Decoder::default();
        d.feed(&[0x82, 127, 0xFF, 0, 0, 0, 0, 0, 0, 0]);
        assert!(d.next_message().is_err());
    }
}
