//! lookup_table: the value the ECU reads from a table at given axis
//! values. ECU map lookups interpolate linearly between the two breakpoints
//! around the input on each axis (bilinear on a 3D map) and hold the edge
//! value past the first and last breakpoints; the answer shows the cells
//! used and their weights so the figure can be checked by hand.

use crate::decode::TableData;
use crate::definition::{Axis, Table, TableType};
use crate::error::Error;
use crate::scaling::Kind;
use crate::store::Explorer;
use crate::tools::{Config, table_data};
use datalog::column::format_number;
use plugin_kit::{Frontmatter, MarkdownTable};

/// Arguments of lookup_table.
#[derive(Debug, Clone, Default)]
pub struct LookupTable {
    /// ROM path (absolute or workspace-relative).
    pub rom: String,
    /// Exact table name from list_tables.
    pub table: String,
    /// Value on the x_axis: the columns of a 3D table, the only axis of a
    /// 2D one.
    pub x: f64,
    /// Value on the y_axis (rows) of a 3D table.
    pub y: Option<f64>,
}

/// Where one input falls on one axis: up to two breakpoints with weights
/// summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Bracket {
    /// (breakpoint index, weight), lower breakpoint first; one entry when
    /// the axis has a single breakpoint.
    pub points: Vec<(usize, f64)>,
    /// The breakpoint the input was held at, when it lay beyond the axis.
    pub clamped_to: Option<f64>,
}

/// Brackets `v` on an axis of `breakpoints` (any order, finite, distinct):
/// linear between the neighbours around it, held at the outer breakpoint
/// beyond either end.
pub fn bracket(breakpoints: &[f64], v: f64) -> Result<Bracket, String> {
    if breakpoints.is_empty() {
        return Err("the axis has no breakpoints".into());
    }
    if let Some(b) = breakpoints.iter().find(|b| !b.is_finite()) {
        return Err(format!(
            "the axis has a breakpoint that is not a number ({b})"
        ));
    }
    let mut order: Vec<usize> = (0..breakpoints.len()).collect();
    order.sort_by(|&a, &b| breakpoints[a].total_cmp(&breakpoints[b]));
    let sorted: Vec<f64> = order.iter().map(|&i| breakpoints[i]).collect();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "the axis repeats the breakpoint {}, so values between cannot be interpolated",
            w[0]
        ));
    }
    let n = sorted.len();
    if n == 1 {
        return Ok(Bracket {
            points: vec![(order[0], 1.0)],
            clamped_to: (v != sorted[0]).then_some(sorted[0]),
        });
    }
    let (k, t, clamped_to) = if v <= sorted[0] {
        (0, 0.0, (v < sorted[0]).then_some(sorted[0]))
    } else if v >= sorted[n - 1] {
        (n - 2, 1.0, (v > sorted[n - 1]).then_some(sorted[n - 1]))
    } else {
        // The segment [sorted[k], sorted[k+1]) holding v.
        let k = sorted.partition_point(|&b| b <= v) - 1;
        (k, (v - sorted[k]) / (sorted[k + 1] - sorted[k]), None)
    };
    Ok(Bracket {
        points: vec![(order[k], 1.0 - t), (order[k + 1], t)],
        clamped_to,
    })
}

/// The cells one lookup reads: (row, col, weight) each.
pub(crate) type Weights = Vec<(usize, usize, f64)>;

/// (row, col, weight) of every cell the ECU reads for the brackets of x
/// (the columns of a 3D table, the rows of a 2D one) and, on a 3D table,
/// y (its rows): rows then columns ascending, weights summing to 1.
pub(crate) fn cell_weights(x: &Bracket, y: Option<&Bracket>) -> Weights {
    match y {
        Some(y) => y
            .points
            .iter()
            .flat_map(|&(r, wy)| x.points.iter().map(move |&(c, wx)| (r, c, wy * wx)))
            .collect(),
        None => x.points.iter().map(|&(r, w)| (r, 0, w)).collect(),
    }
}

/// The value read from `data` with [`cell_weights`]'s `cells` (cells of
/// weight 0 left out, so a NaN there does not count).
pub(crate) fn interpolate(data: &TableData, cells: &[(usize, usize, f64)]) -> f64 {
    cells
        .iter()
        .filter(|(.., w)| *w != 0.0)
        .map(|&(r, c, w)| w * data.value(r, c))
        .sum()
}

