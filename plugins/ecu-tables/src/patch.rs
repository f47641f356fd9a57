//! Table math (set/add/multiply/clamp/smooth) written back through `frexpr`.

use crate::decode::{Cell, TableData, bit_position, display_cell};
use crate::definition::Table;
use crate::scaling::Kind;

/// The operation to apply.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Replace each cell with this physical value.
    Set(f64),
    /// Add this physical value (negative to subtract).
    Add(f64),
    /// Multiply by this factor.
    Multiply(f64),
    /// Limit each cell to `min..=max`, physical units.
    Clamp {
        /// Lowest value kept.
        min: f64,
        /// Highest value kept.
        max: f64,
    },
    /// Average each cell with its neighbours (3×3 box, edges use those they
    /// have).
    Smooth,
    /// Bloblist tables: select a named choice.
    Choose(String),
}

impl Op {
    /// A short form for messages and confirmations, e.g. "add -1.5".
    pub fn describe(&self) -> String {
        match self {
            Op::Set(v) => format!("set {v}"),
            Op::Add(v) => format!("add {v}"),
            Op::Multiply(v) => format!("multiply {v}"),
            Op::Clamp { min, max } => format!("clamp [{min}, {max}]"),
            Op::Smooth => "smooth".into(),
            Op::Choose(c) => format!("set {}", plugin_kit::text::clip(c)),
        }
    }
}

/// Which cells an operation targets (0-based; None = every row/column).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Target {
    /// 0-based row; none means every row.
    pub row: Option<usize>,
    /// 0-based column; none means every column.
    pub col: Option<usize>,
    /// Exactly these (row, column) cells instead of `row`/`col` (which are
    /// then none): cells picked by axis values or by a log.
    pub cells: Option<Vec<(usize, usize)>>,
}

/// Cells listed by [`Target::describe`]; the rest are counted.
const CELLS_SHOWN: usize = 8;

impl Target {
    /// One cell.
    pub fn cell(row: usize, col: usize) -> Self {
        Self {
            row: Some(row),
            col: Some(col),
            cells: None,
        }
    }

    /// Which cells, in words: "whole table", "row 3", "cell [3,4]",
    /// "3 cells [1,2], [1,3], [2,2]" (bounded).
    pub fn describe(&self) -> String {
        if let Some(cells) = &self.cells {
            let shown: Vec<String> = cells
                .iter()
                .take(CELLS_SHOWN)
                .map(|(r, c)| format!("[{r},{c}]"))
                .collect();
            let more = if cells.len() > CELLS_SHOWN {
                format!(" and {} more", cells.len() - CELLS_SHOWN)
            } else {
                String::new()
            };
            return match cells.len() {
                1 => format!("cell {}", shown[0]),
                n => format!("{n} cells {}{more}", shown.join(", ")),
            };
        }
        match (self.row, self.col) {
            (None, None) => "whole table".to_string(),
            (Some(r), None) => format!("row {r}"),
            (None, Some(c)) => format!("column {c}"),
            (Some(r), Some(c)) => format!("cell [{r},{c}]"),
        }
    }

    /// The targeted cells in row-major order, each once, or the first
    /// index past the table's end.
    pub(crate) fn resolve(
        &self,
        table: &Table,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<(usize, usize)>, PatchError> {
        if let Some(cells) = &self.cells {
            let mut out = Vec::with_capacity(cells.len());
            for &(r, c) in cells {
                if r >= rows {
                    return Err(out_of_range(table, "row", r, rows));
                }
                if c >= cols {
                    return Err(out_of_range(table, "column", c, cols));
                }
                out.push((r, c));
            }
            out.sort_unstable();
            out.dedup();
            return Ok(out);
        }
        if let Some(r) = self.row.filter(|&r| r >= rows) {
            return Err(out_of_range(table, "row", r, rows));
        }
        if let Some(c) = self.col.filter(|&c| c >= cols) {
            return Err(out_of_range(table, "column", c, cols));
        }
        Ok((0..rows)
            .filter(|r| self.row.is_none_or(|t| t == *r))
            .flat_map(|r| {
                (0..cols)
                    .filter(move |c| self.col.is_none_or(|t| t == *c))
                    .map(move |c| (r, c))
            })
            .collect())
    }
}

/// One written cell.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedCell {
    /// 0-based row of the cell.
    pub row: usize,
    /// 0-based column of the cell.
    pub col: usize,
    /// The physical value before, as read_table prints it.
    pub before: String,
    /// The physical value after, as read_table prints it.
    pub after: String,
    /// The stored number before (after the storage type's decoding, before
    /// scaling).
    pub raw_before: f64,
    /// The stored number written.
    pub raw_after: f64,
    /// The physical value asked for before rounding and limiting.
    pub requested: f64,
    /// True when `frexpr(requested)` was outside the storage range.
    pub limited: bool,
}

