//! DOS program loading (PSP, .COM, MZ .EXE) and the INT 20h/21h, INT 10h and
//! small BIOS services, implemented natively.
//!
//! Drive C: is the directory the program was loaded from; DOS file services
//! never reach outside it (they fail with DOS error codes instead).

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

mod console;
mod fcb;
mod files;
mod loader;
mod search;
mod snapshot;

pub use console::{KEY_NAMES, keyboard_text, named_key, scan_code_of};
pub use files::{Redirections, split_redirections};
use files::{io_error_code, is_special};

use crate::console::{DEFAULT_CONSOLE_KIB, Input, Read as InRead, Stream};
use crate::cpu::{AX, BX, CF, CS, CX, Cpu, DS, DX, ES, Model, SI, SP, SS, STUB_SEGMENT, ZF};

/// Where things live in the 1 MiB address space.
pub const ENV_SEGMENT: u16 = 0x0070;
/// Segment of the program's PSP (the program follows it).
pub const PSP_SEGMENT: u16 = 0x0087;
/// First segment past conventional memory (the PSP's memory-top field).
pub const MEMORY_TOP: u16 = 0xA000;

/// Longest host path a snapshot keeps (drive C:, the program).
pub const SNAPSHOT_PATH_MAX: usize = 4096;
/// Longest FCB search name a snapshot keeps (an 8.3 name needs 12).
const FCB_NAME_MAX: usize = 256;
/// Longest unsupported-service name: `INT 21h AX=4401h` is 16 bytes.
const SERVICE_NAME_MAX: usize = 16;
/// INT 21h functions this DOS performs for some subfunctions (AL) only;
/// an unsupported subfunction is recorded by AX, as `INT 21h AX=4401h`.
const SUBFUNCTION_SERVICES: [u8; 7] = [0x33, 0x37, 0x42, 0x43, 0x44, 0x58, 0x63];
/// Distinct unsupported services there can be: AH 00h-FFh of INT 10h, 16h
/// and 21h (the only services that record one), and AL 00h-FFh of each of
/// [`SUBFUNCTION_SERVICES`]. The names are made from these numbers only,
/// so the record is bounded by construction.
const MAX_UNSUPPORTED_SERVICES: usize = 3 * 256 + SUBFUNCTION_SERVICES.len() * 256;

/// Whether `name` is one the services record: `INT 10h AH=0Fh` and the
/// like, with the interrupt 10h, 16h or 21h and AH two uppercase hex
/// digits, or `INT 21h AX=4401h` for a function of
/// [`SUBFUNCTION_SERVICES`].
fn is_service_name(name: &str) -> bool {
    let hex = |b: &[u8]| {
        b.iter()
            .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
    };
    if let Some(rest) = name.strip_prefix("INT 21h AX=") {
        let b = rest.as_bytes();
        return b.len() == 5
            && b[4] == b'h'
            && hex(&b[..4])
            && u8::from_str_radix(&rest[..2], 16)
                .is_ok_and(|ah| SUBFUNCTION_SERVICES.contains(&ah));
    }
    let Some(rest) = ["INT 10h AH=", "INT 16h AH=", "INT 21h AH="]
        .iter()
        .find_map(|p| name.strip_prefix(p))
    else {
        return false;
    };
    let b = rest.as_bytes();
    b.len() == 3 && b[2] == b'h' && hex(&b[..2])
}

/// Why a program could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is no valid .COM or MZ .EXE (the text says what is wrong).
    #[error("{0}")]
    Format(String),
}

/// Executable format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A flat image loaded at PSP:0100.
    Com,
    /// An MZ executable with a header and relocations.
    Exe,
}

impl Format {
    /// The format's name as results print it: `com` or `exe`.
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
    /// Path of the program file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Segment of its PSP.
    pub psp: u16,
    /// Segment that .EXE relocations are relative to (PSP for .COM).
    pub load_segment: u16,
    /// Entry point (CS, IP).
    pub entry: (u16, u16),
    /// File size in bytes.
    pub size: usize,
}

/// What a service asks the run loop to do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// The service is done; run on.
    Continue,
    /// The program terminated with this exit code.
    Exit(u8),
    /// A blocking read of the keyboard found no input: the service was not
    /// performed and must be retried once input is added.
    WaitInput,
}

