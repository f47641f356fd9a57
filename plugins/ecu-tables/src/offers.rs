//! What MCP clients get besides tools (Contract 6): a ROM's tables as
//! resources (the list_tables / read_table documents), the specification's
//! system prompt and two workflow prompts that name the real tools, and
//! completion of ROM paths, table names and categories.

use crate::error::Error;
use crate::store::Explorer;
use crate::tools::{self, Config, ListTables, MAX_LIST, ReadTable};
use plugin_kit::suggest::completions;
use plugin_kit::text::clip;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

// ------------------------------------------------------------- resources

/// `rom://{+rom}/tables`: every table (up to list_tables' maximum).
pub fn rom_tables(ex: &mut Explorer, cfg: &Config, rom: &str) -> Result<String, Error> {
    tools::list_tables(
        ex,
        cfg,
        &ListTables {
            rom: rom.to_owned(),
            limit: Some(MAX_LIST as u32),
            ..ListTables::default()
        },
    )
}

/// `rom://{+rom}/categories/{category}`: the tables of one category.
pub fn rom_category(
    ex: &mut Explorer,
    cfg: &Config,
    rom: &str,
    category: &str,
) -> Result<String, Error> {
    tools::list_tables(
        ex,
        cfg,
        &ListTables {
            rom: rom.to_owned(),
            category: Some(category.to_owned()),
            limit: Some(MAX_LIST as u32),
            ..ListTables::default()
        },
    )
}

/// `rom://{+rom}/tables/{table}`: read_table's first window.
pub fn rom_table(ex: &mut Explorer, cfg: &Config, rom: &str, table: &str) -> Result<String, Error> {
    tools::read_table(
        ex,
        cfg,
        &ReadTable {
            rom: rom.to_owned(),
            table: table.to_owned(),
            ..ReadTable::default()
        },
    )
}

/// The URIs under which subscribers may watch the table a patch changed:
/// the ROM as the caller wrote it and as resolved, the table as written and
/// as the definition names it, each expanded as RFC 6570 clients expand the
/// template (`{+rom}` keeps reserved characters, `{table}` encodes all but
/// the unreserved ones). The table list and categories do not change.
pub fn patched_uris(rom: &str, resolved: &Path, table: &str, canonical: &str) -> Vec<String> {
    let roms = [
        rom.trim().to_owned(),
        resolved.to_string_lossy().into_owned(),
    ];
    let tables = [table, canonical];
    let mut out = BTreeSet::new();
    for r in &roms {
        for t in &tables {
            out.insert(format!(
                "rom://{}/tables/{}",
                expand(r, true),
                expand(t, false)
            ));
        }
    }
    out.into_iter().collect()
}

