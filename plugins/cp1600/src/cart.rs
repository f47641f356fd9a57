//! What the Intellivision EXEC (the console's boot ROM, $1000-$1FFF) knows
//! about a cartridge, for running one without the EXEC, whose images are
//! Mattel's and not ours to ship.
//!
//! The EXEC reads the "universal data block" at $5000: six BIDECLE
//! pointers (each a 16-bit address as two words holding its low then its
//! high byte), then a flags word. Layout as documented by the SDK-1600
//! "EXEC-friendly ROM header", IntyBASIC's prologue and rom-properties'
//! `intv_structs.h`:
//!
//! | words | content |
//! |---|---|
//! | $5000-$5001 | MOB picture base |
//! | $5002-$5003 | process table |
//! | $5004-$5005 | program start address |
//! | $5006-$5007 | background picture base |
//! | $5008-$5009 | GRAM picture list |
//! | $500A-$500B | title: one word year − 1900, the title characters, a 0 |
//! | $500C | flags: bit 7 runs the code right after the title's 0, bit 6 Intellivision II, bits 8-9 skip the ECS title, bits 0-4 key click |
//!
//! Before that the EXEC checks $7000 and then $4800: when the word there
//! is a 10-bit value (ROM, not the $FFFF of an empty bus) it jumps straight
//! to it ("quick boot"). Register values at those jumps are taken from a
//! jzIntv trace of the real EXEC (namuol/intv-web); the EXEC's title-screen
//! path is not traced, so its registers here are an approximation.

use crate::memory::{Memory, Region};

/// Where the EXEC keeps its stack: R6 at its first instruction after reset.
pub const EXEC_STACK: u16 = 0x02F1;
/// The EXEC ROM's place and size in words.
pub const EXEC_BASE: u16 = 0x1000;
/// The EXEC ROM's size in words (8192 bytes).
pub const EXEC_WORDS: usize = 4096;
/// The GROM (character ROM): 2048 bytes, one per word, at $3000.
pub const GROM_BASE: u16 = 0x3000;
/// The GROM image's size in bytes (one byte per word).
pub const GROM_BYTES: usize = 2048;

/// A decoded cartridge header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The title string the EXEC shows.
    pub title: String,
    /// 1900 + the title block's first word.
    pub year: u16,
    /// The program start address (what the EXEC calls after its title screen).
    pub start: u16,
    /// Where the title block (year word, then the string) is.
    pub title_address: u16,
    /// First word after the title's terminating 0.
    pub after_title: u16,
    /// The flags word; bit 7 has the EXEC run the code after the title.
    pub flags: u16,
}

impl Header {
    /// Flag bit 7: the EXEC runs the code that follows the title string.
    pub fn runs_code_after_title(&self) -> bool {
        self.flags & 0x80 != 0
    }
}

fn rom_word(mem: &Memory, addr: u16) -> Option<u16> {
    (mem.region(addr) == Region::Rom).then(|| mem.read(addr))
}

/// The header at $5000, when the words there make one: byte-sized BIDECLE
/// halves, a start address and a title inside loaded ROM, a title of
/// printable characters ending in 0 within 64 words.
pub fn read_header(mem: &Memory) -> Option<Header> {
    let mut w = [0u16; 13];
    for (i, slot) in w.iter_mut().enumerate() {
        *slot = rom_word(mem, 0x5000 + i as u16)?;
    }
    if w[..12].iter().any(|&v| v > 0xFF) || w[12] > 0x3FF {
        return None;
    }
    let ptr = |i: usize| w[2 * i] | (w[2 * i + 1] << 8);
    let start = ptr(2);
    let title_address = ptr(5);
    rom_word(mem, start)?;
    let year = rom_word(mem, title_address)?;
    if year > 0xFF {
        return None;
    }
    let mut title = String::new();
    for i in 1..=64u16 {
        let c = rom_word(mem, title_address.wrapping_add(i))?;
        match c {
            0 => {
                return Some(Header {
                    title,
                    year: 1900 + year,
                    start,
                    title_address,
                    after_title: title_address.wrapping_add(i + 1),
                    flags: w[12],
                });
            }
            0x20..=0x7E => title.push(c as u8 as char),
            _ => return None,
        }
    }
    None
}

/// Registers to start a cartridge with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// Where execution starts (R7).
    pub pc: u16,
    /// R0-R6 (R7 is `pc`).
    pub r: [u16; 7],
    /// A word to place on the stack below R6 (a return address).
    pub stacked: Option<(u16, u16)>,
    /// How the start was chosen, for the load result and its note.
    pub how: StartKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// How a load chose its start (shown to agents as `start`).
pub enum StartKind {
    /// At the load address (or `entry_point`), every register 0.
    Plain,
    /// Through a loaded EXEC at $1000, as the console powers on.
    Exec,
    /// The EXEC's quick boot at $7000 or $4800.
    QuickBoot,
    /// Where the header says the program starts.
    Header,
}