/// What a patch did to the image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PatchEffect {
    /// Cells the operation applied to.
    pub targeted: usize,
    /// Cells whose stored bytes changed.
    pub changed: Vec<ChangedCell>,
    /// Cells that had to be limited to the storage range.
    pub limited: Vec<ChangedCell>,
    /// Cells whose new value is outside the scaling's soft min/max.
    pub outside_soft_limits: usize,
}

/// Why a patch was refused; the image is untouched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// A row or column index past the table's end.
    #[error(
        "{axis} {index} is out of range: table `{table}` has {len} {axis}s (valid indices 0..={max}); take indices from read_table",
        max = len - 1
    )]
    OutOfRange {
        /// The table's id (its name, or `NAME @0xADDRESS` when names
        /// collide).
        table: String,
        /// "row" or "column".
        axis: &'static str,
        /// The index given.
        index: usize,
        /// Rows or columns the table has.
        len: usize,
    },
    /// An operation the table cannot take: a choice on a numeric table, a
    /// value on a switch table, smoothing a single value, a bit other than
    /// 0 or 1, a table whose scaling cannot be inverted.
    #[error("{0}")]
    Invalid(String),
    /// A value that frexpr cannot turn into a stored number (message says which).
    #[error("{0}")]
    NotRepresentable(String),
    /// Cells would leave the scaling's min/max or hit the storage limit,
    /// and the call did not pass `force`.
    #[error(
        "refused: {count} cell(s) of `{table}` would leave the safe range: {cells}{more}. Nothing was written. Check the value (a timing map at the storage limit is almost never meant), or pass force: true to write it anyway"
    )]
    Unsafe {
        /// The table's id (its name, or `NAME @0xADDRESS` when names
        /// collide).
        table: String,
        /// Cells that would leave the safe range.
        count: usize,
        /// The first of them with their values before and after.
        cells: String,
        /// " (and N more)" when not all are listed, else empty.
        more: String,
    },
}

/// Cells listed in an [`PatchError::Unsafe`] message.
const UNSAFE_SHOWN: usize = 10;

/// Scaling bounds worth enforcing: `min="0" max="0"` is a placeholder
/// some definitions carry, not a range.
fn soft_bounds(scaling: &crate::scaling::Scaling) -> (Option<f64>, Option<f64>) {
    match (scaling.min, scaling.max) {
        (Some(lo), Some(hi)) if lo == 0.0 && hi == 0.0 => (None, None),
        (Some(lo), Some(hi)) if lo > hi => (None, None),
        other => other,
    }
}

