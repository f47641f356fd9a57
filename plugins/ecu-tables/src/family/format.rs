//! Any [`Format`] as a [`Family`] the store asks: what is the same for
//! every definition format lives here, once. Reading the definitions
//! folder (heads first, whole files only when the format asks), caching
//! each file's candidates and each resolved definition by the stamps of its
//! files, matching candidates' ids against an image, following includes
//! (the nearest of several files, with a note; a missing include or a cycle
//! fails the match), and turning a format's answer into the [`Definition`]
//! the tools read.
//!
//! A format is reached natively (tests, benchmarks: the family crates
//! linked in) or through `benchtop:ecu-family` ([`super::peer`]): the same
//! code runs past this point either way.

use super::{
    Family, IdentifiedFile, Listed, Recognition, Stamp, file_label, read_head, some_names,
};
use crate::checksum::Checksum;
use crate::definition::{Definition, FamilyChecksum, RomId};
use crate::error::Error;
use ecu_model::family::{self as model, Candidate, Format, HEAD_BYTES, Identified, ImageId};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Includes followed from one definition before the rest are left out: a
/// real chain is two or three deep.
const MAX_CHAIN: usize = 16;

/// A file's definitions as the format identified them.
struct FileCandidates {
    stamp: Stamp,
    candidates: Result<Vec<Candidate>, String>,
}

/// A definition as the format resolved it, with the files it was read
/// from: reused while none of them changed.
struct Resolved {
    sources: Vec<(PathBuf, Stamp)>,
    definition: Result<Arc<Definition>, String>,
}

/// A format, with what it said about the files of the definitions folder.
pub struct FormatFamily {
    format: Arc<dyn Format>,
    name: String,
    extensions: Vec<String>,
    files: HashMap<PathBuf, FileCandidates>,
    resolved: HashMap<(PathBuf, String), Resolved>,
}

impl FormatFamily {
    /// The family of `format`, or why it cannot be asked (its name or its
    /// extensions failed).
    pub fn new(format: Arc<dyn Format>) -> Result<Self, String> {
        let name = format.name()?;
        let extensions = format
            .extensions()?
            .into_iter()
            .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .collect();
        Ok(Self {
            format,
            name,
            extensions,
            files: HashMap::new(),
            resolved: HashMap::new(),
        })
    }

