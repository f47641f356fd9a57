//! JSON-RPC framing in front of rmcp: every line a client sends gets an
//! answer or is passed on.
//!
//! rmcp's own stdio transport silently drops a line that is not JSON (too
//! long, invalid UTF-8, nested too deep, a lone surrogate, a number out of
//! range), so a client that sent a request on such a line waits forever.
//! JSON-RPC 2.0 says a message that cannot be parsed gets a Parse error
//! (-32700) and one that is not a valid request gets an Invalid Request
//! (-32600), with a null id when the id cannot be read. This module judges
//! each line (or HTTP body) before rmcp sees it and builds those answers; a
//! line that is a message goes to rmcp unchanged.

use rmcp::RoleServer;
use rmcp::model::ErrorCode;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Largest message accepted on one line (bytes, newline included): the
/// same 16 MiB rmcp allows, so nothing that passes here is dropped there.
pub const MAX_MESSAGE: usize = 16 << 20;

/// How many bytes of an oversized line are kept to find its id in.
const ID_PREFIX: usize = 4096;

/// What to do with one incoming line or body.
#[derive(Debug)]
pub enum Verdict {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing: a blank line, or a notification (never answered) of a
    /// shape the server does not know.
    Ignore,
    /// Not a message: answer with this JSON-RPC error response.
    Answer(Value),
}

/// A JSON-RPC error response.
pub fn error_response(id: Value, code: ErrorCode, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}})
}

/// The answer to a message longer than `limit` bytes; `prefix` is its start,
/// searched for the request's id.
pub fn oversized(prefix: &[u8], limit: usize) -> Value {
    error_response(
        scan_id_inner(&String::from_utf8_lossy(prefix), true).unwrap_or(Value::Null),
        ErrorCode::PARSE_ERROR,
        format!(
            "Parse error: the message is longer than {}, the most one message may be; \
             pass large data by file path instead",
            if limit >= 1 << 20 {
                format!("{} MiB", limit >> 20)
            } else {
                format!("{limit} bytes")
            }
        ),
    )
}

/// Judges one message (a line without its newline, or an HTTP body).
pub fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Verdict::Answer(error_response(
                scan_id(&String::from_utf8_lossy(line)),
                ErrorCode::PARSE_ERROR,
                format!(
                    "Parse error: the message is not valid UTF-8 (byte {} does not start a \
                     UTF-8 character); send JSON text encoded as UTF-8",
                    e.valid_up_to()
                ),
            ));
        }
    };
    // Typed the way rmcp types it, so what passes behaves as before.
    let typed = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text);
    let e = match typed {
        Ok(message) => return Verdict::Message(Box::new(message)),
        Err(e) => e,
    };
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Answer(error_response(
                scan_id(text),
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {}", syntax_problem(&e)),
            ));
        }
    };
    if let Value::Object(fields) = &value
        && !fields.contains_key("id")
        && fields.get("method").is_some_and(Value::is_string)
    {
        // A notification gets no response, even an error (JSON-RPC 2.0 §4.1).
        return Verdict::Ignore;
    }
    Verdict::Answer(error_response(
        readable_id(&value),
        ErrorCode::INVALID_REQUEST,
        format!("Invalid request: {}", shape_problem(&value, &e)),
    ))
}

/// What is wrong with text that is not JSON, in words a client can act on.
fn syntax_problem(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!("(line {}, column {})", e.line(), e.column());
    if text.starts_with("recursion limit exceeded") {
        format!("the message nests arrays or objects more than 128 levels deep {at}")
    } else if text.starts_with("number out of range") {
        format!("a number is out of range for a 64-bit float {at}")
    } else if text.starts_with("lone leading surrogate")
        || text.starts_with("unexpected end of hex")
    {
        format!(
            "a string holds a lone UTF-16 surrogate escape (like \\ud800), which is not a character {at}"
        )
    } else {
        format!("the message is not valid JSON: {text}")
    }
}

