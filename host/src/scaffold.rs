//! `benchtop new`: a plugin crate, or an ECU definition family crate
//! (`--family`), that builds on its own, for plugin authors.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// The template's files: (path in the new crate, contents with placeholders).
const FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../templates/plugin/Cargo.toml.tmpl"),
    ),
    (
        "wit/{{name}}.wit",
        include_str!("../templates/plugin/plugin.wit.tmpl"),
    ),
    // The host interface itself, so the plugin's WIT resolves offline.
    (
        "wit/deps/host/host.wit",
        include_str!(concat!(env!("OUT_DIR"), "/wit/host/host.wit")),
    ),
    (
        "src/lib.rs",
        include_str!("../templates/plugin/lib.rs.tmpl"),
    ),
    (
        "README.md",
        include_str!("../templates/plugin/README.md.tmpl"),
    ),
];

/// The family template's files: a component serving
/// `benchtop:ecu-family/family` for an example format.
const FAMILY_FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../templates/plugin/Cargo.toml.tmpl"),
    ),
    (
        "wit/{{name}}.wit",
        include_str!("../templates/family/family.wit.tmpl"),
    ),
    (
        "wit/deps/ecu-family/ecu-family.wit",
        include_str!(concat!(env!("OUT_DIR"), "/wit/ecu-family/ecu-family.wit")),
    ),
    (
        "wit/deps/host/host.wit",
        include_str!(concat!(env!("OUT_DIR"), "/wit/host/host.wit")),
    ),
    (
        "src/lib.rs",
        include_str!("../templates/family/lib.rs.tmpl"),
    ),
    (
        "example.ecudef",
        include_str!("../templates/family/example.ecudef"),
    ),
    (
        "README.md",
        include_str!("../templates/family/README.md.tmpl"),
    ),
];

/// Checks a WIT identifier: lowercase words of letters and digits joined by `-`.
fn check_identifier(what: &str, id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.split('-').all(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !ok {
        bail!(
            "{what} `{id}` must be lowercase words of letters and digits joined by `-` (like `my-ecu`), as WIT names are"
        );
    }
    Ok(())
}

/// Creates the plugin crate `name` in `parent/name`; returns its directory.
pub fn new_plugin(parent: &Path, name: &str, namespace: &str) -> Result<PathBuf> {
    create(parent, name, namespace, FILES)
}

/// Creates the ECU definition family crate `name` in `parent/name`;
/// returns its directory.
pub fn new_family(parent: &Path, name: &str, namespace: &str) -> Result<PathBuf> {
    create(parent, name, namespace, FAMILY_FILES)
}

fn create(parent: &Path, name: &str, namespace: &str, files: &[(&str, &str)]) -> Result<PathBuf> {
    check_identifier("the plugin name", name)?;
    check_identifier("the package namespace", namespace)?;
    let dir = parent.join(name);
    if dir.exists() {
        bail!(
            "{} already exists; choose another name or directory",
            dir.display()
        );
    }
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{name_rs}}", &name.replace('-', "_"))
            .replace("{{namespace}}", namespace)
            .replace("{{namespace_rs}}", &namespace.replace('-', "_"))
    };
    for (path, contents) in files {
        let file = dir.join(fill(path));
        std::fs::create_dir_all(file.parent().expect("files are inside the crate"))
            .with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(&file, fill(contents))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_wit_identifiers() {
        assert!(check_identifier("name", "my-ecu2").is_ok());
        for bad in ["", "My", "my_ecu", "-x", "x-", "2x"] {
            assert!(check_identifier("name", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let dir = std::env::temp_dir().join(format!("benchtop-scaffold-{}", std::process::id()));
        let made = new_plugin(&dir, "my-ecu", "acme").unwrap();
        for (path, _) in FILES {
            let path = path.replace("{{name}}", "my-ecu");
            let text = std::fs::read_to_string(made.join(&path)).unwrap();
            assert!(!text.contains("{{"), "{path} still has a placeholder");
        }
        assert!(
            new_plugin(&dir, "my-ecu", "acme").is_err(),
            "refuses to overwrite"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
