//! Definitions folders as users keep them (issue 38, items 8–12): several
//! definitions matching one ROM, several copies of one base, files in
//! formats no loaded family reads, long lists of unreadable tables.

mod common;

use common::{explorer, scratch};
use ecu_tables::Config;
use ecu_tables::tools::{self, ListTables};
use std::fs;
use std::path::Path;

/// A stock definition with id `STOCK001` at 0x2004 and one table at 0x100,
/// and a "MerpMod" child sharing the id that includes it and adds a table.
fn stock_and_merpmod(dir: &Path) {
    fs::write(
        dir.join("STOCK001.xml"),
        r#"<rom><romid><xmlid>STOCK001</xmlid><internalidaddress>2004</internalidaddress>
        <internalidstring>STOCK001</internalidstring><make>Subaru</make></romid>
        <scaling name="raw" storagetype="uint8" toexpr="x" frexpr="x"/>
        <table name="Idle" address="100" type="1D" scaling="raw"/></rom>"#,
    )
    .unwrap();
    fs::write(
        dir.join("STOCK001_MeRpMoD.xml"),
        r#"<rom><romid><xmlid>STOCK001_MERPMOD</xmlid><internalidaddress>2004</internalidaddress>
        <internalidstring>STOCK001</internalidstring></romid><include>STOCK001</include>
        <table name="Map Switch" address="200" type="1D" scaling="raw"/></rom>"#,
    )
    .unwrap();
}

