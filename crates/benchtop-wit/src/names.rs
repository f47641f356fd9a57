//! WIT identifiers (kebab-case) as JSON names (snake_case).

/// The JSON spelling of a WIT identifier: `read-table` → `read_table`.
pub fn json_name(wit: &str) -> String {
    wit.replace('-', "_")
}

/// True when `candidate` is the JSON spelling of the WIT identifier `wit`.
/// The kebab spelling is accepted too, so hand-written arguments still work.
pub fn matches(wit: &str, candidate: &str) -> bool {
    wit.len() == candidate.len()
        && wit
            .bytes()
            .zip(candidate.bytes())
            .all(|(w, c)| w == c || (w == b'-' && c == b'_'))
}

/// Checks an MCP tool name: 1–64 characters of `[A-Za-z0-9_-]`.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!(
            "tool name `{name}` is {} characters long; names must be 1 to 64 characters",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "tool name `{name}` contains `{bad}`; only A-Z, a-z, 0-9, `_` and `-` are allowed"
        ));
    }
    Ok(())
}

/// At most 80 characters of a name a client sent, for error messages.
pub fn clip(name: &str) -> String {
    let count = name.chars().count();
    if count <= 80 {
        return name.to_owned();
    }
    let head: String = name.chars().take(60).collect();
    format!("{head}… ({count} characters)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_to_snake() {
        assert_eq!(json_name("cp1600-create-session"), "cp1600_create_session");
        assert!(matches("maybe-count", "maybe_count"));
        assert!(matches("maybe-count", "maybe-count"));
        assert!(!matches("maybe-count", "maybecount"));
    }

    #[test]
    fn tool_names_are_checked() {
        assert!(check_tool_name("read_table").is_ok());
        assert!(check_tool_name("").is_err());
        assert!(check_tool_name(&"a".repeat(65)).is_err());
        assert!(check_tool_name("a.b").is_err());
    }
}