/// Why a JSON value is not a JSON-RPC message.
fn shape_problem(value: &Value, e: &serde_json::Error) -> String {
    let Value::Object(fields) = value else {
        return match value {
            Value::Array(_) => {
                "the message is an array; batches are not supported, send one object per message"
                    .to_owned()
            }
            other => format!(
                "a message must be a JSON object, but got {}",
                benchtop_wit::convert::describe(other)
            ),
        };
    };
    if fields.get("jsonrpc") != Some(&json!("2.0")) {
        return "`jsonrpc` must be \"2.0\"".to_owned();
    }
    match fields.get("id") {
        Some(id) if readable_id(value).is_null() => {
            return format!(
                "`id` must be a string or an integer, but got {}",
                benchtop_wit::convert::describe(id)
            );
        }
        _ => {}
    }
    match fields.get("method") {
        Some(Value::String(_)) => {}
        Some(other) => {
            return format!(
                "`method` must be a string, but got {}",
                benchtop_wit::convert::describe(other)
            );
        }
        None if fields.contains_key("result") || fields.contains_key("error") => {
            return format!("the response does not fit any request of this server ({e})");
        }
        None => return "`method` is missing".to_owned(),
    }
    match fields.get("params") {
        Some(p) if !p.is_object() && !p.is_null() => format!(
            "`params` must be an object, but got {}",
            benchtop_wit::convert::describe(p)
        ),
        _ => format!("the message fits no request of this server ({e})"),
    }
}

/// The id of a parsed message, if it is one JSON-RPC allows (a string or an
/// integer); otherwise null.
fn readable_id(value: &Value) -> Value {
    match value.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(Value::Number(n)) if n.is_i64() => Value::Number(n.clone()),
        _ => Value::Null,
    }
}

/// The id of a message that does not parse, found by walking its top-level
/// object without building it (so depth and bad values elsewhere do not
/// matter); null when there is none or it cannot be read.
pub fn scan_id(text: &str) -> Value {
    scan_id_inner(text, false).unwrap_or(Value::Null)
}

/// `cut`: `text` is only the start of the message, so a number that runs to
/// its end may have lost digits (`"id":12` of `"id":1234`) and is no id.
fn scan_id_inner(text: &str, cut: bool) -> Option<Value> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = &text[i..key_end];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let value_end = value_end(b, i)?;
        if key == "\"id\"" {
            if cut && value_end == b.len() && b[i] != b'"' {
                return None;
            }
            let id = serde_json::from_str::<Value>(&text[i..value_end]).ok()?;
            return Some(readable_id(&json!({ "id": id })));
        }
        i = skip_ws(b, value_end);
        if b.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

/// The index after the closing quote of the string starting at `i`.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index after the value starting at `i` (iterative: no depth limit).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while b
                .get(j)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// The body rmcp gets: [`judge`] reads a body after a UTF-8 byte order
/// mark, rmcp's parser does not (it would answer a bare 415), so the mark
/// goes.
pub fn without_bom(body: bytes::Bytes) -> bytes::Bytes {
    if body.starts_with(b"\xEF\xBB\xBF") {
        body.slice(3..)
    } else {
        body
    }
}

/// rmcp's side of the framed stdio: messages the reader judged, and a queue
/// of whole lines to write.
pub struct LineTransport {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    out: mpsc::Sender<Vec<u8>>,
}

impl Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            out.send(line)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "output closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Frames `read` and `write` for rmcp: spawns a reader that judges each
/// line (answering the ones that are not messages itself) and a writer that
/// writes whole lines, so answers and rmcp's responses never interleave.
/// The writer's handle finishes once everything queued is written.
pub fn framed<R, W>(read: R, write: W) -> (LineTransport, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
    // Small: a client that floods requests waits on its pipe, not our memory.
    let (in_tx, in_rx) = mpsc::channel(16);
    let writer = tokio::spawn(write_lines(write, out_rx));
    tokio::spawn(read_lines(read, in_tx, out_tx.clone(), MAX_MESSAGE));
    (
        LineTransport {
            incoming: in_rx,
            out: out_tx,
        },
        writer,
    )
}

async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if write.write_all(&line).await.is_err() {
            return;
        }
        // Flush when nothing else is waiting, so bursts go out together.
        if lines.is_empty() && write.flush().await.is_err() {
            return;
        }
    }
    let _ = write.flush().await;
}

