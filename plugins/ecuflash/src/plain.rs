//! Definitions read without building a document, when they are plainly
//! written.
//!
//! Identifying a definitions tree reads the opening (id and includes) of
//! every file, and resolving a match reads its chain whole: parsing them
//! with roxmltree was most of the first rom_info over the 333-file
//! SubaruDefs tree, mostly in building documents only walked once. The
//! files ECUFlash writes have one plain shape: an XML declaration,
//! comments, `<rom>`, a `<romid>` of text-only children, `<include>`s,
//! `<scaling>`s with `<data name value>` children, `<table>`s with
//! `<data>` labels and axis `<table>`s, and text-only elements such as
//! `<notes>` and `<description>`. Only that shape is read here. Anything
//! else (an entity or character reference, CDATA, a DOCTYPE, a namespace,
//! a character or comment XML forbids, a duplicated attribute) gives None,
//! and the caller parses the file with roxmltree, so the answer is always
//! the one roxmltree's parse gives.

use crate::raw::{RawDefinition, RawScaling, RawTable, romid_of};
use std::collections::BTreeMap;

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

/// `text`, a whole definition file, as the full parse reads it, when it
/// is plainly written.
pub fn parse_plain(text: &str) -> Option<RawDefinition> {
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
        if at.end_tag("rom").is_some() {
            at.misc()?;
            return at.0.is_empty().then_some(def);
        }
        match at.name_after('<')? {
            "romid" => {
                // An empty `<romid/>` replaces the id too: left to roxmltree.
                at.start_tag("romid")?;
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
            }
            "include" => {
                let text = at.text_element("include")?;
                if !text.is_empty() {
                    def.includes.push(text.to_owned());
                }
            }
            "scaling" => {
                if let Some(scaling) = at.scaling()? {
                    def.scalings.push(scaling);
                }
            }
            "table" => def.tables.push(at.table(true)?),
            // `<notes>`, say, which the full parse passes over too.
            name => {
                at.raw_text_element(name)?;
            }
        }
    }
}

/// Whether `text` holds only characters XML 1.0 allows (`Char`): no
/// control character but whitespace, neither U+FFFE nor U+FFFF. Checked
/// on the UTF-8 bytes eight at a time: a whole base file goes through
/// here, and decoding it a character at a time was a tenth of its read.
fn all_xml_chars(text: &str) -> bool {
    /// 0x80 in each byte of `x` that is zero.
    fn zero_bytes(x: u64) -> u64 {
        const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        !(((x & LOW) + LOW) | x | LOW)
    }
    let splat = |b: u8| u64::from_ne_bytes([b; 8]);
    let byte_ok = |bytes: &[u8], i: usize| match bytes[i] {
        b'\t' | b'\n' | b'\r' => true,
        0..0x20 => false,
        // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
        0xEF => !(bytes.get(i + 1) == Some(&0xBF) && matches!(bytes.get(i + 2), Some(0xBE | 0xBF))),
        _ => true,
    };
    let bytes = text.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let x = u64::from_ne_bytes(chunk.try_into().expect("chunks of 8"));
        // Bytes below 0x20 have their top three bits clear; 0xEF starts
        // the two non-characters. Only a chunk holding either is looked
        // at byte by byte (a tab or line feed, mostly).
        let suspect = zero_bytes(x & splat(0xE0)) | zero_bytes(x ^ splat(0xEF));
        if suspect != 0 && !(at..at + 8).all(|i| byte_ok(bytes, i)) {
            return false;
        }
        at += 8;
    }
    (at..bytes.len()).all(|i| byte_ok(bytes, i))
}

