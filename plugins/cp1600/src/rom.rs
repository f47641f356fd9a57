//! ROM image formats: raw big-endian word images, `.BIN` + `.CFG` mappings
//! and the Intellicart `.ROM` format with its CRC-16 checks.

use crate::memory::Region;
use std::fmt;

/// Words placed at consecutive addresses from `addr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The address of the first word.
    pub addr: u16,
    /// The words, in address order.
    pub words: Vec<u16>,
}

impl Segment {
    /// The last address the segment fills (wrapping at $FFFF).
    pub fn end(&self) -> u16 {
        self.addr
            .wrapping_add(self.words.len() as u16)
            .wrapping_sub(1)
    }
}

/// A decoded image: ROM segments plus RAM the image asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// The file's format as agents see it: `bin`, `bin+cfg` or `rom`.
    pub format: &'static str,
    /// The ROM segments to load.
    pub segments: Vec<Segment>,
    /// Extra RAM ranges (`[memattr]` in a CFG, writable banks in a .ROM).
    pub ram: Vec<(u16, u16, Region)>,
    /// A CFG's `[vars]` (`name = "Game"`, `jlp = 1`, …) as written, at most
    /// [`MAX_VARS`] of them.
    pub vars: Vec<(String, String)>,
    /// `.cfg` lines skipped with a warning, as jzIntv skips them.
    pub warnings: Vec<CfgWarning>,
}

/// A `.cfg` line that was skipped, the rest of the file being used: what
/// jzIntv reports as a warning (a malformed `[vars]` line) rather than an
/// error (a malformed `[mapping]` line, which would load the wrong code and
/// is refused as [`RomError::Cfg`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfgWarning {
    /// The line, counted from 1.
    pub line: usize,
    /// What was wrong with it and what was done instead.
    pub message: String,
}

impl fmt::Display for CfgWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CFG line {}: {}", self.line, self.message)
    }
}

/// `[vars]` entries kept from a CFG (the rest are ignored).
pub const MAX_VARS: usize = 32;

/// JLP's 16-bit RAM, which `jlp = 1` (or 2, 3) in `[vars]` turns on.
pub const JLP_RAM: (u16, u16) = (0x8040, 0x9F7F);

#[derive(Debug, Clone, PartialEq, Eq)]
/// Why an image could not be read; each says what was found and what to do.
pub enum RomError {
    /// The file is empty.
    Empty,
    /// A raw image with an odd number of bytes (its byte count).
    OddSize(usize),
    /// The image does not fit between its load address and $FFFF.
    TooLarge {
        /// Words in the image.
        words: usize,
        /// Where it was to load.
        load_address: u16,
    },
    /// Two segments claim the same address.
    Overlap {
        /// The first address claimed twice.
        addr: u16,
    },
    /// A `.rom` header that is not one (what is wrong).
    BadHeader(String),
    /// The file ends inside a part (which).
    Truncated(String),
    /// A `.rom` CRC-16 does not match: the file is damaged.
    BadCrc {
        /// Which part the CRC covers.
        what: String,
        /// The CRC in the file.
        stored: u16,
        /// The CRC of the data.
        computed: u16,
    },
    /// A `.cfg` line that cannot be used.
    Cfg {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl fmt::Display for RomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RomError::Empty => write!(f, "the file is empty"),
            RomError::OddSize(n) => write!(
                f,
                "the file has {n} bytes, an odd number; a raw image holds big-endian 16-bit words (2 bytes each)"
            ),
            RomError::TooLarge {
                words,
                load_address,
            } => write!(
                f,
                "{words} words loaded at ${load_address:04X} run past $FFFF; use a lower load_address"
            ),
            RomError::Overlap { addr } => write!(
                f,
                "two parts of the image both map address ${addr:04X}; fix the overlapping ranges"
            ),
            RomError::BadHeader(m) => write!(f, "not a valid .ROM file: {m}"),
            RomError::Truncated(m) => write!(f, "the .ROM file is truncated: {m}"),
            RomError::BadCrc {
                what,
                stored,
                computed,
            } => write!(
                f,
                "CRC mismatch in {what}: stored ${stored:04X}, computed ${computed:04X}; the file is corrupt"
            ),
            RomError::Cfg { line, message } => write!(f, "CFG line {line}: {message}"),
        }
    }
}

impl std::error::Error for RomError {}

