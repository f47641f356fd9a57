//! DOS program loading (PSP, .COM, MZ .EXE) and the INT 20h/21h, INT 10h and
//! small BIOS services, implemented natively.
//!
//! Drive C: is the directory the program was loaded from; DOS file services
//! never reach outside it (they fail with DOS error codes instead).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

use crate::cpu::{AX, BX, CF, CS, CX, Cpu, DS, DX, ES, Model, SI, SP, SS, STUB_SEGMENT, ZF};

/// Where things live in the 1 MiB address space.
pub const ENV_SEGMENT: u16 = 0x0070;
pub const PSP_SEGMENT: u16 = 0x0087;
pub const MEMORY_TOP: u16 = 0xA000;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Format(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Com,
    Exe,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Com => "com",
            Format::Exe => "exe",
        }
    }
}

/// Facts about the loaded program.
#[derive(Clone, Debug)]
pub struct Program {
    pub path: PathBuf,
    pub format: Format,
    pub psp: u16,
    /// Segment that .EXE relocations are relative to (PSP for .COM).
    pub load_segment: u16,
    pub entry: (u16, u16),
    pub size: usize,
}

/// What a service asks the run loop to do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit(u8),
}

enum Handle {
    Stdin,
    Stdout,
    Stderr,
    Null,
    File(File),
}

/// DOS and BIOS state of one machine.
pub struct Dos {
    /// Directory mapped to drive C:.
    pub root: PathBuf,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Characters written through INT 10h (teletype and write-char).
    pub screen: Vec<u8>,
    pub int21_calls: BTreeMap<u8, u64>,
    /// Service calls that are not implemented (vector/function → count).
    pub unsupported: BTreeMap<String, u64>,
    handles: Vec<Option<Handle>>,
    /// Allocated blocks: segment → paragraphs.
    blocks: BTreeMap<u16, u16>,
    dta: (u16, u16),
    psp: u16,
    return_code: u8,
    cursor: (u8, u8),
}

fn dos_err(cpu: &mut Cpu, code: u16) {
    cpu.regs[AX] = code;
    cpu.flags |= CF;
}

fn dos_ok(cpu: &mut Cpu) {
    cpu.flags &= !CF;
}

fn io_error_code(e: &std::io::Error) -> u16 {
    match e.kind() {
        std::io::ErrorKind::NotFound => 2,
        std::io::ErrorKind::PermissionDenied => 5,
        std::io::ErrorKind::AlreadyExists => 80,
        _ => 5,
    }
}

impl Dos {
    pub fn new(root: PathBuf) -> Self {
        Dos {
            root,
            stdout: Vec::new(),
            stderr: Vec::new(),
            screen: Vec::new(),
            int21_calls: BTreeMap::new(),
            unsupported: BTreeMap::new(),
            handles: vec![
                Some(Handle::Stdin),
                Some(Handle::Stdout),
                Some(Handle::Stderr),
                Some(Handle::Null),
                Some(Handle::Null),
            ],
            blocks: BTreeMap::new(),
            dta: (PSP_SEGMENT, 0x80),
            psp: PSP_SEGMENT,
            return_code: 0,
            cursor: (0, 0),
        }
    }

