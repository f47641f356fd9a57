//! CSV datalog reader: plain logs with a time column, EvoScan
//! (`LogEntrySeconds`) and RomRaider (`Time (msec)` or clock time, `,` or
//! `;`, header lines repeated or changed mid-file), parsed once into columns.
//!
//! The hot loop reads a numeric field and converts it in the same pass
//! (Clinger's fast path: an exact integer mantissa divided by an exact power
//! of ten is correctly rounded); anything else goes through the general
//! field reader (RFC 4180 quoting, decimal commas, thousands separators).

use crate::column::Column;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    EvoScan,
    RomRaider,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Plain => "csv",
            Format::EvoScan => "evoscan",
            Format::RomRaider => "romraider",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    /// Wall-clock `HH:MM:SS.fff`, converted to seconds since the first row.
    Clock,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    Empty,
    NoHeader,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Empty => write!(f, "the file is empty"),
            ReadError::NoHeader => write!(f, "no header line with column names"),
        }
    }
}

impl std::error::Error for ReadError {}

/// A parsed log.
#[derive(Debug, Clone)]
pub struct Log {
    pub columns: Vec<Column>,
    /// Time of each row in seconds (NaN where unknown).
    pub time: Vec<f64>,
    pub time_column: Option<usize>,
    pub time_unit: Option<TimeUnit>,
    /// Decimals worth printing for `time`.
    pub time_decimals: u8,
    pub format: Format,
    pub delimiter: u8,
    /// Header lines met after the first (RomRaider rewrites them).
    pub header_changes: usize,
    /// Lines with more fields than the header (extra fields ignored).
    pub ragged_lines: usize,
    /// First row's `LogEntryDate LogEntryTime` (EvoScan), for dating the log.
    pub start_clock: Option<String>,
}

const BOOKKEEPING: [&str; 4] = ["LogID", "LogEntryDate", "LogEntryTime", "LogEntrySeconds"];

/// Which columns the reader converts; the others keep only their name.
///
/// Converting numbers is most of the cost of reading a log, and a query
/// usually names two or three of a dozen channels: skipping the rest makes
/// a first query several times cheaper. Columns every log needs (the time
/// axis candidates and EvoScan's date) are always converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    All,
    Named(Vec<String>),
}

impl Need {
    /// The columns named in `names` (plus the ones every log needs).
    pub fn named<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Need {
        Need::Named(names.into_iter().map(|n| n.as_ref().to_string()).collect())
    }

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
    pub fn rows(&self) -> usize {
        self.time.len()
    }

    /// Columns shown as channels: everything but the time axis and EvoScan's
    /// bookkeeping columns (which stay queryable by name).
    pub fn channels(&self) -> Vec<&str> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                Some(*i) != self.time_column
                    && !(self.format == Format::EvoScan && BOOKKEEPING.contains(&c.name.as_str()))
            })
            .map(|(_, c)| c.name.as_str())
            .collect()
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    fn time_bounds(&self) -> Option<(f64, f64, usize)> {
        let mut valid = self.time.iter().copied().filter(|t| !t.is_nan());
        let first = valid.next()?;
        let (mut last, mut n) = (first, 1);
        for t in valid {
            last = t;
            n += 1;
        }
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
        self.time.len() * 8
            + self
                .columns
                .iter()
                .map(|c| c.values.len() * 8 + c.strings.iter().map(|s| s.len() + 24).sum::<usize>())
                .sum::<usize>()
    }
}

fn time_unit_of(name: &str) -> Option<(u8, TimeUnit)> {
    let n = name.trim().to_ascii_lowercase();
    Some(match n.as_str() {
        "logentryseconds" => (0, TimeUnit::Seconds),
        "time (msec)" | "time (ms)" | "timestamp (ms)" | "time(ms)" | "time(msec)"
        | "timestamp(ms)" | "time_ms" | "timestamp_ms" => (1, TimeUnit::Millis),
        "time" | "time (s)" | "time (sec)" | "time(s)" | "time (seconds)" | "seconds"
        | "timestamp (s)" | "elapsed" | "elapsed (s)" | "time_s" => (2, TimeUnit::Seconds),
        "logentrytime" | "clock" => (3, TimeUnit::Clock),
        _ => return None,
    })
}

