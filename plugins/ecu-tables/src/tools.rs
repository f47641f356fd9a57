//! The tools: argument checking, the domain calls, and the YAML-frontmatter +
//! markdown documents the spec shows. Independent of wit-bindgen, so tests
//! and benchmarks call exactly what the component runs.

use crate::decode::{TableData, display_cell, read_table as decode_table};
use crate::definition::{Definition, Lookup, Table, TableType};
use crate::error::Error;
use crate::patch::{self, Op, PatchEffect, Target};
use crate::store::{ChecksumState, Explorer, OpenedRom};
use plugin_kit::{Frontmatter, MarkdownTable};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment variable naming the definitions directory.
pub const DEFINITIONS_VAR: &str = "ECU_DEFINITIONS_PATH";

/// Where the tools find definitions.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The definitions directory; none until one is configured (then every tool
    /// fails with NO_DEFINITIONS_PATH).
    pub definitions: Option<PathBuf>,
}

impl Config {
    /// Reads `ECU_DEFINITIONS_PATH`, which the host fills from
    /// `--definitions-path`, the environment or `.vscode/settings.json`.
    pub fn from_env() -> Self {
        Self {
            definitions: std::env::var_os(DEFINITIONS_VAR)
                .filter(|v| !v.is_empty())
                .map(|v| plugin_kit::paths::resolve(PathBuf::from(v))),
        }
    }

    /// A configuration with `dir` as the definitions directory, for tests and
    /// benchmarks.
    pub fn with_definitions(dir: impl Into<PathBuf>) -> Self {
        Self {
            definitions: Some(dir.into()),
        }
    }

    fn dir(&self) -> Result<&Path, Error> {
        self.definitions.as_deref().ok_or(Error::NoDefinitionsPath)
    }
}

/// Default and maximum rows/columns shown by read_table.
pub const DEFAULT_ROWS: usize = 64;
/// Columns read_table shows when `col_count` is not given.
pub const DEFAULT_COLS: usize = 32;
/// Most rows one read_table call shows.
pub const MAX_ROWS: usize = 256;
/// Most columns one read_table call shows.
pub const MAX_COLS: usize = 128;
/// Default and maximum entries listed by list_tables.
pub const DEFAULT_LIST: usize = 150;
/// Most tables one list_tables call lists.
pub const MAX_LIST: usize = 1000;

/// `list_tables` arguments.
#[derive(Debug, Clone, Default)]
pub struct ListTables {
    /// Absolute or workspace-relative path to the ROM image.
    pub rom: String,
    /// Only tables whose category contains this text (case-insensitive), e.g.
    /// "Fuel".
    pub category: Option<String>,
    /// Only tables whose name contains this text (case-insensitive).
    pub search: Option<String>,
    /// Matching tables to skip first (paging).
    pub offset: Option<u32>,
    /// Tables to list, 1..=[`MAX_LIST`] (default [`DEFAULT_LIST`]).
    pub limit: Option<u32>,
}

/// `read_table` arguments.
#[derive(Debug, Clone, Default)]
pub struct ReadTable {
    /// Absolute or workspace-relative path to the ROM image.
    pub rom: String,
    /// Exact table name (or `NAME @0xADDRESS` id) from list_tables.
    pub table: String,
    /// First row shown, 0-based.
    pub row_start: Option<u32>,
    /// Rows shown, 1..=[`MAX_ROWS`] (default [`DEFAULT_ROWS`]).
    pub row_count: Option<u32>,
    /// First column shown, 0-based.
    pub col_start: Option<u32>,
    /// Columns shown, 1..=[`MAX_COLS`] (default [`DEFAULT_COLS`]).
    pub col_count: Option<u32>,
    /// Rows by the row axis's values (`A..B`, `A..`, `..B`, `A`) instead of
    /// `row_start`/`row_count`.
    pub rows_where: Option<String>,
    /// Columns by the column axis's values, as `rows_where`.
    pub cols_where: Option<String>,
}

/// The operation names of `patch_table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Replace cells with `value` (or a switch table's `choice`).
    Set,
    /// Add `value` (negative to subtract).
    Add,
    /// Multiply by `value`.
    Multiply,
    /// Limit cells to `min..=max`.
    Clamp,
    /// Average each cell with its neighbours (3×3 box).
    Smooth,
}

impl OpKind {
    /// The op's name in patch_table's arguments.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Set => "set",
            OpKind::Add => "add",
            OpKind::Multiply => "multiply",
            OpKind::Clamp => "clamp",
            OpKind::Smooth => "smooth",
        }
    }
}

/// `patch_table` arguments.
#[derive(Debug, Clone)]
pub struct PatchTable {
    /// Absolute or workspace-relative path to the ROM image; rewritten in
    /// place.
    pub rom: String,
    /// Exact table name from list_tables.
    pub table: String,
    /// What to do to the cells.
    pub op: OpKind,
    /// Operand in physical units; required for set, add and multiply.
    pub value: Option<f64>,
    /// Lower bound in physical units; required for clamp.
    pub min: Option<f64>,
    /// Upper bound in physical units; required for clamp.
    pub max: Option<f64>,
    /// 0-based row from read_table; none patches every row.
    pub row: Option<u32>,
    /// 0-based column from read_table; none patches every column.
    pub col: Option<u32>,
    /// For switch (bloblist) tables, with set: the option name to write instead
    /// of a value.
    pub choice: Option<String>,
    /// Write even when cells leave the scaling's min/max or hit the
    /// storage limit (refused otherwise).
    pub force: bool,
    /// Rows by the row axis's values (`A..B`, `A..`, `..B`, `A`) instead of
    /// `row`, as read_table's `rows_where`.
    pub rows_where: Option<String>,
    /// Columns by the column axis's values instead of `col`.
    pub cols_where: Option<String>,
    /// Exactly these (row, column) cells instead of row/col/rows_where/
    /// cols_where, e.g. the cells propose_patch found in a log.
    pub cells: Option<Vec<(u32, u32)>>,
}

/// Cells one patch_table `cells` list may name (a 64×64 map has 4096).
pub const MAX_PATCH_CELLS: usize = 4096;