    /// Sets up the IVT, BIOS data area, environment and PSP, then loads the
    /// program image and sets the entry registers.
    pub fn load(
        &mut self,
        cpu: &mut Cpu,
        path: &Path,
        image: &[u8],
        tail: &str,
    ) -> Result<Program, LoadError> {
        if tail.len() > 126 {
            return Err(LoadError::Format(format!(
                "command tail is {} bytes; DOS allows at most 126",
                tail.len()
            )));
        }
        // IVT: every vector points at its own IRET stub, which the CPU
        // recognises as "serviced natively".
        for n in 0..256u16 {
            cpu.write_word(0, n * 4, n);
            cpu.write_word(0, n * 4 + 2, STUB_SEGMENT);
            cpu.wb(Cpu::lin(STUB_SEGMENT, n), 0xCF);
        }
        cpu.services = true;
        // BIOS data area.
        cpu.write_word(0x40, 0x10, 0x0021); // equipment: 80x25 colour, 1 floppy
        cpu.write_word(0x40, 0x13, 640);
        cpu.wb(0x449, 3);
        cpu.write_word(0x40, 0x4A, 80);
        cpu.write_word(0x40, 0x63, 0x3D4);
        cpu.wb(0x484, 24);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_uppercase())
            .unwrap_or_else(|| "PROGRAM.COM".into());
        // Environment: variables, a terminating zero, word 1, program path.
        let mut env = b"PATH=C:\\\0COMSPEC=C:\\COMMAND.COM\0\0\x01\0".to_vec();
        env.extend_from_slice(format!("C:\\{name}\0").as_bytes());
        let env_base = Cpu::lin(ENV_SEGMENT, 0);
        for (i, b) in env.iter().enumerate() {
            cpu.wb(env_base + i as u32, *b);
        }
        let psp = PSP_SEGMENT;
        self.psp = psp;
        self.dta = (psp, 0x80);
        let is_exe = image.len() >= 2 && (&image[..2] == b"MZ" || &image[..2] == b"ZM");
        let (format, entry, size) = if is_exe {
            self.load_exe(cpu, psp, image)?
        } else {
            if image.len() > 0xFF00 {
                return Err(LoadError::Format(format!(
                    ".COM image is {} bytes; the limit is 65280",
                    image.len()
                )));
            }
            let base = Cpu::lin(psp, 0x100);
            for (i, b) in image.iter().enumerate() {
                cpu.wb(base + i as u32, *b);
            }
            self.blocks.insert(psp, MEMORY_TOP - psp);
            cpu.sregs = [psp, psp, psp, psp];
            cpu.regs = [0, 0x00FF, psp, 0, 0xFFFE, 0x091C, 0x0100, 0xFFFE];
            cpu.write_word(psp, 0xFFFE, 0);
            cpu.ip = 0x100;
            (Format::Com, (psp, 0x100), image.len())
        };
        self.write_psp(cpu, psp, tail);
        cpu.flags = 0xF202;
        Ok(Program {
            path: path.to_path_buf(),
            format,
            psp,
            load_segment: if format == Format::Exe {
                psp + 0x10
            } else {
                psp
            },
            entry,
            size,
        })
    }

    fn load_exe(
        &mut self,
        cpu: &mut Cpu,
        psp: u16,
        image: &[u8],
    ) -> Result<(Format, (u16, u16), usize), LoadError> {
        if image.len() < 0x1C {
            return Err(LoadError::Format(
                "MZ header is truncated (under 28 bytes)".into(),
            ));
        }
        let w = |o: usize| u16::from_le_bytes([image[o], image[o + 1]]);
        let last = w(2) as usize;
        let pages = w(4) as usize;
        let nreloc = w(6) as usize;
        let header = w(8) as usize * 16;
        let min_extra = w(0x0A);
        let max_extra = w(0x0C);
        let (ss, sp, ip, cs, reloc_off) = (w(0x0E), w(0x10), w(0x14), w(0x16), w(0x18) as usize);
        let mut end = pages * 512;
        // Bytes used in the last page; 0 (and, as DOS reads it, anything
        // past 511) means the whole page.
        if last != 0 && last < 512 {
            end = end.saturating_sub(512 - last);
        }
        let end = end.min(image.len());
        if header > end {
            return Err(LoadError::Format(format!(
                "MZ header size {header} is beyond the image end {end}"
            )));
        }
        let module = &image[header..end];
        let load = psp + 0x10;
        let paras = module.len().div_ceil(16) as u32;
        let avail = (MEMORY_TOP - load) as u32;
        if paras + min_extra as u32 > avail {
            return Err(LoadError::Format(format!(
                "program needs {} paragraphs but only {avail} are free",
                paras + min_extra as u32
            )));
        }
        let base = Cpu::lin(load, 0);
        for (i, b) in module.iter().enumerate() {
            cpu.wb(base + i as u32, *b);
        }
        for r in 0..nreloc {
            let o = reloc_off + r * 4;
            if o + 4 > image.len() {
                return Err(LoadError::Format(format!(
                    "relocation {r} lies outside the file"
                )));
            }
            let (off, seg) = (w(o), w(o + 2));
            let s = load.wrapping_add(seg);
            let v = cpu.read_word(s, off).wrapping_add(load);
            cpu.write_word(s, off, v);
        }
        let want = (paras + 0x10 + max_extra as u32).min((MEMORY_TOP - psp) as u32);
        self.blocks.insert(psp, want as u16);
        cpu.sregs[ES] = psp;
        cpu.sregs[DS] = psp;
        cpu.sregs[SS] = load.wrapping_add(ss);
        cpu.sregs[CS] = load.wrapping_add(cs);
        cpu.regs = [0, 0x00FF, psp, 0, sp, 0x091C, 0, sp];
        cpu.regs[SP] = sp;
        cpu.ip = ip;
        Ok((Format::Exe, (load.wrapping_add(cs), ip), image.len()))
    }

    fn write_psp(&self, cpu: &mut Cpu, psp: u16, tail: &str) {
        let base = Cpu::lin(psp, 0);
        for i in 0..256 {
            cpu.wb(base + i, 0);
        }
        cpu.wb(base, 0xCD);
        cpu.wb(base + 1, 0x20);
        let top = psp.wrapping_add(*self.blocks.get(&psp).unwrap_or(&0));
        cpu.write_word(psp, 2, top);
        // Far call to the CP/M-style entry (INT 21h stub).
        cpu.wb(base + 5, 0x9A);
        cpu.write_word(psp, 6, 0x21);
        cpu.write_word(psp, 8, STUB_SEGMENT);
        for (i, v) in [0x22u16, 0x23, 0x24].iter().enumerate() {
            let off = cpu.read_word(0, v * 4);
            let seg = cpu.read_word(0, v * 4 + 2);
            cpu.write_word(psp, 0x0A + 4 * i as u16, off);
            cpu.write_word(psp, 0x0C + 4 * i as u16, seg);
        }
        cpu.write_word(psp, 0x16, psp);
        cpu.write_word(psp, 0x2C, ENV_SEGMENT);
        // INT 21h; RETF at PSP:50.
        cpu.wb(base + 0x50, 0xCD);
        cpu.wb(base + 0x51, 0x21);
        cpu.wb(base + 0x52, 0xCB);
        for f in [0x5C, 0x6C] {
            for i in 1..12 {
                cpu.wb(base + f + i, b' ');
            }
        }
        let tail = tail.as_bytes();
        cpu.wb(base + 0x80, tail.len() as u8);
        for (i, b) in tail.iter().enumerate() {
            cpu.wb(base + 0x81 + i as u32, *b);
        }
        cpu.wb(base + 0x81 + tail.len() as u32, 0x0D);
    }

    /// Performs interrupt `n` natively. Errors are never host errors: DOS
    /// calls fail with CF and a DOS error code.
    pub fn service(&mut self, n: u8, cpu: &mut Cpu) -> Flow {
        match n {
            0x00 => {
                self.stdout.extend_from_slice(b"Divide overflow\r\n");
                Flow::Exit(0xFF)
            }
            0x10 => {
                self.int10(cpu);
                Flow::Continue
            }
            0x11 => {
                cpu.regs[AX] = cpu.read_word(0x40, 0x10);
                Flow::Continue
            }
            0x12 => {
                cpu.regs[AX] = 640;
                Flow::Continue
            }
            0x16 => {
                // No keyboard: report "no key" and return Enter when forced to read.
                match cpu.regs[AX] >> 8 {
                    0x01 | 0x11 => cpu.flags |= ZF,
                    0x02 | 0x12 => cpu.regs[AX] &= 0xFF00,
                    _ => cpu.regs[AX] = 0x1C0D,
                }
                Flow::Continue
            }
            0x1A => {
                if cpu.regs[AX] >> 8 == 0 {
                    // 18.2 Hz ticks derived from instructions (~4.77 MHz, ~4 clocks each).
                    let ticks = (cpu.instructions / 65_536) as u32;
                    cpu.regs[CX] = (ticks >> 16) as u16;
                    cpu.regs[DX] = ticks as u16;
                    cpu.regs[AX] &= 0xFF00;
                }
                Flow::Continue
            }
            0x20 => Flow::Exit(0),
            0x21 => self.int21(cpu),
            0x29 => {
                self.stdout.push(cpu.regs[AX] as u8);
                Flow::Continue
            }
            // Ctrl-Break, critical error and other vectors: plain IRET.
            _ => Flow::Continue,
        }
    }

    fn int10(&mut self, cpu: &mut Cpu) {
        let ah = (cpu.regs[AX] >> 8) as u8;
        let al = cpu.regs[AX] as u8;
        match ah {
            0x00 => {
                cpu.wb(0x449, al & 0x7F);
                self.cursor = (0, 0);
            }
            0x02 => self.cursor = ((cpu.regs[DX] >> 8) as u8, cpu.regs[DX] as u8),
            0x03 => {
                cpu.regs[DX] = (self.cursor.0 as u16) << 8 | self.cursor.1 as u16;
                cpu.regs[CX] = 0x0607;
            }
            0x09 | 0x0A => {
                for _ in 0..cpu.regs[CX] {
                    self.screen.push(al);
                }
            }
            0x0E => {
                self.screen.push(al);
                match al {
                    b'\r' => self.cursor.1 = 0,
                    b'\n' => self.cursor.0 = (self.cursor.0 + 1).min(24),
                    _ => self.cursor.1 = self.cursor.1.saturating_add(1),
                }
            }
            0x0F => {
                let mode = cpu.rb(0x449);
                cpu.regs[AX] = 80 << 8 | mode as u16;
                cpu.regs[BX] &= 0x00FF;
            }
            0x01 | 0x05 | 0x06 | 0x07 | 0x08 | 0x0B | 0x10 | 0x11 | 0x12 => {}
            _ => {
                *self
                    .unsupported
                    .entry(format!("INT 10h AH={ah:02X}h"))
                    .or_default() += 1
            }
        }
    }

    fn read_asciiz(cpu: &Cpu, seg: u16, off: u16) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..128u16 {
            let b = cpu.rb(Cpu::lin(seg, off.wrapping_add(i)));
            if b == 0 {
                break;
            }
            v.push(b);
        }
        v
    }

    /// Maps a DOS path onto the host, confined to the root directory.
    /// Existing names are matched case-insensitively; new names are upper case.
    fn host_path(&self, dos: &[u8]) -> Result<PathBuf, u16> {
        let s = String::from_utf8_lossy(dos).replace('\\', "/");
        let s = match s.as_bytes() {
            [d, b':', ..] if d.eq_ignore_ascii_case(&b'c') => s[2..].to_string(),
            [_, b':', ..] => return Err(15), // invalid drive
            _ => s,
        };
        let mut out = self.root.clone();
        let mut depth = 0usize;
        for comp in Path::new(&s).components() {
            match comp {
                Component::Normal(c) => {
                    let name = c.to_string_lossy().to_string();
                    // Every entry, even while the directory changes.
                    let found = plugin_kit::paths::read_dir_entries(&out)
                        .ok()
                        .and_then(|rd| {
                            rd.into_iter()
                                .map(|e| e.file_name().to_string_lossy().to_string())
                                .find(|n| n.eq_ignore_ascii_case(&name))
                        });
                    out.push(found.unwrap_or_else(|| name.to_uppercase()));
                    depth += 1;
                }
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(3);
                    }
                    out.pop();
                    depth -= 1;
                }
                _ => {}
            }
        }
        if depth == 0 {
            return Err(3);
        }
        Ok(out)
    }

    fn new_handle(&mut self, h: Handle) -> Option<u16> {
        if let Some(i) = self.handles.iter().position(|x| x.is_none()) {
            self.handles[i] = Some(h);
            return Some(i as u16);
        }
        if self.handles.len() >= 20 {
            return None;
        }
        self.handles.push(Some(h));
        Some(self.handles.len() as u16 - 1)
    }

    fn out(&mut self, to_stderr: bool, bytes: &[u8]) {
        if to_stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        }
        .extend_from_slice(bytes);
    }

    fn int21(&mut self, cpu: &mut Cpu) -> Flow {
        let ah = (cpu.regs[AX] >> 8) as u8;
        let al = cpu.regs[AX] as u8;
        *self.int21_calls.entry(ah).or_default() += 1;
        let (ds, dx) = (cpu.sregs[DS], cpu.regs[DX]);
        match ah {
            0x00 => return Flow::Exit(0),
            0x01 | 0x07 | 0x08 => {
                // stdin is empty: DOS returns Ctrl-Z at end of file.
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | 0x1A;
            }
            0x02 => {
                let c = dx as u8;
                self.stdout.push(c);
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | c as u16;
            }
            0x06 => {
                if dx as u8 == 0xFF {
                    cpu.flags |= ZF;
                    cpu.regs[AX] &= 0xFF00;
                } else {
                    self.stdout.push(dx as u8);
                    cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | (dx & 0xFF);
                }
            }
            0x09 => {
                let mut off = dx;
                for _ in 0..0x10000 {
                    let b = cpu.rb(Cpu::lin(ds, off));
                    if b == b'$' {
                        break;
                    }
                    self.stdout.push(b);
                    off = off.wrapping_add(1);
                }
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | b'$' as u16;
            }
            0x0A => {
                // Empty input: zero characters read, terminated by CR.
                let base = Cpu::lin(ds, dx);
                cpu.wb(base + 1, 0);
                cpu.wb(base + 2, 0x0D);
            }
            0x0B => cpu.regs[AX] &= 0xFF00,
            0x0C => {
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | 0x1A;
            }
            0x0D => {}
            0x0E => cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | 26,
            0x19 => cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | 2,
            0x1A => self.dta = (ds, dx),
            0x25 => {
                cpu.write_word(0, al as u16 * 4, dx);
                cpu.write_word(0, al as u16 * 4 + 2, ds);
            }
            0x2A => {
                cpu.regs[CX] = 1990;
                cpu.regs[DX] = 0x0101;
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | 1;
            }
            0x2C => {
                cpu.regs[CX] = 0;
                cpu.regs[DX] = 0;
            }
            0x2F => {
                cpu.sregs[ES] = self.dta.0;
                cpu.regs[BX] = self.dta.1;
            }
            0x30 => {
                cpu.regs[AX] = 0x1E03;
                cpu.regs[BX] = 0;
                cpu.regs[CX] = 0;
            }
            0x33 => {
                cpu.regs[DX] &= 0xFF00;
            }
            0x35 => {
                cpu.regs[BX] = cpu.read_word(0, al as u16 * 4);
                cpu.sregs[ES] = cpu.read_word(0, al as u16 * 4 + 2);
            }
            0x36 => {
                cpu.regs[AX] = 64;
                cpu.regs[BX] = 0x4000;
                cpu.regs[CX] = 512;
                cpu.regs[DX] = 0x8000;
            }
            0x3C | 0x5B => {
                let name = Self::read_asciiz(cpu, ds, dx);
                match self.host_path(&name) {
                    Err(e) => dos_err(cpu, e),
                    Ok(p) if ah == 0x5B && p.exists() => dos_err(cpu, 80),
                    Ok(p) if is_special(&p) => dos_err(cpu, 5),
                    Ok(p) => match File::create(&p) {
                        Ok(f) => match self.new_handle(Handle::File(f)) {
                            Some(h) => {
                                cpu.regs[AX] = h;
                                dos_ok(cpu);
                            }
                            None => dos_err(cpu, 4),
                        },
                        Err(e) => dos_err(cpu, io_error_code(&e)),
                    },
                }
            }
            0x3D => {
                let name = Self::read_asciiz(cpu, ds, dx);
                let mode = al & 3;
                match self.host_path(&name) {
                    Err(e) => dos_err(cpu, e),
                    Ok(p) if is_special(&p) => dos_err(cpu, 5),
                    Ok(p) => {
                        let r = std::fs::OpenOptions::new()
                            .read(mode != 1)
                            .write(mode != 0)
                            .open(&p);
                        match r {
                            Ok(f) => match self.new_handle(Handle::File(f)) {
                                Some(h) => {
                                    cpu.regs[AX] = h;
                                    dos_ok(cpu);
                                }
                                None => dos_err(cpu, 4),
                            },
                            Err(e) => dos_err(cpu, io_error_code(&e)),
                        }
                    }
                }
            }
            0x3E => {
                let h = cpu.regs[BX] as usize;
                if self.handles.get(h).is_some_and(|x| x.is_some()) {
                    self.handles[h] = None;
                    dos_ok(cpu);
                } else {
                    dos_err(cpu, 6);
                }
            }
            0x3F => {
                let h = cpu.regs[BX] as usize;
                let n = cpu.regs[CX] as usize;
                match self.handles.get_mut(h) {
                    Some(Some(Handle::File(f))) => {
                        let mut buf = vec![0u8; n];
                        let mut got = 0;
                        while got < n {
                            match f.read(&mut buf[got..]) {
                                Ok(0) => break,
                                Ok(k) => got += k,
                                Err(_) => break,
                            }
                        }
                        for (i, b) in buf[..got].iter().enumerate() {
                            cpu.wb(Cpu::lin(ds, dx.wrapping_add(i as u16)), *b);
                        }
                        cpu.regs[AX] = got as u16;
                        dos_ok(cpu);
                    }
                    Some(Some(_)) => {
                        cpu.regs[AX] = 0;
                        dos_ok(cpu);
                    }
                    _ => dos_err(cpu, 6),
                }
            }
            0x40 => {
                let h = cpu.regs[BX] as usize;
                let n = cpu.regs[CX] as usize;
                let data: Vec<u8> = (0..n)
                    .map(|i| cpu.rb(Cpu::lin(ds, dx.wrapping_add(i as u16))))
                    .collect();
                match self.handles.get_mut(h) {
                    Some(Some(Handle::File(f))) => {
                        // CX=0 truncates at the current position.
                        let r = if n == 0 {
                            f.stream_position().and_then(|p| f.set_len(p))
                        } else {
                            f.write_all(&data)
                        };
                        match r {
                            Ok(()) => {
                                cpu.regs[AX] = n as u16;
                                dos_ok(cpu);
                            }
                            Err(e) => dos_err(cpu, io_error_code(&e)),
                        }
                    }
                    Some(Some(Handle::Stdout)) | Some(Some(Handle::Stdin)) => {
                        self.out(false, &data);
                        cpu.regs[AX] = n as u16;
                        dos_ok(cpu);
                    }
                    Some(Some(Handle::Stderr)) => {
                        self.out(true, &data);
                        cpu.regs[AX] = n as u16;
                        dos_ok(cpu);
                    }
                    Some(Some(Handle::Null)) => {
                        cpu.regs[AX] = n as u16;
                        dos_ok(cpu);
                    }
                    _ => dos_err(cpu, 6),
                }
            }
            0x41 => {
                let name = Self::read_asciiz(cpu, ds, dx);
                match self.host_path(&name) {
                    Err(e) => dos_err(cpu, e),
                    Ok(p) => match std::fs::remove_file(&p) {
                        Ok(()) => dos_ok(cpu),
                        Err(e) => dos_err(cpu, io_error_code(&e)),
                    },
                }
            }
            0x42 => {
                let h = cpu.regs[BX] as usize;
                let off = ((cpu.regs[CX] as u32) << 16 | dx as u32) as i32 as i64;
                match self.handles.get_mut(h) {
                    Some(Some(Handle::File(f))) => {
                        let pos = match al {
                            0 => SeekFrom::Start(off.max(0) as u64),
                            1 => SeekFrom::Current(off),
                            _ => SeekFrom::End(off),
                        };
                        match f.seek(pos) {
                            Ok(p) => {
                                cpu.regs[AX] = p as u16;
                                cpu.regs[DX] = (p >> 16) as u16;
                                dos_ok(cpu);
                            }
                            Err(_) => dos_err(cpu, 25),
                        }
                    }
                    Some(Some(_)) => {
                        cpu.regs[AX] = 0;
                        cpu.regs[DX] = 0;
                        dos_ok(cpu);
                    }
                    _ => dos_err(cpu, 6),
                }
            }
            0x43 => {
                let name = Self::read_asciiz(cpu, ds, dx);
                match self.host_path(&name) {
                    Err(e) => dos_err(cpu, e),
                    Ok(p) if p.exists() => {
                        cpu.regs[CX] = if p.is_dir() { 0x10 } else { 0x20 };
                        dos_ok(cpu);
                    }
                    Ok(_) => dos_err(cpu, 2),
                }
            }
            0x44 => {
                let h = cpu.regs[BX] as usize;
                match (al, self.handles.get(h)) {
                    (0, Some(Some(Handle::File(_)))) => {
                        cpu.regs[DX] = 0x0002;
                        dos_ok(cpu);
                    }
                    (0, Some(Some(_))) => {
                        cpu.regs[DX] = if h == 0 { 0x80D1 } else { 0x80D2 };
                        dos_ok(cpu);
                    }
                    (0, _) => dos_err(cpu, 6),
                    _ => dos_err(cpu, 1),
                }
            }
            0x45 => {
                let h = cpu.regs[BX] as usize;
                let dup = match self.handles.get(h) {
                    Some(Some(Handle::File(f))) => f.try_clone().ok().map(Handle::File),
                    Some(Some(Handle::Stdin)) => Some(Handle::Stdin),
                    Some(Some(Handle::Stdout)) => Some(Handle::Stdout),
                    Some(Some(Handle::Stderr)) => Some(Handle::Stderr),
                    Some(Some(Handle::Null)) => Some(Handle::Null),
                    _ => None,
                };
                match dup.map(|d| self.new_handle(d)) {
                    Some(Some(n)) => {
                        cpu.regs[AX] = n;
                        dos_ok(cpu);
                    }
                    Some(None) => dos_err(cpu, 4),
                    None => dos_err(cpu, 6),
                }
            }
            0x47 => {
                // Current directory is always the root: an empty string.
                cpu.wb(Cpu::lin(ds, cpu.regs[SI]), 0);
                dos_ok(cpu);
            }
            0x48 => match self.allocate(cpu.regs[BX]) {
                Ok(seg) => {
                    cpu.regs[AX] = seg;
                    dos_ok(cpu);
                }
                Err(largest) => {
                    cpu.regs[BX] = largest;
                    dos_err(cpu, 8);
                }
            },
            0x49 => {
                if self.blocks.remove(&cpu.sregs[ES]).is_some() {
                    dos_ok(cpu);
                } else {
                    dos_err(cpu, 9);
                }
            }
            0x4A => {
                let seg = cpu.sregs[ES];
                match self.resize(seg, cpu.regs[BX]) {
                    Ok(()) => dos_ok(cpu),
                    Err((code, max)) => {
                        cpu.regs[BX] = max;
                        dos_err(cpu, code);
                    }
                }
            }
            0x4C => {
                self.return_code = al;
                return Flow::Exit(al);
            }
            0x4D => cpu.regs[AX] = self.return_code as u16,
            0x4E | 0x4F => dos_err(cpu, 18),
            0x50 => self.psp = cpu.regs[BX],
            0x51 | 0x62 => cpu.regs[BX] = self.psp,
            0x54 => cpu.regs[AX] &= 0xFF00,
            0x58 => {
                cpu.regs[AX] = 0;
                dos_ok(cpu);
            }
            _ => {
                *self
                    .unsupported
                    .entry(format!("INT 21h AH={ah:02X}h"))
                    .or_default() += 1;
                dos_err(cpu, 1);
            }
        }
        Flow::Continue
    }

    /// Paragraphs free right after `seg` up to the next block or the top.
    fn room_after(&self, seg: u16) -> u16 {
        let next = self
            .blocks
            .range(seg + 1..)
            .next()
            .map(|(s, _)| *s)
            .unwrap_or(MEMORY_TOP);
        next - seg
    }

    fn allocate(&mut self, paras: u16) -> Result<u16, u16> {
        // First fit between blocks (each block is preceded by a virtual MCB paragraph).
        let mut cursor = PSP_SEGMENT;
        let mut largest = 0u16;
        let mut found = None;
        for (&s, &n) in &self.blocks {
            let gap = s.saturating_sub(cursor + 1);
            if gap >= paras && found.is_none() {
                found = Some(cursor + 1);
            }
            largest = largest.max(gap);
            cursor = s + n;
        }
        let gap = MEMORY_TOP.saturating_sub(cursor + 1);
        if gap >= paras && found.is_none() {
            found = Some(cursor + 1);
        }
        largest = largest.max(gap);
        match found {
            Some(seg) => {
                self.blocks.insert(seg, paras);
                Ok(seg)
            }
            None => Err(largest),
        }
    }

    fn resize(&mut self, seg: u16, paras: u16) -> Result<(), (u16, u16)> {
        if !self.blocks.contains_key(&seg) {
            return Err((9, 0));
        }
        let room = self
            .room_after(seg)
            .saturating_sub(if seg == PSP_SEGMENT { 0 } else { 1 });
        let room = room.max(*self.blocks.get(&seg).unwrap_or(&0));
        if paras > room {
            return Err((8, room));
        }
        self.blocks.insert(seg, paras);
        Ok(())
    }
}

