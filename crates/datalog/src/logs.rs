//! The logs directory: which files are logs (in it and its subfolders, see
//! [`crate::scan`]), how recent each is, and a cache of parsed logs keyed by
//! path, modification time and size.

use crate::error::{self, ToolError};
use crate::format::DateKind;
use crate::reader::{self, Log, Need, ReadError};
use plugin_kit::civil::DateTime;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

// What a log file is, and the variable naming the directory, live with the
// walk that finds them; they are still reached here, as `logs::LogFile`.
pub use crate::scan::{Companion, LOGS_DIR_VAR, LogFile, Scan, scan};

/// The configured logs directory.
pub fn logs_dir() -> Result<PathBuf, ToolError> {
    match std::env::var(LOGS_DIR_VAR) {
        Ok(v) if !v.trim().is_empty() => Ok(plugin_kit::paths::resolve(v.trim())),
        _ => Err(ToolError::new(
            error::NO_LOGS_DIR,
            format!(
                "no logs directory is configured. Start benchtop with --logs-dir DIR, set the \
                 {LOGS_DIR_VAR} environment variable, or set \"ecuExplorer.logsDir\" in the \
                 workspace's .vscode/settings.json; then call list_logs again."
            ),
        )),
    }
}

/// When a log was recorded: seconds since 1970 of a civil date-time, in UTC
/// when `utc`, otherwise in the logger's unknown local zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogDate {
    /// Seconds since 1970-01-01 00:00 of the date-time (as if UTC when the zone
    /// is unknown).
    pub secs: i64,
    /// True when the time is known to be UTC (a file's mtime); false for the
    /// logger's own local clock.
    pub utc: bool,
    /// True when only the day is known (then `secs` is its start).
    pub day_only: bool,
}

impl LogDate {
    /// A date-time of the logger's local clock.
    pub fn local(secs: i64) -> LogDate {
        LogDate {
            secs,
            utc: false,
            day_only: false,
        }
    }

    /// `2026-02-22 14:30 UTC` (the zone only when known; the day alone
    /// when that is all that is known).
    pub fn display(&self) -> String {
        let t = DateTime::from_unix_secs(self.secs);
        if self.day_only {
            return t.date_string();
        }
        format!(
            "{} {:02}:{:02}{}",
            t.date_string(),
            t.hour,
            t.minute,
            if self.utc { " UTC" } else { "" }
        )
    }
}

/// The recording time a file name carries: `log-2026-02-22T14-30-00-000Z`,
/// `EvoScanDataLog_2024.06.01_10.20.00`, `romraiderlog_20240601_102500`,
/// ECUMaster's `2025_1218_1904`, Haltech's `2025-07-18_0215pm`, BlueDriver's
/// `Aug_17__2025_08_45_PM` (see [`crate::dates`]). A day alone is no
/// recording time.
pub fn date_from_name(name: &str) -> Option<LogDate> {
    crate::dates::find(name)
        .filter(|f| f.has_time)
        .map(|f| LogDate {
            secs: f.secs,
            utc: f.utc,
            day_only: false,
        })
}

/// `2024-06-01 10:20:00.03125` (EvoScan's first row).
pub fn date_from_clock(s: &str) -> Option<LogDate> {
    let (date, time) = s.trim().split_once(' ')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, mo, dd) = (d.next()??, d.next()??, d.next()??);
    let secs = reader::parse_clock(time)? as i64;
    // A clock of absurd hours (found by fuzzing) is no date, not an overflow.
    Some(LogDate::local(
        crate::format::civil(y, mo, dd, 0, 0, 0)?.checked_add(secs)?,
    ))
}

fn date_from_mtime(t: SystemTime) -> Option<LogDate> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(LogDate {
        secs,
        utc: true,
        day_only: false,
    })
}

/// Most bytes of a companion file read (a channel list is ~125 bytes).
const MAX_COMPANION: u64 = 64 << 10;

