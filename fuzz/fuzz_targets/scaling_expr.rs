//! ECUFlash scaling expressions (`ecu_tables::expr::Expr`, the `toexpr` and
//! `frexpr` attributes) and printf display formats (`printf::Format`, the
//! `format` attribute), then a whole `<scaling>` built from them.
//!
//! The input's first line is the expression, the second the format. A
//! compiled expression evaluates at several points without panicking, and
//! wrapping it in parentheses (or negating it) changes nothing (or only
//! the sign), which checks the postfix program against the precedence rules.
#![no_main]

use ecuflash::merge::scaling_from_raw;
use ecu_tables::expr::Expr;
use ecu_tables::printf::Format;
use ecuflash::xml::RawScaling;
use libfuzzer_sys::fuzz_target;

const POINTS: [f64; 8] = [
    0.0,
    1.0,
    -1.0,
    128.0,
    65535.0,
    1e-300,
    f64::NAN,
    f64::INFINITY,
];

/// Same value, NaNs equal to each other.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let expr_text = lines.next().unwrap_or("");
    let format_text = lines.next().unwrap_or("");

    if let Ok(e) = Expr::parse(expr_text) {
        assert_eq!(e.source(), expr_text);
        let wrapped = Expr::parse(&format!("({expr_text})"));
        let negated = Expr::parse(&format!("-({expr_text})"));
        for x in POINTS {
            let v = e.eval(x);
            if let Ok(w) = &wrapped {
                assert!(same(w.eval(x), v), "({expr_text}) at {x}");
            }
            if let Ok(n) = &negated {
                assert!(same(n.eval(x), -v), "-({expr_text}) at {x}");
            }
        }
    }

    let format = Format::parse(format_text);
    for x in POINTS {
        let _ = format.apply(x);
    }

    let raw = RawScaling {
        name: "fuzz".into(),
        attrs: [
            ("toexpr", expr_text),
            ("frexpr", expr_text),
            ("format", format_text),
            ("storagetype", "uint16"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        blobs: vec![],
    };
    if let Ok(s) = scaling_from_raw(&raw) {
        for x in POINTS {
            let _ = s.display(s.to_physical(x));
        }
    }
});
