//! Files a plugin keeps in its own cache directory
//! ([`crate::paths::cache_dir`]). Servers started at once share the
//! directory, so each file is written whole through a temporary file of
//! its own renamed into place (a reader never sees half of one), and a
//! kind of file is pruned to its newest few, so the directory stays small
//! however many folders, logs or definitions a plugin has seen.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How old a temporary file must be before [`prune`] takes it for one a
/// stopped server left (rather than another server's write in flight).
const ABANDONED: Duration = Duration::from_secs(60);

/// Writes `bytes` to `path` through `path.<nanos>.tmp` renamed into place.
/// `now` tells concurrent writers' temporary files apart (WASI has no
/// process id).
pub fn replace(path: &Path, bytes: &[u8], now: SystemTime) -> Result<(), String> {
    let nonce = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{nonce:09}.tmp"));
    let temp = std::path::PathBuf::from(temp);
    std::fs::write(&temp, bytes).map_err(|e| format!("writing {}: {e}", temp.display()))?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("renaming {} into place: {e}", temp.display())
    })
}

/// Keeps the `keep` most recently written files of `dir` named
/// `{prefix}….{extension}` and removes the rest, with the temporary files
/// of that kind [`replace`] left more than a minute ago.
pub fn prune(dir: &Path, prefix: &str, extension: &str, keep: usize, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let suffix = format!(".{extension}");
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let Some(mtime) = entry.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        if name.ends_with(".tmp") {
            if now.duration_since(mtime).is_ok_and(|age| age > ABANDONED) {
                let _ = std::fs::remove_file(entry.path());
            }
        } else if name.ends_with(&suffix) {
            kept.push((mtime, entry.path()));
        }
    }
    if kept.len() > keep {
        kept.sort();
        for (_, path) in &kept[..kept.len() - keep] {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_of_a_kind_stay_and_old_temporaries_go() {
        let dir = std::env::temp_dir().join(format!("plugin-kit-cache-{:?}", SystemTime::now()));
        std::fs::create_dir_all(&dir).unwrap();
        let now = SystemTime::now();
        for i in 0..6u64 {
            let path = dir.join(format!("entry-{i}.bin"));
            replace(&path, b"x", now).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(now - Duration::from_secs(100 - i))
                .unwrap();
        }
        std::fs::write(dir.join("other.bin"), "another kind").unwrap();
        let stale = dir.join("entry-9.bin.1.tmp");
        let fresh = dir.join("entry-9.bin.2.tmp");
        for t in [&stale, &fresh] {
            std::fs::write(t, "half").unwrap();
        }
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(now - Duration::from_secs(120))
            .unwrap();
        prune(&dir, "entry-", "bin", 4, now);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "entry-2.bin",
                "entry-3.bin",
                "entry-4.bin",
                "entry-5.bin",
                "entry-9.bin.2.tmp",
                "other.bin"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
