//! `~=` patterns read as filtrex reads them.
//!
//! filtrex 3.1.0 compiles `a ~= b` to JavaScript's `RegExp(b).test(a)`:
//! ECMAScript pattern syntax with no flags, plus the web-compatibility rules
//! of ECMAScript's Annex B that V8 (Node.js) applies — a `{` that starts no
//! quantifier is a literal, `\y` is the letter y, `[\d-z]` holds a `-`.
//! The `regex-lite` engine speaks Rust's syntax, where the same text may
//! mean something else (`\A`, `\<`, `[[:alpha:]]`, `(?i)`) or be refused
//! (`[^]`, `a{`, `\cJ`). So a pattern is parsed here as JavaScript parses
//! it and written out again in Rust's syntax, every literal escaped, so that
//! it matches what it matches in filtrex. What only Rust has (inline flags,
//! `\A`, POSIX classes …) and what JavaScript has but this engine cannot run
//! (look-around, backreferences) is refused with what to write instead.
//!
//! JavaScript matches UTF-16 code units and Rust characters: a quantifier
//! right after a character beyond U+FFFF (an emoji), which JavaScript
//! applies to its second half only, is refused; `.` and classes still take
//! a whole emoji here and half of one in filtrex.

use plugin_kit::text::clip;
use std::fmt;

/// Why a `~=` pattern was refused; each says what was wrong and, where
/// there is one, what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexError {
    /// The pattern is longer than [`super::MAX_PATTERN`] bytes.
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// It has more capture groups than [`super::MAX_GROUPS`].
    TooManyGroups {
        /// Its capture groups.
        groups: usize,
    },
    /// It compiles to a matcher program over the memory bound.
    TooLarge,
    /// Its groups nest deeper than the matcher accepts.
    TooDeep,
    /// Syntax of Rust's regex (or of another non-JavaScript flavour) that
    /// filtrex's JavaScript RegExp rejects or reads as something else.
    RustOnly {
        /// 1-based character position in the pattern.
        at: usize,
        /// The construct as written.
        construct: String,
        /// What JavaScript does with it.
        javascript: &'static str,
        /// What to write instead.
        instead: String,
    },
    /// JavaScript syntax that filtrex runs but this engine cannot.
    Unsupported {
        /// 1-based character position in the pattern.
        at: usize,
        /// The construct as written.
        construct: String,
        /// What kind of construct it is.
        what: &'static str,
        /// What to write instead.
        instead: &'static str,
    },
    /// A pattern JavaScript rejects too, so filtrex would not run it either.
    Invalid {
        /// 1-based character position in the pattern.
        at: usize,
        /// What is wrong, in JavaScript's terms.
        message: &'static str,
        /// What to write instead.
        instead: &'static str,
    },
    /// regex-lite refused the rewritten pattern for another reason.
    Engine(String),
}

impl RegexError {
    /// What was wrong, without the advice.
    pub fn what(&self) -> String {
        match self {
            RegexError::TooLong { bytes } => format!(
                "the pattern is {bytes} bytes long; at most {} are accepted",
                super::MAX_PATTERN
            ),
            RegexError::TooManyGroups { groups } => format!(
                "the pattern has {groups} capture groups; at most {} are accepted",
                super::MAX_GROUPS
            ),
            RegexError::TooLarge => {
                "the pattern compiles to a program over the 1 MiB limit (a repetition count \
                 too large?)"
                    .into()
            }
            RegexError::TooDeep => "the pattern's groups nest too deeply".into(),
            RegexError::RustOnly {
                at,
                construct,
                javascript,
                ..
            } => format!(
                "`{}` (character {at} of the pattern) is Rust regex syntax, not \
                 JavaScript's: filtrex matches `~=` with JavaScript's RegExp, {javascript}",
                clip(construct)
            ),
            RegexError::Unsupported {
                at,
                construct,
                what,
                ..
            } => format!(
                "`{}` (character {at} of the pattern) is a JavaScript {what}, which \
                 filtrex runs but this regex engine cannot",
                clip(construct)
            ),
            RegexError::Invalid { at, message, .. } => format!(
                "{message} at character {at} of the pattern (JavaScript's RegExp, and so \
                 filtrex, rejects it too)"
            ),
            RegexError::Engine(e) => clip(e),
        }
    }

