//! overlay_log: a datalog laid over a table of a ROM. Each sample falls in
//! the cell whose breakpoints are nearest to its axis channels' values; per
//! cell the tool counts samples and summarises the channels the user names
//! (mean, min, max, a percentile), in the table's own markdown layout.
//!
//! Logs are read with the shared `datalog` crate, the same reader and
//! filter language log-query uses, so a filter that works in query_logs
//! selects the same samples here.

use crate::bins::{AxisBins, short};
use crate::decode::TableData;
use crate::definition::{Axis, Table, TableType};
use crate::error::Error;
use crate::store::Explorer;
use crate::tools::{Config, Window, render_layout, table_data};
use datalog::column::{Column, format_number};
use datalog::filter::{self, Filter};
use datalog::logs::{Cache, Listing, READ_BUDGET};
use datalog::reader::{Log, Need};
use datalog::{ToolError, error as log_error};
use plugin_kit::Frontmatter;
use std::path::Path;

/// Channels summarised per cell at most: each adds up to four grids.
pub const MAX_CHANNELS: usize = 3;
/// Cells rendered at most over all grids, so the answer stays readable.
pub const MAX_CELLS: usize = 6000;
/// Logs listed by name in the answer; the rest are counted.
const MAX_LISTED_LOGS: usize = 20;
/// The percentile when none is asked for.
pub const DEFAULT_PERCENTILE: f64 = 90.0;

/// What the answer's frontmatter says about the cells, word for word.
pub const CELLS_NOTE: &str = "each cell is centred on its breakpoint, its edges midway between \
     neighbouring breakpoints; a sample exactly on an edge counts in the cell of the higher \
     breakpoint; the outer cells reach half a step beyond the first and last breakpoints, and \
     samples further out are counted as outside";

/// A per-cell figure of a named channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Arithmetic mean.
    Mean,
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// The chosen percentile, linear between the closest ranks.
    Percentile,
}

/// Every figure, in the order the grids are shown.
pub const ALL_STATS: [Stat; 4] = [Stat::Mean, Stat::Min, Stat::Max, Stat::Percentile];

/// Arguments of overlay_log.
#[derive(Debug, Clone, Default)]
pub struct OverlayLog {
    /// ROM path (absolute or workspace-relative).
    pub rom: String,
    /// Exact table name from list_tables.
    pub table: String,
    /// Log file name from list_logs; none for every log of the directory.
    pub file: Option<String>,
    /// filtrex expression selecting samples; none for all.
    pub filter: Option<String>,
    /// Channels to summarise per cell (at most [`MAX_CHANNELS`]).
    pub channels: Vec<String>,
    /// Figures per channel; empty for all of [`ALL_STATS`].
    pub stats: Vec<Stat>,
    /// Percentile (0..=100) for [`Stat::Percentile`]; default 90.
    pub percentile: Option<f64>,
    /// Log channel for the X axis (the columns of a 3D table, the only
    /// axis of a 2D one), when it cannot be matched by name.
    pub x_channel: Option<String>,
    /// Log channel for the Y axis (the rows of a 3D table).
    pub y_channel: Option<String>,
    /// Count samples beyond the outer cells in the outer cells (where the
    /// ECU reads them: it holds its inputs at the axis ends) instead of as
    /// outside.
    pub clamp_to_edges: bool,
    /// Keep the axis values of each sample placed in a cell (up to
    /// [`MAX_POINTS`]), for propose_patch to interpolate at them.
    pub keep_points: bool,
}

/// Samples whose axis values one overlay keeps with `keep_points` (16 bytes
/// each); the rest are counted in [`Overlay::points_over`].
pub const MAX_POINTS: usize = 500_000;

/// [`CELLS_NOTE`] with `clamp_to_edges`, word for word.
pub const CELLS_NOTE_CLAMPED: &str = "each cell is centred on its breakpoint, its edges midway \
     between neighbouring breakpoints; a sample exactly on an edge counts in the cell of the \
     higher breakpoint; with clamp_to_edges, samples beyond the first or last breakpoint's cell \
     count in that outer cell, where the ECU reads them (it holds its inputs at the axis ends, as \
     lookup_table shows), and are reported as held_at_edges";

/// Physical breakpoints of a table axis, or why it cannot be overlaid.
fn breakpoints(axis: &Axis, data: Option<&crate::decode::AxisData>) -> Result<Vec<f64>, Error> {
    match data.and_then(|d| d.values.clone()) {
        Some(v) => Ok(v),
        None => Err(Error::InvalidArgument(format!(
            "axis `{}` has text labels ({}), not values, so log samples cannot be placed on it; \
             overlay_log needs tables whose axes are stored breakpoints",
            axis.label(),
            data.map(|d| d.labels.join(", ")).unwrap_or_default()
        ))),
    }
}

/// Lowercase, without a trailing `(unit)`/`[unit]`, `_` as space, single
/// spaces: how channel and axis names are compared.
fn base_name(name: &str) -> String {
    let mut s = name.trim();
    for (open, close) in [('(', ')'), ('[', ']')] {
        if s.ends_with(close)
            && let Some(i) = s.rfind(open)
            && i > 0
        {
            s = s[..i].trim_end();
        }
    }
    let lower = s.to_lowercase().replace('_', " ");
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    // OpenPort-style names end in their unit: `Load_g/rev`, `Boost_psi`.
    if words.len() > 1 && words.last().is_some_and(|w| UNIT_WORDS.contains(w)) {
        words.pop();
    }
    words.join(" ")
}

/// Units loggers append to channel names after an underscore or space.
const UNIT_WORDS: &[&str] = &[
    "%", "g/rev", "g/s", "psi", "kpa", "bar", "deg", "degrees", "ms", "v", "f", "c", "rpm", "mph",
    "km/h", "afr", "lambda",
];

/// The unit a channel's name carries (`Engine Speed (rpm)`), else its
/// units row's text, lowercase.
fn channel_unit(c: &Column) -> Option<String> {
    let n = c.name.trim();
    let from_name = [('(', ')'), ('[', ']')].iter().find_map(|&(o, e)| {
        n.strip_suffix(e)
            .and_then(|s| s.rfind(o).map(|i| s[i + 1..].trim().to_lowercase()))
    });
    from_name
        .or_else(|| (!c.unit.trim().is_empty()).then(|| c.unit.trim().to_lowercase()))
        .filter(|u| !u.is_empty())
}

/// What the common loggers and definitions call the same quantity. An axis
/// name in a group matches a channel named by any other name of it.
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "engine speed",
        &[
            "rpm",
            "engine speed",
            "engine rpm",
            "enginespeed",
            "engine revs",
            "revs",
        ],
    ),
    (
        "engine load",
        &[
            "load",
            "engine load",
            "calculated load",
            "calc load",
            "absolute load",
            "engineload",
            "ecu load",
            "ecuload",
            "load calc",
            "loadcalc",
            "load1b",
        ],
    ),
    (
        "coolant temperature",
        &[
            "coolant temp",
            "coolant temperature",
            "coolanttemp",
            "ect",
            "engine coolant temp",
            "engine coolant temperature",
            "water temp",
        ],
    ),
    (
        "intake air temperature",
        &[
            "iat",
            "intake air temp",
            "intake air temperature",
            "intake temp",
            "air temp",
        ],
    ),
    (
        "throttle",
        &[
            "tps",
            "throttle",
            "throttle position",
            "throttle opening angle",
            "throttle angle",
        ],
    ),
    (
        "manifold pressure",
        &[
            "map",
            "manifold absolute pressure",
            "manifold pressure",
            "boost",
            "manifold relative pressure",
        ],
    ),
    ("gear", &["gear", "current gear", "gear position"]),
    ("vehicle speed", &["speed", "vehicle speed", "vss"]),
    (
        "mass airflow",
        &["maf", "mass airflow", "mass air flow", "airflow"],
    ),
];

