//! `plot_log`: channels against time as a PNG, one panel per channel, rows
//! matching a filter shaded. Drawn with the shared rasterizer
//! ([`raster::Canvas`]) and its public-domain 8×8 bitmap font, so it needs
//! no system fonts and runs unchanged inside the component.

use crate::column::{Column, format_number};
use crate::error::{self, ToolError};
use crate::filter::Filter;
use crate::logs::{Cache, Listing};
use crate::query::{Progress, fmt_rate};
use crate::reader::Log;
use crate::reader::Need;
use raster::Canvas;
use std::path::Path;

/// Arguments of `plot_log`.
#[derive(Debug, Clone, Default)]
pub struct PlotArgs {
    /// File name from `list_logs`; none plots the most recent log.
    pub file: Option<String>,
    /// Channels to plot, one panel each, at most 8; none picks up to 4 of the
    /// usual ones (RPM, Load, Knock, …).
    pub channels: Option<Vec<String>>,
    /// filtrex expression whose matching rows are shaded red in every panel.
    pub filter: Option<String>,
    /// Start of the window on the log's Time axis, in seconds; clamped to the
    /// log.
    pub start_s: Option<f64>,
    /// End of the window in seconds; must be after `start_s`.
    pub end_s: Option<f64>,
    /// Image width in pixels, 320..2400 (default 1000).
    pub width: Option<u32>,
    /// Image height in pixels, 200..2400 (default 160 per panel + 60).
    pub height: Option<u32>,
}

/// A rendered plot: the image and the text an agent reads instead of looking at
/// it.
#[derive(Debug)]
pub struct Plot {
    /// The PNG file's bytes.
    pub png: Vec<u8>,
    /// Rows, time span, sample rate and each panel's value range, plus the
    /// count of highlighted rows.
    pub caption: String,
}

const MAX_PANELS: usize = 8;
const PALETTE: [[u8; 3]; 8] = [
    [31, 119, 180],
    [44, 160, 44],
    [148, 103, 189],
    [255, 127, 14],
    [23, 190, 207],
    [140, 86, 75],
    [188, 189, 34],
    [227, 119, 194],
];
const HIGHLIGHT: [u8; 3] = [255, 214, 214];
const GRID: [u8; 3] = [228, 228, 228];
const AXIS: [u8; 3] = [120, 120, 120];
const TEXT: [u8; 3] = [30, 30, 30];

/// Channel families tried, in order, when no channels are given.
const PREFERRED: [&[&str]; 7] = [
    &["RPM", "Engine Speed", "2ByteRPM"],
    &["Load", "Engine Load"],
    &["Knock", "Knock Count", "KnockSum", "Knock Sum"],
    &["Throttle", "TPS", "Throttle Opening"],
    &["MAP", "Manifold Absolute Pressure", "Boost", "PSIG"],
    &["AFR", "A/F"],
    &["IAT", "Intake Air Temperature"],
];

