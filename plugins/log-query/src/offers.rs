//! What MCP clients get besides tools (Contract 6): one log's summary as a
//! resource (`log://{file}`), a prompt that walks through investigating a
//! log with the real tools, and completion of file and channel names.

use crate::error::{self, ToolError};
use crate::logs::{Cache, Listing};
use crate::query::{Progress, fmt_duration, fmt_rate};
use crate::reader::{Log, Need};
use plugin_kit::Frontmatter;
use plugin_kit::suggest::completions;
use plugin_kit::text::clip;
use std::path::Path;
use std::sync::Arc;

/// Channels a prompt names, at most (the resource lists them all).
const PROMPT_CHANNELS: usize = 40;
/// Logs read for channel names when completing, at most: the newest, so a
/// directory of thousands of logs costs a few reads, not all of them.
const LOGS_FOR_CHANNELS: usize = 5;

/// A log found by name, with what list_logs would say of it.
struct Found {
    index: usize,
    name: String,
    log: Arc<Log>,
    date: Option<String>,
    date_from: Option<&'static str>,
}

/// Finds `file` (as query_logs does: exact, case-insensitive, or `#n`) and
/// reads its header and time column.
fn find(dir: &Path, cache: &mut Cache, file: &str, progress: Progress) -> Result<Found, ToolError> {
    let mut listing = Listing::read(dir, cache, None, progress)?;
    let i = listing.find(file)?;
    let log = listing.log(i, cache, &Need::named::<&str>([]))?;
    // The log's own date is known only now that it is read.
    let item = &listing.files[i];
    let date = crate::logs::log_date(&item.file, Some(&log));
    Ok(Found {
        index: i,
        name: item.file.name.clone(),
        log,
        date: date.map(|d| d.0.display()),
        date_from: date.map(|d| d.1.name()),
    })
}

/// `log://{file}`: the log's row of list_logs, with its channels in full.
pub fn log_summary(
    dir: &Path,
    cache: &mut Cache,
    file: &str,
    progress: Progress,
) -> Result<String, ToolError> {
    let f = find(dir, cache, file, progress)?;
    let channels = f.log.channels();
    let mut fm = Frontmatter::new()
        .text("file", &f.name)
        .raw("index", f.index + 1)
        .opt_text("date", f.date.as_deref())
        .opt_text("date_from", f.date_from);
    if let Some(d) = f.log.duration_s() {
        fm = fm.raw("duration_s", fmt_duration(d));
    }
    fm = fm.raw("rows", f.log.rows());
    if let Some(hz) = f.log.sample_rate_hz() {
        fm = fm.raw("sample_rate_hz", fmt_rate(hz));
    }
    fm = fm
        .text("logger", f.log.format.name())
        .raw("channel_count", channels.len())
        .list("channels", &channels);
    if let Some(source) = &f.log.source {
        fm = fm.text("source", source);
    }
    if !f.log.notes.is_empty() {
        fm = fm.list("notes", &f.log.notes);
    }
    if !f.log.markers.is_empty() {
        let markers: Vec<String> = f
            .log
            .markers
            .iter()
            .take(100)
            .map(|m| {
                format!(
                    "{} s: {}",
                    crate::column::format_number(m.time_s, 3),
                    m.text
                )
            })
            .collect();
        fm = fm.list("markers", &markers);
    }
    Ok(fm.with_body(&format!(
        "Query it with query_logs (file=\"{0}\", filter on the channels above, exactly as \
         written; quote names with spaces: 'Knock Sum' > 0), or plot it with plot_log \
         (file=\"{0}\").\n",
        f.name
    )))
}