impl PatchTable {
    /// The patch in one sentence, for the user to confirm before it is
    /// written: which cells of which table of which ROM (as resolved:
    /// `cells`, with `changed` of them changing), and how.
    pub(crate) fn describe(
        &self,
        t: &Table,
        data: &TableData,
        cells: &[(usize, usize)],
        changed: usize,
    ) -> String {
        let num = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{v}"));
        let how = match self.op {
            OpKind::Set => match &self.choice {
                Some(c) => format!("set to `{}`", plugin_kit::text::clip(c)),
                None => format!("set to {}", num(self.value)),
            },
            OpKind::Add => format!("add {}", num(self.value)),
            OpKind::Multiply => format!("multiply by {}", num(self.value)),
            OpKind::Clamp => format!("clamp to {}..{}", num(self.min), num(self.max)),
            OpKind::Smooth => "smooth".to_owned(),
        };
        let mut rows: Vec<usize> = cells.iter().map(|c| c.0).collect();
        rows.dedup();
        let mut cols: Vec<usize> = cells.iter().map(|c| c.1).collect();
        cols.sort_unstable();
        cols.dedup();
        let n = cells.len();
        let which = if rows.len() * cols.len() == n && n > 0 {
            // A block: its rows and columns, with the ranges they came from.
            let part = |is_rows: bool, ix: &[usize], len: usize, text: &Option<String>| {
                let every = if is_rows { "every row" } else { "every column" };
                let p = if ix.len() == len {
                    every.to_owned()
                } else {
                    axis_part(t, data, is_rows, ix)
                };
                match text {
                    Some(w) => format!(
                        "{} {} → {p}",
                        where_arg(is_rows),
                        plugin_kit::text::clip(w.trim())
                    ),
                    None => p,
                }
            };
            let mut parts = Vec::new();
            if data.rows > 1 || self.rows_where.is_some() {
                parts.push(part(true, &rows, data.rows, &self.rows_where));
            }
            if data.cols > 1 || self.cols_where.is_some() {
                parts.push(part(false, &cols, data.cols, &self.cols_where));
            }
            if parts.is_empty() {
                "its value".to_owned()
            } else {
                parts.join(" × ")
            }
        } else {
            // A scattered list: each cell with its breakpoints.
            let label = |axis: &Option<crate::decode::AxisData>, i: usize| {
                axis.as_ref().map(|a| a.labels[i].clone())
            };
            let shown: Vec<String> = cells
                .iter()
                .take(LABELS_SHOWN)
                .map(|&(r, c)| {
                    let at: Vec<String> = [label(&data.row_axis, r), label(&data.col_axis, c)]
                        .into_iter()
                        .flatten()
                        .collect();
                    if at.is_empty() {
                        format!("[{r},{c}]")
                    } else {
                        format!("[{r},{c}] ({})", at.join(", "))
                    }
                })
                .collect();
            let more = if n > LABELS_SHOWN {
                format!(" and {} more", n - LABELS_SHOWN)
            } else {
                String::new()
            };
            format!("{}{more}", shown.join(", "))
        };
        format!(
            "Write `{}` in {}: {how} on {which}: {n} cell{}, {changed} of them change{}? The ROM file is rewritten and its checksum updated.",
            t.id,
            rom_echo(&self.rom),
            if n == 1 { "" } else { "s" },
            if self.force {
                ", even outside the safe range"
            } else {
                ""
            }
        )
    }
}

/// `diff_tables` arguments.
#[derive(Debug, Clone, Default)]
pub struct DiffTables {
    /// Path to the first ROM, e.g. the stock one.
    pub rom: String,
    /// Path to the second ROM, e.g. the tuned one (same definition).
    pub other: String,
    /// One table to compare cell by cell; none summarises every table that
    /// differs.
    pub table: Option<String>,
    /// Output rows, at most 2000 (default 200).
    pub limit: Option<u32>,
}

/// The spec's `rom_info` fields plus where the definition came from.
#[derive(Debug, Clone, PartialEq)]
pub struct RomInfo {
    /// The ROM's file name.
    pub file: String,
    /// Size of the ROM image itself in KiB: no `.srf` container, no
    /// padding up to the H8/539F base address.
    pub size_kb: f64,
    /// The matched definition: xmlid with year, market and model; none when no
    /// definition matches.
    pub definition: Option<String>,
    /// Year, make, model, submodel and transmission, as far as the definition
    /// says.
    pub vehicle: Option<String>,
    /// The ROM id the definition matched on (its internal id in hex, or the
    /// id string).
    pub ecu_id: Option<String>,
    /// The definition's memory model (the CPU, e.g. SH7058), which fixes the
    /// expected image size.
    pub memmodel: Option<String>,
    /// True when the ROM's checksums are correct, false when not; none when the
    /// algorithm is not supported.
    pub checksum_valid: Option<bool>,
    /// The checksum module in use, e.g. "subarudbw".
    pub checksum_algorithm: Option<String>,
    /// The format of the matched definition (its family): `ECUFlash`,
    /// `RomRaider`.
    pub definition_format: Option<String>,
    /// The definition file matched (the leaf of its include chain).
    pub definition_file: Option<String>,
    /// xmlids (or file names) of the include chain, parents first.
    pub include_chain: Vec<String>,
    /// What the answer alone cannot say: why nothing matched, checksum and
    /// layout notes, tables past the image.
    pub notes: Vec<String>,
}

/// What a patch did, for callers that want data rather than text.
#[derive(Debug, Clone)]
pub struct PatchOutcome {
    /// The ROM written.
    pub path: PathBuf,
    /// The definition it was patched under.
    pub definition: Arc<Definition>,
    /// The table patched.
    pub table: Table,
    /// The table's cells before the patch.
    pub before: TableData,
    /// The table's cells after it, as read back.
    pub after: TableData,
    /// The operation and operands applied.
    pub op: Op,
    /// The cells it applied to.
    pub target: Target,
    /// How `rows_where`/`cols_where` resolved.
    pub selection: Selection,
    /// Cells targeted, changed, limited to the storage range, and left
    /// outside the scaling's soft min/max.
    pub effect: PatchEffect,
    /// The checksum state after the write (repaired when the module is known).
    pub checksum: ChecksumState,
    /// What the agent should know: layout notes of the ROM, a checksum that
    /// was already wrong or could not be updated.
    pub warnings: Vec<String>,
    /// The image now on disk.
    pub bytes: Arc<Vec<u8>>,
    /// False when nothing needed writing (values already as requested).
    pub written: bool,
}

/// `rom` for an answer to show or a call to pass on: as the caller wrote
/// it, or as it resolved when that is shorter. Both name the same file
/// (resolution is lexical), but only the resolved form is bounded by the
/// filesystem: a path padded with 100 KB of `./` opens like the short one
/// and must not come back whole (hardening item 11). Not clipped, since a
/// path cut short no longer names the file.
pub(crate) fn rom_echo(rom: &str) -> String {
    let resolved = plugin_kit::paths::resolve(rom).display().to_string();
    if resolved.len() < rom.len() {
        resolved
    } else {
        rom.to_owned()
    }
}

fn rom_path(rom: &str) -> Result<PathBuf, Error> {
    if rom.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "`rom` is empty: pass the ROM image's absolute or workspace-relative path".into(),
        ));
    }
    Ok(plugin_kit::paths::resolve(rom))
}

/// Opens a ROM and its definition.
pub fn open(ex: &mut Explorer, cfg: &Config, rom: &str) -> Result<OpenedRom, Error> {
    let dir = cfg.dir()?;
    ex.open(dir, &rom_path(rom)?)
}

/// Finds a table by name, with suggestions when it is missing.
pub fn find_table<'a>(def: &'a Definition, name: &str) -> Result<&'a Table, Error> {
    match def.table(name) {
        Lookup::Found(t) => Ok(t),
        Lookup::Ambiguous(candidates) => Err(Error::AmbiguousTable {
            table: plugin_kit::text::clip(name),
            candidates,
        }),
        // A table the definition names but cannot use (an unusable scaling,
        // say) is reported with its reason, not as if it did not exist.
        Lookup::Missing(_)
            if let Some((_, why)) = def.unresolvable.iter().find(|(n, _)| n == name) =>
        {
            Err(Error::Definition {
                file: def.file.clone(),
                message: format!(
                    "table `{}` cannot be read: {why}",
                    plugin_kit::text::clip(name)
                ),
            })
        }
        Lookup::Missing(suggestions) => Err(Error::UnknownTable {
            table: plugin_kit::text::clip(name),
            definition: def.display_name(),
            hint: if suggestions.is_empty() {
                String::new()
            } else {
                format!(" Did you mean: {}?", suggestions.join(" | "))
            },
        }),
    }
}

// ---------------------------------------------------------------- rom_info