/// What tells an unchanged file (and companion) from a changed one.
type Stamp = (Option<SystemTime>, u64, Option<(Option<SystemTime>, u64)>);

// The cache's view of a file (what tells it changed, its companion's bytes);
// the file itself is defined where the walk finds it.
impl LogFile {
    fn stamp(&self) -> Stamp {
        (
            self.mtime,
            self.size,
            self.companion.as_ref().map(|c| (c.mtime, c.size)),
        )
    }

    /// The companion's content (at most [`MAX_COMPANION`] bytes), when it
    /// can be read.
    fn companion_bytes(&self) -> Option<Vec<u8>> {
        let c = self.companion.as_ref()?;
        let file = plugin_kit::paths::open_regular_file(&c.path).ok()?;
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_COMPANION), &mut out).ok()?;
        Some(out)
    }
}

/// The log files of `dir` and its subfolders, in walk order (see [`scan`],
/// which also says what its bounds left out).
pub fn scan_dir(dir: &Path) -> Result<Vec<LogFile>, ToolError> {
    scan(dir).map(|s| s.files)
}

/// Where a log's date came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateSource {
    /// The log's own content (a preamble, VCDS's first line, EvoScan's first
    /// row, an MLG or Link header, Emerald's record dates).
    Log,
    /// The file name, e.g. `romraiderlog_20240601_102500.csv` (see
    /// [`date_from_name`]).
    FileName,
    /// The file's modification time: the log states no date.
    Mtime,
}

impl DateSource {
    /// The source as listed to agents: "log", "file name" or "file mtime".
    pub fn name(self) -> &'static str {
        match self {
            DateSource::Log => "log",
            DateSource::FileName => "file name",
            DateSource::Mtime => "file mtime",
        }
    }
}

/// The date shown for a log and used for recency: the log's own, else the
/// one its file name (then its folders' names) carries, else the file's
/// modification time. A log that states only its day (BlueDriver) takes the
/// time of day from its name when the name is of that day.
pub fn log_date(file: &LogFile, log: Option<&Log>) -> Option<(LogDate, DateSource)> {
    let named = date_from_name(file.base_name()).or_else(|| date_from_name(&file.name));
    let own = log.and_then(|l| match l.start_date {
        Some(secs) => Some(LogDate {
            secs,
            utc: l.start_date_kind == DateKind::Utc,
            day_only: l.start_date_kind == DateKind::Day,
        }),
        None => l.start_clock.as_deref().and_then(date_from_clock),
    });
    match (own, named) {
        (Some(day), Some(n))
            if day.day_only && n.secs.div_euclid(86_400) == day.secs.div_euclid(86_400) =>
        {
            Some((n, DateSource::FileName))
        }
        (Some(own), _) => Some((own, DateSource::Log)),
        (None, Some(n)) => Some((n, DateSource::FileName)),
        // A day in the name or a folder's (`2025-07-18/pull.csv`, as
        // loggers and users keep a folder per day) beats the mtime.
        (None, None) => crate::dates::find(&file.name)
            .map(|f| {
                let d = LogDate {
                    secs: f.secs,
                    utc: false,
                    day_only: true,
                };
                (d, DateSource::FileName)
            })
            .or_else(|| {
                file.mtime
                    .and_then(date_from_mtime)
                    .map(|d| (d, DateSource::Mtime))
            }),
    }
}

struct Entry {
    stamp: Stamp,
    log: Arc<Log>,
    used: u64,
}

/// Parsed logs by path; an entry is valid while mtime and size are unchanged.
pub struct Cache {
    entries: HashMap<PathBuf, Entry>,
    clock: u64,
    /// Sum of the entries' `heap_bytes` (kept, not recounted: a directory
    /// of 30,000 logs would make every insert count them all).
    held: usize,
    /// Files that could not be read, with why, while unchanged: a directory
    /// of unreadable files costs one read each, not one per call.
    failed: HashMap<PathBuf, (Stamp, ToolError)>,
    /// Bytes of parsed data kept before the least recently used log is dropped.
    pub budget: usize,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            entries: HashMap::new(),
            clock: 0,
            held: 0,
            failed: HashMap::new(),
            budget: 256 << 20,
        }
    }
}

