//! The sandbox a plugin runs in (docs/design.md, Contract 2): default deny, with
//! the directories, network addresses and environment its config grants.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

pub use crate::wit::interface::Access;

/// A directory a plugin may use, mapped at its own (canonical) path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// Canonical absolute path, the same on the host and in the guest.
    pub path: PathBuf,
    /// What the plugin may do there.
    pub access: Access,
}

impl DirGrant {
    /// Parses `DIR`, `DIR:ro` or `DIR:rw` (read-only when unspecified) and
    /// canonicalizes the directory, which must exist.
    pub fn parse(spec: &str, base: &Path) -> Result<Self> {
        let (dir, access) = match spec.rsplit_once(':') {
            Some((d, a)) if a == "ro" || a == "rw" => (d, a.parse()?),
            _ => (spec, Access::Ro),
        };
        Self::new(&base.join(dir), access)
    }

    /// A grant for an existing directory.
    pub fn new(dir: &Path, access: Access) -> Result<Self> {
        let path = dir
            .canonicalize()
            .with_context(|| format!("directory `{}` cannot be granted", dir.display()))?;
        if !path.is_dir() {
            bail!(
                "`{}` is not a directory; grant directories, not files",
                path.display()
            );
        }
        Ok(Self { path, access })
    }
}

/// What one plugin may reach.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Directories, each mapped at its own path.
    pub dirs: Vec<DirGrant>,
    /// `host:port` entries the plugin may connect to, resolved to addresses.
    pub network: Vec<SocketAddr>,
    /// Environment variables the plugin sees.
    pub env: BTreeMap<String, String>,
    /// Workspace directory, against which relative paths resolve.
    pub workspace: Option<PathBuf>,
    /// The plugin's own cache directory (read-write, named to it in
    /// [`CACHE_VAR`]), when the host keeps one: not a grant of the user's,
    /// so not among the directories a refusal lists.
    pub cache: Option<PathBuf>,
}

impl Policy {
    /// Resolves `host:port` allow-list entries to addresses.
    pub fn resolve_network(entries: &[String]) -> Result<Vec<SocketAddr>> {
        let mut out = Vec::new();
        for entry in entries {
            let addrs = entry.to_socket_addrs().with_context(|| {
                format!("network allow-list entry `{entry}`: expected host:port")
            })?;
            out.extend(addrs);
        }
        Ok(out)
    }

