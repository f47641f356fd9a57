//! DOS 1.x services: filename parsing (AH=29h, and the PSP's default FCBs)
//! and file I/O through file control blocks (AH=0Fh..17h, 21h..24h, 27h,
//! 28h). DOS keeps its own state for an open FCB in the FCB's reserved bytes;
//! here those bytes hold a slot number into [`Dos::fcb_files`], so a program
//! that copies an open FCB keeps using the same file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::{Dos, is_special};
use crate::cpu::{AX, CX, Cpu, DI, DS, DX, ES, SI};

/// Most FCB files open at once (DOS's FCBS= default is 4; some room more).
pub const MAX_FCB_FILES: usize = 16;
/// Marks the reserved bytes of an FCB this DOS opened.
const OPEN_TAG: u16 = 0xB7C4;
/// Our only drive, C:, as an FCB drive number.
const DRIVE_C: u8 = 3;

/// Characters that end a file name (DOS 2.x).
fn is_terminator(b: u8) -> bool {
    b <= b' ' || b"./\\\"[]:|<>+=;,".contains(&b)
}

/// What AH=29h found.
pub struct Parsed {
    /// 0: no wildcards, 1: wildcards, 0xFF: invalid drive.
    pub result: u8,
    /// Bytes consumed from the string.
    pub consumed: usize,
}

/// Parses a file name from `text` into the 12 first bytes of an FCB
/// (`fcb[0]` drive, 1..9 name, 9..12 extension), as INT 21h AH=29h with
/// the control bits in `flags`.
pub fn parse_name(text: &[u8], flags: u8, fcb: &mut [u8; 12]) -> Parsed {
    let at = |i: usize| text.get(i).copied().unwrap_or(0x0D);
    let mut i = 0;
    while matches!(at(i), b' ' | b'\t') {
        i += 1;
    }
    if flags & 1 != 0 && b":.;,=+".contains(&at(i)) {
        i += 1;
        while matches!(at(i), b' ' | b'\t') {
            i += 1;
        }
    }
    let mut result = 0u8;
    if at(i + 1) == b':' && at(i).is_ascii_alphabetic() {
        let d = at(i).to_ascii_uppercase() - b'A' + 1;
        fcb[0] = d;
        if d != DRIVE_C {
            result = 0xFF;
        }
        i += 2;
    } else if flags & 2 == 0 {
        fcb[0] = 0;
    }
    let field = |i: &mut usize, range: std::ops::Range<usize>, keep: bool, fcb: &mut [u8; 12]| {
        let start = *i;
        let mut k = range.start;
        let mut wild = false;
        while !is_terminator(at(*i)) {
            let c = at(*i);
            *i += 1;
            if k >= range.end {
                continue;
            }
            if c == b'*' {
                while k < range.end {
                    fcb[k] = b'?';
                    k += 1;
                }
                wild = true;
                continue;
            }
            wild |= c == b'?';
            fcb[k] = c.to_ascii_uppercase();
            k += 1;
        }
        if *i == start {
            if !keep {
                fcb[range].fill(b' ');
            }
        } else {
            fcb[k..range.end].fill(b' ');
        }
        wild
    };
    let mut wild = field(&mut i, 1..9, flags & 4 != 0, fcb);
    if at(i) == b'.' {
        i += 1;
        wild |= field(&mut i, 9..12, false, fcb);
    } else if flags & 8 == 0 {
        fcb[9..12].fill(b' ');
    }
    if result == 0 && wild {
        result = 1;
    }
    Parsed {
        result,
        consumed: i,
    }
}

/// "NAME.EXT" from the 11 name bytes of an FCB.
fn fcb_name(name: &[u8]) -> String {
    let part = |b: &[u8]| String::from_utf8_lossy(b).trim_end().to_string();
    let (n, e) = (part(&name[..8]), part(&name[8..11]));
    if e.is_empty() { n } else { format!("{n}.{e}") }
}

