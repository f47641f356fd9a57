//! RomRaider ECU definitions (`<roms><rom base="…">`), the second
//! definition family: one document holds many `<rom>`s, a rom inherits
//! from the rom its `base=` names, and the chain resolves into the same
//! family-neutral [`Definition`] ECUFlash chains resolve into, so every
//! tool reads and patches a RomRaider definition unchanged.
//!
//! The rules follow RomRaider's own loader (`DOMRomUnmarshaller`,
//! `TableScaleUnmarshaller`, `Table3D`, `DataCell`, `RomAttributeParser`;
//! reference/ecu-families.md section 2):
//!
//! - the base chain is unmarshalled base first; a rom's `<table>` looks an
//!   inherited table up by name (RomRaider keys its table map by the
//!   lower-cased name, so case is ignored but spaces are not: `Target Boost`
//!   and `Target Boost ` are two tables) and overrides only what it carries;
//! - a table is instantiated only when some rom of the chain gives that
//!   exact name a `storageaddress` (the child's wins); axis-typed tables
//!   always are; a named table with no inherited match and no `type` is
//!   RomRaider's "Table type unspecified" and is listed in
//!   [`Definition::unresolvable`];
//! - `omit="true"` removes a table, `base="Other"` on a table starts from a
//!   copy of `Other`, `<scaling base="name">` from a copy of a
//!   `<scalingbase>` (or any scaling unmarshalled before it);
//! - floats are big-endian unless `memmodel@endian` says otherwise (the
//!   "legacy float endian" quirk), and `memmodel@endian` overrides every
//!   table's byte order.
//!
//! Where RomRaider depends on the image, the model cannot follow: RomRaider
//! subtracts ramOffset = `filesize` − actual file length from every
//! address. A [`Definition`] is resolved before any image is seen, so this
//! reader assumes `filesize` equals the image's length (ramOffset 0, true
//! for complete reads such as the Subaru fixtures); a romid `<offset>` (a
//! fixed ramOffset) and `noramoffset` are applied.
//!
//! Deliberate departures from RomRaider's code, all for inputs the real
//! definitions do not contain: an `omit` table does not stop the address
//! scan of the rest of its rom (RomRaider's `return` does); an axis never
//! takes the address of a top-level table that happens to share its name;
//! axes are always sized to their table (RomRaider resizes them only when
//! the overriding rom repeats the axis element); the current scaling's
//! `Metric`/`Default` choice follows RomRaider's default settings; the
//! memory model's `endian` is taken from the last rom of the chain that
//! names a memory model, for all its tables.

use ecu_model::RomId;
use ecu_model::definition::{Axis, AxisSource, Definition, MAX_AXIS_ELEMENTS, Table, TableType};
use ecu_model::expr::Expr;
use ecu_model::printf::Format;
use ecu_model::scaling::{Endian, Kind, Scaling, Storage};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

pub use ecu_model::sniff::is_romraider;

/// A parsed RomRaider document: every `<rom>` as written, before any
/// inheritance is resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    /// Every `<rom>` child of the root, in document order.
    pub roms: Vec<Rom>,
    /// Root-level `<scalingbase>` elements (attributes as written), which
    /// `<scaling base="name">` copies.
    pub scaling_bases: Vec<BTreeMap<String, String>>,
}

/// One `<rom>` element as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rom {
    /// Its `<romid>`: xmlid, internal id (an `internalidstring` starting
    /// with `0x` becomes [`RomId::internal_id_hex`]), and every child by
    /// lower-cased tag name in [`RomId::fields`].
    pub romid: RomId,
    /// The `base=` attribute: the xmlid this rom inherits from.
    pub base: Option<String>,
    /// The `endian` attribute of `<memmodel>`, when given.
    pub memmodel_endian: Option<String>,
    /// Top-level `<table>` elements, in order.
    pub tables: Vec<TableElement>,
    /// `<checksum>` elements (attributes as written, e.g. `type="std"`).
    pub checksums: Vec<BTreeMap<String, String>>,
}

/// A `<table>` element (or an axis `<table>` inside one) as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableElement {
    /// Every attribute as written (`name`, `type`, `storageaddress`, …);
    /// RomRaider treats the value `NaN` as absent, and so does this reader.
    pub attrs: BTreeMap<String, String>,
    /// Child `<table>` elements (axes).
    pub tables: Vec<TableElement>,
    /// Child `<scaling>` elements' attributes, in order.
    pub scalings: Vec<BTreeMap<String, String>>,
    /// Child `<data>` texts (cells of a static axis).
    pub data: Vec<String>,
    /// Child `<state name data>` of a Switch, in order.
    pub states: Vec<(String, String)>,
    /// Child `<bit name position>` of a BitwiseSwitch, in order.
    pub bits: Vec<(String, String)>,
    /// The `<description>` child's text.
    pub description: Option<String>,
}

impl TableElement {
    /// The attribute `key`, unless absent or `NaN` (as RomRaider reads it).
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .get(key)
            .map(String::as_str)
            .filter(|v| *v != "NaN")
    }
}

/// Parses a RomRaider document (root `<roms>`; a lone `<rom>` root is
/// accepted as a one-rom document).
pub fn parse(text: &str) -> Result<Document, String> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let mut out = Document::default();
    let rom_nodes: Vec<roxmltree::Node> = if is(root, "roms") {
        for n in elements(root).filter(|n| is(*n, "scalingbase")) {
            out.scaling_bases.push(attributes(n));
        }
        elements(root).filter(|n| is(*n, "rom")).collect()
    } else if is(root, "rom") {
        vec![root]
    } else {
        return Err(format!(
            "root element is <{}>, expected <roms> (a RomRaider definition)",
            root.tag_name().name()
        ));
    };
    for node in rom_nodes {
        let mut rom = Rom {
            base: node
                .attribute("base")
                .map(str::trim)
                .filter(|b| !b.is_empty() && !b.eq_ignore_ascii_case("none"))
                .map(str::to_string),
            ..Default::default()
        };
        for child in elements(node) {
            if is(child, "romid") {
                let (id, endian) = romid(child);
                rom.romid = id;
                rom.memmodel_endian = endian;
            } else if is(child, "table") {
                rom.tables.push(table_element(child));
            } else if is(child, "checksum") {
                rom.checksums.push(
                    child
                        .attributes()
                        .map(|a| (a.name().to_ascii_lowercase(), a.value().to_string()))
                        .collect(),
                );
            }
        }
        out.roms.push(rom);
    }
    Ok(out)
}

fn elements<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.children().filter(|n| n.is_element())
}

/// RomRaider compares element names ignoring case.
fn is(node: roxmltree::Node, tag: &str) -> bool {
    node.tag_name().name().eq_ignore_ascii_case(tag)
}

fn attributes(node: roxmltree::Node) -> BTreeMap<String, String> {
    node.attributes()
        .map(|a| (a.name().to_string(), a.value().to_string()))
        .collect()
}

