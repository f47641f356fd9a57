//! DOS program loading (PSP, .COM, MZ .EXE) and the INT 20h/21h, INT 10h and
//! small BIOS services, implemented natively.
//!
//! Drive C: is the directory the program was loaded from; DOS file services
//! never reach outside it (they fail with DOS error codes instead).

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

mod fcb;

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
/// Longest unsupported-service name: `INT 21h AH=4Ch` is 14 bytes.
const SERVICE_NAME_MAX: usize = 16;
/// Distinct unsupported services there can be: AH 00h-FFh of INT 10h, 16h
/// and 21h (the only services that record one).
const MAX_UNSUPPORTED_SERVICES: usize = 3 * 256;

/// Whether `name` is one the services record: `INT 10h AH=0Fh` and the
/// like, with the interrupt 10h, 16h or 21h and AH two uppercase hex digits.
fn is_service_name(name: &str) -> bool {
    let Some(rest) = ["INT 10h AH=", "INT 16h AH=", "INT 21h AH="]
        .iter()
        .find_map(|p| name.strip_prefix(p))
    else {
        return false;
    };
    let b = rest.as_bytes();
    b.len() == 3
        && b[2] == b'h'
        && b[..2]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
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
    cursor: (u8, u8),
}

impl Dos {
    /// Writes the DOS state (a snapshot). Refused while a file is open
    /// (a handle, an FCB or a redirection): an open host file cannot be
    /// carried in a snapshot, and reopening one by name could find another.
    pub(crate) fn save(&self, w: &mut plugin_kit::blob::Writer) -> Result<(), String> {
        let open: Vec<String> = self
            .handles
            .iter()
            .enumerate()
            .filter(|(_, h)| matches!(h, Some(Handle::File(_))))
            .map(|(i, _)| format!("handle {i}"))
            .chain(
                self.fcb_files
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.is_some())
                    .map(|(i, _)| format!("FCB file {i}")),
            )
            .collect();
        if !open.is_empty() {
            return Err(format!(
                "the program has files open ({}{}); a snapshot holds no open files: step or run until it closes them (a redirected stdin or stdout stays open for the whole run)",
                open.join(", "),
                self.stdin_name
                    .as_ref()
                    .map(|n| format!(", stdin from {n}"))
                    .unwrap_or_default()
            ));
        }
        w.str(&self.root.to_string_lossy(), SNAPSHOT_PATH_MAX);
        w.u64(self.limits.console_bytes as u64)
            .u64(self.limits.write_bytes)
            .u64(self.limits.file_bytes);
        self.stdout.save(w);
        self.stderr.save(w);
        self.screen.save(w);
        self.input.save(w);
        w.u64(self.file_bytes_written).u64(self.disk_full);
        w.u16(self.int21_calls.len() as u16);
        for (k, v) in &self.int21_calls {
            w.u8(*k).u64(*v);
        }
        w.u16(self.unsupported.len() as u16);
        for (k, v) in &self.unsupported {
            w.str(k, SERVICE_NAME_MAX).u64(*v);
        }
        w.u16(self.handles.len() as u16);
        for h in &self.handles {
            w.u8(match h {
                None => 0,
                Some(Handle::Stdin) => 1,
                Some(Handle::Stdout) => 2,
                Some(Handle::Stderr) => 3,
                Some(Handle::Null) => 4,
                Some(Handle::File(_)) => unreachable!("refused above"),
            });
        }
        w.u16(self.blocks.len() as u16);
        for (k, v) in &self.blocks {
            w.u16(*k).u16(*v);
        }
        w.u16(self.dta.0)
            .u16(self.dta.1)
            .u16(self.psp)
            .u8(self.return_code);
        w.u32(self.cooked.len() as u32);
        w.0.extend(self.cooked.iter());
        w.u16(self.fcb_files.len() as u16);
        w.u16(self.fcb_search.len() as u16);
        for name in &self.fcb_search {
            w.str(name, FCB_NAME_MAX);
        }
        w.u8(self.cursor.0).u8(self.cursor.1);
        Ok(())
    }

    /// Reads what [`Dos::save`] wrote, except drive C:. The text's folder
    /// is returned beside the state, for a consistency check only: a crafted
    /// or foreign snapshot could name any folder (the user's ROMs, say) and
    /// every DOS file call would then create, write or delete there. The
    /// caller must set `root` from the program path, as a load does.
    pub(crate) fn restore(r: &mut plugin_kit::blob::Reader) -> Result<(Dos, String), String> {
        let stored_root = r.str("drive C: root", SNAPSHOT_PATH_MAX)?;
        let limits = Limits {
            console_bytes: r.u64("limits")? as usize,
            write_bytes: r.u64("limits")?,
            file_bytes: r.u64("limits")?,
        };
        // A snapshot may not raise what a machine is allowed to hold.
        let max_console = crate::console::MAX_CONSOLE_KIB as usize * 1024;
        let max_write = MAX_WRITE_LIMIT_KIB as u64 * 1024;
        if limits.console_bytes == 0
            || limits.console_bytes > max_console
            || limits.write_bytes > max_write
            || limits.file_bytes > FILE_SIZE_LIMIT
        {
            return Err(format!(
                "limits out of range (console {} bytes, at most {max_console}; writes {}, at most {max_write}; one file {}, at most {FILE_SIZE_LIMIT})",
                limits.console_bytes, limits.write_bytes, limits.file_bytes
            ));
        }
        let stdout = Stream::restore(r, "stdout")?;
        let stderr = Stream::restore(r, "stderr")?;
        let screen = Stream::restore(r, "screen")?;
        let input = Input::restore(r)?;
        for (name, st) in [
            ("stdout", &stdout),
            ("stderr", &stderr),
            ("screen", &screen),
        ] {
            if st.capacity() != limits.console_bytes {
                return Err(format!(
                    "{name} keeps {} bytes but the console limit is {}",
                    st.capacity(),
                    limits.console_bytes
                ));
            }
        }
        let file_bytes_written = r.u64("file bytes written")?;
        let disk_full = r.u64("disk full count")?;
        let mut int21_calls = BTreeMap::new();
        for _ in 0..r.u16("INT 21h counts")? {
            int21_calls.insert(r.u8("INT 21h counts")?, r.u64("INT 21h counts")?);
        }
        // Shown in full by x86_read_console and x86_run: only what the
        // services can record (one name per interrupt and AH).
        let n = r.u16("unsupported services")? as usize;
        if n > MAX_UNSUPPORTED_SERVICES {
            return Err(format!(
                "{n} unsupported services, over the {MAX_UNSUPPORTED_SERVICES} there are (INT 10h, 16h and 21h, 256 AH values each)"
            ));
        }
        let mut unsupported = BTreeMap::new();
        for i in 0..n {
            let name = r.str("unsupported services", SERVICE_NAME_MAX)?;
            if !is_service_name(&name) {
                return Err(format!(
                    "unsupported service {i} is named {name:?}, not `INT nnh AH=nnh` (10h, 16h or 21h)"
                ));
            }
            unsupported.insert(name, r.u64("unsupported services")?);
        }
        let n = r.u16("handles")? as usize;
        if n > MAX_HANDLES {
            return Err(format!("{n} DOS handles, over {MAX_HANDLES}"));
        }
        if n < 5 {
            return Err(format!("{n} DOS handles; DOS always has the first 5"));
        }
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            handles.push(match r.u8("handles")? {
                0 => None,
                1 => Some(Handle::Stdin),
                2 => Some(Handle::Stdout),
                3 => Some(Handle::Stderr),
                4 => Some(Handle::Null),
                k => return Err(format!("handle {i} has kind {k}, not 0-4")),
            });
        }
        let mut list = Vec::new();
        for _ in 0..r.u16("memory blocks")? {
            list.push((r.u16("memory blocks")?, r.u16("memory blocks")?));
        }
        let blocks = checked_blocks(&list)?;
        let dta = (r.u16("DTA")?, r.u16("DTA")?);
        let psp = r.u16("PSP")?;
        let return_code = r.u8("return code")?;
        let len = r.u32("console line")? as usize;
        let cooked = r.bytes(len, "console line")?.iter().copied().collect();
        let fcbs = r.u16("FCB slots")? as usize;
        let mut fcb_search = Vec::new();
        for _ in 0..r.u16("FCB search")? {
            fcb_search.push(r.str("FCB search", FCB_NAME_MAX)?);
        }
        let cursor = (r.u8("cursor")?, r.u8("cursor")?);
        let dos = Dos {
            // Set by the caller from the program path (see above).
            root: PathBuf::new(),
            limits,
            stdout,
            stderr,
            screen,
            input,
            file_bytes_written,
            disk_full,
            int21_calls,
            unsupported,
            handles,
            blocks,
            dta,
            psp,
            return_code,
            cooked,
            stdin_name: None,
            fcb_files: (0..fcbs.min(fcb::MAX_FCB_FILES)).map(|_| None).collect(),
            fcb_search,
            cursor,
        };
        Ok((dos, stored_root))
    }

    /// Drive C:'s host folder.
    pub fn drive_c(&self) -> &Path {
        &self.root
    }

    /// Sets drive C:'s host folder (a restored machine's, from its program).
    pub(crate) fn set_drive_c(&mut self, root: PathBuf) {
        self.root = root;
    }
}

