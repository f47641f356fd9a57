//! The logs directory: which files are logs, how recent each is, and a cache
//! of parsed logs keyed by path, modification time and size.

use crate::error::{self, ToolError};
use crate::format::civil;
use crate::reader::{self, Log, Need, ReadError};
use plugin_kit::civil::DateTime;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

/// Environment variable holding the logs directory (set by the host from
/// `--logs-dir`, the environment, or `.vscode/settings.json`).
pub const LOGS_DIR_VAR: &str = "ECU_LOGS_DIR";

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
}

impl LogDate {
    /// `2026-02-22 14:30 UTC` (the zone only when known).
    pub fn display(&self) -> String {
        let t = DateTime::from_unix_secs(self.secs);
        format!(
            "{} {:02}:{:02}{}",
            t.date_string(),
            t.hour,
            t.minute,
            if self.utc { " UTC" } else { "" }
        )
    }
}

fn date_regex() -> &'static regex_lite::Regex {
    static RE: OnceLock<regex_lite::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex_lite::Regex::new(
            r"(\d{4})[-._]?(\d{2})[-._]?(\d{2})[T_ -]?(\d{2})[-._:]?(\d{2})[-._:]?(\d{2})(?:[-.]\d{1,3})?(Z)?",
        )
        .expect("valid date regex")
    })
}

/// The recording time a file name carries: `log-2026-02-22T14-30-00-000Z`,
/// `EvoScanDataLog_2024.06.01_10.20.00`, `romraiderlog_20240601_102500`.
pub fn date_from_name(name: &str) -> Option<LogDate> {
    let caps = date_regex().captures(name)?;
    let n = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<i64>().ok());
    let secs = civil(n(1)?, n(2)?, n(3)?, n(4)?, n(5)?, n(6)?)?;
    Some(LogDate {
        secs,
        utc: caps.get(7).is_some(),
    })
}

/// `2024-06-01 10:20:00.03125` (EvoScan's first row).
pub fn date_from_clock(s: &str) -> Option<LogDate> {
    let (date, time) = s.trim().split_once(' ')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, mo, dd) = (d.next()??, d.next()??, d.next()??);
    let secs = reader::parse_clock(time)? as i64;
    Some(LogDate {
        // A clock of absurd hours (found by fuzzing) is no date, not an overflow.
        secs: civil(y, mo, dd, 0, 0, 0)?.checked_add(secs)?,
        utc: false,
    })
}

fn date_from_mtime(t: SystemTime) -> Option<LogDate> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(LogDate { secs, utc: true })
}

/// One CSV file of the logs directory.
#[derive(Debug, Clone)]
pub struct LogFile {
    /// The file name within the logs directory, as agents pass it in `file`.
    pub name: String,
    /// Full path, for reading and as the cache key.
    pub path: PathBuf,
    /// Modification time, when the filesystem gives one: with `size`, how the
    /// cache tells an unchanged file.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
}

