//! A parsed log (its columns, time axis, markers and what was found of the
//! file) and which columns a read converts. Apart from [`crate::reader`] so
//! that the binary readers ([`crate::binary`]), which build the same logs,
//! need not import the CSV reader that calls them; re-exported from
//! [`crate::reader`], where callers find it.

use crate::column::Column;
use crate::detect::Encoding;
use crate::format::{DateKind, Format, TimeUnit, time_unit_of};

/// A parsed log.
#[derive(Debug, Clone)]
pub struct Log {
    /// Every column of the file in header order, channels and bookkeeping
    /// alike.
    pub columns: Vec<Column>,
    /// Time of each row in seconds: see [`Log::time`].
    pub(crate) time: Times,
    /// The first and last times and how many rows are timed, once asked
    /// (a query asks several times; a log does not change once read).
    pub(crate) bounds: std::sync::OnceLock<Option<(f64, f64, usize)>>,
    /// Index in `columns` of the time axis; none when no column is one (then
    /// every `time` is NaN and only row order is known).
    pub time_column: Option<usize>,
    /// How the time column counts, when there is one.
    pub time_unit: Option<TimeUnit>,
    /// Decimals worth printing for `time`.
    pub time_decimals: u8,
    /// The logger recognised.
    pub format: Format,
    /// The field separator found (`,`, `;` or tab).
    pub delimiter: u8,
    /// Header lines met after the first (RomRaider rewrites them).
    pub header_changes: usize,
    /// Lines with more fields than the header (extra fields ignored).
    pub ragged_lines: usize,
    /// First row's `LogEntryDate LogEntryTime` (EvoScan), for dating the log.
    pub start_clock: Option<String>,
    /// The start date and time the log states (ME7Logger, VCDS, a
    /// preamble's date), seconds since 1970 of the logger's clock.
    pub start_date: Option<i64>,
    /// The file's text encoding (non-UTF-8 files are converted while read).
    pub encoding: Encoding,
    /// Subtracted from the time column to give `time`: its first value when
    /// that is an absolute clock (OpenPort's seconds since power-on), else 0.
    pub time_origin: f64,
    /// How `start_date` reads: the logger's local clock, UTC, or a day only.
    pub start_date_kind: DateKind,
    /// What the file says wrote it, when it says (an MLG's firmware, a Link
    /// ECU's model and PCLink version, Haltech NSP's version).
    pub source: Option<String>,
    /// Markers the logger recorded (MLG marker blocks, PCLink's markers),
    /// in order; also the `Marker` column's text.
    pub markers: Vec<Marker>,
    /// What a reader of the log should know about how it was read (values
    /// held, raw ids, a time axis rebuilt, records cut short), in words.
    pub notes: Vec<String>,
}

/// Where a log's times are kept.
#[derive(Debug, Clone)]
pub(crate) enum Times {
    /// Times of their own (converted, shifted or rebuilt).
    Own(Vec<f64>),
    /// The time column's values are the times (seconds from near zero, no
    /// empty or text cell): not copied, since a million-row log's copy is
    /// 8 MB more to fill and to keep.
    Column,
}

/// A marker a logger recorded in a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Seconds on the log's time axis (NaN when unknown).
    pub time_s: f64,
    /// The row it is shown on: the first at or after it.
    pub row: usize,
    /// The marker's text.
    pub text: String,
}

/// EvoScan's columns that date and number rows rather than record a channel.
const BOOKKEEPING: [&str; 4] = ["LogID", "LogEntryDate", "LogEntryTime", "LogEntrySeconds"];

/// Which columns the reader converts; the others keep only their name.
///
/// Converting numbers is most of the cost of reading a log, and a query
/// usually names two or three of a dozen channels: skipping the rest makes
/// a first query several times cheaper. Columns every log needs (the time
/// axis candidates and EvoScan's date) are always converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Every column is converted (a plot of defaults, an offer's summary).
    All,
    /// Only these columns (exact names) are converted, plus the time axis and
    /// EvoScan's date.
    Named(Vec<String>),
}

