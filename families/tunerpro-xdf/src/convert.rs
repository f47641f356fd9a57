//! XDF items into the family interface's records: which files are XDFs,
//! what identifies their images, and every item as a readable table or an
//! unreadable one with the reason.
//!
//! The rule throughout: an item becomes a table only when every byte of it
//! and every step of its scaling is known exactly; anything else goes to
//! `unreadable` with a sentence, so nothing silently vanishes and nothing
//! is shown wrong.
//!
//! Tables carry no `level`: TunerPro's `vislevel` (1, 2, 5 and 10 in real
//! files) is a user level whose relation to the interface's 1–5 scale is
//! not documented, and a guessed level would hide or expose the wrong
//! tables.

use crate::bindings::exports::benchtop::ecu_family::family::{
    Axis, Candidate, Checksum, Definition, ImageId, Points, Scaling, StoredPoints, Table,
};
use crate::equation::{self, Source, Var};
use crate::text::{decode, decode_head, file_stem, first_line, parse_f64, parse_int};
use crate::xdf::{
    self, HEADING, Header, Layout, MAX_CELLS, attr, axis, child, child_text, children, hex,
    int_attr, int_child, is,
};
use roxmltree::Node;
use std::cell::RefCell;
use std::collections::HashMap;

/// The key of the one definition an XDF file holds.
pub const KEY: &str = "xdf";

/// Characters of the description's first line shown as a field.
const DESCRIPTION_CHARS: usize = 120;

/// Why images of an XDF carry no checksum this family keeps.
pub const NO_CHECKSUM: &str = "TunerPro XDF definitions carry no checksum this family verifies \
     (XDFCHECKSUM is not read); fix the checksum with TunerPro or a checksum plug-in before \
     flashing";

/// Whether a file is a TunerPro XML XDF, from its first bytes: its root
/// element is `<XDFFORMAT`, whatever the file's extension. The old
/// plain-text XDF (`XDF` / `%%HEADER%%`) has no such element and is not
/// claimed.
pub fn claims(_file_name: &str, head: &[u8]) -> bool {
    xdf::root_is_xdfformat(&decode_head(head))
}

/// The one definition an XDF holds. Its image is identified by length
/// only (`REGION size`, TunerPro's "Bin Size"); an XDF without one is an
/// error rather than a candidate, because no image could ever match it.
pub fn identify(file_name: &str, contents: &[u8]) -> Result<Vec<Candidate>, String> {
    let text = decode(contents);
    // The header alone names the bin: parsing it rather than the whole
    // file (754 KB for the MSS54 XDF) took identify from 26 ms to under
    // 1 ms. `resolve` parses, and checks, the whole file.
    let head = header_only(&text);
    let parsed = head.as_deref().map(|h| xdf::parse(file_name, h));
    let doc = match parsed {
        Some(Ok(doc)) => doc,
        _ => xdf::parse(file_name, &text)?,
    };
    candidates(file_name, &doc)
}

/// Like [`identify`], from the file's first bytes only: none when they do
/// not hold the whole `XDFHEADER` (the tools then give the whole file).
pub fn identify_head(file_name: &str, head: &[u8]) -> Option<Result<Vec<Candidate>, String>> {
    let header = header_only(&decode(head))?;
    let doc = xdf::parse(file_name, &header).ok()?;
    Some(candidates(file_name, &doc))
}

/// The one definition an XDF document holds.
fn candidates(file_name: &str, doc: &roxmltree::Document<'_>) -> Result<Vec<Candidate>, String> {
    let header = Header::read(doc);
    let size = header.bin_size(file_name)?;
    Ok(vec![Candidate {
        key: KEY.into(),
        title: header
            .title
            .clone()
            .unwrap_or_else(|| file_stem(file_name).to_string()),
        id: ImageId::Length(size),
        fields: fields(&header),
        includes: Vec::new(),
    }])
}

/// The document cut after its `</XDFHEADER>` and closed: None when the
/// file has no header end to cut at.
fn header_only(text: &str) -> Option<String> {
    const END: &str = "</XDFHEADER>";
    let at = text.find(END)? + END.len();
    Some(format!("{}</XDFFORMAT>", &text[..at]))
}

