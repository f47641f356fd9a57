//! Scalings: how raw ROM bytes become physical values and back.

use crate::expr::Expr;
use crate::printf::Format;

/// Byte order of a stored value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Most significant byte first (ECUFlash's default, used by SH and H8
    /// ECUs).
    Big,
    /// Least significant byte first.
    Little,
}

/// How one cell is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Unsigned byte (`uint8`).
    U8,
    /// Signed byte (`int8`).
    I8,
    /// Unsigned 16-bit word (`uint16`).
    U16,
    /// Signed 16-bit word (`int16`).
    I16,
    /// Unsigned 32-bit word (`uint32`).
    U32,
    /// Signed 32-bit word (`int32`).
    I32,
    /// IEEE 754 single-precision float (`float`).
    F32,
    /// A byte string of this length whose meaning is a named choice.
    Blob(usize),
    /// One bit per cell (`storagebits="1"` bloblists), most significant first.
    Bits,
}

impl Storage {
    /// Bytes per cell; bit tables report 0 and are sized per table.
    pub fn size(self) -> usize {
        match self {
            Storage::U8 | Storage::I8 => 1,
            Storage::U16 | Storage::I16 => 2,
            Storage::U32 | Storage::I32 | Storage::F32 => 4,
            Storage::Blob(n) => n,
            Storage::Bits => 0,
        }
    }

    /// The ECUFlash name, as listed to users.
    pub fn name(self) -> &'static str {
        match self {
            Storage::U8 => "uint8",
            Storage::I8 => "int8",
            Storage::U16 => "uint16",
            Storage::I16 => "int16",
            Storage::U32 => "uint32",
            Storage::I32 => "int32",
            Storage::F32 => "float",
            Storage::Blob(_) => "bloblist",
            Storage::Bits => "bits",
        }
    }

    /// Inclusive raw range of integer types (None for float, blob, bits).
    pub fn int_range(self) -> Option<(f64, f64)> {
        Some(match self {
            Storage::U8 => (0.0, u8::MAX as f64),
            Storage::I8 => (i8::MIN as f64, i8::MAX as f64),
            Storage::U16 => (0.0, u16::MAX as f64),
            Storage::I16 => (i16::MIN as f64, i16::MAX as f64),
            Storage::U32 => (0.0, u32::MAX as f64),
            Storage::I32 => (i32::MIN as f64, i32::MAX as f64),
            Storage::F32 | Storage::Blob(_) | Storage::Bits => return None,
        })
    }

    /// Decodes one numeric cell from exactly `size()` bytes.
    pub fn read(self, endian: Endian, b: &[u8]) -> f64 {
        macro_rules! get {
            ($t:ty, $n:literal) => {{
                let mut a = [0u8; $n];
                a.copy_from_slice(&b[..$n]);
                match endian {
                    Endian::Big => <$t>::from_be_bytes(a),
                    Endian::Little => <$t>::from_le_bytes(a),
                }
            }};
        }
        match self {
            Storage::U8 => b[0] as f64,
            Storage::I8 => b[0] as i8 as f64,
            Storage::U16 => get!(u16, 2) as f64,
            Storage::I16 => get!(i16, 2) as f64,
            Storage::U32 => get!(u32, 4) as f64,
            Storage::I32 => get!(i32, 4) as f64,
            Storage::F32 => get!(f32, 4) as f64,
            Storage::Blob(_) | Storage::Bits => f64::NAN,
        }
    }

    /// Encodes a raw value that is already rounded and inside `int_range`.
    pub fn write(self, endian: Endian, raw: f64, out: &mut [u8]) {
        macro_rules! put {
            ($v:expr) => {{
                let v = $v;
                let bytes = match endian {
                    Endian::Big => v.to_be_bytes(),
                    Endian::Little => v.to_le_bytes(),
                };
                out[..bytes.len()].copy_from_slice(&bytes);
            }};
        }
        match self {
            Storage::U8 => out[0] = raw as u8,
            Storage::I8 => out[0] = raw as i8 as u8,
            Storage::U16 => put!(raw as u16),
            Storage::I16 => put!(raw as i16),
            Storage::U32 => put!(raw as u32),
            Storage::I32 => put!(raw as i32),
            Storage::F32 => put!(raw as f32),
            Storage::Blob(_) | Storage::Bits => {}
        }
    }
}