/// Tables listed by name in a size warning.
const OUTSIDE_SHOWN: usize = 10;

/// Why `t` cannot be read from this image, if it lies (partly) outside:
/// below the image start (an H8 read from 0x10000) or past its end.
fn outside_image(t: &Table, opened: &OpenedRom) -> Option<String> {
    let base = opened.layout.base;
    let end = opened.bytes.len();
    let mut spans = vec![(t.address as usize, t.byte_len())];
    for axis in t.row_axis.iter().chain(t.col_axis.iter()) {
        if let crate::definition::AxisSource::Dynamic {
            address,
            elements,
            scaling,
        } = &axis.source
        {
            spans.push((
                *address as usize,
                elements.saturating_mul(scaling.storage.size()),
            ));
        }
    }
    spans.into_iter().find_map(|(at, len)| {
        if at < base {
            Some(format!(
                "`{}` is at 0x{at:X}, below the image start 0x{base:X}",
                t.id
            ))
        } else if at.saturating_add(len) > end {
            Some(format!(
                "`{}` at 0x{at:X} needs {len} bytes; the image ends at 0x{end:X}",
                t.id
            ))
        } else {
            None
        }
    })
}

/// rom_info/list_tables warnings when the image and the definition
/// disagree: a size other than the memory model's, tables outside it.
fn fit_notes(def: &Definition, opened: &OpenedRom) -> Vec<String> {
    let mut notes = Vec::new();
    let len = opened.bytes.len() - opened.layout.base;
    if let Some(model) = def.memmodel().and_then(crate::memmodel::by_name)
        && model.size != len
    {
        notes.push(format!(
            "the image is {} bytes ({} KiB) but {} ROMs are {} bytes ({} KiB): an incomplete read, or the wrong definition",
            len,
            len / 1024,
            model.name,
            model.size,
            model.size / 1024
        ));
    }
    let outside: Vec<&Table> = def
        .tables
        .iter()
        .filter(|t| outside_image(t, opened).is_some())
        .collect();
    if !outside.is_empty() {
        let names: Vec<&str> = outside
            .iter()
            .take(OUTSIDE_SHOWN)
            .map(|t| t.id.as_str())
            .collect();
        notes.push(format!(
            "{} of {} tables lie outside this image and cannot be read: {}{}",
            outside.len(),
            def.tables.len(),
            names.join(", "),
            if outside.len() > OUTSIDE_SHOWN {
                format!(" and {} more", outside.len() - OUTSIDE_SHOWN)
            } else {
                String::new()
            }
        ));
    }
    notes
}

/// Refuses a table the image does not hold (the padding below an H8
/// image's base must never be read or patched as if it were the ROM).
pub(crate) fn require_inside(t: &Table, opened: &OpenedRom) -> Result<(), Error> {
    match outside_image(t, opened) {
        Some(why) => Err(Error::InvalidArgument(format!(
            "{why}; the definition does not fit this ROM image (see rom_info)"
        ))),
        None => Ok(()),
    }
}

/// rom_info as data.
pub fn rom_info_data(ex: &mut Explorer, cfg: &Config, rom: &str) -> Result<RomInfo, Error> {
    let opened = open(ex, cfg, rom)?;
    let def = opened.definition.as_deref();
    let checksum = ex.checksum_of(&opened);
    let mut notes = opened.warnings.clone();
    if def.is_none() {
        notes.push(format!(
            "no definition matches: tried {}",
            if opened.tried.is_empty() {
                "nothing (no definition with an internal id)".to_string()
            } else {
                opened.tried.join("; ")
            }
        ));
    }
    notes.extend(checksum.note.clone());
    notes.extend(opened.layout.describe());
    if let Some(d) = def {
        notes.extend(fit_notes(d, &opened));
    }
    Ok(RomInfo {
        file: opened
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        size_kb: (opened.bytes.len() - opened.layout.base) as f64 / 1024.0,
        definition: def.map(Definition::display_name),
        vehicle: def.and_then(Definition::vehicle),
        ecu_id: def.and_then(Definition::ecu_id),
        memmodel: def.and_then(|d| d.memmodel().map(str::to_string)),
        checksum_valid: checksum.valid,
        checksum_algorithm: checksum.algorithm,
        definition_format: opened.format.clone(),
        definition_file: def.map(|d| d.file.display().to_string()),
        include_chain: def.map(|d| d.chain.clone()).unwrap_or_default(),
        notes,
    })
}

/// rom_info: a plain YAML document.
pub fn rom_info(ex: &mut Explorer, cfg: &Config, rom: &str) -> Result<String, Error> {
    let info = rom_info_data(ex, cfg, rom)?;
    let size = if info.size_kb.fract() == 0.0 {
        format!("{}", info.size_kb)
    } else {
        format!("{:.2}", info.size_kb)
    };
    let mut fm = Frontmatter::new()
        .text("file", &info.file)
        .raw("size_kb", size)
        .opt_text("definition", info.definition.as_ref())
        .opt_text("vehicle", info.vehicle.as_ref())
        .opt_text("ecu_id", info.ecu_id.as_ref())
        .opt_text("memmodel", info.memmodel.as_ref())
        .raw(
            "checksum_valid",
            info.checksum_valid.map_or("null".into(), |v| v.to_string()),
        )
        .opt_text("checksum_algorithm", info.checksum_algorithm.as_ref());
    if let Some(f) = &info.definition_file {
        fm = fm
            .opt_text("definition_format", info.definition_format.as_ref())
            .text("definition_file", f)
            .list("include_chain", &info.include_chain);
    }
    for note in &info.notes {
        fm = fm.text("note", note);
    }
    Ok(fm.to_yaml())
}

// ------------------------------------------------------------- list_tables

