//! A made-up XDF 1.60 exercising what the real fixture lacks: a subtracted
//! base offset, LSB-first, signed, float and column-major data, linked and
//! label axes, and items that must end in `unreadable`.

use tunerpro_xdf::bindings::exports::benchtop::ecu_family::family::{
    Checksum, Definition, ImageId, Points, Storage, StoredPoints, Table,
};
use tunerpro_xdf::convert::{claims, identify, identify_head, resolve};

const XDF: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by hand for the tests -->
<XDFFORMAT version="1.60">
  <XDFHEADER>
    <flags>0x1</flags>
    <fileversion>2</fileversion>
    <deftitle>Synthetic 1.60</deftitle>
    <description>First line&#013;&#010;second line</description>
    <author>benchtop</author>
    <BASEOFFSET offset="0x8000" subtract="1" />
    <DEFAULTS datasizeinbits="8" sigdigits="2" outputtype="1" signed="0" lsbfirst="1" float="0" />
    <REGION type="0xFFFFFFFF" startaddress="0x0" size="0x1000" regionflags="0x0" name="Binary File" desc="" />
    <CATEGORY index="0x0" name="Fuel" />
    <CATEGORY index="0x1" name="Axes" />
  </XDFHEADER>
  <XDFTABLE uniqueid="0x100" flags="0x0">
    <title>RPM axis</title>
    <CATEGORYMEM index="0" category="2" />
    <CATEGORYMEM index="1" category="1" />
    <XDFAXIS id="x" uniqueid="0x0">
      <EMBEDDEDDATA mmedelementsizebits="16" mmedmajorstridebits="-32" />
      <indexcount>4</indexcount>
      <LABEL index="2" value="c" />
      <LABEL index="0" value="a" />
      <LABEL index="1" value="b" />
      <LABEL index="3" value="" />
    </XDFAXIS>
    <XDFAXIS id="y" uniqueid="0x0">
      <EMBEDDEDDATA mmedelementsizebits="16" mmedmajorstridebits="-32" />
      <indexcount>1</indexcount>
      <LABEL index="0" value="" />
    </XDFAXIS>
    <XDFAXIS id="z">
      <EMBEDDEDDATA mmedtypeflags="0x02" mmedaddress="0x8100" mmedelementsizebits="16" mmedrowcount="1" mmedcolcount="4" />
      <units>rpm</units>
      <MATH equation="X*10"><VAR id="X" /></MATH>
    </XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x200" flags="0x0">
    <title>Timing map</title>
    <CATEGORYMEM index="0" category="1" />
    <XDFAXIS id="x" uniqueid="0x0">
      <EMBEDDEDDATA mmedelementsizebits="16" />
      <indexcount>4</indexcount>
      <embedinfo type="3" linkobjid="0x100" />
    </XDFAXIS>
    <XDFAXIS id="y" uniqueid="0x0">
      <EMBEDDEDDATA mmedtypeflags="0x10000" mmedaddress="0x8180" mmedelementsizebits="32" mmedcolcount="3" mmedmajorstridebits="32" />
      <indexcount>3</indexcount>
      <units>"°C"</units>
      <MATH equation="X"><VAR id="X" /></MATH>
    </XDFAXIS>
    <XDFAXIS id="z">
      <EMBEDDEDDATA mmedtypeflags="0x05" mmedaddress="0x8200" mmedelementsizebits="8" mmedrowcount="3" mmedcolcount="4" mmedmajorstridebits="24" mmedminorstridebits="0" />
      <decimalpl>1</decimalpl>
      <min>-10</min>
      <max>45.5</max>
      <MATH equation="x*0.75-10"><VAR id="x" /></MATH>
    </XDFAXIS>
  </XDFTABLE>
  <XDFCONSTANT uniqueid="0x300" flags="0x0">
    <title>Signed trim</title>
    <EMBEDDEDDATA mmedtypeflags="0x03" mmedaddress="0x8300" mmedelementsizebits="16" />
    <units>%</units>
    <decimalpl>1</decimalpl>
    <rangelow>-100</rangelow>
    <rangehigh>100</rangehigh>
    <MATH equation="x/4"><VAR id="x" /></MATH>
  </XDFCONSTANT>
  <XDFCONSTANT uniqueid="0x301">
    <title>Default storage</title>
    <EMBEDDEDDATA mmedaddress="0x8302" />
  </XDFCONSTANT>
  <XDFCONSTANT uniqueid="0x302">
    <title>Masked</title>
    <EMBEDDEDDATA mmedaddress="0x8303" />
    <MATH equation="X % 256"><VAR id="X" /></MATH>
  </XDFCONSTANT>
  <XDFFLAG uniqueid="0x303">
    <title>Enable thing</title>
    <EMBEDDEDDATA mmedaddress="0x8303" mmedelementsizebits="8" />
    <mask>0x04</mask>
  </XDFFLAG>
  <XDFTABLE uniqueid="0x400">
    <title>Bad link</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><embedinfo type="3" linkobjid="0x999" /></XDFAXIS>
    <XDFAXIS id="y"><indexcount>2</indexcount><LABEL index="0" value="lo" /><LABEL index="1" value="hi" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8400" mmedrowcount="2" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFCONSTANT uniqueid="0x401">
    <title>Linked var</title>
    <EMBEDDEDDATA mmedaddress="0x8404" />
    <MATH equation="X*B"><VAR id="X" /><VAR id="B" type="link" linkid="0x300" /></MATH>
  </XDFCONSTANT>
  <XDFTABLE uniqueid="0x402">
    <title>------ HEADING ------</title>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedelementsizebits="16" /></XDFAXIS>
  </XDFTABLE>
  <XDFCONSTANT uniqueid="0x403">
    <title>Below base</title>
    <EMBEDDEDDATA mmedaddress="0x10" />
  </XDFCONSTANT>
  <XDFCONSTANT uniqueid="0x404">
    <title>Past end</title>
    <EMBEDDEDDATA mmedaddress="0x8FFF" mmedelementsizebits="16" />
  </XDFCONSTANT>
  <XDFFUNCTION uniqueid="0x500">
    <title>Curve</title>
    <XDFAXIS id="x">
      <EMBEDDEDDATA mmedaddress="0x8500" mmedelementsizebits="8" mmedcolcount="3" mmedtypeflags="0x0" />
      <indexcount>3</indexcount>
      <MATH equation="x*100"><VAR id="x" /></MATH>
    </XDFAXIS>
    <XDFAXIS id="y">
      <EMBEDDEDDATA mmedaddress="0x8503" mmedelementsizebits="8" mmedcolcount="3" mmedtypeflags="0x0" />
      <indexcount>3</indexcount>
      <MATH equation="x/2"><VAR id="x" /></MATH>
    </XDFAXIS>
  </XDFFUNCTION>
  <XDFTABLE uniqueid="0x600">
    <title>Twin A</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><LABEL index="0" value="1" /><LABEL index="1" value="2" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8600" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x600">
    <title>Twin B</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><LABEL index="0" value="1" /><LABEL index="1" value="2" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8610" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x601">
    <title>Ambiguous user</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><embedinfo type="3" linkobjid="0x600" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8620" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x700">
    <title>Copy 1</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><LABEL index="0" value="1" /><LABEL index="1" value="2" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8700" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x700">
    <title>Copy 2</title>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8700" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x701">
    <title>Copy user</title>
    <XDFAXIS id="x"><indexcount>2</indexcount><embedinfo type="3" linkobjid="0x700" /></XDFAXIS>
    <XDFAXIS id="y"><indexcount>2</indexcount><LABEL index="0" value="lo" /><LABEL index="1" value="hi" /></XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8710" mmedrowcount="2" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x800">
    <title>Huge</title>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8800" mmedrowcount="100000000" mmedcolcount="100000000" /></XDFAXIS>
  </XDFTABLE>
  <XDFTABLE uniqueid="0x801">
    <title>Strided axis</title>
    <XDFAXIS id="x">
      <EMBEDDEDDATA mmedaddress="0x8810" mmedelementsizebits="16" mmedcolcount="2" mmedmajorstridebits="-16" />
      <indexcount>2</indexcount>
    </XDFAXIS>
    <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x8820" mmedrowcount="1" mmedcolcount="2" /></XDFAXIS>
  </XDFTABLE>
  <XDFCONSTANT uniqueid="0x802">
    <title>Far away</title>
    <EMBEDDEDDATA mmedaddress="0x7FFFFFFFFFFFFFFF" mmedelementsizebits="32" />
  </XDFCONSTANT>
  <XDFCONSTANT uniqueid="0x803">
    <title>Odd flags</title>
    <EMBEDDEDDATA mmedaddress="0x8830" mmedtypeflags="0x100" />
  </XDFCONSTANT>