/// Whether a host file name matches an 11-byte FCB pattern ('?' any).
fn matches(pattern: &[u8], host: &str) -> bool {
    let Some(fcb) = to_fcb_name(host) else {
        return false;
    };
    pattern
        .iter()
        .zip(fcb.iter())
        .all(|(p, c)| *p == b'?' || p.eq_ignore_ascii_case(c))
}

/// A host name as 8.3 FCB bytes, if it is a valid 8.3 name.
fn to_fcb_name(host: &str) -> Option<[u8; 11]> {
    let (n, e) = host.rsplit_once('.').unwrap_or((host, ""));
    if n.is_empty() || n.len() > 8 || e.len() > 3 || !host.is_ascii() {
        return None;
    }
    let mut out = [b' '; 11];
    out[..n.len()].copy_from_slice(n.to_ascii_uppercase().as_bytes());
    out[8..8 + e.len()].copy_from_slice(e.to_ascii_uppercase().as_bytes());
    Some(out)
}

/// Where an FCB's fields live (after an extended FCB's 7-byte header).
#[derive(Clone, Copy)]
struct Fcb {
    seg: u16,
    off: u16,
}

impl Fcb {
    fn at(cpu: &Cpu, seg: u16, off: u16) -> Fcb {
        let ext = cpu.rb(Cpu::lin(seg, off)) == 0xFF;
        Fcb {
            seg,
            off: off.wrapping_add(if ext { 7 } else { 0 }),
        }
    }
    fn lin(&self, k: u16) -> u32 {
        Cpu::lin(self.seg, self.off.wrapping_add(k))
    }
    fn bytes(&self, cpu: &Cpu, k: u16, n: u16) -> Vec<u8> {
        (0..n).map(|i| cpu.rb(self.lin(k + i))).collect()
    }
    fn word(&self, cpu: &Cpu, k: u16) -> u16 {
        cpu.read_word(self.seg, self.off.wrapping_add(k))
    }
    fn set_word(&self, cpu: &mut Cpu, k: u16, v: u16) {
        cpu.write_word(self.seg, self.off.wrapping_add(k), v)
    }
    fn drive_ok(&self, cpu: &Cpu) -> bool {
        matches!(cpu.rb(self.lin(0)), 0 | DRIVE_C)
    }
    fn record_size(&self, cpu: &Cpu) -> u64 {
        match self.word(cpu, 0x0E) {
            0 => 128,
            n => n as u64,
        }
    }
    /// Sequential position: current block * 128 + current record.
    fn sequential(&self, cpu: &Cpu) -> u64 {
        self.word(cpu, 0x0C) as u64 * 128 + cpu.rb(self.lin(0x20)) as u64
    }
    fn set_sequential(&self, cpu: &mut Cpu, rec: u64) {
        self.set_word(cpu, 0x0C, (rec / 128) as u16);
        cpu.wb(self.lin(0x20), (rec % 128) as u8);
    }
    /// The random record field (4 bytes for records under 64 bytes, else 3).
    fn random(&self, cpu: &Cpu) -> u64 {
        let n = if self.record_size(cpu) < 64 { 4 } else { 3 };
        (0..n).fold(0u64, |a, i| {
            a | (cpu.rb(self.lin(0x21 + i)) as u64) << (8 * i)
        })
    }
    fn set_random(&self, cpu: &mut Cpu, rec: u64) {
        let n = if self.record_size(cpu) < 64 { 4 } else { 3 };
        for i in 0..n {
            cpu.wb(self.lin(0x21 + i), (rec >> (8 * i)) as u8);
        }
    }
    fn set_size(&self, cpu: &mut Cpu, size: u64) {
        self.set_word(cpu, 0x10, size as u16);
        self.set_word(cpu, 0x12, (size >> 16) as u16);
    }
    fn slot(&self, cpu: &Cpu) -> Option<usize> {
        (self.word(cpu, 0x1A) == OPEN_TAG).then(|| self.word(cpu, 0x18) as usize)
    }
}

fn set_al(cpu: &mut Cpu, v: u8) {
    cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | v as u16;
}

