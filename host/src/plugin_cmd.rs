//! `benchtop plugin push | pull | sign | keygen`: plugins to and from OCI
//! registries, with cosign signatures (`crates/plugin-registry`).

use crate::runtime::config::ConfigFile;
use crate::runtime::remote;
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use plugin_registry::Source;
use std::path::{Path, PathBuf};

/// What `benchtop plugin` does.
#[derive(Subcommand, Clone)]
pub enum PluginCommand {
    /// Push a component to an OCI registry as a WebAssembly artifact.
    Push {
        /// The component (.wasm).
        file: PathBuf,
        /// Where: oci://HOST/REPOSITORY:TAG.
        target: String,
        /// Also sign it with this cosign private key (password in
        /// BENCHTOP_KEY_PASSWORD or COSIGN_PASSWORD).
        #[arg(long, value_name = "KEY")]
        sign: Option<PathBuf>,
    },
    /// Pull a component, verify its signature under the config's [[trust]]
    /// rules, and write it into the plugins directory (a running server
    /// swaps it in).
    Pull {
        /// oci://HOST/REPOSITORY:TAG (or @sha256:DIGEST).
        source: String,
        /// The plugins directory (default: the config's plugins_dir).
        #[arg(long = "plugins", value_name = "DIR")]
        plugins_dir: Option<PathBuf>,
        /// TOML config file holding the [[trust]] rules.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Sign a pushed component with a cosign private key (cosign's
    /// signature format: `cosign verify --key` accepts it).
    Sign {
        /// oci://HOST/REPOSITORY:TAG.
        target: String,
        /// The cosign private key (password in BENCHTOP_KEY_PASSWORD or
        /// COSIGN_PASSWORD).
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
    },
    /// Create a cosign key pair: PREFIX.key (encrypted with the password in
    /// BENCHTOP_KEY_PASSWORD or COSIGN_PASSWORD) and PREFIX.pub.
    Keygen {
        /// Path prefix of the two files.
        #[arg(default_value = "cosign")]
        prefix: PathBuf,
    },
}

/// The key password from the environment (empty when unset).
fn password() -> Vec<u8> {
    std::env::var("BENCHTOP_KEY_PASSWORD")
        .or_else(|_| std::env::var("COSIGN_PASSWORD"))
        .unwrap_or_default()
        .into_bytes()
}

async fn sign(target: &Source, key: &Path) -> Result<String> {
    let pem = std::fs::read(key).with_context(|| format!("reading the key {}", key.display()))?;
    Ok(plugin_registry::sign(target, &pem, &password(), key).await?)
}

/// Runs one `benchtop plugin` command.
pub async fn run(command: PluginCommand) -> Result<()> {
    match command {
        PluginCommand::Push {
            file,
            target,
            sign: key,
        } => {
            let target = Source::parse(&target)?;
            let wasm =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            // A file that is not a component would only fail at pull time.
            crate::wit::interface::PluginInterface::from_component(&wasm).with_context(|| {
                format!("{} is not a benchtop plugin component", file.display())
            })?;
            let digest = plugin_registry::push(&wasm, &target).await?;
            println!("pushed {target} ({digest})");
            if let Some(key) = key {
                sign(&target, &key).await?;
                println!("signed {target}@{digest} with {}", key.display());
            }
        }
        PluginCommand::Pull {
            source,
            plugins_dir,
            config,
        } => {
            let source = Source::parse(&source)?;
            let config = match &config {
                Some(path) => ConfigFile::load(path)?,
                None => ConfigFile::default(),
            };
            let Some(dir) = plugins_dir.or_else(|| config.plugins_dir.clone()) else {
                bail!("say where to put it: --plugins DIR, or plugins_dir in the --config file");
            };
            let policy = remote::trust_policy(&config);
            let (path, provenance) = remote::pull_into(&source, &policy, &dir).await?;
            println!("pulled {} into {}", provenance.describe(), path.display());
        }
        PluginCommand::Sign { target, key } => {
            let target = Source::parse(&target)?;
            let digest = sign(&target, &key).await?;
            println!("signed {target}@{digest} with {}", key.display());
        }
        PluginCommand::Keygen { prefix } => {
            let (private, public) = plugin_registry::generate_key_pair(&password())?;
            let key = prefix.with_extension("key");
            let public_path = prefix.with_extension("pub");
            for path in [&key, &public_path] {
                if path.exists() {
                    bail!(
                        "{} exists: choose another prefix, or move it away",
                        path.display()
                    );
                }
            }
            std::fs::write(&key, private).with_context(|| format!("writing {}", key.display()))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
            }
            std::fs::write(&public_path, public)
                .with_context(|| format!("writing {}", public_path.display()))?;
            println!(
                "wrote {} (private, keep it) and {} (trust it in [[trust]] keys)",
                key.display(),
                public_path.display()
            );
        }
    }
    Ok(())
}
