//! Writes samples/ble-buffer/btsnoop_hci.log: a small synthetic Android HCI
//! capture (datalink 1002) of a session with the simulator's scripted device,
//! for trying import_btsnoop without a phone.
//!
//!     cargo run -p ble-buffer --example make_sample

use ble_bridge_sim::device;
use ble_buffer::btsnoop::DATALINK_H4;
use ble_buffer::btsnoop::build::{acl, att, h4, header, record};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let t0: i64 = 1_753_437_600_000_000; // 2025-07-25T10:00:00Z
    let mut f = header(DATALINK_H4);
    // HCI Reset and its Command Complete: present in real logs, not imported.
    record(&mut f, 0b10, t0, &h4(0x01, &[0x03, 0x0C, 0x00]));
    record(
        &mut f,
        0b11,
        t0 + 900,
        &h4(0x04, &[0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
    );
    let mut number = 1u32;
    for i in 0..40u32 {
        let t = t0 + 1_000_000 + i as i64 * 250_000;
        let req = device::request(number, (i % 8) as u8);
        let rep = device::reply(number + 1, &req);
        number += 2;
        for frag in acl(0x0040, &att(0x52, 0x000E, &req), 27) {
            record(&mut f, 0b00, t, &h4(0x02, &frag));
        }
        for frag in acl(0x0040, &att(0x1B, 0x0010, &rep), 27) {
            record(&mut f, 0b01, t + 18_750, &h4(0x02, &frag));
        }
        if i % 4 == 3 {
            // A long notification that needs L2CAP reassembly.
            let mut tag = device::notification(number);
            number += 1;
            tag.extend((0..48).map(|b| b as u8 ^ i as u8));
            for frag in acl(0x0040, &att(0x1B, 0x0010, &tag), 27) {
                record(&mut f, 0b01, t + 120_000, &h4(0x02, &frag));
            }
        }
    }
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/ble-buffer");
    std::fs::create_dir_all(&out)?;
    let path = out.join("btsnoop_hci.log");
    std::fs::write(&path, &f)?;
    println!("wrote {} ({} bytes)", path.display(), f.len());
    Ok(())
}
