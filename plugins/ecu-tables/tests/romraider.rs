//! The RomRaider reader against ../shared/fixtures/realworld/ecu-families:
//! two Subaru ROMs (AE5L500V, AE5I910V) described both by a RomRaider
//! document (child + 32BITBASE in one file) and by ECUFlash files. On one
//! synthetic image per ROM, every table both definitions name must read the
//! same physical values through the plugin's decode path, every RomRaider
//! table must read and patch, and the subarudbw checksum must verify after a
//! patch. Skips cleanly when the fixtures are absent. No ROM is stored.

use ecu_tables::checksum::Module;
use ecu_tables::decode::{Cell, TableData, read_table};
use ecu_tables::definition::{AxisSource, Definition, Lookup, Table};
use ecu_tables::memmodel;
use ecu_tables::patch::{self, Op, Target};
use ecu_tables::scaling::{Endian, Storage};
use ecu_tables::store::checksum_state;
use ecu_tables::tools::{self, Config};
use romraider::document as romraider;
use std::path::{Path, PathBuf};

mod common;
use common::{explorer, patch_round_trip, scratch};

/// (xmlid, RomRaider file) of each ROM described in both families.
const PAIRS: [(&str, &str); 2] = [
    ("AE5L500V", "AE5L500V_RR.xml"),
    ("AE5I910V", "romraider_AE5I910V.xml"),
];

/// Tables both definitions name whose reads differ because the two files
/// themselves differ (checked by hand in the XML): (xmlid, name, why).
/// None so far: every shared table reads the same.
const EXCLUDED: &[(&str, &str, &str)] = &[];

/// The same table under another name in the ECUFlash files (same address
/// in both children, checked by hand): (RomRaider name, ECUFlash name or
/// id). AE5I910V.xml names both P0000 switches (0x92942 and 0x92943)
/// `(P0000) PASS CODE (NO DTC DETECTED)_`; the RomRaider child names the
/// first without the trailing space, as AE5L500V's files both do.
const RENAMED: &[(&str, &str)] = &[
    ("Fuel Pump Duty Cycle", "Fuel Pump Duty"),
    (
        "(P0000) PASS CODE (NO DTC DETECTED)",
        "(P0000) PASS CODE (NO DTC DETECTED)_ @0x92942",
    ),
];

/// The ECUFlash table `key` names; of several sharing the name, the one at
/// `address`.
fn counterpart<'a>(def: &'a Definition, key: &str, address: u32) -> Option<&'a Table> {
    match def.table(key) {
        Lookup::Found(t) => Some(t),
        Lookup::Ambiguous(ids) => {
            let all: Vec<&Table> = ids
                .iter()
                .filter_map(|id| match def.table(id) {
                    Lookup::Found(t) => Some(t),
                    _ => None,
                })
                .collect();
            all.iter()
                .find(|t| t.address == address)
                .or(all.first())
                .copied()
        }
        Lookup::Missing(_) => None,
    }
}

fn families() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/realworld/ecu-families");
    if dir.join("romraider").is_dir() && dir.join("ecuflash").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

fn rr_definition(root: &Path, xmlid: &str, file: &str) -> Definition {
    let path = root.join("romraider").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        romraider::is_romraider(head(&text)),
        "{file}: first KiB not sniffed as RomRaider"
    );
    let doc = romraider::parse(&text).unwrap();
    doc.definition(xmlid, path).unwrap()
}

/// The first KiB of `text` (less, to end on a character).
fn head(text: &str) -> &str {
    let mut end = text.len().min(1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[test]
fn shared_only_romraider_files_are_sniffed_as_romraider() {
    let Some(root) = families() else { return };
    for (xmlid, file) in PAIRS {
        let rr = std::fs::read_to_string(root.join("romraider").join(file)).unwrap();
        assert!(romraider::is_romraider(head(&rr)), "{file}");
        assert!(romraider::is_romraider(&rr), "{file}");
        for name in [format!("{xmlid}.xml"), "32BITBASE.xml".to_string()] {
            let ef =
                std::fs::read_to_string(root.join("ecuflash").join(xmlid).join(&name)).unwrap();
            assert!(!romraider::is_romraider(head(&ef)), "{xmlid}/{name}");
            assert!(!romraider::is_romraider(&ef), "{xmlid}/{name}");
        }
    }
}

/// A deterministic byte stream (an LCG's high byte).
struct Lcg(u32);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        self.0
    }
    fn byte(&mut self) -> u8 {
        (self.next() >> 24) as u8
    }
}

