//! Pulling a plugin from an OCI registry (Debian's docker-registry on
//! loopback, when installed): the pull with its digest check, and what the
//! cosign signature check adds.

use crate::ctx::Ctx;
use crate::table::{Goal, Table};
use crate::timing::{Samples, ms};
use anyhow::Result;
use plugin_registry::{Source, TrustPolicy, TrustRule};
use std::time::Instant;

const PULLS: usize = 15;

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let plain = "OCI pull of ecu_tables.wasm (digest checked)";
    let signed = "OCI pull of ecu_tables.wasm, cosign signature verified";
    let dir = ctx.tmp.path().join("registry");
    std::fs::create_dir_all(&dir)?;
    let Some(registry) = e2e::start_registry(&dir) else {
        for b in [plain, signed] {
            table.skip(
                b,
                "ms",
                "",
                "docker-registry not installed (apt-get install docker-registry)",
            );
        }
        return Ok(());
    };
    let addr = registry.addr.clone();
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
