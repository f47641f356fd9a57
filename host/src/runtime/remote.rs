//! Plugins from OCI registries (`crates/plugin-registry`), as the runtime
//! loads them: pulled and verified into a directory, with a record of
//! where each came from and who signed it beside the component.

use crate::runtime::config::ConfigFile;
use anyhow::{Context, Result};
use plugin_registry::{Pulled, Source, TrustPolicy};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where a loaded component came from: shown by `benchtop tools` and in
/// the server's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// `oci://…` as it was pulled.
    pub source: String,
    /// The manifest's digest, which the signature names.
    pub manifest_digest: String,
    /// The component's own digest.
    pub layer_digest: String,
    /// Who signed it, or that signatures were not checked.
    pub signer: String,
}

impl Provenance {
    fn of(source: &Source, pulled: &Pulled) -> Self {
        Self {
            source: source.to_string(),
            manifest_digest: pulled.manifest_digest.clone(),
            layer_digest: pulled.layer_digest.clone(),
            signer: pulled.signer.to_string(),
        }
    }

    /// `NAME.wasm.provenance.json` beside `NAME.wasm`.
    fn sidecar(wasm: &Path) -> PathBuf {
        let mut name = wasm.file_name().unwrap_or_default().to_owned();
        name.push(".provenance.json");
        wasm.with_file_name(name)
    }

    /// The record beside `wasm`, when it describes the bytes whose SHA-256
    /// is `sha256` (a file replaced by hand since its pull has none).
    pub fn read_beside(wasm: &Path, sha256: &[u8; 32]) -> Option<Self> {
        let text = std::fs::read_to_string(Self::sidecar(wasm)).ok()?;
        let record: Self = serde_json::from_str(&text).ok()?;
        (record.layer_digest == plugin_registry::digest_name(sha256)).then_some(record)
    }

    /// One line: `oci://… (sha256:…, signed by key …)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, signer: {})",
            self.source, self.manifest_digest, self.signer
        )
    }
}

/// The config file's `[[trust]]` rules.
pub fn trust_policy(config: &ConfigFile) -> TrustPolicy {
    TrustPolicy {
        rules: config.trust.clone(),
    }
}

/// Pulls `source`, verified under `policy`, into `dir` as `NAME.wasm`
/// (its record first, then the component renamed into place, so a server
/// watching `dir` swaps it in whole). Nothing is written when the pull or
/// its verification fails.
pub async fn pull_into(
    source: &Source,
    policy: &TrustPolicy,
    dir: &Path,
) -> Result<(PathBuf, Provenance)> {
    let pulled = plugin_registry::pull(source, policy).await?;
    let provenance = Provenance::of(source, &pulled);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}.wasm", source.name().replace('-', "_")));
    std::fs::write(
        Provenance::sidecar(&path),
        serde_json::to_string_pretty(&provenance)? + "\n",
    )
    .with_context(|| format!("writing beside {}", path.display()))?;
    let tmp = dir.join(format!(".{}.pull", source.name()));
    std::fs::write(&tmp, &pulled.bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((path, provenance))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_describes_only_the_bytes_it_was_written_for() {
        let dir = std::env::temp_dir().join(format!("benchtop-provenance-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join("p.wasm");
        let record = Provenance {
            source: "oci://127.0.0.1:5000/p:1".into(),
            manifest_digest: "sha256:00".into(),
            layer_digest: plugin_registry::digest_of(b"component"),
            signer: "key k.pub".into(),
        };
        std::fs::write(
            Provenance::sidecar(&wasm),
            serde_json::to_string(&record).unwrap(),
        )
        .unwrap();
        let sha256 = |bytes: &[u8]| crate::runtime::cache::Wasm::new(bytes.to_vec()).digest();
        assert_eq!(
            Provenance::read_beside(&wasm, &sha256(b"component")),
            Some(record)
        );
        assert_eq!(
            Provenance::read_beside(&wasm, &sha256(b"replaced by hand")),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
