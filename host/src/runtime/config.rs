//! The TOML config file and how it combines with the command line.
//!
//! ```toml
//! plugins_dir = "target/plugins"      # every *.wasm here is a plugin
//! workspace = "."                     # relative tool paths resolve here
//! allow = ["samples:rw"]              # directories every plugin may use
//!
//! [defaults]
//! deadline_ms = 30000                 # per call
//! memory_mb = 512                     # per instance
//!
//! [[plugin]]
//! path = "target/plugins/ble_buffer.wasm"
//! prefix = "ble"                      # tools become ble_get_logs, …
//! allow = ["/var/log/ble:ro"]
//! network = ["127.0.0.1:8080"]        # host:port it may connect to
//! env = { BLE_BRIDGE_URL = "ws://127.0.0.1:8080" }
//! deadline_ms = 60000
//! memory_mb = 256
//! tick_ms = 50
//!
//! [http]                              # serve --http only
//! max_sessions = 64                   # MCP sessions open at once
//! session_idle_secs = 300             # an idle session is closed after this
//! max_connections = 256               # TCP connections open at once
//! header_timeout_secs = 10            # to send a request's headers
//! ```

use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The whole config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Directory scanned for `*.wasm` plugins.
    pub plugins_dir: Option<PathBuf>,
    /// Workspace directory.
    pub workspace: Option<PathBuf>,
    /// Directories granted to every plugin (`DIR`, `DIR:ro`, `DIR:rw`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Compile cache directory, or `false`-like empty string to disable.
    pub cache_dir: Option<PathBuf>,
    /// Limits applied to plugins that do not set their own.
    #[serde(default)]
    pub defaults: LimitsConfig,
    /// Plugins listed explicitly.
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<PluginConfig>,
    /// Limits of the HTTP transport (`serve --http`).
    #[serde(default)]
    pub http: HttpConfig,
    /// Who may sign the plugins pulled from which OCI repositories.
    #[serde(default)]
    pub trust: Vec<plugin_registry::TrustRule>,
}

/// `[http]`: limits of the streamable HTTP transport.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// MCP sessions open at once (default 64).
    pub max_sessions: Option<usize>,
    /// Seconds without a request after which a session is closed (default 300).
    pub session_idle_secs: Option<u64>,
    /// TCP connections open at once (default 256).
    pub max_connections: Option<usize>,
    /// Seconds a client has to send a request's headers (default 10).
    pub header_timeout_secs: Option<u64>,
}

/// Limits as written in the config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Wall-clock deadline of one call, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Memory cap of one instance, in MiB.
    pub memory_mb: Option<u64>,
    /// Interval of the `tick` hook, in milliseconds.
    pub tick_ms: Option<u64>,
}

/// One `[[plugin]]` entry.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// Path of the `.wasm` component, or `oci://HOST/REPOSITORY:TAG` to
    /// pull it (verified under the `[[trust]]` rules) at start.
    pub path: PathBuf,
    /// Name (defaults to the file stem).
    pub name: Option<String>,
    /// Prefix for its tool names.
    pub prefix: Option<String>,
    /// Directories it may use.
    #[serde(default)]
    pub allow: Vec<String>,
    /// `host:port` addresses it may connect to.
    #[serde(default)]
    pub network: Vec<String>,
    /// Environment variables (and settings) it sees.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its limits.
    #[serde(flatten)]
    pub limits: LimitsConfig,
}

impl ConfigFile {
    /// Reads a config file; relative paths in it resolve against its directory.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        let mut cfg: ConfigFile = toml::from_str(&text)
            .with_context(|| format!("config file {} is not valid", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let rebase = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        cfg.plugins_dir.as_mut().map(rebase);
        cfg.workspace.as_mut().map(rebase);
        cfg.cache_dir.as_mut().map(rebase);
        for p in &mut cfg.plugins {
            // `oci://…` names a registry, not a file.
            if !p.path.to_string_lossy().starts_with("oci://") {
                rebase(&mut p.path);
            }
            for a in &mut p.allow {
                *a = rebase_grant(base, a);
            }
        }
        for a in &mut cfg.allow {
            *a = rebase_grant(base, a);
        }
        for rule in &mut cfg.trust {
            rule.keys.iter_mut().for_each(rebase);
        }
        Ok(cfg)
    }
}

fn rebase_grant(base: &Path, spec: &str) -> String {
    if Path::new(spec).is_absolute() {
        spec.to_owned()
    } else {
        base.join(spec).to_string_lossy().into_owned()
    }
}

impl LimitsConfig {
    /// Fills unset values from `fallback`.
    pub fn or(&self, fallback: &LimitsConfig) -> LimitsConfig {
        LimitsConfig {
            deadline_ms: self.deadline_ms.or(fallback.deadline_ms),
            memory_mb: self.memory_mb.or(fallback.memory_mb),
            tick_ms: self.tick_ms.or(fallback.tick_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let doc = include_str!("config.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .skip_while(|l| !l.starts_with("plugins_dir"))
            .take_while(|l| !l.starts_with("```"))
            .collect::<Vec<_>>()
            .join("\n");
        let cfg: ConfigFile = toml::from_str(&doc).unwrap();
        assert_eq!(cfg.plugins.len(), 1);
        assert_eq!(cfg.plugins[0].prefix.as_deref(), Some("ble"));
        assert_eq!(cfg.plugins[0].limits.tick_ms, Some(50));
        assert_eq!(cfg.defaults.memory_mb, Some(512));
        assert_eq!(cfg.http.max_sessions, Some(64));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<ConfigFile>("plugin_dir = 'x'").is_err());
    }
}