/// Every float cell (tables and stored axes) of `def`: (address, endian).
fn float_cells(def: &Definition) -> Vec<(usize, Endian)> {
    let mut out = Vec::new();
    for t in &def.tables {
        if t.scaling.storage == Storage::F32 {
            for r in 0..t.rows() {
                for c in 0..t.cols() {
                    out.push((t.cell_offset(r, c), t.scaling.endian));
                }
            }
        }
        for axis in t.row_axis.iter().chain(t.col_axis.iter()) {
            if let AxisSource::Dynamic {
                address,
                elements,
                scaling,
            } = &axis.source
                && scaling.storage == Storage::F32
            {
                for i in 0..*elements {
                    out.push((*address as usize + 4 * i, scaling.endian));
                }
            }
        }
    }
    out
}

/// Writes a 14-entry-plus Subaru checksum table at `base` like the real
/// ROMs' (0..=0x1FFF, 0x2000..=0xFFAF7, the rest disabled) and fixes it.
fn stamp_checksums(image: &mut [u8], base: usize) {
    let ranges = [(0u32, 0x1FFFu32), (0x2000, (image.len() - 0x509) as u32)];
    for i in 0..17 {
        let (s, e) = ranges.get(i).copied().unwrap_or((0, 0));
        let at = base + i * 12;
        image[at..at + 4].copy_from_slice(&s.to_be_bytes());
        image[at + 4..at + 8].copy_from_slice(&e.to_be_bytes());
        image[at + 8..at + 12].copy_from_slice(&0x5AA5_A55Au32.to_be_bytes());
    }
    Module::SubaruDbw.fix(image).unwrap();
    assert!(Module::SubaruDbw.validate(image).unwrap());
}

/// One image for both definitions: pseudo-random bytes, finite floats at
/// every float cell of either, the internal id, a valid checksum table.
fn synthetic_image(defs: &[&Definition]) -> Vec<u8> {
    let size = defs[0]
        .memmodel()
        .and_then(memmodel::by_name)
        .map(|m| m.size)
        .expect("a memory model with a known size");
    let mut lcg = Lcg(0x5EED_1234);
    let mut image: Vec<u8> = (0..size).map(|_| lcg.byte()).collect();
    for def in defs {
        for (at, endian) in float_cells(def) {
            // Finite values of every sign and a wide range of magnitudes.
            let mantissa = (lcg.next() >> 8) as f64 / f64::from(1u32 << 24);
            let exp = (lcg.next() % 24) as i32 - 8;
            let sign = if lcg.next() & 1 == 0 { 1.0 } else { -1.0 };
            let v = sign * (1.0 + mantissa) * 2f64.powi(exp);
            Storage::F32.write(endian, v, &mut image[at..at + 4]);
        }
    }
    let id = &defs[0].romid;
    let addr =
        ecu_tables::definition::parse_hex(id.internal_id_address.as_deref().unwrap()).unwrap();
    let bytes = id.internal_id_string.clone().unwrap().into_bytes();
    image[addr as usize..addr as usize + bytes.len()].copy_from_slice(&bytes);
    stamp_checksums(&mut image, size - 0x480);
    image
}

/// The ECUFlash definition of `xmlid` as the store resolves it for `image`.
fn ecuflash_definition(root: &Path, xmlid: &str, image: &[u8], work: &Path) -> Definition {
    let cfg = Config::with_definitions(root.join("ecuflash").join(xmlid));
    let rom = work.join(format!("{xmlid}.bin"));
    std::fs::write(&rom, image).unwrap();
    let mut ex = explorer();
    let opened = tools::open(&mut ex, &cfg, rom.to_str().unwrap()).unwrap();
    assert_eq!(&opened.bytes[..], image, "a plain image is read as is");
    let def = opened
        .definition
        .unwrap_or_else(|| panic!("{xmlid}: ECUFlash did not match: {:?}", opened.tried));
    assert_eq!(def.romid.xmlid.as_deref(), Some(xmlid));
    def.as_ref().clone()
}