/// Informational fields: title, author, first line of the description,
/// file version and format version.
fn fields(h: &Header) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut push = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            out.push((k.to_string(), v));
        }
    };
    push("deftitle", h.title.clone());
    push("author", h.author.clone());
    push(
        "description",
        h.description
            .as_deref()
            .map(|d| first_line(d, DESCRIPTION_CHARS)),
    );
    push("fileversion", h.file_version.clone());
    push(
        "format",
        Some(format!(
            "XDF {}",
            h.version.as_deref().unwrap_or("(no version)")
        )),
    );
    out
}

/// The definition of an XDF file: every `XDFTABLE`, `XDFCONSTANT` and
/// `XDFFUNCTION` as a table, in document order, or in `unreadable` with
/// the reason. Items without an address (the section headings TunerPro
/// files use as titles) are listed as unreadable too, so the count of
/// tables and unreadable items always adds up to the file's items.
/// `XDFFLAG`, `XDFPATCH` and `XDFCHECKSUM` are listed as not supported.
pub fn resolve(file_name: &str, contents: &[u8], key: &str) -> Result<Definition, String> {
    if key != KEY {
        return Err(format!(
            "{file_name} holds one definition, key \"{KEY}\"; there is no \"{key}\" \
             (identify the file again)"
        ));
    }
    let text = decode(contents);
    let doc = xdf::parse(file_name, &text)?;
    let header = Header::read(&doc);
    let bin = header.bin_size(file_name)?;
    if let Err(e) = &header.base {
        return Err(format!(
            "{file_name}: {e}: correct the base offset in TunerPro's XDF header dialog"
        ));
    }
    let root = doc.root_element();
    let items: Vec<Node> = root.children().filter(Node::is_element).collect();
    let reader = Reader::new(&header, bin, &items);
    let mut tables = Vec::new();
    let mut unreadable = Vec::new();
    for &item in &items {
        let tag = item.tag_name().name().to_ascii_uppercase();
        let result = match tag.as_str() {
            "XDFHEADER" => continue,
            "XDFTABLE" => reader.table(item),
            "XDFCONSTANT" => reader.constant(item),
            "XDFFUNCTION" => reader.function(item),
            "XDFFLAG" => Err("XDFFLAG is not supported (a bit flag, not a table)".into()),
            "XDFPATCH" => Err("XDFPATCH is not supported (a patch, not a table)".into()),
            "XDFCHECKSUM" => {
                Err("XDFCHECKSUM is not read: this family verifies no checksum".into())
            }
            _ => Err(format!(
                "<{}> is not an XDF item this family knows",
                item.tag_name().name()
            )),
        };
        match result {
            Ok(t) => tables.push(t),
            Err(why) => unreadable.push((title(item), why)),
        }
    }
    let mut fields = fields(&header);
    fields.push(("bin size".into(), format!("0x{bin:X} bytes")));
    Ok(Definition {
        fields,
        chain: vec![file_name.to_string()],
        tables,
        unreadable,
        checksum: Checksum::Unknown(NO_CHECKSUM.into()),
    })
}

/// An item's title; untitled items are named by kind and uniqueid.
fn title(item: Node) -> String {
    match child_text(item, "title").map(str::trim) {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => format!(
            "{} {}",
            item.tag_name().name(),
            attr(item, "uniqueid").unwrap_or("(no uniqueid)")
        ),
    }
}

/// Stored breakpoints an axis link leads to, or why the link cannot be
/// followed.
type Linked = Result<StoredPoints, String>;

struct Reader<'h, 'a, 'i> {
    header: &'h Header,
    bin: u64,
    /// Tables, constants and functions by uniqueid, in document order.
    by_id: HashMap<i64, Vec<Node<'a, 'i>>>,
    /// Each link target resolved once: many axes link the same item, and a
    /// hostile file could otherwise make every link scan every item.
    links: RefCell<HashMap<i64, Linked>>,
}

/// What a linked item offers an axis.
enum Target {
    /// The item has no address at all.
    NoAddress,
    /// Its data as breakpoints, or why it cannot serve as an axis.
    Data(Linked),
}

