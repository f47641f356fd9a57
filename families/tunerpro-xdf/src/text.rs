//! Bytes to text and text to numbers, the way XDF files need them.
//!
//! TunerPro writes its files in the Windows code page with no XML
//! declaration (the `°` of a unit is the single byte 0xB0), while files
//! edited elsewhere are UTF-8; numbers come as `0x…` hex or decimal in the
//! same attribute across files.

use std::borrow::Cow;

/// The characters Windows-1252 puts at 0x80..=0x9F. The five bytes it leaves
/// undefined keep their Latin-1 code points, so no byte is ever lost.
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
];

/// Decodes a definitions file: UTF-8 when the bytes are valid UTF-8 (a BOM
/// is dropped), UTF-16 when a BOM says so, else Windows-1252.
///
/// Windows-1252 rather than strict Latin-1 because TunerPro runs on Windows
/// and its files are in that code page; the two agree on every byte the
/// real files hold (0xB0 `°`, 0xF8 `ø`).
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF])
        && let Ok(s) = std::str::from_utf8(rest)
    {
        return Cow::Borrowed(s);
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return Cow::Owned(utf16(rest, u16::from_le_bytes));
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return Cow::Owned(utf16(rest, u16::from_be_bytes));
    }
    Cow::Owned(bytes.iter().map(|&b| cp1252(b)).collect())
}

/// Like [`decode`], for the first bytes of a file, which may end inside a
/// UTF-8 sequence: the cut sequence is dropped rather than taken for
/// Windows-1252.
pub fn decode_head(head: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(head) {
        Err(e) if e.error_len().is_none() => decode(&head[..e.valid_up_to()]),
        _ => decode(head),
    }
}

fn utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks_exact(2).map(|c| word([c[0], c[1]]));
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

fn cp1252(b: u8) -> char {
    match b {
        0x80..=0x9F => CP1252_HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

/// An integer as XDF files write them: `0x1F`, `#1F` (Java's
/// `Integer.decode`, which third-party XDF tools use) or decimal, with an
/// optional sign and surrounding blanks. None for anything else, including
/// values that do not fit an `i64`.
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let (negative, t) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(h) = t.strip_prefix('#') {
        (h, 16)
    } else {
        (t, 10)
    };
    // from_str_radix would accept a second sign ("0x-5"); digits only.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let magnitude = i128::from_str_radix(digits, radix).ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// A finite decimal number (`1000.000000`, `-40`, `1e3`); None otherwise.
pub fn parse_f64(text: &str) -> Option<f64> {
    let t = text.trim();
    // Rust accepts "inf" and "NaN", which no definition means as a bound.
    if !t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A finite number as plain decimal text that reads back as the same
/// `f64`: the expression subset has no exponent notation, and Rust's
/// `Display` for floats never uses one and prints the shortest text that
/// round-trips.
pub fn plain(v: f64) -> String {
    let v = if v == 0.0 { 0.0 } else { v }; // no "-0"
    format!("{v}")
}

/// The first line of a description, trimmed and clipped to `max` characters
/// (with `…` when cut).
pub fn first_line(text: &str, max: usize) -> String {
    let line = text
        .split(['\r', '\n'])
        .map(str::trim)
        .find(|l| !l.is_empty());
    let line = line.unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_string(),
    }
}

/// A unit as the definition gives it, without the literal quotes TunerPro
/// files keep around it (`"Upm"`); none when empty.
pub fn units(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(t)
        .trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The name part of a file name: no directories, no extension.
pub fn file_stem(file_name: &str) -> &str {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    match base.rfind('.') {
        Some(dot) if dot > 0 => &base[..dot],
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_and_cp1252_bytes_decode() {
        // The fixture's units: "øC" and "°" as single bytes, no declaration.
        let bytes = b"<units>\"\xF8C\" \xB0 \x80</units>";
        assert_eq!(decode(bytes), "<units>\"øC\" ° €</units>");
        // Undefined Windows-1252 bytes keep their Latin-1 code point.
        assert_eq!(decode(b"\x81\xFF"), "\u{81}ÿ");
    }

    #[test]
    fn utf8_and_boms_decode() {
        assert_eq!(decode("°C".as_bytes()), "°C");
        assert_eq!(decode(b"\xEF\xBB\xBF<a/>"), "<a/>");
        assert_eq!(decode(b"\xFF\xFE<\0a\0/\0>\0"), "<a/>");
        assert_eq!(decode(b"\xFE\xFF\0<\0a\0/\0>"), "<a/>");
    }

    #[test]
    fn a_head_cut_inside_a_character_stays_utf8() {
        let text = "<XDFFORMAT> °C".as_bytes();
        let cut = &text[..text.len() - 2]; // inside the two bytes of `°`
        assert_eq!(decode_head(cut), "<XDFFORMAT> ");
        // Latin-1 heads still decode as such.
        assert_eq!(decode_head(b"<x>\xB0"), "<x>°");
    }

    #[test]
    fn integers_hex_and_decimal() {
        assert_eq!(parse_int("0xB08"), Some(0xB08));
        assert_eq!(parse_int(" 0X7f68 "), Some(0x7F68));
        assert_eq!(parse_int("#10"), Some(16));
        assert_eq!(parse_int("16"), Some(16));
        assert_eq!(parse_int("-32"), Some(-32));
        assert_eq!(parse_int("+8"), Some(8));
        assert_eq!(parse_int("0xFFFFFFFF"), Some(0xFFFF_FFFF));
        assert_eq!(parse_int("-0x10"), Some(-16));
        for bad in [
            "",
            "0x",
            "x10",
            "1.5",
            "0x-5",
            "--1",
            "12a",
            "99999999999999999999",
        ] {
            assert_eq!(parse_int(bad), None, "{bad}");
        }
    }

    #[test]
    fn decimals() {
        assert_eq!(parse_f64("1000.000000"), Some(1000.0));
        assert_eq!(parse_f64("-40"), Some(-40.0));
        assert_eq!(parse_f64("1e3"), Some(1000.0));
        for bad in ["", "inf", "NaN", "0x10", "1,5", "1e999"] {
            assert_eq!(parse_f64(bad), None, "{bad}");
        }
    }

    #[test]
    fn plain_numbers_never_use_exponents() {
        assert_eq!(plain(1023.0), "1023");
        assert_eq!(plain(0.004887585532746823), "0.004887585532746823");
        assert_eq!(plain(1e-7), "0.0000001");
        assert_eq!(plain(-0.0), "0");
        assert_eq!(plain(1e21), "1000000000000000000000");
        let v = 5.0 / 1023.0;
        assert_eq!(plain(v).parse::<f64>().unwrap(), v);
    }

    #[test]
    fn lines_units_and_stems() {
        assert_eq!(first_line("\r\n  KF_TI  B32\r\nHW:522", 120), "KF_TI  B32");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(units("\"Upm\""), Some("Upm".into()));
        assert_eq!(units("\"-\""), Some("-".into()));
        assert_eq!(units(" \"\" "), None);
        assert_eq!(units("°C"), Some("°C".into()));
        assert_eq!(file_stem("defs/hw2801.xdf"), "hw2801");
        assert_eq!(file_stem("C:\\x\\a.b.xdf"), "a.b");
        assert_eq!(file_stem(".xdf"), ".xdf");
    }
}
