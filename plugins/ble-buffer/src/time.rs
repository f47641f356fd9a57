//! Timestamps as microseconds since the Unix epoch, and their ISO 8601 form.
//!
//! Hand-written (no chrono) because the guest needs only UTC formatting and
//! a strict parser; the calendar arithmetic is the shared
//! [`plugin_kit::civil`].

use plugin_kit::civil::{DateTime, days_from_civil, days_in_month};
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since 1970-01-01T00:00:00Z.
pub type Micros = i64;

/// The wall clock now (negative before 1970, which only a broken clock gives).
pub fn now_us() -> Micros {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_micros() as Micros,
        Err(e) => -(e.duration().as_micros() as Micros),
    }
}

/// `2025-07-25T10:00:00.123456Z`: microseconds, because captures time
/// packets to the microsecond (JavaScript's toISOString stops at
/// milliseconds; its parsers read the longer fraction too).
pub fn format_iso(us: Micros) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    format!(
        "{}.{frac:06}Z",
        DateTime::from_unix_secs(secs).iso_seconds()
    )
}

/// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.frac]]` with an optional `Z`
/// or `±HH:MM` offset (UTC when absent). `None` when it is not such a string.
pub fn parse_iso(s: &str) -> Option<Micros> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)? as u32, num(8..10)? as u32);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
        return None;
    }
    let mut us = days_from_civil(y, mo, d) * 86_400_000_000;
    let mut i = 10;
    if i < b.len() {
        if b[i] != b'T' && b[i] != b't' && b[i] != b' ' {
            return None;
        }
        let (h, mi) = (num(11..13)?, num(14..16)?);
        if b.get(13) != Some(&b':') || h > 23 || mi > 59 {
            return None;
        }
        us += (h * 3600 + mi * 60) * 1_000_000;
        i = 16;
        if b.get(i) == Some(&b':') {
            let sec = num(17..19)?;
            if sec > 60 {
                return None;
            }
            us += sec * 1_000_000;
            i = 19;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                let mut frac = 0i64;
                while i < b.len() && b[i].is_ascii_digit() {
                    if i - start < 6 {
                        frac = frac * 10 + (b[i] - b'0') as i64;
                    }
                    i += 1;
                }
                if i == start {
                    return None;
                }
                for _ in (i - start)..6 {
                    frac *= 10;
                }
                us += frac;
            }
        }
        match b.get(i) {
            None => {}
            Some(b'Z') | Some(b'z') if i + 1 == b.len() => {}
            Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
                let off = (num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?) * 60_000_000;
                us += if sign == b'+' { -off } else { off };
            }
            _ => return None,
        }
    }
    Some(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_iso(1_753_437_600_123_456),
            "2025-07-25T10:00:00.123456Z"
        );
        assert_eq!(
            format_iso(951_782_400_000_001),
            "2000-02-29T00:00:00.000001Z"
        );
        assert_eq!(format_iso(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(
            format_iso(4_107_542_400_000_000),
            "2100-03-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn parses_what_it_formats_and_offsets() {
        for us in [
            0,
            1_753_437_600_123_000,
            1_753_437_600_123_457,
            951_782_400_000_000,
            4_102_444_799_999_999,
        ] {
            assert_eq!(parse_iso(&format_iso(us)), Some(us));
        }
        assert_eq!(parse_iso("2025-07-25"), Some(1_753_401_600_000_000));
        assert_eq!(
            parse_iso("2025-07-25T12:00:00+02:00"),
            parse_iso("2025-07-25T10:00:00Z")
        );
        assert_eq!(
            parse_iso("2025-07-25T10:00"),
            parse_iso("2025-07-25T10:00:00Z")
        );
        assert_eq!(
            parse_iso("2025-07-25T10:00:00.5Z"),
            Some(1_753_437_600_500_000)
        );
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "last",
            "garbage",
            "1d",
            "2025-13-01",
            "2025-02-30",
            "2100-02-29",
            "2025-07-25T25:00",
            "2025-07-25T10:00:00Q",
            "2025-07-25T10:00:00.Z",
            "",
        ] {
            assert_eq!(parse_iso(s), None, "{s}");
        }
    }
}
