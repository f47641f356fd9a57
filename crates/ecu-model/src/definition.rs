//! A definition as every ECU tool uses it, whichever family's format it
//! was read from: its ROM id and fields, and its resolved tables.

use crate::scaling::{Scaling, Storage};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// The ROM id a definition matches on (ECUFlash's and RomRaider's
/// `<romid>` block). Values are kept as text: an id such as `56890009`
/// must never become a number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RomId {
    /// The definition's id, e.g. "56890009"; children include parents by it.
    pub xmlid: Option<String>,
    /// Where the ROM keeps its id, as hex text, e.g. "5002A".
    pub internal_id_address: Option<String>,
    /// The id bytes expected there, as hex text; matched against the ROM.
    pub internal_id_hex: Option<String>,
    /// The id as text expected there (older definitions), instead of hex.
    pub internal_id_string: Option<String>,
    /// Every child element of `<romid>` by tag name (make, model, year, …).
    pub fields: BTreeMap<String, String>,
}

impl RomId {
    /// A non-empty child of `<romid>` by tag name, e.g. "make".
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// Where images of this definition carry its id and what they hold
    /// there: the internal id address, and the internal id in hex, else as
    /// text. None for a base that others include, which no image is.
    pub fn internal_id(&self) -> Option<InternalId> {
        let address = parse_hex(self.internal_id_address.as_deref()?)?;
        let (bytes, text) = match &self.internal_id_hex {
            Some(hex) => (crate::scaling::parse_hex_bytes(hex)?, false),
            None => (self.internal_id_string.as_ref()?.as_bytes().to_vec(), true),
        };
        Some(InternalId {
            address,
            bytes,
            text,
        })
    }
}

/// An image's internal id as a definition expects it ([`RomId::internal_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalId {
    /// The ECU address it sits at.
    pub address: u32,
    /// The bytes expected there.
    pub bytes: Vec<u8>,
    /// Given as text (`internalidstring`), so shown as text.
    pub text: bool,
}

/// ECUFlash's table type: the value counts as a dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableType {
    /// One value.
    Scalar,
    /// One axis and its values.
    OneAxis,
    /// X axis (columns) and Y axis (rows).
    Grid,
}

impl TableType {
    /// ECUFlash's name for the type: "1D", "2D" or "3D".
    pub fn xml_name(self) -> &'static str {
        match self {
            TableType::Scalar => "1D",
            TableType::OneAxis => "2D",
            TableType::Grid => "3D",
        }
    }
}

/// Where an axis's breakpoints come from.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisSource {
    /// Text labels, no ROM storage.
    Static(Vec<String>),
    /// Values stored in the ROM.
    Dynamic {
        /// ECU address of the first breakpoint.
        address: u32,
        /// Breakpoints stored.
        elements: usize,
        /// How the stored breakpoints become physical values.
        scaling: Arc<Scaling>,
    },
}

/// A resolved axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The axis's name, e.g. "Engine Speed"; none when the definition gives
    /// none.
    pub name: Option<String>,
    /// `X Axis`, `Y Axis`, `Static X Axis`, `Static Y Axis` (as given).
    pub xml_type: String,
    /// Static labels or stored breakpoints.
    pub source: AxisSource,
    /// `flipx`/`flipy` on the axis: its stored breakpoints run the other
    /// way round (static labels are always in display order).
    pub flip: bool,
}

impl Axis {
    /// Breakpoints on the axis (labels or stored values).
    pub fn len(&self) -> usize {
        match &self.source {
            AxisSource::Static(labels) => labels.len(),
            AxisSource::Dynamic { elements, .. } => *elements,
        }
    }

    /// True for an axis without breakpoints.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The breakpoints' unit; none for static labels.
    pub fn unit(&self) -> Option<&str> {
        match &self.source {
            AxisSource::Dynamic { scaling, .. } => scaling.units.as_deref(),
            AxisSource::Static(_) => None,
        }
    }

    /// `RPM (rpm)`, or the role when the axis is unnamed.
    pub fn label(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| self.xml_type.clone());
        match self.unit() {
            Some(u) if !u.is_empty() => format!("{name} ({u})"),
            _ => name,
        }
    }
}

