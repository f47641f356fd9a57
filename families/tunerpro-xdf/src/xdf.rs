//! The XDF document: parsing, the header, and the storage and address rules
//! every item shares.
//!
//! Element and attribute names are matched without regard to case: 1.50
//! files write `<baseoffset>` where 1.60 files write `<BASEOFFSET>`, and
//! hand-edited files drift further.

use crate::bindings::exports::benchtop::ecu_family::family::Storage;
use crate::text::{parse_int, units};
use roxmltree::{Document, Node};

/// Why an item with no address is not a table: TunerPro files use such
/// items as section titles in the item lists (`----------FUEL----------`).
pub const HEADING: &str = "no address (a section heading)";

/// Most cells (or breakpoints) one table may have. The largest real XDF maps
/// have a few thousand; the cap keeps a hostile count from making the tools
/// read megabytes per table.
pub const MAX_CELLS: u64 = 65_536;

/// Longest unit text kept. Units are copied into every axis that links an
/// item, so an unbounded one would multiply a hostile file's size.
const MAX_UNITS: usize = 256;

/// `mmedtypeflags` bits whose meaning is known (signed, LSB first,
/// column-major, float). Any other bit makes the data unreadable rather
/// than read in a layout it may not have.
const KNOWN_FLAGS: i64 = 0x01 | 0x02 | 0x04 | 0x1_0000;

/// Whether `node` is an element named `name`, in any case.
pub fn is(node: Node, name: &str) -> bool {
    node.is_element() && node.tag_name().name().eq_ignore_ascii_case(name)
}

/// The first child element named `name`.
pub fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| is(*c, name))
}

/// The child elements named `name`, in document order.
pub fn children<'a, 'i: 'a>(
    node: Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children().filter(move |c| is(*c, name))
}

/// The value of attribute `name`, in any case.
pub fn attr<'a>(node: Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.attributes()
        .find(|a| a.name().eq_ignore_ascii_case(name))
        .map(|a| a.value())
}

/// The text of the child element `name` (character references resolved).
pub fn child_text<'a>(node: Node<'a, '_>, name: &str) -> Option<&'a str> {
    child(node, name).map(|c| c.text().unwrap_or_default())
}

/// An integer attribute: none when absent, Err when present but not a
/// number.
pub fn int_attr(node: Node, name: &str) -> Result<Option<i64>, String> {
    match attr(node, name) {
        None => Ok(None),
        Some(v) => parse_int(v)
            .map(Some)
            .ok_or_else(|| format!("{name}=\"{v}\" is not a number")),
    }
}

/// An integer child element's text, like [`int_attr`].
pub fn int_child(node: Node, name: &str) -> Result<Option<i64>, String> {
    match child_text(node, name) {
        None => Ok(None),
        Some(v) => parse_int(v)
            .map(Some)
            .ok_or_else(|| format!("<{name}>{}</{name}> is not a number", v.trim())),
    }
}

/// A unit from the child element `name`, quotes stripped, clipped.
pub fn units_child(node: Node, name: &str) -> Option<String> {
    let u = units(child_text(node, name)?)?;
    Some(match u.char_indices().nth(MAX_UNITS) {
        Some((cut, _)) => u[..cut].to_string(),
        None => u,
    })
}

/// Parses a decoded XDF file, refusing what is not an XML XDF with a
/// sentence that says what to do.
pub fn parse<'t>(file_name: &str, text: &'t str) -> Result<Document<'t>, String> {
    if is_plain_text_xdf(text) {
        return Err(format!(
            "{file_name} is an old plain-text XDF (TunerPro before 5, `%%HEADER%%` sections), \
             not XML: open it in a current TunerPro and save it, which writes XDF 1.50 or later"
        ));
    }
    // No DTD: real XDF files have none, and refusing them rules out entity
    // expansion attacks on top of roxmltree's own limits.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        ..Default::default()
    };
    let doc = Document::parse_with_options(text, opts).map_err(|e| {
        format!(
            "{file_name} is not well-formed XML ({e}): open it in TunerPro and save it again, \
             or correct it in a text editor"
        )
    })?;
    let root = doc.root_element();
    if !is(root, "XDFFORMAT") {
        return Err(format!(
            "{file_name} is not a TunerPro XDF: its root element is <{}>, not <XDFFORMAT>",
            root.tag_name().name()
        ));
    }
    Ok(doc)
}

