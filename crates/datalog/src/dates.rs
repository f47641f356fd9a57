//! Recording dates as loggers write them in file names and log text:
//! `2026-02-22T14-30-00-000Z`, `20241016_113910`, ECUMaster's
//! `2025_1218_1904`, Haltech's `2025-07-18_0215pm`, PCLink's
//! `2024-02-8 3;56;20 pm` and `1/14/2022 6:22:19 PM`, BlueDriver's
//! `Aug_17__2025_08_45_PM` and `Aug 17, 2025`.

use crate::format::civil;
use regex_lite::{Captures, Regex};
use std::sync::OnceLock;

/// A date found in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Seconds since 1970 of the date and time (as if UTC unless `utc`).
    pub secs: i64,
    /// The text marks the time as UTC (a trailing `Z`).
    pub utc: bool,
    /// The text gives a time of day (otherwise `secs` is the day's start).
    pub has_time: bool,
}

struct Patterns {
    /// Year first, two-digit fields, the time with or without seconds.
    compact: Regex,
    /// Year first with one-digit fields allowed, separated.
    separated: Regex,
    /// `M/D/YYYY` (`D/M/YYYY` when the first number cannot be a month).
    slashed: Regex,
    /// A month's name, the day and the year.
    named: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("valid date regex");
        const AMPM: &str = r"(?:[ _-]?([AaPp][Mm])(?:[^A-Za-z]|$))?";
        Patterns {
            compact: re(&format!(
                r"(\d{{4}})[-._]?(\d{{2}})[-._]?(\d{{2}})[T_ -]?(\d{{2}})[-._:;]?(\d{{2}})(?:[-._:;]?(\d{{2}}))?(?:[-.]\d{{1,3}})?(Z)?{AMPM}"
            )),
            separated: re(&format!(
                r"(\d{{4}})-(\d{{1,2}})-(\d{{1,2}})(?:[ _T]+(\d{{1,2}})[:;.-](\d{{2}})(?:[:;.-](\d{{2}}))?{AMPM})?"
            )),
            slashed: re(&format!(
                r"(\d{{1,2}})/(\d{{1,2}})/(\d{{4}})(?:[ ,T]+(\d{{1,2}}):(\d{{2}})(?::(\d{{2}}))?{AMPM})?"
            )),
            named: re(&format!(
                r"(?i)(?:^|[^a-z])(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?[ _.-]+(\d{{1,2}})(?:st|nd|rd|th)?[ ,_.-]+(\d{{4}})(?:[ _,-]+(\d{{1,2}})[:_.-](\d{{2}})(?:[:_.-](\d{{2}}))?{AMPM})?"
            )),
        }
    })
}

fn num(c: &Captures, i: usize) -> Option<i64> {
    c.get(i).and_then(|m| m.as_str().parse().ok())
}

/// The hour of a 12-hour clock with its `am`/`pm`.
fn hour24(hour: i64, ampm: Option<&str>) -> Option<i64> {
    match ampm.map(str::to_ascii_lowercase).as_deref() {
        None => Some(hour),
        Some(_) if !(1..=12).contains(&hour) => None,
        Some("am") => Some(hour % 12),
        Some(_) => Some(hour % 12 + 12),
    }
}

/// Builds the date from the captures `y, mo, d` and the time groups
/// `h, mi, s, ampm` (the time optional).
fn build(c: &Captures, ymd: (i64, i64, i64), time: [usize; 4], utc: bool) -> Option<Found> {
    let (y, mo, d) = ymd;
    let (h, mi) = (num(c, time[0]), num(c, time[1]));
    let has_time = h.is_some() && mi.is_some();
    let h = match h {
        Some(h) => hour24(h, c.get(time[3]).map(|m| m.as_str()))?,
        None => 0,
    };
    let secs = civil(y, mo, d, h, mi.unwrap_or(0), num(c, time[2]).unwrap_or(0))?;
    Some(Found {
        secs,
        utc,
        has_time,
    })
}

