//! The crates.io package of `benchtop` (`make package`): it carries the
//! plugins and the WIT files it embeds, and the README line the MCP
//! registry checks, so `cargo install benchtop` needs no clone and no wasm
//! toolchain. (Building the packages, `make package` without
//! `PACKAGE_ARGS=--no-verify`, takes a full build; it is not run here.)

use e2e::repo;
use std::process::Command;

#[test]
fn shared_the_package_carries_the_bundled_plugins_and_the_wit_files() {
    let status = Command::new("make")
        .args([
            "--no-print-directory",
            "package",
            "PACKAGE_ARGS=--no-verify",
        ])
        .current_dir(repo())
        .status()
        .expect("running make package");
    assert!(status.success(), "make package");
    assert!(
        !repo().join("host/bundle").exists(),
        "host/bundle is removed after packaging, so it never shadows target/plugins"
    );
    let krate = repo().join(format!(
        "target/package/benchtop-{}.crate",
        env!("CARGO_PKG_VERSION")
    ));
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&krate)
        .output()
        .expect("listing the package");
    let files = String::from_utf8_lossy(&listing.stdout);
    for plugin in std::fs::read_dir(repo().join("target/plugins")).unwrap() {
        let name = plugin.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".wasm") {
            assert!(
                files.contains(&format!("/bundle/{name}\n")),
                "{name} in {files}"
            );
        }
    }
    for wit in [
        "bundle/wit/host/host.wit",
        "bundle/wit/ecu-family/ecu-family.wit",
        "README.md",
        "build.rs",
    ] {
        assert!(files.contains(&format!("/{wit}\n")), "{wit} in {files}");
    }
    // The registry finds the server's name in the README crates.io shows.
    let readme = Command::new("tar")
        .arg("xzOf")
        .arg(&krate)
        .arg(format!("benchtop-{}/README.md", env!("CARGO_PKG_VERSION")))
        .output()
        .expect("reading the packaged README");
    assert!(
        String::from_utf8_lossy(&readme.stdout)
            .contains("mcp-name: io.github.benchtop-dev/benchtop"),
        "the packaged README names the server"
    );
}

/// The dependencies cargo would compile for `args` (its unit graph): for
/// each, a key that changes with its package, target, features
/// and, recursively, everything it is built from, and the package's name.
fn compiled_units(args: &[&str]) -> Vec<(u64, String)> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    // The unit graph is unstable output: RUSTC_BOOTSTRAP lets the stable
    // toolchain print it. It resolves the build and compiles nothing.
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .args(["-Z", "unstable-options", "--unit-graph"])
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(repo())
        .output()
        .expect("running cargo");
    assert!(
        output.status.success(),
        "cargo {args:?} --unit-graph: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let graph: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a unit graph");
    let units = graph["units"].as_array().expect("units");
    fn key(units: &[serde_json::Value], i: usize, keys: &mut Vec<Option<u64>>) -> u64 {
        if let Some(k) = keys[i] {
            return k;
        }
        let unit = &units[i];
        let mut deps: Vec<u64> = unit["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| key(units, d["index"].as_u64().expect("index") as usize, keys))
            .collect();
        deps.sort_unstable();
        let mut h = DefaultHasher::new();
        for field in [
            &unit["pkg_id"],
            &unit["target"]["name"],
            &unit["mode"],
            &unit["features"],
        ] {
            field.to_string().hash(&mut h);
        }
        deps.hash(&mut h);
        let k = h.finish();
        keys[i] = Some(k);
        k
    }
    let mut keys = vec![None; units.len()];
    // Dependencies only: the workspace's own crates are compiled again
    // for their tests in any case.
    let dependency = |i: usize| {
        units[i]["mode"] == "build"
            && !units[i]["pkg_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("path+"))
    };
    (0..units.len())
        .filter(|&i| dependency(i))
        .map(|i| {
            let name = units[i]["pkg_id"].as_str().unwrap_or("?");
            (
                key(units, i, &mut keys),
                name.rsplit('#').next().unwrap_or(name).to_owned(),
            )
        })
        .collect()
}

/// `make build` (benchtop and the BLE bridge simulator) and `make test`
/// (the workspace's tests) compile each dependency once: a feature only
/// the tests enable on a dependency the host shares makes cargo build it,
/// and everything built on it, a second time, several minutes of CI for
/// wasmtime's part alone (docs/design.md, "One dependency build").
#[test]
fn make_test_reuses_every_unit_make_build_compiled() {
    let tests: std::collections::HashSet<u64> =
        compiled_units(&["test", "--workspace", "--exclude", "bench", "--no-run"])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
    let again: Vec<String> = compiled_units(&["build", "-p", "benchtop", "-p", "ble-bridge-sim"])
        .into_iter()
        .filter(|(k, _)| !tests.contains(k))
        .map(|(_, name)| name)
        .collect();
    assert!(
        again.is_empty(),
        "make test compiles these again, with other features than make build: {again:?}; \
         declare the features the tests add in host/Cargo.toml"
    );
}
