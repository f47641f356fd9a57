//! Families other plugins serve: components exporting
//! `benchtop:ecu-family/family` (wit/ecu-family), reached through the
//! host's `benchtop:host/peers` routing. This file turns their WIT answers
//! into the same [`Definition`]s the built-in families build, so nothing
//! past it knows a definition came from another component.
//!
//! A served family reads no files: this plugin reads the definitions
//! folder (it holds the grant) and hands each file's bytes over once per
//! change; the answers are cached here, keyed by the file's stamp and
//! dropped when the serving plugin is loaded again.

use super::{Family, Listed, Recognition, Served, Stamp, file_label};
use crate::bindings::benchtop::ecu_family::family as wit;
use crate::bindings::benchtop::host::{blobs, peers};
use crate::checksum::Checksum;
use crate::definition::{Axis, AxisSource, Definition, FamilyChecksum, Table, TableType};
use crate::error::Error;
use crate::expr::Expr;
use crate::printf::Format;
use crate::scaling::{Endian, Kind, Scaling, Storage};
use crate::xml::RomId;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The interface a family component serves, as the host names it.
pub const INTERFACE: &str = "benchtop:ecu-family/family@0.1.0";

/// Sends the next calls of [`INTERFACE`] to `plugin`.
fn route(plugin: &str) -> Result<(), String> {
    peers::route(INTERFACE, plugin)
}

/// The families the host's loaded plugins serve.
pub struct PeerFamilies;

impl Served for PeerFamilies {
    fn providers(&self) -> Vec<(String, u64)> {
        peers::providers(INTERFACE)
            .into_iter()
            .map(|p| (p.plugin, p.generation))
            .collect()
    }

    fn family(&self, plugin: &str) -> Result<Box<dyn Family>, String> {
        route(plugin)?;
        let name = wit::name()?;
        let extensions = wit::extensions()?
            .into_iter()
            .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .collect();
        Ok(Box::new(PeerFamily {
            plugin: plugin.to_owned(),
            name,
            extensions,
            files: HashMap::new(),
            resolved: HashMap::new(),
        }))
    }
}

/// A file's definitions as the family identified them.
struct Identified {
    stamp: Stamp,
    candidates: Result<Vec<wit::Candidate>, String>,
}

/// A definition as the family resolved it, with the files it was read
/// from: reused while none of them changed.
struct Resolved {
    sources: Vec<(PathBuf, Stamp)>,
    definition: Result<Arc<Definition>, String>,
}

/// A family served by plugin `plugin`.
struct PeerFamily {
    plugin: String,
    name: String,
    extensions: Vec<String>,
    files: HashMap<PathBuf, Identified>,
    resolved: HashMap<(PathBuf, String), Resolved>,
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Bytes kept in the host for one peer call (`benchtop:host/blobs`), let
/// go when dropped: a file or an image crosses to the family as one copy.
struct Kept(blobs::Blob);

impl Kept {
    fn new(bytes: &[u8]) -> Result<Self, String> {
        blobs::keep(bytes).map(Self)
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        blobs::release(self.0);
    }
}

/// Includes followed from one definition before the rest are left out: a
/// real chain is two or three deep.
const MAX_CHAIN: usize = 16;

impl Family for PeerFamily {
    fn name(&self) -> &str {
        &self.name
    }

    fn extensions(&self) -> Vec<String> {
        self.extensions.clone()
    }

    fn claims(&self, path: &Path, head: &[u8]) -> bool {
        route(&self.plugin).is_ok()
            && Kept::new(head)
                .and_then(|head| wit::claims(&file_name(path), head.0))
                .unwrap_or(false)
    }

