//! Row filters in the filtrex 3.1.0 language (plus `&&`, `||`, `!`).
//!
//! [`Filter::compile`] checks syntax; [`Filter::check_channels`] rejects names
//! that no searched log has (with a "did you mean"); [`Filter::bind`] ties the
//! filter to one log's columns and [`Bound::scan`] finds the matching rows,
//! vectorised where the filter is purely numeric. A row whose evaluation
//! fails (an empty cell in a comparison, a type error, a channel this log
//! lacks) does not match, and is counted.

// The parser, interpreter and JavaScript number rules are internals of
// `Filter`: callers compile, bind and scan, and see only the two errors.
mod eval;
mod jsnum;
mod jsregex;
mod syntax;
mod vector;

use crate::column::Column;
pub use eval::EvalError;
use eval::Interpreter;
pub use jsregex::RegexError;
pub use syntax::CompileError;
use syntax::{Expr, NameRef};

/// A compiled filter, independent of any log.
pub struct Filter {
    source: String,
    expr: Expr,
    names: Vec<NameRef>,
    regexes: Vec<regex_lite::Regex>,
}

/// What a scan found besides the matches.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScanStats {
    /// Rows whose evaluation failed (they do not match).
    pub error_rows: usize,
    /// The first failure: row index and message.
    pub first_error: Option<(usize, String)>,
    /// Rows that failed only because this log lacks a channel the filter
    /// names (reported per log, not as errors).
    pub missing_channel_rows: usize,
}

impl Filter {
    /// Parses `source` and compiles its literal `~=` patterns once; the
    /// error points at the offending character and says what would fit.
    pub fn compile(source: &str) -> Result<Filter, CompileError> {
        let parsed = syntax::parse(source)?;
        Ok(Filter {
            source: source.to_string(),
            expr: parsed.expr,
            names: parsed.names,
            regexes: parsed.regexes,
        })
    }

    /// The filter text as given, for messages and cache keys.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Channel names the filter uses, in order of first appearance.
    pub fn channel_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| n.name.as_str())
    }

    /// Fails on the first name that none of `available` holds (names used
    /// only inside `exists()`/`empty()` are exempt: they test presence).
    pub fn check_channels(&self, available: &[&str]) -> Result<(), CompileError> {
        for n in &self.names {
            if n.presence_only || available.contains(&n.name.as_str()) {
                continue;
            }
            return Err(unknown_channel(&self.source, n, available));
        }
        Ok(())
    }

    /// Binds the filter to a log's columns (by exact name).
    pub fn bind<'a>(&'a self, columns: &'a [Column]) -> Bound<'a> {
        let slots: Vec<Option<&Column>> = self
            .names
            .iter()
            .map(|n| columns.iter().find(|c| c.name == n.name))
            .collect();
        let vector = vector::compile(&self.expr, &slots);
        Bound {
            filter: self,
            interp: Interpreter::new(slots, &self.names, &self.regexes),
            vector,
        }
    }

    /// Names the filter uses that `columns` lacks (presence tests excluded).
    pub fn missing_in(&self, columns: &[Column]) -> Vec<&str> {
        self.names
            .iter()
            .filter(|n| !n.presence_only && !columns.iter().any(|c| c.name == n.name))
            .map(|n| n.name.as_str())
            .collect()
    }
}

/// A filter bound to one log.
pub struct Bound<'a> {
    filter: &'a Filter,
    interp: Interpreter<'a>,
    vector: Option<vector::VectorProgram<'a>>,
}

impl Bound<'_> {
    /// True when the vectorised path handles (most) rows.
    pub fn is_vectorised(&self) -> bool {
        self.vector.is_some()
    }

    /// Evaluates one row with the general interpreter.
    pub fn eval_row(&self, row: usize) -> Result<bool, EvalError> {
        self.interp
            .eval(&self.filter.expr, row)
            .map(|v| v.is_match())
    }

    /// Calls `on_match` with every matching row of `rows`, in order.
    pub fn scan(&self, rows: std::ops::Range<usize>, mut on_match: impl FnMut(usize)) -> ScanStats {
        let mut stats = ScanStats::default();
        let slow = |row: usize, stats: &mut ScanStats, on_match: &mut dyn FnMut(usize)| match self
            .eval_row(row)
        {
            Ok(true) => on_match(row),
            Ok(false) => {}
            Err(EvalError::UnknownChannel(_)) => stats.missing_channel_rows += 1,
            Err(e) => {
                stats.error_rows += 1;
                if stats.first_error.is_none() {
                    stats.first_error = Some((row, e.to_string()));
                }
            }
        };
        let Some(program) = &self.vector else {
            for row in rows {
                slow(row, &mut stats, &mut on_match);
            }
            return stats;
        };
        let special: Vec<&Column> = program.special_columns().collect();
        let mut regs = program.registers();
        let mut mask = [false; vector::CHUNK];
        let mut start = rows.start;
        while start < rows.end {
            let n = (rows.end - start).min(vector::CHUNK);
            let any_special = if special.is_empty() {
                false
            } else {
                mask[..n].fill(false);
                for c in &special {
                    for (m, v) in mask[..n].iter_mut().zip(&c.values[start..start + n]) {
                        *m |= v.is_nan();
                    }
                }
                mask[..n].contains(&true)
            };
            if any_special {
                program.run(start, n, &mut regs, |i, m| {
                    if mask[i] {
                        slow(start + i, &mut stats, &mut on_match);
                    } else if m {
                        on_match(start + i);
                    }
                });
            } else {
                program.run_matching(start, n, &mut regs, |i| on_match(start + i));
            }
            start += n;
        }
        stats
    }
}

