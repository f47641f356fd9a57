//! Path resolution inside the sandbox.
//!
//! The host maps every allowed directory at its own path inside the guest and
//! tells the guest its workspace directory through `BENCHTOP_WORKSPACE`, so a
//! tool argument may be absolute (used as is) or workspace-relative.

use std::path::{Path, PathBuf};

/// Environment variable through which the host passes the workspace directory.
pub const WORKSPACE_VAR: &str = "BENCHTOP_WORKSPACE";

/// The workspace directory, when the host set one.
pub fn workspace() -> Option<PathBuf> {
    std::env::var_os(WORKSPACE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Environment variable through which the host names the plugin's own
/// cache directory.
pub const CACHE_VAR: &str = "BENCHTOP_PLUGIN_CACHE";

/// The plugin's own cache directory (read-write, kept between runs), when
/// the host keeps one. What a plugin reads back from it is its own earlier
/// writing, but still input: check it, and treat anything odd as absent.
pub fn cache_dir() -> Option<PathBuf> {
    std::env::var_os(CACHE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Environment variable through which the host names the plugin's code.
pub const CODE_VAR: &str = "BENCHTOP_PLUGIN_CODE";

/// The plugin's own code (the first eight bytes of its component's
/// SHA-256), when the host says: what it keeps in its cache directory is
/// what this code decided, and another build may decide otherwise.
pub fn own_code() -> Option<u64> {
    let hex = std::env::var(CODE_VAR).ok()?;
    u64::from_str_radix(&hex, 16).ok()
}

/// Resolves a user-supplied path: absolute paths stay as they are, relative
/// ones are joined to the workspace directory (or left relative when there is
/// none). `.` and `..` are resolved lexically, since the sandbox shows granted
/// directories only at their canonical paths: `/a/b/../c` must mean `/a/c`.
pub fn resolve(path: impl AsRef<Path>) -> PathBuf {
    resolve_against(path.as_ref(), workspace().as_deref())
}

/// [`resolve`] with an explicit workspace, for tests.
pub fn resolve_against(path: &Path, workspace: Option<&Path>) -> PathBuf {
    match workspace {
        Some(ws) if path.is_relative() => normalize(&ws.join(path)),
        _ if path.is_absolute() => normalize(path),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_workspace() {
        let ws = Path::new("/work/ws");
        assert_eq!(
            resolve_against(Path::new("roms/a.bin"), Some(ws)),
            PathBuf::from("/work/ws/roms/a.bin")
        );
        assert_eq!(
            resolve_against(Path::new("/abs/a.bin"), Some(ws)),
            PathBuf::from("/abs/a.bin")
        );
        assert_eq!(
            resolve_against(Path::new("a.bin"), None),
            PathBuf::from("a.bin")
        );
        assert_eq!(
            resolve_against(Path::new("/work/main/../shared/x"), Some(ws)),
            PathBuf::from("/work/shared/x")
        );
    }
}

/// Environment variable through which the host lists the directories a
/// plugin may use, one per line as `ro /path` or `rw /path`.
pub const ALLOWED_VAR: &str = "BENCHTOP_ALLOWED_DIRS";

/// A directory the host granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its path (the same inside and outside the sandbox).
    pub path: PathBuf,
    /// Whether the plugin may write there.
    pub writable: bool,
}

/// The directories the host granted this plugin.
pub fn allowed_roots() -> Vec<Root> {
    parse_roots(&std::env::var(ALLOWED_VAR).unwrap_or_default())
}

fn parse_roots(text: &str) -> Vec<Root> {
    text.lines()
        .filter_map(|line| {
            let (access, path) = line.split_once(' ')?;
            Some(Root {
                path: PathBuf::from(path),
                writable: access == "rw",
            })
        })
        .collect()
}

/// Removes `.` and `..` components without touching the filesystem (the
/// sandbox cannot see outside its roots, so it cannot canonicalize).
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Explains a failed file operation on `path` in terms a user can act on:
/// outside every granted directory, in a read-only one, or the OS error.
/// Outside benchtop (no grants listed, as in native tests) it is the OS error.
pub fn explain_io_error(path: &Path, err: &std::io::Error, writing: bool) -> String {
    if std::env::var_os(ALLOWED_VAR).is_none() {
        return format!("`{}`: {}", shown(path), describe_kind(err));
    }
    explain_with_roots(path, err, writing, &allowed_roots())
}

fn explain_with_roots(path: &Path, err: &std::io::Error, writing: bool, roots: &[Root]) -> String {
    let abs = normalize(&resolve(path));
    let list = || {
        if roots.is_empty() {
            "none".to_owned()
        } else {
            roots
                .iter()
                .map(|r| {
                    format!(
                        "{} ({})",
                        r.path.display(),
                        if r.writable {
                            "read-write"
                        } else {
                            "read-only"
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    match roots
        .iter()
        .filter(|r| abs.starts_with(&r.path))
        .max_by_key(|r| r.path.as_os_str().len())
    {
        None => format!(
            "`{}` is outside the directories this plugin may use ({}). Use a path inside them, or grant the directory when starting benchtop (--allow DIR or --allow DIR:rw).",
            shown(path),
            list()
        ),
        Some(root) if writing && !root.writable => format!(
            "`{}` is in {}, which is read-only for this plugin. Grant it read-write when starting benchtop (--allow {}:rw).",
            shown(path),
            root.path.display(),
            root.path.display()
        ),
        Some(_) => format!("`{}`: {}", shown(path), describe_kind(err)),
    }
}

/// Reads a whole file, refusing anything but a regular file first (see
/// [`open_regular_file`]).
pub fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    refuse_irregular(path)?;
    crate::file_io::read(path)
}

/// Opens a file for reading, refusing anything but a regular file first:
/// opening a named pipe blocks until a writer appears (the call would hang
/// until its deadline and lose the plugin's state), and a device may never
/// end.
pub fn open_regular_file(path: &Path) -> std::io::Result<std::fs::File> {
    refuse_irregular(path)?;
    std::fs::File::open(path)
}

/// Fails unless `path` is a regular file (the check behind
/// [`open_regular_file`]).
pub(crate) fn refuse_irregular(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    }
    if is_special(&meta) {
        return Err(std::io::Error::other(
            "not a regular file (a device, pipe or socket)",
        ));
    }
    Ok(())
}

/// A device, pipe or socket: opening one may block until a peer appears,
/// and reading one may never end.
pub fn is_special(meta: &std::fs::Metadata) -> bool {
    !meta.is_file() && !meta.is_dir()
}

/// The entries of a directory, all of them even while it changes.
///
/// Inside the WASI sandbox the host stats every entry as it lists a
/// directory; a file deleted between the listing and its stat fails that
/// entry, and Rust's `ReadDir` ends at the first failure, silently dropping
/// every entry after it (a log that never changed would seem to be gone).
/// So the directory is listed again, up to 8 times, until one listing
/// completes; if none does, the union of what the attempts saw is returned.
/// Entries are sorted by file name.
pub fn read_dir_entries(dir: &Path) -> std::io::Result<Vec<std::fs::DirEntry>> {
    let mut seen: std::collections::BTreeMap<std::ffi::OsString, std::fs::DirEntry> =
        std::collections::BTreeMap::new();
    for _ in 0..8 {
        let mut complete = true;
        let mut listing = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            match entry {
                Ok(e) => listing.push(e),
                Err(_) => complete = false,
            }
        }
        if complete {
            let mut listing = listing;
            listing.sort_by_key(|e| e.file_name());
            return Ok(listing);
        }
        for e in listing {
            seen.insert(e.file_name(), e);
        }
    }
    Ok(seen.into_values().collect())
}

/// A path for a message: in full unless absurdly long (see [`crate::text::clip`]).
pub fn shown(path: &Path) -> String {
    crate::text::clip(&path.display().to_string())
}

fn describe_kind(err: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match err.kind() {
        NotFound => "no such file or directory".into(),
        PermissionDenied => "permission denied".into(),
        IsADirectory => "is a directory, not a file".into(),
        NotADirectory => "a component of the path is not a directory".into(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod root_tests {
    use super::*;

    #[test]
    fn errors_name_the_granted_roots() {
        let roots = parse_roots("rw /work/ws\nro /defs");
        let nf = std::io::Error::from(std::io::ErrorKind::NotFound);
        let msg = explain_with_roots(Path::new("/etc/passwd"), &nf, false, &roots);
        assert!(
            msg.contains("outside")
                && msg.contains("/work/ws (read-write)")
                && msg.contains("/defs (read-only)")
        );
        let msg = explain_with_roots(Path::new("/work/ws/../../etc/x"), &nf, false, &roots);
        assert!(msg.contains("outside"));
        let msg = explain_with_roots(Path::new("/defs/a.xml"), &nf, true, &roots);
        assert!(msg.contains("read-only for this plugin"));
        let msg = explain_with_roots(Path::new("/work/ws/rom.bin"), &nf, false, &roots);
        assert!(msg.ends_with("no such file or directory"));
        let dir = std::env::temp_dir().join(format!("plugin-kit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["b", "a", "c"] {
            std::fs::write(dir.join(n), n).unwrap();
        }
        let names: Vec<_> = read_dir_entries(&dir)
            .unwrap()
            .iter()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(read_regular_file(&dir.join("a")).unwrap(), b"a");
        let e = read_regular_file(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(describe_kind(&e), "is a directory, not a file");
        let e = read_regular_file(Path::new("/dev/null")).unwrap_err();
        assert!(describe_kind(&e).contains("not a regular file"));
        // A path of 100 KB is not echoed whole.
        let long = format!("/work/ws/{}", "a".repeat(100_000));
        let msg = explain_with_roots(Path::new(&long), &nf, false, &roots);
        assert!(msg.len() < 300 && msg.contains("characters)"), "{msg}");
    }
}