impl Dos {
    /// Fills the PSP's default FCBs at 5Ch and 6Ch from the command tail, as
    /// COMMAND.COM does with AH=29h (skipping leading separators).
    pub(super) fn fill_default_fcbs(cpu: &mut Cpu, psp: u16, tail: &[u8]) {
        let mut rest = tail;
        for at in [0x5Cu16, 0x6C] {
            let mut fcb = [0u8; 12];
            let p = parse_name(rest, 1, &mut fcb);
            for (i, b) in fcb.iter().enumerate() {
                cpu.wb(Cpu::lin(psp, at + i as u16), *b);
            }
            rest = &rest[p.consumed.min(rest.len())..];
            // The next name starts after the switch or word that ended this one.
            while let Some(&c) = rest.first() {
                if c == b'/' {
                    rest = &rest[1..];
                    while rest.first().is_some_and(|c| !is_terminator(*c)) {
                        rest = &rest[1..];
                    }
                } else {
                    break;
                }
            }
        }
    }

    /// INT 21h AH=29h.
    pub(super) fn parse_filename(&mut self, cpu: &mut Cpu) {
        let (ds, si) = (cpu.sregs[DS], cpu.regs[SI]);
        let (es, di) = (cpu.sregs[ES], cpu.regs[DI]);
        let text: Vec<u8> = (0..128u16)
            .map(|i| cpu.rb(Cpu::lin(ds, si.wrapping_add(i))))
            .collect();
        let mut fcb = [0u8; 12];
        for (i, b) in fcb.iter_mut().enumerate() {
            *b = cpu.rb(Cpu::lin(es, di.wrapping_add(i as u16)));
        }
        let p = parse_name(&text, cpu.regs[AX] as u8, &mut fcb);
        for (i, b) in fcb.iter().enumerate() {
            cpu.wb(Cpu::lin(es, di.wrapping_add(i as u16)), *b);
        }
        cpu.regs[SI] = si.wrapping_add(p.consumed as u16);
        set_al(cpu, p.result);
    }

    fn fcb_host_path(&self, cpu: &Cpu, f: Fcb, at: u16) -> Option<std::path::PathBuf> {
        if !f.drive_ok(cpu) {
            return None;
        }
        let name = fcb_name(&f.bytes(cpu, at, 11));
        if name.is_empty() || name.contains('?') {
            return None;
        }
        self.host_path(name.as_bytes()).ok()
    }

    /// Opens (AH=0Fh) or creates (AH=16h) the file an FCB names.
    fn fcb_open(&mut self, cpu: &mut Cpu, f: Fcb, create: bool) -> u8 {
        let Some(p) = self.fcb_host_path(cpu, f, 1) else {
            return 0xFF;
        };
        if is_special(&p) || p.is_dir() {
            return 0xFF;
        }
        let file = if create {
            File::create(&p)
        } else {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&p)
                .or_else(|_| File::open(&p))
        };
        let Ok(file) = file else {
            return 0xFF;
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let slot = match f.slot(cpu) {
            // Reopening an open FCB reuses its slot.
            Some(s) if s < self.fcb_files.len() => s,
            _ => match self.fcb_files.iter().position(Option::is_none) {
                Some(s) => s,
                None if self.fcb_files.len() < MAX_FCB_FILES => {
                    self.fcb_files.push(None);
                    self.fcb_files.len() - 1
                }
                None => return 0xFF,
            },
        };
        self.fcb_files[slot] = Some(file);
        if cpu.rb(f.lin(0)) == 0 {
            cpu.wb(f.lin(0), DRIVE_C);
        }
        f.set_word(cpu, 0x0C, 0);
        f.set_word(cpu, 0x0E, 128);
        f.set_size(cpu, size);
        f.set_word(cpu, 0x14, 0x0021); // 1 Jan 1980
        f.set_word(cpu, 0x16, 0);
        f.set_word(cpu, 0x18, slot as u16);
        f.set_word(cpu, 0x1A, OPEN_TAG);
        0
    }

