//! On-disk cache of compiled components (docs/design.md, Contract 4).
//!
//! Entries are named by a hash of the `.wasm`'s SHA-256 ([`Wasm`]) and the
//! engine's compatibility hash, so a new benchtop or engine setting misses cleanly.
//! Compiled artifacts are native code, so each entry carries an HMAC-SHA256
//! of its name and payload under a secret this host keeps in the cache
//! directory (mode 600), checked before the (unsafe) deserialization: the
//! name is re-derived from the source `.wasm` at load, so an entry renamed
//! over another's, torn, or written by anyone without the secret is rebuilt,
//! never trusted. A compiled artifact is stored as wasmtime writes it, its
//! HMAC in a `.tag` beside it, so that once its file has passed (a
//! `.checked` record of the file's fingerprint) it is mapped, not read.
//! The host refuses plugins whose read-write grants cover the cache
//! directory (see `Host::finish_load`).

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::wit::interface::PluginInterface;

/// A component's bytes and their SHA-256, hashed once: the digest names
/// its cache entries and tells a changed plugin file from a touched one.
/// The bytes of a file whose digest the cache recalled
/// ([`CompileCache::open`]) are read only if something needs them: a warm
/// start needs the digest alone.
pub struct Wasm {
    /// Where the bytes are read from when not yet read.
    path: Option<PathBuf>,
    bytes: std::sync::OnceLock<Vec<u8>>,
    digest: [u8; 32],
}

impl Wasm {
    /// Hashes `bytes`.
    pub fn new(bytes: Vec<u8>) -> Self {
        let digest = Sha256::digest(&bytes).into();
        Self {
            path: None,
            bytes: bytes.into(),
            digest,
        }
    }

    /// Reads and hashes the file at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Self {
            path: Some(path.to_owned()),
            ..Self::new(bytes)
        })
    }

    /// The bytes, read now if they were not: the file must still hold
    /// what was hashed.
    pub fn bytes(&self) -> Result<&[u8]> {
        if let Some(bytes) = self.bytes.get() {
            return Ok(bytes);
        }
        let path = self
            .path
            .as_deref()
            .context("a component without bytes or a file")?;
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        if <[u8; 32]>::from(Sha256::digest(&bytes)) != self.digest {
            anyhow::bail!(
                "{} changed while it was being loaded; load it again (a watching server does so itself)",
                path.display()
            );
        }
        Ok(self.bytes.get_or_init(|| bytes))
    }

    /// Their SHA-256.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// How old a file's times must be before its digest is recalled from them:
/// file systems stamp times at a coarse tick, so a file rewritten within a
/// tick of being hashed could keep the times it was hashed with (git's
/// "racily clean" entries). Younger files are hashed at every start.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(2);