    /// What the format finds in `path`: from its head when it can tell.
    fn identify(
        &self,
        path: &Path,
        stamp: Stamp,
        head: Option<&[u8]>,
    ) -> Result<Vec<Candidate>, String> {
        let name = file_name(path);
        let read;
        let head = match head {
            Some(head) => head,
            None => {
                read = read_head(path, HEAD_BYTES).map_err(|e| format!("cannot be read: {e}"))?;
                &read
            }
        };
        let whole = (head.len() as u64) >= stamp.len;
        let answer = match self.format.identify(&name, head, whole)? {
            Identified::NeedsWholeFile if !whole => {
                let bytes = fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
                self.format.identify(&name, &bytes, true)?
            }
            answer => answer,
        };
        match answer {
            Identified::Candidates(found) => Ok(found),
            Identified::NeedsWholeFile => Err(format!(
                "the {} family asked for the whole file when it had it",
                self.name
            )),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Family for FormatFamily {
    fn name(&self) -> &str {
        &self.name
    }

    fn extensions(&self) -> Vec<String> {
        self.extensions.clone()
    }

    fn claims(&self, path: &Path, head: &[u8]) -> Option<bool> {
        self.format.claims(&file_name(path), head).ok()
    }

    fn identified(&self) -> Vec<IdentifiedFile> {
        self.files
            .iter()
            .map(|(path, f)| (path.clone(), f.stamp, f.candidates.clone()))
            .collect()
    }

    fn recall(&mut self, files: Vec<IdentifiedFile>) {
        for (path, stamp, candidates) in files {
            self.files
                .entry(path)
                .or_insert(FileCandidates { stamp, candidates });
        }
    }

    fn recognize(
        &mut self,
        dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error> {
        let mut found = Recognition::default();
        // Forget files no longer listed, so the caches stay the folder's size.
        let listed: std::collections::HashSet<&Path> =
            files.iter().map(|l| l.path.as_path()).collect();
        self.files.retain(|path, _| listed.contains(path.as_path()));
        self.resolved
            .retain(|(path, _), _| listed.contains(path.as_path()));
        for Listed { path, stamp, head } in files {
            if self.files.get(path).is_some_and(|f| f.stamp == *stamp) {
                continue;
            }
            let candidates = self.identify(path, *stamp, head.as_deref());
            self.files.insert(
                path.clone(),
                FileCandidates {
                    stamp: *stamp,
                    candidates,
                },
            );
        }
        let index = Index::of(files, &self.files);
        let stamps: HashMap<&Path, Stamp> =
            files.iter().map(|l| (l.path.as_path(), l.stamp)).collect();
        let mut failures = Vec::new();
        for Listed { path, .. } in files {
            let candidates = match &self.files[path].candidates {
                Ok(c) => c,
                Err(e) => {
                    found
                        .tried
                        .push(format!("{} (unreadable: {e})", file_label(path)));
                    continue;
                }
            };
            for candidate in candidates {
                let memmodel = candidate
                    .fields
                    .iter()
                    .find(|(k, _)| k == "memmodel")
                    .map(|(_, v)| v.as_str());
                let base = crate::image::base_for(memmodel, image.len());
                let strong = match fits(&candidate.id, image, base, as_text(candidate)) {
                    Some(Ok(strong)) => strong,
                    // A base is only included, never an image's own.
                    None => continue,
                    Some(Err(why)) => {
                        found.tried.push(format!("{} ({why})", candidate.title));
                        continue;
                    }
                };
                let definition = Resolver {
                    format: &self.format,
                    name: &self.name,
                    resolved: &mut self.resolved,
                }
                .definition(dir, path, candidate, &index, &stamps);
                match definition {
                    Ok(d) if strong => found.matches.push(d),
                    Ok(d) => found.by_size.push(d),
                    Err(e) => failures.push((path.clone(), e)),
                }
            }
        }
        // A match that cannot be resolved is the answer when nothing else
        // matches: the user's definition is broken, and rom_info says how.
        if found.matches.is_empty()
            && found.by_size.is_empty()
            && let Some((file, message)) = failures.first()
        {
            return Err(Error::Definition {
                file: file.clone(),
                message: message.clone(),
            });
        }
        found.tried.extend(failures.into_iter().map(|(path, e)| {
            format!(
                "{} (matches, but cannot be resolved: {e})",
                file_label(&path)
            )
        }));
        found.matches = less_specific_last(found.matches);
        Ok(found)
    }
}

/// Resolves definitions through a format, into its family's cache.
struct Resolver<'a> {
    format: &'a Arc<dyn Format>,
    name: &'a str,
    resolved: &'a mut HashMap<(PathBuf, String), Resolved>,
}

impl Resolver<'_> {
    /// The definition `candidate` (in `path`) resolves to, cached while no
    /// file of its chain changes.
    fn definition(
        &mut self,
        dir: &Path,
        path: &Path,
        candidate: &Candidate,
        index: &Index<'_>,
        stamps: &HashMap<&Path, Stamp>,
    ) -> Result<Arc<Definition>, String> {
        let Chain { files, notes } = index.chain(dir, path, candidate)?;
        let sources: Vec<(PathBuf, Stamp)> =
            files.iter().map(|p| (p.to_path_buf(), stamps[p])).collect();
        let key = (path.to_path_buf(), candidate.key.clone());
        if let Some(cached) = self.resolved.get(&key)
            && cached.sources == sources
        {
            return cached.definition.clone();
        }
        let definition = self.resolve(&files, candidate).map(|resolved| {
            let mut d = definition(path, candidate, resolved, self.format, self.name);
            d.notes = notes;
            Arc::new(d)
        });
        self.resolved.insert(
            key,
            Resolved {
                sources,
                definition: definition.clone(),
            },
        );
        definition
    }

    /// Asks the format to resolve `candidate` from the files of its chain.
    fn resolve(&self, chain: &[&Path], candidate: &Candidate) -> Result<model::Resolved, String> {
        let contents = chain
            .iter()
            .map(|path| fs::read(path).map_err(|e| format!("{}: {e}", file_label(path))))
            .collect::<Result<Vec<_>, _>>()?;
        let names: Vec<String> = chain.iter().map(|p| file_name(p)).collect();
        let sources: Vec<model::Source<'_>> = names
            .iter()
            .zip(&contents)
            .map(|(file_name, contents)| model::Source {
                file_name,
                contents,
            })
            .collect();
        self.format.resolve(&candidate.key, &sources)
    }
}

/// Where each title is defined: every file defining it (folders hold
/// several users' copies of one base), and each file by its name without
/// extension, for an include that names a file so.
struct Index<'a> {
    by_title: HashMap<&'a str, Vec<(&'a Path, &'a Candidate)>>,
    by_stem: HashMap<String, (&'a Path, &'a Candidate)>,
}

/// The files a definition is resolved from and what choosing them noted.
struct Chain<'a> {
    files: Vec<&'a Path>,
    notes: Vec<String>,
}

