//! Versioned, checksummed binary blobs that travel as base64 text: the
//! emulators' session snapshots, which an agent (or a view) holds and later
//! hands back to recreate a session.
//!
//! Layout of a sealed blob before base64 (all integers little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 4 | magic, names the kind of blob (`CPSN` for a cp1600 session) |
//! | 2 | format version |
//! | 4 | payload length in bytes |
//! | n | payload |
//! | 4 | CRC-32 (IEEE, as zlib) of everything before it |
//!
//! [`open`] checks each part in turn and says which one is wrong, so a
//! truncated paste, another kind of blob or a newer format get different
//! answers. [`Writer`] and [`Reader`] build and walk a payload; the reader
//! never panics on short input, it names the field that ran out.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEADER: usize = 4 + 2 + 4;

/// Standard base64 (RFC 4648, with `=` padding).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64; ASCII whitespace (line breaks of a pasted
/// blob) is skipped. The error says what was wrong and where.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut pad = 0usize;
    let mut n = 0usize;
    for (i, c) in text.bytes().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        n += 1;
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            _ => {
                return Err(format!(
                    "not base64: byte {i} is {:?}; expected A-Z, a-z, 0-9, + or /",
                    c as char
                ));
            }
        };
        if pad > 0 {
            return Err(format!("not base64: data after `=` padding at byte {i}"));
        }
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if !n.is_multiple_of(4) || pad > 2 {
        return Err(format!(
            "not base64: {n} characters, not a multiple of 4 (truncated?)"
        ));
    }
    Ok(out)
}

/// The reflected IEEE 802.3 polynomial.
const CRC_POLY: u32 = 0xEDB8_8320;

/// Slice-by-8 tables: `CRC_TABLES[0]` is the byte-at-a-time table, and
/// `CRC_TABLES[k][b]` the CRC of byte `b` followed by `k` zero bytes.
const CRC_TABLES: [[u32; 256]; 8] = {
    let mut t = [[0u32; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut crc = b as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                crc >> 1 ^ CRC_POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = prev >> 8 ^ t[0][(prev & 0xFF) as usize];
            b += 1;
        }
        k += 1;
    }
    t
};

/// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib's `crc32`), eight
/// bytes a step: a machine's snapshot is sealed at every stateful call on
/// replicas, and a bit at a time took about 8 ns a byte.
pub fn crc32(bytes: &[u8]) -> u32 {
    let t = &CRC_TABLES;
    let mut crc = !0u32;
    let mut chunks = bytes.chunks_exact(8);
    for c in chunks.by_ref() {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        crc = t[7][(lo & 0xFF) as usize]
            ^ t[6][(lo >> 8 & 0xFF) as usize]
            ^ t[5][(lo >> 16 & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][c[4] as usize]
            ^ t[2][c[5] as usize]
            ^ t[1][c[6] as usize]
            ^ t[0][c[7] as usize];
    }
    for &b in chunks.remainder() {
        crc = crc >> 8 ^ t[0][((crc ^ b as u32) & 0xFF) as usize];
    }
    !crc
}

/// Sealed text handed over as bytes (a snapshot kept as a host blob), back
/// as text for [`open`].
pub fn text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|_| "the saved state is not snapshot text".to_owned())
}

