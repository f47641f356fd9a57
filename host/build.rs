//! Embeds the first-party plugin components, so that an installed
//! `benchtop` serves them with no plugins directory (`benchtop serve`
//! alone). Where they come from, first found:
//!
//! 1. `BENCHTOP_BUNDLE`: a directory of `*.wasm` (release scripts);
//! 2. `host/bundle/`: filled by `make package` for the crates.io package,
//!    which has no workspace around it;
//! 3. `target/plugins/` of the workspace: a clone after `make plugins`.
//!
//! None found builds a binary without bundled plugins, with a warning.
//!
//! It also copies the WIT files `benchtop new` writes into new plugins
//! into `OUT_DIR`, from the workspace's `wit/` (their one source) or, in
//! the crates.io package, from `bundle/wit/` (copied there by `make
//! package`; `cfg(benchtop_packaged)` then points the host's bindings
//! there too).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rerun-if-env-changed=BENCHTOP_BUNDLE");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let candidates = [
        std::env::var_os("BENCHTOP_BUNDLE").map(PathBuf::from),
        Some(manifest.join("bundle")),
        Some(manifest.join("../target/plugins")),
    ];
    let mut found = Vec::new();
    for dir in candidates.into_iter().flatten() {
        println!("cargo::rerun-if-changed={}", dir.display());
        found = components(&dir);
        if !found.is_empty() {
            break;
        }
    }
    if found.is_empty() {
        println!(
            "cargo::warning=no plugin components to bundle (run `make plugins` first): \
             this benchtop serves only what --plugins or a config names"
        );
    }
    let mut code = String::from(
        "/// The bundled components: file name and bytes (host/build.rs).\n\
         pub static BUNDLED: &[(&str, &[u8])] = &[\n",
    );
    for path in &found {
        println!("cargo::rerun-if-changed={}", path.display());
        let name = path.file_name().expect("a file").to_string_lossy();
        writeln!(
            code,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("bundled.rs"), code).expect("writing bundled.rs");
    copy_wit(&manifest, &out);
}

/// The WIT files the scaffold embeds, copied to `out/wit/`.
fn copy_wit(manifest: &Path, out: &Path) {
    const FILES: [&str; 2] = ["host/host.wit", "ecu-family/ecu-family.wit"];
    let workspace = manifest.join("../wit");
    let packaged = manifest.join("bundle/wit");
    println!("cargo::rustc-check-cfg=cfg(benchtop_packaged)");
    let source = if FILES.iter().all(|f| workspace.join(f).is_file()) {
        workspace
    } else if FILES.iter().all(|f| packaged.join(f).is_file()) {
        // `wasmtime::component::bindgen!` reads the host WIT from here too.
        println!("cargo::rustc-cfg=benchtop_packaged");
        packaged
    } else {
        panic!("the WIT files: wit/ of the workspace, or bundle/wit/ of the package");
    };
    for file in FILES {
        let from = source.join(file);
        println!("cargo::rerun-if-changed={}", from.display());
        let to = out.join("wit").join(file);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("creating OUT_DIR/wit");
        std::fs::copy(&from, &to).expect("copying a WIT file");
    }
}

/// The `*.wasm` files of `dir`, sorted, canonical; none when it is absent.
fn components(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    found.sort();
    found
}
