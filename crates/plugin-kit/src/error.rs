//! The one shape of a tool failure every plugin returns: the Rust side of
//! `benchtop:host/errors.tool-error` (a code and a message). Each plugin's
//! glue copies it into the record its bindings generate.

/// A tool failure: a stable code an agent can branch on, and what went
/// wrong and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// SCREAMING_SNAKE_CASE, stable across versions (`UNKNOWN_TABLE`).
    pub code: &'static str,
    /// One or two sentences: what was wrong and what to do.
    pub message: String,
}

impl ToolError {
    /// A failure with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `INVALID_ARGUMENT`: an argument the tool cannot use, as given.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("INVALID_ARGUMENT", message)
    }
}

impl std::fmt::Display for ToolError {
    /// `CODE: message`, as the host shows it to the client.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_the_host_shows_it() {
        assert_eq!(
            ToolError::invalid("`limit` must be at least 1").to_string(),
            "INVALID_ARGUMENT: `limit` must be at least 1"
        );
    }
}
