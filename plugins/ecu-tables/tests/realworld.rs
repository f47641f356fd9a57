//! Every definition chain of ../shared/fixtures/realworld/ecuflash (the
//! SubaruDefs tree, the Magna chains with their H8 family, the Subaru
//! Legacy and 16-bit chains) on a synthetic image built from the
//! definition's own addresses: it must be recognised, every addressed
//! table must resolve, and every table must read, patch and read back.
//! Skips cleanly when the fixtures are absent. No ROM is stored anywhere.

use ecu_tables::decode::read_table;
use ecu_tables::definition::Definition;
use ecu_tables::scaling::Kind;
use ecu_tables::tools::{self, Config};
use ecu_tables::{Explorer, memmodel};
use ecuflash::xml::parse_romid_only;
use std::path::{Path, PathBuf};

mod common;
use common::{explorer, patch_round_trip, scratch};

fn realworld() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/realworld/ecuflash");
    if dir.join("subarudefs_standard").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

/// Every `*.xml` under `dir` carrying an internal id (the ROM-matching leaves).
fn leaves(dir: &Path) -> Vec<(PathBuf, ecu_tables::definition::RomId)> {
    let mut out = Vec::new();
    for (path, _) in ecu_tables::store::scan_dir(dir).unwrap() {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(id) = parse_romid_only(&text) else {
            continue;
        };
        if id.internal_id_address.is_some()
            && (id.internal_id_hex.is_some() || id.internal_id_string.is_some())
        {
            out.push((path, id));
        }
    }
    out
}

/// Writes `id` into `image` at its address (less the model's base).
fn stamp_id(image: &mut [u8], id: &ecu_tables::definition::RomId, base: u32) {
    let addr = ecu_tables::definition::parse_hex(id.internal_id_address.as_deref().unwrap())
        .unwrap()
        - base;
    let bytes = match &id.internal_id_hex {
        Some(h) => ecu_tables::scaling::parse_hex_bytes(h).unwrap(),
        None => id.internal_id_string.clone().unwrap().into_bytes(),
    };
    image[addr as usize..addr as usize + bytes.len()].copy_from_slice(&bytes);
}

/// The bytes a complete read of this definition's ECU has.
fn image_size(def: &Definition) -> (usize, u32) {
    let model = def.memmodel().and_then(memmodel::by_name);
    let base = model.map_or(0, |m| m.base);
    let mut size = model.map_or(0, |m| m.size);
    // Models without a known size: big enough for every table.
    for t in &def.tables {
        let end = t.address.saturating_sub(base) as usize + t.byte_len();
        size = size.max(end.next_power_of_two());
    }
    (size, base)
}