/// The text children of `node`, concatenated (RomRaider's `unmarshallText`).
fn text_of(node: roxmltree::Node) -> String {
    node.children()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

fn romid(node: roxmltree::Node) -> (RomId, Option<String>) {
    let mut id = RomId::default();
    let mut endian = None;
    for child in elements(node) {
        let key = child.tag_name().name().to_ascii_lowercase();
        let value = text_of(child).trim().to_string();
        let some = Some(value.clone()).filter(|v| !v.is_empty());
        match key.as_str() {
            "xmlid" => id.xmlid = some,
            "internalidaddress" => id.internal_id_address = some,
            "internalidstring" => match value.get(..2) {
                Some(p) if p.eq_ignore_ascii_case("0x") && value.len() > 2 => {
                    id.internal_id_hex = Some(value[2..].split_whitespace().collect())
                }
                _ => id.internal_id_string = some,
            },
            "memmodel" => endian = child.attribute("endian").map(str::to_string),
            _ => {}
        }
        id.fields.insert(key, value);
    }
    (id, endian)
}

fn table_element(node: roxmltree::Node) -> TableElement {
    let mut t = TableElement {
        attrs: attributes(node),
        ..Default::default()
    };
    for child in elements(node) {
        let tag = child.tag_name().name().to_ascii_lowercase();
        match tag.as_str() {
            "table" => t.tables.push(table_element(child)),
            "scaling" => t.scalings.push(attributes(child)),
            // A static cell is the first token of the text (RomRaider's
            // DataCell splits on tabs and line breaks, not spaces).
            // RomRaider keeps the spaces around it; they carry nothing and
            // would only get in the way of finding a row by its label.
            "data" => t.data.push(
                text_of(child)
                    .split(['\t', '\n', '\r', '\u{c}'])
                    .find(|s| !s.is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            ),
            "state" => t.states.push((
                child.attribute("name").unwrap_or("").to_string(),
                child.attribute("data").unwrap_or("0").to_string(),
            )),
            "bit" => t.bits.push((
                child.attribute("name").unwrap_or("").to_string(),
                child.attribute("position").unwrap_or("").to_string(),
            )),
            "description" => t.description = Some(text_of(child).trim().to_string()),
            _ => {}
        }
    }
    t
}

impl Document {
    /// The romid of every `<rom>`, in document order, as written (not
    /// merged with its bases).
    pub fn roms(&self) -> impl Iterator<Item = &RomId> {
        self.roms.iter().map(|r| &r.romid)
    }

    /// Resolves the rom whose xmlid is `xmlid` (case-insensitive, the first
    /// such rom as in RomRaider) with its `base=` chain into a
    /// [`Definition`]; `file` is recorded as the definition's file. Fails
    /// when the xmlid or a base is missing or the chain loops.
    pub fn definition(&self, xmlid: &str, file: PathBuf) -> Result<Definition, String> {
        let chain = self.chain(xmlid)?;
        Ok(Builder::new(self, &chain).build(file))
    }

    fn find(&self, xmlid: &str) -> Option<&Rom> {
        let want = xmlid.trim();
        self.roms.iter().find(|r| {
            r.romid
                .xmlid
                .as_deref()
                .is_some_and(|x| x.eq_ignore_ascii_case(want))
        })
    }

    /// The rom and its bases, base first.
    fn chain(&self, xmlid: &str) -> Result<Vec<&Rom>, String> {
        let mut chain: Vec<&Rom> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        let mut next = Some(xmlid.to_string());
        while let Some(id) = next {
            let Some(rom) = self.find(&id) else {
                let known: Vec<&str> = self
                    .roms
                    .iter()
                    .filter_map(|r| r.romid.xmlid.as_deref())
                    .collect();
                return Err(match chain.last() {
                    None => format!(
                        "no <rom> with xmlid `{id}` in this RomRaider document (it has: {})",
                        known.join(", ")
                    ),
                    Some(child) => format!(
                        "rom `{}` has base=\"{id}\", but no <rom> in this document has that xmlid (it has: {})",
                        child.romid.xmlid.as_deref().unwrap_or("?"),
                        known.join(", ")
                    ),
                });
            };
            let key = id.to_ascii_lowercase();
            if seen.contains(&key) {
                seen.push(key);
                return Err(format!("base= chain loops: {}", seen.join(" → ")));
            }
            seen.push(key);
            chain.push(rom);
            next = rom.base.clone();
        }
        chain.reverse();
        Ok(chain)
    }
}

// ------------------------------------------------------------ unmarshalling

/// RomRaider's `storagetype`, as its storage-type code.
#[derive(Debug, Clone, Copy, PartialEq)]
enum RrStorage {
    /// `uintN`/`intN`: N/8 bytes (or a plain number of bytes).
    Bytes(u32),
    Float,
    Movi20,
    Movi20s,
}

fn parse_storage(text: &str) -> Result<RrStorage, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("movi20") {
        return Ok(RrStorage::Movi20);
    }
    if t.eq_ignore_ascii_case("movi20s") {
        return Ok(RrStorage::Movi20s);
    }
    if t.eq_ignore_ascii_case("float") {
        return Ok(RrStorage::Float);
    }
    let bits = t.strip_prefix("uint").or_else(|| t.strip_prefix("int"));
    let n = match bits {
        Some(b) => b.parse::<u32>().map(|b| b / 8),
        None => t.parse::<u32>(),
    }
    .map_err(|_| format!("unknown storagetype `{t}`"))?;
    Ok(match n {
        20 if bits.is_none() => RrStorage::Movi20,
        28 if bits.is_none() => RrStorage::Movi20s,
        99 if bits.is_none() => RrStorage::Float,
        n => RrStorage::Bytes(n),
    })
}

/// One `<scaling>` as RomRaider's `Scale` holds it.
#[derive(Debug, Clone, PartialEq)]
struct Scale {
    category: String,
    name: String,
    units: String,
    expression: String,
    to_byte: String,
    format: String,
    /// `min`/`max` when written (RomRaider's 0.0 default means unset).
    min: Option<f64>,
    max: Option<f64>,
}

impl Default for Scale {
    /// RomRaider's raw scale.
    fn default() -> Self {
        Self {
            category: "Raw Value".into(),
            name: "Raw Value".into(),
            units: "raw value".into(),
            expression: "x".into(),
            to_byte: "x".into(),
            format: "#.##".into(),
            min: None,
            max: None,
        }
    }
}

/// What a table is, from its `type` when it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RrType {
    D1,
    D2,
    D3,
    /// `X Axis`, `Y Axis` and their static forms at top level (a Table1D).
    Axis,
    Switch,
    Bitwise,
}

/// A table while the chain is unmarshalled (RomRaider's Table object).
#[derive(Debug, Clone)]
struct State {
    name: String,
    rr_type: RrType,
    /// The `type` text last given (axes keep it for the model's role).
    xml_type: String,
    category: Option<String>,
    storage: Option<RrStorage>,
    signed: bool,
    endian: Endian,
    address: Option<i64>,
    data_size: usize,
    flip: bool,
    before_ram: bool,
    data_layout: String,
    mask: Option<u32>,
    user_level: u32,
    swap_xy: bool,
    flip_x: bool,
    flip_y: bool,
    size_x: usize,
    size_y: usize,
    skip_cells: usize,
    scales: Vec<Scale>,
    /// Category of the current scale.
    current: Option<String>,
    labels: Option<Vec<String>>,
    states: Vec<(String, String)>,
    bits: Vec<(String, String)>,
    axis: Option<Box<State>>,
    x_axis: Option<Box<State>>,
    y_axis: Option<Box<State>>,
    /// Attribute values RomRaider could not parse.
    errors: Vec<String>,
}

impl State {
    fn new(name: String, rr_type: RrType, xml_type: String) -> Self {
        // Switches start as one-byte storage (TableSwitch's constructor).
        let storage =
            matches!(rr_type, RrType::Switch | RrType::Bitwise).then_some(RrStorage::Bytes(1));
        Self {
            name,
            rr_type,
            xml_type,
            category: None,
            storage,
            signed: false,
            endian: Endian::Big,
            address: None,
            data_size: 1,
            flip: false,
            before_ram: false,
            data_layout: String::new(),
            mask: None,
            user_level: 0,
            swap_xy: false,
            flip_x: false,
            flip_y: false,
            size_x: 1,
            size_y: 1,
            skip_cells: 0,
            scales: Vec::new(),
            current: None,
            labels: None,
            states: Vec::new(),
            bits: Vec::new(),
            axis: None,
            x_axis: None,
            y_axis: None,
            errors: Vec::new(),
        }
    }

    fn axis_new(xml_type: &str) -> Box<State> {
        Box::new(State::new(
            String::new(),
            RrType::Axis,
            xml_type.to_string(),
        ))
    }

    /// `Table.addScale`: replaces the scale of the same category; the
    /// current scale becomes the first one, or the one of RomRaider's
    /// default category ("Metric") or "Default".
    fn add_scale(&mut self, scale: Scale) {
        self.scales
            .retain(|s| !s.category.eq_ignore_ascii_case(&scale.category));
        if self.current.is_none()
            || scale.category.eq_ignore_ascii_case("Metric")
            || scale.category.eq_ignore_ascii_case("Default")
        {
            self.current = Some(scale.category.clone());
        }
        self.scales.push(scale);
    }

    fn current_scale(&self) -> Option<&Scale> {
        let cat = self.current.as_deref()?;
        self.scales
            .iter()
            .find(|s| s.category.eq_ignore_ascii_case(cat))
            .or_else(|| self.scales.first())
    }
}

/// Which axis slot an axis `type` fills (`parseTableAxis`).
fn axis_role(xml_type: &str) -> Option<char> {
    let t = xml_type.trim();
    if ["X Axis", "Static X Axis", "4"]
        .iter()
        .any(|k| t.eq_ignore_ascii_case(k))
    {
        Some('X')
    } else if ["Y Axis", "Static Y Axis", "5"]
        .iter()
        .any(|k| t.eq_ignore_ascii_case(k))
    {
        Some('Y')
    } else {
        None
    }
}

/// `RomAttributeParser.parseHexString` (0x optional; a leading `-` allowed).
fn parse_address(text: &str) -> Option<i64> {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let v = i64::from_str_radix(t, 16).ok()?;
    Some(if neg { -v } else { v })
}

fn parse_bool(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case("true")
}

struct Builder<'d> {
    doc: &'d Document,
    chain: Vec<&'d Rom>,
    /// Exact name → address, the child's first (`filterFoundRomTables`).
    filter: HashMap<String, i64>,
    /// Scales by lower-cased name, for `<scaling base=…>`.
    scale_registry: HashMap<String, Scale>,
    /// Tables in RomRaider's map order, keyed by lower-cased name.
    tables: Vec<Option<State>>,
    index: HashMap<String, usize>,
    /// Tables RomRaider refuses while unmarshalling, by name.
    refused: Vec<(String, String)>,
}