/// Parses `HH:MM:SS(.fff)` into seconds of the day.
pub fn parse_clock(s: &str) -> Option<f64> {
    let mut parts = s.trim().split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let sec: f64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(0.0..60.0).contains(&m) || !(0.0..61.0).contains(&sec) {
        return None;
    }
    Some(h * 3600.0 + m * 60.0 + sec)
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Tries the common numeric field `-?digits(.digits)?` ending at a delimiter
/// or line end. Returns (value, decimals, end index).
#[inline(always)]
fn fast_number(b: &[u8], mut i: usize, delim: u8) -> Option<(f64, u8, usize)> {
    let neg = b.get(i) == Some(&b'-');
    if neg {
        i += 1;
    }
    let start = i;
    let mut mant: u64 = 0;
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mant = mant.wrapping_mul(10).wrapping_add(d as u64);
        i += 1;
    }
    let int_digits = i - start;
    let mut frac = 0usize;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let fs = i;
        while let Some(&c) = b.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            mant = mant.wrapping_mul(10).wrapping_add(d as u64);
            i += 1;
        }
        frac = i - fs;
        if frac == 0 {
            return None;
        }
    }
    if int_digits == 0 || int_digits + frac > 15 || frac > 22 {
        return None;
    }
    match b.get(i) {
        None => {}
        Some(&c) if c == delim || c == b'\n' || c == b'\r' => {}
        _ => return None,
    }
    let v = mant as f64 / POW10[frac];
    Some((if neg { -v } else { v }, frac as u8, i))
}

/// Reads one field starting at `i` (quoted or not). Returns the raw text
/// (unquoted, `""` unescaped), whether it was quoted, and the index of the
/// byte after it (a delimiter, a line end, or the end).
fn read_field(b: &[u8], mut i: usize, delim: u8) -> (std::borrow::Cow<'_, str>, bool, usize) {
    if b.get(i) == Some(&b'"') {
        i += 1;
        let mut out = Vec::new();
        while i < b.len() {
            if b[i] == b'"' {
                if b.get(i + 1) == Some(&b'"') {
                    out.push(b'"');
                    i += 2;
                    continue;
                }
                i += 1;
                break;
            }
            out.push(b[i]);
            i += 1;
        }
        // Anything between the closing quote and the delimiter is kept.
        while i < b.len() && b[i] != delim && b[i] != b'\n' && b[i] != b'\r' {
            out.push(b[i]);
            i += 1;
        }
        let s = String::from_utf8_lossy(&out).into_owned();
        return (std::borrow::Cow::Owned(s), true, i);
    }
    let start = i;
    while i < b.len() && b[i] != delim && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    (String::from_utf8_lossy(&b[start..i]), false, i)
}

/// Classifies a field's text: a number (with its decimals) or not.
fn general_number(text: &str, delim: u8, quoted: bool) -> Option<(f64, u8)> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let plain = |s: &str| -> Option<(f64, u8)> {
        let bytes = s.as_bytes();
        let body = s.strip_prefix(['-', '+']).unwrap_or(s);
        if body.is_empty()
            || !body.as_bytes()[0].is_ascii_digit() && body.as_bytes()[0] != b'.'
            || !bytes
                .iter()
                .all(|c| c.is_ascii_digit() || b".eE+-".contains(c))
        {
            return None;
        }
        let v: f64 = s.parse().ok()?;
        let mantissa = body.split(['e', 'E']).next().unwrap_or("");
        let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len().min(12));
        Some((v, decimals as u8))
    };
    if let Some(r) = plain(t) {
        return Some(r);
    }
    // Decimal comma in `;`-separated logs (European locales).
    if delim == b';'
        && let Some((a, f)) = t.split_once(',')
        && !f.contains(',')
    {
        return plain(&format!("{a}.{f}"));
    }
    // Thousands separators inside quotes: "2,000.00".
    if quoted && t.contains(',') {
        let (int, _) = t.split_once('.').unwrap_or((t, ""));
        let groups: Vec<&str> = int.trim_start_matches('-').split(',').collect();
        if groups.len() > 1
            && (1..=3).contains(&groups[0].len())
            && groups[1..].iter().all(|g| g.len() == 3)
        {
            return plain(&t.replace(',', ""));
        }
    }
    None
}

