//! propose_patch: a patch from a log, shown as a diff and never written.
//! The cells are those overlay_log finds for a filter (same reader, same
//! cell convention: the code is overlay's); the new values come from
//! patch_table's own arithmetic run on a copy of the image, so the diff is
//! exactly what patch_table would write, rounding included. The answer
//! ends with the patch_table arguments that apply it, so the write goes
//! through patch_table's confirmation and safety checks.

use crate::error::Error;
use crate::overlay::{OverlayLog, overlay};
use crate::patch::{self, ChangedCell, PatchError, Target};
use crate::store::Explorer;
use crate::tools::{Config, OpKind, PatchTable, build_op, find_table, open, require_inside};
use datalog::logs::Cache;
use plugin_kit::MarkdownTable;
use std::path::Path;

/// Cells one proposal may change: its patch_table arguments list them all.
pub const MAX_PROPOSED: usize = 500;
/// Diff rows shown; the patch_table arguments still list every cell.
pub const MAX_DIFF_ROWS: usize = 100;

/// Arguments of propose_patch.
#[derive(Debug, Clone)]
pub struct ProposePatch {
    /// ROM path (absolute or workspace-relative), as patch_table takes it.
    pub rom: String,
    /// Exact table name from list_tables.
    pub table: String,
    /// Log file name from list_logs; none for every log.
    pub file: Option<String>,
    /// filtrex expression selecting the samples whose cells change, e.g.
    /// `Knock > 0`.
    pub filter: String,
    /// The change: set, add, multiply, clamp or smooth, as patch_table.
    pub op: OpKind,
    /// Operand for set, add and multiply (physical units).
    pub value: Option<f64>,
    /// Lower bound for clamp.
    pub min: Option<f64>,
    /// Upper bound for clamp.
    pub max: Option<f64>,
    /// Cells need at least this many selected samples (default 1).
    pub min_samples: Option<u32>,
    /// Log channel for the x_axis when not matched by name.
    pub x_channel: Option<String>,
    /// Log channel for the y_axis when not matched by name.
    pub y_channel: Option<String>,
    /// Samples beyond the axes count in the outer cells (overlay_log's
    /// `clamp_to_edges`).
    pub clamp_to_edges: bool,
    /// Which cells each selected sample puts in the proposal.
    pub cells: CellChoice,
}

/// Which cells a sample puts in a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CellChoice {
    /// The cell it falls in (overlay_log's): the ECU, interpolating, sees
    /// only part of the change between breakpoints.
    #[default]
    Nearest,
    /// Every cell the ECU reads at it (nonzero interpolation weight).
    Bracketing,
}

/// The cells the ECU reads at each of `points` with their weights
/// (lookup_table's interpolation), for a 2D table (x only) or a 3D one.
fn sample_cells(
    table: &crate::definition::Table,
    data: &crate::decode::TableData,
    points: &[[f64; 2]],
) -> Result<Vec<crate::lookup::Weights>, Error> {
    use crate::definition::TableType;
    use crate::lookup::{axis_values, bracket, cell_weights};
    let axis = |rows: bool| {
        let (a, d) = if rows {
            (&table.row_axis, &data.row_axis)
        } else {
            (&table.col_axis, &data.col_axis)
        };
        let a = a
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument(format!("`{}` has an axis missing", table.id)))?;
        let values = axis_values(a, d.as_ref())?;
        Ok::<_, Error>((a.label(), values))
    };
    let grid = table.table_type == TableType::Grid;
    // x: the columns of a 3D table, the rows of a 2D one.
    let (xl, xs) = axis(!grid)?;
    let y = if grid { Some(axis(true)?) } else { None };
    let on = |label: &str, e: String| Error::InvalidArgument(format!("axis `{label}`: {e}"));
    points
        .iter()
        .map(|p| {
            let bx = bracket(xs, p[0]).map_err(|e| on(&xl, e))?;
            let by = match &y {
                Some((yl, ys)) => Some(bracket(ys, p[1]).map_err(|e| on(yl, e))?),
                None => None,
            };
            Ok(cell_weights(&bx, by.as_ref())
                .into_iter()
                .filter(|c| c.2 != 0.0)
                .collect())
        })
        .collect()
}