fn image(dir: &Path) -> String {
    let mut rom = vec![0u8; 0x4000];
    rom[0x2004..0x200C].copy_from_slice(b"STOCK001");
    rom[0x100] = 7;
    let path = dir.join("car.bin");
    fs::write(&path, rom).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn two_matching_definitions_are_named_and_the_other_can_be_chosen() {
    let dir = scratch("two-matches");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    stock_and_merpmod(&defs);
    let rom = image(&dir);
    let cfg = Config::with_definitions(&defs);
    let mut ex = explorer();
    let info = tools::rom_info(&mut ex, &cfg, &rom).unwrap();
    assert!(info.contains("definition: STOCK001_MERPMOD"), "{info}");
    assert!(
        info.contains("2 definitions match this ROM")
            && info.contains("pass definition: \\\"STOCK001\\\" to use another"),
        "{info}"
    );
    ex.choose(Some("stock001".into()));
    let info = tools::rom_info(&mut ex, &cfg, &rom).unwrap();
    assert!(info.contains("definition: STOCK001\n"), "{info}");
    assert!(info.contains("using STOCK001 as asked"), "{info}");
    let listed = tools::list_tables(
        &mut ex,
        &cfg,
        &ListTables {
            rom: rom.clone(),
            category: None,
            search: None,
            offset: None,
            limit: None,
        },
    )
    .unwrap();
    assert!(!listed.contains("Map Switch"), "{listed}");
    ex.choose(Some("NOPE".into()));
    let err = tools::rom_info(&mut ex, &cfg, &rom)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("definition `NOPE` does not match this ROM")
            && err.contains("\"STOCK001_MERPMOD\""),
        "{err}"
    );
    ex.choose(None);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_base_kept_in_several_folders_resolves_beside_its_child_and_says_so() {
    let dir = scratch("base-copies");
    let defs = dir.join("defs");
    for (folder, address) in [("alice", "100"), ("bob", "180")] {
        let sub = defs.join(folder);
        fs::create_dir_all(&sub).unwrap();
        // The same xmlid, different revisions: the table moved.
        fs::write(
            sub.join("32BITBASE.xml"),
            format!(
                r#"<rom><romid><xmlid>32BITBASE</xmlid></romid>
                <scaling name="raw" storagetype="uint8" toexpr="x" frexpr="x"/>
                <table name="Idle" address="{address}" type="1D" scaling="raw"/></rom>"#
            ),
        )
        .unwrap();
    }
    fs::write(
        defs.join("bob/STOCK001.xml"),
        r#"<rom><romid><xmlid>STOCK001</xmlid><internalidaddress>2004</internalidaddress>
        <internalidstring>STOCK001</internalidstring></romid><include>32BITBASE</include></rom>"#,
    )
    .unwrap();
    let rom = image(&dir);
    let cfg = Config::with_definitions(&defs);
    let mut ex = explorer();
    let info = tools::rom_info(&mut ex, &cfg, &rom).unwrap();
    assert!(
        info.contains("2 files have <xmlid>32BITBASE</xmlid>")
            && info.contains("bob/32BITBASE.xml, the one nearest it"),
        "{info}"
    );
    let opened = tools::open(&mut ex, &cfg, &rom).unwrap();
    let def = opened.definition.unwrap();
    assert_eq!(def.tables[0].address, 0x180, "bob's base, beside the child");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn definition_files_no_family_reads_are_named_with_what_to_do() {
    let dir = scratch("unread");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    for i in 0..7 {
        fs::write(defs.join(format!("car{i}.xdf")), "<XDFFORMAT/>").unwrap();
    }
    let rom = image(&dir);
    let cfg = Config::with_definitions(&defs);
    let info = tools::rom_info(&mut explorer(), &cfg, &rom).unwrap();
    assert!(
        info.contains("7 definition files here are in a format no loaded family reads")
            && info.contains("car0.xdf (TunerPro XDF)")
            && info.contains("and 2 more")
            && info.contains("plugins directory"),
        "{info}"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn long_lists_of_unreadable_tables_say_how_many_more() {
    let dir = scratch("unreadable");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    let mut xml = String::from(
        r#"<rom><romid><xmlid>STOCK001</xmlid><internalidaddress>2004</internalidaddress>
        <internalidstring>STOCK001</internalidstring></romid>"#,
    );
    for i in 0..13 {
        // No scaling: unreadable, with the reason.
        xml.push_str(&format!(
            r#"<table name="T{i}" address="{:x}" type="1D" scaling="missing"/>"#,
            0x100 + i
        ));
    }
    xml.push_str("</rom>");
    fs::write(defs.join("STOCK001.xml"), xml).unwrap();
    let rom = image(&dir);
    let cfg = Config::with_definitions(&defs);
    let listed = tools::list_tables(
        &mut explorer(),
        &cfg,
        &ListTables {
            rom,
            category: None,
            search: None,
            offset: None,
            limit: None,
        },
    )
    .unwrap();
    assert!(listed.contains("unreadable_tables: 13"), "{listed}");
    assert!(listed.contains("and 3 more"), "{listed}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_folder_holding_only_a_zip_says_to_unpack_it() {
    let dir = scratch("zip");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    fs::write(defs.join("SubaruDefs-master.zip"), b"PK\x03\x04").unwrap();
    let rom = image(&dir);
    let cfg = Config::with_definitions(&defs);
    let info = tools::rom_info(&mut explorer(), &cfg, &rom).unwrap();
    assert!(
        info.contains("holds 1 archive (SubaruDefs-master.zip)") && info.contains("unpack it"),
        "{info}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// `image` as Intel HEX: 16-byte data records under type-04 extensions.
fn intel_hex(image: &[u8]) -> String {
    let mut out = String::new();
    let record = |kind: u8, address: u16, data: &[u8]| {
        let mut bytes = vec![data.len() as u8, (address >> 8) as u8, address as u8, kind];
        bytes.extend_from_slice(data);
        let sum = bytes
            .iter()
            .fold(0u8, |s, b| s.wrapping_add(*b))
            .wrapping_neg();
        bytes.push(sum);
        let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
        format!(":{hex}\n")
    };
    for (i, chunk) in image.chunks(16).enumerate() {
        let address = i * 16;
        if address % 0x1_0000 == 0 {
            out.push_str(&record(
                4,
                0,
                &[(address >> 24) as u8, (address >> 16) as u8],
            ));
        }
        out.push_str(&record(0, address as u16, chunk));
    }
    out.push_str(":00000001FF\n");
    out
}

#[test]
fn an_intel_hex_image_reads_and_is_patched_as_intel_hex() {
    let dir = scratch("ihex");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    stock_and_merpmod(&defs);
    fs::remove_file(defs.join("STOCK001_MeRpMoD.xml")).unwrap();
    let mut rom = vec![0u8; 0x4000];
    rom[0x2004..0x200C].copy_from_slice(b"STOCK001");
    rom[0x100] = 7;
    let path = dir.join("car.hex");
    fs::write(&path, intel_hex(&rom)).unwrap();
    let rom_s = path.to_string_lossy().into_owned();
    let cfg = Config::with_definitions(&defs);
    let mut ex = explorer();
    let info = tools::rom_info(&mut ex, &cfg, &rom_s).unwrap();
    assert!(
        info.contains("definition: STOCK001\n") && info.contains("Intel HEX file"),
        "{info}"
    );
    let args = tools::PatchTable {
        rom: rom_s.clone(),
        table: "Idle".into(),
        op: tools::OpKind::Set,
        value: Some(9.0),
        min: None,
        max: None,
        row: None,
        col: None,
        choice: None,
        force: false,
        rows_where: None,
        cols_where: None,
        cells: None,
    };
    tools::patch_table(&mut ex, &cfg, &args).unwrap();
    let written = fs::read_to_string(&path).unwrap();
    let mut expected = rom.clone();
    expected[0x100] = 9;
    assert_eq!(
        written,
        intel_hex(&expected),
        "written back as the same records"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_definition_given_as_the_rom_is_named_for_what_it_is() {
    let dir = scratch("def-as-rom");
    let defs = dir.join("defs");
    fs::create_dir(&defs).unwrap();
    stock_and_merpmod(&defs);
    let cfg = Config::with_definitions(&defs);
    for (name, text, what) in [
        (
            "STOCK001.xml",
            "<?xml version=\"1.0\"?><rom/>",
            "a definition (XML) file",
        ),
        (
            "m3.xdf",
            "<XDFFORMAT version=\"1.50\">",
            "a TunerPro XDF definition",
        ),
        (
            "ecu.a2l",
            "ASAP2_VERSION 1 71\n/begin PROJECT",
            "an ASAM A2L description",
        ),
    ] {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        let err = tools::rom_info(&mut explorer(), &cfg, &path.to_string_lossy())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(what) && err.contains("not a ROM image"),
            "{err}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}