/// A memory-block table from a snapshot, holding what INT 21h/48h-4Ah keep
/// true: blocks (segment, paragraphs) ascend, lie between [`PSP_SEGMENT`]
/// and [`MEMORY_TOP`] and do not overlap. `allocate` and `room_after`
/// count on it: on a crafted table they wrapped and handed out segments
/// that overlapped the program.
fn checked_blocks(list: &[(u16, u16)]) -> Result<BTreeMap<u16, u16>, String> {
    // Where the next block may start: past the one before, and past its
    // segment even when it has no paragraphs (one block per segment).
    let mut floor = PSP_SEGMENT as u32;
    let mut blocks = BTreeMap::new();
    for (i, &(seg, paras)) in list.iter().enumerate() {
        let last = seg as u32 + paras as u32;
        let why = if seg < PSP_SEGMENT {
            format!("starts below the program's PSP at {PSP_SEGMENT:04X}h")
        } else if last > MEMORY_TOP as u32 {
            format!("ends past the top of memory at {MEMORY_TOP:04X}h")
        } else if (seg as u32) < floor {
            format!(
                "overlaps or comes before the block before it (the next may start at {floor:04X}h)"
            )
        } else {
            floor = last.max(seg as u32 + 1);
            blocks.insert(seg, paras);
            continue;
        };
        return Err(format!(
            "memory block {i} ({paras:04X}h paragraphs at {seg:04X}h) {why}"
        ));
    }
    Ok(blocks)
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
        let tail = tail.as_bytes();
        Self::fill_default_fcbs(cpu, psp, tail);
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
                for _ in 0..cpu.regs[CX].min(2000) {
                    self.screen.push(al);
                }
            }
            0x0E => {
                self.screen.push(al);
                match al {
                    b'\r' => self.cursor.1 = 0,
                    // AH=02h may have put the row anywhere (DH=255).
                    b'\n' => self.cursor.0 = self.cursor.0.saturating_add(1).min(24),
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

    /// Maps a DOS path onto the host, confined to the root directory without
    /// following symbolic links (access denied on any link in the path).
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
                    // DOS has no links, and a link (`UP -> ..`) would lead
                    // out of drive C:; every component must be a plain
                    // file or directory.
                    if std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink()) {
                        return Err(5);
                    }
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

    /// Applies COMMAND.COM-style redirections: `< input` becomes handle 0,
    /// `> output` (or `>> output`, appending) handle 1. Names are DOS paths
    /// on drive C:.
    pub fn redirect(
        &mut self,
        input: Option<&str>,
        output: Option<&str>,
        append: bool,
    ) -> Result<(), String> {
        let where_ = "paths are relative to drive C:, the program's directory";
        if let Some(name) = input {
            let p = self
                .host_path(name.as_bytes())
                .map_err(|_| format!("invalid input file name {name:?} ({where_})"))?;
            if is_special(&p) || p.is_dir() {
                return Err(format!("input {name:?} is not a regular file"));
            }
            let f = File::open(&p).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("File not found: {name} (the input of `<`; {where_})")
                }
                _ => format!("cannot open {name}: {e}"),
            })?;
            self.handles[0] = Some(Handle::File(f));
            self.stdin_name = Some(name.to_uppercase());
        }
        if let Some(name) = output {
            let p = self
                .host_path(name.as_bytes())
                .map_err(|_| format!("invalid output file name {name:?} ({where_})"))?;
            if is_special(&p) || p.is_dir() {
                return Err(format!("output {name:?} is not a regular file"));
            }
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .append(append)
                .truncate(!append)
                .open(&p)
                .map_err(|e| format!("cannot create {name}: {e}"))?;
            self.handles[1] = Some(Handle::File(f));
        }
        Ok(())
    }

    /// A host file (already opened) as standard input.
    pub fn set_stdin_file(&mut self, f: File) {
        self.handles[0] = Some(Handle::File(f));
        self.stdin_name = Some("stdin_file".into());
    }

    /// Where standard input comes from, for tool results.
    pub fn stdin_description(&self) -> String {
        match (&self.stdin_name, self.stdin_is_keyboard()) {
            (Some(n), false) => format!("file {n}"),
            _ if self.input.closed => "keyboard (ends after the queued text)".into(),
            _ => "keyboard (waits for x86_write_console_input when empty)".into(),
        }
    }

    fn new_handle(&mut self, h: Handle) -> Option<u16> {
        if let Some(i) = self.handles.iter().position(|x| x.is_none()) {
            self.handles[i] = Some(h);
            return Some(i as u16);
        }
        if self.handles.len() >= MAX_HANDLES {
            return None;
        }
        self.handles.push(Some(h));
        Some(self.handles.len() as u16 - 1)
    }

    /// Writes to handle `h` as DOS would: the console streams, or a file
    /// within the machine's write limits. A write cut short by a limit
    /// returns fewer bytes than asked, which is how DOS reports a full disk.
    fn write_handle(&mut self, h: usize, data: &[u8]) -> Result<usize, u16> {
        let room = self
            .limits
            .write_bytes
            .saturating_sub(self.file_bytes_written);
        let file_limit = self.limits.file_bytes;
        match self.handles.get_mut(h) {
            Some(Some(Handle::File(f))) => {
                if data.is_empty() {
                    let pos = f.stream_position().map_err(|e| io_error_code(&e))?;
                    let len = f.metadata().map_err(|e| io_error_code(&e))?.len();
                    let gap = pos.saturating_sub(len);
                    // CX=0 truncates or extends the file to the pointer.
                    if pos > file_limit || gap > room {
                        self.disk_full += 1;
                        return Ok(0);
                    }
                    f.set_len(pos).map_err(|e| io_error_code(&e))?;
                    self.file_bytes_written += gap;
                    return Ok(0);
                }
                quota_write(
                    &self.limits,
                    &mut self.file_bytes_written,
                    &mut self.disk_full,
                    f,
                    data,
                )
            }
            Some(Some(Handle::Stdin | Handle::Stdout)) => {
                self.stdout.extend(data);
                Ok(data.len())
            }
            Some(Some(Handle::Stderr)) => {
                self.stderr.extend(data);
                Ok(data.len())
            }
            Some(Some(Handle::Null)) => Ok(data.len()),
            _ => Err(6),
        }
    }

    /// Writes at a file's position within the machine's limits.
    fn write_file(&mut self, f: &mut File, data: &[u8]) -> Result<usize, u16> {
        quota_write(
            &self.limits,
            &mut self.file_bytes_written,
            &mut self.disk_full,
            f,
            data,
        )
    }

    /// Character output to standard output (handle 1, maybe redirected).
    fn con_out(&mut self, bytes: &[u8]) {
        // A closed or full standard output drops characters, as DOS does.
        let _ = self.write_handle(1, bytes);
    }

    fn stdin_is_keyboard(&self) -> bool {
        !matches!(self.handles.first(), Some(Some(Handle::File(_))))
    }

    /// One byte of standard input for the character services.
    fn stdin_byte(&mut self) -> InRead {
        match self.handles.first_mut() {
            Some(Some(Handle::File(f))) => {
                let mut b = [0u8];
                match f.read(&mut b) {
                    Ok(1) => InRead::Byte(b[0]),
                    _ => InRead::Eof,
                }
            }
            _ => self.input.take(),
        }
    }

    /// Whether standard input has a character ready (no waiting).
    fn stdin_ready(&mut self) -> bool {
        match self.handles.first_mut() {
            Some(Some(Handle::File(f))) => {
                let pos = f.stream_position().unwrap_or(0);
                f.metadata().is_ok_and(|m| pos < m.len())
            }
            _ => matches!(self.input.peek(), InRead::Byte(_)),
        }
    }

    /// A blocking character read: the byte, Ctrl-Z at end of input, or
    /// None when the keyboard is empty and more input may come.
    fn read_char(&mut self) -> Option<u8> {
        match self.stdin_byte() {
            InRead::Byte(b) => Some(b),
            InRead::Eof => Some(0x1A),
            InRead::Wait => None,
        }
    }

    /// INT 21h AH=0Ah: buffered line input into DS:DX.
    fn buffered_input(&mut self, cpu: &mut Cpu) -> Flow {
        let keyboard = self.stdin_is_keyboard();
        if keyboard && !self.input.has_line() {
            return Flow::WaitInput;
        }
        let (ds, dx) = (cpu.sregs[DS], cpu.regs[DX]);
        let max = cpu.rb(Cpu::lin(ds, dx)) as usize;
        if max == 0 {
            return Flow::Continue;
        }
        let mut line = Vec::new();
        loop {
            match self.stdin_byte() {
                InRead::Byte(b'\r') if keyboard => break,
                InRead::Byte(b'\n') => break,
                InRead::Byte(b'\r') => {}
                // Past the buffer DOS beeps and drops the character.
                InRead::Byte(b) if line.len() + 1 < max => line.push(b),
                InRead::Byte(_) => {}
                InRead::Eof | InRead::Wait => break,
            }
        }
        self.con_out(&line);
        self.con_out(b"\r");
        cpu.wb(Cpu::lin(ds, dx.wrapping_add(1)), line.len() as u8);
        for (i, b) in line.iter().chain(b"\r").enumerate() {
            cpu.wb(Cpu::lin(ds, dx.wrapping_add(2 + i as u16)), *b);
        }
        Flow::Continue
    }

    /// INT 21h AH=3Fh on the keyboard: DOS reads a whole line (echoing it)
    /// and hands it out with CR LF, the rest kept for the next read.
    fn read_console_line(&mut self, want: usize) -> Option<Vec<u8>> {
        if self.cooked.is_empty() {
            if !self.input.has_line() {
                return None;
            }
            let mut line = Vec::new();
            loop {
                match self.input.take() {
                    InRead::Byte(b'\r') => {
                        line.extend_from_slice(b"\r\n");
                        break;
                    }
                    InRead::Byte(b) => line.push(b),
                    InRead::Eof | InRead::Wait => break,
                }
            }
            self.con_out(&line);
            self.cooked.extend(line);
        }
        let n = want.min(self.cooked.len());
        Some(self.cooked.drain(..n).collect())
    }

    fn int16(&mut self, cpu: &mut Cpu) -> Flow {
        let key = |b: u8| (scan_code(b) as u16) << 8 | b as u16;
        match cpu.regs[AX] >> 8 {
            0x00 | 0x10 => match self.input.take() {
                InRead::Byte(b) => cpu.regs[AX] = key(b),
                InRead::Eof => cpu.regs[AX] = key(0x1A),
                InRead::Wait => return Flow::WaitInput,
            },
            0x01 | 0x11 => match self.input.peek() {
                InRead::Byte(b) => {
                    cpu.regs[AX] = key(b);
                    cpu.flags &= !ZF;
                }
                _ => cpu.flags |= ZF,
            },
            0x02 | 0x12 => cpu.regs[AX] &= 0xFF00,
            ah => {
                *self
                    .unsupported
                    .entry(format!("INT 16h AH={ah:02X}h"))
                    .or_default() += 1
            }
        }
        Flow::Continue
    }

    fn int21(&mut self, cpu: &mut Cpu) -> Flow {
        let ah = (cpu.regs[AX] >> 8) as u8;
        let al = cpu.regs[AX] as u8;
        *self.int21_calls.entry(ah).or_default() += 1;
        let (ds, dx) = (cpu.sregs[DS], cpu.regs[DX]);
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
                _ => cpu.regs[AX] |= 0x00FF,
            },
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