/// Picks up to four numeric channels a tuner looks at first.
pub fn default_channels(log: &Log) -> Vec<String> {
    let numeric: Vec<&str> = log
        .channels()
        .into_iter()
        .filter(|n| log.column(n).is_some_and(|c| c.special < c.values.len()))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for family in PREFERRED {
        if out.len() == 4 {
            break;
        }
        let found = family.iter().find_map(|want| {
            numeric.iter().find(|n| **n == *want).or_else(|| {
                numeric
                    .iter()
                    .find(|n| n.to_lowercase().starts_with(&want.to_lowercase()))
            })
        });
        if let Some(n) = found
            && !out.iter().any(|o| o == n)
        {
            out.push(n.to_string());
        }
    }
    for n in numeric {
        if out.len() >= 2 {
            break;
        }
        if !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// `plot_log`.
pub fn plot_log(
    dir: &Path,
    cache: &mut Cache,
    args: &PlotArgs,
    progress: Progress,
) -> Result<Plot, ToolError> {
    // The channels to draw may be chosen from the data: convert them all.
    let mut listing = Listing::read(
        dir,
        cache,
        args.file.is_none().then_some(&Need::named::<&str>([])),
        progress,
    )?;
    if listing.files.is_empty() {
        return Err(ToolError::new(
            error::NO_LOGS,
            format!(
                "the logs directory {} holds no .csv files or other logs, in it or its \
                 subfolders",
                dir.display()
            ),
        ));
    }
    let index = match &args.file {
        Some(f) => listing.find(f)?,
        None => 0,
    };
    let log = listing.log(index, cache, &Need::All)?;
    let name = listing.files[index].file.name.clone();
    render(&log, &name, args)
}

/// Seconds for a message: plain when reasonable, scientific when huge.
fn seconds(v: f64) -> String {
    if v.abs() < 1e9 {
        let s = format_number(v, 3);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{v:e}")
    }
}

fn nice_step(range: f64, target: usize) -> f64 {
    if range.is_nan() || range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as u8
    };
    format_number(v, decimals.min(6))
}

/// Renders a log into a PNG (the testable core of `plot_log`).
pub fn render(log: &Log, name: &str, args: &PlotArgs) -> Result<Plot, ToolError> {
    let channels: Vec<String> = match &args.channels {
        Some(c) if !c.is_empty() => c.clone(),
        _ => default_channels(log),
    };
    if channels.is_empty() {
        return Err(ToolError::new(
            error::NOTHING_TO_PLOT,
            format!("{name} has no numeric channel to plot"),
        ));
    }
    if channels.len() > MAX_PANELS {
        return Err(ToolError::invalid(format!(
            "at most {MAX_PANELS} channels fit in one plot (got {}); split them over several calls",
            channels.len()
        )));
    }
    let all: Vec<&str> = log.columns.iter().map(|c| c.name.as_str()).collect();
    let mut cols: Vec<&Column> = Vec::new();
    for c in &channels {
        match log.column(c) {
            Some(col) => cols.push(col),
            None => {
                let mut msg = format!("{name} has no channel `{}`", plugin_kit::text::clip(c));
                if let Some(best) = crate::filter::closest(c, &all) {
                    msg.push_str(&format!("; did you mean `{best}`?"));
                }
                let channels = log.channels();
                let shown: Vec<&str> = channels.iter().take(40).copied().collect();
                msg.push_str(&format!(" Channels: {}", shown.join(", ")));
                if channels.len() > shown.len() {
                    msg.push_str(&format!(" … ({} in all)", channels.len()));
                }
                msg.push('.');
                return Err(ToolError::new(error::UNKNOWN_CHANNEL, msg));
            }
        }
    }
    let width = args.width.unwrap_or(1000);
    if !(320..=2400).contains(&width) {
        return Err(ToolError::invalid(format!(
            "width must be 320..2400 pixels (got {width})"
        )));
    }
    let height = args.height.unwrap_or(60 + 160 * cols.len() as u32);
    if !(200..=2400).contains(&height) {
        return Err(ToolError::invalid(format!(
            "height must be 200..2400 pixels (got {height})"
        )));
    }

    // x axis: time, or the row number when the log has none.
    let timed = log.time().iter().any(|t| !t.is_nan());
    let xs: Vec<f64> = if timed {
        log.time().to_vec()
    } else {
        (0..log.rows()).map(|r| r as f64).collect()
    };
    let (lo, hi) = xs
        .iter()
        .filter(|v| !v.is_nan())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return Err(ToolError::new(
            error::NOTHING_TO_PLOT,
            format!("{name} has no rows to plot"),
        ));
    }
    for (what, v) in [("start_s", args.start_s), ("end_s", args.end_s)] {
        if v.is_some_and(|v| !v.is_finite()) {
            return Err(ToolError::invalid(format!(
                "{what} must be a finite number of seconds; omit it to start or end with the log"
            )));
        }
    }
    // A window reaching past the log is drawn over the log's span.
    let t0 = args.start_s.map_or(lo, |t| t.max(lo));
    let t1 = args.end_s.map_or(hi, |t| t.min(hi));
    if t1.is_nan() || t0.is_nan() || t1 <= t0 {
        return Err(ToolError::new(
            error::EMPTY_WINDOW,
            format!(
                "the time window {}…{} s is empty; the log spans {}…{} s",
                seconds(args.start_s.unwrap_or(lo)),
                seconds(args.end_s.unwrap_or(hi)),
                format_number(lo, 2),
                format_number(hi, 2)
            ),
        ));
    }
    let rows: Vec<usize> = (0..log.rows())
        .filter(|&r| xs[r] >= t0 && xs[r] <= t1)
        .collect();
    if rows.is_empty() {
        return Err(ToolError::new(
            error::EMPTY_WINDOW,
            format!(
                "no rows between {} and {} s; the log spans {}…{} s",
                seconds(t0),
                seconds(t1),
                format_number(lo, 2),
                format_number(hi, 2)
            ),
        ));
    }

    let mut highlighted = vec![false; log.rows()];
    let mut matched = 0;
    if let Some(f) = args.filter.as_deref().filter(|f| !f.trim().is_empty()) {
        let filter = Filter::compile(f).map_err(error::bad_filter)?;
        filter.check_channels(&all).map_err(|e| {
            ToolError::new(
                error::UNKNOWN_CHANNEL,
                format!("{e}\nChannels of {name}: {}", log.channels().join(", ")),
            )
        })?;
        let bound = filter.bind(&log.columns);
        let (first, last) = (rows[0], rows[rows.len() - 1]);
        bound.scan(first..last + 1, |r| {
            if xs[r] >= t0 && xs[r] <= t1 {
                highlighted[r] = true;
                matched += 1;
            }
        });
    }

    let mut c = Canvas::new(width as usize, height as usize);
    let (left, right, top, bottom) = (74usize, 14usize, 30usize, 34usize);
    let plot_w = width as usize - left - right;
    let panel_gap = 8usize;
    let n = cols.len();
    let avail = height as usize - top - bottom;
    let panel_h = (avail.saturating_sub(panel_gap * (n - 1))) / n;
    if panel_h < 30 {
        return Err(ToolError::invalid(format!(
            "height {height} is too small for {n} panels; use at least {}",
            top + bottom + n * 38
        )));
    }
    let x_of = |t: f64| left as f64 + (t - t0) / (t1 - t0) * (plot_w as f64 - 1.0);

    // A filter of any length compiles ("RPM > 0 and " repeated): the title
    // and the caption quote it clipped (hardening item 11).
    let shown_filter = args.filter.as_deref().map(plugin_kit::text::clip);
    let title = match &shown_filter {
        Some(f) if !f.trim().is_empty() => format!("{name}   highlighted: {f} ({matched} rows)"),
        _ => name.to_string(),
    };
    c.text(left, 10, &title, TEXT, 1);

    // Highlight spans: a matching row covers up to the next row's x.
    let mut shade = vec![false; plot_w];
    for (k, &r) in rows.iter().enumerate() {
        if !highlighted[r] {
            continue;
        }
        let xa = x_of(xs[r]);
        let xb = rows
            .get(k + 1)
            .map_or(xa + 1.0, |&n| x_of(xs[n]).max(xa + 1.0));
        let (a, b) = (xa.floor() as isize, xb.ceil() as isize);
        for x in a.max(left as isize)..b.min((left + plot_w) as isize) {
            shade[x as usize - left] = true;
        }
    }

    let xstep = nice_step(t1 - t0, (plot_w / 110).max(2));
    let mut xticks = Vec::new();
    let mut t = (t0 / xstep).ceil() * xstep;
    while t <= t1 + xstep * 1e-9 {
        xticks.push(t);
        t += xstep;
    }

    let mut caption_ranges = Vec::new();
    for (p, col) in cols.iter().enumerate() {
        let y_top = top + p * (panel_h + panel_gap);
        let y_bot = y_top + panel_h - 1;
        let color = PALETTE[p % PALETTE.len()];
        let (mut vmin, mut vmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for &r in &rows {
            if let Some(v) = col.number(r).filter(|v| v.is_finite()) {
                vmin = vmin.min(v);
                vmax = vmax.max(v);
            }
        }
        for (i, s) in shade.iter().enumerate() {
            if *s {
                c.vline(left + i, y_top, y_bot, HIGHLIGHT);
            }
        }
        for &t in &xticks {
            let x = x_of(t).round() as usize;
            c.vline(x, y_top, y_bot, GRID);
        }
        if vmin > vmax {
            c.rect(left, y_top, left + plot_w - 1, y_bot, AXIS);
            c.text(
                left + 6,
                y_top + 6,
                &format!("{} (no numbers in range)", col.name),
                color,
                1,
            );
            continue;
        }
        caption_ranges.push(format!(
            "{} {}…{}",
            col.name,
            format_number(vmin, col.decimals),
            format_number(vmax, col.decimals)
        ));
        let pad = if vmax > vmin {
            (vmax - vmin) * 0.06
        } else {
            vmin.abs().max(1.0) * 0.5
        };
        let (ylo, yhi) = (vmin - pad, vmax + pad);
        let inner_top = y_top + 14; // room for the channel name
        let y_of = |v: f64| {
            let f = (v - ylo) / (yhi - ylo);
            (y_bot as f64 - f * (y_bot - inner_top) as f64).round() as isize
        };
        let ystep = nice_step(yhi - ylo, (panel_h / 40).max(2));
        let mut v = (ylo / ystep).ceil() * ystep;
        while v <= yhi {
            let y = y_of(v);
            if y >= inner_top as isize && y <= y_bot as isize {
                c.hline(left, left + plot_w - 1, y as usize, GRID);
                let label = tick_label(v, ystep);
                let lx = left.saturating_sub(6 + 8 * label.len());
                c.text(lx, (y as usize).saturating_sub(4), &label, AXIS, 1);
            }
            v += ystep;
        }
        // Per pixel column: min, max, first and last value (an envelope, so
        // a million rows draw as fast as a thousand and spikes stay visible).
        let mut env: Vec<Option<(f64, f64, f64, f64)>> = vec![None; plot_w];
        for &r in &rows {
            let Some(v) = col.number(r).filter(|v| v.is_finite()) else {
                continue;
            };
            let x = (x_of(xs[r]).round() as usize).clamp(left, left + plot_w - 1) - left;
            env[x] = Some(match env[x] {
                None => (v, v, v, v),
                Some((mn, mx, f, _)) => (mn.min(v), mx.max(v), f, v),
            });
        }
        let mut prev: Option<(isize, isize)> = None;
        for (i, e) in env.iter().enumerate() {
            let x = (left + i) as isize;
            match e {
                Some((mn, mx, first, last)) => {
                    if let Some((px, py)) = prev {
                        c.line(px, py, x, y_of(*first), color);
                    }
                    c.line(x, y_of(*mn), x, y_of(*mx), color);
                    prev = Some((x, y_of(*last)));
                }
                None => {
                    // Keep lines across sparse columns (slow logs on wide plots).
                }
            }
        }
        c.rect(left, y_top, left + plot_w - 1, y_bot, AXIS);
        c.fill(
            left + 1,
            y_top + 1,
            left + 10 + 8 * col.name.chars().count(),
            y_top + 11,
            [255, 255, 255],
        );
        c.text(left + 5, y_top + 3, &col.name, color, 1);
    }

    // Time axis.
    let axis_y = top + n * (panel_h + panel_gap) - panel_gap;
    for &t in &xticks {
        let x = x_of(t).round() as usize;
        c.vline(x, axis_y, axis_y + 4, AXIS);
        let label = tick_label(t, xstep);
        c.text(
            x.saturating_sub(4 * label.len()),
            axis_y + 8,
            &label,
            AXIS,
            1,
        );
    }
    let unit = if timed { "time (s)" } else { "row" };
    c.text(left + plot_w - 8 * unit.len(), axis_y + 20, unit, TEXT, 1);

    let png = c.encode().map_err(|e| ToolError::new(error::INTERNAL, e))?;
    let mut caption = format!(
        "{name}: {} rows, {}…{} s{}. Panels: {}.",
        rows.len(),
        format_number(t0, 2),
        format_number(t1, 2),
        log.sample_rate_hz()
            .map_or(String::new(), |h| format!(", {} Hz", fmt_rate(h))),
        caption_ranges.join("; ")
    );
    if let Some(f) = &shown_filter {
        caption.push_str(&format!(
            " Highlighted (red): {matched} rows matching `{f}`."
        ));
    }
    Ok(Plot { png, caption })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Log {
        let mut s = String::from("Time,RPM,Load,Knock,Phase\n");
        for i in 0..500 {
            let t = i as f64 / 50.0;
            s.push_str(&format!(
                "{t:.2},{},{:.1},{},x\n",
                800 + i * 12,
                20.0 + i as f64 * 0.5,
                (i % 40 == 0) as u8
            ));
        }
        crate::reader::parse(s.as_bytes(), "pull.csv").unwrap()
    }

    #[test]
    fn renders_a_png_with_highlights() {
        let log = log();
        assert_eq!(default_channels(&log), vec!["RPM", "Load", "Knock"]);
        let args = PlotArgs {
            filter: Some("Knock > 0".into()),
            ..Default::default()
        };
        let plot = render(&log, "pull.csv", &args).unwrap();
        assert_eq!(&plot.png[1..4], b"PNG");
        assert!(
            plot.caption.contains("13 rows matching"),
            "{}",
            plot.caption
        );
        let err = render(
            &log,
            "pull.csv",
            &PlotArgs {
                channels: Some(vec!["rpm".into()]),
                ..Default::default()
            },
        )
        .err()
        .unwrap();
        assert_eq!(err.code, error::UNKNOWN_CHANNEL);
        assert!(err.message.contains("did you mean `RPM`"), "{err}");
        let err = render(
            &log,
            "pull.csv",
            &PlotArgs {
                start_s: Some(50.0),
                ..Default::default()
            },
        )
        .err()
        .unwrap();
        assert_eq!(err.code, error::EMPTY_WINDOW);
        assert!(err.message.contains("empty"), "{err}");
    }

    #[test]
    fn each_failure_has_its_code() {
        let log = log();
        let code = |args: PlotArgs| render(&log, "pull.csv", &args).unwrap_err().code;
        let filter = |f: &str| PlotArgs {
            filter: Some(f.into()),
            ..Default::default()
        };
        assert_eq!(code(filter("RPM >")), error::BAD_FILTER);
        assert_eq!(code(filter("Knok > 0")), error::UNKNOWN_CHANNEL);
        let many = PlotArgs {
            channels: Some(vec!["RPM".into(); MAX_PANELS + 1]),
            ..Default::default()
        };
        assert_eq!(code(many), error::INVALID_ARGUMENT);
        // Too narrow, too low, and too low for eight panels.
        for (width, height, panels) in [
            (Some(100), None, 1),
            (None, Some(100), 1),
            (None, Some(200), 8),
        ] {
            let args = PlotArgs {
                channels: Some(vec!["RPM".into(); panels]),
                width,
                height,
                ..Default::default()
            };
            assert_eq!(code(args), error::INVALID_ARGUMENT, "{width:?} {height:?}");
        }
        let text = crate::reader::parse(b"Time,Phase\n0,a\n1,b\n", "text.csv").unwrap();
        let e = render(&text, "text.csv", &PlotArgs::default()).unwrap_err();
        assert_eq!(e.code, error::NOTHING_TO_PLOT, "{e}");
        // The filter keeps its caret: the message shows where it went wrong.
        let e = render(&log, "pull.csv", &filter("RPM > > 1")).unwrap_err();
        assert!(
            e.message.contains("position 7") && e.message.contains('^'),
            "{e}"
        );
    }

    /// Hardening item 11: a filter of 100 KB compiles (whitespace is free);
    /// the caption quotes it clipped.
    #[test]
    fn hardening_11_a_long_filter_is_clipped_in_the_caption() {
        let filter = format!("Knock >{}0", " ".repeat(99_992));
        let plot = render(
            &log(),
            "pull.csv",
            &PlotArgs {
                filter: Some(filter),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            plot.caption.len() < 4096
                && plot.caption.contains("13 rows matching")
                && plot.caption.contains("(100000 characters)"),
            "{} bytes: {}",
            plot.caption.len(),
            &plot.caption[..plot.caption.len().min(600)]
        );
    }

    #[test]
    fn windows_past_the_log_are_clamped_and_infinite_ones_refused() {
        let log = log();
        let args = |start_s, end_s| PlotArgs {
            start_s,
            end_s,
            ..Default::default()
        };
        let e = render(&log, "pull.csv", &args(None, Some(f64::INFINITY))).unwrap_err();
        assert_eq!(e.code, error::INVALID_ARGUMENT);
        assert!(e.message.contains("end_s must be a finite number"), "{e}");
        let e = render(&log, "pull.csv", &args(Some(f64::NEG_INFINITY), None)).unwrap_err();
        assert!(e.message.contains("start_s must be a finite number"), "{e}");
        assert!(render(&log, "pull.csv", &args(Some(-1e300), Some(1e300))).is_ok());
        let e = render(&log, "pull.csv", &args(Some(1e300), None)).unwrap_err();
        assert_eq!(e.code, error::EMPTY_WINDOW);
        assert!(e.message.contains("1e300") && e.message.len() < 200, "{e}");
        let e = render(
            &log,
            "pull.csv",
            &PlotArgs {
                channels: Some(vec!["x".repeat(100_000)]),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.message.len() < 600, "{e}");
    }
}
