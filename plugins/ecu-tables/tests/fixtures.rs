//! Checks every ROM in ../shared/fixtures/ecuflash against its expected JSON
//! through the library API the component calls: rom_info, the table list,
//! featured tables' axes and values, bloblists, every patch scenario (values,
//! raw, checksum word, SHA-256 of the written image), the corrupted and the
//! unknown ROM. Skips cleanly when the fixtures are absent.

use ecu_tables::decode::Cell;
use ecu_tables::tools::{self, Config, OpKind, PatchTable, ReadTable};

mod common;
use common::explorer;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/ecuflash");
    if dir.join("roms").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn expected_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("roms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn rom_for(json_path: &Path, suffix: &str) -> PathBuf {
    let name = json_path.file_name().unwrap().to_string_lossy();
    json_path.with_file_name(format!("{}.bin", name.trim_end_matches(suffix)))
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}

fn opt_str(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// Copies a (read-only) fixture image to a writable file.
fn copy_writable(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let mut perms = std::fs::metadata(to).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(to, perms).unwrap();
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecu-tables-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn shared_rom_info_matches_every_expected_file() {
    let Some(dir) = fixtures() else { return };
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let files = expected_files(&dir, ".expected.json");
    assert!(files.len() >= 4, "expected at least four ROM fixtures");
    for json in files {
        let exp = load(&json);
        let rom = rom_for(&json, ".expected.json");
        let info = tools::rom_info_data(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
        let e = &exp["rom_info"];
        let ctx = json.display();
        assert_eq!(info.file, e["file"].as_str().unwrap(), "{ctx}");
        assert_eq!(info.size_kb, e["size_kb"].as_f64().unwrap(), "{ctx}");
        assert_eq!(info.definition, opt_str(&e["definition"]), "{ctx}");
        assert_eq!(info.vehicle, opt_str(&e["vehicle"]), "{ctx}");
        assert_eq!(info.ecu_id, opt_str(&e["ecu_id"]), "{ctx}");
        assert_eq!(info.memmodel, opt_str(&e["memmodel"]), "{ctx}");
        assert_eq!(info.checksum_valid, e["checksum_valid"].as_bool(), "{ctx}");
        assert_eq!(
            info.checksum_algorithm,
            opt_str(&e["checksum_algorithm"]),
            "{ctx}"
        );
        if let Some(chain) = exp["include_chain"].as_array() {
            let chain: Vec<&str> = chain.iter().map(|c| c.as_str().unwrap()).collect();
            assert_eq!(info.include_chain, chain, "{ctx}");
        }
        // The text document carries the same facts.
        let text = tools::rom_info(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
        let valid = e["checksum_valid"]
            .as_bool()
            .map_or("null".to_string(), |b| b.to_string());
        assert!(
            text.contains(&format!("checksum_valid: {valid}\n")),
            "{text}"
        );
        if e["definition"].is_null() {
            // Unknown ROM: the table tools refuse and name the ids tried.
            let err = tools::list_tables(
                &mut ex,
                &cfg,
                &tools::ListTables {
                    rom: rom.to_string_lossy().into(),
                    ..Default::default()
                },
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("no definition matches"), "{err}");
            assert!(
                err.contains("56890009 (expects 56890009 at 0x5002A"),
                "{err}"
            );
            assert!(
                info.notes.iter().any(|n| n.contains("tried")),
                "{:?}",
                info.notes
            );
        }
    }
}

#[test]
fn shared_table_lists_match() {
    let Some(dir) = fixtures() else { return };
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    for json in expected_files(&dir, ".expected.json") {
        let exp = load(&json);
        let Some(tables) = exp["tables"].as_array() else {
            continue;
        };
        let rom = rom_for(&json, ".expected.json");
        let opened = ex.open(&dir, &rom).unwrap();
        let def = opened.require_definition().unwrap();
        assert_eq!(
            def.tables.len(),
            exp["table_count"].as_u64().unwrap() as usize
        );
        assert_eq!(def.tables.len(), tables.len());
        assert_eq!(
            def.unresolvable.len(),
            exp["unresolvable_tables"].as_array().unwrap().len()
        );
        for e in tables {
            let name = e["name"].as_str().unwrap();
            let t = tools::find_table(&def, name).unwrap();
            let ctx = format!("{}: {name}", json.display());
            assert_eq!(t.category.as_deref(), e["category"].as_str(), "{ctx}");
            assert_eq!(t.dimensions(), e["dimensions"].as_str().unwrap(), "{ctx}");
            assert_eq!(t.unit(), e["unit"].as_str(), "{ctx}");
            assert_eq!(
                t.table_type.xml_name(),
                e["xml_type"].as_str().unwrap(),
                "{ctx}"
            );
            assert_eq!(
                format!("0x{:X}", t.address),
                e["address"].as_str().unwrap(),
                "{ctx}"
            );
            assert_eq!(t.scaling.name, e["scaling"].as_str().unwrap(), "{ctx}");
            assert_eq!(
                t.scaling.storage.name(),
                e["storagetype"].as_str().unwrap(),
                "{ctx}"
            );
            assert_eq!(t.swapxy, e["swapxy"].as_bool().unwrap(), "{ctx}");
            assert_eq!(t.level.map(u64::from), e["level"].as_u64(), "{ctx}");
            let axis_name =
                |a: &Option<ecu_tables::definition::Axis>| a.as_ref().and_then(|a| a.name.clone());
            assert_eq!(axis_name(&t.row_axis), opt_str(&e["row_axis"]), "{ctx}");
            assert_eq!(axis_name(&t.col_axis), opt_str(&e["col_axis"]), "{ctx}");
        }
        // The rendered list has every table once the limit allows it.
        let text = tools::list_tables(
            &mut ex,
            &cfg,
            &tools::ListTables {
                rom: rom.to_string_lossy().into(),
                limit: Some(1000),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(text.contains(&format!("table_count: {}\n", tables.len())));
        assert_eq!(
            text.lines().filter(|l| l.starts_with("| ")).count(),
            tables.len() + 1
        );
    }
}

fn check_axis(actual: &Option<ecu_tables::decode::AxisData>, e: &Value, ctx: &str) {
    if e.is_null() {
        assert!(actual.is_none(), "{ctx}: unexpected axis");
        return;
    }
    let a = actual
        .as_ref()
        .unwrap_or_else(|| panic!("{ctx}: axis missing"));
    if e["static"].as_bool().unwrap() {
        let labels: Vec<&str> = e["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(a.labels, labels, "{ctx}");
    } else {
        let values = a.values.as_ref().unwrap();
        let raw = a.raw.as_ref().unwrap();
        for (i, v) in e["values"].as_array().unwrap().iter().enumerate() {
            assert!(close(values[i], v.as_f64().unwrap()), "{ctx} axis[{i}]");
        }
        for (i, v) in e["raw"].as_array().unwrap().iter().enumerate() {
            assert_eq!(raw[i], v.as_f64().unwrap(), "{ctx} axis raw[{i}]");
        }
        assert_eq!(
            values.len(),
            e["elements"].as_u64().unwrap() as usize,
            "{ctx}"
        );
    }
}

fn check_grid(data: &ecu_tables::decode::TableData, values: &Value, raw: &Value, ctx: &str) {
    let rows = values.as_array().unwrap();
    assert_eq!(rows.len(), data.rows, "{ctx} rows");
    for (r, row) in rows.iter().enumerate() {
        let row = row.as_array().unwrap();
        assert_eq!(row.len(), data.cols, "{ctx} cols");
        for (c, v) in row.iter().enumerate() {
            let want = v.as_f64().unwrap();
            assert!(
                close(data.value(r, c), want),
                "{ctx} [{r},{c}]: {} != {want}",
                data.value(r, c)
            );
            assert_eq!(
                data.raw[r * data.cols + c],
                raw[r][c].as_f64().unwrap(),
                "{ctx} raw [{r},{c}]"
            );
        }
    }
}

#[test]
fn shared_featured_tables_decode_exactly() {
    let Some(dir) = fixtures() else { return };
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let mut checked = 0;
    for json in expected_files(&dir, ".expected.json") {
        let exp = load(&json);
        let Some(featured) = exp["table_values"].as_array() else {
            continue;
        };
        let rom = rom_for(&json, ".expected.json");
        let rom_s = rom.to_string_lossy().to_string();
        for e in featured {
            let name = e["name"].as_str().unwrap();
            let ctx = format!("{}: {name}", json.display());
            let (_, t, data) = tools::table_data(&mut ex, &cfg, &rom_s, name).unwrap();
            assert_eq!(data.rows, e["rows"].as_u64().unwrap() as usize, "{ctx}");
            assert_eq!(data.cols, e["cols"].as_u64().unwrap() as usize, "{ctx}");
            assert_eq!(
                t.scaling.format_text.as_deref(),
                e["format"].as_str(),
                "{ctx}"
            );
            check_axis(&data.row_axis, &e["row_axis"], &ctx);
            check_axis(&data.col_axis, &e["col_axis"], &ctx);
            check_grid(&data, &e["values"], &e["raw"], &ctx);
            // The document renders every cell with the scaling's format.
            let text = tools::read_table(
                &mut ex,
                &cfg,
                &ReadTable {
                    rom: rom_s.clone(),
                    table: name.into(),
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(text.starts_with("---\ntable: "), "{ctx}");
            assert!(text.contains(&format!(
                "dimensions: {}\n",
                e["dimensions"].as_str().unwrap()
            )));
            assert!(text.contains(&data.display(0, 0)), "{ctx}");
            checked += 1;
        }
        for e in exp["bloblist_values"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().unwrap();
            let (_, _, data) = tools::table_data(&mut ex, &cfg, &rom_s, name).unwrap();
            match data.cell(0, 0) {
                Cell::Blob(value, bytes) => {
                    assert_eq!(value.as_deref(), e["value"].as_str(), "{name}");
                    assert_eq!(
                        ecu_tables::scaling::hex_upper(bytes),
                        e["raw_hex"].as_str().unwrap()
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
    assert!(checked >= 16, "only {checked} featured tables checked");
}

#[test]
fn shared_patch_scenarios_produce_expected_images() {
    let Some(dir) = fixtures() else { return };
    let cfg = Config::with_definitions(&dir);
    let work = scratch("patches");
    let mut scenarios = 0;
    for json in expected_files(&dir, ".patches.json") {
        let exp = load(&json);
        let source = rom_for(&json, ".patches.json");
        for s in exp["scenarios"].as_array().unwrap() {
            let id = s["id"].as_str().unwrap();
            let ctx = format!("{}: {id}", json.display());
            let rom = work.join(format!("{id}.bin"));
            copy_writable(&source, &rom);
            let mut ex = explorer();
            let op = match s["op"].as_str().unwrap() {
                "set" => OpKind::Set,
                "add" => OpKind::Add,
                "multiply" => OpKind::Multiply,
                "clamp" => OpKind::Clamp,
                "smooth" => OpKind::Smooth,
                other => panic!("unknown op {other}"),
            };
            let args = PatchTable {
                rom: rom.to_string_lossy().into(),
                table: s["table"].as_str().unwrap().into(),
                op,
                value: s["value"].as_f64(),
                min: s["min"].as_f64(),
                max: s["max"].as_f64(),
                row: s["row"].as_u64().map(|v| v as u32),
                col: s["col"].as_u64().map(|v| v as u32),
                choice: None,
                force: false,
                rows_where: None,
                cols_where: None,
                cells: None,
            };
            let out = tools::patch(&mut ex, &cfg, &args).unwrap();
            let e = &s["expected"];
            assert_eq!(
                out.effect.targeted,
                s["targeted_cells"].as_u64().unwrap() as usize,
                "{ctx}"
            );
            check_grid(&out.after, &e["values"], &e["raw"], &ctx);
            assert_eq!(
                out.effect.changed.len(),
                e["changed_cells"].as_array().unwrap().len(),
                "{ctx}"
            );
            assert!(out.effect.limited.is_empty(), "{ctx}");
            assert_eq!(out.checksum.valid, Some(true), "{ctx}");
            // Read back from disk with a fresh cache: what was written.
            let on_disk = std::fs::read(&rom).unwrap();
            let word = u32::from_be_bytes(on_disk[0xBFFF0..0xBFFF4].try_into().unwrap());
            assert_eq!(
                format!("0x{word:08X}"),
                e["checksum_word"].as_str().unwrap(),
                "{ctx}"
            );
            let sha: String = Sha256::digest(&on_disk)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(sha, e["rom_sha256"].as_str().unwrap(), "{ctx}");
            let info = tools::rom_info_data(&mut explorer(), &cfg, &args.rom).unwrap();
            assert_eq!(info.checksum_valid, Some(true), "{ctx}");
            // No temporary file is left beside the ROM.
            let leftovers: Vec<_> = std::fs::read_dir(&work)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                .collect();
            assert!(leftovers.is_empty(), "{ctx}: {leftovers:?}");
            scenarios += 1;
        }
    }
    assert!(scenarios >= 12, "only {scenarios} scenarios");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn shared_patch_text_reports_and_bad_checksum_rom() {
    let Some(dir) = fixtures() else { return };
    let cfg = Config::with_definitions(&dir);
    let work = scratch("text");
    let rom = work.join("bad.bin");
    copy_writable(&dir.join("roms/56890009_bad_checksum.bin"), &rom);
    let mut ex = explorer();
    let rom_s = rom.to_string_lossy().to_string();
    let base = PatchTable {
        rom: rom_s.clone(),
        table: "High Octane Timing Map".into(),
        op: OpKind::Add,
        value: Some(1.0),
        min: None,
        max: None,
        row: Some(0),
        col: Some(0),
        choice: None,
        force: false,
        rows_where: None,
        cols_where: None,
        cells: None,
    };
    // Patching a ROM whose checksum was already wrong repairs it and says so.
    let text = tools::patch_table(&mut ex, &cfg, &base).unwrap();
    assert!(text.contains("checksum_valid: true"), "{text}");
    assert!(text.contains("already invalid before this patch"), "{text}");
    // Out-of-range targeting and unknown tables are clear errors.
    let err = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            row: Some(23),
            ..base.clone()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("row 23 is out of range") && err.contains("0..=22"),
        "{err}"
    );
    let err = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            col: Some(22),
            ..base.clone()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("column 22 is out of range"), "{err}");
    let err = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            table: "High Octane Timing".into(),
            ..base.clone()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Did you mean: High Octane Timing Map"),
        "{err}"
    );
    // A value frexpr cannot turn into a number is refused (AFR = 14.7*128/x).
    let err = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            table: "High Octane Fuel Map".into(),
            op: OpKind::Set,
            value: Some(0.0),
            ..base.clone()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("cannot represent 0"), "{err}");
    // Values beyond the storage range are refused, naming the cell...
    let refused = PatchTable {
        value: Some(500.0),
        op: OpKind::Set,
        ..base.clone()
    };
    let before = std::fs::read(&rom).unwrap();
    let err = tools::patch_table(&mut ex, &cfg, &refused)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[0,0] wanted 500") && err.contains("storage limit") && err.contains("force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&rom).unwrap(),
        before,
        "a refused patch writes nothing"
    );
    // ...and with force they are limited and reported.
    let text = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            force: true,
            ..refused
        },
    )
    .unwrap();
    assert!(text.contains("limited_cells: 1"), "{text}");
    assert!(text.contains("wanted 500 stored 127"), "{text}");
    // Bloblist switches take a choice.
    let text = tools::patch_table(
        &mut ex,
        &cfg,
        &PatchTable {
            table: "Mode 23 - IFMode 0x05 -> 0x23 #1".into(),
            op: OpKind::Set,
            value: None,
            row: None,
            col: None,
            choice: Some("enabled".into()),
            ..base.clone()
        },
    )
    .unwrap();
    assert!(text.contains("| enabled |"), "{text}");
    let info = tools::rom_info_data(&mut explorer(), &cfg, &rom_s).unwrap();
    assert_eq!(info.checksum_valid, Some(true));
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn shared_two_level_include_chain_matches_56890109() {
    let Some(dir) = fixtures() else { return };
    let mut ex = explorer();
    let opened = ex.open(&dir, &dir.join("roms/56890109.bin")).unwrap();
    let def = opened.require_definition().unwrap();
    assert_eq!(def.chain, ["evo10base", "56890009", "56890109"]);
    assert!(opened.warnings.is_empty(), "{:?}", opened.warnings);
}