    fn recognize(
        &mut self,
        _dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error> {
        let mut found = Recognition::default();
        if let Err(e) = route(&self.plugin) {
            found.tried.push(format!("{} family: {e}", self.name));
            return Ok(found);
        }
        // Forget files no longer listed, so the caches stay the folder's size.
        self.files
            .retain(|path, _| files.iter().any(|l| &l.path == path));
        self.resolved
            .retain(|(path, _), _| files.iter().any(|l| &l.path == path));
        for Listed { path, stamp, .. } in files {
            if self.files.get(path).is_some_and(|f| f.stamp == *stamp) {
                continue;
            }
            let candidates = fs::read(path)
                .map_err(|e| format!("cannot be read: {e}"))
                .and_then(|bytes| {
                    let kept = Kept::new(&bytes)?;
                    wit::identify(&file_name(path), kept.0)
                });
            self.files.insert(
                path.clone(),
                Identified {
                    stamp: *stamp,
                    candidates,
                },
            );
        }
        // Where each title is defined, for includes: the first file in
        // listing order wins, as ECUFlash's own xmlid lookup does.
        let mut by_title: HashMap<&str, (&Path, &wit::Candidate)> = HashMap::new();
        for Listed { path, .. } in files {
            if let Some(Ok(candidates)) = self.files.get(path).map(|f| &f.candidates) {
                for c in candidates {
                    by_title.entry(&c.title).or_insert((path, c));
                }
            }
        }
        let stamps: HashMap<&Path, Stamp> =
            files.iter().map(|l| (l.path.as_path(), l.stamp)).collect();
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
                let strong = match fits(&candidate.id, image, base) {
                    Some(Ok(strong)) => strong,
                    // A base is only included, never an image's own.
                    None => continue,
                    Some(Err(why)) => {
                        found.tried.push(format!("{} ({why})", candidate.title));
                        continue;
                    }
                };
                let (chain, missing) = chain_of(path, candidate, &by_title);
                let sources: Vec<(PathBuf, Stamp)> =
                    chain.iter().map(|p| (p.to_path_buf(), stamps[p])).collect();
                let key = (path.clone(), candidate.key.clone());
                let fresh = self
                    .resolved
                    .get(&key)
                    .is_some_and(|r| r.sources == sources);
                if !fresh {
                    let definition = resolve(&chain, candidate).map(|served| {
                        let mut d = definition(path, candidate, served, &self.plugin, &self.name);
                        d.notes.extend(missing.iter().map(|title| {
                            format!(
                                "{} includes `{title}`, which no {} definitions file holds: \
                                 tables it would give are missing",
                                candidate.title, self.name
                            )
                        }));
                        Arc::new(d)
                    });
                    self.resolved.insert(
                        key.clone(),
                        Resolved {
                            sources,
                            definition,
                        },
                    );
                }
                match &self.resolved[&key].definition {
                    Ok(d) if strong => found.matches.push(d.clone()),
                    Ok(d) => found.by_size.push(d.clone()),
                    Err(e) => found.tried.push(format!(
                        "{} (matches, but {} could not resolve it: {e})",
                        candidate.title, self.name
                    )),
                }
            }
        }
        Ok(found)
    }
}

/// The files `candidate` (in `path`) is resolved from: its own first,
/// then those of its includes, transitively, each once, nearest first;
/// and the included titles no file defines.
fn chain_of<'a>(
    path: &'a Path,
    candidate: &'a wit::Candidate,
    by_title: &HashMap<&str, (&'a Path, &'a wit::Candidate)>,
) -> (Vec<&'a Path>, Vec<String>) {
    let mut chain = vec![path];
    let mut missing = Vec::new();
    let mut pending: std::collections::VecDeque<&str> =
        candidate.includes.iter().map(String::as_str).collect();
    let mut seen = std::collections::HashSet::from([candidate.title.as_str()]);
    while let Some(title) = pending.pop_front() {
        if !seen.insert(title) || chain.len() >= MAX_CHAIN {
            continue;
        }
        match by_title.get(title) {
            Some((file, included)) => {
                if !chain.contains(file) {
                    chain.push(file);
                }
                pending.extend(included.includes.iter().map(String::as_str));
            }
            None => missing.push(title.to_owned()),
        }
    }
    (chain, missing)
}

/// Asks the family to resolve `candidate` from the files of its chain.
fn resolve(chain: &[&Path], candidate: &wit::Candidate) -> Result<wit::Definition, String> {
    let mut kept = Vec::with_capacity(chain.len());
    let mut sources = Vec::with_capacity(chain.len());
    for path in chain {
        let bytes = fs::read(path).map_err(|e| format!("{}: {e}", file_label(path)))?;
        let blob = Kept::new(&bytes)?;
        sources.push(wit::Source {
            file_name: file_name(path),
            contents: blob.0,
        });
        kept.push(blob);
    }
    wit::resolve(&candidate.key, &sources)
}