impl StartKind {
    /// The name agents see: `load_address`, `exec`, `quick_boot` or `header`.
    pub fn name(self) -> &'static str {
        match self {
            StartKind::Plain => "load_address",
            StartKind::Exec => "exec",
            StartKind::QuickBoot => "quick_boot",
            StartKind::Header => "header",
        }
    }
}

impl Start {
    /// A start at `pc` with every other register 0 (a bare load).
    pub fn plain(pc: u16) -> Start {
        Start {
            pc,
            r: [0; 7],
            stacked: None,
            how: StartKind::Plain,
        }
    }

    /// What the user is told about this start.
    pub fn note(&self) -> Option<String> {
        match self.how {
            StartKind::Plain => None,
            StartKind::Exec => Some(
                "starts in your EXEC at $1000, as the console does on power-on and reset".into(),
            ),
            StartKind::QuickBoot => Some(format!(
                "no EXEC loaded: starts at ${:04X} as the EXEC's quick boot does, with the registers a real-EXEC trace shows there (R1 = ${:04X}, R4 = $01FE, R5 = ${:04X} inside the EXEC, R6 = $02F1)",
                self.pc, self.r[1], self.r[5]
            )),
            StartKind::Header => Some(match self.stacked {
                Some((_, ret)) => format!(
                    "no EXEC loaded: an approximation of the EXEC's start. It runs the code after the title (${:04X}) with R5 = ${ret:04X}, the program start, also on the stack at $02F1 (R6 = $02F2), so returning from it goes on to the program as the EXEC would after its title screen; RAM is clear, interrupts off, and nothing the EXEC would have drawn or set up is there",
                    self.pc
                ),
                None => format!(
                    "no EXEC loaded: an approximation of the EXEC's start. It runs the program start address from the header (${:04X}) with R6 = $02F1 (the EXEC's stack); RAM is clear, interrupts off, and nothing the EXEC would have drawn or set up is there",
                    self.pc
                ),
            }),
        }
    }
}

/// The EXEC's quick boot: a 10-bit word of ROM at $7000, else at $4800.
pub fn quick_boot(mem: &Memory) -> Option<Start> {
    // (target, R5 as the EXEC's check routine leaves it)
    for (target, r5) in [(0x7000u16, 0x103Du16), (0x4800, 0x1041)] {
        if rom_word(mem, target).is_some_and(|w| w <= 0x3FF) {
            let mut r = [0u16; 7];
            r[1] = target;
            r[4] = 0x01FE;
            r[5] = r5;
            r[6] = EXEC_STACK;
            return Some(Start {
                pc: target,
                r,
                stacked: None,
                how: StartKind::QuickBoot,
            });
        }
    }
    None
}

/// Starting from the header without an EXEC (see [`Start::note`]).
pub fn header_start(h: &Header) -> Start {
    let mut r = [0u16; 7];
    if h.runs_code_after_title() && h.after_title != h.start {
        r[5] = h.start;
        r[6] = EXEC_STACK + 1;
        Start {
            pc: h.after_title,
            r,
            stacked: Some((EXEC_STACK, h.start)),
            how: StartKind::Header,
        }
    } else {
        r[6] = EXEC_STACK;
        let pc = if h.runs_code_after_title() {
            h.after_title
        } else {
            h.start
        };
        Start {
            pc,
            r,
            stacked: None,
            how: StartKind::Header,
        }
    }
}

/// An EXEC image: 4096 big-endian words of 10 bits.
pub fn parse_exec(bytes: &[u8]) -> Result<Vec<u16>, String> {
    if bytes.len() != EXEC_WORDS * 2 {
        return Err(format!(
            "an EXEC image is {} bytes (4096 big-endian 16-bit words for $1000-$1FFF, as jzIntv's exec.bin); this file has {}",
            EXEC_WORDS * 2,
            bytes.len()
        ));
    }
    let words: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]))
        .collect();
    if let Some(i) = words.iter().position(|&w| w > 0x3FF) {
        return Err(format!(
            "word {i} is ${:04X}, wider than the EXEC ROM's 10 bits: this is not an EXEC image",
            words[i]
        ));
    }
    Ok(words)
}

/// A GROM image: 2048 bytes, one character-ROM byte per word at $3000.
pub fn parse_grom(bytes: &[u8]) -> Result<Vec<u16>, String> {
    if bytes.len() != GROM_BYTES {
        return Err(format!(
            "a GROM image is {GROM_BYTES} bytes (one byte per word for $3000-$37FF, as jzIntv's grom.bin); this file has {}",
            bytes.len()
        ));
    }
    Ok(bytes.iter().map(|&b| b as u16).collect())
}

