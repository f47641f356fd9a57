//! Errors of the ECU tools. Each message says what was wrong and what to do.

use crate::checksum::ChecksumError;
use crate::decode::OutOfRom;
use crate::patch::PatchError;
use std::io;
use std::path::PathBuf;

/// Why an ECU tool failed. The message (Display) is written for the agent;
/// [`Error::code`] is the stable code it can branch on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neither the flag, the environment nor the workspace settings name a
    /// definitions directory.
    #[error(
        "no definitions directory is configured: start benchtop with --definitions-path DIR, set ECU_DEFINITIONS_PATH, or set ecuExplorer.definitionsPath in .vscode/settings.json"
    )]
    NoDefinitionsPath,

    /// The definitions directory exists in the settings but cannot be read.
    #[error(
        "cannot read the definitions directory {path}: {source}; check --definitions-path / ECU_DEFINITIONS_PATH"
    )]
    DefinitionsDir {
        /// The directory as configured.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },

    /// The ROM file could not be read (see [`Error::rom_read`]).
    #[error("cannot read ROM: {explanation}")]
    RomRead {
        /// The ROM path as given.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
        /// The path and the OS error in words, including whether the path
        /// lies outside the directories the host grants.
        explanation: String,
    },

    /// No definition's ROM id matches the bytes at its internal id address.
    #[error(
        "no definition matches ROM {rom}: tried {tried}. Add the ROM's ECUFlash definition to {dir}, or check that the file is a raw ROM image"
    )]
    UnknownRom {
        /// The ROM path.
        rom: PathBuf,
        /// The definitions directory searched.
        dir: PathBuf,
        /// Each definition tried and what the ROM held at its id address,
        /// joined with "; ".
        tried: String,
    },

    /// A definition file is malformed or its include chain is broken.
    #[error("definition {file}: {message}")]
    Definition {
        /// The definition file at fault.
        file: PathBuf,
        /// What is wrong in it.
        message: String,
    },

    /// The definition has no table of that name.
    #[error("no table named `{table}` in {definition}.{hint} Call list_tables to see the names")]
    UnknownTable {
        /// The name asked for.
        table: String,
        /// The matched definition: its xmlid with year, market and model.
        definition: String,
        /// " Did you mean …?" with the closest names, or empty.
        hint: String,
    },

    /// The name fits several tables at different addresses.
    #[error("`{table}` names {n} tables at different addresses: pass one of {list}", n = candidates.len(), list = candidates.join(" | "))]
    AmbiguousTable {
        /// The name asked for.
        table: String,
        /// The tables' unique ids (`NAME @0xADDRESS`), to pass back.
        candidates: Vec<String>,
    },

    /// An argument is malformed or out of range (the message says which).
    #[error("{0}")]
    InvalidArgument(String),

    /// A patch was refused before anything was written.
    #[error(transparent)]
    Patch(#[from] PatchError),

    /// A table reaches past the end of the ROM image.
    #[error("{0}; the definition does not fit this ROM image")]
    OutOfRom(#[from] OutOfRom),

    /// The ROM's checksum module cannot be verified or repaired, so a
    /// patch would leave the ROM unbootable.
    #[error("{0}")]
    Checksum(#[from] ChecksumError),

    /// The user declined or dismissed the confirmation (which of the two).
    #[error(
        "the user {0} the patch; nothing was written. Ask what to change, or patch again with other values"
    )]
    NotConfirmed(&'static str),

    /// What the patch would write changed between the question and the
    /// write (another writer patched the ROM, moved an axis, changed the
    /// cells), so the user's confirmation does not hold for it.
    #[error(
        "the ROM changed while the user was asked (another writer patched it), so this patch would no longer write the cells and values that were confirmed; nothing was written. Call patch_table again to be asked about the patch as it now stands"
    )]
    ChangedSinceConfirmed,

    /// Reading a log or applying a filter failed (overlay_log): the shared
    /// log reader's code (`UNKNOWN_FILE`, `BAD_FILTER`, `UNKNOWN_CHANNEL`, …).
    #[error("{}", .0.message)]
    Log(datalog::ToolError),

    /// Writing the patched ROM failed; the write is atomic, so the file on
    /// disk is as it was.
    #[error("cannot write ROM {path}: {message}. The ROM on disk was not changed")]
    Write {
        /// The ROM path.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
}

impl Error {
    /// The stable code of this failure (`benchtop:host/errors.tool-error`),
    /// what an agent branches on: each variant has its own, and a refused
    /// patch says why it was refused.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NoDefinitionsPath => "NO_DEFINITIONS_PATH",
            Error::DefinitionsDir { .. } => "DEFINITIONS_UNREADABLE",
            Error::RomRead { .. } => "ROM_UNREADABLE",
            Error::UnknownRom { .. } => "UNKNOWN_ROM",
            Error::Definition { .. } => "BAD_DEFINITION",
            Error::UnknownTable { .. } => "UNKNOWN_TABLE",
            Error::AmbiguousTable { .. } => "AMBIGUOUS_TABLE",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::Patch(PatchError::OutOfRange { .. }) => "OUT_OF_RANGE",
            Error::Patch(PatchError::Invalid(_)) => "INVALID_ARGUMENT",
            Error::Patch(PatchError::NotRepresentable(_)) => "NOT_REPRESENTABLE",
            Error::Patch(PatchError::Unsafe { .. }) => "UNSAFE_PATCH",
            Error::OutOfRom(_) => "OUTSIDE_ROM",
            Error::Checksum(_) => "CHECKSUM_UNSUPPORTED",
            Error::Write { .. } => "WRITE_FAILED",
            Error::NotConfirmed(_) => "PATCH_NOT_CONFIRMED",
            Error::ChangedSinceConfirmed => "CHANGED_SINCE_CONFIRMED",
            Error::Log(e) => e.code,
        }
    }

    /// Says whether the ROM is outside the granted directories, or what the OS said.
    pub fn rom_read(path: PathBuf, source: io::Error) -> Self {
        let explanation = plugin_kit::paths::explain_io_error(&path, &source, false);
        Error::RomRead {
            path,
            source,
            explanation,
        }
    }
}
