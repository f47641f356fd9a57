//! cp1600_load_rom: a cartridge read and checked (`.ROM`, or `.BIN` with
//! its `.CFG` or the default map, plus an EXEC or GROM of the user's),
//! mapped into the session's machine, and the CPU reset to the chosen
//! start (the cartridge header's, the EXEC's, or an address).

use super::*;

impl Sessions {
    /// `cp1600_load_rom`: reads and checks the image (and an EXEC or GROM),
    /// maps it, and resets the CPU to the chosen start.
    pub fn load_rom(
        &mut self,
        session_id: Option<&str>,
        rom_path: &str,
        opts: &LoadOptions,
    ) -> ToolResult<RomLoaded> {
        let (id, _) = self.get(session_id)?;
        let choice = parse_start(opts.start.as_deref())?;
        let (path, bytes) = read_file(rom_path, "the ROM", "rom_path")?;
        let invalid =
            |e: rom::RomError| ToolError::new("INVALID_ROM", format!("{}: {e}", path.display()));
        if rom::looks_like_text(&bytes) {
            let first: String = String::from_utf8_lossy(&bytes)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(60)
                .collect();
            return Err(ToolError::new(
                "INVALID_ROM",
                format!(
                    "{}: this is a text file (it begins `{}`), not a ROM image; assemble it first (as1600 writes a .bin and .cfg, or a .rom)",
                    path.display(),
                    first.trim()
                ),
            ));
        }
        let looks_like_rom = bytes.len() >= 3 && bytes[0] == 0xA8 && bytes[2] == bytes[1] ^ 0xFF;
        let image: Image = if has_ext(&path, "rom") || (looks_like_rom && !has_ext(&path, "bin")) {
            rom::parse_rom(&bytes).map_err(invalid)?
        } else if let Some(addr) = opts.load_address {
            rom::parse_raw(&bytes, addr).map_err(invalid)?
        } else {
            let cfg = match &opts.cfg_path {
                Some(p) => Some(read_file(p, "the .cfg", "cfg_path")?),
                None => sibling_cfg(&path)?,
            };
            match cfg {
                Some((cfg_path, cfg_bytes)) => {
                    let text = String::from_utf8_lossy(&cfg_bytes);
                    rom::parse_bin_cfg(&bytes, &text).map_err(|e| {
                        ToolError::new(
                            "INVALID_ROM",
                            format!("{} with {}: {e}", path.display(), cfg_path.display()),
                        )
                    })?
                }
                None if bytes.len() % 2 == 1 => {
                    return Err(ToolError::new(
                        "INVALID_ROM",
                        format!(
                            "{}: {}; with no .cfg beside it this is not a ROM image",
                            path.display(),
                            rom::RomError::OddSize(bytes.len())
                        ),
                    ));
                }
                None => rom::parse_bin_default(&bytes).map_err(invalid)?,
            }
        };
        let exec =
            match &opts.exec_path {
                Some(p) => {
                    let (ep, b) = read_file(p, "the EXEC image", "exec_path")?;
                    Some(cart::parse_exec(&b).map_err(|m| {
                        ToolError::new("INVALID_ROM", format!("{}: {m}", ep.display()))
                    })?)
                }
                None => None,
            };
        let grom =
            match &opts.grom_path {
                Some(p) => {
                    let (gp, b) = read_file(p, "the GROM image", "grom_path")?;
                    Some(cart::parse_grom(&b).map_err(|m| {
                        ToolError::new("INVALID_ROM", format!("{}: {m}", gp.display()))
                    })?)
                }
                None => None,
            };
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| ToolError::new("SESSION_NOT_FOUND", id.clone()))?;
        let mut mem = if opts.keep_existing {
            s.machine.cpu.mem.clone()
        } else {
            Memory::new()
        };
        let mut parts: Vec<(u16, &[u16])> = image
            .segments
            .iter()
            .map(|seg| (seg.addr, seg.words.as_slice()))
            .collect();
        if let Some(w) = &exec {
            parts.push((cart::EXEC_BASE, w));
        }
        if let Some(w) = &grom {
            parts.push((cart::GROM_BASE, w));
        }
        for &(addr, words) in &parts {
            for i in 0..words.len() {
                let a = addr.wrapping_add(i as u16);
                if opts.keep_existing && mem.region(a) == Region::Rom {
                    return Err(ToolError::new(
                        "INVALID_ROM",
                        format!(
                            "{}: address ${a:04X} is already loaded; reload without keep_existing",
                            path.display()
                        ),
                    ));
                }
            }
        }
        for &(lo, hi, region) in &image.ram {
            mem.map_range(lo, hi, region);
        }
        for &(addr, words) in &parts {
            for (i, w) in words.iter().enumerate() {
                mem.load_word(addr.wrapping_add(i as u16), *w);
            }
        }
        let first = image
            .segments
            .iter()
            .map(|s| s.addr)
            .min()
            .unwrap_or(0x5000);
        let has_exec =
            exec.is_some() || (opts.keep_existing && s.rom.as_ref().is_some_and(|r| r.exec));
        let header = cart::read_header(&mem);
        let plain = Start::plain(match opts.load_address {
            Some(a) => a,
            None if mem.region(0x5000) == Region::Rom => 0x5000,
            None => first,
        });
        let exec_start = Start {
            how: StartKind::Exec,
            ..Start::plain(cart::EXEC_BASE)
        };
        // A header wins over quick-boot code: with both, the quick-boot
        // code is a hook that resumes the EXEC's boot (IntyBASIC's ECS
        // switch ends `B $1041`), which then starts the header's program.
        let quick = cart::quick_boot(&mem);
        let found = header.as_ref().map(cart::header_start).or(quick);
        let cart_start = || found;
        let start = match (opts.entry_point, choice) {
            (Some(pc), _) => Start::plain(pc),
            (None, StartChoice::LoadAddress) => plain,
            (None, StartChoice::Exec) if has_exec => exec_start,
            (None, StartChoice::Exec) => {
                return Err(ToolError::invalid(
                    "start `exec` needs an EXEC image: pass exec_path (your own copy of the console's EXEC ROM, 8192 bytes)",
                ));
            }
            (None, StartChoice::Header) => cart_start().ok_or_else(|| {
                ToolError::new(
                    "INVALID_ROM",
                    format!(
                        "{}: no cartridge header at $5000 (six BIDECLE pointers, a flags word, a title ending in 0) and no quick-boot code at $7000 or $4800; pass entry_point instead",
                        path.display()
                    ),
                )
            })?,
            (None, StartChoice::Auto) if has_exec => exec_start,
            (None, StartChoice::Auto) if opts.load_address.is_some() => plain,
            (None, StartChoice::Auto) => cart_start().unwrap_or(plain),
        };
        let segments: Vec<(u16, u16)> = image.segments.iter().map(|s| (s.addr, s.end())).collect();
        s.machine.cpu.mem = mem;
        apply_start(&mut s.machine, &start);
        s.machine.clear_trace();
        if !opts.keep_existing {
            s.image_ram.clear();
        }
        s.image_ram.extend(image.ram.iter().copied());
        s.start = start;
        let mut all_segments = match (&s.rom, opts.keep_existing) {
            (Some(r), true) => r.segments.clone(),
            _ => vec![],
        };
        all_segments.extend(&segments);
        let total_bytes = bytes.len()
            + if opts.keep_existing {
                s.rom.as_ref().map_or(0, |r| r.bytes)
            } else {
                0
            };
        s.edits = s.edits.wrapping_add(1);
        s.rom = Some(RomInfo {
            path: path.display().to_string(),
            format: image.format,
            bytes: total_bytes,
            segments: all_segments,
            exec: has_exec,
        });
        let mut start_note = start.note();
        if start.how == StartKind::Plain
            && opts.entry_point.is_none()
            && let Some(c) = cart_start()
            && c.pc != start.pc
        {
            start_note = Some(format!(
                "the PC is at ${:04X}; this cartridge's program starts at ${:04X}: reload with start \"header\" to begin there as the EXEC would",
                start.pc, c.pc
            ));
        }
        let quick_boot = match (quick, &header) {
            (Some(q), Some(_)) if start.how == StartKind::Header => Some(format!(
                "there is quick-boot code at ${:04X}, which the EXEC runs before the header's program (it usually returns to the EXEC); it is skipped here: pass entry_point {} to run it",
                q.pc, q.pc
            )),
            _ => None,
        };
        // A name may repeat (`author` once per author): values joined, in
        // name order.
        let mut vars: BTreeMap<&str, String> = BTreeMap::new();
        for (k, v) in &image.vars {
            vars.entry(k)
                .and_modify(|prev| {
                    prev.push_str("; ");
                    prev.push_str(v);
                })
                .or_insert_with(|| v.clone());
        }
        let cfg_vars = (!vars.is_empty()).then(|| {
            vars.into_iter()
                .map(|(name, value)| CfgVar {
                    name: name.to_owned(),
                    value,
                })
                .collect()
        });
        let warnings = cfg_warnings(&image.warnings);
        Ok(RomLoaded {
            status: "loaded",
            session_id: id,
            rom_size: bytes.len() as u64,
            load_address: opts.load_address.unwrap_or(first),
            entry_point: start.pc,
            format: image.format,
            segments: segments
                .iter()
                .map(|&(start, end)| Span { start, end })
                .collect(),
            header: header.as_ref().map(header_info),
            start: start.how,
            start_note,
            quick_boot,
            exec: has_exec.then_some(true),
            grom: grom.is_some().then_some(true),
            cfg_vars,
            jlp: image
                .ram
                .iter()
                .any(|r| (r.0, r.1) == rom::JLP_RAM)
                .then(|| {
                    "JLP RAM mapped at $8040-$9F7F (16-bit); the JLP accelerators and flash are not emulated".to_owned()
                }),
            warnings,
        })
    }
}

