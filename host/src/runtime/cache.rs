//! On-disk cache of compiled components (docs/design.md, Contract 4).
//!
//! Entries are named by a hash of the `.wasm`'s SHA-256 ([`Wasm`]) and the
//! engine's compatibility hash, so a new benchtop or engine setting misses cleanly.
//! Compiled artifacts are native code, so each entry carries an HMAC-SHA256
//! of its name and payload under a secret this host keeps in the cache
//! directory (mode 600), checked before the (unsafe) deserialization: the
//! name is re-derived from the source `.wasm` at load, so an entry renamed
//! over another's, torn, or written by anyone without the secret is rebuilt,
//! never trusted. The host refuses plugins whose read-write grants cover
//! the cache directory (see `Host::finish_load`).

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A component's bytes and their SHA-256, hashed once: the digest names
/// its cache entry and tells a changed plugin file from a touched one.
pub struct Wasm {
    bytes: Vec<u8>,
    digest: [u8; 32],
}

impl Wasm {
    /// Hashes `bytes`.
    pub fn new(bytes: Vec<u8>) -> Self {
        let digest = Sha256::digest(&bytes).into();
        Self { bytes, digest }
    }

    /// Reads and hashes the file at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Self::new(bytes))
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Their SHA-256.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// A directory of precompiled components.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
    /// The key of the entries' HMACs.
    secret: [u8; 32],
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

const MAGIC: &[u8; 8] = b"BTCWASM2";

/// The file in the cache directory holding this host's HMAC key.
const SECRET_FILE: &str = "secret.key";

impl CompileCache {
    /// A cache in `dir`, or a disabled cache for `None`.
    /// Without a usable secret (it cannot be read or made) the cache is
    /// off, with a warning.
    pub fn new(dir: Option<PathBuf>) -> Self {
        let Some(dir) = dir else {
            return Self::disabled();
        };
        match load_secret(&dir) {
            Ok(secret) => Self {
                dir: Some(dir),
                secret,
            },
            Err(e) => {
                tracing::warn!(
                    "compile cache {} is off: {e:#}; components are compiled at every start",
                    dir.display()
                );
                Self::disabled()
            }
        }
    }

    fn disabled() -> Self {
        Self {
            dir: None,
            secret: [0; 32],
        }
    }

    /// The cache directory, when the cache is on.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The default cache directory: `$XDG_CACHE_HOME/benchtop` or `~/.cache/benchtop`.
    pub fn default_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|d| d.join("benchtop"))
    }

    fn key(engine: &Engine, wasm: &Wasm) -> String {
        let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
        engine
            .precompile_compatibility_hash()
            .hash(&mut engine_hash);
        let mut h = Sha256::new();
        h.update(wasm.digest);
        h.update(engine_hash.finish().to_le_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        hex(&h.finalize())
    }

    /// Whether an entry for `wasm` is on disk (checked when it is loaded).
    pub fn holds(&self, engine: &Engine, wasm: &Wasm) -> bool {
        self.dir.as_ref().is_some_and(|dir| {
            dir.join(format!("{}.cwasm", Self::key(engine, wasm)))
                .is_file()
        })
    }

    /// Whether this host has linked and instantiated `wasm` before, from
    /// this cache: such a plugin's tools can be offered at once while its
    /// compiled code is mapped and instantiated in the background, since
    /// nothing about it can fail at start that did not fail then. (The
    /// marker only defers work; the compiled entry is still checked when
    /// it is loaded.)
    pub fn ran_before(&self, engine: &Engine, wasm: &Wasm) -> bool {
        self.dir.as_ref().is_some_and(|dir| {
            let key = Self::key(engine, wasm);
            dir.join(format!("{key}.ran")).is_file() && dir.join(format!("{key}.cwasm")).is_file()
        })
    }

    /// Records that `wasm` was linked and instantiated (see [`Self::ran_before`]).
    pub fn mark_ran(&self, engine: &Engine, wasm: &Wasm) {
        if let Some(dir) = &self.dir {
            let marker = dir.join(format!("{}.ran", Self::key(engine, wasm)));
            if !marker.is_file()
                && let Err(e) = std::fs::write(&marker, b"")
            {
                tracing::debug!("cannot write {}: {e}", marker.display());
            }
        }
    }

    /// Loads the compiled form of `wasm`, compiling and storing it on a miss.
    pub fn load(&self, engine: &Engine, wasm: &Wasm) -> Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.dir else {
            return Ok((
                crate::runtime::engine::compile(engine, wasm.bytes())?,
                CacheOutcome::Compiled,
            ));
        };
        let key = Self::key(engine, wasm);
        let path = dir.join(format!("{key}.cwasm"));
        let mut outcome = CacheOutcome::Compiled;
        if let Ok(bytes) = std::fs::read(&path) {
            match verified_payload(&self.secret, &key, &bytes) {
                // SAFETY: the payload was produced by `precompile_component`
                // of an engine with the same compatibility hash (part of the
                // key), for this very `.wasm` (its hash, which `Wasm` alone
                // computes from the bytes, is in the key), and written by a
                // holder of this host's secret.
                Some(payload) => match unsafe { Component::deserialize(engine, payload) } {
                    Ok(c) => return Ok((c, CacheOutcome::Hit)),
                    Err(e) => {
                        tracing::warn!("cache entry {} unusable ({e}); rebuilding", path.display())
                    }
                },
                None => tracing::warn!(
                    "cache entry {} fails its check (corrupt, or not made for this component by this host); rebuilding",
                    path.display()
                ),
            }
            outcome = CacheOutcome::Rebuilt;
            let _ = std::fs::remove_file(&path);
        }
        let compiled = engine
            .precompile_component(wasm.bytes())
            .map_err(|e| anyhow::anyhow!("compiling the component: {e:#}"))?;
        // SAFETY: produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled) }?;
        if let Err(e) = store(&self.secret, &key, dir, &path, &compiled) {
            tracing::warn!("cannot write compile cache {}: {e:#}", path.display());
        }
        Ok((component, outcome))
    }
}