/// Applies `op` to the targeted cells of `table` in `rom` (already decoded
/// as `data`). Only targeted cells' bytes are written. Unless `force`, a
/// patch that would take a changed cell outside the scaling's `min`/`max`
/// or to the storage limit is refused before anything is written.
pub fn apply(
    table: &Table,
    data: &TableData,
    rom: &mut [u8],
    op: &Op,
    target: &Target,
    force: bool,
) -> Result<PatchEffect, PatchError> {
    let (rows, cols) = (data.rows, data.cols);
    let cells = target.resolve(table, rows, cols)?;
    let scaling = &table.scaling;
    let mut effect = PatchEffect {
        targeted: cells.len(),
        ..Default::default()
    };

    match (&scaling.kind, op) {
        (Kind::Blobs(choices), Op::Choose(name)) => {
            let Some((_, bytes)) = choices.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))
            else {
                return Err(PatchError::Invalid(format!(
                    "`{}` is not a choice of `{}`; choose one of: {}",
                    plugin_kit::text::clip(name),
                    table.id,
                    choice_list(choices)
                )));
            };
            for &(r, c) in &cells {
                let at = table.cell_offset(r, c);
                let before = data.cell(r, c).clone();
                if rom[at..at + bytes.len()] != bytes[..] {
                    rom[at..at + bytes.len()].copy_from_slice(bytes);
                    effect.changed.push(ChangedCell {
                        row: r,
                        col: c,
                        before: display_cell(scaling, &before),
                        after: display_cell(
                            scaling,
                            &Cell::Blob(Some(name.clone()), bytes.clone()),
                        ),
                        raw_before: f64::NAN,
                        raw_after: f64::NAN,
                        requested: f64::NAN,
                        limited: false,
                    });
                }
            }
            return Ok(effect);
        }
        (Kind::Blobs(choices), _) => {
            return Err(PatchError::Invalid(format!(
                "`{}` is a bloblist (switch) table: use op=set with choice set to one of: {}",
                table.id,
                choice_list(choices)
            )));
        }
        (_, Op::Choose(_)) => {
            return Err(PatchError::Invalid(format!(
                "`choice` only applies to bloblist tables; `{}` is numeric: pass `value` instead",
                table.id
            )));
        }
        _ => {}
    }

    if matches!(op, Op::Smooth) && rows * cols < 2 {
        return Err(PatchError::Invalid(format!(
            "smooth needs a table with neighbours; `{}` is a single value",
            table.id
        )));
    }
    if let Kind::Bit = scaling.kind {
        let Op::Set(v) = op else {
            return Err(PatchError::Invalid(format!(
                "`{}` is a bit table: only op=set with value 0 or 1 applies",
                table.id
            )));
        };
        if *v != 0.0 && *v != 1.0 {
            return Err(PatchError::Invalid(format!(
                "bit tables hold 0 or 1, not {v}; `{}` is a bit table",
                table.id
            )));
        }
        for &(r, c) in &cells {
            let (byte, mask) = bit_position(table, r, c);
            let old = rom[byte] & mask != 0;
            if old != (*v == 1.0) {
                rom[byte] ^= mask;
                effect.changed.push(ChangedCell {
                    row: r,
                    col: c,
                    before: u8::from(old).to_string(),
                    after: (*v as u8).to_string(),
                    raw_before: f64::from(u8::from(old)),
                    raw_after: *v,
                    requested: *v,
                    limited: false,
                });
            }
        }
        return Ok(effect);
    }

    let Kind::Numeric { from, .. } = &scaling.kind else {
        unreachable!("blob and bit scalings handled above")
    };
    let Some(from) = from else {
        return Err(PatchError::Invalid(format!(
            "scaling `{}` of `{}` has a toexpr but no frexpr, so values cannot be converted back to raw; this table is read-only",
            scaling.name, table.id
        )));
    };

    // Compute every new value from the original grid before writing, so
    // smoothing never sees its own output and a refusal leaves no partial write.
    let mut planned = Vec::with_capacity(cells.len());
    for &(r, c) in &cells {
        let v = data.value(r, c);
        let new = match op {
            Op::Set(x) => *x,
            Op::Add(x) => v + x,
            Op::Multiply(x) => v * x,
            Op::Clamp { min, max } => v.max(*min).min(*max),
            Op::Smooth => smooth_at(data, r, c),
            Op::Choose(_) => unreachable!(),
        };
        let raw = from.eval(new);
        if !raw.is_finite() || !new.is_finite() {
            let (lo, hi) = value_span(data);
            return Err(PatchError::NotRepresentable(format!(
                "cannot represent {new} in cell [{r},{c}] of `{}`: frexpr `{}` gives {raw}; choose a value the scaling can store (current values range {} … {})",
                table.id,
                from.source(),
                scaling.display(lo),
                scaling.display(hi)
            )));
        }
        planned.push((r, c, new, raw));
    }

    let size = scaling.storage.size();
    let (soft_min, soft_max) = soft_bounds(scaling);
    let mut writes = Vec::with_capacity(planned.len());
    let mut unsafe_cells = Vec::new();
    for (r, c, new, raw) in planned {
        let (stored, limited) = match scaling.storage.int_range() {
            Some((lo, hi)) => {
                // f64::round rounds half away from zero, the rule ECUFlash
                // definitions' values are checked against.
                let rounded = raw.round();
                let clamped = rounded.clamp(lo, hi);
                (clamped, clamped != rounded)
            }
            None => {
                let max = f32::MAX as f64;
                let clamped = raw.clamp(-max, max);
                (clamped, clamped != raw)
            }
        };
        let at = table.cell_offset(r, c);
        let old_bytes = rom[at..at + size].to_vec();
        let mut new_bytes = old_bytes.clone();
        scaling
            .storage
            .write(scaling.endian, stored, &mut new_bytes);
        let raw_after = scaling.storage.read(scaling.endian, &new_bytes);
        let after = scaling.to_physical(raw_after);
        let outside = soft_min.is_some_and(|m| after < m) || soft_max.is_some_and(|m| after > m);
        if outside {
            effect.outside_soft_limits += 1;
        }
        // Only cells this patch moves count: a stored value already outside
        // a definition's range is not the caller's doing.
        if !force && new_bytes != old_bytes {
            if limited {
                unsafe_cells.push(format!(
                    "[{r},{c}] wanted {} but {} stores at most {} there (storage limit)",
                    scaling.display(new),
                    scaling.storage.name(),
                    scaling.display(after)
                ));
            } else if soft_min.is_some_and(|m| new < m) || soft_max.is_some_and(|m| new > m) {
                // The value asked for, not its rounding: setting 1000 on a
                // [1, 1000] scaling whose nearest raw step is 1008 is fine.
                unsafe_cells.push(format!(
                    "[{r},{c}] {} is outside the scaling `{}` range [{}, {}]",
                    scaling.display(new),
                    scaling.name,
                    soft_min.map_or("-".into(), |v| scaling.display(v)),
                    soft_max.map_or("-".into(), |v| scaling.display(v)),
                ));
            }
        }
        let changed = ChangedCell {
            row: r,
            col: c,
            before: data.display(r, c),
            after: scaling.display(after),
            raw_before: data.raw[r * cols + c],
            raw_after,
            requested: new,
            limited,
        };
        if limited {
            effect.limited.push(changed.clone());
        }
        writes.push((at, new_bytes != old_bytes, new_bytes, changed));
    }
    if !unsafe_cells.is_empty() {
        let count = unsafe_cells.len();
        return Err(PatchError::Unsafe {
            table: table.id.clone(),
            count,
            cells: unsafe_cells
                .into_iter()
                .take(UNSAFE_SHOWN)
                .collect::<Vec<_>>()
                .join("; "),
            more: if count > UNSAFE_SHOWN {
                format!(" (and {} more)", count - UNSAFE_SHOWN)
            } else {
                String::new()
            },
        });
    }
    for (at, differs, bytes, changed) in writes {
        if differs {
            rom[at..at + size].copy_from_slice(&bytes);
            effect.changed.push(changed);
        }
    }
    Ok(effect)
}

