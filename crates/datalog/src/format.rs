//! What a log is and how its fields read, shared by layout detection
//! ([`crate::detect`]), the CSV and binary readers and the log listing: the
//! logger that wrote it, how its time column counts, numbers in a field, and
//! the recording date a log carries.

use plugin_kit::civil::{SECS_PER_DAY, days_from_civil};

/// The logger that wrote a log, as `list_logs` names it ([`Format::name`]); it
/// decides how the header, units and time column are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Any CSV with a header line: the time column is found by its name.
    Plain,
    /// EvoScan (Mitsubishi): `LogEntrySeconds` is the time axis, the first
    /// row's date and time date the log.
    EvoScan,
    /// RomRaider: `Time (msec)` or a clock time, `,` or `;`, headers repeated
    /// or changed mid-file.
    RomRaider,
    /// BtSsm: RomRaider's layout, told apart by its `BtSsm…` file name.
    BtSsm,
    /// Tactrix OpenPort: the first columns are `sample` and `time` (seconds
    /// since power-on).
    OpenPort,
    /// COBB Accessport: an `AP Info` column, kept but not listed as a channel.
    Cobb,
    /// ME7Logger (Bosch ME7): a preamble with the log's date, then alias and
    /// units rows.
    Me7Logger,
    /// VCDS (VW/Audi): the date on the first line, per-group stamp columns and
    /// markers.
    Vcds,
    /// LogWorks (Innovate LC-1/LM-1/LM-2): a `Session:` preamble or
    /// `LC1`/`LM1`/`LM2` channels.
    LogWorks,
    /// Zeitronix: a preamble naming Zeitronix, a ZTLog `Filename:` line, or a
    /// `zt…` file name.
    Zeitronix,
    /// Haltech NSP export: a `%DataLog%` preamble declaring the channels
    /// (or a header of `Name(Type:Unit)` cells), raw values scaled by type.
    Haltech,
    /// BlueDriver OBD app: UTF-16 text, a `BlueDriver Data Log` title and the
    /// date on the second line.
    BlueDriver,
    /// ECUMaster EMU PRO / EMU Black CSV export: `TIME` first, slash-path
    /// channel names; empty cells hold the previous value.
    EcuMaster,
    /// MegaLogViewer binary (`MLVLG`, versions 1 and 2): TunerStudio,
    /// MegaSquirt, Speeduino, rusEFI.
    Mlg,
    /// Link ECU PCLink binary log (`.llg`, `.llg5`).
    Link,
    /// ECUMaster EMU Black binary log (`.emublog`, gzip-compressed).
    EmuBlack,
    /// Emerald K6/M3D: fixed binary records (`.lg1`) named by a channel list
    /// (`.lg2`).
    Emerald,
}

impl Format {
    /// The name agents see, e.g. "evoscan" or "cobb-accessport".
    pub fn name(self) -> &'static str {
        match self {
            Format::Plain => "csv",
            Format::EvoScan => "evoscan",
            Format::RomRaider => "romraider",
            Format::BtSsm => "btssm",
            Format::OpenPort => "openport",
            Format::Cobb => "cobb-accessport",
            Format::Me7Logger => "me7logger",
            Format::Vcds => "vcds",
            Format::LogWorks => "logworks",
            Format::Zeitronix => "zeitronix",
            Format::Haltech => "haltech",
            Format::BlueDriver => "bluedriver",
            Format::EcuMaster => "ecumaster",
            Format::Mlg => "mlg",
            Format::Link => "link",
            Format::EmuBlack => "ecumaster-emublog",
            Format::Emerald => "emerald",
        }
    }
}

/// How a log's time column counts; rows are always turned into seconds from the
/// log's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds (fractions allowed).
    Seconds,
    /// Milliseconds (RomRaider's `Time (msec)`).
    Millis,
    /// Wall-clock `HH:MM:SS.fff`, converted to seconds since the first row.
    Clock,
    /// `MM:SS.f`: a clock Excel re-saved with its default `mm:ss.0` format,
    /// which drops the hours (the hour is restored by counting wraps).
    MinSec,
}

/// How far a log's own start date can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateKind {
    /// A date and time of the logger's local clock, zone unknown.
    #[default]
    Local,
    /// A date and time in UTC (an MLG header's Unix time).
    Utc,
    /// A day only (BlueDriver's `Aug 17, 2025`): the time of day is unknown.
    Day,
}

/// The rank and unit of a time column named `name` (lower ranks win).
pub(crate) fn time_unit_of(name: &str) -> Option<(u8, TimeUnit)> {
    let n = name.trim().to_ascii_lowercase();
    Some(match n.as_str() {
        "logentryseconds" => (0, TimeUnit::Seconds),
        "time (msec)" | "time (ms)" | "timestamp (ms)" | "time(ms)" | "time(msec)"
        | "timestamp(ms)" | "time_ms" | "timestamp_ms" => (1, TimeUnit::Millis),
        "time" | "time (s)" | "time (sec)" | "time(s)" | "time(sec)" | "time (seconds)"
        | "seconds" | "timestamp (s)" | "elapsed" | "elapsed (s)" | "time_s" => {
            (2, TimeUnit::Seconds)
        }
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

/// Seconds since the Unix epoch of a date and time a log carries (in its
/// name, preamble or header), or `None` when a field is out of range (years
/// 1980..=2200, so a stray number is not taken for a date).
pub(crate) fn civil(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    let ok = (1980..=2200).contains(&y)
        && (1..=12).contains(&mo)
        && (1..=31).contains(&d)
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..61).contains(&s);
    // The checks above keep month and day in u32 range.
    ok.then(|| days_from_civil(y, mo as u32, d as u32) * SECS_PER_DAY + h * 3600 + mi * 60 + s)
}

/// Classifies a field's text: a number (with its decimals) or not.
pub(crate) fn general_number(text: &str, delim: u8, quoted: bool) -> Option<(f64, u8)> {
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
    // Decimal comma in `;`- or tab-separated logs (European locales).
    if delim != b','
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

/// `x` rounded to `decimals` fraction digits (the nearest f64 to the decimal
/// a CSV export would print), unless that is beyond f64's exact integers.
pub(crate) fn round_to(x: f64, decimals: u8) -> f64 {
    let p = 10f64.powi(i32::from(decimals.min(15)));
    let scaled = x * p;
    if !scaled.is_finite() || scaled.abs() >= 9.0e15 {
        return x;
    }
    scaled.round() / p
}