impl Need {
    /// The columns named in `names` (plus the ones every log needs).
    pub fn named<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Need {
        Need::Named(names.into_iter().map(|n| n.as_ref().to_string()).collect())
    }

    /// True when `column` (an exact name) must be converted.
    pub fn wants(&self, column: &str) -> bool {
        match self {
            Need::All => true,
            Need::Named(names) => {
                names.iter().any(|n| n == column)
                    || time_unit_of(column).is_some()
                    || column == "LogEntryDate"
            }
        }
    }

    /// True when every column of `log` this needs is converted.
    pub fn met_by(&self, log: &Log) -> bool {
        log.columns.iter().all(|c| c.loaded || !self.wants(&c.name))
    }

    /// What `log` already holds and this needs, together.
    pub fn with_loaded(self, log: &Log) -> Need {
        match self {
            Need::All => Need::All,
            Need::Named(mut names) => {
                for c in log.columns.iter().filter(|c| c.loaded) {
                    if !names.contains(&c.name) {
                        names.push(c.name.clone());
                    }
                }
                Need::Named(names)
            }
        }
    }
}

impl Log {
    /// Time of each row in seconds (NaN where unknown).
    pub fn time(&self) -> &[f64] {
        match (&self.time, self.time_column) {
            (Times::Own(t), _) => t,
            (Times::Column, Some(c)) => &self.columns[c].values,
            (Times::Column, None) => &[],
        }
    }

    /// Rows of the log (lines of numbers after the header block).
    pub fn rows(&self) -> usize {
        self.time().len()
    }

    /// Columns shown as channels: everything but the time axis and EvoScan's
    /// bookkeeping columns (which stay queryable by name).
    pub fn channels(&self) -> Vec<&str> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                // An absolute clock stays a channel beside the time from the start.
                (Some(*i) != self.time_column || self.time_origin != 0.0)
                    && !c.hidden
                    && !(self.format == Format::EvoScan && BOOKKEEPING.contains(&c.name.as_str()))
            })
            .map(|(_, c)| c.name.as_str())
            .collect()
    }

    /// The column named exactly `name` (case-sensitive, as filters match).
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    fn time_bounds(&self) -> Option<(f64, f64, usize)> {
        *self.bounds.get_or_init(|| self.measure_time())
    }

    fn measure_time(&self) -> Option<(f64, f64, usize)> {
        let time = self.time();
        // The time column as the axis has a number in every cell (no text,
        // nothing empty, and numbers are never NaN): nothing to count.
        if let Times::Column = self.time
            && let (Some(&first), Some(&last)) = (time.first(), time.last())
            && !first.is_nan()
            && !last.is_nan()
        {
            return Some((first, last, time.len()));
        }
        let first = time.iter().copied().find(|t| !t.is_nan())?;
        let last = time.iter().rev().copied().find(|t| !t.is_nan())?;
        // Counted without a branch per row: a query asks this of a
        // million-row log several times.
        let n = time.iter().map(|t| usize::from(!t.is_nan())).sum();
        Some((first, last, n))
    }

    /// Seconds from the first to the last timed row.
    pub fn duration_s(&self) -> Option<f64> {
        self.time_bounds().map(|(a, b, _)| b - a)
    }

    /// Mean sample rate over the log (rows per second).
    pub fn sample_rate_hz(&self) -> Option<f64> {
        let (a, b, n) = self.time_bounds()?;
        (b > a && n > 1).then(|| (n - 1) as f64 / (b - a))
    }

    /// Approximate bytes held, for the cache budget.
    pub fn heap_bytes(&self) -> usize {
        let own_times = match &self.time {
            Times::Own(t) => t.len() * 8,
            Times::Column => 0,
        };
        own_times
            + self
                .columns
                .iter()
                .map(|c| c.values.len() * 8 + c.strings.iter().map(|s| s.len() + 24).sum::<usize>())
                .sum::<usize>()
    }
}