/// Reports the CPU model a DOS machine should use by default.
pub fn default_model() -> Model {
    Model::I80186
}

/// A pipe, device or socket: opening one could block the emulator (and the
/// plugin) until the call's deadline, so DOS gets "access denied" instead.
fn is_special(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| plugin_kit::paths::is_special(&m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn com_program_prints_and_exits() {
        // mov dx,0x10b ; mov ah,9 ; int 21h ; mov ax,4c05h ; int 21h ; "hi$"
        let code = [
            0xBA, 0x0D, 0x01, 0xB4, 0x09, 0xCD, 0x21, 0xB8, 0x05, 0x4C, 0xCD, 0x21, 0x90, b'h',
            b'i', b'$',
        ];
        let mut cpu = Cpu::new(Model::I80186);
        let mut dos = Dos::new(std::env::temp_dir());
        let p = dos.load(&mut cpu, Path::new("T.COM"), &code, "").unwrap();
        assert_eq!(p.entry, (PSP_SEGMENT, 0x100));
        let mut flow = Flow::Continue;
        for _ in 0..10 {
            if let (_, crate::cpu::Exit::Service(n)) = cpu.run(100, None, false) {
                flow = dos.service(n, &mut cpu);
                if flow != Flow::Continue {
                    break;
                }
            }
        }
        assert_eq!(flow, Flow::Exit(5));
        assert_eq!(dos.stdout, b"hi");
        assert_eq!(cpu.sregs[CS], PSP_SEGMENT);
        assert_eq!(cpu.regs[SP], 0xFFFE);
    }

    #[test]
    fn paths_stay_inside_the_root() {
        let dos = Dos::new(PathBuf::from("/nonexistent-root"));
        assert_eq!(dos.host_path(b"..\\X.TXT"), Err(3));
        assert_eq!(dos.host_path(b"D:X.TXT"), Err(15));
        assert_eq!(
            dos.host_path(b"c:\\a\\..\\data.txt").unwrap(),
            PathBuf::from("/nonexistent-root/DATA.TXT")
        );
    }

    #[test]
    fn memory_allocation_first_fit() {
        let mut dos = Dos::new(PathBuf::from("/"));
        dos.blocks.insert(PSP_SEGMENT, 0x1000);
        let a = dos.allocate(0x100).unwrap();
        assert_eq!(a, PSP_SEGMENT + 0x1000 + 1);
        assert!(dos.allocate(0xF000).is_err());
        assert!(dos.resize(PSP_SEGMENT, 0x800).is_ok());
    }

    #[test]
    fn mz_last_page_counts_past_512_mean_a_full_page() {
        // Found by fuzzing: a bytes-on-last-page word over 512 overflowed.
        let mut image = vec![0u8; 1024];
        image[0..2].copy_from_slice(b"MZ");
        for (at, v) in [(2, 0xFFFFu16), (4, 2), (8, 2), (0x0C, 0xFFFF)] {
            image[at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
        image[32] = 0xF4; // hlt at CS:IP = 0:0
        let mut cpu = Cpu::new(Model::I80186);
        let mut dos = Dos::new(PathBuf::from("/nonexistent-root"));
        let p = dos.load(&mut cpu, Path::new("T.EXE"), &image, "").unwrap();
        assert_eq!(cpu.rb(Cpu::lin(p.entry.0, p.entry.1)), 0xF4);
    }
}