fn split_line(b: &[u8], mut i: usize, delim: u8) -> (Vec<(String, bool)>, usize) {
    let mut fields = Vec::new();
    loop {
        let (text, quoted, end) = read_field(b, i, delim);
        fields.push((text.into_owned(), quoted));
        i = end;
        if i < b.len() && b[i] == delim {
            i += 1;
            continue;
        }
        break;
    }
    (fields, next_line(b, i))
}

fn next_line(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\n' {
        i += 1;
    }
    (i + 1).min(b.len())
}

fn sniff_delimiter(line: &[u8]) -> u8 {
    let mut counts = [0usize; 3];
    let mut in_quotes = false;
    for &c in line {
        match c {
            b'"' => in_quotes = !in_quotes,
            b',' if !in_quotes => counts[0] += 1,
            b';' if !in_quotes => counts[1] += 1,
            b'\t' if !in_quotes => counts[2] += 1,
            b'\n' => break,
            _ => {}
        }
    }
    let best = (0..3).max_by_key(|&k| (counts[k], 3 - k)).unwrap_or(0);
    [b',', b';', b'\t'][best]
}

struct Layout {
    /// Column index of each field of the current header.
    map: Vec<usize>,
    /// Whether each field of the current header is converted.
    load: Vec<bool>,
    /// Columns the current header lacks (filled with empty cells).
    absent: Vec<usize>,
    header: Vec<String>,
}

fn layout(columns: &mut Vec<Column>, header: &[String], rows: usize, need: &Need) -> Layout {
    use std::collections::{HashMap, HashSet};
    // Hash lookups throughout: a header of thousands of (repeated) names
    // must not cost quadratic time, and RomRaider repeats headers mid-file.
    let mut existing: HashMap<String, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let mut used: HashSet<String> = HashSet::with_capacity(header.len());
    let mut next_suffix: HashMap<&str, usize> = HashMap::new();
    let mut map = Vec::with_capacity(header.len());
    for name in header {
        let mut unique = name.clone();
        if used.contains(&unique) {
            let k = next_suffix.entry(name).or_insert(2);
            loop {
                unique = format!("{name} #{k}");
                *k += 1;
                if !used.contains(&unique) {
                    break;
                }
            }
        }
        used.insert(unique.clone());
        let idx = match existing.get(&unique) {
            Some(&i) => i,
            None => {
                let mut c = Column::new(unique.clone());
                c.loaded = need.wants(&c.name);
                if c.loaded {
                    c.values.reserve(rows.max(1024));
                    for _ in 0..rows {
                        c.push_null();
                    }
                }
                columns.push(c);
                existing.insert(unique, columns.len() - 1);
                columns.len() - 1
            }
        };
        map.push(idx);
    }
    let mut present = vec![false; columns.len()];
    for &c in &map {
        present[c] = true;
    }
    let absent = (0..columns.len())
        .filter(|&c| !present[c] && columns[c].loaded)
        .collect();
    Layout {
        load: map.iter().map(|&c| columns[c].loaded).collect(),
        map,
        absent,
        header: header.to_vec(),
    }
}

fn push_general(col: &mut Column, text: &str, quoted: bool, delim: u8) {
    let t = text.trim();
    if t.is_empty() {
        col.push_null();
    } else if let Some((v, d)) = general_number(t, delim, quoted) {
        col.push_num(v, d);
    } else {
        col.push_text(t);
    }
}

/// Parses a whole CSV log.
pub fn parse(data: &[u8], file_name: &str) -> Result<Log, ReadError> {
    parse_columns(data, file_name, &Need::All)
}

