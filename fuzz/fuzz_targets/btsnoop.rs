//! btsnoop captures (`ble_buffer::btsnoop::parse`): H4 (Android) and Linux
//! monitor datalinks, HCI ACL records, L2CAP reassembly across fragments,
//! ATT writes and notifications.
//!
//! Besides "no panic": every imported value comes from a counted record,
//! and the warnings stay capped.
#![no_main]

use ble_buffer::btsnoop::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cap) = parse(data) else {
        return;
    };
    assert!(cap.values.len() <= cap.records as usize);
    assert!(cap.skipped <= cap.records);
    assert!(cap.warnings.len() <= 10);
    for v in &cap.values {
        assert!(v.value.len() <= data.len());
    }
});
