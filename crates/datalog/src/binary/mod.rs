//! Binary datalogs read into the same columns as CSV ones, so filters,
//! plots and overlays work on them unchanged: MegaLogViewer MLG
//! ([`mlg`]), Link PCLink `.llg`/`.llg5` ([`link`]), ECUMaster EMU Black
//! `.emublog` ([`emublog`]) and Emerald K6 `.lg1` + `.lg2` ([`emerald`]).
//!
//! Each format is recognised from its first bytes ([`sniff`]), whatever the
//! file is named; the extension only matters for Emerald, whose records
//! carry no magic number. Every count and offset a file states is checked
//! against what follows it, and every size is capped: a hostile file is
//! refused with the reason, never read without bound.
//!
//! Layouts are restated from `shared/reference/log-formats.md` and checked
//! against the real files in `shared/fixtures/realworld/logs`.

pub mod emerald;
pub mod emublog;
pub mod link;
pub mod mlg;

use crate::column::Column;
use crate::format::{DateKind, Format, TimeUnit};
// Rounding is shared with the CSV reader and Haltech's scales, so it lives in
// `format`; the format readers below take it from here with their other helpers.
use crate::format::round_to;
use crate::log::{Log, Marker, Need};
use std::fmt;

/// A binary log format [`sniff`] recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// MegaLogViewer `MLVLG`.
    Mlg,
    /// Link PCLink chunks (`lf3` first).
    Link,
    /// A gzip stream holding an EMU Black log.
    EmuBlack,
    /// Emerald K6 `.lg1` records.
    Emerald,
    /// An AEMdata `.daq` (`EMERALD v1.00 file` header): recognised so it is
    /// reported as what it is, not read.
    AemDaq,
}

/// Why a binary log cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub enum BinaryError {
    /// The file ends before a part its header announces.
    Truncated {
        /// The part that is cut short, e.g. "the MLG field list".
        what: String,
        /// Bytes the part needs.
        need: u64,
        /// Bytes the file has for it.
        have: u64,
    },
    /// A header field holds a value the format does not allow.
    BadHeader {
        /// The format, e.g. "MLG".
        format: &'static str,
        /// What is wrong, in words.
        why: String,
    },
    /// A format version this reader does not know.
    UnsupportedVersion {
        /// The format, e.g. "MLG".
        format: &'static str,
        /// The version the file states.
        version: i64,
    },
    /// The file states more of something than a log of this kind may hold.
    TooLarge {
        /// What there is too much of, e.g. "samples".
        what: &'static str,
        /// How many the file states or holds.
        count: u64,
        /// The most that is read.
        limit: u64,
    },
    /// Converting the channels asked for would keep more values than one
    /// read may: a property of the request, not of the file.
    TooManyCells {
        /// Rows of the log (read so far).
        rows: u64,
        /// Channels asked for.
        channels: u64,
    },
    /// A compressed stream does not inflate.
    Inflate(String),
    /// A format recognised but not read (why, and what to do instead).
    Unsupported(String),
    /// The file could not be read (the I/O error's message).
    Io(String),
}

impl fmt::Display for BinaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BinaryError::Truncated { what, need, have } => write!(
                f,
                "the file ends inside {what} ({need} bytes announced, {have} present): it \
                 was cut short (an interrupted copy or download?); copy it again from the \
                 logger"
            ),
            BinaryError::BadHeader { format, why } => {
                write!(f, "not a readable {format} log: {why}")
            }
            BinaryError::UnsupportedVersion { format, version } => write!(
                f,
                "{format} version {version} is not one log-query reads; export the log as CSV \
                 from the logger's software"
            ),
            BinaryError::TooLarge { what, count, limit } => write!(
                f,
                "it holds {count} {what}, more than the {limit} log-query reads from one log; \
                 split the log in the logger's software (or export the part you need)"
            ),
            BinaryError::TooManyCells { rows, channels } => write!(
                f,
                "converting {channels} channels over {rows}+ rows would keep more than \
                 {MAX_CELLS} values; ask for fewer channels at once (query_logs converts only \
                 the channels its filter and `channels` name)"
            ),
            BinaryError::Inflate(e) => write!(
                f,
                "its gzip-compressed data does not inflate ({e}): the file is damaged or cut \
                 short; copy it again from the logger"
            ),
            BinaryError::Unsupported(why) => write!(f, "{why}"),
            BinaryError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BinaryError {}

