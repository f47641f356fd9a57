//! A definition's opening (its id and includes) read without building a
//! document.
//!
//! Identifying a definitions tree reads the opening of every file, and
//! parsing each with roxmltree was most of the first rom_info over the
//! 333-file SubaruDefs tree. The files ECUFlash writes open the same plain
//! way: an XML declaration, comments, `<rom>`, a `<romid>` of text-only
//! children, `<include>`s. Only that shape is read here. Anything else (an
//! entity, an attribute, CDATA, a DOCTYPE, another element, a character
//! XML forbids) gives None, and the caller parses the file in full, so the
//! answer is always the one roxmltree's parse gives.

use crate::xml::{RawDefinition, romid_of};

/// The start of the first `<table` or `<scaling` element in `text`: where
/// an ECUFlash file's id and includes have ended (every file of the
/// 378-file SubaruDefs and EvoScan trees names its includes before it).
pub fn first_body_element(text: &str) -> Option<usize> {
    // One pass over the `<`s: searching the head for each tag in turn read
    // all 4 KiB twice for every file of a tree, since most files hold no
    // `<scaling` at all.
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(i) = bytes[at..].iter().position(|&b| b == b'<') {
        let open = at + i;
        let after = &text[open + 1..];
        let is_tag = |tag: &str| {
            after.strip_prefix(tag).is_some_and(|rest| {
                rest.chars()
                    .next()
                    .is_some_and(|c| c.is_whitespace() || c == '>' || c == '/')
            })
        };
        if is_tag("table") || is_tag("scaling") {
            return Some(open);
        }
        at = open + 1;
    }
    None
}

/// XML's whitespace (not Unicode's: `\u{a0}` is text to XML).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The romid and includes of `text`, a definition's opening: the whole
/// file when `closed` (it must end with `</rom>`), else the text before its
/// first table or scaling. None when the text is not of the plain shape.
pub fn parse_opening(text: &str, closed: bool) -> Option<RawDefinition> {
    if !all_xml_chars(text) {
        return None;
    }
    let mut at = Cursor(text);
    // roxmltree takes `<?xml` and a space, only, for the declaration.
    if at.0.starts_with("<?xml ") {
        at.declaration()?;
    }
    at.misc()?;
    at.start_tag("rom")?;
    let mut def = RawDefinition::default();
    loop {
        at.misc()?;
        if at.0.is_empty() {
            return (!closed).then_some(def);
        }
        if at.end_tag("rom").is_some() {
            at.misc()?;
            return (closed && at.0.is_empty()).then_some(def);
        }
        if at.start_tag("romid").is_some() {
            let mut fields = Vec::new();
            loop {
                at.misc()?;
                if at.end_tag("romid").is_some() {
                    break;
                }
                let name = at.name_after('<')?;
                fields.push((name.to_owned(), at.text_element(name)?.to_owned()));
            }
            def.romid = romid_of(fields);
        } else if at.name_after('<')? == "include" {
            let text = at.text_element("include")?;
            if !text.is_empty() {
                def.includes.push(text.to_owned());
            }
        } else {
            // `<notes>`, say, which a full parse passes over too; a table
            // or scaling is the body, not read here, and an empty `<romid/>`
            // replaces the id.
            let name = at.name_after('<')?;
            if matches!(name, "table" | "scaling" | "romid") {
                return None;
            }
            at.raw_text_element(name)?;
        }
    }
}

/// Whether `text` holds only characters XML 1.0 allows (`Char`): no
/// control character but whitespace, neither U+FFFE nor U+FFFF. Checked
/// on the UTF-8 bytes, which is several times quicker than decoding.
fn all_xml_chars(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'\t' | b'\n' | b'\r' => true,
        0..0x20 => false,
        // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
        0xEF => !(bytes.get(i + 1) == Some(&0xBF) && matches!(bytes.get(i + 2), Some(0xBE | 0xBF))),
        _ => true,
    })
}