/// The first `<` or `&` in `text`: where its character data ends.
fn markup(text: &str) -> Option<usize> {
    text.bytes().position(|b| b == b'<' || b == b'&')
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
        self.tag("<", name)
    }

    /// `</name>`.
    fn end_tag(&mut self, name: &str) -> Option<()> {
        self.tag("</", name)
    }

    /// `open`, `name`, spaces and `>`, all or nothing.
    fn tag(&mut self, open: &str, name: &str) -> Option<()> {
        let mut at = Cursor(self.0);
        at.eat(open)?;
        at.eat(name)?;
        at.spaces();
        at.eat(">")?;
        self.0 = at.0;
        Some(())
    }

    /// The name of the element starting here (after `open`), without
    /// consuming it (see [`Self::name_here`]).
    fn name_after(&self, open: char) -> Option<&'a str> {
        Cursor(self.0.strip_prefix(open)?).name_here()
    }

    /// The name the text starts with, without consuming it: ASCII letters,
    /// digits, `_`, `-` and `.`, starting with a letter or `_` (a prefixed
    /// or non-ASCII name is left to roxmltree).
    fn name_here(&self) -> Option<&'a str> {
        let len = self
            .0
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')))
            .unwrap_or(self.0.len());
        let name = &self.0[..len];
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            .then_some(name)
    }

    /// A start tag's attributes, after its name, up to `>` (false) or
    /// `/>` (true), values normalized as roxmltree normalizes them (a tab,
    /// line feed or carriage return is a space; a CR LF pair one space).
    /// None for a value holding a reference or `<`, a duplicated or
    /// namespace-related name, or no space before a name.
    fn attributes(&mut self) -> Option<(BTreeMap<String, String>, bool)> {
        let mut attrs = BTreeMap::new();
        loop {
            let before = self.0.len();
            self.spaces();
            if self.eat("/>").is_some() {
                return Some((attrs, true));
            }
            if self.eat(">").is_some() {
                return Some((attrs, false));
            }
            if self.0.len() == before {
                return None;
            }
            let name = self.name_here()?;
            if name.get(..3).is_some_and(|x| x.eq_ignore_ascii_case("xml")) {
                return None;
            }
            self.0 = &self.0[name.len()..];
            self.spaces();
            self.eat("=")?;
            self.spaces();
            let quote = self.0.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let (value, rest) = self.0[1..].split_once(quote)?;
            if value.contains(['<', '&']) {
                return None;
            }
            self.0 = rest;
            let value = if value.contains(['\t', '\n', '\r']) {
                value.replace("\r\n", " ").replace(['\t', '\n', '\r'], " ")
            } else {
                value.to_owned()
            };
            if attrs.insert(name.to_owned(), value).is_some() {
                return None;
            }
        }
    }

    /// `<scaling …>` with its `<data name value>` children, as the full
    /// parse reads it: None (the outer Option) where that is not sure,
    /// `Some(None)` for a scaling without a name, which it passes over.
    fn scaling(&mut self) -> Option<Option<RawScaling>> {
        self.eat("<scaling")?;
        let (attrs, empty) = self.attributes()?;
        let mut blobs = Vec::new();
        if !empty {
            loop {
                self.misc()?;
                if self.end_tag("scaling").is_some() {
                    break;
                }
                let name = self.name_after('<')?;
                if name != "data" {
                    self.raw_text_element(name)?;
                    continue;
                }
                self.eat("<data")?;
                let (data, empty) = self.attributes()?;
                if !empty {
                    let end = markup(self.0)?;
                    if self.0[..end].contains("]]>") {
                        return None;
                    }
                    self.0 = &self.0[end..];
                    self.end_tag("data")?;
                }
                if let (Some(name), Some(value)) = (data.get("name"), data.get("value")) {
                    blobs.push((name.clone(), value.trim().to_owned()));
                }
            }
        }
        Some(
            attrs
                .get("name")
                .cloned()
                .map(|name| RawScaling { name, attrs, blobs }),
        )
    }

    /// `<table …>` with its `<data>` labels and (at the top) its axis
    /// tables, as the full parse reads it.
    fn table(&mut self, top: bool) -> Option<RawTable> {
        self.eat("<table")?;
        let (mut attrs, empty) = self.attributes()?;
        let name = attrs.remove("name").filter(|n| !n.is_empty());
        let mut table = RawTable {
            name,
            attrs,
            ..Default::default()
        };
        if !empty {
            loop {
                self.misc()?;
                if self.end_tag("table").is_some() {
                    break;
                }
                match self.name_after('<')? {
                    "data" => table.labels.push(self.text_element("data")?.to_owned()),
                    "table" if top => table.axes.push(self.table(false)?),
                    // A table in an axis is passed over whole by the full
                    // parse, whatever it holds.
                    "table" => return None,
                    name => {
                        self.raw_text_element(name)?;
                    }
                }
            }
        }
        Some(table)
    }

    /// `<name>text</name>`, `<name/>` or `<name />`: its text, trimmed as
    /// roxmltree's text would be. None where that could differ: a carriage
    /// return inside, which roxmltree turns into a line feed (and see
    /// [`Self::raw_text_element`]).
    fn text_element(&mut self, name: &str) -> Option<&'a str> {
        // A None ends the plain reading, so the cursor may move regardless.
        let text = self.raw_text_element(name)?.trim();
        (!text.contains('\r')).then_some(text)
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
        let end = markup(at.0)?;
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
    use crate::xml::parse_document;

    /// `text` read plainly, checked to be what roxmltree's parse reads.
    fn plain(text: &str) -> RawDefinition {
        let read = parse_plain(text).unwrap();
        assert_eq!(read, parse_document(text).unwrap(), "{text:?}");
        read
    }

    #[test]
    fn characters_xml_forbids_are_found_wherever_they_fall() {
        let xml_char = |c: char| {
            (c >= ' ' || matches!(c, '\t' | '\n' | '\r')) && c != '\u{fffe}' && c != '\u{ffff}'
        };
        for bad in [
            '\u{0}', '\u{1}', '\u{1f}', '\u{fffe}', '\u{ffff}', '\t', '\n', '\r', 'é', '\u{fffd}',
            '\u{ef}', ' ',
        ] {
            for at in 0..20 {
                for len in [at + 1, at + 5, 24] {
                    let mut text: Vec<char> = "<rom a='1'>abcdefghijklmnopqrstuv"
                        .chars()
                        .take(len)
                        .collect();
                    if at < text.len() {
                        text[at] = bad;
                    }
                    let text: String = text.into_iter().collect();
                    assert_eq!(all_xml_chars(&text), text.chars().all(xml_char), "{text:?}");
                }
            }
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
        let read = plain(&format!("{opening}</rom>\n<!-- end -->\n"));
        assert_eq!(read.romid.xmlid.as_deref(), Some("A2UG000N"));
        assert_eq!(read.includes, ["A2UG000L", "32BITBASE"]);
        // Not closed, or closed twice.
        assert_eq!(parse_plain(opening), None);
        assert_eq!(parse_plain(&format!("{opening}</rom></rom>")), None);
        plain("<rom><romid><xmlid>X</xmlid></romid></rom>");
        // Elements a full parse passes over are passed over, whatever
        // their text (here with the carriage returns of a CRLF file).
        plain(
            "<rom>\r\n<romid><xmlid>X</xmlid></romid>\r\n<notes>\r\n a\r\n b ]\r\n</notes>\r\n<include>B</include></rom>",
        );
    }

    #[test]
    fn plain_bodies_read_as_a_full_parse_reads_them() {
        let text = "<?xml version='1.0'?>\n<rom>\n<romid><xmlid>A</xmlid></romid>\n\
            <scaling name=\"S\" toexpr=\"x*2\" storagetype=\"uint8\"/>\n\
            <scaling name=\"B\" storagetype=\"bloblist\"><data name=\"off\" value=\" 00 \"/>\
            <data name=\"on\" value=\"01\">t</data><data name=\"x\"/><notes>n</notes></scaling>\n\
            <scaling storagetype=\"uint8\"/>\n\
            <table name=\"T\" address=\"10\" scaling=\"S\" category='A\tB\r\nC'>\
            <description>d</description><!-- c -->\
            <table name=\"X\" address=\"20\"><data> 1 </data><data/></table>\
            <table type=\"Static Y Axis\" elements=\"2\"><data>ON</data><data>OFF</data></table>\
            </table>\n<table name=\"\" address=\"30\" />\n</rom>\n";
        let read = plain(text);
        assert_eq!(read.scalings.len(), 2);
        assert_eq!(read.tables[0].attr("category"), Some("A B C"));
        assert_eq!(read.tables[0].axes[0].labels, ["1", ""]);
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
            "<rom><table><table><table/></table></table>",
            "<rom><table name=\"a\" name=\"b\"/>",
            "<rom><table name=\"a&amp;b\"/>",
            "<rom><table name=\"a\"address=\"1\"/>",
            "<rom><table xmlns=\"u\"/>",
            "<rom><table><data a=\"1\">x</data></table>",
            "<rom><romid><xmlid>A</xmlid></romid><romid/>",
            "<rom>text<romid/>",
            "<rom><romid><xmlid>A\u{1}</xmlid></romid>",
            "<rom><romid><xmlid>A\u{fffe}</xmlid></romid>",
            "<rom><romid><xmlid>A\u{ffff}</xmlid></romid>",
        ];
        for text in left {
            let text = format!("{text}</rom>");
            assert_eq!(parse_plain(&text), None, "{text:?}");
        }
    }
}
