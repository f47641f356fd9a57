//! The printf-style `format` attribute of ECUFlash scalings (`%.1f`, `%04X`,
//! `%08x`, and oddities such as `%.0d`, `%0f`, `-%.1f`), applied to f64
//! values. One conversion per format; literal text around it is kept.

/// A parsed format string.
#[derive(Debug, Clone, PartialEq)]
pub struct Format {
    prefix: String,
    suffix: String,
    spec: Spec,
}

#[derive(Debug, Clone, PartialEq)]
struct Spec {
    zero_pad: bool,
    left: bool,
    plus: bool,
    width: usize,
    precision: Option<usize>,
    conv: Conv,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Conv {
    Fixed,
    Int,
    HexLower,
    HexUpper,
    Exp,
    General,
}

impl Default for Format {
    /// What a scaling without a `format` gets: shortest round-trip text.
    fn default() -> Self {
        Self {
            prefix: String::new(),
            suffix: String::new(),
            spec: Spec {
                zero_pad: false,
                left: false,
                plus: false,
                width: 0,
                precision: None,
                conv: Conv::General,
            },
        }
    }
}

impl Format {
    /// Parses a format; an unusable one falls back to the default rendering,
    /// since a display format must never make a table unreadable.
    pub fn parse(text: &str) -> Self {
        Self::try_parse(text).unwrap_or_default()
    }

    fn try_parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let mut prefix = String::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                if bytes.get(i + 1) == Some(&b'%') {
                    prefix.push('%');
                    i += 2;
                    continue;
                }
                break;
            }
            prefix.push(bytes[i] as char);
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        i += 1;
        let (mut zero_pad, mut left, mut plus) = (false, false, false);
        while let Some(&c) = bytes.get(i) {
            match c {
                b'0' => zero_pad = true,
                b'-' => left = true,
                b'+' => plus = true,
                b' ' | b'#' => {}
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        while let Some(c @ b'0'..=b'9') = bytes.get(i) {
            width = width.checked_mul(10)?.checked_add((c - b'0') as usize)?;
            i += 1;
        }
        let mut precision = None;
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            let mut p = 0usize;
            while let Some(c @ b'0'..=b'9') = bytes.get(i) {
                p = p.checked_mul(10)?.checked_add((c - b'0') as usize)?;
                i += 1;
            }
            precision = Some(p.min(17));
        }
        // Length modifiers (`%ld`, `%lf`) change nothing for us.
        while let Some(b'l' | b'h') = bytes.get(i) {
            i += 1;
        }
        let conv = match bytes.get(i)? {
            b'f' | b'F' => Conv::Fixed,
            b'd' | b'i' | b'u' => Conv::Int,
            b'x' => Conv::HexLower,
            b'X' => Conv::HexUpper,
            b'e' | b'E' => Conv::Exp,
            b'g' | b'G' => Conv::General,
            _ => return None,
        };
        let suffix = text[i + 1..].replace("%%", "%");
        Some(Self {
            prefix,
            suffix,
            spec: Spec {
                zero_pad,
                left,
                plus,
                width: width.min(64),
                precision,
                conv,
            },
        })
    }

    /// Renders `value`.
    pub fn apply(&self, value: f64) -> String {
        let s = &self.spec;
        let body = if !value.is_finite() {
            if value.is_nan() {
                "NaN".to_string()
            } else if value > 0.0 {
                "inf".to_string()
            } else {
                "-inf".to_string()
            }
        } else {
            match s.conv {
                Conv::Fixed => fixed(value, s.precision.unwrap_or(6)),
                Conv::Int => format!("{}", value.round() as i64),
                Conv::HexLower | Conv::HexUpper => {
                    let v = value.round() as i64;
                    let hex = if s.conv == Conv::HexUpper {
                        format!("{:X}", v.unsigned_abs())
                    } else {
                        format!("{:x}", v.unsigned_abs())
                    };
                    if v < 0 { format!("-{hex}") } else { hex }
                }
                Conv::Exp => format!("{:.*e}", s.precision.unwrap_or(6), value),
                Conv::General => general(value, s.precision),
            }
        };
        let body = if s.plus && !body.starts_with('-') && value.is_finite() {
            format!("+{body}")
        } else {
            body
        };
        let padded = pad(&body, s.width, s.zero_pad && !s.left, s.left);
        // `-%.1f` style formats print a literal sign; avoid `--` for negatives.
        if self.prefix.ends_with('-') && padded.starts_with('-') {
            let mut p = self.prefix.clone();
            p.pop();
            return format!("{p}{}{}", &padded[1..], self.suffix);
        }
        format!("{}{padded}{}", self.prefix, self.suffix)
    }
}

/// `value` with `precision` decimals: the text of `format!("{:.*}",
/// precision, value)`, which it falls back to where it cannot be sure.
///
/// The standard formatter works the digits out with big numbers whenever
/// its fast path cannot round exactly, as for most values a scaling gives
/// (`12.35` is not a binary fraction): rendering a table of them was most
/// of a patch_table's formatting time. A finite double is `m·2^-k`
/// exactly, so its digits are `m·10^p / 2^k`, computed exactly in 128
/// bits for every value and precision a table shows; exact halves, where
/// the formatter's tie rule decides, go to it.
pub fn fixed(value: f64, precision: usize) -> String {
    exact_fixed(value, precision).unwrap_or_else(|| format!("{value:.precision$}"))
}

