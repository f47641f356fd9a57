//! Finding the logs of a logs directory and its subfolders (one per car, per
//! day, per logger, as users and loggers keep them): which files are logs,
//! their names relative to the directory (`car1/2025-07-18.csv`), and the
//! files read with them (an Emerald `.lg1`'s `.lg2`).
//!
//! The walk is bounded in depth, folders, entries and files opened to look
//! at their content; what a bound left out is said in [`Scan::notes`], so a
//! huge tree costs a bounded time and the listing says it is incomplete.

use crate::binary;
use crate::error::{self, ToolError};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// Environment variable holding the logs directory (set by the host from
/// `--logs-dir`, the environment, or `.vscode/settings.json`).
pub const LOGS_DIR_VAR: &str = "ECU_LOGS_DIR";

/// Subfolder levels searched below the logs directory.
pub const MAX_DEPTH: usize = 8;
/// Folders read at most.
pub const MAX_DIRS: usize = 5_000;
/// Directory entries looked at, at most.
pub const MAX_ENTRIES: usize = 200_000;
/// Files of other extensions opened to look for a binary log inside, at
/// most (each costs an open and a 256-byte read).
pub const MAX_SNIFFED: usize = 5_000;
/// Bytes of a file looked at to recognise a binary log by its content.
const SNIFF_BYTES: usize = 256;

/// Extensions that are logs whatever their content says.
const LOG_EXTENSIONS: [&str; 6] = ["csv", "mlg", "llg", "llg5", "emublog", "lg1"];
/// Extensions never logs by themselves (an `.lg2` is read with its `.lg1`).
const NOT_LOGS: [&str; 1] = ["lg2"];

/// The logs found, and what the bounds left out.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every log file found, in walk order (shallow folders first).
    pub files: Vec<LogFile>,
    /// What was not searched or not readable, in words (empty when the
    /// whole tree was searched).
    pub notes: Vec<String>,
    /// Folders read (the logs directory included).
    pub folders: usize,
}

/// A file read with a log (an Emerald `.lg1`'s `.lg2` channel list).
#[derive(Debug, Clone, PartialEq)]
pub struct Companion {
    /// Full path.
    pub path: PathBuf,
    /// Modification time, when the filesystem gives one.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
}

/// One log file of the logs directory or a subfolder.
#[derive(Debug, Clone)]
pub struct LogFile {
    /// The file's path relative to the logs directory, `/`-separated
    /// (`car1/2025-07-18.csv`), as agents pass it in `file`.
    pub name: String,
    /// Full path, for reading and as the cache key.
    pub path: PathBuf,
    /// Modification time, when the filesystem gives one: with `size`, how the
    /// cache tells an unchanged file.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// A file read with this one, when it has one.
    pub companion: Option<Companion>,
}

impl LogFile {
    /// The file name without its folders.
    pub fn base_name(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }
}

/// Walks `dir` and its subfolders for logs.
pub fn scan(dir: &Path) -> Result<Scan, ToolError> {
    scan_within(dir, Bounds::default())
}

/// The walk's bounds (smaller in tests).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub depth: usize,
    pub dirs: usize,
    pub entries: usize,
    pub sniffed: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            depth: MAX_DEPTH,
            dirs: MAX_DIRS,
            entries: MAX_ENTRIES,
            sniffed: MAX_SNIFFED,
        }
    }
}