/// What the file system says of a file that changes whenever its content
/// does: device, inode, size, and modification and change times (the
/// change time cannot be set back without changing it again). None for a
/// file changed at or after `settled`.
fn fingerprint(meta: &std::fs::Metadata, settled: std::time::SystemTime) -> Option<[u8; 40]> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let settled = settled.duration_since(std::time::UNIX_EPOCH).ok()?;
        let nanos = |secs: i64, nsec: i64| {
            u64::try_from(secs)
                .ok()?
                .checked_mul(1_000_000_000)?
                .checked_add(u64::try_from(nsec).ok()?)
        };
        let (modified, changed) = (
            nanos(meta.mtime(), meta.mtime_nsec())?,
            nanos(meta.ctime(), meta.ctime_nsec())?,
        );
        let settled = u64::try_from(settled.as_nanos()).ok()?;
        if modified >= settled || changed >= settled {
            return None;
        }
        let mut out = [0u8; 40];
        let fields = [meta.dev(), meta.ino(), meta.size(), modified, changed];
        for (chunk, field) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&field.to_le_bytes());
        }
        Some(out)
    }
    #[cfg(not(unix))]
    {
        let _ = (meta, settled);
        None
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

    /// Where the plugins' own cache directories are, when the cache is on.
    pub fn plugin_data_root(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(PLUGIN_DATA_DIR))
    }

    /// The cache directory of the plugin named `plugin`, made (private to
    /// this user) if missing: what it keeps between runs (an index of a
    /// definitions tree, say), its own to read and write. None when the
    /// cache is off or the directory cannot be made (logged): a plugin
    /// without one works as before, only without what it would have kept.
    pub fn plugin_dir(&self, plugin: &str) -> Option<PathBuf> {
        let dir = self.plugin_data_root()?.join(file_safe(plugin));
        match create_private_dir(&dir).and_then(|()| {
            dir.canonicalize()
                .with_context(|| format!("resolving {}", dir.display()))
        }) {
            Ok(dir) => Some(dir),
            Err(e) => {
                tracing::warn!(plugin, "no cache directory for the plugin: {e:#}");
                None
            }
        }
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
        entry_name(&[
            &wasm.digest,
            &engine_hash.finish().to_le_bytes(),
            env!("CARGO_PKG_VERSION").as_bytes(),
        ])
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

    /// The component at `path`. Its digest is recalled from the cache when
    /// the file's [`fingerprint`] is the one it was hashed with, and then
    /// its bytes are read only if needed; otherwise it is read and hashed,
    /// and the digest kept for the next start.
    pub fn open(&self, path: &Path) -> Result<Wasm> {
        self.open_settled(path, std::time::SystemTime::now() - SETTLED)
    }

    /// [`Self::open`], recording digests only of files unchanged since `settled`.
    fn open_settled(&self, path: &Path, settled: std::time::SystemTime) -> Result<Wasm> {
        let Some(dir) = &self.dir else {
            return Wasm::read(path);
        };
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        let Some(print) = fingerprint(&meta, settled) else {
            return Wasm::read(path);
        };
        let key = digest_key(path);
        let record = dir.join(format!("{key}.digest"));
        if let Ok(bytes) = std::fs::read(&record)
            && let Some(payload) = verified_payload(&self.secret, &key, &bytes)
            && let Some((seen, digest)) = payload.split_at_checked(print.len())
            && seen == print
            && let Ok(digest) = <[u8; 32]>::try_from(digest)
        {
            return Ok(Wasm {
                path: Some(path.to_owned()),
                bytes: std::sync::OnceLock::new(),
                digest,
            });
        }
        // Taken before the read: a change in between leaves a fingerprint
        // that no longer matches, so it is hashed again next time.
        let wasm = Wasm::read(path)?;
        let payload = [&print[..], &wasm.digest].concat();
        if let Err(e) = store(&self.secret, &key, dir, &record, &payload) {
            tracing::debug!("cannot write {}: {e:#}", record.display());
        }
        Ok(wasm)
    }

    /// What `wasm` offers. Derived from its outline ([`PluginInterface::with_outline`])
    /// kept beside its compiled form: decoding a whole component walks all
    /// of its code, a few milliseconds a plugin at every start, and the
    /// outline's WIT alone takes a fraction of that. An outline missing or
    /// failing its check is made again from the component.
    pub fn interface(&self, wasm: &Wasm) -> Result<PluginInterface> {
        let Some(dir) = &self.dir else {
            return PluginInterface::from_component(wasm.bytes()?);
        };
        // The outline is WIT, not this host's derivation of it: a new
        // benchtop derives afresh from the same outline.
        let key = outline_key(wasm);
        let path = dir.join(format!("{key}.outline"));
        if let Ok(bytes) = std::fs::read(&path) {
            match verified_payload(&self.secret, &key, &bytes).map(PluginInterface::from_outline) {
                Some(Ok(interface)) => return Ok(interface),
                Some(Err(e)) => {
                    tracing::warn!("outline {} unusable ({e:#}); rebuilding", path.display())
                }
                None => tracing::warn!("outline {} fails its check; rebuilding", path.display()),
            }
        }
        match PluginInterface::with_outline(wasm.bytes()?) {
            Ok((interface, outline)) => {
                if let Err(e) = store(&self.secret, &key, dir, &path, &outline) {
                    tracing::warn!("cannot write outline {}: {e:#}", path.display());
                }
                Ok(interface)
            }
            // Said as deriving from the component says it (or derived
            // that way when only the outline could not be made).
            Err(_) => PluginInterface::from_component(wasm.bytes()?),
        }
    }

    /// Loads the compiled form of `wasm`, compiling and storing it on a miss.
    pub fn load(&self, engine: &Engine, wasm: &Wasm) -> Result<(Component, CacheOutcome)> {
        self.load_settled(engine, wasm, std::time::SystemTime::now() - SETTLED)
    }

    /// [`Self::load`], recording as checked only entries unchanged since
    /// `settled`.
    fn load_settled(
        &self,
        engine: &Engine,
        wasm: &Wasm,
        settled: std::time::SystemTime,
    ) -> Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.dir else {
            return Ok((
                crate::runtime::engine::compile(engine, wasm.bytes()?)?,
                CacheOutcome::Compiled,
            ));
        };
        let key = Self::key(engine, wasm);
        let path = dir.join(format!("{key}.cwasm"));
        let mut outcome = CacheOutcome::Compiled;
        if let Ok(entry) = self.open_compiled(dir, &key, &path, settled) {
            // SAFETY (both arms): the artifact was produced by
            // `precompile_component` of an engine with the same
            // compatibility hash (part of the key), for this very `.wasm`
            // (its hash, which `Wasm` alone computes from the bytes, is in
            // the key), and written by a holder of this host's secret: its
            // HMAC passed now, or passed for this very file, unchanged since.
            // Entries are replaced by renames, never rewritten in place, so
            // a mapped file keeps its content while it is used.
            let loaded = match entry {
                Compiled::Checked(file) => unsafe { map_checked(engine, file) },
                Compiled::Read(bytes, true) => {
                    unsafe { Component::deserialize(engine, &bytes) }.map_err(anyhow::Error::from)
                }
                Compiled::Read(_, false) => Err(anyhow::anyhow!(
                    "it fails its check (corrupt, or not made for this component by this host)"
                )),
            };
            match loaded {
                Ok(c) => return Ok((c, CacheOutcome::Hit)),
                Err(e) => tracing::warn!(
                    "cache entry {} unusable ({e:#}); rebuilding",
                    path.display()
                ),
            }
            outcome = CacheOutcome::Rebuilt;
            let _ = std::fs::remove_file(&path);
        }
        let compiled = engine
            .precompile_component(wasm.bytes()?)
            .map_err(|e| anyhow::anyhow!("compiling the component: {e:#}"))?;
        // SAFETY: produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled) }?;
        if let Err(e) = store_compiled(&self.secret, &key, dir, &path, &compiled) {
            tracing::warn!("cannot write compile cache {}: {e:#}", path.display());
        }
        Ok((component, outcome))
    }

    /// The compiled entry at `path`, opened. An artifact is wasmtime's own
    /// file, so that it can be mapped rather than copied, and its HMAC is
    /// kept beside it (`.tag`). The check reads all of an artifact
    /// (megabytes of code: 2.6 ms of SHA-256, and as long again copying,
    /// for the two ECU plugins at each start), so once an entry passed,
    /// the [`fingerprint`] of its file is recorded under the same key; while
    /// the file keeps that fingerprint, its content cannot have changed
    /// (that changes its change time, and a rename its inode), and it is
    /// mapped unread.
    fn open_compiled(
        &self,
        dir: &Path,
        key: &str,
        path: &Path,
        settled: std::time::SystemTime,
    ) -> std::io::Result<Compiled> {
        let mut file = std::fs::File::open(path)?;
        let print = fingerprint(&file.metadata()?, settled);
        let record_key = format!("checked {key}");
        let record = dir.join(format!("{key}.checked"));
        if print.is_some_and(|print| {
            std::fs::read(&record).is_ok_and(|bytes| {
                verified_payload(&self.secret, &record_key, &bytes) == Some(&print[..])
            })
        }) {
            return Ok(Compiled::Checked(file));
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)?;
        // Read through the handle stat'ed, so the inode is the one
        // fingerprinted; a write meanwhile changes the fingerprint.
        let after = fingerprint(&file.metadata()?, settled);
        let tag = std::fs::read(dir.join(format!("{key}.tag"))).unwrap_or_default();
        let authentic = tag.strip_prefix(MAGIC).is_some_and(|tag| {
            hmac_sha256(&self.secret, &[key.as_bytes(), &bytes]).as_slice() == tag
        });
        if authentic
            && let Some(print) = print.filter(|_| after == print)
            && let Err(e) = store(&self.secret, &record_key, dir, &record, &print)
        {
            tracing::debug!("cannot write {}: {e:#}", record.display());
        }
        Ok(Compiled::Read(bytes, authentic))
    }
}