</XDFFORMAT>
"#;

fn definition() -> Definition {
    resolve("synthetic.xdf", XDF.as_bytes(), "xdf").unwrap()
}

fn table<'d>(def: &'d Definition, name: &str) -> &'d Table {
    def.tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no table {name}: unreadable {:?}", def.unreadable))
}

fn why<'d>(def: &'d Definition, name: &str) -> &'d str {
    def.unreadable
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, w)| w.as_str())
        .unwrap_or_else(|| panic!("{name} is not unreadable"))
}

fn stored(points: &Points) -> &StoredPoints {
    match points {
        Points::Stored(s) => s,
        Points::Labels(l) => panic!("labels {l:?}, expected stored points"),
    }
}

#[test]
fn claims_and_identify() {
    assert!(claims("synthetic.xdf", XDF.as_bytes()));
    assert!(
        claims("renamed.txt", XDF.as_bytes()),
        "content decides, not the name"
    );
    assert!(!claims(
        "old.xdf",
        b"XDF\r\n1.110000\r\n%%HEADER%%\r\n001005 DefTitle =\"x\""
    ));
    assert!(!claims("rom.xml", b"<?xml version=\"1.0\"?><roms><rom>"));
    let cands = identify("defs/synthetic.xdf", XDF.as_bytes()).unwrap();
    assert_eq!(cands.len(), 1);
    assert_eq!(cands[0].title, "Synthetic 1.60");
    assert!(matches!(cands[0].id, ImageId::Length(0x1000)));
    let fields = &cands[0].fields;
    assert!(fields.contains(&("description".into(), "First line".into())));
    assert!(fields.contains(&("format".into(), "XDF 1.60".into())));
    assert!(fields.contains(&("fileversion".into(), "2".into())));

    // No title: the file's stem. No REGION: an error saying what to do.
    let bare =
        r#"<XDFFORMAT version="1.60"><XDFHEADER><REGION size="0x400"/></XDFHEADER></XDFFORMAT>"#;
    assert_eq!(
        identify("a/b/bare.xdf", bare.as_bytes()).unwrap()[0].title,
        "bare"
    );
    let e = identify("nosize.xdf", b"<XDFFORMAT><XDFHEADER/></XDFFORMAT>").unwrap_err();
    assert!(e.starts_with("nosize.xdf has no REGION size"), "{e}");
    let e = identify("old.xdf", b"XDF\n1.110000\n%%HEADER%%\n").unwrap_err();
    assert!(e.contains("plain-text XDF"), "{e}");

    // Identify reads the header only; resolve reads, and checks, the rest.
    let torn =
        r#"<XDFFORMAT version="1.60"><XDFHEADER><REGION size="0x400"/></XDFHEADER><XDFTABLE"#;
    assert!(matches!(
        identify("torn.xdf", torn.as_bytes()).unwrap()[0].id,
        ImageId::Length(0x400)
    ));
    let e = resolve("torn.xdf", torn.as_bytes(), "xdf").unwrap_err();
    assert!(e.contains("not well-formed XML"), "{e}");

    // From a head: the header when it is whole, else nothing (the tools
    // then hand over the whole file).
    let head = identify_head("torn.xdf", torn.as_bytes()).unwrap().unwrap();
    assert!(matches!(head[0].id, ImageId::Length(0x400)));
    assert!(identify_head("torn.xdf", &torn.as_bytes()[..40]).is_none());
}