impl<'h, 'a, 'i> Reader<'h, 'a, 'i> {
    fn new(header: &'h Header, bin: u64, items: &[Node<'a, 'i>]) -> Self {
        let mut by_id: HashMap<i64, Vec<Node>> = HashMap::new();
        for &item in items {
            let linkable = ["XDFTABLE", "XDFCONSTANT", "XDFFUNCTION"]
                .iter()
                .any(|k| is(item, k));
            if let (true, Some(id)) = (linkable, attr(item, "uniqueid").and_then(parse_int)) {
                by_id.entry(id).or_default().push(item);
            }
        }
        Self {
            header,
            bin,
            by_id,
            links: RefCell::new(HashMap::new()),
        }
    }

    fn category(&self, item: Node) -> Option<String> {
        xdf::first_category(item)
            .and_then(|n| self.header.category(n))
            .map(str::to_string)
    }

    /// The file offset of `data`'s address, none when it has none, checked
    /// to hold `count` elements inside the bin.
    fn place(&self, data: Node, layout: &Layout, count: u64) -> Result<Option<u64>, String> {
        let Some(address) = int_attr(data, "mmedaddress")? else {
            return Ok(None);
        };
        let offset = self.header.offset(address)?;
        count
            .checked_mul(layout.bytes())
            .and_then(|len| offset.checked_add(len))
            .filter(|&end| end <= self.bin)
            .ok_or_else(|| {
                format!(
                    "its data at 0x{offset:X} ({count} × {} bits) runs past the end of the \
                     0x{:X}-byte bin (REGION size)",
                    layout.bits, self.bin
                )
            })?;
        Ok(Some(offset))
    }

    fn table(&self, item: Node<'a, 'i>) -> Result<Table, String> {
        let z = axis(item, "z").ok_or("no z axis (XDFAXIS id=\"z\")")?;
        let data = child(z, "EMBEDDEDDATA").ok_or(HEADING)?;
        if attr(data, "mmedaddress").is_none() {
            return Err(HEADING.into());
        }
        let (x, y) = (axis(item, "x"), axis(item, "y"));
        let (rows, cols) = dims(data, x, y)?;
        let layout = self.header.layout(data)?;
        let row_bits = layout.bits * if layout.column_major { rows } else { cols };
        layout.check_packed(data, Some(row_bits))?;
        let address = self.place(data, &layout, rows * cols)?.ok_or(HEADING)?;
        let scaling = scaling(z, &layout, "min", "max")?;
        let (row_axis, col_axis) = match (rows > 1, cols > 1) {
            (true, true) => (
                Some(self.axis(y, "y", rows)?),
                Some(self.axis(x, "x", cols)?),
            ),
            (false, true) => (Some(self.axis(x, "x", cols)?), None),
            (true, false) => (Some(self.axis(y, "y", rows)?), None),
            (false, false) => (None, None),
        };
        Ok(Table {
            name: title(item),
            category: self.category(item),
            address,
            scaling,
            rows: row_axis,
            columns: col_axis,
            // One row or column is stored the same either way.
            column_major: layout.column_major && rows > 1 && cols > 1,
            rows_reversed: false,
            columns_reversed: false,
            level: None,
        })
    }

    fn constant(&self, item: Node<'a, 'i>) -> Result<Table, String> {
        let data = child(item, "EMBEDDEDDATA").ok_or(HEADING)?;
        if attr(data, "mmedaddress").is_none() {
            return Err(HEADING.into());
        }
        let layout = self.header.layout(data)?;
        let address = self.place(data, &layout, 1)?.ok_or(HEADING)?;
        Ok(Table {
            name: title(item),
            category: self.category(item),
            address,
            scaling: scaling(item, &layout, "rangelow", "rangehigh")?,
            rows: None,
            columns: None,
            column_major: false,
            rows_reversed: false,
            columns_reversed: false,
            level: None,
        })
    }

