//! Rewriting a user's file from inside the sandbox without losing anything:
//! one writer at a time across processes, a whole image under the file's
//! name at every moment, and the file's own inode (so its mode and owner)
//! kept.
//!
//! **The lock.** WASI preview 2 has no `flock`, and a guest cannot ask
//! whether another process is alive, so the lock is a file beside the target
//! (`.NAME.lock.tmp`) made with an exclusive create. Its holder rewrites it
//! with a growing counter (a heartbeat) between the steps of its work; a
//! waiter breaks it only after watching it stay byte-for-byte unchanged for
//! [`LEASE`] on its own monotonic clock (so wall-clock jumps and coarse
//! mtimes cannot make a live lock look old). The holder beats right before
//! each rename and checks that the lock file still carries its nonce
//! (fencing), so a holder stalled past the lease stops with an error instead
//! of overwriting a newer image. What remains: a holder stalled more than
//! [`LEASE`] *inside* one rename call; the lease is chosen to be far above
//! what one rename costs.
//!
//! **Temp files.** Every temp file of a target is made under its lock, so any
//! temp file found by a new holder belongs to a writer that is gone (killed,
//! or fenced off): the holder sweeps them. Nothing else ever removes them.
//!
//! **Mode and owner.** WASI stats carry no permission bits and WASI has no
//! `chmod`, so a fresh temp file renamed over the target would get the host's
//! default mode (a mode-600 ROM became 644). Instead [`replace`] keeps the
//! target's inode: it gives the inode a second name (a hard link), puts a
//! copy of the current image under the target's name, rewrites the inode
//! through its second name, and renames it back. Readers of the path see the
//! old image, then the copy of it, then the new one; a crash leaves the old
//! image (or the new) under the name. The trade-off: for the few
//! milliseconds of the rewrite the path shows the copy, which has the
//! default mode, and after a crash inside that window the copy stays, so the
//! file keeps its content but not its mode. Where hard links are not
//! available (FAT, some network shares) it falls back to a plain
//! write-then-rename, which keeps content safe but not the mode.

use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How long a lock must stay unchanged before a waiter may break it. A holder
/// beats at least every [`BEAT_EVERY`] while it writes, so this is many
/// times the longest gap between beats of a live holder.
pub const LEASE: Duration = Duration::from_secs(5);

/// How often a holder refreshes its lock while working.
pub const BEAT_EVERY: Duration = Duration::from_millis(250);

/// How long [`FileLock::acquire`] waits by default: well inside the host's
/// default 30 s call deadline, so the caller gets our error, not a reset.
pub const WAIT: Duration = Duration::from_secs(20);

/// Symlinks followed before giving up (a loop, or a hostile chain).
pub const MAX_LINKS: usize = 16;

/// Bytes written between two heartbeats.
const CHUNK: usize = 1 << 20;

/// Temp files moved aside while breaking a lock are swept only once this old,
/// so a waiter that is putting a live lock back is never disturbed.
const ASIDE_GRACE: Duration = Duration::from_secs(60);

/// Follows symlinks in the last component of `path` to the file they name,
/// so that a write lands in the file rather than replacing the link. A path
/// that is not a link (or does not exist) is returned as is; the caller's
/// open reports a missing file. A link whose target cannot be reached (for
/// example outside the granted directories) is an error naming both.
pub fn resolve_links(path: &Path) -> Result<PathBuf, String> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                // The sandbox will not read a link whose text is absolute or
                // climbs out of its directory grant (it would not follow it
                // either), so the link cannot be patched: say so.
                let target = fs::read_link(&current).map_err(|e| {
                    format!(
                        "{} is a symlink the sandbox does not follow (an absolute target, or one outside the granted directories: {e}); pass the path of the file it points to instead",
                        crate::paths::shown(&current)
                    )
                })?;
                let next = if target.is_absolute() {
                    target
                } else {
                    parent_dir(&current).join(target)
                };
                if let Err(e) = fs::symlink_metadata(&next) {
                    return Err(format!(
                        "{} is a symlink to {}, which {}",
                        crate::paths::shown(path),
                        crate::paths::shown(&next),
                        crate::paths::explain_io_error(&next, &e, true)
                    ));
                }
                current = next;
            }
            _ => return Ok(current),
        }
    }
    Err(format!(
        "{} goes through more than {MAX_LINKS} symlinks (a loop?); pass the file itself",
        crate::paths::shown(path)
    ))
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn split(path: &Path) -> Result<(&Path, String), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{} has no file name", crate::paths::shown(path)))?;
    Ok((parent_dir(path), name))
}