/// Parses a CSV log, converting only the columns `need` names.
pub fn parse_columns(data: &[u8], file_name: &str, need: &Need) -> Result<Log, ReadError> {
    let b = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let mut i = 0;
    while i < b.len() && (b[i] == b'\n' || b[i] == b'\r' || b[i] == b' ') {
        i += 1;
    }
    if i >= b.len() {
        return Err(ReadError::Empty);
    }
    let delim = sniff_delimiter(&b[i..]);
    let (fields, next) = split_line(b, i, delim);
    let header: Vec<String> = fields
        .into_iter()
        .map(|(s, _)| s.trim().to_string())
        .collect();
    if header.iter().all(|h| h.is_empty())
        || header
            .iter()
            .all(|h| general_number(h, delim, false).is_some())
    {
        return Err(ReadError::NoHeader);
    }
    i = next;
    let estimate = estimate_rows(&b[i..]);
    let mut columns: Vec<Column> = Vec::new();
    let mut lay = layout(&mut columns, &header, 0, need);
    for c in columns.iter_mut().filter(|c| c.loaded) {
        c.values.reserve(estimate);
    }
    let mut rows = 0usize;
    let mut header_changes = 0;
    let mut ragged = 0;
    let is_header_line = |fields: &[(String, bool)], current: &[String]| {
        let first = fields.first().map_or("", |f| f.0.trim());
        (time_unit_of(first).is_some() && general_number(first, delim, false).is_none())
            || (fields.len() == current.len()
                && fields.iter().zip(current).all(|(f, h)| f.0.trim() == h))
    };
    // A units row right after the header (ECU Explorer's native logs).
    if i < b.len() {
        let (text, _, _) = read_field(b, i, delim);
        if matches!(text.trim(), "Unit" | "Units" | "unit" | "units") {
            i = next_line(b, i);
        }
    }
    while i < b.len() {
        let c0 = b[i];
        if c0 == b'\n' || c0 == b'\r' {
            i += 1;
            continue;
        }
        let line_start = i;
        let ncols = lay.map.len();
        let mut k = 0;
        let mut general = false;
        // Fast path: numbers and empty fields only.
        while k < ncols {
            let c = unsafe_get(b, i);
            let load = lay.load[k];
            if c == delim || c == b'\n' || c == b'\r' || i >= b.len() {
                if load {
                    columns[lay.map[k]].push_null();
                }
            } else if !load && k != 0 && c != b'"' {
                // A skipped column: only find where the field ends. (A first
                // field is read in full: it may start a header line.)
                i = field_end(b, i, delim);
            } else if let Some((v, d, end)) = fast_number(b, i, delim) {
                if load {
                    columns[lay.map[k]].push_num(v, d);
                }
                i = end;
            } else if c == b'"' {
                general = true;
                break;
            } else {
                // An unquoted non-numeric field (text, a date, a decimal
                // comma). Only a first field may start a header line.
                let mut end = i;
                while end < b.len() && b[end] != delim && b[end] != b'\n' && b[end] != b'\r' {
                    end += 1;
                }
                let text = String::from_utf8_lossy(&b[i..end]);
                if k == 0 && (time_unit_of(&text).is_some() || text.trim() == lay.header[0]) {
                    general = true;
                    break;
                }
                if load {
                    push_general(&mut columns[lay.map[k]], &text, false, delim);
                }
                i = end;
            }
            k += 1;
            if i < b.len() && b[i] == delim {
                i += 1;
                if k == ncols {
                    // More fields than the header names.
                    ragged += 1;
                    i = next_line(b, i);
                    break;
                }
            } else {
                // Line ended early: the rest of the row is empty.
                for rest in (k..ncols).filter(|&rest| lay.load[rest]) {
                    columns[lay.map[rest]].push_null();
                }
                k = ncols;
                i = next_line(b, i);
                break;
            }
        }
        if general {
            // Undo this line's partial fields and read it field by field.
            for (&c, _) in lay.map[..k].iter().zip(&lay.load).filter(|(_, l)| **l) {
                let col = &mut columns[c];
                if let Some(v) = col.values.pop()
                    && v.is_nan()
                {
                    col.special -= 1;
                    if !matches!(col.cell_bits(v), crate::column::Cell::Null) {
                        col.text_cells -= 1;
                    }
                }
            }
            let (fields, next) = split_line(b, line_start, delim);
            i = next;
            if is_header_line(&fields, &lay.header) {
                let header: Vec<String> = fields
                    .into_iter()
                    .map(|(s, _)| s.trim().to_string())
                    .collect();
                if header != lay.header {
                    header_changes += 1;
                    lay = layout(&mut columns, &header, rows, need);
                }
                continue;
            }
            if fields.len() > ncols {
                ragged += 1;
            }
            for (k, &c) in lay.map.iter().enumerate().filter(|&(k, _)| lay.load[k]) {
                match fields.get(k) {
                    Some((text, quoted)) => push_general(&mut columns[c], text, *quoted, delim),
                    None => columns[c].push_null(),
                }
            }
        }
        for &c in &lay.absent {
            columns[c].push_null();
        }
        rows += 1;
    }
    let format = detect_format(&columns, file_name);
    let (time_column, time_unit) = pick_time_column(&columns);
    let mut log = Log {
        time: Vec::new(),
        time_column,
        time_unit,
        time_decimals: 2,
        format,
        delimiter: delim,
        header_changes,
        ragged_lines: ragged,
        start_clock: None,
        columns,
    };
    fill_time(&mut log, rows);
    if format == Format::EvoScan
        && let (Some(d), Some(t)) = (log.column("LogEntryDate"), log.column("LogEntryTime"))
        && rows > 0
    {
        log.start_clock = Some(format!("{} {}", d.display(0), t.display(0)));
    }
    Ok(log)
}

