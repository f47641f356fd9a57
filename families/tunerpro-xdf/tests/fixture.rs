//! The real MSS54 XDF (1.50, Latin-1, no XML declaration), counted
//! independently of the reader by a plain text scan.

use std::collections::BTreeMap;
use std::path::PathBuf;
use tunerpro_xdf::bindings::exports::benchtop::ecu_family::family::{
    Definition, ImageId, Points, Storage, StoredPoints, Table,
};
use tunerpro_xdf::convert::{claims, identify, resolve};

const NAME: &str = "hw2801_V4_Basic.xdf";

fn fixture() -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/realworld/ecu-families/tunerpro_xdf")
        .join(NAME);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            eprintln!("skipped: fixture {} not readable ({e})", path.display());
            None
        }
    }
}

/// One item as a text scan sees it: kind, title, and whether the element
/// holding its values has an `mmedaddress`.
struct Scanned {
    kind: &'static str,
    title: String,
    addressed: bool,
}

/// Finds every XDFTABLE / XDFCONSTANT / XDFFUNCTION by string search, not
/// by XML parsing, so the reader's counts are checked against something
/// that does not share its code.
fn scan(text: &str) -> Vec<Scanned> {
    let mut found: Vec<(usize, Scanned)> = Vec::new();
    for kind in ["XDFTABLE", "XDFCONSTANT", "XDFFUNCTION"] {
        let open = format!("<{kind} ");
        let close = format!("</{kind}>");
        let mut from = 0;
        while let Some(at) = text[from..].find(&open) {
            let start = from + at;
            let end = start + text[start..].find(&close).expect("closed item");
            let block = &text[start..end];
            let title = block
                .split_once("<title>")
                .and_then(|(_, rest)| rest.split_once("</title>"))
                .map(|(t, _)| t.to_string())
                .unwrap_or_default();
            let values = match kind {
                "XDFTABLE" => axis_block(block, "z"),
                "XDFFUNCTION" => axis_block(block, "y"),
                _ => block,
            };
            found.push((
                start,
                Scanned {
                    kind,
                    title,
                    addressed: values.contains("mmedaddress="),
                },
            ));
            from = end;
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, s)| s).collect()
}

fn axis_block<'t>(block: &'t str, id: &str) -> &'t str {
    let open = format!("<XDFAXIS id=\"{id}\"");
    let start = block.find(&open).expect("axis present");
    let end = start + block[start..].find("</XDFAXIS>").expect("axis closed");
    &block[start..end]
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

fn stored(points: &Points) -> &StoredPoints {
    match points {
        Points::Stored(s) => s,
        Points::Labels(l) => panic!("labels {l:?}, expected stored points"),
    }
}

fn table<'d>(def: &'d Definition, name: &str) -> &'d Table {
    def.tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no table {name}"))
}