/// The text still to read.
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    /// Past `prefix`, if the text starts with it.
    fn eat(&mut self, prefix: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(prefix)?;
        Some(())
    }

    fn spaces(&mut self) {
        self.0 = self.0.trim_start_matches(is_space);
    }

    /// Past whitespace and comments; None for a comment XML forbids (one
    /// holding `--`) or one left open.
    fn misc(&mut self) -> Option<()> {
        loop {
            self.spaces();
            if self.eat("<!--").is_none() {
                return Some(());
            }
            // `--` found byte by byte: a `str` pattern sets up a searcher
            // at every call, for comments of a few dozen bytes.
            let end = self.0.as_bytes().windows(2).position(|w| w == b"--")?;
            self.0 = self.0[end..].strip_prefix("-->")?;
        }
    }

    /// `<?xml version="1.x" encoding="…" standalone="yes|no"?>`, the last
    /// two optional, in either quotes.
    fn declaration(&mut self) -> Option<()> {
        self.eat("<?xml")?;
        let end = self.0.as_bytes().windows(2).position(|w| w == b"?>")?;
        let mut attrs = &self.0[..end];
        self.0 = &self.0[end + 2..];
        let mut names = Vec::new();
        loop {
            let rest = attrs.trim_start_matches(is_space);
            if rest.is_empty() {
                break;
            }
            if rest.len() == attrs.len() {
                return None; // no space before the pseudo-attribute
            }
            let (name, value) = rest.split_once('=')?;
            let name = name.trim_end_matches(is_space);
            let value = value.trim_start_matches(is_space);
            let quote = value.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let (value, after) = value[1..].split_once(quote)?;
            let valid = match name {
                "version" => value
                    .strip_prefix("1.")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())),
                "encoding" => {
                    let mut chars = value.chars();
                    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                }
                "standalone" => matches!(value, "yes" | "no"),
                _ => false,
            };
            if !valid {
                return None;
            }
            names.push(name);
            attrs = after;
        }
        matches!(
            names[..],
            ["version"]
                | ["version", "encoding"]
                | ["version", "standalone"]
                | ["version", "encoding", "standalone"]
        )
        .then_some(())
    }

    /// `<name>` with no attributes.
    fn start_tag(&mut self, name: &str) -> Option<()> {
        let mut at = Cursor(self.0);
        at.eat("<")?;
        at.eat(name)?;
        at.spaces();
        at.eat(">")?;
        self.0 = at.0;
        Some(())
    }

    /// `</name>`.
    fn end_tag(&mut self, name: &str) -> Option<()> {
        let mut at = Cursor(self.0);
        at.eat("</")?;
        at.eat(name)?;
        at.spaces();
        at.eat(">")?;
        self.0 = at.0;
        Some(())
    }

    /// The name of the element starting here (after `open`), without
    /// consuming it: ASCII letters, digits, `_`, `-` and `.`, starting with
    /// a letter or `_` (a prefixed or non-ASCII name is left to roxmltree).
    fn name_after(&self, open: char) -> Option<&'a str> {
        let rest = self.0.strip_prefix(open)?;
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .unwrap_or(rest.len());
        let name = &rest[..len];
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            .then_some(name)
    }

    /// `<name>text</name>`, `<name/>` or `<name />`: its text, trimmed as
    /// roxmltree's text would be. None where that could differ: a carriage
    /// return inside, which roxmltree turns into a line feed (and see
    /// [`Self::raw_text_element`]).
    fn text_element(&mut self, name: &str) -> Option<&'a str> {
        let text = Cursor(self.0).raw_text_element(name)?.trim();
        if text.contains('\r') {
            return None;
        }
        self.raw_text_element(name)?;
        Some(text)
    }

    /// [`Self::text_element`]'s text as written. None for anything in it
    /// but characters: markup, a reference, or `]]>`, which XML forbids.
    fn raw_text_element(&mut self, name: &str) -> Option<&'a str> {
        let mut at = Cursor(self.0);
        at.eat("<")?;
        at.eat(name)?;
        let after_name = at.0;
        at.spaces();
        if at.eat("/>").is_some() {
            self.0 = at.0;
            return Some("");
        }
        at = Cursor(after_name);
        at.spaces();
        at.eat(">")?;
        let end = at.0.find(['<', '&'])?;
        let text = &at.0[..end];
        at.0 = &at.0[end..];
        at.end_tag(name)?;
        if text.as_bytes().windows(3).any(|w| w == b"]]>") {
            return None;
        }
        self.0 = at.0;
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xml::parse_definition;

    /// Parsed in full as identify parses an opening.
    fn full(text: &str, closed: bool) -> RawDefinition {
        if closed {
            parse_definition(text).unwrap()
        } else {
            parse_definition(&format!("{text}</rom>")).unwrap()
        }
    }

    #[test]
    fn the_body_starts_at_the_first_table_or_scaling_tag() {
        let head = "<rom><romid/><tables/><tablex a='1'/><scaling\tname='s'/><table name='t'/>";
        assert_eq!(first_body_element(head), head.find("<scaling"));
        assert_eq!(first_body_element("<rom><table/>"), Some(5));
        assert_eq!(first_body_element("<rom><table>"), Some(5));
        assert_eq!(first_body_element("<rom><romid/><table"), None);
        assert_eq!(first_body_element("<rom><romid/></rom>"), None);
    }

    #[test]
    fn plain_openings_read_as_a_full_parse_reads_them() {
        let opening = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- SubaruDefs -->\n<rom>\n \
            <romid>\n  <xmlid> A2UG000N </xmlid>\n  <internalidaddress>2000</internalidaddress>\n  \
            <internalidstring>A2UG000N</internalidstring>\n  <make>Subaru \u{fffd}é</make>\n  <submodel/>\n  \
            <year />\n  <flashmethod></flashmethod>\n </romid>\n <include>A2UG000L</include>\n \
            <include> </include>\n <include>32BITBASE</include>\n ";
        let fast = parse_opening(opening, false).unwrap();
        assert_eq!(fast, full(opening, false));
        assert_eq!(fast.romid.xmlid.as_deref(), Some("A2UG000N"));
        assert_eq!(fast.includes, ["A2UG000L", "32BITBASE"]);
        let closed = format!("{opening}</rom>\n<!-- end -->\n");
        assert_eq!(parse_opening(&closed, true).unwrap(), full(&closed, true));
        // Not closed where it must be, or closed where it must not.
        assert_eq!(parse_opening(opening, true), None);
        assert_eq!(parse_opening(&closed, false), None);
        assert_eq!(
            parse_opening("<rom><romid><xmlid>X</xmlid></romid>", false).unwrap(),
            full("<rom><romid><xmlid>X</xmlid></romid>", false)
        );
        // Elements a full parse passes over are passed over, whatever
        // their text (here with the carriage returns of a CRLF file).
        let notes = "<rom>\r\n<romid><xmlid>X</xmlid></romid>\r\n<notes>\r\n a\r\n b ]\r\n</notes>\r\n<include>B</include>";
        assert_eq!(parse_opening(notes, false).unwrap(), full(notes, false));
    }

    #[test]
    fn other_shapes_are_left_to_the_full_parse() {
        let left = [
            "\u{feff}<rom><romid/>",
            " <?xml version=\"1.0\"?><rom>",
            "<?xml version=\"2.0\"?><rom>",
            "<?xml encoding=\"UTF-8\" version=\"1.0\"?><rom>",
            "<?xml version=\"1.0\"encoding=\"UTF-8\"?><rom>",
            "<!DOCTYPE rom><rom>",
            "<rom base=\"x\"><romid/>",
            "<roms><rom>",
            "<rom><romid><xmlid>A&amp;B</xmlid></romid>",
            "<rom><romid><xmlid>A<!-- c -->B</xmlid></romid>",
            "<rom><romid><xmlid a=\"1\">A</xmlid></romid>",
            "<rom><romid><x:xmlid>A</x:xmlid></romid>",
            "<rom><romid><xmlid><![CDATA[A]]></xmlid></romid>",
            "<rom><romid><xmlid>A\rB</xmlid></romid>",
            "<rom><romid><xmlid>A</xmlidx></romid>",
            "<rom><!-- a -- b --><romid/>",
            "<rom><notes>a <b>b</b></notes>",
            "<rom><notes>a &amp; b</notes>",
            "<rom><table/>",
            "<rom><romid><xmlid>A</xmlid></romid><romid/>",
            "<rom>text<romid/>",
            "<rom><romid><xmlid>A\u{1}</xmlid></romid>",
            "<rom><romid><xmlid>A\u{fffe}</xmlid></romid>",
            "<rom><romid><xmlid>A\u{ffff}</xmlid></romid>",
        ];
        for text in left {
            assert_eq!(parse_opening(text, false), None, "{text:?}");
        }
    }
}
