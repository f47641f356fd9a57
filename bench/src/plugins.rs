//! In-component plugin speed, through MCP calls on the real plugins, next
//! to native figures of the same Rust code where that is cheap.

use crate::ctx::{Ctx, call_json, call_text};
use crate::table::{Figure, Goal, Table};
use crate::timing::{Samples, ms, timed};
use anyhow::{Context as _, Result, bail};
use serde_json::json;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `benchtop serve`: a config loading `plugins` plus `extra`.
fn serve_args(
    ctx: &Ctx,
    name: &str,
    plugins: &[&str],
    extra: &[OsString],
) -> Result<Vec<OsString>> {
    let paths: Vec<PathBuf> = plugins.iter().map(|p| ctx.plugin(p)).collect();
    for p in &paths {
        if !p.exists() {
            bail!("{} is missing: run `make plugins`", p.display());
        }
    }
    let config = ctx.config(name, &paths)?;
    let mut args = vec!["--config".into(), config.into_os_string()];
    args.extend(extra.iter().cloned());
    Ok(args)
}

fn allow(dir: &Path, mode: &str) -> [OsString; 2] {
    ["--allow".into(), format!("{}:{mode}", dir.display()).into()]
}

fn minstr(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() / 1e6
}

// ---------------------------------------------------------------- cp1600

const CP1600_STEPS: u64 = 150_000_000;

/// Runs of each emulator in the component, each followed by one of the
/// same core natively; the best of each side is compared. Alternating
/// puts a slow spell of a shared machine on both sides of the ratio.
const PAIRS: usize = 4;

/// bench-loop.bin on the cp1600 core in-process: M instructions a second.
fn cp1600_native(image: &[u8]) -> f64 {
    let mut m = cp1600::machine::Machine::with_raw_image(image, 0x5000);
    let t = Instant::now();
    let r = m.run_count(CP1600_STEPS);
    minstr(r.executed, t.elapsed())
}

pub async fn cp1600(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let rom = ctx.repo.join("samples/cp1600/bench-loop.bin");
    let mut extra = vec![];
    extra.extend(allow(&ctx.repo.join("samples/cp1600"), "ro"));
    let server = ctx
        .benchtop(serve_args(ctx, "cp1600", &["cp1600"], &extra)?)
        .await?;
    call_json(&server, "cp1600_create_session", json!({})).await?;
    call_json(&server, "cp1600_load_rom", json!({"rom_path": rom})).await?;
    call_json(&server, "cp1600_step", json!({"count": 1_000_000})).await?; // warm-up
    let bytes = std::fs::read(&rom)?;
    let (mut best, mut native) = (0.0f64, 0.0f64);
    let mut note = String::new();
    for _ in 0..PAIRS {
        let (v, t) = timed(call_json(
            &server,
            "cp1600_step",
            json!({"count": CP1600_STEPS}),
        ))
        .await;
        let v = v?;
        let executed = v["executed"]
            .as_u64()
            .context("cp1600_step: no executed count")?;
        if let Some(r) = v.get("reason") {
            note = format!("stopped early: {r}; ");
        }
        best = best.max(minstr(executed, t));
        native = native.max(cp1600_native(&bytes));
    }
    // A frame of the STIC's screen: BACKTAB, MOBs and border drawn and
    // encoded (issue 37), MCP round trip included.
    let mut frames = Vec::new();
    for _ in 0..20 {
        let (shot, t) = timed(call_text(&server, "cp1600_screenshot", json!({}))).await;
        if !shot?.contains("STIC:") {
            bail!("cp1600_screenshot did not caption the STIC's screen");
        }
        frames.push(t);
    }
    table.add(
        "cp1600_screenshot: one frame (the STIC's screen to a 704x448 PNG)",
        ms(Samples::new(frames).median()),
        2,
        "ms",
        Goal::None,
        ctx.note("median of 20, MCP round trip included"),
    );
    server.stop().await;
    table.add(
        "cp1600 in component: cp1600_step on bench-loop.bin",
        best,
        0,
        "Minstr/s",
        Goal::AtLeast(100.0),
        ctx.note(format!(
            "{note}best of {PAIRS} calls of {}M instructions, MCP call included, alternating with native runs",
            CP1600_STEPS / 1_000_000
        )),
    );

    table.add(
        "cp1600 native: same core in-process (as benches/native.rs)",
        native,
        0,
        "Minstr/s",
        Goal::None,
        format!(
            "best of {PAIRS}, alternating with the component's; component / native = {:.2}",
            best / native
        ),
    );
    table.target(
        Figure::new(
            "cp1600 core in the component / the same core native",
            format!("component {best:.0} M instr/s"),
            format!("native {native:.0} M instr/s"),
        ),
        best / native,
        2,
        "×",
        Goal::AtLeast(0.9),
    );
    Ok(())
}