/// list_tables: frontmatter + one row per table.
pub fn list_tables(ex: &mut Explorer, cfg: &Config, args: &ListTables) -> Result<String, Error> {
    let opened = open(ex, cfg, &args.rom)?;
    let def = opened.require_definition()?;
    let category = args.category.as_deref().map(str::to_lowercase);
    let search = args.search.as_deref().map(str::to_lowercase);
    let matching: Vec<&Table> = def
        .tables
        .iter()
        .filter(|t| {
            category.as_ref().is_none_or(|c| {
                t.category
                    .as_deref()
                    .is_some_and(|tc| tc.to_lowercase().contains(c.as_str()))
            })
        })
        .filter(|t| {
            search
                .as_ref()
                .is_none_or(|s| t.id.to_lowercase().contains(s.as_str()))
        })
        .collect();
    let offset = args.offset.unwrap_or(0) as usize;
    let limit = (args.limit.map_or(DEFAULT_LIST, |l| l as usize)).clamp(1, MAX_LIST);
    let shown: Vec<&&Table> = matching.iter().skip(offset).take(limit).collect();

    let mut md = MarkdownTable::new(["Name", "Category", "Dimensions", "Unit"]);
    for t in &shown {
        md.row([
            t.id.clone(),
            t.category.clone().unwrap_or_default(),
            t.dimensions(),
            t.unit().unwrap_or("").to_string(),
        ]);
    }
    let mut fm = Frontmatter::new()
        .text("rom", opened.path.display().to_string())
        .text("definition", def.display_name())
        .raw("table_count", matching.len());
    // Echoed so the agent sees what the listing was narrowed by, clipped:
    // a 100 KB filter would otherwise come back whole (hardening item 11).
    if let Some(c) = &args.category {
        fm = fm.text("category", plugin_kit::text::clip(c));
    }
    if let Some(s) = &args.search {
        fm = fm.text("search", plugin_kit::text::clip(s));
    }
    if offset > 0 || shown.len() < matching.len() {
        let end = offset + shown.len();
        fm = fm.text(
            "shown",
            format!("{}-{} of {}", offset.min(end), end, matching.len()),
        );
        if end < matching.len() {
            fm = fm.text(
                "note",
                format!(
                    "{} more; call again with offset={end}, or narrow with category/search",
                    matching.len() - end
                ),
            );
        }
    }
    if !def.unresolvable.is_empty() {
        const SHOWN: usize = 10;
        let mut names: Vec<String> = def
            .unresolvable
            .iter()
            .take(SHOWN)
            .map(|(n, why)| format!("{n}: {why}"))
            .collect();
        if def.unresolvable.len() > SHOWN {
            names.push(format!(
                "and {} more (unreadable_tables counts them all)",
                def.unresolvable.len() - SHOWN
            ));
        }
        fm = fm
            .raw("unreadable_tables", def.unresolvable.len())
            .list("unreadable", &names);
    }
    for w in opened
        .warnings
        .iter()
        .chain(fit_notes(&def, &opened).iter())
    {
        fm = fm.text("warning", w);
    }
    let body = if shown.is_empty() {
        if matching.is_empty() {
            let mut cats: Vec<&str> = def
                .tables
                .iter()
                .filter_map(|t| t.category.as_deref())
                .collect();
            cats.sort_unstable();
            cats.dedup();
            format!(
                "No table matches. Categories in this definition: {}.\n",
                cats.join(", ")
            )
        } else {
            format!(
                "offset {offset} is past the last table ({}).\n",
                matching.len()
            )
        }
    } else {
        md.render()
    };
    Ok(fm.with_body(&body))
}

// -------------------------------------------------------------- read_table

/// A window of rows and columns to render.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    pub row_start: usize,
    pub row_count: usize,
    pub col_start: usize,
    pub col_count: usize,
}

impl Window {
    /// The whole table.
    pub(crate) fn whole(rows: usize, cols: usize) -> Self {
        Self {
            row_start: 0,
            row_count: rows,
            col_start: 0,
            col_count: cols,
        }
    }

    fn new(
        rows: usize,
        cols: usize,
        row_start: Option<u32>,
        row_count: Option<u32>,
        col_start: Option<u32>,
        col_count: Option<u32>,
    ) -> Result<Self, Error> {
        let rs = row_start.unwrap_or(0) as usize;
        let cs = col_start.unwrap_or(0) as usize;
        if rs >= rows {
            return Err(Error::InvalidArgument(format!(
                "row_start {rs} is past the last row: the table has {rows} rows (0..={})",
                rows - 1
            )));
        }
        if cs >= cols {
            return Err(Error::InvalidArgument(format!(
                "col_start {cs} is past the last column: the table has {cols} columns (0..={})",
                cols - 1
            )));
        }
        let rc = row_count.map_or(DEFAULT_ROWS, |c| (c as usize).clamp(1, MAX_ROWS));
        let cc = col_count.map_or(DEFAULT_COLS, |c| (c as usize).clamp(1, MAX_COLS));
        Ok(Self {
            row_start: rs,
            row_count: rc.min(rows - rs),
            col_start: cs,
            col_count: cc.min(cols - cs),
        })
    }

    fn is_whole(&self, rows: usize, cols: usize) -> bool {
        self.row_start == 0
            && self.col_start == 0
            && self.row_count == rows
            && self.col_count == cols
    }
}

/// Decodes a table as data.
pub fn table_data(
    ex: &mut Explorer,
    cfg: &Config,
    rom: &str,
    table: &str,
) -> Result<(Arc<Definition>, Table, TableData), Error> {
    let opened = open(ex, cfg, rom)?;
    let def = opened.require_definition()?;
    let t = find_table(&def, table)?.clone();
    require_inside(&t, &opened)?;
    let data = decode_table(&t, &opened.bytes)?;
    Ok((def, t, data))
}

/// read_table: frontmatter + the table in physical units.
pub fn read_table(ex: &mut Explorer, cfg: &Config, args: &ReadTable) -> Result<String, Error> {
    let (_, t, data) = table_data(ex, cfg, &args.rom, &args.table)?;
    let mut extra = Frontmatter::new();
    let mut by_value = |text: Option<&String>,
                        rows: bool,
                        start: Option<u32>,
                        count: Option<u32>|
     -> Result<(Option<u32>, Option<u32>), Error> {
        let Some(text) = text else {
            return Ok((start, count));
        };
        let index_args = if rows {
            "row_start/row_count"
        } else {
            "col_start/col_count"
        };
        if start.is_some() || count.is_some() {
            return Err(Error::InvalidArgument(format!(
                "give {} or {index_args}, not both",
                where_arg(rows)
            )));
        }
        let (first, n, note) = axis_span(&t, &data, text, rows)?;
        extra = std::mem::take(&mut extra).text(where_arg(rows), note);
        Ok((Some(first as u32), Some(n as u32)))
    };
    let (row_start, row_count) = by_value(
        args.rows_where.as_ref(),
        true,
        args.row_start,
        args.row_count,
    )?;
    let (col_start, col_count) = by_value(
        args.cols_where.as_ref(),
        false,
        args.col_start,
        args.col_count,
    )?;
    let window = Window::new(
        data.rows, data.cols, row_start, row_count, col_start, col_count,
    )?;
    Ok(render_table(&t, &data, window, extra))
}

/// `rows_where` or `cols_where`.
fn where_arg(rows: bool) -> &'static str {
    if rows { "rows_where" } else { "cols_where" }
}

/// The rows (or columns) whose cells meet the axis-value range `text`
/// (read_table's and patch_table's `rows_where`/`cols_where`): the first
/// index, how many, and a note for the frontmatter saying which.
pub(crate) fn axis_span(
    t: &Table,
    data: &TableData,
    text: &str,
    rows: bool,
) -> Result<(usize, usize, String), Error> {
    let arg = where_arg(rows);
    let (axis, axis_data) = match (t.table_type, rows) {
        (TableType::Grid, true) | (TableType::OneAxis, true) => {
            (t.row_axis.as_ref(), data.row_axis.as_ref())
        }
        (TableType::Grid, false) => (t.col_axis.as_ref(), data.col_axis.as_ref()),
        _ => (None, None),
    };
    let Some(axis) = axis else {
        return Err(Error::InvalidArgument(format!(
            "`{}` has no axis for {arg} ({} table); use {}",
            t.id,
            t.dimensions(),
            if rows { "no range" } else { "rows_where" }
        )));
    };
    let (first, n) = crate::bins::axis_window(axis, axis_data, text, arg)?;
    let what = if rows { "rows" } else { "columns" };
    // A range padded with spaces or leading zeros parses, so its text is
    // clipped before it goes back in the frontmatter.
    let note = format!(
        "{} ({} → {what} {first}-{})",
        plugin_kit::text::clip(text.trim()),
        axis.label(),
        first + n - 1
    );
    Ok((first, n, note))
}

fn axis_label(t: &Table, rows: bool) -> Option<String> {
    let axis = if rows { &t.row_axis } else { &t.col_axis };
    axis.as_ref().map(|a| a.label())
}

