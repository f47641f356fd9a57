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
                Conv::Fixed => format!("{:.*}", s.precision.unwrap_or(6), value),
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

fn general(value: f64, precision: Option<usize>) -> String {
    match precision {
        // Shortest text that reads back as the same double, without noise
        // such as `0.30000000000000004` for sums of tenths.
        None => {
            let rounded = format!("{:.10}", value);
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
                let fixed = format!("{:.*}", decimals, value);
                if fixed.contains('.') {
                    fixed
                        .trim_end_matches('0')
                        .trim_end_matches('.')
                        .to_string()
                } else {
                    fixed
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
