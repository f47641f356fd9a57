//! The JSON-RPC framing in front of rmcp (crates/jsonrpc-framing), as both
//! transports use it: stdio's line reader (`read_lines`, fed in chunks the
//! way a pipe delivers them) and the HTTP gate, which judges a whole body.
//!
//! Byte 0 picks how the rest is read: bits 0-5 are the chunk size − 1 (1 to
//! 64 bytes per read), bit 6 a line limit of 200 bytes instead of 16 MiB (so
//! inputs a few hundred bytes long reach the oversized-line path). The rest
//! is what a client sends: stdio lines, and, taken whole, an HTTP body.
//!
//! Properties, from the module's contract ("every line a client sends gets
//! an answer or is passed on") and JSON-RPC 2.0:
//! - the reader gives, line for line, what `judge` gives for each complete
//!   line (or the oversized answer), however the bytes are chunked;
//! - every answer is one line holding a JSON-RPC 2.0 error object: exactly
//!   `jsonrpc` "2.0", `id` and `error` {code −32700 or −32600, a message};
//!   the id is null, a string, or an integer, and is the message's own id
//!   when the message is JSON;
//! - a message passed on serializes to JSON, and its line is JSON; an HTTP body passed on is one rmcp
//!   parses itself to the same message (anything else gets a bare 415 there);
//! - only blank lines and notifications (no `id`, a string `method`) are
//!   ignored, so nothing that carries an id goes unanswered.
#![no_main]

use jsonrpc_framing::{MAX_MESSAGE, Verdict, judge, read_lines, scan_id, without_bom};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// A pipe that hands out at most `chunk` bytes per read, so lines arrive
/// split the way they do from a real client.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

/// One runtime for the whole run: building one per input would cost more
/// than judging the input.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

/// Parses `bytes` as the same type as `like` (rmcp's message type, without
/// naming rmcp here).
fn reparse<T: serde::de::DeserializeOwned>(_like: &T, bytes: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice(bytes)
}

/// The checks every answer must pass; `line` is what it answers.
fn check_answer(answer: &Value, line: &[u8]) {
    let shown = || String::from_utf8_lossy(line);
    let Value::Object(fields) = answer else {
        panic!("answer {answer} to {:?} is not an object", shown());
    };
    assert_eq!(fields.len(), 3, "{answer}");
    assert_eq!(fields["jsonrpc"], "2.0", "{answer}");
    let Value::Object(error) = &fields["error"] else {
        panic!("answer {answer} has no error object");
    };
    assert_eq!(error.len(), 2, "{answer}");
    let code = error["code"].as_i64().expect("an integer code");
    assert!(code == -32700 || code == -32600, "{answer}");
    let message = error["message"].as_str().expect("a string message");
    assert!(!message.is_empty(), "{answer}");
    match &fields["id"] {
        Value::Null | Value::String(_) => {}
        Value::Number(n) if n.is_i64() => {}
        other => panic!("id {other} in {answer} for {:?}", shown()),
    }
    // What goes back on stdio is one line.
    assert!(!answer.to_string().contains('\n'), "{answer}");
}

/// The id JSON-RPC allows from a parsed message: a string or an integer.
fn own_id(value: &Value) -> Value {
    match value.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(Value::Number(n)) if n.is_i64() => Value::Number(n.clone()),
        _ => Value::Null,
    }
}

/// What one complete line must come to.
enum Expected {
    Message(String),
    Ignore,
    Answer(Value),
}