/// CRC-16/CCITT-FALSE as the .ROM format uses it (poly $1021, init $FFFF).
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Whether a file is text rather than a ROM image: valid UTF-8 with no
/// control bytes but line breaks and tabs. An image of real code is full of
/// bytes below $20 (the high byte of every 10-bit opcode is 0-3).
pub fn looks_like_text(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && std::str::from_utf8(bytes).is_ok()
        && bytes
            .iter()
            .all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0C))
}

/// Big-endian bytes to words.
pub fn words_of(bytes: &[u8]) -> Result<Vec<u16>, RomError> {
    if bytes.is_empty() {
        return Err(RomError::Empty);
    }
    if !bytes.len().is_multiple_of(2) {
        return Err(RomError::OddSize(bytes.len()));
    }
    Ok(bytes
        .chunks_exact(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]))
        .collect())
}

/// A raw image loaded contiguously at `load_address`.
pub fn parse_raw(bytes: &[u8], load_address: u16) -> Result<Image, RomError> {
    let words = words_of(bytes)?;
    if load_address as usize + words.len() > 0x1_0000 {
        return Err(RomError::TooLarge {
            words: words.len(),
            load_address,
        });
    }
    Ok(Image {
        format: "bin",
        segments: vec![Segment {
            addr: load_address,
            words,
        }],
        ..Default::default()
    })
}

/// jzIntv's mapping for a `.bin` without a `.cfg`: file words $0000–$1FFF
/// at $5000, $2000–$2FFF at $D000, $3000–$3FFF at $F000.
pub fn parse_bin_default(bytes: &[u8]) -> Result<Image, RomError> {
    let words = words_of(bytes)?;
    if words.len() > 0x4000 {
        return Err(RomError::TooLarge {
            words: words.len(),
            load_address: 0x5000,
        });
    }
    let mut segments = Vec::new();
    for (from, to, base) in [
        (0usize, 0x2000usize, 0x5000u16),
        (0x2000, 0x3000, 0xD000),
        (0x3000, 0x4000, 0xF000),
    ] {
        if words.len() > from {
            segments.push(Segment {
                addr: base,
                words: words[from..to.min(words.len())].to_vec(),
            });
        }
    }
    Ok(Image {
        format: "bin",
        segments,
        ..Default::default()
    })
}

fn parse_num(tok: &str) -> Option<u32> {
    let t = tok.trim();
    if let Some(h) = t.strip_prefix('$') {
        u32::from_str_radix(h, 16).ok()
    } else if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

/// `$a - $b = $c [rest]` → (a, b, c-or-rest).
fn parse_range_line(line: &str) -> Option<(u32, u32, &str)> {
    let (range, rhs) = line.split_once('=')?;
    let (a, b) = range.split_once('-')?;
    Some((parse_num(a)?, parse_num(b)?, rhs.trim()))
}

/// The characters jzIntv's `.cfg` lexer ends a bare word at.
fn ends_word(c: char) -> bool {
    c.is_whitespace() || ";[]$=-,\"".contains(c)
}

/// Why a `[vars]` line is not `name = value` as jzIntv's grammar has it
/// (quoted text shortened to 40 characters).
#[derive(Debug, Clone, PartialEq, Eq)]
enum VarLineError {
    /// No `=` before the comment: the line as written.
    NoEquals(String),
    /// Nothing before the `=`.
    NoName,
    /// A name of several words.
    NameNotWord(String),
    /// Nothing after the `=` (the name).
    NoValue(String),
    /// A `"` with no closing one.
    UnclosedQuote,
    /// A `$` with no hex digits after it.
    BadHex,
    /// A value starting with a character that ends words (`-`, `,`, …).
    BadStart {
        /// The variable.
        name: String,
        /// The text after `=`.
        rest: String,
    },
    /// More than one token after the `=`.
    Trailing {
        /// The variable.
        name: String,
        /// What follows the first token.
        after: String,
        /// The whole value as written, to show it quoted.
        whole: String,
    },
}

impl fmt::Display for VarLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarLineError::NoEquals(line) => write!(f, "expected `name = value`, got `{line}`"),
            VarLineError::NoName => write!(f, "no name before `=`"),
            VarLineError::NameNotWord(name) => write!(
                f,
                "the name `{name}` is not one word (jzIntv's names have no blanks or `;[]$=-,\"`)"
            ),
            VarLineError::NoValue(name) => write!(f, "`{name}` has no value after `=`"),
            VarLineError::UnclosedQuote => write!(f, "the quoted value has no closing `\"`"),
            VarLineError::BadHex => write!(f, "`$` must be followed by hex digits"),
            VarLineError::BadStart { name, rest } => write!(
                f,
                "`{name} = {rest}`: a value cannot begin with `{}`; put it in double quotes",
                rest.chars().next().unwrap_or(' ')
            ),
            VarLineError::Trailing { name, after, whole } => write!(
                f,
                "`{after}` follows the value of `{name}`: a value with blanks or any of `-,=[]$` goes in double quotes, as in `{name} = \"{}\"`",
                whole.replace('"', "\\\"")
            ),
        }
    }
}