#[test]
fn tables_read_exactly() {
    let def = definition();
    assert_eq!(def.chain, vec!["synthetic.xdf".to_string()]);
    assert!(matches!(def.checksum, Checksum::Unknown(ref w) if w.contains("no checksum")));

    // 1 × 4, u16 LSB first, subtracted base offset, label axis as rows.
    let rpm = table(&def, "RPM axis");
    assert_eq!(rpm.address, 0x100);
    assert_eq!(
        rpm.category.as_deref(),
        Some("Axes"),
        "first CATEGORYMEM, 1-based"
    );
    assert_eq!(rpm.scaling.storage, Storage::Uint16);
    assert!(rpm.scaling.little_endian);
    assert_eq!(rpm.scaling.units.as_deref(), Some("rpm"));
    assert!(rpm.columns.is_none());
    match &rpm.rows.as_ref().unwrap().points {
        Points::Labels(l) => assert_eq!(l, &["a", "b", "c", ""]),
        other => panic!("{other:?}"),
    }

    // 3 × 4 signed, column-major; x linked to the RPM axis, y float.
    let map = table(&def, "Timing map");
    assert_eq!(map.address, 0x200);
    assert_eq!(map.category.as_deref(), Some("Fuel"));
    assert_eq!(map.scaling.storage, Storage::Int8);
    assert!(map.column_major);
    assert_eq!(map.scaling.to_physical, "x*0.75-10");
    assert_eq!(map.scaling.from_physical.as_deref(), Some("(x+10)/0.75"));
    assert_eq!(map.scaling.format.as_deref(), Some("%0.1f"));
    assert_eq!(
        (map.scaling.min, map.scaling.max),
        (Some(-10.0), Some(45.5))
    );
    let x = stored(&map.columns.as_ref().unwrap().points);
    assert_eq!((x.address, x.count), (0x100, 4));
    assert_eq!(x.scaling.storage, Storage::Uint16);
    assert!(x.scaling.little_endian);
    assert_eq!(x.scaling.to_physical, "x*10");
    let y = stored(&map.rows.as_ref().unwrap().points);
    assert_eq!((y.address, y.count), (0x180, 3));
    assert_eq!(y.scaling.storage, Storage::Float32);
    assert!(
        !y.scaling.little_endian,
        "flags given: DEFAULTS lsbfirst does not apply"
    );
    assert_eq!(y.scaling.units.as_deref(), Some("°C"));

    let trim = table(&def, "Signed trim");
    assert_eq!(trim.address, 0x300);
    assert_eq!(trim.scaling.storage, Storage::Int16);
    assert!(trim.scaling.little_endian);
    assert_eq!(
        (trim.scaling.min, trim.scaling.max),
        (Some(-100.0), Some(100.0))
    );
    assert_eq!(trim.scaling.units.as_deref(), Some("%"));
    assert!(trim.rows.is_none() && trim.columns.is_none());

    // No size, no flags: DEFAULTS (8 bits, unsigned, LSB first); no MATH: x.
    let dflt = table(&def, "Default storage");
    assert_eq!(dflt.scaling.storage, Storage::Uint8);
    assert!(dflt.scaling.little_endian);
    assert_eq!(dflt.scaling.to_physical, "x");

    let curve = table(&def, "Curve");
    assert_eq!(curve.address, 0x503);
    assert_eq!(curve.scaling.to_physical, "x/2");
    assert!(curve.columns.is_none());
    let axis = stored(&curve.rows.as_ref().unwrap().points);
    assert_eq!((axis.address, axis.count), (0x500, 3));
    assert_eq!(axis.scaling.to_physical, "x*100");

    // Duplicate uniqueids with the same data: the link is exact.
    let copy = table(&def, "Copy user");
    let x = stored(&copy.columns.as_ref().unwrap().points);
    assert_eq!((x.address, x.count), (0x700, 2));
    // The twins themselves are readable.
    table(&def, "Twin A");
    table(&def, "Twin B");
}