/// Default bytes one machine may write to files over its life.
pub const DEFAULT_WRITE_LIMIT_KIB: u32 = 16 * 1024;
/// Largest total file-write limit a client may set per machine.
pub const MAX_WRITE_LIMIT_KIB: u32 = 256 * 1024;
/// Largest size a file may reach through DOS writes.
pub const FILE_SIZE_LIMIT: u64 = 8 << 20;

/// Limits on what a guest program can make the plugin hold or write.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes kept per console stream (stdout, stderr, screen).
    pub console_bytes: usize,
    /// Bytes the machine may write to files in total.
    pub write_bytes: u64,
    /// Largest size of one file.
    pub file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            console_bytes: DEFAULT_CONSOLE_KIB as usize * 1024,
            write_bytes: DEFAULT_WRITE_LIMIT_KIB as u64 * 1024,
            file_bytes: FILE_SIZE_LIMIT,
        }
    }
}

enum Handle {
    Stdin,
    Stdout,
    Stderr,
    Null,
    File(File),
}

/// Most DOS file handles a program may hold (as DOS's default FILES=20).
const MAX_HANDLES: usize = 20;

/// DOS and BIOS state of one machine.
pub struct Dos {
    /// Directory mapped to drive C:.
    pub root: PathBuf,
    /// What this machine may keep and write.
    pub limits: Limits,
    /// Standard output (handle 1 and the character services).
    pub stdout: Stream,
    /// Standard error (handle 2).
    pub stderr: Stream,
    /// Characters written through INT 10h (teletype and write-char).
    pub screen: Stream,
    /// Console output (standard output and error, not redirected) not yet
    /// drawn on the display: drawn when the service call that wrote it
    /// returns, so it never outlives one call.
    to_display: Vec<u8>,
    /// The keyboard: text queued by the client.
    pub input: Input,
    /// Bytes written to files so far.
    pub file_bytes_written: u64,
    /// Writes cut short because a limit was reached (DOS "disk full").
    pub disk_full: u64,
    /// INT 21h calls by function (AH).
    pub int21_calls: BTreeMap<u8, u64>,
    /// Service calls that are not implemented (vector/function → count).
    pub unsupported: BTreeMap<String, u64>,
    handles: Vec<Option<Handle>>,
    /// Allocated blocks: segment → paragraphs.
    blocks: BTreeMap<u16, u16>,
    dta: (u16, u16),
    psp: u16,
    return_code: u8,
    /// The rest of a console line read by AH=3Fh, for the next read.
    cooked: VecDeque<u8>,
    /// Where standard input comes from when it is not the keyboard.
    stdin_name: Option<String>,
    /// Files opened through FCBs (slot numbers live in the FCB).
    fcb_files: Vec<Option<File>>,
    /// Names still to report by FCB find-next (AH=12h), last first.
    fcb_search: Vec<String>,
    /// The directory listing searches (AH=4Eh/4Fh) last read, while the
    /// directory is unchanged. Not in snapshots: it is read again.
    search_cache: Option<search::Listing>,
    /// What the last directory search that left something out left out,
    /// for the console's note. Not in snapshots.
    pub search_note: Option<String>,
}

impl Dos {
    /// Drive C:'s host folder.
    pub fn drive_c(&self) -> &Path {
        &self.root
    }