/// Frames `payload`: magic, version, length, the payload, then a CRC of
/// all of it (what [`seal`] encodes as text; a file of a plugin's own can
/// hold it as is).
pub fn frame(magic: [u8; 4], version: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + payload.len() + 4);
    b.extend_from_slice(&magic);
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(payload);
    let crc = crc32(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Frames `payload` (magic, version, length, CRC) and encodes it as base64.
pub fn seal(magic: [u8; 4], version: u16, payload: &[u8]) -> String {
    base64_encode(&frame(magic, version, payload))
}

/// Decodes a [`seal`]ed blob of kind `magic` and returns its version and
/// payload. Refuses text longer than `max_chars` before decoding anything,
/// then whatever [`unframe`] refuses.
pub fn open(
    magic: [u8; 4],
    newest: u16,
    max_chars: usize,
    text: &str,
) -> Result<(u16, Vec<u8>), String> {
    if text.len() > max_chars {
        return Err(format!(
            "{} characters, more than the {max_chars} a snapshot can have",
            text.len()
        ));
    }
    let b = base64_decode(text)?;
    unframe(magic, newest, &b).map(|(version, payload)| (version, payload.to_vec()))
}

/// The version and payload of a [`frame`] of kind `magic`. Refuses a
/// different magic, a version above `newest`, a length that disagrees
/// with the data, and a checksum mismatch, each with its own message.
pub fn unframe(magic: [u8; 4], newest: u16, b: &[u8]) -> Result<(u16, &[u8]), String> {
    if b.len() < HEADER + 4 {
        return Err(format!(
            "{} bytes, too short for a snapshot (truncated?)",
            b.len()
        ));
    }
    if b[..4] != magic {
        return Err(format!(
            "this is not a {} snapshot (it begins {:?})",
            String::from_utf8_lossy(&magic),
            String::from_utf8_lossy(&b[..4])
        ));
    }
    let version = u16::from_le_bytes([b[4], b[5]]);
    if version == 0 || version > newest {
        return Err(format!(
            "snapshot format version {version}; this build reads versions 1 to {newest}"
        ));
    }
    let len = u32::from_le_bytes([b[6], b[7], b[8], b[9]]) as usize;
    if HEADER + len + 4 != b.len() {
        return Err(format!(
            "the header says {len} payload bytes but {} are present (truncated or joined?)",
            b.len().saturating_sub(HEADER + 4)
        ));
    }
    let body = &b[..HEADER + len];
    let stored = u32::from_le_bytes([
        b[HEADER + len],
        b[HEADER + len + 1],
        b[HEADER + len + 2],
        b[HEADER + len + 3],
    ]);
    let actual = crc32(body);
    if stored != actual {
        return Err(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x}): the snapshot was altered or damaged"
        ));
    }
    Ok((version, &b[HEADER..HEADER + len]))
}

/// Builds a payload of little-endian fields.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// An empty payload.
    pub fn new() -> Self {
        Self::default()
    }
    /// One byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    /// Two bytes, little-endian.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Four bytes, little-endian.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Eight bytes, little-endian.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A string [`Reader::str`] reads back whole, or None (nothing
    /// written) when it is longer than a u16 length holds: for data kept
    /// to be used again, where a cut string would be a wrong one.
    pub fn str_whole(&mut self, s: &str) -> Option<&mut Self> {
        (s.len() <= u16::MAX as usize).then(|| self.str(s, u16::MAX as usize))
    }

    /// A u16 length then the UTF-8 bytes, cut at a character boundary to
    /// at most `max` bytes.
    pub fn str(&mut self, s: &str, max: usize) -> &mut Self {
        let mut end = s.len().min(max).min(u16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.u16(end as u16);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
        self
    }
}

