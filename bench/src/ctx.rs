//! What every group shares: the binary under test, a scratch directory, a
//! compile cache, and starting a server with the client the tests use.

use anyhow::{Context as _, Result, bail};
use e2e::Server;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use tokio::process::Command;

/// Per-call deadline given to every plugin: long emulator runs must not be cut.
pub const DEADLINE_MS: u64 = 600_000;

pub struct Ctx {
    /// The repository root.
    pub repo: PathBuf,
    /// The `benchtop` binary measured.
    pub bin: PathBuf,
    /// Said on every row that measures `bin` when it is not an optimized build.
    pub bin_note: Option<String>,
    /// Scratch space, removed at the end.
    pub tmp: TempDir,
}

impl Ctx {
    pub fn new() -> Result<Self> {
        let repo = e2e::repo();
        let (bin, bin_note) = match std::env::var_os("BENCHTOP_BIN") {
            Some(p) => (PathBuf::from(p), None),
            None => {
                // `--profile bench` builds into target/release: prefer the host
                // built beside this binary, then any optimized build, then debug.
                let beside = std::env::current_exe()?.with_file_name("benchtop");
                let candidates = [
                    beside,
                    repo.join("target/release/benchtop"),
                    repo.join("target/debug/benchtop"),
                ];
                let bin = candidates
                    .iter()
                    .find(|p| p.exists())
                    .unwrap_or(&candidates[2])
                    .clone();
                let debug = bin.parent().is_some_and(|d| d.ends_with("debug"));
                let note = debug
                    .then(|| "debug host build (no optimized target/release/benchtop)".to_owned());
                (bin, note)
            }
        };
        if !bin.exists() {
            bail!(
                "{} is missing: run `make bench` (it builds the host first)",
                bin.display()
            );
        }
        let tmp = tempfile::Builder::new()
            .prefix("benchtop-bench-")
            .tempdir()?;
        Ok(Ctx {
            repo,
            bin,
            bin_note,
            tmp,
        })
    }

    /// The compile cache shared by every server after the startup group.
    pub fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    /// Brings the compile cache to the state a returning user's is in:
    /// a server with `args` (untimed) compiles what is missing, then, once
    /// every entry is older than the 2 s within which the host does not
    /// trust a file's times, a second one records each entry as checked,
    /// so later starts map it rather than read and check it. A cache
    /// filled a moment ago is in that state only from a user's second
    /// start on.
    pub async fn settle_cache<I, S>(&self, args: I) -> Result<()>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<std::ffi::OsStr>,
    {
        for round in 0..2 {
            let server = self.benchtop(args.clone()).await?;
            // Listing waits for the plugins loading in the background.
            server.client.list_all_tools().await?;
            server.stop().await;
            if round == 0 {
                let newest = std::fs::read_dir(self.cache())?
                    .flatten()
                    .filter_map(|e| e.metadata().ok()?.modified().ok())
                    .max();
                if let Some(age) = newest.and_then(|t| t.elapsed().ok()) {
                    let settled = std::time::Duration::from_millis(2_100);
                    tokio::time::sleep(settled.saturating_sub(age)).await;
                }
            }
        }
        Ok(())
    }

    /// A note for rows measured through `bin`, with `extra` appended.
    pub fn note(&self, extra: impl AsRef<str>) -> String {
        match (&self.bin_note, extra.as_ref()) {
            (None, e) => e.to_owned(),
            (Some(n), "") => n.clone(),
            (Some(n), e) => format!("{e}; {n}"),
        }
    }

    /// Writes a config file loading `plugins` (paths) with a generous
    /// deadline and the shared cache; returns its path.
    pub fn config(&self, name: &str, plugins: &[PathBuf]) -> Result<PathBuf> {
        let mut toml = format!(
            "cache_dir = {}\n\n[defaults]\ndeadline_ms = {DEADLINE_MS}\n",
            quote(&self.cache())
        );
        for p in plugins {
            toml.push_str(&format!("\n[[plugin]]\npath = {}\n", quote(p)));
        }
        let path = self.tmp.path().join(format!("{name}.toml"));
        std::fs::write(&path, toml)?;
        Ok(path)
    }

    /// `target/plugins/<stem>.wasm`.
    pub fn plugin(&self, stem: &str) -> PathBuf {
        self.repo
            .join("target/plugins")
            .join(format!("{stem}.wasm"))
    }

    /// `benchtop serve ARGS…`, connected.
    pub async fn benchtop<I, S>(&self, args: I) -> Result<Server>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve").args(args);
        cmd.env("BENCHTOP_LOG", "warn").current_dir(&self.repo);
        connect(cmd).await
    }
}

fn quote(p: &Path) -> String {
    Value::String(p.to_string_lossy().into_owned()).to_string()
}

/// Spawns `cmd` as an MCP server on stdio and initializes a session with
/// the end-to-end tests' client (so benchtop and the native server are
/// driven by the same client code).
pub async fn connect(cmd: Command) -> Result<Server> {
    Server::connect(cmd).await
}

/// `tools/call` returning the result's text, failing on an error result.
pub async fn call_text(server: &Server, tool: &str, args: Value) -> Result<String> {
    let r = server
        .try_call(tool, args)
        .await
        .with_context(|| format!("tools/call {tool}"))?;
    let text = e2e::text(&r);
    if e2e::is_error(&r) {
        bail!("{tool} failed: {text}");
    }
    Ok(text)
}

/// `tools/call` of a `@json` tool, parsed.
pub async fn call_json(server: &Server, tool: &str, args: Value) -> Result<Value> {
    let text = call_text(server, tool, args).await?;
    serde_json::from_str(&text).with_context(|| format!("{tool} returned non-JSON: {text}"))
}
