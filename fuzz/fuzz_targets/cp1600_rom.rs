//! CP-1600 ROM images (`cp1600::rom`): Intellicart `.ROM` files, raw `.BIN`
//! images, and `.BIN` + `.CFG` pairs, loaded into a machine as
//! `cp1600_load_rom` does and run for a bounded number of instructions.
//!
//! Input layout (byte 0 picks the format):
//! - `0x00` + file: `.ROM`; with bit 7 set (`0x80`) the target first
//!   rewrites the CRCs the file claims, so mutations get past the checks;
//! - `0x01` + load address (2 bytes, big-endian) + file: raw image;
//! - `0x02` + file: `.BIN` with jzIntv's default mapping;
//! - `0x03` + `.BIN` length (2 bytes, big-endian) + `.BIN` + `.CFG` text.
#![no_main]

use cp1600::disasm::disassemble_range;
use cp1600::machine::{Limits, Machine, StopWhen};
use cp1600::memory::Region;
use cp1600::rom::{Image, crc16, parse_bin_cfg, parse_bin_default, parse_raw, parse_rom};
use libfuzzer_sys::fuzz_target;

/// Rewrites the segment-count complement and every CRC of a `.ROM` file
/// where its layout says they are (as far as the file reaches).
fn fix_crcs(b: &mut [u8]) {
    if b.len() < 3 {
        return;
    }
    b[2] = b[1] ^ 0xFF;
    let mut pos = 3;
    for _ in 0..b[1] {
        let Some(&[lo, hi]) = b.get(pos..pos + 2) else {
            return;
        };
        if hi < lo {
            return;
        }
        let data_end = pos + 2 + (hi as usize - lo as usize + 1) * 512;
        if data_end + 2 > b.len() {
            return;
        }
        let crc = crc16(&b[pos..data_end]);
        b[data_end..data_end + 2].copy_from_slice(&crc.to_be_bytes());
        pos = data_end + 2;
    }
    if pos + 50 <= b.len() {
        let crc = crc16(&b[pos..pos + 48]);
        b[pos + 48..pos + 50].copy_from_slice(&crc.to_be_bytes());
    }
}

fn image(data: &[u8]) -> Option<Image> {
    let (&mode, rest) = data.split_first()?;
    match mode & 0x7F {
        0 if mode & 0x80 != 0 => {
            let mut file = rest.to_vec();
            fix_crcs(&mut file);
            parse_rom(&file).ok()
        }
        0 => parse_rom(rest).ok(),
        1 => {
            let (addr, file) = rest.split_at_checked(2)?;
            parse_raw(file, u16::from_be_bytes([addr[0], addr[1]])).ok()
        }
        2 => parse_bin_default(rest).ok(),
        3 => {
            let (len, rest) = rest.split_at_checked(2)?;
            let len = (u16::from_be_bytes([len[0], len[1]]) as usize).min(rest.len());
            let (bin, cfg) = rest.split_at(len);
            parse_bin_cfg(bin, &String::from_utf8_lossy(cfg)).ok()
        }
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(image) = image(data) else {
        return;
    };
    // As `cp1600_load_rom` places an image, into a fresh machine's own
    // memory (a fresh `Memory::new()` too): building a second 64 K-word
    // memory only to move it in cost time on every input.
    let mut machine = Machine::new();
    let mem = &mut machine.cpu.mem;
    for &(lo, hi, region) in &image.ram {
        assert!(lo <= hi, "RAM range ${lo:04X}-${hi:04X} is backwards");
        mem.map_range(lo, hi, region);
    }
    for seg in &image.segments {
        assert!(
            seg.addr as usize + seg.words.len() <= 0x1_0000,
            "segment at ${:04X} with {} words runs past $FFFF",
            seg.addr,
            seg.words.len()
        );
        for (i, w) in seg.words.iter().enumerate() {
            mem.load_word(seg.addr.wrapping_add(i as u16), *w);
        }
    }
    let entry = if mem.region(0x5000) == Region::Rom {
        0x5000
    } else {
        image
            .segments
            .iter()
            .map(|s| s.addr)
            .min()
            .unwrap_or(0x5000)
    };
    machine.cpu.reset_to(entry);
    for seg in &image.segments {
        let listing = disassemble_range(|a| machine.cpu.mem.read(a), seg.addr, seg.end(), 32);
        for instr in &listing {
            let _ = instr.text();
        }
    }
    let limits = Limits {
        instructions: 10_000,
        cycles: u64::MAX,
    };
    let result = machine.run(limits, &StopWhen::default(), &mut |_, _| true);
    assert!(result.executed <= 10_000);
});