/// The reader behind [`framed`], with its line limit as a parameter: public
/// so the fuzz target can drive it with a small limit.
pub async fn read_lines<R: AsyncRead + Unpin>(
    read: R,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    out: mpsc::Sender<Vec<u8>>,
    limit: usize,
) {
    let mut read = BufReader::with_capacity(64 << 10, read);
    let mut line = Vec::new();
    // Set while skipping the rest of an oversized line.
    let mut oversized_prefix: Option<Vec<u8>> = None;
    loop {
        let (consumed, complete) = {
            let available = match read.fill_buf().await {
                Ok(a) if !a.is_empty() => a,
                Ok(_) => break,
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    break;
                }
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            match &mut oversized_prefix {
                Some(_) => {}
                None if line.len() + take > limit => {
                    let mut prefix = std::mem::take(&mut line);
                    prefix.extend_from_slice(&chunk[..chunk.len().min(ID_PREFIX)]);
                    prefix.truncate(ID_PREFIX);
                    oversized_prefix = Some(prefix);
                }
                None => line.extend_from_slice(chunk),
            }
            (take, newline.is_some())
        };
        read.consume(consumed);
        if !complete {
            continue;
        }
        let verdict = match oversized_prefix.take() {
            Some(prefix) => Verdict::Answer(oversized(&prefix, limit)),
            None => judge(line.strip_suffix(b"\n").unwrap_or(&line)),
        };
        line.clear();
        if line.capacity() > 1 << 20 {
            line = Vec::new();
        }
        match verdict {
            Verdict::Message(message) => {
                if messages.send(*message).await.is_err() {
                    return;
                }
            }
            Verdict::Ignore => {}
            Verdict::Answer(answer) => {
                tracing::warn!(
                    "answered a malformed message: {}",
                    answer["error"]["message"]
                );
                let mut bytes = answer.to_string().into_bytes();
                bytes.push(b'\n');
                if out.send(bytes).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &[u8]) -> Value {
        match judge(line) {
            Verdict::Answer(a) => a,
            other => panic!(
                "expected an answer for {:?}, got {other:?}",
                String::from_utf8_lossy(&line[..line.len().min(80)])
            ),
        }
    }

    #[test]
    fn valid_messages_pass_and_blank_lines_are_ignored() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(judge(line), Verdict::Message(_)));
        assert!(matches!(
            judge(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r"),
            Verdict::Message(_)
        ));
        assert!(matches!(judge(b"  \r"), Verdict::Ignore));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":[1]}"#),
            Verdict::Ignore
        ));
    }

    #[test]
    fn unparsable_lines_get_parse_errors_naming_the_problem() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let a = answer(deep.as_bytes());
        assert_eq!(a["id"], 7);
        assert_eq!(a["error"]["code"], -32700);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("128 levels"),
            "{a}"
        );

        let a = answer(br#"{"jsonrpc":"2.0","id":"s","method":"ping","params":{"x":"\ud800"}}"#);
        assert_eq!(a["id"], "s");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("surrogate"),
            "{a}"
        );

        let a = answer(br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#);
        assert_eq!(a["id"], Value::Null);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("out of range"),
            "{a}"
        );

        let mut bad = br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"@"}}"#.to_vec();
        let at = bad.iter().position(|b| *b == b'@').unwrap();
        bad[at] = 0xff;
        let a = answer(&bad);
        assert_eq!(a["id"], 3);
        assert!(
            a["error"]["message"].as_str().unwrap().contains("UTF-8"),
            "{a}"
        );

        let a = answer(b"\x00\x01garbage");
        assert_eq!(a["id"], Value::Null);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not valid JSON"),
            "{a}"
        );
        let a = answer("{".repeat(100_000).as_bytes());
        assert_eq!(a["id"], Value::Null);
    }

    #[test]
    fn json_that_is_no_message_gets_invalid_request() {
        let a = answer(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!(a["error"]["code"], -32600);
        assert!(
            a["error"]["message"].as_str().unwrap().contains("batches"),
            "{a}"
        );
        let a = answer(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!(a["id"], Value::Null);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`id` must be"),
            "{a}"
        );
        let a = answer(br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#);
        assert_eq!(a["id"], 4);
        let a = answer(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}"#);
        assert_eq!(a["id"], 5);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`params` must be an object"),
            "{a}"
        );
    }

    #[test]
    fn ids_are_found_without_parsing_the_whole_message() {
        assert_eq!(
            scan_id(r#" { "a" : [1,{"b":"]"}], "id" : 12 , "x": nope"#),
            json!(12)
        );
        assert_eq!(scan_id(r#"{"id":"a\"b"}"#), json!("a\"b"));
        assert_eq!(scan_id(r#"{"id":1e400}"#), Value::Null);
        assert_eq!(scan_id(r#"{"id":2.5}"#), Value::Null);
        assert_eq!(scan_id(r#"{"params":{"#), Value::Null);
        assert_eq!(scan_id("[1]"), Value::Null);
        assert_eq!(scan_id(""), Value::Null);
    }

    /// A small deterministic fuzz pass (the cargo-fuzz targets need a
    /// separate instrumented build): mutated messages never panic, and
    /// every answer is a well-formed error whose id, if any, was in the line.
    #[test]
    fn mutated_messages_are_passed_on_ignored_or_answered_well() {
        let seeds: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5,"s"]}}}"#,
            br#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            br#"[{"id":1e400},"\ud800",{"a":{"b":[[[]]]}}]"#,
        ];
        let alphabet = b"{}[]\",:0123456789.eE+-\\u\xff\x00 \nidtrue";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut passed, mut answered) = (0, 0);
        for round in 0..20_000 {
            let mut line = seeds[round % seeds.len()].to_vec();
            for _ in 0..=(next() % 4) {
                let at = (next() as usize) % (line.len() + 1);
                let byte = alphabet[(next() as usize) % alphabet.len()];
                match next() % 3 {
                    0 if at < line.len() => line[at] = byte,
                    1 if at < line.len() => {
                        line.remove(at);
                    }
                    _ => line.insert(at, byte),
                }
            }
            match judge(&line) {
                Verdict::Message(m) => {
                    passed += 1;
                    serde_json::to_string(&m).expect("a passed message serializes");
                }
                Verdict::Ignore => {}
                Verdict::Answer(a) => {
                    answered += 1;
                    let code = a["error"]["code"].as_i64().unwrap();
                    assert!(code == -32700 || code == -32600, "{a}");
                    assert!(!a["error"]["message"].as_str().unwrap().is_empty());
                    match &a["id"] {
                        Value::Null | Value::String(_) => {}
                        Value::Number(n) => assert!(
                            String::from_utf8_lossy(&line).contains(&n.to_string()),
                            "{a} for {}",
                            String::from_utf8_lossy(&line)
                        ),
                        other => panic!("id {other} in {a}"),
                    }
                }
            }
        }
        assert!(
            passed > 100 && answered > 1000,
            "{passed} passed, {answered} answered"
        );
    }

    /// Found by the jsonrpc_framing fuzz target: an id number cut by the end
    /// of the kept prefix was answered with its first digits only.
    #[test]
    fn an_oversized_answer_never_carries_a_cut_id() {
        assert_eq!(oversized(br#"{"id":1234"#, 100)["id"], Value::Null);
        assert_eq!(oversized(br#"{"id":1234,"x"#, 100)["id"], 1234);
        assert_eq!(oversized(br#"{"id":"ab""#, 100)["id"], "ab");
        assert_eq!(scan_id(r#"{"id":1234"#), 1234);

        // Through the reader: the id straddles the 4096 bytes it keeps.
        let head = br#"{"jsonrpc":"2.0","params":{"pad":""#;
        let tail = br#""},"id":123456789,"method":"ping"}"#;
        let pad = ID_PREFIX - head.len() - br#""},"id":1234"#.len();
        let mut line = head.to_vec();
        line.extend(std::iter::repeat_n(b'a', pad));
        line.extend_from_slice(tail);
        line.extend(std::iter::repeat_n(b' ', 2000));
        line.push(b'\n');
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (msg_tx, _msg_rx) = mpsc::channel(4);
        let (out_tx, mut out_rx) = mpsc::channel(4);
        rt.block_on(read_lines(&line[..], msg_tx, out_tx, 5000));
        let answer: Value = serde_json::from_slice(&out_rx.try_recv().unwrap()).unwrap();
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("longer than"),
            "{answer}"
        );
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }

    #[tokio::test]
    async fn the_reader_answers_oversized_lines_and_keeps_going() {
        let mut input = br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":""#.to_vec();
        input.extend(std::iter::repeat_n(b'a', 5000));
        input.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\n");
        let (msg_tx, mut msg_rx) = mpsc::channel(4);
        let (out_tx, mut out_rx) = mpsc::channel(4);
        read_lines(&input[..], msg_tx, out_tx, 1000).await;
        let answer: Value = serde_json::from_slice(&out_rx.recv().await.unwrap()).unwrap();
        assert_eq!(answer["id"], 9);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("longer than"),
            "{answer}"
        );
        let next = msg_rx.recv().await.expect("the next line is a message");
        assert!(serde_json::to_string(&next).unwrap().contains("\"id\":10"));
    }
}