/// Axis units that name one quantity on their own.
const TELLING_UNITS: &[(&str, &str)] = &[("rpm", "engine speed"), ("g/rev", "engine load")];

/// The synonym group of an axis (by name, else by unit).
fn group_of(axis: &Axis) -> Option<(&'static str, &'static [&'static str])> {
    let name = base_name(axis.name.as_deref().unwrap_or(""));
    SYNONYMS
        .iter()
        .find(|(_, names)| names.contains(&name.as_str()))
        .or_else(|| {
            let unit = axis.unit()?.trim().to_lowercase();
            let (_, group) = TELLING_UNITS.iter().find(|(u, _)| *u == unit)?;
            SYNONYMS.iter().find(|(g, _)| g == group)
        })
        .copied()
}

/// The log channel chosen for an axis and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    /// Index of the column in the log.
    pub column: usize,
    /// How it was chosen, for the answer.
    pub how: String,
}

/// Channels of a log an agent may name (hidden columns excluded).
fn channel_list(log: &Log) -> String {
    let names: Vec<&str> = log
        .columns
        .iter()
        .filter(|c| !c.hidden)
        .map(|c| c.name.as_str())
        .collect();
    let shown = names.len().min(40);
    let mut s = names[..shown].join(", ");
    if names.len() > shown {
        s.push_str(&format!(" … ({} more)", names.len() - shown));
    }
    s
}

