//! The host: turns options and a config file into loaded plugins and a live
//! catalogue, and keeps it current as plugin files change.

use crate::runtime::cache::{CacheOutcome, CompileCache, Wasm};
use crate::runtime::config::{ConfigFile, PluginConfig};
use crate::runtime::context::CallContext;
use crate::runtime::engine;
use crate::runtime::imports::{self, LogLevel, PeerCall, PeerDirectory, PluginState, Sinks};
use crate::runtime::plugin::{Limits, Plugin, PluginSpec};
use crate::runtime::registry::{Catalog, Refusal, Registry};
use crate::runtime::sandbox::{Access, CODE_VAR, DirGrant, Policy};
use crate::runtime::{bundled, remote};
use crate::wit::interface::{PluginInterface, SettingDecl};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// Options common to `serve`, `tools` and `call`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Config file.
    pub config: Option<PathBuf>,
    /// Directory of `*.wasm` plugins.
    pub plugins_dir: Option<PathBuf>,
    /// Directories granted to every plugin.
    pub allow: Vec<String>,
    /// Workspace directory.
    pub workspace: Option<PathBuf>,
    /// Compile cache directory (default: the user cache directory).
    pub cache_dir: Option<PathBuf>,
    /// Disable the compile cache.
    pub no_cache: bool,
    /// Plugin-declared settings given on the command line (`--logs-dir X`).
    pub settings: Vec<(String, String)>,
}

/// A plugin log message, for MCP logging notifications.
#[derive(Debug, Clone)]
pub struct LogEvent {
    /// Plugin name.
    pub plugin: String,
    /// Severity.
    pub level: LogLevel,
    /// Message.
    pub message: String,
}

/// The running host.
pub struct Host {
    engine: Engine,
    /// Shared by every plugin (a clone copies every import's name and
    /// type: a millisecond at a start with nine plugins).
    linker: Arc<Linker<PluginState>>,
    cache: CompileCache,
    config: ConfigFile,
    options: Options,
    workspace: PathBuf,
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
    /// Loaded plugins by source path, in load order.
    loaded: Mutex<BTreeMap<PathBuf, Arc<Plugin>>>,
    /// SHA-256 of each loaded file, so a touch without a change is no reload.
    digests: Mutex<BTreeMap<PathBuf, [u8; 32]>>,
    /// Serializes reloads, so two quick changes swap in order.
    reloading: tokio::sync::Mutex<()>,
    /// Blobs plugins hand each other, shared by every plugin.
    blobs: Arc<imports::BlobStore>,
    /// Where the bundled plugins were written, when they are served
    /// (nothing else names a plugin).
    bundled: Option<PathBuf>,
    /// Config entries naming `oci://…`: the file each was pulled into.
    pulled: Mutex<BTreeMap<PathBuf, PathBuf>>,
    /// Where each loaded file came from, when it came from a registry.
    provenance: Mutex<BTreeMap<PathBuf, remote::Provenance>>,
}

/// A plugin file read, its interface derived and its code compiled: the
/// part of loading that needs nothing of other plugins.
struct Prepared {
    wasm: Wasm,
    interface: PluginInterface,
    /// None when it compiles in the background after loading.
    compiled: Option<(wasmtime::component::Component, CacheOutcome)>,
    /// Whether this host ran it before from its cache: a background load
    /// then maps cached code rather than compiling.
    ran_before: bool,
    /// How long preparing it took.
    took: Duration,
}

/// Default interval of the `tick` hook when the config sets none.
const DEFAULT_TICK: Duration = Duration::from_millis(100);