/// Judges one line or body and checks the verdict against the contract.
fn judged(line: &[u8]) -> Expected {
    match judge(line) {
        Verdict::Message(m) => {
            // rmcp gets the typed message (stdio) or parses the body itself
            // (HTTP, checked below); it need not print back to itself (rmcp
            // keeps an unknown field beside a duplicated one on the first
            // parse only), but it must serialize to JSON.
            let text = serde_json::to_string(&m).expect("a passed message serializes");
            serde_json::from_str::<Value>(&text)
                .unwrap_or_else(|e| panic!("{text} is not JSON: {e}"));
            // The line itself (less a BOM and one \r, as judge reads it) is JSON.
            let bare = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
            let value: Value = serde_json::from_slice(bare).unwrap_or_else(|e| {
                panic!(
                    "passed on {:?}, not JSON: {e}",
                    String::from_utf8_lossy(line)
                )
            });
            assert!(value.is_object(), "passed on a non-object {value}");
            Expected::Message(text)
        }
        Verdict::Ignore => {
            let bare = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
            if !bare.iter().all(u8::is_ascii_whitespace) {
                let value: Value = serde_json::from_slice(bare).unwrap_or_else(|e| {
                    panic!("ignored {:?}, not JSON: {e}", String::from_utf8_lossy(line))
                });
                assert!(
                    value.get("id").is_none() && value.get("method").is_some_and(Value::is_string),
                    "ignored {value}, which is no notification"
                );
            }
            Expected::Ignore
        }
        Verdict::Answer(a) => {
            check_answer(&a, line);
            if let Ok(value) = serde_json::from_slice::<Value>(line) {
                // JSON that is no message: answered with its own id.
                assert_eq!(a["id"], own_id(&value), "{a} for {value}");
                assert_eq!(a["error"]["code"], -32600, "{a} for {value}");
            } else if let Value::Number(n) = &a["id"] {
                assert!(
                    String::from_utf8_lossy(line).contains(&n.to_string()),
                    "{a} for {:?}",
                    String::from_utf8_lossy(line)
                );
            }
            Expected::Answer(a)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, stream)) = data.split_first() else {
        return;
    };
    let chunk = (mode & 0x3f) as usize + 1;
    let limit = if mode & 0x40 != 0 { 200 } else { MAX_MESSAGE };

    // HTTP: the gate judges the whole body, answers what judge answers, and
    // hands rmcp the body (less a byte order mark) when judge passes it on.
    if let Verdict::Message(m) = judge(stream) {
        let body = without_bom(bytes::Bytes::copy_from_slice(stream));
        let rmcp = reparse(&*m, &body).unwrap_or_else(|e| {
            panic!(
                "judge passed on a body rmcp refuses ({e}): {:?}",
                String::from_utf8_lossy(stream)
            )
        });
        assert_eq!(
            serde_json::to_string(&rmcp).unwrap(),
            serde_json::to_string(&m).unwrap()
        );
    }
    let _ = judged(stream);

    // stdio: what each complete line must come to (an unfinished last line
    // waits for its newline, so at the end of input it gets nothing).
    let mut expected_messages = Vec::new();
    let mut expected_answers = Vec::new();
    let mut lines = stream.split(|b| *b == b'\n');
    let _unfinished = lines.next_back();
    for line in lines {
        if line.len() + 1 > limit {
            expected_answers.push((None, line));
            continue;
        }
        match judged(line) {
            Expected::Message(m) => expected_messages.push(m),
            Expected::Ignore => {}
            Expected::Answer(a) => expected_answers.push((Some(a), line)),
        }
    }

    let capacity = expected_messages.len() + expected_answers.len() + 1;
    let (msg_tx, mut msg_rx) = mpsc::channel(capacity);
    let (out_tx, mut out_rx) = mpsc::channel(capacity);
    runtime().block_on(read_lines(
        Chunked {
            data: stream,
            chunk,
        },
        msg_tx,
        out_tx,
        limit,
    ));

    let mut got_messages = Vec::new();
    while let Ok(m) = msg_rx.try_recv() {
        got_messages.push(serde_json::to_string(&m).unwrap());
    }
    assert_eq!(got_messages, expected_messages, "chunks of {chunk}");

    let mut got_answers = 0;
    while let Ok(bytes) = out_rx.try_recv() {
        let Some(expected) = expected_answers.get(got_answers) else {
            panic!("an answer too many: {}", String::from_utf8_lossy(&bytes));
        };
        got_answers += 1;
        let (body, newline) = bytes.split_at(bytes.len() - 1);
        assert_eq!(newline, b"\n");
        let answer: Value = serde_json::from_slice(body).expect("an answer is JSON");
        match expected {
            (Some(a), _) => assert_eq!(&answer, a, "chunks of {chunk}"),
            (None, line) => {
                check_answer(&answer, line);
                assert_eq!(answer["error"]["code"], -32700, "{answer}");
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.contains("longer than"), "{answer}");
                // Its id is read from the line's start only; if it has one,
                // it is the id the whole line carries.
                if !answer["id"].is_null() {
                    let whole = scan_id(&String::from_utf8_lossy(line));
                    assert_eq!(
                        answer["id"],
                        whole,
                        "oversized {:?}, chunks of {chunk}",
                        String::from_utf8_lossy(line)
                    );
                }
            }
        }
    }
    assert_eq!(got_answers, expected_answers.len(), "chunks of {chunk}");
});
