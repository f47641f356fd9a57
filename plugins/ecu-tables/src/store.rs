//! Finding definitions, matching ROMs and caching both by path and mtime.
//!
//! Each call re-lists the definitions directory and re-stats the ROM (cheap),
//! but re-reads and re-parses only files whose size or mtime changed, so a
//! warm call costs a few `stat`s plus the table decode.

use crate::checksum::Module;
use crate::definition::{ChainFile, Definition, merge, parse_hex};
use crate::error::Error;
use crate::scaling::parse_hex_bytes;
use crate::xml::{RawDefinition, RomId, parse_definition, parse_romid_only};
use plugin_kit::safe_write::FileLock;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Size + modification time: a file is re-read when either changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// File size in bytes.
    pub len: u64,
    /// Modification time, when the filesystem keeps one.
    pub mtime: Option<SystemTime>,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

struct CachedFile {
    stamp: Stamp,
    romid: Result<RomId, String>,
    full: Option<Result<Arc<RawDefinition>, String>>,
}

struct CachedDefinition {
    chain: Vec<(PathBuf, Stamp)>,
    definition: Arc<Definition>,
}

struct CachedRom {
    stamp: Stamp,
    bytes: Arc<Vec<u8>>,
}

/// A ROM image and the definition that matched it (if any).
#[derive(Debug, Clone)]
pub struct OpenedRom {
    /// The ROM file as given (resolved against the workspace).
    pub path: PathBuf,
    /// The image as the definition addresses it (see [`crate::image`]).
    pub bytes: Arc<Vec<u8>>,
    /// How `bytes` maps back to the file (container, base address).
    pub layout: crate::image::Layout,
    /// The matched definition; none when no definition's id matches.
    pub definition: Option<Arc<Definition>>,
    /// `xmlid @address` ids tried, with what the ROM holds there.
    pub tried: Vec<String>,
    /// Notes such as "several definitions match".
    pub warnings: Vec<String>,
    /// The definitions directory searched.
    pub definitions_dir: PathBuf,
}

impl OpenedRom {
    /// The definition, or the unknown-ROM error listing the ids tried.
    pub fn require_definition(&self) -> Result<Arc<Definition>, Error> {
        self.definition.clone().ok_or_else(|| Error::UnknownRom {
            rom: self.path.clone(),
            dir: self.definitions_dir.clone(),
            tried: if self.tried.is_empty() {
                "no definition with an internal id (internalidhex/internalidstring) was found"
                    .into()
            } else {
                self.tried.join("; ")
            },
        })
    }
}

/// Checksum state of an image under its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct ChecksumState {
    /// The checksum module the definition names (`checksummodule`), even when
    /// unsupported.
    pub algorithm: Option<String>,
    /// The module, when it is one this plugin can verify and fix.
    pub module: Option<Module>,
    /// None: no module, unknown module, or the image does not fit it.
    pub valid: Option<bool>,
    /// Why the checksum is unknown or wrong, in a sentence for the agent.
    pub note: Option<String>,
}

/// Checksum state of `bytes` for `definition`.
pub fn checksum_state(definition: Option<&Definition>, bytes: &[u8]) -> ChecksumState {
    let Some(name) = definition.and_then(Definition::checksum_module) else {
        return ChecksumState {
            algorithm: None,
            module: None,
            valid: None,
            note: None,
        };
    };
    match Module::by_name(name) {
        Ok(module) => match module.validate(bytes) {
            Ok(valid) => ChecksumState {
                algorithm: Some(name.to_string()),
                module: Some(module),
                valid: Some(valid),
                note: module.disabled_note(bytes),
            },
            Err(e) => ChecksumState {
                algorithm: Some(name.to_string()),
                module: Some(module),
                valid: None,
                note: Some(e.to_string()),
            },
        },
        Err(e) => ChecksumState {
            algorithm: Some(name.to_string()),
            module: None,
            valid: None,
            note: Some(e.to_string()),
        },
    }
}

