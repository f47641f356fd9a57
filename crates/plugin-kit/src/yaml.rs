//! Minimal YAML scalar rendering: enough for flat metadata blocks.

/// Renders a string as a YAML scalar, quoting it only when a plain scalar
/// would be misread (booleans, numbers, nulls, special characters, or
/// leading/trailing whitespace).
pub fn scalar(value: &str) -> String {
    if needs_quotes(value) {
        double_quoted(value)
    } else {
        value.to_string()
    }
}

/// `value` in double quotes with quotes, backslashes and control characters escaped:
/// a YAML double-quoted scalar that is also a JSON string literal, so it
/// serves for JSON written by hand too (plugins carry no JSON library).
pub fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn needs_quotes(value: &str) -> bool {
    if value.is_empty() || value.trim() != value {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~" | "y" | "n"
    ) {
        return true;
    }
    if value.parse::<f64>().is_ok() || lower.starts_with("0x") || lower.starts_with("0o") {
        return true;
    }
    let first = value.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return true;
    }
    value.contains(": ")
        || value.contains(" #")
        || value.ends_with(':')
        || value.chars().any(|c| c.is_control())
}

/// Renders a flow sequence such as `[Time, RPM, Load]`.
pub fn flow_list<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|s| {
            let s = s.as_ref();
            // Inside a flow sequence commas and brackets are also special.
            if needs_quotes(s) || s.contains([',', '[', ']', '{', '}']) {
                scalar_forced(s)
            } else {
                s.to_string()
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

fn scalar_forced(value: &str) -> String {
    let quoted = scalar(value);
    if quoted.starts_with('"') {
        quoted
    } else {
        format!("\"{value}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_quoted_strings_are_json_strings() {
        assert_eq!(double_quoted("\u{1}"), "\"\\u0001\"");
        assert_eq!(double_quoted("a \"car\"\\b\n"), r#""a \"car\"\\b\n""#);
    }

    #[test]
    fn plain_strings_stay_plain() {
        assert_eq!(scalar("Ignition Timing"), "Ignition Timing");
        assert_eq!(scalar("/path/to/rom.bin"), "/path/to/rom.bin");
        assert_eq!(scalar("16x16"), "16x16");
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("12"), "\"12\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar(""), "\"\"");
        assert_eq!(scalar("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
        assert_eq!(scalar("-5 offset"), "\"-5 offset\"");
    }

    #[test]
    fn flow_lists_quote_commas() {
        assert_eq!(flow_list(&["Time", "RPM"]), "[Time, RPM]");
        assert_eq!(flow_list(&["a,b", "c"]), "[\"a,b\", c]");
    }
}