impl<'a> Index<'a> {
    fn of(files: &'a [Listed], identified: &'a HashMap<PathBuf, FileCandidates>) -> Self {
        let mut by_title: HashMap<&str, Vec<(&Path, &Candidate)>> = HashMap::new();
        let mut by_stem = HashMap::new();
        for Listed { path, .. } in files {
            if let Some(Ok(candidates)) = identified.get(path).map(|f| &f.candidates) {
                for c in candidates {
                    by_title.entry(&c.title).or_default().push((path, c));
                }
                if let Some(first) = candidates.first() {
                    by_stem.insert(file_label(path), (path.as_path(), first));
                }
            }
        }
        Index { by_title, by_stem }
    }

    /// The files `candidate` (in `path`) is resolved from: its own first,
    /// then those of its includes, transitively, each once, in the order
    /// they are first named. An include several files define is the one
    /// nearest the including file, as a user who keeps each car's
    /// definitions in its own folder expects, and a note says so.
    fn chain(
        &self,
        dir: &Path,
        path: &'a Path,
        candidate: &'a Candidate,
    ) -> Result<Chain<'a>, String> {
        let mut chain = Chain {
            files: Vec::new(),
            notes: Vec::new(),
        };
        self.visit(dir, path, candidate, &mut chain, &mut Vec::new())?;
        Ok(chain)
    }

    fn visit(
        &self,
        dir: &Path,
        path: &'a Path,
        candidate: &'a Candidate,
        chain: &mut Chain<'a>,
        stack: &mut Vec<&'a Path>,
    ) -> Result<(), String> {
        if stack.contains(&path) {
            let mut cycle: Vec<String> = stack.iter().map(|p| file_label(p)).collect();
            cycle.push(file_label(path));
            return Err(format!("include cycle: {}", cycle.join(" → ")));
        }
        if chain.files.contains(&path) {
            return Ok(());
        }
        if chain.files.len() >= MAX_CHAIN {
            return Err(format!(
                "{} includes more than {MAX_CHAIN} files; a real chain is two or three deep",
                candidate.title
            ));
        }
        chain.files.push(path);
        stack.push(path);
        for include in &candidate.includes {
            let defined = self
                .by_title
                .get(include.as_str())
                .filter(|d| !d.is_empty());
            let (target, included) = match defined {
                Some(defined) => {
                    let paths: Vec<&Path> = defined.iter().map(|(p, _)| *p).collect();
                    let at = nearest(path, &paths);
                    if defined.len() > 1 {
                        chain
                            .notes
                            .push(include_conflict(dir, path, include, &paths, paths[at]));
                    }
                    defined[at]
                }
                None => *self.by_stem.get(include.as_str()).ok_or_else(|| {
                    format!(
                        "<include>{include}</include> not found: no file under {} defines `{include}`; add the base definition to the folder",
                        dir.display()
                    )
                })?,
            };
            // A base in the including file itself is the format's to
            // merge: the file is passed once.
            if target != path {
                self.visit(dir, target, included, chain, stack)?;
            }
        }
        stack.pop();
        Ok(())
    }
}