/// The first 40 characters of `s`, for quoting a line in a warning.
fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

/// One value token of a `[vars]` line, as jzIntv's lexer reads it: a
/// double-quoted string (`\"` and `\\` inside), `$` and hex digits, or a
/// bare word. Returns the value and the rest of the line.
fn var_token(s: &str) -> Result<(String, &str), VarLineError> {
    if let Some(body) = s.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((value, &body[i + 1..])),
                '\\' if body[i + 1..].starts_with(['"', '\\']) => {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                _ => value.push(c),
            }
        }
        return Err(VarLineError::UnclosedQuote);
    }
    if let Some(hex) = s.strip_prefix('$') {
        let n = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        if n == 0 {
            return Err(VarLineError::BadHex);
        }
        return Ok((s[..n + 1].to_string(), &s[n + 1..]));
    }
    let n = s.find(ends_word).unwrap_or(s.len());
    Ok((s[..n].to_string(), &s[n..]))
}

/// A `[vars]` line as jzIntv's grammar takes it: `name = value`, each one
/// token (see [`var_token`]), then nothing but a `;` comment.
fn parse_var(raw: &str) -> Result<(String, String), VarLineError> {
    let line = raw.trim();
    // An `=` inside the comment is not the line's.
    let (name_part, rest) = match line.split_once('=') {
        Some((n, r)) if !n.contains(';') => (n, r),
        _ => {
            let code = line.split(';').next().unwrap_or("").trim();
            return Err(VarLineError::NoEquals(short(code)));
        }
    };
    let name = name_part.trim();
    if name.is_empty() {
        return Err(VarLineError::NoName);
    }
    let hex_name = name
        .strip_prefix('$')
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    if name.contains(ends_word) && !hex_name {
        return Err(VarLineError::NameNotWord(short(name)));
    }
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with(';') {
        return Err(VarLineError::NoValue(short(name)));
    }
    let (value, after) = var_token(rest)?;
    if value.is_empty() && !rest.starts_with('"') {
        return Err(VarLineError::BadStart {
            name: short(name),
            rest: short(rest),
        });
    }
    let after = after.trim_start();
    if !(after.is_empty() || after.starts_with(';')) {
        return Err(VarLineError::Trailing {
            name: short(name),
            after: short(after),
            whole: short(rest.split(';').next().unwrap_or("").trim()),
        });
    }
    Ok((name.to_ascii_lowercase(), value))
}

