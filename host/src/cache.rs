//! On-disk cache of compiled components (DESIGN.md, Contract 4).
//!
//! Entries are keyed by the SHA-256 of the `.wasm` and the engine's
//! compatibility hash, so a new benchtop or engine setting misses cleanly.
//! Each entry carries the SHA-256 of its own payload, checked before the
//! (unsafe) deserialization: a torn or corrupted entry is rebuilt, never trusted.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of precompiled components.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// Where a component came from when loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a valid cache entry.
    Hit,
    /// Compiled (and stored, when the cache is on).
    Compiled,
    /// An entry existed but failed its check; it was rebuilt.
    Rebuilt,
}

const MAGIC: &[u8; 8] = b"BTCWASM1";

impl CompileCache {
    /// A cache in `dir`, or a disabled cache for `None`.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The default cache directory: `$XDG_CACHE_HOME/benchtop` or `~/.cache/benchtop`.
    pub fn default_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|d| d.join("benchtop"))
    }

    fn key(engine: &Engine, wasm: &[u8]) -> String {
        let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
        engine
            .precompile_compatibility_hash()
            .hash(&mut engine_hash);
        let mut h = Sha256::new();
        h.update(wasm);
        h.update(engine_hash.finish().to_le_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        hex(&h.finalize())
    }

    /// Loads the compiled form of `wasm`, compiling and storing it on a miss.
    pub fn load(&self, engine: &Engine, wasm: &[u8]) -> Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.dir else {
            return Ok((
                crate::runtime::compile(engine, wasm)?,
                CacheOutcome::Compiled,
            ));
        };
        let path = dir.join(format!("{}.cwasm", Self::key(engine, wasm)));
        let mut outcome = CacheOutcome::Compiled;
        if let Ok(bytes) = std::fs::read(&path) {
            match verified_payload(&bytes) {
                // SAFETY: the payload was produced by `precompile_component`
                // of an engine with the same compatibility hash (part of the
                // key), and its checksum matches what was written.
                Some(payload) => match unsafe { Component::deserialize(engine, payload) } {
                    Ok(c) => return Ok((c, CacheOutcome::Hit)),
                    Err(e) => {
                        tracing::warn!("cache entry {} unusable ({e}); rebuilding", path.display())
                    }
                },
                None => tracing::warn!("cache entry {} is corrupt; rebuilding", path.display()),
            }
            outcome = CacheOutcome::Rebuilt;
            let _ = std::fs::remove_file(&path);
        }
        let compiled = engine
            .precompile_component(wasm)
            .map_err(|e| anyhow::anyhow!("compiling the component: {e:#}"))?;
        // SAFETY: produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled) }?;
        if let Err(e) = store(dir, &path, &compiled) {
            tracing::warn!("cannot write compile cache {}: {e:#}", path.display());
        }
        Ok((component, outcome))
    }
}

fn verified_payload(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (sum, payload) = rest.split_at_checked(32)?;
    (Sha256::digest(payload).as_slice() == sum).then_some(payload)
}

fn store(dir: &Path, path: &Path, payload: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut data = Vec::with_capacity(payload.len() + 40);
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(&Sha256::digest(payload));
    data.extend_from_slice(payload);
    std::fs::write(&tmp, &data)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_checks_catch_corruption() {
        let mut data = MAGIC.to_vec();
        data.extend_from_slice(&Sha256::digest(b"hello"));
        data.extend_from_slice(b"hello");
        assert_eq!(verified_payload(&data), Some(&b"hello"[..]));
        let last = data.len() - 1;
        data[last] ^= 1;
        assert_eq!(verified_payload(&data), None);
        assert_eq!(verified_payload(b"short"), None);
    }
}