/// What a cell means.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A number through `toexpr`/`frexpr`.
    Numeric {
        /// `toexpr`: raw stored number `x` to physical value.
        to: Expr,
        /// `frexpr`: physical value `x` back to the raw number; none makes
        /// the table read-only.
        from: Option<Expr>,
    },
    /// A named byte pattern.
    Blobs(Vec<(String, Vec<u8>)>),
    /// A single bit, 0 or 1.
    Bit,
}

/// A resolved `<scaling>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// The scaling's name, as tables refer to it.
    pub name: String,
    /// Unit of the physical values, e.g. "°C" or "psi".
    pub units: Option<String>,
    /// The definition's printf-style `format`, e.g. "%0.2f", as written.
    pub format_text: Option<String>,
    /// `format_text` parsed: how values are printed.
    pub format: Format,
    /// Soft lower bound of the physical value: patches below it are refused
    /// unless forced.
    pub min: Option<f64>,
    /// Soft upper bound of the physical value.
    pub max: Option<f64>,
    /// How a cell is stored.
    pub storage: Storage,
    /// Byte order of multi-byte cells.
    pub endian: Endian,
    /// What a cell means: a number, a named choice or a bit.
    pub kind: Kind,
}

impl Scaling {
    /// Raw → physical for numeric scalings.
    pub fn to_physical(&self, raw: f64) -> f64 {
        match &self.kind {
            Kind::Numeric { to, .. } => to.eval(raw),
            _ => raw,
        }
    }

    /// Renders a physical value with the scaling's format.
    pub fn display(&self, value: f64) -> String {
        match self.kind {
            Kind::Bit => format!("{}", value as i64),
            _ => self.format.apply(value),
        }
    }

    /// The name of the blob matching `bytes`, if any.
    pub fn blob_name(&self, bytes: &[u8]) -> Option<&str> {
        match &self.kind {
            Kind::Blobs(list) => list
                .iter()
                .find(|(_, b)| b == bytes)
                .map(|(n, _)| n.as_str()),
            _ => None,
        }
    }
}

/// `"00E9"` → `[0x00, 0xE9]`; None for odd length or non-hex text.
pub fn parse_hex_bytes(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.trim();
    let hex = hex
        .strip_prefix("0x")
        .or_else(|| hex.strip_prefix("0X"))
        .unwrap_or(hex);
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Uppercase hex of a byte string.
pub fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_round_trips_in_both_byte_orders() {
        let cases = [
            (Storage::U8, 200.0),
            (Storage::I8, -5.0),
            (Storage::U16, 54321.0),
            (Storage::I16, -1234.0),
            (Storage::U32, 4_000_000_000.0),
            (Storage::I32, -2_000_000_000.0),
            (Storage::F32, 1.5),
        ];
        for (s, v) in cases {
            for e in [Endian::Big, Endian::Little] {
                let mut buf = [0u8; 4];
                s.write(e, v, &mut buf);
                assert_eq!(s.read(e, &buf), v, "{s:?} {e:?}");
            }
        }
        let mut buf = [0u8; 2];
        Storage::U16.write(Endian::Big, 0x1234 as f64, &mut buf);
        assert_eq!(buf, [0x12, 0x34]);
        Storage::U16.write(Endian::Little, 0x1234 as f64, &mut buf);
        assert_eq!(buf, [0x34, 0x12]);
    }

    #[test]
    fn hex_bytes() {
        assert_eq!(parse_hex_bytes("00E9"), Some(vec![0, 0xE9]));
        assert_eq!(parse_hex_bytes("0E9"), None);
        assert_eq!(parse_hex_bytes("zz"), None);
        assert_eq!(hex_upper(&[0xc5, 0x86]), "C586");
    }
}