/// Writes `data` at `f`'s position, cut short at the per-file size limit
/// or the machine's remaining write allowance (then counted in
/// `disk_full`); returns the bytes written.
fn quota_write(
    limits: &Limits,
    written: &mut u64,
    disk_full: &mut u64,
    f: &mut File,
    data: &[u8],
) -> Result<usize, u16> {
    let pos = f.stream_position().map_err(|e| io_error_code(&e))?;
    let len = f.metadata().map_err(|e| io_error_code(&e))?.len();
    // Writing past the end grows the file by the gap too.
    let gap = pos.saturating_sub(len);
    let room = limits.write_bytes.saturating_sub(*written);
    let fits = (data.len() as u64)
        .min(limits.file_bytes.saturating_sub(pos))
        .min(room.saturating_sub(gap)) as usize;
    if fits < data.len() {
        *disk_full += 1;
    }
    if fits == 0 {
        return Ok(0);
    }
    f.write_all(&data[..fits]).map_err(|e| io_error_code(&e))?;
    *written += gap + fits as u64;
    Ok(fits)
}

/// A command tail with COMMAND.COM's redirections taken out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Redirections {
    /// The tail without the redirections.
    pub tail: String,
    /// The file of `< FILE`.
    pub input: Option<String>,
    /// The file of `> FILE` or `>> FILE`.
    pub output: Option<String>,
    /// Whether the output redirection appends (`>>`).
    pub append: bool,
}