/// Whether `image` is one of the candidate's: Ok(true) by its id bytes,
/// Ok(false) by its size alone, Err with what differs; None for a base,
/// which no image is. `base` is the ECU address of the image's first byte
/// (H8/539F reads start at 0x10000).
fn fits(id: &wit::ImageId, image: &[u8], base: usize) -> Option<Result<bool, String>> {
    Some(match id {
        wit::ImageId::None => return None,
        wit::ImageId::Bytes(id) => {
            let address = usize::try_from(id.offset).unwrap_or(usize::MAX);
            let Some(at) = address.checked_sub(base) else {
                return Some(Err(format!(
                    "id address 0x{address:X} is below the image start 0x{base:X}"
                )));
            };
            let found = at
                .checked_add(id.bytes.len())
                .and_then(|end| image.get(at..end));
            match found {
                Some(f) if f == id.bytes.as_slice() => Ok(true),
                Some(f) => Err(format!(
                    "expects {} at 0x{address:X}, ROM has {}",
                    crate::scaling::hex_upper(&id.bytes),
                    crate::scaling::hex_upper(f)
                )),
                None => Err(format!(
                    "id address 0x{address:X} is past the end of the {}-byte ROM",
                    image.len()
                )),
            }
        }
        wit::ImageId::Length(n) if *n == image.len() as u64 => Ok(false),
        wit::ImageId::Length(n) => Err(format!(
            "describes a {n}-byte image, this one has {} bytes",
            image.len()
        )),
    })
}

/// A served definition as the tools use it. Tables the family described
/// but this plugin cannot use (an expression outside the subset, an
/// address past 4 GiB) are listed as unreadable with the reason.
fn definition(
    path: &Path,
    candidate: &wit::Candidate,
    served: wit::Definition,
    plugin: &str,
    family: &str,
) -> Definition {
    let mut fields: HashMap<String, String> = candidate.fields.iter().cloned().collect();
    fields.extend(served.fields);
    let mut romid = RomId {
        xmlid: Some(candidate.title.clone()),
        fields: fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ..RomId::default()
    };
    if let wit::ImageId::Bytes(id) = &candidate.id {
        // Shown as the definitions show it: text when it is printable.
        romid.internal_id_address = Some(format!("{:X}", id.offset));
        match std::str::from_utf8(&id.bytes) {
            Ok(text) if text.chars().all(|c| c.is_ascii_graphic() || c == ' ') => {
                romid.internal_id_string = Some(text.to_owned());
            }
            _ => romid.internal_id_hex = Some(crate::scaling::hex_upper(&id.bytes)),
        }
    }
    let mut unresolvable = served.unreadable;
    let mut tables = Vec::with_capacity(served.tables.len());
    for t in served.tables {
        let name = t.name.clone();
        match table(t) {
            Ok(t) => tables.push(t),
            Err(why) => unresolvable.push((name, why)),
        }
    }
    let mut definition = Definition::new(
        path.to_owned(),
        romid,
        fields,
        served.chain,
        tables,
        unresolvable,
    );
    definition.checksum = match served.checksum {
        wit::Checksum::Plan(plan) => FamilyChecksum::Kept(Arc::new(PeerChecksum {
            plugin: plugin.to_owned(),
            family: family.to_owned(),
            plan,
            disabled: Default::default(),
        })),
        wit::Checksum::Unknown(why) => FamilyChecksum::Unknown(why),
    };
    definition
}

fn table(t: wit::Table) -> Result<Table, String> {
    let address = address(t.address)?;
    let scaling = Arc::new(scaling(&t.name, t.scaling)?);
    let (rows, columns) = match (t.rows, t.columns) {
        // One axis is a one-axis table whichever side the family put it.
        (None, Some(only)) => (Some(only), None),
        other => other,
    };
    let table_type = match (&rows, &columns) {
        (None, _) => TableType::Scalar,
        (Some(_), None) => TableType::OneAxis,
        (Some(_), Some(_)) => TableType::Grid,
    };
    let row_label = if columns.is_some() { "Y Axis" } else { "Axis" };
    Ok(Table {
        id: t.name.clone(),
        name: t.name,
        category: t.category,
        table_type,
        address,
        scaling,
        swapxy: t.column_major,
        flipy: t.rows_reversed,
        flipx: t.columns_reversed,
        level: t.level,
        row_axis: rows.map(|a| axis(a, row_label)).transpose()?,
        col_axis: columns.map(|a| axis(a, "X Axis")).transpose()?,
    })
}