/// Finds the log channel for `axis`: `explicit` when given (exact, then
/// case-insensitive), else by the axis's name, its synonyms, or its unit.
pub fn match_axis(
    log: &Log,
    axis: &Axis,
    explicit: Option<&str>,
    arg: &str,
) -> Result<Matched, String> {
    let cols: Vec<(usize, &Column)> = log
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.hidden)
        .collect();
    if let Some(want) = explicit {
        let found = cols.iter().find(|(_, c)| c.name == want).or_else(|| {
            cols.iter()
                .find(|(_, c)| c.name.eq_ignore_ascii_case(want.trim()))
        });
        return match found {
            Some((i, _)) => Ok(Matched {
                column: *i,
                how: format!("given as {arg}"),
            }),
            None => {
                let names: Vec<&str> = cols.iter().map(|(_, c)| c.name.as_str()).collect();
                let hint = filter::closest(want, &names)
                    .map(|b| format!(" Did you mean `{b}`?"))
                    .unwrap_or_default();
                Err(format!(
                    "{arg} `{}` is not a channel of this log.{hint} Its channels: {}",
                    plugin_kit::text::clip(want),
                    channel_list(log)
                ))
            }
        };
    }
    let axis_name = axis.name.as_deref().unwrap_or("");
    let axis_base = base_name(axis_name);
    let axis_unit = axis.unit().map(|u| u.trim().to_lowercase());
    // 1. The axis's own name.
    if !axis_base.is_empty()
        && let Some((i, _)) = cols.iter().find(|(_, c)| base_name(&c.name) == axis_base)
    {
        return Ok(Matched {
            column: *i,
            how: "same name as the axis".into(),
        });
    }
    // 2. A synonym of the axis's quantity; a unit like the axis's settles a tie.
    if let Some((group, names)) = group_of(axis) {
        let found: Vec<(usize, &Column)> = cols
            .iter()
            .filter(|(_, c)| names.contains(&base_name(&c.name).as_str()))
            .copied()
            .collect();
        let pick = match found.as_slice() {
            [one] => Some(*one),
            [] => None,
            many => {
                let same_unit: Vec<&(usize, &Column)> = many
                    .iter()
                    .filter(|(_, c)| channel_unit(c).is_some() && channel_unit(c) == axis_unit)
                    .collect();
                match same_unit.as_slice() {
                    [one] => Some(**one),
                    _ => {
                        return Err(format!(
                            "several channels could be the axis `{}` ({group}): {}; pass {arg} \
                             with one of them",
                            axis.label(),
                            many.iter()
                                .map(|(_, c)| c.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
        };
        if let Some((i, c)) = pick {
            return Ok(Matched {
                column: i,
                how: format!("`{}` is a name for {group}", c.name),
            });
        }
    }
    // 3. The one channel in the axis's unit, when the unit says something.
    if let Some(u) = &axis_unit
        && TELLING_UNITS.iter().any(|(t, _)| t == u)
    {
        let found: Vec<&(usize, &Column)> = cols
            .iter()
            .filter(|(_, c)| channel_unit(c).as_ref() == Some(u))
            .collect();
        if let [(i, _)] = found.as_slice() {
            return Ok(Matched {
                column: *i,
                how: format!("the only channel in {u}"),
            });
        }
    }
    Err(format!(
        "no channel of this log matches the axis `{}` by name, synonym or unit; pass {arg} with \
         the channel to use. Its channels: {}",
        axis.label(),
        channel_list(log)
    ))
}

/// One channel's figures in one cell.
#[derive(Debug, Clone, Copy)]
struct CellStats {
    n: usize,
    sum: f64,
    min: f64,
    max: f64,
    pct: f64,
}

/// A cell's figures of one channel, kept as its samples come.
#[derive(Debug, Clone, Copy)]
struct Running {
    n: usize,
    sum: f64,
    min: f64,
    max: f64,
}

impl Default for Running {
    fn default() -> Self {
        Running {
            n: 0,
            // As `Iterator::sum` starts: all -0.0 samples sum to -0.0.
            sum: -0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Running {
    /// Adds a sample (a number, never NaN: `Column::number` gives no NaN).
    /// Of two zeros, the minimum is -0.0 and the maximum +0.0.
    #[inline]
    fn add(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        if v < self.min || (v == self.min && v.is_sign_negative()) {
            self.min = v;
        }
        if v > self.max || (v == self.max && self.max.is_sign_negative()) {
            self.max = v;
        }
    }
}

/// The log channel of every axis, in the order of `axes`.
fn match_all(log: &Log, axes: &[AxisRef]) -> Result<Vec<Matched>, String> {
    axes.iter()
        .map(|(axis, _, arg, explicit)| match_axis(log, axis, *explicit, arg))
        .collect()
}

/// A table axis to place samples on: the axis, its decoded breakpoints,
/// the argument naming its channel and that argument's value.
type AxisRef<'a> = (
    &'a Axis,
    Option<&'a crate::decode::AxisData>,
    &'static str,
    Option<&'a str>,
);

/// Values summarised for one channel, gathered cell by cell.
struct Summary {
    /// Per cell, the figures of the values present (none without values).
    cells: Vec<Option<CellStats>>,
    /// Digits the log prints the channel with.
    decimals: u8,
}

/// The percentile `p` (0..=100) of `v`, linear between the closest ranks
/// (NumPy's default); `v` is reordered.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    debug_assert!(!v.is_empty());
    let rank = p / 100.0 * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let frac = rank - lo as f64;
    let (_, &mut a, rest) = v.select_nth_unstable_by(lo, f64::total_cmp);
    if frac == 0.0 || rest.is_empty() {
        return a;
    }
    let b = rest.iter().copied().fold(f64::INFINITY, f64::min);
    a + (b - a) * frac
}

/// One log's contribution: which channels it used and its counts.
struct LogPart {
    name: String,
    x: Option<String>,
    y: Option<String>,
    rows: usize,
    selected: usize,
}

/// overlay_log: the table's layout with sample counts and the named
/// channels' figures per cell.
pub fn overlay_log(
    ex: &mut Explorer,
    cfg: &Config,
    logs_dir: &Path,
    cache: &mut Cache,
    args: &OverlayLog,
    progress: &mut dyn FnMut(u64, u64, &str) -> bool,
) -> Result<String, Error> {
    Ok(overlay(ex, cfg, logs_dir, cache, args, progress)?.render(args))
}

/// A log laid over a table: the counts and figures per cell and what was
/// read, before rendering (overlay_log shows it, propose_patch turns its
/// cells into a patch).
pub struct Overlay {
    /// The table overlaid.
    pub table: Table,
    /// Its decoded cells and axes.
    pub data: TableData,
    /// Selected samples per cell, row-major (`row * cols + col`).
    pub counts: Vec<usize>,
    /// With `keep_points`: the axis values [x, y] of each sample placed in
    /// a cell (x the columns of a 3D table or the only axis of a 2D one, y
    /// its rows; 0 for a 2D table), the first [`MAX_POINTS`] of them.
    pub points: Vec<[f64; 2]>,
    /// Samples placed in cells beyond the [`MAX_POINTS`] kept.
    pub points_over: usize,
    stats: Vec<Stat>,
    p: f64,
    summaries: Vec<Summary>,
    parts: Vec<LogPart>,
    outside: Outside,
    no_axis_value: usize,
    skipped: Vec<String>,
    unread: usize,
}

/// Lays the logs `args` names over its table: [`overlay_log`] before
/// rendering.
pub fn overlay(
    ex: &mut Explorer,
    cfg: &Config,
    logs_dir: &Path,
    cache: &mut Cache,
    args: &OverlayLog,
    progress: &mut dyn FnMut(u64, u64, &str) -> bool,
) -> Result<Overlay, Error> {
    let (_, t, data) = table_data(ex, cfg, &args.rom, &args.table)?;
    let Plan {
        axes,
        bins,
        stats,
        p,
        cells,
    } = plan(&t, &data, args)?;

    let filter = match args.filter.as_deref().map(str::trim) {
        Some(f) if !f.is_empty() => {
            Some(Filter::compile(f).map_err(|e| Error::Log(log_error::bad_filter(e)))?)
        }
        _ => None,
    };
    let named: Vec<&str> = filter
        .iter()
        .flat_map(|f| f.channel_names())
        .chain(args.channels.iter().map(String::as_str))
        .collect();
    let log_err = Error::Log;
    // Not parsed up front: each log is read once, after its header has
    // told which channels the axes are, with exactly those converted.
    let mut listing = Listing::read(logs_dir, cache, None, progress).map_err(log_err)?;
    let selected: Vec<usize> = match &args.file {
        Some(f) => vec![listing.find(f).map_err(log_err)?],
        None => (0..listing.files.len()).collect(),
    };
    if selected.is_empty() {
        return Err(Error::Log(ToolError::new(
            log_error::NO_LOGS,
            format!(
                "the logs directory {} holds no .csv files; nothing to overlay",
                logs_dir.display()
            ),
        )));
    }

    let mut tally = Tally::new(
        Grid {
            cols: data.cols,
            two_axes: t.table_type == TableType::Grid,
        },
        cells,
        args,
        stats.contains(&Stat::Percentile),
    );
    let mut channels = ChannelsSeen::new(args.channels.len());
    let mut parts: Vec<LogPart> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut unread = 0usize;
    let total = selected.len() as u64;
    let started = std::time::Instant::now();
    for (k, &i) in selected.iter().enumerate() {
        let name = listing.files[i].file.name.clone();
        let cached = matches!(listing.files[i].log, Some(Ok(_)));
        if args.file.is_none() && !cached && started.elapsed() > READ_BUDGET {
            // Left for a later call, which finds what this one read cached.
            unread += 1;
            continue;
        }
        if !progress(k as u64, total, &format!("overlaying {name}")) {
            return Err(Error::Log(log_error::cancelled()));
        }
        let fail = |e: String, skipped: &mut Vec<String>| {
            if args.file.is_some() {
                return Err(Error::Log(ToolError::new(
                    log_error::UNKNOWN_CHANNEL,
                    format!("{name}: {e}"),
                )));
            }
            skipped.push(format!("{name}: {e}"));
            Ok(())
        };
        let head = match cache.head(&listing.files[i].file) {
            Ok(l) => l,
            Err(e) if args.file.is_some() => return Err(Error::Log(e)),
            Err(e) => {
                skipped.push(format!("{name}: {}", e.message));
                continue;
            }
        };
        let matched = match match_all(&head, &axes) {
            Ok(m) => m,
            Err(e) => {
                fail(e, &mut skipped)?;
                continue;
            }
        };
        let mut need = Need::named(
            named
                .iter()
                .copied()
                .chain(matched.iter().map(|m| head.columns[m.column].name.as_str())),
        );
        let mut log = match listing.log(i, cache, &need) {
            Ok(l) => l,
            Err(e) if args.file.is_some() => return Err(Error::Log(e)),
            Err(e) => {
                skipped.push(format!("{name}: {}", e.message));
                continue;
            }
        };
        // A header change later in the file can rename the channels: match
        // again on the whole log, and convert what that adds (rare).
        let mut matched = match match_all(&log, &axes) {
            Ok(m) => m,
            Err(e) => {
                fail(e, &mut skipped)?;
                continue;
            }
        };
        if matched.iter().any(|m| !log.columns[m.column].loaded) {
            need = Need::named(
                named
                    .iter()
                    .copied()
                    .chain(matched.iter().map(|m| log.columns[m.column].name.as_str())),
            );
            log = listing.log(i, cache, &need).map_err(log_err)?;
            matched = match_all(&log, &axes).map_err(|e| {
                Error::Log(ToolError::new(
                    log_error::UNKNOWN_CHANNEL,
                    format!("{name}: {e}"),
                ))
            })?;
        }
        channels.note_filter(&log, filter.as_ref());
        let axis_cols: Vec<&Column> = matched.iter().map(|m| &log.columns[m.column]).collect();
        let stat_cols: Vec<Option<&Column>> = args
            .channels
            .iter()
            .map(|c| log.column(c).filter(|c| c.loaded))
            .collect();
        channels.note_log(&log, &stat_cols);
        let mut place = |row: usize| tally.place(&bins, &axis_cols, &stat_cols, row);
        let rows = log.rows();
        let mut selected_rows = 0usize;
        match &filter {
            Some(f) => {
                let bound = f.bind(&log.columns);
                bound.scan(0..rows, |row| {
                    selected_rows += 1;
                    place(row);
                });
            }
            None => {
                for row in 0..rows {
                    place(row);
                }
                selected_rows = rows;
            }
        }
        let chan =
            |m: Option<&Matched>| m.map(|m| format!("{} ({})", log.columns[m.column].name, m.how));
        parts.push(LogPart {
            name,
            x: chan(matched.first()),
            y: chan(matched.get(1)),
            rows,
            selected: selected_rows,
        });
    }
    if parts.is_empty() {
        let why = if unread > 0 && skipped.is_empty() {
            return Err(Error::Log(ToolError::new(
                log_error::NOT_READ_YET,
                format!(
                    "none of the {unread} logs was read within this call's time budget; call \
                     overlay_log again (what is read is kept), or pass file"
                ),
            )));
        } else {
            skipped
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        };
        return Err(Error::Log(ToolError::new(
            log_error::UNKNOWN_CHANNEL,
            format!("no log could be laid over `{}`:\n{why}", t.id),
        )));
    }
    if let Some(f) = &filter {
        let all: Vec<&str> = channels.in_filter.iter().map(String::as_str).collect();
        f.check_channels(&all).map_err(|e| {
            Error::Log(ToolError::new(
                log_error::UNKNOWN_CHANNEL,
                format!("{e} (in the logs overlaid)"),
            ))
        })?;
    }
    if let Some(j) = channels.seen.iter().position(|s| !s) {
        return Err(Error::Log(ToolError::new(
            log_error::UNKNOWN_CHANNEL,
            format!(
                "channel `{}` is in none of the logs overlaid.{} Names are case-sensitive, as \
                 list_logs shows them",
                plugin_kit::text::clip(&args.channels[j]),
                filter::closest(
                    &args.channels[j],
                    &channels
                        .known
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                )
                .map(|b| format!(" Did you mean `{b}`?"))
                .unwrap_or_default()
            ),
        )));
    }

    let summaries = tally.summaries(&channels.decimals, p);
    let outside = Outside {
        counts: tally.outside,
        held: tally.held,
        held_samples: tally.held_samples,
        clamp: args.clamp_to_edges,
        axes: axes
            .iter()
            .zip(&bins)
            .map(|((axis, ..), b)| (axis.label(), b.lo, b.hi))
            .collect(),
    };
    Ok(Overlay {
        table: t,
        data,
        counts: tally.counts,
        points: tally.points,
        points_over: tally.points_over,
        stats,
        p,
        summaries,
        parts,
        outside,
        no_axis_value: tally.no_axis_value,
        skipped,
        unread,
    })
}

/// What an overlay is checked to be before any log is read: the axes the
/// samples are placed on and the figures asked for.
struct Plan<'a> {
    axes: Vec<AxisRef<'a>>,
    bins: Vec<AxisBins>,
    stats: Vec<Stat>,
    /// The percentile asked for.
    p: f64,
    /// Cells of the table.
    cells: usize,
}

/// Checks `args` against table `t` (its axes, the channels and stats
/// named, the size of the grids) before any log is read.
fn plan<'a>(t: &'a Table, data: &'a TableData, args: &'a OverlayLog) -> Result<Plan<'a>, Error> {
    // Axes: (table axis, its data, which argument names its channel).
    let missing = |which: &str| {
        Error::InvalidArgument(format!(
            "`{}` has no {which} axis in its definition, so samples cannot be placed on it",
            t.id
        ))
    };
    let axes: Vec<AxisRef> = match t.table_type {
        TableType::Grid => vec![
            (
                t.col_axis.as_ref().ok_or_else(|| missing("X"))?,
                data.col_axis.as_ref(),
                "x_channel",
                args.x_channel.as_deref(),
            ),
            (
                t.row_axis.as_ref().ok_or_else(|| missing("Y"))?,
                data.row_axis.as_ref(),
                "y_channel",
                args.y_channel.as_deref(),
            ),
        ],
        TableType::OneAxis => vec![(
            t.row_axis.as_ref().ok_or_else(|| missing("X"))?,
            data.row_axis.as_ref(),
            "x_channel",
            args.x_channel.as_deref(),
        )],
        TableType::Scalar => {
            return Err(Error::InvalidArgument(format!(
                "`{}` is a single value with no axis; overlay_log needs a 2D or 3D table",
                t.id
            )));
        }
    };
    if t.table_type == TableType::OneAxis && args.y_channel.is_some() {
        return Err(Error::InvalidArgument(format!(
            "`{}` has one axis (x_axis {}); pass x_channel, not y_channel",
            t.id,
            axes[0].0.label()
        )));
    }
    let bins: Vec<AxisBins> = axes
        .iter()
        .map(|(axis, d, _, _)| {
            let v = breakpoints(axis, *d)?;
            AxisBins::new(&v)
                .map_err(|e| Error::InvalidArgument(format!("axis `{}`: {e}", axis.label())))
        })
        .collect::<Result<_, _>>()?;

    if args.channels.len() > MAX_CHANNELS {
        return Err(Error::InvalidArgument(format!(
            "{} channels named; at most {MAX_CHANNELS} are summarised per call (each adds up to \
             four grids): split them over several calls",
            args.channels.len()
        )));
    }
    let stats: Vec<Stat> = if args.stats.is_empty() {
        ALL_STATS.to_vec()
    } else {
        ALL_STATS
            .iter()
            .copied()
            .filter(|s| args.stats.contains(s))
            .collect()
    };
    let p = args.percentile.unwrap_or(DEFAULT_PERCENTILE);
    if !(0.0..=100.0).contains(&p) {
        return Err(Error::InvalidArgument(format!(
            "percentile must be between 0 and 100 (got {p}); 90 is the default"
        )));
    }
    let grids = 1 + args.channels.len() * stats.len();
    let cells = data.rows * data.cols;
    if cells * grids > MAX_CELLS {
        return Err(Error::InvalidArgument(format!(
            "`{}` has {cells} cells; {grids} grids of it would be {} cells, over the limit of \
             {MAX_CELLS}: name fewer channels or stats",
            t.id,
            cells * grids
        )));
    }
    Ok(Plan {
        axes,
        bins,
        stats,
        p,
        cells,
    })
}

/// How cells are numbered: row-major over `cols` columns; with two axes X
/// is the column and Y the row, with one its value picks the row.
#[derive(Clone, Copy)]
struct Grid {
    cols: usize,
    two_axes: bool,
}

/// Where the selected samples of every log fell: the accumulators of
/// [`overlay`].
struct Tally {
    grid: Grid,
    keep_points: bool,
    clamp_to_edges: bool,
    /// Samples per cell.
    counts: Vec<usize>,
    /// Per named channel, per cell: count, sum, min and max of its samples
    /// so far (in row order, so the sum is the one a sum of the values in
    /// order gives).
    running: Vec<Vec<Running>>,
    /// Per named channel, per cell: the values of the samples in the cell,
    /// kept only for a percentile (the others need none, and a million-row
    /// log's values are 8 MB a channel).
    values: Option<Vec<Vec<Vec<f64>>>>,
    /// Per axis: samples below its lowest and above its highest cell.
    outside: [[usize; 2]; 2],
    /// With clamp_to_edges: per axis and side, samples held at the outer
    /// cell, and how many samples that is (one may be beyond both axes).
    held: [[usize; 2]; 2],
    held_samples: usize,
    points: Vec<[f64; 2]>,
    points_over: usize,
    /// Samples with no value on some axis.
    no_axis_value: usize,
}

impl Tally {
    /// `keep_values` for a percentile (see `values`).
    fn new(grid: Grid, cells: usize, args: &OverlayLog, keep_values: bool) -> Self {
        Tally {
            grid,
            keep_points: args.keep_points,
            clamp_to_edges: args.clamp_to_edges,
            counts: vec![0; cells],
            running: vec![vec![Running::default(); cells]; args.channels.len()],
            values: keep_values.then(|| vec![vec![Vec::new(); cells]; args.channels.len()]),
            outside: [[0; 2]; 2],
            held: [[0; 2]; 2],
            held_samples: 0,
            points: Vec::new(),
            points_over: 0,
            no_axis_value: 0,
        }
    }

    /// Places `row` of a log: its axis values pick the cell, whose count
    /// and channel values grow; a sample beyond an axis is counted as
    /// outside (or held at the edge with clamp_to_edges).
    fn place(
        &mut self,
        bins: &[AxisBins],
        axis_cols: &[&Column],
        stat_cols: &[Option<&Column>],
        row: usize,
    ) {
        let mut cell = [0usize; 2];
        let mut point = [0f64; 2];
        let mut was_held = false;
        for (a, col) in axis_cols.iter().enumerate() {
            let Some(v) = col.number(row) else {
                self.no_axis_value += 1;
                return;
            };
            point[a] = v;
            match bins[a].cell(v) {
                Some(c) => cell[a] = c,
                None if self.clamp_to_edges && !v.is_nan() => {
                    let side = usize::from(v >= bins[a].hi);
                    self.held[a][side] += 1;
                    was_held = true;
                    cell[a] = bins[a].edge(side);
                }
                None => {
                    // A sample outside both axes counts under the first.
                    self.outside[a][usize::from(v >= bins[a].hi)] += 1;
                    return;
                }
            }
        }
        self.held_samples += usize::from(was_held);
        if self.keep_points {
            if self.points.len() < MAX_POINTS {
                self.points.push(point);
            } else {
                self.points_over += 1;
            }
        }
        let idx = if self.grid.two_axes {
            cell[1] * self.grid.cols + cell[0]
        } else {
            cell[0] * self.grid.cols
        };
        self.counts[idx] += 1;
        for (j, c) in stat_cols.iter().enumerate() {
            if let Some(v) = c.and_then(|c| c.number(row)) {
                self.running[j][idx].add(v);
                if let Some(values) = &mut self.values {
                    values[j][idx].push(v);
                }
            }
        }
    }

    /// Each named channel's figures per cell, printed with `decimals`.
    fn summaries(&mut self, decimals: &[u8], p: f64) -> Vec<Summary> {
        let mut values = self.values.take();
        std::mem::take(&mut self.running)
            .into_iter()
            .zip(decimals)
            .enumerate()
            .map(|(j, (per_cell, &decimals))| Summary {
                cells: per_cell
                    .into_iter()
                    .enumerate()
                    .map(|(idx, r)| {
                        (r.n > 0).then(|| CellStats {
                            n: r.n,
                            sum: r.sum,
                            min: r.min,
                            max: r.max,
                            // Not asked for when the values were not kept.
                            pct: values
                                .as_mut()
                                .map_or(f64::NAN, |v| percentile(&mut v[j][idx], p)),
                        })
                    })
                    .collect(),
                decimals,
            })
            .collect()
    }
}

/// What the logs overlaid said about channels: which named channels some
/// log had, and the names an unknown one is checked against.
struct ChannelsSeen {
    /// Per named channel: whether some log has it.
    seen: Vec<bool>,
    /// Per named channel: the most digits a log prints it with.
    decimals: Vec<u8>,
    /// Channels of the filter found in some log.
    in_filter: Vec<String>,
    /// Channel names of the logs overlaid, for "did you mean" (bounded).
    known: Vec<String>,
}

impl ChannelsSeen {
    /// At most this many names are kept for suggestions.
    const MAX_KNOWN: usize = 1000;

    fn new(named: usize) -> Self {
        ChannelsSeen {
            seen: vec![false; named],
            decimals: vec![0; named],
            in_filter: Vec::new(),
            known: Vec::new(),
        }
    }

    fn note_filter(&mut self, log: &Log, filter: Option<&Filter>) {
        for c in filter.iter().flat_map(|f| f.channel_names()) {
            if log.column(c).is_some() && !self.in_filter.iter().any(|s| s == c) {
                self.in_filter.push(c.to_string());
            }
        }
    }

    fn note_log(&mut self, log: &Log, stat_cols: &[Option<&Column>]) {
        for c in log.columns.iter().filter(|c| !c.hidden) {
            if self.known.len() < Self::MAX_KNOWN && !self.known.contains(&c.name) {
                self.known.push(c.name.clone());
            }
        }
        for (j, c) in stat_cols.iter().enumerate() {
            if let Some(c) = c {
                self.seen[j] = true;
                self.decimals[j] = self.decimals[j].max(c.decimals);
            }
        }
    }
}

impl Overlay {
    /// Selected samples beyond the outer cells, left out (none with
    /// `clamp_to_edges`, which holds them at the edges).
    pub fn outside_samples(&self) -> usize {
        self.outside.counts.iter().flatten().sum()
    }
}

/// Samples outside the outer cells, per axis and side.
struct Outside {
    /// Per axis: [below, above].
    counts: [[usize; 2]; 2],
    /// Per axis: [below, above] held at the outer cells (clamp_to_edges).
    held: [[usize; 2]; 2],
    /// Samples held at an outer cell on some axis.
    held_samples: usize,
    /// Whether clamp_to_edges was asked for.
    clamp: bool,
    /// Per axis: its label and the outer cells' edges.
    axes: Vec<(String, f64, f64)>,
}

impl Outside {
    /// `Load (%) above 210: 231`, for each side with samples, so an agent
    /// sees why samples missed the table (a log in other units, a table
    /// for another range).
    fn detail(&self, counts: [[usize; 2]; 2]) -> Vec<String> {
        let mut out = Vec::new();
        for ((label, lo, hi), [below, above]) in self.axes.iter().zip(counts) {
            if below > 0 {
                out.push(format!("{label} below {}: {below}", short(*lo)));
            }
            if above > 0 {
                out.push(format!("{label} at or above {}: {above}", short(*hi)));
            }
        }
        out
    }
}

/// `90` or `99.5`: a percentile as written in headers.
fn p_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format_number(p, 0)
    } else {
        format_number(p, 2)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

impl Overlay {
    /// overlay_log's answer: the header and one grid per figure.
    pub fn render(&self, args: &OverlayLog) -> String {
        let fm = self.header(args);
        let (t, data, counts) = (&self.table, &self.data, &self.counts);
        let (stats, p) = (&self.stats, self.p);
        let w = Window::whole(data.rows, data.cols);
        let mut body = String::from("## Samples per cell\n\n");
        body.push_str(&render_layout(t, data, w, "Samples".into(), &|r, c| {
            counts[r * data.cols + c].to_string()
        }));
        for (name, s) in args.channels.iter().zip(&self.summaries) {
            for &stat in stats {
                let what = match stat {
                    Stat::Mean => "mean".to_string(),
                    Stat::Min => "min".into(),
                    Stat::Max => "max".into(),
                    Stat::Percentile => format!("p{}", p_label(p)),
                };
                let digits = match stat {
                    Stat::Min | Stat::Max => s.decimals,
                    _ => (s.decimals + 1).min(6),
                };
                body.push_str(&format!("\n## {name}: {what}\n\n"));
                body.push_str(&render_layout(
                    t,
                    data,
                    w,
                    format!("{name} {what}"),
                    &|r, c| match s.cells[r * data.cols + c] {
                        None => "-".into(),
                        Some(CellStats {
                            n,
                            sum,
                            min,
                            max,
                            pct: pv,
                        }) => format_number(
                            match stat {
                                Stat::Mean => sum / n as f64,
                                Stat::Min => min,
                                Stat::Max => max,
                                Stat::Percentile => pv,
                            },
                            digits,
                        ),
                    },
                ));
            }
        }
        fm.with_body(&body)
    }

    /// The frontmatter: the table, the logs and channels used, the
    /// sample counts and the cell convention.
    pub fn header(&self, args: &OverlayLog) -> Frontmatter {
        let (t, stats, p, parts, outside) =
            (&self.table, &self.stats, self.p, &self.parts, &self.outside);
        let (counts, no_axis_value, skipped, unread) =
            (&self.counts, self.no_axis_value, &self.skipped, self.unread);
        let label = |a: &Option<Axis>| a.as_ref().map(Axis::label);
        let mut fm = Frontmatter::new().text("table", &t.id);
        if let Some(u) = t.unit() {
            fm = fm.text("unit", u);
        }
        fm = fm.text("dimensions", t.dimensions());
        let (x_axis, y_axis) = match t.table_type {
            TableType::Grid => (label(&t.col_axis), label(&t.row_axis)),
            _ => (label(&t.row_axis), None),
        };
        for (key, v) in [("x_axis", x_axis), ("y_axis", y_axis)] {
            if let Some(v) = v {
                fm = fm.text(key, v);
            }
        }
        let first = &parts[0];
        let same = |f: fn(&LogPart) -> &Option<String>| parts.iter().all(|q| f(q) == f(first));
        if same(|q| &q.x)
            && let Some(x) = &first.x
        {
            fm = fm.text("x_channel", x);
        }
        if same(|q| &q.y)
            && let Some(y) = &first.y
        {
            fm = fm.text("y_channel", y);
        }
        let names: Vec<&str> = parts
            .iter()
            .take(MAX_LISTED_LOGS)
            .map(|q| q.name.as_str())
            .collect();
        fm = fm.list("logs", &names);
        if parts.len() > MAX_LISTED_LOGS {
            fm = fm.raw("more_logs", parts.len() - MAX_LISTED_LOGS);
        }
        // A filter of any length compiles ("RPM > 0 and " repeated), so
        // only a clipped excerpt comes back (hardening item 11).
        if let Some(f) = &args.filter
            && !f.trim().is_empty()
        {
            fm = fm.text("filter", plugin_kit::text::clip(f.trim()));
        }
        let rows: usize = parts.iter().map(|q| q.rows).sum();
        let selected: usize = parts.iter().map(|q| q.selected).sum();
        let in_cells: usize = counts.iter().sum();
        fm = fm
            .raw("samples", rows)
            .raw("selected", selected)
            .raw("in_cells", in_cells)
            .raw("outside", outside.counts.iter().flatten().sum::<usize>());
        let detail = outside.detail(outside.counts);
        if !detail.is_empty() {
            fm = fm.list("outside_by_axis", &detail);
        }
        if outside.clamp {
            fm = fm.raw("held_at_edges", outside.held_samples);
            let detail = outside.detail(outside.held);
            if !detail.is_empty() {
                fm = fm.list("held_at_edges_by_axis", &detail);
            }
        }
        if no_axis_value > 0 {
            fm = fm.raw("no_axis_value", no_axis_value);
        }
        fm = fm.text(
            "cells",
            if outside.clamp {
                CELLS_NOTE_CLAMPED
            } else {
                CELLS_NOTE
            },
        );
        if !args.channels.is_empty() && stats.contains(&Stat::Percentile) {
            fm = fm.text(
                "percentile",
                format!("p{} (linear between the closest ranks)", p_label(p)),
            );
        }
        let mut notes: Vec<String> = Vec::new();
        if !same(|q| &q.x) || !same(|q| &q.y) {
            for q in parts.iter().take(MAX_LISTED_LOGS) {
                let mut s = format!("{}: x_channel {}", q.name, q.x.as_deref().unwrap_or("-"));
                if let Some(y) = &q.y {
                    s.push_str(&format!(", y_channel {y}"));
                }
                notes.push(s);
            }
        }
        if !skipped.is_empty() {
            notes.push(format!("logs skipped: {}", skipped.len()));
            notes.extend(skipped.iter().take(5).map(|s| plugin_kit::text::clip(s)));
        }
        if unread > 0 {
            notes.push(format!(
                "{unread} logs not read within this call's time budget; call again to include them"
            ));
        }
        if !notes.is_empty() {
            fm = fm.list("notes", &notes);
        }
        fm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bins::{axis_window, parse_range};

    /// rows_where/cols_where on an axis of text labels say what read_table
    /// and patch_table callers can do instead, not what overlay_log needs.
    #[test]
    fn ranges_on_a_labelled_axis_point_to_indices() {
        let axis = Axis {
            name: Some("Gear".into()),
            xml_type: "Static X Axis".into(),
            source: crate::definition::AxisSource::Static(vec!["1st".into(), "2nd".into()]),
            flip: false,
        };
        let labels = crate::decode::AxisData {
            labels: vec!["1st".into(), "2nd".into()],
            values: None,
            raw: None,
        };
        let err = axis_window(&axis, Some(&labels), "1..2", "cols_where")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "cols_where `1..2`: axis `Gear` has labels, not values (1st, 2nd): use row/col indices from read_table"
        );
    }

    /// A rows_where range on an axis out of order is refused: the rows
    /// meeting 2500..3500 on RPM 1000, 3000, 2000, 4000 are 1 and 3, and the
    /// block 1-3 between them would take row 2 (2000), which does not.
    #[test]
    fn ranges_on_an_axis_out_of_order_are_refused() {
        let axis = Axis {
            name: Some("RPM".into()),
            xml_type: "Y Axis".into(),
            source: crate::definition::AxisSource::Static(Vec::new()),
            flip: false,
        };
        let data = |v: &[f64]| crate::decode::AxisData {
            labels: v.iter().map(|x| x.to_string()).collect(),
            values: Some(v.to_vec()),
            raw: None,
        };
        let shuffled = data(&[1000.0, 3000.0, 2000.0, 4000.0]);
        let err = axis_window(&axis, Some(&shuffled), "2500..3500", "rows_where")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("axis `RPM` is not in order (breakpoints 1000, 3000, 2000, 4000)")
                && err.contains("use row/col indices from read_table"),
            "{err}"
        );
        // In order either way, the same range is the block it meets.
        let up = data(&[1000.0, 2000.0, 3000.0, 4000.0]);
        assert_eq!(
            axis_window(&axis, Some(&up), "2500..3500", "rows_where").unwrap(),
            (2, 2)
        );
        let down = data(&[4000.0, 3000.0, 2000.0, 1000.0]);
        assert_eq!(
            axis_window(&axis, Some(&down), "2500..3500", "cols_where").unwrap(),
            (0, 2)
        );
    }

    #[test]
    fn cells_are_centred_with_edges_midway() {
        let b = AxisBins::new(&[1000.0, 2000.0, 3000.0, 5000.0]).unwrap();
        // On breakpoints.
        assert_eq!(b.cell(1000.0), Some(0));
        assert_eq!(b.cell(5000.0), Some(3));
        // Midway: the higher breakpoint's cell.
        assert_eq!(b.cell(1500.0), Some(1));
        assert_eq!(b.cell(1499.9), Some(0));
        assert_eq!(b.cell(4000.0), Some(3));
        assert_eq!(b.cell(3999.0), Some(2));
        // Outer cells reach half a step out (the lower edge inside, the
        // upper one outside).
        assert_eq!(b.cell(500.0), Some(0));
        assert_eq!(b.cell(499.9), None);
        assert_eq!(b.cell(5999.9), Some(3));
        assert_eq!(b.cell(6000.0), None);
        assert_eq!(b.cell(f64::NAN), None);
    }

    #[test]
    fn ranges_select_the_cells_they_meet() {
        let b = AxisBins::new(&[2500.0, 3000.0, 3500.0, 4000.0, 4500.0, 5000.0]).unwrap();
        assert_eq!(b.meeting(3000.0, 4500.0), [1, 2, 3, 4]);
        // One value: its cell; an edge belongs to the cell above.
        assert_eq!(b.meeting(4200.0, 4200.0), [3]);
        assert_eq!(b.meeting(4250.0, 4250.0), [4]);
        assert_eq!(b.meeting(f64::NEG_INFINITY, 2300.0), [0]);
        assert!(b.meeting(f64::NEG_INFINITY, 2000.0).is_empty());
        assert!(b.meeting(6000.0, f64::INFINITY).is_empty());
        assert_eq!(parse_range("3000..4500"), Ok((3000.0, 4500.0)));
        assert_eq!(parse_range(" ..1.6"), Ok((f64::NEG_INFINITY, 1.6)));
        assert_eq!(parse_range("-10.."), Ok((-10.0, f64::INFINITY)));
        assert_eq!(parse_range("4000"), Ok((4000.0, 4000.0)));
        assert!(parse_range("..").is_err());
        assert!(
            parse_range("4500..3000")
                .unwrap_err()
                .contains("lower value first")
        );
        assert!(parse_range("rpm..").unwrap_err().contains("not a number"));
    }

    #[test]
    fn descending_and_single_axes() {
        let b = AxisBins::new(&[30.0, 20.0, 10.0]).unwrap();
        assert_eq!(b.cell(10.0), Some(2));
        assert_eq!(b.cell(15.0), Some(1));
        assert_eq!(b.cell(34.9), Some(0));
        assert_eq!(b.cell(35.0), None);
        let one = AxisBins::new(&[7.0]).unwrap();
        assert_eq!(one.cell(-1e9), Some(0));
        assert!(AxisBins::new(&[1.0, 1.0]).unwrap_err().contains("repeats"));
        assert!(AxisBins::new(&[]).is_err());
    }

    /// The running figures are the ones the kept values give.
    #[test]
    fn running_figures_match_the_values() {
        // Scattered over ±1000, in no order (7919 is prime to 20,001).
        let values: Vec<f64> = (0..5000u64)
            .map(|i| (i * 7919 % 20_001) as f64 / 7.0 - 1000.0)
            .collect();
        let mut r = Running::default();
        values.iter().for_each(|&v| r.add(v));
        assert_eq!(r.n, values.len());
        assert_eq!(r.sum.to_bits(), values.iter().sum::<f64>().to_bits());
        assert_eq!(r.min, values.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(
            r.max,
            values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        );
        // Zeros: the minimum is -0.0, the maximum +0.0, the sum of -0.0s -0.0.
        let mut z = Running::default();
        [0.0, -0.0, 0.0].iter().for_each(|&v| z.add(v));
        assert!(z.min.is_sign_negative() && z.max.is_sign_positive());
        let mut neg = Running::default();
        neg.add(-0.0);
        assert!(neg.sum.is_sign_negative());
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&mut v, 0.0), 1.0);
        assert_eq!(percentile(&mut v, 100.0), 4.0);
        assert_eq!(percentile(&mut v, 50.0), 2.5);
        // rank 0.9 * 3 = 2.7 → 3 + 0.7 × (4 − 3)
        assert!((percentile(&mut v, 90.0) - 3.7).abs() < 1e-12);
        assert_eq!(percentile(&mut [5.0], 90.0), 5.0);
    }

    #[test]
    fn names_lose_units_case_and_underscores() {
        assert_eq!(base_name("Engine Speed (rpm)"), "engine speed");
        assert_eq!(base_name("engine_speed [RPM]"), "engine speed");
        assert_eq!(base_name("  RPM "), "rpm");
        assert_eq!(base_name("(x)"), "(x)");
        assert_eq!(base_name("Load_g/rev"), "load");
        assert_eq!(base_name("Boost_psi"), "boost");
        assert_eq!(base_name("RPM"), "rpm");
    }

    /// A logs directory of its own with the given files, removed on drop.
    struct LogsDir(std::path::PathBuf);

    impl LogsDir {
        fn new(tag: &str, files: &[(&str, &str)]) -> LogsDir {
            let dir = std::env::temp_dir().join(format!(
                "ecu-overlay-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(name), text).unwrap();
            }
            LogsDir(dir)
        }
    }

    impl Drop for LogsDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Samples placed by hand on Ignition Timing Base Map (Load 20..200 %
    /// in steps of 20 across, RPM down to 7000): see each row's comment.
    const LOG: &str = "\
Time,RPM,Load,Knock,Timing
0.0,3000,60,1,20
0.1,3250,60,3,18
0.2,3249,70,0,19
0.3,3000,50,2,21
0.4,7600,100,0,10
0.5,7499,200,0,11
0.6,3000,9,0,30
0.7,3000,10,0,31
0.8,,60,0,22
0.9,3000,60,0,23
";
    // Row by row: on breakpoints (3000, 60) → cell 3000/60; RPM midway
    // 3000..3500 → the higher, 3500/60; RPM just under midway and Load
    // midway 60..80 → 3000/80; Load midway 40..60 → 3000/60; RPM past
    // 7000 + 500 → outside; just inside the last half step → 7000/200; Load
    // under 20 − 10 → outside; Load exactly 20 − 10 → 3000/20; no RPM;
    // on breakpoints again → 3000/60.

    fn sample_root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/ecu")
    }

    fn run(dir: &LogsDir, args: OverlayLog) -> Result<String, Error> {
        let cfg = Config::with_definitions(sample_root().join("definitions"));
        let mut ex = crate::testing::explorer();
        let args = OverlayLog {
            rom: sample_root().join("BT000001.bin").to_string_lossy().into(),
            ..args
        };
        overlay_log(
            &mut ex,
            &cfg,
            &dir.0,
            &mut Cache::default(),
            &args,
            &mut |_, _, _| true,
        )
    }

    /// The cell at row label `y`, column label `x` of the grid under `heading`.
    fn cell(doc: &str, heading: &str, y: &str, x: &str) -> String {
        let start = doc
            .find(&format!("## {heading}\n"))
            .unwrap_or_else(|| panic!("{heading}: {doc}"));
        let lines: Vec<Vec<String>> = doc[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect();
        let col = lines[0]
            .iter()
            .position(|h| h == x)
            .unwrap_or_else(|| panic!("{x}: {doc}"));
        let row = lines
            .iter()
            .find(|r| r[0] == y)
            .unwrap_or_else(|| panic!("{y}: {doc}"));
        row[col].clone()
    }

    fn timing(channels: &[&str]) -> OverlayLog {
        OverlayLog {
            table: "Ignition Timing Base Map".into(),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn hand_placed_samples_land_in_their_cells() {
        let dir = LogsDir::new("hand", &[("drive.csv", LOG)]);
        let out = run(&dir, timing(&["Knock"])).unwrap();
        for (k, v) in [
            ("samples", "10"),
            ("selected", "10"),
            ("in_cells", "7"),
            ("outside", "2"),
            ("no_axis_value", "1"),
            (
                "outside_by_axis",
                r#"["Load (%) below 10: 1", "RPM (rpm) at or above 7500: 1"]"#,
            ),
            ("x_channel", "Load (same name as the axis)"),
            ("y_channel", "RPM (same name as the axis)"),
        ] {
            assert!(out.contains(&format!("\n{k}: {v}\n")), "{k}: {out}");
        }
        assert!(out.contains("midway"), "{out}");
        let n = |y, x| cell(&out, "Samples per cell", y, x);
        assert_eq!(n("3000", "60"), "3");
        assert_eq!(n("3500", "60"), "1");
        assert_eq!(n("3000", "80"), "1");
        assert_eq!(n("7000", "200"), "1");
        assert_eq!(n("3000", "20"), "1");
        assert_eq!(n("3000", "40"), "0");
        // Knock in 3000/60: 1, 2, 0.
        assert_eq!(cell(&out, "Knock: mean", "3000", "60"), "1.0");
        assert_eq!(cell(&out, "Knock: min", "3000", "60"), "0");
        assert_eq!(cell(&out, "Knock: max", "3000", "60"), "2");
        assert_eq!(cell(&out, "Knock: p90", "3000", "60"), "1.8");
        assert_eq!(cell(&out, "Knock: mean", "3500", "60"), "3.0");
        assert_eq!(cell(&out, "Knock: mean", "3000", "40"), "-");
    }

    /// clamp_to_edges: 7600 rpm (past 7000 + 500) counts in 7000/100 and
    /// Load 9 (under 20 - 10) in 3000/20, beside the 3000/10 sample there.
    #[test]
    fn clamp_to_edges_counts_samples_beyond_the_axes_in_the_outer_cells() {
        let dir = LogsDir::new("clamp", &[("drive.csv", LOG)]);
        let args = OverlayLog {
            clamp_to_edges: true,
            ..timing(&["Knock"])
        };
        let out = run(&dir, args).unwrap();
        for (k, v) in [
            ("in_cells", "9"),
            ("outside", "0"),
            ("held_at_edges", "2"),
            (
                "held_at_edges_by_axis",
                r#"["Load (%) below 10: 1", "RPM (rpm) at or above 7500: 1"]"#,
            ),
        ] {
            assert!(out.contains(&format!("\n{k}: {v}\n")), "{k}: {out}");
        }
        assert!(
            out.contains(&format!("\ncells: {CELLS_NOTE_CLAMPED}\n")),
            "{out}"
        );
        let n = |y, x| cell(&out, "Samples per cell", y, x);
        assert_eq!(n("7000", "100"), "1");
        assert_eq!(n("3000", "20"), "2");
        assert_eq!(n("7000", "200"), "1");
        // Without it, the same samples are outside and the key is absent.
        let out = run(&dir, timing(&[])).unwrap();
        assert!(
            out.contains("\noutside: 2\n") && !out.contains("held_at_edges"),
            "{out}"
        );
    }

    #[test]
    fn a_filter_selects_samples_and_stats_can_be_chosen() {
        let dir = LogsDir::new("filter", &[("drive.csv", LOG)]);
        let args = OverlayLog {
            filter: Some("Knock > 0".into()),
            stats: vec![Stat::Mean],
            ..timing(&["Timing"])
        };
        let out = run(&dir, args).unwrap();
        assert!(
            out.contains("\nselected: 3\n") && out.contains("\nin_cells: 3\n"),
            "{out}"
        );
        assert_eq!(cell(&out, "Samples per cell", "3000", "60"), "2");
        assert_eq!(cell(&out, "Timing: mean", "3000", "60"), "20.5");
        assert!(!out.contains("Timing: max"), "{out}");
        let bad = run(
            &dir,
            OverlayLog {
                filter: Some("Knock >".into()),
                ..timing(&[])
            },
        );
        assert_eq!(bad.unwrap_err().code(), "BAD_FILTER");
    }

    #[test]
    fn logger_names_are_matched_and_missing_channels_listed() {
        let rr = "Time (msec);Engine Speed (rpm);Engine Load (%);Knock Count (count)\n\
                  0;4000;100,0;0\n10;4000;100,0;2\n";
        let dir = LogsDir::new("names", &[("romraiderlog_20260221_180000.csv", rr)]);
        let out = run(&dir, timing(&[])).unwrap();
        assert!(
            out.contains(
                "y_channel: Engine Speed (rpm) (`Engine Speed (rpm)` is a name for engine speed)"
            ),
            "{out}"
        );
        assert_eq!(cell(&out, "Samples per cell", "4000", "100"), "2");

        let missing = "Time,Speed,Load\n0,50,60\n";
        let dir = LogsDir::new("missing", &[("drive.csv", missing)]);
        let err = run(
            &dir,
            OverlayLog {
                file: Some("drive.csv".into()),
                ..timing(&[])
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), "UNKNOWN_CHANNEL");
        let msg = err.to_string();
        assert!(
            msg.contains("RPM (rpm)") && msg.contains("Time, Speed, Load"),
            "{msg}"
        );
        assert!(msg.contains("y_channel"), "{msg}");
        // Named explicitly, the channel is used and said to be.
        let out = run(
            &dir,
            OverlayLog {
                y_channel: Some("Speed".into()),
                ..timing(&[])
            },
        )
        .unwrap();
        assert!(
            out.contains("y_channel: Speed (given as y_channel)"),
            "{out}"
        );
        let err = run(
            &dir,
            OverlayLog {
                y_channel: Some("Sped".into()),
                ..timing(&[])
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("Did you mean `Speed`?"), "{err}");
        let err = run(
            &dir,
            OverlayLog {
                y_channel: Some("Speed".into()),
                ..timing(&["load"])
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), "UNKNOWN_CHANNEL", "{err}");
        assert!(
            err.to_string().contains("Did you mean `Load`? Names"),
            "{err}"
        );
    }

    #[test]
    fn bounds_and_unsuitable_tables_are_refused() {
        let dir = LogsDir::new("bounds", &[("drive.csv", LOG)]);
        let four = run(&dir, timing(&["Knock", "Timing", "Load", "RPM"])).unwrap_err();
        assert!(four.to_string().contains("at most 3"), "{four}");
        let p = run(
            &dir,
            OverlayLog {
                percentile: Some(101.0),
                ..timing(&["Knock"])
            },
        )
        .unwrap_err();
        assert_eq!(p.code(), "INVALID_ARGUMENT");
        let gear = OverlayLog {
            table: "Boost Target".into(),
            ..Default::default()
        };
        let err = run(&dir, gear).unwrap_err();
        assert!(err.to_string().contains("text labels (1st, 2nd"), "{err}");
        let scalar = OverlayLog {
            table: "Injector Scaling".into(),
            ..Default::default()
        };
        assert_eq!(run(&dir, scalar).unwrap_err().code(), "INVALID_ARGUMENT");
    }

    #[test]
    fn a_2d_table_shows_one_column_of_counts() {
        let log = "Time,Coolant Temp,RPM\n0,20,900\n1,21,950\n2,75,800\n";
        let dir = LogsDir::new("2d", &[("drive.csv", log)]);
        let args = OverlayLog {
            table: "Idle Speed Target".into(),
            channels: vec!["RPM".into()],
            stats: vec![Stat::Mean],
            ..Default::default()
        };
        let out = run(&dir, args).unwrap();
        assert!(
            out.contains("x_channel: Coolant Temp (same name as the axis)"),
            "{out}"
        );
        assert_eq!(cell(&out, "Samples per cell", "20", "Samples"), "2");
        assert_eq!(cell(&out, "Samples per cell", "80", "Samples"), "1");
        assert_eq!(cell(&out, "RPM: mean", "20", "RPM mean"), "925.0");
        assert_eq!(cell(&out, "RPM: mean", "0", "RPM mean"), "-");
    }
}