/// Up to four decimals, no trailing zeros: weights and interpolated values.
pub(crate) fn num(v: f64) -> String {
    let s = format_number(v, 4);
    if s.contains('.') {
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.into() }
    } else {
        s
    }
}

/// The physical breakpoints of a table axis, or why it cannot be
/// interpolated on.
pub(crate) fn axis_values<'a>(
    axis: &Axis,
    data: Option<&'a crate::decode::AxisData>,
) -> Result<&'a [f64], Error> {
    data.and_then(|d| d.values.as_deref()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "axis `{}` has text labels ({}), not values, so nothing lies between them; read_table shows its cells",
            axis.label(),
            data.map(|d| d.labels.join(", ")).unwrap_or_default()
        ))
    })
}

/// lookup_table: the interpolated value at (x, y), the cells it comes from
/// with their weights, and whether an input was held at an axis end.
pub fn lookup_table(ex: &mut Explorer, cfg: &Config, args: &LookupTable) -> Result<String, Error> {
    let (_, t, data) = table_data(ex, cfg, &args.rom, &args.table)?;
    lookup_in(&t, &data, args.x, args.y)
}

/// [`lookup_table`] on a decoded table.
pub fn lookup_in(t: &Table, data: &TableData, x: f64, y: Option<f64>) -> Result<String, Error> {
    for (name, v) in [("x", Some(x)), ("y", y)] {
        if let Some(v) = v.filter(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "`{name}` must be a finite number, got {v}"
            )));
        }
    }
    if !matches!(t.scaling.kind, Kind::Numeric { .. }) {
        return Err(Error::InvalidArgument(format!(
            "`{}` holds switches or bits, not numbers, so there is nothing to interpolate; read_table shows its cells",
            t.id
        )));
    }
    let missing = |which: &str| {
        Error::InvalidArgument(format!(
            "`{}` has no {which} axis in its definition, so there is no value to look up by",
            t.id
        ))
    };
    // (axis, its data, the argument's name, the input): columns first.
    let axes: Vec<(&Axis, Option<&crate::decode::AxisData>, &str, f64)> = match t.table_type {
        TableType::Grid => {
            let Some(y) = y else {
                return Err(Error::InvalidArgument(format!(
                    "`{}` is a 3D table: give x (x_axis {}) and y (y_axis {})",
                    t.id,
                    t.col_axis.as_ref().map(Axis::label).unwrap_or_default(),
                    t.row_axis.as_ref().map(Axis::label).unwrap_or_default()
                )));
            };
            vec![
                (
                    t.col_axis.as_ref().ok_or_else(|| missing("X"))?,
                    data.col_axis.as_ref(),
                    "x",
                    x,
                ),
                (
                    t.row_axis.as_ref().ok_or_else(|| missing("Y"))?,
                    data.row_axis.as_ref(),
                    "y",
                    y,
                ),
            ]
        }
        TableType::OneAxis => {
            let axis = t.row_axis.as_ref().ok_or_else(|| missing("X"))?;
            if y.is_some() {
                return Err(Error::InvalidArgument(format!(
                    "`{}` has one axis (x_axis {}); give x only",
                    t.id,
                    axis.label()
                )));
            }
            vec![(axis, data.row_axis.as_ref(), "x", x)]
        }
        TableType::Scalar => {
            return Err(Error::InvalidArgument(format!(
                "`{}` is a single value with no axis; read_table shows it",
                t.id
            )));
        }
    };
    let mut brackets = Vec::with_capacity(2);
    let mut clamped = Vec::new();
    for (axis, axis_data, arg, v) in &axes {
        let values = axis_values(axis, *axis_data)?;
        let b = bracket(values, *v)
            .map_err(|e| Error::InvalidArgument(format!("axis `{}`: {e}", axis.label())))?;
        if let Some(edge) = b.clamped_to {
            clamped.push(format!(
                "{arg} {} is {} the {} breakpoint of {}, held at {} (the ECU does not extrapolate)",
                num(*v),
                if *v < edge { "below" } else { "above" },
                if *v < edge { "first" } else { "last" },
                axis.label(),
                num(edge)
            ));
        }
        brackets.push(b);
    }
    let cells = cell_weights(&brackets[0], brackets.get(1));
    let value = interpolate(data, &cells);
    if !value.is_finite() {
        return Err(Error::InvalidArgument(format!(
            "a cell used for the lookup of `{}` is not a number; read_table shows its cells",
            t.id
        )));
    }

    let label = |i: usize| axes[i].0.label();
    let mut fm = Frontmatter::new()
        .text("table", &t.id)
        .opt_text("unit", t.unit())
        .text("x_axis", label(0))
        .raw("x", num(x));
    if let Some(y) = y {
        fm = fm.text("y_axis", label(1)).raw("y", num(y));
    }
    fm = fm.raw("value", num(value)).text(
        "interpolation",
        match t.table_type {
            TableType::Grid => {
                "bilinear between the 4 cells around (x, y), as the ECU reads the map; the weights sum to 1"
            }
            _ => "linear between the 2 breakpoints around x, as the ECU reads the table; the weights sum to 1",
        },
    );
    if !clamped.is_empty() {
        fm = fm.list("clamped", &clamped);
    }
    let value_header = match t.unit() {
        Some(u) if !u.is_empty() => format!("Value ({u})"),
        _ => "Value".to_string(),
    };
    let row_labels = data.row_axis.as_ref();
    let mut header = vec!["Row".to_string()];
    if t.table_type == TableType::Grid {
        header.extend(["Col".to_string(), label(1), label(0)]);
    } else {
        header.push(label(0));
    }
    header.extend([value_header, "Weight".to_string()]);
    let mut md = MarkdownTable::new(header);
    for &(r, c, w) in &cells {
        let mut row = vec![r.to_string()];
        let rl = row_labels.map_or(String::new(), |a| a.labels[r].clone());
        if t.table_type == TableType::Grid {
            let cl = data
                .col_axis
                .as_ref()
                .map_or(String::new(), |a| a.labels[c].clone());
            row.extend([c.to_string(), rl, cl]);
        } else {
            row.push(rl);
        }
        row.extend([data.display(r, c), num(w)]);
        md.row(row);
    }
    Ok(fm.with_body(&md.render()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_interpolate_between_and_hold_at_the_ends() {
        let rpm = [2000.0, 2500.0, 3000.0, 4000.0];
        // Between: 2750 is half way from 2500 to 3000.
        let b = bracket(&rpm, 2750.0).unwrap();
        assert_eq!(b.points, [(1, 0.5), (2, 0.5)]);
        assert_eq!(b.clamped_to, None);
        // A quarter of the way from 3000 to 4000.
        assert_eq!(
            bracket(&rpm, 3250.0).unwrap().points,
            [(2, 0.75), (3, 0.25)]
        );
        // On a breakpoint: all of it, not clamped.
        let b = bracket(&rpm, 2500.0).unwrap();
        assert_eq!(b.points, [(1, 1.0), (2, 0.0)]);
        let b = bracket(&rpm, 4000.0).unwrap();
        assert_eq!((b.points, b.clamped_to), (vec![(2, 0.0), (3, 1.0)], None));
        // Beyond either end: held at the edge, and said so.
        let b = bracket(&rpm, 9000.0).unwrap();
        assert_eq!(
            (b.points, b.clamped_to),
            (vec![(2, 0.0), (3, 1.0)], Some(4000.0))
        );
        let b = bracket(&rpm, -5.0).unwrap();
        assert_eq!(
            (b.points, b.clamped_to),
            (vec![(0, 1.0), (1, 0.0)], Some(2000.0))
        );
        // A descending axis brackets by value, reporting stored indices.
        let b = bracket(&[40.0, 20.0, 0.0], 30.0).unwrap();
        assert_eq!(b.points, [(1, 0.5), (0, 0.5)]);
        // One breakpoint takes all; repeats and NaN are refused.
        assert_eq!(bracket(&[7.0], 3.0).unwrap().clamped_to, Some(7.0));
        assert!(bracket(&[1.0, 1.0], 1.0).unwrap_err().contains("repeats"));
        assert!(bracket(&[1.0, f64::NAN], 1.0).is_err());
        assert!(bracket(&[], 1.0).is_err());
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(13.125), "13.125");
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(2.0 / 3.0), "0.6667");
        assert_eq!(num(-0.00001), "0");
    }
}
