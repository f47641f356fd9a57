//! A session's whole state as one compact, versioned blob
//! (`cp1600_snapshot`), and a session made from one
//! (`cp1600_create_session` with `snapshot`): to hand a session to another
//! server or client, keep a point to come back to, or step a copy locally.
//!
//! The blob is `plugin_kit::blob`'s frame (magic `CPSN`, version, length,
//! CRC-32) around this payload, little-endian, format version 2 (version 1,
//! written before the STIC registers were emulated, is read too: it has no
//! kind 4, and its session gets the registers at their power-on values):
//!
//! | field | bytes |
//! |---|---|
//! | R0-R7 | 8 × u16 |
//! | flags: bit 0 S, 1 Z, 2 OV, 3 C, 4 I, 5 D (SDBD pending), 6 halted | u8 |
//! | machine: bit 0 interrupt pending, 1 checks, 2 interrupt entered, 3 poked, 4 tracing | u8 |
//! | external branch inputs (EBCA0-3) | u8 |
//! | cycles, instructions, memory changes | 3 × u64 |
//! | start: PC, R0-R6, has-stacked u8, stacked address and value, kind u8 | u16, 7 × u16, u8, 2 × u16, u8 |
//! | mapped runs: count u32, then per run first u16, last u16, kind u8 (1 ROM, 2 8-bit RAM, 3 16-bit RAM, 4 STIC registers, only within $0000-$003F) | |
//! | the runs' words in order: a byte each in 8-bit RAM, else u16 | |
//! | image RAM (re-mapped on reset): count u16, then first, last u16, kind u8 | |
//! | breakpoints: count u32, then u16 each, ascending | |
//! | trace capacity | u32 |
//! | ROM: present u8; then path (u16 length + UTF-8, at most 1024 bytes), format (same), bytes u32, exec u8, segments count u16 + first, last u16 each | |
//!
//! Not kept: the trace's entries (history, not state) and the session's id
//! and creation time (the restored session is a new one). Unmapped words
//! take no room, so a snapshot is about twice the size of the mapped
//! memory; the largest possible (every word mapped, every breakpoint set)
//! is under [`MAX_CHARS`].

use crate::cart::{Start, StartKind};
use crate::machine::{Machine, TRACE_MAX};
use crate::memory::{Memory, Region, STIC, WORDS};
use plugin_kit::blob::{self, Reader, Writer};

/// Names a cp1600 session snapshot.
pub const MAGIC: [u8; 4] = *b"CPSN";
/// The payload layout written (and the newest read). Version 2 added the
/// STIC registers (kind 4): a build that reads only version 1 says the
/// snapshot is newer rather than that its memory kind is wrong.
pub const VERSION: u16 = 2;
/// Longest snapshot text accepted: the largest possible is about 800 000
/// characters (65536 one-word runs of alternating kinds, 65536
/// breakpoints), so anything longer is not one.
pub const MAX_CHARS: usize = 1 << 20;
/// Longest ROM path or format name kept.
const MAX_NAME: usize = 1024;

/// The ROM a session loaded, as `cp1600_list_sessions` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedRom {
    /// The path it was loaded from (on the machine that loaded it).
    pub path: String,
    /// `rom`, `bin` or `bin+cfg`.
    pub format: &'static str,
    /// Bytes read.
    pub bytes: usize,
    /// Address ranges loaded.
    pub segments: Vec<(u16, u16)>,
    /// An EXEC image is mapped at $1000.
    pub exec: bool,
}

/// Everything a session is, but its id and creation time.
#[derive(Clone)]
pub struct Saved {
    /// CPU, memory, breakpoints and trace settings.
    pub machine: Machine,
    /// The loaded ROM, if any.
    pub rom: Option<SavedRom>,
    /// RAM the image asked for (re-mapped on reset).
    pub image_ram: Vec<(u16, u16, Region)>,
    /// Where a reset starts.
    pub start: Start,
    /// Memory was written by the debugger.
    pub poked: bool,
}