/// The spec's table document; `extra` lines go after the standard fields.
pub(crate) fn render_table(t: &Table, data: &TableData, w: Window, extra: Frontmatter) -> String {
    let mut fm = Frontmatter::new()
        .text("table", &t.id)
        .opt_text("category", t.category.as_ref())
        .opt_text("unit", t.unit())
        .text("dimensions", t.dimensions());
    match t.table_type {
        TableType::Grid => {
            fm = fm
                .opt_text("x_axis", axis_label(t, false))
                .opt_text("y_axis", axis_label(t, true));
        }
        TableType::OneAxis => fm = fm.opt_text("x_axis", axis_label(t, true)),
        TableType::Scalar => {}
    }
    if let crate::scaling::Kind::Blobs(choices) = &t.scaling.kind {
        let names: Vec<&str> = choices.iter().map(|(n, _)| n.as_str()).collect();
        fm = fm.list("choices", &names);
    }
    if matches!(t.scaling.kind, crate::scaling::Kind::Bit) {
        fm = fm.text("storage", "bits (0/1)");
    }
    let whole = w.is_whole(data.rows, data.cols);
    if !whole {
        fm = fm
            .raw("first_row", w.row_start)
            .raw("first_col", w.col_start);
    }
    let mut doc = extra.to_yaml();
    let mut head = fm.to_yaml();
    head.push_str(&doc);
    doc = head;
    if !whole {
        let mut parts = Vec::new();
        let row_end = w.row_start + w.row_count;
        let col_end = w.col_start + w.col_count;
        parts.push(format!(
            "showing rows {}-{} of {} and columns {}-{} of {} (indices are absolute)",
            w.row_start,
            row_end - 1,
            data.rows,
            w.col_start,
            col_end - 1,
            data.cols
        ));
        if row_end < data.rows {
            parts.push(format!("more rows: row_start={row_end}"));
        }
        if col_end < data.cols {
            parts.push(format!("more columns: col_start={col_end}"));
        }
        doc.push_str(&format!(
            "note: {}\n",
            plugin_kit::yaml::scalar(&parts.join("; "))
        ));
    }
    let body = render_grid(t, data, w);
    format!("---\n{doc}---\n\n{body}")
}

fn render_grid(t: &Table, data: &TableData, w: Window) -> String {
    let value_header = match t.unit() {
        Some(u) if !u.is_empty() => format!("Value ({u})"),
        _ => "Value".to_string(),
    };
    render_layout(t, data, w, value_header, &|r, c| data.display(r, c))
}

/// The table's markdown layout (the spec's 1D/2D shapes, axis breakpoints
/// as headers) with `cell` giving each shown cell's text: read_table shows
/// the values, overlay_log its figures in the same layout.
pub(crate) fn render_layout(
    t: &Table,
    data: &TableData,
    w: Window,
    value_header: String,
    cell: &dyn Fn(usize, usize) -> String,
) -> String {
    let rows = w.row_start..w.row_start + w.row_count;
    let cols = w.col_start..w.col_start + w.col_count;
    match t.table_type {
        TableType::Grid => {
            let x = data.col_axis.as_ref().map(|a| &a.labels);
            let y = data.row_axis.as_ref().map(|a| &a.labels);
            let mut header = vec!["Y\\X".to_string()];
            header.extend(
                cols.clone()
                    .map(|c| x.map_or(c.to_string(), |l| l[c].clone())),
            );
            let mut md = MarkdownTable::new(header);
            for r in rows {
                let mut row = Vec::with_capacity(w.col_count + 1);
                row.push(y.map_or(r.to_string(), |l| l[r].clone()));
                row.extend(cols.clone().map(|c| cell(r, c)));
                md.row(row);
            }
            md.render()
        }
        TableType::OneAxis => {
            let axis = axis_label(t, true).unwrap_or_else(|| "Index".into());
            let labels = data.row_axis.as_ref().map(|a| &a.labels);
            let mut md = MarkdownTable::new([axis, value_header]);
            for r in rows {
                md.row([labels.map_or(r.to_string(), |l| l[r].clone()), cell(r, 0)]);
            }
            md.render()
        }
        TableType::Scalar => {
            let mut md = MarkdownTable::new([value_header]);
            md.row([cell(0, 0)]);
            md.render()
        }
    }
}

// ------------------------------------------------------------- patch_table

pub(crate) fn build_op(args: &PatchTable) -> Result<Op, Error> {
    let need = |v: Option<f64>, what: &str| {
        v.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "op={what} needs `value` (a number in the table's physical units)"
            ))
        })
    };
    let finite = |v: f64, name: &str| {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::InvalidArgument(format!(
                "`{name}` must be a finite number, got {v}"
            )))
        }
    };
    if let Some(choice) = &args.choice {
        if args.op != OpKind::Set {
            return Err(Error::InvalidArgument(
                "`choice` selects a bloblist option and only goes with op=set".into(),
            ));
        }
        return Ok(Op::Choose(choice.clone()));
    }
    Ok(match args.op {
        OpKind::Set => Op::Set(finite(need(args.value, "set")?, "value")?),
        OpKind::Add => Op::Add(finite(need(args.value, "add")?, "value")?),
        OpKind::Multiply => Op::Multiply(finite(need(args.value, "multiply")?, "value")?),
        OpKind::Clamp => {
            let (Some(min), Some(max)) = (args.min, args.max) else {
                return Err(Error::InvalidArgument(
                    "op=clamp needs both `min` and `max` (physical units)".into(),
                ));
            };
            let (min, max) = (finite(min, "min")?, finite(max, "max")?);
            if min > max {
                return Err(Error::InvalidArgument(format!(
                    "clamp bounds are reversed: min {min} > max {max}"
                )));
            }
            Op::Clamp { min, max }
        }
        OpKind::Smooth => Op::Smooth,
    })
}

/// Applies a patch, writes the ROM atomically with its checksum fixed, and
/// returns what happened.
pub fn patch(ex: &mut Explorer, cfg: &Config, args: &PatchTable) -> Result<PatchOutcome, Error> {
    patch_checked(ex, cfg, args, None)
}

/// [`patch`], writing only if what it would write under the ROM's lock is
/// exactly the change `confirmed` (from [`patch_confirmation`]) the user
/// was asked about; otherwise [`Error::ChangedSinceConfirmed`] and nothing
/// is written.
fn patch_checked(
    ex: &mut Explorer,
    cfg: &Config,
    args: &PatchTable,
    confirmed: Option<&str>,
) -> Result<PatchOutcome, Error> {
    let op = build_op(args)?;
    let dir = cfg.dir()?;
    let rom = rom_path(&args.rom)?;
    // Walk and parse the definitions before taking the lock, so the lock is
    // held only for the read-modify-write (its errors, if any, come again
    // from the locked open, which reuses this walk).
    let _ = ex.open_rescanned(dir, &rom);
    // Under the ROM's lock, from the bytes on disk once it is held (another
    // process may have patched it a moment ago); through a symlink, the
    // link's target is what gets patched.
    let (rom, mut lock) = crate::store::lock_rom(&rom)?;
    let opened = ex.open_fresh(dir, &rom)?;
    let def = opened.require_definition()?;
    let Prepared {
        table,
        before,
        target,
        selection,
        effect,
        image,
        checksum,
        warnings,
    } = prepare(ex, &opened, &def, &op, args)?;
    // Checked under the lock: another writer may have moved an axis or
    // changed the cells while the user read the question.
    if let Some(confirmed) = confirmed
        && change_digest(&opened.path, &opened.bytes, &image) != confirmed
    {
        return Err(Error::ChangedSinceConfirmed);
    }
    // A cell whose stored bytes changed settles it without comparing the
    // whole image again (a checksum fix alone may still change it).
    let written = !effect.changed.is_empty() || !plugin_kit::bytes::same(&image, &opened.bytes);
    let after = decode_table(&table, &image)?;
    // Back into the file's own shape (.srf chunks, H8 base) before saving.
    let base = opened.layout.base;
    let bytes = if written {
        ex.write_rom(&opened.path, opened.layout.into_file(image), &mut lock)?
    } else {
        Arc::new(opened.layout.to_file(&opened.bytes))
    };
    // The next patch starts from what was just checked.
    ex.remember_checksum(&opened.path, &def, base, &checksum);
    Ok(PatchOutcome {
        path: opened.path,
        definition: def,
        table,
        before,
        after,
        op,
        target,
        selection,
        effect,
        checksum,
        warnings,
        bytes,
        written,
    })
}