    /// Builds the WASI context for one instance of a plugin.
    pub fn wasi_ctx(&self, plugin: &str, guest_output: GuestOutput) -> Result<WasiCtx> {
        let mut b = WasiCtxBuilder::new();
        // File operations run on the calling thread instead of a hop to
        // tokio's blocking pool: a plugin call already runs on its own
        // task, and the hop cost ~150 µs per open, most of a first
        // rom_info over a 333-file definitions tree. Must precede the
        // preopens, which capture it.
        b.allow_blocking_current_thread(true);
        for grant in &self.dirs {
            let guest = grant.path.to_str().with_context(|| {
                format!("directory `{}` is not valid UTF-8", grant.path.display())
            })?;
            let perms = match grant.access {
                Access::Ro => FsPerms::ReadOnly,
                Access::Rw => FsPerms::ReadWrite,
            };
            b.preopened_dir(&grant.path, guest, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| {
                    format!("granting `{}` to plugin `{plugin}`", grant.path.display())
                })?;
        }
        for (k, v) in &self.env {
            b.env(k, v);
        }
        // The cache directory only saves work: one removed while the
        // server runs leaves the plugin working without it, not failing.
        if let Some(cache) = &self.cache {
            let granted = match cache.to_str() {
                Some(guest) => b
                    .preopened_dir(cache, guest, FsPerms::ReadWrite)
                    .map(|_| guest)
                    .map_err(|e| e.to_string()),
                None => Err("its path is not valid UTF-8".to_owned()),
            };
            match granted {
                Ok(guest) => {
                    b.env(CACHE_VAR, guest);
                }
                Err(why) => tracing::warn!(
                    plugin,
                    "its cache directory {} cannot be granted ({why}); it runs without one",
                    cache.display()
                ),
            }
        }
        // Lets the plugin explain a refused path in terms of what was granted.
        let roots: Vec<String> = self
            .dirs
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    if d.access == Access::Rw { "rw" } else { "ro" },
                    d.path.display()
                )
            })
            .collect();
        b.env(ALLOWED_VAR, roots.join("\n"));
        if let Some(ws) = self.workspace.as_ref().and_then(|w| w.to_str()) {
            b.env(WORKSPACE_VAR, ws);
            b.initial_cwd(ws);
        }
        b.stdout(guest_output.stream("stdout"));
        b.stderr(guest_output.stream("stderr"));
        let allowed = Arc::new(self.network.clone());
        b.allow_udp(false);
        b.allow_tcp(!allowed.is_empty());
        b.allow_ip_name_lookup(!allowed.is_empty());
        b.socket_addr_check(move |addr, usage| {
            let allowed = allowed.clone();
            Box::pin(async move {
                match usage {
                    SocketAddrUse::TcpConnect => allowed.contains(&addr),
                    // A connect binds implicitly to the wildcard address first.
                    SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
                    _ => false,
                }
            })
        });
        Ok(b.build())
    }

    /// Lists the allowed roots, for error messages.
    pub fn describe_roots(&self) -> String {
        if self.dirs.is_empty() {
            return "none".into();
        }
        self.dirs
            .iter()
            .map(|d| {
                format!(
                    "{} ({})",
                    d.path.display(),
                    if d.access == Access::Rw {
                        "read-write"
                    } else {
                        "read-only"
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Environment variable holding the workspace directory inside the guest.
pub const WORKSPACE_VAR: &str = "BENCHTOP_WORKSPACE";

/// Environment variable naming the plugin's own cache directory, when it
/// has one.
pub const CACHE_VAR: &str = "BENCHTOP_PLUGIN_CACHE";

/// Environment variable holding the plugin's code (the first eight bytes
/// of its component's SHA-256, in hex).
pub const CODE_VAR: &str = "BENCHTOP_PLUGIN_CODE";

/// Environment variable listing the granted directories (`ro /path` lines).
pub const ALLOWED_VAR: &str = "BENCHTOP_ALLOWED_DIRS";

/// Where a plugin's stdout and stderr go: the host log (stderr), never the
/// JSON-RPC stream. The tail of stderr is kept so a trap's error can quote
/// the guest's panic message.
#[derive(Clone)]
pub struct GuestOutput {
    plugin: Arc<str>,
    tail: Arc<Mutex<String>>,
}

/// How much of a guest's recent stderr is kept for error messages.
const TAIL_BYTES: usize = 2048;

impl GuestOutput {
    /// Output sink for `plugin`.
    pub fn new(plugin: &str) -> Self {
        Self {
            plugin: plugin.into(),
            tail: Arc::default(),
        }
    }

    /// Takes the recent stderr text, leaving it empty.
    pub fn take_tail(&self) -> String {
        std::mem::take(&mut *self.tail.lock().expect("tail lock"))
    }

    fn stream(&self, name: &'static str) -> LineLogger {
        LineLogger {
            out: self.clone(),
            name,
            line: Vec::new(),
        }
    }
}

/// Splits guest output into lines and logs each one.
pub struct LineLogger {
    out: GuestOutput,
    name: &'static str,
    line: Vec<u8>,
}

/// Longest line logged as one record; longer output is split.
const MAX_LINE: usize = 4096;

impl LineLogger {
    fn emit(&mut self) {
        let text = String::from_utf8_lossy(&self.line);
        let text = text.trim_end_matches(['\r', '\n']);
        tracing::info!(target: "guest", plugin = %self.out.plugin, stream = self.name, "{text}");
        if self.name == "stderr" {
            let mut tail = self.out.tail.lock().expect("tail lock");
            tail.push_str(text);
            tail.push('\n');
            if tail.len() > TAIL_BYTES {
                let cut = tail.len() - TAIL_BYTES;
                let cut = (cut..tail.len())
                    .find(|i| tail.is_char_boundary(*i))
                    .unwrap_or(0);
                tail.drain(..cut);
            }
        }
        self.line.clear();
    }
}

impl Drop for LineLogger {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            self.emit();
        }
    }
}

impl tokio::io::AsyncWrite for LineLogger {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        for &b in buf {
            self.line.push(b);
            if b == b'\n' || self.line.len() >= MAX_LINE {
                self.emit();
            }
        }
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for LineLogger {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LineLogger {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(LineLogger {
            out: self.out.clone(),
            name: self.name,
            line: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_parse_access_suffixes() {
        let tmp = std::env::temp_dir();
        let g = DirGrant::parse(&format!("{}:rw", tmp.display()), Path::new("/")).unwrap();
        assert_eq!(g.access, Access::Rw);
        let g = DirGrant::parse(tmp.to_str().unwrap(), Path::new("/")).unwrap();
        assert_eq!(g.access, Access::Ro);
        assert!(DirGrant::parse("/definitely/not/here:ro", Path::new("/")).is_err());
    }
}