/// Equal within 1e-9 relative (NaN equals NaN: both files agree on it).
fn close(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Where two reads of one table differ, in a sentence; static label texts
/// (not physical values) and switch choice names are only noted.
fn compare(rr: &TableData, ef: &TableData, notes: &mut Vec<String>) -> Result<(), String> {
    if (rr.rows, rr.cols) != (ef.rows, ef.cols) {
        return Err(format!(
            "size {}x{} vs {}x{}",
            rr.cols, rr.rows, ef.cols, ef.rows
        ));
    }
    for r in 0..rr.rows {
        for c in 0..rr.cols {
            match (rr.cell(r, c), ef.cell(r, c)) {
                (Cell::Num(a), Cell::Num(b)) if close(*a, *b) => {}
                (Cell::Blob(na, a), Cell::Blob(nb, b)) if a == b => {
                    if na != nb {
                        notes.push(format!("choice {na:?} vs {nb:?}"));
                    }
                }
                (a, b) => return Err(format!("cell [{r},{c}] {a:?} vs {b:?}")),
            }
        }
    }
    for (which, a, b) in [
        ("row", &rr.row_axis, &ef.row_axis),
        ("column", &rr.col_axis, &ef.col_axis),
    ] {
        match (a, b) {
            (None, None) => {}
            (Some(a), Some(b)) => match (&a.values, &b.values) {
                (Some(va), Some(vb)) => {
                    if let Some(i) = (0..va.len()).find(|&i| !close(va[i], vb[i])) {
                        return Err(format!("{which} axis [{i}] {} vs {}", va[i], vb[i]));
                    }
                }
                (None, None) => {
                    if a.labels != b.labels {
                        notes.push(format!("{which} labels {:?} vs {:?}", a.labels, b.labels));
                    }
                }
                _ => return Err(format!("{which} axis stored in one, static in the other")),
            },
            _ => return Err(format!("{which} axis in only one")),
        }
    }
    Ok(())
}

/// ECUFlash spells RomRaider's trailing spaces as underscores
/// (`Target Boost ` is `Target Boost_`).
fn ecuflash_spelling(name: &str) -> String {
    let trimmed = name.trim_end_matches(' ');
    format!("{trimmed}{}", "_".repeat(name.len() - trimmed.len()))
}

#[test]
fn shared_romraider_and_ecuflash_read_the_same_values() {
    let Some(root) = families() else { return };
    let work = scratch("compare");
    let mut problems = Vec::new();
    for (xmlid, file) in PAIRS {
        let rr = rr_definition(&root, xmlid, file);
        // The image needs the ECUFlash definition's float cells too: resolve
        // it once on the RomRaider-only image, then again on the final one.
        let probe = synthetic_image(&[&rr]);
        let ef0 = ecuflash_definition(&root, xmlid, &probe, &work);
        let image = synthetic_image(&[&rr, &ef0]);
        let ef = ecuflash_definition(&root, xmlid, &image, &work);

        let (mut exact, mut underscored, mut renamed) = (0, 0, 0);
        let (mut equal, mut excluded, mut cells) = (0, 0, 0usize);
        let mut unpaired = Vec::new();
        let mut differ = Vec::new();
        let mut notes = Vec::new();
        for t in &rr.tables {
            let renamed_to = RENAMED.iter().find(|(r, _)| *r == t.name).map(|p| p.1);
            let other = if let Some(o) = counterpart(&ef, &t.name, t.address) {
                exact += 1;
                o
            } else if let Some(o) = counterpart(&ef, &ecuflash_spelling(&t.name), t.address)
                .filter(|_| t.name.ends_with(' '))
            {
                underscored += 1;
                o
            } else if let Some(o) = renamed_to.and_then(|e| counterpart(&ef, e, t.address)) {
                renamed += 1;
                o
            } else {
                unpaired.push(t.name.as_str());
                continue;
            };
            let a = read_table(t, &image).unwrap();
            let b = read_table(other, &image).unwrap();
            cells += a.cells.len()
                + [&a.row_axis, &a.col_axis]
                    .iter()
                    .filter_map(|x| x.as_ref()?.values.as_ref().map(Vec::len))
                    .sum::<usize>();
            let mut table_notes = Vec::new();
            let outcome = compare(&a, &b, &mut table_notes);
            notes.extend(
                table_notes
                    .into_iter()
                    .map(|n| format!("{xmlid} `{}`: {n}", t.name)),
            );
            let exclusion = EXCLUDED
                .iter()
                .find(|(x, n, _)| *x == xmlid && *n == t.name);
            match (outcome, exclusion) {
                (Ok(()), None) => equal += 1,
                (Ok(()), Some(_)) => differ.push(format!(
                    "{xmlid} `{}`: excluded but reads equal; drop the exclusion",
                    t.name
                )),
                (Err(_), Some(_)) => excluded += 1,
                (Err(e), None) => differ.push(format!(
                    "{xmlid} `{}` (0x{:X} vs 0x{:X}): {e}",
                    t.name, t.address, other.address
                )),
            }
        }
        eprintln!(
            "{xmlid}: RomRaider {} tables ({} unresolvable), ECUFlash {} tables; shared {exact} by exact name + {underscored} by ECUFlash's `_` for a trailing space + {renamed} renamed; compared {} ({cells} cells and breakpoints), equal {equal}, excluded {excluded}, differ {}",
            rr.tables.len(),
            rr.unresolvable.len(),
            ef.tables.len(),
            exact + underscored + renamed,
            differ.len()
        );
        for n in notes.iter().take(20) {
            eprintln!("  note: {n}");
        }
        // Every RomRaider table but the Checksum Fix (which the ECUFlash
        // children do not address) has its ECUFlash counterpart.
        assert_eq!(
            unpaired,
            ["Checksum Fix"],
            "{xmlid}: RomRaider tables unpaired"
        );

        // The comparison is not vacuous: one changed byte is seen.
        let t = rr
            .tables
            .iter()
            .find(|t| t.name == "Target Boost ")
            .unwrap();
        let mut changed = image.clone();
        changed[t.address as usize + 1] ^= 0x10;
        let other = counterpart(&ef, "Target Boost_", t.address).unwrap();
        assert!(
            compare(
                &read_table(t, &changed).unwrap(),
                &read_table(other, &image).unwrap(),
                &mut Vec::new()
            )
            .is_err()
        );
        problems.extend(differ);
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        problems.is_empty(),
        "{} tables read differently:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn shared_every_romraider_table_reads_patches_and_keeps_the_checksum() {
    let Some(root) = families() else { return };
    let mut problems = Vec::new();
    for (xmlid, file) in PAIRS {
        let def = rr_definition(&root, xmlid, file);
        let mut image = synthetic_image(&[&def]);

        // RomRaider skips the child's tables its bases lack (33 DTC
        // switches in AE5L500V_RR.xml), and nothing else is unreadable.
        for (name, why) in &def.unresolvable {
            if !(name.starts_with('(') && why.contains("Table type unspecified")) {
                problems.push(format!("{xmlid}: unresolvable `{name}`: {why}"));
            }
        }
        if xmlid == "AE5L500V" {
            assert_eq!(def.unresolvable.len(), 33, "{:?}", def.unresolvable);
        }
        for t in &def.tables {
            if let Err(e) = read_table(t, &image) {
                problems.push(format!("{xmlid}: `{}`: {e}", t.id));
            }
        }
        problems.extend(
            patch_round_trip(&def, &image)
                .into_iter()
                .map(|f| format!("{xmlid}: {f}")),
        );

        // The Checksum Fix table sits where subarudbw looks on a 1 MiB
        // SH7058 image, so the definition names subarudbw.
        let fix = tools::find_table(&def, "Checksum Fix").unwrap();
        assert_eq!(fix.address as usize, image.len() - 0x480, "{xmlid}");
        assert_eq!(fix.address, 0xF_FB80, "{xmlid}");
        assert_eq!(
            fix.scaling.storage,
            Storage::Blob(168),
            "{xmlid}: 14 entries"
        );
        assert_eq!(def.checksum_module(), Some("subarudbw"), "{xmlid}");

        // A patch through the tools' sequence (apply, then fix the
        // checksum the definition names, then verify) on a 3D table.
        let before_state = checksum_state(Some(&def), &image);
        assert_eq!(
            before_state.algorithm.as_deref(),
            Some(Module::SubaruDbw.name())
        );
        assert_eq!(before_state.valid, Some(true), "{before_state:?}");
        let t = tools::find_table(&def, "Target Boost ").unwrap();
        assert_eq!(
            t.dimensions(),
            "14x14",
            "{xmlid}: the child resizes the base table"
        );
        let before = read_table(t, &image).unwrap();
        let target = before.raw[0] + if before.raw[0] < 60_000.0 { 7.0 } else { -7.0 };
        let value = t.scaling.to_physical(target);
        patch::apply(
            t,
            &before,
            &mut image,
            &Op::Set(value),
            &Target::cell(0, 0),
            true,
        )
        .unwrap();
        assert_eq!(
            checksum_state(Some(&def), &image).valid,
            Some(false),
            "{xmlid}: the patch is inside a summed range"
        );
        let module = before_state.module.unwrap();
        module.fix(&mut image).unwrap();
        assert!(module.validate(&image).unwrap(), "{xmlid}");
        assert_eq!(checksum_state(Some(&def), &image).valid, Some(true));
        let after = read_table(t, &image).unwrap();
        assert!(
            (after.value(0, 0) - value).abs() < 1e-9,
            "{xmlid}: read back {} for {value}",
            after.value(0, 0)
        );
        assert_eq!(after.raw[0], target);
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