fn out_of_range(table: &Table, axis: &'static str, index: usize, len: usize) -> PatchError {
    PatchError::OutOfRange {
        table: table.id.clone(),
        axis,
        index,
        len,
    }
}

fn choice_list(choices: &[(String, Vec<u8>)]) -> String {
    choices
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Mean of the cell and its existing neighbours in the 3×3 block.
fn smooth_at(data: &TableData, r: usize, c: usize) -> f64 {
    let (mut sum, mut n) = (0.0, 0u32);
    for rr in r.saturating_sub(1)..=(r + 1).min(data.rows - 1) {
        for cc in c.saturating_sub(1)..=(c + 1).min(data.cols - 1) {
            sum += data.value(rr, cc);
            n += 1;
        }
    }
    sum / f64::from(n)
}

fn value_span(data: &TableData) -> (f64, f64) {
    data.cells
        .iter()
        .filter_map(|c| match c {
            Cell::Num(v) if v.is_finite() => Some(*v),
            _ => None,
        })
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::read_table;
    use crate::decode_tests::{XML, definition, rom, table};

    fn run(name: &str, op: Op, target: Target) -> (Result<PatchEffect, PatchError>, Vec<u8>) {
        run_with(XML, name, op, target, false)
    }

    fn run_with(
        xml: &str,
        name: &str,
        op: Op,
        target: Target,
        force: bool,
    ) -> (Result<PatchEffect, PatchError>, Vec<u8>) {
        let d = definition(xml);
        let t = table(&d, name);
        let mut image = rom();
        let data = read_table(t, &image).unwrap();
        (apply(t, &data, &mut image, &op, &target, force), image)
    }

    /// Issue 17 #7: `add 200` on a timing map must not quietly write 127°.
    #[test]
    fn storage_limit_and_scaling_range_need_force() {
        let cell = Target::cell(1, 2);
        let (err, image) = run("RowMajor", Op::Add(200.0), cell.clone());
        let msg = err.unwrap_err().to_string();
        assert!(
            msg.contains("[1,2] wanted 212.5 but int8 stores at most 63.5 there (storage limit)")
                && msg.contains("force: true"),
            "{msg}"
        );
        assert_eq!(image, rom(), "nothing written");
        let (effect, image) = run_with(XML, "RowMajor", Op::Add(200.0), cell, true);
        assert_eq!(effect.unwrap().limited.len(), 1);
        assert_eq!(image[25] as i8, 127);
        // The scaling's own max (here 40°) is a limit too, for changed cells only.
        let ranged = XML.replace(
            r#"format="%.1f" storagetype="int8""#,
            r#"format="%.1f" min="-10" max="40" storagetype="int8""#,
        );
        let (err, image) = run_with(&ranged, "RowMajor", Op::Set(45.0), Target::default(), false);
        let msg = err.unwrap_err().to_string();
        assert!(msg.contains("6 cell(s)"), "{msg}");
        assert!(
            msg.contains("[0,0] 45.0 is outside the scaling `half` range [-10.0, 40.0]"),
            "{msg}"
        );
        assert_eq!(image, rom());
        let (ok, _) = run_with(&ranged, "RowMajor", Op::Set(39.0), Target::default(), false);
        assert_eq!(ok.unwrap().changed.len(), 6);
        let (ok, _) = run_with(&ranged, "RowMajor", Op::Set(45.0), Target::default(), true);
        assert_eq!(ok.unwrap().outside_soft_limits, 6);
    }

    #[test]
    fn smooth_uses_the_original_grid() {
        // RowMajor (int8, x/2): rows [10,10.5,11],[11.5,12,12.5] physical.
        let (effect, image) = run("RowMajor", Op::Smooth, Target::default());
        let effect = effect.unwrap();
        assert_eq!(effect.targeted, 6);
        // Corner (0,0): mean of 10, 10.5, 11.5, 12 = 11 → raw 22.
        assert_eq!(image[20], 22);
        // Centre top (0,1): mean of all six = 11.25 → raw 22.5 → 23 (half away from zero).
        assert_eq!(image[21], 23);
    }

    #[test]
    fn rounding_limiting_and_targets() {
        let (effect, image) = run_with(XML, "RowMajor", Op::Set(100.0), Target::cell(1, 2), true);
        let effect = effect.unwrap();
        assert_eq!(effect.limited.len(), 1);
        assert_eq!(image[25] as i8, 127);
        assert_eq!(effect.limited[0].after, "63.5");
        let (effect, image) = run(
            "RowMajor",
            Op::Add(-0.25),
            Target {
                row: Some(0),
                ..Default::default()
            },
        );
        // 9.75 → raw 19.5 → 20, 10.25 → 20.5 → 21, 10.75 → 21.5 → 22: half a
        // raw step rounds away from zero, back to the stored values.
        assert_eq!(&image[20..23], &[20, 21, 22]);
        let effect = effect.unwrap();
        assert_eq!((effect.targeted, effect.changed.len()), (3, 0));
        let (err, image) = run(
            "RowMajor",
            Op::Set(1.0),
            Target {
                row: Some(2),
                ..Default::default()
            },
        );
        assert!(matches!(
            err,
            Err(PatchError::OutOfRange {
                index: 2,
                len: 2,
                ..
            })
        ));
        assert_eq!(image, rom());
    }

    #[test]
    fn bits_and_switches() {
        let (effect, image) = run(
            "Flags",
            Op::Set(1.0),
            Target {
                row: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(effect.unwrap().changed.len(), 1);
        assert_eq!(image[34], 0b1100_0000);
        let (err, _) = run("Flags", Op::Add(1.0), Target::default());
        assert!(matches!(err, Err(PatchError::Invalid(_))));
        let (effect, image) = run("Switch", Op::Choose("ON".into()), Target::default());
        assert_eq!(effect.unwrap().changed.len(), 1);
        assert_eq!(image[32], 1);
        let (err, _) = run("Switch", Op::Set(1.0), Target::default());
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("choice set to one of: off, on")
        );
    }
}