impl Host {
    /// Creates the engine and reads the config; loads nothing yet.
    pub fn new(options: Options) -> Result<Self> {
        let config = match &options.config {
            Some(path) => ConfigFile::load(path)?,
            None => ConfigFile::default(),
        };
        let workspace = options
            .workspace
            .clone()
            .or_else(|| config.workspace.clone())
            .map_or_else(std::env::current_dir, Ok)
            .context("finding the workspace directory")?;
        let workspace = workspace.canonicalize().with_context(|| {
            format!("workspace directory {} does not exist", workspace.display())
        })?;
        let engine = engine::new_engine()?;
        let linker = Arc::new(imports::new_linker(&engine)?);
        let names_plugins = options.plugins_dir.is_some()
            || config.plugins_dir.is_some()
            || !config.plugins.is_empty();
        let bundled = if names_plugins {
            None
        } else {
            bundled::materialize(&cache_root(&options, &config))?
        };
        let cache = CompileCache::new(if options.no_cache {
            None
        } else {
            options
                .cache_dir
                .clone()
                .or_else(|| config.cache_dir.clone())
                .or_else(CompileCache::default_dir)
        });
        Ok(Self {
            engine,
            linker,
            cache,
            config,
            options,
            workspace,
            registry: Arc::new(Registry::default()),
            logs: broadcast::channel(256).0,
            loaded: Mutex::new(BTreeMap::new()),
            digests: Mutex::new(BTreeMap::new()),
            reloading: tokio::sync::Mutex::new(()),
            blobs: Arc::default(),
            bundled,
            pulled: Mutex::default(),
            provenance: Mutex::default(),
        })
    }

    /// The live catalogue.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// The channel of plugin log messages, for servers to forward.
    pub fn log_sender(&self) -> broadcast::Sender<LogEvent> {
        self.logs.clone()
    }

    /// The config file's limits of the HTTP transport.
    pub fn http_config(&self) -> &crate::runtime::config::HttpConfig {
        &self.config.http
    }

    /// The directory scanned for plugins, if any.
    pub fn plugins_dir(&self) -> Option<PathBuf> {
        self.options
            .plugins_dir
            .clone()
            .or_else(|| self.config.plugins_dir.clone())
            .or_else(|| self.bundled.clone())
    }

    /// Whether the plugins served are the ones built into this binary.
    pub fn serves_bundled(&self) -> bool {
        self.bundled.is_some()
    }

    fn is_bundled(&self, file: &Path) -> bool {
        self.bundled
            .as_ref()
            .is_some_and(|dir| file.starts_with(dir))
    }

    /// Every plugin file to load: config entries first, then the plugins directory.
    pub fn plugin_files(&self) -> Result<Vec<PathBuf>> {
        let pulled = self.pulled.lock().expect("pulled lock").clone();
        let mut files: Vec<PathBuf> = self
            .config
            .plugins
            .iter()
            .filter_map(|p| {
                if is_remote(&p.path) {
                    // Pulled at start; one that failed was reported then.
                    pulled.get(&p.path).cloned()
                } else {
                    Some(p.path.clone())
                }
            })
            .collect();
        if let Some(dir) = self.plugins_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("reading plugins directory {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
                .collect();
            found.sort();
            // Each path resolved once: resolving is a system call per
            // component, and comparing pairs would resolve each file once
            // per file before it, on the way to the first `tools/list`.
            let mut listed: std::collections::HashSet<PathBuf> =
                files.iter().map(|g| resolved(g)).collect();
            for f in found {
                if listed.insert(resolved(&f)) {
                    files.push(f);
                }
            }
        }
        Ok(files)
    }

    /// Loads every plugin and publishes the catalogue. Plugins that fail are
    /// reported and skipped; returns the problems.
    pub async fn load_all(&self) -> Result<Vec<String>> {
        let mut problems = self.pull_remote().await;
        let files = self.plugin_files()?;
        if files.is_empty() {
            tracing::warn!(
                "no plugins: pass --plugins DIR or list [[plugin]] entries in a config file"
            );
        }
        let mut loaded = BTreeMap::new();
        let started = std::time::Instant::now();
        let prepared = self.prepare_all(&files);
        for (file, prepared) in files.into_iter().zip(prepared) {
            let finished = match prepared {
                Ok(prepared) => {
                    let digest = prepared.wasm.digest();
                    self.finish_load(&file, prepared).await.map(|p| (p, digest))
                }
                Err(e) => Err(e),
            };
            match finished {
                Ok((p, digest)) => {
                    self.digests
                        .lock()
                        .expect("digests lock")
                        .insert(file.clone(), digest);
                    loaded.insert(file, p);
                }
                Err(e) => problems.push(format!("{}: {e:#}", file.display())),
            }
        }
        problems.extend(self.unknown_settings(loaded.values()));
        let count = loaded.len();
        *self.loaded.lock().expect("loaded lock") = loaded;
        problems.extend(self.publish().into_iter().map(|r| r.message));
        tracing::debug!(
            us = started.elapsed().as_micros() as u64,
            "{count} plugins loaded and published"
        );
        for p in &problems {
            tracing::error!("{p}");
        }
        Ok(problems)
    }