impl<'d> Builder<'d> {
    fn new(doc: &'d Document, chain: &[&'d Rom]) -> Self {
        let mut filter: HashMap<String, i64> = HashMap::new();
        for rom in chain.iter().rev() {
            for t in &rom.tables {
                if t.attr("omit").is_some_and(parse_bool) {
                    continue;
                }
                let (Some(name), Some(address)) = (
                    t.attr("name"),
                    t.attr("storageaddress").and_then(parse_address),
                ) else {
                    continue;
                };
                if address < 0 {
                    continue;
                }
                match filter.get(name) {
                    None => {
                        filter.insert(name.to_string(), address);
                    }
                    Some(&old) if old < 1 => {
                        filter.insert(name.to_string(), address);
                    }
                    Some(_) => {}
                }
            }
        }
        Self {
            doc,
            chain: chain.to_vec(),
            filter,
            scale_registry: HashMap::new(),
            tables: Vec::new(),
            index: HashMap::new(),
            refused: Vec::new(),
        }
    }

    fn memmodel_endian(&self) -> Option<Endian> {
        let rom = self
            .chain
            .iter()
            .rev()
            .find(|r| r.romid.fields.contains_key("memmodel"))?;
        let e = rom.memmodel_endian.as_deref()?;
        Some(if e.trim().eq_ignore_ascii_case("little") {
            Endian::Little
        } else {
            Endian::Big
        })
    }

    fn build(mut self, file: PathBuf) -> Definition {
        for base in &self.doc.scaling_bases {
            // A bad number in a scalingbase only matters to its users.
            let _ = self.unmarshall_scale(base, Scale::default());
        }
        let chain = self.chain.clone();
        let mut romid = RomId::default();
        for rom in &chain {
            merge_romid(&mut romid, &rom.romid);
            for element in &rom.tables {
                self.unmarshall_top(element);
            }
        }
        let memmodel_endian = self.memmodel_endian();
        let offset = romid_offset(&romid);

        let mut tables = Vec::new();
        let mut unresolvable = Vec::new();
        let present: HashSet<String> = self.index.keys().cloned().collect();
        for (name, reason) in std::mem::take(&mut self.refused) {
            if !present.contains(&name.to_lowercase()) {
                unresolvable.push((name, reason));
            }
        }
        let resolver = Resolver {
            memmodel_endian,
            offset,
            filter: &self.filter,
        };
        for state in self.tables.iter().flatten() {
            match resolver.table(state) {
                Ok(Some(t)) => tables.push(t),
                Ok(None) => {}
                Err(reason) => unresolvable.push((state.name.clone(), reason)),
            }
        }

        let mut fields: HashMap<String, String> = romid
            .fields
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        checksum_fields(&mut fields, &chain, &tables, &romid);
        Definition::new(
            file,
            romid,
            fields,
            chain
                .iter()
                .map(|r| r.romid.xmlid.clone().unwrap_or_default())
                .collect(),
            tables,
            unresolvable,
        )
    }

    /// `DOMRomUnmarshaller.unmarshallRom`'s handling of one top-level
    /// `<table>`.
    fn unmarshall_top(&mut self, element: &TableElement) {
        let Some(name) = element.attr("name").map(str::to_string) else {
            return;
        };
        let key = name.to_lowercase();
        let existing = self.index.get(&key).copied();
        if element.attr("omit").is_some_and(parse_bool) {
            if let Some(i) = existing {
                self.tables[i] = None;
                self.index.remove(&key);
            }
            return;
        }
        let mut state = existing.and_then(|i| self.tables[i].clone());
        // base="Other" starts from a copy of Other (when Other exists).
        if let Some(copy) = element
            .attr("base")
            .filter(|b| !b.eq_ignore_ascii_case("none"))
            .and_then(|b| self.index.get(&b.to_lowercase()))
            .and_then(|&i| self.tables[i].clone())
        {
            state = Some(copy);
        }
        let mut state = match state {
            Some(s) => s,
            None => {
                let xml_type = element.attr("type").unwrap_or("none").to_string();
                if !self.filter.contains_key(&name) && !xml_type.contains("xis") {
                    // Never addressed in the chain: RomRaider does not build it.
                    return;
                }
                let t = xml_type.trim();
                let rr_type = if t.eq_ignore_ascii_case("3D") {
                    RrType::D3
                } else if t.eq_ignore_ascii_case("2D") {
                    RrType::D2
                } else if t.eq_ignore_ascii_case("1D") {
                    RrType::D1
                } else if ["X Axis", "Static X Axis", "Y Axis", "Static Y Axis"]
                    .iter()
                    .any(|k| t.eq_ignore_ascii_case(k))
                {
                    RrType::Axis
                } else if t.eq_ignore_ascii_case("Switch") {
                    RrType::Switch
                } else if t.eq_ignore_ascii_case("BitwiseSwitch") {
                    RrType::Bitwise
                } else if t.eq_ignore_ascii_case("none") {
                    self.refused.push((
                        name,
                        "Table type unspecified: no table of this name in the base roms and no type= here (RomRaider skips it)".into(),
                    ));
                    return;
                } else {
                    self.refused.push((
                        name,
                        format!("table type `{t}` is unknown (RomRaider skips it)"),
                    ));
                    return;
                };
                State::new(name.clone(), rr_type, xml_type)
            }
        };
        self.apply(element, &mut state);
        let key = state.name.to_lowercase();
        match self.index.get(&key) {
            Some(&i) => self.tables[i] = Some(state),
            None => {
                self.index.insert(key, self.tables.len());
                self.tables.push(Some(state));
            }
        }
    }

    /// `TableScaleUnmarshaller.unmarshallTable` on an existing table.
    fn apply(&mut self, e: &TableElement, t: &mut State) {
        if let Some(n) = e.attr("name") {
            t.name = n.to_string();
        }
        if let Some(ty) = e.attr("type") {
            t.xml_type = ty.to_string();
        }
        if e.attr("beforeram").is_some_and(parse_bool) {
            t.before_ram = true;
        }
        t.data_layout = e.attr("dataLayout").unwrap_or("").trim().to_string();
        if let Some(c) = e.attr("category") {
            t.category = Some(c.trim().replace(" //", "//").replace("// ", "//"));
        }
        if let Some(st) = e.attr("storagetype") {
            match parse_storage(st) {
                Ok(s) => {
                    // RomRaider decides the sign once, with the first
                    // storagetype a table gets.
                    if t.storage.is_none() {
                        let l = st.trim().to_ascii_lowercase();
                        t.signed = l.starts_with("int") || l.starts_with("movi20");
                    }
                    t.storage = Some(s);
                }
                Err(err) => t.errors.push(err),
            }
        }
        if let Some(en) = e.attr("endian") {
            // An unknown word is little-endian in RomRaider.
            t.endian = if en.trim().eq_ignore_ascii_case("big") {
                Endian::Big
            } else {
                Endian::Little
            };
        }
        if let Some(a) = e.attr("storageaddress") {
            match parse_address(a) {
                Some(v) => t.address = Some(v),
                None => t
                    .errors
                    .push(format!("storageaddress `{a}` is not a hex number")),
            }
        }
        let int_attr = |key: &str, errors: &mut Vec<String>| -> Option<usize> {
            let v = e.attr(key)?;
            match v.trim().parse::<usize>() {
                Ok(n) => Some(n),
                Err(_) => {
                    errors.push(format!("{key}=\"{v}\" is not a number"));
                    None
                }
            }
        };
        if let Some(n) =
            int_attr("sizey", &mut t.errors).or_else(|| int_attr("sizex", &mut t.errors))
        {
            t.data_size = n;
        }
        if let Some(f) = e.attr("flipy").or_else(|| e.attr("flipx")) {
            t.flip = parse_bool(f);
        }
        if let Some(n) = int_attr("userlevel", &mut t.errors) {
            t.user_level = n as u32;
        }
        if let Some(m) = e.attr("mask").filter(|m| !m.trim().is_empty()) {
            match u32::from_str_radix(m.trim().trim_start_matches("0x"), 16) {
                Ok(v) => t.mask = Some(v),
                Err(_) => t.errors.push(format!("mask `{m}` is not hex")),
            }
        }
        if t.rr_type == RrType::D3 {
            if let Some(v) = e.attr("swapxy") {
                t.swap_xy = parse_bool(v);
            }
            if let Some(v) = e.attr("flipx") {
                t.flip_x = parse_bool(v);
            }
            if let Some(v) = e.attr("flipy") {
                t.flip_y = parse_bool(v);
            }
            if let Some(n) = int_attr("sizex", &mut t.errors) {
                t.size_x = n;
            }
            if let Some(n) = int_attr("sizey", &mut t.errors) {
                t.size_y = n;
            }
            if let Some(n) = int_attr("skipCells", &mut t.errors) {
                t.skip_cells = n;
            }
        }

        // Children, in RomRaider's order of handling (document order).
        for child in &e.tables {
            let Some(role) = child.attr("type").and_then(axis_role) else {
                continue;
            };
            let ty = child.attr("type").unwrap_or("");
            let slot = match (t.rr_type, role) {
                (RrType::D2, _) => &mut t.axis,
                (RrType::D3, 'X') => &mut t.x_axis,
                (RrType::D3, _) => &mut t.y_axis,
                _ => continue,
            };
            let mut axis = slot.take().unwrap_or_else(|| State::axis_new(ty));
            self.apply(child, &mut axis);
            *slot = Some(axis);
        }
        for s in &e.scalings {
            let category = s
                .get("category")
                .map(String::as_str)
                .unwrap_or("Default")
                .to_string();
            let start = t
                .scales
                .iter()
                .find(|x| x.category.eq_ignore_ascii_case(&category))
                .cloned()
                .unwrap_or_default();
            let scale = self.unmarshall_scale(s, start);
            match scale {
                Ok(scale) => t.add_scale(scale),
                Err(err) => t.errors.push(err),
            }
        }
        if !e.data.is_empty() && t.rr_type != RrType::D2 && t.rr_type != RrType::D3 {
            t.labels = Some(e.data.clone());
        }
        for (name, data) in &e.states {
            match t
                .states
                .iter_mut()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                Some(slot) => *slot = (name.clone(), data.clone()),
                None => t.states.push((name.clone(), data.clone())),
            }
        }
        if t.rr_type == RrType::Bitwise {
            t.bits
                .extend(e.bits.iter().filter(|(_, p)| !p.trim().is_empty()).cloned());
        }
    }

    /// `TableScaleUnmarshaller.unmarshallScale`.
    fn unmarshall_scale(
        &mut self,
        attrs: &BTreeMap<String, String>,
        mut scale: Scale,
    ) -> Result<Scale, String> {
        let attr = |k: &str| attrs.get(k).map(String::as_str).filter(|v| *v != "NaN");
        let base = attr("base").unwrap_or("none");
        if !base.eq_ignore_ascii_case("none") {
            if let Some(b) = self.scale_registry.get(&base.to_lowercase()) {
                scale = b.clone();
            }
        } else {
            scale.category = attr("category").unwrap_or("Default").to_string();
        }
        if !scale.category.eq_ignore_ascii_case("Raw Value")
            && scale.name.eq_ignore_ascii_case("Raw Value")
        {
            scale.name = attr("name").or(attr("units")).unwrap_or("none").to_string();
        }
        // RomRaider resets to_byte on every <scaling>, inherited or not.
        scale.to_byte = attr("to_byte").unwrap_or("").to_string();
        let number = |k: &str, v: &str| -> Result<f64, String> {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("scaling {k}=\"{v}\" is not a number"))
        };
        for (k, v) in attrs {
            match k.to_ascii_lowercase().as_str() {
                "units" => scale.units = v.clone(),
                "expression" => scale.expression = v.clone(),
                "format" => scale.format = v.clone(),
                "max" => scale.max = Some(number(k, v)?),
                "min" => scale.min = Some(number(k, v)?),
                _ => {}
            }
        }
        self.scale_registry
            .insert(scale.name.to_lowercase(), scale.clone());
        Ok(scale)
    }
}

