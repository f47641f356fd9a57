//! Which logger wrote a file and how its text is laid out, found once per
//! file from its first bytes: the encoding (UTF-8 with or without a BOM,
//! Windows-1252, UTF-16), the separator, preamble lines before the header
//! (ME7Logger, VCDS, LogWorks, Zeitronix, BlueDriver, Haltech's channel
//! declarations), units rows after it, the log's own start date, and
//! columns that are not channels (COBB's `AP Info`, VCDS's marker and
//! per-group stamps).
//!
//! The per-row reader never looks at any of this again: the plan hands it
//! the channel names and where the rows start, so detection costs one pass
//! over the first few hundred lines and nothing per row.

use crate::format::{DateKind, Format, TimeUnit, civil, general_number, time_unit_of};
use crate::plan::{MAX_COLUMNS, Plan, too_many_columns};

/// Bytes of a file looked at to detect its layout.
pub const HEAD: usize = 64 << 10;
/// Bytes looked at when the layout's header block can be longer than
/// [`HEAD`] (a Haltech preamble of a thousand channels is ~80 KiB).
pub const LONG_HEAD: usize = 1 << 20;
/// Lines of the head looked at.
const MAX_LINES: usize = 400;

/// The text encoding of a log file, sniffed from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (or plain ASCII) without a byte-order mark: parsed as is.
    Utf8,
    /// UTF-8 starting with the EF BB BF mark (Excel's "CSV UTF-8").
    Utf8Bom,
    /// Windows-1252, a superset of Latin-1's printable characters (what
    /// Windows loggers such as COBB's write for `°`).
    Windows1252,
    /// UTF-16 little-endian (FF FE mark, or zero high bytes), as some
    /// Windows loggers export.
    Utf16Le,
    /// UTF-16 big-endian (FE FF mark).
    Utf16Be,
}

impl Encoding {
    /// The name shown to agents, e.g. "UTF-16LE" or "Windows-1252".
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Windows1252 => "Windows-1252",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        }
    }

    /// True when the bytes must be converted to UTF-8 before parsing.
    pub fn transcodes(self) -> bool {
        matches!(
            self,
            Encoding::Windows1252 | Encoding::Utf16Le | Encoding::Utf16Be
        )
    }
}

/// The encoding of a file from its first bytes.
pub fn sniff_encoding(head: &[u8]) -> Encoding {
    if head.starts_with(b"\xEF\xBB\xBF") {
        return Encoding::Utf8Bom;
    }
    if head.starts_with(b"\xFF\xFE") {
        return Encoding::Utf16Le;
    }
    if head.starts_with(b"\xFE\xFF") {
        return Encoding::Utf16Be;
    }
    // Without a BOM, UTF-16 text of mostly ASCII has a zero byte in every
    // other position (and text in any 8-bit encoding has none).
    let n = head.len().min(4096) & !1;
    if n >= 4 {
        let zeros = |parity: usize| (parity..n).step_by(2).filter(|&i| head[i] == 0).count();
        let (even, odd) = (zeros(0), zeros(1));
        let half = n / 2;
        if odd * 10 >= half * 7 && even * 20 <= half {
            return Encoding::Utf16Le;
        }
        if even * 10 >= half * 7 && odd * 20 <= half {
            return Encoding::Utf16Be;
        }
    }
    match std::str::from_utf8(head) {
        Ok(_) => Encoding::Utf8,
        // Cut inside a character at the end of the head: still UTF-8.
        Err(e) if e.error_len().is_none() => Encoding::Utf8,
        Err(_) => Encoding::Windows1252,
    }
}

/// Windows-1252's characters for 0x80..=0x9F (undefined ones as U+FFFD).
const CP1252_HIGH: [u16; 32] = [
    0x20AC, 0xFFFD, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0xFFFD, 0x017D, 0xFFFD, 0xFFFD, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0xFFFD, 0x017E, 0x0178,
];

