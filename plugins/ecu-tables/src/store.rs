//! Finding definitions, matching ROMs and caching both by path and mtime.
//!
//! Each call re-lists the definitions directory and re-stats the ROM (cheap),
//! but re-reads and re-parses only files whose size or mtime changed, so a
//! warm call costs a few `stat`s plus the table decode.

use crate::checksum::{Checksum, Module};
use crate::definition::{Definition, FamilyChecksum};
use crate::error::Error;
pub use crate::family::Stamp;
use crate::family::{Family, Listed, SNIFF_BYTES, Served, read_head, some_names};
use plugin_kit::safe_write::FileLock;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct CachedRom {
    stamp: Stamp,
    bytes: Arc<Vec<u8>>,
    /// The file read as Intel HEX or S-records (and the image they place),
    /// once it was asked for: none inside when it is a binary image.
    records: Option<Option<Decoded>>,
    /// The checksum verdict last found for the image these bytes hold.
    checksum: Option<Known>,
}

/// A checksum verdict remembered with a cached ROM, so that an image
/// checked (or fixed and checked) a moment ago is not sent to its family
/// again: a patch would otherwise verify the 1 MiB image it wrote last
/// time before patching it again.
#[derive(Debug, Clone, PartialEq)]
struct Known {
    /// What the verdict holds for: the checksum's name, the definition
    /// file, and the image's base address (which decides the image).
    algorithm: String,
    definition: PathBuf,
    base: usize,
    valid: bool,
    note: Option<String>,
}

/// A record file's records and the image they place.
type Decoded = (Arc<crate::records::Records>, Arc<Vec<u8>>);

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
    /// The family (format) of `definition`: `ECUFlash`, `RomRaider`.
    pub format: Option<String>,
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
#[derive(Debug, Clone)]
pub struct ChecksumState {
    /// The checksum algorithm the definition names (`checksummodule`), even
    /// when unsupported.
    pub algorithm: Option<String>,
    /// The algorithm, when it is one this plugin (or the definition's
    /// family) can verify and fix.
    pub module: Option<Arc<dyn Checksum>>,
    /// None: no module, unknown module, or the image does not fit it.
    pub valid: Option<bool>,
    /// Why the checksum is unknown or wrong, in a sentence for the agent.
    pub note: Option<String>,
}

/// Checksum state of `bytes` for `definition`.
pub fn checksum_state(definition: Option<&Definition>, bytes: &[u8]) -> ChecksumState {
    checksum_state_known(definition, bytes, None)
}

/// [`checksum_state`], or `known` when the ROM's verdict for this checksum
/// is remembered.
fn checksum_state_known(
    definition: Option<&Definition>,
    bytes: &[u8],
    known: Option<&Known>,
) -> ChecksumState {
    let unknown = |algorithm: Option<String>, note: Option<String>| ChecksumState {
        algorithm,
        module: None,
        valid: None,
        note,
    };
    let module: Arc<dyn Checksum> = match definition.map(|d| &d.checksum) {
        None => return unknown(None, None),
        Some(FamilyChecksum::Kept(module)) => module.clone(),
        Some(FamilyChecksum::Unknown(why)) => {
            // Named as the definition names it (`checksummodule`), when it
            // names one the family does not keep.
            let named = definition.and_then(Definition::checksum_module);
            return unknown(
                Some(named.unwrap_or("unknown").to_owned()),
                Some(why.clone()),
            );
        }
        Some(FamilyChecksum::Named) => {
            let Some(name) = definition.and_then(Definition::checksum_module) else {
                return unknown(None, None);
            };
            match Module::by_name(name) {
                Ok(module) => Arc::new(module),
                Err(e) => return unknown(Some(name.to_string()), Some(e.to_string())),
            }
        }
    };
    if let Some(k) = known.filter(|k| k.algorithm == module.name()) {
        return ChecksumState {
            algorithm: Some(k.algorithm.clone()),
            note: k.note.clone(),
            module: Some(module),
            valid: Some(k.valid),
        };
    }
    match module.validate(bytes) {
        Ok(valid) => ChecksumState {
            algorithm: Some(module.name()),
            note: module.disabled_note(bytes),
            module: Some(module),
            valid: Some(valid),
        },
        Err(e) => ChecksumState {
            algorithm: Some(module.name()),
            module: Some(module),
            valid: None,
            note: Some(e),
        },
    }
}