/// The patch_table arguments (one JSON object) applying `args`'s op to
/// `cells` of `table`; the ROM as [`crate::tools::rom_echo`] names it, so
/// the call still works and a padded path does not come back whole.
fn patch_arguments(args: &ProposePatch, table: &str, cells: &[(usize, usize)]) -> String {
    let mut out = format!(
        "{{\"rom\": {}, \"table\": {}, \"op\": \"{}\"",
        plugin_kit::yaml::double_quoted(&crate::tools::rom_echo(&args.rom)),
        plugin_kit::yaml::double_quoted(table),
        args.op.name()
    );
    // Finite by build_op, so Rust's shortest round-trip form is valid JSON.
    for (key, v) in [("value", args.value), ("min", args.min), ("max", args.max)] {
        if let Some(v) = v {
            out.push_str(&format!(", \"{key}\": {v}"));
        }
    }
    let list: Vec<String> = cells.iter().map(|(r, c)| format!("[{r},{c}]")).collect();
    out.push_str(&format!(", \"cells\": [{}]}}", list.join(",")));
    out
}

/// propose_patch: the cells the filtered samples fall in, the change the
/// op makes to each (old → new, physical units), and the patch_table call
/// that writes it. Nothing is written.
pub fn propose_patch(
    ex: &mut Explorer,
    cfg: &Config,
    logs_dir: &Path,
    cache: &mut Cache,
    args: &ProposePatch,
    progress: &mut dyn FnMut(u64, u64, &str) -> bool,
) -> Result<String, Error> {
    if args.filter.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "`filter` is empty: give the samples whose cells should change, e.g. 'Knock > 0'"
                .into(),
        ));
    }
    let min_samples = args.min_samples.unwrap_or(1);
    if min_samples == 0 {
        return Err(Error::InvalidArgument(
            "min_samples must be at least 1 (a cell needs a sample to be proposed)".into(),
        ));
    }
    // The operands are checked as patch_table checks them, before any log
    // is read.
    let template = PatchTable {
        rom: args.rom.clone(),
        table: args.table.clone(),
        op: args.op,
        value: args.value,
        min: args.min,
        max: args.max,
        row: None,
        col: None,
        choice: None,
        force: false,
        rows_where: None,
        cols_where: None,
        cells: None,
    };
    let op = build_op(&template)?;

    let overlay_args = OverlayLog {
        rom: args.rom.clone(),
        table: args.table.clone(),
        file: args.file.clone(),
        filter: Some(args.filter.clone()),
        x_channel: args.x_channel.clone(),
        y_channel: args.y_channel.clone(),
        clamp_to_edges: args.clamp_to_edges,
        keep_points: true,
        ..Default::default()
    };
    let o = overlay(ex, cfg, logs_dir, cache, &overlay_args, progress)?;
    let cols = o.data.cols;
    // Per kept sample, the cells the ECU reads there and their weights.
    let reads = sample_cells(&o.table, &o.data, &o.points)?;
    let counts: Vec<usize> = match args.cells {
        CellChoice::Nearest => o.counts.clone(),
        CellChoice::Bracketing => {
            if o.points_over > 0 {
                return Err(Error::InvalidArgument(format!(
                    "the filter selects more than {} samples in cells of `{}`; cells: bracketing \
                     places each of them: narrow the filter, or use cells: nearest",
                    crate::overlay::MAX_POINTS,
                    o.table.id
                )));
            }
            let mut n = vec![0usize; o.counts.len()];
            for cells in &reads {
                for &(r, c, _) in cells {
                    n[r * cols + c] += 1;
                }
            }
            n
        }
    };
    let hit: Vec<(usize, usize)> = (0..counts.len())
        .filter(|&i| counts[i] >= min_samples as usize)
        .map(|i| (i / cols, i % cols))
        .collect();
    let fewer = counts
        .iter()
        .filter(|&&n| n > 0 && n < min_samples as usize)
        .count();
    if hit.len() > MAX_PROPOSED {
        return Err(Error::InvalidArgument(format!(
            "the filter selects samples in {} cells of `{}`, over the {MAX_PROPOSED} one proposal \
             takes: narrow the filter or raise min_samples (or patch ranges with patch_table's \
             rows_where/cols_where)",
            hit.len(),
            o.table.id
        )));
    }

    let mut fm = o.header(&overlay_args);
    let outside = o.outside_samples();
    if outside > 0 {
        fm = fm.text(
            "outside_note",
            format!(
                "{outside} selected sample(s) lie beyond the table's outer cells and are left out; \
                 the ECU reads them at the outer cells: pass clamp_to_edges: true to include them"
            ),
        );
    }
    fm = fm
        .text(
            "cells_from",
            match args.cells {
                CellChoice::Nearest => "nearest (the cell each sample falls in)",
                CellChoice::Bracketing => {
                    "bracketing (every cell the ECU interpolates from at each sample)"
                }
            },
        )
        .text("operation", op.describe())
        .raw("min_samples", min_samples)
        .raw("cells_proposed", hit.len());
    if fewer > 0 {
        fm = fm.text(
            "cells_below_min_samples",
            format!("{fewer} (left alone, fewer than {min_samples} selected samples)"),
        );
    }
    if hit.is_empty() {
        fm = fm.text("written", "nothing (a proposal)");
        return Ok(fm.with_body(&format!(
            "No cell of `{}` has {min_samples} or more samples matching `{}`: nothing to propose. \
             overlay_log shows where the samples fall.\n",
            o.table.id,
            plugin_kit::text::clip(args.filter.trim())
        )));
    }

    // The new values, by patch_table's own code on a copy of the image
    // (read the same way patch_table reads it).
    let opened = open(ex, cfg, &args.rom)?;
    let def = opened.require_definition()?;
    let table = find_table(&def, &o.table.id)?.clone();
    require_inside(&table, &opened)?;
    let data = crate::decode::read_table(&table, &opened.bytes)?;
    let target = Target {
        cells: Some(hit.clone()),
        ..Default::default()
    };
    let mut scratch = opened.bytes.as_ref().clone();
    let mut refused = None;
    let effect = match patch::apply(&table, &data, &mut scratch, &op, &target, false) {
        Ok(e) => e,
        Err(PatchError::Unsafe {
            count, cells, more, ..
        }) => {
            refused = Some(format!(
                "patch_table refuses {count} of these cells as they stand ({cells}{more}); check \
                 the values before passing force: true"
            ));
            scratch = opened.bytes.as_ref().clone();
            patch::apply(&table, &data, &mut scratch, &op, &target, true)?
        }
        Err(e) => return Err(e.into()),
    };
    // What the ECU would read at the selected samples after the patch,
    // less what it reads now: between breakpoints only part of a cell's
    // change reaches a sample.
    let after = crate::decode::read_table(&table, &scratch)?;
    let mut diffs = reads.iter().map(|cells| {
        crate::lookup::interpolate(&after, cells) - crate::lookup::interpolate(&data, cells)
    });
    let effective = diffs.next().map(|first| {
        let (mut lo, mut hi, mut sum, mut n) = (first, first, first, 1usize);
        for d in diffs {
            (lo, hi, sum, n) = (lo.min(d), hi.max(d), sum + d, n + 1);
        }
        (lo, hi, sum / n as f64, n)
    });
    // Cells read at those samples that the proposal leaves alone.
    let mut unread: Vec<(usize, usize)> = reads
        .iter()
        .flatten()
        .map(|&(r, c, _)| (r, c))
        .filter(|rc| hit.binary_search(rc).is_err())
        .collect();
    unread.sort_unstable();
    unread.dedup();
    let changed = |r: usize, c: usize| -> Option<&ChangedCell> {
        effect.changed.iter().find(|x| (x.row, x.col) == (r, c))
    };
    fm = fm
        .raw("cells_changing", effect.changed.len())
        .text(
            "written",
            "nothing (a proposal); apply it with patch_table and the arguments below, the user confirms it there",
        );
    if let Some((lo, hi, mean, n)) = effective
        && lo.is_finite()
        && hi.is_finite()
    {
        let num = crate::lookup::num;
        let over = if o.points_over > 0 {
            format!("the first {n} of {} selected sample(s)", n + o.points_over)
        } else {
            format!("the {n} selected sample(s)")
        };
        fm = fm.text(
            "effective_change",
            format!(
                "min {}, max {}, mean {} at {over} in cells: the change the ECU reads there, \
                 interpolating between cells as lookup_table does",
                num(lo),
                num(hi),
                num(mean)
            ),
        );
        if args.cells == CellChoice::Nearest && !unread.is_empty() {
            fm = fm.text(
                "effective_note",
                format!(
                    "the ECU also reads {} cell(s) at these samples that this proposal leaves \
                     alone; cells: bracketing includes them",
                    unread.len()
                ),
            );
        }
    }
    if let Some(w) = &refused {
        fm = fm.text("warning", w);
    }
    if !effect.limited.is_empty() {
        fm = fm.text(
            "warning",
            format!(
                "{} cell(s) would be limited to the {} storage range",
                effect.limited.len(),
                table.scaling.storage.name()
            ),
        );
    }

    let row_labels = o.data.row_axis.as_ref().map(|a| &a.labels);
    let col_labels = o.data.col_axis.as_ref().map(|a| &a.labels);
    let grid = table.table_type == crate::definition::TableType::Grid;
    let axis = |rows: bool| {
        let a = if rows {
            &table.row_axis
        } else {
            &table.col_axis
        };
        a.as_ref().map_or(String::new(), |a| a.label())
    };
    let mut header = vec!["Row".to_string()];
    if grid {
        header.extend(["Col".to_string(), axis(true), axis(false)]);
    } else {
        header.push(axis(true));
    }
    let unit = table.unit().filter(|u| !u.is_empty());
    header.extend([
        "Samples".to_string(),
        unit.map_or("Old".into(), |u| format!("Old ({u})")),
        "New".to_string(),
        "Change".to_string(),
    ]);
    let mut md = MarkdownTable::new(header);
    for &(r, c) in hit.iter().take(MAX_DIFF_ROWS) {
        let mut row = vec![r.to_string()];
        let rl = row_labels.map_or(String::new(), |l| l[r].clone());
        if grid {
            row.extend([
                c.to_string(),
                rl,
                col_labels.map_or(String::new(), |l| l[c].clone()),
            ]);
        } else {
            row.push(rl);
        }
        let old = data.display(r, c);
        let (new, change) = match changed(r, c) {
            Some(x) => {
                let after = table.scaling.to_physical(x.raw_after);
                (
                    x.after.clone(),
                    table.scaling.display(after - data.value(r, c)),
                )
            }
            None => (old.clone(), "unchanged".into()),
        };
        row.extend([counts[r * cols + c].to_string(), old, new, change]);
        md.row(row);
    }
    let mut body = String::from("## Proposed change (not written)\n\n");
    body.push_str(&md.render());
    if hit.len() > MAX_DIFF_ROWS {
        body.push_str(&format!(
            "\n{} more cells not shown; the arguments below list them all.\n",
            hit.len() - MAX_DIFF_ROWS
        ));
    }
    body.push_str(&format!(
        "\n## Apply with patch_table\n\n```json\n{}\n```\n",
        patch_arguments(args, &table.id, &hit)
    ));
    Ok(fm.with_body(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of frontmatter key `key` in `doc`, unquoted.
    fn val<'a>(doc: &'a str, key: &str) -> &'a str {
        doc.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key}: {doc}"))
            .trim_matches('"')
    }

    /// On Ignition Timing Base Map (RPM rows …3500, 4000…; Load columns
    /// 20..200 by 20), a knock sample at 3750 rpm, 90 % falls in the cell
    /// 4000/100 (row 7, column 4) but the ECU reads a quarter of each of
    /// rows 6-7 × columns 3-4 there: pulling that one cell by 1° lowers what
    /// it reads by only 0.25°, and `bracketing` takes all four cells, so
    /// the whole degree reaches the sample. A knock at 9000 rpm lies past
    /// the last cell (7500) and is left out, and the answer says how to
    /// include it.
    #[test]
    fn the_proposal_says_what_the_ecu_reads_between_breakpoints() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/ecu");
        let logs = std::env::temp_dir().join(format!(
            "ecu-propose-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(
            logs.join("knock.csv"),
            "Time,RPM,Load,Knock\n0.0,3750,90,1\n0.1,9000,100,2\n0.2,3000,60,0\n",
        )
        .unwrap();
        let cfg = Config::with_definitions(root.join("definitions"));
        let args = ProposePatch {
            rom: root.join("BT000001.bin").to_string_lossy().into(),
            table: "Ignition Timing Base Map".into(),
            file: Some("knock.csv".into()),
            filter: "Knock > 0".into(),
            op: OpKind::Add,
            value: Some(-1.0),
            min: None,
            max: None,
            min_samples: None,
            x_channel: None,
            y_channel: None,
            clamp_to_edges: false,
            cells: CellChoice::Nearest,
        };
        let run = |args: &ProposePatch| {
            propose_patch(
                &mut crate::testing::explorer(),
                &cfg,
                &logs,
                &mut Cache::default(),
                args,
                &mut |_, _, _| true,
            )
            .unwrap()
        };
        let near = run(&args);
        assert_eq!(val(&near, "cells_proposed"), "1", "{near}");
        assert!(near.contains("\"cells\": [[7,4]]"), "{near}");
        assert!(
            val(&near, "effective_change").starts_with(
                "min -0.25, max -0.25, mean -0.25 at the 1 selected sample(s) in cells"
            ),
            "{near}"
        );
        assert!(
            val(&near, "effective_note").starts_with("the ECU also reads 3 cell(s)"),
            "{near}"
        );
        assert!(
            val(&near, "outside_note").starts_with("1 selected sample(s) lie beyond")
                && near.contains("pass clamp_to_edges: true"),
            "{near}"
        );
        let all = run(&ProposePatch {
            cells: CellChoice::Bracketing,
            ..args.clone()
        });
        assert_eq!(val(&all, "cells_proposed"), "4", "{all}");
        assert!(
            all.contains("\"cells\": [[6,3],[6,4],[7,3],[7,4]]"),
            "{all}"
        );
        assert!(
            val(&all, "effective_change").starts_with("min -1, max -1, mean -1 at the 1"),
            "{all}"
        );
        assert!(!all.contains("effective_note"), "{all}");
        // Held at the edges, the 9000 rpm knock counts: no outside note.
        let held = run(&ProposePatch {
            clamp_to_edges: true,
            ..args
        });
        assert_eq!(val(&held, "cells_proposed"), "2", "{held}");
        assert!(!held.contains("outside_note"), "{held}");
        let _ = std::fs::remove_dir_all(&logs);
    }

    #[test]
    fn patch_arguments_are_json_patch_table_takes() {
        let args = ProposePatch {
            rom: "roms/my \"car\".bin".into(),
            table: "Timing".into(),
            file: None,
            filter: "Knock > 0".into(),
            op: OpKind::Add,
            value: Some(-1.0),
            min: None,
            max: None,
            min_samples: None,
            x_channel: None,
            y_channel: None,
            clamp_to_edges: false,
            cells: CellChoice::Nearest,
        };
        let json = patch_arguments(&args, "Ignition Timing Base Map", &[(7, 4), (8, 4)]);
        assert_eq!(
            json,
            r#"{"rom": "roms/my \"car\".bin", "table": "Ignition Timing Base Map", "op": "add", "value": -1, "cells": [[7,4],[8,4]]}"#
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["cells"][1][0], 8);
        let clamp = ProposePatch {
            op: OpKind::Clamp,
            value: None,
            min: Some(0.5),
            max: Some(12.25),
            ..args
        };
        let v: serde_json::Value =
            serde_json::from_str(&patch_arguments(&clamp, "T\n1", &[(0, 0)])).unwrap();
        assert_eq!(
            (v["min"].as_f64(), v["max"].as_f64()),
            (Some(0.5), Some(12.25))
        );
        assert_eq!(v["table"], "T\n1");
    }
}