/// RomRaider applies each rom's `<romid>` over the inherited one.
fn merge_romid(into: &mut RomId, from: &RomId) {
    if from.xmlid.is_some() {
        into.xmlid = from.xmlid.clone();
    }
    if from.internal_id_address.is_some() {
        into.internal_id_address = from.internal_id_address.clone();
    }
    if from.internal_id_hex.is_some() || from.internal_id_string.is_some() {
        into.internal_id_hex = from.internal_id_hex.clone();
        into.internal_id_string = from.internal_id_string.clone();
    }
    for (k, v) in &from.fields {
        into.fields.insert(k.clone(), v.clone());
    }
}

/// The fixed ramOffset a romid sets: `<offset>` (file offset = address +
/// offset), `noramoffset` (0); otherwise 0 as well, on the assumption that
/// `filesize` is the image's length.
fn romid_offset(romid: &RomId) -> i64 {
    match romid.fields.get("offset").and_then(|o| parse_address(o)) {
        Some(o) => -o,
        None => 0,
    }
}

/// Names the checksum for `Definition::checksum_module`: `subarudbw` for
/// RomRaider's built-in Subaru/Denso "Checksum Fix" table when it sits
/// where subarudbw looks for it, the `<checksum type>` otherwise.
fn checksum_fields(
    fields: &mut HashMap<String, String>,
    chain: &[&Rom],
    tables: &[Table],
    romid: &RomId,
) {
    let types: Vec<String> = chain
        .iter()
        .flat_map(|r| r.checksums.iter())
        .filter_map(|c| c.get("type").cloned())
        .collect();
    if !types.is_empty() {
        fields.insert("checksum".into(), types.join(", "));
    }
    let fix: Vec<&Table> = tables
        .iter()
        .filter(|t| t.name.to_lowercase().starts_with("checksum fix"))
        .collect();
    let size = romid
        .fields
        .get("filesize")
        .and_then(|s| parse_file_size(s))
        .or_else(|| {
            romid
                .fields
                .get("memmodel")
                .and_then(|m| ecu_model::memmodel::by_name(m))
                .map(|m| m.size)
        });
    let module = if let Some(t) = types.first() {
        // Not one this plugin implements: patches say the checksum was NOT
        // updated rather than write a ROM with a stale one.
        Some(format!("romraider:{t}"))
    } else {
        match fix.as_slice() {
            [] => None,
            [t] => {
                let expected = size.and_then(|s| s.checked_sub(SUBARUDBW_FROM_END));
                let entries = matches!(t.scaling.storage, Storage::Blob(n) if n % 12 == 0);
                if entries && expected == Some(t.address as usize) {
                    Some("subarudbw".to_string())
                } else {
                    Some(format!(
                        "RomRaider Checksum Fix at 0x{:X} (subarudbw expects 0x480 bytes below the end of the image{})",
                        t.address,
                        expected.map_or(String::new(), |e| format!(", 0x{e:X}"))
                    ))
                }
            }
            many => Some(format!(
                "RomRaider Checksum Fix ({} tables; subarudbw handles one)",
                many.len()
            )),
        }
    };
    if let Some(m) = module {
        fields.insert("checksummodule".into(), m);
    }
}

/// subarudbw's table starts this many bytes below the end of the image.
const SUBARUDBW_FROM_END: usize = 0x480;

/// `filesize`: `1024kb`, `2mb`, `…b` or plain decimal; none for a size
/// past what a `usize` holds (a crafted definition's, not an image's).
fn parse_file_size(text: &str) -> Option<usize> {
    let t = text.trim().to_ascii_lowercase();
    if let Some(n) = t.strip_suffix("kb") {
        n.trim().parse::<usize>().ok()?.checked_mul(1024)
    } else if let Some(n) = t.strip_suffix("mb") {
        n.trim().parse::<usize>().ok()?.checked_mul(1024 * 1024)
    } else if let Some(n) = t.strip_suffix('b') {
        n.trim().parse().ok()
    } else {
        t.parse().ok()
    }
}

// ------------------------------------------------------------- resolving

struct Resolver<'a> {
    memmodel_endian: Option<Endian>,
    /// ramOffset: file offset = address − offset.
    offset: i64,
    filter: &'a HashMap<String, i64>,
}