/// A patch worked out on a copy of the image: everything but the write.
struct Prepared {
    table: Table,
    before: TableData,
    target: Target,
    selection: Selection,
    effect: PatchEffect,
    image: Vec<u8>,
    checksum: ChecksumState,
    warnings: Vec<String>,
}

/// Resolves the cells, applies `op` to a copy of the image and fixes its
/// checksum: every check a patch makes before writing. patch_table runs it
/// once to ask the user (nothing locked) and again under the ROM's lock.
fn prepare(
    ex: &mut Explorer,
    opened: &OpenedRom,
    def: &Definition,
    op: &Op,
    args: &PatchTable,
) -> Result<Prepared, Error> {
    let table = find_table(def, &args.table)?.clone();
    require_inside(&table, opened)?;
    let before = decode_table(&table, &opened.bytes)?;
    let (target, selection) = patch_target(&table, &before, args)?;
    let mut warnings = opened.warnings.clone();
    let prior = ex.checksum_of(opened);
    let mut image = opened.bytes.as_ref().clone();
    let effect = patch::apply(&table, &before, &mut image, op, &target, args.force)?;
    let checksum = match prior.module {
        Some(module) => {
            // A module that cannot handle this image must not write a
            // ROM with a knowingly wrong checksum.
            let fixed = module
                .fix_checked(&mut image)
                .map_err(|e| Error::Write {
                    path: opened.path.clone(),
                    message: format!("{e}, so its checksum could not be fixed"),
                })?
                .map_err(|e| Error::Write {
                    path: opened.path.clone(),
                    message: format!("{e}, so its checksum could not be checked after fixing"),
                })?;
            if !fixed {
                return Err(Error::Write {
                    path: opened.path.clone(),
                    message: format!("{} checksum did not validate after fixing", module.name()),
                });
            }
            if prior.valid == Some(false) {
                warnings.push(format!(
                    "the {} checksum was already invalid before this patch (edited elsewhere?); it has been recomputed over the whole image",
                    module.name()
                ));
            }
            // Validated just now: the state of the fixed image without
            // another pass over it.
            ChecksumState {
                algorithm: prior.algorithm,
                note: module.disabled_note(&image),
                valid: Some(true),
                module: Some(module),
            }
        }
        None => {
            match (&def.checksum, &prior.algorithm) {
                (crate::definition::FamilyChecksum::Unknown(why), _) => warnings.push(format!(
                    "the checksum was NOT updated: {why}"
                )),
                (_, Some(alg)) => warnings.push(format!(
                    "checksum module `{alg}` is not supported: the checksum was NOT updated; fix it with ECUFlash before flashing this ROM"
                )),
                _ => {}
            }
            prior
        }
    };
    Ok(Prepared {
        table,
        before,
        target,
        selection,
        effect,
        image,
        checksum,
        warnings,
    })
}

/// The question patch_table asks its user before writing, from a dry run
/// of the patch: the cells it resolves to (rows and columns with their
/// breakpoints, as many as it really writes) and how many change. A call
/// that would be refused (a range meeting no cell, an index past the
/// table, values out of the safe range) fails here, before any question.
pub fn patch_question(ex: &mut Explorer, cfg: &Config, args: &PatchTable) -> Result<String, Error> {
    patch_confirmation(ex, cfg, args).map(|(question, _)| question)
}

/// The question of [`patch_question`] and the digest of the change it
/// describes ([`change_digest`]): a confirmation holds for that change
/// only ([`patch_table_confirmed`]).
pub fn patch_confirmation(
    ex: &mut Explorer,
    cfg: &Config,
    args: &PatchTable,
) -> Result<(String, String), Error> {
    let op = build_op(args)?;
    // A link the write could not follow is refused as the write would
    // refuse it, not as an unreadable ROM.
    crate::store::rom_target(&rom_path(&args.rom)?)?;
    let opened = open(ex, cfg, &args.rom)?;
    let def = opened.require_definition()?;
    let p = prepare(ex, &opened, &def, &op, args)?;
    let cells = p.target.resolve(&p.table, p.before.rows, p.before.cols)?;
    Ok((
        args.describe(&p.table, &p.before, &cells, p.effect.changed.len()),
        change_digest(&opened.path, &opened.bytes, &p.image),
    ))
}

/// What a patch writes, as 16 hex digits: the ROM file, and each byte that
/// differs between its image before and after (offset, old, new), so the
/// cells, their old and new values and the fixed checksum all count, and
/// a change elsewhere in the ROM does not. FNV-1a: this tells a confirmed
/// change from another, it guards against no one who could write the ROM.
pub(crate) fn change_digest(path: &Path, before: &[u8], after: &[u8]) -> String {
    use plugin_kit::fnv::{OFFSET, fold};
    let mut h = fold(OFFSET, path.as_os_str().as_encoded_bytes());
    h = fold(h, &(after.len() as u64).to_le_bytes());
    for i in plugin_kit::bytes::differences(before, after) {
        h = fold(h, &(i as u64).to_le_bytes());
        h = fold(h, &[before[i], after[i]]);
    }
    format!("{h:016x}")
}

/// `7-9, 12`: sorted indices as ranges.
fn index_ranges(ix: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < ix.len() {
        let mut j = k;
        while j + 1 < ix.len() && ix[j + 1] == ix[j] + 1 {
            j += 1;
        }
        parts.push(if j == k {
            ix[k].to_string()
        } else {
            format!("{}-{}", ix[k], ix[j])
        });
        k = j + 1;
    }
    parts.join(", ")
}

/// Breakpoints listed in a question before the middle ones are elided.
const LABELS_SHOWN: usize = 8;

/// `rows 7-9 (RPM (rpm) 4000, 4500, 5000)`: indices of one axis with their
/// breakpoints (first and last ones when there are many).
fn axis_part(t: &Table, data: &TableData, rows: bool, ix: &[usize]) -> String {
    let (one, many) = if rows {
        ("row", "rows")
    } else {
        ("column", "columns")
    };
    let mut s = format!(
        "{} {}",
        if ix.len() == 1 { one } else { many },
        index_ranges(ix)
    );
    let axis = if rows { &data.row_axis } else { &data.col_axis };
    if let (Some(a), Some(name)) = (axis, axis_label(t, rows)) {
        let l = |i: &usize| a.labels[*i].clone();
        let labels: Vec<String> = if ix.len() <= LABELS_SHOWN {
            ix.iter().map(l).collect()
        } else {
            let mut v: Vec<String> = ix[..3].iter().map(l).collect();
            v.push("…".into());
            v.extend(ix[ix.len() - 3..].iter().map(l));
            v
        };
        s.push_str(&format!(" ({name} {})", labels.join(", ")));
    }
    s
}