#[test]
fn unreadable_items_say_why() {
    let def = definition();
    assert!(why(&def, "Masked").contains("modulo operator `%`"));
    assert_eq!(
        why(&def, "Enable thing"),
        "XDFFLAG is not supported (a bit flag, not a table)"
    );
    assert_eq!(why(&def, "Bad link"), "x axis: linked item 0x999 not found");
    assert_eq!(
        why(&def, "Linked var"),
        "equation variable B links another item (0x300)"
    );
    assert_eq!(
        why(&def, "------ HEADING ------"),
        "no address (a section heading)"
    );
    assert!(why(&def, "Below base").contains("before the start of the bin"));
    assert!(why(&def, "Past end").contains("runs past the end of the 0x1000-byte bin"));
    assert!(why(&def, "Ambiguous user").contains("0x600 is ambiguous"));
    assert!(why(&def, "Huge").contains("too many cells"));
    assert!(why(&def, "Strided axis").contains("mmedmajorstridebits=\"-16\""));
    assert!(why(&def, "Far away").contains("runs past the end"));
    assert!(why(&def, "Odd flags").contains("bits 0x100"));
    // Every item is accounted for, once.
    let items = XDF.matches("<title>").count();
    assert_eq!(def.tables.len() + def.unreadable.len(), items);
}