    fn unknown_settings<'a>(&self, plugins: impl Iterator<Item = &'a Arc<Plugin>>) -> Vec<String> {
        let declared: Vec<String> = plugins
            .flat_map(|p| p.interface.settings.iter().filter_map(|s| s.flag.clone()))
            .collect();
        self.options
            .settings
            .iter()
            .filter(|(flag, _)| !declared.contains(flag))
            .map(|(flag, _)| {
                format!(
                    "option --{flag} is not a benchtop option and no loaded plugin declares it (plugin options: {})",
                    if declared.is_empty() { "none".to_owned() } else { declared.iter().map(|d| format!("--{d}")).collect::<Vec<_>>().join(", ") }
                )
            })
            .collect()
    }

    /// Rebuilds the catalogue from the loaded plugins and swaps it in.
    fn publish(&self) -> Vec<Refusal> {
        let plugins: Vec<Arc<Plugin>> = self
            .loaded
            .lock()
            .expect("loaded lock")
            .values()
            .cloned()
            .collect();
        let (catalog, refusals) = Catalog::build(plugins);
        self.registry.replace(catalog);
        refusals
    }

    /// Pulls the config's `oci://…` plugins, verified, into the cache
    /// directory; returns what failed (those plugins are not loaded, the
    /// others are).
    async fn pull_remote(&self) -> Vec<String> {
        let policy = remote::trust_policy(&self.config);
        let dir = self.cache_root().join("oci");
        let mut problems = Vec::new();
        for entry in self.config.plugins.iter().filter(|p| is_remote(&p.path)) {
            let text = entry.path.to_string_lossy();
            let pulled = match plugin_registry::Source::parse(&text) {
                Ok(source) => remote::pull_into(&source, &policy, &dir).await,
                Err(e) => Err(e.into()),
            };
            match pulled {
                Ok((file, provenance)) => {
                    tracing::info!("pulled {}", provenance.describe());
                    self.pulled
                        .lock()
                        .expect("pulled lock")
                        .insert(entry.path.clone(), file);
                }
                Err(e) => problems.push(format!("{text}: {e:#}")),
            }
        }
        problems
    }

    /// Where registry pulls and the bundled plugins are written.
    fn cache_root(&self) -> PathBuf {
        cache_root(&self.options, &self.config)
    }

    fn record_provenance(&self, file: &Path, came_from: Option<remote::Provenance>) {
        let mut provenance = self.provenance.lock().expect("provenance lock");
        match came_from {
            Some(p) => provenance.insert(file.to_owned(), p),
            None => provenance.remove(file),
        };
    }

    /// Where the plugin loaded from `file` came from, when from a registry.
    pub fn provenance(&self, file: &Path) -> Option<remote::Provenance> {
        self.provenance
            .lock()
            .expect("provenance lock")
            .get(file)
            .cloned()
    }

    fn plugin_config(&self, file: &Path) -> PluginConfig {
        let pulled = self.pulled.lock().expect("pulled lock").clone();
        let entries = &self.config.plugins;
        // The path as the config names it first (a config entry is loaded
        // by that path), so that only a file from the plugins directory
        // resolves the config's paths, each once.
        entries
            .iter()
            .find(|p| p.path == file || pulled.get(&p.path).is_some_and(|f| f == file))
            .or_else(|| {
                let file = resolved(file);
                entries.iter().find(|p| resolved(&p.path) == file)
            })
            .cloned()
            .unwrap_or_else(|| PluginConfig {
                path: file.to_owned(),
                ..Default::default()
            })
    }

    /// [`Self::prepare`] for every file, spread over the cores: at start
    /// most of loading is reading, hashing and mapping compiled code, and
    /// one plugin's share needs nothing of another's.
    fn prepare_all(&self, files: &[PathBuf]) -> Vec<Result<Prepared>> {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(files.len());
        let prepare = |file: &PathBuf| {
            self.cache
                .open(file)
                .and_then(|wasm| self.prepare(file, wasm))
        };
        if workers <= 1 {
            return files.iter().map(prepare).collect();
        }
        // Each worker takes the next file until none is left, and keeps
        // what it prepared with the file's index. Largest first: a large
        // plugin taken last would leave the other workers idle while it
        // alone is derived (the time a file takes grows with its size).
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_cached_key(|&i| {
            std::cmp::Reverse(std::fs::metadata(&files[i]).map_or(0, |m| m.len()))
        });
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut done: Vec<(usize, Result<Prepared>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        std::iter::from_fn(|| {
                            let taken = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let i = *order.get(taken)?;
                            Some((i, prepare(&files[i])))
                        })
                        .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("a prepare worker panicked"))
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, prepared)| prepared).collect()
    }

    /// Reads a plugin file, derives its interface and compiles it (or maps
    /// it from the compile cache). The bundled plugins are first-party code
    /// known to link: on a start with an empty compile cache (the first
    /// after installing) they are left to compile in the background, so
    /// their tools are offered at once rather than after seconds of
    /// compiling.
    fn prepare(&self, file: &Path, wasm: Wasm) -> Result<Prepared> {
        let started = std::time::Instant::now();
        let interface = self.cache.interface(&wasm)?;
        let ran_before = self.cache.ran_before(&self.engine, &wasm);
        let compiled =
            if ran_before || (self.is_bundled(file) && !self.cache.holds(&self.engine, &wasm)) {
                None
            } else {
                Some(self.cache.load(&self.engine, &wasm)?)
            };
        Ok(Prepared {
            wasm,
            interface,
            compiled,
            ran_before,
            took: started.elapsed(),
        })
    }

    /// Links and instantiates a prepared plugin under its grants and limits.
    async fn finish_load(&self, file: &Path, prepared: Prepared) -> Result<Arc<Plugin>> {
        let started = std::time::Instant::now();
        let Prepared {
            wasm,
            interface,
            compiled,
            ran_before,
            took,
        } = prepared;
        let came_from = remote::Provenance::read_beside(file, &wasm.digest());
        if let Some(p) = &came_from {
            tracing::info!("{} came from {}", file.display(), p.describe());
        }
        self.record_provenance(file, came_from);
        let cfg = self.plugin_config(file);
        let name = cfg.name.clone().unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().replace('_', "-"))
                .unwrap_or_else(|| "plugin".into())
        });
        for w in &interface.warnings {
            tracing::warn!(plugin = %name, "{w}");
        }
        let code = u64::from_le_bytes(wasm.digest()[..8].try_into().expect("8 of 32 bytes"));
        let mut policy = self.policy_for(&cfg, &interface.settings)?;
        self.refuse_writable_host_files(&name, &policy)?;
        policy.cache = self.cache.plugin_dir(&name);
        // What it keeps in its cache directory was decided by this code.
        policy
            .env
            .insert(CODE_VAR.to_owned(), format!("{code:016x}"));
        let limits = self.limits_for(&cfg, interface.tick_interface.is_some());
        let spec = PluginSpec {
            name: name.clone(),
            source: file.to_owned(),
            prefix: cfg.prefix.clone(),
            policy,
            limits,
            code,
        };
        let logs = self.logs.clone();
        let registry = Arc::downgrade(&self.registry);
        let sinks = Sinks {
            log: Arc::new(move |plugin: &str, level: LogLevel, message: &str| {
                let _ = logs.send(LogEvent {
                    plugin: plugin.to_owned(),
                    level,
                    message: message.to_owned(),
                });
            }),
            changed: Arc::new({
                let registry = registry.clone();
                move |plugin: &str, uri: &str, caller: Option<&str>| {
                    if let Some(registry) = registry.upgrade() {
                        registry.resource_changed(plugin, uri, caller);
                    }
                }
            }),
            peers: Arc::new(CatalogPeers(registry)),
            blobs: self.blobs.clone(),
        };
        let Some((component, outcome)) = compiled else {
            let (cache, engine) = (self.cache.clone(), self.engine.clone());
            let wasm = Arc::new(wasm);
            let (name, shown) = (spec.name.clone(), file.to_owned());
            let ran = (self.cache.clone(), self.engine.clone(), wasm.clone());
            let plugin = Plugin::load_deferred(
                spec,
                interface,
                self.linker.clone(),
                sinks,
                ran_before,
                move || {
                    let started = std::time::Instant::now();
                    let (component, outcome) = cache.load(&engine, &wasm)?;
                    tracing::info!(
                        plugin = %name,
                        compiled = ?outcome,
                        ms = started.elapsed().as_millis() as u64,
                        "prepared {} in the background",
                        shown.display()
                    );
                    Ok(component)
                },
                move || ran.0.mark_ran(&ran.1, &ran.2),
            );
            if let Some(interval) = plugin.limits.tick {
                spawn_ticker(Arc::downgrade(&plugin), interval);
            }
            tracing::info!(plugin = %plugin.name, tools = plugin.interface.tools.len(), "loaded {}, preparing it in the background", file.display());
            return Ok(plugin);
        };
        let plugin =
            Arc::new(Plugin::load(spec, &component, interface, &self.linker, sinks).await?);
        self.cache.mark_ran(&self.engine, &wasm);
        if let Some(interval) = plugin.limits.tick {
            spawn_ticker(Arc::downgrade(&plugin), interval);
        }
        tracing::info!(
            plugin = %plugin.name,
            tools = plugin.interface.tools.len(),
            compiled = ?outcome,
            ms = (took + started.elapsed()).as_millis() as u64,
            "loaded {}",
            file.display()
        );
        if outcome == CacheOutcome::Rebuilt {
            tracing::warn!(plugin = %plugin.name, "its compile-cache entry was invalid and has been rebuilt");
        }
        Ok(plugin)
    }

    /// The files that decide which code runs under which grants: a plugin
    /// that could write one could run its code under another plugin's
    /// grants (hot swap loads what lands in the plugins directory; a
    /// compiled artifact is native code).
    fn host_files(&self) -> Vec<(&'static str, PathBuf)> {
        let mut files = Vec::new();
        if let Some(dir) = self.plugins_dir() {
            files.push(("the plugins directory", canonical_or_nearest(&dir)));
        }
        if let Some(config) = &self.options.config {
            files.push(("the config file", canonical_or_nearest(config)));
        }
        for p in &self.config.plugins {
            files.push(("the plugin file", canonical_or_nearest(&p.path)));
        }
        if let Some(cache) = self.cache.dir() {
            files.push(("the compile cache", canonical_or_nearest(cache)));
        }
        files
    }

    /// Refuses a plugin whose read-write grants cover any of [`Self::host_files`].
    fn refuse_writable_host_files(&self, name: &str, policy: &Policy) -> Result<()> {
        // Most plugins write nowhere: skip resolving every host file for them.
        if !policy.dirs.iter().any(|g| g.access == Access::Rw) {
            return Ok(());
        }
        let host_files = self.host_files();
        // Each plugin's cache directory is its own: another plugin writing
        // there could make it answer wrongly (a definitions index, say).
        let plugin_data = self
            .cache
            .plugin_data_root()
            .map(|d| canonical_or_nearest(&d));
        for grant in policy.dirs.iter().filter(|g| g.access == Access::Rw) {
            if let Some((what, path)) = host_files.iter().find(|(_, p)| p.starts_with(&grant.path))
            {
                let fix = if *what == "the compile cache" {
                    ", or put the cache elsewhere (--cache-dir DIR or cache_dir in the config file), or pass --no-cache"
                } else {
                    ", or grant that directory read-only (DIR:ro)"
                };
                bail!(
                    "refusing to load plugin `{name}`: its read-write grant {} covers {what} {}, so it could \
                     replace plugin code and run it with another plugin's grants. Grant a directory that does \
                     not contain it{fix}",
                    grant.path.display(),
                    path.display()
                );
            }
            if let Some(data) = &plugin_data
                && (grant.path.starts_with(data) || data.starts_with(&grant.path))
            {
                bail!(
                    "refusing to load plugin `{name}`: its read-write grant {} reaches the plugins' own \
                     cache directories ({}), where it could change what another plugin reads back. Grant \
                     a directory outside them",
                    grant.path.display(),
                    data.display()
                );
            }
        }
        Ok(())
    }

    fn limits_for(&self, cfg: &PluginConfig, has_tick: bool) -> Limits {
        let l = cfg.limits.or(&self.config.defaults);
        let d = Limits::default();
        Limits {
            deadline: l.deadline_ms.map_or(d.deadline, Duration::from_millis),
            memory: l.memory_mb.map_or(d.memory, |m| (m as usize) << 20),
            tick: has_tick.then(|| l.tick_ms.map_or(DEFAULT_TICK, Duration::from_millis)),
        }
    }

    fn policy_for(&self, cfg: &PluginConfig, settings: &[SettingDecl]) -> Result<Policy> {
        let mut policy = Policy {
            workspace: Some(self.workspace.clone()),
            env: cfg.env.clone(),
            ..Default::default()
        };
        // Command-line paths are relative to where benchtop was started;
        // config-file paths were made absolute against the file's directory.
        let cwd = std::env::current_dir().context("reading the current directory")?;
        for spec in self
            .options
            .allow
            .iter()
            .chain(&self.config.allow)
            .chain(&cfg.allow)
        {
            add_grant(&mut policy, DirGrant::parse(spec, &cwd)?);
        }
        policy.network = Policy::resolve_network(&cfg.network)?;
        for decl in settings {
            let Some((value, base)) = crate::runtime::settings::setting_value(
                decl,
                &self.options.settings,
                &cfg.env,
                self.options.config.as_deref(),
                &self.workspace,
                &cwd,
            ) else {
                continue;
            };
            if let Some(access) = decl.access {
                match DirGrant::new(&base.join(&value), access) {
                    Ok(grant) => {
                        policy
                            .env
                            .insert(decl.env.clone(), grant.path.to_string_lossy().into_owned());
                        add_grant(&mut policy, grant);
                        continue;
                    }
                    Err(e) => tracing::warn!("setting {}: {e:#}", decl.env),
                }
            }
            policy.env.insert(decl.env.clone(), value);
        }
        Ok(policy)
    }

    /// Loads or reloads the plugin at `file` beside the running one and swaps
    /// it in; on failure the old version keeps serving. Returns false when
    /// the file's content is what is already serving.
    pub async fn reload(&self, file: &Path) -> Result<bool> {
        let _one_at_a_time = self.reloading.lock().await;
        let wasm = Wasm::read(file)?;
        let digest = wasm.digest();
        if self.digests.lock().expect("digests lock").get(file) == Some(&digest) {
            return Ok(false);
        }
        let prepared = self.prepare(file, wasm)?;
        let plugin = self.finish_load(file, prepared).await?;
        let previous = self
            .loaded
            .lock()
            .expect("loaded lock")
            .insert(file.to_owned(), plugin.clone());
        let refused = self
            .publish()
            .into_iter()
            .find(|r| Arc::ptr_eq(&r.plugin, &plugin));
        if let Some(refusal) = refused {
            // The new version collides with another plugin: put the old one back.
            let mut loaded = self.loaded.lock().expect("loaded lock");
            match previous {
                Some(p) => loaded.insert(file.to_owned(), p),
                None => loaded.remove(file),
            };
            drop(loaded);
            self.publish();
            bail!("{}", refusal.message);
        }
        self.digests
            .lock()
            .expect("digests lock")
            .insert(file.to_owned(), digest);
        Ok(true)
    }

    /// Unloads the plugin loaded from `file`.
    pub fn unload(&self, file: &Path) -> bool {
        self.digests.lock().expect("digests lock").remove(file);
        let removed = self
            .loaded
            .lock()
            .expect("loaded lock")
            .remove(file)
            .is_some();
        if removed {
            self.publish();
        }
        removed
    }
}

