//! Build tasks for benchtop.
//!
//! `cargo run -p xtask -- plugins [NAME…]` builds plugin crates for
//! `wasm32-wasip2` and writes each component, with its WIT docs injected as a
//! custom section, to `target/plugins/` (first-party plugins) or
//! `target/test-plugins/` (test components). The component toolchain drops
//! WIT doc comments, and benchtop turns them into tool descriptions, so a
//! component without them would serve undocumented tools.
//!
//! The section holds wit-parser's `package-docs` format (a version byte, then
//! JSON) for the plugin's own WIT package, under the name
//! `benchtop-package-docs`: a section named `package-docs` must describe the
//! component's synthetic root package, and wit-parser's decoder (and so
//! `wasm-tools component wit` and jco) rejects one that describes another.
//!
//! `cargo run -p xtask -- inject-docs WIT_DIR IN.wasm OUT.wasm` does the
//! injection alone, for plugin authors with their own build.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use wit_parser::{PackageMetadata, Resolve, WorldItem};

/// Custom section carrying the WIT docs (read by benchtop's `docs` module).
const DOCS_SECTION: &str = "benchtop-package-docs";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("plugins") => build_plugins(&args[1..]),
        Some("inject-docs") if args.len() == 4 => inject_docs(
            Path::new(&args[1]),
            Path::new(&args[2]),
            Path::new(&args[3]),
        ),
        _ => bail!(
            "usage:\n  xtask plugins [NAME...]              build plugins and test components\n  xtask inject-docs WIT_DIR IN.wasm OUT.wasm"
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
    /// `<crate>/wit/`, for test components.
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

/// Appends the WIT package's docs to a component as a `package-docs` section,
/// after checking that every exported function is documented.
fn inject_docs(wit_dir: &Path, input: &Path, output: &Path) -> Result<()> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("parsing WIT in {}", wit_dir.display()))?;
    check_docs(&resolve, pkg)?;
    let docs = PackageMetadata::extract(&resolve, pkg).encode()?;
    let wasm = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
    let mut out = strip_package_docs(&wasm)?;
    let section = wasm_encoder::CustomSection {
        name: DOCS_SECTION.into(),
        data: docs.into(),
    };
    wasm_encoder::Section::append_to(&section, &mut out);
    let tmp = output.with_extension("wasm.tmp");
    std::fs::write(&tmp, &out)?;
    // Renamed into place: a server watching the directory never sees half a file.
    std::fs::rename(&tmp, output)?;
    Ok(())
}

fn check_docs(resolve: &Resolve, pkg: wit_parser::PackageId) -> Result<()> {
    let mut missing = Vec::new();
    for (_, &world) in &resolve.packages[pkg].worlds {
        for item in resolve.worlds[world].exports.values() {
            match item {
                WorldItem::Function(f) if f.docs.contents.is_none() => missing.push(f.name.clone()),
                WorldItem::Interface { id, .. } => {
                    let iface = &resolve.interfaces[*id];
                    if iface.package != Some(pkg) {
                        continue; // hooks such as benchtop:host/tick
                    }
                    for f in iface.functions.values() {
                        if f.docs.contents.is_none() {
                            missing.push(format!(
                                "{}.{}",
                                iface.name.as_deref().unwrap_or("?"),
                                f.name
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "these exported functions have no `///` doc comment, so their tools would have no description: {}",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Copies a component, leaving out any existing docs section so
/// that injecting twice is harmless. Walks the top-level section framing
/// (`id`, LEB128 size, contents) directly: nested modules stay opaque.
fn strip_package_docs(wasm: &[u8]) -> Result<Vec<u8>> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        bail!("not a WebAssembly file");
    }
    let mut out = wasm[..8].to_vec();
    let mut pos = 8;
    while pos < wasm.len() {
        let start = pos;
        let id = wasm[pos];
        pos += 1;
        let size = read_leb(wasm, &mut pos)? as usize;
        let end = pos
            .checked_add(size)
            .filter(|e| *e <= wasm.len())
            .context("truncated section")?;
        let is_docs = id == 0 && {
            let mut p = pos;
            let len = read_leb(wasm, &mut p)? as usize;
            wasm.get(p..p + len) == Some(DOCS_SECTION.as_bytes())
        };
        if !is_docs {
            out.extend_from_slice(&wasm[start..end]);
        }
        pos = end;
    }
    Ok(out)
}

fn read_leb(bytes: &[u8], pos: &mut usize) -> Result<u32> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*pos).context("truncated LEB128")?;
        *pos += 1;
        value |= u32::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("LEB128 too long")
}