/// A compiled entry as [`CompileCache::open_compiled`] found it.
enum Compiled {
    /// The file whose fingerprint passed before: map it.
    Checked(std::fs::File),
    /// Its bytes, and whether they pass their HMAC.
    Read(Vec<u8>, bool),
}

/// The component in `file`, mapped (through `/proc/self/fd`, which reopens
/// the very inode fingerprinted) or, where that is refused (no `/proc`, a
/// cache on a `noexec` mount), read and copied.
///
/// # Safety
///
/// As [`Component::deserialize_file`]: `file` holds an artifact this
/// engine made, and it does not change while the component lives.
unsafe fn map_checked(engine: &Engine, mut file: std::fs::File) -> Result<Component> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        // SAFETY: passed on from the caller.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => return Ok(component),
            Err(e) => tracing::debug!("cannot map a compiled entry ({e:#}); reading it"),
        }
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes)?;
    // SAFETY: passed on from the caller.
    Ok(unsafe { Component::deserialize(engine, &bytes) }?)
}

/// Writes a compiled artifact as it is (so it can be mapped), then its
/// HMAC beside it: a reader finding the artifact without its tag, or with
/// another's, rebuilds it.
fn store_compiled(
    secret: &[u8],
    key: &str,
    dir: &Path,
    path: &Path,
    artifact: &[u8],
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_whole(path, artifact)?;
    let tag = [
        &MAGIC[..],
        &hmac_sha256(secret, &[key.as_bytes(), artifact]),
    ]
    .concat();
    write_whole(&path.with_extension("tag"), &tag)
}