fn exact_fixed(value: f64, precision: usize) -> Option<String> {
    /// 10^17 < 2^57 and m < 2^53: the product fits in 128 bits.
    const MAX_PRECISION: usize = 17;
    if !value.is_finite() || precision > MAX_PRECISION {
        return None;
    }
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = match biased {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, biased - 1075),
    };
    // value = mantissa · 2^exponent; whole numbers past 2^53 and values
    // too small for a 128-bit shift are left to the formatter.
    if !(-127..=0).contains(&exponent) {
        return None;
    }
    let shift = exponent.unsigned_abs();
    let scaled = u128::from(mantissa) * 10u128.pow(precision as u32);
    let mut digits = scaled >> shift;
    if shift > 0 {
        // Rounded to nearest by what the shift dropped.
        let (rest, half) = (scaled & ((1u128 << shift) - 1), 1u128 << (shift - 1));
        if rest == half {
            return None;
        }
        digits += u128::from(rest > half);
    }
    let mut text = digits.to_string();
    if text.len() <= precision {
        text.insert_str(0, &"0".repeat(precision + 1 - text.len()));
    }
    if precision > 0 {
        text.insert(text.len() - precision, '.');
    }
    if value.is_sign_negative() {
        text.insert(0, '-');
    }
    Some(text)
}

fn general(value: f64, precision: Option<usize>) -> String {
    match precision {
        // Shortest text that reads back as the same double, without noise
        // such as `0.30000000000000004` for sums of tenths.
        None => {
            let rounded = fixed(value, 10);
            let trimmed = rounded.trim_end_matches('0').trim_end_matches('.');
            if trimmed == "-0" {
                "0".into()
            } else {
                trimmed.to_string()
            }
        }
        Some(p) => {
            let p = p.max(1);
            let text = format!("{:.*e}", p - 1, value);
            let exp: i32 = text
                .rsplit('e')
                .next()
                .and_then(|e| e.parse().ok())
                .unwrap_or(0);
            if exp < -4 || exp >= p as i32 {
                text
            } else {
                let decimals = (p as i32 - 1 - exp).max(0) as usize;
                let text = fixed(value, decimals);
                if text.contains('.') {
                    text.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    text
                }
            }
        }
    }
}

fn pad(body: &str, width: usize, zero: bool, left: bool) -> String {
    let len = body.chars().count();
    if len >= width {
        return body.to_string();
    }
    let fill = width - len;
    if left {
        format!("{body}{}", " ".repeat(fill))
    } else if zero {
        let (sign, digits) = match body.strip_prefix(['-', '+']) {
            Some(rest) => (&body[..1], rest),
            None => ("", body),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, v: f64) -> String {
        Format::parse(fmt).apply(v)
    }

    #[test]
    fn fixed_is_the_standard_formatters_text() {
        let check = |v: f64, p: usize| assert_eq!(fixed(v, p), format!("{v:.p$}"), "{v:e} .{p}");
        let edges = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            0.125,
            0.105,
            -0.04,
            12.35,
            999.99999,
            f64::MIN_POSITIVE,
            5e-324,
            1e-300,
            1e15,
            9007199254740993.0,
            1e300,
        ];
        for v in edges {
            for p in 0..=20 {
                check(v, p);
            }
        }
        // Scaled table values (raw · factor + offset), and random doubles
        // over many magnitudes.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for raw in 0..4096u32 {
            for (factor, offset) in [(0.35, -64.0), (0.01, 0.0), (1.0 / 12.8, 0.0), (0.1, -40.0)] {
                check(f64::from(raw) * factor + offset, 1 + raw as usize % 4);
            }
        }
        for _ in 0..200_000 {
            let mantissa = (next() >> 11) as f64 / (1u64 << 53) as f64;
            let magnitude = 10f64.powi((next() % 24) as i32 - 12);
            let sign = if next() % 2 == 0 { 1.0 } else { -1.0 };
            check(sign * mantissa * magnitude, (next() % 13) as usize);
        }
    }

    #[test]
    fn formats_seen_in_definitions() {
        assert_eq!(f("%.1f", 14.7), "14.7");
        assert_eq!(f("%.0f", 7002.8), "7003");
        assert_eq!(f("%.2f", 0.105), "0.10");
        assert_eq!(f("%.3f", 1.0), "1.000");
        assert_eq!(f("%04X", 233.0), "00E9");
        assert_eq!(f("%02X", 5.0), "05");
        assert_eq!(f("%08x", 1451819017.0), "56890009");
        assert_eq!(f("%06X", 8421376.0), "808000");
        assert_eq!(f("%.0d", 12.4), "12");
        assert_eq!(f("%0f", 1.5), "1.500000");
        assert_eq!(f("-%.1f", 2.25), "-2.2");
        assert_eq!(f("-%.1f", -2.0), "2.0");
        assert_eq!(f("%d%%", 50.0), "50%");
    }

    #[test]
    fn fallback_and_default() {
        assert_eq!(f("", 0.1 + 0.2), "0.3");
        assert_eq!(f("%q", 2.5), "2.5");
        assert_eq!(f("no conversion", -0.0), "0");
        assert_eq!(f("%.3g", 1234.5), "1.23e3");
        assert_eq!(f("%.3g", 12.345), "12.3");
        assert_eq!(f("%5.1f", -1.0), " -1.0");
        assert_eq!(f("%05.1f", -1.0), "-01.0");
        assert_eq!(f("%.1f", f64::INFINITY), "inf");
    }
}