/// How `rows_where`/`cols_where` resolved: (argument, note) each.
pub type Selection = Vec<(&'static str, String)>;

/// The cells a patch applies to: by index (`row`/`col`), by axis value
/// (`rows_where`/`cols_where`, the same cells read_table shows for them) or
/// listed (`cells`); and the frontmatter notes saying how ranges resolved.
pub(crate) fn patch_target(
    table: &Table,
    data: &TableData,
    args: &PatchTable,
) -> Result<(Target, Selection), Error> {
    if args.rows_where.is_some() && args.row.is_some() {
        return Err(Error::InvalidArgument(
            "give rows_where or row, not both: rows_where picks rows by axis value, row by index"
                .into(),
        ));
    }
    if args.cols_where.is_some() && args.col.is_some() {
        return Err(Error::InvalidArgument(
            "give cols_where or col, not both: cols_where picks columns by axis value, col by index"
                .into(),
        ));
    }
    if let Some(cells) = &args.cells {
        if args.row.is_some()
            || args.col.is_some()
            || args.rows_where.is_some()
            || args.cols_where.is_some()
        {
            return Err(Error::InvalidArgument(
                "`cells` lists the cells itself: drop row, col, rows_where and cols_where".into(),
            ));
        }
        if cells.is_empty() {
            return Err(Error::InvalidArgument(
                "`cells` is empty: list [row, col] pairs (0-based, from read_table), or omit it to patch the whole table".into(),
            ));
        }
        if cells.len() > MAX_PATCH_CELLS {
            return Err(Error::InvalidArgument(format!(
                "`cells` lists {} cells; at most {MAX_PATCH_CELLS} per call (omit `cells` to patch the whole table)",
                cells.len()
            )));
        }
        let mut cells: Vec<(usize, usize)> = cells
            .iter()
            .map(|&(r, c)| (r as usize, c as usize))
            .collect();
        cells.sort_unstable();
        cells.dedup();
        let target = Target {
            cells: Some(cells),
            ..Default::default()
        };
        return Ok((target, Vec::new()));
    }
    let mut notes = Vec::new();
    let mut span = |text: &Option<String>, rows: bool, index: Option<u32>| match text {
        Some(text) => {
            let (first, n, note) = axis_span(table, data, text, rows)?;
            notes.push((where_arg(rows), note));
            Ok::<_, Error>(Some(first..first + n))
        }
        None => Ok(index.map(|i| i as usize..i as usize + 1)),
    };
    let rows = span(&args.rows_where, true, args.row)?;
    let cols = span(&args.cols_where, false, args.col)?;
    if args.rows_where.is_none() && args.cols_where.is_none() {
        let target = Target {
            row: args.row.map(|r| r as usize),
            col: args.col.map(|c| c as usize),
            cells: None,
        };
        return Ok((target, notes));
    }
    // A block of rows × columns by value: listed cell by cell.
    let rows = rows.unwrap_or(0..data.rows);
    let cols = cols.unwrap_or(0..data.cols);
    let cells = rows
        .flat_map(|r| cols.clone().map(move |c| (r, c)))
        .collect();
    Ok((
        Target {
            cells: Some(cells),
            ..Default::default()
        },
        notes,
    ))
}

/// patch_table: applies the patch and returns the updated table.
pub fn patch_table(ex: &mut Explorer, cfg: &Config, args: &PatchTable) -> Result<String, Error> {
    patch_written(ex, cfg, args).map(|p| p.answer)
}

/// [`patch_table`], with the id of the table written.
pub fn patch_written(ex: &mut Explorer, cfg: &Config, args: &PatchTable) -> Result<Patched, Error> {
    Patched::of(patch(ex, cfg, args)?)
}

/// What patch_table answers, and the table it wrote.
#[derive(Debug)]
pub struct Patched {
    /// The answer ([`render_patch`]).
    pub answer: String,
    /// The written table's id as its definition names it (what its
    /// `rom://` resources are named by).
    pub table_id: String,
}

impl Patched {
    fn of(out: PatchOutcome) -> Result<Self, Error> {
        let table_id = out.table.id.clone();
        Ok(Self {
            answer: render_patch(out)?,
            table_id,
        })
    }
}

/// [`patch_table`] after the user confirmed the change `confirmed`
/// ([`patch_confirmation`]): written only if it is still that change.
pub fn patch_table_confirmed(
    ex: &mut Explorer,
    cfg: &Config,
    args: &PatchTable,
    confirmed: &str,
) -> Result<Patched, Error> {
    Patched::of(patch_checked(ex, cfg, args, Some(confirmed))?)
}

/// The answer of patch_table: the operation, its effect, the checksum,
/// and the table as written.
fn render_patch(out: PatchOutcome) -> Result<String, Error> {
    let data = &out.after;
    // Show the targeted row/column even when it is outside the default window.
    let start =
        |target: Option<usize>, default: usize| target.filter(|&t| t >= default).map(|t| t as u32);
    let (first_row, first_col) = match &out.target.cells {
        Some(cells) => (
            cells.iter().map(|c| c.0).min(),
            cells.iter().map(|c| c.1).min(),
        ),
        None => (out.target.row, out.target.col),
    };
    let window = Window::new(
        data.rows,
        data.cols,
        start(first_row, DEFAULT_ROWS),
        None,
        start(first_col, DEFAULT_COLS),
        None,
    )?;
    let mut fm = Frontmatter::new().text(
        "operation",
        format!("{} on {}", out.op.describe(), out.target.describe()),
    );
    for (arg, note) in &out.selection {
        fm = fm.text(arg, note);
    }
    fm = fm
        .raw("cells_targeted", out.effect.targeted)
        .raw("cells_changed", out.effect.changed.len())
        .opt_text("checksum_algorithm", out.checksum.algorithm.as_ref())
        .raw(
            "checksum_valid",
            out.checksum.valid.map_or("null".into(), |v| v.to_string()),
        )
        .text(
            "saved",
            if out.written {
                out.path.display().to_string()
            } else {
                "nothing written (values already as requested)".to_string()
            },
        );
    if !out.effect.limited.is_empty() {
        let items: Vec<String> = out
            .effect
            .limited
            .iter()
            .take(20)
            .map(|c| {
                format!(
                    "[{},{}] wanted {} stored {}",
                    c.row,
                    c.col,
                    out.table.scaling.display(c.requested),
                    c.after
                )
            })
            .collect();
        fm = fm
            .raw("limited_cells", out.effect.limited.len())
            .list("limited", &items)
            .text(
                "limited_note",
                format!(
                    "these cells were limited to the {} storage range",
                    out.table.scaling.storage.name()
                ),
            );
    }
    if out.effect.outside_soft_limits > 0 {
        fm = fm.text(
            "warning",
            format!(
                "{} cell(s) are now outside the scaling's range [{}, {}]",
                out.effect.outside_soft_limits,
                out.table.scaling.min.map_or("-".into(), |v| v.to_string()),
                out.table.scaling.max.map_or("-".into(), |v| v.to_string())
            ),
        );
    }
    for w in &out.warnings {
        fm = fm.text("warning", w);
    }
    Ok(render_table(&out.table, data, window, fm))
}

// ------------------------------------------------------------- diff_tables

/// `off → on` for a switch (bloblist) or bit cell that changed; None for
/// numbers, whose change is a delta.
fn switch_change(t: &Table, a: &crate::decode::Cell, b: &crate::decode::Cell) -> Option<String> {
    let state = |cell: &crate::decode::Cell| match (&t.scaling.kind, cell) {
        (crate::scaling::Kind::Bit, crate::decode::Cell::Num(v)) => {
            Some(if *v != 0.0 { "on" } else { "off" }.to_string())
        }
        (_, crate::decode::Cell::Blob(..)) => Some(display_cell(&t.scaling, cell)),
        _ => None,
    };
    Some(format!("{} → {}", state(a)?, state(b)?))
}

/// diff_tables: which tables (or cells of one table) differ between two ROMs.
pub fn diff_tables(ex: &mut Explorer, cfg: &Config, args: &DiffTables) -> Result<String, Error> {
    let a = open(ex, cfg, &args.rom)?;
    // `rom_path` names `rom`; an empty `other` must be named as itself.
    if args.other.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "`other` is empty: pass the second ROM image's absolute or workspace-relative path"
                .into(),
        ));
    }
    let b = open(ex, cfg, &args.other)?;
    let da = a.require_definition()?;
    let db = b.require_definition()?;
    let limit = args.limit.map_or(200, |l| (l as usize).clamp(1, 2000));
    let mut fm = Frontmatter::new()
        .text("rom", a.path.display().to_string())
        .text("other", b.path.display().to_string())
        .text("definition", da.display_name());
    if db.display_name() != da.display_name() {
        fm = fm.text("other_definition", db.display_name()).text(
            "note",
            "different definitions: tables are compared by name where their shapes agree",
        );
    }
    match &args.table {
        Some(name) => {
            let ta = find_table(&da, name)?;
            let tb = find_table(&db, &ta.id).or_else(|_| find_table(&db, &ta.name))?;
            let xa = decode_table(ta, &a.bytes)?;
            let xb = decode_table(tb, &b.bytes)?;
            if (xa.rows, xa.cols) != (xb.rows, xb.cols) {
                return Err(Error::InvalidArgument(format!(
                    "`{}` has different shapes in the two ROMs ({} vs {}); they cannot be compared cell by cell",
                    ta.id,
                    ta.dimensions(),
                    tb.dimensions()
                )));
            }
            let row_labels = xa.row_axis.as_ref().map(|a| &a.labels);
            let col_labels = xa.col_axis.as_ref().map(|a| &a.labels);
            let mut md = MarkdownTable::new(["Row", "Col", "Y", "X", "ROM", "Other", "Delta"]);
            let mut changed = 0usize;
            for r in 0..xa.rows {
                for c in 0..xa.cols {
                    if xa.cell(r, c) == xb.cell(r, c) {
                        continue;
                    }
                    changed += 1;
                    if changed > limit {
                        continue;
                    }
                    let delta = xb.value(r, c) - xa.value(r, c);
                    md.row([
                        r.to_string(),
                        c.to_string(),
                        row_labels.map_or(String::new(), |l| l[r].clone()),
                        col_labels.map_or(String::new(), |l| l[c].clone()),
                        xa.display(r, c),
                        display_cell(&tb.scaling, xb.cell(r, c)),
                        match switch_change(ta, xa.cell(r, c), xb.cell(r, c)) {
                            Some(change) => change,
                            None if delta.is_finite() => ta.scaling.display(delta),
                            None => String::new(),
                        },
                    ]);
                }
            }
            let axes_differ = xa.row_axis != xb.row_axis || xa.col_axis != xb.col_axis;
            fm = fm
                .text("table", &ta.id)
                .text("dimensions", ta.dimensions())
                .raw("cells_changed", changed)
                .raw("axes_changed", axes_differ);
            if changed > limit {
                fm = fm.text(
                    "shown",
                    format!("first {limit} of {changed} changed cells; raise limit to see more"),
                );
            }
            let body = if changed == 0 {
                "No cell differs.\n".to_string()
            } else {
                md.render()
            };
            Ok(fm.with_body(&body))
        }
        None => {
            // Keeps its header; switch/bit rows show the change (`off → on`).
            let mut md = MarkdownTable::new(["Table", "Category", "Cells changed", "Max |delta|"]);
            let (mut differing, mut compared) = (0usize, 0usize);
            let mut skipped = Vec::new();
            for ta in &da.tables {
                let Ok(tb) = find_table(&db, &ta.id) else {
                    skipped.push(ta.id.clone());
                    continue;
                };
                let (Ok(xa), Ok(xb)) = (decode_table(ta, &a.bytes), decode_table(tb, &b.bytes))
                else {
                    skipped.push(ta.id.clone());
                    continue;
                };
                if (xa.rows, xa.cols) != (xb.rows, xb.cols) {
                    skipped.push(ta.id.clone());
                    continue;
                }
                compared += 1;
                let mut n = 0usize;
                let mut max = 0f64;
                // Switches and bits change state, not by an amount.
                let mut first_switch: Option<String> = None;
                for (ca, cb) in xa.cells.iter().zip(&xb.cells) {
                    if ca != cb {
                        n += 1;
                        if first_switch.is_none() {
                            first_switch = switch_change(ta, ca, cb);
                        }
                        if let (crate::decode::Cell::Num(x), crate::decode::Cell::Num(y)) = (ca, cb)
                        {
                            max = max.max((y - x).abs());
                        }
                    }
                }
                let axes = xa.row_axis != xb.row_axis || xa.col_axis != xb.col_axis;
                if n == 0 && !axes {
                    continue;
                }
                differing += 1;
                if differing <= limit {
                    md.row([
                        if axes {
                            format!("{} (axes differ)", ta.id)
                        } else {
                            ta.id.clone()
                        },
                        ta.category.clone().unwrap_or_default(),
                        n.to_string(),
                        match (&first_switch, n) {
                            (_, 0) => String::new(),
                            (Some(change), 1) => change.clone(),
                            (Some(change), n) => format!("{change} (+{} more)", n - 1),
                            (None, _) => ta.scaling.display(max),
                        },
                    ]);
                }
            }
            fm = fm
                .raw("tables_compared", compared)
                .raw("tables_differing", differing);
            if differing > limit {
                fm = fm.text("shown", format!("first {limit} of {differing}"));
            }
            if !skipped.is_empty() {
                let few: Vec<&String> = skipped.iter().take(10).collect();
                fm = fm
                    .raw("tables_not_compared", skipped.len())
                    .list("not_compared", &few);
            }
            let body = if differing == 0 {
                "No table differs.\n".to_string()
            } else {
                format!(
                    "{}\nPass `table` to see the changed cells of one table.\n",
                    md.render()
                )
            };
            Ok(fm.with_body(&body))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hardening item 11: a ROM path padded with `./` is given back as it
    /// resolved; an ordinary one as written.
    #[test]
    fn hardening_11_a_padded_rom_path_is_echoed_resolved() {
        assert_eq!(rom_echo("/roms/a.bin"), "/roms/a.bin");
        let padded = format!("/roms/{}a.bin", "./".repeat(50_000));
        assert_eq!(rom_echo(&padded), "/roms/a.bin");
    }

    #[test]
    fn indices_read_as_ranges() {
        assert_eq!(index_ranges(&[7, 8, 9, 12, 14, 15]), "7-9, 12, 14-15");
        assert_eq!(index_ranges(&[3]), "3");
        assert_eq!(index_ranges(&[]), "");
    }
}