    /// A function's values are its y axis, looked up by its x axis: a
    /// one-axis table with x as the rows.
    fn function(&self, item: Node<'a, 'i>) -> Result<Table, String> {
        let (x, y) = (axis(item, "x"), axis(item, "y"));
        let Some(data) = addressed(y) else {
            return Err(if addressed(x).is_some() {
                "no address for its values (the y axis)".into()
            } else {
                HEADING.into()
            });
        };
        let y = y.ok_or(HEADING)?;
        let count = points(y, data)?.unwrap_or(1);
        let layout = self.header.layout(data)?;
        layout.check_packed(data, None)?;
        let address = self.place(data, &layout, count)?.ok_or(HEADING)?;
        Ok(Table {
            name: title(item),
            category: self.category(item),
            address,
            scaling: scaling(y, &layout, "min", "max")?,
            rows: Some(self.axis(x, "x", count)?),
            columns: None,
            column_major: false,
            rows_reversed: false,
            columns_reversed: false,
            level: None,
        })
    }

    /// The axis `role` of `want` breakpoints: stored at its own address,
    /// taken from the item it links (`embedinfo type="3"`), or fixed
    /// `LABEL`s. Errors are prefixed with the axis.
    fn axis(&self, node: Option<Node<'a, 'i>>, role: &str, want: u64) -> Result<Axis, String> {
        self.axis_points(node, want)
            .map(|points| Axis {
                name: None,
                points,
                reversed: false,
            })
            .map_err(|e| format!("{role} axis: {e}"))
    }

    fn axis_points(&self, node: Option<Node<'a, 'i>>, want: u64) -> Result<Points, String> {
        let node = node.ok_or("missing (no XDFAXIS with this id)")?;
        let data = child(node, "EMBEDDEDDATA");
        let embed = child(node, "embedinfo");
        let kind = match embed {
            Some(e) => int_attr(e, "type")?,
            None => None,
        };
        match kind {
            None | Some(1) => {}
            Some(3) => {
                let e = embed.ok_or("embedinfo without a link")?;
                let id =
                    int_attr(e, "linkobjid")?.ok_or("embedinfo type=\"3\" without linkobjid")?;
                let points = self.linked(id)?;
                if u64::from(points.count) != want {
                    return Err(format!(
                        "linked item {} has {} values for {want} points",
                        hex(id),
                        points.count
                    ));
                }
                return Ok(Points::Stored(points));
            }
            Some(other) => {
                return Err(format!(
                    "embedinfo type=\"{other}\" (an axis source this family does not read)"
                ));
            }
        }
        if let Some(data) = data.filter(|d| attr(*d, "mmedaddress").is_some()) {
            let count = points(node, data)?.unwrap_or(1);
            if count != want {
                return Err(format!("{count} points for {want} cells"));
            }
            let layout = self.header.layout(data)?;
            layout.check_packed(data, None)?;
            let address = self.place(data, &layout, count)?.ok_or(HEADING)?;
            return Ok(Points::Stored(StoredPoints {
                address,
                count: count as u32,
                scaling: scaling(node, &layout, "min", "max")?,
            }));
        }
        labels(node, want).map(Points::Labels)
    }

    /// The breakpoints the items of uniqueid `id` offer. uniqueids repeat in
    /// real files, so the first item of that id that has an address is
    /// taken; when other items of the id have an address but different data
    /// the link is ambiguous and refused.
    fn linked(&self, id: i64) -> Linked {
        if let Some(done) = self.links.borrow().get(&id) {
            return done.clone();
        }
        let result = self.resolve_link(id);
        self.links.borrow_mut().insert(id, result.clone());
        result
    }

    fn resolve_link(&self, id: i64) -> Linked {
        let items = self.by_id.get(&id).map(Vec::as_slice).unwrap_or_default();
        if items.is_empty() {
            return Err(format!("linked item {} not found", hex(id)));
        }
        let mut found: Vec<(Node, Linked)> = Vec::new();
        for &item in items {
            if let Target::Data(d) = self.target(item) {
                found.push((item, d));
            }
        }
        let Some((first, data)) = found.first() else {
            return Err(format!("linked item {} has no address", hex(id)));
        };
        let same = |other: &Linked| match (data, other) {
            (Ok(a), Ok(b)) => same_points(a, b),
            _ => false,
        };
        if found.len() > 1 && !found[1..].iter().all(|(_, d)| same(d)) {
            return Err(format!(
                "linked item {} is ambiguous: {} items with that uniqueid have different data",
                hex(id),
                found.len()
            ));
        }
        data.clone()
            .map_err(|e| format!("linked item {} ({}): {e}", hex(id), title(*first)))
    }

