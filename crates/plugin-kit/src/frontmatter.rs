//! YAML frontmatter blocks (`---` … `---`) that head tool answers.

use crate::yaml;
use std::fmt::Write;

/// An ordered set of `key: value` lines rendered as a YAML frontmatter block.
///
/// Keys keep insertion order so answers are stable between calls.
#[derive(Debug, Default, Clone)]
pub struct Frontmatter {
    lines: Vec<(String, String)>,
}

impl Frontmatter {
    /// An empty block.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a string value, quoted when YAML would misread it.
    pub fn text(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.lines.push((key.into(), yaml::scalar(value.as_ref())));
        self
    }

    /// Adds a string value or `null`.
    pub fn opt_text(self, key: &str, value: Option<impl AsRef<str>>) -> Self {
        match value {
            Some(v) => self.text(key, v),
            None => self.raw(key, "null"),
        }
    }

    /// Adds a value that is already valid YAML (a number, a boolean, a flow list).
    pub fn raw(mut self, key: &str, value: impl ToString) -> Self {
        self.lines.push((key.into(), value.to_string()));
        self
    }

    /// Adds a flow list such as `[Time, RPM]`.
    pub fn list<S: AsRef<str>>(self, key: &str, items: &[S]) -> Self {
        let rendered = yaml::flow_list(items);
        self.raw(key, rendered)
    }

    /// Renders the key lines alone, without the `---` fences (a plain YAML document).
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.lines {
            let _ = writeln!(out, "{k}: {v}");
        }
        out
    }

    /// Renders the fenced block followed by a blank line and `body`.
    pub fn with_body(&self, body: &str) -> String {
        let mut out = format!("---\n{}---\n", self.to_yaml());
        if !body.is_empty() {
            out.push('\n');
            out.push_str(body);
            if !body.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fenced_block_and_body() {
        let doc = Frontmatter::new()
            .text("table", "Idle Speed Target")
            .raw("table_count", 3)
            .opt_text("vehicle", None::<&str>)
            .list("channels", &["Time", "RPM"])
            .with_body("| a |\n");
        assert_eq!(
            doc,
            "---\ntable: Idle Speed Target\ntable_count: 3\nvehicle: null\nchannels: [Time, RPM]\n---\n\n| a |\n"
        );
    }
}
