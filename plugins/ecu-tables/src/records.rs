//! ROM images kept as text records: Intel HEX (`:LLAAAATT…CC`, with type
//! 02/04 address extensions) and Motorola S-records (`S1`/`S2`/`S3` data).
//! Flash tools and OEM toolchains save images this way; the tables are
//! read from the bytes the records place, and a patch is written back as
//! the same records, each data record's bytes and checksum rewritten and
//! every other line kept as it was.

/// Largest image the records may place (the largest ECU images are a few
/// MiB): an address past it is refused rather than allocated.
pub const MAX_IMAGE: usize = 16 << 20;

/// Which record format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Intel HEX.
    IntelHex,
    /// Motorola S-records.
    SRecord,
}

impl Format {
    /// The format's name, as answers show it.
    pub fn name(self) -> &'static str {
        match self {
            Format::IntelHex => "Intel HEX",
            Format::SRecord => "Motorola S-record",
        }
    }
}

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    /// A data record: where its bytes go and how many there are.
    Data {
        /// The record as written, up to its data (prefix, length, address,
        /// type): kept when the line is written again.
        head: String,
        address: usize,
        len: usize,
    },
    /// Anything else, kept verbatim (headers, address extensions, counts,
    /// ends of file, blank lines).
    Other(String),
}

/// A record file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    /// Its format.
    pub format: Format,
    lines: Vec<Line>,
    newline: &'static str,
    /// One past the highest address a data record fills.
    pub end: usize,
}

/// Reads `file` as records when it is one (its first line starts a record
/// and every line is a well-formed record): the records, and the image
/// they place from address 0, bytes no record fills reading as 0xFF
/// (erased flash). None for binary images. An error says which line is
/// wrong and why.
pub fn parse(file: &[u8]) -> Result<Option<(Records, Vec<u8>)>, String> {
    let format = match file.first() {
        Some(b':') => Format::IntelHex,
        Some(b'S') if file.get(1).is_some_and(|c| c.is_ascii_digit()) => Format::SRecord,
        _ => return Ok(None),
    };
    let Ok(text) = std::str::from_utf8(file) else {
        return Ok(None);
    };
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut records = Records {
        format,
        lines: Vec::new(),
        newline,
        end: 0,
    };
    let mut image = Vec::new();
    // Intel HEX address extensions: segment (type 02) or linear (type 04).
    let mut upper = 0usize;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let at = |why: String| format!("{} line {}: {why}", format.name(), n + 1);
        if line.trim().is_empty() {
            records.lines.push(Line::Other(line.to_owned()));
            continue;
        }
        let parsed = match format {
            Format::IntelHex => intel_line(line, &mut upper),
            Format::SRecord => s_line(line),
        };
        // A binary image may start with the byte a record starts with: only
        // a first line that is a record makes the file one.
        let parsed = match parsed {
            Err(_) if n == 0 => return Ok(None),
            other => other.map_err(at)?,
        };
        match parsed {
            Some((head, address, data)) => {
                let len = data.len();
                let end = address
                    .checked_add(len)
                    .filter(|&e| e <= MAX_IMAGE)
                    .ok_or_else(|| {
                        at(format!(
                            "data at 0x{address:X} lies past {} MiB, more than any ECU image; is this a ROM?",
                            MAX_IMAGE >> 20
                        ))
                    })?;
                records.end = records.end.max(end);
                if image.len() < end {
                    image.resize(end, 0xFF);
                }
                image[address..end].copy_from_slice(&data);
                records.lines.push(Line::Data { head, address, len });
            }
            None => records.lines.push(Line::Other(line.to_owned())),
        }
    }
    if records.end == 0 {
        return Err(format!("this {} file holds no data records", format.name()));
    }
    Ok(Some((records, image)))
}

/// The bytes of one record's hex digits after its first character.
fn hex_bytes(digits: &str) -> Result<Vec<u8>, String> {
    if !digits.len().is_multiple_of(2) || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("not an even number of hex digits".into());
    }
    Ok((0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex digits"))
        .collect())
}

/// A data record: its head (kept when the line is written again), its
/// address and its bytes.
type DataRecord = (String, usize, Vec<u8>);

/// An Intel HEX line: Some for data.
fn intel_line(line: &str, upper: &mut usize) -> Result<Option<DataRecord>, String> {
    let body = line.strip_prefix(':').ok_or("a record starts with `:`")?;
    let bytes = hex_bytes(body)?;
    let len = *bytes.first().ok_or("an empty record")? as usize;
    if bytes.len() != len + 5 {
        return Err(format!(
            "the record says {len} data bytes but holds {}",
            bytes.len().saturating_sub(5)
        ));
    }
    if bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b)) != 0 {
        return Err("its checksum is wrong".into());
    }
    let offset = u16::from_be_bytes([bytes[1], bytes[2]]) as usize;
    let data = &bytes[4..4 + len];
    match bytes[3] {
        0x00 => Ok(Some((line[..9].to_owned(), *upper + offset, data.to_vec()))),
        0x02 if len == 2 => {
            *upper = (u16::from_be_bytes([data[0], data[1]]) as usize) << 4;
            Ok(None)
        }
        0x04 if len == 2 => {
            *upper = (u16::from_be_bytes([data[0], data[1]]) as usize) << 16;
            Ok(None)
        }
        0x01 | 0x03 | 0x05 => Ok(None),
        other => Err(format!("unknown record type {other:02X}")),
    }
}