/// The CSV files of `dir`, unordered.
pub fn scan_dir(dir: &Path) -> Result<Vec<LogFile>, ToolError> {
    // Every entry, even while files are renamed or deleted meanwhile.
    let entries = plugin_kit::paths::read_dir_entries(dir).map_err(|e| {
        ToolError::new(
            error::LOGS_DIR_UNREADABLE,
            format!(
                "cannot read the logs directory {}: {e}. Check --logs-dir / {LOGS_DIR_VAR} and \
                 that the host grants access to it.",
                dir.display()
            ),
        )
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.to_ascii_lowercase().ends_with(".csv") || name.starts_with('.') {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        files.push(LogFile {
            name,
            path: entry.path(),
            mtime: meta.modified().ok(),
            size: meta.len(),
        });
    }
    Ok(files)
}

/// Where a log's date came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateSource {
    /// The log's own text (a preamble, VCDS's first line, EvoScan's first row).
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
/// one its file name carries, else the file's modification time.
pub fn log_date(file: &LogFile, log: Option<&Log>) -> Option<(LogDate, DateSource)> {
    let own = log.and_then(|l| {
        l.start_date
            .map(|secs| LogDate { secs, utc: false })
            .or_else(|| l.start_clock.as_deref().and_then(date_from_clock))
    });
    own.map(|d| (d, DateSource::Log))
        .or_else(|| date_from_name(&file.name).map(|d| (d, DateSource::FileName)))
        .or_else(|| {
            file.mtime
                .and_then(date_from_mtime)
                .map(|d| (d, DateSource::Mtime))
        })
}

struct Entry {
    mtime: Option<SystemTime>,
    size: u64,
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
    failed: HashMap<PathBuf, (Option<SystemTime>, u64, ToolError)>,
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
            && e.mtime == file.mtime
            && e.size == file.size
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
        let read = plugin_kit::read_ahead::ReadAhead::open(&file.path)
            .map_err(|e| unreadable(format!("cannot read {}: {e}", file.name)))
            .and_then(|source| {
                reader::read_columns(source, file.size, &file.name, &need).map_err(|e| {
                    unreadable(match e {
                        ReadError::Io(e) => format!("cannot read {}: {e}", file.name),
                        e => format!("{} is not a log log-query understands: {e}", file.name),
                    })
                })
            });
        let log = match read {
            Ok(log) => log,
            Err(e) => {
                if self.failed.len() >= MAX_FAILED {
                    self.failed.clear();
                }
                self.failed
                    .insert(file.path.clone(), (file.mtime, file.size, e.clone()));
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
                mtime: file.mtime,
                size: file.size,
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
        let source = std::fs::File::open(&file.path)
            .map_err(|e| unreadable(format!("cannot read {}: {e}", file.name)))?;
        reader::read_head(source, &file.name)
            .map(Arc::new)
            .map_err(|e| {
                unreadable(match e {
                    ReadError::Io(e) => format!("cannot read {}: {e}", file.name),
                    e => format!("{} is not a log the reader understands: {e}", file.name),
                })
            })
    }

    /// The cached log (or why it cannot be read) of an unchanged file,
    /// without reading it.
    pub fn peek(&self, file: &LogFile) -> Option<Result<Arc<Log>, ToolError>> {
        if let Some(why) = self.known_failure(file) {
            return Some(Err(why));
        }
        self.entries
            .get(&file.path)
            .filter(|e| e.mtime == file.mtime && e.size == file.size)
            .map(|e| Ok(e.log.clone()))
    }

    /// Why an unchanged file could not be read last time, if it could not.
    fn known_failure(&self, file: &LogFile) -> Option<ToolError> {
        self.failed
            .get(&file.path)
            .filter(|(mtime, size, _)| *mtime == file.mtime && *size == file.size)
            .map(|(_, _, why)| why.clone())
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
    /// Every CSV file of the directory, newest first (undated ones last).
    pub files: Vec<Item>,
    /// Logs `parse_all` asked for and left unread when the time budget ran out.
    pub unread: usize,
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
        let files = scan_dir(dir)?;
        let total = files.len() as u64;
        let mut out: Vec<Item> = files
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
        Ok(Listing { files: out, unread })
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

    /// Finds a file by name (exact, then case-insensitive) or by its `#`.
    pub fn find(&self, wanted: &str) -> Result<usize, ToolError> {
        let w = wanted.trim();
        let base = Path::new(w)
            .file_name()
            .map_or(w.to_string(), |b| b.to_string_lossy().into_owned());
        if let Some(i) = self.files.iter().position(|f| f.file.name == base) {
            return Ok(i);
        }
        if let Some(i) = self
            .files
            .iter()
            .position(|f| f.file.name.eq_ignore_ascii_case(&base))
        {
            return Ok(i);
        }
        let index = w.trim_start_matches('#');
        if let Ok(n) = index.parse::<usize>()
            && (1..=self.files.len()).contains(&n)
        {
            return Ok(n - 1);
        }
        let names: Vec<&str> = self.files.iter().map(|f| f.file.name.as_str()).collect();
        let mut msg = format!(
            "no log file named `{}` in the logs directory",
            plugin_kit::text::clip(w)
        );
        if let Some(best) = crate::filter::closest(&base, &names) {
            msg.push_str(&format!("; did you mean `{best}`?"));
        }
        if names.is_empty() {
            msg.push_str(" (it holds no .csv files)");
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
}
