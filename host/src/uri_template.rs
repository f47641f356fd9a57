//! The URI templates of `@resource` (RFC 6570, the two forms MCP servers
//! use): `{var}` stands for one path segment (no `/`, `?` or `#`), `{+var}`
//! for the rest of a path (slashes included). Matching a URI against a
//! template gives the variables' values, percent-decoded, which become the
//! resource function's arguments.

use std::fmt;

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
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
}
