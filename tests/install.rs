//! One step to install: the binary carries the first-party plugins, so
//! `benchtop serve` with no plugins directory serves all of them.

use e2e::*;
use std::path::Path;
use tokio::process::Command;

/// `bin serve ARGS` as a user without a cache would start it: HOME, the
/// cache and the working directory in `scratch`.
fn serve_in(bin: &Path, args: &[&str], scratch: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .args(args)
        .env("XDG_CACHE_HOME", scratch.join("cache"))
        .env("HOME", scratch)
        .env("BENCHTOP_LOG", "info")
        .current_dir(scratch);
    cmd
}

/// The tools a server started with `args` (in a scratch HOME and cache)
/// offers.
async fn tools_of(bin: &Path, args: &[&str], scratch: &Path) -> Vec<String> {
    let s = Server::connect(serve_in(bin, args, scratch))
        .await
        .expect("starting benchtop");
    let mut names = s.tool_names().await;
    names.sort();
    let stderr = s.stderr.lock().unwrap().clone();
    s.stop().await;
    assert!(!names.is_empty(), "no tools: {stderr}");
    names
}

/// What `--plugins target/plugins` serves: every first-party tool.
async fn first_party_tools(scratch: &Path) -> Vec<String> {
    let dir = plugins();
    tools_of(&bin(), &["--plugins", dir.to_str().unwrap()], scratch).await
}

#[tokio::test]
async fn serve_without_a_plugins_directory_serves_the_bundled_plugins() {
    let scratch = tempfile::tempdir().unwrap();
    let bundled = tools_of(&bin(), &[], scratch.path()).await;
    assert_eq!(bundled, first_party_tools(scratch.path()).await);
    for tool in [
        "rom_info",
        "query_logs",
        "cp1600_step",
        "x86_run",
        "search_packets",
    ] {
        assert!(bundled.iter().any(|t| t == tool), "{tool} in {bundled:?}");
    }
    // Written once, beside the compile cache; a second start reuses them.
    let cache = scratch.path().join("cache/benchtop");
    let dirs: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("bundled-"))
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one bundled directory in {}",
        cache.display()
    );
}

/// `cargo install --path host`, as a user without the repository's tools
/// runs it (here with the workspace's target directory and lock file, so
/// it builds nothing the tests have not).
#[tokio::test]
async fn shared_cargo_install_gives_a_binary_that_serves_every_first_party_plugin() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("root");
    let status =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["install", "--path", "host", "--debug", "--locked", "--root"])
            .arg(&root)
            .env("CARGO_TARGET_DIR", repo().join("target"))
            .current_dir(repo())
            .status()
            .expect("running cargo install");
    assert!(status.success(), "cargo install --path host");
    let installed = root.join("bin/benchtop");
    let tools = tools_of(&installed, &[], scratch.path()).await;
    assert_eq!(tools, first_party_tools(scratch.path()).await);
}

/// Files under `dir` whose name ends in `.ext`, at any depth.
fn count_files(dir: &Path, ext: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                count_files(&path, ext)
            } else {
                usize::from(path.extension().is_some_and(|x| x == ext))
            }
        })
        .sum()
}

/// Waits (at most 2 minutes) until every bundled plugin unpacked under
/// `cache` has its compiled artifact there.
async fn all_compiled(cache: &Path) {
    let start = std::time::Instant::now();
    loop {
        let (wasm, cwasm) = (count_files(cache, "wasm"), count_files(cache, "cwasm"));
        if wasm > 0 && cwasm >= wasm {
            return;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "only {cwasm} of {wasm} bundled plugins were compiled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The first start after installing compiles nothing before it answers:
/// the bundled plugins' tools are offered at once, each compiles in the
/// background, and a call to one that is not ready yet waits for it. The
/// next start loads them from the compile cache.
#[tokio::test]
async fn a_cold_start_offers_the_bundled_tools_before_compiling_them() {
    let scratch = tempfile::tempdir().unwrap();
    let start = || Server::connect(serve_in(&bin(), &[], scratch.path()));
    let cold = start().await.expect("starting benchtop");
    assert!(cold.tool_names().await.iter().any(|t| t == "x86_run"));
    // x86-inspect is the last bundled plugin compiled: this call waits.
    let machines = cold.ok("x86_list_machines", serde_json::json!({})).await;
    assert!(text(&machines).contains("machines"), "{machines:?}");
    let log = cold.log_with(&["compiling in the background"]).await;
    assert!(log.contains("plugin=x86-inspect"), "{log}");
    // The compiles run side by side, so x86-inspect answering says nothing
    // of the others: wait for every artifact before stopping.
    all_compiled(&scratch.path().join("cache")).await;
    cold.stop().await;

    let warm = start().await.expect("starting benchtop again");
    assert!(warm.tool_names().await.iter().any(|t| t == "x86_run"));
    let stderr = warm.stderr.lock().unwrap().clone();
    warm.stop().await;
    assert!(
        !stderr.contains("compiling in the background"),
        "the second start compiles nothing: {stderr}"
    );
}