    /// What one item offers an axis that links it: a one-row or one-column
    /// table's values, a constant's value. A function has two sets of
    /// values and which one a link means is not known, so it offers none.
    fn target(&self, item: Node) -> Target {
        if is(item, "XDFCONSTANT") {
            let Some(data) = addressed(Some(item)) else {
                return Target::NoAddress;
            };
            return Target::Data(self.stored(item, data, 1, None, "rangelow", "rangehigh"));
        }
        if is(item, "XDFFUNCTION") {
            if addressed(axis(item, "x"))
                .or(addressed(axis(item, "y")))
                .is_none()
            {
                return Target::NoAddress;
            }
            return Target::Data(Err(
                "is an XDFFUNCTION, and which of its two axes a link means is not known".into(),
            ));
        }
        let Some(z) = axis(item, "z") else {
            return Target::NoAddress;
        };
        let Some(data) = addressed(Some(z)) else {
            return Target::NoAddress;
        };
        Target::Data(
            dims(data, axis(item, "x"), axis(item, "y")).and_then(|(rows, cols)| {
                if rows > 1 && cols > 1 {
                    return Err(format!(
                        "is a {rows}×{cols} table, not a list of breakpoints"
                    ));
                }
                self.stored(z, data, rows * cols, Some(rows.max(cols)), "min", "max")
            }),
        )
    }

    /// `count` elements of `data` with the scaling `holder` gives.
    fn stored(
        &self,
        holder: Node,
        data: Node,
        count: u64,
        row: Option<u64>,
        min: &str,
        max: &str,
    ) -> Linked {
        let layout = self.header.layout(data)?;
        layout.check_packed(data, row.map(|r| r * layout.bits))?;
        let address = self.place(data, &layout, count)?.ok_or(HEADING)?;
        Ok(StoredPoints {
            address,
            count: count as u32,
            scaling: scaling(holder, &layout, min, max)?,
        })
    }
}

/// The `EMBEDDEDDATA` of `node` when it has an address.
fn addressed<'a, 'i>(node: Option<Node<'a, 'i>>) -> Option<Node<'a, 'i>> {
    node.and_then(|n| child(n, "EMBEDDEDDATA"))
        .filter(|d| attr(*d, "mmedaddress").is_some())
}

/// Whether two stored point sets read the same values.
fn same_points(a: &StoredPoints, b: &StoredPoints) -> bool {
    let (sa, sb) = (&a.scaling, &b.scaling);
    a.address == b.address
        && a.count == b.count
        && sa.storage == sb.storage
        && sa.little_endian == sb.little_endian
        && sa.to_physical == sb.to_physical
}

/// A count attribute or element: at least 1 and at most [`MAX_CELLS`].
fn count(v: Option<i64>, what: &str) -> Result<Option<u64>, String> {
    match v {
        None => Ok(None),
        Some(n) if n < 1 => Err(format!("{what} is {n}")),
        Some(n) if n as u64 > MAX_CELLS => Err(format!(
            "too many cells ({what} is {n}; at most {MAX_CELLS} are read)"
        )),
        Some(n) => Ok(Some(n as u64)),
    }
}

/// Rows and columns of a table's z data: `mmedrowcount` / `mmedcolcount`,
/// which must agree with the y / x axes' `indexcount` when both are given.
fn dims(data: Node, x: Option<Node>, y: Option<Node>) -> Result<(u64, u64), String> {
    let side = |attr_name: &str, axis: Option<Node>, role: &str| -> Result<u64, String> {
        let own = count(int_attr(data, attr_name)?, attr_name)?;
        let index = match axis {
            Some(a) => count(int_child(a, "indexcount")?, &format!("{role} indexcount"))?,
            None => None,
        };
        match (own, index) {
            (Some(a), Some(b)) if a != b => Err(format!(
                "{attr_name} is {a} but the {role} axis has {b} points"
            )),
            (a, b) => Ok(a.or(b).unwrap_or(1)),
        }
    };
    let rows = side("mmedrowcount", y, "y")?;
    let cols = side("mmedcolcount", x, "x")?;
    match rows.checked_mul(cols) {
        Some(cells) if cells <= MAX_CELLS => Ok((rows, cols)),
        _ => Err(format!(
            "too many cells ({rows} × {cols}; at most {MAX_CELLS} are read)"
        )),
    }
}