impl From<std::io::Error> for BinaryError {
    fn from(e: std::io::Error) -> Self {
        BinaryError::Io(e.to_string())
    }
}

/// Most rows (records, time stamps) read from one binary log: a 20 Hz log
/// of 11 days; past it the rest is left with a note.
pub const MAX_ROWS: usize = 20_000_000;
/// Most cells (rows × converted channels) one read keeps: 256 MiB of
/// values, the cache's whole budget.
pub const MAX_CELLS: u64 = 32 << 20;

/// Recognises a binary log from its first bytes (at least the first 64
/// bytes when the file has them) and its file name (which only decides an
/// Emerald `.lg1` whose first record is damaged).
pub fn sniff(head: &[u8], file_name: &str) -> Option<Kind> {
    if head.starts_with(mlg::MAGIC) {
        return Some(Kind::Mlg);
    }
    if link::is_link(head) {
        return Some(Kind::Link);
    }
    if head.starts_with(emerald::AEM_MAGIC) {
        return Some(Kind::AemDaq);
    }
    if head.starts_with(&emublog::GZIP_MAGIC) && emublog::is_emu_black(head) {
        return Some(Kind::EmuBlack);
    }
    let ext = extension(file_name);
    if ext == "lg1" || emerald::looks_like(head) {
        return Some(Kind::Emerald);
    }
    None
}