/// A fresh 64-bit value per call: the host's random source (through the
/// standard hasher's keys) mixed with the clock and a counter.
fn nonce() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.finish()
}

/// The lock file guarding `target`.
pub fn lock_path(target: &Path) -> Result<PathBuf, String> {
    let (dir, name) = split(target)?;
    Ok(dir.join(format!(".{name}.lock.tmp")))
}

/// An exclusive lock on one file, held until dropped (see the module notes).
#[derive(Debug)]
pub struct FileLock {
    path: PathBuf,
    file: fs::File,
    nonce: u64,
    beats: u64,
    last_beat: Instant,
}

impl FileLock {
    /// Takes the lock on `target`, waiting up to `wait` for a live holder and
    /// breaking a lock that stays unchanged for [`LEASE`].
    pub fn acquire(target: &Path, wait: Duration) -> Result<Self, String> {
        let path = lock_path(target)?;
        let nonce = nonce();
        let start = Instant::now();
        // What the lock held when first seen, and since when (monotonic).
        let mut seen: Option<(Vec<u8>, Instant)> = None;
        let mut pause = Duration::from_millis(2);
        loop {
            match fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    let mut lock = Self {
                        path,
                        file,
                        nonce,
                        beats: 0,
                        last_beat: Instant::now(),
                    };
                    lock.beat_now()?;
                    return Ok(lock);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(format!(
                        "cannot create the lock file beside it: {}",
                        crate::paths::explain_io_error(&path, &e, true)
                    ));
                }
            }
            match fs::read(&path) {
                Ok(content) => match &seen {
                    Some((before, since)) if *before == content => {
                        if since.elapsed() >= LEASE {
                            break_stale(&path, &content)?;
                            seen = None;
                            continue;
                        }
                    }
                    _ => seen = Some((content, Instant::now())),
                },
                // Released between our create and our read: try again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    seen = None;
                    continue;
                }
                Err(e) => {
                    return Err(format!(
                        "cannot read the lock file {}: {e}",
                        crate::paths::shown(&path)
                    ));
                }
            }
            if start.elapsed() >= wait {
                return Err(format!(
                    "another call has been writing it for over {} s and is still working (lock file {}); try again later. If no benchtop process is running, delete the lock file",
                    wait.as_secs(),
                    crate::paths::shown(&path)
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn content(&self) -> String {
        // Fixed width, so a rewrite never leaves a stale tail.
        format!(
            "benchtop write lock {:016x} beat {:016x}\n",
            self.nonce, self.beats
        )
    }

    /// Refreshes the lock when the last beat is older than [`BEAT_EVERY`].
    pub fn beat(&mut self) -> Result<(), String> {
        if self.last_beat.elapsed() >= BEAT_EVERY {
            self.beat_now()?;
        }
        Ok(())
    }

    /// Refreshes the lock now.
    pub fn beat_now(&mut self) -> Result<(), String> {
        self.beats += 1;
        let content = self.content();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.write_all(content.as_bytes()))
            .map_err(|e| {
                format!(
                    "cannot update the lock file {}: {e}",
                    crate::paths::shown(&self.path)
                )
            })?;
        self.last_beat = Instant::now();
        Ok(())
    }

    /// Beats, then checks that the lock file is still ours: a holder that
    /// stalled past [`LEASE`] may have lost it, and must then not write.
    pub fn confirm(&mut self) -> Result<(), String> {
        self.beat_now()?;
        let ours = self.content();
        match fs::read(&self.path) {
            Ok(now) if now == ours.as_bytes() => Ok(()),
            _ => Err(format!(
                "the write lock {} was taken over by another call while this one stalled for over {} s; nothing was written, try again",
                crate::paths::shown(&self.path),
                LEASE.as_secs()
            )),
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Remove it only while it is still ours.
        if fs::read(&self.path).is_ok_and(|now| now == self.content().as_bytes()) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Moves a lock that stayed `stale` for the whole lease out of the way. The
/// move is a rename to a name of our own, so of several waiters breaking the
/// same lock only one gets it; if what we moved is not the stale content (a
/// new holder took the name in between), it is linked back, which fails only
/// if yet another holder exists, whose fencing then stops the loser.
fn break_stale(path: &Path, stale: &[u8]) -> Result<(), String> {
    let aside = path.with_file_name(format!(
        "{}.{:016x}.aside.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        nonce()
    ));
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(format!(
                "the lock file {} has not changed for {} s (its writer is gone) but cannot be removed: {e}; delete it",
                crate::paths::shown(path),
                LEASE.as_secs()
            ));
        }
    }
    if fs::read(&aside).is_ok_and(|moved| moved != stale) {
        let _ = fs::hard_link(&aside, path);
    }
    let _ = fs::remove_file(&aside);
    Ok(())
}

/// Removes temp files of `target` left by writers that are gone. Call only
/// while holding its lock: every temp file is made under the lock, so none
/// of them can belong to a live holder, except a lock being put back by a
/// waiter (`*.aside.tmp`, left alone for a minute).
pub fn sweep_temps(target: &Path, lock: &FileLock) -> Result<usize, String> {
    let (dir, name) = split(target)?;
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if !file.starts_with(&prefix) || !file.ends_with(".tmp") {
            continue;
        }
        let path = entry.path();
        if path == lock.path {
            continue;
        }
        if file.ends_with(".aside.tmp") {
            let young = fs::symlink_metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_none_or(|age| age < ASIDE_GRACE);
            if young {
                continue;
            }
        }
        if fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Writes `bytes` to a new file at `path` (which must not exist), beating
/// the lock between chunks, and flushes it to disk.
fn write_new(path: &Path, bytes: &[u8], lock: &mut FileLock) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    write_chunks(&mut file, bytes, lock)?;
    file.sync_all()
}

fn write_chunks(file: &mut fs::File, bytes: &[u8], lock: &mut FileLock) -> io::Result<()> {
    let mut at = 0u64;
    for chunk in bytes.chunks(CHUNK) {
        crate::file_io::write_all_at(file, chunk, at)?;
        at += chunk.len() as u64;
        lock.beat().map_err(io::Error::other)?;
    }
    Ok(())
}

/// The granularity of [`write_changes`]: a page, what the file system
/// writes anyway when a byte of it changes.
const PAGE: usize = 4 << 10;

/// Writes into `file`, which holds `old`, the pages where `new` (as long
/// as `old`) differs, beating the lock between chunks.
fn write_changes(
    file: &mut fs::File,
    old: &[u8],
    new: &[u8],
    lock: &mut FileLock,
) -> io::Result<()> {
    for (at, (old, new)) in old.chunks(CHUNK).zip(new.chunks(CHUNK)).enumerate() {
        let base = at * CHUNK;
        let pages = old.chunks(PAGE).zip(new.chunks(PAGE)).enumerate();
        // Runs of differing pages, each written at once.
        let mut run: Option<(usize, usize)> = None;
        for (i, (a, b)) in pages {
            // Not `!=`: in a component that is a byte-at-a-time memcmp.
            match (!crate::bytes::same(a, b), run) {
                (true, None) => run = Some((i * PAGE, i * PAGE + b.len())),
                (true, Some((from, _))) => run = Some((from, i * PAGE + b.len())),
                (false, Some((from, to))) => {
                    crate::file_io::write_all_at(file, &new[from..to], (base + from) as u64)?;
                    run = None;
                }
                (false, None) => {}
            }
        }
        if let Some((from, to)) = run {
            crate::file_io::write_all_at(file, &new[from..to], (base + from) as u64)?;
        }
        lock.beat().map_err(io::Error::other)?;
    }
    Ok(())
}

/// Replaces the content of `target` (a regular file, links already resolved
/// with [`resolve_links`]) with `bytes`, keeping its inode, while holding its
/// `lock`. On error the target still holds a whole image (the old one), and
/// the message says what failed.
pub fn replace(target: &Path, bytes: &[u8], lock: &mut FileLock) -> Result<(), String> {
    replace_over(target, None, bytes, lock)
}

/// [`replace`] for a caller that read the target's content, `current`,
/// while holding `lock` (and checked nothing changed it since): the copy
/// of the old image is written from it instead of reading the file again.
/// A `current` of another length than the file is not trusted.
pub fn replace_known(
    target: &Path,
    current: &[u8],
    bytes: &[u8],
    lock: &mut FileLock,
) -> Result<(), String> {
    replace_over(target, Some(current), bytes, lock)
}

fn replace_over(
    target: &Path,
    known: Option<&[u8]>,
    bytes: &[u8],
    lock: &mut FileLock,
) -> Result<(), String> {
    let (dir, name) = split(target)?;
    let explain = |p: &Path, e: &io::Error| crate::paths::explain_io_error(p, e, true);
    let meta = fs::symlink_metadata(target).map_err(|e| explain(target, &e))?;
    if !meta.is_file() {
        return Err(format!(
            "{} is not a regular file",
            crate::paths::shown(target)
        ));
    }
    sweep_temps(target, lock)?;
    let keep = dir.join(format!(".{name}.inode.tmp"));
    let copy = dir.join(format!(".{name}.old.tmp"));

    // 1. A second name for the file's own inode (the one with its mode).
    if fs::hard_link(target, &keep).is_err() {
        return replace_by_rename(target, dir, &name, bytes, lock);
    }
    // 2. A copy of the current image takes the file's name meanwhile.
    let undo_link = |why: String| {
        let _ = fs::remove_file(&keep);
        let _ = fs::remove_file(&copy);
        why
    };
    let read;
    let current = match known {
        Some(known) if known.len() as u64 == meta.len() => known,
        _ => {
            read = crate::file_io::read(target).map_err(|e| undo_link(explain(target, &e)))?;
            &read[..]
        }
    };
    write_new(&copy, current, lock).map_err(|e| {
        undo_link(format!(
            "writing {} failed ({e})",
            crate::paths::shown(&copy)
        ))
    })?;
    lock.confirm().map_err(undo_link)?;
    fs::rename(&copy, target).map_err(|e| {
        undo_link(format!(
            "renaming {} failed ({e})",
            crate::paths::shown(&copy)
        ))
    })?;

    // 3. Rewrite the inode through its second name; the path shows the copy.
    // The inode holds `current`: only what differs is written (a patch
    // changes a few bytes of a ROM, not the whole of it).
    let rewrite = (|| {
        let mut file = fs::OpenOptions::new().write(true).open(&keep)?;
        if current.len() == bytes.len() {
            write_changes(&mut file, current, bytes, lock)?;
        } else {
            write_chunks(&mut file, bytes, lock)?;
            file.set_len(bytes.len() as u64)?;
        }
        file.sync_all()
    })();
    if let Err(e) = rewrite {
        // The copy under the name is the whole old image; the inode may be
        // half-written, so it goes (content kept, mode lost: say so).
        let _ = fs::remove_file(&keep);
        return Err(format!(
            "rewriting {} failed ({e}); the old image is in place, but as a new file, so check its permissions",
            crate::paths::shown(&keep)
        ));
    }
    // 4. Put the inode back under the name.
    if let Err(why) = lock.confirm() {
        let _ = fs::remove_file(&keep);
        return Err(why);
    }
    if let Err(e) = fs::rename(&keep, target) {
        let _ = fs::remove_file(&keep);
        return Err(format!(
            "renaming {} back failed ({e}); the old image is in place, but as a new file, so check its permissions",
            crate::paths::shown(&keep)
        ));
    }
    sync_dir(dir);
    Ok(())
}

/// Where hard links are refused: the new image in a fresh file renamed over
/// the target (whole images only, but the mode is the host's default).
fn replace_by_rename(
    target: &Path,
    dir: &Path,
    name: &str,
    bytes: &[u8],
    lock: &mut FileLock,
) -> Result<(), String> {
    let tmp = dir.join(format!(".{name}.new.tmp"));
    let result = write_new(&tmp, bytes, lock)
        .map_err(|e| {
            format!(
                "cannot write beside it: {}",
                crate::paths::explain_io_error(&tmp, &e, true)
            )
        })
        .and_then(|()| lock.confirm())
        .and_then(|()| {
            fs::rename(&tmp, target)
                .map_err(|e| format!("renaming {} failed ({e})", crate::paths::shown(&tmp)))
        });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(dir);
    Ok(())
}

/// Makes renames durable where directories can be synced.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "plugin-kit-safe-write-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn an_image_as_long_as_the_old_is_written_where_it_differs() {
        let dir = scratch("changes");
        let rom = dir.join("r.bin");
        let old: Vec<u8> = (0..CHUNK * 2 + CHUNK / 2 + 3)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        fs::write(&rom, &old).unwrap();
        let mut new = old.clone();
        // First byte, both sides of a page edge, a run over a chunk edge,
        // and the last byte (a short last page).
        let last = new.len() - 1;
        for at in [0, PAGE - 1, PAGE, CHUNK - 2, CHUNK + 1, 3 * PAGE + 17, last] {
            new[at] ^= 0x5A;
        }
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace(&rom, &new, &mut lock).unwrap();
        drop(lock);
        assert!(
            fs::read(&rom).unwrap() == new,
            "the file holds the new image"
        );
        // Unchanged again: nothing differs, nothing is written.
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace(&rom, &new, &mut lock).unwrap();
        drop(lock);
        assert!(fs::read(&rom).unwrap() == new);
        assert_eq!(names(&dir), ["r.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// With the content the caller read under the lock, the file ends as
    /// the new image; a `current` whose length is not the file's is not
    /// trusted (the file is read instead), so nothing of it is written.
    #[test]
    fn a_known_old_image_is_used_only_when_it_can_be_the_file() {
        let dir = scratch("known");
        let rom = dir.join("r.bin");
        let old: Vec<u8> = (0..3 * PAGE + 5).map(|i| (i % 253) as u8).collect();
        fs::write(&rom, &old).unwrap();
        let mut new = old.clone();
        new[PAGE + 3] ^= 0xA5;
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace_known(&rom, &old, &new, &mut lock).unwrap();
        drop(lock);
        assert!(
            fs::read(&rom).unwrap() == new,
            "the file holds the new image"
        );
        let stale = vec![0u8; 7];
        let newer: Vec<u8> = new.iter().map(|b| b.wrapping_add(1)).collect();
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace_known(&rom, &stale, &newer, &mut lock).unwrap();
        drop(lock);
        assert!(fs::read(&rom).unwrap() == newer);
        assert_eq!(names(&dir), ["r.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn replace_keeps_the_inode_and_sweeps_dead_temps() {
        let dir = scratch("replace");
        let rom = dir.join("r.bin");
        fs::write(&rom, b"old").unwrap();
        fs::write(dir.join(".r.bin.dead.tmp"), b"torn").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&rom, fs::Permissions::from_mode(0o600)).unwrap();
        }
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace(&rom, b"new image", &mut lock).unwrap();
        assert_eq!(names(&dir), [".r.bin.lock.tmp", "r.bin"]);
        drop(lock);
        assert_eq!(fs::read(&rom).unwrap(), b"new image");
        assert_eq!(names(&dir), ["r.bin"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&rom).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // Shorter images truncate.
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        replace(&rom, b"x", &mut lock).unwrap();
        drop(lock);
        assert_eq!(fs::read(&rom).unwrap(), b"x");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_live_lock_is_waited_for_and_a_dead_one_broken() {
        let dir = scratch("lock");
        let rom = dir.join("r.bin");
        fs::write(&rom, b"x").unwrap();
        let held = FileLock::acquire(&rom, WAIT).unwrap();
        let t = Instant::now();
        let e = FileLock::acquire(&rom, Duration::from_millis(300)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(300));
        assert!(
            e.contains("still working") && e.contains(".r.bin.lock.tmp"),
            "{e}"
        );
        // A holder that keeps beating is never broken, even past the lease.
        let beating = std::thread::spawn(move || {
            let mut held = held;
            let until = Instant::now() + LEASE + Duration::from_secs(1);
            while Instant::now() < until {
                held.beat().unwrap();
                std::thread::sleep(Duration::from_millis(50));
            }
            held.confirm().unwrap();
        });
        let e = FileLock::acquire(&rom, LEASE + Duration::from_millis(500)).unwrap_err();
        assert!(e.contains("still working"), "{e}");
        beating.join().unwrap();
        assert_eq!(names(&dir), ["r.bin"], "a released lock is removed");

        // A holder that died (its lock left behind, never beating again).
        let dead = FileLock::acquire(&rom, WAIT).unwrap();
        std::mem::forget(dead);
        let t = Instant::now();
        let mut lock = FileLock::acquire(&rom, WAIT).unwrap();
        assert!(t.elapsed() >= LEASE, "broken only after the lease");
        lock.confirm().unwrap();
        drop(lock);
        assert_eq!(names(&dir), ["r.bin"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_holder_whose_lock_was_taken_over_does_not_write() {
        let dir = scratch("fence");
        let rom = dir.join("r.bin");
        fs::write(&rom, b"old").unwrap();
        let mut slow = FileLock::acquire(&rom, WAIT).unwrap();
        // Someone broke it and took the lock.
        fs::remove_file(lock_path(&rom).unwrap()).unwrap();
        let other = FileLock::acquire(&rom, WAIT).unwrap();
        let e = replace(&rom, b"new", &mut slow).unwrap_err();
        assert!(e.contains("taken over"), "{e}");
        assert_eq!(fs::read(&rom).unwrap(), b"old");
        drop(slow);
        assert!(lock_path(&rom).unwrap().exists(), "the other's lock stays");
        drop(other);
        let _ = fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn links_resolve_to_their_target() {
        let dir = scratch("links");
        let real = dir.join("real.bin");
        fs::write(&real, b"x").unwrap();
        std::os::unix::fs::symlink("real.bin", dir.join("a.bin")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.bin"), dir.join("b.bin")).unwrap();
        let got = resolve_links(&dir.join("b.bin")).unwrap();
        assert_eq!(
            fs::canonicalize(got).unwrap(),
            fs::canonicalize(&real).unwrap()
        );
        assert_eq!(resolve_links(&real).unwrap(), real);
        std::os::unix::fs::symlink("loop.bin", dir.join("loop.bin")).unwrap();
        let e = resolve_links(&dir.join("loop.bin")).unwrap_err();
        assert!(e.contains("symlinks"), "{e}");
        std::os::unix::fs::symlink("missing.bin", dir.join("dangling.bin")).unwrap();
        let e = resolve_links(&dir.join("dangling.bin")).unwrap_err();
        assert!(e.contains("is a symlink to"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }
}