impl Cache {
    /// Returns the parsed log with at least the columns `need` names,
    /// reading and parsing the file only when it is new or changed, or when
    /// a column it needs was skipped before (then the columns already
    /// converted are converted again with the new ones).
    pub fn load(&mut self, file: &LogFile, need: &Need) -> Result<Arc<Log>, ToolError> {
        self.clock += 1;
        let mut need = need.clone();
        if let Some(e) = self.entries.get_mut(&file.path)
            && e.stamp == file.stamp()
        {
            e.used = self.clock;
            if need.met_by(&e.log) {
                return Ok(e.log.clone());
            }
            need = need.with_loaded(&e.log);
        }
        self.remove(&file.path);
        if let Some(why) = self.known_failure(file) {
            return Err(why);
        }
        let unreadable = |message| ToolError::new(error::UNREADABLE_LOG, message);
        let companion = file.companion_bytes();
        let read = plugin_kit::file_stream::FileStream::open(&file.path)
            .map_err(|e| (unreadable(format!("cannot read {}: {e}", file.name)), true))
            .and_then(|source| {
                // The base name: loggers are told apart by it (`romraiderlog…`).
                reader::read_log(
                    source,
                    file.size,
                    file.base_name(),
                    &need,
                    companion.as_deref(),
                )
                .map_err(|e| {
                    let remember = !matches!(
                        e,
                        ReadError::Binary(crate::binary::BinaryError::TooManyCells { .. })
                    );
                    (unreadable(why_unreadable(file, e, "log-query")), remember)
                })
            });
        let log = match read {
            Ok(log) => log,
            // Too many channels asked of a long binary log: the file itself
            // is fine, and a query naming fewer channels reads it.
            Err((e, false)) => return Err(e),
            Err((e, true)) => {
                if self.failed.len() >= MAX_FAILED {
                    self.failed.clear();
                }
                self.failed
                    .insert(file.path.clone(), (file.stamp(), e.clone()));
                return Err(e);
            }
        };
        self.failed.remove(&file.path);
        let log = Arc::new(log);
        let bytes = log.heap_bytes();
        while !self.entries.is_empty() && self.held + bytes > self.budget {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.remove(&k);
            }
        }
        self.held += bytes;
        self.entries.insert(
            file.path.clone(),
            Entry {
                stamp: file.stamp(),
                log: log.clone(),
                used: self.clock,
            },
        );
        Ok(log)
    }

    fn remove(&mut self, path: &Path) {
        if let Some(e) = self.entries.remove(path) {
            self.held -= e.log.heap_bytes();
        }
    }

    /// The start of a log (see [`reader::read_head`]): the cached log when
    /// there is one, else its header and first rows read from the file
    /// (not cached). Enough to choose channels by name before [`Cache::load`]
    /// converts exactly those.
    pub fn head(&self, file: &LogFile) -> Result<Arc<Log>, ToolError> {
        if let Some(known) = self.peek(file) {
            return known;
        }
        let unreadable = |message| ToolError::new(error::UNREADABLE_LOG, message);
        let source = plugin_kit::paths::open_regular_file(&file.path)
            .map_err(|e| unreadable(format!("cannot read {}: {e}", file.name)))?;
        let companion = file.companion_bytes();
        reader::read_head_with(source, file.base_name(), companion.as_deref())
            .map(Arc::new)
            .map_err(|e| unreadable(why_unreadable(file, e, "the reader")))
    }

    /// The cached log (or why it cannot be read) of an unchanged file,
    /// without reading it.
    pub fn peek(&self, file: &LogFile) -> Option<Result<Arc<Log>, ToolError>> {
        if let Some(why) = self.known_failure(file) {
            return Some(Err(why));
        }
        self.entries
            .get(&file.path)
            .filter(|e| e.stamp == file.stamp())
            .map(|e| Ok(e.log.clone()))
    }

    /// Why an unchanged file could not be read last time, if it could not.
    fn known_failure(&self, file: &LogFile) -> Option<ToolError> {
        self.failed
            .get(&file.path)
            .filter(|(stamp, _)| *stamp == file.stamp())
            .map(|(_, why)| why.clone())
    }

    /// Logs cached now (parsed logs, not remembered failures): what the
    /// tests check the read budget against.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no parsed log is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What an unreadable file's failure says: an I/O error as such, anything
