//! Hex display of payloads and byte-pattern matching with `??` wildcards.
//!
//! Patterns are compiled to bytes, never handed to a regex engine: the
//! original tool built `new RegExp(pattern)` and matched it against the
//! space-separated display string, so `(` crashed it and `A7B3` never matched
//! `A7 B3`.

use std::fmt;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Uppercase, space-separated: `A7 B3 02`.
pub fn format_hex(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 3);
    for (i, b) in data.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Parses hex bytes, whitespace (and `,`/`:`/`-` separators) ignored.
pub fn parse_hex_bytes(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && !matches!(c, b',' | b':' | b'-'))
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

/// Why a hex pattern was refused; the message says how to write one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// Nothing but spaces.
    Empty,
    /// A character other than hex digits, spaces and `??` (a lone `?` half-byte
    /// included).
    BadChar(char),
    /// An odd number of hex digits (the count): patterns are whole bytes.
    OddDigits(usize),
    /// Only `??`: it would match every packet, so at least one literal byte is
    /// required.
    AllWildcards,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the hex pattern is empty; give bytes such as \"A7 B3\""),
            Self::BadChar(c) => write!(
                f,
                "{c:?} is not allowed in a hex pattern: use hex digits, spaces and ?? (any byte), e.g. \"A7 B3 ?? 02\""
            ),
            Self::OddDigits(n) => write!(
                f,
                "the hex pattern has {n} hex digits; patterns are whole bytes (two digits each, ?? for any byte)"
            ),
            Self::AllWildcards => write!(
                f,
                "the hex pattern is only wildcards; add at least one literal byte"
            ),
        }
    }
}

/// A compiled byte pattern: `None` is a one-byte wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    bytes: Vec<Option<u8>>,
    /// Index of the first literal byte, used as the scan anchor.
    anchor: usize,
}

impl Pattern {
    /// Parses "A7 B3 ?? 02" and the like: case and whitespace ignored, `??` any
    /// one byte.
    pub fn parse(s: &str) -> Result<Self, PatternError> {
        let mut digits = Vec::new();
        for c in s.chars() {
            match c {
                c if c.is_whitespace() => {}
                '?' => digits.push(None),
                c if c.is_ascii_hexdigit() => digits.push(nibble(c as u8)),
                c => return Err(PatternError::BadChar(c)),
            }
        }
        if digits.is_empty() {
            return Err(PatternError::Empty);
        }
        if digits.len() % 2 != 0 {
            return Err(PatternError::OddDigits(digits.len()));
        }
        let mut bytes = Vec::with_capacity(digits.len() / 2);
        for pair in digits.chunks(2) {
            bytes.push(match (pair[0], pair[1]) {
                (Some(h), Some(l)) => Some(h << 4 | l),
                (None, None) => None,
                // Half-byte wildcards ("A?") would silently widen the match.
                _ => return Err(PatternError::BadChar('?')),
            });
        }
        let anchor = bytes
            .iter()
            .position(Option::is_some)
            .ok_or(PatternError::AllWildcards)?;
        Ok(Self { bytes, anchor })
    }

    /// Bytes a match spans, wildcards included.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true for a parsed pattern (`parse` refuses empty ones).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// True when `data` contains the pattern at any byte offset.
    pub fn is_match(&self, data: &[u8]) -> bool {
        let n = self.bytes.len();
        if data.len() < n {
            return false;
        }
        let first = self.bytes[self.anchor].unwrap_or(0);
        let last_start = data.len() - n;
        let mut start = 0;
        while start <= last_start {
            // Jump to the next occurrence of the anchor byte, then verify.
            let window = &data[start + self.anchor..=last_start + self.anchor];
            match window.iter().position(|&b| b == first) {
                None => return false,
                Some(off) => start += off,
            }
            let cand = &data[start..start + n];
            if self
                .bytes
                .iter()
                .zip(cand)
                .all(|(p, b)| p.is_none_or(|p| p == *b))
            {
                return true;
            }
            start += 1;
        }
        false
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.bytes.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match b {
                Some(b) => write!(f, "{b:02X}")?,
                None => f.write_str("??")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_uppercase_spaced() {
        assert_eq!(format_hex(&[0xa7, 0xb3, 0x02]), "A7 B3 02");
        assert_eq!(format_hex(&[]), "");
    }

    #[test]
    fn parses_bytes_loosely() {
        assert_eq!(parse_hex_bytes("a7 B3 02"), Some(vec![0xa7, 0xb3, 2]));
        assert_eq!(parse_hex_bytes("A7B302"), Some(vec![0xa7, 0xb3, 2]));
        assert_eq!(parse_hex_bytes("A7B"), None);
        assert_eq!(parse_hex_bytes("zz"), None);
    }

    #[test]
    fn matches_across_byte_boundaries_case_and_spaces_ignored() {
        let data = [0xa7, 0xb3, 0x02, 0xd9, 0x82, 0x37];
        for p in ["B302", "b3 02 d9", "A7B302D98237", "  82 37 ", "d982"] {
            assert!(Pattern::parse(p).unwrap().is_match(&data), "{p}");
        }
        for p in ["B303", "3702", "A7B302D9823700"] {
            assert!(!Pattern::parse(p).unwrap().is_match(&data), "{p}");
        }
    }

    #[test]
    fn wildcards_match_any_single_byte() {
        let data = [0xa7, 0xb3, 0x02, 0xd9];
        assert!(Pattern::parse("A7 ?? 02").unwrap().is_match(&data));
        assert!(Pattern::parse("?? B3").unwrap().is_match(&data));
        assert!(Pattern::parse("02 ??").unwrap().is_match(&data));
        assert!(!Pattern::parse("D9 ??").unwrap().is_match(&data));
        assert!(!Pattern::parse("A7 ?? ?? ?? ??").unwrap().is_match(&data));
        assert_eq!(Pattern::parse("a7??02").unwrap().to_string(), "A7 ?? 02");
    }

    #[test]
    fn rejects_regex_and_bad_input_with_reasons() {
        assert_eq!(Pattern::parse("("), Err(PatternError::BadChar('(')));
        assert_eq!(Pattern::parse("A7.*"), Err(PatternError::BadChar('.')));
        assert_eq!(Pattern::parse("A7B"), Err(PatternError::OddDigits(3)));
        assert_eq!(Pattern::parse("  "), Err(PatternError::Empty));
        assert_eq!(Pattern::parse("????"), Err(PatternError::AllWildcards));
        assert_eq!(Pattern::parse("A?"), Err(PatternError::BadChar('?')));
        assert!(Pattern::parse("(").unwrap_err().to_string().contains("??"));
    }

    #[test]
    fn repeated_anchor_bytes_are_rechecked() {
        let data = [0xa7, 0xa7, 0xa7, 0xb3];
        assert!(Pattern::parse("A7 B3").unwrap().is_match(&data));
        assert!(Pattern::parse("A7 A7 B3").unwrap().is_match(&data));
        assert!(!Pattern::parse("A7 A7 A7 A7").unwrap().is_match(&data));
    }
}
