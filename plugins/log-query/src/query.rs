//! The `list_logs` and `query_logs` tools as plain functions: arguments in,
//! YAML-frontmatter + markdown document (or a [`ToolError`] saying what to
//! do) out.

use crate::column::format_number;
use crate::error::{self, ToolError};
use crate::filter::{self, Filter};
use crate::logs::{Cache, Listing};
use crate::reader::{Log, Need};
use plugin_kit::{Frontmatter, MarkdownTable};
use std::path::Path;
use std::sync::Arc;

/// Table rows returned when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 200;
/// Most table rows one call returns (a bigger answer would swamp an agent's
/// context; page with `offset`).
pub const MAX_LIMIT: u32 = 5000;
const MAX_LISTED_FILES: usize = 100;

/// Progress callback: (done, total, message) → false when cancelled.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64, &str) -> bool;

/// Arguments of `query_logs`.
#[derive(Debug, Clone, Default)]
pub struct QueryArgs {
    /// filtrex expression the rows must match, e.g. "RPM > 3000 && Knock > 0".
    pub filter: String,
    /// Channels shown beyond those the filter names.
    pub channels: Option<Vec<String>>,
    /// One file from `list_logs`; none searches every log.
    pub file: Option<String>,
    /// Target output rate in Hz: keeps every Nth matching row, N = round(log
    /// rate / sample_rate).
    pub sample_rate: Option<f64>,
    /// Most table rows returned, 1..=[`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]).
    pub limit: Option<u32>,
    /// Matching rows to skip first, for paging.
    pub offset: Option<u32>,
}

