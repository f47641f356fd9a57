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
