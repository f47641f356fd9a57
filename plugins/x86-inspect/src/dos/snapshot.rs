//! What a snapshot keeps of a machine's DOS state, and how it is read back: checked as strictly as state made here, since a snapshot is outside data (drive C: is never taken from it).

use super::*;

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
        // Formats 1 and 2 keep a cursor here; the BIOS data area (in memory)
        // holds the real one.
        w.u8(0).u8(0);
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
        // services can record (one name per interrupt and AH, or per AX
        // of an INT 21h function performed for some subfunctions).
        let n = r.u16("unsupported services")? as usize;
        if n > MAX_UNSUPPORTED_SERVICES {
            return Err(format!(
                "{n} unsupported services, over the {MAX_UNSUPPORTED_SERVICES} there are (256 AH values each of INT 10h, 16h and 21h, and 256 AL values each of INT 21h AH={})",
                SUBFUNCTION_SERVICES
                    .map(|ah| format!("{ah:02X}h"))
                    .join("/")
            ));
        }
        let mut unsupported = BTreeMap::new();
        for i in 0..n {
            let name = r.str("unsupported services", SERVICE_NAME_MAX)?;
            if !is_service_name(&name) {
                return Err(format!(
                    "unsupported service {i} is named {name:?}, not `INT nnh AH=nnh` (10h, 16h or 21h) or `INT 21h AX=nnnnh`"
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
        // The old cursor field: the BIOS data area holds the cursor.
        let _ = (r.u8("cursor")?, r.u8("cursor")?);
        let dos = Dos {
            // Set by the caller from the program path (see above).
            root: PathBuf::new(),
            limits,
            stdout,
            stderr,
            screen,
            to_display: Vec::new(),
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
            search_cache: None,
            search_note: None,
        };
        Ok((dos, stored_root))
    }
}

/// A memory-block table from a snapshot, holding what INT 21h/48h-4Ah keep
/// true: blocks (segment, paragraphs) ascend, lie between [`PSP_SEGMENT`]
/// and [`MEMORY_TOP`] and do not overlap. `allocate` and `room_after`
/// count on it: on a crafted table they wrapped and handed out segments
/// that overlapped the program.
pub(super) fn checked_blocks(list: &[(u16, u16)]) -> Result<BTreeMap<u16, u16>, String> {
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