/// else as the reason the file is not a log `who` understands.
fn why_unreadable(file: &LogFile, e: ReadError, who: &str) -> String {
    match e {
        ReadError::Io(e) | ReadError::Binary(crate::binary::BinaryError::Io(e)) => {
            format!("cannot read {}: {e}", file.name)
        }
        e => format!("{} is not a log {who} understands: {e}", file.name),
    }
}

/// Unreadable files remembered at most (then forgotten, and read again).
const MAX_FAILED: usize = 100_000;

/// The process-wide cache (one plugin instance serves calls one at a time).
pub fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Cache::default()))
}

/// One entry of a [`Listing`].
pub struct Item {
    /// The file as listed.
    pub file: LogFile,
    /// The parsed log, once loaded.
    pub log: Option<Result<Arc<Log>, ToolError>>,
    /// The date shown for the log and where it came from; none when nothing
    /// dates it.
    pub date: Option<(LogDate, DateSource)>,
}

/// Time one call spends reading logs it has not read before: well inside
/// the host's per-call deadline (30 s by default), so a directory of tens
/// of thousands of logs is read over several calls (the cache keeps each
/// call's work) instead of every call running out of time and losing it.
pub const READ_BUDGET: std::time::Duration = std::time::Duration::from_secs(8);

/// The logs directory, newest first.
pub struct Listing {
    /// Every log file of the directory and its subfolders, newest first
    /// (undated ones last).
    pub files: Vec<Item>,
    /// Logs `parse_all` asked for and left unread when the time budget ran out.
    pub unread: usize,
    /// What the walk of the subfolders left out (see [`Scan::notes`]).
    pub scan_notes: Vec<String>,
    /// Folders searched, the logs directory included.
    pub folders: usize,
}

impl Listing {
    /// Lists the directory. With `parse_all` every log is parsed (through the
    /// cache) first, so logs dated only by their content sort correctly;
    /// otherwise only already cached logs contribute their content's date.
    pub fn read(
        dir: &Path,
        cache: &mut Cache,
        parse_all: Option<&Need>,
        progress: &mut dyn FnMut(u64, u64, &str) -> bool,
    ) -> Result<Listing, ToolError> {
        Self::read_within(dir, cache, parse_all, progress, READ_BUDGET)
    }

    /// [`Listing::read`] spending at most `budget` reading uncached logs.
    pub fn read_within(
        dir: &Path,
        cache: &mut Cache,
        parse_all: Option<&Need>,
        progress: &mut dyn FnMut(u64, u64, &str) -> bool,
        budget: std::time::Duration,
    ) -> Result<Listing, ToolError> {
        let scan = scan(dir)?;
        let total = scan.files.len() as u64;
        let mut out: Vec<Item> = scan
            .files
            .into_iter()
            .map(|f| {
                let log = cache.peek(&f);
                let date = log_date(&f, log.as_ref().and_then(|l| l.as_ref().ok()).map(|l| &**l));
                Item { file: f, log, date }
            })
            .collect();
        // Newest first by what is known before reading, so a call that runs
        // out of time has read the logs listed first.
        Self::sort(&mut out);
        let mut unread = 0;
        if let Some(need) = parse_all {
            let start = std::time::Instant::now();
            for (k, item) in out.iter_mut().enumerate() {
                if item.log.as_ref().is_some_and(|l| {
                    l.as_ref().is_err() || l.as_ref().is_ok_and(|l| need.met_by(l))
                }) {
                    continue;
                }
                if start.elapsed() > budget {
                    unread += 1;
                    item.log = None;
                    continue;
                }
                if !progress(k as u64, total, &item.file.name) {
                    return Err(error::cancelled());
                }
                let log = cache.load(&item.file, need);
                item.date = log_date(&item.file, log.as_ref().ok().map(|l| &**l));
                item.log = Some(log);
            }
            Self::sort(&mut out);
        }
        Ok(Listing {
            files: out,
            unread,
            scan_notes: scan.notes,
            folders: scan.folders,
        })
    }