#[test]
fn shared_mss54_xdf_reads_completely() {
    let Some(bytes) = fixture() else { return };
    assert!(claims(NAME, &bytes[..16 * 1024]));

    let candidates = identify(NAME, &bytes).unwrap();
    assert_eq!(candidates.len(), 1);
    let c = &candidates[0];
    assert_eq!(c.title, "M3 MSS54 DME");
    assert!(matches!(c.id, ImageId::Length(0x8000)), "{:?}", c.id);
    let field = |k: &str| {
        c.fields
            .iter()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(field("format"), Some("XDF 1.50"));
    assert_eq!(field("author"), Some("OpenSource MSS54 Project"));
    assert_eq!(
        field("description"),
        Some("Search Based on XDFoutBFMV3_hw2801_V4_BasicT.xdf File")
    );

    let def = resolve(NAME, &bytes, &c.key).unwrap();
    assert_eq!(def.chain, vec![NAME.to_string()]);

    // Walk the scanned items and the answer together, in document order:
    // each item is either the next table or the next unreadable one.
    let items = scan(&latin1(&bytes));
    assert_eq!(items.len(), 147 + 374 + 106);
    let (mut t, mut u) = (0, 0);
    let mut readable: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for item in &items {
        if def.tables.get(t).is_some_and(|x| x.name == item.title) {
            assert!(item.addressed, "{} read without an address", item.title);
            *readable.entry(item.kind).or_default() += 1;
            t += 1;
        } else {
            let (name, why) = &def.unreadable[u];
            assert_eq!(name, &item.title, "order of items");
            assert_eq!(
                why == "no address (a section heading)",
                !item.addressed,
                "{name}: {why}"
            );
            reasons
                .entry(why.clone())
                .or_default()
                .push(format!("{} {name}", item.kind));
            u += 1;
        }
    }
    assert_eq!((t, u), (def.tables.len(), def.unreadable.len()));
    eprintln!("readable by kind: {readable:?}");
    for (why, names) in &reasons {
        eprintln!("unreadable ({}): {why}: {names:?}", names.len());
    }
    let headings: Vec<_> = items.iter().filter(|i| !i.addressed).collect();
    let count = |kind| headings.iter().filter(|i| i.kind == kind).count();
    assert_eq!(
        (
            count("XDFTABLE"),
            count("XDFCONSTANT"),
            count("XDFFUNCTION")
        ),
        (15, 17, 9)
    );
    assert_eq!(reasons["no address (a section heading)"].len(), 41);
    // The one other fault in the file: an equation with an unmatched `)`,
    // which TunerPro may forgive but which cannot be read exactly.
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    let unbalanced = reasons
        .iter()
        .find(|(why, _)| why.contains("unexpected `)`"))
        .expect("the unbalanced equation");
    assert_eq!(unbalanced.1.len(), 2);
    assert_eq!(readable["XDFTABLE"], 132);
    assert_eq!(readable["XDFFUNCTION"], 97);
    assert_eq!(readable["XDFCONSTANT"], 357 - 2);
    // Every address lies inside the 0x8000-byte bin (checked by the reader).
    assert!(def.tables.iter().all(|t| t.address < 0x8000));

    // A grid: 3 rows × 18 columns of u8, axes u16 big-endian.
    let kf = table(&def, "KF_TI_N_RF_VL");
    assert_eq!(kf.address, 0xB32);
    assert_eq!(kf.scaling.storage, Storage::Uint8);
    assert_eq!(kf.scaling.to_physical, "x/128");
    assert_eq!(kf.scaling.from_physical.as_deref(), Some("x*128"));
    assert_eq!((kf.scaling.min, kf.scaling.max), (Some(0.0), Some(1.0)));
    assert_eq!(kf.scaling.format.as_deref(), Some("%0.2f"));
    assert_eq!(kf.category.as_deref(), Some("Injection (Einspritzung)"));
    assert!(!kf.column_major);
    let rows = stored(&kf.rows.as_ref().unwrap().points);
    assert_eq!((rows.address, rows.count), (0xB2C, 3));
    assert_eq!(rows.scaling.storage, Storage::Uint16);
    assert!(!rows.scaling.little_endian);
    assert_eq!(rows.scaling.to_physical, "x/1000");
    assert_eq!(rows.scaling.units.as_deref(), Some("-"));
    let cols = stored(&kf.columns.as_ref().unwrap().points);
    assert_eq!((cols.address, cols.count), (0xB08, 18));
    assert_eq!(cols.scaling.storage, Storage::Uint16);
    assert_eq!(cols.scaling.units.as_deref(), Some("Upm"));

    // A function: a one-axis table of 33 signed cells.
    let hfm = table(&def, "KL_HFM_ML_U");
    assert_eq!(hfm.address, 0x608C);
    assert_eq!(hfm.scaling.storage, Storage::Int16);
    assert_eq!(hfm.scaling.to_physical, "x/4");
    assert_eq!(hfm.scaling.from_physical.as_deref(), Some("x*4"));
    // The XDF gives the y axis no <units>; "kg/h" is only in its description.
    assert_eq!(hfm.scaling.units, None);
    assert!(hfm.columns.is_none());
    let axis = stored(&hfm.rows.as_ref().unwrap().points);
    assert_eq!((axis.address, axis.count), (0x604A, 33));
    assert_eq!(axis.scaling.storage, Storage::Uint16);
    assert_eq!(axis.scaling.to_physical, "x/1023*5");
    assert_eq!(axis.scaling.from_physical.as_deref(), Some("x/5*1023"));
    assert_eq!(axis.scaling.units.as_deref(), Some("V"));

    // A non-linear scaling is read-only, not refused.
    let reciprocal: Vec<_> = def
        .tables
        .iter()
        .filter(|t| t.scaling.to_physical == "25.6/x")
        .collect();
    assert!(!reciprocal.is_empty());
    assert!(reciprocal.iter().all(|t| t.scaling.from_physical.is_none()));
}
