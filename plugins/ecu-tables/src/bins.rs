//! Axis bins: how a table axis splits values into cells, and which rows
//! or columns a range of values meets. Shared by overlay_log (placing log
//! samples) and read_table/patch_table (`rows_where`, `cols_where`), so a
//! range picks the same cells in every tool.

use crate::definition::Axis;
use crate::error::Error;
use datalog::column::format_number;

/// How one axis splits values into cells.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisBins {
    /// Breakpoint indices in ascending order of value.
    order: Vec<usize>,
    /// Edges between neighbours (ascending), one fewer than breakpoints.
    mids: Vec<f64>,
    /// Lowest value inside the outer cell (inclusive).
    pub(crate) lo: f64,
    /// Value past the top outer cell (exclusive).
    pub(crate) hi: f64,
}

impl AxisBins {
    /// Cells centred on `breakpoints` (any order, distinct, finite). A
    /// single breakpoint takes every sample (there is no step to halve).
    pub fn new(breakpoints: &[f64]) -> Result<AxisBins, String> {
        if breakpoints.is_empty() {
            return Err("the axis has no breakpoints".into());
        }
        if let Some(v) = breakpoints.iter().find(|v| !v.is_finite()) {
            return Err(format!(
                "the axis has a breakpoint that is not a number ({v})"
            ));
        }
        let mut order: Vec<usize> = (0..breakpoints.len()).collect();
        order.sort_by(|&a, &b| breakpoints[a].total_cmp(&breakpoints[b]));
        let sorted: Vec<f64> = order.iter().map(|&i| breakpoints[i]).collect();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "the axis repeats the breakpoint {}, so its cells are not defined",
                w[0]
            ));
        }
        let mids: Vec<f64> = sorted
            .windows(2)
            .map(|w| w[0] + (w[1] - w[0]) / 2.0)
            .collect();
        let (lo, hi) = match sorted.len() {
            1 => (f64::NEG_INFINITY, f64::INFINITY),
            n => (
                sorted[0] - (sorted[1] - sorted[0]) / 2.0,
                sorted[n - 1] + (sorted[n - 1] - sorted[n - 2]) / 2.0,
            ),
        };
        Ok(AxisBins {
            order,
            mids,
            lo,
            hi,
        })
    }

    /// The breakpoint indices whose cells meet the values `a..=b`
    /// (ascending by index): a cell spans its lower edge up to, not
    /// including, its upper one.
    pub fn meeting(&self, a: f64, b: f64) -> Vec<usize> {
        let n = self.order.len();
        let edge = |k: usize| match k {
            0 => self.lo,
            k if k == n => self.hi,
            k => self.mids[k - 1],
        };
        let mut out: Vec<usize> = (0..n)
            .filter(|&k| edge(k) <= b && edge(k + 1) > a)
            .map(|k| self.order[k])
            .collect();
        out.sort_unstable();
        out
    }

    /// The breakpoint index of the lowest (`side` 0) or highest (1) cell.
    pub fn edge(&self, side: usize) -> usize {
        if side == 0 {
            self.order[0]
        } else {
            self.order[self.order.len() - 1]
        }
    }

    /// The breakpoint index whose cell holds `v`; none outside the outer
    /// cells (and for NaN).
    pub fn cell(&self, v: f64) -> Option<usize> {
        if !(v >= self.lo && v < self.hi) {
            return None;
        }
        // Edges belong to the cell above them.
        let k = self.mids.partition_point(|&m| m <= v);
        Some(self.order[k])
    }
}

/// Parses an axis-value range: `A..B`, `A..`, `..B` (inclusive) or one
/// value `A`.
pub fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let num = |s: &str, open: f64| -> Result<f64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(open);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("`{}` is not a number", plugin_kit::text::clip(s))),
        }
    };
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => {
            if a.trim().is_empty() && b.trim().is_empty() {
                return Err(
                    "give at least one end, e.g. '3000..4500', '3000..' or '..4500'".into(),
                );
            }
            (num(a, f64::NEG_INFINITY)?, num(b, f64::INFINITY)?)
        }
        None if text.trim().is_empty() => {
            return Err("give a value or a range, e.g. '3000..4500'".into());
        }
        None => {
            let v = num(text, 0.0)?;
            (v, v)
        }
    };
    if a > b {
        return Err(format!(
            "the range starts above its end ({a} > {b}); write the lower value first"
        ));
    }
    Ok((a, b))
}

/// The first index and count of the contiguous rows (or columns) of `axis`
/// whose cells meet the range `text`, for read_table's `rows_where` and
/// `cols_where` (`arg`).
pub fn axis_window(
    axis: &Axis,
    data: Option<&crate::decode::AxisData>,
    text: &str,
    arg: &str,
) -> Result<(usize, usize), Error> {
    let bad = |e: String| {
        Error::InvalidArgument(format!("{arg} `{}`: {e}", plugin_kit::text::clip(text)))
    };
    let (a, b) = parse_range(text).map_err(bad)?;
    // read_table's and patch_table's own words: overlay_log's message
    // (samples cannot be placed) is about another tool.
    let Some(values) = data.and_then(|d| d.values.clone()) else {
        return Err(bad(format!(
            "axis `{}` has labels, not values ({}): use row/col indices from read_table",
            axis.label(),
            data.map(|d| d.labels.join(", ")).unwrap_or_default()
        )));
    };
    // Out of order, the rows meeting a range need not be neighbours, and a
    // block from the first to the last of them would take rows between
    // that do not meet it (patch_table would write them).
    let ascending = values.windows(2).all(|w| w[0] < w[1]);
    let descending = values.windows(2).all(|w| w[0] > w[1]);
    if !ascending && !descending {
        let what = if arg == "rows_where" {
            "rows"
        } else {
            "columns"
        };
        return Err(bad(format!(
            "axis `{}` is not in order (breakpoints {}), so a range of values does not pick a \
             block of {what}: use row/col indices from read_table",
            axis.label(),
            data.map(|d| d.labels.join(", ")).unwrap_or_default()
        )));
    }
    let bins = AxisBins::new(&values).map_err(bad)?;
    let hit = bins.meeting(a, b);
    match (hit.first(), hit.last()) {
        (Some(&first), Some(&last)) => Ok((first, last - first + 1)),
        _ => Err(Error::InvalidArgument(format!(
            "{arg} `{}` meets no cell of axis `{}`: its cells cover {}..{} (breakpoints {})",
            plugin_kit::text::clip(text),
            axis.label(),
            short(bins.lo),
            short(bins.hi),
            data.map(|d| d.labels.join(", ")).unwrap_or_default()
        ))),
    }
}

/// A number with at most three decimals and no trailing zeros.
pub(crate) fn short(v: f64) -> String {
    let s = format_number(v, 3);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
