//! Pulling a plugin from an OCI registry (Debian's docker-registry on
//! loopback, when installed): the pull with its digest check, and what the
//! cosign signature check adds.

use crate::ctx::Ctx;
use crate::table::{Goal, Table};
use crate::timing::{Samples, ms};
use anyhow::{Context, Result};
use plugin_registry::{Source, TrustPolicy, TrustRule};
use std::time::Instant;

const PULLS: usize = 15;

/// The registry process, killed when dropped.
struct Registry(std::process::Child);

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let plain = "OCI pull of ecu_tables.wasm (digest checked)";
    let signed = "OCI pull of ecu_tables.wasm, cosign signature verified";
    let binary = std::path::Path::new("/usr/bin/docker-registry");
    if !binary.exists() {
        for b in [plain, signed] {
            table.skip(
                b,
                "ms",
                "",
                "docker-registry not installed (apt-get install docker-registry)",
            );
        }
        return Ok(());
    }
    let port = e2e::free_port();
    let dir = ctx.tmp.path().join("registry");
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("store").display()
        ),
    )?;
    let _registry = Registry(
        std::process::Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting docker-registry")?,
    );
    let addr = format!("127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let component = std::fs::read(ctx.plugin("ecu_tables"))?;
    let source = Source::parse(&format!("oci://{addr}/bench/ecu-tables:1"))?;
    plugin_registry::push(&component, &source).await?;
    let (private, public) = plugin_registry::generate_key_pair(b"bench")?;
    let key = dir.join("bench.pub");
    std::fs::write(&key, public)?;
    plugin_registry::sign(
        &source,
        private.as_bytes(),
        b"bench",
        &dir.join("bench.key"),
    )
    .await?;
    let policy = |skip_signature| TrustPolicy {
        rules: vec![TrustRule {
            repository: format!("{addr}/bench/*"),
            keys: vec![key.clone()],
            skip_signature,
        }],
    };
    let times = |policy: TrustPolicy| {
        let source = source.clone();
        async move {
            let mut samples = Vec::new();
            for _ in 0..PULLS {
                let t = Instant::now();
                plugin_registry::pull(&source, &policy).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(Samples::new(samples).median())
        }
    };
    let unchecked = times(policy(true)).await?;
    let checked = times(policy(false)).await?;
    let size = format!("{} KB", component.len() / 1024);
    table.add(
        plain,
        ms(unchecked),
        1,
        "ms",
        Goal::None,
        format!("{size}; manifest + blob from loopback, sha256 checked; median of {PULLS}"),
    );
    table.add(
        signed,
        ms(checked),
        1,
        "ms",
        Goal::None,
        format!(
            "the signature check adds {:.1} ms (signature tag, payload, ECDSA P-256); median of {PULLS}",
            ms(checked) - ms(unchecked)
        ),
    );
    Ok(())
}