/// The pre-XML XDF format: a first line `XDF`, then `%%HEADER%%` sections.
pub fn is_plain_text_xdf(text: &str) -> bool {
    let t = text.trim_start_matches('\u{FEFF}').trim_start();
    t.get(..3).is_some_and(|s| s.eq_ignore_ascii_case("XDF"))
        || t.get(..10)
            .is_some_and(|s| s.eq_ignore_ascii_case("%%HEADER%%"))
}

/// Whether the first element of `text` (after declarations, comments and a
/// DOCTYPE) is `<XDFFORMAT`, in any case. `text` may be cut anywhere.
pub fn root_is_xdfformat(text: &str) -> bool {
    let mut s = text.trim_start_matches('\u{FEFF}').trim_start();
    loop {
        let end = if s.starts_with("<?") {
            s.find("?>").map(|i| i + 2)
        } else if s.starts_with("<!--") {
            s.find("-->").map(|i| i + 3)
        } else if s.starts_with("<!") {
            s.find('>').map(|i| i + 1)
        } else {
            break;
        };
        match end {
            Some(end) => s = s[end..].trim_start(),
            None => return false,
        }
    }
    let Some(tag) = s.strip_prefix('<') else {
        return false;
    };
    let name = "XDFFORMAT";
    tag.get(..name.len())
        .is_some_and(|t| t.eq_ignore_ascii_case(name))
        && tag[name.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || c == '>' || c == '/')
}

/// `DEFAULTS`: what items that omit their own storage attributes use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// `datasizeinbits`.
    pub size_bits: Option<i64>,
    /// `signed`.
    pub signed: Option<bool>,
    /// `lsbfirst`.
    pub lsb_first: Option<bool>,
    /// `float`.
    pub float: Option<bool>,
}

/// `XDFHEADER`, as far as reading items needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// `XDFFORMAT version`, e.g. `1.50`.
    pub version: Option<String>,
    /// `deftitle`.
    pub title: Option<String>,
    /// `author`.
    pub author: Option<String>,
    /// `description` (all lines).
    pub description: Option<String>,
    /// `fileversion`.
    pub file_version: Option<String>,
    /// What is added to every item address to give its file offset
    /// (negative when TunerPro's "Subtract" is ticked); Err with the fault
    /// when the header's base offset is not a number.
    pub base: Result<i128, String>,
    /// `DEFAULTS`.
    pub defaults: Defaults,
    /// `REGION size` as written, from the first `REGION` that has one.
    pub region_size: Option<String>,
    /// `CATEGORY` index (0-based) and name, in document order.
    pub categories: Vec<(i64, String)>,
}