fn unknown_channel(source: &str, n: &NameRef, available: &[&str]) -> CompileError {
    let position = source[..n.start].chars().count() + 1;
    let mut message = format!("unknown channel `{}`", plugin_kit::text::clip(&n.name));
    if let Some(best) = closest(&n.name, available) {
        message.push_str(&format!("; did you mean `{best}`?"));
    }
    let hint = if matches!(n.name.as_str(), "true" | "false") {
        "filtrex has no true/false literals: write a comparison such as 1 == 1".to_string()
    } else {
        let mut shown: Vec<String> = available
            .iter()
            .take(40)
            .map(|c| {
                if c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                    && !c.starts_with(|ch: char| ch.is_ascii_digit())
                {
                    c.to_string()
                } else {
                    format!("'{c}'")
                }
            })
            .collect();
        if available.len() > shown.len() {
            shown.push(format!("… ({} more)", available.len() - shown.len()));
        }
        format!(
            "channels (case-sensitive; quote names with spaces or a leading digit): {}",
            shown.join(", ")
        )
    };
    CompileError {
        message,
        position,
        hint: Some(hint),
        source: source.to_string(),
    }
}

/// Longest `~=` pattern accepted.
pub const MAX_PATTERN: usize = 1000;
/// Most capture groups in a `~=` pattern: the matcher keeps a slot per
/// group for every state, so groups times states is its memory.
pub const MAX_GROUPS: usize = 16;

/// Compiles a `~=` pattern as filtrex would run it: read as a JavaScript
/// regular expression (see [`jsregex`]) and rewritten for regex-lite,
/// within bounds on its size, nesting and capture groups so that no filter
/// can make the matcher take memory without limit (regex-lite's own default
/// allows a 10 MiB program, times the groups).
pub fn compile_regex(pattern: &str) -> Result<regex_lite::Regex, RegexError> {
    if pattern.len() > MAX_PATTERN {
        return Err(RegexError::TooLong {
            bytes: pattern.len(),
        });
    }
    let rust = jsregex::translate(pattern)?;
    regex_lite::RegexBuilder::new(&rust)
        .size_limit(1 << 20)
        .nest_limit(64)
        .build()
        .map_err(|e| {
            let e = e.to_string();
            if e.contains("size limit") {
                RegexError::TooLarge
            } else if e.contains("nest") {
                RegexError::TooDeep
            } else {
                RegexError::Engine(e)
            }
        })
}