    /// `read_dos_state` for machine `machine` running `program`: the PSP
    /// (and what it holds), memory blocks, open handles.
    pub fn state(&self, machine: u64, program: &str, cpu: &Cpu) -> DosState {
        let memory_blocks = self
            .blocks
            .iter()
            .map(|(&seg, &paras)| MemoryBlock {
                segment: format!("{seg:04X}"),
                paragraphs: paras.into(),
            })
            .collect();
        // Each block has its arena header paragraph before it.
        let used: u32 = self.blocks.values().map(|&p| u32::from(p) + 1).sum();
        let first = self.blocks.keys().next().copied().unwrap_or(self.psp);
        let free_paragraphs = u32::from(MEMORY_TOP)
            .saturating_sub(u32::from(first))
            .saturating_sub(used);
        let handles = self
            .handles
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let (kind, file) = match h.as_ref()? {
                    Handle::Stdin => ("stdin", None),
                    Handle::Stdout => ("stdout", None),
                    Handle::Stderr => ("stderr", None),
                    Handle::Null => ("nul", None),
                    Handle::File(f) => ("file", Some(f)),
                };
                Some(OpenHandle {
                    handle: i as u32,
                    kind,
                    position: file.and_then(|mut f| f.stream_position().ok()),
                    size: file.and_then(|f| f.metadata().ok()).map(|m| m.len()),
                })
            })
            .collect();
        let tail_len = usize::from(cpu.rb(Cpu::lin(self.psp, 0x80)).min(127));
        let command_tail = (0..tail_len)
            .map(|i| cpu.rb(Cpu::lin(self.psp, 0x81 + i as u16)) as char)
            .collect();
        DosState {
            machine,
            psp: format!("{:04X}", self.psp),
            program: program.to_owned(),
            drive_c: self.root.display().to_string(),
            command_tail,
            environment: format!("{:04X}", cpu.read_word(self.psp, 0x2C)),
            dta: format!("{:04X}:{:04X}", self.dta.0, self.dta.1),
            memory_blocks,
            free_paragraphs,
            handles,
            fcb_files: self.fcb_files.iter().filter(|f| f.is_some()).count() as u32,
            stdin: self.stdin_description(),
        }
    }

    /// Sets drive C:'s host folder (a restored machine's, from its program).
    pub(crate) fn set_drive_c(&mut self, root: PathBuf) {
        self.root = root;
    }
}

/// `read_dos_state` (Spice86's read_dos_state and read_dos_program_state
/// in one): the running program's PSP, memory and handles.
#[derive(serde::Serialize, Debug, Clone)]
pub struct DosState {
    /// The machine.
    pub machine: u64,
    /// The program's PSP segment.
    pub psp: String,
    /// The program as loaded, and drive C:'s folder on the host.
    pub program: String,
    /// Drive C:'s folder.
    pub drive_c: String,
    /// The command tail at PSP:0081h.
    pub command_tail: String,
    /// The environment segment (PSP:002Ch).
    pub environment: String,
    /// The disk transfer area, `SSSS:OOOO`.
    pub dta: String,
    /// Memory blocks allocated (the program's own first), and what is free.
    pub memory_blocks: Vec<MemoryBlock>,
    /// Paragraphs free below the top of conventional memory.
    pub free_paragraphs: u32,
    /// Open handles (0-19).
    pub handles: Vec<OpenHandle>,
    /// Files open through FCBs.
    pub fcb_files: u32,
    /// Where standard input comes from.
    pub stdin: String,
}

/// An allocated DOS memory block.
#[derive(serde::Serialize, Debug, Clone)]
pub struct MemoryBlock {
    /// Its first paragraph (the segment a program uses).
    pub segment: String,
    /// Its size in 16-byte paragraphs.
    pub paragraphs: u32,
}

/// An open DOS file handle.
#[derive(serde::Serialize, Debug, Clone)]
pub struct OpenHandle {
    /// The handle number.
    pub handle: u32,
    /// `stdin`, `stdout`, `stderr`, `nul` or `file`.
    pub kind: &'static str,
    /// For a file: the read/write position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// For a file: its size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

fn dos_err(cpu: &mut Cpu, code: u16) {
    cpu.regs[AX] = code;
    cpu.flags |= CF;
}

fn dos_ok(cpu: &mut Cpu) {
    cpu.flags &= !CF;
}

impl Dos {
    /// DOS state with drive C: at `root` and the default limits.
    pub fn new(root: PathBuf) -> Self {
        Self::with_limits(root, Limits::default())
    }

    /// DOS state with drive C: at `root` and the given limits.
    pub fn with_limits(root: PathBuf, limits: Limits) -> Self {
        Dos {
            root,
            limits,
            stdout: Stream::new(limits.console_bytes),
            stderr: Stream::new(limits.console_bytes),
            screen: Stream::new(limits.console_bytes),
            to_display: Vec::new(),
            input: Input::default(),
            file_bytes_written: 0,
            disk_full: 0,
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
            cooked: VecDeque::new(),
            stdin_name: None,
            fcb_files: Vec::new(),
            fcb_search: Vec::new(),
            search_cache: None,
            search_note: None,
        }
    }

    /// Counts a call of a service this DOS does not perform (named as
    /// [`is_service_name`] accepts), for `unsupported_services`.
    pub(super) fn unsupported_call(&mut self, name: String) {
        debug_assert!(is_service_name(&name), "{name}");
        *self.unsupported.entry(name).or_default() += 1;
    }