fn nonempty(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn flag(node: Node, name: &str) -> Option<bool> {
    attr(node, name).and_then(parse_int).map(|v| v != 0)
}

impl Header {
    /// Reads the header of a parsed XDF (an empty one when it has none).
    pub fn read(doc: &Document) -> Self {
        let root = doc.root_element();
        let version = nonempty(attr(root, "version"));
        let Some(h) = child(root, "XDFHEADER") else {
            return Self {
                version,
                title: None,
                author: None,
                description: None,
                file_version: None,
                base: Ok(0),
                defaults: Defaults::default(),
                region_size: None,
                categories: Vec::new(),
            };
        };
        let defaults = child(h, "DEFAULTS").map_or_else(Defaults::default, |d| Defaults {
            size_bits: attr(d, "datasizeinbits").and_then(parse_int),
            signed: flag(d, "signed"),
            lsb_first: flag(d, "lsbfirst"),
            float: flag(d, "float"),
        });
        let region_size = children(h, "REGION")
            .find_map(|r| attr(r, "size"))
            .map(str::to_string);
        let mut categories = Vec::new();
        for c in children(h, "CATEGORY") {
            if let (Some(index), Some(name)) =
                (attr(c, "index").and_then(parse_int), attr(c, "name"))
            {
                categories.push((index, name.to_string()));
            }
        }
        Self {
            version,
            title: nonempty(child_text(h, "deftitle")),
            author: nonempty(child_text(h, "author")),
            description: nonempty(child_text(h, "description")),
            file_version: nonempty(child_text(h, "fileversion")),
            base: base_offset(h),
            defaults,
            region_size,
            categories,
        }
    }

    /// The bin size (`REGION size`), which is all that identifies an
    /// image of an XDF; Err says what to fix when there is none.
    pub fn bin_size(&self, file_name: &str) -> Result<u64, String> {
        let fix = "set \"Bin Size\" in TunerPro's XDF header dialog and save the file";
        let Some(text) = &self.region_size else {
            return Err(format!(
                "{file_name} has no REGION size in its XDF header, and TunerPro XDFs match \
                 an image by its size alone: {fix}"
            ));
        };
        match parse_int(text) {
            Some(size) if size > 0 => Ok(size as u64),
            _ => Err(format!(
                "{file_name} gives REGION size=\"{text}\", which is not a positive number: {fix}"
            )),
        }
    }

    /// The name of the category a `CATEGORYMEM category="N"` means: `N` is
    /// 1-based and names `CATEGORY index = N−1`.
    pub fn category(&self, member: i64) -> Option<&str> {
        let index = member.checked_sub(1)?;
        self.categories
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, name)| name.as_str())
    }

    /// The file offset of `address` after the base offset; Err when it
    /// falls before the start of the file.
    pub fn offset(&self, address: i64) -> Result<u64, String> {
        let base = self.base.clone()?;
        let offset = i128::from(address) + base;
        u64::try_from(offset).map_err(|_| {
            format!(
                "address {} with base offset {} is file offset {offset}, before the start of the bin",
                hex(address),
                base
            )
        })
    }

    /// How an `EMBEDDEDDATA`'s elements are stored: its own size and flags,
    /// else the `DEFAULTS`.
    pub fn layout(&self, data: Node) -> Result<Layout, String> {
        let bits = match int_attr(data, "mmedelementsizebits")? {
            Some(b) => b,
            None => self.defaults.size_bits.ok_or(
                "no element size (neither mmedelementsizebits nor DEFAULTS datasizeinbits)",
            )?,
        };
        let (signed, lsb_first, column_major, float) = match int_attr(data, "mmedtypeflags")? {
            Some(flags) => {
                let unknown = flags & !KNOWN_FLAGS;
                if unknown != 0 || flags < 0 {
                    return Err(format!(
                        "mmedtypeflags {} sets bits {} whose meaning this family does not know",
                        hex(flags),
                        hex(unknown)
                    ));
                }
                (
                    flags & 0x01 != 0,
                    flags & 0x02 != 0,
                    flags & 0x04 != 0,
                    flags & 0x1_0000 != 0,
                )
            }
            None => (
                self.defaults.signed.unwrap_or(false),
                self.defaults.lsb_first.unwrap_or(false),
                false,
                self.defaults.float.unwrap_or(false),
            ),
        };
        let storage = match (bits, float, signed) {
            (32, true, _) => Storage::Float32,
            (_, true, _) => {
                return Err(format!(
                    "float data of {bits} bits (only 32-bit floats are read)"
                ));
            }
            (8, _, false) => Storage::Uint8,
            (8, _, true) => Storage::Int8,
            (16, _, false) => Storage::Uint16,
            (16, _, true) => Storage::Int16,
            (32, _, false) => Storage::Uint32,
            (32, _, true) => Storage::Int32,
            _ => return Err(format!("element size of {bits} bits (not 8, 16 or 32)")),
        };
        Ok(Layout {
            storage,
            little_endian: lsb_first,
            column_major,
            bits: bits as u64,
        })
    }
}