/// The channel an agent most likely meant by `name`: a case-insensitive
/// match, else the nearest within about a third of the name's length in
/// edits, else one containing the other (for "did you mean" hints).
pub fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    // No channel name is this long: comparing it with every channel of a
    // wide log would cost seconds for a suggestion nobody needs.
    if name.len() > 200 {
        return None;
    }
    let lower = name.to_lowercase();
    if let Some(c) = candidates.iter().find(|c| c.to_lowercase() == lower) {
        return Some(c);
    }
    let limit = (name.chars().count() / 3).max(2);
    candidates
        .iter()
        .map(|c| {
            (
                plugin_kit::suggest::edit_distance(&lower, &c.to_lowercase()),
                *c,
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
        .or_else(|| {
            candidates
                .iter()
                .find(|c| {
                    let cl = c.to_lowercase();
                    lower.len() >= 3 && (cl.contains(&lower) || lower.contains(&cl))
                })
                .copied()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_expressions_are_bounded() {
        assert!(compile_regex("^pull[0-9]+$").unwrap().is_match("pull12"));
        let groups = "(a)".repeat(MAX_GROUPS + 1);
        let e = compile_regex(&groups).unwrap_err();
        assert!(
            e.to_string().contains("capture groups") && e.to_string().contains("(?:…)"),
            "{e}"
        );
        assert!(compile_regex(&"(?:a)".repeat(40)).is_ok());
        assert!(matches!(
            compile_regex(&"a".repeat(MAX_PATTERN + 1)),
            Err(RegexError::TooLong { .. })
        ));
        let big = compile_regex("(?:a{1000}){1000}").unwrap_err();
        assert!(big.to_string().contains("1 MiB"), "{big}");
        assert_eq!(
            compile_regex("a{1000000}").unwrap_err(),
            RegexError::TooLarge
        );
        let deep = format!("{}a{}", "(?:".repeat(200), ")".repeat(200));
        assert!(compile_regex(&deep).is_err());
        // Through the filter language, at compile time.
        let err = Filter::compile("Phase ~= \"(a\"")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("invalid regular expression") && err.contains("unterminated group"),
            "{err}"
        );
    }

    fn columns() -> Vec<Column> {
        let mut rpm = Column::new("RPM");
        let mut knock = Column::new("Knock");
        let mut afr = Column::new("AFR");
        let mut phase = Column::new("Phase");
        for i in 0..3000 {
            rpm.push_num(800.0 + i as f64 * 2.0, 0);
            knock.push_num((i % 7) as f64, 0);
            if i % 10 == 0 {
                afr.push_null();
            } else {
                afr.push_num(12.0 + (i % 5) as f64, 1);
            }
            phase.push_text(if i < 1500 { "idle" } else { "pull1" });
        }
        vec![rpm, knock, afr, phase]
    }

    fn matches(expr: &str, cols: &[Column]) -> (Vec<usize>, ScanStats, bool) {
        let f = Filter::compile(expr).unwrap();
        let b = f.bind(cols);
        let mut rows = Vec::new();
        let stats = b.scan(0..cols[0].values.len(), |r| rows.push(r));
        // The vectorised path must agree with the interpreter row by row.
        let slow: Vec<usize> = (0..cols[0].values.len())
            .filter(|&r| b.eval_row(r).unwrap_or(false))
            .collect();
        assert_eq!(rows, slow, "{expr}");
        (rows, stats, b.is_vectorised())
    }

    #[test]
    fn fast_and_slow_paths_agree() {
        let cols = columns();
        for expr in [
            "RPM > 3000 and Knock > 0",
            "RPM > 3000 && Knock > 0 || AFR < 13",
            "not (AFR < 13) and Knock in (1, 2)",
            "3000 < RPM <= 5000",
            "if Knock > 3 then RPM else 0",
            "max(RPM / 1000, Knock) > 5 and exists(AFR)",
            "-Knock mod 3 == 2",
            "RPM ^ 0.5 > 60 or Knock not in (0)",
            "Phase == \"pull1\" and Knock > 5",
            "abs(AFR - 14) < 1",
            "(RPM > 5000) == (Knock > 3)",
            // Values, not booleans: -0.0 and NaN do not match.
            "-(Knock * 0)",
            "RPM - 3000",
            "Knock mod 2",
            "Knock / (Knock - 3)",
        ] {
            matches(expr, &cols);
        }
        assert!(matches("RPM > 3000 and Knock > 0", &cols).2);
        assert!(!matches("Phase == \"pull1\"", &cols).2);
    }

    #[test]
    fn errors_do_not_match_and_are_counted() {
        let cols = columns();
        let (rows, stats, _) = matches("AFR > 0", &cols);
        assert_eq!(rows.len(), 2700);
        assert_eq!(stats.error_rows, 300);
        assert_eq!(stats.first_error.unwrap().0, 0);
        let (rows, stats, _) = matches("not (AFR > 100)", &cols);
        assert_eq!(rows.len(), 2700);
        assert_eq!(stats.error_rows, 300);
    }

    #[test]
    fn unknown_channels_get_suggestions() {
        let f = Filter::compile("RPM > 1 and knock > 0").unwrap();
        let e = f
            .check_channels(&["RPM", "Knock", "Knock Sum"])
            .unwrap_err();
        assert_eq!(e.position, 13);
        assert!(e.message.contains("did you mean `Knock`"), "{e}");
        assert!(e.hint.unwrap().contains("'Knock Sum'"));
        let f = Filter::compile("exists(Boost) or RPM > 1").unwrap();
        assert!(f.check_channels(&["RPM"]).is_ok());
        assert_eq!(
            closest("Engine Speed", &["Engine Speed (rpm)", "RPM"]),
            Some("Engine Speed (rpm)")
        );
    }
}