#[test]
fn wrong_key_and_broken_files_are_errors() {
    let e = resolve("s.xdf", XDF.as_bytes(), "other").unwrap_err();
    assert!(e.contains("key \"xdf\""), "{e}");
    let e = resolve("s.xdf", b"<XDFFORMAT><XDFTABLE>", "xdf").unwrap_err();
    assert!(e.starts_with("s.xdf is not well-formed XML"), "{e}");
    let bad_base = r#"<XDFFORMAT><XDFHEADER><REGION size="0x10"/><BASEOFFSET offset="q"/></XDFHEADER></XDFFORMAT>"#;
    let e = resolve("s.xdf", bad_base.as_bytes(), "xdf").unwrap_err();
    assert!(e.contains("base offset"), "{e}");
}

#[test]
fn hostile_input_is_bounded() {
    // Deep nesting inside an item: parsed or refused, never a crash.
    let depth = 20_000;
    let deep = format!(
        r#"<XDFFORMAT><XDFHEADER><REGION size="0x10"/></XDFHEADER><XDFCONSTANT><title>d</title>{}{}</XDFCONSTANT></XDFFORMAT>"#,
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    );
    if let Ok(def) = resolve("deep.xdf", deep.as_bytes(), "xdf") {
        assert_eq!(
            def.unreadable,
            vec![("d".into(), "no address (a section heading)".into())]
        );
    }
    // Many axes linking one item resolve the link once.
    let mut many = String::from(
        r#"<XDFFORMAT><XDFHEADER><REGION size="0x100"/></XDFHEADER>
        <XDFTABLE uniqueid="0x1"><title>axis</title>
          <XDFAXIS id="x"><indexcount>2</indexcount><LABEL index="0" value="a"/><LABEL index="1" value="b"/></XDFAXIS>
          <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x0" mmedelementsizebits="8" mmedrowcount="1" mmedcolcount="2"/></XDFAXIS>
        </XDFTABLE>"#,
    );
    for i in 0..2000 {
        many.push_str(&format!(
            r#"<XDFTABLE uniqueid="0x1"><title>t{i}</title>
              <XDFAXIS id="x"><indexcount>2</indexcount><embedinfo type="3" linkobjid="0x1"/></XDFAXIS>
              <XDFAXIS id="z"><EMBEDDEDDATA mmedaddress="0x10" mmedelementsizebits="8" mmedrowcount="1" mmedcolcount="2"/></XDFAXIS>
            </XDFTABLE>"#
        ));
    }
    many.push_str("</XDFFORMAT>");
    let def = resolve("many.xdf", many.as_bytes(), "xdf").unwrap();
    // All 2001 items share uniqueid 0x1 with different data: ambiguous.
    assert_eq!(def.tables.len(), 1);
    assert_eq!(def.unreadable.len(), 2000);
    assert!(def.unreadable[0].1.contains("ambiguous"));
}