/// `BASEOFFSET offset="…" subtract="0|1"` (1.60) or `<baseoffset>N</baseoffset>`
/// (1.50), as the signed amount added to addresses.
fn base_offset(header: Node) -> Result<i128, String> {
    let Some(node) = child(header, "BASEOFFSET") else {
        return Ok(0);
    };
    let (offset, subtract) = match attr(node, "offset") {
        Some(v) => {
            let offset = parse_int(v)
                .ok_or_else(|| format!("its base offset offset=\"{v}\" is not a number"))?;
            let subtract = match attr(node, "subtract") {
                None => false,
                Some(s) => {
                    parse_int(s)
                        .ok_or_else(|| format!("its base offset subtract=\"{s}\" is not 0 or 1"))?
                        != 0
                }
            };
            (offset, subtract)
        }
        None => {
            let v = node.text().unwrap_or_default().trim();
            if v.is_empty() {
                return Ok(0);
            }
            let offset =
                parse_int(v).ok_or_else(|| format!("its base offset \"{v}\" is not a number"))?;
            (offset, false)
        }
    };
    let offset = i128::from(offset);
    Ok(if subtract { -offset } else { offset })
}

/// How one item's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Element type.
    pub storage: Storage,
    /// Least significant byte first (flag 0x02 or DEFAULTS `lsbfirst`).
    pub little_endian: bool,
    /// Cells stored column by column (flag 0x04).
    pub column_major: bool,
    /// Element size in bits: 8, 16 or 32.
    pub bits: u64,
}

impl Layout {
    /// Element size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bits / 8
    }

    /// Checks that the strides of `data` describe packed elements, the only
    /// layout the tools read: absent, 0 or one element for the minor
    /// stride; the same, or `row_bits` (one packed row) when given, for the
    /// major stride. Other strides are not understood well enough to read.
    pub fn check_packed(&self, data: Node, row_bits: Option<u64>) -> Result<(), String> {
        let bits = self.bits as i64;
        for name in ["mmedminorstridebits", "mmedmajorstridebits"] {
            let Some(stride) = int_attr(data, name)? else {
                continue;
            };
            let row = name == "mmedmajorstridebits"
                && row_bits.is_some_and(|r| i128::from(stride) == i128::from(r));
            if stride != 0 && stride != bits && !row {
                return Err(format!(
                    "{name}=\"{stride}\" (only packed {bits}-bit elements are read)"
                ));
            }
        }
        Ok(())
    }
}

/// `0x…` for messages.
pub fn hex(v: i64) -> String {
    if v < 0 {
        format!("-0x{:X}", v.unsigned_abs())
    } else {
        format!("0x{v:X}")
    }
}

/// The item's first `CATEGORYMEM category`, when it is a number.
pub fn first_category(item: Node) -> Option<i64> {
    children(item, "CATEGORYMEM")
        .next()
        .and_then(|m| attr(m, "category"))
        .and_then(parse_int)
}

/// The item's `XDFAXIS id="…"`.
pub fn axis<'a, 'i>(item: Node<'a, 'i>, id: &str) -> Option<Node<'a, 'i>> {
    children(item, "XDFAXIS")
        .find(|a| attr(*a, "id").is_some_and(|v| v.trim().eq_ignore_ascii_case(id)))
}

