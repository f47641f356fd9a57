//! Unix time ↔ proleptic Gregorian calendar dates, in UTC.
//!
//! Plugins stamp and parse times without a time-zone library (no chrono in
//! the guests: it would only ever be asked for UTC), so the calendar
//! arithmetic lives here once. It is Howard Hinnant's `days_from_civil` /
//! `civil_from_days` (<https://howardhinnant.github.io/date_algorithms.html>):
//! exact for every date, before 1970 and after 2100 alike, with no tables
//! and no loops.
//!
//! The arithmetic is exact for years within ±10^15 and the day counts they
//! give, which covers every timestamp a file or clock can hold; beyond that
//! `i64` overflows.

/// Seconds in a civil day (UTC has no leap seconds in Unix time).
pub const SECS_PER_DAY: i64 = 86_400;

/// Whether `year` has a 29 February: every fourth year, except centuries
/// that are not divisible by 400 (1900 and 2100 are not, 2000 is).
pub fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` (1–12) of `year`; 0 for a month outside 1–12, so a
/// caller's `day <= days_in_month(..)` check refuses it too.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        _ => 0,
    }
}

/// Days since 1970-01-01 of the date `year`-`month`-`day` (negative before).
///
/// `month` must be 1–12. `day` is not checked against the month: a day past
/// the month's end counts on into the next month (31 February is 2 or 3
/// March), which is what callers that validate with [`days_in_month`] never
/// ask for and what lenient parsers want.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (m, d) = (i64::from(month), i64::from(day));
    // Years start in March so that the leap day ends the year.
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The date (year, month 1–12, day 1–31) that is `days` days after
/// 1970-01-01 (before it when negative). Inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // March = 0
    // Both fit: day is 1–31 and month 1–12 by construction.
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A UTC calendar date and time of day, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime {
    /// Proleptic Gregorian year (year 0 is 1 BC; negative before that).
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day of the month, 1–31.
    pub day: u32,
    /// Hour, 0–23.
    pub hour: u32,
    /// Minute, 0–59.
    pub minute: u32,
    /// Second, 0–59.
    pub second: u32,
}

impl DateTime {
    /// The UTC date and time `secs` seconds after 1970-01-01T00:00:00Z
    /// (before it when negative: -1 is 1969-12-31T23:59:59).
    pub fn from_unix_secs(secs: i64) -> Self {
        let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        // rem_euclid keeps the time of day in [0, 86400) for negative times.
        let sod = secs.rem_euclid(SECS_PER_DAY) as u32;
        Self {
            year,
            month,
            day,
            hour: sod / 3600,
            minute: sod % 3600 / 60,
            second: sod % 60,
        }
    }

    /// Seconds since 1970-01-01T00:00:00Z. Inverse of
    /// [`DateTime::from_unix_secs`]; fields past their range count on (as in
    /// [`days_from_civil`]).
    pub fn to_unix_secs(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * SECS_PER_DAY
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
    }

    /// `YYYY-MM-DD`.
    pub fn date_string(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `YYYY-MM-DDTHH:MM:SS`, with no zone suffix: callers add `Z`, a
    /// fraction, or nothing, as their format asks.
    pub fn iso_seconds(&self) -> String {
        format!(
            "{}T{:02}:{:02}:{:02}",
            self.date_string(),
            self.hour,
            self.minute,
            self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts days one by one from a known anchor, the slow obvious way,
    /// to check the closed-form arithmetic against.
    fn walk(from: (i64, u32, u32), steps: i64) -> (i64, u32, u32) {
        let (mut y, mut m, mut d) = from;
        for _ in 0..steps {
            d += 1;
            if d > days_in_month(y, m) {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
        (y, m, d)
    }

    #[test]
    fn the_epoch_is_day_zero() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(
            DateTime::from_unix_secs(0).iso_seconds(),
            "1970-01-01T00:00:00"
        );
    }

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        // 2100 is not a leap year: 28 February is followed by 1 March.
        assert_eq!(days_from_civil(2100, 3, 1), 47_541);
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(days_from_civil(2025, 7, 25), 20_294);
        assert_eq!(days_from_civil(2038, 1, 19), 24_855);
    }

    #[test]
    fn negative_days_are_before_1970() {
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(civil_from_days(-365), (1969, 1, 1));
        assert_eq!(days_from_civil(1900, 3, 1), -25_508);
        assert_eq!(civil_from_days(-25_509), (1900, 2, 28));
        assert_eq!(days_from_civil(1600, 2, 29), -135_081);
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        assert_eq!(civil_from_days(-719_469), (0, 2, 29));
        let t = DateTime::from_unix_secs(-1);
        assert_eq!(t.iso_seconds(), "1969-12-31T23:59:59");
        assert_eq!(t.to_unix_secs(), -1);
    }

    #[test]
    fn leap_years() {
        for y in [1600, 2000, 2004, 2024, 2400, 0, -4] {
            assert!(is_leap_year(y), "{y}");
            assert_eq!(days_in_month(y, 2), 29, "{y}");
        }
        for y in [1700, 1900, 2023, 2100, 2200, -1, -100] {
            assert!(!is_leap_year(y), "{y}");
            assert_eq!(days_in_month(y, 2), 28, "{y}");
        }
        assert_eq!(days_in_month(2023, 4), 30);
        assert_eq!(days_in_month(2023, 12), 31);
        assert_eq!(days_in_month(2023, 0), 0);
        assert_eq!(days_in_month(2023, 13), 0);
    }

    #[test]
    fn agrees_with_counting_day_by_day() {
        // 1900-01-01 is day -25567; walk 250 years, across 1900, 2000, 2100.
        let start = (1900, 1, 1);
        assert_eq!(days_from_civil(1900, 1, 1), -25_567);
        let mut date = start;
        for n in -25_567..-25_567 + 250 * 366 {
            assert_eq!(civil_from_days(n), date, "day {n}");
            assert_eq!(days_from_civil(date.0, date.1, date.2), n, "{date:?}");
            date = walk(date, 1);
        }
    }

    #[test]
    fn round_trips_far_from_the_epoch() {
        for n in (-1_000_000_000i64..1_000_000_000).step_by(7_919_993) {
            let (y, m, d) = civil_from_days(n);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), n);
        }
    }

    #[test]
    fn days_past_the_month_count_on() {
        assert_eq!(days_from_civil(2023, 2, 31), days_from_civil(2023, 3, 3));
        assert_eq!(days_from_civil(2024, 2, 31), days_from_civil(2024, 3, 2));
    }

    #[test]
    fn date_times_split_and_join() {
        let t = DateTime::from_unix_secs(951_782_400 + 3_723);
        assert_eq!(
            t,
            DateTime {
                year: 2000,
                month: 2,
                day: 29,
                hour: 1,
                minute: 2,
                second: 3
            }
        );
        assert_eq!(t.date_string(), "2000-02-29");
        assert_eq!(t.iso_seconds(), "2000-02-29T01:02:03");
        assert_eq!(t.to_unix_secs(), 951_786_123);
        for s in [
            -86_401,
            -86_400,
            -1,
            0,
            59,
            86_399,
            4_102_444_800,
            4_107_542_400,
        ] {
            assert_eq!(DateTime::from_unix_secs(s).to_unix_secs(), s, "{s}");
        }
        assert_eq!(
            DateTime::from_unix_secs(4_107_542_400).iso_seconds(),
            "2100-03-01T00:00:00"
        );
    }
}