/// Points of a stored axis: `indexcount`, or `mmedcolcount`; both must
/// agree when given.
fn points(node: Node, data: Node) -> Result<Option<u64>, String> {
    let index = count(int_child(node, "indexcount")?, "indexcount")?;
    let cols = count(int_attr(data, "mmedcolcount")?, "mmedcolcount")?;
    match (index, cols) {
        (Some(a), Some(b)) if a != b => Err(format!("indexcount is {a} but mmedcolcount is {b}")),
        (a, b) => Ok(a.or(b)),
    }
}

/// Fixed labels: exactly `want` `LABEL`s with indexes 0..want−1 (empty
/// values are kept: TunerPro writes `value=""` on single-point axes).
fn labels(node: Node, want: u64) -> Result<Vec<String>, String> {
    let mut found: Vec<(i64, String)> = Vec::new();
    for l in children(node, "LABEL") {
        if found.len() as u64 >= want {
            return Err(format!("more LABELs than its {want} points"));
        }
        let index = int_attr(l, "index")?.ok_or("a LABEL without index")?;
        found.push((index, attr(l, "value").unwrap_or_default().to_string()));
    }
    if found.is_empty() {
        return Err("no address, link or labels".into());
    }
    found.sort_by_key(|(i, _)| *i);
    let in_order = found.iter().enumerate().all(|(n, (i, _))| *i == n as i64);
    if found.len() as u64 != want || !in_order {
        return Err(format!(
            "{} LABELs (indexes {}..{}) for {want} points",
            found.len(),
            found.first().map_or(0, |f| f.0),
            found.last().map_or(0, |f| f.0)
        ));
    }
    Ok(found.into_iter().map(|(_, v)| v).collect())
}

/// The scaling `holder` (an axis, or a constant) gives data of `layout`:
/// its one `MATH` rewritten (none means the raw value, TunerPro's default
/// `X`), `units`, `decimalpl` as a printf format, and the `min` / `max`
/// child elements named when they are numbers.
fn scaling(holder: Node, layout: &Layout, min: &str, max: &str) -> Result<Scaling, String> {
    let maths: Vec<Node> = children(holder, "MATH").take(2).collect();
    let eq = match maths.as_slice() {
        [] => equation::Scaling {
            to_physical: "x".into(),
            from_physical: Some("x".into()),
        },
        [math] => {
            if let Some(row) = attr(*math, "row") {
                return Err(format!("MATH for one row (row=\"{row}\") is not supported"));
            }
            let text = attr(*math, "equation").ok_or("MATH without an equation")?;
            equation::rewrite(text, &vars(*math))?
        }
        _ => return Err("more than one MATH (per-row equations are not supported)".into()),
    };
    let bound = |name: &str| child_text(holder, name).and_then(parse_f64);
    let format = int_child(holder, "decimalpl")
        .ok()
        .flatten()
        .filter(|d| (0..=15).contains(d))
        .map(|d| format!("%0.{d}f"));
    Ok(Scaling {
        name: None,
        storage: layout.storage,
        little_endian: layout.little_endian,
        to_physical: eq.to_physical,
        from_physical: eq.from_physical,
        units: xdf::item_units(holder),
        format,
        min: bound(min),
        max: bound(max),
        choices: Vec::new(),
    })
}

/// A `MATH`'s `VAR`s: no `type` is the item's own value.
fn vars(math: Node) -> Vec<Var> {
    children(math, "VAR")
        .take(64)
        .map(|v| {
            let id = attr(v, "id").unwrap_or_default().to_string();
            let t = attr(v, "type").map(str::trim).unwrap_or_default();
            let source = if t.is_empty() {
                Source::Own
            } else if t.eq_ignore_ascii_case("link") {
                Source::Link(attr(v, "linkid").unwrap_or("no linkid").to_string())
            } else if t.eq_ignore_ascii_case("address") {
                Source::Address(attr(v, "address").unwrap_or("no address").to_string())
            } else {
                Source::Other(t.to_string())
            };
            Var { id, source }
        })
        .collect()
}