/// Converts the start of `raw` to UTF-8 onto `out`; returns the bytes used
/// (all of them at `eof`; otherwise an odd byte or a lone high surrogate at
/// the end waits for the next piece). A BOM at `first` is dropped.
pub fn decode(enc: Encoding, raw: &[u8], eof: bool, first: bool, out: &mut Vec<u8>) -> usize {
    let mut buf = [0u8; 4];
    match enc {
        Encoding::Utf8 | Encoding::Utf8Bom => {
            out.extend_from_slice(raw);
            raw.len()
        }
        Encoding::Windows1252 => {
            for &c in raw {
                if c < 0x80 {
                    out.push(c);
                } else {
                    let ch = if c < 0xA0 {
                        char::from_u32(CP1252_HIGH[(c - 0x80) as usize] as u32)
                            .unwrap_or('\u{FFFD}')
                    } else {
                        c as char
                    };
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
            }
            raw.len()
        }
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let le = enc == Encoding::Utf16Le;
            let mut units: Vec<u16> = raw
                .chunks_exact(2)
                .map(|p| {
                    if le {
                        u16::from_le_bytes([p[0], p[1]])
                    } else {
                        u16::from_be_bytes([p[0], p[1]])
                    }
                })
                .collect();
            let mut used = units.len() * 2;
            if !eof && units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
                units.pop();
                used -= 2;
            }
            let skip = usize::from(first && units.first() == Some(&0xFEFF));
            for ch in char::decode_utf16(units[skip..].iter().copied()) {
                let ch = ch.unwrap_or('\u{FFFD}');
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            if eof && used < raw.len() {
                out.extend_from_slice("\u{FFFD}".as_bytes());
                used = raw.len();
            }
            used
        }
    }
}

/// A reader that converts a non-UTF-8 file to UTF-8 as it is read (only
/// such files pay for it: UTF-8 files are parsed straight from their bytes).
pub struct Transcode<R> {
    inner: R,
    enc: Encoding,
    raw: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    first: bool,
    eof: bool,
}

impl<R: std::io::Read> Transcode<R> {
    pub fn new(inner: R, enc: Encoding) -> Self {
        Transcode {
            inner,
            enc,
            raw: Vec::new(),
            out: Vec::new(),
            pos: 0,
            first: true,
            eof: false,
        }
    }
}

impl<R: std::io::Read> std::io::Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.out.len() && !self.eof {
            self.out.clear();
            self.pos = 0;
            let start = self.raw.len();
            self.raw.resize(start + (32 << 10), 0);
            let n = match self.inner.read(&mut self.raw[start..]) {
                Ok(n) => n,
                Err(e) => {
                    self.raw.truncate(start);
                    return Err(e);
                }
            };
            self.raw.truncate(start + n);
            self.eof = n == 0;
            let used = decode(self.enc, &self.raw, self.eof, self.first, &mut self.out);
            if used > 0 || self.eof {
                self.first = false;
            }
            self.raw.drain(..used);
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// True when the head of a file starts a layout whose header block may run
/// past [`HEAD`] bytes (so the reader looks at up to [`LONG_HEAD`]).
pub fn needs_longer_head(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = head.split(|&c| c == b'\n').next().unwrap_or(head);
    crate::haltech::is_haltech(first)
}

/// Splits one line into trimmed, unquoted cells.
fn cells(line: &str, delim: u8) -> Vec<String> {
    let d = delim as char;
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && cur.trim().is_empty() {
            cur.clear();
            quoted = true;
        } else if c == d {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// Fields of a line per separator (`,` `;` tab, as in [`SEPARATORS`]),
/// outside quotes.
pub(crate) fn count_fields(line: &[u8]) -> [usize; 3] {
    let mut counts = [1usize; 3];
    let mut quoted = false;
    for &c in line {
        match c {
            b'"' => quoted = !quoted,
            b',' if !quoted => counts[0] += 1,
            b';' if !quoted => counts[1] += 1,
            b'\t' if !quoted => counts[2] += 1,
            _ => {}
        }
    }
    counts
}

/// The separators loggers use, in order of preference on a tie.
pub(crate) const SEPARATORS: [u8; 3] = [b',', b';', b'\t'];

/// The separator that splits the most lines into the same number of
/// fields (weighted by that number: a `;` log with decimal commas splits
/// every line in two at `,`, and in twenty at `;`).
fn pick_separator(lines: &[&[u8]]) -> Option<u8> {
    let mut best: Option<(usize, u8)> = None;
    for (k, &sep) in SEPARATORS.iter().enumerate() {
        let mut freq: std::collections::HashMap<usize, usize> = Default::default();
        for l in lines {
            let n = count_fields(l)[k];
            if n >= 2 {
                *freq.entry(n).or_default() += 1;
            }
        }
        if let Some((&width, &count)) = freq.iter().max_by_key(|&(w, c)| (*c, *w)) {
            let score = count * width;
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, sep));
            }
        }
    }
    best.map(|(_, s)| s)
}