/// Warnings shown in one load answer at most: a .cfg of thousands of bad
/// lines should not fill the agent's context.
const MAX_WARNINGS: usize = 20;

/// The load answer's `warnings`: the skipped `.cfg` lines, the first
/// [`MAX_WARNINGS`] and how many more.
fn cfg_warnings(all: &[rom::CfgWarning]) -> Option<Vec<String>> {
    if all.is_empty() {
        return None;
    }
    let mut out: Vec<String> = all
        .iter()
        .take(MAX_WARNINGS)
        .map(ToString::to_string)
        .collect();
    if all.len() > MAX_WARNINGS {
        out.push(format!(
            "… and {} more skipped .cfg lines",
            all.len() - MAX_WARNINGS
        ));
    }
    Some(out)
}

/// Options for `load_rom` beyond the spec's path and load address.
#[derive(Default, Clone)]
pub struct LoadOptions {
    /// Load a raw image here instead of $5000 or its `.cfg` mapping.
    pub load_address: Option<u16>,
    /// The `.cfg` to place a `.bin` by (default: the one beside it).
    pub cfg_path: Option<String>,
    /// PC after loading, other registers 0 (overrides `start`).
    pub entry_point: Option<u16>,
    /// Keep what is already loaded and add this image (default: replace).
    pub keep_existing: bool,
    /// auto (default), header, exec or load_address: see [`StartChoice`].
    pub start: Option<String>,
    /// The user's own EXEC image (8192 bytes) to map at $1000.
    pub exec_path: Option<String>,
    /// The user's own GROM image (2048 bytes) to map at $3000.
    pub grom_path: Option<String>,
}

