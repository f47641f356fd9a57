//! Tests of cell decoding on definitions read from ECUFlash XML, and the
//! one-file definitions other modules' tests build on.

use crate::decode::*;
use crate::definition::{Definition, Lookup, Table};

/// A one-file definition: every table at the addresses the XML gives.
pub(crate) fn definition(xml: &str) -> Definition {
    ecuflash::merge::one_file(xml).unwrap()
}

pub(crate) fn table<'a>(d: &'a Definition, name: &str) -> &'a Table {
    match d.table(name) {
        Lookup::Found(t) => t,
        other => panic!("{name}: {other:?}"),
    }
}

pub(crate) const XML: &str = r#"<rom><romid><xmlid>t</xmlid></romid>
  <scaling name="u8" toexpr="x" frexpr="x" storagetype="uint8"/>
  <scaling name="half" units="deg" toexpr="x/2" frexpr="x*2" format="%.1f" storagetype="int8"/>
  <scaling name="le16" toexpr="x" frexpr="x" storagetype="uint16" endian="little"/>
  <scaling name="sw" storagetype="bloblist"><data name="off" value="00"/><data name="on" value="01"/></scaling>
  <scaling name="bits" storagetype="bloblist" storagebits="1"><data name="0" value="00"/><data name="1" value="01"/></scaling>
  <table name="Swapped" type="3D" swapxy="true" scaling="u8" address="a">
<table name="X" type="X Axis" elements="3" scaling="u8" address="0"/>
<table name="Y" type="Y Axis" elements="2" scaling="u8" address="4"/>
  </table>
  <table name="RowMajor" type="3D" scaling="half" address="14">
<table name="X" type="X Axis" elements="3" scaling="u8" address="0"/>
<table name="Y" type="Y Axis" elements="2" scaling="u8" address="4"/>
  </table>
  <table name="LE" type="1D" scaling="le16" address="1e"/>
  <table name="Switch" type="1D" scaling="sw" address="20"/>
  <table name="Flags" type="2D" scaling="bits" address="22">
<table type="Static Y Axis" elements="16"/>
  </table>
</rom>"#;

pub(crate) fn rom() -> Vec<u8> {
    let mut rom: Vec<u8> = (0..64).collect();
    rom[30] = 0x34;
    rom[31] = 0x12;
    rom[32] = 0x07;
    rom[34] = 0b1000_0000;
    rom[35] = 0b0000_0001;
    rom
}

#[test]
fn swapxy_is_column_major_and_axes_stay_put() {
    let d = definition(XML);
    let data = read_table(table(&d, "Swapped"), &rom()).unwrap();
    assert_eq!((data.rows, data.cols), (2, 3));
    // Y varies fastest: cell (row 1, col 0) is the second byte.
    assert_eq!(data.value(0, 0), 10.0);
    assert_eq!(data.value(1, 0), 11.0);
    assert_eq!(data.value(0, 1), 12.0);
    assert_eq!(data.col_axis.as_ref().unwrap().labels, ["0", "1", "2"]);
    let rm = read_table(table(&d, "RowMajor"), &rom()).unwrap();
    assert_eq!(rm.value(0, 1), 10.5);
    assert_eq!(rm.value(1, 0), 11.5);
    assert_eq!(rm.display(1, 0), "11.5");
}

#[test]
fn little_endian_blobs_and_bits() {
    let d = definition(XML);
    let le = read_table(table(&d, "LE"), &rom()).unwrap();
    assert_eq!(le.value(0, 0), 0x1234 as f64);
    let sw = read_table(table(&d, "Switch"), &rom()).unwrap();
    assert_eq!(sw.display(0, 0), "unknown (0x07)");
    let bits = read_table(table(&d, "Flags"), &rom()).unwrap();
    assert_eq!((bits.rows, bits.cols), (16, 1));
    // First label is bit 15 (MSB of the first byte); last is bit 0.
    assert_eq!(bits.value(0, 0), 1.0);
    assert_eq!(bits.value(1, 0), 0.0);
    assert_eq!(bits.value(15, 0), 1.0);
}