/// The plugin's long-lived state: parsed files, merged definitions, ROMs.
#[derive(Default)]
pub struct Explorer {
    files: HashMap<PathBuf, CachedFile>,
    definitions: HashMap<PathBuf, CachedDefinition>,
    roms: HashMap<PathBuf, CachedRom>,
    listing: Option<Listing>,
}

/// The last walk of the definitions directory.
struct Listing {
    dir: PathBuf,
    at: std::time::Instant,
    files: Vec<(PathBuf, Stamp)>,
}

/// How long a walk of the definitions directory is reused. Inside the
/// sandbox every directory read and stat is a host call, so re-walking a
/// large definitions tree on each call dominated a warm `read_table`. The
/// listed files are still re-stamped on every call, so an edited definition
/// is seen at once; a file added or removed is seen within this time.
const LISTING_TTL: std::time::Duration = std::time::Duration::from_secs(1);

const MAX_DEPTH: usize = 16;
const MAX_CACHED_ROMS: usize = 8;
/// ROM images bigger than this are not calibration images (largest ECUs
/// in ECUFlash are 4 MiB); refuse rather than exhaust the memory cap.
const MAX_ROM: u64 = 16 << 20;

impl Explorer {
    /// An explorer with empty caches.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ROM images cached so far (at most 8), sorted: what completion of
    /// table names and categories draws on.
    pub fn cached_roms(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.roms.keys().cloned().collect();
        paths.sort();
        paths
    }

    /// Loads `rom` (cached by mtime) and matches it against the definitions in `dir`.
    pub fn open(&mut self, dir: &Path, rom: &Path) -> Result<OpenedRom, Error> {
        self.open_with(dir, rom, false, false)
    }

    /// Like [`open`](Self::open) but walks the definitions directory again
    /// whatever the age of the last walk: a patch calls this before taking
    /// the ROM's lock, so the walk is not done while the lock is held.
    pub fn open_rescanned(&mut self, dir: &Path, rom: &Path) -> Result<OpenedRom, Error> {
        self.open_with(dir, rom, false, true)
    }

    /// Like [`open`](Self::open) but always re-reads the ROM: a patch must
    /// start from the bytes on disk, never from a cache entry whose stamp
    /// happens to match after an outside edit (coarse mtimes).
    pub fn open_fresh(&mut self, dir: &Path, rom: &Path) -> Result<OpenedRom, Error> {
        self.open_with(dir, rom, true, false)
    }

    /// The `*.xml` files under `dir` with fresh stamps, walked again when
    /// `fresh` (before a patch) or when the last walk is older than [`LISTING_TTL`].
    fn listing(&mut self, dir: &Path, fresh: bool) -> Result<Vec<(PathBuf, Stamp)>, Error> {
        if !fresh
            && let Some(l) = &self.listing
            && l.dir == dir
            && l.at.elapsed() < LISTING_TTL
        {
            return Ok(l
                .files
                .iter()
                .filter_map(|(path, _)| {
                    fs::metadata(path)
                        .ok()
                        .map(|m| (path.clone(), Stamp::of(&m)))
                })
                .collect());
        }
        let files = scan_dir(dir)?;
        self.listing = Some(Listing {
            dir: dir.to_owned(),
            at: std::time::Instant::now(),
            files: files.clone(),
        });
        Ok(files)
    }