/// RFC 6570 expansion of one value: unreserved characters stay, and with
/// `reserved` (`{+var}`) the reserved ones too; the rest is percent-encoded.
fn expand(value: &str, reserved: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || b"-._~".contains(&b)
            || (reserved && b":/?#[]@!$&'()*+,;=".contains(&b));
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// --------------------------------------------------------------- prompts

/// The system prompt of specs/ecu-explorer-mcp.md ("recommended for LLMs
/// using this MCP server"), word for word: benchtop serves the tools it
/// names under the same names (rom_info, list_tables, read_table,
/// patch_table from ecu-tables; list_logs, query_logs from log-query).
pub const ECU_TUNING_ASSISTANT: &str = "\
You are an ECU tuning assistant with access to calibration tables and live-data logs from a vehicle ECU.

## Workflow

1. **Start with rom_info**: Always call `rom_info` first to verify the ROM is recognized and
   checksum is valid. If `definition` is null, stop and report that the ROM is unrecognized.

2. **Discover tables**: Call `list_tables` to find relevant calibration tables before reading.
   Use the `category` filter to narrow results (e.g. 'Fuel', 'Ignition', 'Boost').

3. **Read before patching**: Always call `read_table` before `patch_table` to understand
   current values and to obtain the correct row/column indices.

4. **Verify after patching**: After `patch_table`, inspect the returned table to confirm the
   operation produced the expected result before proceeding.

5. **Log analysis workflow**: Call `list_logs` first to see available channels and sessions,
   then call `query_logs` with a specific filter expression targeting the channels of interest.

6. **Never recommend flashing without a valid checksum**: Confirm `checksum_valid: true` in
   `rom_info` before recommending that the user flash the ROM to the ECU.

7. **Correlate logs with tables**: When diagnosing a tuning issue, identify the relevant
   operating condition in the logs (e.g. knock events at specific RPM/load), then read the
   corresponding table cells to understand the calibration at that operating point.

## ECU Tuning Principles

- **Fuel tables**: Richer = more fuel. Lean conditions at high load cause knock and engine damage.
- **Ignition timing**: More advance = more power but higher knock risk. Retard if knock is detected.
- **Boost tables**: Higher boost = more power but more stress. Never exceed safe limits.
- **Idle tables**: Adjust for cold-start behavior, idle stability, and warm-up enrichment.

## Safety Rules

- Never suggest timing advance beyond safe limits for the fuel octane rating.
- Flag any table changes that could cause lean conditions at high load.
- Recommend a data log after any calibration change to verify the effect.
- Do not recommend flashing if `checksum_valid` is false.
";

/// Tables named in a prompt's hint, at most.
const HINTED_TABLES: usize = 12;

/// Words of a table's name or category that matter for knock.
const KNOCK_WORDS: [&str; 5] = ["timing", "ignition", "knock", "fuel", "octane"];

/// The tables of `rom` that bear on knock, as a sentence for a prompt, or
/// why the ROM could not be opened (the agent's first rom_info call will
/// say the same; knowing it up front saves a wasted plan).
fn knock_tables_hint(ex: &mut Explorer, cfg: &Config, rom: &str) -> String {
    let def = match tools::open(ex, cfg, rom).and_then(|o| o.require_definition()) {
        Ok(def) => def,
        Err(e) => return format!("\n(Opening the ROM now failed: {e}.)\n"),
    };
    let relevant: Vec<String> = def
        .tables
        .iter()
        .filter(|t| {
            let text = format!("{} {}", t.id, t.category.as_deref().unwrap_or("")).to_lowercase();
            KNOCK_WORDS.iter().any(|w| text.contains(w))
        })
        .map(|t| {
            format!(
                "`{}` ({}, {}{})",
                t.id,
                t.category.as_deref().unwrap_or("no category"),
                t.dimensions(),
                t.unit().map(|u| format!(", {u}")).unwrap_or_default()
            )
        })
        .collect();
    if relevant.is_empty() {
        return format!(
            "\nIts definition ({}) names no timing, ignition, knock or fuel table; look through list_tables' categories.\n",
            def.display_name()
        );
    }
    let more = relevant.len().saturating_sub(HINTED_TABLES);
    format!(
        "\nIn its definition ({}), the candidates are: {}{}.\n",
        def.display_name(),
        relevant[..relevant.len().min(HINTED_TABLES)].join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// `diagnose_knock`: from the knock events in a log to the table cells.
pub fn diagnose_knock(
    ex: &mut Explorer,
    cfg: &Config,
    rom: &str,
    log_file: Option<&str>,
) -> String {
    let rom = clip(rom.trim());
    let hint = knock_tables_hint(ex, cfg, &rom);
    let (find_log, file_arg) = match log_file.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => {
            let f = clip(f);
            (
                format!("Call `list_logs` and find `{f}` in it; note its exact channel names (case-sensitive), its duration and sample rate."),
                format!(" file=\"{f}\""),
            )
        }
        None => (
            "Call `list_logs` and pick the log of the drive in question (# 1 is the newest; ask the user if unsure); note its exact channel names (case-sensitive).".to_owned(),
            " file=<that log>".to_owned(),
        ),
    };
    format!(
        "Diagnose knock on the ECU whose ROM is `{rom}`, with the ECU tools. Show what each call returned that matters.

1. Call `rom_info` with rom=\"{rom}\". If `definition` is null, stop and report that the ROM is unrecognized. Note `checksum_valid`.
2. {find_log}
3. Call `query_logs` with{file_arg} and a filter selecting the knock events on the log's knock channel, e.g. filter=\"Knock > 0\" (use the name list_logs shows; quote names with spaces: 'Knock Sum' > 0), with channels for RPM, load, ignition timing and AFR. Call `plot_log` over the same file and filter to see the pulls around the events.
4. Summarise where knock happens: the RPM and load ranges, how many events, how strong, and whether AFR was lean there.
5. Call `list_tables` with rom=\"{rom}\" and category=\"Timing\" (or 'Ignition'), then category=\"Fuel\", to find the maps for those conditions.{hint}
6. Call `overlay_log` with rom=\"{rom}\", table=<each of those maps>,{file_arg}, the same knock filter and channels=[the knock channel]: it counts the knock samples per cell of the map (and their mean, max). If it cannot match the map's axes to the log's channels, pass x_channel/y_channel. Then call `read_table` for those maps to see the values in the cells that knocked (row and column indices are 0-based, as read_table shows them).
7. Propose a change: which cells, by how much (e.g. retard timing 1-2 degrees in the knocking cells; richer fuel where high load runs lean), and why. `propose_patch` with the same filter and an op (e.g. add -1) shows it as a diff without writing, and gives the patch_table arguments. Do not call `patch_table` before the user agrees; after a patch, check the table it returns. Recommend a new datalog after any change, and do not recommend flashing unless `rom_info` reports checksum_valid: true.
"
    )
}

/// What the definition says of `table` (or why it is not there), for
/// review_patch.
fn table_hint(ex: &mut Explorer, cfg: &Config, rom: &str, table: &str) -> String {
    let opened = match tools::open(ex, cfg, rom).and_then(|o| o.require_definition()) {
        Ok(def) => def,
        Err(e) => return format!(" (Opening the ROM now failed: {e}.)"),
    };
    match tools::find_table(&opened, table) {
        Ok(t) => format!(
            " The definition ({}) gives it as {}, {}{}.",
            opened.display_name(),
            t.category.as_deref().unwrap_or("no category"),
            t.dimensions(),
            t.unit().map(|u| format!(", in {u}")).unwrap_or_default()
        ),
        Err(e) => format!(" (Looking it up now failed: {e}.)"),
    }
}

/// `review_patch`: a table change checked before flashing.
pub fn review_patch(
    ex: &mut Explorer,
    cfg: &Config,
    rom: &str,
    table: &str,
    stock_rom: Option<&str>,
) -> String {
    let rom = clip(rom.trim());
    let table = clip(table.trim());
    let hint = table_hint(ex, cfg, &rom, &table);
    let diff = match stock_rom.map(str::trim).filter(|s| !s.is_empty()) {
        Some(stock) => {
            let stock = clip(stock);
            format!(
                "Call `diff_tables` with rom=\"{stock}\" (the stock ROM), other=\"{rom}\" and table=\"{table}\" to see every changed cell; then call it again without `table` to check that no other table changed unexpectedly."
            )
        }
        None => format!(
            "No stock ROM was given: ask the user for the stock (or previous) ROM and call `diff_tables` with rom=<stock>, other=\"{rom}\" and table=\"{table}\"; without one, judge the values on their own."
        ),
    };
    format!(
        "Review the change to table `{table}` in the ROM `{rom}` before it is flashed.{hint}

1. Call `rom_info` with rom=\"{rom}\". If `definition` is null, stop and report that the ROM is unrecognized. Note `checksum_valid`.
2. Call `read_table` with rom=\"{rom}\" and table=\"{table}\"; if its note says there is more, page with row_start/col_start.
3. {diff}
4. Judge the values: inside the scaling's range, smooth between neighbouring cells (no steps or spikes), and safe: more timing advance raises knock risk (never beyond what the fuel's octane allows), lean fuel at high load causes knock and engine damage, more boost means more stress.
5. Report each problem with its cells (0-based row/col from read_table) and the fix. A fix with `patch_table` needs the user's agreement, and the table it returns must be checked.
6. Conclude: recommend flashing only if `rom_info` reports checksum_valid: true (patch_table updates the checksum when the definition names a supported algorithm), and recommend a datalog after flashing to verify the effect (list_logs, then query_logs).
"
    )
}

// ------------------------------------------------------------ completion

/// Directory entries one ROM search looks at, at most.
const SCAN_ENTRIES: usize = 5000;
/// How deep below a root the ROM search goes.
const SCAN_DEPTH: usize = 4;
/// ROMs opened to find table names when none is open yet.
const OPEN_FOR_NAMES: usize = 3;
/// Extensions of ROM images (raw dumps and EcuFlash containers).
const ROM_EXTENSIONS: [&str; 5] = ["bin", "rom", "srf", "img", "ori"];
/// ECU ROM images are 16 KiB to 16 MiB (see store::MAX_ROM).
const ROM_SIZES: std::ops::RangeInclusive<u64> = (16 << 10)..=(16 << 20);
/// Directories no ROM search enters: build output and package trees.
const SKIPPED_DIRS: [&str; 3] = ["target", "node_modules", "__pycache__"];

/// Values for `argument` (of a prompt or a template variable) starting
/// with, then containing, `value` (case-insensitive).
pub fn complete(ex: &mut Explorer, cfg: &Config, argument: &str, value: &str) -> Vec<String> {
    match argument {
        "rom" | "stock_rom" => completions(rom_paths(cfg, value.starts_with('/')), value),
        "table" => completions(from_open_roms(ex, cfg, |t| Some(t.id.clone())), value),
        "category" => completions(from_open_roms(ex, cfg, |t| t.category.clone()), value),
        _ => Vec::new(),
    }
}

/// Table names or categories of the ROMs opened so far; with none open,
/// of the first ROMs the search finds (so a fresh session completes too).
fn from_open_roms(
    ex: &mut Explorer,
    cfg: &Config,
    pick: impl Fn(&crate::definition::Table) -> Option<String>,
) -> std::collections::btree_set::IntoIter<String> {
    let mut roms = ex.cached_roms();
    if roms.is_empty() {
        roms = rom_paths(cfg, true)
            .into_iter()
            .take(OPEN_FOR_NAMES)
            .map(PathBuf::from)
            .collect();
    }
    let mut out = BTreeSet::new();
    for rom in roms {
        let Some(rom) = rom.to_str() else { continue };
        if let Ok(def) = tools::open(ex, cfg, rom).and_then(|o| o.require_definition()) {
            out.extend(def.tables.iter().filter_map(&pick));
        }
    }
    out.into_iter()
}

/// ROM-like files under the workspace and the granted directories (not
/// the definitions directory), workspace-relative where they can be unless
/// `absolute` (what was typed starts with `/`).
fn rom_paths(cfg: &Config, absolute: bool) -> Vec<String> {
    let workspace = plugin_kit::paths::workspace();
    let mut roots: Vec<PathBuf> = workspace.iter().cloned().collect();
    roots.extend(
        plugin_kit::paths::allowed_roots()
            .into_iter()
            .map(|r| r.path),
    );
    let shown_from = workspace.as_deref().filter(|_| !absolute);
    find_roms(&roots, shown_from, cfg.definitions.as_deref())
}

/// Whether a file of this name and size looks like a ROM image.
pub fn looks_like_rom(name: &str, size: u64) -> bool {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    ext.is_some_and(|e| ROM_EXTENSIONS.contains(&e.as_str())) && ROM_SIZES.contains(&size)
}

/// Breadth-first search of `roots` for ROM-like files, bounded in depth and
/// in entries looked at (a workspace may be a whole home directory). Paths
/// under `workspace` are shown relative to it, as the tools accept them.
pub fn find_roms(roots: &[PathBuf], workspace: Option<&Path>, skip: Option<&Path>) -> Vec<String> {
    let mut found = BTreeSet::new();
    let mut seen_dirs = BTreeSet::new();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> = roots
        .iter()
        .map(|r| (plugin_kit::paths::normalize(r), 0))
        .collect();
    let mut budget = SCAN_ENTRIES;
    while let Some((dir, depth)) = queue.pop_front() {
        if skip.is_some_and(|s| dir.starts_with(s)) || !seen_dirs.insert(dir.clone()) {
            continue;
        }
        let Ok(entries) = plugin_kit::paths::read_dir_entries(&dir) else {
            continue;
        };
        for entry in entries {
            if budget == 0 {
                return found.into_iter().collect();
            }
            budget -= 1;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let path = entry.path();
            if meta.is_dir() {
                if depth < SCAN_DEPTH && !SKIPPED_DIRS.contains(&name.as_str()) {
                    queue.push_back((path, depth + 1));
                }
            } else if meta.is_file() && looks_like_rom(&name, meta.len()) {
                let shown = workspace
                    .and_then(|ws| path.strip_prefix(ws).ok())
                    .unwrap_or(&path);
                found.insert(shown.to_string_lossy().into_owned());
            }
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn patched_tables_are_announced_as_clients_expand_the_template() {
        let uris = patched_uris(
            "roms/my car.bin",
            Path::new("/ws/roms/my car.bin"),
            "Fuel Map/High",
            "Fuel Map/High",
        );
        assert_eq!(
            uris,
            s(&[
                "rom:///ws/roms/my%20car.bin/tables/Fuel%20Map%2FHigh",
                "rom://roms/my%20car.bin/tables/Fuel%20Map%2FHigh",
            ])
        );
        assert_eq!(expand("a+b(1)%", true), "a+b(1)%25");
        assert_eq!(expand("a+b(1)", false), "a%2Bb%281%29");
        assert_eq!(expand("Zündung", false), "Z%C3%BCndung");
    }

    #[test]
    fn rom_like_files_by_extension_and_size() {
        assert!(looks_like_rom("car.BIN", 1 << 20));
        assert!(looks_like_rom("stock.srf", 512 << 10));
        assert!(!looks_like_rom("car.bin", 100));
        assert!(!looks_like_rom("notes.txt", 1 << 20));
        assert!(!looks_like_rom("noext", 1 << 20));
        assert!(!looks_like_rom("huge.bin", 64 << 20));
    }

    #[test]
    fn rom_search_is_relative_to_the_workspace_and_skips_definitions() {
        let root = &std::env::temp_dir().join(format!("ecu-offers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(root);
        let write = |p: &str, n: usize| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, vec![0u8; n]).unwrap();
        };
        write("roms/a.bin", 32 << 10);
        write("roms/deep/b.srf", 32 << 10);
        write("roms/small.bin", 10);
        write("defs/c.bin", 32 << 10);
        write("target/d.bin", 32 << 10);
        write(".git/e.bin", 32 << 10);
        write("1/2/3/4/5/too-deep.bin", 32 << 10);
        let found = find_roms(&[root.to_path_buf()], Some(root), Some(&root.join("defs")));
        assert_eq!(found, s(&["roms/a.bin", "roms/deep/b.srf"]));
        // Outside the workspace: absolute.
        let found = find_roms(&[root.join("roms")], None, None);
        assert_eq!(found.len(), 2);
        assert!(
            found.iter().all(|p| Path::new(p).is_absolute()),
            "{found:?}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    fn samples() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/ecu")
    }

    #[test]
    fn the_sample_rom_completes_and_hints_its_tables() {
        let mut ex = crate::testing::explorer();
        let cfg = Config::with_definitions(samples().join("definitions"));
        let rom = samples().join("BT000001.bin");
        let rom = rom.to_str().unwrap();
        let p = diagnose_knock(&mut ex, &cfg, rom, None);
        assert!(
            p.contains("`Ignition Timing Base Map`") && p.contains("`Fuel Map`"),
            "{p}"
        );
        assert!(!p.contains("`Boost Target`"), "{p}");
        // The ROM is now open: its tables and categories complete.
        assert_eq!(complete(&mut ex, &cfg, "table", "fuel m"), s(&["Fuel Map"]));
        let cats = complete(&mut ex, &cfg, "category", "");
        assert!(
            !cats.is_empty() && cats.windows(2).all(|w| w[0] < w[1]),
            "{cats:?}"
        );
        let p = review_patch(&mut ex, &cfg, rom, "Fuel Map", None);
        assert!(p.contains(" The definition (BT000001"), "{p}");
        let p = review_patch(&mut ex, &cfg, rom, "Fuel Mapp", None);
        assert!(
            p.contains("Looking it up now failed") && p.contains("Fuel Map"),
            "{p}"
        );
        assert!(rom_tables(&mut ex, &cfg, rom).unwrap().contains("Fuel Map"));
        assert!(rom_table(&mut ex, &cfg, rom, "Nope").is_err());
    }

    #[test]
    fn the_system_prompt_is_the_specifications() {
        for tool in [
            "rom_info",
            "list_tables",
            "read_table",
            "patch_table",
            "list_logs",
            "query_logs",
        ] {
            assert!(
                ECU_TUNING_ASSISTANT.contains(&format!("`{tool}`")),
                "{tool}"
            );
        }
        assert!(ECU_TUNING_ASSISTANT.starts_with("You are an ECU tuning assistant"));
        assert!(
            ECU_TUNING_ASSISTANT
                .contains("Do not recommend flashing if `checksum_valid` is false.")
        );
    }

    #[test]
    fn prompts_name_the_tools_and_the_arguments_without_a_rom() {
        let mut ex = crate::testing::explorer();
        let cfg = Config::default();
        let p = diagnose_knock(&mut ex, &cfg, "roms/car.bin", Some("pull.csv"));
        for want in [
            "rom_info",
            "list_logs",
            "query_logs",
            "list_tables",
            "read_table",
            "rom=\"roms/car.bin\"",
            "file=\"pull.csv\"",
        ] {
            assert!(p.contains(want), "{want} in {p}");
        }
        // No definitions directory: the prompt still comes, saying why.
        assert!(p.contains("Opening the ROM now failed"), "{p}");
        let p = diagnose_knock(&mut ex, &cfg, "car.bin", Some("  "));
        assert!(p.contains("# 1 is the newest"), "{p}");
        let p = review_patch(&mut ex, &cfg, "tuned.bin", "Fuel Map", Some("stock.bin"));
        assert!(
            p.contains("rom=\"stock.bin\" (the stock ROM), other=\"tuned.bin\""),
            "{p}"
        );
        assert!(
            p.contains("read_table") && p.contains("checksum_valid"),
            "{p}"
        );
        let p = review_patch(&mut ex, &cfg, "tuned.bin", "Fuel Map", None);
        assert!(p.contains("No stock ROM was given"), "{p}");
    }

    #[test]
    fn unknown_arguments_complete_to_nothing() {
        let mut ex = crate::testing::explorer();
        assert!(complete(&mut ex, &Config::default(), "log_file", "").is_empty());
    }
}