/// A `.bin` placed by its `.cfg` (`[mapping]`, `[preload]`, `[memattr]`,
/// `[vars]`). Like jzIntv, a malformed `[vars]` line is skipped with a
/// warning (in [`Image::warnings`]) and the cartridge loads; a malformed
/// `[mapping]`, `[preload]` or `[memattr]` line, which jzIntv reports as an
/// error and which would leave code or RAM out of place, refuses the load.
pub fn parse_bin_cfg(bytes: &[u8], cfg: &str) -> Result<Image, RomError> {
    let words = words_of(bytes)?;
    let mut image = Image {
        format: "bin+cfg",
        ..Default::default()
    };
    let mut section = String::new();
    for (i, raw) in cfg.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            section = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_ascii_lowercase();
            continue;
        }
        let err = |message: String| RomError::Cfg {
            line: line_no,
            message,
        };
        match section.as_str() {
            "mapping" | "preload" => {
                let (a, b, rhs) = parse_range_line(line).ok_or_else(|| {
                    err(format!("expected `$start - $end = $address`, got `{line}`"))
                })?;
                let mut parts = rhs.split_whitespace();
                let addr = parts
                    .next()
                    .and_then(parse_num)
                    .ok_or_else(|| err(format!("bad target address in `{line}`")))?;
                if let Some(extra) = parts.next() {
                    return Err(err(format!(
                        "`{extra}` (bank-switched pages) is not supported"
                    )));
                }
                if a > b || b as usize >= words.len() {
                    return Err(err(format!(
                        "file range ${a:04X}-${b:04X} is outside the .bin, which has {} words",
                        words.len()
                    )));
                }
                if addr.checked_add(b - a).is_none_or(|end| end > 0xFFFF) {
                    return Err(err(format!("mapping at ${addr:04X} runs past $FFFF")));
                }
                image.segments.push(Segment {
                    addr: addr as u16,
                    words: words[a as usize..=b as usize].to_vec(),
                });
            }
            "memattr" => {
                let (a, b, rhs) = parse_range_line(line).ok_or_else(|| {
                    err(format!(
                        "expected `$start - $end = RAM 8|RAM 16`, got `{line}`"
                    ))
                })?;
                let kind: Vec<String> = rhs
                    .split_whitespace()
                    .map(|s| s.to_ascii_uppercase())
                    .collect();
                let region = match kind
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    ["RAM" | "WOM", "8"] => Region::Ram8,
                    ["RAM" | "WOM", "16"] => Region::Ram16,
                    _ => {
                        return Err(err(format!(
                            "unsupported memory attribute `{rhs}`; use RAM 8 or RAM 16"
                        )));
                    }
                };
                if a > b || b > 0xFFFF {
                    return Err(err(format!("bad range ${a:04X}-${b:04X}")));
                }
                image.ram.push((a as u16, b as u16, region));
            }
            "vars" => {
                // The raw line: a quoted value may hold a `;`.
                let (key, value) = match parse_var(raw) {
                    Ok(v) => v,
                    Err(what) => {
                        image.warnings.push(CfgWarning {
                            line: line_no,
                            message: format!(
                                "[vars]: {what}; this line is skipped (jzIntv warns and skips it too) and the rest of the .cfg is used"
                            ),
                        });
                        continue;
                    }
                };
                // jzIntv's JLP board adds 16-bit RAM at $8040-$9F7F for any
                // non-zero `jlp` (newer as1600 writes `jlp_accel` and
                // `jlp_flash`, which need the board too); its multiply/divide
                // and flash registers around the RAM are not emulated.
                if matches!(key.as_str(), "jlp" | "jlp_accel" | "jlp_flash") {
                    let jlp = (JLP_RAM.0, JLP_RAM.1, Region::Ram16);
                    match parse_num(&value) {
                        Some(on) if on != 0 && !image.ram.contains(&jlp) => image.ram.push(jlp),
                        Some(_) => {}
                        // jzIntv reads only numbers here and ignores the
                        // rest; say so rather than stay as silent.
                        None => image.warnings.push(CfgWarning {
                            line: line_no,
                            message: format!(
                                "[vars]: `{key} = {value}` is not a number, so it does not turn JLP on (jzIntv ignores it too); write `{key} = 1` for JLP RAM"
                            ),
                        }),
                    }
                }
                if image.vars.len() < MAX_VARS {
                    let value: String = value.chars().take(80).collect();
                    image.vars.push((key, value));
                }
            }
            // Sections about input devices and macros do not affect the
            // CPU's memory.
            _ => {}
        }
    }
    if image.segments.is_empty() {
        return Err(RomError::Cfg {
            line: 0,
            message: "no [mapping] lines: nothing to load".into(),
        });
    }
    check_overlaps(&image.segments)?;
    Ok(image)
}

fn check_overlaps(segments: &[Segment]) -> Result<(), RomError> {
    let mut spans: Vec<(u32, u32)> = segments
        .iter()
        .map(|s| (s.addr as u32, s.addr as u32 + s.words.len() as u32 - 1))
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        if w[1].0 <= w[0].1 {
            return Err(RomError::Overlap {
                addr: w[1].0 as u16,
            });
        }
    }
    Ok(())
}

/// Bits of a .ROM bank attribute nibble.
const ATTR_WRITE: u8 = 2;
const ATTR_NARROW: u8 = 4;