/// An S-record line: Some for S1/S2/S3 data.
fn s_line(line: &str) -> Result<Option<DataRecord>, String> {
    let kind = line
        .as_bytes()
        .get(1)
        .copied()
        .ok_or("a record is S and a digit")?;
    let bytes = hex_bytes(line.get(2..).ok_or("a truncated record")?)?;
    let count = *bytes.first().ok_or("an empty record")? as usize;
    if bytes.len() != count + 1 {
        return Err(format!(
            "the record counts {count} bytes but holds {}",
            bytes.len().saturating_sub(1)
        ));
    }
    if bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b)) != 0xFF {
        return Err("its checksum is wrong".into());
    }
    let address_len = match kind {
        b'1' => 2,
        b'2' => 3,
        b'3' => 4,
        b'0' | b'5' | b'6' | b'7' | b'8' | b'9' => return Ok(None),
        other => return Err(format!("unknown record type S{}", other as char)),
    };
    let len = count
        .checked_sub(address_len + 1)
        .ok_or("a data record shorter than its address")?;
    let address = bytes[1..1 + address_len]
        .iter()
        .fold(0usize, |a, b| (a << 8) | *b as usize);
    let head_len = 4 + 2 * address_len;
    let data = bytes[1 + address_len..1 + address_len + len].to_vec();
    Ok(Some((line[..head_len].to_owned(), address, data)))
}

impl Records {
    /// The file for a (patched) image: every data record's bytes taken from
    /// `image` and its checksum recomputed, every other line as it was.
    pub fn to_file(&self, image: &[u8]) -> Vec<u8> {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::Other(text) => out.push_str(text),
                Line::Data { head, address, len } => {
                    let data = &image[*address..address + len];
                    // The record's bytes after its `:` or `S` and type digit.
                    let prefix = match self.format {
                        Format::IntelHex => 1,
                        Format::SRecord => 2,
                    };
                    let mut bytes = hex_bytes(&head[prefix..]).expect("checked when parsed");
                    bytes.extend_from_slice(data);
                    let sum = bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b));
                    let check = match self.format {
                        Format::IntelHex => sum.wrapping_neg(),
                        Format::SRecord => !sum,
                    };
                    out.push_str(head);
                    for b in data {
                        out.push_str(&format!("{b:02X}"));
                    }
                    out.push_str(&format!("{check:02X}"));
                }
            }
            out.push_str(self.newline);
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small Intel HEX file: an extended linear address of 0x0001, so the
    /// data lands at 0x10000 + offset.
    const HEX: &str = ":020000040000FA\r\n:0400100001020304E2\r\n:020000040001F9\r\n:02000000AABB99\r\n:00000001FF\r\n";

    #[test]
    fn intel_hex_places_its_bytes_and_writes_back_as_records() {
        let (records, mut image) = parse(HEX.as_bytes()).unwrap().unwrap();
        assert_eq!((records.format, records.end), (Format::IntelHex, 0x10002));
        assert_eq!(&image[0x10..0x14], &[1, 2, 3, 4]);
        assert_eq!(&image[0x10000..], &[0xAA, 0xBB]);
        assert_eq!(image[0], 0xFF);
        // Unchanged, the file comes back byte for byte.
        assert_eq!(records.to_file(&image), HEX.as_bytes());
        image[0x11] = 0x22;
        let back = String::from_utf8(records.to_file(&image)).unwrap();
        assert!(back.contains(":0400100001220304C2\r\n"), "{back}");
        let (_, again) = parse(back.as_bytes()).unwrap().unwrap();
        assert_eq!(again[0x11], 0x22);
    }

    #[test]
    fn s_records_place_their_bytes_and_write_back() {
        let file = "S00600004844521B\nS1130000285F245F2212226A000424290008237C2A\nS5030001FB\nS9030000FC\n";
        let (records, mut image) = parse(file.as_bytes()).unwrap().unwrap();
        assert_eq!((records.format, records.end), (Format::SRecord, 16));
        assert_eq!(&image[..4], &[0x28, 0x5F, 0x24, 0x5F]);
        assert_eq!(records.to_file(&image), file.as_bytes());
        image[0] = 0x29;
        let back = records.to_file(&image);
        let (_, again) = parse(&back).unwrap().unwrap();
        assert_eq!(again[0], 0x29);
    }

    #[test]
    fn bad_records_are_refused_with_the_line_and_binaries_pass() {
        let bad = ":020000040000FA\n:0400100001020304E3\n";
        assert!(
            parse(bad.as_bytes())
                .unwrap_err()
                .contains("line 2: its checksum is wrong")
        );
        // A binary image whose first byte happens to be `:` stays binary.
        assert_eq!(parse(b":\x01\x02 not hex").unwrap(), None);
        let far = ":020000040400F6\n:0100000000FF\n";
        assert!(parse(far.as_bytes()).unwrap_err().contains("past 16 MiB"));
        assert_eq!(parse(&[0x00, 0x01, 0x02]).unwrap(), None);
        assert_eq!(parse(b"Sx not a record").unwrap(), None);
        assert!(
            parse(b":00000001FF\n")
                .unwrap_err()
                .contains("no data records")
        );
    }
}