/// A resolved, readable table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The name as the definition gives it (not unique: variants share names).
    pub name: String,
    /// Unique key: the name, or `name @0xADDR` when names collide.
    pub id: String,
    /// ECUFlash category, e.g. "Fuel" or "Timing - High Octane".
    pub category: Option<String>,
    /// Scalar, one axis or grid.
    pub table_type: TableType,
    /// ECU address of the first cell.
    pub address: u32,
    /// How stored cells become physical values and back.
    pub scaling: Arc<Scaling>,
    /// Cells are stored column by column (each stored row is a display column).
    pub swapxy: bool,
    /// Rows (`flipy`) or columns (`flipx`) are stored last first.
    pub flipy: bool,
    /// Columns are stored last first.
    pub flipx: bool,
    /// ECUFlash user level, 1 (beginner) to 5 (debug): how advanced or risky
    /// the table is to change.
    pub level: Option<u32>,
    /// Rows: the Y axis of a grid, or the only axis of a one-axis table.
    pub row_axis: Option<Axis>,
    /// Columns: the X axis of a grid.
    pub col_axis: Option<Axis>,
}

impl Table {
    /// Cells per column: the row axis's length, 1 without one.
    pub fn rows(&self) -> usize {
        self.row_axis.as_ref().map_or(1, Axis::len)
    }

    /// Cells per row: the column axis's length, 1 without one.
    pub fn cols(&self) -> usize {
        self.col_axis.as_ref().map_or(1, Axis::len)
    }

    /// `<X elements>x<Y elements>`, `1x<n>` or `1x1`.
    pub fn dimensions(&self) -> String {
        format!("{}x{}", self.cols(), self.rows())
    }

    /// The cells' unit; none for switch (bloblist) and bit tables, whose cells
    /// are names.
    pub fn unit(&self) -> Option<&str> {
        match self.scaling.storage {
            Storage::Blob(_) | Storage::Bits => None,
            _ => self.scaling.units.as_deref(),
        }
    }

    /// Position of displayed cell (row, col) in storage order: `flipy` and
    /// `flipx` reverse rows/columns, `swapxy` stores a grid column-major.
    /// Byte cells and bit cells (a big-endian bit string) share it, so a
    /// bit table with swapxy/flipy is laid out like any other.
    pub fn storage_index(&self, row: usize, col: usize) -> usize {
        let (rows, cols) = (self.rows(), self.cols());
        let row = if self.flipy { rows - 1 - row } else { row };
        let col = if self.flipx { cols - 1 - col } else { col };
        if self.table_type == TableType::Grid && self.swapxy {
            col * rows + row
        } else {
            row * cols + col
        }
    }

    /// Byte offset of cell (row, col) for byte-sized storage.
    pub fn cell_offset(&self, row: usize, col: usize) -> usize {
        self.address as usize + self.storage_index(row, col) * self.scaling.storage.size()
    }

    /// Bytes the cells occupy.
    /// Saturates rather than overflow (a 32-bit guest has 32-bit `usize`),
    /// so an impossible size fails the bounds check instead of wrapping.
    pub fn byte_len(&self) -> usize {
        let cells = self.rows().saturating_mul(self.cols());
        match self.scaling.storage {
            Storage::Bits => cells.div_ceil(8),
            s => cells.saturating_mul(s.size()),
        }
    }
}

/// How a definition's images keep their checksum.
#[derive(Debug, Clone)]
pub enum FamilyChecksum {
    /// By the module its fields name (`checksummodule`), one of the
    /// [`crate::checksum::Module`]s: ECUFlash and RomRaider definitions.
    Named,
    /// By an algorithm the definition's family owns.
    Kept(Arc<dyn crate::checksum::Checksum>),
    /// None the family knows: why, in a sentence.
    Unknown(String),
}

/// A definition with its include chain merged.
#[derive(Debug, Clone)]
pub struct Definition {
    /// The file that carries the ROM id.
    pub file: PathBuf,
    /// The ROM id that matched: xmlid, internal id address and bytes.
    pub romid: RomId,
    /// Merged `<romid>` fields, later files winning (checksum module, make…).
    pub fields: HashMap<String, String>,
    /// xmlids (or file names) of the chain, parents first.
    pub chain: Vec<String>,
    /// Every readable table of the merged chain, in definition order.
    pub tables: Vec<Table>,
    /// Addressed tables that cannot be read, with the reason.
    pub unresolvable: Vec<(String, String)>,
    /// How its images' checksum is kept.
    pub checksum: FamilyChecksum,
    /// What resolving it chose that the user should know (a base found
    /// in several files, and which one was used).
    pub notes: Vec<String>,
    by_id: HashMap<String, usize>,
    by_name: HashMap<String, Vec<usize>>,
}