    fn open_with(
        &mut self,
        dir: &Path,
        rom: &Path,
        fresh_rom: bool,
        fresh_listing: bool,
    ) -> Result<OpenedRom, Error> {
        if fresh_rom {
            self.roms.remove(rom);
        }
        let file = self.load_rom(rom)?;
        let (bytes, srf) = match crate::image::split_srf(rom, &file)
            .map_err(|e| Error::rom_read(rom.into(), io::Error::other(e)))?
        {
            None => (file, None),
            Some((start, len)) => (
                Arc::new(file[start..start + len].to_vec()),
                Some(crate::image::Srf {
                    head: file[..start].to_vec(),
                    tail: file[start + len..].to_vec(),
                }),
            ),
        };
        let files = self.listing(dir, fresh_listing)?;
        self.refresh(&files);
        let mut matches = Vec::new();
        let mut tried = Vec::new();
        for (path, _) in &files {
            let Some(CachedFile { romid: Ok(id), .. }) = self.files.get(path) else {
                continue;
            };
            let base = crate::image::base_for(id.field("memmodel"), bytes.len());
            if let Some(result) = match_id(id, &bytes, base) {
                let label = id.xmlid.clone().unwrap_or_else(|| file_label(path));
                match result {
                    Ok(()) => matches.push(path.clone()),
                    Err(found) => tried.push(format!("{label} ({found})")),
                }
            }
        }
        let mut warnings = Vec::new();
        if matches.is_empty() {
            // Say why a folder of RomRaider files matches nothing.
            let romraider: Vec<String> = files
                .iter()
                .filter(|(p, _)| {
                    matches!(self.files.get(p), Some(CachedFile { romid: Err(e), .. })
                        if e == crate::xml::ROMRAIDER)
                })
                .map(|(p, _)| file_label(p))
                .collect();
            if let Some(first) = romraider.first() {
                warnings.push(format!(
                    "{} file(s) in the definitions path were skipped ({first}{}): {}",
                    romraider.len(),
                    if romraider.len() > 1 { ", …" } else { "" },
                    crate::xml::ROMRAIDER
                ));
            }
        }
        let definition = match matches.len() {
            0 => None,
            _ => {
                let mut resolved = Vec::new();
                for path in &matches {
                    resolved.push(self.definition(dir, &files, path)?);
                }
                // A definition included by another match is the less specific one.
                let keep: Vec<&Arc<Definition>> = resolved
                    .iter()
                    .filter(|d| {
                        let id = d.romid.xmlid.as_deref();
                        !resolved.iter().any(|o| {
                            !Arc::ptr_eq(o, d)
                                && o.chain[..o.chain.len() - 1]
                                    .iter()
                                    .any(|c| Some(c.as_str()) == id)
                        })
                    })
                    .collect();
                if keep.len() > 1 {
                    warnings.push(format!(
                        "{} definitions match this ROM ({}); using {}",
                        keep.len(),
                        keep.iter()
                            .map(|d| d.file.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        keep[0].file.display()
                    ));
                }
                keep.first().map(|d| (*d).clone())
            }
        };
        let layout = crate::image::Layout {
            base: crate::image::base_for(
                definition.as_ref().and_then(|d| d.memmodel()),
                bytes.len(),
            ),
            srf,
        };
        let bytes = if layout.base > 0 {
            Arc::new(layout.view(&bytes))
        } else {
            bytes
        };
        Ok(OpenedRom {
            path: rom.to_path_buf(),
            bytes,
            layout,
            definition,
            tried,
            warnings,
            definitions_dir: dir.to_path_buf(),
        })
    }

    fn cache_rom(&mut self, path: &Path, stamp: Stamp, bytes: Arc<Vec<u8>>) {
        // Images are up to a few MiB: keep a handful, not every ROM ever seen.
        if self.roms.len() >= MAX_CACHED_ROMS && !self.roms.contains_key(path) {
            self.roms.clear();
        }
        self.roms
            .insert(path.to_path_buf(), CachedRom { stamp, bytes });
    }

    fn load_rom(&mut self, path: &Path) -> Result<Arc<Vec<u8>>, Error> {
        let meta = fs::metadata(path).map_err(|e| Error::rom_read(path.into(), e))?;
        if !meta.is_file() {
            return Err(Error::rom_read(
                path.into(),
                io::Error::other("not a regular file"),
            ));
        }
        if meta.len() > MAX_ROM {
            return Err(Error::rom_read(
                path.into(),
                io::Error::other(format!(
                    "{} bytes is larger than any ECU image (limit {MAX_ROM})",
                    meta.len()
                )),
            ));
        }
        let mut stamp = Stamp::of(&meta);
        if let Some(c) = self.roms.get(path).filter(|c| c.stamp == stamp) {
            return Ok(c.bytes.clone());
        }
        // A patch (from any process) rewrites the ROM's own inode, to keep
        // its mode, while a copy of the old image stands under the name: a
        // read that overlapped the rewrite shows as a changed stamp, and is
        // done again, after a pause that grows (a rewrite takes milliseconds,
        // but other processes may patch back to back), for up to 2 s.
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(1);
        while start.elapsed() < std::time::Duration::from_secs(2) {
            let bytes = fs::read(path).map_err(|e| Error::rom_read(path.into(), e))?;
            let after = fs::metadata(path)
                .map(|m| Stamp::of(&m))
                .map_err(|e| Error::rom_read(path.into(), e))?;
            if after == stamp && bytes.len() as u64 == after.len {
                let bytes = Arc::new(bytes);
                self.cache_rom(path, stamp, bytes.clone());
                return Ok(bytes);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(32));
            stamp = fs::metadata(path)
                .map(|m| Stamp::of(&m))
                .map_err(|e| Error::rom_read(path.into(), e))?;
        }
        Err(Error::rom_read(
            path.into(),
            io::Error::other(
                "it kept changing while being read (is something writing it?); try again",
            ),
        ))
    }

    /// Replaces the ROM (whose lock the caller took with [`lock_rom`]
    /// before reading it) and refreshes the cache.
    pub fn write_rom(
        &mut self,
        path: &Path,
        bytes: Vec<u8>,
        lock: &mut FileLock,
    ) -> Result<Arc<Vec<u8>>, Error> {
        write_locked(path, &bytes, lock).map_err(|message| Error::Write {
            path: path.into(),
            message,
        })?;
        let bytes = Arc::new(bytes);
        match fs::metadata(path) {
            Ok(meta) => self.cache_rom(path, Stamp::of(&meta), bytes.clone()),
            Err(_) => {
                self.roms.remove(path);
            }
        }
        Ok(bytes)
    }

    /// Updates the per-file romid cache for the files now in the directory.
    fn refresh(&mut self, files: &[(PathBuf, Stamp)]) {
        for (path, stamp) in files {
            if self.files.get(path).is_some_and(|c| c.stamp == *stamp) {
                continue;
            }
            let romid = read_romid(path);
            self.files.insert(
                path.clone(),
                CachedFile {
                    stamp: *stamp,
                    romid,
                    full: None,
                },
            );
        }
    }

    fn full(&mut self, path: &Path) -> Result<Arc<RawDefinition>, Error> {
        let entry = self.files.get_mut(path).ok_or_else(|| Error::Definition {
            file: path.into(),
            message: "file disappeared from the definitions directory".into(),
        })?;
        if entry.full.is_none() {
            entry.full = Some(
                fs::read_to_string(path)
                    .map_err(|e| e.to_string())
                    .and_then(|t| parse_definition(&t))
                    .map(Arc::new),
            );
        }
        match entry.full.as_ref() {
            Some(Ok(raw)) => Ok(raw.clone()),
            Some(Err(message)) => Err(Error::Definition {
                file: path.into(),
                message: format!("not a readable ECUFlash XML file: {message}"),
            }),
            None => unreachable!(),
        }
    }

    /// The merged definition rooted at `leaf`, cached while no file of its
    /// chain changes.
    fn definition(
        &mut self,
        dir: &Path,
        files: &[(PathBuf, Stamp)],
        leaf: &Path,
    ) -> Result<Arc<Definition>, Error> {
        let stamps: HashMap<&Path, Stamp> = files.iter().map(|(p, s)| (p.as_path(), *s)).collect();
        if let Some(cached) = self.definitions.get(leaf)
            && cached
                .chain
                .iter()
                .all(|(p, s)| stamps.get(p.as_path()) == Some(s))
        {
            return Ok(cached.definition.clone());
        }
        // Index every file by xmlid (and by file stem as a fallback).
        let mut by_id: HashMap<String, PathBuf> = HashMap::new();
        for (path, _) in files {
            if let Some(CachedFile { romid: Ok(id), .. }) = self.files.get(path)
                && let Some(x) = &id.xmlid
            {
                by_id.entry(x.clone()).or_insert_with(|| path.clone());
            }
        }
        for (path, _) in files {
            by_id
                .entry(file_label(path))
                .or_insert_with(|| path.clone());
        }
        let mut order: Vec<PathBuf> = Vec::new();
        let mut stack: Vec<PathBuf> = Vec::new();
        self.visit(dir, leaf, &by_id, &mut order, &mut stack)?;
        let raws: Vec<(PathBuf, Arc<RawDefinition>)> = order
            .iter()
            .map(|p| Ok((p.clone(), self.full(p)?)))
            .collect::<Result<_, Error>>()?;
        let chain_files: Vec<ChainFile<'_>> = raws
            .iter()
            .map(|(p, raw)| ChainFile {
                label: raw.romid.xmlid.clone().unwrap_or_else(|| file_label(p)),
                raw,
            })
            .collect();
        let definition = Arc::new(merge(leaf.to_path_buf(), &chain_files));
        self.definitions.insert(
            leaf.to_path_buf(),
            CachedDefinition {
                chain: order
                    .iter()
                    .filter_map(|p| stamps.get(p.as_path()).map(|s| (p.clone(), *s)))
                    .collect(),
                definition: definition.clone(),
            },
        );
        Ok(definition)
    }

    /// Depth-first include resolution: parents first, each file once.
    fn visit(
        &mut self,
        dir: &Path,
        path: &Path,
        by_id: &HashMap<String, PathBuf>,
        order: &mut Vec<PathBuf>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), Error> {
        if order.iter().any(|p| p == path) {
            return Ok(());
        }
        if stack.iter().any(|p| p == path) {
            let mut cycle: Vec<String> = stack.iter().map(|p| file_label(p)).collect();
            cycle.push(file_label(path));
            return Err(Error::Definition {
                file: path.into(),
                message: format!("include cycle: {}", cycle.join(" → ")),
            });
        }
        let raw = self.full(path)?;
        stack.push(path.to_path_buf());
        for include in &raw.includes {
            let target = by_id.get(include).ok_or_else(|| Error::Definition {
                file: path.into(),
                message: format!(
                    "<include>{include}</include> not found: no file under {} has <xmlid>{include}</xmlid>; add the base definition to the directory",
                    dir.display()
                ),
            })?;
            self.visit(dir, &target.clone(), by_id, order, stack)?;
        }
        stack.pop();
        order.push(path.to_path_buf());
        Ok(())
    }
}

/// Bytes read first when looking for a file's `<romid>`: it sits in the
/// first few hundred bytes of real definitions, and reading all of a
/// 333-file tree (7.5 MB, every read a host call in the sandbox) was most of
/// the first rom_info.
const ROMID_HEAD: usize = 16 * 1024;

/// A definition's `<romid>` from the head of the file, reading the rest
/// only when the head does not hold it (base files without one, long
/// comments before it).
fn read_romid(path: &Path) -> Result<RomId, String> {
    use std::io::Read;
    let mut file = fs::File::open(path).map_err(|e| e.to_string())?;
    let mut head = Vec::with_capacity(ROMID_HEAD);
    (&mut file)
        .take(ROMID_HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| e.to_string())?;
    let end = b"</romid>";
    if let Some(at) = head.windows(end.len()).position(|w| w == end)
        && let Ok(text) = std::str::from_utf8(&head[..at + end.len()])
    {
        return parse_romid_only(text);
    }
    file.read_to_end(&mut head).map_err(|e| e.to_string())?;
    let text = String::from_utf8(head).map_err(|e| e.to_string())?;
    parse_romid_only(&text)
}

fn file_label(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Compares a definition's internal id with the ROM. None when the
/// definition has no id (base files); Err with what the ROM holds instead.
/// `base` is the ECU address of `rom[0]` (H8/539F reads start at 0x10000).
fn match_id(id: &RomId, rom: &[u8], base: usize) -> Option<Result<(), String>> {
    let address = parse_hex(id.internal_id_address.as_deref()?)? as usize;
    let Some(offset) = address.checked_sub(base) else {
        return Some(Err(format!(
            "id address 0x{address:X} is below the image start 0x{base:X}"
        )));
    };
    let (expected, shown_as_text) = if let Some(hex) = &id.internal_id_hex {
        (parse_hex_bytes(hex)?, false)
    } else {
        (id.internal_id_string.as_ref()?.as_bytes().to_vec(), true)
    };
    let found = rom.get(offset..offset + expected.len());
    Some(match found {
        Some(f) if f == expected.as_slice() => Ok(()),
        Some(f) => Err(if shown_as_text {
            format!(
                "expects \"{}\" at 0x{address:X}, ROM has \"{}\"",
                String::from_utf8_lossy(&expected),
                String::from_utf8_lossy(f)
            )
        } else {
            format!(
                "expects {} at 0x{address:X}, ROM has {}",
                crate::scaling::hex_upper(&expected),
                crate::scaling::hex_upper(f)
            )
        }),
        None => Err(format!(
            "id address 0x{address:X} is past the end of the {}-byte ROM",
            rom.len()
        )),
    })
}

/// Every `*.xml` under `dir`, recursively, sorted by path.
pub fn scan_dir(dir: &Path) -> Result<Vec<(PathBuf, Stamp)>, Error> {
    let mut out = Vec::new();
    let top = plugin_kit::paths::read_dir_entries(dir).map_err(|source| Error::DefinitionsDir {
        path: dir.into(),
        source,
    })?;
    walk(top, 0, &mut out);
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn walk(entries: Vec<fs::DirEntry>, depth: usize, out: &mut Vec<(PathBuf, Stamp)>) {
    for entry in entries {
        let path = entry.path();
        let is_xml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"));
        // The listing already tells an entry's type; stat only what can
        // matter (each stat is a host call inside the sandbox, and a
        // definitions folder often holds many ROM images).
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if !(is_xml || file_type.is_dir() || file_type.is_symlink()) {
            continue;
        }
        // Follow symlinks (metadata, not symlink_metadata); depth bounds loops.
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_DEPTH
                && let Ok(sub) = plugin_kit::paths::read_dir_entries(&path)
            {
                walk(sub, depth + 1, out);
            }
        } else if is_xml {
            out.push((path, Stamp::of(&meta)));
        }
    }
}

/// The ROM a patch writes, with symlinks followed (a link inside the grants
/// is patched in its target, never replaced by a regular file), locked
/// against every other writer of it, in this process or another, until the
/// lock is dropped. Take it before reading the bytes the patch starts from.
pub fn lock_rom(path: &Path) -> Result<(PathBuf, FileLock), Error> {
    let target = rom_target(path)?;
    let lock = FileLock::acquire(&target, plugin_kit::safe_write::WAIT).map_err(|message| {
        Error::Write {
            path: plugin_kit::paths::shown(path).into(),
            message,
        }
    })?;
    Ok((target, lock))
}

/// The file a patch of `path` writes: symlinks followed, or refused with
/// the reason (a link the sandbox does not follow), and the file readable.
/// patch_table checks this before its confirmation question too, so the
/// user is never asked about a patch that cannot be written.
pub fn rom_target(path: &Path) -> Result<PathBuf, Error> {
    // Paths in these messages are clipped: the argument may be 100 KB.
    let target = plugin_kit::safe_write::resolve_links(path).map_err(|message| Error::Write {
        path: plugin_kit::paths::shown(path).into(),
        message,
    })?;
    // A ROM that cannot be read is reported as such (as a read tool would),
    // before any lock file is made beside it.
    fs::metadata(&target).map_err(|e| Error::rom_read(target.clone(), e))?;
    Ok(target)
}

/// Locks the ROM, replaces its content and unlocks it: for writers that do
/// not read it first (a whole prepared image).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let target = plugin_kit::safe_write::resolve_links(path)?;
    let mut lock = FileLock::acquire(&target, plugin_kit::safe_write::WAIT)?;
    write_locked(&target, bytes, &mut lock)
}

/// Replaces the ROM's content while `lock` is held: a crash leaves either
/// the old or the new image, never a torn one, and the file keeps its
/// inode, so its mode and owner (see `plugin_kit::safe_write`).
pub fn write_locked(path: &Path, bytes: &[u8], lock: &mut FileLock) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    // WASI file stats carry no permission bits (every file reads as
    // read-only), so only a native build can honour a read-only file; in the
    // sandbox, the directory grant decides.
    if cfg!(not(target_os = "wasi")) && meta.permissions().readonly() {
        return Err("the ROM file is read-only; make it writable or patch a writable copy".into());
    }
    plugin_kit::safe_write::replace(path, bytes, lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(addr: &str, hex: Option<&str>, text: Option<&str>) -> RomId {
        RomId {
            xmlid: Some("x".into()),
            internal_id_address: Some(addr.into()),
            internal_id_hex: hex.map(str::to_string),
            internal_id_string: text.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn romids_are_read_from_the_head_or_the_whole_file() {
        let dir = std::env::temp_dir().join(format!("ecu-romid-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let short = dir.join("a.xml");
        fs::write(
            &short,
            "<rom><romid><xmlid>A2UG000N</xmlid></romid><table name=\"t\"/></rom>",
        )
        .unwrap();
        assert_eq!(
            read_romid(&short).unwrap().xmlid.as_deref(),
            Some("A2UG000N")
        );
        // A romid past the head (a long comment first) is still found.
        let long = dir.join("b.xml");
        let pad = "x".repeat(ROMID_HEAD);
        fs::write(
            &long,
            format!("<rom><!-- {pad} --><romid><xmlid>B</xmlid></romid></rom>"),
        )
        .unwrap();
        assert_eq!(read_romid(&long).unwrap().xmlid.as_deref(), Some("B"));
        let rr = dir.join("rr.xml");
        fs::write(
            &rr,
            "<roms><rom><romid><xmlid>C</xmlid></romid></rom></roms>",
        )
        .unwrap();
        assert!(read_romid(&rr).unwrap_err().contains("RomRaider"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn ids_match_by_hex_or_ascii() {
        let mut rom = vec![0u8; 0x3000];
        rom[0x2004..0x200C].copy_from_slice(b"DZ1E402B");
        assert_eq!(
            match_id(&id("2004", None, Some("DZ1E402B")), &rom, 0),
            Some(Ok(()))
        );
        assert_eq!(
            match_id(&id("2004", Some("445A3145"), None), &rom, 0),
            Some(Ok(()))
        );
        let miss = match_id(&id("2004", None, Some("DZ1E402C")), &rom, 0)
            .unwrap()
            .unwrap_err();
        assert!(miss.contains("ROM has \"DZ1E402B\""), "{miss}");
        let past = match_id(&id("2ffe", Some("11223344"), None), &rom, 0)
            .unwrap()
            .unwrap_err();
        assert!(past.contains("past the end"), "{past}");
        // Base files (no id) are never candidates.
        assert_eq!(match_id(&id("0", None, None), &rom, 0), None);
        // H8/539F: ECU address 0x1021A is file offset 0x21A.
        let mut h8 = vec![0u8; 0x2_0000];
        h8[0x21A..0x21E].copy_from_slice(&[0x22, 0x49, 0x00, 0x05]);
        assert_eq!(
            match_id(&id("1021a", Some("22490005"), None), &h8, 0x1_0000),
            Some(Ok(()))
        );
        assert!(
            match_id(&id("21a", Some("22490005"), None), &h8, 0x1_0000)
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn locked_write_replaces_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("ecu-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let rom = dir.join("r.bin");
        fs::write(&rom, b"old").unwrap();
        fs::write(dir.join(".r.bin.dead.tmp"), b"torn").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("r.bin", dir.join("link.bin")).unwrap();
        #[cfg(not(unix))]
        fs::copy(&rom, dir.join("link.bin")).unwrap();
        let (target, mut lock) = lock_rom(&dir.join("link.bin")).unwrap();
        #[cfg(unix)]
        assert_eq!(target, rom);
        write_locked(&target, b"new image", &mut lock).unwrap();
        drop(lock);
        assert_eq!(fs::read(&target).unwrap(), b"new image");
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["link.bin", "r.bin"]);
        #[cfg(unix)]
        assert!(
            fs::symlink_metadata(dir.join("link.bin"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