/// `investigate_log`: what the log holds, then plot, then query.
pub fn investigate_log(
    dir: &Path,
    cache: &mut Cache,
    file: &str,
    channel: Option<&str>,
    question: Option<&str>,
    progress: Progress,
) -> Result<String, ToolError> {
    let f = find(dir, cache, file, progress)?;
    let channels = f.log.channels();
    let channel = channel.map(str::trim).filter(|c| !c.is_empty());
    if let Some(c) = channel
        && !channels.contains(&c)
    {
        let mut msg = format!("log `{}` has no channel `{}`", f.name, clip(c));
        if let Some(best) = crate::filter::closest(c, &channels) {
            msg.push_str(&format!("; did you mean `{best}`?"));
        }
        msg.push_str(" Its channels are in its log:// resource and in list_logs.");
        return Err(ToolError::new(error::UNKNOWN_CHANNEL, msg));
    }
    let shown: Vec<&str> = channels.iter().take(PROMPT_CHANNELS).copied().collect();
    let more = channels.len().saturating_sub(PROMPT_CHANNELS);
    let mut about = format!("a {} log", f.log.format.name());
    if let Some(d) = &f.date {
        about.push_str(&format!(" recorded {d}"));
    }
    if let Some(s) = f.log.duration_s() {
        about.push_str(&format!(", {s:.1} s"));
    }
    about.push_str(&format!(", {} rows", f.log.rows()));
    if let Some(hz) = f.log.sample_rate_hz() {
        about.push_str(&format!(" at {} Hz", fmt_rate(hz)));
    }
    let question = match question.map(str::trim).filter(|q| !q.is_empty()) {
        Some(q) => format!("The question: {}\n\n", clip(q)),
        None => String::new(),
    };
    let (plot_channels, example) = match channel {
        Some(c) => (format!("[\"{c}\", …]"), quoted(c)),
        None => ("the channels that matter".to_owned(), "RPM".to_owned()),
    };
    let name = &f.name;
    Ok(format!(
        "Investigate the datalog `{name}` ({about}) with the log tools. Its channels, exact and \
         case-sensitive: {}{}.

{question}1. Call `plot_log` with file=\"{name}\" and channels={plot_channels} to see the whole log; \
add filter=... to highlight rows of interest in red, start_s/end_s to zoom into a pull.
2. Call `query_logs` with file=\"{name}\" and a filtrex filter on those channels (e.g. filter=\"{example} > 0\"; quote names with spaces or a leading digit: 'Knock Sum' > 0; chain ranges: 3000 < RPM < 5000), adding channels=[...] for the context to show.
3. Narrow down: rows_matched counts every match; page with offset, or thin with sample_rate for an overview.
4. Answer with the times (s) and values that show it, and say which channels or conditions you could not check.
",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// A channel name as a filtrex operand: bare when it is an identifier.
fn quoted(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if bare {
        name.to_owned()
    } else {
        format!("'{}'", name.replace('\'', "\\'"))
    }
}

/// Values for `argument`: `file` (log file names, newest first in the
/// directory, ranked by what was typed) or `channel` (the channel names of
/// the newest logs). Nothing for other arguments or when no directory is
/// configured: completion offers, it does not fail.
pub fn complete(
    dir: &Path,
    cache: &mut Cache,
    argument: &str,
    value: &str,
    progress: Progress,
) -> Vec<String> {
    let Ok(mut listing) = Listing::read(dir, cache, None, progress) else {
        return Vec::new();
    };
    match argument {
        "file" => completions(listing.files.iter().map(|f| f.file.name.clone()), value),
        "channel" => {
            let mut names = Vec::new();
            for i in 0..listing.files.len().min(LOGS_FOR_CHANNELS) {
                if let Ok(log) = listing.log(i, cache, &Need::named::<&str>([])) {
                    names.extend(log.channels().into_iter().map(str::to_owned));
                }
            }
            completions(names, value)
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/logs")
    }

    fn go(_: u64, _: u64, _: &str) -> bool {
        true
    }

    #[test]
    fn a_summary_is_the_logs_row_of_list_logs() {
        let mut cache = Cache::default();
        let s = log_summary(
            &samples(),
            &mut cache,
            "romraiderlog_20260221_180000.csv",
            &mut go,
        )
        .unwrap();
        assert!(s.contains("file: romraiderlog_20260221_180000.csv"), "{s}");
        assert!(s.contains("logger: romraider"), "{s}");
        assert!(s.contains("date: 2026-02-21 18:00"), "{s}");
        assert!(
            s.contains("  - Engine Speed (rpm)") || s.contains("Engine Speed (rpm)"),
            "{s}"
        );
        assert!(
            s.contains("rows: ") && s.contains("sample_rate_hz: "),
            "{s}"
        );
        // Case-insensitive, as query_logs finds files.
        assert!(
            log_summary(
                &samples(),
                &mut cache,
                "ROMRAIDERLOG_20260221_180000.CSV",
                &mut go
            )
            .is_ok()
        );
        let e = log_summary(&samples(), &mut cache, "nope.csv", &mut go).unwrap_err();
        assert_eq!(e.code, error::UNKNOWN_FILE);
        assert!(e.message.contains("list_logs"), "{}", e.message);
    }

    #[test]
    fn the_prompt_names_the_tools_and_checks_the_channel() {
        let mut cache = Cache::default();
        let file = "log-2026-02-22T14-30-00-000Z.csv";
        let p = investigate_log(
            &samples(),
            &mut cache,
            file,
            Some("Knock Sum"),
            Some("why knock?"),
            &mut go,
        )
        .unwrap();
        for want in [
            "plot_log",
            "query_logs",
            "file=\"log-2026-02-22T14-30-00-000Z.csv\"",
            "'Knock Sum' > 0",
            "The question: why knock?",
            "RPM, Load",
        ] {
            assert!(p.contains(want), "{want} in {p}");
        }
        let e =
            investigate_log(&samples(), &mut cache, file, Some("Knok"), None, &mut go).unwrap_err();
        assert_eq!(e.code, error::UNKNOWN_CHANNEL);
        assert!(e.message.contains("did you mean `Knock`"), "{}", e.message);
        let p = investigate_log(&samples(), &mut cache, file, None, None, &mut go).unwrap();
        assert!(!p.contains("The question"), "{p}");
    }

    #[test]
    fn files_and_channels_complete() {
        let mut cache = Cache::default();
        let c = complete(&samples(), &mut cache, "file", "rom", &mut go);
        assert_eq!(c, ["romraiderlog_20260221_180000.csv"]);
        assert_eq!(
            complete(&samples(), &mut cache, "file", "", &mut go).len(),
            3
        );
        let c = complete(&samples(), &mut cache, "channel", "kn", &mut go);
        assert!(
            c.contains(&"Knock".to_owned()) && c.contains(&"Knock Sum".to_owned()),
            "{c:?}"
        );
        assert!(c.contains(&"Knock Count (count)".to_owned()), "{c:?}");
        assert!(complete(&samples(), &mut cache, "filter", "", &mut go).is_empty());
        assert!(complete(Path::new("/no/such/dir"), &mut cache, "file", "", &mut go).is_empty());
    }

    #[test]
    fn channel_names_quote_for_filtrex() {
        assert_eq!(quoted("RPM"), "RPM");
        assert_eq!(quoted("Knock Sum"), "'Knock Sum'");
        assert_eq!(quoted("01_LogMark"), "'01_LogMark'");
    }
}