fn address(offset: u64) -> Result<u32, String> {
    u32::try_from(offset).map_err(|_| format!("address 0x{offset:X} is past 4 GiB"))
}

fn axis(a: wit::Axis, role: &str) -> Result<Axis, String> {
    let (xml_type, source) = match a.points {
        wit::Points::Labels(labels) => (format!("Static {role}"), AxisSource::Static(labels)),
        wit::Points::Stored(p) => (
            role.to_owned(),
            AxisSource::Dynamic {
                address: address(p.address)?,
                elements: p.count as usize,
                scaling: Arc::new(scaling(a.name.as_deref().unwrap_or(role), p.scaling)?),
            },
        ),
    };
    Ok(Axis {
        name: a.name,
        xml_type,
        source,
        flip: a.reversed,
    })
}

fn scaling(name: &str, s: wit::Scaling) -> Result<Scaling, String> {
    let endian = if s.little_endian {
        Endian::Little
    } else {
        Endian::Big
    };
    let (storage, kind) = if s.storage == wit::Storage::Bits {
        if !s.choices.is_empty() {
            return Err("a bit table cannot also have choices".into());
        }
        (Storage::Bits, Kind::Bit)
    } else if s.choices.is_empty() {
        let storage = match s.storage {
            wit::Storage::Uint8 => Storage::U8,
            wit::Storage::Int8 => Storage::I8,
            wit::Storage::Uint16 => Storage::U16,
            wit::Storage::Int16 => Storage::I16,
            wit::Storage::Uint32 => Storage::U32,
            wit::Storage::Int32 => Storage::I32,
            wit::Storage::Float32 => Storage::F32,
            wit::Storage::Bits => unreachable!("bit tables are handled above"),
        };
        let to = Expr::parse(&s.to_physical).map_err(|e| format!("to-physical: {e}"))?;
        let from = s
            .from_physical
            .as_deref()
            .map(Expr::parse)
            .transpose()
            .map_err(|e| format!("from-physical: {e}"))?;
        (storage, Kind::Numeric { to, from })
    } else {
        let len = s.choices[0].bytes.len();
        if len == 0 || s.choices.iter().any(|c| c.bytes.len() != len) {
            return Err("its choices' byte patterns are empty or differ in length".into());
        }
        let blobs = s.choices.into_iter().map(|c| (c.name, c.bytes)).collect();
        (Storage::Blob(len), Kind::Blobs(blobs))
    };
    Ok(Scaling {
        name: name.to_owned(),
        units: s.units.filter(|u| !u.is_empty()),
        format: s.format.as_deref().map(Format::parse).unwrap_or_default(),
        format_text: s.format,
        min: s.min,
        max: s.max,
        storage,
        endian,
        kind,
    })
}

/// A checksum the serving family verifies and fixes.
#[derive(Debug)]
struct PeerChecksum {
    plugin: String,
    family: String,
    plan: String,
    /// Why the image last validated has its checksum switched off, if it
    /// has: answered with that verdict, asked for right after it.
    disabled: std::sync::Mutex<Option<String>>,
}

impl Checksum for PeerChecksum {
    fn name(&self) -> String {
        format!("{} ({})", self.plan, self.family)
    }

    fn validate(&self, rom: &[u8]) -> Result<bool, String> {
        route(&self.plugin)?;
        let image = Kept::new(rom)?;
        let verdict = wit::verify(&self.plan, image.0)?;
        let disabled = match &verdict {
            wit::Verdict::Disabled(why) => Some(why.clone()),
            _ => None,
        };
        *self.disabled.lock().unwrap_or_else(|e| e.into_inner()) = disabled;
        match verdict {
            wit::Verdict::Valid | wit::Verdict::Disabled(_) => Ok(true),
            wit::Verdict::Invalid(_) => Ok(false),
            wit::Verdict::Unknown(why) => Err(why),
        }
    }