/// Index in `candidates` of the file sharing the most leading folders with
/// `from` (the first, in listing order, among equals).
fn nearest(from: &Path, candidates: &[&Path]) -> usize {
    let shared = |c: &Path| {
        from.parent()
            .into_iter()
            .flat_map(|p| p.components())
            .zip(c.parent().into_iter().flat_map(|p| p.components()))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best = 0;
    for (i, c) in candidates.iter().enumerate().skip(1) {
        if shared(c) > shared(candidates[best]) {
            best = i;
        }
    }
    best
}

/// Says that several files define an included title, and which was used.
fn include_conflict(
    dir: &Path,
    from: &Path,
    include: &str,
    candidates: &[&Path],
    used: &Path,
) -> String {
    let shown = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
    format!(
        "{} files have <xmlid>{include}</xmlid> ({}); {} includes {}, the one nearest it. Keep one copy, or keep each with the definitions it belongs to",
        candidates.len(),
        some_names(candidates, |p| shown(p)),
        shown(from),
        shown(used)
    )
}

/// A definition included by another match is the less specific one (a
/// MerpMod definition includes the stock one it shares the id with): it
/// comes after, so it is named and can be chosen.
fn less_specific_last(matches: Vec<Arc<Definition>>) -> Vec<Arc<Definition>> {
    let included = |d: &Arc<Definition>| {
        let id = d.romid.xmlid.as_deref();
        matches.iter().any(|o| {
            !Arc::ptr_eq(o, d)
                && o.chain[..o.chain.len().saturating_sub(1)]
                    .iter()
                    .any(|c| Some(c.as_str()) == id)
        })
    };
    let (mut keep, less): (Vec<_>, Vec<_>) = matches.iter().cloned().partition(|d| !included(d));
    keep.extend(less);
    keep
}

/// Whether `image` is one of the candidate's: Ok(true) by its id bytes,
/// Ok(false) by its size alone, Err with what differs; None for a base,
/// which no image is. `base` is the ECU address of the image's first byte
/// (H8/539F reads start at 0x10000).
fn fits(id: &ImageId, image: &[u8], base: usize, text: bool) -> Option<Result<bool, String>> {
    Some(match id {
        ImageId::None => return None,
        ImageId::Bytes { offset, bytes } => {
            let address = usize::try_from(*offset).unwrap_or(usize::MAX);
            let Some(at) = address.checked_sub(base) else {
                return Some(Err(format!(
                    "id address 0x{address:X} is below the image start 0x{base:X}"
                )));
            };
            let found = at
                .checked_add(bytes.len())
                .and_then(|end| image.get(at..end));
            match found {
                Some(f) if f == bytes.as_slice() => Ok(true),
                Some(f) => Err(format!(
                    "expects {} at 0x{address:X}, ROM has {}",
                    shown_id(bytes, text),
                    shown_id(f, text)
                )),
                None => Err(format!(
                    "id address 0x{address:X} is past the end of the {}-byte ROM",
                    image.len()
                )),
            }
        }
        ImageId::Length(n) if *n == image.len() as u64 => Ok(false),
        ImageId::Length(n) => Err(format!(
            "describes a {n}-byte image, this one has {} bytes",
            image.len()
        )),
    })
}

/// Whether the candidate's id is shown as text: as its definition gives
/// it (`internalidstring` rather than `internalidhex`), else when it is
/// printable.
fn as_text(candidate: &Candidate) -> bool {
    let given = |key: &str| {
        candidate
            .fields
            .iter()
            .any(|(k, v)| k == key && !v.trim().is_empty())
    };
    match &candidate.id {
        _ if given("internalidhex") => false,
        _ if given("internalidstring") => true,
        ImageId::Bytes { bytes, .. } => printable(bytes),
        _ => false,
    }
}

fn printable(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| b.is_ascii_graphic() || b == b' ')
}

/// Id bytes as a tuner reads them: quoted text, or hex.
fn shown_id(bytes: &[u8], text: bool) -> String {
    if text {
        format!("\"{}\"", String::from_utf8_lossy(bytes))
    } else {
        crate::scaling::hex_upper(bytes)
    }
}