    /// What to write instead, when there is a rewrite to suggest.
    pub fn instead(&self) -> Option<String> {
        match self {
            RegexError::TooLong { .. } | RegexError::TooLarge | RegexError::TooDeep => {
                Some("simplify the pattern".into())
            }
            RegexError::TooManyGroups { .. } => {
                Some("write `(?:…)` for a group that needs no capture".into())
            }
            RegexError::RustOnly { instead, .. } => Some(instead.clone()),
            RegexError::Unsupported { instead, .. } | RegexError::Invalid { instead, .. } => {
                Some((*instead).into())
            }
            RegexError::Engine(_) => None,
        }
    }
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.what())?;
        if let Some(i) = self.instead() {
            write!(f, "; {i}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RegexError {}

/// JavaScript's `.`: anything but a line terminator.
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
/// JavaScript's `\s` (WhiteSpace and LineTerminator, Unicode's Zs
/// included), as class items; regex-lite's `\s` is ASCII only.
const SPACE: &str = r"\t\n\x0B\x0C\r\x20\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
/// Everything [`SPACE`] leaves out, for `\S` inside a class (regex-lite
/// has no nested classes to negate it in place).
const NOT_SPACE: &str = r"\x00-\x08\x0E-\x1F\x21-\x9F\x{A1}-\x{167F}\x{1681}-\x{1FFF}\x{200B}-\x{2027}\x{202A}-\x{202E}\x{2030}-\x{205E}\x{2060}-\x{2FFF}\x{3001}-\x{FEFE}\x{FF00}-\x{10FFFF}";
/// A `[]`: matches nothing (a position is never both a boundary and not).
const NOTHING: &str = r"(?:\b\B)";
/// A `[^]`: any character at all.
const ANYTHING: &str = r"(?s:.)";
/// Counted repetition beyond this is refused up front rather than left to
/// the program-size limit (JavaScript accepts any count).
const MAX_COUNT: u32 = 100_000;

/// What to write for `(?i)`: filtrex offers no case-insensitive match.
const CASE_ADVICE: &str = "for case-insensitive matching list both cases, `[Pp]ull`, or the \
    spellings, `pull|Pull|PULL` (filtrex has no regex flags and no lower-casing function)";

/// What the last item written can take: a quantifier needs an atom.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Start, or just after `(` or `|`.
    Nothing,
    /// `^`, `$`, `\b`, `\B`: JavaScript does not repeat assertions.
    Assertion,
    /// A character, class, `.` or group.
    Atom,
    /// A character outside the Basic Multilingual Plane: two UTF-16 units
    /// to JavaScript, which repeats only the second; where it was written.
    Astral(usize),
    /// An atom with its quantifier.
    Quantified,
}

/// One item of a character class.
enum Item {
    /// One character (ranges are kept apart, as pairs).
    Char(char),
    /// Pre-written class items (`\d`, the expansion of `\s`).
    Raw(&'static str),
}

/// The pattern being read and the Rust pattern being written.
struct Translator<'a> {
    /// The JavaScript pattern, as characters.
    c: &'a [char],
    /// The next character to read.
    i: usize,
    /// The regex-lite pattern so far.
    out: String,
    /// Capturing groups in the whole pattern: `\N` up to it is a backreference.
    groups: usize,
    /// Whether the pattern has named groups, which makes `\k` a backreference.
    named: bool,
    /// Group names seen so far (JavaScript refuses a repeated one).
    names: Vec<String>,
}

/// Rewrites a JavaScript pattern (as filtrex passes it to `RegExp`) in
/// regex-lite's syntax with the same meaning, or says why it cannot.
pub fn translate(pattern: &str) -> Result<String, RegexError> {
    let chars: Vec<char> = pattern.chars().collect();
    let (groups, named) = count_groups(&chars);
    // The matcher keeps a slot per capture group for every state, so
    // groups times states is its memory.
    if groups > super::MAX_GROUPS {
        return Err(RegexError::TooManyGroups { groups });
    }
    let mut t = Translator {
        c: &chars,
        i: 0,
        out: String::with_capacity(pattern.len() * 2),
        groups,
        named,
        names: Vec::new(),
    };
    t.run()?;
    Ok(t.out)
}

/// Capturing groups and whether any is named, as JavaScript counts them
/// before parsing (a backreference may name a later group).
fn count_groups(c: &[char]) -> (usize, bool) {
    let (mut n, mut named, mut i, mut class) = (0, false, 0, false);
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '[' if !class => {
                class = true;
                // A `]` first (after an optional `^`) ends an empty class.
                if c.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if c.get(i + 1) == Some(&']') {
                    i += 1;
                    class = false;
                }
            }
            ']' if class => class = false,
            '(' if !class => {
                if c.get(i + 1) != Some(&'?') {
                    n += 1;
                } else if c.get(i + 2) == Some(&'<') && !matches!(c.get(i + 3), Some('=' | '!')) {
                    n += 1;
                    named = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (n, named)
}

fn is_octal(c: Option<&char>) -> bool {
    matches!(c, Some('0'..='7'))
}

fn hex_value(c: &[char]) -> Option<u32> {
    c.iter()
        .try_fold(0u32, |v, ch| Some(v * 16 + ch.to_digit(16)?))
}

/// What a literal character written at `at` leaves for a quantifier.
fn literal(ch: char, at: usize) -> Last {
    if ch as u32 > 0xFFFF {
        Last::Astral(at)
    } else {
        Last::Atom
    }
}

/// A literal character outside a class, in Rust's syntax: metacharacters
/// escaped, controls and spaces as `\x{…}` (never `\<`/`\>`, which are
/// word boundaries in Rust).
fn push_literal(out: &mut String, ch: char) {
    push_escaped(out, ch, "\\.+*?()|[]{}^$#&-~");
}

/// A literal character inside a class: also `[`, `]`, `^`, `-`, `&`, `~`,
/// which Rust's classes give meanings (nesting, ranges, set operations).
fn push_class_literal(out: &mut String, ch: char) {
    push_escaped(out, ch, "\\[]^-&~");
}

/// `ch`, backslashed when it is one of `special`, as `\x{…}` when it is a
/// control or a space.
fn push_escaped(out: &mut String, ch: char, special: &str) {
    if special.contains(ch) {
        out.push('\\');
        out.push(ch);
    } else if ch.is_control() || ch.is_whitespace() {
        out.push_str(&format!("\\x{{{:X}}}", ch as u32));
    } else {
        out.push(ch);
    }
}

impl Translator<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.c.get(self.i + ahead).copied()
    }

    /// The pattern's characters `from..to`, clamped to the pattern (a
    /// construct cut short by the end is quoted as far as it goes).
    fn text(&self, from: usize, to: usize) -> String {
        let to = to.min(self.c.len());
        self.c[from.min(to)..to].iter().collect()
    }

    fn invalid(&self, at: usize, message: &'static str, instead: &'static str) -> RegexError {
        RegexError::Invalid {
            at: at + 1,
            message,
            instead,
        }
    }

    fn run(&mut self) -> Result<(), RegexError> {
        let mut last = Last::Nothing;
        // Where each open group began, for "unterminated group".
        let mut open: Vec<usize> = Vec::new();
        while let Some(ch) = self.peek(0) {
            let at = self.i;
            match ch {
                '(' => {
                    self.group_start()?;
                    open.push(at);
                    last = Last::Nothing;
                }
                ')' => {
                    if open.pop().is_none() {
                        return Err(self.invalid(
                            at,
                            "unmatched `)`",
                            "write `\\)` to match the character",
                        ));
                    }
                    self.out.push(')');
                    self.i += 1;
                    last = Last::Atom;
                }
                '|' => {
                    self.out.push('|');
                    self.i += 1;
                    last = Last::Nothing;
                }
                '^' | '$' => {
                    self.out.push(ch);
                    self.i += 1;
                    last = Last::Assertion;
                }
                '.' => {
                    self.out.push_str(DOT);
                    self.i += 1;
                    last = Last::Atom;
                }
                '*' | '+' | '?' => {
                    self.check_repeatable(at, last)?;
                    self.out.push(ch);
                    self.i += 1;
                    self.lazy();
                    last = Last::Quantified;
                }
                '{' => {
                    if let Some((text, len)) = self.braced_quantifier(at)? {
                        self.check_repeatable(at, last)?;
                        self.out.push_str(&text);
                        self.i += len;
                        self.lazy();
                        last = Last::Quantified;
                    } else {
                        // Annex B: a `{` that starts no quantifier is itself.
                        push_literal(&mut self.out, '{');
                        self.i += 1;
                        last = Last::Atom;
                    }
                }
                '[' => {
                    self.class()?;
                    last = Last::Atom;
                }
                '\\' => last = self.escape()?,
                _ => {
                    push_literal(&mut self.out, ch);
                    self.i += 1;
                    last = literal(ch, at);
                }
            }
        }
        if let Some(&at) = open.last() {
            return Err(self.invalid(
                at,
                "unterminated group: this `(` is never closed",
                "close it with `)`, or write `\\(` to match the character",
            ));
        }
        Ok(())
    }

    fn check_repeatable(&self, at: usize, last: Last) -> Result<(), RegexError> {
        match last {
            Last::Atom => Ok(()),
            Last::Astral(from) => Err(RegexError::Unsupported {
                at: at + 1,
                construct: self.text(from, at + 1),
                what: "quantifier on a character outside the Basic Multilingual Plane (it \
                       repeats only the character's second UTF-16 half there)",
                instead: "put the character in a group to repeat all of it: `(?:😀)+`",
            }),
            _ => Err(self.invalid(
                at,
                "nothing to repeat (a quantifier must follow a character, class or group, \
                 and only one)",
                "escape it to match the character: `\\*`, `\\+`, `\\?`, `\\{`",
            )),
        }
    }

    /// A `?` after a quantifier makes it lazy, in both syntaxes.
    fn lazy(&mut self) {
        if self.peek(0) == Some('?') {
            self.out.push('?');
            self.i += 1;
        }
    }

    /// `{n}`, `{n,}` or `{n,m}` at `at`: its Rust text and length; None
    /// when the `{` starts no quantifier (then JavaScript reads it as text).
    fn braced_quantifier(&self, at: usize) -> Result<Option<(String, usize)>, RegexError> {
        let digits = |from: usize| {
            let mut j = from;
            while self.c.get(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
            }
            j
        };
        let number = |from: usize, to: usize| -> u32 {
            self.c[from..to].iter().fold(0u32, |v, d| {
                v.saturating_mul(10)
                    .saturating_add(d.to_digit(10).unwrap_or(0))
            })
        };
        let a_end = digits(at + 1);
        if a_end == at + 1 {
            // `{,3}` is Rust's "at most 3"; JavaScript reads it as text.
            let b_end = digits(at + 2);
            if self.c.get(at + 1) == Some(&',') && b_end > at + 2 && self.c.get(b_end) == Some(&'}')
            {
                return Err(RegexError::RustOnly {
                    at: at + 1,
                    construct: self.text(at, b_end + 1),
                    javascript: "where it is just the text (no quantifier has an empty minimum)",
                    instead: format!("write `{{0,{}}}`", clip(&self.text(at + 2, b_end))),
                });
            }
            return Ok(None);
        }
        let min = number(at + 1, a_end);
        let (max, end) = match self.c.get(a_end) {
            Some('}') => (Some(min), a_end),
            Some(',') => {
                let b_end = digits(a_end + 1);
                if self.c.get(b_end) != Some(&'}') {
                    return Ok(None);
                }
                if b_end == a_end + 1 {
                    (None, b_end)
                } else {
                    (Some(number(a_end + 1, b_end)), b_end)
                }
            }
            _ => return Ok(None),
        };
        if max.is_some_and(|m| m < min) {
            return Err(self.invalid(
                at,
                "numbers out of order in a {} quantifier",
                "write the smaller number first, as in `{2,3}`",
            ));
        }
        if min > MAX_COUNT || max.is_some_and(|m| m > MAX_COUNT) {
            return Err(RegexError::TooLarge);
        }
        let text = match max {
            Some(m) if m == min => format!("{{{min}}}"),
            Some(m) => format!("{{{min},{m}}}"),
            None => format!("{{{min},}}"),
        };
        Ok(Some((text, end + 1 - at)))
    }

    fn group_start(&mut self) -> Result<(), RegexError> {
        let at = self.i;
        if self.peek(1) != Some('?') {
            self.out.push('(');
            self.i += 1;
            return Ok(());
        }
        let look = |what: &'static str| RegexError::Unsupported {
            at: at + 1,
            construct: self.text(at, at + if what.contains("behind") { 4 } else { 3 }) + "…)",
            what,
            instead: "test the text twice instead, e.g. `Phase ~= \"^pull\" and not (Phase ~= \
                      \"pull1\")`",
        };
        match (self.peek(2), self.peek(3)) {
            (Some(':'), _) => {
                self.out.push_str("(?:");
                self.i += 3;
                Ok(())
            }
            (Some('='), _) => Err(look("look-ahead")),
            (Some('!'), _) => Err(look("negative look-ahead")),
            (Some('<'), Some('=')) => Err(look("look-behind")),
            (Some('<'), Some('!')) => Err(look("negative look-behind")),
            (Some('<'), _) => {
                let from = at + 3;
                let mut j = from;
                while self.c.get(j).is_some_and(|&c| c != '>' && c != ')') {
                    j += 1;
                }
                let name = self.text(from, j);
                let valid = self.c.get(j) == Some(&'>')
                    && name
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
                if !valid {
                    return Err(self.invalid(
                        at,
                        "invalid capture group name",
                        "a name is letters, digits, `_` and `$`, not starting with a digit: \
                         `(?<gear>…)`",
                    ));
                }
                if self.names.contains(&name) {
                    return Err(self.invalid(
                        at,
                        "duplicate capture group name",
                        "give each named group its own name",
                    ));
                }
                self.names.push(name);
                // A capture all the same; its name is never used.
                self.out.push('(');
                self.i = j + 1;
                Ok(())
            }
            (Some('P'), Some('<')) => Err(RegexError::RustOnly {
                at: at + 1,
                construct: self.text(at, at + 4) + "…>",
                javascript: "which rejects it (an invalid group)",
                instead: "write a named group as `(?<name>…)`, or just `(…)`".into(),
            }),
            (Some(f), _) if f.is_ascii_alphabetic() || f == '-' => {
                // Inline flags: `(?i)`, `(?is:…)`, `(?-m)`.
                let mut j = at + 2;
                while self
                    .c
                    .get(j)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '-')
                {
                    j += 1;
                }
                if !matches!(self.c.get(j), Some(')' | ':')) {
                    return Err(self.invalid_group(at));
                }
                let flags = self.text(at + 2, j);
                Err(RegexError::RustOnly {
                    at: at + 1,
                    construct: self.text(at, j + 1) + if self.c[j] == ':' { "…)" } else { "" },
                    javascript: "which has no inline flags (it rejects this as an invalid group) \
                                 and filtrex passes it none",
                    instead: flag_advice(&flags),
                })
            }
            _ => Err(self.invalid_group(at)),
        }
    }

    fn invalid_group(&self, at: usize) -> RegexError {
        self.invalid(
            at,
            "invalid group: `(?` must be followed by `:`, `<name>`, `=`, `!`, `<=` or `<!`",
            "write `(?:…)` for a group, or `\\(` to match the character",
        )
    }

    /// An escape outside a class; returns what it leaves for a quantifier.
    fn escape(&mut self) -> Result<Last, RegexError> {
        let at = self.i;
        let Some(e) = self.peek(1) else {
            return Err(self.invalid(
                at,
                "`\\` at the end of the pattern",
                "write `\\\\` to match a backslash",
            ));
        };
        self.i += 2;
        match e {
            'd' | 'D' | 'w' | 'W' | 't' | 'n' | 'v' | 'f' | 'r' => {
                self.out.push('\\');
                self.out.push(e);
            }
            's' => self.out.push_str(&format!("[{SPACE}]")),
            'S' => self.out.push_str(&format!("[^{SPACE}]")),
            'b' if self.peek(0) == Some('{') => {
                let end = (self.i..self.c.len())
                    .find(|&j| self.c[j] == '}')
                    .map_or(self.c.len(), |j| j + 1);
                return Err(RegexError::RustOnly {
                    at: at + 1,
                    construct: self.text(at, end),
                    javascript: "where it is a word boundary followed by the text in braces",
                    instead: "write `\\b` for a word boundary".into(),
                });
            }
            'b' | 'B' => {
                self.out.push('\\');
                self.out.push(e);
                return Ok(Last::Assertion);
            }
            '1'..='9' => {
                let mut j = self.i;
                while self.c.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                let n: usize = self.text(at + 1, j).parse().unwrap_or(usize::MAX);
                if n <= self.groups {
                    return Err(RegexError::Unsupported {
                        at: at + 1,
                        construct: self.text(at, j),
                        what: "backreference",
                        instead: "write the repeated text out, or test for it with a second \
                                  `~=`",
                    });
                }
                self.i -= 1;
                let ch = self.legacy_octal_or_digit();
                push_literal(&mut self.out, ch);
            }
            '0' => {
                self.i -= 1;
                let ch = self.legacy_octal_or_digit();
                push_literal(&mut self.out, ch);
            }
            'k' if self.named => {
                return Err(RegexError::Unsupported {
                    at: at + 1,
                    construct: self.text(
                        at,
                        (at + 2..self.c.len())
                            .find(|&j| self.c[j] == '>')
                            .map_or(self.c.len(), |j| j + 1),
                    ),
                    what: "named backreference",
                    instead: "write the repeated text out, or test for it with a second `~=`",
                });
            }
            'c' => match self.peek(0) {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.i += 1;
                    push_literal(&mut self.out, char::from(l as u8 % 32));
                }
                // Annex B: a `\c` that starts no control escape is a
                // backslash; the `c` is read again as itself.
                _ => {
                    self.i -= 1;
                    push_literal(&mut self.out, '\\');
                }
            },
            'x' | 'u' => {
                let ch = self.hex_escape(at, e)?;
                push_literal(&mut self.out, ch);
                return Ok(literal(ch, at));
            }
            _ => {
                let ch = self.identity(at, e, false)?;
                push_literal(&mut self.out, ch);
                return Ok(literal(ch, at));
            }
        }
        Ok(Last::Atom)
    }

    /// After a `\` at `self.i - 1`… reads, at `self.i`, a legacy octal escape
    /// (Annex B: up to three octal digits, at most `\377`) or, for `8` and
    /// `9`, the digit itself.
    fn legacy_octal_or_digit(&mut self) -> char {
        let d0 = self.c[self.i];
        self.i += 1;
        let Some(mut v) = d0.to_digit(8) else {
            return d0;
        };
        if is_octal(self.c.get(self.i)) {
            v = v * 8 + self.c[self.i].to_digit(8).unwrap_or(0);
            self.i += 1;
            if d0 <= '3' && is_octal(self.c.get(self.i)) {
                v = v * 8 + self.c[self.i].to_digit(8).unwrap_or(0);
                self.i += 1;
            }
        }
        char::from_u32(v).unwrap_or('\0')
    }

    /// `\xHH`, `\uHHHH` (with a following low surrogate, one character),
    /// or, when no hex digits follow, the letter itself (Annex B). `e` is
    /// `x` or `u`, `self.i` is just after it.
    fn hex_escape(&mut self, at: usize, e: char) -> Result<char, RegexError> {
        let width = if e == 'x' { 2 } else { 4 };
        if self.peek(0) == Some('{') {
            let end = (self.i..self.c.len())
                .find(|&j| self.c[j] == '}')
                .map_or(self.c.len(), |j| j + 1);
            let hex = self.text(self.i + 1, end - 1);
            return Err(RegexError::RustOnly {
                at: at + 1,
                construct: self.text(at, end),
                javascript: if e == 'x' {
                    "where it is the letter x repeated (or followed by the text in braces)"
                } else {
                    "where (without the u flag, which filtrex does not set) it is the letter u \
                     repeated"
                },
                instead: match u32::from_str_radix(&hex, 16) {
                    Ok(v) if v <= 0xFF => format!("write `\\x{v:02X}`"),
                    Ok(v) if v <= 0xFFFF => format!("write `\\u{v:04X}`"),
                    _ => "write the character itself".into(),
                },
            });
        }
        let Some(v) = self.c.get(self.i..self.i + width).and_then(hex_value) else {
            return Ok(e);
        };
        self.i += width;
        if (0xD800..0xDC00).contains(&v)
            && self.peek(0) == Some('\\')
            && self.peek(1) == Some('u')
            && let Some(lo) = self
                .c
                .get(self.i + 2..self.i + 6)
                .and_then(hex_value)
                .filter(|lo| (0xDC00..0xE000).contains(lo))
        {
            self.i += 6;
            let joined = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            return Ok(char::from_u32(joined).unwrap_or('\u{FFFD}'));
        }
        char::from_u32(v).ok_or_else(|| RegexError::Unsupported {
            at: at + 1,
            construct: self.text(at, self.i),
            what: "lone UTF-16 surrogate",
            instead: "write the whole character, or both halves of its surrogate pair",
        })
    }

    /// A `\` + `e` with no escape meaning in JavaScript: the character
    /// itself (Annex B), unless Rust gives it a meaning a user may have
    /// intended, which is refused rather than silently read as a letter.
    fn identity(&self, at: usize, e: char, in_class: bool) -> Result<char, RegexError> {
        let rust = |javascript: &'static str, instead: String| RegexError::RustOnly {
            at: at + 1,
            construct: format!("\\{e}"),
            javascript,
            instead,
        };
        match e {
            'A' if !in_class => Err(rust(
                "where `\\A` is just the letter A",
                "write `^` for the start of the text".into(),
            )),
            'z' if !in_class => Err(rust(
                "where `\\z` is just the letter z",
                "write `$` for the end of the text".into(),
            )),
            '<' | '>' if !in_class => Err(rust(
                "where it is just the character",
                format!(
                    "write `\\b` for a word boundary, or `{e}` for the character (no backslash)"
                ),
            )),
            'a' => Err(rust(
                "where `\\a` is just the letter a",
                "write `\\x07` for the bell character, or `a` for the letter".into(),
            )),
            'p' | 'P' => Err(rust(
                "where (without the u flag, which filtrex does not set) it is just the letter",
                "write the characters as a class instead, e.g. `[A-Za-z]` for letters, \
                 `\\d` for digits"
                    .into(),
            )),
            'U' => Err(rust(
                "where `\\U` is just the letter U",
                "write `\\uHHHH` (four hex digits), or the character itself".into(),
            )),
            _ => Ok(e),
        }
    }

    fn class(&mut self) -> Result<(), RegexError> {
        let start = self.i;
        self.i += 1;
        let negated = self.peek(0) == Some('^');
        if negated {
            self.i += 1;
        }
        if self.peek(0) == Some(']') {
            // JavaScript: `[]` matches nothing and `[^]` anything.
            self.out.push_str(if negated { ANYTHING } else { NOTHING });
            self.i += 1;
            return Ok(());
        }
        let mut items: Vec<Item> = Vec::new();
        let mut ranges: Vec<(char, char)> = Vec::new();
        loop {
            let Some(ch) = self.peek(0) else {
                return Err(self.invalid(
                    start,
                    "unterminated character class: this `[` is never closed",
                    "close it with `]`, or write `\\[` to match the character",
                ));
            };
            if ch == ']' {
                self.i += 1;
                break;
            }
            self.rust_class_syntax(start)?;
            let first = self.class_atom()?;
            // `a-z` is a range; Annex B keeps `-` literal next to a class
            // escape (`[\d-z]`), and at either end.
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|c| c != ']') {
                let dash = self.i;
                self.i += 1;
                let second = self.class_atom()?;
                match (first, second) {
                    (Item::Char(a), Item::Char(b)) => {
                        if a > b {
                            return Err(self.invalid(
                                dash,
                                "range out of order in character class",
                                "put the lower character first, or write `\\-` to match `-`",
                            ));
                        }
                        ranges.push((a, b));
                    }
                    (a, b) => {
                        items.push(a);
                        items.push(Item::Char('-'));
                        items.push(b);
                    }
                }
            } else {
                items.push(first);
            }
        }
        self.out.push('[');
        if negated {
            self.out.push('^');
        }
        for (a, b) in ranges {
            push_class_literal(&mut self.out, a);
            self.out.push('-');
            push_class_literal(&mut self.out, b);
        }
        for item in items {
            match item {
                Item::Char(c) => push_class_literal(&mut self.out, c),
                Item::Raw(r) => self.out.push_str(r),
            }
        }
        self.out.push(']');
        Ok(())
    }

    /// Rust's class syntax that JavaScript reads as plain characters:
    /// POSIX classes, nested classes and the set operators `&&`, `--`, `~~`.
    fn rust_class_syntax(&self, class_start: usize) -> Result<(), RegexError> {
        let at = self.i;
        let here = |n: usize| self.text(at, at + n);
        if self.peek(0) == Some('[') {
            if self.peek(1) == Some(':')
                && let Some(end) = (at + 2..self.c.len().saturating_sub(1))
                    .find(|&j| self.c[j] == ':' && self.c[j + 1] == ']')
            {
                let name = self.text(at + 2, end);
                return Err(RegexError::RustOnly {
                    at: at + 1,
                    construct: self.text(at, end + 2),
                    javascript: "where it is a set of characters followed by a literal `]`",
                    instead: format!("write {}", posix_equivalent(&name)),
                });
            }
            return Err(RegexError::RustOnly {
                at: at + 1,
                construct: "[".into(),
                javascript: "where a `[` inside a class is the character itself and classes do \
                             not nest",
                instead: "write `\\[` to match the character, or merge the classes into one: \
                          `[a-z0-9]`"
                    .into(),
            });
        }
        let pair = here(2);
        let set_op = match pair.as_str() {
            "&&" => Some("intersection"),
            "~~" => Some("symmetric difference"),
            // `--]` (a range ending in `-`, or two dashes) is JavaScript.
            "--" if at > class_start + 1 && self.peek(2).is_some_and(|c| c != ']') => {
                Some("difference")
            }
            _ => None,
        };
        if let Some(op) = set_op {
            return Err(RegexError::RustOnly {
                at: at + 1,
                construct: pair.clone(),
                javascript: "where it is two characters in the class",
                instead: format!(
                    "`{pair}` is Rust's class {op}: list the characters you want instead \
                     (`[b-df-hj-np-tv-z]`), or escape them (`\\{}\\{}`) to match them",
                    &pair[..1],
                    &pair[1..]
                ),
            });
        }
        Ok(())
    }

    /// One character or class escape inside `[…]`.
    fn class_atom(&mut self) -> Result<Item, RegexError> {
        let at = self.i;
        let ch = self.c[at];
        self.i += 1;
        if ch != '\\' {
            return Ok(Item::Char(ch));
        }
        let Some(e) = self.peek(0) else {
            return Err(self.invalid(
                at,
                "`\\` at the end of the pattern",
                "write `\\\\` to match a backslash",
            ));
        };
        self.i += 1;
        Ok(match e {
            'd' => Item::Raw(r"\d"),
            'D' => Item::Raw(r"\D"),
            'w' => Item::Raw(r"\w"),
            'W' => Item::Raw(r"\W"),
            's' => Item::Raw(SPACE),
            'S' => Item::Raw(NOT_SPACE),
            'b' => Item::Char('\u{8}'),
            't' => Item::Char('\t'),
            'n' => Item::Char('\n'),
            'v' => Item::Char('\u{B}'),
            'f' => Item::Char('\u{C}'),
            'r' => Item::Char('\r'),
            '0'..='9' => {
                self.i -= 1;
                Item::Char(self.legacy_octal_or_digit())
            }
            'c' => match self.peek(0) {
                // Annex B also takes digits and `_` inside a class.
                Some(l) if l.is_ascii_alphanumeric() || l == '_' => {
                    self.i += 1;
                    Item::Char(char::from(l as u8 % 32))
                }
                _ => {
                    self.i -= 1;
                    Item::Char('\\')
                }
            },
            'x' | 'u' => Item::Char(self.hex_escape(at, e)?),
            'k' if self.named => {
                return Err(self.invalid(
                    at,
                    "invalid escape `\\k` in a class of a pattern with named groups",
                    "write `k` for the letter",
                ));
            }
            _ => Item::Char(self.identity(at, e, true)?),
        })
    }
}