/// Issue 17 #4: "ECU Periphery 00 Bits" of the Magna base (bits,
/// swapxy, 8 spec-number columns × 16 bit rows): each column is one
/// big-endian 16-bit word, bit.15 first.
#[test]
fn swapxy_bit_tables_are_one_word_per_column() {
    let xml = r#"<rom><romid><xmlid>m</xmlid></romid>
  <scaling name="blobbits" storagetype="bloblist" storagebits="1"><data name="0" value="00"/><data name="1" value="01"/></scaling>
  <table name="ECU Periphery 00 Bits" address="4" category="Periphery" type="3D" swapxy="true" scaling="blobbits">
<table name="Spec Number (MUT 34)" type="Static X Axis" elements="8"><data>0</data><data>1</data><data>2</data><data>3</data><data>4</data><data>5</data><data>6</data><data>7</data></table>
<table name="Periphery Bit Number" type="Static Y Axis" elements="16"><data>bit.15</data><data>bit.14</data><data>bit.13</data><data>bit.12</data><data>bit.11</data><data>bit.10</data><data>bit.9</data><data>bit.8</data><data>bit.7</data><data>bit.6</data><data>bit.5</data><data>bit.4</data><data>bit.3</data><data>bit.2</data><data>bit.1</data><data>bit.0</data></table>
  </table>
</rom>"#;
    let d = definition(xml);
    let t = table(&d, "ECU Periphery 00 Bits");
    let mut rom = vec![0u8; 4 + 16];
    // Spec 0 = 0x8001 (bit.15 and bit.0), spec 1 = 0x0100 (bit.8),
    // spec 7 = 0x0002 (bit.1).
    rom[4..6].copy_from_slice(&[0x80, 0x01]);
    rom[6..8].copy_from_slice(&[0x01, 0x00]);
    rom[18..20].copy_from_slice(&[0x00, 0x02]);
    let data = read_table(t, &rom).unwrap();
    assert_eq!((data.rows, data.cols), (16, 8));
    let set: Vec<(usize, usize)> = (0..16)
        .flat_map(|r| (0..8).map(move |c| (r, c)))
        .filter(|&(r, c)| data.value(r, c) == 1.0)
        .collect();
    assert_eq!(set, [(0, 0), (7, 1), (14, 7), (15, 0)]);
    // Patching goes to the same bit: bit.14 of spec 3 is 0x4000 at 0xA.
    let mut image = rom.clone();
    let op = crate::patch::Op::Set(1.0);
    let target = crate::patch::Target::cell(1, 3);
    crate::patch::apply(t, &data, &mut image, &op, &target, false).unwrap();
    assert_eq!(&image[10..12], &[0x40, 0x00]);
}

/// `flipy`: the rows are stored last first; an axis with its own
/// `flipy` runs the same way, so every value keeps its breakpoint.
#[test]
fn flipy_reverses_stored_rows() {
    let xml = r#"<rom><romid><xmlid>m</xmlid></romid>
  <scaling name="u8" toexpr="x" frexpr="x" storagetype="uint8"/>
  <table name="Cranking" type="2D" flipy="true" scaling="u8" address="0">
<table name="Strokes" type="Y Axis" elements="4" flipy="true" scaling="u8" address="4"/>
  </table>
  <table name="Fan" type="2D" flipy="true" scaling="u8" address="8">
<table name="Condition" type="Static Y Axis" elements="2"><data>On</data><data>Off</data></table>
  </table>
</rom>"#;
    let d = definition(xml);
    let rom = [1u8, 2, 3, 4, 10, 20, 30, 40, 95, 100];
    let data = read_table(table(&d, "Cranking"), &rom).unwrap();
    let cells: Vec<f64> = (0..4).map(|r| data.value(r, 0)).collect();
    assert_eq!(cells, [4.0, 3.0, 2.0, 1.0]);
    assert_eq!(
        data.row_axis.as_ref().unwrap().labels,
        ["40", "30", "20", "10"]
    );
    let fan = read_table(table(&d, "Fan"), &rom).unwrap();
    assert_eq!((fan.value(0, 0), fan.value(1, 0)), (100.0, 95.0));
    assert_eq!(table(&d, "Fan").cell_offset(0, 0), 9);
}

#[test]
fn tables_past_the_end_are_reported() {
    let d = definition(XML);
    let err = read_table(table(&d, "RowMajor"), &rom()[..22]).unwrap_err();
    assert!(
        err.to_string()
            .contains("needs 6 bytes but the ROM is only 22 bytes")
    );
}
