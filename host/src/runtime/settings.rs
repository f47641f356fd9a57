//! Where a plugin's settings come from (`--definitions-path`, `LOGS_DIR`,
//! `ecuExplorer.definitionsPath`…): the command line, the environment, the
//! config file, then the workspace's `.vscode/settings.json` (JSON with
//! comments, as VS Code writes it).

use crate::wit::interface::SettingDecl;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A setting's value and the directory a relative value is relative to:
/// the command line, then the environment (both relative to the current
/// directory), then the config file's `env`, then the workspace's
/// `.vscode/settings.json` (relative to the workspace).
pub(crate) fn setting_value(
    decl: &SettingDecl,
    flags: &[(String, String)],
    config_env: &BTreeMap<String, String>,
    config_file: Option<&Path>,
    workspace: &Path,
    cwd: &Path,
) -> Option<(String, PathBuf)> {
    if let Some(flag) = &decl.flag
        && let Some((_, v)) = flags.iter().rev().find(|(f, _)| f == flag)
    {
        return Some((v.clone(), cwd.to_owned()));
    }
    if let Ok(v) = std::env::var(&decl.env)
        && !v.is_empty()
    {
        return Some((v, cwd.to_owned()));
    }
    let config_dir = config_file
        .and_then(|c| c.parent())
        .map_or_else(|| cwd.to_owned(), Path::to_path_buf);
    if let Some(v) = config_env.get(&decl.env) {
        return Some((v.clone(), config_dir));
    }
    let key = decl.vscode.as_ref()?;
    let text = std::fs::read_to_string(workspace.join(".vscode/settings.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&strip_jsonc(&text)).ok()?;
    json.get(key)?
        .as_str()
        .map(|v| (v.to_owned(), workspace.to_owned()))
}

/// Removes `//` and `/* */` comments and trailing commas, as VS Code's
/// settings.json allows them.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    // Trailing commas before } or ].
    let mut cleaned = String::with_capacity(out.len());
    let bytes: Vec<char> = out.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        if *c == ',' {
            let next = bytes[i + 1..].iter().find(|n| !n.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        cleaned.push(*c);
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas_are_removed() {
        let text =
            "{\n // comment\n \"a\": \"x // not a comment\", /* block */\n \"b\": [1, 2,],\n}";
        let v: serde_json::Value = serde_json::from_str(&strip_jsonc(text)).unwrap();
        assert_eq!(v["a"], "x // not a comment");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }
}