/// Who serves which interface, as the live catalogue says at each call: a
/// plugin added or removed (hot swap) is seen by the next call.
struct CatalogPeers(std::sync::Weak<Registry>);

impl CatalogPeers {
    fn serving(&self, interface: &str) -> Vec<Arc<Plugin>> {
        let Some(registry) = self.0.upgrade() else {
            return Vec::new();
        };
        registry
            .snapshot()
            .plugins()
            .iter()
            .filter(|p| p.interface.provides.iter().any(|i| i == interface))
            .cloned()
            .collect()
    }
}

impl PeerDirectory for CatalogPeers {
    fn providers(&self, interface: &str) -> Vec<(String, u64)> {
        self.serving(interface)
            .iter()
            .map(|p| (p.name.clone(), p.generation))
            .collect()
    }

    fn call<'a>(
        &'a self,
        plugin: &'a str,
        interface: &'a str,
        func: &'a str,
        params: &'a [wasmtime::component::Val],
        expected: &'a Arc<crate::runtime::imports::Shape>,
        ctx: CallContext,
    ) -> PeerCall<'a> {
        Box::pin(async move {
            let Some(serving) = self
                .serving(interface)
                .into_iter()
                .find(|p| p.name == plugin)
            else {
                return Err(format!(
                    "plugin `{plugin}` no longer serves {interface} (it was removed or replaced)"
                ));
            };
            serving
                .call_provided(interface, func, params, expected, ctx)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

fn add_grant(policy: &mut Policy, grant: DirGrant) {
    match policy.dirs.iter_mut().find(|d| d.path == grant.path) {
        Some(existing) => {
            if grant.access == crate::runtime::sandbox::Access::Rw {
                existing.access = grant.access;
            }
        }
        None => policy.dirs.push(grant),
    }
}

/// `path` made absolute with links resolved as far as it exists (a cache
/// directory may not exist yet), so it compares with canonical grants.
fn canonical_or_nearest(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    loop {
        if let Ok(c) = cur.canonicalize() {
            return rest.into_iter().rev().fold(c, |acc, part| acc.join(part));
        }
        match (cur.file_name().map(ToOwned::to_owned), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
}

/// The cache directory: the command line's, the config's, the user's
/// (`~/.cache/benchtop`), else one under the system's temporary directory.
fn cache_root(options: &Options, config: &ConfigFile) -> PathBuf {
    options
        .cache_dir
        .clone()
        .or_else(|| config.cache_dir.clone())
        .or_else(CompileCache::default_dir)
        .unwrap_or_else(|| std::env::temp_dir().join("benchtop"))
}

/// Whether a config entry's path names a registry (`oci://…`).
fn is_remote(path: &Path) -> bool {
    path.to_string_lossy().starts_with("oci://")
}

/// `path` with links resolved, or as given when it cannot be resolved (a
/// config entry naming a file not there yet): two paths name the same
/// plugin file when their resolved forms are equal.
fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

fn spawn_ticker(plugin: std::sync::Weak<Plugin>, interval: Duration) {
    tokio::spawn(async move {
        let mut timer = tokio::time::interval(interval);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            let Some(plugin) = plugin.upgrade() else {
                break;
            };
            if let Err(e) = plugin.tick().await {
                tracing::warn!(plugin = %plugin.name, "tick failed: {e}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_do_not_exist_yet_resolve_through_their_parents() {
        let tmp = std::env::temp_dir().canonicalize().unwrap();
        assert_eq!(
            canonical_or_nearest(&tmp.join("no/such/dir")),
            tmp.join("no/such/dir")
        );
        assert_eq!(canonical_or_nearest(&tmp), tmp);
    }
}
