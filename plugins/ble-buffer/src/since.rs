//! The `since` argument: where a query starts.
//!
//! Every form is validated. The original fell back to "the whole buffer" for
//! anything it could not parse (`"1d"`, `"garbage"`, `"last"` without a
//! client id); here an unknown form is an error listing the accepted ones.

use crate::time::{Micros, parse_iso};
use std::fmt;

/// Where a query starts, parsed from get_logs' or search_packets' `since`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// Packets with a timestamp at or after this instant.
    Time(Micros),
    /// Packets with an id strictly greater than this one.
    AfterId(u64),
    /// After the named reader's last position.
    Last,
}

/// An unusable `since` (the text given); its Display lists the accepted
/// forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinceError(pub String);

impl fmt::Display for SinceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot understand since={:?}: use a duration (\"30s\", \"5m\", \"1h\", \"2d\"), an ISO timestamp (\"2025-07-25T10:00:00Z\"), a packet id (\"1234\": packets after it, e.g. the next_since of a previous answer), or \"last\"",
            plugin_kit::text::clip(&self.0)
        )
    }
}

/// Parses `since` relative to `now`.
pub fn parse_since(s: &str, now: Micros) -> Result<Since, SinceError> {
    let t = s.trim();
    let err = || SinceError(s.to_string());
    if t.eq_ignore_ascii_case("last") {
        return Ok(Since::Last);
    }
    if t.eq_ignore_ascii_case("all") || t == "0" {
        return Ok(Since::AfterId(0));
    }
    let id_digits = t
        .strip_prefix("id:")
        .or_else(|| t.strip_prefix('#'))
        .unwrap_or(t);
    if !id_digits.is_empty() && id_digits.bytes().all(|c| c.is_ascii_digit()) {
        return id_digits.parse().map(Since::AfterId).map_err(|_| err());
    }
    if let Some(unit) = t.chars().last()
        && let Some(scale) = match unit {
            's' | 'S' => Some(1_000_000i64),
            'm' | 'M' => Some(60_000_000),
            'h' | 'H' => Some(3_600_000_000),
            'd' | 'D' => Some(86_400_000_000),
            _ => None,
        }
    {
        let n = &t[..t.len() - 1];
        if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) {
            let n: i64 = n.parse().map_err(|_| err())?;
            return n
                .checked_mul(scale)
                .map(|d| Since::Time(now.saturating_sub(d)))
                .ok_or_else(err);
        }
    }
    parse_iso(t).map(Since::Time).ok_or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Micros = 1_753_437_600_000_000;

    #[test]
    fn durations() {
        assert_eq!(parse_since("30s", NOW), Ok(Since::Time(NOW - 30_000_000)));
        assert_eq!(parse_since("5m", NOW), Ok(Since::Time(NOW - 300_000_000)));
        assert_eq!(
            parse_since(" 1h ", NOW),
            Ok(Since::Time(NOW - 3_600_000_000))
        );
        assert_eq!(
            parse_since("1d", NOW),
            Ok(Since::Time(NOW - 86_400_000_000))
        );
    }

    #[test]
    fn ids_last_and_iso() {
        assert_eq!(parse_since("1234", NOW), Ok(Since::AfterId(1234)));
        assert_eq!(parse_since("id:7", NOW), Ok(Since::AfterId(7)));
        assert_eq!(parse_since("#7", NOW), Ok(Since::AfterId(7)));
        assert_eq!(parse_since("all", NOW), Ok(Since::AfterId(0)));
        assert_eq!(parse_since("LAST", NOW), Ok(Since::Last));
        assert_eq!(
            parse_since("2025-07-25T10:00:00Z", NOW),
            Ok(Since::Time(NOW))
        );
    }

    #[test]
    fn garbage_is_an_error_naming_the_forms() {
        for s in [
            "garbage",
            "",
            "5x",
            "-5s",
            "s",
            "1.5m",
            "99999999999999999999",
        ] {
            let e = parse_since(s, NOW).unwrap_err();
            assert!(e.to_string().contains("duration"), "{s}");
        }
    }
}