/// Walks a payload; every read names its field when the payload runs out.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `data` from its start.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, field: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(format!(
                "the payload ends inside `{field}` (byte {} of {})",
                self.at,
                self.data.len()
            )),
        }
    }
    /// One byte.
    pub fn u8(&mut self, field: &str) -> Result<u8, String> {
        Ok(self.bytes(1, field)?[0])
    }
    /// Two bytes, little-endian.
    pub fn u16(&mut self, field: &str) -> Result<u16, String> {
        let b = self.bytes(2, field)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    /// Four bytes, little-endian.
    pub fn u32(&mut self, field: &str) -> Result<u32, String> {
        let b = self.bytes(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Eight bytes, little-endian.
    pub fn u64(&mut self, field: &str) -> Result<u64, String> {
        let b = self.bytes(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A string written by [`Writer::str`] with the same `max`: a longer
    /// one is refused (naming the field) before it is read, since no
    /// writer made it and what reads it may show it to the agent.
    pub fn str(&mut self, field: &str, max: usize) -> Result<String, String> {
        let n = self.u16(field)? as usize;
        if n > max {
            return Err(format!(
                "`{field}` is {n} bytes, over the {max} a snapshot holds"
            ));
        }
        let b = self.bytes(n, field)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("`{field}` is not UTF-8"))
    }
    /// Bytes not read yet: a count read from the payload can be checked
    /// against it before anything is allocated for that many items.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.at
    }
    /// Fails unless every byte was read (a longer payload is another layout).
    pub fn finish(&self) -> Result<(), String> {
        if self.at == self.data.len() {
            Ok(())
        } else {
            Err(format!(
                "{} bytes left over after the last field",
                self.data.len() - self.at
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
        assert_eq!(base64_decode("Zm9v\nYmFy\n").unwrap(), b"foobar");
        assert!(base64_decode("Zm9").unwrap_err().contains("multiple of 4"));
        assert!(base64_decode("Zm9*").unwrap_err().contains("byte 3"));
        assert!(base64_decode("Zg==Zg==").unwrap_err().contains("padding"));
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // Eight bytes a step agrees with a bit at a time, at every length
        // and alignment of the tail.
        let bitwise = |bytes: &[u8]| {
            let mut crc = !0u32;
            for &b in bytes {
                crc ^= b as u32;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        crc >> 1 ^ CRC_POLY
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        };
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..9 {
            for end in start..data.len() {
                assert_eq!(
                    crc32(&data[start..end]),
                    bitwise(&data[start..end]),
                    "{start}..{end}"
                );
            }
        }
    }

    #[test]
    fn sealed_blobs_open_and_damage_is_named() {
        let s = seal(*b"TEST", 1, b"hello");
        assert_eq!(open(*b"TEST", 1, 1000, &s).unwrap(), (1, b"hello".to_vec()));
        assert!(
            open(*b"OTHR", 1, 1000, &s)
                .unwrap_err()
                .contains("not a OTHR")
        );
        assert!(open(*b"TEST", 1, 10, &s).unwrap_err().contains("more than"));
        let newer = seal(*b"TEST", 2, b"hello");
        assert!(
            open(*b"TEST", 1, 1000, &newer)
                .unwrap_err()
                .contains("version 2")
        );
        // One payload byte flipped: the checksum catches it.
        let mut raw = base64_decode(&s).unwrap();
        raw[HEADER] ^= 1;
        let bad = base64_encode(&raw);
        assert!(
            open(*b"TEST", 1, 1000, &bad)
                .unwrap_err()
                .contains("checksum")
        );
        // Cut short: the length disagrees.
        raw[HEADER] ^= 1;
        raw.truncate(raw.len() - 2);
        let short = base64_encode(&raw);
        assert!(
            open(*b"TEST", 1, 1000, &short)
                .unwrap_err()
                .contains("payload bytes")
        );
    }

    #[test]
    fn reader_names_the_field_that_ran_out() {
        let mut w = Writer::new();
        w.u8(1).u16(2).u32(3).u64(4).str("héllo", 3);
        let mut r = Reader::new(&w.0);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16("b").unwrap(), 2);
        assert_eq!(r.u32("c").unwrap(), 3);
        assert_eq!(r.u64("d").unwrap(), 4);
        assert_eq!(r.str("e", 3).unwrap(), "hé", "cut at a character boundary");
        r.finish().unwrap();
        assert!(r.u8("extra").unwrap_err().contains("`extra`"));
        let r = Reader::new(&[1]);
        assert!(r.finish().unwrap_err().contains("left over"));
    }

    #[test]
    fn strings_over_the_writers_cap_are_refused() {
        let long = "x".repeat(5000);
        let mut w = Writer::new();
        w.str(&long, 4096).str(&long, u16::MAX as usize);
        let mut r = Reader::new(&w.0);
        assert_eq!(r.str("path", 4096).unwrap().len(), 4096);
        let e = r.str("name", 256).unwrap_err();
        assert!(e.contains("`name` is 5000 bytes, over the 256"), "{e}");
    }
}
