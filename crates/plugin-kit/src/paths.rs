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

/// Resolves a user-supplied path: absolute paths stay as they are, relative
/// ones are joined to the workspace directory (or left relative when there is
/// none).
pub fn resolve(path: impl AsRef<Path>) -> PathBuf {
    resolve_against(path.as_ref(), workspace().as_deref())
}

/// [`resolve`] with an explicit workspace, for tests.
pub fn resolve_against(path: &Path, workspace: Option<&Path>) -> PathBuf {
    match workspace {
        Some(ws) if path.is_relative() => ws.join(path),
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
    }
}