fn is_number(cell: &str, delim: u8) -> bool {
    general_number(cell, delim, false).is_some()
}

/// A row of data: numbers in at least half of its non-empty cells.
fn is_data(cells: &[String], delim: u8) -> bool {
    let filled: Vec<&String> = cells.iter().filter(|c| !c.is_empty()).collect();
    let numbers = filled.iter().filter(|c| is_number(c, delim)).count();
    cells.len() >= 2 && numbers >= 1 && numbers * 2 >= filled.len()
}

/// A line of names: most cells filled with text that is not a number.
fn is_names(cells: &[String], delim: u8) -> bool {
    let names = cells
        .iter()
        .filter(|c| !c.is_empty() && !is_number(c, delim))
        .count();
    cells.len() >= 2 && names * 2 > cells.len()
}

const WEEKDAYS: [&str; 14] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "montag",
    "dienstag",
    "mittwoch",
    "donnerstag",
    "freitag",
    "samstag",
    "sonntag",
];

fn month_number(name: &str) -> Option<i64> {
    const EN: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DE: [&str; 12] = [
        "jan", "feb", "mär", "apr", "mai", "jun", "jul", "aug", "sep", "okt", "nov", "dez",
    ];
    let n = name.trim().to_lowercase();
    if let Ok(m) = n.parse::<i64>() {
        return (1..=12).contains(&m).then_some(m);
    }
    let n = n.replace("marz", "mär").replace("maerz", "mär");
    (0..12)
        .find(|&i| n.starts_with(EN[i]) || n.starts_with(DE[i]))
        .map(|i| i as i64 + 1)
}

/// `HH:MM(:SS(.fff|:fffff))` → (h, m, s).
fn clock_parts(s: &str) -> Option<(i64, i64, i64)> {
    let mut p = s.trim().split([':', '.']);
    let h = p.next()?.trim().parse().ok()?;
    let m = p.next()?.trim().parse().ok()?;
    let sec = p.next().map_or(Some(0), |x| x.trim().parse().ok())?;
    Some((h, m, sec))
}

/// VCDS's first line: `Sunday,30,November,2014,14:45:17:29612…`.
fn vcds_date(line: &str) -> Option<i64> {
    let c: Vec<&str> = line.split([',', ';']).map(str::trim).collect();
    let start = usize::from(WEEKDAYS.contains(&c.first()?.to_lowercase().as_str()));
    let day: i64 = c.get(start)?.trim_matches(['\'', '.']).parse().ok()?;
    let month = month_number(c.get(start + 1)?)?;
    let year: i64 = c.get(start + 2)?.parse().ok()?;
    let clock = c.get(start + 3)?.split('-').next()?;
    let (h, m, s) = clock_parts(clock)?;
    civil(year, month, day, h, m, s)
}

/// A date and time in free text: `2014-02-22 17:47:01`, `22.02.2014
/// 17:47:01.046`, `2014/02/22 17:47`.
fn text_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    for (at, _) in text.char_indices() {
        if !bytes[at].is_ascii_digit() || (at > 0 && bytes[at - 1].is_ascii_digit()) {
            continue;
        }
        let rest = &text[at..];
        let (date, tail) = rest.split_once([' ', 'T', '_']).unwrap_or((rest, ""));
        let parts: Vec<&str> = date.split(['-', '.', '/']).collect();
        if parts.len() != 3 || parts.iter().any(|p| p.parse::<i64>().is_err()) {
            continue;
        }
        let n: Vec<i64> = parts.iter().map(|p| p.parse().unwrap_or(0)).collect();
        let (y, mo, d) = if parts[0].len() == 4 {
            (n[0], n[1], n[2])
        } else if parts[2].len() == 4 {
            (n[2], n[1], n[0])
        } else {
            continue;
        };
        let clock = tail.split_whitespace().next().unwrap_or("");
        let (h, mi, s) = clock_parts(clock).unwrap_or((0, 0, 0));
        if let Some(t) = civil(y, mo, d, h, mi, s) {
            return Some(t);
        }
    }
    None
}

