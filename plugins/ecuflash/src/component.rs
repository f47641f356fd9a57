//! The ECUFlash family: `<rom>` files with a `<romid>`, built on other
//! files by `<include>XMLID</include>`, as EcuFlash's own definitions
//! trees (SubaruDefs, EvoScan) are kept.

use super::{
    Family, Listed, Recognition, SNIFF_BYTES, Stamp, file_label, match_id, read_head, some_names,
};
use crate::definition::{ChainFile, Definition, merge};
use crate::error::Error;
use crate::xml::{RawDefinition, RomId, parse_definition, parse_romid_only};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One definitions file: its id, read from its head, and the whole file
/// once a match needs it.
struct CachedFile {
    stamp: Stamp,
    romid: Result<RomId, String>,
    full: Option<Result<Arc<RawDefinition>, String>>,
}

/// A merged definition and the files (with their stamps) it was built from.
struct CachedDefinition {
    chain: Vec<(PathBuf, Stamp)>,
    definition: Arc<Definition>,
}

/// ECUFlash definitions, parsed and merged once per change of their files.
#[derive(Default)]
pub struct EcuFlash {
    files: HashMap<PathBuf, CachedFile>,
    definitions: HashMap<PathBuf, CachedDefinition>,
}

impl Family for EcuFlash {
    fn name(&self) -> &str {
        "ECUFlash"
    }

    fn claims(&self, path: &Path, head: &[u8]) -> bool {
        // The catch-all: any XML file no other family claims is tried as
        // ECUFlash, so a broken one is reported rather than ignored.
        let xml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"));
        xml && !crate::xml::is_romraider(&String::from_utf8_lossy(head))
    }

    fn catch_all(&self) -> bool {
        true
    }

    fn recognize(
        &mut self,
        dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error> {
        self.refresh(files);
        let mut matches = Vec::new();
        let mut tried = Vec::new();
        for Listed { path, .. } in files {
            let Some(CachedFile { romid: Ok(id), .. }) = self.files.get(path) else {
                continue;
            };
            let base = crate::image::base_for(id.field("memmodel"), image.len());
            if let Some(result) = match_id(id, image, base) {
                let label = id.xmlid.clone().unwrap_or_else(|| file_label(path));
                match result {
                    Ok(()) => matches.push(path.clone()),
                    Err(found) => tried.push(format!("{label} ({found})")),
                }
            }
        }
        let mut resolved = Vec::new();
        for path in &matches {
            resolved.push(self.definition(dir, files, path)?);
        }
        // A definition included by another match is the less specific
        // one (a MerpMod definition includes the stock one it shares the
        // id with): it comes after, so it is named and can be chosen.
        let included = |d: &Arc<Definition>| {
            let id = d.romid.xmlid.as_deref();
            resolved.iter().any(|o| {
                !Arc::ptr_eq(o, d)
                    && o.chain[..o.chain.len() - 1]
                        .iter()
                        .any(|c| Some(c.as_str()) == id)
            })
        };
        let (mut keep, less): (Vec<_>, Vec<_>) =
            resolved.iter().cloned().partition(|d| !included(d));
        keep.extend(less);
        Ok(Recognition {
            matches: keep,
            tried,
            ..Recognition::default()
        })
    }
}

/// The candidate sharing the most leading folders with `from` (the first,
/// in path order, among equals).
fn nearest<'a>(from: &Path, candidates: &'a [PathBuf]) -> &'a Path {
    let shared = |c: &Path| {
        from.parent()
            .into_iter()
            .flat_map(|p| p.components())
            .zip(c.parent().into_iter().flat_map(|p| p.components()))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best = &candidates[0];
    for c in &candidates[1..] {
        if shared(c) > shared(best) {
            best = c;
        }
    }
    best
}

