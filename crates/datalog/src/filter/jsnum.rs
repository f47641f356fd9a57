//! JavaScript number semantics that filtrex inherits: `Number.prototype.toString`
//! (for `"pull" + 1`), `Math.pow`, `Math.round` and filtrex's `mod`.

/// Formats a number the way JavaScript's `String(x)` does.
pub fn to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // Rust's `{:e}` gives the shortest round-trip digits, as ECMAScript requires.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let es = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{es}")
        } else {
            format!("{}.{}e{es}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

/// `Math.pow`: unlike C's `pow`, a NaN exponent always gives NaN, and so does
/// ±1 to an infinite power.
#[inline]
pub fn pow(a: f64, b: f64) -> f64 {
    if b.is_nan() || (b.is_infinite() && a.abs() == 1.0) {
        f64::NAN
    } else {
        a.powf(b)
    }
}

/// `Math.round`: halves go towards +∞.
#[inline]
pub fn round(x: f64) -> f64 {
    let f = x.floor();
    if x - f >= 0.5 { f + 1.0 } else { f }
}

/// filtrex's `mod`: `((a % b) + b) % b`, so the result has the sign of `b`.
#[inline]
pub fn modulo(a: f64, b: f64) -> f64 {
    ((a % b) + b) % b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_javascript() {
        assert_eq!(to_string(1.0), "1");
        assert_eq!(to_string(-2.5), "-2.5");
        assert_eq!(to_string(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(to_string(1e21), "1e+21");
        assert_eq!(to_string(1e20), "100000000000000000000");
        assert_eq!(to_string(1.5e-7), "1.5e-7");
        assert_eq!(to_string(0.000001), "0.000001");
        assert_eq!(to_string(123456.789), "123456.789");
        assert_eq!(to_string(-0.0), "0");
    }

    #[test]
    fn math_like_javascript() {
        assert!(pow(1.0, f64::NAN).is_nan());
        assert!(pow(-1.0, f64::INFINITY).is_nan());
        assert_eq!(pow(2.0, -1.0), 0.5);
        assert_eq!(round(-2.5), -2.0);
        assert_eq!(round(2.5), 3.0);
        assert_eq!(round(0.49999999999999994), 0.0);
        assert_eq!(modulo(5.0, -3.0), -1.0);
        assert_eq!(modulo(-5.0, 3.0), 1.0);
        assert!(modulo(1.0, 0.0).is_nan());
    }
}