/// A resolved definition as the tools use it.
fn definition(
    path: &Path,
    candidate: &Candidate,
    resolved: model::Resolved,
    format: &Arc<dyn Format>,
    family: &str,
) -> Definition {
    let mut fields: HashMap<String, String> = candidate.fields.iter().cloned().collect();
    fields.extend(resolved.fields);
    let mut romid = RomId {
        xmlid: Some(candidate.title.clone()),
        fields: fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ..RomId::default()
    };
    if let ImageId::Bytes { offset, bytes } = &candidate.id {
        // Shown as the definition gives it (ECUFlash's and RomRaider's
        // `internalidhex`/`internalidstring`), else as text when printable.
        let given = |key: &str| fields.get(key).filter(|v| !v.trim().is_empty()).cloned();
        romid.internal_id_address =
            given("internalidaddress").or_else(|| Some(format!("{offset:X}")));
        if let Some(hex) = given("internalidhex") {
            romid.internal_id_hex = Some(hex);
        } else if let Some(text) = given("internalidstring") {
            romid.internal_id_string = Some(text);
        } else {
            if printable(bytes) {
                romid.internal_id_string = Some(String::from_utf8_lossy(bytes).into_owned());
            } else {
                romid.internal_id_hex = Some(crate::scaling::hex_upper(bytes));
            }
        }
    }
    let mut definition = Definition::new(
        path.to_owned(),
        romid,
        fields,
        resolved.chain,
        resolved.tables,
        resolved.unreadable,
    );
    definition.checksum = match resolved.checksum {
        model::Checksum::Plan(plan) => FamilyChecksum::Kept(Arc::new(FormatChecksum {
            format: format.clone(),
            family: family.to_owned(),
            plan,
            disabled: Mutex::default(),
        })),
        model::Checksum::Unknown(why) => FamilyChecksum::Unknown(why),
    };
    definition
}

/// A checksum the definition's format verifies and fixes.
struct FormatChecksum {
    format: Arc<dyn Format>,
    family: String,
    plan: String,
    /// Why the image last validated has its checksum switched off, if it
    /// has: answered with that verdict, asked for right after it.
    disabled: Mutex<Option<String>>,
}

impl std::fmt::Debug for FormatChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FormatChecksum({} {})", self.family, self.plan)
    }
}

impl Checksum for FormatChecksum {
    fn name(&self) -> String {
        self.plan.clone()
    }

    fn validate(&self, rom: &[u8]) -> Result<bool, String> {
        let verdict = self.format.verify(&self.plan, rom)?;
        self.judge(verdict)
    }