    fn disabled_note(&self, _rom: &[u8]) -> Option<String> {
        self.disabled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fix(&self, rom: &mut Vec<u8>) -> Result<(), String> {
        route(&self.plugin)?;
        let edits = {
            let image = Kept::new(rom)?;
            wit::fix(&self.plan, image.0)?
        };
        apply(rom, &edits, &self.family)
    }
}

/// Writes a family's checksum edits into `rom`; none is written unless
/// all fit.
fn apply(rom: &mut [u8], edits: &[wit::Edit], family: &str) -> Result<(), String> {
    let span = |e: &wit::Edit| {
        let start = usize::try_from(e.offset).ok()?;
        Some(start..start.checked_add(e.bytes.len())?)
    };
    if let Some(bad) = edits
        .iter()
        .find(|e| span(e).is_none_or(|r| r.end > rom.len()))
    {
        return Err(format!(
            "the {family} family's checksum fix writes {} bytes at 0x{:X}, past the end of the {}-byte image",
            bad.bytes.len(),
            bad.offset,
            rom.len()
        ));
    }
    for e in edits {
        let range = span(e).expect("checked above");
        rom[range].copy_from_slice(&e.bytes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(storage: wit::Storage, to: &str, from: Option<&str>) -> wit::Scaling {
        wit::Scaling {
            storage,
            little_endian: false,
            to_physical: to.into(),
            from_physical: from.map(str::to_string),
            units: Some("kg/h".into()),
            format: Some("%0.1f".into()),
            min: None,
            max: None,
            choices: Vec::new(),
        }
    }

    fn served_table(rows: Option<wit::Axis>, columns: Option<wit::Axis>) -> wit::Table {
        wit::Table {
            name: "KL_HFM".into(),
            category: Some("Air".into()),
            address: 0x608C,
            scaling: cells(wit::Storage::Int16, "x/4", Some("x*4")),
            rows,
            columns,
            column_major: false,
            rows_reversed: false,
            columns_reversed: false,
            level: None,
        }
    }

    fn stored(address: u64, count: u32) -> wit::Axis {
        wit::Axis {
            name: Some("Voltage".into()),
            points: wit::Points::Stored(wit::StoredPoints {
                address,
                count,
                scaling: cells(wit::Storage::Uint16, "x/1023*5", None),
            }),
            reversed: false,
        }
    }

    #[test]
    fn a_served_table_becomes_a_table_the_tools_read() {
        let t = table(served_table(Some(stored(0x604A, 33)), None)).unwrap();
        assert_eq!(t.table_type, TableType::OneAxis);
        assert_eq!((t.address, t.rows(), t.cols()), (0x608C, 33, 1));
        assert_eq!(t.scaling.storage, Storage::I16);
        assert_eq!(t.scaling.to_physical(400.0), 100.0);
        assert_eq!(t.unit(), Some("kg/h"));
        // An axis given as columns alone is the table's only axis.
        let t = table(served_table(None, Some(stored(0x604A, 33)))).unwrap();
        assert_eq!(
            (t.table_type, t.rows(), t.cols()),
            (TableType::OneAxis, 33, 1)
        );
        let grid = table(served_table(Some(stored(0x10, 3)), Some(stored(0x20, 18)))).unwrap();
        assert_eq!(
            (grid.table_type, grid.rows(), grid.cols()),
            (TableType::Grid, 3, 18)
        );
        let scalar = table(served_table(None, None)).unwrap();
        assert_eq!(scalar.table_type, TableType::Scalar);
    }

    #[test]
    fn what_the_tools_cannot_use_is_refused_with_the_reason() {
        let mut t = served_table(None, None);
        t.scaling.to_physical = "x % 7".into();
        assert!(table(t).unwrap_err().contains("to-physical"));
        let mut t = served_table(None, None);
        t.address = 1 << 40;
        assert!(table(t).unwrap_err().contains("past 4 GiB"));
        let mut t = served_table(None, None);
        t.scaling.choices = vec![
            wit::Choice {
                name: "on".into(),
                bytes: vec![1],
            },
            wit::Choice {
                name: "off".into(),
                bytes: vec![0, 0],
            },
        ];
        assert!(table(t).unwrap_err().contains("differ in length"));
        let mut t = served_table(None, None);
        t.scaling.storage = wit::Storage::Bits;
        t.scaling.choices = vec![wit::Choice {
            name: "on".into(),
            bytes: vec![1],
        }];
        assert!(table(t).unwrap_err().contains("bit table"));
    }

    #[test]
    fn a_bits_storage_is_a_bit_table() {
        let mut t = served_table(Some(stored(0x10, 8)), None);
        t.scaling.storage = wit::Storage::Bits;
        let t = table(t).unwrap();
        assert_eq!(
            (t.scaling.storage, &t.scaling.kind),
            (Storage::Bits, &Kind::Bit)
        );
        // Eight one-bit cells take one byte.
        assert_eq!(t.byte_len(), 1);
        assert_eq!(t.unit(), None);
    }

    #[test]
    fn images_fit_by_id_or_by_size() {
        let image = b"....DZ1E402B....".to_vec();
        let id = |offset, bytes: &[u8]| {
            wit::ImageId::Bytes(wit::IdBytes {
                offset,
                bytes: bytes.to_vec(),
            })
        };
        assert_eq!(fits(&id(4, b"DZ1E402B"), &image, 0), Some(Ok(true)));
        assert!(
            fits(&id(4, b"DZ1E402C"), &image, 0)
                .unwrap()
                .unwrap_err()
                .contains("ROM has")
        );
        assert!(
            fits(&id(u64::MAX, b"D"), &image, 0)
                .unwrap()
                .unwrap_err()
                .contains("past the end")
        );
        assert_eq!(fits(&wit::ImageId::Length(16), &image, 0), Some(Ok(false)));
        assert!(
            fits(&wit::ImageId::Length(0x8000), &image, 0)
                .unwrap()
                .unwrap_err()
                .contains("32768-byte image")
        );
        assert_eq!(fits(&wit::ImageId::None, &image, 0), None);
        // Under a memory model that starts at 0x10000, the id's offset is
        // an ECU address.
        assert_eq!(
            fits(&id(0x1_0004, b"DZ1E402B"), &image, 0x1_0000),
            Some(Ok(true))
        );
        assert!(
            fits(&id(4, b"DZ1E402B"), &image, 0x1_0000)
                .unwrap()
                .unwrap_err()
                .contains("below the image start")
        );
    }

    fn candidate(title: &str, includes: &[&str]) -> wit::Candidate {
        wit::Candidate {
            key: title.into(),
            title: title.into(),
            id: wit::ImageId::None,
            fields: Vec::new(),
            includes: includes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_chain_follows_includes_once_each_and_names_what_is_missing() {
        let (a, b, c) = (Path::new("a.xml"), Path::new("b.xml"), Path::new("c.xml"));
        let child = candidate("CHILD", &["MID", "GONE"]);
        let mid = candidate("MID", &["BASE", "CHILD"]);
        let base = candidate("BASE", &["MID"]);
        let by_title = HashMap::from([
            ("CHILD", (a, &child)),
            ("MID", (b, &mid)),
            ("BASE", (c, &base)),
        ]);
        let (chain, missing) = chain_of(a, &child, &by_title);
        // Nearest first; the loops back to CHILD and MID end.
        assert_eq!(chain, vec![a, b, c]);
        assert_eq!(missing, vec!["GONE".to_string()]);
        // Two definitions in one file: the file is passed once.
        let by_title = HashMap::from([("MID", (a, &mid)), ("BASE", (a, &base))]);
        let (chain, missing) = chain_of(a, &child, &by_title);
        assert_eq!(chain, vec![a]);
        assert_eq!(missing, vec!["GONE".to_string()]);
    }

    #[test]
    fn checksum_edits_are_written_only_when_all_fit() {
        let mut rom = vec![0u8; 8];
        let edit = |offset, bytes: &[u8]| wit::Edit {
            offset,
            bytes: bytes.to_vec(),
        };
        apply(&mut rom, &[edit(6, &[1, 2])], "Test").unwrap();
        assert_eq!(rom, [0, 0, 0, 0, 0, 0, 1, 2]);
        let err = apply(&mut rom, &[edit(0, &[9]), edit(7, &[3, 4])], "Test").unwrap_err();
        assert!(err.contains("past the end of the 8-byte image"), "{err}");
        assert_eq!(rom[0], 0, "nothing is written when one edit does not fit");
        assert!(apply(&mut rom, &[edit(u64::MAX, &[1])], "Test").is_err());
    }
}
