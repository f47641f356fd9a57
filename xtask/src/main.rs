//! Build tasks for benchtop.
//!
//! `cargo run -p xtask -- plugins [NAME…]` builds plugin crates for
//! `wasm32-wasip2` and writes each component, with its WIT docs injected as a
//! custom section, to `target/plugins/` (first-party plugins) or
//! `target/test-plugins/` (test components) or `target/examples/` (the
//! examples for plugin authors). The component toolchain drops
//! WIT doc comments, and benchtop turns them into tool descriptions, so a
//! component without them would serve undocumented tools.
//!
//! The section's format is the `wit-docs` crate's.
//!
//! `cargo run -p xtask -- inject-docs WIT_DIR IN.wasm OUT.wasm` does the
//! injection alone, for plugin authors with their own build.
//!
//! `cargo run -p xtask -- layers` fails when a crate's modules import each
//! other in a loop, or a host layer imports one above it ([`layers`]).

mod dist;
mod layers;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("plugins") => build_plugins(&args[1..]),
        Some("layers") => {
            let root = args.get(1).map_or_else(workspace_root, PathBuf::from);
            let report = layers::check_workspace(&root)?;
            if report.is_empty() {
                println!("layers: no import loops; the host's layers import only downward");
                Ok(())
            } else {
                bail!("{}", report.join("\n"))
            }
        }
        Some("dist") if (2..=3).contains(&args.len()) => {
            let root = workspace_root();
            let out = args
                .get(2)
                .map_or_else(|| root.join("target/dist"), PathBuf::from);
            dist::dist(&root, Path::new(&args[1]), &out, &dist::mcpb_cli(&root))
        }
        Some("inject-docs") if args.len() == 4 => inject_docs(
            Path::new(&args[1]),
            Path::new(&args[2]),
            Path::new(&args[3]),
        ),
        _ => bail!(
            "usage:\n  xtask plugins [NAME...]              build plugins and test components\n  xtask inject-docs WIT_DIR IN.wasm OUT.wasm\n  xtask layers [ROOT]                  check that no modules import each other in a loop\n  xtask dist BINARY [OUT]              release archive, MCP Bundle, server.json (target/dist)"
        ),
    }
}

/// A crate that builds into a component.
struct ComponentCrate {
    name: String,
    wit: PathBuf,
    out_dir: PathBuf,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

fn component_crates(root: &Path) -> Result<Vec<ComponentCrate>> {
    let mut crates = Vec::new();
    for (dir, out, wit_of) in [
        ("plugins", "plugins", WitLocation::Shared),
        ("tests/components", "test-plugins", WitLocation::InCrate),
        ("examples", "examples", WitLocation::InCrate),
        // Definition families, each built as a third party would build one.
        ("families", "plugins", WitLocation::InCrate),
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("Cargo.toml").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let wit = match wit_of {
                WitLocation::Shared => root.join("wit").join(&name),
                WitLocation::InCrate => root.join(dir).join(&name).join("wit"),
            };
            crates.push(ComponentCrate {
                name,
                wit,
                out_dir: root.join("target").join(out),
            });
        }
    }
    Ok(crates)
}

enum WitLocation {
    /// `wit/<name>/`, for first-party plugins.
    Shared,
    /// `<crate>/wit/`, for test components and the examples.
    InCrate,
}

fn build_plugins(only: &[String]) -> Result<()> {
    let root = workspace_root();
    let mut crates = component_crates(&root)?;
    if !only.is_empty() {
        crates.retain(|c| only.contains(&c.name));
        if crates.is_empty() {
            bail!("no plugin crate named {}", only.join(", "));
        }
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--release", "--target", "wasm32-wasip2"]);
    for c in &crates {
        cmd.args(["-p", &c.name]);
    }
    let status = cmd
        .status()
        .context("running cargo build for wasm32-wasip2")?;
    if !status.success() {
        bail!(
            "building the plugins failed (is the target installed? `rustup target add wasm32-wasip2`)"
        );
    }
    for c in &crates {
        let file = format!("{}.wasm", c.name.replace('-', "_"));
        let built = root.join("target/wasm32-wasip2/release").join(&file);
        std::fs::create_dir_all(&c.out_dir)?;
        let out = c.out_dir.join(&file);
        inject_docs(&c.wit, &built, &out).with_context(|| format!("plugin `{}`", c.name))?;
        let size = std::fs::metadata(&out)?.len();
        eprintln!(
            "  {:<14} {:>8} KiB  {}",
            c.name,
            size / 1024,
            out.strip_prefix(&root).unwrap_or(&out).display()
        );
    }
    Ok(())
}

/// Writes `input` with the WIT package's docs injected to `output`.
fn inject_docs(wit_dir: &Path, input: &Path, output: &Path) -> Result<()> {
    let wasm = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
    let out = wit_docs::inject(wit_dir, &wasm)?;
    // An unchanged component keeps its mtime: the host embeds the plugins
    // (host/build.rs) and would otherwise rebuild after every build.
    if std::fs::read(output).is_ok_and(|old| old == out) {
        return Ok(());
    }
    let tmp = output.with_extension("wasm.tmp");
    std::fs::write(&tmp, &out)?;
    // Renamed into place: a server watching the directory never sees half a file.
    std::fs::rename(&tmp, output)?;
    Ok(())
}
