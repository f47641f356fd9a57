//! Files on drive C:: DOS paths mapped onto the host without leaving the program's folder, handles, redirections, and writes under the machine's quotas.

use super::*;

impl Dos {
    pub(super) fn read_asciiz(cpu: &Cpu, seg: u16, off: u16) -> Vec<u8> {
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
    pub(super) fn host_path(&self, dos: &[u8]) -> Result<PathBuf, u16> {
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
                    let found = entry_named(&out, &name);
                    out.push(found.unwrap_or_else(|| name.to_uppercase()));
                    // DOS has no links, and a link (`UP -> ..`) would lead
                    // out of drive C:; every component must be a plain
                    // file or directory.
                    if is_link(&out) {
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

    pub(super) fn new_handle(&mut self, h: Handle) -> Option<u16> {
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

    /// Answers an open or a create (AH=3Ch, 3Dh, 5Bh): the new handle in
    /// AX, error 4 when every handle is taken, or the error `opened` gives.
    pub(super) fn answer_open(&mut self, cpu: &mut Cpu, opened: std::io::Result<File>) {
        match opened.map(|f| self.new_handle(Handle::File(f))) {
            Ok(Some(h)) => {
                cpu.regs[AX] = h;
                dos_ok(cpu);
            }
            Ok(None) => dos_err(cpu, 4),
            Err(e) => dos_err(cpu, io_error_code(&e)),
        }
    }

    /// Writes to handle `h` as DOS would: the console streams, or a file
    /// within the machine's write limits. A write cut short by a limit
    /// returns fewer bytes than asked, which is how DOS reports a full disk.
    pub(super) fn write_handle(&mut self, h: usize, data: &[u8]) -> Result<usize, u16> {
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
                self.to_display.extend_from_slice(data);
                Ok(data.len())
            }
            Some(Some(Handle::Stderr)) => {
                self.stderr.extend(data);
                self.to_display.extend_from_slice(data);
                Ok(data.len())
            }
            Some(Some(Handle::Null)) => Ok(data.len()),
            _ => Err(6),
        }
    }

    /// Writes at a file's position within the machine's limits.
    pub(super) fn write_file(&mut self, f: &mut File, data: &[u8]) -> Result<usize, u16> {
        quota_write(
            &self.limits,
            &mut self.file_bytes_written,
            &mut self.disk_full,
            f,
            data,
        )
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

/// The entry of `dir` a DOS name reaches: the first, in the order of
/// [`plugin_kit::paths::read_dir_entries`] (by host name), whose name equals
/// `name` ignoring ASCII case. Directory searches list exactly these
/// entries, so a name a search finds opens the same file.
pub(super) fn entry_named(dir: &Path, name: &str) -> Option<String> {
    // Every entry, even while the directory changes.
    plugin_kit::paths::read_dir_entries(dir)
        .ok()
        .and_then(|rd| {
            rd.into_iter()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .find(|n| n.eq_ignore_ascii_case(name))
        })
}

/// Whether `p` is a symbolic link (which DOS file services refuse).
pub(super) fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// The DOS attribute byte of a host file or directory: directory (10h),
/// or archive (20h) plus read-only (01h) when the host file is read-only.
/// Hidden and system have no host counterpart.
pub(super) fn dos_attributes(meta: &std::fs::Metadata) -> u8 {
    if meta.is_dir() {
        0x10
    } else if meta.permissions().readonly() {
        0x21
    } else {
        0x20
    }
}

/// A pipe, device or socket: opening one could block the emulator (and the
/// plugin) until the call's deadline, so DOS gets "access denied" instead.
pub(super) fn is_special(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| plugin_kit::paths::is_special(&m))
}

pub(super) fn io_error_code(e: &std::io::Error) -> u16 {
    match e.kind() {
        std::io::ErrorKind::NotFound => 2,
        std::io::ErrorKind::PermissionDenied => 5,
        std::io::ErrorKind::AlreadyExists => 80,
        _ => 5,
    }
}