// ---------------------------------------------------------------- x86

/// bench.com on the same core in-process: M instructions a second.
fn x86_native(program: &Path, image: &[u8], tracking: bool) -> Result<f64> {
    use x86_inspect::machine::{Machine, StopReason};
    let mut m = Machine::load(
        1,
        program,
        image,
        "",
        x86_inspect::cpu::Model::I80186,
        tracking,
    )
    .map_err(|e| anyhow::anyhow!("loading bench.com natively: {e:?}"))?;
    let t = Instant::now();
    let (n, r) = m
        .run(u64::MAX, &mut |_, _| true)
        .map_err(|e| anyhow::anyhow!("running bench.com natively: {e:?}"))?;
    if !matches!(r, StopReason::Exited(0)) {
        bail!("bench.com natively stopped with {r:?}");
    }
    Ok(minstr(n, t.elapsed()))
}

pub async fn x86(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let label = |t: bool| if t { "on" } else { "off" };
    let Some(dir) = e2e::fixtures("dos").filter(|d| d.join("bench.com").exists()) else {
        for (t, goal) in [(false, "≥ 50"), (true, "≥ 20")] {
            table.skip(
                format!("x86 in component: bench.com, tracking {}", label(t)),
                "Minstr/s",
                goal,
                "skipped: ../shared/fixtures/dos/bench.com not found",
            );
        }
        return Ok(());
    };
    let dir = dir.canonicalize()?; // the guest sees host paths as they are: no `..`
    let program = dir.join("bench.com");
    let server = ctx
        .benchtop(serve_args(
            ctx,
            "x86",
            &["x86_inspect"],
            &allow(&dir, "ro"),
        )?)
        .await?;
    let image = std::fs::read(&program)?;
    let mut measured = Vec::new();
    for tracking in [false, true] {
        let (mut best, mut native, mut count) = (0.0f64, 0.0f64, 0);
        for _ in 0..PAIRS {
            let loaded = call_json(
                &server,
                "x86_load_program",
                json!({"path": program, "tracking": tracking}),
            )
            .await?;
            let machine = loaded["machine"]
                .as_u64()
                .context("x86_load_program: no machine id")?;
            let (v, t) = timed(call_json(
                &server,
                "x86_run",
                json!({"machine": machine, "max_instructions": 200_000_000u64}),
            ))
            .await;
            let v = v?;
            if v["stop_reason"] != "exited" {
                bail!("bench.com did not exit: {v}");
            }
            count = v["instructions"]
                .as_u64()
                .context("x86_run: no instruction count")?;
            best = best.max(minstr(count, t));
            call_json(&server, "x86_remove_machine", json!({"machine": machine})).await?;
            native = native.max(x86_native(&program, &image, tracking)?);
        }
        measured.push((tracking, best, native, count));
    }
    // A frame: bench.com's text screen drawn and encoded, MCP included.
    let loaded = call_json(&server, "x86_load_program", json!({"path": program})).await?;
    let machine = loaded["machine"].clone();
    call_json(&server, "x86_run", json!({"machine": machine})).await?;
    let mut frames = Vec::new();
    for _ in 0..20 {
        let (shot, t) = timed(call_text(
            &server,
            "x86_screenshot",
            json!({"machine": machine}),
        ))
        .await;
        if !shot?.contains("80x25 text") {
            bail!("x86_screenshot did not show the text screen");
        }
        frames.push(t);
    }
    server.stop().await;
    table.add(
        "x86_screenshot: one frame (80x25 text screen to a 640x400 PNG)",
        ms(Samples::new(frames).median()),
        2,
        "ms",
        Goal::None,
        ctx.note("median of 20, MCP round trip included"),
    );

    for (tracking, best, native, count) in measured {
        let goal = if tracking {
            Goal::AtLeast(20.0)
        } else {
            Goal::AtLeast(50.0)
        };
        table.add(
            format!(
                "x86 in component: bench.com run, tracking {}",
                label(tracking)
            ),
            best,
            1,
            "Minstr/s",
            goal,
            ctx.note(format!(
                "best of {PAIRS} runs of {count} instructions, MCP call included, alternating with native runs"
            )),
        );
        table.add(
            format!(
                "x86 native: same core in-process, tracking {}",
                label(tracking)
            ),
            native,
            1,
            "Minstr/s",
            Goal::None,
            format!(
                "best of {PAIRS}, alternating with the component's; component / native = {:.2}",
                best / native
            ),
        );
        let measured = format!("component {best:.1} M instr/s");
        let reference = format!("native {native:.1} M instr/s");
        let ratio = best / native;
        if tracking {
            table.target(
                Figure::new(
                    "x86 core in the component / native, tracking on",
                    measured,
                    reference,
                ),
                ratio,
                2,
                "×",
                Goal::AtLeast(0.75),
            );
        } else {
            table.target(
                Figure::new(
                    "x86 core in the component / native, tracking off",
                    measured.clone(),
                    reference.clone(),
                ),
                ratio,
                2,
                "×",
                Goal::AtLeast(0.85),
            );
            table.target(
                Figure::new(
                    "x86 core in the component, tracking off",
                    measured,
                    "emu2, a native DOS emulator: about 210 M instr/s here (the issue's figure)",
                ),
                best,
                1,
                " M instr/s",
                Goal::AtLeast(150.0),
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- ecu-tables

const ECU_FIRSTS: usize = 5;
const ECU_WARM: usize = 200;
const ECU_PATCHES: usize = 20;

struct EcuSet {
    label: &'static str,
    definitions: PathBuf,
    rom: PathBuf,
    table: &'static str,
    /// Directories to grant (the ROM's copy, read-write).
    rw: PathBuf,
}

pub async fn ecu(ctx: &Ctx, table: &mut Table) -> Result<()> {
    // A copy of samples/ecu, so patching never touches the repository.
    let copy = ctx.tmp.path().join("ecu");
    copy_dir(&ctx.repo.join("samples/ecu"), &copy)?;
    let mut sets = vec![EcuSet {
        label: "samples BT000001",
        definitions: copy.join("definitions"),
        rom: copy.join("BT000001.bin"),
        table: "Ignition Timing Base Map",
        rw: copy.clone(),
    }];
    // The targets are stated for the ECUFlash fixtures: add them when present.
    let fixture = e2e::repo().join("../shared/fixtures/ecuflash");
    if let Ok(fixture) = fixture.canonicalize()
        && fixture.join("roms/56890009.bin").exists()
    {
        let dir = ctx.tmp.path().join("ecu-fixture");
        std::fs::create_dir_all(&dir)?;
        let rom = dir.join("56890009.bin");
        std::fs::copy(fixture.join("roms/56890009.bin"), &rom)?;
        make_writable(&rom)?;
        sets.push(EcuSet {
            label: "fixture 56890009",
            definitions: fixture,
            rom,
            table: "High Octane Timing Map",
            rw: dir,
        });
    }
    // First calls are timed on servers started from a settled cache, as
    // a returning user's is.
    let every = ["ecu_tables", "ecuflash", "romraider", "tunerpro_xdf"];
    let args = serve_args(ctx, "ecu-settle", &every, &[])?;
    ctx.settle_cache(&args).await?;
    for set in &sets {
        ecu_set(ctx, table, set).await?;
    }
    ecu_subarudefs(ctx, table).await?;
    ecu_family(ctx, table).await
}

/// The seam's cost: the real MSS54 XDF read through the TunerPro XDF family
/// component (a peer call per question, the file's bytes passed as a WIT
/// list): the first rom_info on a fresh server, then warm read_table of
/// one table, against the same warm read of a built-in family above.
async fn ecu_family(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let xdf = e2e::repo().join("../shared/fixtures/realworld/ecu-families/tunerpro_xdf");
    let first = "ecu-tables rom_info first call through the XDF family (MSS54, 754 KB XDF)";
    let warm_name = "ecu-tables read_table warm through the XDF family (MSS54)";
    let Ok(xdf) = xdf.canonicalize() else {
        for b in [first, warm_name] {
            table.skip(
                b,
                "ms",
                "",
                "../shared/fixtures/realworld absent".to_string(),
            );
        }
        return Ok(());
    };
    let dir = ctx.tmp.path().join("ecu-xdf");
    std::fs::create_dir_all(&dir)?;
    let rom = dir.join("mss54.bin");
    std::fs::write(&rom, vec![0x11u8; 0x8000])?;
    let mut extra: Vec<OsString> = vec!["--definitions-path".into(), xdf.into_os_string()];
    extra.extend(allow(&dir, "ro"));
    let args = serve_args(ctx, "ecu-xdf", &["ecu_tables", "tunerpro_xdf"], &extra)?;
    let (firsts, server) =
        first_calls(ctx, &args, "rom_info", json!({"rom": rom}), "TunerPro XDF").await?;
    let read = json!({"rom": rom, "table": "KF_TI_N_RF_VL"});
    let warm = warm_calls(&server, "read_table", &read).await?;
    server.stop().await;
    table.add(
        first,
        ms(Samples::new(firsts).median()),
        2,
        "ms",
        Goal::Below(100.0),
        ctx.note(format!(
            "fresh server each, what an earlier one kept read back (the XDF read, its identification and resolved definition not asked of the family again), 586 tables converted; median of {ECU_FIRSTS}"
        )),
    );
    let warm = Samples::new(warm);
    table.add(
        warm_name,
        ms(warm.median()),
        3,
        "ms",
        Goal::Below(2.0),
        ctx.note(format!(
            "18x3 map; median of {ECU_WARM}, p99 {:.3} ms; MCP round trip included",
            ms(warm.pct(99.0))
        )),
    );
    Ok(())
}

/// The first rom_info with the whole SubaruDefs tree (333 files) as the
/// definitions path, on a synthetic 1 MiB image carrying the stock 2007
/// Legacy GT id (A2UG000N at 0x2000): finding, matching and merging the
/// chain is what a tuner waits for.
async fn ecu_subarudefs(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let tree = e2e::repo().join("../shared/fixtures/realworld/ecuflash/subarudefs_standard");
    let benchmark = "ecu-tables rom_info first call (SubaruDefs tree, 333 files)";
    let Ok(tree) = tree.canonicalize() else {
        table.skip(
            benchmark,
            "ms",
            "",
            "../shared/fixtures/realworld absent".to_string(),
        );
        return Ok(());
    };
    let dir = ctx.tmp.path().join("ecu-subarudefs");
    std::fs::create_dir_all(&dir)?;
    let rom = dir.join("A2UG000N.bin");
    let mut image = vec![0u8; 0x10_0000];
    image[0x2000..0x2008].copy_from_slice(b"A2UG000N");
    std::fs::write(&rom, &image)?;
    let mut extra: Vec<OsString> = vec!["--definitions-path".into(), tree.into_os_string()];
    extra.extend(allow(&dir, "ro"));
    let args = serve_args(ctx, "ecu-subarudefs", &["ecu_tables", "ecuflash"], &extra)?;
    let (firsts, server) = first_calls_forgetting(
        ctx,
        &args,
        "rom_info",
        json!({"rom": rom.clone()}),
        "A2UG000N",
        true,
    )
    .await?;
    server.stop().await;
    table.add(
        benchmark,
        ms(Samples::new(firsts).median()),
        2,
        "ms",
        Goal::Below(100.0),
        ctx.note(format!(
            "nothing kept of the tree: walk + head of every file asked of the family, 3-file chain parse and merge; fresh server and cache directory each, median of {ECU_FIRSTS}"
        )),
    );
    // The server above kept what it found of the tree: as a user's next
    // session (a fresh server) finds it.
    let (firsts, server) = first_calls(
        ctx,
        &args,
        "rom_info",
        json!({"rom": rom.clone()}),
        "A2UG000N",
    )
    .await?;
    server.stop().await;
    let ecuflash_only = ms(Samples::new(firsts).median());
    table.add(
        "ecu-tables rom_info first call, tree kept by an earlier server",
        ecuflash_only,
        2,
        "ms",
        Goal::Below(100.0),
        ctx.note(format!(
            "fresh server each, what an earlier one kept in ecu-tables' cache directory: every file stat'ed, the 3-file chain read, the definition the family resolved from it read back; median of {ECU_FIRSTS}"
        )),
    );
    // As served by default: the RomRaider family is a component of its
    // own too, asked (by a call to it) whether each .xml is its format.
    let args = serve_args(
        ctx,
        "ecu-subarudefs-rr",
        &["ecu_tables", "ecuflash", "romraider"],
        &extra,
    )?;
    let (firsts, server) =
        first_calls(ctx, &args, "rom_info", json!({"rom": rom}), "A2UG000N").await?;
    server.stop().await;
    let served = ms(Samples::new(firsts).median());
    table.target(
        Figure::new(
            "first rom_info over the 333-file SubaruDefs tree",
            "as served by default (ECUFlash and RomRaider families), fresh server, the tree kept by an earlier one",
            format!("the ECUFlash family alone: {ecuflash_only:.1} ms"),
        ),
        served,
        1,
        " ms",
        Goal::Below(30.0),
    );
    table.add(
        "ecu-tables rom_info first call, RomRaider family loaded too",
        served,
        2,
        "ms",
        Goal::Below(100.0),
        ctx.note(format!(
            "as above, with the RomRaider family's component loaded too (asked only about files nothing was kept for); median of {ECU_FIRSTS}"
        )),
    );
    Ok(())
}

/// `tool` called once on each of [`ECU_FIRSTS`] fresh servers, its answer
/// holding `expect`: the times, and the last server (for warm calls).
/// What ecu-tables keeps of a definitions folder in its cache directory
/// is kept first (by a server untimed), as for a returning user.
async fn first_calls(
    ctx: &Ctx,
    args: &[OsString],
    tool: &str,
    call: serde_json::Value,
    expect: &str,
) -> Result<(Vec<Duration>, e2e::Server)> {
    let primer = ctx.benchtop(args).await?;
    call_text(&primer, tool, call.clone()).await?;
    primer.stop().await;
    first_calls_forgetting(ctx, args, tool, call, expect, false).await
}

/// [`first_calls`], with ecu-tables' cache directory emptied before each
/// start when `forget`: a folder no server has read before.
async fn first_calls_forgetting(
    ctx: &Ctx,
    args: &[OsString],
    tool: &str,
    call: serde_json::Value,
    expect: &str,
    forget: bool,
) -> Result<(Vec<Duration>, e2e::Server)> {
    let mut firsts = Vec::new();
    let mut server: Option<e2e::Server> = None;
    for _ in 0..ECU_FIRSTS {
        if let Some(s) = server.take() {
            s.stop().await;
        }
        if forget {
            let kept = ctx.cache().join("plugin-data/ecu-tables");
            if kept.exists() {
                std::fs::remove_dir_all(&kept)?;
            }
        }
        let s = ctx.benchtop(args).await?;
        let (r, t) = timed(call_text(&s, tool, call.clone())).await;
        let text = r?;
        anyhow::ensure!(
            text.contains(expect),
            "{tool} did not answer as expected: {text}"
        );
        firsts.push(t);
        server = Some(s);
    }
    Ok((firsts, server.expect("at least one start")))
}

/// `tool` called [`ECU_WARM`] times on one server: the times.
async fn warm_calls(
    server: &e2e::Server,
    tool: &str,
    call: &serde_json::Value,
) -> Result<Vec<Duration>> {
    let mut warm = Vec::new();
    for _ in 0..ECU_WARM {
        let (r, t) = timed(call_text(server, tool, call.clone())).await;
        r?;
        warm.push(t);
    }
    Ok(warm)
}

/// The set whose patch_table time is compared with its target.
const PATCH_TARGET_SET: &str = "samples BT000001";

/// The median time of plugin-kit's lock and inode-keeping replace of
/// `rom` (with its own bytes) natively: what patch_table's file work costs
/// without the sandbox.
fn native_replace(rom: &Path) -> Result<Duration> {
    use plugin_kit::safe_write::{FileLock, WAIT, replace};
    let image = std::fs::read(rom)?;
    let mut times = Vec::new();
    for _ in 0..ECU_PATCHES {
        let t = Instant::now();
        let mut lock = FileLock::acquire(rom, WAIT).map_err(anyhow::Error::msg)?;
        replace(rom, &image, &mut lock).map_err(anyhow::Error::msg)?;
        drop(lock);
        times.push(t.elapsed());
    }
    Ok(Samples::new(times).median())
}

async fn ecu_set(ctx: &Ctx, table: &mut Table, set: &EcuSet) -> Result<()> {
    let mut extra: Vec<OsString> = vec![
        "--definitions-path".into(),
        set.definitions.clone().into_os_string(),
    ];
    extra.extend(allow(&set.rw, "rw"));
    let args = serve_args(
        ctx,
        &format!("ecu-{}", set.label.replace(' ', "-")),
        &["ecu_tables", "ecuflash"],
        &extra,
    )?;
    let read = json!({"rom": set.rom, "table": set.table});

    let (firsts, server) = first_calls(ctx, &args, "read_table", read.clone(), "").await?;
    let warm = warm_calls(&server, "read_table", &read).await?;
    let mut patches = Vec::new();
    let mut patch_error = None;
    for i in 0..ECU_PATCHES {
        let value = if i % 2 == 0 { 1.0 } else { -1.0 };
        let args =
            json!({"rom": set.rom, "table": set.table, "op": "add", "value": value, "row": 5});
        let (r, t) = timed(call_text(&server, "patch_table", args)).await;
        if let Err(e) = r {
            patch_error = Some(e);
            break;
        }
        patches.push(t);
    }
    server.stop().await;

    let (label, name) = (set.label, set.table);
    table.add(
        format!("ecu-tables read_table first call ({label}, `{name}`)"),
        ms(Samples::new(firsts).median()),
        2,
        "ms",
        Goal::Below(100.0),
        ctx.note(format!(
            "ROM load and the definition read back as an earlier server kept it, fresh server each; median of {ECU_FIRSTS}"
        )),
    );
    let warm = Samples::new(warm);
    table.add(
        format!("ecu-tables read_table warm ({label})"),
        ms(warm.median()),
        3,
        "ms",
        Goal::Below(2.0),
        ctx.note(format!(
            "median of {ECU_WARM}, p99 {:.3} ms; MCP round trip included",
            ms(warm.pct(99.0))
        )),
    );
    let benchmark = format!("ecu-tables patch_table round trip ({label})");
    let figure = "patch_table round trip (checksum + atomic write)";
    let compared = set.label == PATCH_TARGET_SET;
    match patch_error {
        None => {
            let median = ms(Samples::new(patches).median());
            table.add(
                benchmark,
                median,
                2,
                "ms",
                Goal::None,
                ctx.note(format!(
                    "add ±1 to row 5, checksum + atomic write; median of {ECU_PATCHES}"
                )),
            );
            if compared {
                let native = native_replace(&set.rom)?;
                table.target(
                    Figure::new(
                        figure,
                        format!("{label}, 1 MiB ROM, median of {ECU_PATCHES}"),
                        format!(
                            "the same lock + inode-keeping replace natively: {:.2} ms",
                            ms(native)
                        ),
                    ),
                    median,
                    2,
                    " ms",
                    Goal::Below(5.0),
                );
            }
        }
        Some(e) => {
            table.skip(benchmark, "ms", "", format!("{e:#}"));
            if compared {
                table.target_missing(figure, "< 5 ms", "patch_table failed");
            }
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)?;
            make_writable(&dest)?;
        }
    }
    Ok(())
}

fn make_writable(path: &Path) -> Result<()> {
    let mut perms = std::fs::metadata(path)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms)?;
    Ok(())
}

// ---------------------------------------------------------------- log-query

const LOG_ROWS: usize = 1_000_000;
use log_query::duckdb::{BENCH_FILTER as FILTER, DuckDb};
const REPEATS: usize = 7;
/// Fresh servers whose first query is timed, each followed by one DuckDB
/// query: the pairs share the machine's spell of the moment.
const FIRSTS: usize = 5;

pub async fn logs(ctx: &Ctx, table: &mut Table) -> Result<()> {
    let dir = ctx.tmp.path().join("logs");
    std::fs::create_dir_all(&dir)?;
    let csv = dir.join("bench.csv");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&csv)?);
        log_query::synth::write_bench_csv(&mut w, LOG_ROWS)?;
        std::io::Write::flush(&mut w)?;
    }
    let size_mb = std::fs::metadata(&csv)?.len() as f64 / 1e6;
    // Both engines read the file from the page cache.
    drop(std::fs::read(&csv)?);

    let extra: Vec<OsString> = vec!["--logs-dir".into(), dir.clone().into_os_string()];
    let args = serve_args(ctx, "logs", &["log_query"], &extra)?;
    let query = json!({"filter": FILTER, "file": "bench.csv"});
    // DuckDB takes turns with the fresh servers below; without it the
    // comparison rows say why.
    let mut duck = DuckDb::start(&csv);
    let mut duck_times = Vec::new();
    let mut duck_rows = 0u64;
    // "First" is the first query of a fresh plugin instance: a few servers,
    // the median of their first queries; the last one also times repeats.
    let mut firsts = Vec::new();
    let mut matched = 0u64;
    let mut repeats = Vec::new();
    for i in 0..FIRSTS {
        let server = ctx.benchtop(&args).await?;
        let (text, t) = timed(call_text(&server, "query_logs", query.clone())).await;
        firsts.push(t);
        matched = text?
            .lines()
            .find_map(|l| l.strip_prefix("rows_matched: "))
            .and_then(|s| s.trim().parse().ok())
            .context("query_logs: no rows_matched in its answer")?;
        if i + 1 == FIRSTS {
            for _ in 0..REPEATS {
                let (r, t) = timed(call_text(&server, "query_logs", query.clone())).await;
                r?;
                repeats.push(t);
            }
        }
        server.stop().await;
        if let Ok(d) = &mut duck {
            match d.query() {
                Ok((ms, rows)) => {
                    duck_times.push(ms);
                    duck_rows = rows;
                }
                Err(e) => duck = Err(e),
            }
        }
    }
    let first = Samples::new(firsts.clone()).median();
    let repeat = Samples::new(repeats).median();
    let what = format!("`{FILTER}`, {LOG_ROWS} rows × 12 channels, {size_mb:.0} MB CSV");
    table.add(
        "log-query query_logs, first query",
        ms(first),
        0,
        "ms",
        Goal::None,
        ctx.note(format!(
            "{what}; read + parse + filter, fresh server each, median of {FIRSTS}; {matched} rows matched"
        )),
    );
    table.add(
        "log-query query_logs, repeated",
        ms(repeat),
        1,
        "ms",
        Goal::None,
        ctx.note(format!("median of {REPEATS}, parsed columns cached")),
    );

    overlay(ctx, table, &dir, first).await?;

    match duck {
        Ok(d) => {
            let version = d.version.clone();
            let duck_ms = median(&duck_times);
            // Each first query over the DuckDB query that followed it.
            let ratios: Vec<f64> = firsts
                .iter()
                .zip(&duck_times)
                .map(|(f, d)| ms(*f) / d)
                .collect();
            let ratio = median(&ratios);
            let agree = if duck_rows == matched {
                "same match count".to_owned()
            } else {
                format!("COUNTS DIFFER: DuckDB {duck_rows}, log-query {matched}")
            };
            table.add(
                "DuckDB, same filter as SQL over the same CSV",
                duck_ms,
                0,
                "ms",
                Goal::None,
                format!(
                    "DuckDB {version} via python3, count(*) only, median of {FIRSTS}, each after a first query_logs; {agree}"
                ),
            );
            table.add(
                "log-query first / DuckDB",
                ratio,
                2,
                "x",
                Goal::AtMost(1.5),
                "median of the pairs' ratios",
            );
            table.add(
                "log-query repeated / DuckDB",
                ms(repeat) / duck_ms,
                3,
                "x",
                Goal::AtMost(0.2),
                "",
            );
            table.target(
                Figure::new(
                    "first query_logs, 1 M rows × 12, / DuckDB on the same CSV",
                    format!("log-query {:.0} ms (fresh server)", ms(first)),
                    format!("DuckDB {version}: {duck_ms:.0} ms, taking turns"),
                ),
                ratio,
                2,
                "×",
                Goal::AtMost(0.5),
            );
        }
        Err(e) => {
            let why = format!("DuckDB unavailable ({e}); `pip install duckdb`");
            table.skip(
                "DuckDB, same filter as SQL over the same CSV",
                "ms",
                "",
                why.clone(),
            );
            table.skip("log-query first / DuckDB", "x", "≤ 1.5", "needs DuckDB");
            table.skip("log-query repeated / DuckDB", "x", "≤ 0.2", "needs DuckDB");
            table.target_missing(
                "first query_logs, 1 M rows × 12, / DuckDB on the same CSV",
                "≤ 0.5×",
                "needs DuckDB",
            );
        }
    }
    Ok(())
}

