//! The URI templates of `@resource` (RFC 6570, the two forms MCP servers
//! use): `{var}` stands for one path segment (no `/`, `?` or `#`), `{+var}`
//! for the rest of a path (slashes included). Matching a URI against a
//! template gives the variables' values, percent-decoded, which become the
//! resource function's arguments.
//!
//! Which plugin may serve a URI is decided on two things this module
//! derives: its [`Namespace`] (scheme, and for a view its authority) and
//! its [`UriTemplate::shape`] (variable names erased), from which
//! [`UriTemplate::overlap`] finds a URI two templates would both answer.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    namespace: Namespace,
}

/// The scheme of views (MCP Apps), which every plugin's views share, so
/// that a view's namespace is its authority too.
pub const VIEW_SCHEME: &str = "ui";

/// The scheme of skills (MCP's skills extension), which every plugin's
/// skills share as views do: a skill's namespace is its authority too, the
/// first segment of its path (`skill://knock-diagnosis/`).
pub const SKILL_SCHEME: &str = "skill";

/// Whose a URI is: its scheme (`cp1600:`), and for a view (`ui://`, which
/// all views share) its authority too (`ui://benchtop/`). Both are compared
/// without case and percent-decoded, as RFC 3986 says they mean the same,
/// so `UI://Bench%74op/x` is in `ui://benchtop/` like `ui://benchtop/x`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace {
    scheme: String,
    /// The view's authority, for the view scheme only.
    authority: Option<String>,
}

impl Namespace {
    /// The word a plugin's name is compared with to own the namespace: the
    /// authority of a view namespace, else the scheme.
    pub fn key(&self) -> &str {
        self.authority.as_deref().unwrap_or(&self.scheme)
    }

    /// Whether it is a namespace of a scheme plugins share, named by its
    /// authority too (`ui://NAME/`, `skill://NAME/`).
    pub fn is_view(&self) -> bool {
        self.authority.is_some()
    }

    /// The scheme, e.g. `ui` or `cp1600`.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.authority {
            Some(a) => write!(f, "{}://{a}/", self.scheme),
            None => write!(f, "{}:", self.scheme),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A variable; `reserved` (`{+var}`) may span `/`.
    Var {
        name: String,
        reserved: bool,
    },
}

/// Why a template is not one benchtop can serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` without its `}`.
    #[error("a `{{` is never closed")]
    Unclosed,
    /// A variable name that is not `[a-z0-9_]+`.
    #[error("`{{{0}}}`: a variable is written `{{name}}` or `{{+name}}` with a snake_case name")]
    BadVariable(String),
    /// Two variables with nothing between them cannot be told apart.
    #[error("two variables must be separated by literal text (`{{a}}/{{b}}`)")]
    Adjacent,
    /// No `scheme:` in front.
    #[error("a resource URI starts with a scheme, such as `rom://` or `file:///`")]
    NoScheme,
    /// A view whose authority is missing, not literal, or not a plain word:
    /// the authority says whose view it is, so it cannot vary.
    #[error(
        "a view's URI is `ui://NAME/…` and a skill's `skill://NAME/…`, with NAME written out (letters, digits, `-`, `.`, `_`; no variable), since NAME says which plugin serves it"
    )]
    ViewNamespace,
}