impl std::fmt::Debug for Saved {
    // The machine holds 64K words of memory: show its registers only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saved")
            .field("cpu", &self.machine.cpu.st)
            .field("rom", &self.rom)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

/// The formats `rom::Image` names: decoding maps a stored name back to one.
const FORMATS: [&str; 3] = ["rom", "bin", "bin+cfg"];

fn region_code(r: Region) -> u8 {
    r as u8
}

fn region_from(code: u8, what: &str) -> Result<Region, String> {
    match code {
        1 => Ok(Region::Rom),
        2 => Ok(Region::Ram8),
        3 => Ok(Region::Ram16),
        4 => Ok(Region::Stic),
        _ => Err(format!(
            "{what}: memory kind {code} (expected 1 ROM, 2 8-bit RAM, 3 16-bit RAM or 4 STIC registers)"
        )),
    }
}

fn kind_code(k: StartKind) -> u8 {
    match k {
        StartKind::Plain => 0,
        StartKind::Exec => 1,
        StartKind::QuickBoot => 2,
        StartKind::Header => 3,
    }
}

fn kind_from(code: u8) -> Result<StartKind, String> {
    Ok(match code {
        0 => StartKind::Plain,
        1 => StartKind::Exec,
        2 => StartKind::QuickBoot,
        3 => StartKind::Header,
        _ => return Err(format!("start kind {code} is not one of 0-3")),
    })
}

/// The blob for `s` (base64 text).
pub fn encode(s: &Saved) -> String {
    let m = &s.machine;
    let st = &m.cpu.st;
    let mut w = Writer::new();
    for r in st.r {
        w.u16(r);
    }
    w.u8(st.s as u8
        | (st.z as u8) << 1
        | (st.ov as u8) << 2
        | (st.c as u8) << 3
        | (st.i as u8) << 4
        | (st.d as u8) << 5
        | (st.halted as u8) << 6);
    w.u8(m.cpu.irq as u8
        | (m.cpu.checks as u8) << 1
        | (m.cpu.irq_entered as u8) << 2
        | (s.poked as u8) << 3
        | (m.tracing() as u8) << 4);
    w.u8(m.cpu.ext);
    w.u64(st.cycles)
        .u64(st.instructions)
        .u64(m.cpu.mem.changes());
    w.u16(s.start.pc);
    for r in s.start.r {
        w.u16(r);
    }
    let (has, (sa, sv)) = match s.start.stacked {
        Some(p) => (1, p),
        None => (0, (0, 0)),
    };
    w.u8(has).u16(sa).u16(sv).u8(kind_code(s.start.how));
    let mem = &m.cpu.mem;
    let runs = mem.regions();
    w.u32(runs.len() as u32);
    for &(lo, hi, r) in &runs {
        w.u16(lo).u16(hi).u8(region_code(r));
    }
    for &(lo, hi, r) in &runs {
        for a in lo..=hi {
            match r {
                Region::Ram8 => w.u8(mem.read(a) as u8),
                _ => w.u16(mem.read(a)),
            };
        }
    }
    w.u16(s.image_ram.len() as u16);
    for &(lo, hi, r) in &s.image_ram {
        w.u16(lo).u16(hi).u8(region_code(r));
    }
    let bps = m.breakpoints();
    w.u32(bps.len() as u32);
    for b in bps {
        w.u16(b);
    }
    w.u32(m.trace_capacity() as u32);
    match &s.rom {
        None => {
            w.u8(0);
        }
        Some(r) => {
            w.u8(1).str(&r.path, MAX_NAME).str(r.format, MAX_NAME);
            w.u32(r.bytes.min(u32::MAX as usize) as u32);
            w.u8(r.exec as u8);
            let segs = &r.segments[..r.segments.len().min(u16::MAX as usize)];
            w.u16(segs.len() as u16);
            for &(a, b) in segs {
                w.u16(a).u16(b);
            }
        }
    }
    blob::seal(MAGIC, VERSION, &w.0)
}

/// Counters a snapshot may carry: below 2^63, so that a run (which adds at
/// most its budget) and the differences taken from them stay far from
/// u64's end. A live session takes millennia to get there; a larger value
/// is a crafted or damaged text.
pub const MAX_COUNTER: u64 = 1 << 63;

/// A counter field, refused at or above [`MAX_COUNTER`].
fn counter(rd: &mut Reader, field: &str) -> Result<u64, String> {
    let v = rd.u64(field)?;
    if v >= MAX_COUNTER {
        return Err(format!("{field} {v} is not below 2^63"));
    }
    Ok(v)
}

/// The session a blob holds, or what is wrong with the blob.
pub fn decode(text: &str) -> Result<Saved, String> {
    let (version, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, text.trim())?;
    let mut rd = Reader::new(&payload);
    let mut m = Machine::new();
    for i in 0..8 {
        m.cpu.st.r[i] = rd.u16("registers")?;
    }
    let f = rd.u8("flags")?;
    if f & 0x80 != 0 {
        return Err(format!("flags byte {f:#04x} has an undefined bit set"));
    }
    let st = &mut m.cpu.st;
    (st.s, st.z, st.ov, st.c, st.i, st.d, st.halted) = (
        f & 1 != 0,
        f & 2 != 0,
        f & 4 != 0,
        f & 8 != 0,
        f & 16 != 0,
        f & 32 != 0,
        f & 64 != 0,
    );
    let mf = rd.u8("machine flags")?;
    if mf & !0x1F != 0 {
        return Err(format!(
            "machine flags byte {mf:#04x} has an undefined bit set"
        ));
    }
    m.cpu.irq = mf & 1 != 0;
    m.cpu.checks = mf & 2 != 0;
    m.cpu.irq_entered = mf & 4 != 0;
    let poked = mf & 8 != 0;
    let tracing = mf & 16 != 0;
    m.cpu.ext = rd.u8("external inputs")?;
    if m.cpu.ext > 0x0F {
        return Err(format!(
            "external inputs {:#04x}: only EBCA0-3 (4 bits) exist",
            m.cpu.ext
        ));
    }
    m.cpu.st.cycles = counter(&mut rd, "cycles")?;
    m.cpu.st.instructions = counter(&mut rd, "instructions")?;
    let changes = counter(&mut rd, "memory changes")?;
    let pc = rd.u16("start PC")?;
    let mut r = [0u16; 7];
    for v in &mut r {
        *v = rd.u16("start registers")?;
    }
    let has = rd.u8("start stack flag")?;
    let stacked = (rd.u16("start stack address")?, rd.u16("start stack value")?);
    let how = kind_from(rd.u8("start kind")?)?;
    let start = Start {
        pc,
        r,
        stacked: match has {
            0 => None,
            1 => Some(stacked),
            n => return Err(format!("start stack flag {n} is neither 0 nor 1")),
        },
        how,
    };
    let n = rd.u32("mapped run count")? as usize;
    if n > WORDS {
        return Err(format!("{n} mapped runs in a {WORDS}-word address space"));
    }
    let mut runs = Vec::with_capacity(n);
    let mut next = 0usize;
    for i in 0..n {
        let lo = rd.u16("mapped run")?;
        let hi = rd.u16("mapped run")?;
        let kind = region_from(rd.u8("mapped run")?, &format!("mapped run {i}"))?;
        if (lo as usize) < next || hi < lo {
            return Err(format!(
                "mapped run {i} (${lo:04X}-${hi:04X}) is empty or overlaps the one before; runs must ascend"
            ));
        }
        if kind == Region::Stic && (version < 2 || hi > STIC.1) {
            return Err(format!(
                "mapped run {i} (${lo:04X}-${hi:04X}) holds STIC registers, which exist only at ${:04X}-${:04X} and only in format version 2",
                STIC.0, STIC.1
            ));
        }
        next = hi as usize + 1;
        runs.push((lo, hi, kind));
    }
    let mut mem = Memory::new();
    mem.map_range(0, u16::MAX, Region::Unmapped);
    for &(lo, hi, kind) in &runs {
        mem.map_range(lo, hi, kind);
        for a in lo..=hi {
            let v = match kind {
                Region::Ram8 => rd.u8("memory words")? as u16,
                _ => rd.u16("memory words")?,
            };
            mem.poke(a, v);
        }
    }
    if version < 2 {
        // Written before the STIC was emulated: its addresses were unmapped
        // then; the console has the registers, at their power-on values.
        for a in STIC.0..=STIC.1 {
            if mem.region(a) == Region::Unmapped {
                mem.map_range(a, a, Region::Stic);
            }
        }
    }
    mem.restore_changes(changes);
    m.cpu.mem = mem;
    let n = rd.u16("image RAM count")? as usize;
    let mut image_ram = Vec::with_capacity(n);
    for i in 0..n {
        let lo = rd.u16("image RAM")?;
        let hi = rd.u16("image RAM")?;
        let kind = region_from(rd.u8("image RAM")?, &format!("image RAM range {i}"))?;
        if hi < lo || matches!(kind, Region::Rom | Region::Stic) {
            return Err(format!(
                "image RAM range {i} (${lo:04X}-${hi:04X}) is empty or not RAM"
            ));
        }
        image_ram.push((lo, hi, kind));
    }
    let n = rd.u32("breakpoint count")? as usize;
    if n > WORDS {
        return Err(format!("{n} breakpoints in a {WORDS}-word address space"));
    }
    for _ in 0..n {
        let a = rd.u16("breakpoints")?;
        if !m.set_breakpoint(a) {
            return Err(format!("breakpoint ${a:04X} is listed twice"));
        }
    }
    let cap = rd.u32("trace capacity")? as usize;
    if !(1..=TRACE_MAX).contains(&cap) {
        return Err(format!("trace capacity {cap} is outside 1-{TRACE_MAX}"));
    }
    m.configure_trace(tracing, Some(cap));
    let rom = match rd.u8("ROM flag")? {
        0 => None,
        1 => {
            let path = rd.str("ROM path", MAX_NAME)?;
            let name = rd.str("ROM format", MAX_NAME)?;
            let format = FORMATS
                .into_iter()
                .find(|f| *f == name)
                .ok_or_else(|| format!("ROM format `{name}` is not one of {FORMATS:?}"))?;
            let bytes = rd.u32("ROM size")? as usize;
            let exec = match rd.u8("ROM EXEC flag")? {
                0 => false,
                1 => true,
                n => return Err(format!("ROM EXEC flag {n} is neither 0 nor 1")),
            };
            let k = rd.u16("ROM segment count")? as usize;
            let mut segments = Vec::with_capacity(k);
            for _ in 0..k {
                segments.push((rd.u16("ROM segments")?, rd.u16("ROM segments")?));
            }
            Some(SavedRom {
                path,
                format,
                bytes,
                segments,
                exec,
            })
        }
        n => return Err(format!("ROM flag {n} is neither 0 nor 1")),
    };
    rd.finish()?;
    Ok(Saved {
        machine: m,
        rom,
        image_ram,
        start,
        poked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Limits, StopWhen};

    fn sample() -> Saved {
        let p = crate::asm::assemble(
            " ORG $5000\n MVII #$02F0, R6\n MVII #300, R1\nl: MVO R1, $0200\n MVO R1, $0100\n DECR R1\n BNEQ l\n SDBD\n MVII #$1234, R2\n HLT\n",
        )
        .unwrap();
        let mut m = Machine::new();
        for (i, w) in p.words.iter().enumerate() {
            m.cpu.mem.load_word(p.origin + i as u16, *w);
        }
        m.cpu.reset_to(p.origin);
        m.set_breakpoint(0x5004);
        m.set_breakpoint(0x5010);
        m.configure_trace(true, Some(77));
        m.cpu.ext = 5;
        Saved {
            machine: m,
            rom: Some(SavedRom {
                path: "/tmp/x.bin".into(),
                format: "bin+cfg",
                bytes: 2 * p.words.len(),
                segments: vec![(0x5000, 0x500F)],
                exec: false,
            }),
            image_ram: vec![(0x8040, 0x9F7F, Region::Ram16)],
            start: Start::plain(0x5000),
            poked: true,
        }
    }

    fn step(m: &mut Machine, n: u64) {
        m.run(
            Limits {
                instructions: n,
                cycles: u64::MAX,
            },
            &StopWhen::default(),
            &mut |_, _| true,
        );
    }

    fn same(a: &Saved, b: &Saved) {
        let (ma, mb) = (&a.machine, &b.machine);
        assert_eq!(ma.cpu.st, mb.cpu.st);
        assert_eq!(
            (ma.cpu.irq, ma.cpu.ext, ma.cpu.checks, ma.cpu.irq_entered),
            (mb.cpu.irq, mb.cpu.ext, mb.cpu.checks, mb.cpu.irq_entered)
        );
        assert_eq!(ma.cpu.mem.regions(), mb.cpu.mem.regions());
        for a in 0..=u16::MAX {
            assert_eq!(ma.cpu.mem.read(a), mb.cpu.mem.read(a), "word ${a:04X}");
        }
        assert_eq!(ma.cpu.mem.changes(), mb.cpu.mem.changes());
        assert_eq!(ma.breakpoints(), mb.breakpoints());
        assert_eq!(
            (ma.tracing(), ma.trace_capacity()),
            (mb.tracing(), mb.trace_capacity())
        );
        assert_eq!(a.rom, b.rom);
        assert_eq!(a.image_ram, b.image_ram);
        assert_eq!(a.start, b.start);
        assert_eq!(a.poked, b.poked);
    }

    #[test]
    fn round_trip_then_stepping_both_stays_identical() {
        let mut a = sample();
        step(&mut a.machine, 40);
        let text = encode(&a);
        let mut b = decode(&text).unwrap();
        same(&a, &b);
        for n in [1, 7, 500, 10_000] {
            step(&mut a.machine, n);
            step(&mut b.machine, n);
            same(&a, &b);
        }
        assert!(a.machine.cpu.st.halted, "the program ran to its HLT");
        assert_eq!(a.machine.cpu.st.r[2], 0x1234);
        // Encoding is deterministic: the same state gives the same text.
        assert_eq!(encode(&a), encode(&b));
    }

    #[test]
    fn size_follows_the_mapped_memory() {
        let text = encode(&sample());
        // 17 ROM words, 240 bytes of 8-bit RAM, 512 bytes of GRAM, 352
        // words of 16-bit RAM, 64 STIC registers and about 150 bytes of
        // registers, runs and ROM details: 1746 bytes, 2328 characters of
        // base64 (the unmapped 62K words take none).
        assert!(text.len() < 2400, "{} characters", text.len());
    }

    /// The STIC registers (issue 38 item 14) travel with the session; a
    /// version 1 snapshot, written before they existed, gets them at their
    /// power-on values; kind 4 is refused outside $0000-$003F.
    #[test]
    fn stic_registers_round_trip_and_old_snapshots_get_them() {
        let mut a = sample();
        a.machine.cpu.mem.write(0x0028, 0x0005);
        let b = decode(&encode(&a)).unwrap();
        same(&a, &b);
        assert_eq!(b.machine.cpu.mem.read(0x0028), 0x3FF5);
        assert_eq!(b.machine.cpu.mem.region(0x0000), Region::Stic);

        // A version 1 text: the same payload without the STIC run.
        a.machine
            .cpu
            .mem
            .map_range(0x0000, 0x003F, Region::Unmapped);
        let (_, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &encode(&a)).unwrap();
        let old = decode(&blob::seal(MAGIC, 1, &payload)).unwrap();
        let mem = &old.machine.cpu.mem;
        assert_eq!(
            (mem.region(0x0028), mem.read(0x0028)),
            (Region::Stic, 0x3FFF)
        );
        assert_eq!(mem.read(0x0018), 0x3FFE);

        // Kind 4 in a version 1 text, or beyond $003F, is damage.
        let (_, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &encode(&sample())).unwrap();
        let e = decode(&blob::seal(MAGIC, 1, &payload))
            .map(|_| ())
            .unwrap_err();
        assert!(e.contains("STIC registers"), "{e}");
        // The first run, after registers and flags (19 bytes), counters
        // (24), start (22) and the run count (4), is the STIC's: stretch it
        // to $0040.
        let at = 19 + 24 + 22 + 4;
        let mut p = payload.clone();
        assert_eq!(&p[at..at + 5], &[0x00, 0x00, 0x3F, 0x00, 4]);
        p[at + 2] = 0x40;
        let e = decode(&blob::seal(MAGIC, VERSION, &p))
            .map(|_| ())
            .unwrap_err();
        assert!(e.contains("$0000-$0040") && e.contains("STIC"), "{e}");
    }

    #[test]
    fn any_damaged_payload_is_refused_not_a_panic() {
        let text = encode(&sample());
        let (_, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &text).unwrap();
        for cut in 0..payload.len() {
            assert!(
                decode(&blob::seal(MAGIC, VERSION, &payload[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        for i in 0..payload.len() {
            for bit in [0x01, 0x80, 0xFF] {
                let mut p = payload.clone();
                p[i] ^= bit;
                let _ = decode(&blob::seal(MAGIC, VERSION, &p));
            }
        }
    }

    #[test]
    fn counters_near_u64_max_are_refused() {
        let mut a = sample();
        step(&mut a.machine, 10);
        let (_, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &encode(&a)).unwrap();
        // R0-R7, flags, machine flags, external inputs: 19 bytes, then the
        // three counters.
        for (at, field) in [(19, "cycles"), (27, "instructions"), (35, "memory changes")] {
            for v in [MAX_COUNTER, u64::MAX - 3] {
                let mut p = payload.clone();
                p[at..at + 8].copy_from_slice(&v.to_le_bytes());
                let e = decode(&blob::seal(MAGIC, VERSION, &p))
                    .map(|_| ())
                    .unwrap_err();
                assert!(e.contains(field) && e.contains("2^63"), "{e}");
            }
        }
        // The largest accepted runs on (the sums saturate, never wrap).
        let mut p = payload.clone();
        p[19..27].copy_from_slice(&(MAX_COUNTER - 1).to_le_bytes());
        p[27..35].copy_from_slice(&(MAX_COUNTER - 1).to_le_bytes());
        let mut b = decode(&blob::seal(MAGIC, VERSION, &p)).unwrap();
        let before = b.machine.cpu.st.cycles;
        step(&mut b.machine, 100);
        assert!(b.machine.cpu.st.cycles > before);
        assert!(b.machine.cpu.st.instructions > MAX_COUNTER - 1);
    }

    #[test]
    fn rom_names_over_the_writers_cap_are_refused() {
        let (_, payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &encode(&sample())).unwrap();
        let mut old = vec![10, 0];
        old.extend_from_slice(b"/tmp/x.bin");
        let at = payload.windows(12).position(|w| w == old).unwrap();
        let long = format!("/{}", "r".repeat(MAX_NAME));
        let mut p = payload[..at].to_vec();
        p.extend_from_slice(&(long.len() as u16).to_le_bytes());
        p.extend_from_slice(long.as_bytes());
        p.extend_from_slice(&payload[at + 12..]);
        let e = decode(&blob::seal(MAGIC, VERSION, &p))
            .map(|_| ())
            .unwrap_err();
        assert!(e.contains("`ROM path` is 1025 bytes, over the 1024"), "{e}");
    }

    #[test]
    fn damaged_or_foreign_input_is_refused_with_the_reason() {
        let text = encode(&sample());
        assert!(decode("").unwrap_err().contains("too short"));
        assert!(decode("not a snapshot!").unwrap_err().contains("base64"));
        assert!(
            decode(&text[..text.len() - 8])
                .unwrap_err()
                .contains("payload bytes")
        );
        let mut raw = blob::base64_decode(&text).unwrap();
        raw[20] ^= 0x40;
        assert!(
            decode(&blob::base64_encode(&raw))
                .unwrap_err()
                .contains("checksum")
        );
        let other = blob::seal(*b"X86S", 1, b"payload");
        assert!(decode(&other).unwrap_err().contains("not a CPSN"));
        let newer = blob::seal(MAGIC, VERSION + 1, b"payload");
        assert!(decode(&newer).unwrap_err().contains("version 3"));
        assert!(
            decode(&"A".repeat(MAX_CHARS + 4))
                .unwrap_err()
                .contains("more than")
        );
        // A well-framed payload with bad fields: each is named.
        let short = blob::seal(MAGIC, VERSION, &[0; 10]);
        assert!(decode(&short).unwrap_err().contains("`registers`"));
        let mut w = Writer::new();
        for _ in 0..8 {
            w.u16(0);
        }
        w.u8(0x80);
        let bad_flags = blob::seal(MAGIC, VERSION, &w.0);
        assert!(decode(&bad_flags).unwrap_err().contains("undefined bit"));
        let (_, mut payload) = blob::open(MAGIC, VERSION, MAX_CHARS, &text).unwrap();
        payload.push(0);
        let longer = blob::seal(MAGIC, VERSION, &payload);
        assert!(decode(&longer).unwrap_err().contains("left over"));
    }
}