/// Rows to reserve for: the remaining bytes over the mean length of the
/// first lines, plus a margin (reserved memory counts against the guest cap).
fn estimate_rows(rest: &[u8]) -> usize {
    let sample = &rest[..rest.len().min(64 * 1024)];
    let lines = sample.iter().filter(|&&c| c == b'\n').count().max(1);
    let per_line = (sample.len() / lines).max(1);
    rest.len() / per_line + rest.len() / per_line / 20 + 16
}

/// Index of the first delimiter, `\n` or `\r` at or after `i` (or the
/// end): eight bytes per step, since most fields of a wide log are skipped.
#[inline(always)]
fn field_end(b: &[u8], mut i: usize, delim: u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // High bit set in each byte of `w` equal to `c`, exact for the lowest one.
    let marks = |w: u64, c: u8| {
        let x = w ^ (ONES * c as u64);
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let m = marks(w, delim) | marks(w, b'\n') | marks(w, b'\r');
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != delim && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    i
}

#[inline(always)]
fn unsafe_get(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(b'\n')
}

fn detect_format(columns: &[Column], file_name: &str) -> Format {
    let has = |n: &str| columns.iter().any(|c| c.name == n);
    if has("LogEntrySeconds") || (has("LogID") && has("LogEntryDate")) {
        Format::EvoScan
    } else if file_name.to_ascii_lowercase().starts_with("romraiderlog") || has("Time (msec)") {
        Format::RomRaider
    } else {
        Format::Plain
    }
}

fn pick_time_column(columns: &[Column]) -> (Option<usize>, Option<TimeUnit>) {
    let best = columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| time_unit_of(&c.name).map(|(rank, unit)| (rank, i, unit)))
        .min_by_key(|(rank, i, _)| (*rank, *i));
    match best {
        None => (None, None),
        Some((_, i, unit)) => {
            let col = &columns[i];
            // A "Time" column holding wall-clock text (RomRaider absolute mode).
            let unit = if col.text_cells > 0
                && col
                    .strings
                    .first()
                    .is_some_and(|s| parse_clock(s).is_some())
            {
                TimeUnit::Clock
            } else {
                unit
            };
            (Some(i), Some(unit))
        }
    }
}

