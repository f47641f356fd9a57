//! cp1600 snapshot restore (`snapshot::decode`, then the session
//! `cp1600_create_session` makes from it). A snapshot is outside data: any
//! payload must give a session or an error, never a panic or an overflow.
//!
//! The input edits a real snapshot of a session that stepped a little
//! (`shared/edits.rs` says how). The payload is sealed again in
//! a proper frame, as a crafted snapshot would be; a session that restores
//! steps 2,000 instructions and is snapshotted again.
#![no_main]

use cp1600::snapshot::{MAGIC, VERSION};
use cp1600::tools::Sessions;
use libfuzzer_sys::fuzz_target;

#[path = "shared/edits.rs"]
mod edits;
use std::sync::OnceLock;

fn base() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut sessions = Sessions::default();
        let id = sessions.create_session(None).unwrap().session_id;
        let _ = sessions.step(Some(&id), Some(50), Some(false), &mut |_, _, _| true);
        let text = sessions.snapshot(Some(&id)).unwrap().snapshot;
        plugin_kit::blob::open(MAGIC, VERSION, usize::MAX, &text)
            .unwrap()
            .1
    })
}

fuzz_target!(|edits: &[u8]| {
    let payload = edits::edited(base(), edits);
    let text = plugin_kit::blob::seal(MAGIC, VERSION, &payload);
    let mut sessions = Sessions::default();
    let Ok(made) = sessions.create_session_from(None, Some(&text)) else {
        return;
    };
    let id = made.session_id;
    let _ = sessions.step(Some(&id), Some(2_000), Some(true), &mut |_, _, _| true);
    let _ = sessions.snapshot(Some(&id));
});
