//! Telling definition formats apart from a file's first bytes, where two
//! families share an extension (ECUFlash and RomRaider both write `.xml`).

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
    let mut rest = head;
    let mut romraider_heading = false;
    let mut ecuflash_heading = false;
    let mut heading = |comment: &str| {
        let first = comment
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_ascii_lowercase();
        romraider_heading |= first.contains("romraider");
        ecuflash_heading |= first.contains("ecuflash");
    };
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        if rest.starts_with("<?") {
            match rest.find("?>") {
                Some(e) => rest = &rest[e + 2..],
                None => break,
            }
        } else if let Some(body) = rest.strip_prefix("<!--") {
            match body.find("-->") {
                Some(e) => {
                    heading(&body[..e]);
                    rest = &body[e + 3..];
                }
                None => {
                    heading(body);
                    break;
                }
            }
        } else if rest.starts_with("<!") {
            match rest.find('>') {
                Some(e) => rest = &rest[e + 1..],
                None => break,
            }
        } else {
            let name: String = rest[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.eq_ignore_ascii_case("roms") {
                return true;
            }
            if name.eq_ignore_ascii_case("rom") {
                let tag = rest.find('>').map_or(rest, |e| &rest[..e]);
                return tag
                    .split_whitespace()
                    .skip(1)
                    .any(|a| a.starts_with("base=") || a.starts_with("base ="));
            }
            return false;
        }
    }
    // The head ended inside the prolog.
    romraider_heading && !ecuflash_heading
}