/// Says that several files carry an included xmlid, and which was used.
fn include_conflict(
    dir: &Path,
    from: &Path,
    include: &str,
    candidates: &[PathBuf],
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

impl EcuFlash {
    /// Updates the per-file romid cache for the files now in the directory.
    fn refresh(&mut self, files: &[Listed]) {
        for Listed { path, stamp, head } in files {
            if self.files.get(path).is_some_and(|c| c.stamp == *stamp) {
                continue;
            }
            let romid = read_romid(path, head.as_deref());
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
        files: &[Listed],
        leaf: &Path,
    ) -> Result<Arc<Definition>, Error> {
        let stamps: HashMap<&Path, Stamp> =
            files.iter().map(|l| (l.path.as_path(), l.stamp)).collect();
        if let Some(cached) = self.definitions.get(leaf)
            && cached
                .chain
                .iter()
                .all(|(p, s)| stamps.get(p.as_path()) == Some(s))
        {
            return Ok(cached.definition.clone());
        }
        // Index every file by xmlid (and by file stem as a fallback): all
        // of them, since folders hold several users' copies of one base.
        let mut by_id: HashMap<String, Vec<PathBuf>> = HashMap::new();
        for Listed { path, .. } in files {
            if let Some(CachedFile { romid: Ok(id), .. }) = self.files.get(path)
                && let Some(x) = &id.xmlid
            {
                by_id.entry(x.clone()).or_default().push(path.clone());
            }
        }
        for Listed { path, .. } in files {
            by_id
                .entry(file_label(path))
                .or_insert_with(|| vec![path.clone()]);
        }
        let mut order: Vec<PathBuf> = Vec::new();
        let mut stack: Vec<PathBuf> = Vec::new();
        let mut notes = Vec::new();
        self.visit(dir, leaf, &by_id, &mut order, &mut stack, &mut notes)?;
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
        let mut definition = merge(leaf.to_path_buf(), &chain_files);
        definition.notes = notes;
        let definition = Arc::new(definition);
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

    /// Depth-first include resolution: parents first, each file once. An
    /// xmlid several files carry resolves to the one nearest the including
    /// file (beside it, else sharing the longest part of its folder), as a
    /// user who keeps each car's definitions in its own folder expects;
    /// `notes` says so.
    fn visit(
        &mut self,
        dir: &Path,
        path: &Path,
        by_id: &HashMap<String, Vec<PathBuf>>,
        order: &mut Vec<PathBuf>,
        stack: &mut Vec<PathBuf>,
        notes: &mut Vec<String>,
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
            let candidates = by_id.get(include).ok_or_else(|| Error::Definition {
                file: path.into(),
                message: format!(
                    "<include>{include}</include> not found: no file under {} has <xmlid>{include}</xmlid>; add the base definition to the directory",
                    dir.display()
                ),
            })?;
            let target = nearest(path, candidates).to_path_buf();
            if candidates.len() > 1 {
                notes.push(include_conflict(dir, path, include, candidates, &target));
            }
            self.visit(dir, &target, by_id, order, stack, notes)?;
        }
        stack.pop();
        order.push(path.to_path_buf());
        Ok(())
    }
}

/// A definition's `<romid>` from the head of the file (`head`, when the
/// store has read it already), reading the whole file only when the head
/// does not hold it (base files without one, long comments before it).
fn read_romid(path: &Path, head: Option<&[u8]>) -> Result<RomId, String> {
    let read;
    let head = match head {
        Some(head) => head,
        None => {
            read = read_head(path, SNIFF_BYTES).map_err(|e| e.to_string())?;
            &read
        }
    };
    let end = b"</romid>";
    if let Some(at) = head.windows(end.len()).position(|w| w == end)
        && let Ok(text) = std::str::from_utf8(&head[..at + end.len()])
    {
        return parse_romid_only(text);
    }
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse_romid_only(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            read_romid(&short, None).unwrap().xmlid.as_deref(),
            Some("A2UG000N")
        );
        // A romid past the head (a long comment first) is still found.
        let long = dir.join("b.xml");
        let pad = "x".repeat(SNIFF_BYTES);
        fs::write(
            &long,
            format!("<rom><!-- {pad} --><romid><xmlid>B</xmlid></romid></rom>"),
        )
        .unwrap();
        assert_eq!(read_romid(&long, None).unwrap().xmlid.as_deref(), Some("B"));
        let rr = dir.join("rr.xml");
        fs::write(
            &rr,
            "<roms><rom><romid><xmlid>C</xmlid></romid></rom></roms>",
        )
        .unwrap();
        assert!(read_romid(&rr, None).unwrap_err().contains("RomRaider"));
        let ecuflash = EcuFlash::default();
        assert!(!ecuflash.claims(&rr, b"<roms><rom base=\"X\">"));
        assert!(ecuflash.claims(&rr, b"<rom><romid>"));
        // Only XML: an .xdf in the folder belongs to another family.
        assert!(!ecuflash.claims(Path::new("m3.xdf"), b"<XDFFORMAT>"));
        let _ = fs::remove_dir_all(&dir);
    }
}