fn verified_payload<'a>(secret: &[u8], key: &str, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (tag, payload) = rest.split_at_checked(32)?;
    (hmac_sha256(secret, &[key.as_bytes(), payload]).as_slice() == tag).then_some(payload)
}

fn store(secret: &[u8], key: &str, dir: &Path, path: &Path, payload: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut data = Vec::with_capacity(payload.len() + 40);
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(&hmac_sha256(secret, &[key.as_bytes(), payload]));
    data.extend_from_slice(payload);
    std::fs::write(&tmp, &data)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// This host's HMAC key: read from the cache directory, or made there from
/// the system's random source (linked into place, so two hosts starting at
/// once agree on one key).
fn load_secret(dir: &Path) -> Result<[u8; 32]> {
    create_private_dir(dir)?;
    let path = dir.join(SECRET_FILE);
    if !path.exists() {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh)
            .map_err(|e| anyhow::anyhow!("the system's random source failed: {e}"))?;
        let tmp = dir.join(format!("{SECRET_FILE}.{}", std::process::id()));
        write_private(&tmp, &fresh)?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        anyhow::anyhow!(
            "{} holds {} bytes, not 32; delete it and a new key is made",
            path.display(),
            b.len()
        )
    })
}

fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut file, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// HMAC-SHA256 (RFC 2104) of the concatenated `parts`.
pub(crate) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Lowercase hex digits of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex(&tag),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn payload_checks_catch_corruption_renames_and_forgery() {
        let secret = [7u8; 32];
        let mut data = MAGIC.to_vec();
        data.extend_from_slice(&hmac_sha256(&secret, &[b"keyA", b"hello"]));
        data.extend_from_slice(b"hello");
        assert_eq!(
            verified_payload(&secret, "keyA", &data),
            Some(&b"hello"[..])
        );
        // The same entry under another component's name.
        assert_eq!(verified_payload(&secret, "keyB", &data), None);
        // Made with another host's secret.
        assert_eq!(verified_payload(&[8u8; 32], "keyA", &data), None);
        let last = data.len() - 1;
        data[last] ^= 1;
        assert_eq!(verified_payload(&secret, "keyA", &data), None);
        assert_eq!(verified_payload(&secret, "keyA", b"short"), None);
    }

    #[test]
    fn the_secret_is_made_once_and_private() {
        let dir = std::env::temp_dir().join(format!("benchtop-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = load_secret(&dir).unwrap();
        let b = load_secret(&dir).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, [0; 32]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(SECRET_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        std::fs::write(dir.join(SECRET_FILE), b"short").unwrap();
        assert!(
            load_secret(&dir)
                .unwrap_err()
                .to_string()
                .contains("not 32")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