impl Resolver<'_> {
    /// A top-level table's address: the chain's first for its name.
    fn top_address(&self, t: &State) -> Option<i64> {
        self.filter.get(&t.name).copied().or(t.address)
    }

    /// The image offset of `address` for `t` (its ramOffset applied).
    fn address(&self, t: &State, address: Option<i64>) -> Result<u32, String> {
        let Some(address) = address else {
            return Err("no storageaddress in any rom of the chain".into());
        };
        let ram_offset = if t.before_ram { 0 } else { self.offset };
        let at = address - ram_offset;
        u32::try_from(at).map_err(|_| {
            format!("storageaddress 0x{address:X} with offset {ram_offset} is outside the image")
        })
    }

    /// The model's table for `t`; Ok(None) for a top-level axis table no
    /// rom gives an address (RomRaider builds those whatever the filter).
    fn table(&self, t: &State) -> Result<Option<Table>, String> {
        let Some(top_address) = self.top_address(t) else {
            return Ok(None);
        };
        if let Some(e) = t.errors.first() {
            return Err(e.clone());
        }
        if t.labels.is_some() && matches!(t.rr_type, RrType::D1 | RrType::Axis) {
            return Err(
                "a static table: its <data> cells are text, with nothing stored in the ROM".into(),
            );
        }
        let address = self.address(t, Some(top_address))?;
        let level = (t.user_level > 0).then_some(t.user_level.min(5));
        let mut table = Table {
            name: t.name.clone(),
            id: t.name.clone(),
            category: t.category.clone(),
            table_type: TableType::Scalar,
            address,
            scaling: Arc::new(raw_scaling()),
            swapxy: false,
            flipy: false,
            flipx: false,
            level,
            row_axis: None,
            col_axis: None,
        };
        match t.rr_type {
            RrType::Switch => {
                table.scaling = Arc::new(switch_scaling(t)?);
            }
            RrType::Bitwise => {
                let (scaling, labels) = bitwise(t)?;
                table.scaling = Arc::new(scaling);
                table.table_type = TableType::OneAxis;
                table.row_axis = Some(Axis {
                    name: Some("Bit".into()),
                    xml_type: "Static Y Axis".into(),
                    source: AxisSource::Static(labels),
                    flip: false,
                });
            }
            RrType::D1 | RrType::Axis => {
                table.scaling = self.scaling(t)?;
                check_size(t.data_size, "data")?;
                if t.data_size != 1 {
                    table.table_type = TableType::OneAxis;
                    table.flipy = t.flip;
                    table.row_axis = Some(Axis {
                        name: None,
                        xml_type: "Index".into(),
                        source: AxisSource::Static(
                            (0..t.data_size).map(|i| i.to_string()).collect(),
                        ),
                        flip: false,
                    });
                }
            }
            RrType::D2 => {
                table.scaling = self.scaling(t)?;
                check_size(t.data_size, "data")?;
                table.table_type = TableType::OneAxis;
                // Table2DView shows the cells last first; the axis stays.
                table.flipy = t.flip;
                let axis = t.axis.as_deref().ok_or("2D table without an axis")?;
                table.row_axis = Some(self.axis(axis, t.data_size)?);
            }
            RrType::D3 => {
                if t.skip_cells > 0 {
                    return Err(format!(
                        "skipCells=\"{}\" (gaps between stored rows) cannot be expressed in this model",
                        t.skip_cells
                    ));
                }
                table.scaling = self.scaling(t)?;
                check_size(t.size_x, "sizex")?;
                check_size(t.size_y, "sizey")?;
                table.table_type = TableType::Grid;
                table.swapxy = t.swap_xy;
                // Table3D: without swapxy, flipy reverses the stored
                // columns and flipx the rows; with it, each its own.
                (table.flipx, table.flipy) = if t.swap_xy {
                    (t.flip_x, t.flip_y)
                } else {
                    (t.flip_y, t.flip_x)
                };
                let x = t.x_axis.as_deref().ok_or("3D table without an X Axis")?;
                let y = t.y_axis.as_deref().ok_or("3D table without a Y Axis")?;
                table.col_axis = Some(self.axis(x, t.size_x)?);
                table.row_axis = Some(self.axis(y, t.size_y)?);
            }
        }
        Ok(Some(table))
    }

    fn axis(&self, a: &State, size: usize) -> Result<Axis, String> {
        let label = if a.name.is_empty() {
            a.xml_type.clone()
        } else {
            a.name.clone()
        };
        if let Some(e) = a.errors.first() {
            return Err(format!("axis `{label}`: {e}"));
        }
        let source = match &a.labels {
            Some(labels) => {
                let mut labels = labels.clone();
                labels.truncate(size);
                while labels.len() < size {
                    labels.push(labels.len().to_string());
                }
                AxisSource::Static(labels)
            }
            None => AxisSource::Dynamic {
                address: self
                    .address(a, a.address)
                    .map_err(|e| format!("axis `{label}`: {e}"))?,
                elements: size,
                scaling: self
                    .scaling(a)
                    .map_err(|e| format!("axis `{label}`: {e}"))?,
            },
        };
        Ok(Axis {
            name: Some(a.name.clone()).filter(|n| !n.is_empty()),
            xml_type: a.xml_type.clone(),
            source,
            flip: false,
        })
    }

    /// The scaling of a numeric table or axis.
    fn scaling(&self, t: &State) -> Result<Arc<Scaling>, String> {
        if t.data_layout.eq_ignore_ascii_case("bosch_subtract") {
            return Err(
                "dataLayout=\"bosch_subtract\" (each value is 2^bits minus the sum of the stored cells from it on) cannot be expressed in this model".into(),
            );
        }
        let storage = match (t.storage, t.signed) {
            (None, _) => return Err("no storagetype in any rom of the chain".into()),
            (Some(RrStorage::Movi20 | RrStorage::Movi20s), _) => {
                return Err(
                    "storagetype movi20/movi20s (a 20-bit immediate inside an SH-2A MOVI20 instruction) cannot be expressed in this model".into(),
                );
            }
            (Some(RrStorage::Float), _) => Storage::F32,
            (Some(RrStorage::Bytes(1)), false) => Storage::U8,
            (Some(RrStorage::Bytes(1)), true) => Storage::I8,
            (Some(RrStorage::Bytes(2)), false) => Storage::U16,
            (Some(RrStorage::Bytes(2)), true) => Storage::I16,
            (Some(RrStorage::Bytes(4)), false) => Storage::U32,
            (Some(RrStorage::Bytes(4)), true) => Storage::I32,
            (Some(RrStorage::Bytes(n)), _) => {
                return Err(format!("storagetype of {n} bytes is not supported"));
            }
        };
        if let Some(mask) = t.mask {
            let full = match storage.size() {
                4 => u32::MAX,
                n => (1u32 << (8 * n)) - 1,
            };
            if mask & full != full {
                return Err(format!(
                    "mask=\"{mask:X}\" (a bit field inside each cell) cannot be expressed in this model"
                ));
            }
        }
        let endian = match (self.memmodel_endian, storage) {
            (Some(e), _) => e,
            // The legacy float quirk: floats are big-endian whatever the
            // table says, unless the memory model names an endian.
            (None, Storage::F32) => Endian::Big,
            (None, _) => t.endian,
        };
        let Some(scale) = t.current_scale() else {
            return Ok(Arc::new(Scaling {
                storage,
                endian,
                ..raw_scaling()
            }));
        };
        let to = Expr::parse(scale.expression.trim())
            .map_err(|e| format!("scaling `{}` expression: {e}", scale.name))?;
        let from = if scale.to_byte.trim().is_empty() {
            // RomRaider writes the value itself when the expression is x;
            // otherwise it would have to invert the expression: read-only.
            scale
                .expression
                .trim()
                .eq_ignore_ascii_case("x")
                .then(Expr::identity)
        } else {
            Some(
                Expr::parse(scale.to_byte.trim())
                    .map_err(|e| format!("scaling `{}` to_byte: {e}", scale.name))?,
            )
        };
        let printf = printf_from_decimal_format(&scale.format);
        // Both 0 is RomRaider's "no limits".
        let limits = !(scale.min.unwrap_or(0.0) == 0.0 && scale.max.unwrap_or(0.0) == 0.0);
        Ok(Arc::new(Scaling {
            name: scale.name.clone(),
            units: Some(scale.units.clone()).filter(|u| !u.is_empty()),
            format: printf.as_deref().map(Format::parse).unwrap_or_default(),
            format_text: printf,
            min: scale.min.filter(|_| limits),
            max: scale.max.filter(|_| limits),
            storage,
            endian,
            kind: Kind::Numeric { to, from },
        }))
    }
}

fn check_size(n: usize, what: &str) -> Result<(), String> {
    if n == 0 || n > MAX_AXIS_ELEMENTS {
        return Err(format!(
            "{what} size {n}: between 1 and {MAX_AXIS_ELEMENTS} are supported"
        ));
    }
    Ok(())
}

/// RomRaider's raw scale: the stored number as is.
fn raw_scaling() -> Scaling {
    Scaling {
        name: "Raw Value".into(),
        units: None,
        format_text: Some("%.2f".into()),
        format: Format::parse("%.2f"),
        min: None,
        max: None,
        storage: Storage::U8,
        endian: Endian::Big,
        kind: Kind::Numeric {
            to: Expr::identity(),
            from: Some(Expr::identity()),
        },
    }
}

