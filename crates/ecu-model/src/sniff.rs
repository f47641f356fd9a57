//! Telling definition formats apart from a file's first bytes, where two
//! families share an extension (ECUFlash and RomRaider both write `.xml`).

/// The longest UTF-8 text `bytes` starts with: a file's head may end
/// inside a character, and a binary image is text only up to its first
/// byte that is not UTF-8.
pub fn head_text(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// True when `head` (the first KiB or so of a file) looks like a RomRaider
/// definition: its first element is `<roms>`, or a `<rom base="…">`
/// (ECUFlash's root `<rom>` never has `base=`).
///
/// RomRaider files often open with a disclaimer comment longer than a KiB
/// (the AE5I910V fixture's `<roms>` is at byte 1838). When `head` ends
/// inside the prolog, the decision falls back on the comments' first lines:
/// one naming RomRaider ("ROMRAIDER STANDARD UNITS ECU DEFINITION FILE")
/// and none naming EcuFlash. A store that wants certainty reads on to the
/// first element.
pub fn is_romraider(head: &str) -> bool {
    let mut romraider_heading = false;
    let mut ecuflash_heading = false;
    let first = walk_prolog(head, |comment| {
        let first = comment
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_ascii_lowercase();
        romraider_heading |= first.contains("romraider");
        ecuflash_heading |= first.contains("ecuflash");
    });
    match first {
        Some((name, _)) if name.eq_ignore_ascii_case("roms") => true,
        Some((name, tag)) if name.eq_ignore_ascii_case("rom") => tag
            .split_whitespace()
            .skip(1)
            .any(|a| a.starts_with("base=") || a.starts_with("base =")),
        Some(_) => false,
        // The head ended inside the prolog.
        None => romraider_heading && !ecuflash_heading,
    }
}

/// The name of the first element of `head`, past the XML declaration,
/// comments and DOCTYPE; none when the head holds no element (it ends in
/// the prolog, or is no XML).
pub fn first_element(head: &str) -> Option<&str> {
    walk_prolog(head, |_| {})
        .map(|(name, _)| name)
        .filter(|n| !n.is_empty())
}

/// Walks `head` past its prolog, handing each comment to `comment`: the
/// first element's name and its start tag (up to `>`), if the head gets
/// that far.
fn walk_prolog(head: &str, mut comment: impl FnMut(&str)) -> Option<(&str, &str)> {
    let mut rest = head;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        if rest.starts_with("<?") {
            rest = &rest[rest.find("?>")? + 2..];
        } else if let Some(body) = rest.strip_prefix("<!--") {
            match body.find("-->") {
                Some(e) => {
                    comment(&body[..e]);
                    rest = &body[e + 3..];
                }
                None => {
                    comment(body);
                    return None;
                }
            }
        } else if rest.starts_with("<!") {
            rest = &rest[rest.find('>')? + 1..];
        } else {
            let len = rest[1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len() - 1);
            let tag = rest.find('>').map_or(rest, |e| &rest[..e]);
            return Some((&rest[1..1 + len], tag));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_element_is_found_past_the_prolog() {
        let head =
            "<?xml version=\"1.0\"?>\n<!-- <roms> in a comment -->\n<!DOCTYPE rom>\n<rom>\n<romid>";
        assert_eq!(first_element(head), Some("rom"));
        assert_eq!(first_element("<roms><rom base=\"X\">"), Some("roms"));
        assert_eq!(first_element(""), None);
        assert_eq!(first_element("not xml at all"), None);
        assert_eq!(first_element("<!-- a disclaimer that never ends"), None);
        assert!(is_romraider(
            "<!-- RomRaider ECU definitions: a disclaimer that never ends"
        ));
        assert!(!is_romraider("<!-- EcuFlash definition, see romraider"));
        assert!(is_romraider("<rom base=\"32BITBASE\">"));
        assert!(!is_romraider("<rom><romid>"));
    }
}