/// Splits `< file`, `> file` and `>> file` out of a command tail, as
/// COMMAND.COM does before it builds the PSP (text in double quotes is left
/// alone).
pub fn split_redirections(tail: &str) -> Result<Redirections, String> {
    let mut r = Redirections::default();
    let chars: Vec<char> = tail.chars().collect();
    let mut i = 0;
    let mut quoted = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            quoted = !quoted;
        }
        if quoted || !matches!(c, '<' | '>' | '|') {
            r.tail.push(c);
            i += 1;
            continue;
        }
        if c == '|' {
            return Err(
                "pipes (|) are not supported; run each program with > FILE and the next with < FILE"
                    .into(),
            );
        }
        let append = c == '>' && chars.get(i + 1) == Some(&'>');
        i += if append { 2 } else { 1 };
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        let mut name = String::new();
        while let Some(&c) = chars.get(i) {
            if c.is_whitespace() || matches!(c, '<' | '>' | '|') {
                break;
            }
            name.push(c);
            i += 1;
        }
        if name.is_empty() {
            return Err(format!("`{c}` needs a file name after it"));
        }
        let slot = if c == '<' {
            &mut r.input
        } else {
            &mut r.output
        };
        if slot.is_some() {
            return Err(format!("`{c}` appears twice"));
        }
        *slot = Some(name);
        if c == '>' {
            r.append = append;
        }
    }
    r.tail = r.tail.trim_end().to_string();
    Ok(r)
}

