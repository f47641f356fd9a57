//! Errors of the ECU tools. Each message says what was wrong and what to do.

use crate::checksum::ChecksumError;
use crate::decode::OutOfRom;
use crate::patch::PatchError;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no definitions directory is configured: start benchtop with --definitions-path DIR, set ECU_DEFINITIONS_PATH, or set ecuExplorer.definitionsPath in .vscode/settings.json"
    )]
    NoDefinitionsPath,

    #[error(
        "cannot read the definitions directory {path}: {source}; check --definitions-path / ECU_DEFINITIONS_PATH"
    )]
    DefinitionsDir { path: PathBuf, source: io::Error },

    #[error("cannot read ROM: {explanation}")]
    RomRead {
        path: PathBuf,
        source: io::Error,
        explanation: String,
    },

    #[error(
        "no definition matches ROM {rom}: tried {tried}. Add the ROM's ECUFlash definition to {dir}, or check that the file is a raw ROM image"
    )]
    UnknownRom {
        rom: PathBuf,
        dir: PathBuf,
        tried: String,
    },

    #[error("definition {file}: {message}")]
    Definition { file: PathBuf, message: String },

    #[error("no table named `{table}` in {definition}.{hint} Call list_tables to see the names")]
    UnknownTable {
        table: String,
        definition: String,
        hint: String,
    },

    #[error("`{table}` names {n} tables at different addresses: pass one of {list}", n = candidates.len(), list = candidates.join(" | "))]
    AmbiguousTable {
        table: String,
        candidates: Vec<String>,
    },

    #[error("{0}")]
    InvalidArgument(String),

    #[error(transparent)]
    Patch(#[from] PatchError),

    #[error("{0}; the definition does not fit this ROM image")]
    OutOfRom(#[from] OutOfRom),

    #[error("{0}")]
    Checksum(#[from] ChecksumError),

    #[error(
        "the user {0} the patch; nothing was written. Ask what to change, or patch again with other values"
    )]
    NotConfirmed(&'static str),

    #[error("cannot write ROM {path}: {message}. The ROM on disk was not changed")]
    Write { path: PathBuf, message: String },
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