    /// Reads `count` records at record `rec` into the DTA; returns the DOS
    /// result (0 whole, 1 nothing at end of file, 3 partial last record)
    /// and the records transferred (a partial one counts).
    fn fcb_read(&mut self, cpu: &mut Cpu, f: Fcb, rec: u64, count: u64) -> (u8, u64) {
        let size = f.record_size(cpu);
        let Some(Some(file)) = f.slot(cpu).and_then(|s| self.fcb_files.get_mut(s)) else {
            return (1, 0);
        };
        let want = (size * count).min(0x10000) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        if file.seek(SeekFrom::Start(rec * size)).is_ok() {
            while got < want {
                match file.read(&mut buf[got..]) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => got += k,
                }
            }
        }
        let records = (got as u64).div_ceil(size);
        // A partial record is padded with zeros, as DOS does.
        let fill = (records * size) as usize;
        let (seg, off) = self.dta;
        for (i, b) in buf[..fill.min(want)].iter().enumerate() {
            cpu.wb(Cpu::lin(seg, off.wrapping_add(i as u16)), *b);
        }
        let code = if got == want {
            0
        } else if got == 0 {
            1
        } else {
            3
        };
        (code, records)
    }

    /// Writes `count` records from the DTA at record `rec`; returns the DOS
    /// result (0 done, 1 disk full) and the records written.
    fn fcb_write(&mut self, cpu: &mut Cpu, f: Fcb, rec: u64, count: u64) -> (u8, u64) {
        let size = f.record_size(cpu);
        let Some(slot) = f.slot(cpu).filter(|s| *s < self.fcb_files.len()) else {
            return (1, 0);
        };
        let Some(mut file) = self.fcb_files[slot].take() else {
            return (1, 0);
        };
        let (seg, off) = self.dta;
        let n = (size * count).min(0x10000) as usize;
        let data: Vec<u8> = (0..n)
            .map(|i| cpu.rb(Cpu::lin(seg, off.wrapping_add(i as u16))))
            .collect();
        let r = file
            .seek(SeekFrom::Start(rec * size))
            .map_err(|_| 5)
            .and_then(|_| self.write_file(&mut file, &data));
        let new_size = file.metadata().map(|m| m.len()).unwrap_or(0);
        self.fcb_files[slot] = Some(file);
        f.set_size(cpu, new_size);
        match r {
            Ok(k) if k == n => (0, count),
            Ok(k) => (1, k as u64 / size),
            Err(_) => (1, 0),
        }
    }

    /// Names in drive C: matching the FCB's 11-byte pattern, sorted.
    fn fcb_matches(&self, pattern: &[u8]) -> Vec<String> {
        let mut names: Vec<String> = plugin_kit::paths::read_dir_entries(&self.root)
            .map(|es| {
                es.into_iter()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| matches(pattern, n))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Writes the next FCB search result to the DTA (AH=11h/12h).
    fn fcb_find_next(&mut self, cpu: &mut Cpu) -> u8 {
        let Some(name) = self.fcb_search.pop() else {
            return 0xFF;
        };
        let Some(fcb) = to_fcb_name(&name) else {
            return 0xFF;
        };
        let size = std::fs::metadata(self.root.join(&name))
            .map(|m| m.len())
            .unwrap_or(0);
        let (seg, off) = self.dta;
        let mut entry = vec![DRIVE_C];
        entry.extend_from_slice(&fcb);
        entry.push(0x20); // archive attribute
        entry.extend_from_slice(&[0; 10]);
        entry.extend_from_slice(&0u16.to_le_bytes()); // time
        entry.extend_from_slice(&0x0021u16.to_le_bytes()); // date: 1 Jan 1980
        entry.extend_from_slice(&0u16.to_le_bytes()); // cluster
        entry.extend_from_slice(&(size as u32).to_le_bytes());
        for (i, b) in entry.iter().enumerate() {
            cpu.wb(Cpu::lin(seg, off.wrapping_add(i as u16)), *b);
        }
        0
    }

    /// The FCB services; true when `ah` was one of them.
    pub(super) fn fcb_service(&mut self, ah: u8, cpu: &mut Cpu) -> bool {
        let f = Fcb::at(cpu, cpu.sregs[DS], cpu.regs[DX]);
        match ah {
            0x0F | 0x16 => {
                let r = self.fcb_open(cpu, f, ah == 0x16);
                set_al(cpu, r);
            }
            0x10 => {
                let r = match f.slot(cpu) {
                    Some(s) if self.fcb_files.get(s).is_some_and(Option::is_some) => {
                        self.fcb_files[s] = None;
                        f.set_word(cpu, 0x1A, 0);
                        0
                    }
                    _ => 0xFF,
                };
                set_al(cpu, r);
            }
            0x11 => {
                let r = if f.drive_ok(cpu) {
                    let mut names = self.fcb_matches(&f.bytes(cpu, 1, 11));
                    names.reverse();
                    self.fcb_search = names;
                    self.fcb_find_next(cpu)
                } else {
                    0xFF
                };
                set_al(cpu, r);
            }
            0x12 => {
                let r = self.fcb_find_next(cpu);
                set_al(cpu, r);
            }
            0x13 => {
                let mut deleted = 0;
                if f.drive_ok(cpu) {
                    for n in self.fcb_matches(&f.bytes(cpu, 1, 11)) {
                        if std::fs::remove_file(self.root.join(n)).is_ok() {
                            deleted += 1;
                        }
                    }
                }
                set_al(cpu, if deleted > 0 { 0 } else { 0xFF });
            }
            0x14 => {
                let rec = f.sequential(cpu);
                let (r, n) = self.fcb_read(cpu, f, rec, 1);
                f.set_sequential(cpu, rec + n);
                set_al(cpu, r);
            }
            0x15 => {
                let rec = f.sequential(cpu);
                let (r, n) = self.fcb_write(cpu, f, rec, 1);
                f.set_sequential(cpu, rec + n);
                set_al(cpu, r);
            }
            0x17 => {
                let r = match (
                    self.fcb_host_path(cpu, f, 1),
                    self.fcb_host_path(cpu, f, 0x11),
                ) {
                    (Some(from), Some(to))
                        if from.is_file()
                            && !to.exists()
                            && std::fs::rename(&from, &to).is_ok() =>
                    {
                        0
                    }
                    _ => 0xFF,
                };
                set_al(cpu, r);
            }
            0x21 | 0x22 => {
                let rec = f.random(cpu);
                f.set_sequential(cpu, rec);
                let (r, _) = if ah == 0x21 {
                    self.fcb_read(cpu, f, rec, 1)
                } else {
                    self.fcb_write(cpu, f, rec, 1)
                };
                set_al(cpu, r);
            }
            0x23 => {
                let r = match self
                    .fcb_host_path(cpu, f, 1)
                    .and_then(|p| std::fs::metadata(p).ok())
                {
                    Some(m) => {
                        let size = f.record_size(cpu);
                        f.set_random(cpu, m.len().div_ceil(size));
                        0
                    }
                    None => 0xFF,
                };
                set_al(cpu, r);
            }
            0x24 => {
                let rec = f.sequential(cpu);
                f.set_random(cpu, rec);
            }
            0x27 | 0x28 => {
                let rec = f.random(cpu);
                let count = cpu.regs[CX] as u64;
                let (r, n) = if ah == 0x27 {
                    self.fcb_read(cpu, f, rec, count)
                } else if count == 0 {
                    // CX=0 sets the file size to the random record.
                    (self.fcb_truncate(cpu, f, rec), 0)
                } else {
                    self.fcb_write(cpu, f, rec, count)
                };
                cpu.regs[CX] = n as u16;
                f.set_random(cpu, rec + n);
                f.set_sequential(cpu, rec + n);
                set_al(cpu, r);
            }
            _ => return false,
        }
        true
    }

    fn fcb_truncate(&mut self, cpu: &mut Cpu, f: Fcb, rec: u64) -> u8 {
        let size = rec * f.record_size(cpu);
        let Some(Some(file)) = f.slot(cpu).and_then(|s| self.fcb_files.get_mut(s)) else {
            return 1;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let grow = size.saturating_sub(len);
        if size > self.limits.file_bytes
            || grow
                > self
                    .limits
                    .write_bytes
                    .saturating_sub(self.file_bytes_written)
            || file.set_len(size).is_err()
        {
            self.disk_full += 1;
            return 1;
        }
        self.file_bytes_written += grow;
        f.set_size(cpu, size);
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, flags: u8) -> (u8, usize, String) {
        let mut fcb = [0u8; 12];
        let p = parse_name(text.as_bytes(), flags, &mut fcb);
        (
            p.result,
            p.consumed,
            String::from_utf8_lossy(&fcb[..]).into_owned(),
        )
    }

    #[test]
    fn parse_filename_as_dos() {
        assert_eq!(parse(" a.txt b", 1), (0, 6, "\0A       TXT".into()));
        assert_eq!(parse("c:*.c", 1), (1, 5, "\x03????????C  ".into()));
        assert_eq!(parse("b:x", 0), (0xFF, 3, "\x02X          ".into()));
        assert_eq!(parse(",longername.text", 1).2, "\0LONGERNATEX");
        assert_eq!(parse("/b", 1), (0, 0, "\0           ".into()));
        assert!(matches(b"????????C  ", "main.c"));
        assert!(!matches(b"????????C  ", "main.cc"));
        assert_eq!(fcb_name(b"COMP    COM"), "COMP.COM");
    }

    #[test]
    fn find_rename_and_delete_through_fcbs() {
        use crate::cpu::{DS, Model};
        let dir = std::env::temp_dir().join(format!("x86-fcb-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["A.TXT", "B.TXT", "C.DAT"] {
            std::fs::write(dir.join(n), n).unwrap();
        }
        let mut dos = Dos::new(dir.clone());
        let mut cpu = Cpu::new(Model::I80186);
        cpu.sregs[DS] = 0x100;
        cpu.regs[DX] = 0;
        dos.dta = (0x200, 0);
        let set = |cpu: &mut Cpu, at: u16, bytes: &[u8]| {
            for (i, b) in bytes.iter().enumerate() {
                cpu.wb(Cpu::lin(0x100, at + i as u16), *b);
            }
        };
        let al = |cpu: &Cpu| cpu.regs[AX] as u8;
        let dta = |cpu: &Cpu| {
            (0..12)
                .map(|i| cpu.rb(Cpu::lin(0x200, i)))
                .collect::<Vec<u8>>()
        };
        set(&mut cpu, 0, b"\0????????TXT");
        assert!(dos.fcb_service(0x11, &mut cpu));
        assert_eq!((al(&cpu), dta(&cpu)), (0, b"\x03A       TXT".to_vec()));
        dos.fcb_service(0x12, &mut cpu);
        assert_eq!((al(&cpu), dta(&cpu)), (0, b"\x03B       TXT".to_vec()));
        dos.fcb_service(0x12, &mut cpu);
        assert_eq!(al(&cpu), 0xFF);
        // Rename A.TXT to Z.TXT (new name at offset 11h).
        set(&mut cpu, 0, b"\0A       TXT");
        set(&mut cpu, 0x10, b"\0Z       TXT");
        dos.fcb_service(0x17, &mut cpu);
        assert_eq!(al(&cpu), 0);
        assert_eq!(std::fs::read(dir.join("Z.TXT")).unwrap(), b"A.TXT");
        // Delete by pattern.
        set(&mut cpu, 0, b"\0????????DAT");
        dos.fcb_service(0x13, &mut cpu);
        assert_eq!(al(&cpu), 0);
        assert!(!dir.join("C.DAT").exists());
        dos.fcb_service(0x13, &mut cpu);
        assert_eq!(al(&cpu), 0xFF);
        // Other drives are not there.
        set(&mut cpu, 0, b"\x01????????TXT");
        dos.fcb_service(0x11, &mut cpu);
        assert_eq!(al(&cpu), 0xFF);
    }
}