/// The plugin's long-lived state: the definition families (each caching
/// its own parsed files), which family each definitions file is, ROMs.
#[derive(Default)]
pub struct Explorer {
    /// The families linked in natively (tests, benchmarks), then those
    /// other plugins serve.
    families: Vec<Box<dyn Family>>,
    /// How many of `families` are linked in.
    linked: usize,
    /// Where families other plugins serve are found, in a component.
    served: Option<Box<dyn Served>>,
    /// `(plugin, generation)` of the served families in `families`.
    serving: Vec<(String, u64)>,
    /// Served families that could not be asked, and why.
    family_problems: Vec<String>,
    /// The definition this call asked for by name (the tools' `definition`
    /// argument), when several match a ROM.
    choice: Option<String>,
    /// Per definitions file: its stamp when sniffed, and the index in
    /// `families` of the family that claims it (none: no family does).
    claimed: HashMap<PathBuf, (Stamp, Option<usize>)>,
    /// Definitions files of a known format that no loaded family claims (a
    /// RomRaider `.xml` while the RomRaider family's component is not
    /// loaded), by format.
    foreign: HashMap<PathBuf, &'static str>,
    roms: HashMap<PathBuf, CachedRom>,
    listing: Option<Listing>,
    /// The definitions folder whose kept index ([`crate::folder_index`]) was
    /// read, with the families served then: read once per both.
    recalled: Option<(PathBuf, Vec<(String, u64)>)>,
    /// Whether a file was sniffed since the index was last kept.
    unkept: bool,
    /// Files whose judgement this run is not to be kept: their head could
    /// not be read, a family could not be asked about them, or they were
    /// read within [`crate::folder_index::SETTLED`] of their mtime (a
    /// coarse clock could give a rewrite the same stamp).
    unsure: std::collections::HashSet<PathBuf>,
}

