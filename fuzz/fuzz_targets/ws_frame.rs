//! The bridge's WebSocket link (`ble_buffer::ws`): the server's handshake
//! response, the frame decoder, and the bridge URL.
//!
//! Byte 0 sets a chunk size (1 to 256); the rest is what the server sends.
//! The decoder reads it whole and again fed in chunks, as a socket delivers
//! it: both must yield the same messages and end the same way (waiting for
//! more, or the same error). The text, read as a `ws://` URL, must print
//! back to a URL that parses to the same target.
#![no_main]

use ble_buffer::feed::resolve_url;
use ble_buffer::ws::{Decoder, Message, WsError, WsUrl, check_handshake_response};
use libfuzzer_sys::fuzz_target;

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// Messages until the decoder wants more input (`Ok`) or fails (`Err`).
fn drain(d: &mut Decoder, out: &mut Vec<Message>) -> Result<(), WsError> {
    while let Some(m) = d.next_message()? {
        out.push(m);
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = chunk as usize + 1;

    if let Ok(Some(n)) = check_handshake_response(stream, KEY) {
        assert!(n <= stream.len());
    }

    let mut whole = Decoder::default();
    whole.feed(stream);
    let mut whole_msgs = Vec::new();
    let whole_end = drain(&mut whole, &mut whole_msgs);

    let mut parts = Decoder::default();
    let mut part_msgs = Vec::new();
    let mut part_end = Ok(());
    for piece in stream.chunks(chunk) {
        parts.feed(piece);
        part_end = drain(&mut parts, &mut part_msgs);
        if part_end.is_err() {
            break;
        }
    }
    assert_eq!(part_msgs, whole_msgs, "chunks of {chunk}");
    assert_eq!(part_end, whole_end, "chunks of {chunk}");
    if whole_end.is_ok() {
        assert_eq!(parts.buffered(), whole.buffered(), "chunks of {chunk}");
    }

    let text = String::from_utf8_lossy(stream);
    if let Ok(url) = WsUrl::parse(&text) {
        let again = WsUrl::parse(&url.to_url())
            .unwrap_or_else(|e| panic!("{text:?} printed as {} fails: {e}", url.to_url()));
        assert_eq!(again, url, "{text:?}");
        let _ = (url.addr(), url.query(), url.has_param("device"));
    }
    let _ = resolve_url(&text);
});
