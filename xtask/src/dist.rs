//! `xtask dist BINARY [OUT]`: what a user installs without a clone, built
//! from a benchtop binary that carries its plugins (host/build.rs):
//!
//! - `benchtop-VERSION-ARCH-OS.tar.gz`: the binary, README and licence;
//! - `benchtop-VERSION-ARCH-OS.mcpb`: an MCP Bundle (manifest 0.3, server
//!   type `binary`, `user_config` for the workspace, definitions and logs
//!   folders), validated and packed by the official `mcpb` CLI;
//! - `server.json`: the MCP registry entry (schema 2025-12-11), naming the
//!   crate and the bundle with its SHA-256;
//! - `SHA256SUMS` of the archive and the bundle.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The server's name in the MCP registry; the crate's README carries it
/// as `mcp-name:`, which the registry checks for cargo packages.
pub const REGISTRY_NAME: &str = "io.github.benchtop-dev/benchtop";
/// The registry schema server.json is written against.
pub const SERVER_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// Where releases are published: the bundle's download URL starts here.
pub const RELEASES: &str = "https://github.com/benchtop-dev/benchtop/releases/download";
const DESCRIPTION: &str = "MCP server whose tools are sandboxed WebAssembly components: \
    ECU calibration ROMs and datalogs, CP-1600 and x86 DOS emulators, BLE packet capture";

/// Builds every artifact from `binary` into `out`; `mcpb` is the CLI.
pub fn dist(root: &Path, binary: &Path, out: &Path, mcpb: &Path) -> Result<()> {
    let binary = &binary
        .canonicalize()
        .with_context(|| format!("finding the binary {}", binary.display()))?;
    let version = env!("CARGO_PKG_VERSION");
    let platform = format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS);
    let stem = format!("benchtop-{version}-{platform}");
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("clearing {}", out.display()))?;
    }
    std::fs::create_dir_all(out)?;
    let tools = tools_of(binary, out)?;

    // 1. The archive.
    let staged = out.join(&stem);
    std::fs::create_dir_all(&staged)?;
    copy(binary, &staged.join("benchtop"))?;
    copy(&root.join("README.md"), &staged.join("README.md"))?;
    copy(&root.join("LICENSE"), &staged.join("LICENSE"))?;
    let archive = out.join(format!("{stem}.tar.gz"));
    run(Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(out)
        .arg(&stem))?;

    // 2. The MCP Bundle.
    let bundle_dir = out.join("mcpb");
    std::fs::create_dir_all(bundle_dir.join("server"))?;
    copy(binary, &bundle_dir.join("server/benchtop"))?;
    copy(&root.join("LICENSE"), &bundle_dir.join("LICENSE"))?;
    let manifest = manifest(version, &tools);
    let manifest_path = bundle_dir.join("manifest.json");
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    run(Command::new(mcpb).arg("validate").arg(&manifest_path))?;
    let bundle = out.join(format!("{stem}.mcpb"));
    run(Command::new(mcpb).arg("pack").arg(&bundle_dir).arg(&bundle))?;

    // 3. The registry entry and the checksums.
    let bundle_sha = sha256_file(&bundle)?;
    let entry = server_json(version, &format!("{stem}.mcpb"), &bundle_sha);
    std::fs::write(
        out.join("server.json"),
        serde_json::to_string_pretty(&entry)? + "\n",
    )?;
    let sums = [&archive, &bundle]
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .expect("a file")
                .to_string_lossy()
                .into_owned();
            Ok(format!("{}  {name}\n", sha256_file(p)?))
        })
        .collect::<Result<String>>()?;
    std::fs::write(out.join("SHA256SUMS"), sums)?;
    println!(
        "dist: {} ({} tools)\n  {}\n  {}\n  {}\n  {}",
        out.display(),
        tools.len(),
        archive.display(),
        bundle.display(),
        out.join("server.json").display(),
        out.join("SHA256SUMS").display()
    );
    Ok(())
}