/// How `load_rom` picks the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StartChoice {
    /// EXEC when one is loaded, else the quick boot or the header when the
    /// image has one, else the load address.
    Auto,
    Header,
    Exec,
    LoadAddress,
}

fn parse_start(v: Option<&str>) -> Result<StartChoice, ToolError> {
    match v.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("auto") => Ok(StartChoice::Auto),
        Some("header") => Ok(StartChoice::Header),
        Some("exec") => Ok(StartChoice::Exec),
        Some("load_address" | "load") => Ok(StartChoice::LoadAddress),
        Some(_) => Err(ToolError::invalid(format!(
            "start `{}` is not one of auto, header, exec, load_address",
            plugin_kit::text::clip(v.unwrap_or(""))
        ))),
    }
}

/// Reads a file an argument names; `what` says which in errors ("the ROM",
/// "the .cfg", …), `arg` names the argument.
fn read_file(path: &str, what: &str, arg: &str) -> Result<(PathBuf, Vec<u8>), ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "{arg} is empty; pass the path of {what}"
        )));
    }
    let resolved = plugin_kit::paths::resolve(path);
    read_resolved(&resolved, what).map(|b| (resolved, b))
}

fn read_resolved(path: &Path, what: &str) -> Result<Vec<u8>, ToolError> {
    plugin_kit::paths::read_regular_file(path).map_err(|e| {
        ToolError::new(
            "FILE_ERROR",
            format!(
                "cannot read {what}: {}",
                plugin_kit::paths::explain_io_error(path, &e, false)
            ),
        )
    })
}

/// The `.cfg` beside a `.bin`: none when it does not exist; an error when
/// it exists but cannot be read (skipping it would load the image at the
/// wrong addresses without a word).
fn sibling_cfg(bin: &Path) -> Result<Option<(PathBuf, Vec<u8>)>, ToolError> {
    let cfg = bin.with_extension("cfg");
    match plugin_kit::paths::read_regular_file(&cfg) {
        Ok(b) => Ok(Some((cfg, b))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ToolError::new(
            "FILE_ERROR",
            format!(
                "cannot read the .cfg beside the ROM, which says where its words go: {}. Fix its permissions, pass cfg_path, or pass load_address to load the .bin without it",
                plugin_kit::paths::explain_io_error(&cfg, &e, false)
            ),
        )),
    }
}

fn header_info(h: &Header) -> HeaderInfo {
    HeaderInfo {
        title: h.title.clone(),
        year: h.year,
        start: h.start,
        title_address: h.title_address,
        code_after_title: h.runs_code_after_title().then_some(h.after_title),
        flags: h.flags,
    }
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}