/// Writes `bytes` beside `path` and renames them over it, so a reader
/// finds the old file or the new one, never a part.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// An entry's name: the SHA-256 of what tells it from every other, in hex.
fn entry_name(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
    }
    hex(&h.finalize())
}

/// The name of the entry recalling the digest of the file at `path`.
fn digest_key(path: &Path) -> String {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    entry_name(&[b"digest of ", path.as_os_str().as_encoded_bytes()])
}

/// The name of `wasm`'s outline entry.
fn outline_key(wasm: &Wasm) -> String {
    entry_name(&[
        &wasm.digest,
        // Outlines leave unused host and WASI imports out: one written
        // before they did is derived again rather than kept (and slower).
        b"outline, unused imports pruned",
        env!("CARGO_PKG_VERSION").as_bytes(),
    ])
}

fn verified_payload<'a>(secret: &[u8], key: &str, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (tag, payload) = rest.split_at_checked(32)?;
    (hmac_sha256(secret, &[key.as_bytes(), payload]).as_slice() == tag).then_some(payload)
}

fn store(secret: &[u8], key: &str, dir: &Path, path: &Path, payload: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut data = Vec::with_capacity(payload.len() + 40);
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(&hmac_sha256(secret, &[key.as_bytes(), payload]));
    data.extend_from_slice(payload);
    write_whole(path, &data)
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

/// The folder of the compile cache directory that holds the plugins' own
/// cache directories, one per plugin name.
const PLUGIN_DATA_DIR: &str = "plugin-data";

/// `name` as one path component: ASCII letters, digits, `-`, `_` and `.`
/// kept (a plugin name is usually only these), anything else and a
/// leading dot as `%XX`, so no name climbs out or hides.
fn file_safe(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') || (b == b'.' && i > 0) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    out
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

    /// What a listing and a call use of an interface, spelled out.
    fn listing(i: &PluginInterface) -> String {
        let defs = i
            .tools
            .iter()
            .chain(&i.resources)
            .chain(&i.prompts)
            .chain(&i.completion);
        let defs: Vec<String> = defs
            .map(|d| {
                format!(
                    "{:?} {} {:?} {} {:?} {:?} {:?} {:?} {:?} {:?}",
                    d.role,
                    d.name,
                    d.interface,
                    d.func,
                    d.output,
                    d.annotations,
                    d.input_schema,
                    d.output_schema,
                    d.view,
                    d.task
                ) + &d.description
            })
            .collect();
        format!(
            "{defs:#?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            i.settings,
            i.tick_interface,
            i.durable_interface,
            i.provides,
            i.provider_interface,
            i.uses,
            i.warnings
        )
    }

    #[test]
    fn a_plugin_name_is_one_harmless_path_component() {
        assert_eq!(file_safe("ecu-tables"), "ecu-tables");
        assert_eq!(file_safe("my_plugin.v2"), "my_plugin.v2");
        assert_eq!(file_safe(".."), "%2E.");
        assert_eq!(file_safe("a/b"), "a%2Fb");
        assert_eq!(file_safe(".hidden"), "%2Ehidden");
        assert_eq!(file_safe("é"), "%C3%A9");
        assert_eq!(file_safe(""), "%");
        // Distinct names stay distinct: `%` itself is escaped.
        assert_ne!(file_safe("a%2Fb"), file_safe("a/b"));
    }

    #[test]
    fn each_plugin_gets_a_private_cache_directory_of_its_own() {
        let dir = std::env::temp_dir().join(format!("benchtop-plugin-data-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = CompileCache::new(Some(dir.clone()));
        let a = cache.plugin_dir("ecu-tables").unwrap();
        let b = cache.plugin_dir("../ecu-tables").unwrap();
        assert_ne!(a, b);
        for d in [&a, &b] {
            assert!(
                d.starts_with(dir.canonicalize().unwrap().join(PLUGIN_DATA_DIR)),
                "{d:?}"
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(d).unwrap().permissions().mode();
                assert_eq!(mode & 0o077, 0, "{d:?} is open to others: {mode:o}");
            }
        }
        assert_eq!(CompileCache::new(None).plugin_dir("ecu-tables"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn outlines_give_the_interface_the_component_gives() {
        let dir = std::env::temp_dir().join(format!("benchtop-outline-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = CompileCache::new(Some(dir.clone()));
        for (name, bytes) in crate::runtime::bundled::BUNDLED {
            let wasm = Wasm::new(bytes.to_vec());
            let whole = PluginInterface::from_component(bytes).unwrap();
            let made = cache.interface(&wasm).unwrap(); // writes the outline
            let outline = dir.join(format!("{}.outline", outline_key(&wasm)));
            assert!(outline.is_file(), "{name}: no outline written");
            let read = cache.interface(&wasm).unwrap(); // reads it
            assert_eq!(listing(&made), listing(&whole), "{name}");
            assert_eq!(listing(&read), listing(&whole), "{name}");
            // A damaged outline is made again, not trusted.
            let mut damaged = std::fs::read(&outline).unwrap();
            let last = damaged.len() - 1;
            damaged[last] ^= 1;
            std::fs::write(&outline, &damaged).unwrap();
            assert_eq!(
                listing(&cache.interface(&wasm).unwrap()),
                listing(&whole),
                "{name}"
            );
            assert_ne!(std::fs::read(&outline).unwrap(), damaged, "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_entry_is_checked_again_unless_its_file_is_the_one_that_passed() {
        let dir = std::env::temp_dir().join(format!("benchtop-checked-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = CompileCache::new(Some(dir.clone()));
        let entry = dir.join("k.cwasm");
        let record = dir.join("k.checked");
        let later = || std::time::SystemTime::now() + SETTLED;
        let found = |key: &str, settled| match cache
            .open_compiled(&dir, key, &dir.join(format!("{key}.cwasm")), settled)
            .unwrap()
        {
            Compiled::Checked(_) => "mapped unread",
            Compiled::Read(bytes, true) => {
                assert_eq!(bytes, b"artifact");
                "read and checked"
            }
            Compiled::Read(_, false) => "refused",
        };
        // Just written: checked, but nothing is recorded (its times may not
        // change when it is written again within the file system's tick).
        store_compiled(&cache.secret, "k", &dir, &entry, b"artifact").unwrap();
        assert_eq!(
            std::fs::read(&entry).unwrap(),
            b"artifact",
            "stored as it is"
        );
        assert_eq!(
            found("k", std::time::SystemTime::now() - SETTLED),
            "read and checked"
        );
        assert!(!record.exists());
        // Settled: checked and recorded, then passed on the record.
        assert_eq!(found("k", later()), "read and checked");
        assert!(record.is_file());
        assert_eq!(found("k", later()), "mapped unread");
        // Rewritten: another fingerprint, so checked, and refused.
        std::fs::write(&entry, b"forged!!").unwrap();
        assert_eq!(found("k", later()), "refused");
        // What decides is the record of this very file: made for it (as
        // only a holder of the secret can), the forged entry would pass.
        let print = fingerprint(&std::fs::metadata(&entry).unwrap(), later()).unwrap();
        store(&cache.secret, "checked k", &dir, &record, &print).unwrap();
        assert_eq!(found("k", later()), "mapped unread");
        // A tag or a record made under another key is none.
        store_compiled(&cache.secret, "j", &dir, &dir.join("j.cwasm"), b"artifact").unwrap();
        std::fs::copy(dir.join("j.tag"), dir.join("i.tag")).unwrap();
        std::fs::copy(dir.join("j.cwasm"), dir.join("i.cwasm")).unwrap();
        assert_eq!(found("i", later()), "refused");
        std::fs::rename(&record, dir.join("j.checked")).unwrap();
        std::fs::write(dir.join("j.cwasm"), b"forged!!").unwrap();
        assert_eq!(found("j", later()), "refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A settled entry is compiled, then read and checked, then mapped
    /// from its file (on Linux, where the mapping shows in
    /// `/proc/self/maps`), each time the same component.
    #[test]
    fn a_checked_entry_is_mapped_from_its_file() {
        let dir = std::env::temp_dir().join(format!("benchtop-mapped-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = CompileCache::new(Some(dir.clone()));
        let engine = crate::runtime::engine::new_engine().unwrap();
        let (_, bytes) = crate::runtime::bundled::BUNDLED
            .iter()
            .min_by_key(|(_, bytes)| bytes.len())
            .unwrap();
        let wasm = Wasm::new(bytes.to_vec());
        let later = || std::time::SystemTime::now() + SETTLED;
        let exports = |c: &Component| {
            let ty = c.component_type();
            let mut names: Vec<String> = ty.exports(&engine).map(|(n, _)| n.to_owned()).collect();
            names.sort();
            names
        };
        let (made, outcome) = cache.load_settled(&engine, &wasm, later()).unwrap();
        assert_eq!(outcome, CacheOutcome::Compiled);
        let (read, outcome) = cache.load_settled(&engine, &wasm, later()).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        let (mapped, outcome) = cache.load_settled(&engine, &wasm, later()).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        assert_eq!(exports(&made), exports(&read));
        assert_eq!(exports(&made), exports(&mapped));
        if cfg!(target_os = "linux") {
            let artifact = dir.join(format!("{}.cwasm", CompileCache::key(&engine, &wasm)));
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            assert!(
                maps.contains(artifact.to_str().unwrap()),
                "{} is not mapped",
                artifact.display()
            );
        }
        drop((made, read, mapped));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn digests_are_recalled_only_for_the_file_they_were_taken_from() {
        let dir = std::env::temp_dir().join(format!("benchtop-digest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = CompileCache::new(Some(dir.join("cache")));
        let file = dir.join("p.wasm");
        let records = || {
            std::fs::read_dir(dir.join("cache"))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "digest")
                })
                .count()
        };
        // Just written: nothing is recorded (its times may not change when
        // it is written again within the file system's tick).
        std::fs::write(&file, b"first").unwrap();
        assert_eq!(cache.open(&file).unwrap().bytes().unwrap(), b"first");
        assert_eq!(records(), 0);
        // As if it had been written long ago.
        let later = || std::time::SystemTime::now() + SETTLED;
        let first = cache.open_settled(&file, later()).unwrap();
        assert_eq!(first.digest(), <[u8; 32]>::from(Sha256::digest(b"first")));
        assert_eq!(records(), 1);
        // Recalled, and read only when asked for.
        let again = cache.open_settled(&file, later()).unwrap();
        assert!(again.bytes.get().is_none());
        assert_eq!(again.digest(), first.digest());
        assert_eq!(again.bytes().unwrap(), b"first");
        // Another file at the same path is hashed afresh.
        std::fs::write(&file, b"second").unwrap();
        let second = cache.open_settled(&file, later()).unwrap();
        assert_eq!(second.bytes().unwrap(), b"second");
        // A file changed after its digest was recalled is refused, not
        // passed off as what was hashed.
        std::fs::write(&file, b"third").unwrap();
        let stale = Wasm {
            path: Some(file.clone()),
            bytes: std::sync::OnceLock::new(),
            digest: second.digest(),
        };
        assert!(
            stale
                .bytes()
                .unwrap_err()
                .to_string()
                .contains("changed while")
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