impl Definition {
    /// Assembles a definition from tables any family's reader resolved
    /// (ECUFlash chains through [`merge`], RomRaider documents through
    /// [`crate::romraider`]): tables sharing a name get unique ids
    /// `NAME @0xADDRESS`, and lookups by id and name are indexed.
    pub fn new(
        file: PathBuf,
        romid: RomId,
        fields: HashMap<String, String>,
        chain: Vec<String>,
        mut tables: Vec<Table>,
        unresolvable: Vec<(String, String)>,
    ) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, t) in tables.iter().enumerate() {
            by_name.entry(t.name.clone()).or_default().push(i);
        }
        for idxs in by_name.values().filter(|v| v.len() > 1) {
            for &i in idxs {
                tables[i].id = format!("{} @0x{:X}", tables[i].name, tables[i].address);
            }
        }
        let by_id = tables
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        Definition {
            file,
            romid,
            fields,
            chain,
            tables,
            unresolvable,
            checksum: FamilyChecksum::Named,
            notes: Vec::new(),
            by_id,
            by_name,
        }
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// `<xmlid> <year> <market> <model> <submodel> <transmission>`.
    pub fn display_name(&self) -> String {
        let mut parts = vec![self.romid.xmlid.clone().unwrap_or_else(|| self.file_stem())];
        for key in ["year", "market", "model", "submodel", "transmission"] {
            parts.extend(self.field(key).map(str::to_string));
        }
        parts.join(" ")
    }

    fn file_stem(&self) -> String {
        self.file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `<year> <make> <model> <submodel> <transmission>`, None when empty.
    pub fn vehicle(&self) -> Option<String> {
        let parts: Vec<&str> = ["year", "make", "model", "submodel", "transmission"]
            .iter()
            .filter_map(|k| self.field(k))
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// The ROM id the definition matches on: the internal id in hex, or the id
    /// string.
    pub fn ecu_id(&self) -> Option<String> {
        self.romid
            .internal_id_hex
            .clone()
            .or_else(|| self.romid.internal_id_string.clone())
    }

    /// The memory model (CPU), e.g. SH7058 or H8/539F.
    pub fn memmodel(&self) -> Option<&str> {
        self.field("memmodel")
    }

    /// The checksum module named in the definition, e.g. "subarudbw"; none when
    /// the ROM has no known checksum.
    pub fn checksum_module(&self) -> Option<&str> {
        self.field("checksummodule")
    }

    /// Looks a table up by its id or, when unambiguous, by name.
    pub fn table(&self, key: &str) -> Lookup<'_> {
        if let Some(&i) = self.by_id.get(key) {
            return Lookup::Found(&self.tables[i]);
        }
        match self.by_name.get(key).map(Vec::as_slice) {
            Some([i]) => Lookup::Found(&self.tables[*i]),
            Some(many) if !many.is_empty() => {
                Lookup::Ambiguous(many.iter().map(|&i| self.tables[i].id.clone()).collect())
            }
            _ => Lookup::Missing(self.suggest(key)),
        }
    }

    /// Up to five table ids that look like `key` (typo distance or substring).
    pub fn suggest(&self, key: &str) -> Vec<String> {
        let needle = key.to_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .tables
            .iter()
            .map(|t| {
                let hay = t.id.to_lowercase();
                let score = if !needle.is_empty() && hay.contains(&needle) {
                    0
                } else {
                    1 + plugin_kit::suggest::edit_distance(&needle, &hay)
                        .min(word_overlap_distance(&needle, &hay))
                };
                (score, t.id.as_str())
            })
            .collect();
        scored.sort();
        let limit = (needle.chars().count() / 2).max(3) + 1;
        scored
            .into_iter()
            .filter(|(s, _)| *s <= limit)
            .take(5)
            .map(|(_, n)| n.to_string())
            .collect()
    }
}

/// Result of a table lookup.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// Exactly one table has this id or name.
    Found(&'a Table),
    /// Several tables share the name: their ids (`NAME @0xADDRESS`), to pass
    /// instead.
    Ambiguous(Vec<String>),
    /// No table: the closest names, best first (maybe none).
    Missing(Vec<String>),
}

/// Small when every word of the query appears in the candidate, so
/// `timing map high` still finds `High Octane Timing Map`.
fn word_overlap_distance(query: &str, hay: &str) -> usize {
    let words: Vec<&str> = query.split_whitespace().collect();
    if words.is_empty() {
        return usize::MAX / 2;
    }
    let missing = words.iter().filter(|w| !hay.contains(*w)).count();
    if missing == 0 { 1 } else { usize::MAX / 2 }
}

/// Most breakpoints an axis may have. Real axes have a few dozen; the cap
/// keeps a bad `elements` from allocating without bound (static labels are
/// numbered up to the count) and table sizes far from overflow.
pub const MAX_AXIS_ELEMENTS: usize = 65_536;

/// Definition hex without `0x` (accepting it anyway).
pub fn parse_hex(text: &str) -> Option<u32> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty() {
        return None;
    }
    u32::from_str_radix(t, 16).ok()
}