/// Units of an item or axis.
pub fn item_units(node: Node) -> Option<String> {
    units_child(node, "units")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(xml: &str) -> Header {
        let doc = parse("t.xdf", xml).unwrap();
        Header::read(&doc)
    }

    #[test]
    fn base_offset_adds_or_subtracts() {
        let h150 =
            header("<XDFFORMAT><XDFHEADER><baseoffset>0x4000</baseoffset></XDFHEADER></XDFFORMAT>");
        assert_eq!(h150.offset(0xF0), Ok(0x40F0));
        let add = header(
            r#"<XDFFORMAT version="1.60"><XDFHEADER><BASEOFFSET offset="16384" subtract="0"/></XDFHEADER></XDFFORMAT>"#,
        );
        assert_eq!(add.offset(0xF0), Ok(0x40F0));
        let sub = header(
            r#"<XDFFORMAT version="1.60"><XDFHEADER><BASEOFFSET offset="0x8000" subtract="1"/></XDFHEADER></XDFFORMAT>"#,
        );
        assert_eq!(sub.offset(0x80F0), Ok(0xF0));
        let e = sub.offset(0x10).unwrap_err();
        assert!(e.contains("before the start of the bin"), "{e}");
        let none = header("<XDFFORMAT><XDFHEADER/></XDFFORMAT>");
        assert_eq!(none.offset(0x10), Ok(0x10));
        let bad =
            header(r#"<XDFFORMAT><XDFHEADER><BASEOFFSET offset="zz"/></XDFHEADER></XDFFORMAT>"#);
        assert!(bad.offset(0).unwrap_err().contains("offset=\"zz\""));
        // Extreme values neither overflow nor wrap.
        let big = header(
            r#"<XDFFORMAT><XDFHEADER><BASEOFFSET offset="9223372036854775807" subtract="0"/></XDFHEADER></XDFFORMAT>"#,
        );
        assert!(big.offset(i64::MAX).is_ok());
        assert!(header(
            r#"<XDFFORMAT><XDFHEADER><BASEOFFSET offset="9223372036854775807" subtract="1"/></XDFHEADER></XDFFORMAT>"#
        )
        .offset(i64::MIN)
        .is_err());
    }

    #[test]
    fn categories_are_one_based() {
        let h = header(
            r#"<XDFFORMAT><XDFHEADER>
                 <CATEGORY index="0x1B" name="Injection (Einspritzung)"/>
                 <CATEGORY index="0x4A" name="Headings"/>
               </XDFHEADER></XDFFORMAT>"#,
        );
        assert_eq!(h.category(28), Some("Injection (Einspritzung)"));
        assert_eq!(h.category(75), Some("Headings"));
        assert_eq!(h.category(0x4A), None);
        assert_eq!(h.category(0), None);
        assert_eq!(h.category(i64::MIN), None);
    }

    #[test]
    fn storage_flags_and_defaults() {
        let xml = r#"<XDFFORMAT><XDFHEADER>
              <DEFAULTS datasizeinbits="16" signed="1" lsbfirst="1" float="0"/>
            </XDFHEADER>
            <d mmedelementsizebits="8" mmedtypeflags="0x01"/>
            <d mmedelementsizebits="16" mmedtypeflags="0x02"/>
            <d mmedelementsizebits="16" mmedtypeflags="0x07"/>
            <d mmedelementsizebits="32" mmedtypeflags="0x10000"/>
            <d mmedelementsizebits="32" mmedtypeflags="0x0"/>
            <d/>
            <d mmedelementsizebits="16" mmedtypeflags="0x10000"/>
            <d mmedelementsizebits="12"/>
            <d mmedelementsizebits="16" mmedtypeflags="0x08"/>
            <d mmedelementsizebits="16" mmedtypeflags="zz"/>
          </XDFFORMAT>"#;
        let doc = parse("t.xdf", xml).unwrap();
        let h = Header::read(&doc);
        let ds: Vec<_> = children(doc.root_element(), "d")
            .map(|d| h.layout(d))
            .collect();
        let l = |s, le, cm, bits| {
            Ok(Layout {
                storage: s,
                little_endian: le,
                column_major: cm,
                bits,
            })
        };
        assert_eq!(ds[0], l(Storage::Int8, false, false, 8));
        assert_eq!(ds[1], l(Storage::Uint16, true, false, 16));
        assert_eq!(ds[2], l(Storage::Int16, true, true, 16));
        assert_eq!(ds[3], l(Storage::Float32, false, false, 32));
        // Flags given: they decide, not DEFAULTS.
        assert_eq!(ds[4], l(Storage::Uint32, false, false, 32));
        // No flags, no size: DEFAULTS.
        assert_eq!(ds[5], l(Storage::Int16, true, false, 16));
        assert!(
            ds[6]
                .as_ref()
                .unwrap_err()
                .contains("float data of 16 bits")
        );
        assert!(ds[7].as_ref().unwrap_err().contains("12 bits"));
        assert!(ds[8].as_ref().unwrap_err().contains("bits 0x8"));
        assert!(ds[9].as_ref().unwrap_err().contains("not a number"));
    }

    #[test]
    fn packed_strides() {
        let xml = r#"<XDFFORMAT>
            <d mmedmajorstridebits="16" mmedminorstridebits="0"/>
            <d mmedmajorstridebits="-32"/>
            <d mmedmajorstridebits="288"/>
            <d mmedminorstridebits="32"/>
          </XDFFORMAT>"#;
        let doc = parse("t.xdf", xml).unwrap();
        let lay = Layout {
            storage: Storage::Uint16,
            little_endian: false,
            column_major: false,
            bits: 16,
        };
        let ds: Vec<_> = children(doc.root_element(), "d").collect();
        assert!(lay.check_packed(ds[0], None).is_ok());
        assert!(lay.check_packed(ds[1], None).is_err());
        assert!(lay.check_packed(ds[2], None).is_err());
        assert!(lay.check_packed(ds[2], Some(288)).is_ok());
        assert!(lay.check_packed(ds[3], None).is_err());
    }

    #[test]
    fn roots_and_old_formats() {
        assert!(root_is_xdfformat("<XDFFORMAT version=\"1.50\">"));
        assert!(root_is_xdfformat(
            "\u{FEFF}<?xml version=\"1.0\"?>\n<!-- Written -->\n<xdfformat>"
        ));
        assert!(root_is_xdfformat("<XDFFORMAT"));
        assert!(!root_is_xdfformat("<XDFFORMATS>"));
        assert!(!root_is_xdfformat("<rom><XDFFORMAT>"));
        assert!(!root_is_xdfformat("<!-- cut"));
        assert!(!root_is_xdfformat("XDF\n1.110000\n%%HEADER%%"));
        assert!(is_plain_text_xdf(
            "XDF\r\n1.110000\r\n%%HEADER%%\r\n001005 DefTitle =\"x\""
        ));
        let e = parse("old.xdf", "XDF\n1.110000\n%%HEADER%%\n").unwrap_err();
        assert!(e.contains("plain-text XDF"), "{e}");
        let e = parse("r.xml", "<roms/>").unwrap_err();
        assert!(e.contains("root element is <roms>"), "{e}");
        let e = parse("b.xdf", "<XDFFORMAT><a></XDFFORMAT>").unwrap_err();
        assert!(e.starts_with("b.xdf is not well-formed XML"), "{e}");
        let e = parse("d.xdf", "<!DOCTYPE x [<!ENTITY a \"b\">]><XDFFORMAT/>").unwrap_err();
        assert!(e.contains("not well-formed"), "{e}");
    }

    #[test]
    fn bin_size_from_region() {
        let h = header(r#"<XDFFORMAT><XDFHEADER><REGION size="0x8000"/></XDFHEADER></XDFFORMAT>"#);
        assert_eq!(h.bin_size("a.xdf"), Ok(0x8000));
        let e = header("<XDFFORMAT><XDFHEADER/></XDFFORMAT>")
            .bin_size("a.xdf")
            .unwrap_err();
        assert!(e.starts_with("a.xdf has no REGION size"), "{e}");
        let e = header(r#"<XDFFORMAT><XDFHEADER><REGION size="0"/></XDFHEADER></XDFFORMAT>"#)
            .bin_size("a.xdf")
            .unwrap_err();
        assert!(e.contains("not a positive number"), "{e}");
    }
}