/// What lives at an address on an Intellivision, for messages about
/// addresses with nothing mapped in this session.
pub fn area_name(addr: u16) -> Option<&'static str> {
    Some(match addr {
        0x0000..=0x003F => "the STIC (video chip) registers",
        0x0040..=0x005F => "the Intellicart bank-switch registers",
        0x0080..=0x0081 => "the Intellivoice registers",
        0x00F0..=0x00FF => "the ECS sound chip",
        0x01F0..=0x01FF => "the sound chip and hand controllers",
        0x1000..=0x1FFF => "the EXEC ROM",
        0x3000..=0x37FF => "the GROM (character ROM)",
        0x3800..=0x3FFF => "the GRAM (graphics RAM, written in vertical blank)",
        0x8040..=0x9F7F => "JLP RAM (enabled by `jlp = 1` in a .cfg's [vars])",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places `words` at `addr` as ROM.
    fn rom(mem: &mut Memory, addr: u16, words: &[u16]) {
        for (i, w) in words.iter().enumerate() {
            mem.load_word(addr + i as u16, *w);
        }
    }

    fn bidecle(a: u16) -> [u16; 2] {
        [a & 0xFF, a >> 8]
    }

    /// A header whose title is at $5014 and whose start is `start`.
    fn headered(flags: u16, start: u16) -> Memory {
        let mut mem = Memory::new();
        let mut w = Vec::new();
        for p in [0x500D, 0x500D, start, 0x500D, 0x500F, 0x5014] {
            w.extend(bidecle(p));
        }
        w.push(flags);
        w.extend([0, 0, 1, 1, 1, 1, 1]); // $500D-$5013
        w.push(125); // $5014: 2025
        w.extend("Tiny".bytes().map(u16::from));
        w.push(0);
        w.extend([0x0034, 0x0000]); // $501A: NOP, HLT
        rom(&mut mem, 0x5000, &w);
        mem
    }

    #[test]
    fn header_fields() {
        let mem = headered(0x03C0, 0x501B);
        let h = read_header(&mem).unwrap();
        assert_eq!(
            h,
            Header {
                title: "Tiny".into(),
                year: 2025,
                start: 0x501B,
                title_address: 0x5014,
                after_title: 0x501A,
                flags: 0x03C0,
            }
        );
        // Code after the title first, returning into the program start.
        let s = header_start(&h);
        assert_eq!((s.pc, s.r[5], s.r[6]), (0x501A, 0x501B, 0x02F2));
        assert_eq!(s.stacked, Some((0x02F1, 0x501B)));
        // Without flag bit 7, straight to the start address.
        let h = read_header(&headered(0x0340, 0x501B)).unwrap();
        let s = header_start(&h);
        assert_eq!((s.pc, s.r[6], s.stacked), (0x501B, 0x02F1, None));
        // IntyBASIC: the program starts right after the title.
        let h = read_header(&headered(0x03C0, 0x501A)).unwrap();
        let s = header_start(&h);
        assert_eq!((s.pc, s.r[5], s.r[6]), (0x501A, 0, 0x02F1));
    }

    #[test]
    fn code_is_not_a_header() {
        // MVII #$02F0,R6 ... : words above $FF.
        let mut mem = Memory::new();
        rom(&mut mem, 0x5000, &[0x02BE, 0x02F0, 0x0000]);
        assert_eq!(read_header(&mem), None);
        // A title pointer outside the ROM.
        let mut mem = headered(0x03C0, 0x501B);
        mem.poke(0x500B, 0x60);
        assert_eq!(read_header(&mem), None);
        // A title without its 0 (non-text word).
        let mut mem = headered(0x03C0, 0x501B);
        mem.poke(0x5019, 0x0300);
        assert_eq!(read_header(&mem), None);
    }

    #[test]
    fn quick_boot_prefers_7000_and_needs_ten_bit_rom() {
        let mut mem = Memory::new();
        assert_eq!(quick_boot(&mem), None);
        rom(&mut mem, 0x4800, &[0x0034]);
        let s = quick_boot(&mem).unwrap();
        assert_eq!(
            (s.pc, s.r[1], s.r[5], s.r[6]),
            (0x4800, 0x4800, 0x1041, 0x02F1)
        );
        rom(&mut mem, 0x7000, &[0xFFFF]);
        assert_eq!(quick_boot(&mem).unwrap().pc, 0x4800, "$FFFF is no code");
        mem.poke(0x7000, 0x0004);
        assert_eq!(quick_boot(&mem).unwrap().pc, 0x7000);
    }

    #[test]
    fn exec_and_grom_images_are_checked() {
        assert!(parse_exec(&[0; 100]).unwrap_err().contains("8192"));
        let mut exec = vec![0u8; 8192];
        assert_eq!(parse_exec(&exec).unwrap().len(), 4096);
        exec[10] = 0x04;
        assert!(parse_exec(&exec).unwrap_err().contains("10 bits"));
        assert!(parse_grom(&[0; 2047]).unwrap_err().contains("2048"));
        assert_eq!(parse_grom(&[7; 2048]).unwrap()[5], 7);
    }
}