/// The last walk of the definitions directory.
struct Listing {
    dir: PathBuf,
    extensions: Vec<String>,
    unread: Vec<(PathBuf, &'static str)>,
    archives: Vec<PathBuf>,
    at: std::time::Instant,
    files: Vec<PathBuf>,
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
    /// An explorer that knows no family: it reads no definitions until
    /// families are served or linked.
    pub fn new() -> Self {
        Self::default()
    }

    /// An explorer that asks the families `served` finds (in the
    /// component: the plugins serving `benchtop:ecu-family`).
    pub fn with_served(served: Box<dyn Served>) -> Self {
        Self {
            served: Some(served),
            ..Self::default()
        }
    }

    /// An explorer that asks `formats`, linked in natively (the family
    /// crates, in tests and benchmarks), in this order.
    pub fn with_formats(formats: Vec<Arc<dyn ecu_model::family::Format>>) -> Self {
        let families: Vec<Box<dyn Family>> = formats
            .into_iter()
            .map(|format| {
                let family = crate::family::format::FormatFamily::new(format)
                    .expect("a linked format names itself and its extensions");
                Box::new(family) as Box<dyn Family>
            })
            .collect();
        Self {
            linked: families.len(),
            families,
            ..Self::default()
        }
    }

    /// Makes the next opens use the definition named `definition` (an
    /// xmlid or a file name, as rom_info's note names them) when several
    /// match a ROM; none restores the most specific match.
    pub fn choose(&mut self, definition: Option<String>) {
        self.choice = definition.filter(|d| !d.trim().is_empty());
    }

    /// Brings the served families up to date with the plugins loaded now:
    /// a family added, removed or loaded again (hot swap) since the last
    /// call replaces the ones known, and what they claimed is sniffed again.
    fn refresh_families(&mut self) {
        let Some(served) = &self.served else {
            return;
        };
        let now = served.providers();
        if now == self.serving {
            return;
        }
        self.families.truncate(self.linked);
        self.family_problems.clear();
        for (plugin, code) in &now {
            match served.family(plugin, *code) {
                Ok(family) => self.families.push(family),
                Err(e) => self.family_problems.push(format!(
                    "the definition family served by plugin `{plugin}` cannot be used: {e}"
                )),
            }
        }
        self.serving = now;
        self.claimed.clear();
        self.foreign.clear();
        // Another family may judge the same image otherwise.
        for rom in self.roms.values_mut() {
            rom.checksum = None;
        }
    }

    /// Extensions of the definition files some family reads, sorted.
    fn extensions(&self) -> Vec<String> {
        let mut all: Vec<String> = self.families.iter().flat_map(|f| f.extensions()).collect();
        all.sort();
        all.dedup();
        all
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

    /// The definition files under `dir`, walked again when `fresh`
    /// (before a patch) or when the last walk is older than [`LISTING_TTL`].
    /// Not stamped here: [`Self::claim`] stamps each as it opens it.
    fn listing(&mut self, dir: &Path, fresh: bool) -> Result<Vec<PathBuf>, Error> {
        let extensions = self.extensions();
        if !fresh
            && let Some(l) = &self.listing
            && l.dir == dir
            && l.extensions == extensions
            && l.at.elapsed() < LISTING_TTL
        {
            return Ok(l.files.clone());
        }
        let Scan {
            files,
            unread,
            archives,
        } = scan(dir, &extensions)?;
        self.listing = Some(Listing {
            dir: dir.to_owned(),
            extensions,
            unread,
            archives,
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
        let previous = if fresh_rom {
            self.roms.remove(rom)
        } else {
            None
        };
        let file = self.load_rom(rom)?;
        // Read again, the same bytes: what was found of them still holds.
        if let Some(previous) = previous
            && plugin_kit::bytes::same(&previous.bytes, &file)
            && let Some(entry) = self.roms.get_mut(rom)
        {
            entry.checksum = previous.checksum;
        }
        refuse_definition_as_rom(rom, &file)?;
        let (records, placed) = self.records_of(rom, &file)?.unzip();
        let (bytes, srf) = match crate::image::split_srf(rom, &file)
            .map_err(|e| Error::rom_read(rom.into(), io::Error::other(e)))?
        {
            None => (placed.unwrap_or(file), None),
            Some((start, len)) => (
                Arc::new(file[start..start + len].to_vec()),
                Some(crate::image::Srf {
                    head: file[..start].to_vec(),
                    tail: file[start + len..].to_vec(),
                }),
            ),
        };
        self.refresh_families();
        let files = self.listing(dir, fresh_listing)?;
        self.recall(dir);
        let mut matches: Vec<(String, Arc<Definition>)> = Vec::new();
        let mut by_size: Vec<(String, Arc<Definition>)> = Vec::new();
        let mut tried = Vec::new();
        for (index, own) in self.claim(&files).into_iter().enumerate() {
            let family = &mut self.families[index];
            if own.is_empty() {
                continue;
            }
            let found = family.recognize(dir, &own, &bytes)?;
            let name = family.name().to_owned();
            matches.extend(found.matches.into_iter().map(|d| (name.clone(), d)));
            by_size.extend(found.by_size.into_iter().map(|d| (name.clone(), d)));
            tried.extend(found.tried);
        }
        self.keep(dir);
        let mut warnings = self.family_problems.clone();
        if matches.is_empty() && by_size.is_empty() {
            let mut unread: Vec<(PathBuf, &str)> = self
                .foreign
                .iter()
                .map(|(path, format)| (path.clone(), *format))
                .collect();
            unread.sort();
            if let Some(l) = &self.listing {
                unread.extend(l.unread.iter().cloned());
            }
            if !unread.is_empty() {
                warnings.push(unread_note(&unread));
            }
        }
        if matches.is_empty()
            && by_size.is_empty()
            && let Some(l) = &self.listing
            && !l.archives.is_empty()
        {
            warnings.push(archive_note(&l.archives));
        }
        // Size alone cannot tell one XDF of a folder from another: the one
        // whose file name shares the longest run of digits with the ROM's
        // (hw2801_V4_Basic.xdf for 211322002801J429.bin) comes first.
        by_size.sort_by_key(|(_, d)| std::cmp::Reverse(shared_digits(&d.file, rom).len()));
        if matches.is_empty()
            && let Some((family, d)) = by_size.first()
        {
            let shared = shared_digits(&d.file, rom);
            warnings.push(format!(
                "{} ({family}) was chosen by the image's size ({} bytes){}: its format carries no id to check, so make sure it describes this ROM",
                d.file.display(),
                bytes.len(),
                if shared.is_empty() {
                    " alone".to_owned()
                } else {
                    format!(" and the \"{shared}\" both file names hold")
                }
            ));
        }
        matches.extend(by_size);
        if let Some(wanted) = &self.choice {
            let Some(at) = matches.iter().position(|(_, d)| names(d, wanted)) else {
                return Err(Error::InvalidArgument(format!(
                    "definition `{}` does not match this ROM; {}",
                    plugin_kit::text::clip(wanted),
                    if matches.is_empty() {
                        "no definition does (see rom_info)".to_owned()
                    } else {
                        format!(
                            "pass one of {}, or leave definition out",
                            matches
                                .iter()
                                .map(|(_, d)| format!("\"{}\"", choice_name(d)))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                )));
            };
            let chosen = matches.remove(at);
            matches.insert(0, chosen);
        }
        if matches.len() > 1 {
            warnings.push(format!(
                "{} definitions match this ROM ({}); using {}{}",
                matches.len(),
                matches
                    .iter()
                    .map(|(family, d)| format!(
                        "\"{}\" in {} ({family})",
                        choice_name(d),
                        d.file.display()
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                choice_name(&matches[0].1),
                if self.choice.is_some() {
                    " as asked".to_owned()
                } else {
                    format!(
                        ", the most specific; pass definition: \"{}\" to use another",
                        choice_name(&matches[1].1)
                    )
                }
            ));
        }
        let (format, definition) = matches.into_iter().next().unzip();
        if let Some(d) = &definition {
            warnings.extend(d.notes.iter().cloned());
        }
        let layout = crate::image::Layout {
            base: crate::image::base_for(
                definition.as_ref().and_then(|d| d.memmodel()),
                bytes.len(),
            ),
            srf,
            records,
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
            format,
            tried,
            warnings,
            definitions_dir: dir.to_path_buf(),
        })
    }

    /// Where the folder index is kept, and this plugin's code, when one is
    /// kept at all: the host gives this plugin a cache directory and names
    /// its code, and every family is a served one, named by its code (a
    /// family linked in is not, nor one that could not be made, which
    /// would shift the families' indexes).
    fn index_place(&self) -> Option<(PathBuf, u64)> {
        if self.linked > 0 || self.families.len() != self.serving.len() {
            return None;
        }
        Some((
            plugin_kit::paths::cache_dir()?,
            plugin_kit::paths::own_code()?,
        ))
    }

    /// The served families' index of `dir`, kept by an earlier run, when
    /// it is for the families served now: what each file was found to be,
    /// used while its stamp holds ([`crate::folder_index`]). Read once per folder
    /// and set of families; nothing when the host keeps no cache for this
    /// plugin, or families are linked in (they are not named by code).
    fn recall(&mut self, dir: &Path) {
        let Some((cache, own)) = self.index_place() else {
            return;
        };
        if self
            .recalled
            .as_ref()
            .is_some_and(|(d, served)| d == dir && *served == self.serving)
        {
            return;
        }
        self.recalled = Some((dir.to_owned(), self.serving.clone()));
        let Some(kept) = crate::folder_index::FolderIndex::read(&cache, dir) else {
            return;
        };
        // Which family claims a file is this plugin's decision too.
        if kept.families != self.serving || kept.builder != own {
            return;
        }
        let mut identified = vec![Vec::new(); self.families.len()];
        for file in kept.files {
            if file.family.is_some_and(|i| i >= self.families.len()) {
                continue;
            }
            self.claimed
                .entry(file.path.clone())
                .or_insert((file.stamp, file.family));
            if let Some(format) = file.foreign {
                self.foreign.entry(file.path.clone()).or_insert(format);
            }
            if let (Some(i), Some(candidates)) = (file.family, file.candidates) {
                identified[i].push((file.path, file.stamp, candidates));
            }
        }
        for (family, files) in self.families.iter_mut().zip(identified) {
            family.recall(files);
        }
    }

    /// Keeps what is known of `dir`'s files for the next run, when a file
    /// was sniffed since it was last kept. Best effort: the index only
    /// saves the next run time.
    fn keep(&mut self, dir: &Path) {
        if !std::mem::take(&mut self.unkept) {
            return;
        }
        let Some((cache, own)) = self.index_place() else {
            return;
        };
        let identified: Vec<HashMap<PathBuf, _>> = self
            .families
            .iter()
            .map(|f| {
                f.identified()
                    .into_iter()
                    .map(|(path, stamp, candidates)| (path, (stamp, candidates)))
                    .collect()
            })
            .collect();
        let mut files: Vec<crate::folder_index::IndexedFile> = self
            .claimed
            .iter()
            .filter(|(path, _)| !self.unsure.contains(*path))
            .map(
                |(path, &(stamp, family))| crate::folder_index::IndexedFile {
                    path: path.clone(),
                    stamp,
                    family,
                    foreign: self.foreign.get(path).copied(),
                    // What a family found, never that it could not be asked
                    // or read (an error is asked again next run).
                    candidates: family
                        .and_then(|i| identified[i].get(path))
                        .filter(|(at, _)| *at == stamp)
                        .and_then(|(_, candidates)| candidates.as_ref().ok())
                        .map(|candidates| Ok(candidates.clone())),
                },
            )
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let kept = crate::folder_index::FolderIndex {
            dir: dir.to_owned(),
            builder: own,
            families: self.serving.clone(),
            files,
        };
        if let Err(e) = kept.write(&cache, std::time::SystemTime::now()) {
            eprintln!("ecu-tables: the definitions index was not kept: {e}");
        }
    }

    /// `files` split by the family that claims each (indexed as
    /// `families`), stamped now, sniffing only files new or changed since
    /// last time. A new file is stamped through the handle its head is
    /// read with: in the sandbox every stat and open is a host call, and a
    /// first walk of a 333-file tree spent a third of its time stating.
    fn claim(&mut self, files: &[PathBuf]) -> Vec<Vec<Listed>> {
        let mut own = vec![Vec::new(); self.families.len()];
        let extensions: Vec<Vec<String>> = self.families.iter().map(|f| f.extensions()).collect();
        // Taken once, before any read (in the sandbox the clock is a host
        // call): a file settled then is settled when it is read.
        let now = std::time::SystemTime::now();
        for path in files {
            let known = self.claimed.get(path).copied();
            let (stamp, head) = match known {
                Some(_) => match fs::metadata(path) {
                    Ok(meta) => (Stamp::of(&meta), None),
                    Err(_) => continue, // gone since the walk
                },
                None => match open_head(path, SNIFF_BYTES) {
                    Ok((stamp, head)) => (stamp, Some(Ok(head))),
                    Err(e) => match fs::metadata(path) {
                        Ok(meta) => (Stamp::of(&meta), Some(Err(e))),
                        Err(_) => continue,
                    },
                },
            };
            let (family, head) = match known {
                Some((seen, family)) if seen == stamp => (family, None),
                _ => {
                    let head = head.unwrap_or_else(|| read_head(path, SNIFF_BYTES));
                    // Unreadable: empty, which the family it would be
                    // (ECUFlash claims a file with no element) reports.
                    let readable = head.is_ok();
                    let head = head.unwrap_or_default();
                    // Only the families whose extension the file has are
                    // asked: a served family's answer is a call to another
                    // plugin, and a tree of 333 .xml files is no XDF's.
                    let extension = path
                        .extension()
                        .map(|e| e.to_string_lossy().to_ascii_lowercase());
                    let mut asked = true;
                    let family = (0..self.families.len()).find(|&i| {
                        extensions[i].iter().any(|x| Some(x) == extension.as_ref())
                            && self.families[i].claims(path, &head).unwrap_or_else(|| {
                                asked = false;
                                false
                            })
                    });
                    let settled = crate::folder_index::settled(&stamp, now);
                    if readable && asked && settled {
                        self.unsure.remove(path);
                    } else {
                        self.unsure.insert(path.clone());
                    }
                    self.claimed.insert(path.clone(), (stamp, family));
                    self.unkept = true;
                    match foreign_format(family, &head) {
                        Some(format) => self.foreign.insert(path.clone(), format),
                        None => self.foreign.remove(path),
                    };
                    (family, Some(head))
                }
            };
            if let Some(family) = family {
                own[family].push(Listed {
                    path: path.clone(),
                    stamp,
                    head,
                });
            }
        }
        // Forget files no longer listed, so the map stays the folder's size.
        if self.claimed.len() > files.len() {
            let listed: std::collections::HashSet<&PathBuf> = files.iter().collect();
            self.claimed.retain(|p, _| listed.contains(p));
            self.foreign.retain(|p, _| listed.contains(p));
            self.unsure.retain(|p| listed.contains(p));
        }
        own
    }

    /// `file` (the cached bytes of `rom`) read as records, decoded once per
    /// change of the file rather than on every call.
    fn records_of(&mut self, rom: &Path, file: &Arc<Vec<u8>>) -> Result<Option<Decoded>, Error> {
        let cached = self
            .roms
            .get_mut(rom)
            .filter(|c| Arc::ptr_eq(&c.bytes, file));
        if let Some(CachedRom {
            records: Some(decoded),
            ..
        }) = &cached
        {
            return Ok(decoded.clone());
        }
        let decoded = crate::records::parse(file)
            .map_err(|e| Error::rom_read(rom.into(), io::Error::other(e)))?
            .map(|(records, image)| (Arc::new(records), Arc::new(image)));
        if let Some(c) = cached {
            c.records = Some(decoded.clone());
        }
        Ok(decoded)
    }

    fn cache_rom(&mut self, path: &Path, stamp: Stamp, bytes: Arc<Vec<u8>>) {
        // Images are up to a few MiB: keep a handful, not every ROM ever seen.
        if self.roms.len() >= MAX_CACHED_ROMS && !self.roms.contains_key(path) {
            self.roms.clear();
        }
        self.roms.insert(
            path.to_path_buf(),
            CachedRom {
                stamp,
                bytes,
                records: None,
                checksum: None,
            },
        );
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
            let bytes =
                plugin_kit::file_io::read(path).map_err(|e| Error::rom_read(path.into(), e))?;
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

    /// The checksum state of `opened`'s image: the verdict its cached file
    /// carries for this checksum, definition and base when there is one,
    /// else asked of the checksum (and then remembered).
    pub fn checksum_of(&mut self, opened: &OpenedRom) -> ChecksumState {
        let Some(definition) = opened.definition.as_deref() else {
            return checksum_state(None, &opened.bytes);
        };
        let base = opened.layout.base;
        let known = self
            .roms
            .get(&opened.path)
            .and_then(|entry| entry.checksum.as_ref())
            .filter(|k| k.definition == definition.file && k.base == base);
        let state = checksum_state_known(Some(definition), &opened.bytes, known);
        self.remember_checksum(&opened.path, definition, base, &state);
        state
    }

    /// Remembers `state`, found for the image of `definition` at `base` in
    /// the ROM file `path` as now cached (after [`Self::write_rom`], the
    /// bytes written).
    pub fn remember_checksum(
        &mut self,
        path: &Path,
        definition: &Definition,
        base: usize,
        state: &ChecksumState,
    ) {
        let (Some(entry), Some(algorithm), Some(valid)) =
            (self.roms.get_mut(path), &state.algorithm, state.valid)
        else {
            return;
        };
        if state.module.is_none() {
            return;
        }
        entry.checksum = Some(Known {
            algorithm: algorithm.clone(),
            definition: definition.file.clone(),
            base,
            valid,
            note: state.note.clone(),
        });
    }

    /// Replaces the ROM (whose lock the caller took with [`lock_rom`]
    /// before reading it) and refreshes the cache.
    pub fn write_rom(
        &mut self,
        path: &Path,
        bytes: Vec<u8>,
        lock: &mut FileLock,
    ) -> Result<Arc<Vec<u8>>, Error> {
        // The file as read under this lock (a patch opens it fresh once the
        // lock is held), with the stamp it had.
        let read = self.roms.get(path).map(|c| (c.bytes.clone(), c.stamp));
        let read = read
            .as_ref()
            .map(|(bytes, stamp)| (bytes.as_slice(), *stamp));
        write_locked(path, read, &bytes, lock).map_err(|message| Error::Write {
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
}

/// Every `*.xml` under `dir`, recursively, sorted by path.
pub fn scan_dir(dir: &Path) -> Result<Vec<(PathBuf, Stamp)>, Error> {
    scan_dir_for(dir, &["xml".to_owned()])
}

/// Every file under `dir` with one of `extensions` (lowercase),
/// recursively, sorted by path.
pub fn scan_dir_for(dir: &Path, extensions: &[String]) -> Result<Vec<(PathBuf, Stamp)>, Error> {
    Ok(scan(dir, extensions)?
        .files
        .into_iter()
        .filter_map(|path| {
            let stamp = Stamp::of(&fs::metadata(&path).ok()?);
            Some((path, stamp))
        })
        .collect())
}

/// Definition formats tuners keep beside ROMs that no built-in family
/// reads, by extension: named when no loaded family reads such a file.
const OTHER_FORMATS: &[(&str, &str)] = &[
    ("xml", XML_FORMATS),
    ("xdf", "TunerPro XDF"),
    ("a2l", "ASAM A2L"),
    ("kp", "WinOLS map pack"),
];

/// The `.xml` definition formats, named by their head when no family
/// reads `.xml` at all.
const XML_FORMATS: &str = "ECUFlash or RomRaider";

/// Extensions of the archives definitions are shared in.
const ARCHIVES: &[&str] = &["zip", "7z", "rar"];

/// A walk of a definitions folder.
struct Scan {
    /// Files some loaded family reads, sorted by path.
    files: Vec<PathBuf>,
    /// Definition files of [`OTHER_FORMATS`] no loaded family reads.
    unread: Vec<(PathBuf, &'static str)>,
    /// Archives (definitions are often shared zipped), which no family reads.
    archives: Vec<PathBuf>,
}

fn scan(dir: &Path, extensions: &[String]) -> Result<Scan, Error> {
    let mut found = Scan {
        files: Vec::new(),
        unread: Vec::new(),
        archives: Vec::new(),
    };
    let top = plugin_kit::paths::read_dir_entries(dir).map_err(|source| Error::DefinitionsDir {
        path: dir.into(),
        source,
    })?;
    walk(top, 0, extensions, &mut found);
    found.files.sort();
    found.unread.sort();
    Ok(found)
}

fn walk(entries: Vec<fs::DirEntry>, depth: usize, extensions: &[String], found: &mut Scan) {
    for entry in entries {
        let path = entry.path();
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let wanted = extension
            .as_ref()
            .is_some_and(|e| extensions.iter().any(|x| x == e));
        // The listing already tells an entry's type; stat only what can
        // matter (each stat is a host call inside the sandbox, and a
        // definitions folder often holds many ROM images).
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if !wanted && file_type.is_file() {
            let other = OTHER_FORMATS
                .iter()
                .find(|(e, _)| extension.as_deref() == Some(*e));
            if let Some((_, format)) = other
                && found.unread.len() < MAX_UNREAD
            {
                found.unread.push((path, format));
            } else if ARCHIVES.contains(&extension.as_deref().unwrap_or(""))
                && found.archives.len() < MAX_UNREAD
            {
                found.archives.push(path);
            }
            continue;
        }
        if !(wanted || file_type.is_dir() || file_type.is_symlink()) {
            continue;
        }
        // A regular file is stamped when it is opened (see `claim`).
        if wanted && file_type.is_file() {
            found.files.push(path);
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
                walk(sub, depth + 1, extensions, found);
            }
        } else if wanted && meta.is_file() {
            found.files.push(path);
        }
    }
}

/// The stamp and first `len` bytes of the file at `path`, through one
/// open handle.
fn open_head(path: &Path, len: usize) -> io::Result<(Stamp, Vec<u8>)> {
    use std::io::Read;
    let file = fs::File::open(path)?;
    let stamp = Stamp::of(&file.metadata()?);
    let mut head = Vec::with_capacity(len);
    file.take(len as u64).read_to_end(&mut head)?;
    Ok((stamp, head))
}

/// Refuses a definition file given as the ROM, saying what it is and
/// where it goes (a ROM image never starts with XML or A2L text).
fn refuse_definition_as_rom(rom: &Path, file: &[u8]) -> Result<(), Error> {
    let head = &file[..file.len().min(4096)];
    // Definitions are text, which holds no zero byte; nearly every image
    // holds one in its first 4 KiB, and is not looked into.
    if head.contains(&0) {
        return Ok(());
    }
    // Looked into as bytes, not converted (a 0xFF-filled head became 4,096
    // replacement characters at every patch): the markers are ASCII, which
    // no invalid UTF-8 sequence holds, and a tag can only start the valid
    // text the head opens with.
    let has = |marker: &str| head.windows(marker.len()).any(|w| w == marker.as_bytes());
    let start = ecu_model::sniff::head_text(head)
        .trim_start_matches('\u{feff}')
        .trim_start();
    let format = if has("<XDFFORMAT") {
        "a TunerPro XDF definition"
    } else if has("ASAP2_VERSION") || has("/begin PROJECT") {
        "an ASAM A2L description"
    } else if start.starts_with("<?xml") || start.starts_with("<rom") || start.starts_with("<!--") {
        "a definition (XML) file"
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument(format!(
        "{} is {format}, not a ROM image: pass the ROM (.bin, .hex, .srf) as rom, and keep definitions in the definitions folder (--definitions-path)",
        plugin_kit::paths::shown(rom)
    )))
}

/// The longest run of at least three digits in `definition`'s file name
/// that `rom`'s file name also holds; empty when none.
fn shared_digits(definition: &Path, rom: &Path) -> String {
    let stem = crate::family::file_label(definition);
    let rom_name = rom.file_name().unwrap_or_default().to_string_lossy();
    let mut best = "";
    for run in stem.split(|c: char| !c.is_ascii_digit()) {
        if run.len() >= 3 && run.len() > best.len() && rom_name.contains(run) {
            best = run;
        }
    }
    best.to_owned()
}

/// How a match is named to be chosen: its xmlid, else its file name.
fn choice_name(d: &Definition) -> String {
    d.romid
        .xmlid
        .clone()
        .unwrap_or_else(|| crate::family::file_label(&d.file))
}

/// Whether `wanted` names `d`: its xmlid, file name or file stem, in any case.
fn names(d: &Definition, wanted: &str) -> bool {
    let wanted = wanted.trim();
    let file = d.file.file_name().map(|n| n.to_string_lossy().into_owned());
    [
        d.romid.xmlid.clone(),
        file,
        Some(crate::family::file_label(&d.file)),
    ]
    .into_iter()
    .flatten()
    .any(|n| n.eq_ignore_ascii_case(wanted))
}

/// Names the archives in the definitions folder, and what to do.
fn archive_note(archives: &[PathBuf]) -> String {
    let names = some_names(archives, |p| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    });
    format!(
        "the definitions folder holds {} archive{} ({}): definitions are read from files, not archives; unpack {} into the folder",
        archives.len(),
        if archives.len() == 1 { "" } else { "s" },
        names,
        if archives.len() == 1 { "it" } else { "them" }
    )
}

/// The format of a definitions file no loaded family claimed (`family`
/// none), when its first bytes tell one of the first-party families, whose
/// components may be missing from the plugins directory.
fn foreign_format(family: Option<usize>, head: &[u8]) -> Option<&'static str> {
    if family.is_some() {
        return None;
    }
    let head = String::from_utf8_lossy(head);
    if ecu_model::sniff::is_romraider(&head) {
        Some("RomRaider")
    } else if ecu_model::sniff::first_element(&head) == Some("rom") {
        Some("ECUFlash")
    } else {
        None
    }
}

/// Names the definition files no loaded family reads, and what to do.
fn unread_note(unread: &[(PathBuf, &str)]) -> String {
    let names = some_names(unread, |(path, format)| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        // An .xml file no loaded family reads is named by its format, read
        // from its head (only for the few files the note names).
        let format = match *format {
            XML_FORMATS => read_head(path, SNIFF_BYTES)
                .ok()
                .and_then(|head| foreign_format(None, &head))
                .unwrap_or(format),
            _ => format,
        };
        format!("{name} ({format})")
    });
    format!(
        "{} definition file{} here {} in a format no loaded family reads: {}. Put that format's family component (.wasm) in the plugins directory; a running server picks it up",
        unread.len(),
        if unread.len() == 1 { "" } else { "s" },
        if unread.len() == 1 { "is" } else { "are" },
        names
    )
}

/// Unread definition files a walk keeps: enough to name some and count.
const MAX_UNREAD: usize = 1000;

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
    write_locked(&target, None, bytes, &mut lock)
}

/// Replaces the ROM's content while `lock` is held: a crash leaves either
/// the old or the new image, never a torn one, and the file keeps its
/// inode, so its mode and owner (see `plugin_kit::safe_write`).
/// `read`, when given, is the file's content read under `lock` and the
/// stamp it had then: while the file keeps that stamp, the copy of the
/// old image is written from it rather than from the file read again.
pub fn write_locked(
    path: &Path,
    read: Option<(&[u8], Stamp)>,
    bytes: &[u8],
    lock: &mut FileLock,
) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    // WASI file stats carry no permission bits (every file reads as
    // read-only), so only a native build can honour a read-only file; in the
    // sandbox, the directory grant decides.
    if cfg!(not(target_os = "wasi")) && meta.permissions().readonly() {
        return Err("the ROM file is read-only; make it writable or patch a writable copy".into());
    }
    match read.filter(|(_, stamp)| *stamp == Stamp::of(&meta)) {
        Some((current, _)) => plugin_kit::safe_write::replace_known(path, current, bytes, lock),
        None => plugin_kit::safe_write::replace(path, bytes, lock),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_given_as_the_rom_are_told_by_their_text() {
        let refused = |bytes: &[u8]| refuse_definition_as_rom(Path::new("x.bin"), bytes).is_err();
        assert!(refused(b"\xef\xbb\xbf \n<?xml version='1.0'?><rom/>"));
        assert!(refused(b"<!-- c --><rom>"));
        assert!(refused(b"\xff\xfe junk <XDFFORMAT version=\"1.50\">"));
        assert!(refused(b"/* \xb0C */ ASAP2_VERSION 1 71"));
        // Images: an erased (0xFF) head, one with a zero byte, one whose
        // text is not at its start.
        assert!(!refused(&[0xFF; 4096]));
        assert!(!refused(b"<rom>\0"));
        assert!(!refused(b"\xff<?xml version='1.0'?>"));
    }

    #[test]
    fn size_only_matches_are_told_apart_by_the_digits_names_share() {
        let rom = Path::new("bins/211322002801J429 (US 6MT).bin");
        assert_eq!(
            shared_digits(Path::new("d/hw2801_V4_Basic.xdf"), rom),
            "2801"
        );
        assert_eq!(shared_digits(Path::new("d/hw1501_V4_Basic.xdf"), rom), "");
        // Runs shorter than three digits say nothing (V4 is no hardware).
        assert_eq!(
            shared_digits(Path::new("d/V4.xdf"), Path::new("V4.bin")),
            ""
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
        write_locked(&target, None, b"new image", &mut lock).unwrap();
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
