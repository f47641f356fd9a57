//! What detection hands the reader: the plan of a file's layout, how its
//! fields' raw values scale, and the bound on its width. Apart from
//! [`crate::detect`] so that Haltech's preamble reader, which builds a plan
//! of its own, and the reader, which follows one, need no more than this.

use crate::format::{DateKind, Format, TimeUnit};

/// Most columns a log may have: a header wider than this is refused before
/// it is split (a million-column header would otherwise take hundreds of
/// MiB of names).
pub const MAX_COLUMNS: usize = 32_768;

/// How a field's raw integers turn into what the logger's own software
/// shows (Haltech NSP's scale of each channel type).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// Multiplier of the raw value.
    pub mul: f64,
    /// Added after multiplying.
    pub add: f64,
    /// Fraction digits of the result.
    pub decimals: u8,
}

/// How to read a file: what detection found.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The logger recognised.
    pub format: Format,
    /// The field separator (`,`, `;` or tab).
    pub delimiter: u8,
    /// Byte offset (in the UTF-8 text) of the first line after the header
    /// block (preamble, header, units and alias rows).
    pub body_start: usize,
    /// The channel name of each field.
    pub names: Vec<String>,
    /// The units row's text for each field, when the log has one.
    pub units: Vec<String>,
    /// Fields that are not channels.
    pub hidden: Vec<usize>,
    /// The time axis when detection knows it better than the names say.
    pub time: Option<(usize, TimeUnit)>,
    /// The log's own start time (seconds since 1970 of its local clock).
    pub date: Option<i64>,
    /// How `date` reads (a day only, for BlueDriver).
    pub date_kind: DateKind,
    /// Haltech: how each field's raw integers scale (by index; empty for
    /// other loggers).
    pub scales: Vec<Option<Scale>>,
    /// What the log's reader should know of how it was read.
    pub notes: Vec<String>,
    /// What the file says wrote it.
    pub source: Option<String>,
}

/// Why a header of `n` columns (or more, when `at_least`) is refused.
pub(crate) fn too_many_columns(n: usize, at_least: bool) -> String {
    format!(
        "its header line has {}{n} columns; log-query reads logs of up to {MAX_COLUMNS} \
         columns. Keep fewer channels in the logger's configuration, or cut the file to the \
         columns you need (e.g. `cut -d, -f1-100 FILE > smaller.csv`) into the logs directory.",
        if at_least { "at least " } else { "" }
    )
}