/// Advice for inline flags, one sentence per flag.
fn flag_advice(flags: &str) -> String {
    let mut advice: Vec<&str> = Vec::new();
    for f in flags.chars() {
        let a = match f {
            'i' => CASE_ADVICE,
            's' => "for any character including a line break write `[\\s\\S]`",
            'm' => {
                "there is no multi-line mode: `^` and `$` match at the start and end of the \
                    whole text"
            }
            'x' => "write the pattern without the spaces and comments",
            'U' => "make each quantifier lazy instead: `*?`, `+?`",
            '-' => continue,
            _ => "remove the flag",
        };
        if !advice.contains(&a) {
            advice.push(a);
        }
    }
    if advice.is_empty() {
        advice.push("remove the flag group");
    }
    advice.join("; ")
}

/// What JavaScript users write for a POSIX class.
fn posix_equivalent(name: &str) -> String {
    match name {
        "alpha" => "`[A-Za-z]`".into(),
        "digit" => "`\\d` or `[0-9]`".into(),
        "alnum" => "`[A-Za-z0-9]`".into(),
        "upper" => "`[A-Z]`".into(),
        "lower" => "`[a-z]`".into(),
        "space" => "`\\s`".into(),
        "xdigit" => "`[0-9A-Fa-f]`".into(),
        "word" => "`\\w`".into(),
        "punct" => "the punctuation as a class, e.g. `[!-/:-@\\[-`{-~]`".into(),
        _ => "the characters as a class, e.g. `[A-Za-z0-9]`".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Filter, compile_regex};
    use super::*;
    use crate::column::Column;

    /// Whether `pattern` matches `subject` here.
    fn test(pattern: &str, subject: &str) -> bool {
        compile_regex(pattern)
            .unwrap_or_else(|e| panic!("{pattern:?}: {e}"))
            .is_match(subject)
    }

    /// `RegExp(pattern).test(subject)` as Node.js 20 (V8, the engine
    /// filtrex 3.1.0 runs on) answered; each of these was refused or
    /// answered differently when patterns went to regex-lite as written.
    #[test]
    fn patterns_mean_what_they_mean_in_javascript() {
        for (pattern, subject, node) in [
            ("[^]", "\n", true),
            ("[]", "a", false),
            ("a{", "a{", true),
            ("{", "{", true),
            ("a{2,3", "a{2,3", true),
            ("\\cJ", "\n", true),
            ("\\c1", "\\c1", true),
            ("[\\c1]", "\u{11}", true),
            ("\\0", "\0", true),
            ("\\012", "\n", true),
            ("\\400", " 0", true),
            ("\\18", "\u{1}8", true),
            ("\\8", "8", true),
            ("\\y", "y", true),
            ("\\k", "k", true),
            ("\\x", "x", true),
            ("[\\d-z]", "-", true),
            ("[\\b]", "\u{8}", true),
            (".", "\r", false),
            (".", "\u{2028}", false),
            ("\\s", "\u{A0}", true),
            ("\\S", "\u{FEFF}", false),
            ("[\\S]", "\u{FEFF}", false),
            ("[^\\s]", "\u{A0}", false),
            ("\\uD83D\\uDE00", "😀", true),
            ("[+--]", ",", true),
            ("[--]", "-", true),
            ("(?<n>a)b", "ab", true),
        ] {
            assert_eq!(test(pattern, subject), node, "{pattern:?} on {subject:?}");
        }
        // What both syntaxes share keeps working.
        for (pattern, subject, node) in [
            ("^pull", "pull1", true),
            ("PULL", "pull1", false),
            ("^(idle|decel)$", "decel", true),
            ("l{2}", "pull", true),
            ("\\w+\\s\\d", "ab 1", true),
            ("[^a-c]", "b", false),
            ("\\x41\\u0042", "AB", true),
            ("\\/\\.", "/.", true),
            ("x{1}?]}", "x]}", true),
            ("", "anything", true),
        ] {
            assert_eq!(test(pattern, subject), node, "{pattern:?} on {subject:?}");
        }
    }

    /// The construct and the advice each Rust-only form gets.
    #[test]
    fn rust_only_syntax_is_refused_with_what_to_write() {
        for (pattern, construct, advice) in [
            ("(?i)pull", "`(?i)`", "[Pp]ull"),
            ("(?i:pull)", "`(?i:…)`", "pull|Pull|PULL"),
            ("(?s)a.b", "`(?s)`", "[\\s\\S]"),
            ("(?m)^a", "`(?m)`", "no multi-line mode"),
            ("(?x) a b", "`(?x)`", "without the spaces"),
            ("(?U)a+", "`(?U)`", "lazy"),
            ("(?P<gear>\\d)", "`(?P<…>`", "(?<name>…)"),
            ("\\Apull", "`\\A`", "`^`"),
            ("pull\\z", "`\\z`", "`$`"),
            ("\\<pull", "`\\<`", "`\\b`"),
            ("\\b{start}pull", "`\\b{start}`", "`\\b`"),
            ("[[:alpha:]]+", "`[:alpha:]`", "`[A-Za-z]`"),
            ("[a[b]]", "`[`", "`\\[`"),
            ("[a-z&&[^p]]", "`&&`", "intersection"),
            ("[a-z--p]", "`--`", "difference"),
            ("[a~~b]", "`~~`", "symmetric difference"),
            ("\\pL", "`\\p`", "`[A-Za-z]`"),
            ("\\x{41}", "`\\x{41}`", "`\\x41`"),
            ("\\u{263A}", "`\\u{263A}`", "`\\u263A`"),
            ("\\U0001F600", "`\\U`", "`\\uHHHH`"),
            ("\\a", "`\\a`", "`\\x07`"),
            ("a{,3}", "`{,3}`", "`{0,3}`"),
        ] {
            let e = compile_regex(pattern).unwrap_err();
            assert!(matches!(e, RegexError::RustOnly { .. }), "{pattern}: {e:?}");
            let text = e.to_string();
            assert!(
                text.contains(construct) && text.contains("JavaScript") && text.contains(advice),
                "{pattern}: {text}"
            );
        }
        // The position is the construct's.
        assert!(matches!(
            compile_regex("^pull(?i)").unwrap_err(),
            RegexError::RustOnly { at: 6, .. }
        ));
    }

    #[test]
    fn javascript_this_engine_cannot_run_is_named() {
        for (pattern, what) in [
            ("(?=a)b", "look-ahead"),
            ("a(?!b)", "negative look-ahead"),
            ("(?<=a)b", "look-behind"),
            ("(?<!a)b", "negative look-behind"),
            ("(a)\\1", "backreference"),
            ("(?<n>a)\\k<n>", "named backreference"),
            ("\\uD83D", "lone UTF-16 surrogate"),
            ("😀+", "quantifier on a character outside"),
            ("\\uD83D\\uDE00*", "quantifier on a character outside"),
        ] {
            let e = compile_regex(pattern).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, RegexError::Unsupported { what: w, .. } if w.starts_with(what))
                    && text.contains("filtrex runs but this regex engine cannot")
                    && e.instead().is_some(),
                "{pattern}: {text}"
            );
        }
    }

    /// Patterns JavaScript rejects too: refused, saying what to write.
    #[test]
    fn invalid_in_javascript_is_invalid_here() {
        for (pattern, message) in [
            ("a**", "nothing to repeat"),
            ("*a", "nothing to repeat"),
            ("^*", "nothing to repeat"),
            ("\\b+", "nothing to repeat"),
            ("a|{2}", "nothing to repeat"),
            ("(a", "unterminated group"),
            ("a)", "unmatched `)`"),
            ("[a", "unterminated character class"),
            ("[z-a]", "range out of order"),
            ("a{3,2}", "numbers out of order"),
            ("a\\", "at the end of the pattern"),
            ("(?<1a>x)", "invalid capture group name"),
            ("(?<a>x)(?<a>y)", "duplicate capture group name"),
            ("(?#note)", "invalid group"),
        ] {
            let e = compile_regex(pattern).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, RegexError::Invalid { .. })
                    && text.contains(message)
                    && text.contains("rejects it too")
                    && e.instead().is_some(),
                "{pattern}: {text}"
            );
        }
    }

    /// Issue 38 item 15: `"Pull" ~= "(?i)pull"` matched here while filtrex
    /// rejects the pattern; now it is a compile error with the advice on
    /// its own line, and a pattern taken from a cell fails that row alike.
    #[test]
    fn the_filter_refuses_inline_flags_like_filtrex() {
        let e = Filter::compile("\"Pull\" ~= \"(?i)pull\"").err().unwrap();
        assert_eq!(e.position, 11, "at the pattern");
        assert!(
            e.message.contains("`(?i)`") && e.message.contains("JavaScript"),
            "{e}"
        );
        assert!(e.hint.as_deref().unwrap().contains("[Pp]ull"), "{e}");
        assert!(Filter::compile("\"Pull\" ~= \"[Pp]ull\"").is_ok());

        let mut phase = Column::new("Phase");
        let mut pattern = Column::new("Pattern");
        for (p, re) in [("Pull", "[Pp]ull"), ("Pull", "(?i)pull")] {
            phase.push_text(p);
            pattern.push_text(re);
        }
        let cols = vec![phase, pattern];
        let f = Filter::compile("Phase ~= Pattern").unwrap();
        let mut rows = Vec::new();
        let stats = f.bind(&cols).scan(0..2, |r| rows.push(r));
        assert_eq!(rows, [0]);
        assert_eq!(stats.error_rows, 1);
        let (row, message) = stats.first_error.unwrap();
        assert_eq!(row, 1);
        assert!(
            message.contains("`(?i)`") && message.contains("[Pp]ull"),
            "{message}"
        );
    }
}