/// The first date (and time, when given) in `text`, in any of the forms the
/// module names; `None` when none reads as a real date (years 1980..=2200).
pub fn find(text: &str) -> Option<Found> {
    let p = patterns();
    for c in p.compact.captures_iter(text) {
        let ymd = (num(&c, 1)?, num(&c, 2)?, num(&c, 3)?);
        if let Some(f) = build(&c, ymd, [4, 5, 6, 8], c.get(7).is_some()) {
            return Some(f);
        }
    }
    for c in p.separated.captures_iter(text) {
        let ymd = (num(&c, 1)?, num(&c, 2)?, num(&c, 3)?);
        if let Some(f) = build(&c, ymd, [4, 5, 6, 7], false) {
            return Some(f);
        }
    }
    for c in p.slashed.captures_iter(text) {
        let (a, b, y) = (num(&c, 1)?, num(&c, 2)?, num(&c, 3)?);
        // Month first as in the US (PCLink's `1/14/2022`) unless the first
        // number cannot be a month.
        let (mo, d) = if a > 12 { (b, a) } else { (a, b) };
        if let Some(f) = build(&c, (y, mo, d), [4, 5, 6, 7], false) {
            return Some(f);
        }
    }
    for c in p.named.captures_iter(text) {
        let mo = month(c.get(1)?.as_str())?;
        if let Some(f) = build(&c, (num(&c, 3)?, mo, num(&c, 2)?), [4, 5, 6, 7], false) {
            return Some(f);
        }
    }
    None
}

/// The month number of an English month name's first three letters.
fn month(name: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let n = name.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| n.starts_with(m))
        .map(|i| i as i64 + 1)
}

/// The date and time in free text with a time of day (a date alone is
/// not enough), as seconds of the logger's clock.
pub fn loose_date_time(text: &str) -> Option<i64> {
    find(text).filter(|f| f.has_time).map(|f| f.secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(text: &str) -> Option<String> {
        find(text).map(|f| {
            let t = plugin_kit::civil::DateTime::from_unix_secs(f.secs);
            format!(
                "{} {:02}:{:02}:{:02}{}{}",
                t.date_string(),
                t.hour,
                t.minute,
                t.second,
                if f.utc { " UTC" } else { "" },
                if f.has_time { "" } else { " (day)" }
            )
        })
    }

    #[test]
    fn names_and_text_of_every_logger() {
        let cases = [
            (
                "log-2026-02-22T14-30-00-000Z.csv",
                "2026-02-22 14:30:00 UTC",
            ),
            (
                "romraiderlog_20241016_113910_TCU5.csv",
                "2024-10-16 11:39:10",
            ),
            ("BtSsm_20251004_172148.csv", "2025-10-04 17:21:48"),
            (
                "EvoScanDataLog_2014.08.17_15.22.33.csv",
                "2014-08-17 15:22:33",
            ),
            ("2025_1218_1904.csv", "2025-12-18 19:04:00"),
            ("20250529_1248_31.emuprolog.gz", "2025-05-29 12:48:31"),
            ("2025-07-18_0215pm_Log1118.csv", "2025-07-18 14:15:00"),
            ("2025-03-06_0937pm_Logs658to874.csv", "2025-03-06 21:37:00"),
            ("ECU Log 2024-02-8 3;56;20 pm.llg5", "2024-02-08 15:56:20"),
            ("ECU Log 2024-03-22 11;20;32 am.llg5", "2024-03-22 11:20:32"),
            ("1/14/2022 6:22:19 PM", "2022-01-14 18:22:19"),
            ("14/01/2022 18:22", "2022-01-14 18:22:00"),
            (
                "SBM22GCA4MW001405_Aug_17__2025_08_45_PM_LiveData.csv",
                "2025-08-17 20:45:00",
            ),
            ("DataLog-Jan_16_2026_3-00-09-PM.csv", "2026-01-16 15:00:09"),
            ("Aug 17, 2025", "2025-08-17 00:00:00 (day)"),
            ("20250718 02:15:46", "2025-07-18 02:15:46"),
            ("12/31/2025 12:05 AM", "2025-12-31 00:05:00"),
        ];
        for (text, want) in cases {
            assert_eq!(show(text).as_deref(), Some(want), "{text}");
        }
        for none in [
            "pull.csv",
            "Log1118.csv",
            "marker 12 2024",
            "13:00 13/13/2024",
        ] {
            assert_eq!(show(none), None, "{none}");
        }
        assert_eq!(loose_date_time("Aug 17, 2025"), None);
        assert!(loose_date_time(" ").is_none());
    }
}