/// A Switch: `sizey` cells of the storage type; a state's `data` gives one
/// hex value per cell (space- or comma-separated), which RomRaider compares
/// with the first cells only, so the choice spans as many bytes as the
/// states give.
fn switch_scaling(t: &State) -> Result<Scaling, String> {
    let size = match t.storage {
        Some(RrStorage::Bytes(n @ (1 | 2 | 4))) => n as usize,
        other => {
            return Err(format!(
                "Switch with storagetype {other:?} is not supported"
            ));
        }
    };
    if t.states.is_empty() {
        return Err("Switch without <state> elements".into());
    }
    let mut blobs = Vec::with_capacity(t.states.len());
    for (name, data) in &t.states {
        let data = data.trim();
        let sep = if data.contains(',') { ',' } else { ' ' };
        let mut bytes = Vec::new();
        for token in data.split(sep).map(str::trim).filter(|s| !s.is_empty()) {
            let v = u32::from_str_radix(token, 16)
                .map_err(|_| format!("state `{name}`: `{token}` is not hex"))?;
            if size < 4 && v >> (8 * size) != 0 {
                return Err(format!(
                    "state `{name}`: `{token}` does not fit a {size}-byte cell"
                ));
            }
            bytes.extend_from_slice(&v.to_be_bytes()[4 - size..]);
        }
        blobs.push((name.clone(), bytes));
    }
    let len = blobs[0].1.len();
    if len == 0 || blobs.iter().any(|(_, b)| b.len() != len) {
        return Err("Switch states give different numbers of cells".into());
    }
    if len > t.data_size * size {
        return Err(format!(
            "Switch states give {len} bytes but the table has {} cells",
            t.data_size
        ));
    }
    Ok(states_scaling(t, Storage::Blob(len), Kind::Blobs(blobs)))
}

/// The scaling of a table of named states (a Switch's byte strings, a
/// BitwiseSwitch's bits): no unit, format or bounds.
fn states_scaling(t: &State, storage: Storage, kind: Kind) -> Scaling {
    Scaling {
        name: t.name.clone(),
        units: None,
        format_text: None,
        format: Format::default(),
        min: None,
        max: None,
        storage,
        endian: Endian::Big,
        kind,
    }
}

/// A BitwiseSwitch: one cell of the storage type whose named bits are
/// switches. The model's bit tables are big-endian bit strings, first cell
/// the most significant bit, so the table shows every bit of the cell
/// (row r is bit 8·size−1−r), labelled with its `<bit name>` where given.
fn bitwise(t: &State) -> Result<(Scaling, Vec<String>), String> {
    let size = match t.storage {
        Some(RrStorage::Bytes(n @ (1 | 2 | 4))) => n as usize,
        other => {
            return Err(format!(
                "BitwiseSwitch with storagetype {other:?} is not supported"
            ));
        }
    };
    if size > 1 && t.endian == Endian::Little {
        return Err("a little-endian multi-byte BitwiseSwitch cannot be expressed in this model (its bits are a big-endian bit string)".into());
    }
    let n = 8 * size;
    let mut names: Vec<Option<String>> = vec![None; n];
    for (name, pos) in &t.bits {
        let p: usize = pos
            .trim()
            .parse()
            .map_err(|_| format!("bit `{name}` position `{pos}` is not a number"))?;
        if p >= n {
            return Err(format!(
                "bit `{name}` position {p} is outside the {size}-byte cell"
            ));
        }
        names[p] = Some(name.clone());
    }
    let labels = (0..n)
        .map(|r| {
            let p = n - 1 - r;
            names[p].clone().unwrap_or_else(|| format!("bit {p}"))
        })
        .collect();
    Ok((states_scaling(t, Storage::Bits, Kind::Bit), labels))
}