/// Sample rates print with one decimal (two below 10 Hz), trailing zeros cut.
pub fn fmt_rate(hz: f64) -> String {
    let s = if hz >= 10.0 {
        format!("{hz:.1}")
    } else {
        format!("{hz:.2}")
    };
    trim_zeros(s)
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Seconds with at most two decimals, trailing zeros cut ("12.5", "3").
pub(crate) fn fmt_duration(s: f64) -> String {
    trim_zeros(format!("{s:.2}"))
}

/// `list_logs`.
pub fn list_logs(dir: &Path, cache: &mut Cache, progress: Progress) -> Result<String, ToolError> {
    let listing = Listing::read(dir, cache, Some(&Need::named::<&str>([])), progress)?;
    render_listing(dir, &listing)
}

fn render_listing(dir: &Path, listing: &Listing) -> Result<String, ToolError> {
    let mut table = MarkdownTable::new([
        "#",
        "Filename",
        "Date",
        "Duration (s)",
        "Rows",
        "Sample Rate (Hz)",
        "Channels",
        "Logger",
        "Date From",
    ]);
    let mut problems = MarkdownTable::new(["#", "Filename", "Problem"]);
    let (mut shown, mut bad) = (0, 0);
    for (i, item) in listing.files.iter().enumerate() {
        let date = item.date.map_or(String::new(), |d| d.0.display());
        let source = item.date.map_or("", |d| d.1.name()).to_string();
        match &item.log {
            Some(Ok(log)) if shown < MAX_LISTED_FILES => {
                shown += 1;
                table.row([
                    (i + 1).to_string(),
                    item.file.name.clone(),
                    date,
                    log.duration_s().map_or(String::new(), fmt_duration),
                    log.rows().to_string(),
                    log.sample_rate_hz().map_or(String::new(), fmt_rate),
                    log.channels().join(", "),
                    log.format.name().to_string(),
                    source,
                ]);
            }
            Some(Err(e)) => {
                bad += 1;
                if bad <= MAX_LISTED_FILES {
                    problems.row([
                        (i + 1).to_string(),
                        item.file.name.clone(),
                        e.message.clone(),
                    ]);
                }
            }
            _ => {}
        }
    }
    let readable = listing
        .files
        .iter()
        .filter(|f| matches!(f.log, Some(Ok(_))))
        .count();
    let mut body = if listing.files.is_empty() {
        format!(
            "No log files in this directory or its subfolders ({} {} searched). Put datalogs \
             there, in subfolders if you like: CSV (EvoScan, RomRaider, BtSsm, OpenPort, COBB \
             Accessport, ME7Logger, VCDS, LogWorks, Zeitronix, Haltech NSP, BlueDriver, \
             ECUMaster, or any CSV with a time column) or binary (MegaLogViewer .mlg, Link \
             .llg/.llg5, ECUMaster .emublog, Emerald .lg1 with its .lg2).\n",
            listing.folders,
            if listing.folders == 1 {
                "folder"
            } else {
                "folders"
            }
        )
    } else if shown > 0 {
        table.render()
    } else {
        String::new()
    };
    if readable > MAX_LISTED_FILES {
        body.push_str(&format!(
            "\nShowing the {MAX_LISTED_FILES} most recent of {readable} readable logs; query older \
             ones by filename.\n"
        ));
    }
    if bad > 0 {
        body.push_str(&format!(
            "\nProblems: {bad} {} (not listed above; query_logs skips them):\n\n{}",
            if bad == 1 {
                "file is not read as a log"
            } else {
                "files are not read as logs"
            },
            problems.render()
        ));
        if bad > MAX_LISTED_FILES {
            body.push_str(&format!("… and {} more.\n", bad - MAX_LISTED_FILES));
        }
    }
    if listing.unread > 0 {
        body.push_str(&format!(
            "\n{} of {} files are not read yet: this call's time for reading logs ran out. Call \
             list_logs again to read more (what is read is kept), or query a file by name.\n",
            listing.unread,
            listing.files.len()
        ));
    }
    let notes = log_notes(listing);
    if !notes.is_empty() {
        body.push_str(&format!("\nNotes on how logs were read:\n\n{notes}"));
    }
    if !listing.scan_notes.is_empty() {
        body.push_str(&format!(
            "\nNot every subfolder was searched:\n\n{}",
            listing
                .scan_notes
                .iter()
                .map(|n| format!("- {n}\n"))
                .collect::<String>()
        ));
    }
    let mut fm = Frontmatter::new()
        .text("logs_dir", dir.display().to_string())
        .raw("total_files", listing.files.len());
    if bad > 0 {
        fm = fm.raw("problems", bad);
    }
    if listing.unread > 0 {
        fm = fm.raw("not_read_yet", listing.unread);
    }
    if !listing.scan_notes.is_empty() {
        fm = fm.raw("search_incomplete", true);
    }
    Ok(fm.with_body(&body))
}

/// Notes listed per log at most.
const MAX_NOTED_FILES: usize = 20;

/// `- file: what wrote it; how it was read` for the listed logs that have
/// something to say (the first [`MAX_NOTED_FILES`]).
fn log_notes(listing: &Listing) -> String {
    let mut out = String::new();
    let mut noted = 0;
    for item in listing.files.iter().take(MAX_LISTED_FILES) {
        let Some(Ok(log)) = &item.log else { continue };
        let mut parts: Vec<String> = Vec::new();
        if let Some(source) = &log.source {
            parts.push(format!("written by {source}"));
        }
        parts.extend(log.notes.iter().map(|n| plugin_kit::text::head(n, 600)));
        if !log.markers.is_empty() {
            parts.push(format!(
                "{} markers (the Marker channel)",
                log.markers.len()
            ));
        }
        if parts.is_empty() {
            continue;
        }
        noted += 1;
        if noted > MAX_NOTED_FILES {
            out.push_str("- … (the other logs' notes are in their log:// summaries)\n");
            break;
        }
        out.push_str(&format!("- {}: {}\n", item.file.name, parts.join("; ")));
    }
    out
}

struct FileResult {
    index: usize,
    name: String,
    log: Arc<Log>,
    rows_matched: usize,
    /// The log's sample rate, asked once: it walks every time value.
    rate: Option<f64>,
    stride: usize,
    output_rows: usize,
    error_rows: usize,
    first_error: Option<(usize, String)>,
    missing: Vec<String>,
}

/// `query_logs`.
pub fn query_logs(
    dir: &Path,
    cache: &mut Cache,
    args: &QueryArgs,
    progress: Progress,
) -> Result<String, ToolError> {
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ToolError::invalid(format!(
            "limit must be between 1 and {MAX_LIMIT} (got {limit})"
        )));
    }
    let offset = args.offset.unwrap_or(0) as usize;
    if let Some(sr) = args.sample_rate
        && !(sr.is_finite() && sr > 0.0)
    {
        return Err(ToolError::invalid(format!(
            "sample_rate must be a positive number of Hz (got {sr}); omit it for full resolution"
        )));
    }
    let filter = Filter::compile(&args.filter).map_err(error::bad_filter)?;
    // Only the channels the query names are converted from the CSV.
    let need = Need::named(
        filter
            .channel_names()
            .chain(args.channels.iter().flatten().map(String::as_str)),
    );

    let mut listing = Listing::read(dir, cache, args.file.is_none().then_some(&need), progress)?;
    let selected: Vec<usize> = match &args.file {
        Some(f) => vec![listing.find(f)?],
        None => (0..listing.files.len()).collect(),
    };
    if selected.is_empty() {
        return Err(ToolError::new(
            error::NO_LOGS,
            format!(
                "the logs directory {} holds no .csv files or other logs, in it or its \
                 subfolders; nothing to query",
                dir.display()
            ),
        ));
    }
    let mut logs = Vec::new();
    let mut unreadable = Vec::new();
    let mut unread = 0;
    for &i in &selected {
        if args.file.is_none() && listing.files[i].log.is_none() {
            // Left for a later call by the time budget.
            unread += 1;
            continue;
        }
        match listing.log(i, cache, &need) {
            Ok(log) => logs.push((i, log)),
            Err(e) if args.file.is_some() => return Err(e),
            Err(e) => unreadable.push(e),
        }
    }
    if logs.is_empty() {
        if unread > 0 {
            return Err(ToolError::new(
                error::NOT_READ_YET,
                format!(
                    "none of the {unread} logs was read within this call's time budget; call \
                     query_logs again (what is read is kept), or pass file"
                ),
            ));
        }
        return Err(ToolError::new(
            error::UNREADABLE_LOG,
            format!(
                "no readable log: {}",
                unreadable
                    .iter()
                    .take(10)
                    .map(|e| e.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ));
    }

    // Names must exist in at least one searched log.
    let mut available: Vec<&str> = Vec::new();
    for (_, log) in &logs {
        for c in &log.columns {
            if !available.contains(&c.name.as_str()) {
                available.push(&c.name);
            }
        }
    }
    filter.check_channels(&available).map_err(|e| {
        let scope = match &args.file {
            // The file as found, not `file` as given: that matched by its
            // base name or `#n`, and what was written around it may be of
            // any length (hardening item 11).
            Some(_) => format!(" (in {})", listing.files[selected[0]].file.name),
            None => " (in any log)".into(),
        };
        ToolError::new(
            error::UNKNOWN_CHANNEL,
            format!("{e}{scope}\nCall list_logs to see each file's channels."),
        )
    })?;
    let extra: Vec<String> = args.channels.clone().unwrap_or_default();
    for c in &extra {
        if !available.contains(&c.as_str()) {
            let mut msg = format!(
                "unknown channel `{}` in channels",
                plugin_kit::text::clip(c)
            );
            if let Some(best) = filter::closest(c, &available) {
                msg.push_str(&format!("; did you mean `{best}`?"));
            }
            msg.push_str(". Channel names are case-sensitive, as list_logs shows them.");
            return Err(ToolError::new(error::UNKNOWN_CHANNEL, msg));
        }
    }

    // Output columns: the filter's channels, then the extra ones, without
    // the time axis (it is always the first column).
    let is_time = |name: &str| {
        logs.iter().any(|(_, l)| {
            // An absolute clock is a channel too (time counts from the start).
            l.time_origin == 0.0 && l.time_column.is_some_and(|t| l.columns[t].name == name)
        })
    };
    let mut channels: Vec<String> = Vec::new();
    for n in filter.channel_names().map(str::to_string).chain(extra) {
        if !channels.contains(&n) && available.contains(&n.as_str()) && !is_time(&n) {
            channels.push(n);
        }
    }

    let mut results: Vec<FileResult> = Vec::new();
    let mut out_rows: Vec<(usize, usize)> = Vec::new(); // (result index, row)
    let mut out_seen = 0usize; // output rows (after downsampling) before this file
    let total = logs.len() as u64;
    for (k, (index, log)) in logs.iter().enumerate() {
        let name = listing.files[*index].file.name.clone();
        if !progress(k as u64, total, &format!("scanning {name}")) {
            return Err(error::cancelled());
        }
        let rate = log.sample_rate_hz();
        let stride = match (args.sample_rate, rate) {
            (Some(want), Some(have)) => ((have / want).round() as usize).max(1),
            _ => 1,
        };
        let bound = filter.bind(&log.columns);
        let mut matched = 0usize;
        let result_index = results.len();
        let stats = bound.scan(0..log.rows(), |row| {
            if matched.is_multiple_of(stride) {
                let j = out_seen + matched / stride;
                if j >= offset && j < offset + limit as usize {
                    out_rows.push((result_index, row));
                }
            }
            matched += 1;
        });
        let output_rows = matched.div_ceil(stride);
        out_seen += output_rows;
        results.push(FileResult {
            index: *index,
            name,
            log: log.clone(),
            rows_matched: matched,
            rate,
            stride,
            output_rows,
            error_rows: stats.error_rows,
            first_error: stats.first_error,
            missing: filter
                .missing_in(&log.columns)
                .into_iter()
                .map(String::from)
                .collect(),
        });
    }

    let rows_matched: usize = results.iter().map(|r| r.rows_matched).sum();
    let multi = results.iter().filter(|r| r.output_rows > 0).count() > 1;
    let mut header = vec!["Time (s)".to_string()];
    header.extend(channels.iter().cloned());
    if multi {
        header.push("File".into());
    }
    let mut table = MarkdownTable::new(header);
    for &(ri, row) in &out_rows {
        let r = &results[ri];
        let log = &r.log;
        let t = log.time()[row];
        let mut cells = vec![if t.is_nan() {
            String::new()
        } else {
            format_number(t, log.time_decimals)
        }];
        for c in &channels {
            cells.push(log.column(c).map_or(String::new(), |col| col.display(row)));
        }
        if multi {
            cells.push(r.name.clone());
        }
        table.row(cells);
    }

    let rates = |f: &dyn Fn(&FileResult) -> Option<f64>| -> String {
        let vals: Vec<Option<f64>> = results.iter().map(f).collect();
        let first = vals[0];
        let same = vals.iter().all(|v| match (v, first) {
            (Some(a), Some(b)) => (a - b).abs() <= 0.01 * b.abs(),
            (None, None) => true,
            _ => false,
        });
        let show = |v: &Option<f64>| v.map_or("null".to_string(), fmt_rate);
        if same {
            show(&first)
        } else {
            format!("[{}]", vals.iter().map(show).collect::<Vec<_>>().join(", "))
        }
    };
    let actual = rates(&|r| r.rate);
    let output = rates(&|r| r.rate.map(|h| h / r.stride as f64));
    let mut all_channels = vec!["Time".to_string()];
    all_channels.extend(channels.iter().cloned());
    let error_rows: usize = results.iter().map(|r| r.error_rows).sum();
    let total_out: usize = results.iter().map(|r| r.output_rows).sum();
    let mut fm = Frontmatter::new()
        .raw("files_searched", results.len())
        .raw("rows_matched", rows_matched)
        .raw("actual_sample_rate_hz", actual)
        .raw("output_sample_rate_hz", output)
        .list("channels", &all_channels)
        .raw("rows_returned", out_rows.len());
    if offset > 0 {
        fm = fm.raw("offset", offset);
    }
    if error_rows > 0 {
        fm = fm.raw("rows_with_errors", error_rows);
    }

    let mut body = String::new();
    if !out_rows.is_empty() {
        body.push_str(&table.render());
    }
    let mut notes: Vec<String> = Vec::new();
    if total_out > offset + out_rows.len() {
        let downsampled = if total_out < rows_matched {
            format!(" ({rows_matched} matched, thinned by sample_rate)")
        } else {
            String::new()
        };
        notes.push(format!(
            "Showing output rows {}–{} of {total_out}{downsampled}. Next page: offset={}. \
             To see less: tighten the filter, pass file, or set sample_rate (e.g. {}).",
            offset + 1,
            offset + out_rows.len(),
            offset + out_rows.len(),
            suggest_rate(&results, total_out, limit),
        ));
    } else if out_rows.is_empty() && offset > 0 && total_out > 0 {
        notes.push(format!(
            "offset={offset} is past the last of {total_out} output rows."
        ));
    }
    if rows_matched == 0 {
        notes.push(no_match_note(&filter, &results));
    }
    if error_rows > 0 {
        let (r, (row, msg)) = results
            .iter()
            .find_map(|r| r.first_error.as_ref().map(|e| (r, e)))
            .map(|(r, e)| (r, e.clone()))
            .unwrap_or((&results[0], (0, String::new())));
        notes.push(format!(
            "{error_rows} rows could not be evaluated and do not match (first: {} row {}: {msg}). \
             Empty cells are missing values: guard with exists(Channel) or empty(Channel).",
            r.name,
            row + 1
        ));
    }
    for r in results.iter().filter(|r| !r.missing.is_empty()) {
        notes.push(format!(
            "{} has no channel {}: conditions on it cannot match there.",
            r.name,
            r.missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // How the logs that answered were read (a time axis rebuilt, raw ids,
    // values held), where it matters to the rows shown.
    for r in results
        .iter()
        .filter(|r| !r.log.notes.is_empty() && (r.output_rows > 0 || results.len() == 1))
        .take(5)
    {
        notes.push(format!("{}: {}", r.name, r.log.notes.join("; ")));
    }
    if !unreadable.is_empty() {
        let shown: Vec<&str> = unreadable
            .iter()
            .take(10)
            .map(|e| e.message.as_str())
            .collect();
        notes.push(format!(
            "Skipped {} unreadable file{}: {}{}",
            unreadable.len(),
            if unreadable.len() == 1 { "" } else { "s" },
            shown.join("; "),
            if unreadable.len() > shown.len() {
                "; …"
            } else {
                ""
            }
        ));
    }
    if unread > 0 {
        notes.push(format!(
            "{unread} files were not searched: this call's time for reading logs ran out. Call \
             again to search them (what is read is kept), or pass file."
        ));
        fm = fm.raw("files_not_searched", unread);
    }
    if results.len() > 1 {
        let mut t = MarkdownTable::new(["#", "File", "Rows", "Matched", "Sample Rate (Hz)"]);
        // Files with matches first, so a long list still shows where they are.
        let mut order: Vec<&FileResult> = results.iter().collect();
        if order.len() > MAX_LISTED_FILES {
            order.sort_by_key(|r| (r.rows_matched == 0, r.index));
        }
        for r in order.iter().take(MAX_LISTED_FILES) {
            t.row([
                (r.index + 1).to_string(),
                r.name.clone(),
                r.log.rows().to_string(),
                r.rows_matched.to_string(),
                r.rate.map_or(String::new(), fmt_rate),
            ]);
        }
        let more = results.len().saturating_sub(MAX_LISTED_FILES);
        notes.push(format!(
            "Per file:\n\n{}{}",
            t.render(),
            if more > 0 {
                format!("… and {more} more files not shown.\n")
            } else {
                String::new()
            }
        ));
    }
    for n in notes {
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&n);
        body.push('\n');
    }
    Ok(fm.with_body(&body))
}

fn suggest_rate(results: &[FileResult], total_out: usize, limit: u32) -> String {
    let rate = results
        .iter()
        .filter_map(|r| r.rate.map(|h| h / r.stride as f64))
        .fold(0.0f64, f64::max);
    if rate <= 0.0 {
        return "sample_rate: 1".into();
    }
    let want = rate * limit as f64 / total_out.max(1) as f64;
    format!("sample_rate: {}", fmt_rate(want.max(0.01)))
}

/// Why nothing matched: the ranges of the numeric channels the filter uses.
fn no_match_note(filter: &Filter, results: &[FileResult]) -> String {
    let mut parts = Vec::new();
    for r in results.iter().take(3) {
        let ranges: Vec<String> = filter
            .channel_names()
            .filter_map(|n| {
                let col = r.log.column(n)?;
                let (lo, hi) = col
                    .values
                    .iter()
                    .filter(|v| !v.is_nan())
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                        (lo.min(v), hi.max(v))
                    });
                (lo <= hi).then(|| {
                    format!(
                        "{n} {}…{}",
                        format_number(lo, col.decimals),
                        format_number(hi, col.decimals)
                    )
                })
            })
            .collect();
        if !ranges.is_empty() {
            parts.push(format!("{}: {}", r.name, ranges.join(", ")));
        }
    }
    let mut s = "No rows matched.".to_string();
    if !parts.is_empty() {
        s.push_str(&format!(" Ranges in the data — {}.", parts.join("; ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_logs() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "logq-query-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = String::from("Time,RPM,Knock,AFR\n");
        for i in 0..1000 {
            let afr = if i % 100 == 0 {
                String::new()
            } else {
                format!("{:.1}", 12.0 + (i % 3) as f64)
            };
            a.push_str(&format!(
                "{:.2},{},{},{}\n",
                i as f64 / 100.0,
                800 + i * 6,
                (i / 50) % 3,
                afr
            ));
        }
        std::fs::write(dir.join("log-2024-06-01T10-15-00-000Z.csv"), a).unwrap();
        let mut b = String::from("Time (msec),Engine Speed (rpm),RPM\n");
        for i in 0..100 {
            b.push_str(&format!("{},{},{}\n", i * 40, 900 + i, 900 + i));
        }
        std::fs::write(dir.join("romraiderlog_20240601_102500.csv"), b).unwrap();
        dir
    }

    fn no_progress() -> impl FnMut(u64, u64, &str) -> bool {
        |_, _, _| true
    }

    #[test]
    fn files_that_are_not_logs_are_problems_not_channels() {
        let dir = dir_with_logs();
        std::fs::write(
            dir.join("notes.csv"),
            "Dear tuner,\nthese are notes, not a log\nbye,\nme\n",
        )
        .unwrap();
        std::fs::write(dir.join("empty.csv"), "").unwrap();
        let mut cache = Cache::default();
        let out = list_logs(&dir, &mut cache, &mut no_progress()).unwrap();
        assert!(out.contains("problems: 2\n"), "{out}");
        let (table, problems) = out
            .split_once("Problems: 2 files are not read as logs")
            .unwrap();
        assert!(
            !table.contains("notes.csv") && !table.contains("Dear"),
            "{out}"
        );
        assert!(problems.contains("| notes.csv | notes.csv is not a log log-query understands: found no rows of numbers"), "{out}");
        assert!(
            problems.contains("empty.csv is not a log log-query understands: the file is empty"),
            "{out}"
        );
        assert!(table.contains("| romraider | file name |"), "{out}");
        // Querying it names the problem; querying all logs skips it.
        let err = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "RPM > 0".into(),
                file: Some("notes.csv".into()),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap_err();
        assert_eq!(err.code, error::UNREADABLE_LOG);
        assert!(err.message.contains("found no rows of numbers"), "{err}");
        let out = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "RPM > 0".into(),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap();
        assert!(out.contains("Skipped 2 unreadable files"), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_time_budget_bounds_each_call_and_progress_is_kept() {
        let dir = std::env::temp_dir().join(format!("logq-many-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for k in 0..300 {
            std::fs::write(
                dir.join(format!("l{k:04}.csv")),
                format!("Time,RPM\n0,{k}\n1,{}\n", k + 1),
            )
            .unwrap();
        }
        let mut cache = Cache::default();
        let need = Need::named::<&str>([]);
        // No time at all: nothing is read, and the listing says so.
        let listing = Listing::read_within(
            &dir,
            &mut cache,
            Some(&need),
            &mut no_progress(),
            std::time::Duration::ZERO,
        )
        .unwrap();
        assert_eq!((listing.unread, cache.len()), (300, 0));
        let out = render_listing(&dir, &listing).unwrap();
        assert!(
            out.contains("not_read_yet: 300") && out.contains("Call list_logs again"),
            "{out}"
        );
        // Each call reads some; later calls reuse them and read the rest.
        let mut calls = 0;
        loop {
            calls += 1;
            let mut reads = 0;
            let listing = Listing::read_within(
                &dir,
                &mut cache,
                Some(&need),
                &mut |_, _, _| {
                    reads += 1;
                    reads <= 50
                },
                std::time::Duration::from_secs(60),
            );
            match listing {
                Ok(l) => {
                    assert_eq!(l.unread, 0);
                    break;
                }
                Err(e) => assert_eq!(e, error::cancelled()),
            }
            assert!(calls < 20);
        }
        assert_eq!(cache.len(), 300);
        assert!(calls >= 6, "{calls}");
        let out = list_logs(&dir, &mut cache, &mut no_progress()).unwrap();
        assert!(
            out.contains("Showing the 100 most recent of 300 readable logs"),
            "{out}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lists_newest_first() {
        let dir = dir_with_logs();
        let mut cache = Cache::default();
        let out = list_logs(&dir, &mut cache, &mut no_progress()).unwrap();
        assert!(
            out.starts_with(&format!(
                "---\nlogs_dir: {}\ntotal_files: 2\n---\n",
                dir.display()
            )),
            "{out}"
        );
        let rr = out.find("romraiderlog").unwrap();
        let plain = out.find("log-2024").unwrap();
        assert!(rr < plain, "{out}");
        assert!(out.contains("| 2024-06-01 10:15 UTC |"), "{out}");
        assert!(out.contains("| RPM, Knock, AFR "), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn queries_with_limits_strides_and_errors() {
        let dir = dir_with_logs();
        let mut cache = Cache::default();
        let args = QueryArgs {
            filter: "RPM > 3000 && Knock > 0".into(),
            channels: Some(vec!["AFR".into()]),
            file: Some("log-2024-06-01T10-15-00-000Z.csv".into()),
            sample_rate: Some(10.0),
            limit: Some(5),
            offset: None,
        };
        let out = query_logs(&dir, &mut cache, &args, &mut no_progress()).unwrap();
        assert!(out.contains("files_searched: 1\nrows_matched: 433\nactual_sample_rate_hz: 100\noutput_sample_rate_hz: 10\nchannels: [Time, RPM, Knock, AFR]\nrows_returned: 5\n"), "{out}");
        assert!(out.contains("| Time (s) | RPM  | Knock | AFR  |"), "{out}");
        assert!(out.contains("Next page: offset=5"), "{out}");

        let err = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "rpm > 1".into(),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap_err();
        assert_eq!(err.code, error::UNKNOWN_CHANNEL);
        assert!(err.message.contains("did you mean `RPM`"), "{err}");
        let err = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "RPM > 1".into(),
                file: Some("nope.csv".into()),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap_err();
        assert_eq!(err.code, error::UNKNOWN_FILE);
        assert!(err.message.contains("no log file named"), "{err}");

        // All files: a channel only one log has, and rows with empty cells.
        let out = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "AFR > 12.5 or RPM < 905".into(),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap();
        assert!(out.contains("files_searched: 2\n"), "{out}");
        assert!(out.contains("rows_with_errors: "), "{out}");
        assert!(
            out.contains("romraiderlog_20240601_102500.csv has no channel `AFR`"),
            "{out}"
        );
        assert!(out.contains("| File"), "{out}");
        let out = query_logs(
            &dir,
            &mut cache,
            &QueryArgs {
                filter: "RPM > 100000".into(),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap();
        assert!(out.contains("No rows matched. Ranges in the data"), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    #[test]
    fn each_failure_has_its_code_and_keeps_its_text() {
        let dir = dir_with_logs();
        std::fs::write(dir.join("notes.csv"), "Dear tuner,\nno log\n").unwrap();
        let mut cache = Cache::default();
        let mut fail = |dir: &Path, args: QueryArgs| {
            query_logs(dir, &mut cache, &args, &mut no_progress()).unwrap_err()
        };
        let q = |filter: &str| QueryArgs {
            filter: filter.into(),
            ..Default::default()
        };
        let e = fail(
            &dir,
            QueryArgs {
                limit: Some(0),
                ..q("RPM > 0")
            },
        );
        assert_eq!(
            e.to_string(),
            format!("INVALID_ARGUMENT: limit must be between 1 and {MAX_LIMIT} (got 0)")
        );
        let e = fail(
            &dir,
            QueryArgs {
                sample_rate: Some(-1.0),
                ..q("RPM > 0")
            },
        );
        assert_eq!(e.code, error::INVALID_ARGUMENT, "{e}");
        // A syntax error keeps its position and caret.
        let e = fail(&dir, q("RPM > > 1"));
        assert_eq!(e.code, error::BAD_FILTER, "{e}");
        assert_eq!(
            e.message,
            Filter::compile("RPM > > 1").err().unwrap().to_string()
        );
        assert!(
            e.message.contains("position 7") && e.message.contains('^'),
            "{e}"
        );
        let e = fail(&dir, q("Note ~= \"(?:a{1000}){1000}\""));
        assert_eq!(e.code, error::BAD_FILTER, "{e}");
        let e = fail(&dir, q("Knok > 0"));
        assert_eq!(e.code, error::UNKNOWN_CHANNEL, "{e}");
        assert!(
            e.message.contains("position 1") && e.message.ends_with("each file's channels."),
            "{e}"
        );
        let e = fail(
            &dir,
            QueryArgs {
                channels: Some(vec!["Timng".into()]),
                ..q("RPM > 0")
            },
        );
        assert_eq!(e.code, error::UNKNOWN_CHANNEL, "{e}");
        let e = fail(
            &dir,
            QueryArgs {
                file: Some("#9".into()),
                ..q("RPM > 0")
            },
        );
        assert_eq!(e.code, error::UNKNOWN_FILE, "{e}");
        let e = fail(&dir.join("missing"), q("RPM > 0"));
        assert_eq!(e.code, error::LOGS_DIR_UNREADABLE, "{e}");
        assert!(
            e.message.starts_with("cannot read the logs directory"),
            "{e}"
        );

        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert_eq!(fail(&empty, q("RPM > 0")).code, error::NO_LOGS);
        std::fs::write(empty.join("a.csv"), "").unwrap();
        let e = fail(&empty, q("RPM > 0"));
        assert_eq!(e.code, error::UNREADABLE_LOG, "{e}");
        assert!(
            e.message.starts_with("no readable log: a.csv is not a log"),
            "{e}"
        );

        let e = query_logs(
            &dir,
            &mut Cache::default(),
            &q("RPM > 0"),
            &mut |_, _, _| false,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "CANCELLED: cancelled by the client");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Hardening item 11: `file` matches by its base name, so 100 KB of
    /// directories before it still find the log; an error about the filter
    /// names the log found, not the argument whole.
    #[test]
    fn hardening_11_a_long_file_argument_is_not_echoed_whole() {
        let dir = std::env::temp_dir().join(format!("logq-echo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pull.csv"), "Time,RPM\n0,900\n1,950\n").unwrap();
        let file = format!("{}/pull.csv", "d".repeat(100_000));
        let e = query_logs(
            &dir,
            &mut Cache::default(),
            &QueryArgs {
                filter: "Knok > 0".into(),
                file: Some(file),
                ..Default::default()
            },
            &mut no_progress(),
        )
        .unwrap_err();
        assert_eq!(e.code, error::UNKNOWN_CHANNEL, "{e}");
        assert!(
            e.message.len() < 4096 && e.message.contains("(in pull.csv)"),
            "{} bytes: {}",
            e.message.len(),
            &e.message[..e.message.len().min(600)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The cells of the listing's row for `file`.
    fn row(out: &str, file: &str) -> Vec<String> {
        let line = out
            .lines()
            .find(|l| l.split('|').nth(2).is_some_and(|c| c.trim() == file))
            .unwrap_or_else(|| panic!("no row for {file} in\n{out}"));
        line.split('|')
            .map(str::trim)
            .skip(1)
            .take(9)
            .map(String::from)
            .collect()
    }

    /// A MegaLogViewer v1 file: fields `Time` (F32, s) and `RPM` (U16),
    /// one record per (time, rpm), a marker before the second record.
    fn mlg(records: &[(f32, u16)]) -> Vec<u8> {
        let mut out = b"MLVLG\0".to_vec();
        out.extend(1i16.to_be_bytes());
        out.extend(1_700_000_000u32.to_be_bytes());
        out.extend(0u16.to_be_bytes()); // no info text
        out.extend((22u32 + 2 * 55).to_be_bytes());
        out.extend(6u16.to_be_bytes());
        out.extend(2u16.to_be_bytes());
        for (code, name, unit) in [(7u8, "Time", "s"), (2, "RPM", "rpm")] {
            let mut d = vec![0u8; 55];
            d[0] = code;
            d[1..1 + name.len()].copy_from_slice(name.as_bytes());
            d[35..35 + unit.len()].copy_from_slice(unit.as_bytes());
            d[46..50].copy_from_slice(&1.0f32.to_be_bytes());
            out.extend(d);
        }
        for (k, (t, rpm)) in records.iter().enumerate() {
            if k == 1 {
                let mut m = vec![1u8, 0, 0, 0];
                m.extend(b"pull");
                m.resize(54, 0);
                out.extend(m);
            }
            let mut r = t.to_be_bytes().to_vec();
            r.extend(rpm.to_be_bytes());
            out.extend([0, k as u8, 0, 0]);
            out.extend(&r);
            out.push(r.iter().fold(0u8, |a, &b| a.wrapping_add(b)));
        }
        out
    }

    /// Issue 38 items 1 and 2: logs kept in subfolders, and binary logs,
    /// are listed (path from the logs directory, logger named) and queried
    /// by that path; an empty tree says it searched the subfolders.
    #[test]
    fn subfolders_and_binary_logs_list_and_query() {
        let dir = std::env::temp_dir().join(format!("logq-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("car1/2025-07-18")).unwrap();
        std::fs::create_dir_all(dir.join("car2")).unwrap();
        let mut cache = Cache::default();
        let out = list_logs(&dir, &mut cache, &mut no_progress()).unwrap();
        assert!(
            out.contains("No log files in this directory or its subfolders (4 folders searched)"),
            "{out}"
        );
        std::fs::write(
            dir.join("car1/2025-07-18/pull.csv"),
            "Time,RPM\n0,900\n0.5,3100\n1,4200\n",
        )
        .unwrap();
        let records: Vec<(f32, u16)> = (0..20).map(|k| (k as f32 * 0.1, 1000 + k * 200)).collect();
        std::fs::write(dir.join("car2/speeduino.mlg"), mlg(&records)).unwrap();
        let out = list_logs(&dir, &mut cache, &mut no_progress()).unwrap();
        assert!(!out.contains("No log files"), "{out}");
        assert!(out.contains("total_files: 2\n"), "{out}");
        assert_eq!(
            row(&out, "car2/speeduino.mlg")[2..],
            [
                "2023-11-14 22:13 UTC",
                "1.9",
                "20",
                "10",
                "RPM, Marker",
                "mlg",
                "log"
            ],
            "{out}"
        );
        // A folder per day dates what it holds.
        assert_eq!(
            row(&out, "car1/2025-07-18/pull.csv")[2..],
            ["2025-07-18", "1", "3", "2", "RPM", "csv", "file name"],
            "{out}"
        );
        assert!(
            out.contains("- car2/speeduino.mlg: written by MLVLG v1; 1 markers"),
            "{out}"
        );
        let q = |filter: &str, file: &str| {
            query_logs(
                &dir,
                &mut Cache::default(),
                &QueryArgs {
                    filter: filter.into(),
                    file: Some(file.into()),
                    ..Default::default()
                },
                &mut no_progress(),
            )
        };
        let out = q("RPM > 3000", "car2/speeduino.mlg").unwrap();
        assert!(out.contains("rows_matched: 9\n"), "{out}");
        assert!(out.contains("actual_sample_rate_hz: 10\n"), "{out}");
        let out = q("Marker == \"pull\"", "speeduino.mlg").unwrap();
        assert!(
            out.contains("rows_matched: 1\n") && out.contains("| 0.10 "),
            "{out}"
        );
        let out = q("RPM > 3000", "car1/2025-07-18/pull.csv").unwrap();
        assert!(out.contains("rows_matched: 2\n"), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 38 item 4: the listing says how an Excel `mm:ss.0` time axis
    /// was read, beside its duration and rate.
    #[test]
    fn a_rebuilt_time_axis_is_noted_in_the_listing() {
        let dir = std::env::temp_dir().join(format!("logq-minsec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("romraiderlog_20241016_113910.csv"),
            "Time,Engine Speed (rpm)\n15:46.0,800\n15:46.1,810\n15:46.2,820\n15:46.3,830\n",
        )
        .unwrap();
        let out = list_logs(&dir, &mut Cache::default(), &mut no_progress()).unwrap();
        assert_eq!(
            row(&out, "romraiderlog_20241016_113910.csv")[3..8],
            ["0.3", "4", "10", "Engine Speed (rpm)", "romraider"],
            "{out}"
        );
        assert!(out.contains("holds minutes:seconds (`mm:ss.0`"), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