/// `(name, description)` of every tool the binary serves on its own.
fn tools_of(binary: &Path, scratch: &Path) -> Result<Vec<(String, String)>> {
    let home = scratch.join(".home");
    std::fs::create_dir_all(&home)?;
    let output = Command::new(binary)
        .args(["tools", "--json"])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .current_dir(&home)
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "{} tools failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::remove_dir_all(&home)?;
    let listed: Vec<Value> =
        serde_json::from_slice(&output.stdout).context("reading tools --json")?;
    let tools: Vec<(String, String)> = listed
        .iter()
        .filter_map(|t| {
            Some((
                t.get("name")?.as_str()?.to_owned(),
                t.get("description")?.as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect();
    if tools.is_empty() {
        bail!(
            "{} serves no tools on its own: build it after `make plugins`, which it bundles",
            binary.display()
        );
    }
    Ok(tools)
}

/// The bundle's manifest: the binary, started on the user's folders.
pub fn manifest(version: &str, tools: &[(String, String)]) -> Value {
    let folder = |title: &str, description: &str, required: bool| json!({"type": "directory", "title": title, "description": description, "required": required});
    json!({
        "manifest_version": "0.3",
        "name": "benchtop",
        "display_name": "benchtop",
        "version": version,
        "description": DESCRIPTION,
        "author": {"name": "benchtop developers"},
        "license": "Apache-2.0",
        "keywords": ["ecu", "tuning", "emulator", "dos", "intellivision", "ble", "webassembly"],
        "server": {
            "type": "binary",
            "entry_point": "server/benchtop",
            "mcp_config": {
                "command": "${__dirname}/server/benchtop",
                "args": [
                    "serve",
                    "--workspace", "${user_config.workspace}",
                    "--allow", "${user_config.workspace}:rw",
                    "--definitions-path", "${user_config.definitions}",
                    "--logs-dir", "${user_config.logs}",
                ],
                "env": {}
            }
        },
        "user_config": {
            "workspace": folder("Workspace", "Folder of ROMs, programs and captures the tools may read and write (patched ROMs are written here)", true),
            "definitions": folder("ECU definitions", "Folder of ROM definitions: ECUFlash or RomRaider XML, TunerPro XDF", true),
            "logs": folder("Datalogs", "Folder of datalogs (CSV, MegaLogViewer, Link, ECUMaster, ...)", true),
        },
        "tools": tools
            .iter()
            .map(|(name, description)| json!({"name": name, "description": first_sentence(description)}))
            .collect::<Vec<_>>(),
        "tools_generated": true,
        "prompts_generated": true,
        "compatibility": {"platforms": [platform_name()]},
    })
}

/// The registry entry: the crate (built by `cargo install`) and the bundle.
pub fn server_json(version: &str, bundle_file: &str, bundle_sha: &str) -> Value {
    json!({
        "$schema": SERVER_SCHEMA,
        "name": REGISTRY_NAME,
        "title": "benchtop",
        "description": DESCRIPTION,
        "version": version,
        "packages": [
            {
                "registryType": "cargo",
                "identifier": "benchtop",
                "version": version,
                "transport": {"type": "stdio"},
                "packageArguments": [{"type": "positional", "value": "serve"}]
            },
            {
                "registryType": "mcpb",
                "identifier": format!("{RELEASES}/v{version}/{bundle_file}"),
                "version": version,
                "fileSha256": bundle_sha,
                "transport": {"type": "stdio"}
            }
        ]
    })
}

fn platform_name() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        _ => "linux",
    }
}

/// The first sentence of a tool description: a bundle lists tools briefly.
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(drop)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The `mcpb` CLI: `MCPB` when set, else the one tests/node installs.
pub fn mcpb_cli(root: &Path) -> PathBuf {
    std::env::var_os("MCPB")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("tests/node/node_modules/.bin/mcpb"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_entry_names_the_crate_and_the_bundle_with_its_digest() {
        let entry = server_json(
            "1.2.3",
            "benchtop-1.2.3-x86_64-linux.mcpb",
            "ab".repeat(32).as_str(),
        );
        assert_eq!(entry["$schema"], SERVER_SCHEMA);
        // Reverse-DNS namespace, one slash, as the registry requires.
        let name = entry["name"].as_str().unwrap();
        assert!(name.starts_with("io.github.") && name.matches('/').count() == 1);
        let packages = entry["packages"].as_array().unwrap();
        assert_eq!(packages[0]["registryType"], "cargo");
        assert_eq!(packages[1]["registryType"], "mcpb");
        assert!(
            packages[1]["identifier"]
                .as_str()
                .unwrap()
                .ends_with("/v1.2.3/benchtop-1.2.3-x86_64-linux.mcpb")
        );
        assert_eq!(packages[1]["fileSha256"].as_str().unwrap().len(), 64);
    }

    #[test]
    fn the_manifest_starts_the_binary_on_the_users_folders() {
        let m = manifest(
            "1.2.3",
            &[("rom_info".into(), "Get ROM metadata. Call first.".into())],
        );
        assert_eq!(m["manifest_version"], "0.3");
        assert_eq!(m["server"]["type"], "binary");
        let args: Vec<&str> = m["server"]["mcp_config"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for key in ["workspace", "definitions", "logs"] {
            assert!(
                args.contains(&format!("${{user_config.{key}}}").as_str()),
                "{key}"
            );
            assert_eq!(m["user_config"][key]["type"], "directory");
        }
        assert_eq!(m["tools"][0]["description"], "Get ROM metadata.");
    }
}
