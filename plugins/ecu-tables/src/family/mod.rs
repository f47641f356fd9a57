//! Definition families: the formats ROM definitions come in.
//!
//! A family knows one format: which files of a definitions folder are its
//! own, which of their definitions describe an image (by the internal id
//! the image carries), and each one's resolved [`Definition`]: table
//! layouts, scalings, checksum module. Everything else (reading and caching
//! images, decoding and patching tables, checksums, the tools) is
//! family-neutral and never asks which family a definition came from.
//!
//! No family is built in. Each is an ecu-model [`Format`] made a [`Family`]
//! by [`format::FormatFamily`]: in the server, the components answering
//! `benchtop:ecu-family` (the first-party ECUFlash and RomRaider families,
//! TunerPro XDF, any third party's), reached through [`Served`] and
//! [`peer`]; natively (tests, benchmarks), the family crates linked in.
//! The store asks each in turn (see [`crate::store::Explorer`]).
//!
//! [`Format`]: ecu_model::family::Format

pub mod format;
pub mod peer;
pub mod remembered;

use crate::definition::Definition;
use crate::error::Error;
use ecu_model::family::Candidate;
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
    /// None when the family could not be asked (its plugin trapped, ran
    /// past its deadline or was removed): taken as no for this call, and
    /// never kept between runs.
    fn claims(&self, path: &Path, head: &[u8]) -> Option<bool>;

    /// The definitions among `files` (the ones this family claims, freshly
    /// stamped; parse again only what changed) whose internal id `image`
    /// holds, resolved, the most specific first.
    fn recognize(
        &mut self,
        dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error>;

    /// What it identified in each file so far, with the file's stamp then:
    /// what [`crate::folder_index`] keeps between runs. None for a family that
    /// keeps nothing.
    fn identified(&self) -> Vec<IdentifiedFile> {
        Vec::new()
    }

    /// Takes what an earlier run identified (each still checked against
    /// the file's stamp before it is used).
    fn recall(&mut self, _files: Vec<IdentifiedFile>) {}
}

/// A file, its stamp when it was identified, and what its family found in
/// it (or why it could not): what a family keeps between runs.
pub type IdentifiedFile = (PathBuf, Stamp, Result<Vec<Candidate>, String>);

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
    /// generation names the serving code, so it changes when other code
    /// is loaded (hot swap) and is the same in a later process.
    fn providers(&self) -> Vec<(String, u64)>;

    /// The family `plugin` serves (its code is `code`, the generation),
    /// or why it cannot be asked.
    fn family(&self, plugin: &str, code: u64) -> Result<Box<dyn Family>, String>;
}

/// Bytes of a definitions file read to tell its family, which are also
/// what a family identifies the file from first
/// ([`ecu_model::family::HEAD_BYTES`]): ECUFlash's id and includes sit in
/// the first few hundred bytes of real definitions (every `</include>` of
/// the 378 ECUFlash files of the SubaruDefs and EvoScan trees ends by byte
/// 2,334; RomRaider's first element follows a disclaimer of up to 2 KiB),
/// and reading more of a large tree (16 KiB heads were 5.3 MB, every read a
/// host call in the sandbox) was most of the first rom_info. A family that
/// cannot tell from the head is given the whole file.
pub const SNIFF_BYTES: usize = ecu_model::family::HEAD_BYTES;

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