/// An Intellicart `.ROM` file.
pub fn parse_rom(bytes: &[u8]) -> Result<Image, RomError> {
    if bytes.len() < 3 {
        return Err(RomError::BadHeader(format!(
            "{} bytes, shorter than the 3-byte header",
            bytes.len()
        )));
    }
    if !matches!(bytes[0], 0xA8 | 0x41 | 0x61) {
        return Err(RomError::BadHeader(format!(
            "first byte is ${:02X}, expected $A8",
            bytes[0]
        )));
    }
    let n = bytes[1] as usize;
    if bytes[2] != bytes[1] ^ 0xFF {
        return Err(RomError::BadHeader(format!(
            "segment count ${:02X} and its complement ${:02X} disagree",
            bytes[1], bytes[2]
        )));
    }
    let mut pos = 3;
    let mut image = Image {
        format: "rom",
        ..Default::default()
    };
    for seg in 0..n {
        let hdr = bytes
            .get(pos..pos + 2)
            .ok_or_else(|| RomError::Truncated(format!("segment {seg} header missing")))?;
        let (lo, hi) = (hdr[0] as usize, hdr[1] as usize);
        if hi < lo {
            return Err(RomError::BadHeader(format!(
                "segment {seg}: end page ${hi:02X} before start ${lo:02X}"
            )));
        }
        let nwords = (hi - lo + 1) * 256;
        let data_end = pos + 2 + nwords * 2;
        let crc_bytes = bytes.get(data_end..data_end + 2).ok_or_else(|| {
            RomError::Truncated(format!("segment {seg} needs {nwords} words and a CRC"))
        })?;
        let stored = u16::from_be_bytes([crc_bytes[0], crc_bytes[1]]);
        let computed = crc16(&bytes[pos..data_end]);
        if stored != computed {
            return Err(RomError::BadCrc {
                what: format!("segment {seg} (${:04X})", lo << 8),
                stored,
                computed,
            });
        }
        image.segments.push(Segment {
            addr: (lo << 8) as u16,
            words: words_of(&bytes[pos + 2..data_end])?,
        });
        pos = data_end + 2;
    }
    let tables = bytes
        .get(pos..pos + 50)
        .ok_or_else(|| RomError::Truncated("attribute and fine-address tables missing".into()))?;
    let stored = u16::from_be_bytes([tables[48], tables[49]]);
    let computed = crc16(&tables[..48]);
    if stored != computed {
        return Err(RomError::BadCrc {
            what: "the attribute tables".into(),
            stored,
            computed,
        });
    }
    check_overlaps(&image.segments)?;
    for bank in 0..32usize {
        let attr = (tables[bank / 2] >> (4 * (bank % 2))) & 0xF;
        if attr & ATTR_WRITE == 0 {
            continue;
        }
        let fine = tables[16 + (bank % 2) * 16 + bank / 2];
        let (first, last) = ((fine >> 4) as usize, (fine & 7) as usize);
        if last < first {
            continue;
        }
        let lo = bank * 2048 + first * 256;
        let hi = bank * 2048 + last * 256 + 255;
        let region = if attr & ATTR_NARROW != 0 {
            Region::Ram8
        } else {
            Region::Ram16
        };
        image.ram.push((lo as u16, hi as u16, region));
    }
    Ok(image)
}