    fn disabled_note(&self, _rom: &[u8]) -> Option<String> {
        self.disabled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fix(&self, rom: &mut Vec<u8>) -> Result<(), String> {
        self.fix_checked(rom).map(drop)
    }

    /// One question to the family: its edits are written into `rom` (all
    /// or none) and its verdict on the result judged.
    fn fix_checked(&self, rom: &mut Vec<u8>) -> Result<Result<bool, String>, String> {
        let fixed = self
            .format
            .fix_checked(&self.plan, rom)
            .map_err(|e| format!("the {} family: {e}", self.family))?;
        Ok(self.judge(fixed.after))
    }
}

impl FormatChecksum {
    /// What a verdict says of the image, remembering why its checksum is
    /// switched off, if it is.
    fn judge(&self, verdict: model::Verdict) -> Result<bool, String> {
        let disabled = match &verdict {
            model::Verdict::Disabled(why) => Some(why.clone()),
            _ => None,
        };
        *self.disabled.lock().unwrap_or_else(|e| e.into_inner()) = disabled;
        match verdict {
            model::Verdict::Valid | model::Verdict::Disabled(_) => Ok(true),
            model::Verdict::Invalid(_) => Ok(false),
            model::Verdict::Unknown(why) => Err(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_fit_by_id_or_by_size() {
        let image = b"....DZ1E402B....".to_vec();
        let id = |offset, bytes: &[u8]| ImageId::Bytes {
            offset,
            bytes: bytes.to_vec(),
        };
        assert_eq!(fits(&id(4, b"DZ1E402B"), &image, 0, true), Some(Ok(true)));
        let miss = fits(&id(4, b"DZ1E402C"), &image, 0, true)
            .unwrap()
            .unwrap_err();
        assert!(miss.contains("ROM has \"DZ1E402B\""), "{miss}");
        let miss = fits(&id(0, &[0x22, 0x49]), &image, 0, false)
            .unwrap()
            .unwrap_err();
        assert!(miss.contains("expects 2249 at 0x0, ROM has 2E2E"), "{miss}");
        assert!(
            fits(&id(u64::MAX, b"D"), &image, 0, true)
                .unwrap()
                .unwrap_err()
                .contains("past the end")
        );
        assert_eq!(
            fits(&ImageId::Length(16), &image, 0, false),
            Some(Ok(false))
        );
        assert!(
            fits(&ImageId::Length(0x8000), &image, 0, false)
                .unwrap()
                .unwrap_err()
                .contains("32768-byte image")
        );
        assert_eq!(fits(&ImageId::None, &image, 0, false), None);
        // Under a memory model that starts at 0x10000, the id's offset is
        // an ECU address.
        assert_eq!(
            fits(&id(0x1_0004, b"DZ1E402B"), &image, 0x1_0000, true),
            Some(Ok(true))
        );
        assert!(
            fits(&id(4, b"DZ1E402B"), &image, 0x1_0000, true)
                .unwrap()
                .unwrap_err()
                .contains("below the image start")
        );
    }

    fn candidate(title: &str, includes: &[&str]) -> Candidate {
        Candidate {
            key: title.into(),
            title: title.into(),
            id: ImageId::None,
            fields: Vec::new(),
            includes: includes.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn index<'a>(entries: &[(&'a str, &'a Path, &'a Candidate)]) -> Index<'a> {
        let mut by_title: HashMap<&str, Vec<(&Path, &Candidate)>> = HashMap::new();
        for (title, path, c) in entries {
            by_title.entry(title).or_default().push((path, c));
        }
        Index {
            by_title,
            by_stem: HashMap::new(),
        }
    }

    #[test]
    fn a_chain_follows_includes_once_each_and_stops_at_what_is_wrong() {
        let (a, b, c) = (Path::new("a.xml"), Path::new("b.xml"), Path::new("c.xml"));
        let dir = Path::new(".");
        let child = candidate("CHILD", &["MID", "BASE"]);
        let mid = candidate("MID", &["BASE"]);
        let base = candidate("BASE", &[]);
        let idx = index(&[("CHILD", a, &child), ("MID", b, &mid), ("BASE", c, &base)]);
        let chain = idx.chain(dir, a, &child).unwrap();
        assert_eq!(chain.files, vec![a, b, c]);
        assert!(chain.notes.is_empty());
        // Two definitions in one file: the file is passed once.
        let idx = index(&[("MID", a, &mid), ("BASE", a, &base)]);
        assert_eq!(idx.chain(dir, a, &child).unwrap().files, vec![a]);
        // A title no file defines, and a loop.
        let gone = candidate("CHILD", &["GONE"]);
        let err = index(&[]).chain(dir, a, &gone).err().unwrap();
        assert!(
            err.starts_with("<include>GONE</include> not found"),
            "{err}"
        );
        let looping = candidate("BASE", &["CHILD"]);
        let idx = index(&[
            ("CHILD", a, &child),
            ("MID", b, &mid),
            ("BASE", c, &looping),
        ]);
        let err = idx.chain(dir, a, &child).err().unwrap();
        assert!(err.contains("include cycle: a → b → c → a"), "{err}");
    }

    #[test]
    fn a_title_in_several_folders_resolves_to_the_nearest() {
        let child = candidate("CHILD", &["BASE"]);
        let base = candidate("BASE", &[]);
        let (leaf, alice, bob) = (
            Path::new("d/bob/child.xml"),
            Path::new("d/alice/base.xml"),
            Path::new("d/bob/base.xml"),
        );
        let idx = index(&[("BASE", alice, &base), ("BASE", bob, &base)]);
        let chain = idx.chain(Path::new("d"), leaf, &child).unwrap();
        assert_eq!(chain.files, vec![leaf, bob]);
        assert!(
            chain.notes[0].contains("bob/child.xml includes bob/base.xml, the one nearest it"),
            "{:?}",
            chain.notes
        );
    }
}
