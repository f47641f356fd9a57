//! Definition families: the formats ROM definitions come in.
//!
//! A family knows one format: which files of a definitions folder are its
//! own, which of their definitions describe an image (by the internal id
//! the image carries), and each one's resolved [`Definition`]: table
//! layouts, scalings, checksum module. Everything else (reading and caching
//! images, decoding and patching tables, checksums, the tools) is
//! family-neutral and never asks which family a definition came from.
//!
//! [`EcuFlash`] is built in; every other family is a component answering
//! `benchtop:ecu-family` (the first-party RomRaider family and TunerPro
//! XDF among them), reached through [`Served`] and [`peer`]. The store
//! asks each in turn (see [`crate::store::Explorer`]).

mod ecuflash;
pub mod peer;

pub use ecuflash::EcuFlash;

use crate::definition::Definition;
use crate::error::Error;
use crate::xml::RomId;
use std::fs;
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
    /// The stamp of a file's metadata.
    pub fn of(meta: &fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

/// One definition format.
pub trait Family: Send {
    /// The format's name as tuners know it (`ECUFlash`, `RomRaider`).
    fn name(&self) -> &str;

    /// Extensions (lowercase, no dot) of its definition files.
    fn extensions(&self) -> Vec<String> {
        vec!["xml".into()]
    }

    /// Whether the definitions file at `path`, whose first bytes (up to
    /// [`SNIFF_BYTES`]) are `head`, is in this format. Cheap: asked once
    /// per file and change.
    fn claims(&self, path: &Path, head: &[u8]) -> bool;

    /// True for the family that takes what no other claims (ECUFlash, so
    /// a broken XML file is reported rather than ignored): asked last.
    fn catch_all(&self) -> bool {
        false
    }

    /// The definitions among `files` (the ones this family claims, freshly
    /// stamped; parse again only what changed) whose internal id `image`
    /// holds, resolved, the most specific first.
    fn recognize(
        &mut self,
        dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error>;
}

/// A definitions file as the store hands it to the family that claims it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The file.
    pub path: PathBuf,
    /// Its size and mtime now.
    pub stamp: Stamp,
    /// Its first [`SNIFF_BYTES`], when the store read them during this call
    /// to tell its family (the file is new or changed): a family that needs
    /// the head uses these rather than reading the file again.
    pub head: Option<Vec<u8>>,
}

/// What a family found for an image.
#[derive(Debug, Default)]
pub struct Recognition {
    /// Definitions whose internal id the image holds, most specific first.
    pub matches: Vec<Arc<Definition>>,
    /// Definitions that fit the image by its size alone (their format
    /// carries no id): chosen only when no id matches, and said so.
    pub by_size: Vec<Arc<Definition>>,
    /// `XMLID (expects … at 0x…, ROM has …)` for each id that did not match.
    pub tried: Vec<String>,
}

/// Families other plugins serve, as found at each call (hot swap adds and
/// removes them while the server runs).
pub trait Served: Send {
    /// `(plugin, generation)` of each plugin serving a family now; the
    /// generation changes when the plugin is loaded again.
    fn providers(&self) -> Vec<(String, u64)>;

    /// The family `plugin` serves, or why it cannot be asked.
    fn family(&self, plugin: &str) -> Result<Box<dyn Family>, String>;
}

/// The families built into this plugin, asked before served ones.
pub fn first_party() -> Vec<Box<dyn Family>> {
    vec![Box::new(EcuFlash::default())]
}

/// Bytes of a definitions file read to tell its family, which are also
/// what ECUFlash reads its `<romid>` from: the id sits in the first few
/// hundred bytes of real definitions (every `</romid>` of the 333-file
/// SubaruDefs tree ends by byte 1,850; RomRaider's first element follows a
/// disclaimer of up to 2 KiB), and reading more of a large tree (16 KiB
/// heads were 5.3 MB, every read a host call in the sandbox) was most of
/// the first rom_info. A romid past the head is still read, from the whole
/// file.
pub const SNIFF_BYTES: usize = 4 * 1024;

/// The first `len` bytes of the file at `path` (fewer when it is shorter).
pub(crate) fn read_head(path: &Path, len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(len);
    fs::File::open(path)?
        .take(len as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// Files a note names before it counts the rest.
pub(crate) const NAMES_SHOWN: usize = 5;

/// The first [`NAMES_SHOWN`] of `items`, named by `name` and joined with
/// commas, then "and N more" for the rest: a bounded list for a note.
pub(crate) fn some_names<T>(items: &[T], name: impl Fn(&T) -> String) -> String {
    let mut names: Vec<String> = items.iter().take(NAMES_SHOWN).map(name).collect();
    if items.len() > NAMES_SHOWN {
        names.push(format!("and {} more", items.len() - NAMES_SHOWN));
    }
    names.join(", ")
}

/// The file name without its extension: how a file is named in answers.
pub(crate) fn file_label(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Compares a definition's internal id with the image. None when the
/// definition has no id (base files); Err with what the image holds
/// instead. `base` is the ECU address of `rom[0]` (H8/539F reads start at
/// 0x10000).
pub(crate) fn match_id(id: &RomId, rom: &[u8], base: usize) -> Option<Result<(), String>> {
    let internal = id.internal_id()?;
    let address = internal.address as usize;
    let Some(offset) = address.checked_sub(base) else {
        return Some(Err(format!(
            "id address 0x{address:X} is below the image start 0x{base:X}"
        )));
    };
    let (expected, shown_as_text) = (internal.bytes, internal.text);
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
}
