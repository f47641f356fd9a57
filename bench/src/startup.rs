//! Time from process start to the first `tools/list` answer with every
//! plugin of target/plugins loaded: cold (empty compile cache) and warm.

use crate::ctx::Ctx;
use crate::table::{Figure, Goal, Table};
use crate::timing::{Samples, ms};
use anyhow::{Result, bail};
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

const COLD_RUNS: usize = 3;
const WARM_RUNS: usize = 7;

/// Spawn → initialize → `tools/list` answered; returns the time and the tool count.
async fn start_once(ctx: &Ctx, plugins: &Path, cache: &Path) -> Result<(Duration, usize)> {
    let t = Instant::now();
    let server = ctx
        .benchtop([
            OsStr::new("--plugins"),
            plugins.as_os_str(),
            OsStr::new("--cache-dir"),
            cache.as_os_str(),
        ])
        .await?;
    let tools = server.client.list_all_tools().await?;
    let elapsed = t.elapsed();
    server.stop().await;
    Ok((elapsed, tools.len()))
}

pub async fn run(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let plugins = ctx.repo.join("target/plugins");
    let count = std::fs::read_dir(&plugins)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "wasm"))
        .count();
    if count == 0 {
        bail!("no plugins in {}: run `make plugins`", plugins.display());
    }

    let mut expected = None;
    let mut check = |n: usize| -> Result<()> {
        match expected {
            None => expected = Some(n),
            Some(e) if e != n => bail!("tools/list answered {n} tools, an earlier start {e}"),
            _ => {}
        }
        Ok(())
    };

    let mut cold = Vec::new();
    for i in 0..COLD_RUNS {
        let cache = ctx.tmp.path().join(format!("cold-cache-{i}"));
        let (t, n) = start_once(ctx, &plugins, &cache).await?;
        check(n)?;
        cold.push(t);
        let _ = std::fs::remove_dir_all(&cache);
    }
    // Fill the shared cache (untimed) and let it settle, then start warm.
    let cache = ctx.cache();
    let (_, n) = start_once(ctx, &plugins, &cache).await?;
    check(n)?;
    ctx.settle_cache([
        OsStr::new("--plugins"),
        plugins.as_os_str(),
        OsStr::new("--cache-dir"),
        cache.as_os_str(),
    ])
    .await?;
    let mut warm = Vec::new();
    for _ in 0..WARM_RUNS {
        let (t, n) = start_once(ctx, &plugins, &cache).await?;
        check(n)?;
        warm.push(t);
    }
    // The floor: the same binary starting with no plugin at all.
    let empty = ctx.tmp.path().join("no-plugins");
    std::fs::create_dir_all(&empty)?;
    let mut bare = Vec::new();
    for _ in 0..WARM_RUNS {
        bare.push(start_once(ctx, &empty, &cache).await?.0);
    }
    // The installed binary: no plugins directory, the bundled plugins
    // written out and compiled into an empty cache.
    // The plugins compile in the background after the answer: a call to
    // the last one compiled (x86-inspect) waits until every one is ready.
    let mut bundled = Vec::new();
    let mut all_ready = Vec::new();
    for i in 0..COLD_RUNS {
        let cache = ctx.tmp.path().join(format!("bundled-cache-{i}"));
        let t = Instant::now();
        let server = ctx
            .benchtop([OsStr::new("--cache-dir"), cache.as_os_str()])
            .await?;
        let n = server.client.list_all_tools().await?.len();
        bundled.push(t.elapsed());
        crate::ctx::call_text(&server, "x86_list_machines", serde_json::json!({})).await?;
        all_ready.push(t.elapsed());
        server.stop().await;
        check(n)?;
        let _ = std::fs::remove_dir_all(&cache);
    }
    let tools = expected.unwrap_or(0);
    let what = format!("{count} plugins, {tools} tools");
    table.add(
        "startup to first tools/list, installed binary, cold (bundled plugins, empty cache)",
        ms(Samples::new(bundled).median()),
        0,
        "ms",
        Goal::Below(500.0),
        ctx.note(format!(
            "{what}; `benchtop serve` alone; median of {COLD_RUNS}"
        )),
    );
    table.add(
        "installed binary, cold: every bundled plugin compiled (a call to the last)",
        ms(Samples::new(all_ready).median()),
        0,
        "ms",
        Goal::None,
        ctx.note(format!(
            "{what}; compiled in the background, one at a time; median of {COLD_RUNS}"
        )),
    );
    table.add(
        "startup to first tools/list, cold (empty compile cache)",
        ms(Samples::new(cold).median()),
        0,
        "ms",
        Goal::None,
        ctx.note(format!("{what}; median of {COLD_RUNS}")),
    );
    let warm = ms(Samples::new(warm).median());
    table.add(
        "startup to first tools/list, warm (cache filled)",
        warm,
        1,
        "ms",
        Goal::Below(150.0),
        ctx.note(format!("{what}; median of {WARM_RUNS}")),
    );
    let bare = ms(Samples::new(bare).median());
    table.target(
        Figure::new(
            "warm start to the first tools/list",
            format!("{what}, cache filled"),
            format!("the same binary with no plugin: {bare:.1} ms"),
        ),
        warm,
        1,
        " ms",
        Goal::Below(15.0),
    );
    Ok(())
}