impl UriTemplate {
    /// Parses `source`.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let scheme_end = source.find(':').ok_or(TemplateError::NoScheme)?;
        let scheme = &source[..scheme_end];
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(TemplateError::NoScheme);
        }
        let scheme = scheme.to_ascii_lowercase();
        let authority = match scheme == VIEW_SCHEME || scheme == SKILL_SCHEME {
            true => Some(view_authority(&source[scheme_end + 1..])?),
            false => None,
        };
        let namespace = Namespace { scheme, authority };
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or(TemplateError::Unclosed)? + open;
            let inner = &rest[open + 1..close];
            let (name, reserved) = match inner.strip_prefix('+') {
                Some(n) => (n, true),
                None => (inner, false),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(TemplateError::BadVariable(inner.to_owned()));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(TemplateError::Adjacent);
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            source: source.to_owned(),
            parts,
            namespace,
        })
    }

    /// Whose URIs it names: its scheme, and for a view its authority too.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The template with its variables' names erased (`{}` for a segment,
    /// `{+}` for a path): `cp1600://sessions/{id}/state` and
    /// `cp1600://sessions/{session_id}/state` have one shape, and so match
    /// exactly the same URIs. A fixed URI is its own shape. (A literal
    /// never holds `{`, so the marks cannot be confused with text.)
    pub fn shape(&self) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.as_str(),
                Part::Var {
                    reserved: false, ..
                } => "{}",
                Part::Var { reserved: true, .. } => "{+}",
            })
            .collect()
    }

    /// A URI that both `self` and `other` match, when one is found: two
    /// templates of one shape (whatever their variable names), a fixed URI
    /// that the other template matches, or two templates that can both
    /// match one URI (`a://{x}/b` and `a://c/{y}` both match `a://c/b`).
    ///
    /// The last case is a search over the two templates' characters and
    /// variables (a breadth-first walk of both at once, so the URI found is
    /// a shortest one); every URI it returns is confirmed with both
    /// [`Self::matches`], so an overlap reported is always real. It gives up
    /// (`None`) after [`SEARCH_BUDGET`] steps, which templates of ordinary
    /// length never reach.
    pub fn overlap(&self, other: &UriTemplate) -> Option<String> {
        self.overlap_within(other, &mut SEARCH_BUDGET.clone())
    }

    /// [`Self::overlap`], its search taking its steps from `budget` (which
    /// it decreases), so that a caller comparing many templates bounds the
    /// whole; once `budget` is spent only shapes and fixed URIs are
    /// compared.
    pub fn overlap_within(&self, other: &UriTemplate, budget: &mut usize) -> Option<String> {
        if self.shape() == other.shape() {
            // One shape is one set of URIs, so they overlap even in the odd
            // case of a template no URI can satisfy (then this example is
            // only what both were written to answer).
            return Some(self.example(other));
        }
        match (self.is_template(), other.is_template()) {
            (false, false) => None,
            (false, true) => other.matches(&self.source).map(|_| self.source.clone()),
            (true, false) => self.matches(&other.source).map(|_| other.source.clone()),
            (true, true) => shared_uri(self, other, budget),
        }
    }

    /// A URI of this template's shape, each variable one character that is
    /// in neither template's text (so that it cannot be mistaken for one).
    fn example(&self, other: &UriTemplate) -> String {
        let fresh = fresh_char(self, other).unwrap_or('x');
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.clone(),
                Part::Var { .. } => fresh.to_string(),
            })
            .collect()
    }

    /// The template as characters and variables, for [`shared_uri`].
    fn tokens(&self) -> Vec<Token> {
        self.parts
            .iter()
            .flat_map(|p| -> Vec<Token> {
                match p {
                    Part::Literal(l) => l.chars().map(Token::Char).collect(),
                    Part::Var {
                        reserved: false, ..
                    } => vec![Token::Segment],
                    Part::Var { reserved: true, .. } => vec![Token::Path],
                }
            })
            .collect()
    }

    fn literal_chars(&self) -> impl Iterator<Item = char> + '_ {
        self.parts.iter().flat_map(|p| match p {
            Part::Literal(l) => l.chars().collect::<Vec<_>>(),
            Part::Var { .. } => Vec::new(),
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether it has variables (else it is one fixed URI).
    pub fn is_template(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Var { .. }))
    }

    /// The variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` fits the template, percent-decoded.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var { name, reserved } => {
                    // The value runs to the next literal (the last one, for a
                    // reserved variable, so it may hold that literal too).
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) if *reserved => rest.rfind(next.as_str())?,
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || (!reserved && raw.contains(['/', '?', '#'])) {
                        return None;
                    }
                    values.push((name.clone(), percent_decode(raw)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// The authority of a view URI (what follows `ui:`), lowercased and
/// percent-decoded: it must be written out, since it says whose view it is.
fn view_authority(after_scheme: &str) -> Result<String, TemplateError> {
    let rest = after_scheme
        .strip_prefix("//")
        .ok_or(TemplateError::ViewNamespace)?;
    let raw = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = percent_decode(raw)
        .ok_or(TemplateError::ViewNamespace)?
        .to_ascii_lowercase();
    // Rules out variables (`{`), user info (`x@`), ports and escapes that
    // decode to separators alike.
    if authority.is_empty()
        || !authority
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    {
        return Err(TemplateError::ViewNamespace);
    }
    Ok(authority)
}

/// The steps (a pair of positions and a character read) that
/// [`UriTemplate::overlap`] may take looking for a URI two templates share:
/// far more than templates of ordinary length need (two like the longest
/// first-party ones, `x86://machines/{machine}/memory/…`, take a few
/// hundred), few enough that a hostile plugin's huge templates cannot stall
/// loading (a few tenths of a second in a debug build).
pub const SEARCH_BUDGET: usize = 200_000;

/// One step of a template: a literal character, or a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `{var}`: one or more characters other than `/`, `?`, `#`.
    Segment,
    /// `{+var}`: one or more characters.
    Path,
}

/// Where a walk is in a template: the token, and whether the variable
/// there has taken at least one character (a variable takes one or more).
type Pos = (usize, bool);

/// The positions reached from `pos` by reading `c` (at most two).
fn step(tokens: &[Token], (i, taken): Pos, c: char) -> [Option<Pos>; 2] {
    let read = |i: usize, taken: bool| match tokens.get(i)? {
        Token::Char(x) => (!taken && *x == c).then_some((i + 1, false)),
        Token::Segment => (!matches!(c, '/' | '?' | '#')).then_some((i, true)),
        Token::Path => Some((i, true)),
    };
    // A variable that has taken a character may also end here (templates
    // never put two variables side by side, so it ends before a literal
    // character or the end).
    [read(i, taken), taken.then(|| read(i + 1, false)).flatten()]
}

fn at_end(tokens: &[Token], (i, taken): Pos) -> bool {
    i == tokens.len() || (taken && i + 1 == tokens.len())
}

/// A character in neither template's literal text, to fill variables with.
fn fresh_char(a: &UriTemplate, b: &UriTemplate) -> Option<char> {
    let used: HashSet<char> = a.literal_chars().chain(b.literal_chars()).collect();
    "xyzqjkvw0123456789".chars().find(|c| !used.contains(c))
}

/// A shortest URI both templates match, by a breadth-first walk of both at
/// once. A character in neither template's text acts for every such
/// character, so the walk reads only that one and the templates' own
/// characters. A URI found is checked with both matchers (a variable takes
/// text up to the first, or for `{+var}` the last, occurrence of what
/// follows it, which a plain walk does not model) before it is returned.
fn shared_uri(a: &UriTemplate, b: &UriTemplate, budget: &mut usize) -> Option<String> {
    let (ta, tb) = (a.tokens(), b.tokens());
    let mut alphabet: Vec<char> = fresh_char(a, b).into_iter().collect();
    let mut literal: Vec<char> = a.literal_chars().chain(b.literal_chars()).collect();
    literal.sort_unstable();
    literal.dedup();
    alphabet.extend(literal);

    type Pair = (Pos, Pos);
    let start: Pair = ((0, false), (0, false));
    let mut came_from: HashMap<Pair, (Pair, char)> = HashMap::new();
    let mut seen: HashSet<Pair> = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(pair) = queue.pop_front() {
        if at_end(&ta, pair.0) && at_end(&tb, pair.1) {
            let mut chars = Vec::new();
            let mut at = pair;
            while let Some(&(prev, c)) = came_from.get(&at) {
                chars.push(c);
                at = prev;
            }
            let uri: String = chars.into_iter().rev().collect();
            if a.matches(&uri).is_some() && b.matches(&uri).is_some() {
                return Some(uri);
            }
        }
        for &c in &alphabet {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            for na in step(&ta, pair.0, c).into_iter().flatten() {
                for nb in step(&tb, pair.1, c).into_iter().flatten() {
                    if seen.insert((na, nb)) {
                        came_from.insert((na, nb), (pair, c));
                        queue.push_back((na, nb));
                    }
                }
            }
        }
    }
    None
}

/// `%XX` escapes decoded; `None` when they do not make UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t).unwrap().matches(uri)
    }

    #[test]
    fn segments_and_paths_match() {
        let t = "cp1600://sessions/{session_id}/memory/{start}/{end}";
        assert_eq!(
            vars(t, "cp1600://sessions/s1/memory/4096/4200").unwrap(),
            [("session_id", "s1"), ("start", "4096"), ("end", "4200")]
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert_eq!(vars(t, "cp1600://sessions/s1/memory/4096"), None);
        assert_eq!(vars(t, "cp1600://sessions/a/b/memory/1/2"), None);
        assert_eq!(
            vars("rom://{+path}/tables", "rom:///home/u/a%20b.bin/tables").unwrap(),
            [("path".to_owned(), "/home/u/a b.bin".to_owned())]
        );
        assert_eq!(vars("log://{file}", "log://"), None);
        let fixed = UriTemplate::parse("ble://buffer").unwrap();
        assert!(!fixed.is_template());
        assert_eq!(fixed.matches("ble://buffer"), Some(vec![]));
        assert_eq!(fixed.matches("ble://buffer2"), None);
    }

    #[test]
    fn bad_templates_say_why() {
        assert_eq!(
            UriTemplate::parse("no-scheme"),
            Err(TemplateError::NoScheme)
        );
        assert_eq!(UriTemplate::parse("a://{x"), Err(TemplateError::Unclosed));
        assert_eq!(
            UriTemplate::parse("a://{X}"),
            Err(TemplateError::BadVariable("X".into()))
        );
        assert_eq!(
            UriTemplate::parse("a://{x}{y}"),
            Err(TemplateError::Adjacent)
        );
        assert_eq!(vars("a://{x}", "a://%zz"), None);
    }

    fn t(s: &str) -> UriTemplate {
        UriTemplate::parse(s).unwrap()
    }

    /// Hardening item 9: `cp1600://sessions/{id}/state` took over reads of
    /// `cp1600://sessions/{session_id}/state` because only identical
    /// spellings counted as a clash.
    #[test]
    fn hardening_9_variable_names_do_not_count_in_a_shape() {
        let mine = t("cp1600://sessions/{session_id}/state");
        let theirs = t("cp1600://sessions/{id}/state");
        assert_eq!(mine.shape(), "cp1600://sessions/{}/state");
        assert_eq!(mine.shape(), theirs.shape());
        assert_ne!(mine.as_str(), theirs.as_str());
        let both = mine.overlap(&theirs).expect("one shape is one set of URIs");
        assert!(mine.matches(&both).is_some() && theirs.matches(&both).is_some());
        // A path variable is another shape than a segment variable.
        assert_eq!(t("rom://{+rom}/tables").shape(), "rom://{+}/tables");
        assert_ne!(t("a://{x}").shape(), t("a://{+x}").shape());
        // A fixed URI is its own shape.
        assert_eq!(t("ble://buffer").shape(), "ble://buffer");
    }

    /// Hardening item 9: a fixed URI of one plugin that another plugin's
    /// template matches would be answered by whichever came first.
    #[test]
    fn hardening_9_a_fixed_uri_that_a_template_matches_overlaps_it() {
        let fixed = t("a://c/b");
        let template = t("a://{x}/b");
        assert_eq!(fixed.overlap(&template).as_deref(), Some("a://c/b"));
        assert_eq!(template.overlap(&fixed).as_deref(), Some("a://c/b"));
        assert_eq!(t("a://c/d").overlap(&template), None);
        assert_eq!(t("a://c/b").overlap(&t("a://c/d")), None);
        assert_eq!(
            t("ble://buffer").overlap(&t("ble://buffer")).as_deref(),
            Some("ble://buffer")
        );
    }

    /// Hardening item 9: two templates that can match one URI.
    #[test]
    fn hardening_9_templates_that_can_match_one_uri_overlap() {
        let overlapping = [
            ("a://{x}/b", "a://c/{y}"),
            ("a://{x}", "a://{+y}"),
            ("a://{+x}", "a://p/{y}"),
            ("a://{x}-{y}", "a://{z}"),
            ("rom://{+rom}/tables", "rom://{+r}/tables/{table}"),
            (
                "x86://machines/{m}/memory/{s}/{o}/{l}",
                "x86://machines/{+rest}",
            ),
        ];
        for (a, b) in overlapping {
            let (a, b) = (t(a), t(b));
            for (x, y) in [(&a, &b), (&b, &a)] {
                let uri = x.overlap(y).unwrap_or_else(|| panic!("{x} and {y}"));
                assert!(
                    x.matches(&uri).is_some() && y.matches(&uri).is_some(),
                    "{x} and {y} both match {uri}"
                );
            }
        }
        let disjoint = [
            ("a://{x}/b", "a://{x}/c"),
            ("a://x/{y}", "a://y/{z}"),
            ("a://{x}", "a://p/{y}"),
            ("a://{x}", "b://{x}"),
            ("cp1600://sessions/{s}/state", "cp1600://sessions/{s}/trace"),
            ("ble://buffer/{since}", "ble://connection"),
            ("ble://buffer/{since}", "ble://buffer"),
        ];
        for (a, b) in disjoint {
            assert_eq!(t(a).overlap(&t(b)), None, "{a} and {b}");
            assert_eq!(t(b).overlap(&t(a)), None, "{b} and {a}");
        }
    }

    /// The search stays bounded however long a hostile plugin's templates.
    #[test]
    fn hardening_9_the_overlap_search_is_bounded() {
        let long = format!("a://{}", "{x}-".repeat(2000));
        let other = format!("a://{}", "{y}+".repeat(2000));
        let started = std::time::Instant::now();
        let _ = t(&long).overlap(&t(&other));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Hardening item 9: whose a URI is. A view's authority is part of it
    /// and must be written out; case and escapes do not make another one.
    #[test]
    fn hardening_9_a_uri_names_its_namespace() {
        assert_eq!(
            t("cp1600://sessions/{id}/state").namespace().to_string(),
            "cp1600:"
        );
        assert_eq!(t("CP1600://x").namespace(), t("cp1600://y").namespace());
        let view = t("ui://benchtop/ecu-table");
        assert_eq!(view.namespace().to_string(), "ui://benchtop/");
        assert_eq!(view.namespace().key(), "benchtop");
        assert!(view.namespace().is_view());
        assert_eq!(t("UI://Bench%74op/x").namespace(), view.namespace());
        assert_eq!(t("ui://kitchen").namespace().key(), "kitchen");
        assert_eq!(t("rom://{+rom}/tables").namespace().key(), "rom");
        // Skills share their scheme as views do (issue 34).
        let skill = t("skill://knock-diagnosis/SKILL.md");
        assert_eq!(skill.namespace().to_string(), "skill://knock-diagnosis/");
        assert_eq!(skill.namespace().key(), "knock-diagnosis");
        assert!(UriTemplate::parse("skill://{name}/SKILL.md").is_err());
        for bad in [
            "ui://{x}/ecu-table",
            "ui://bench{x}/ecu-table",
            "ui://{+x}",
            "ui:{x}",
            "ui:///ecu-table",
            "ui://evil@benchtop/ecu-table",
            "ui://bench%2Ftop/x",
        ] {
            assert_eq!(
                UriTemplate::parse(bad),
                Err(TemplateError::ViewNamespace),
                "{bad}"
            );
        }
    }
}
