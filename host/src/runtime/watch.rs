//! Hot swap (docs/design.md, Contract 4): watch the plugins directory and load
//! changed components beside the running ones.
//!
//! A changed or added `.wasm` is compiled, validated and instantiated first;
//! only then is the catalogue swapped, so in-flight calls finish on the old
//! instance and a broken file leaves the old version serving. A removed file
//! unloads its tools. Every change reaches clients as `tools/list_changed`.

use crate::runtime::host::Host;
use anyhow::{Context, Result};
use notify::{EventKind, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Quiet period after the last file event before acting: editors and
/// copies write in several steps.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// Watches `dir` for as long as the returned watcher lives.
pub fn watch(host: Arc<Host>, dir: &Path) -> Result<notify::RecommendedWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        for path in event.paths {
            if path.extension().is_some_and(|e| e == "wasm") {
                let _ = tx.send(path);
            }
        }
    })
    .context("starting the plugin directory watcher")?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .with_context(|| format!("watching {}", dir.display()))?;
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut changed = BTreeSet::from([first]);
            loop {
                match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                    Ok(Some(path)) => {
                        changed.insert(path);
                    }
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            for path in changed {
                apply(&host, &path).await;
            }
        }
    });
    tracing::info!("watching {} for plugin changes", dir.display());
    Ok(watcher)
}

async fn apply(host: &Host, path: &Path) {
    if path.is_file() {
        match host.reload(path).await {
            Ok(true) => tracing::info!("hot swap: {} is now serving", path.display()),
            Ok(false) => {}
            Err(e) => tracing::error!(
                "hot swap refused {}: {e:#}; the previous version (if any) keeps serving",
                path.display()
            ),
        }
    } else if host.unload(path) {
        tracing::info!(
            "hot swap: {} removed; its tools are unloaded",
            path.display()
        );
    }
}