pub(crate) fn scan_within(dir: &Path, bounds: Bounds) -> Result<Scan, ToolError> {
    let mut out = Scan::default();
    // Breadth first, so the bounds cut the deepest folders, not a whole
    // first subtree's siblings.
    let mut queue: VecDeque<(PathBuf, String, usize)> = VecDeque::new();
    queue.push_back((dir.to_path_buf(), String::new(), 0));
    let (mut entries_seen, mut sniffed) = (0usize, 0usize);
    let (mut too_deep, mut not_read_dirs, mut links) = (0usize, 0usize, 0usize);
    let mut unreadable: Vec<String> = Vec::new();
    let mut unsniffed = 0usize;
    let mut stopped = false;
    while let Some((path, prefix, depth)) = queue.pop_front() {
        if out.folders == bounds.dirs {
            not_read_dirs += 1 + queue.len();
            break;
        }
        let entries = match plugin_kit::paths::read_dir_entries(&path) {
            Ok(e) => e,
            Err(e) if depth == 0 => {
                return Err(ToolError::new(
                    error::LOGS_DIR_UNREADABLE,
                    format!(
                        "cannot read the logs directory {}: {e}. Check --logs-dir / \
                         {LOGS_DIR_VAR} and that the host grants access to it.",
                        dir.display()
                    ),
                ));
            }
            Err(e) => {
                unreadable.push(format!("{prefix} ({e})"));
                continue;
            }
        };
        out.folders += 1;
        // `.lg2` channel lists by lower-case stem, for their `.lg1`.
        let lists: HashMap<String, PathBuf> = entries
            .iter()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let (stem, ext) = name.rsplit_once('.')?;
                ext.eq_ignore_ascii_case("lg2")
                    .then(|| (stem.to_lowercase(), e.path()))
            })
            .collect();
        for entry in entries {
            if entries_seen == bounds.entries {
                stopped = true;
                break;
            }
            entries_seen += 1;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let relative = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // Symlinked folders are not followed: a link to a parent would
            // walk the same tree again and again.
            let meta = if kind.is_symlink() {
                match std::fs::metadata(entry.path()) {
                    Ok(m) if m.is_dir() => {
                        links += 1;
                        continue;
                    }
                    Ok(m) => m,
                    Err(_) => continue,
                }
            } else if kind.is_dir() {
                if depth + 1 > bounds.depth {
                    too_deep += 1;
                } else {
                    queue.push_back((entry.path(), relative, depth + 1));
                }
                continue;
            } else {
                match entry.metadata() {
                    Ok(m) => m,
                    Err(_) => continue,
                }
            };
            if !meta.is_file() {
                continue;
            }
            let ext = binary::extension(&name);
            let is_log = if LOG_EXTENSIONS.contains(&ext.as_str()) {
                true
            } else if NOT_LOGS.contains(&ext.as_str()) || meta.len() == 0 {
                false
            } else {
                let stamp = (meta.modified().ok(), meta.len());
                match sniffed_before(&entry.path(), stamp) {
                    Some(known) => known,
                    None if sniffed < bounds.sniffed => {
                        sniffed += 1;
                        let found = sniff_file(&entry.path(), &name);
                        remember_sniff(entry.path(), stamp, found);
                        found
                    }
                    None => {
                        unsniffed += 1;
                        false
                    }
                }
            };
            if !is_log {
                continue;
            }
            let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
            let companion = lists.get(&stem.to_lowercase()).and_then(|p| {
                let m = std::fs::metadata(p).ok()?;
                Some(Companion {
                    path: p.clone(),
                    mtime: m.modified().ok(),
                    size: m.len(),
                })
            });
            out.files.push(LogFile {
                name: relative,
                path: entry.path(),
                mtime: meta.modified().ok(),
                size: meta.len(),
                companion,
            });
        }
        if stopped {
            not_read_dirs += queue.len();
            break;
        }
    }
    if stopped {
        out.notes.push(format!(
            "stopped after looking at {} entries: logs further on are not listed (keep fewer \
             files under the logs directory, or point it at one car's folder)",
            bounds.entries
        ));
    }
    if not_read_dirs > 0 {
        out.notes.push(format!(
            "{not_read_dirs} folders were not searched (at most {} are read)",
            bounds.dirs
        ));
    }
    if too_deep > 0 {
        out.notes.push(format!(
            "{too_deep} folders deeper than {} levels below the logs directory were not searched",
            bounds.depth
        ));
    }
    if links > 0 {
        out.notes.push(format!(
            "{links} symlinked folders were not followed (a link can lead back into the tree)"
        ));
    }
    if !unreadable.is_empty() {
        let shown: Vec<&str> = unreadable.iter().take(5).map(String::as_str).collect();
        out.notes.push(format!(
            "{} subfolders could not be read: {}{}",
            unreadable.len(),
            shown.join(", "),
            if unreadable.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    if unsniffed > 0 {
        out.notes.push(format!(
            "{unsniffed} files of other extensions were not opened to look for binary logs (at \
             most {} are); give logs their usual extension",
            bounds.sniffed
        ));
    }
    Ok(out)
}

/// What a file's size and mtime were when its content was looked at.
type Stamp = (Option<SystemTime>, u64);

/// Files of other extensions looked at, while unchanged: every call lists
/// the tree again, and opening each such file on every call would cost
/// more than the walk.
fn sniffs() -> &'static Mutex<HashMap<PathBuf, (Stamp, bool)>> {
    static SNIFFS: OnceLock<Mutex<HashMap<PathBuf, (Stamp, bool)>>> = OnceLock::new();
    SNIFFS.get_or_init(Default::default)
}

/// Results remembered at most (then forgotten, and looked at again).
const MAX_REMEMBERED: usize = 100_000;

fn sniffed_before(path: &Path, stamp: Stamp) -> Option<bool> {
    let sniffs = sniffs().lock().unwrap_or_else(|p| p.into_inner());
    sniffs
        .get(path)
        .filter(|(s, _)| *s == stamp)
        .map(|&(_, found)| found)
}

fn remember_sniff(path: PathBuf, stamp: Stamp, found: bool) {
    let mut sniffs = sniffs().lock().unwrap_or_else(|p| p.into_inner());
    if sniffs.len() >= MAX_REMEMBERED {
        sniffs.clear();
    }
    sniffs.insert(path, (stamp, found));
}

/// True when the file's first bytes are a binary log's.
fn sniff_file(path: &Path, name: &str) -> bool {
    let Ok(file) = plugin_kit::paths::open_regular_file(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    if std::io::Read::read_to_end(
        &mut std::io::Read::take(file, SNIFF_BYTES as u64),
        &mut head,
    )
    .is_err()
    {
        return false;
    }
    binary::sniff(&head, name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("logq-scan-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn subfolders_are_walked_with_relative_names() {
        let dir = tree("walk");
        for (path, body) in [
            ("top.csv", "Time,RPM\n0,1\n"),
            ("car1/2025-07-18.csv", "Time,RPM\n0,1\n"),
            ("car1/day2/pull.CSV", "Time,RPM\n0,1\n"),
            ("car1/notes.txt", "not a log"),
            ("car2/EM Log.lg1", "x"),
            ("car2/EM Log.LG2", "[chan1]\n19\n"),
            ("car2/orphan.lg2", "[chan1]\n19\n"),
            ("car2/.hidden.csv", "Time\n0\n"),
            ("car2/renamed.daq", "MLVLG\0\0\x01"),
        ] {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let scan = scan(&dir).unwrap();
        let names: Vec<&str> = scan.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "top.csv",
                "car1/2025-07-18.csv",
                "car2/EM Log.lg1",
                "car2/renamed.daq",
                "car1/day2/pull.CSV"
            ]
        );
        let em = &scan.files[2];
        assert!(em.companion.as_ref().unwrap().path.ends_with("EM Log.LG2"));
        assert!(scan.notes.is_empty(), "{:?}", scan.notes);
        assert_eq!(scan.folders, 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_bound_is_reported() {
        let dir = tree("bounds");
        let mut deep = dir.clone();
        for level in 0..5 {
            deep = deep.join(format!("l{level}"));
            std::fs::create_dir_all(&deep).unwrap();
            std::fs::write(deep.join("a.csv"), "Time\n0\n").unwrap();
            std::fs::write(deep.join("b.bin"), "????").unwrap();
        }
        let small = |depth, dirs, entries, sniffed| Bounds {
            depth,
            dirs,
            entries,
            sniffed,
        };
        let s = scan_within(&dir, small(8, 100, 1000, 2)).unwrap();
        assert_eq!(s.files.len(), 5);
        assert!(
            s.notes[0].contains("3 files of other extensions"),
            "{:?}",
            s.notes
        );
        // The same bound again: the two looked at are remembered.
        let s = scan_within(&dir, small(8, 100, 1000, 2)).unwrap();
        assert!(
            s.notes[0].contains("1 files of other extensions"),
            "{:?}",
            s.notes
        );
        let s = scan_within(&dir, small(2, 100, 1000, 100)).unwrap();
        assert_eq!(s.files.len(), 2);
        assert!(
            s.notes[0].contains("1 folders deeper than 2 levels"),
            "{:?}",
            s.notes
        );
        let s = scan_within(&dir, small(8, 3, 1000, 100)).unwrap();
        assert!(
            s.notes[0].contains("folders were not searched (at most 3"),
            "{:?}",
            s.notes
        );
        let s = scan_within(&dir, small(8, 100, 4, 100)).unwrap();
        assert!(
            s.notes[0].contains("stopped after looking at 4 entries"),
            "{:?}",
            s.notes
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_folders_are_not_followed() {
        let dir = tree("links");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/x.csv"), "Time\n0\n").unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("a/loop")).unwrap();
        let s = scan(&dir).unwrap();
        assert_eq!(s.files.len(), 1);
        assert!(s.notes[0].contains("1 symlinked folders"), "{:?}", s.notes);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