/// Java DecimalFormat (`#`, `0.00`, `#0.00`, `0.0###`, `0.00E0`) as the
/// printf-style format the model prints with: the digits allowed after
/// the point become the precision. None for an empty pattern.
fn printf_from_decimal_format(pattern: &str) -> Option<String> {
    let positive = pattern.split(';').next().unwrap_or("").trim();
    if positive.is_empty() {
        return None;
    }
    let (mantissa, exponent) = match positive.find(['E', 'e']) {
        Some(i) => (&positive[..i], true),
        None => (positive, false),
    };
    let decimals = mantissa.find('.').map_or(0, |i| {
        mantissa[i + 1..]
            .chars()
            .take_while(|c| matches!(c, '0' | '#'))
            .count()
    });
    Some(if exponent {
        format!("%.{decimals}e")
    } else {
        format!("%.{decimals}f")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecu_model::decode::{Cell, read_table};
    use ecu_model::definition::Lookup;

    /// Found by `make fuzz-short`: a `filesize` of many megabytes
    /// overflowed the multiplication and panicked the family.
    #[test]
    fn file_sizes_parse_and_absurd_ones_are_none() {
        assert_eq!(parse_file_size("1024kb"), Some(1 << 20));
        assert_eq!(parse_file_size(" 2MB "), Some(2 << 20));
        assert_eq!(parse_file_size("512b"), Some(512));
        assert_eq!(parse_file_size("4096"), Some(4096));
        assert_eq!(parse_file_size("99999999999999999mb"), None);
        assert_eq!(parse_file_size("99999999999999999kb"), None);
        assert_eq!(parse_file_size("lots"), None);
    }

    fn def(xml: &str, xmlid: &str) -> Definition {
        parse(xml)
            .unwrap()
            .definition(xmlid, "t.xml".into())
            .unwrap()
    }

    fn table<'a>(d: &'a Definition, name: &str) -> &'a Table {
        match d.table(name) {
            Lookup::Found(t) => t,
            other => panic!("{name}: {other:?}"),
        }
    }

    const DOC: &str = r##"<?xml version="1.0"?>
<roms>
  <scalingbase name="degF" units="F" expression="(x*1.8)+32" to_byte="(x-32)/1.8" format="#"/>
  <rom base="BASE">
    <romid><xmlid>CHILD</xmlid><internalidaddress>2004</internalidaddress>
      <internalidstring>CHILD001</internalidstring><year>13</year><model>Impreza</model></romid>
    <table name="Boost " storageaddress="0x20" sizex="3">
      <table type="X Axis" storageaddress="30"/>
      <table type="Y Axis" storageaddress="40"/>
    </table>
    <table name="Timing" storageaddress="50"/>
    <table name="Temp" storageaddress="60"><table type="Y Axis" storageaddress="0x70"/></table>
    <table name="Gone" storageaddress="80" omit="true"/>
    <table name="Fix" storageaddress="90"/>
    <table name="Flags" storageaddress="A0"/>
    <table name="Trim" storageaddress="B0"/>
    <table name="(P0000) NO BASE" storageaddress="C0"/>
    <table name="Copy" base="Timing" storageaddress="D0"/>
    <table name="Boost" storageaddress="F0">
      <table type="X Axis" storageaddress="F8"/><table type="Y Axis" storageaddress="FA"/>
    </table>
  </rom>
  <rom>
    <romid><xmlid>BASE</xmlid><make>Subaru</make><model>WRX</model><memmodel>SH7058</memmodel><filesize>1024kb</filesize></romid>
    <table type="3D" name="Boost " storagetype="uint16" swapxy="true" sizex="2" sizey="2">
      <scaling units="psi" expression="(x-760)*.01933677" to_byte="(x/.01933677)+760" format="0.00"/>
      <table type="X Axis" name="RPM" storagetype="float" endian="little"><scaling units="rpm" expression="x" to_byte="x" format="#"/></table>
      <table type="Y Axis" name="Load" storagetype="uint8"><scaling units="g" expression="x*.3515625-20" to_byte="(x+20)/.3515625" format="#0.00"/></table>
    </table>
    <table type="3D" name="Boost" storagetype="uint16" sizex="2" sizey="2">
      <scaling units="psi" expression="x" to_byte="x" format="0.0"/>
      <table type="X Axis" name="RPM" storagetype="uint8"/>
      <table type="Y Axis" name="Load" storagetype="uint8"/>
    </table>
    <table type="1D" name="Timing" storagetype="int8" endian="big"><scaling units="deg" expression="x/2" to_byte="x*2" format="0.0"/></table>
    <table type="2D" name="Temp" storagetype="uint8" sizey="2">
      <scaling base="degF"/>
      <table type="Y Axis" name="ECT" storagetype="uint16" endian="little"/>
    </table>
    <table type="2D" name="Gone" storagetype="uint8" sizey="1"><table type="Static Y Axis" sizey="1"><data>only</data></table></table>
    <table type="2D" name="Limit" storagetype="float" endian="little" sizey="2">
      <scaling units="x" expression="x" to_byte="x" format="0.00" max="3.5"/>
      <table type="Static Y Axis" name="Gear" sizey="2"><data>First</data><data>Second</data></table>
    </table>
    <table type="Switch" name="Fix" sizey="4">
      <state name="on" data="42 C8 00 00"/><state name="off" data="00,00,00,00"/>
    </table>
    <table type="BitwiseSwitch" name="Flags">
      <bit name="Enable A" position="0"/><bit name="Enable B" position="7"/>
    </table>
    <table type="2D" name="Trim" storagetype="movi20" sizey="1"><table type="Static Y Axis" sizey="1"><data>a</data></table></table>
  </rom>
</roms>"##;

    /// DOC with the child addressing the base's `Limit`.
    fn with_limit() -> String {
        DOC.replace(
            r#"<table name="Fix" storageaddress="90"/>"#,
            r#"<table name="Fix" storageaddress="90"/><table name="Limit" storageaddress="E0"/>"#,
        )
    }

    fn image() -> Vec<u8> {
        let mut rom: Vec<u8> = (0..0x100u32).map(|i| (i * 7 + 3) as u8).collect();
        // Boost (uint16 BE at 0x20, 3x2): 760 → 0 psi.
        for (i, v) in [760u16, 812, 864, 916, 968, 1020].iter().enumerate() {
            rom[0x20 + 2 * i..0x22 + 2 * i].copy_from_slice(&v.to_be_bytes());
        }
        // X axis floats, big-endian although marked little.
        for (i, v) in [1000f32, 2000.0, 3000.0].iter().enumerate() {
            rom[0x30 + 4 * i..0x34 + 4 * i].copy_from_slice(&v.to_be_bytes());
        }
        rom[0x40] = 128;
        rom[0x41] = 0;
        rom[0x50] = 0xF6; // -10 → -5 deg
        rom[0x60] = 10;
        rom[0x61] = 20;
        rom[0x70..0x74].copy_from_slice(&[0x34, 0x12, 0x01, 0x00]);
        rom[0x90..0x94].copy_from_slice(&[0x42, 0xC8, 0, 0]);
        rom[0xA0] = 0b1000_0001;
        rom
    }

    #[test]
    fn inheritance_overrides_by_exact_name_and_keeps_trailing_spaces_apart() {
        let d = def(DOC, "child");
        assert_eq!(d.chain, ["BASE", "CHILD"]);
        assert_eq!(d.romid.xmlid.as_deref(), Some("CHILD"));
        assert_eq!(d.romid.internal_id_string.as_deref(), Some("CHILD001"));
        assert_eq!(d.memmodel(), Some("SH7058"));
        assert_eq!(d.display_name(), "CHILD 13 Impreza");
        // `Boost` and `Boost ` are two tables: the child's sizex="3" on
        // `Boost ` leaves `Boost` as the base has it.
        let plain = table(&d, "Boost");
        assert_eq!((plain.dimensions().as_str(), plain.swapxy), ("2x2", false));
        assert_eq!(plain.unit(), Some("psi"));
        let b = table(&d, "Boost ");
        assert_eq!(b.dimensions(), "3x2");
        assert!(b.swapxy);
        assert_eq!(b.address, 0x20);
        let data = read_table(b, &image()).unwrap();
        // Column-major: (row 1, col 0) is the second stored cell.
        assert_eq!((data.raw[3], data.raw[1]), (812.0, 864.0));
        assert!((data.value(1, 0) - 52.0 * 0.01933677).abs() < 1e-12);
        assert_eq!(data.display(0, 0), "0.00");
        assert_eq!(data.col_axis.unwrap().values.unwrap().len(), 3);
        // omit removes; a table whose name the bases lack and which has no
        // type is RomRaider's "Table type unspecified".
        assert!(matches!(d.table("Gone"), Lookup::Missing(_)));
        let reasons: HashMap<&str, &str> = d
            .unresolvable
            .iter()
            .map(|(n, r)| (n.as_str(), r.as_str()))
            .collect();
        assert!(reasons["(P0000) NO BASE"].contains("Table type unspecified"));
        assert!(reasons["Trim"].contains("movi20"), "{reasons:?}");
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        // base= copies a table under a new name.
        assert_eq!(table(&d, "Copy").address, 0xD0);
        assert_eq!(table(&d, "Timing").address, 0x50);
        let doc = parse(DOC).unwrap();
        let names: Vec<&str> = doc.roms().filter_map(|r| r.xmlid.as_deref()).collect();
        assert_eq!(names, ["CHILD", "BASE"]);
    }

    #[test]
    fn scalings_axes_and_the_float_quirk() {
        let d = def(DOC, "CHILD");
        let rom = image();
        let t = read_table(table(&d, "Timing"), &rom).unwrap();
        assert_eq!(t.value(0, 0), -5.0);
        assert_eq!(t.display(0, 0), "-5.0");
        // scalingbase through <scaling base=>, a little-endian uint16 axis.
        let temp = table(&d, "Temp");
        assert_eq!(temp.unit(), Some("F"));
        let data = read_table(temp, &rom).unwrap();
        assert_eq!(data.value(0, 0), 10.0 * 1.8 + 32.0);
        assert_eq!(data.display(1, 0), "68");
        // RomRaider resets to_byte on a <scaling base=…>: read-only here.
        assert!(matches!(
            temp.scaling.kind,
            Kind::Numeric { from: None, .. }
        ));
        assert_eq!(
            data.row_axis.unwrap().raw.unwrap(),
            [f64::from(0x1234u16), 1.0]
        );
        // A float marked little is read big-endian (no memmodel endian).
        let b = table(&d, "Boost ");
        assert_eq!(b.col_axis.as_ref().unwrap().name.as_deref(), Some("RPM"));
        match &b.col_axis.as_ref().unwrap().source {
            AxisSource::Dynamic {
                address, scaling, ..
            } => {
                assert_eq!(*address, 0x30);
                assert_eq!(scaling.endian, Endian::Big);
                assert_eq!(scaling.storage, Storage::F32);
            }
            other => panic!("{other:?}"),
        }
        let data = read_table(b, &rom).unwrap();
        assert_eq!(
            data.col_axis.unwrap().values.unwrap(),
            [1000.0, 2000.0, 3000.0]
        );
        let d = def(&with_limit(), "CHILD");
        let limit = table(&d, "Limit");
        assert_eq!(limit.scaling.endian, Endian::Big);
        assert_eq!((limit.scaling.min, limit.scaling.max), (None, Some(3.5)));
        assert_eq!(limit.scaling.format_text.as_deref(), Some("%.2f"));
        // memmodel endian="little" overrides everything, floats included.
        let little = with_limit().replace("<memmodel>", "<memmodel endian=\"little\">");
        let d = def(&little, "CHILD");
        assert_eq!(table(&d, "Limit").scaling.endian, Endian::Little);
        assert_eq!(table(&d, "Timing").scaling.endian, Endian::Little);
    }

    /// What the component answers for DOC's child: every table the reader
    /// built crosses the family interface with its layout, the bitwise
    /// switch as a bit string, the switch as choices.
    #[test]
    fn every_table_crosses_the_family_interface() {
        use ecu_family_guest::bindings::exports::benchtop::ecu_family::family as wit;
        let d = def(DOC, "CHILD");
        let served = ecu_family_guest::definition(ecu_model::family::Resolved::of(&d, "RomRaider"));
        assert_eq!(served.tables.len(), d.tables.len());
        assert_eq!(served.unreadable, d.unresolvable);
        for (w, t) in served.tables.iter().zip(&d.tables) {
            assert_eq!(
                (w.name.as_str(), w.address),
                (t.name.as_str(), u64::from(t.address))
            );
            assert_eq!(w.rows.is_some(), t.row_axis.is_some(), "{}", t.name);
            assert_eq!(w.columns.is_some(), t.col_axis.is_some(), "{}", t.name);
        }
        let find = |name: &str| served.tables.iter().find(|t| t.name == name).unwrap();
        let flags = find("Flags");
        assert_eq!(flags.scaling.storage, wit::Storage::Bits);
        assert!(matches!(
            &flags.rows.as_ref().unwrap().points,
            wit::Points::Labels(l) if l.len() == 8 && l[0] == "Enable B"
        ));
        assert_eq!(find("Fix").scaling.choices.len(), 2);
        let boost = find("Boost ");
        assert_eq!(boost.scaling.to_physical, "(x-760)*.01933677");
        assert_eq!(
            boost.scaling.from_physical.as_deref(),
            Some("(x/.01933677)+760")
        );
        assert!(boost.column_major);
    }

    #[test]
    fn static_axes_switches_and_bits() {
        let d = def(DOC, "CHILD");
        let rom = image();
        // Limit is never addressed: not built.
        assert!(matches!(d.table("Limit"), Lookup::Missing(_)));
        let d2 = def(&with_limit(), "CHILD");
        let limit = table(&d2, "Limit");
        assert_eq!(
            limit.row_axis.as_ref().unwrap().source,
            AxisSource::Static(vec!["First".into(), "Second".into()])
        );
        assert_eq!(limit.byte_len(), 8);

        let fix = table(&d, "Fix");
        assert_eq!(fix.scaling.storage, Storage::Blob(4));
        let data = read_table(fix, &rom).unwrap();
        assert!(matches!(data.cell(0, 0), Cell::Blob(Some(n), _) if n == "on"));
        let Kind::Blobs(choices) = &fix.scaling.kind else {
            panic!()
        };
        assert_eq!(choices[1], ("off".to_string(), vec![0, 0, 0, 0]));

        let flags = table(&d, "Flags");
        assert_eq!(flags.dimensions(), "1x8");
        let data = read_table(flags, &rom).unwrap();
        let labels = &data.row_axis.as_ref().unwrap().labels;
        assert_eq!(labels[0], "Enable B");
        assert_eq!(labels[7], "Enable A");
        assert_eq!(labels[1], "bit 6");
        assert_eq!(
            (data.value(0, 0), data.value(1, 0), data.value(7, 0)),
            (1.0, 0.0, 1.0)
        );
    }

    #[test]
    fn offsets_masks_and_bosch_axes() {
        let xml = r#"<roms><rom><romid><xmlid>R</xmlid><offset>-0x1000</offset></romid>
  <table type="2D" name="Shifted" storagetype="uint8" sizey="2" storageaddress="1010">
    <table type="Y Axis" storagetype="uint8" storageaddress="1020"/>
  </table>
  <table type="2D" name="Early" storagetype="uint8" sizey="2" storageaddress="10" beforeram="true">
    <table type="Y Axis" storagetype="uint8" storageaddress="1020"/>
  </table>
  <table type="1D" name="Masked" storagetype="uint8" mask="F0" storageaddress="1000"/>
  <table type="1D" name="Whole" storagetype="uint16" mask="FFFF" storageaddress="1000"/>
  <table type="2D" name="Bosch" storagetype="uint8" sizey="2" storageaddress="1000">
    <table type="Y Axis" storagetype="uint8" dataLayout="bosch_subtract" storageaddress="1000"/>
  </table>
  <table type="1D" name="Code" storagetype="uint32" sizey="3" storageaddress="1000"/>
</rom></roms>"#;
        let d = def(xml, "R");
        // <offset>: file offset = address + offset; beforeram ignores it.
        let shifted = table(&d, "Shifted");
        assert_eq!(shifted.address, 0x10);
        assert!(matches!(
            shifted.row_axis.as_ref().unwrap().source,
            AxisSource::Dynamic { address: 0x20, .. }
        ));
        assert_eq!(table(&d, "Early").address, 0x10);
        assert_eq!(table(&d, "Whole").scaling.storage, Storage::U16);
        // A 1D table of several cells lists them by index.
        assert_eq!(table(&d, "Code").dimensions(), "1x3");
        let reasons: HashMap<&str, &str> = d
            .unresolvable
            .iter()
            .map(|(n, r)| (n.as_str(), r.as_str()))
            .collect();
        assert!(reasons["Masked"].contains("mask"), "{reasons:?}");
        assert!(reasons["Bosch"].contains("bosch_subtract"), "{reasons:?}");
        assert_eq!(reasons.len(), 2);
    }

    #[test]
    fn grid_flips_follow_table3d() {
        let xml = r#"<roms><rom><romid><xmlid>R</xmlid></romid>
  <table type="3D" name="N" storagetype="uint8" sizex="3" sizey="2" storageaddress="0" flipy="true">
    <table type="X Axis" storageaddress="10" storagetype="uint8"/>
    <table type="Y Axis" storageaddress="20" storagetype="uint8"/>
  </table>
  <table type="3D" name="S" storagetype="uint8" sizex="3" sizey="2" storageaddress="0" swapxy="true" flipx="true">
    <table type="X Axis" storageaddress="10" storagetype="uint8"/>
    <table type="Y Axis" storageaddress="20" storagetype="uint8"/>
  </table>
</rom></roms>"#;
        let d = def(xml, "r");
        let rom: Vec<u8> = (0..0x40).collect();
        // No swap: flipy reverses the columns of each stored row.
        let n = read_table(table(&d, "N"), &rom).unwrap();
        let row0: Vec<f64> = (0..3).map(|c| n.value(0, c)).collect();
        assert_eq!(row0, [2.0, 1.0, 0.0]);
        assert_eq!(n.value(1, 0), 5.0);
        // swapxy: stored column by column, flipx reverses the columns.
        let s = read_table(table(&d, "S"), &rom).unwrap();
        assert_eq!((s.value(0, 0), s.value(1, 0)), (4.0, 5.0));
        assert_eq!(s.value(0, 2), 0.0);
    }

    #[test]
    fn base_cycles_and_missing_bases_are_errors() {
        let xml = r#"<roms>
  <rom base="B"><romid><xmlid>A</xmlid></romid></rom>
  <rom base="a"><romid><xmlid>B</xmlid></romid></rom>
  <rom base="NOPE"><romid><xmlid>C</xmlid></romid></rom>
</roms>"#;
        let doc = parse(xml).unwrap();
        let e = doc.definition("A", "x".into()).unwrap_err();
        assert!(e.contains("loops") && e.contains("a → b → a"), "{e}");
        let e = doc.definition("C", "x".into()).unwrap_err();
        assert!(e.contains("NOPE"), "{e}");
        let e = doc.definition("Z", "x".into()).unwrap_err();
        assert!(e.contains("no <rom> with xmlid `Z`"), "{e}");
        assert!(parse("<rom><romid/></rom>").is_ok());
        assert!(parse("<definitions/>").is_err());
    }

    #[test]
    fn decimal_formats_become_printf() {
        let f = |p: &str| printf_from_decimal_format(p);
        assert_eq!(f("#").as_deref(), Some("%.0f"));
        assert_eq!(f("0.00").as_deref(), Some("%.2f"));
        assert_eq!(f("#0.00").as_deref(), Some("%.2f"));
        assert_eq!(f("#.00").as_deref(), Some("%.2f"));
        assert_eq!(f("0.0###").as_deref(), Some("%.4f"));
        assert_eq!(f("0.00E0").as_deref(), Some("%.2e"));
        assert_eq!(f(""), None);
        assert_eq!(Format::parse(&f("#").unwrap()).apply(7002.8), "7003");
        assert_eq!(Format::parse(&f("0.000").unwrap()).apply(1.0), "1.000");
    }

    /// RomRaider's (JEP) expressions in the fixtures fit the model's
    /// expression subset.
    #[test]
    fn romraider_expressions_parse() {
        for (e, x, want) in [
            ("(x*1.8)+32", 100.0, 212.0),
            ("x*.3515625-20", 256.0, 70.0),
            ("(x-760)*.01933677", 760.0, 0.0),
            ("(x/.01933677)+760", 0.0, 760.0),
            ("x/.84", 0.84, 1.0),
        ] {
            let v = Expr::parse(e).unwrap().eval(x);
            assert!((v - want).abs() < 1e-9, "{e}: {v}");
        }
    }

    #[test]
    fn checksum_fix_names_subarudbw_where_it_looks() {
        let xml = r#"<roms><rom><romid><xmlid>R</xmlid><memmodel>SH7058</memmodel><filesize>1024kb</filesize></romid>
  <table type="Switch" name="Checksum Fix" sizey="24" storageaddress="FFB80">
    <state name="off" data="00 00 00 00 00 00 00 00 5A A5 A5 5A 00 00 00 00 00 00 00 00 5A A5 A5 5A"/>
  </table>
</rom></roms>"#;
        assert_eq!(def(xml, "R").checksum_module(), Some("subarudbw"));
        let moved = xml.replace("FFB80", "7FB80");
        let m = def(&moved, "R");
        assert!(
            m.checksum_module().unwrap().contains("0xFFB80"),
            "{:?}",
            m.checksum_module()
        );
        let other = xml.replace(
            "</romid>",
            "</romid><checksum type=\"std\" start=\"0\" end=\"100\"/>",
        );
        let d = def(&other, "R");
        assert_eq!(d.checksum_module(), Some("romraider:std"));
        assert_eq!(d.fields["checksum"], "std");
    }

    #[test]
    fn sniffs_romraider_heads() {
        assert!(is_romraider("<?xml version=\"1.0\"?>\n<roms>"));
        assert!(is_romraider("<rom base=\"32BITBASE\">"));
        assert!(!is_romraider("<rom>\n <romid>"));
        assert!(!is_romraider("<!-- ROMRAIDER <rom> --><rom><romid>"));
        assert!(is_romraider(
            "<?xml?>\n<!-- ROMRAIDER STANDARD UNITS ECU DEFINITION FILE\nTERMS"
        ));
        assert!(!is_romraider(
            "<!-- EcuFlash STANDARD UNITS ECU DEFINITION FILE\nRomRaider's creators"
        ));
        assert!(!is_romraider(
            "<!--ECUFLASH SUBARU-->\n<!--TERMS\nRomRaider"
        ));
    }
}