fn unit_time(unit: &str) -> Option<TimeUnit> {
    let u = unit
        .trim()
        .trim_matches(['(', ')', '[', ']'])
        .to_ascii_lowercase();
    match u.as_str() {
        "s" | "sec" | "secs" | "seconds" | "sec.ms" => Some(TimeUnit::Seconds),
        "ms" | "msec" => Some(TimeUnit::Millis),
        _ => None,
    }
}

/// What detection concluded: a plan, or nothing to add (the reader's own
/// header reading applies: a one-line or one-column file, or lines ending
/// in `\r` only).
pub type Detected = Result<Option<Plan>, String>;

/// Detects the layout of `text` (the file's first bytes as UTF-8; `whole`
/// when that is all of it).
pub fn detect(text: &[u8], whole: bool, file_name: &str) -> Detected {
    let bom = if text.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    // The first line decides a too-wide header before anything is split.
    let first_start = bom
        + text[bom..]
            .iter()
            .position(|c| !matches!(c, b'\n' | b'\r' | b' '))
            .unwrap_or(text.len() - bom);
    let first_end = text[first_start..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(text.len(), |p| first_start + p);
    let widest = count_fields(&text[first_start..first_end])
        .into_iter()
        .max()
        .unwrap_or(1);
    if widest > MAX_COLUMNS {
        return Err(too_many_columns(widest, first_end == text.len() && !whole));
    }
    if text[first_start..].contains(&0) {
        return Err(
            "it holds binary data (NUL bytes), not text: not a CSV datalog. Export the log as \
             CSV from the logger's software."
                .into(),
        );
    }
    if !text.contains(&b'\n') {
        return Ok(None);
    }
    // Haltech declares its channels in a preamble and writes no header.
    let haltech = crate::haltech::is_haltech(&text[first_start..first_end]);
    if haltech && let Some(plan) = crate::haltech::plan(&text[bom..], whole) {
        return plan.map(|mut p| {
            p.body_start += bom;
            Some(p)
        });
    }
    // Whole lines only, with their start offsets.
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut at = bom;
    while at < text.len() && lines.len() < MAX_LINES {
        let Some(len) = text[at..].iter().position(|&c| c == b'\n') else {
            if whole {
                lines.push((at, &text[at..]));
            }
            break;
        };
        let mut line = &text[at..at + len];
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        lines.push((at, line));
        at += len + 1;
    }
    let nonblank: Vec<&[u8]> = lines
        .iter()
        .map(|l| l.1)
        .filter(|l| !l.trim_ascii().is_empty())
        .collect();
    let Some(delim) = pick_separator(&nonblank) else {
        return Ok(None);
    };
    let text_of = |l: &[u8]| String::from_utf8_lossy(l).into_owned();
    let split: Vec<Vec<String>> = lines
        .iter()
        .map(|(_, l)| {
            if l.trim_ascii().is_empty() {
                Vec::new()
            } else {
                cells(&text_of(l), delim)
            }
        })
        .collect();
    // The first row of data: itself and the next non-blank line are data.
    let data_start = (0..split.len()).find(|&k| {
        is_data(&split[k], delim)
            && split[k + 1..]
                .iter()
                .find(|c| !c.is_empty())
                .is_none_or(|c| is_data(c, delim))
    });
    let Some(data_start) = data_start else {
        if nonblank.len() < 3 {
            // A header alone (an empty log) or a line and one row: the
            // reader decides.
            return Ok(None);
        }
        return Err(format!(
            "found no rows of numbers in its first {} lines (line 1: `{}`): not a datalog \
             log-query understands. It reads CSV logs with a header line of channel names \
             and rows of numbers (EvoScan, RomRaider, BtSsm, OpenPort, COBB Accessport, \
             ME7Logger, VCDS, LogWorks, Zeitronix or any such CSV).",
            lines.len(),
            plugin_kit::text::clip(&text_of(nonblank[0]))
        ));
    };
    // The header block: the non-blank lines right above the data.
    let mut block_start = data_start;
    while block_start > 0 && !split[block_start - 1].is_empty() {
        block_start -= 1;
    }
    let Some(header) = (block_start..data_start).find(|&k| is_names(&split[k], delim)) else {
        if data_start == 0 || (block_start..data_start).all(|k| split[k].len() < 2) {
            // No header line: the reader refuses it as it always has.
            return Ok(None);
        }
        return Err(format!(
            "found no header line of channel names above its first row of numbers (line {}: \
             `{}`)",
            data_start + 1,
            plugin_kit::text::clip(&text_of(lines[data_start].1))
        ));
    };
    // Rows start at the first line after the header that reads as data
    // (the look at the line after it above only keeps a numeric-looking
    // preamble or units line from being taken for data).
    let data_start = (header + 1..data_start)
        .find(|&k| is_data(&split[k], delim))
        .unwrap_or(data_start);
    let preamble: Vec<String> = lines[..header].iter().map(|l| text_of(l.1)).collect();
    let first_line = preamble.first().cloned().unwrap_or_default();
    let mut names = split[header].clone();
    let after: Vec<&Vec<String>> = split[header + 1..data_start].iter().collect();
    let mut units: Vec<String> = after.first().map(|u| (*u).clone()).unwrap_or_default();
    let mut hidden = Vec::new();
    let mut time = None;
    let mut date = None;
    let mut date_kind = DateKind::Local;
    // The header-line variant of Haltech's export: `RPM(EngineSpeed:rpm)`.
    let scales = if haltech {
        crate::haltech::from_header(&mut names, &mut units)
    } else {
        Vec::new()
    };
    let has = |n: &str| names.iter().any(|x| x == n);
    let lower_name = file_name.to_ascii_lowercase();
    let format = if haltech {
        Format::Haltech
    } else if first_line.trim() == "BlueDriver Data Log" {
        // The second line is the day (`Aug 17, 2025`); the file name
        // carries the time of day.
        if let Some(day) = preamble.iter().find_map(|l| crate::dates::find(l)) {
            date = Some(day.secs);
            date_kind = if day.has_time {
                DateKind::Local
            } else {
                DateKind::Day
            };
        }
        Format::BlueDriver
    } else if names.first().is_some_and(|n| n == "TIME")
        && names.iter().skip(1).any(|n| n.contains('/'))
    {
        Format::EcuMaster
    } else if preamble
        .iter()
        .any(|l| l.contains("ME7-Logger") || l.contains("ME7Logger"))
    {
        // Names are the aliases of the third header line when given (the
        // first holds the ECU's variable names, the second units).
        if let Some(aliases) = after.get(1) {
            for (n, a) in names.iter_mut().zip(aliases.iter()) {
                if !a.is_empty() {
                    *n = a.clone();
                }
            }
        }
        date = preamble.iter().find_map(|l| {
            l.strip_prefix("Log started at:")
                .and_then(|d| text_date(d.trim()))
        });
        if units.first().and_then(|u| unit_time(u)).is_some() {
            time = Some((0, TimeUnit::Seconds));
        }
        Format::Me7Logger
    } else if vcds_date(&first_line).is_some() || preamble.iter().any(|l| l.contains("VCDS")) {
        date = vcds_date(&first_line);
        vcds_names(
            &split[block_start..data_start],
            &mut names,
            &mut units,
            &mut hidden,
            &mut time,
        );
        trim_unnamed(&mut names, &mut units, &mut hidden);
        Format::Vcds
    } else if names.iter().any(|n| n.starts_with("AP Info")) {
        hidden.extend(names.iter().position(|n| n.starts_with("AP Info")));
        Format::Cobb
    } else if has("LogEntrySeconds") || (has("LogID") && has("LogEntryDate")) {
        Format::EvoScan
    } else if preamble
        .iter()
        .any(|l| l.to_ascii_lowercase().contains("zeitronix") || l.starts_with("Filename:"))
        || lower_name.starts_with("zt")
    {
        Format::Zeitronix
    } else if preamble.iter().any(|l| l.starts_with("Session:"))
        || names
            .iter()
            .any(|n| n.starts_with("LC1") || n.starts_with("LM1") || n.starts_with("LM2"))
    {
        Format::LogWorks
    } else if names.first().is_some_and(|n| n == "sample")
        && names.get(1).is_some_and(|n| n.eq_ignore_ascii_case("time"))
    {
        Format::OpenPort
    } else if has("Time (msec)") || lower_name.starts_with("romraiderlog") {
        if lower_name.starts_with("btssm") {
            Format::BtSsm
        } else {
            Format::RomRaider
        }
    } else {
        Format::Plain
    };
    if date.is_none() {
        date = preamble.iter().find_map(|l| text_date(l));
    }
    // A time axis from the units row when the names do not say.
    if time.is_none() && !names.iter().any(|n| time_unit_of(n).is_some()) {
        time = units
            .iter()
            .enumerate()
            .find_map(|(i, u)| unit_time(u).map(|t| (i, t)));
    }
    if units.len() != names.len() || units.iter().all(|u| u.is_empty()) {
        units.clear();
    }
    if names.len() > MAX_COLUMNS {
        return Err(too_many_columns(names.len(), false));
    }
    let mut notes = Vec::new();
    if format == Format::Haltech {
        notes.push(
            "Haltech values are scaled by the type in each column's header as NSP shows them; \
             types of unproven scale stay raw"
                .to_string(),
        );
    }
    Ok(Some(Plan {
        format,
        delimiter: delim,
        body_start: lines[data_start].0,
        names,
        units,
        hidden,
        time,
        date,
        date_kind,
        scales,
        notes,
        source: None,
    }))
}

/// VCDS spreads a channel's name over the header block (group, label,
/// `TIME`/`STAMP` markers, units last) and gives each measuring group its
/// own time stamps: the label is the channel, the first group's stamps the
/// time axis, the marker and other stamps are hidden.
fn vcds_names(
    block: &[Vec<String>],
    names: &mut Vec<String>,
    units: &mut Vec<String>,
    hidden: &mut Vec<usize>,
    time: &mut Option<(usize, TimeUnit)>,
) {
    let width = block.iter().map(Vec::len).max().unwrap_or(0);
    let cell = |r: &Vec<String>, c: usize| r.get(c).map_or("", |s| s.as_str()).to_string();
    let Some((unit_row, label_rows)) = block.split_last() else {
        return;
    };
    let is_marker = |s: &str| {
        let l = s.to_ascii_lowercase();
        l.is_empty()
            || l.starts_with("group")
            || l.starts_with("gruppe")
            || l.starts_with('\'')
            || l.starts_with("loc.")
            || l == "marker"
            || (l.len() <= 5
                && l.starts_with(['g', 'f'])
                && l[1..].bytes().all(|b| b.is_ascii_digit()))
    };
    names.clear();
    units.clear();
    for c in 0..width {
        let all: Vec<String> = block.iter().map(|r| cell(r, c)).collect();
        let stamp = all
            .iter()
            .any(|s| s.eq_ignore_ascii_case("TIME") || s.eq_ignore_ascii_case("STAMP"));
        let marker = all.iter().any(|s| s.eq_ignore_ascii_case("Marker"));
        let label = label_rows.iter().rev().map(|r| cell(r, c)).find(|s| {
            !is_marker(s) && !s.eq_ignore_ascii_case("TIME") && !s.eq_ignore_ascii_case("STAMP")
        });
        if stamp {
            if time.is_none() {
                *time = Some((c, TimeUnit::Seconds));
            } else {
                hidden.push(c);
            }
            names.push("TIME".into());
        } else if marker && label.is_none() {
            hidden.push(c);
            names.push("Marker".into());
        } else {
            match label {
                Some(l) => names.push(l),
                None => {
                    hidden.push(c);
                    names.push(format!("(column {})", c + 1));
                }
            }
        }
        let u = cell(unit_row, c);
        units.push(
            if u.eq_ignore_ascii_case("TIME") || u.eq_ignore_ascii_case("STAMP") || u == "Marker" {
                String::new()
            } else {
                u
            },
        );
    }
}

/// Drops trailing columns no row fills (a wider group line).
fn trim_unnamed(names: &mut Vec<String>, units: &mut Vec<String>, hidden: &mut Vec<usize>) {
    while names.last().is_some_and(|n| n.starts_with("(column ")) {
        names.pop();
        units.truncate(names.len());
        hidden.retain(|&h| h < names.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str, name: &str) -> Plan {
        detect(text.as_bytes(), true, name).unwrap().unwrap()
    }

    #[test]
    fn encodings_from_first_bytes() {
        assert_eq!(sniff_encoding(b"Time,RPM\n0,1\n"), Encoding::Utf8);
        assert_eq!(sniff_encoding("T (°F),x\n".as_bytes()), Encoding::Utf8);
        assert_eq!(sniff_encoding(b"\xEF\xBB\xBFTime\n"), Encoding::Utf8Bom);
        assert_eq!(
            sniff_encoding(b"Coolant (\xB0 F),x\n"),
            Encoding::Windows1252
        );
        assert_eq!(sniff_encoding(b"\xFF\xFET\0i\0"), Encoding::Utf16Le);
        assert_eq!(sniff_encoding(b"\xFE\xFF\0T\0i"), Encoding::Utf16Be);
        assert_eq!(sniff_encoding(b"T\0i\0m\0e\0,\0x\0"), Encoding::Utf16Le);
        // Cut inside a character: still UTF-8.
        assert_eq!(sniff_encoding(&"x°".as_bytes()[..2]), Encoding::Utf8);
    }

    #[test]
    fn transcoding_in_any_pieces() {
        let text = "Time,Temp (°F),€\n0,1,2\n";
        let mut le = vec![0xFF, 0xFE];
        let mut be = vec![0xFE, 0xFF];
        for u in text.encode_utf16().chain("𝄞".encode_utf16()) {
            le.extend(u.to_le_bytes());
            be.extend(u.to_be_bytes());
        }
        let want = format!("{text}𝄞");
        let cp1252 = b"Time,Temp (\xB0F),\x80\n0,1,2\n".to_vec();
        for (enc, raw, want) in [
            (Encoding::Utf16Le, &le, want.as_str()),
            (Encoding::Utf16Be, &be, want.as_str()),
            (Encoding::Windows1252, &cp1252, text),
        ] {
            assert_eq!(sniff_encoding(raw), enc);
            for most in [1, 3, 1000] {
                let src = crate::reader::Trickle { data: raw, most };
                let mut out = String::new();
                std::io::Read::read_to_string(&mut Transcode::new(src, enc), &mut out).unwrap();
                assert_eq!(out, want, "{enc:?} in reads of {most}");
            }
        }
    }

    #[test]
    fn too_wide_headers_are_refused_from_the_head() {
        let wide = format!("t{}", ",x".repeat(MAX_COLUMNS + 5));
        let e = detect(&wide.as_bytes()[..HEAD], false, "w.csv").unwrap_err();
        assert!(e.contains("at least") && e.contains("cut -d,"), "{e}");
        assert!(
            detect(b"a,b\x00c\n1,2\n", true, "b.csv")
                .unwrap_err()
                .contains("binary")
        );
    }

    #[test]
    fn prose_is_not_a_log() {
        let e = detect(
            b"Dear user,\nthis is a letter, not a log\nregards,\nme\n",
            true,
            "x.csv",
        )
        .unwrap_err();
        assert!(
            e.contains("no rows of numbers") && e.contains("Dear user"),
            "{e}"
        );
    }

    #[test]
    fn me7logger_preamble_units_and_aliases() {
        let text = "#####\nLogfile created by ME7-Logger v1.20 (c) mki\n\nLogging with:    20 samples/second\nLog started at:  22.02.2014 17:47:01.046\n\nTimeStamp; nmot_w    ; dwkrz_0 ; wped_w\n  sec.ms ; 1/min     ; °KW     ; %\n\"TIME\";\"EngineSpeed\";\"IgnitionRetardCyl1\";\"\"\n    0.000; 800       ; 0       ; 1.5\n    0.050; 810       ; -0.75   ; 1.5\n";
        let p = plan(text, "me7.csv");
        assert_eq!(p.format, Format::Me7Logger);
        assert_eq!(p.delimiter, b';');
        assert_eq!(
            p.names,
            ["TIME", "EngineSpeed", "IgnitionRetardCyl1", "wped_w"]
        );
        assert_eq!(p.units, ["sec.ms", "1/min", "°KW", "%"]);
        assert_eq!(p.time, Some((0, TimeUnit::Seconds)));
        let d = crate::logs::LogDate::local(p.date.unwrap());
        assert_eq!(d.display(), "2014-02-22 17:47");
        assert_eq!(&text[p.body_start..p.body_start + 9], "    0.000");
    }

    #[test]
    fn vcds_groups_and_german_first_line() {
        let text = "Sonntag,30,November,2014,14:45:17:29612,VCDS Version: Release 14.10.0\n03L 906 018 JG,ADVMB,R4 2.0l TDI\n\n,Gruppe A:,'003,,Gruppe B:,'011\nMarker,TIME,Motordrehzahl,TIME,Ladedruck\n,STAMP,Luftmasse,STAMP,Soll\n,, /min,, mbar\n,0.44,800,0.47,1000\n,0.96,810,0.98,1010\n";
        let p = plan(text, "LOG-01.CSV");
        assert_eq!(p.format, Format::Vcds);
        assert_eq!(p.names, ["Marker", "TIME", "Luftmasse", "TIME", "Soll"]);
        assert_eq!(p.units[2], "/min");
        assert_eq!(p.time, Some((1, TimeUnit::Seconds)));
        assert_eq!(p.hidden, [0, 3]);
        let d = crate::logs::LogDate::local(p.date.unwrap());
        assert_eq!(d.display(), "2014-11-30 14:45");
    }

    #[test]
    fn logworks_zeitronix_cobb_openport() {
        let lw = plan(
            "Session: Session 8,,,,\r\ntime,LC1_O2WB,RPM,EGT\r\n(sec),(AFR),(RPM),(degC)\r\n0.00000,14.74,1173,440\r\n0.08192,14.80,1195,440\r\n",
            "a.csv",
        );
        assert_eq!(lw.format, Format::LogWorks);
        assert_eq!(lw.names, ["time", "LC1_O2WB", "RPM", "EGT"]);
        assert_eq!(lw.units, ["(sec)", "(AFR)", "(RPM)", "(degC)"]);
        let zt = plan(
            "Zeitronix Data Logger\nFilename:C:\\logs\\run1.dat\nDate: 2012-05-06 10:11:12\n\nRPM,AFR,Boost\n1000,14.7,-5\n1100,14.6,-4\n",
            "run1.csv",
        );
        assert_eq!(zt.format, Format::Zeitronix);
        assert_eq!(zt.names, ["RPM", "AFR", "Boost"]);
        assert!(zt.date.is_some());
        // ZTLog's export names its source file; that alone says Zeitronix.
        let zt = plan(
            "Filename:C:\\ZT\\run4.dat\nRPM,AFR\n1000,14.7\n1100,14.6\n",
            "run4.csv",
        );
        assert_eq!((zt.format, zt.names.len()), (Format::Zeitronix, 2));
        let cobb = plan(
            "Time (sec),Coolant Temp (° F),AP Info:[AP3 v1]\n0.000,115,0\n0.008,116,0\n",
            "datalog1.csv",
        );
        assert_eq!(cobb.format, Format::Cobb);
        assert_eq!(cobb.hidden, [2]);
        let op = plan(
            "sample,time,RPM\n0,102183.500,800\n1,102183.750,810\n",
            "log0182.csv",
        );
        assert_eq!(op.format, Format::OpenPort);
        let rr = plan("Time (msec);Engine Speed (rpm)\n0;0,00\n40;1,5\n", "x.csv");
        assert_eq!((rr.format, rr.delimiter), (Format::RomRaider, b';'));
        let bt = plan(
            "Time (msec),AFR (lambda)\n99,0.99\n201,0.99\n",
            "BtSsm_20251004_172148.csv",
        );
        assert_eq!(bt.format, Format::BtSsm);
    }

    #[test]
    fn dates_in_free_text() {
        let show = |s: &str| text_date(s).map(|secs| crate::logs::LogDate::local(secs).display());
        assert_eq!(
            show("Log started at 2014-02-22 17:47:01").as_deref(),
            Some("2014-02-22 17:47")
        );
        assert_eq!(
            show("22.02.2014 17:47:01.046").as_deref(),
            Some("2014-02-22 17:47")
        );
        assert_eq!(show("Version 1.20, 12/2010-07/2013"), None);
        assert!(vcds_date("Tuesday,23,December,2025,13:30:13:40001-VCID:2A06").is_some());
    }
}