#[test]
fn shared_every_realworld_chain_resolves_reads_and_patches_every_table() {
    let Some(root) = realworld() else { return };
    let scratch = scratch("chains");
    let mut leaves_checked = 0usize;
    let mut tables_checked = 0usize;
    let mut problems: Vec<String> = Vec::new();
    for set in [
        "subarudefs_standard",
        "mitsubishi_magna",
        "subaru_legacy_A2UG000N",
        "subaru_16bit",
    ] {
        let dir = root.join(set);
        let cfg = Config::with_definitions(&dir);
        let mut ex = explorer();
        let found = leaves(&dir);
        assert!(!found.is_empty(), "{set}: no definitions");
        for (path, id) in found {
            // Resolve once on a blank image to learn the size, then build
            // the image with the id where the ECU keeps it.
            let rom = scratch.join("probe.bin");
            let xmlid = id.xmlid.clone().unwrap_or_default();
            let mut size = 0x10_0000usize;
            let mut base = 0u32;
            for _ in 0..2 {
                let mut image = vec![0u8; size];
                stamp_id(&mut image, &id, base);
                std::fs::write(&rom, &image).unwrap();
                let opened = tools::open(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
                let Some(def) = opened.definition.clone() else {
                    problems.push(format!("{set}/{xmlid}: not recognised: {:?}", opened.tried));
                    break;
                };
                let (want, b) = image_size(&def);
                if (want, b) != (size, base) {
                    (size, base) = (want, b);
                    continue;
                }
                leaves_checked += 1;
                // Another definition with the same id may legitimately win;
                // it must then be one whose chain holds this file's id.
                if def.file != path && !def.chain.contains(&xmlid) {
                    problems.push(format!(
                        "{set}/{xmlid}: matched {} instead",
                        def.file.display()
                    ));
                }
                for (name, why) in &def.unresolvable {
                    problems.push(format!("{set}/{xmlid}: unreadable `{name}`: {why}"));
                }
                // H8 views start at the model's base: nothing may live below it.
                for t in def
                    .tables
                    .iter()
                    .filter(|t| (t.address as usize) < opened.layout.base)
                {
                    problems.push(format!(
                        "{set}/{xmlid}: `{}` at 0x{:X} is below the image",
                        t.id, t.address
                    ));
                }
                let bytes = opened.bytes.clone();
                tables_checked += def.tables.len();
                for f in patch_round_trip(&def, &bytes) {
                    problems.push(format!("{set}/{xmlid}: {f}"));
                }
                break;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!("{leaves_checked} definitions, {tables_checked} tables checked");
    assert!(
        problems.is_empty(),
        "{} problems, first 40:\n{}",
        problems.len(),
        problems
            .iter()
            .take(400)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(leaves_checked >= 300, "{leaves_checked}");
}

/// A copy of `image` at `path`, made writable (tests patch it).
fn write_rom(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

fn find_leaf(dir: &Path, xmlid: &str) -> ecu_tables::definition::RomId {
    leaves(dir)
        .into_iter()
        .find(|(_, id)| id.xmlid.as_deref() == Some(xmlid))
        .unwrap_or_else(|| panic!("{xmlid} not in {}", dir.display()))
        .1
}

fn patch_args(rom: &Path, table: &str, value: f64) -> tools::PatchTable {
    tools::PatchTable {
        rom: rom.to_string_lossy().into(),
        table: table.into(),
        op: tools::OpKind::Set,
        value: Some(value),
        min: None,
        max: None,
        row: Some(0),
        col: Some(0),
        choice: None,
        force: false,
        rows_where: None,
        cols_where: None,
        cells: None,
    }
}

/// Issue 17 #3: a 128 KiB H8/539F Magna image whose definitions address
/// from 0x10000 is recognised, read and patched, and stays 128 KiB.
#[test]
fn shared_h8_128k_images_read_and_write_back() {
    let Some(root) = realworld() else { return };
    let dir = root.join("mitsubishi_magna");
    let work = scratch("h8");
    let id = find_leaf(&dir, "22490005");
    let mut image = vec![0u8; 0x2_0000];
    stamp_id(&mut image, &id, 0x1_0000);
    assert_eq!(&image[0x21A..0x21E], &[0x22, 0x49, 0x00, 0x05]);
    let rom = work.join("TH 3.0 Auto.hex");
    write_rom(&rom, &image);
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let info = tools::rom_info_data(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
    assert_eq!(
        info.definition
            .as_deref()
            .map(|d| d.split(' ').next().unwrap()),
        Some("22490005")
    );
    assert_eq!(info.size_kb, 128.0);
    assert!(
        info.notes.iter().any(|n| n.contains("ECU address 0x10000")),
        "{:?}",
        info.notes
    );
    assert!(
        !info
            .notes
            .iter()
            .any(|n| n.contains("outside") || n.contains("incomplete")),
        "{:?}",
        info.notes
    );
    // One table, at its H8 address (not a second copy at the SH one).
    let def = tools::open(&mut ex, &cfg, rom.to_str().unwrap())
        .unwrap()
        .definition
        .unwrap();
    let name = "ECU Case Part Number - Spec Number 0";
    let t = tools::find_table(&def, name).unwrap();
    assert_eq!(t.address, 0x10233);
    let scalar = def
        .tables
        .iter()
        .find(|t| {
            t.table_type == ecu_tables::definition::TableType::Scalar
                && t.scaling.storage.int_range().is_some()
                && matches!(t.scaling.kind, Kind::Numeric { from: Some(_), .. })
        })
        .expect("an integer scalar")
        .clone();
    let value = scalar.scaling.to_physical(1.0);
    let args = tools::PatchTable {
        force: true,
        ..patch_args(&rom, &scalar.id, value)
    };
    let text = tools::patch_table(&mut ex, &cfg, &args).unwrap();
    assert!(text.contains("cells_changed: 1"), "{text}");
    let after = std::fs::read(&rom).unwrap();
    assert_eq!(after.len(), 0x2_0000, "written back as a 128 KiB image");
    let at = scalar.address as usize - 0x1_0000;
    let size = scalar.scaling.storage.size();
    let diff: Vec<usize> = (0..after.len()).filter(|&i| after[i] != image[i]).collect();
    assert_eq!(
        diff,
        [at + size - 1],
        "only {} at file offset 0x{at:X}",
        scalar.id
    );
    assert_eq!(after[at + size - 1], 1);
    let _ = std::fs::remove_dir_all(&work);
}

/// Issue 17 #3: an EcuFlash .srf container around a Subaru image (A2WC510S,
/// SH7058) is recognised, its subarudbw checksum checked, and a patch is
/// saved inside the same container with the checksum fixed.
#[test]
fn shared_srf_containers_read_and_write_back() {
    let Some(root) = realworld() else { return };
    let dir = root.join("subarudefs_standard");
    let work = scratch("srf");
    let id = find_leaf(&dir, "A2WC510S");
    let mut image = vec![0u8; 0x10_0000];
    stamp_id(&mut image, &id, 0);
    // A checksum table as on the real ROMs: 0..=0x1FFF, 0x2000..=0xFFAF7.
    let table = 0xF_FB80;
    for (i, (s, e)) in [(0u32, 0x1FFFu32), (0x2000, 0xF_FAF7)].iter().enumerate() {
        image[table + i * 12..table + i * 12 + 4].copy_from_slice(&s.to_be_bytes());
        image[table + i * 12 + 4..table + i * 12 + 8].copy_from_slice(&e.to_be_bytes());
    }
    for i in 2..17 {
        image[table + i * 12 + 8..table + i * 12 + 12]
            .copy_from_slice(&0x5AA5_A55Au32.to_be_bytes());
    }
    ecu_tables::checksum::Module::SubaruDbw
        .fix(&mut image)
        .unwrap();
    // INFO, DRMI, MEML, then MEMD with the image 461 bytes in.
    let mut file = Vec::new();
    for (tag, payload) in [
        (b"INFO", vec![b'i'; 300]),
        (b"DRMI", vec![b'd'; 100]),
        (b"MEML", vec![0x11; 29]),
        (b"MEMD", image.clone()),
    ] {
        file.extend_from_slice(tag);
        file.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        file.extend_from_slice(&payload);
    }
    assert_eq!(file.len() - image.len(), 461);
    let rom = work.join("A2WC510S.srf");
    write_rom(&rom, &file);
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let info = tools::rom_info_data(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
    assert!(
        info.definition.as_deref().unwrap().starts_with("A2WC510S"),
        "{info:?}"
    );
    assert_eq!(info.checksum_valid, Some(true), "{info:?}");
    assert_eq!(info.size_kb, 1024.0);
    assert!(
        info.notes.iter().any(|n| n.contains(".srf container")),
        "{:?}",
        info.notes
    );
    let text =
        tools::patch_table(&mut ex, &cfg, &patch_args(&rom, "Target Boost A", 10.0)).unwrap();
    assert!(text.contains("checksum_valid: true"), "{text}");
    let after = std::fs::read(&rom).unwrap();
    assert_eq!(after.len(), file.len());
    assert_eq!(
        &after[..461],
        &file[..461],
        "the chunks before the image are kept"
    );
    let new_image = &after[461..];
    assert!(
        ecu_tables::checksum::Module::SubaruDbw
            .validate(new_image)
            .unwrap()
    );
    assert_ne!(new_image, &image[..]);
    let _ = std::fs::remove_dir_all(&work);
}

/// Issue 17 #6: a 256 KiB read of a 512 KiB (SH7055) ECU: rom_info and
/// list_tables say so and name the tables outside the image.
#[test]
fn shared_short_images_are_reported_with_the_tables_outside() {
    let Some(root) = realworld() else { return };
    let dir = root.join("subarudefs_standard");
    let work = scratch("short");
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let (_, id) = leaves(&dir)
        .into_iter()
        .find(|(_, id)| id.fields.get("memmodel").map(String::as_str) == Some("SH7055"))
        .expect("an SH7055 definition");
    let mut image = vec![0u8; 0x4_0000];
    stamp_id(&mut image, &id, 0);
    let rom = work.join("half.bin");
    write_rom(&rom, &image);
    let info = tools::rom_info_data(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
    let notes = info.notes.join("\n");
    assert!(
        notes.contains("262144 bytes (256 KiB) but SH7055 ROMs are 524288 bytes"),
        "{notes}"
    );
    assert!(notes.contains("tables lie outside this image"), "{notes}");
    let list = tools::list_tables(
        &mut ex,
        &cfg,
        &tools::ListTables {
            rom: rom.to_string_lossy().into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(list.contains("tables lie outside this image"), "{list}");
    let _ = std::fs::remove_dir_all(&work);
}

/// Issue 17 #8: diff_tables shows what a switch or bit changed to, not
/// `max |delta| 0` (the Magna H8 periphery bits and a bloblist switch).
#[test]
fn shared_diff_reports_switch_and_bit_changes_as_states() {
    let Some(root) = realworld() else { return };
    let dir = root.join("mitsubishi_magna");
    let work = scratch("diff");
    let id = find_leaf(&dir, "22490005");
    let mut image = vec![0u8; 0x2_0000];
    stamp_id(&mut image, &id, 0x1_0000);
    let stock = work.join("stock.hex");
    let tuned = work.join("tuned.hex");
    write_rom(&stock, &image);
    write_rom(&tuned, &image);
    let cfg = Config::with_definitions(&dir);
    let mut ex = explorer();
    let def = tools::open(&mut ex, &cfg, tuned.to_str().unwrap())
        .unwrap()
        .definition
        .unwrap();
    let bits = tools::find_table(&def, "ECU Periphery 00 Bits [SH2=F9A, H8=262]").unwrap();
    assert!(bits.swapxy && matches!(bits.scaling.kind, Kind::Bit));
    let switch = def
        .tables
        .iter()
        .find(|t| {
            matches!(&t.scaling.kind, Kind::Blobs(c)
                    if c.iter().filter(|(n, _)| !n.trim().is_empty()).count() >= 2)
        })
        .expect("a switch");
    let Kind::Blobs(choices) = &switch.scaling.kind else {
        unreachable!()
    };
    let stock_state = read_table(switch, &ex_bytes(&mut ex, &cfg, &stock))
        .unwrap()
        .display(0, 0);
    let (new_choice, _) = choices
        .iter()
        .find(|(n, _)| *n != stock_state && !n.trim().is_empty())
        .unwrap();
    let mut set_bit = patch_args(&tuned, &bits.id, 1.0);
    set_bit.row = Some(1);
    tools::patch_table(&mut ex, &cfg, &set_bit).unwrap();
    let choose = tools::PatchTable {
        value: None,
        choice: Some(new_choice.clone()),
        ..patch_args(&tuned, &switch.id, 0.0)
    };
    tools::patch_table(&mut ex, &cfg, &choose).unwrap();
    let summary = tools::diff_tables(
        &mut ex,
        &cfg,
        &tools::DiffTables {
            rom: stock.to_string_lossy().into(),
            other: tuned.to_string_lossy().into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!summary.contains("axes differ"), "{summary}");
    let row = |doc: &str, name: &str| -> Vec<String> {
        doc.lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("no row {name} in {doc}"))
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    assert_eq!(
        row(&summary, &bits.id)[3..5],
        ["1", "off → on"],
        "{summary}"
    );
    assert_eq!(
        row(&summary, &switch.id)[4],
        format!("{stock_state} → {new_choice}"),
        "{summary}"
    );

    let cells = tools::diff_tables(
        &mut ex,
        &cfg,
        &tools::DiffTables {
            rom: stock.to_string_lossy().into(),
            other: tuned.to_string_lossy().into(),
            table: Some(bits.id.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let line: Vec<String> = cells
        .lines()
        .find(|l| l.starts_with("| 1 "))
        .unwrap_or_else(|| panic!("{cells}"))
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    assert_eq!(
        line[1..8],
        ["1", "0", "bit.14", "0", "0", "1", "off → on"],
        "{cells}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

fn ex_bytes(ex: &mut Explorer, cfg: &Config, rom: &Path) -> Vec<u8> {
    tools::open(ex, cfg, rom.to_str().unwrap())
        .unwrap()
        .bytes
        .to_vec()
}

/// Issue 17 named a RomRaider-format file (RR_EA1M511A.xml) among the
/// definitions as RomRaider's. Since issue 31 the RomRaider family is a
/// component of its own (plugins/romraider; tests/ecu_tables.rs reads this
/// file through it); without it, ecu-tables alone names the file's format
/// and says to add the family, rather than ignore the file.
#[test]
fn shared_romraider_definitions_are_named_without_their_family() {
    let Some(root) = realworld() else { return };
    let work = scratch("romraider");
    let defs = work.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::copy(root.join("RR_EA1M511A.xml"), defs.join("RR_EA1M511A.xml")).unwrap();
    let mut image = vec![0u8; 0x10_0000];
    image[0x8000..0x8008].copy_from_slice(b"EA1M511A");
    let rom = work.join("EA1M511A.bin");
    write_rom(&rom, &image);
    let cfg = Config::with_definitions(&defs);
    let mut ex = common::ecuflash_only();
    let info = tools::rom_info_data(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
    assert_eq!(info.definition, None);
    assert!(
        info.notes
            .iter()
            .any(|n| n.contains("RR_EA1M511A.xml (RomRaider)") && n.contains("family component")),
        "{:?}",
        info.notes
    );
    // Parsed as ECUFlash, the file is still named for what it is.
    let text = std::fs::read_to_string(root.join("RR_EA1M511A.xml")).unwrap();
    let err = ecuflash::xml::parse_definition(&text).unwrap_err();
    assert!(err.starts_with("this is a RomRaider definition"), "{err}");
    let _ = std::fs::remove_dir_all(&work);
}
