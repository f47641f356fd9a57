//! The first-party plugins built into this binary (host/build.rs), served
//! when neither `--plugins` nor a config file names any: an installed
//! `benchtop serve` needs no repository and no wasm toolchain.
//!
//! The host loads plugins from files (the compile cache and `benchtop
//! check` work on paths), so the components are written once into a
//! directory named after their digest and loaded from there.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// Writes the bundled components into a directory under `root` named by
/// their digest (once: a later start finds them there) and returns it;
/// None when this binary bundles none.
pub fn materialize(root: &Path) -> Result<Option<PathBuf>> {
    if BUNDLED.is_empty() {
        return Ok(None);
    }
    let mut digest = Sha256::new();
    for (name, bytes) in BUNDLED {
        digest.update(name.as_bytes());
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    }
    let digest = digest.finalize();
    let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let dir = root.join(format!("bundled-{}-{short}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating {} for the bundled plugins", dir.display()))?;
    for (name, bytes) in BUNDLED {
        let path = dir.join(name);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
            continue;
        }
        // Written aside and renamed: two servers starting at once never
        // load half a file.
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, bytes)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .with_context(|| format!("writing the bundled plugin {}", path.display()))?;
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_plugins_are_written_once_and_found_again() {
        let root = std::env::temp_dir().join(format!("benchtop-bundled-{}", std::process::id()));
        let Some(dir) = materialize(&root).unwrap() else {
            // A binary built before `make plugins` bundles nothing.
            assert!(BUNDLED.is_empty());
            return;
        };
        for (name, bytes) in BUNDLED {
            assert_eq!(std::fs::read(dir.join(name)).unwrap(), *bytes);
        }
        assert_eq!(materialize(&root).unwrap(), Some(dir));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