    /// Records INT 21h function `ah` with subfunction `al` as unsupported.
    fn unsupported_subfunction(&mut self, ah: u8, al: u8) {
        self.unsupported_call(format!("INT 21h AX={ah:02X}{al:02X}h"));
    }

    /// Performs interrupt `n` natively. Errors are never host errors: DOS
    /// calls fail with CF and a DOS error code.
    pub fn service(&mut self, n: u8, cpu: &mut Cpu) -> Flow {
        let flow = self.serve(n, cpu);
        // DOS writes the console through the video BIOS: what the call
        // printed shows on the display too.
        if !self.to_display.is_empty() {
            let printed = std::mem::take(&mut self.to_display);
            crate::video::teletype(cpu, &printed, 0x0F);
        }
        flow
    }

    fn serve(&mut self, n: u8, cpu: &mut Cpu) -> Flow {
        match n {
            0x00 => {
                self.stdout.extend(b"Divide overflow\r\n");
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
            0x16 => self.int16(cpu),
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
            0x21 => {
                let flow = self.int21(cpu);
                if flow == Flow::WaitInput {
                    // The call is retried once input comes: count it once.
                    let ah = (cpu.regs[AX] >> 8) as u8;
                    if let Some(c) = self.int21_calls.get_mut(&ah) {
                        *c = c.saturating_sub(1);
                        if *c == 0 {
                            self.int21_calls.remove(&ah);
                        }
                    }
                }
                flow
            }
            0x29 => {
                self.con_out(&[cpu.regs[AX] as u8]);
                Flow::Continue
            }
            // Ctrl-Break, critical error and other vectors: plain IRET.
            _ => Flow::Continue,
        }
    }

    fn int21(&mut self, cpu: &mut Cpu) -> Flow {
        let ah = (cpu.regs[AX] >> 8) as u8;
        let al = cpu.regs[AX] as u8;
        *self.int21_calls.entry(ah).or_default() += 1;
        let (ds, dx) = (cpu.sregs[DS], cpu.regs[DX]);
        // Calls that add, remove or rename directory entries: a search's
        // listing is read again (the directory's time may be too coarse
        // to show a change made within the same second).
        if matches!(
            ah,
            0x13 | 0x16 | 0x17 | 0x39 | 0x3A | 0x3C | 0x41 | 0x56 | 0x5B | 0x6C
        ) {
            self.search_cache = None;
        }
        match ah {
            0x00 => return Flow::Exit(0),
            0x01 | 0x07 | 0x08 => {
                let Some(c) = self.read_char() else {
                    return Flow::WaitInput;
                };
                if ah == 0x01 {
                    self.con_out(&[c]);
                }
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | c as u16;
            }
            0x02 => {
                let c = dx as u8;
                self.con_out(&[c]);
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | c as u16;
            }
            0x06 => {
                if dx as u8 == 0xFF {
                    // Direct console input never waits.
                    let c = if self.stdin_ready() {
                        self.read_char()
                    } else {
                        None
                    };
                    match c {
                        Some(c) => {
                            cpu.flags &= !ZF;
                            cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | c as u16;
                        }
                        None => {
                            cpu.flags |= ZF;
                            cpu.regs[AX] &= 0xFF00;
                        }
                    }
                } else {
                    self.con_out(&[dx as u8]);
                    cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | (dx & 0xFF);
                }
            }
            0x09 => {
                let mut text = Vec::new();
                let mut off = dx;
                for _ in 0..0x10000 {
                    let b = cpu.rb(Cpu::lin(ds, off));
                    if b == b'$' {
                        break;
                    }
                    text.push(b);
                    off = off.wrapping_add(1);
                }
                self.con_out(&text);
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | b'$' as u16;
            }
            0x0A => {
                if self.buffered_input(cpu) == Flow::WaitInput {
                    return Flow::WaitInput;
                }
            }
            0x0B => {
                let ready = if self.stdin_ready() { 0xFF } else { 0 };
                cpu.regs[AX] = (cpu.regs[AX] & 0xFF00) | ready;
            }
            0x0C => {
                // DOS flushes the type-ahead buffer first; here queued input
                // is what the user types after the prompt, so it is kept.
                match al {
                    0x01 | 0x06 | 0x07 | 0x08 | 0x0A => {
                        cpu.regs[AX] = (al as u16) << 8 | al as u16;
                        let flow = self.int21(cpu);
                        // The call is counted as 0Ch, not as the one it ran.
                        if let Some(c) = self.int21_calls.get_mut(&al) {
                            *c -= 1;
                            if *c == 0 {
                                self.int21_calls.remove(&al);
                            }
                        }
                        if flow == Flow::WaitInput {
                            cpu.regs[AX] = 0x0C00 | al as u16;
                        }
                        return flow;
                    }
                    _ => cpu.regs[AX] &= 0xFF00,
                }
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
            // Get (AL=0) and set (AL=1) Ctrl-Break checking: there is no
            // Ctrl-Break here, so it is always off.
            0x33 if al <= 1 => {
                cpu.regs[DX] &= 0xFF00;
            }
            0x33 => {
                self.unsupported_subfunction(ah, al);
                cpu.regs[AX] |= 0x00FF;
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
                    Ok(p) => self.answer_open(cpu, File::create(&p)),
                }
            }
            0x3D => {
                let name = Self::read_asciiz(cpu, ds, dx);
                let mode = al & 3;
                match self.host_path(&name) {
                    Err(e) => dos_err(cpu, e),
                    Ok(p) if is_special(&p) => dos_err(cpu, 5),
                    Ok(p) => {
                        let opened = std::fs::OpenOptions::new()
                            .read(mode != 1)
                            .write(mode != 0)
                            .open(&p);
                        self.answer_open(cpu, opened);
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
                // Every console handle (CON) reads the keyboard: MORE reads
                // its keys from a duplicate of stderr.
                if let Some(Some(Handle::Stdin | Handle::Stdout | Handle::Stderr)) =
                    self.handles.get(h)
                {
                    let Some(line) = self.read_console_line(n) else {
                        return Flow::WaitInput;
                    };
                    for (i, b) in line.iter().enumerate() {
                        cpu.wb(Cpu::lin(ds, dx.wrapping_add(i as u16)), *b);
                    }
                    cpu.regs[AX] = line.len() as u16;
                    dos_ok(cpu);
                    return Flow::Continue;
                }
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
                match self.write_handle(h, &data) {
                    Ok(k) => {
                        cpu.regs[AX] = k as u16;
                        dos_ok(cpu);
                    }
                    Err(e) => dos_err(cpu, e),
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
            0x42 if al > 2 => {
                self.unsupported_subfunction(ah, al);
                dos_err(cpu, 1);
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
            0x43 if al <= 1 => {
                let name = Self::read_asciiz(cpu, ds, dx);
                match self.host_path(&name).map(std::fs::metadata) {
                    Err(e) => dos_err(cpu, e),
                    Ok(Ok(meta)) if al == 0 => {
                        cpu.regs[CX] = files::dos_attributes(&meta) as u16;
                        dos_ok(cpu);
                    }
                    // Setting attributes: the host keeps none of them, so
                    // the call succeeds as DOS's would and is listed as
                    // not performed.
                    Ok(Ok(_)) => {
                        self.unsupported_subfunction(ah, al);
                        dos_ok(cpu);
                    }
                    Ok(Err(_)) => dos_err(cpu, 2),
                }
            }
            0x43 => {
                self.unsupported_subfunction(ah, al);
                dos_err(cpu, 1);
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
                    _ => {
                        self.unsupported_subfunction(ah, al);
                        dos_err(cpu, 1);
                    }
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
            0x4E => self.find_first(cpu),
            0x4F => self.find_next(cpu),
            0x60 => self.truename(cpu),
            0x63 if al == 0 => Self::dbcs_table(cpu),
            // Interim console flag (Far East DOS): US MS-DOS 3.30 sets
            // AL=0 and returns.
            0x63 => {
                self.unsupported_subfunction(ah, al);
                cpu.regs[AX] &= 0xFF00;
            }
            0x0F..=0x17 | 0x21..=0x24 | 0x27 | 0x28 => {
                self.fcb_service(ah, cpu);
            }
            0x29 => self.parse_filename(cpu),
            0x37 => match al {
                // The switch character is '/', and devices need no /DEV/.
                0x00 => {
                    cpu.regs[DX] = (cpu.regs[DX] & 0xFF00) | b'/' as u16;
                    cpu.regs[AX] &= 0xFF00;
                }
                0x02 => {
                    cpu.regs[DX] = (cpu.regs[DX] & 0xFF00) | 0xFF;
                    cpu.regs[AX] &= 0xFF00;
                }
                0x01 | 0x03 => cpu.regs[AX] &= 0xFF00,
                _ => {
                    self.unsupported_subfunction(ah, al);
                    cpu.regs[AX] |= 0x00FF;
                }
            },
            0x50 => self.psp = cpu.regs[BX],
            0x51 | 0x62 => cpu.regs[BX] = self.psp,
            0x54 => cpu.regs[AX] &= 0xFF00,
            // Allocation strategy: get, or set first fit (the only one the
            // allocator has; another is accepted and listed as not kept).
            0x58 if al <= 1 => {
                if al == 1 && cpu.regs[BX] != 0 {
                    self.unsupported_subfunction(ah, al);
                }
                cpu.regs[AX] = 0;
                dos_ok(cpu);
            }
            0x58 => {
                self.unsupported_subfunction(ah, al);
                dos_err(cpu, 1);
            }
            _ => {
                self.unsupported_call(format!("INT 21h AH={ah:02X}h"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use snapshot::checked_blocks;

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
        assert_eq!(dos.stdout.contents(), b"hi");
        assert_eq!(cpu.sregs[CS], PSP_SEGMENT);
        assert_eq!(cpu.regs[SP], 0xFFFE);
    }

    #[test]
    fn a_line_feed_below_any_row_stays_on_the_last_row() {
        // Found by fuzzing: AH=02h set the row to 255, then a teletype
        // line feed (AH=0Eh) added one to it.
        let mut cpu = Cpu::new(Model::I80186);
        let mut dos = Dos::new(PathBuf::from("/nonexistent-root"));
        cpu.regs[AX] = 0x0200;
        cpu.regs[DX] = 0xFF00;
        dos.int10(&mut cpu);
        cpu.regs[AX] = 0x0E0A;
        dos.int10(&mut cpu);
        assert_eq!(crate::video::cursor(&cpu, 0).0, 24);
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
    fn restored_memory_blocks_keep_the_allocators_invariants() {
        let round_trip = |blocks: &[(u16, u16)]| {
            let mut dos = Dos::new(PathBuf::from("/"));
            dos.blocks = blocks.iter().copied().collect();
            let mut w = plugin_kit::blob::Writer::new();
            dos.save(&mut w).unwrap();
            Dos::restore(&mut plugin_kit::blob::Reader::new(&w.0)).map(|(d, _)| d)
        };
        // What the services make: the PSP block, then blocks with an MCB
        // paragraph between (the PSP block may grow to touch the next).
        let live = [
            (PSP_SEGMENT, 0x1000),
            (PSP_SEGMENT + 0x1000, 0x10),
            (0x9000, 0x1000),
        ];
        assert_eq!(
            round_trip(&live).unwrap().blocks,
            live.iter().copied().collect()
        );
        for (blocks, says) in [
            (
                vec![(PSP_SEGMENT, 0x1000), (PSP_SEGMENT + 0x800, 0x10)],
                "overlaps",
            ),
            (vec![(0x0010, 5)], "below the program's PSP"),
            (vec![(0x9FF0, 0x20)], "past the top"),
            (vec![(0xFFF0, 0xFFFF)], "past the top"),
        ] {
            let e = round_trip(&blocks).map(|_| ()).unwrap_err();
            assert!(e.contains(says) && e.contains("memory block"), "{e}");
        }
        // Out of order or repeated in the text (a BTreeMap never saves so).
        for list in [
            [(0x2000, 0x10), (0x1000, 0x10)],
            [(0x1000, 0x10), (0x1000, 0x10)],
            [(0x1000, 0), (0x1000, 0)],
        ] {
            let e = checked_blocks(&list).unwrap_err();
            assert!(
                e.contains("memory block 1") && e.contains("comes before"),
                "{e}"
            );
        }
        // On an accepted table the allocator hands out fresh room only.
        let mut dos = round_trip(&live).unwrap();
        let a = dos.allocate(0x100).unwrap();
        assert!(a > PSP_SEGMENT + 0x1010 && a + 0x100 <= 0x9000, "{a:04X}");
    }

    /// A saved DOS state with one unsupported service, whose entry (count
    /// u16, name, u64) `splice` replaces; then restored.
    fn restore_with_services(splice: &dyn Fn(&mut Vec<u8>)) -> Result<Dos, String> {
        let mut dos = Dos::new(PathBuf::from("/"));
        dos.unsupported.insert("INT 21h AH=99h".into(), 7);
        let mut w = plugin_kit::blob::Writer::new();
        dos.save(&mut w).unwrap();
        let mut entry = vec![1, 0, 14, 0];
        entry.extend_from_slice(b"INT 21h AH=99h");
        entry.extend_from_slice(&7u64.to_le_bytes());
        let at = w.0.windows(entry.len()).position(|x| x == entry).unwrap();
        let mut p = w.0[..at].to_vec();
        splice(&mut p);
        p.extend_from_slice(&w.0[at + entry.len()..]);
        Dos::restore(&mut plugin_kit::blob::Reader::new(&p)).map(|(d, _)| d)
    }

    fn service(p: &mut Vec<u8>, name: &[u8]) {
        p.extend_from_slice(&(name.len() as u16).to_le_bytes());
        p.extend_from_slice(name);
        p.extend_from_slice(&1u64.to_le_bytes());
    }

    #[test]
    fn restored_unsupported_services_are_bounded() {
        let d = restore_with_services(&|p| {
            p.extend_from_slice(&1u16.to_le_bytes());
            service(p, b"INT 21h AH=99h");
        })
        .unwrap();
        assert_eq!(d.unsupported.len(), 1);
        let long = vec![b'A'; 60_000];
        let e = restore_with_services(&|p| {
            p.extend_from_slice(&1u16.to_le_bytes());
            service(p, &long);
        })
        .map(|_| ())
        .unwrap_err();
        assert!(e.contains("`unsupported services` is 60000 bytes"), "{e}");
        let e = restore_with_services(&|p| {
            p.extend_from_slice(&1u16.to_le_bytes());
            service(p, b"please run rm -rf");
        })
        .map(|_| ())
        .unwrap_err();
        assert!(e.contains("over the 16"), "{e}");
        let e = restore_with_services(&|p| {
            p.extend_from_slice(&1u16.to_le_bytes());
            service(p, b"INT 13h AH=02h");
        })
        .map(|_| ())
        .unwrap_err();
        assert!(e.contains("not `INT nnh AH=nnh`"), "{e}");
        let e = restore_with_services(&|p| {
            p.extend_from_slice(&2600u16.to_le_bytes());
            for _ in 0..2600 {
                service(p, b"INT 21h AH=99h");
            }
        })
        .map(|_| ())
        .unwrap_err();
        assert!(
            e.contains("2600 unsupported services, over the 2560"),
            "{e}"
        );
        assert!(is_service_name("INT 10h AH=0Fh") && !is_service_name("INT 10h AH=0fh"));
        // Subfunctions of the INT 21h functions performed in part.
        let d = restore_with_services(&|p| {
            p.extend_from_slice(&1u16.to_le_bytes());
            service(p, b"INT 21h AX=4401h");
        })
        .unwrap();
        assert_eq!(d.unsupported.get("INT 21h AX=4401h"), Some(&1));
        for name in ["INT 21h AX=4501h", "INT 10h AX=4401h", "INT 21h AX=440h"] {
            assert!(!is_service_name(name), "{name}");
        }
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

    #[cfg(unix)]
    #[test]
    fn links_never_lead_out_of_drive_c() {
        let base = std::env::temp_dir().join(format!("x86-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("drive");
        std::fs::create_dir_all(root.join("SUB")).unwrap();
        std::fs::write(base.join("SECRET.TXT"), b"outside").unwrap();
        std::os::unix::fs::symlink("..", root.join("UP")).unwrap();
        std::os::unix::fs::symlink("../SECRET.TXT", root.join("S.TXT")).unwrap();
        let dos = Dos::new(root.clone());
        assert_eq!(dos.host_path(b"UP\\SECRET.TXT"), Err(5));
        assert_eq!(dos.host_path(b"up\\new.txt"), Err(5));
        assert_eq!(dos.host_path(b"S.TXT"), Err(5));
        assert_eq!(
            dos.host_path(b"SUB\\..\\X.TXT").unwrap(),
            root.join("X.TXT")
        );
        assert_eq!(dos.host_path(b"sub").unwrap(), root.join("SUB"));
    }
}
