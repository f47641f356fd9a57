//! Quoting what a user sent back in a message, within bounds.

/// Longest text echoed in full by [`clip`], in characters.
pub const CLIP_CHARS: usize = 120;

/// `text` as is when it is short; otherwise its start and end around an
/// ellipsis, with its length, so that an error about a 100 KB argument
/// stays readable: `AAAA…AAAA (102400 characters)`.
pub fn clip(text: &str) -> String {
    let count = text.chars().count();
    if count <= CLIP_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(80).collect();
    let tail: String = text.chars().skip(count - 20).collect();
    format!("{head}…{tail} ({count} characters)")
}

/// The first `max` characters of `text`, marked ` […cut]` when that is
/// not all of it: a user's free text quoted in a prompt, bounded.
pub fn head(text: &str, max: usize) -> String {
    let kept: String = text.chars().take(max).collect();
    if kept.len() < text.len() {
        format!("{kept} […cut]")
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_says_when_it_cut() {
        assert_eq!(head("knock at 4000 rpm", 100), "knock at 4000 rpm");
        assert_eq!(head("knock", 2), "kn […cut]");
    }

    #[test]
    fn short_text_is_kept_and_long_text_is_clipped() {
        assert_eq!(clip("Boost Target"), "Boost Target");
        assert_eq!(clip(""), "");
        let long = format!("{}{}", "a".repeat(100_000), "end");
        let c = clip(&long);
        assert!(c.starts_with("aaaa") && c.contains('…'), "{c}");
        assert!(
            c.ends_with("aaaaaaaaaaaaaaaaaend (100003 characters)"),
            "{c}"
        );
        assert!(c.len() < 200);
        // Characters, not bytes: multi-byte text is never split.
        let wide = "é".repeat(500);
        assert!(clip(&wide).ends_with("(500 characters)"));
    }
}