/// Writes segments as a .ROM file (256-word aligned segments, read-only
/// banks). For tests and sample building.
pub fn encode_rom(segments: &[Segment]) -> Vec<u8> {
    let mut out = vec![0xA8, segments.len() as u8, segments.len() as u8 ^ 0xFF];
    let mut attrs = [0u8; 16];
    let mut fine = [0x07u8; 32];
    for s in segments {
        let lo = (s.addr >> 8) as u8;
        let pages = s.words.len().div_ceil(256);
        let hi = lo.saturating_add((pages as u8).saturating_sub(1));
        let start = out.len();
        out.extend([lo, hi]);
        for i in 0..pages * 256 {
            out.extend(s.words.get(i).copied().unwrap_or(0).to_be_bytes());
        }
        let crc = crc16(&out[start..]);
        out.extend(crc.to_be_bytes());
        for page in lo as usize..=hi as usize {
            let bank = page / 8;
            attrs[bank / 2] |= 1 << (4 * (bank % 2));
            let idx = (bank % 2) * 16 + bank / 2;
            let p = (page % 8) as u8;
            fine[idx] = if fine[idx] == 0x07 {
                (p << 4) | p
            } else {
                (fine[idx] & 0xF0) | p
            };
        }
    }
    let start = out.len();
    out.extend(attrs);
    out.extend(fine);
    let crc = crc16(&out[start..]);
    out.extend(crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29B1);
    }

    #[test]
    fn text_is_told_from_images() {
        assert!(looks_like_text(b"; hello.asm\n\tMVII #1, R0\n"));
        assert!(looks_like_text("; été\n".as_bytes()));
        assert!(!looks_like_text(&[0x02, 0xB8, 0x00, 0x01]));
        assert!(!looks_like_text(&[0xFF, 0xFE]));
        assert!(!looks_like_text(b""));
    }

    #[test]
    fn raw_sizes() {
        assert_eq!(parse_raw(&[0, 4, 0], 0x5000), Err(RomError::OddSize(3)));
        assert_eq!(parse_raw(&[], 0x5000), Err(RomError::Empty));
        assert!(matches!(
            parse_raw(&[0, 1, 0, 2], 0xFFFF),
            Err(RomError::TooLarge { .. })
        ));
        let img = parse_raw(&[0x02, 0xB8, 0x12, 0x34], 0x5000).unwrap();
        assert_eq!(img.segments[0].words, vec![0x02B8, 0x1234]);
    }

    #[test]
    fn cfg_mapping_memattr_and_overlap() {
        let bin: Vec<u8> = (0..8u16).flat_map(|w| w.to_be_bytes()).collect();
        let cfg = "[mapping]\n$0000 - $0003 = $5000 ; low half\n$0004 - $0007 = $D000\n[memattr]\n$8000 - $80FF = RAM 16\n";
        let img = parse_bin_cfg(&bin, cfg).unwrap();
        assert_eq!(
            img.segments[1],
            Segment {
                addr: 0xD000,
                words: vec![4, 5, 6, 7]
            }
        );
        assert_eq!(img.ram, vec![(0x8000, 0x80FF, Region::Ram16)]);
        let jlp = "[mapping]\n$0000 - $0007 = $5000\n[vars]\nname = \"Demo\"\njlp = 1\n";
        let img = parse_bin_cfg(&bin, jlp).unwrap();
        assert_eq!(img.ram, vec![(0x8040, 0x9F7F, Region::Ram16)]);
        assert_eq!(img.vars[0], ("name".to_string(), "Demo".to_string()));
        let both = "[mapping]\n$0000 - $0007 = $5000\n[vars]\njlp_accel = 1\njlp_flash = 2\n";
        assert_eq!(
            parse_bin_cfg(&bin, both).unwrap().ram,
            vec![(0x8040, 0x9F7F, Region::Ram16)]
        );
        let off = "[mapping]\n$0000 - $0007 = $5000\n[vars]\njlp = 0\njlp_accel = 0\n";
        assert!(parse_bin_cfg(&bin, off).unwrap().ram.is_empty());
        // jzIntv reads `jlp` only as a number: anything else leaves JLP off.
        let word = "[mapping]\n$0000 - $0007 = $5000\n[vars]\njlp = yes\n";
        let img = parse_bin_cfg(&bin, word).unwrap();
        assert!(img.ram.is_empty());
        assert_eq!(img.warnings[0].line, 4);
        assert!(img.warnings[0].message.contains("not a number"));
        let bad = "[mapping]\n$0000 - $0003 = $5000\n$0004 - $0007 = $5002\n";
        assert_eq!(
            parse_bin_cfg(&bin, bad),
            Err(RomError::Overlap { addr: 0x5002 })
        );
        let outside = "[mapping]\n$0000 - $0010 = $5000\n";
        assert!(matches!(
            parse_bin_cfg(&bin, outside),
            Err(RomError::Cfg { line: 2, .. })
        ));
    }

    /// Issue 38 item 13: one malformed `[vars]` line refused the whole
    /// load. jzIntv warns (with the line) and loads; so does this, while a
    /// malformed `[mapping]` line, a jzIntv error, still refuses.
    #[test]
    fn a_bad_vars_line_is_a_warning_and_the_cartridge_loads() {
        let bin: Vec<u8> = (0..8u16).flat_map(|w| w.to_be_bytes()).collect();
        let cfg = "[mapping]\n$0000 - $0007 = $5000\n[vars]\nname = \"Demo; the game\" ; title\njlp\nyear = 2024\nauthor = Jane Doe\n= 3\nshort_name =\nbuild = 2024-01-02\njlp = 1\n";
        let img = parse_bin_cfg(&bin, cfg).unwrap();
        assert_eq!(img.segments.len(), 1, "the code is loaded");
        assert_eq!(
            img.ram,
            vec![(0x8040, 0x9F7F, Region::Ram16)],
            "later lines still count"
        );
        assert_eq!(
            img.vars,
            vec![
                ("name".to_string(), "Demo; the game".to_string()),
                ("year".to_string(), "2024".to_string()),
                ("jlp".to_string(), "1".to_string()),
            ]
        );
        let lines: Vec<usize> = img.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [5, 7, 8, 9, 10]);
        let text: Vec<String> = img.warnings.iter().map(ToString::to_string).collect();
        assert!(
            text[0].starts_with("CFG line 5: [vars]: expected `name = value`, got `jlp`"),
            "{}",
            text[0]
        );
        assert!(
            text[1].contains("`Doe` follows the value of `author`")
                && text[1].contains("author = \"Jane Doe\""),
            "{}",
            text[1]
        );
        assert!(text[2].contains("no name before `=`"), "{}", text[2]);
        assert!(text[3].contains("`short_name` has no value"), "{}", text[3]);
        assert!(
            text[4].contains("`-01-02` follows") && text[4].contains("build = \"2024-01-02\""),
            "{}",
            text[4]
        );
        assert!(
            text.iter()
                .all(|t| t.contains("skipped (jzIntv warns and skips it too)"))
        );

        // jzIntv's errors still refuse: a [mapping] line that cannot be
        // read would leave code out, and a [memattr] one RAM.
        let bad_map = "[mapping]\n$0000 - $0003 = $5000\n$0004 $0007 = $D000\n[vars]\njlp\n";
        assert!(matches!(
            parse_bin_cfg(&bin, bad_map),
            Err(RomError::Cfg { line: 3, .. })
        ));
        let bad_attr = "[mapping]\n$0000 - $0007 = $5000\n[memattr]\n$8000 - $80FF = RAM\n";
        assert!(matches!(
            parse_bin_cfg(&bin, bad_attr),
            Err(RomError::Cfg { line: 4, .. })
        ));
    }

    /// Found by fuzzing (fuzz/fuzz_targets/cp1600_rom.rs): a target address
    /// near 2^32 overflowed the end-of-memory check.
    #[test]
    fn cfg_target_addresses_past_ffff_are_refused() {
        let bin = [0u8; 8];
        for cfg in [
            "[mapping]\n$0000 - $0003 = $FFFFFFFF\n",
            "[mapping]\n$0000 - $0003 = 4294967294\n",
            "[mapping]\n$0000 - $0003 = $FFFE\n",
        ] {
            assert!(
                matches!(parse_bin_cfg(&bin, cfg), Err(RomError::Cfg { line: 2, .. })),
                "{cfg:?}"
            );
        }
        assert!(parse_bin_cfg(&bin, "[mapping]\n$0000 - $0003 = $FFFC\n").is_ok());
    }

    #[test]
    fn rom_round_trip_and_crc_errors() {
        let segs = vec![
            Segment {
                addr: 0x5000,
                words: (0..300).collect(),
            },
            Segment {
                addr: 0xD000,
                words: vec![0xABCD; 16],
            },
        ];
        let bytes = encode_rom(&segs);
        let img = parse_rom(&bytes).unwrap();
        assert_eq!(img.segments.len(), 2);
        assert_eq!(img.segments[0].addr, 0x5000);
        assert_eq!(img.segments[0].words.len(), 512);
        assert_eq!(&img.segments[0].words[..300], &segs[0].words[..]);
        assert_eq!(img.segments[1].words[0], 0xABCD);
        let one = encode_rom(&[Segment {
            addr: 0x5000,
            words: vec![1; 256],
        }]);
        assert_eq!(one.len(), 569);
        let mut bad = bytes.clone();
        bad[10] ^= 1;
        assert!(matches!(parse_rom(&bad), Err(RomError::BadCrc { .. })));
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 20] ^= 1;
        assert!(matches!(parse_rom(&bad), Err(RomError::BadCrc { .. })));
        assert!(matches!(
            parse_rom(&bytes[..40]),
            Err(RomError::Truncated(_))
        ));
        assert!(matches!(
            parse_rom(&[0xA8, 1, 1]),
            Err(RomError::BadHeader(_))
        ));
    }
}