fn fill_time(log: &mut Log, rows: usize) {
    let Some(tc) = log.time_column else {
        log.time = vec![f64::NAN; rows];
        return;
    };
    let col = &log.columns[tc];
    match log.time_unit {
        Some(TimeUnit::Millis) => {
            log.time = col
                .values
                .iter()
                .map(|&v| if v.is_nan() { v } else { v / 1000.0 })
                .collect();
            log.time_decimals = (col.decimals + 3).min(6);
        }
        Some(TimeUnit::Clock) => {
            let mut first: Option<f64> = None;
            let mut day = 0.0;
            let mut prev = f64::NAN;
            log.time = (0..rows)
                .map(|r| {
                    let t = match col.cell(r) {
                        crate::column::Cell::Str(s) => parse_clock(s),
                        _ => None,
                    };
                    match t {
                        None => f64::NAN,
                        Some(mut t) => {
                            // Past midnight the clock restarts.
                            if !prev.is_nan() && t + day < prev - 43_200.0 {
                                day += 86_400.0;
                            }
                            t += day;
                            prev = t;
                            let f = *first.get_or_insert(t);
                            t - f
                        }
                    }
                })
                .collect();
            log.time_decimals = 3;
        }
        _ => {
            log.time = col
                .values
                .iter()
                .map(|&v| if v.is_nan() { f64::NAN } else { v })
                .collect();
            log.time_decimals = col.decimals.clamp(2, 6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Cell;

    #[test]
    fn plain_log_with_empty_and_text_cells() {
        let csv = "Time,RPM,AFR,Phase\n0.00,850,,idle\n0.01,900,14.7,idle\r\n0.02,-3.5,\"12,5\",\"pull \"\"1\"\"\"\n";
        let log = parse(csv.as_bytes(), "log.csv").unwrap();
        assert_eq!(log.rows(), 3);
        assert_eq!(log.format, Format::Plain);
        assert_eq!(log.time_column, Some(0));
        assert_eq!(log.channels(), vec!["RPM", "AFR", "Phase"]);
        let afr = log.column("AFR").unwrap();
        assert_eq!(afr.cell(0), Cell::Null);
        assert_eq!(afr.cell(1), Cell::Num(14.7));
        assert_eq!(afr.cell(2), Cell::Str("12,5"));
        assert_eq!(
            log.column("Phase").unwrap().cell(2),
            Cell::Str("pull \"1\"")
        );
        assert_eq!(log.column("RPM").unwrap().cell(2), Cell::Num(-3.5));
        assert!((log.sample_rate_hz().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn romraider_semicolons_decimal_commas_and_header_changes() {
        let csv = "Time (msec);Engine Speed (rpm);Knock Sum* (count)\n0;850,5;0\n40;900;1\nTime (msec);Engine Speed (rpm);Boost (psi)\n80;950;3,25\n120;1000;4\n";
        let log = parse(csv.as_bytes(), "romraiderlog_20240601_102500.csv").unwrap();
        assert_eq!(log.delimiter, b';');
        assert_eq!(log.format, Format::RomRaider);
        assert_eq!(log.rows(), 4);
        assert_eq!(log.header_changes, 1);
        assert_eq!(log.time, vec![0.0, 0.04, 0.08, 0.12]);
        let rpm = log.column("Engine Speed (rpm)").unwrap();
        assert_eq!(rpm.cell(0), Cell::Num(850.5));
        let knock = log.column("Knock Sum* (count)").unwrap();
        assert_eq!(knock.cell(1), Cell::Num(1.0));
        assert_eq!(knock.cell(2), Cell::Null);
        let boost = log.column("Boost (psi)").unwrap();
        assert_eq!(boost.cell(0), Cell::Null);
        assert_eq!(boost.cell(2), Cell::Num(3.25));
        assert!((log.sample_rate_hz().unwrap() - 25.0).abs() < 1e-9);
    }

    #[test]
    fn romraider_clock_time() {
        let csv = "Time,Engine Speed (rpm)\n23:59:59.900,800\n23:59:59.950,810\n00:00:00.000,820\n";
        let log = parse(csv.as_bytes(), "romraiderlog_x.csv").unwrap();
        assert_eq!(log.time_unit, Some(TimeUnit::Clock));
        assert!((log.time[2] - 0.1).abs() < 1e-9);
    }

    #[test]
    fn evoscan_uses_log_entry_seconds() {
        let csv = "LogID,LogEntryDate,LogEntryTime,LogEntrySeconds,LogNotes,01_LogMark,RPM\n1,2024-06-01,10:20:00.03125,0.03125,,0,843.8\n2,2024-06-01,10:20:00.11225,0.11225,pull 1,0,859.4\n";
        let log = parse(csv.as_bytes(), "EvoScanDataLog_2024.06.01_10.20.00.csv").unwrap();
        assert_eq!(log.format, Format::EvoScan);
        assert_eq!(log.time, vec![0.03125, 0.11225]);
        assert_eq!(log.channels(), vec!["LogNotes", "01_LogMark", "RPM"]);
        assert_eq!(
            log.start_clock.as_deref(),
            Some("2024-06-01 10:20:00.03125")
        );
    }

    #[test]
    fn fast_numbers_are_correctly_rounded() {
        for s in [
            "0.1",
            "14.75",
            "123456.789012",
            "-0.0001",
            "7005",
            "0.30000000000000004",
        ] {
            let want: f64 = s.parse().unwrap();
            match fast_number(s.as_bytes(), 0, b',') {
                Some((v, _, _)) => assert_eq!(v, want, "{s}"),
                None => assert_eq!(general_number(s, b',', false).unwrap().0, want),
            }
        }
        assert_eq!(general_number("2,000.50", b',', true).unwrap().0, 2000.5);
        assert!(general_number("NaN", b',', false).is_none());
        assert!(general_number("inf", b',', false).is_none());
        assert_eq!(general_number("1e3", b',', false).unwrap().0, 1000.0);
    }

    #[test]
    fn short_and_long_lines() {
        let csv = "time,a,b\n0,1\n1,2,3,4\n";
        let log = parse(csv.as_bytes(), "x.csv").unwrap();
        assert_eq!(log.rows(), 2);
        assert_eq!(log.column("b").unwrap().cell(0), Cell::Null);
        assert_eq!(log.column("b").unwrap().cell(1), Cell::Num(3.0));
        assert_eq!(log.ragged_lines, 1);
        assert!(parse(b"", "x.csv").is_err());
        assert!(parse(b"1,2,3\n", "x.csv").is_err());
    }

    #[test]
    fn field_end_matches_a_byte_scan() {
        let text = b"12.5,;x\r\n\"ab,c\"\n,,;;0123456789abcdefghij;\r\n1,2";
        for delim in [b',', b';', b'\t'] {
            for start in 0..text.len() {
                for end in start..=text.len() {
                    let b = &text[..end];
                    let naive = (start..b.len())
                        .find(|&i| b[i] == delim || b[i] == b'\n' || b[i] == b'\r')
                        .unwrap_or(b.len());
                    assert_eq!(field_end(b, start, delim), naive, "{start}..{end}");
                }
            }
        }
    }

    #[test]
    fn skipped_columns_keep_their_names_only() {
        let csv = "Time,RPM,AFR,Phase,Knock\n\
                   0.00,850,,idle,0\n\
                   0.01,900,14.7,\"a,b\",1\n\
                   Time,Knock,Boost,RPM\n\
                   0.02,2,3.5,1000\n\
                   0.03,3\n\
                   0.04,4,5,1200,99\n";
        let all = parse(csv.as_bytes(), "x.csv").unwrap();
        let some = parse_columns(csv.as_bytes(), "x.csv", &Need::named(["RPM", "Knock"])).unwrap();
        assert_eq!(some.rows(), all.rows());
        assert_eq!(some.time, all.time);
        assert_eq!(some.ragged_lines, all.ragged_lines);
        assert_eq!(some.header_changes, all.header_changes);
        let names = |l: &Log| l.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&some), names(&all));
        for c in &some.columns {
            let full = all.column(&c.name).unwrap();
            if ["Time", "RPM", "Knock"].contains(&c.name.as_str()) {
                assert!(c.loaded, "{}", c.name);
                assert_eq!(
                    (0..all.rows()).map(|r| c.cell(r)).collect::<Vec<_>>(),
                    (0..all.rows()).map(|r| full.cell(r)).collect::<Vec<_>>(),
                    "{}",
                    c.name
                );
                assert_eq!(c.decimals, full.decimals);
            } else {
                assert!(!c.loaded && c.values.is_empty(), "{}", c.name);
            }
        }
        let need = Need::named(["AFR"]);
        assert!(!need.met_by(&some));
        let need = need.with_loaded(&some);
        assert!(need.wants("RPM") && need.wants("AFR") && !need.wants("Phase"));
        assert!(Need::named(["RPM"]).met_by(&some));
    }

    #[test]
    fn wide_headers_of_repeated_names_are_linear() {
        // Found by fuzzing: renaming duplicates was cubic in the width.
        let mut csv = String::from("Time");
        for _ in 0..20_000 {
            csv.push_str(",x");
        }
        csv.push_str("\n0");
        csv.push_str(&",1".repeat(20_000));
        csv.push('\n');
        let t = std::time::Instant::now();
        let log = parse(csv.as_bytes(), "wide.csv").unwrap();
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!(log.columns.len(), 20_001);
        assert_eq!(log.columns[1].name, "x");
        assert_eq!(log.columns[2].name, "x #2");
        assert_eq!(log.columns[20_000].name, "x #20000");
        let dup = parse(b"t,a,a,a #2\n0,1,2,3\n", "d.csv").unwrap();
        let names: Vec<&str> = dup.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["t", "a", "a #2", "a #2 #2"]);
    }
}