/// The BIOS scan code of the key typing `b` (enough for Enter, Esc and the
/// keys programs test by scan code).
fn scan_code(b: u8) -> u8 {
    match b {
        b'\r' => 0x1C,
        0x1B => 0x01,
        0x08 => 0x0E,
        b'\t' => 0x0F,
        b' ' => 0x39,
        0x1A => 0x2C,
        b'0' => 0x0B,
        b'1'..=b'9' => b - b'1' + 2,
        _ => 0,
    }
}

/// Text for the keyboard: every line end (LF, CR LF or CR) is the Enter
/// key, which types CR.
pub fn keyboard_text(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\r' if text.get(i + 1) == Some(&b'\n') => {
                out.push(b'\r');
                i += 1;
            }
            b'\n' => out.push(b'\r'),
            b => out.push(b),
        }
        i += 1;
    }
    out
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
        assert_eq!(dos.cursor.0, 24);
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
            p.extend_from_slice(&800u16.to_le_bytes());
            for _ in 0..800 {
                service(p, b"INT 21h AH=99h");
            }
        })
        .map(|_| ())
        .unwrap_err();
        assert!(e.contains("800 unsupported services, over the 768"), "{e}");
        assert!(is_service_name("INT 10h AH=0Fh") && !is_service_name("INT 10h AH=0fh"));
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