/// The median of a few measurements (the upper one of an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `overlay_log` of the same 1,000,000-row log on the sample ROM's 3D
/// timing map (issue target: under 2× the first `query_logs`), with no
/// filter and one summarised channel, so that every row is read, parsed and
/// binned, as in a tuner's first look at where a log spent its time.
async fn overlay(ctx: &Ctx, table: &mut Table, logs: &Path, first_query: Duration) -> Result<()> {
    let copy = ctx.tmp.path().join("ecu-overlay");
    copy_dir(&ctx.repo.join("samples/ecu"), &copy)?;
    let mut extra: Vec<OsString> = vec![
        "--definitions-path".into(),
        copy.join("definitions").into_os_string(),
        "--logs-dir".into(),
        logs.as_os_str().to_owned(),
    ];
    extra.extend(allow(&copy, "ro"));
    let args = serve_args(ctx, "overlay", &["ecu_tables", "ecuflash"], &extra)?;
    let call = json!({
        "rom": copy.join("BT000001.bin"),
        "table": "Ignition Timing Base Map",
        "file": "bench.csv",
        "channels": ["Timing"],
        "stats": ["mean"],
    });
    let mut firsts = Vec::new();
    let mut binned = String::new();
    for _ in 0..FIRSTS {
        let server = ctx.benchtop(&args).await?;
        let (text, t) = timed(call_text(&server, "overlay_log", call.clone())).await;
        let text = text.context("overlay_log on the bench log")?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
                .with_context(|| format!("overlay_log: no `{name}` in its answer"))
        };
        binned = format!(
            "{} selected, {} in cells",
            field("selected:")?,
            field("in_cells:")?
        );
        firsts.push(t);
        server.stop().await;
    }
    let first = Samples::new(firsts).median();
    table.add(
        "ecu-tables overlay_log, first, 1 M rows",
        ms(first),
        0,
        "ms",
        Goal::None,
        ctx.note(format!(
            "same log, no filter, on the sample 3D timing map, mean of Timing per cell \
             ({binned}); fresh server each, median of {FIRSTS}"
        )),
    );
    table.add(
        "overlay_log first / query_logs first",
        first.as_secs_f64() / first_query.as_secs_f64(),
        2,
        "x",
        Goal::AtMost(2.0),
        "",
    );
    Ok(())
}