    fn sort(items: &mut [Item]) {
        items.sort_by(|a, b| {
            let key = |x: &Item| (x.date.map(|d| d.0.secs), x.file.mtime);
            key(b)
                .cmp(&key(a))
                .then_with(|| a.file.name.cmp(&b.file.name))
        });
    }

    /// The parsed log of entry `i` with the columns `need` names, loading
    /// it when needed.
    pub fn log(&mut self, i: usize, cache: &mut Cache, need: &Need) -> Result<Arc<Log>, ToolError> {
        let item = &mut self.files[i];
        if let Some(Ok(log)) = &item.log
            && need.met_by(log)
        {
            return Ok(log.clone());
        }
        let log = cache.load(&item.file, need);
        item.log = Some(log.clone());
        log
    }

    /// Finds a file by its name as listed (`car1/pull.csv`: exact, then
    /// case-insensitive), by its `#`, or by its base name when one file
    /// alone has it (so a path written with other folders before it still
    /// finds the log).
    pub fn find(&self, wanted: &str) -> Result<usize, ToolError> {
        let w = wanted.trim().replace('\\', "/");
        let w = w.trim_start_matches("./");
        if let Some(i) = self.files.iter().position(|f| f.file.name == w) {
            return Ok(i);
        }
        if let Some(i) = self
            .files
            .iter()
            .position(|f| f.file.name.eq_ignore_ascii_case(w))
        {
            return Ok(i);
        }
        let index = w.trim_start_matches('#');
        if let Ok(n) = index.parse::<usize>()
            && (1..=self.files.len()).contains(&n)
        {
            return Ok(n - 1);
        }
        let base = w.rsplit('/').next().unwrap_or(w);
        for same in [
            &(|a: &str, b: &str| a == b) as &dyn Fn(&str, &str) -> bool,
            &|a: &str, b: &str| a.eq_ignore_ascii_case(b),
        ] {
            let found: Vec<usize> = (0..self.files.len())
                .filter(|&i| same(self.files[i].file.base_name(), base))
                .collect();
            match found.as_slice() {
                [i] => return Ok(*i),
                [] => {}
                several => {
                    let paths: Vec<&str> = several
                        .iter()
                        .take(10)
                        .map(|&i| self.files[i].file.name.as_str())
                        .collect();
                    return Err(ToolError::new(
                        error::UNKNOWN_FILE,
                        format!(
                            "{} logs are named `{}`: {}{}. Pass the path as list_logs shows \
                             it (folder/name), or its #.",
                            several.len(),
                            plugin_kit::text::clip(base),
                            paths.join(", "),
                            if several.len() > paths.len() {
                                ", …"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
            }
        }
        let names: Vec<&str> = self.files.iter().map(|f| f.file.name.as_str()).collect();
        let mut msg = format!(
            "no log file named `{}` in the logs directory",
            plugin_kit::text::clip(w)
        );
        if let Some(best) =
            crate::filter::closest(w, &names).or_else(|| crate::filter::closest(base, &names))
        {
            msg.push_str(&format!("; did you mean `{best}`?"));
        }
        if names.is_empty() {
            msg.push_str(" (it holds no log files, in it or its subfolders)");
        } else {
            let shown: Vec<&str> = names.iter().take(10).copied().collect();
            msg.push_str(&format!(
                ". Files (newest first): {}{}. Call list_logs for details.",
                shown.join(", "),
                if names.len() > 10 { ", …" } else { "" }
            ));
        }
        Err(ToolError::new(error::UNKNOWN_FILE, msg))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_clock_past_any_day_is_no_date() {
        // Found by fuzzing: a time of day that saturates an i64 overflowed.
        assert_eq!(
            date_from_clock("2024-06-01 99999999999999999999999:00:00"),
            None
        );
        assert!(date_from_clock("2024-06-01 10:20:00.03125").is_some());
    }

    use super::*;

    #[test]
    fn dates_from_logger_file_names() {
        let d = date_from_name("log-2026-02-22T14-30-00-000Z.csv").unwrap();
        assert_eq!(d.display(), "2026-02-22 14:30 UTC");
        let d = date_from_name("EvoScanDataLog_2024.06.01_10.20.00.csv").unwrap();
        assert_eq!(d.display(), "2024-06-01 10:20");
        let d = date_from_name("romraiderlog_track_20240601_102500.csv").unwrap();
        assert_eq!(d.display(), "2024-06-01 10:25");
        assert!(date_from_name("pull.csv").is_none());
        let d = date_from_clock("2024-06-01 10:20:00.03125").unwrap();
        assert_eq!(d.display(), "2024-06-01 10:20");
        let d = date_from_name("log-2000-02-29T23-59-00Z.csv").unwrap();
        assert_eq!(d.display(), "2000-02-29 23:59 UTC");
        let d = date_from_name("log_2100-03-01_00-00-00.csv").unwrap();
        assert_eq!(d.display(), "2100-03-01 00:00");
    }

    #[test]
    fn cache_reuses_until_the_file_changes() {
        let dir = std::env::temp_dir().join(format!("logq-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.csv");
        std::fs::write(&path, "Time,RPM\n0,1\n").unwrap();
        let mut cache = Cache::default();
        let files = scan_dir(&dir).unwrap();
        let a = cache.load(&files[0], &Need::All).unwrap();
        let b = cache.load(&files[0], &Need::All).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        std::fs::write(&path, "Time,RPM\n0,1\n1,2\n").unwrap();
        let files = scan_dir(&dir).unwrap();
        let c = cache.load(&files[0], &Need::All).unwrap();
        assert_eq!(c.rows(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cache_converts_more_columns_when_asked() {
        let dir = std::env::temp_dir().join(format!("logq-need-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("a.csv"),
            "Time,RPM,AFR,Knock
0,900,14.7,0
1,950,14.6,2
",
        )
        .unwrap();
        let mut cache = Cache::default();
        let files = scan_dir(&dir).unwrap();
        let rpm = cache.load(&files[0], &Need::named(["RPM"])).unwrap();
        assert!(rpm.column("RPM").unwrap().loaded && !rpm.column("AFR").unwrap().loaded);
        // Already converted: the same parse is reused.
        let again = cache.load(&files[0], &Need::named(["RPM"])).unwrap();
        assert!(Arc::ptr_eq(&rpm, &again));
        // A new channel converts it and keeps the earlier ones.
        let afr = cache.load(&files[0], &Need::named(["AFR"])).unwrap();
        assert!(!Arc::ptr_eq(&rpm, &afr));
        assert_eq!(afr.column("AFR").unwrap().number(1), Some(14.6));
        assert_eq!(afr.column("RPM").unwrap().number(1), Some(950.0));
        assert!(!afr.column("Knock").unwrap().loaded);
        let all = cache.load(&files[0], &Need::All).unwrap();
        assert!(all.columns.iter().all(|c| c.loaded));
        assert!(Arc::ptr_eq(
            &all,
            &cache.load(&files[0], &Need::named(["AFR"])).unwrap()
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn temp_tree(tag: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("logq-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, body) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        dir
    }

    /// Issue 38 item 1: logs in subfolders are listed by their path from
    /// the logs directory and found by it (or by a base name one log has).
    #[test]
    fn subfolder_logs_are_listed_and_found_by_relative_path() {
        let dir = temp_tree(
            "nested",
            &[
                ("car1/2025-07-18_10-00-00.csv", b"Time,RPM\n0,1\n"),
                ("car1/day2/pull.csv", b"Time,RPM\n0,2\n"),
                ("car2/pull.csv", b"Time,RPM\n0,3\n"),
                ("car2/only.csv", b"Time,RPM\n0,4\n"),
            ],
        );
        let mut cache = Cache::default();
        let listing =
            Listing::read(&dir, &mut cache, Some(&Need::All), &mut |_, _, _| true).unwrap();
        let mut names: Vec<&str> = listing.files.iter().map(|f| f.file.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "car1/2025-07-18_10-00-00.csv",
                "car1/day2/pull.csv",
                "car2/only.csv",
                "car2/pull.csv"
            ]
        );
        assert_eq!((listing.folders, listing.scan_notes.len()), (4, 0));
        let name_of = |w: &str| listing.find(w).map(|i| listing.files[i].file.name.clone());
        assert_eq!(name_of("car1/day2/pull.csv").unwrap(), "car1/day2/pull.csv");
        assert_eq!(name_of("CAR2\\PULL.CSV").unwrap(), "car2/pull.csv");
        assert_eq!(name_of("./car2/only.csv").unwrap(), "car2/only.csv");
        assert_eq!(name_of("only.csv").unwrap(), "car2/only.csv");
        assert_eq!(name_of("elsewhere/only.csv").unwrap(), "car2/only.csv");
        let e = name_of("pull.csv").unwrap_err();
        assert_eq!(e.code, error::UNKNOWN_FILE);
        assert!(
            e.message.contains("2 logs are named `pull.csv`")
                && e.message.contains("car1/day2/pull.csv"),
            "{e}"
        );
        let e = name_of("car3/pul.csv").unwrap_err();
        assert!(e.message.contains("did you mean"), "{e}");
        // The name dates the log in a subfolder as at the top.
        let i = listing.find("car1/2025-07-18_10-00-00.csv").unwrap();
        assert_eq!(
            listing.files[i].date.map(|d| (d.0.display(), d.1)),
            Some(("2025-07-18 10:00".to_string(), DateSource::FileName))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 38 item 2: binary logs are listed (an Emerald `.lg1` with its
    /// `.lg2`, whose change is a change of the log), dated by their content.
    #[test]
    fn binary_logs_list_with_their_companions() {
        let lg1 = crate::binary::emerald::tests::lg1(10);
        let dir = temp_tree(
            "binary",
            &[
                ("em/EM Log.lg1", &lg1),
                ("em/EM Log.lg2", crate::binary::emerald::tests::LG2),
                ("em/renamed.daq", &lg1),
            ],
        );
        let mut cache = Cache::default();
        let listing =
            Listing::read(&dir, &mut cache, Some(&Need::All), &mut |_, _, _| true).unwrap();
        assert_eq!(listing.files.len(), 2);
        for item in &listing.files {
            let log = item.log.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(log.format, crate::format::Format::Emerald);
            let (date, source) = item.date.unwrap();
            assert_eq!(
                (date.display(), source),
                ("2025-12-31 14:13".into(), DateSource::Log)
            );
            let first = log.channels()[0];
            if item.file.name == "em/EM Log.lg1" {
                assert_eq!(first, "id19");
            } else {
                assert_eq!(first, "chan1");
            }
        }
        // A new channel list is a new log.
        let i = listing.find("EM Log.lg1").unwrap();
        let before = cache.load(&listing.files[i].file, &Need::All).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("em/EM Log.lg2"), "[chan1]\n77\n").unwrap();
        let listing = Listing::read(&dir, &mut cache, None, &mut |_, _, _| true).unwrap();
        let i = listing.find("EM Log.lg1").unwrap();
        let after = cache.load(&listing.files[i].file, &Need::All).unwrap();
        assert!(!Arc::ptr_eq(&before, &after));
        assert_eq!(after.channels()[0], "id77");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Asking too many channels of a long binary log fails that request
    /// only: the file is not remembered as unreadable.
    #[test]
    fn too_many_cells_is_a_request_problem_not_a_bad_file() {
        // 4200 channels over 8400 time stamps: 35 million cells.
        let channels: Vec<(String, Vec<(f32, f32)>)> = (0..4200)
            .map(|k| {
                (
                    format!("c{k}"),
                    vec![(k as f32, 1.0), (k as f32 + 0.5, 2.0)],
                )
            })
            .collect();
        let refs: Vec<crate::binary::link::tests::TestChannel> = channels
            .iter()
            .map(|(n, s)| (n.as_str(), "", s.as_slice()))
            .collect();
        let file = crate::binary::link::tests::llg(&refs, &[]);
        let dir = temp_tree("cells", &[("big.llg", &file)]);
        let mut cache = Cache::default();
        let files = scan_dir(&dir).unwrap();
        match cache.load(&files[0], &Need::All) {
            Err(e) => assert!(e.message.contains("ask for fewer channels"), "{e}"),
            Ok(log) => panic!("read {} rows of every channel", log.rows()),
        }
        let log = cache.load(&files[0], &Need::named(["c7"])).unwrap();
        assert_eq!(log.rows(), 8400);
        assert_eq!(log.column("c7").unwrap().number(14), Some(1.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 38 item 5: BlueDriver states its day (the name its time),
    /// ECUMaster and Haltech date from the name or the log, not the mtime.
    #[test]
    fn loggers_date_from_their_content_and_names() {
        let file = |name: &str| LogFile {
            name: name.into(),
            path: PathBuf::from(name),
            mtime: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)),
            size: 1,
            companion: None,
        };
        let bd = "BlueDriver Data Log\nAug 17, 2025\nTime(s), A (V)\n0.00, 1\n0.40, 2\n";
        let log = reader::parse(bd.as_bytes(), "x.csv").unwrap();
        let named = "cars/SBM22GCA4MW001405_Aug_17__2025_08_45_PM_LiveData.csv";
        let (d, from) = log_date(&file(named), Some(&log)).unwrap();
        assert_eq!(
            (d.display(), from),
            ("2025-08-17 20:45".into(), DateSource::FileName)
        );
        // A name of another day does not lend its time: the log's day stands.
        let (d, from) = log_date(&file("Sep_01_2025_10_00_AM.csv"), Some(&log)).unwrap();
        assert_eq!((d.display(), from), ("2025-08-17".into(), DateSource::Log));
        let (d, from) = log_date(&file("log.csv"), Some(&log)).unwrap();
        assert_eq!((d.display(), from), ("2025-08-17".into(), DateSource::Log));
        let ecu = "TIME;engine/rpm\n0.00;1\n0.02;2\n";
        let log = reader::parse(ecu.as_bytes(), "2025_1218_1904.csv").unwrap();
        let (d, from) = log_date(&file("ecumaster/2025_1218_1904.csv"), Some(&log)).unwrap();
        assert_eq!(
            (d.display(), from),
            ("2025-12-18 19:04".into(), DateSource::FileName)
        );
        let (d, from) = log_date(&file("haltech/2025-07-18_0215pm_Log1118.csv"), None).unwrap();
        assert_eq!(
            (d.display(), from),
            ("2025-07-18 14:15".into(), DateSource::FileName)
        );
        // A folder named by its day (and time) dates the logs in it.
        let (d, _) = log_date(&file("2024-06-01_10-20/pull.csv"), None).unwrap();
        assert_eq!(d.display(), "2024-06-01 10:20");
        let (d, from) = log_date(&file("car1/2024-06-01/pull.csv"), None).unwrap();
        assert_eq!(
            (d.display(), from),
            ("2024-06-01".into(), DateSource::FileName)
        );
        let (_, from) = log_date(&file("pull.csv"), None).unwrap();
        assert_eq!(from, DateSource::Mtime);
    }
}