/// The lower-case extension of a file name ("" when it has none).
pub(crate) fn extension(file_name: &str) -> String {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// Reads a binary log of kind `kind` from `source` (the whole file from its
/// first byte), converting the channels `need` names; `companion` is the
/// content of a file read with it (an Emerald `.lg1`'s `.lg2`).
pub fn read(
    kind: Kind,
    source: impl std::io::Read,
    file_name: &str,
    need: &Need,
    companion: Option<&[u8]>,
) -> Result<Log, BinaryError> {
    match kind {
        Kind::Mlg => mlg::read(source, need),
        Kind::Link => link::read(source, need),
        Kind::EmuBlack => emublog::read(source, need),
        Kind::Emerald => emerald::read(source, file_name, need, companion),
        Kind::AemDaq => Err(BinaryError::Unsupported(
            "it is an AEMdata DAQ log (`EMERALD v1.00 file` header, AEM channels named like \
             `Engine Speed_SRC0`), not an Emerald K6 log; its layout is not published and \
             log-query does not read it. Export the log as CSV from AEMdata."
                .into(),
        )),
    }
}

/// Reads exactly `buf.len()` bytes; false when the source ends first (then
/// `buf` holds what there was, and `got` says how much).
pub(crate) fn read_full(
    source: &mut impl std::io::Read,
    buf: &mut [u8],
    got: &mut usize,
) -> Result<bool, BinaryError> {
    *got = 0;
    while *got < buf.len() {
        match source.read(&mut buf[*got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => *got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Reads exactly `n` bytes into a new buffer, or says which part was cut.
pub(crate) fn read_exact_part(
    source: &mut impl std::io::Read,
    n: usize,
    what: &str,
) -> Result<Vec<u8>, BinaryError> {
    let mut buf = vec![0u8; n];
    let mut got = 0;
    if !read_full(source, &mut buf, &mut got)? {
        return Err(BinaryError::Truncated {
            what: what.to_string(),
            need: n as u64,
            have: got as u64,
        });
    }
    Ok(buf)
}

/// Skips `n` bytes of `source`; false when it ends first.
pub(crate) fn skip(source: &mut impl std::io::Read, n: u64) -> Result<bool, BinaryError> {
    let copied = std::io::copy(&mut std::io::Read::take(source, n), &mut std::io::sink())?;
    Ok(copied == n)
}

/// The value an `f32` stands for as its shortest decimal (what the logger's
/// own display shows), so `AFR == 14.7` matches a stored 14.7f32; `None`
/// for NaN and infinities.
pub(crate) fn f32_decimal(v: f32) -> Option<(f64, u8)> {
    if !v.is_finite() {
        return None;
    }
    // Display prints the shortest digits that read back as the same f32,
    // never in exponent form.
    let text = v.to_string();
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len().min(12));
    text.parse::<f64>().ok().map(|x| (x, decimals as u8))
}

/// Gives repeated names a ` #2`, ` #3` suffix (as the CSV reader does), in
/// linear time.
pub(crate) fn unique_names(names: Vec<String>) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let mut used: HashSet<String> = HashSet::with_capacity(names.len());
    let mut next: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let mut unique = name.clone();
        if used.contains(&unique) {
            let k = next.entry(name.clone()).or_insert(2);
            loop {
                unique = format!("{name} #{k}");
                *k += 1;
                if !used.contains(&unique) {
                    break;
                }
            }
        }
        used.insert(unique.clone());
        out.push(unique);
    }
    out
}

/// A column named `name` whose cells are kept only when `need` wants it.
pub(crate) fn column(name: &str, unit: &str, need: &Need) -> Column {
    let mut c = Column::new(name);
    c.unit = unit.to_string();
    c.loaded = need.wants(name);
    c
}

/// Refuses to keep more than [`MAX_CELLS`] cells for `rows` rows.
pub(crate) fn check_cells(rows: usize, columns: &[Column]) -> Result<(), BinaryError> {
    if rows > row_cap(columns) {
        return Err(BinaryError::TooManyCells {
            rows: rows as u64,
            channels: columns.iter().filter(|c| c.loaded).count() as u64,
        });
    }
    Ok(())
}

/// The most rows whose converted cells stay within [`MAX_CELLS`] (and
/// [`MAX_ROWS`]): checked as rows are read, so memory never passes it.
pub(crate) fn row_cap(columns: &[Column]) -> usize {
    let loaded = columns.iter().filter(|c| c.loaded).count().max(1) as u64;
    (MAX_CELLS / loaded).min(MAX_ROWS as u64) as usize
}

/// What a binary reader found, turned into a [`Log`].
pub(crate) struct Parts {
    pub format: Format,
    pub columns: Vec<Column>,
    /// Seconds of each row (NaN where unknown).
    pub time: Vec<f64>,
    /// The column holding `time`, when there is one.
    pub time_column: Option<usize>,
    pub start_date: Option<i64>,
    pub date_kind: DateKind,
    pub source: Option<String>,
    pub markers: Vec<Marker>,
    pub notes: Vec<String>,
}

impl Parts {
    /// An empty log of `format`.
    pub fn new(format: Format) -> Parts {
        Parts {
            format,
            columns: Vec::new(),
            time: Vec::new(),
            time_column: None,
            start_date: None,
            date_kind: DateKind::Local,
            source: None,
            markers: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a `Marker` column holding each marker's text on its row (when
    /// `need` wants it; the markers stay in [`Log::markers`] either way).
    pub fn add_marker_column(&mut self, need: &Need) {
        if self.markers.is_empty() {
            return;
        }
        let taken: Vec<String> = self.columns.iter().map(|c| c.name.clone()).collect();
        let mut name = "Marker".to_string();
        let mut k = 2;
        while taken.contains(&name) {
            name = format!("Marker #{k}");
            k += 1;
        }
        let mut col = column(&name, "", need);
        if col.loaded {
            let rows = self.time.len();
            let mut texts: Vec<Option<String>> = vec![None; rows];
            for m in &self.markers {
                if let Some(slot) = texts.get_mut(m.row) {
                    match slot {
                        Some(t) => {
                            t.push_str("; ");
                            t.push_str(&m.text);
                        }
                        None => *slot = Some(m.text.clone()),
                    }
                }
            }
            for t in texts {
                match t {
                    Some(t) => col.push_text(&t),
                    None => col.push_null(),
                }
            }
        }
        self.columns.push(col);
    }

    /// The log, its time axis in seconds.
    pub fn into_log(self) -> Log {
        let time_decimals = self
            .time_column
            .and_then(|c| self.columns.get(c))
            .map_or(3, |c| c.decimals.clamp(2, 6));
        Log {
            columns: self.columns,
            time: crate::log::Times::Own(self.time),
            bounds: Default::default(),
            time_column: self.time_column,
            time_unit: self.time_column.map(|_| TimeUnit::Seconds),
            time_decimals,
            format: self.format,
            delimiter: b',',
            header_changes: 0,
            ragged_lines: 0,
            start_clock: None,
            start_date: self.start_date,
            start_date_kind: self.date_kind,
            encoding: crate::detect::Encoding::Utf8,
            time_origin: 0.0,
            source: self.source,
            markers: self.markers,
            notes: self.notes,
        }
    }
}

/// Text of a NUL-padded byte field (Latin-1 bytes kept as such).
pub(crate) fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    bytes[..end].iter().map(|&b| b as char).collect::<String>()
}

/// Text of a NUL-terminated UTF-16LE field.
pub(crate) fn utf16_string(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_values_read_as_their_shortest_decimal() {
        assert_eq!(f32_decimal(14.7), Some((14.7, 1)));
        assert_eq!(f32_decimal(0.066), Some((0.066, 3)));
        assert_eq!(f32_decimal(0.1 + 0.2), Some((0.3, 1)));
        assert_eq!(f32_decimal(-1.932), Some((-1.932, 3)));
        assert_eq!(f32_decimal(1200.0), Some((1200.0, 0)));
        assert_eq!(f32_decimal(f32::NAN), None);
        assert_eq!(f32_decimal(f32::INFINITY), None);
        assert_eq!(round_to(147.0 * 0.1, 1), 14.7);
        assert_eq!(round_to(1e300, 3), 1e300);
    }

    #[test]
    fn names_are_made_unique_and_extensions_read() {
        let names = unique_names(vec!["a".into(), "a".into(), "a #2".into(), "b".into()]);
        assert_eq!(names, ["a", "a #2", "a #2 #2", "b"]);
        assert_eq!(extension("car1/EM Log.LG1"), "lg1");
        assert_eq!(extension(".hidden"), "");
        assert_eq!(extension("noext"), "");
    }

    #[test]
    fn formats_are_sniffed_from_content_not_names() {
        assert_eq!(sniff(b"MLVLG\0\0\x01rest", "x.csv"), Some(Kind::Mlg));
        assert_eq!(
            sniff(b"\xd7\0\0\0lf3\xe5\x01\0\0\0", "x.bin"),
            Some(Kind::Link)
        );
        assert_eq!(
            sniff(b"EMERALD v1.00 file\x1a", "a.daq"),
            Some(Kind::AemDaq)
        );
        assert_eq!(sniff(b"Time,RPM\n0,1\n", "x.lg2"), None);
        assert_eq!(sniff(b"Time,RPM\n0,1\n", "x.csv"), None);
        // An Emerald record: an OLE date (2025-12-31 14:13) and 8 values.
        let mut rec = 46022.59f64.to_le_bytes().to_vec();
        rec.extend([0u8; 16]);
        assert_eq!(sniff(&rec, "renamed.daq"), Some(Kind::Emerald));
    }
}
