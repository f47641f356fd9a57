//! Merging an include chain into one resolved definition.
//!
//! Rules (ECUFlash publishes none; these follow the files and other readers):
//! includes are applied parents first in document order, each file once;
//! scalings merge by name, tables by name, axis children by name (an unnamed
//! axis matches the unnamed one with the same role, else the one in the same
//! position); attributes the later file gives win; a table only exists in a
//! ROM when some file in the chain gives it an address.

use crate::xml::{RawDefinition, RawScaling, RawTable};
use ecu_model::definition::{
    Axis, AxisSource, Definition, MAX_AXIS_ELEMENTS, Table, TableType, parse_hex,
};
use ecu_model::expr::Expr;
use ecu_model::printf::Format;
use ecu_model::scaling::{Endian, Kind, Scaling, Storage, parse_hex_bytes};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// One file of a chain: its label (xmlid or file name) and parsed content.
pub struct ChainFile<'a> {
    /// The file's xmlid, or its file name when it has none.
    pub label: String,
    /// The parsed file.
    pub raw: &'a RawDefinition,
}

/// A definition file that includes nothing, resolved alone (as `t.xml`):
/// every table at the addresses it gives. For tests and fuzzing.
pub fn one_file(xml: &str) -> Result<Definition, String> {
    let raw = crate::xml::parse_definition(xml)?;
    Ok(merge(
        "t.xml".into(),
        &[ChainFile {
            label: "t".into(),
            raw: &raw,
        }],
    ))
}

/// Merges `files` (parents first, each once) into a resolved definition
/// whose ROM id is the last file's.
pub fn merge(file: PathBuf, files: &[ChainFile<'_>]) -> Definition {
    // Borrowed from the files until a later file changes them: most of a
    // base's tables are never given an address (SubaruDefs' 32BITBASE has
    // 1,518, a ROM's chain addresses about 470), and copying each was
    // most of the merge.
    let mut scalings: Vec<Cow<'_, RawScaling>> = Vec::new();
    let mut scaling_index: HashMap<&str, usize> = HashMap::new();
    let mut tables: Vec<Cow<'_, RawTable>> = Vec::new();
    let mut table_index: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut fields: HashMap<String, String> = HashMap::new();

    for (file_no, f) in files.iter().enumerate() {
        for (k, v) in &f.raw.romid.fields {
            if !v.is_empty() {
                fields.insert(k.clone(), v.clone());
            }
        }
        for s in &f.raw.scalings {
            match scaling_index.get(s.name.as_str()) {
                Some(&i) => {
                    let target = scalings[i].to_mut();
                    target
                        .attrs
                        .extend(s.attrs.iter().map(|(k, v)| (k.clone(), v.clone())));
                    if !s.blobs.is_empty() {
                        target.blobs = s.blobs.clone();
                    }
                }
                None => {
                    scaling_index.insert(&s.name, scalings.len());
                    scalings.push(Cow::Borrowed(s));
                }
            }
        }
        for t in &f.raw.tables {
            let Some(name) = t.name.as_deref() else {
                continue;
            };
            merge_table(&mut tables, &mut table_index, name, t, file_no);
        }
    }

    let mut resolved_scalings: HashMap<&str, Result<Arc<Scaling>, String>> = HashMap::new();
    for s in &scalings {
        resolved_scalings.insert(s.name.as_str(), scaling_from_raw(s).map(Arc::new));
    }
    let lookup = |name: Option<&str>| -> Result<Arc<Scaling>, String> {
        let name = name.ok_or_else(|| "no scaling".to_string())?;
        match resolved_scalings.get(name) {
            Some(Ok(s)) => Ok(s.clone()),
            Some(Err(e)) => Err(format!("scaling `{name}` is unusable: {e}")),
            None => Err(format!("scaling `{name}` is not defined in the chain")),
        }
    };

    let mut out = Vec::new();
    let mut unresolvable = Vec::new();
    for t in &tables {
        let Some(address) = t.attr("address").and_then(parse_hex) else {
            continue;
        };
        let name = t.name.clone().unwrap_or_default();
        match resolve_table(t, address, &lookup) {
            Ok(table) => out.push(table),
            Err(reason) => unresolvable.push((name, reason)),
        }
    }

    Definition::new(
        file,
        files
            .last()
            .map(|f| f.raw.romid.clone())
            .unwrap_or_default(),
        fields,
        files.iter().map(|f| f.label.clone()).collect(),
        out,
        unresolvable,
    )
}

/// Attribute recording which file of the chain gave a table its address
/// (internal: a NUL-prefixed key no XML attribute can have).
const ADDRESS_FROM: &str = "\u{0}address-from";

fn merge_table<'a>(
    tables: &mut Vec<Cow<'a, RawTable>>,
    index: &mut HashMap<&'a str, Vec<usize>>,
    name: &'a str,
    child: &'a RawTable,
    file_no: usize,
) {
    let child_addr = child.attr("address").and_then(parse_hex);
    let stamp = |t: &mut RawTable| {
        if child_addr.is_some() {
            t.attrs.insert(ADDRESS_FROM.into(), file_no.to_string());
        }
    };
    let entries = index.entry(name).or_default();
    if entries.is_empty() {
        entries.push(tables.len());
        let mut t = Cow::Borrowed(child);
        if child_addr.is_some() {
            stamp(t.to_mut());
        }
        tables.push(t);
        return;
    }
    // A later file giving a table a new address moves it (the H8 Magna
    // children re-address the whole base); only the same name twice at
    // two addresses in one file is two tables.
    let from_earlier = |t: &RawTable| t.attr(ADDRESS_FROM) != Some(file_no.to_string().as_str());
    let addr_of = |t: &RawTable| t.attr("address").and_then(parse_hex);
    match child_addr {
        // Metadata without an address refines every table of that name.
        None => {
            for &i in entries.iter() {
                apply(tables[i].to_mut(), child);
            }
        }
        Some(a) => {
            if let Some(&i) = entries
                .iter()
                .find(|&&i| addr_of(&tables[i]) == Some(a))
                .or_else(|| entries.iter().find(|&&i| addr_of(&tables[i]).is_none()))
                .or_else(|| entries.iter().find(|&&i| from_earlier(&tables[i])))
            {
                let target = tables[i].to_mut();
                apply(target, child);
                stamp(target);
            } else {
                // Same name at a second address: a second table that
                // inherits the first one's metadata.
                let mut copy = tables[entries[0]].clone();
                apply(copy.to_mut(), child);
                stamp(copy.to_mut());
                entries.push(tables.len());
                tables.push(copy);
            }
        }
    }
}

fn apply(target: &mut RawTable, child: &RawTable) {
    target
        .attrs
        .extend(child.attrs.iter().map(|(k, v)| (k.clone(), v.clone())));
    if !child.labels.is_empty() {
        target.labels = child.labels.clone();
    }
    for (pos, axis) in child.axes.iter().enumerate() {
        let found = match &axis.name {
            Some(n) => target
                .axes
                .iter()
                .position(|a| a.name.as_deref() == Some(n))
                .or_else(|| role_match(&target.axes, n)),
            None => target
                .axes
                .iter()
                .position(|a| a.name.is_none() && a.attr("type") == axis.attr("type"))
                .or_else(|| (pos < target.axes.len()).then_some(pos)),
        };
        match found {
            Some(i) => apply(&mut target.axes[i], axis),
            None => target.axes.push(axis.clone()),
        }
    }
}

/// SubaruDefs children address a base table's axes by role: `<table
/// name="X" address=…/>` is the base's `X Axis`, `Y` its `Y Axis`, whatever
/// the base calls them ("Throttle Plate Opening Angle"). A one-axis table's
/// only axis answers to either role.
fn role_match(axes: &[RawTable], child_name: &str) -> Option<usize> {
    let role = match child_name.trim() {
        r if r.eq_ignore_ascii_case("x") => "X AXIS",
        r if r.eq_ignore_ascii_case("y") => "Y AXIS",
        _ => return None,
    };
    axes.iter()
        .position(|a| {
            a.attr("type")
                .is_some_and(|t| t.to_ascii_uppercase().contains(role))
        })
        .or_else(|| (axes.len() == 1).then_some(0))
}

fn resolve_table(t: &RawTable, address: u32, lookup: &ScalingLookup<'_>) -> Result<Table, String> {
    let name = t.name.clone().unwrap_or_default();
    let table_type = match t
        .attr("type")
        .map(|s| s.trim().to_ascii_uppercase())
        .as_deref()
    {
        Some("1D") => TableType::Scalar,
        Some("2D") => TableType::OneAxis,
        Some("3D") => TableType::Grid,
        Some(other) => return Err(format!("unknown table type `{other}`")),
        None => return Err("no type (1D/2D/3D) in any file of the chain".into()),
    };
    let scaling = lookup(t.attr("scaling"))?;
    let axes: Vec<Axis> = t
        .axes
        .iter()
        .enumerate()
        .map(|(i, a)| resolve_axis(a, i, lookup))
        .collect::<Result<_, _>>()?;
    let role = |a: &Axis, r: char| {
        a.xml_type
            .to_ascii_uppercase()
            .contains(&format!("{r} AXIS"))
    };
    let (row_axis, col_axis) = match table_type {
        TableType::Scalar => (None, None),
        TableType::OneAxis => {
            let axis = axes
                .into_iter()
                .next()
                .ok_or("2D table without an axis child")?;
            (Some(axis), None)
        }
        TableType::Grid => {
            let x = axes.iter().position(|a| role(a, 'X'));
            let y = axes.iter().position(|a| role(a, 'Y'));
            let (x, y) = match (x, y) {
                (Some(x), Some(y)) if x != y => (x, y),
                _ if axes.len() == 2 => (0, 1),
                _ => return Err("3D table needs an X axis and a Y axis".into()),
            };
            (Some(axes[y].clone()), Some(axes[x].clone()))
        }
    };
    for axis in row_axis.iter().chain(col_axis.iter()) {
        if axis.is_empty() {
            return Err(format!("axis `{}` has no elements", axis.label()));
        }
    }
    Ok(Table {
        id: name.clone(),
        name,
        category: t.attr("category").map(str::to_string),
        table_type,
        address,
        scaling,
        swapxy: flag(t, "swapxy"),
        flipy: flag(t, "flipy"),
        flipx: flag(t, "flipx"),
        level: t.attr("level").and_then(|v| v.trim().parse().ok()),
        row_axis,
        col_axis,
    })
}

fn resolve_axis(a: &RawTable, position: usize, lookup: &ScalingLookup<'_>) -> Result<Axis, String> {
    let xml_type = a.attr("type").unwrap_or("").to_string();
    let label = a
        .name
        .clone()
        .unwrap_or_else(|| format!("#{position} {xml_type}"));
    let elements = a
        .attr("elements")
        .and_then(|e| e.trim().parse::<usize>().ok());
    if let Some(n) = elements.filter(|&n| n > MAX_AXIS_ELEMENTS) {
        return Err(format!(
            "axis `{label}` has {n} elements; at most {MAX_AXIS_ELEMENTS} are supported"
        ));
    }
    let is_static = xml_type.to_ascii_lowercase().starts_with("static")
        || (a.attr("address").is_none() && !a.labels.is_empty());
    let source = if is_static {
        let mut labels = a.labels.clone();
        let n = elements.unwrap_or(labels.len());
        // Fewer labels than elements: number the rest rather than lose cells.
        labels.truncate(n);
        while labels.len() < n {
            labels.push(labels.len().to_string());
        }
        AxisSource::Static(labels)
    } else {
        let address = a
            .attr("address")
            .ok_or_else(|| format!("axis `{label}` has no address"))?;
        let address = parse_hex(address)
            .ok_or_else(|| format!("axis `{label}` address `{address}` is not hex"))?;
        let elements = elements.ok_or_else(|| format!("axis `{label}` has no elements count"))?;
        let scaling = lookup(a.attr("scaling")).map_err(|e| format!("axis `{label}`: {e}"))?;
        // A bloblist axis (the Magna case part number's `PN1`) shows its
        // choices' names; a one-bit axis has no meaning as breakpoints.
        if matches!(scaling.storage, Storage::Bits) {
            return Err(format!("axis `{label}` uses a one-bit bloblist scaling"));
        }
        AxisSource::Dynamic {
            address,
            elements,
            scaling,
        }
    };
    Ok(Axis {
        flip: flag(a, "flipy") || flag(a, "flipx"),
        name: a.name.clone(),
        xml_type: if xml_type.is_empty() {
            "Axis".into()
        } else {
            xml_type
        },
        source,
    })
}

/// A boolean attribute (`"true"`, any case).
fn flag(t: &RawTable, key: &str) -> bool {
    t.attr(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Finds a scaling by name, or says why it cannot be used.
type ScalingLookup<'a> = dyn Fn(Option<&str>) -> Result<Arc<Scaling>, String> + 'a;

/// Builds a scaling from an ECUFlash `<scaling>`'s merged attributes, or
/// says why it is unusable.
pub fn scaling_from_raw(raw: &RawScaling) -> Result<Scaling, String> {
    let attr = |k: &str| raw.attrs.get(k).map(|s| s.trim()).filter(|s| !s.is_empty());
    let storage_name = attr("storagetype").unwrap_or("uint8").to_ascii_lowercase();
    let endian = match attr("endian").map(str::to_ascii_lowercase).as_deref() {
        // Every ECU these definitions describe is big-endian; a missing
        // attribute must not silently flip the byte order.
        None | Some("big") => Endian::Big,
        Some("little") => Endian::Little,
        Some(other) => return Err(format!("unknown endian `{other}`")),
    };
    let (storage, kind) = if storage_name == "bloblist" {
        if attr("storagebits") == Some("1") {
            (Storage::Bits, Kind::Bit)
        } else {
            let mut blobs = Vec::with_capacity(raw.blobs.len());
            for (name, hex) in &raw.blobs {
                let bytes = parse_hex_bytes(hex)
                    .ok_or_else(|| format!("bloblist value `{hex}` of `{name}` is not hex"))?;
                blobs.push((name.clone(), bytes));
            }
            let len = blobs.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
            if len == 0 {
                return Err("bloblist scaling has no <data value> entries".into());
            }
            if blobs.iter().any(|(_, b)| b.len() != len) {
                return Err("bloblist values differ in length".into());
            }
            (Storage::Blob(len), Kind::Blobs(blobs))
        }
    } else {
        let storage = match storage_name.as_str() {
            "uint8" => Storage::U8,
            "int8" => Storage::I8,
            "uint16" => Storage::U16,
            "int16" => Storage::I16,
            "uint32" => Storage::U32,
            "int32" => Storage::I32,
            "float" | "float32" => Storage::F32,
            other => return Err(format!("unknown storagetype `{other}`")),
        };
        let to = match attr("toexpr") {
            Some(e) => Expr::parse(e).map_err(|e| format!("toexpr: {e}"))?,
            None => Expr::identity(),
        };
        let from = match (attr("frexpr"), attr("toexpr")) {
            (Some(e), _) => Some(Expr::parse(e).map_err(|e| format!("frexpr: {e}"))?),
            // Without either expression the value is the raw number.
            (None, None) => Some(Expr::identity()),
            // Inverting toexpr would be a guess: such tables stay read-only.
            (None, Some(_)) => None,
        };
        (storage, Kind::Numeric { to, from })
    };
    let format_text = attr("format").map(str::to_string);
    Ok(Scaling {
        name: raw.name.clone(),
        units: attr("units").map(str::to_string),
        format: format_text
            .as_deref()
            .map(Format::parse)
            .unwrap_or_default(),
        format_text,
        min: attr("min").and_then(|v| v.parse().ok()),
        max: attr("max").and_then(|v| v.parse().ok()),
        storage,
        endian,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn scaling(attrs: &[(&str, &str)]) -> Result<Scaling, String> {
        scaling_from_raw(&RawScaling {
            name: "s".into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            blobs: vec![],
        })
    }

    #[test]
    fn missing_endian_is_big_and_missing_frexpr_is_read_only() {
        let s = scaling(&[("storagetype", "uint16"), ("toexpr", "x/2")]).unwrap();
        assert_eq!(s.endian, Endian::Big);
        assert!(matches!(s.kind, Kind::Numeric { from: None, .. }));
        let id = scaling(&[("storagetype", "int8")]).unwrap();
        assert!(matches!(id.kind, Kind::Numeric { from: Some(_), .. }));
        assert!(scaling(&[("storagetype", "int64")]).is_err());
        assert!(scaling(&[("toexpr", "pow(x,2)")]).is_err());
    }

    use crate::xml::parse_definition;
    use ecu_model::definition::Lookup;

    fn definition(xml: &str) -> Definition {
        one_file(xml).unwrap()
    }

    const BASE: &str = r#"<rom><romid><xmlid>base</xmlid><checksummodule>mitsucan</checksummodule></romid>
  <scaling name="RPM" units="rpm" toexpr="x*1000/256" frexpr="x*256/1000" format="%.0f" storagetype="uint16" endian="big"/>
  <scaling name="Timing" units="deg" toexpr="x" frexpr="x" format="%.0f" storagetype="int8"/>
  <scaling name="Lbl" units="ms" toexpr="x" frexpr="x" storagetype="uint8"/>
  <table name="Map" category="Timing" type="3D" swapxy="true" scaling="Timing">
    <table name="Load" type="X Axis" elements="3" scaling="RPM"/>
    <table name="RPM" type="Y Axis" elements="2" scaling="RPM"/>
  </table>
  <table name="Limiter" category="Limits" type="2D" scaling="Lbl">
    <table type="Static Y Axis" elements="2"><data>ON</data><data>OFF</data></table>
  </table>
  <table name="Unused" type="1D" scaling="Lbl"/>
  <table name="Dup" type="1D" scaling="Lbl"/>
  <table name="NoType" scaling="Lbl"/>
</rom>"#;

    const CHILD: &str = r#"<rom><romid><xmlid>child</xmlid><internalidaddress>10</internalidaddress>
  <internalidhex>1234</internalidhex><year>2011</year><make>Mitsubishi</make><model>Lancer</model></romid>
  <include>base</include>
  <table name="Map" address="100"><table name="Load" address="200" elements="4"/><table name="RPM" address="300"/></table>
  <table name="Limiter" address="400"/>
  <table name="Dup" address="500"/>
  <table name="Dup" address="600"/>
  <table name="NoType" address="700"/>
</rom>"#;

    fn merged() -> Definition {
        let base = parse_definition(BASE).unwrap();
        let child = parse_definition(CHILD).unwrap();
        merge(
            "child.xml".into(),
            &[
                ChainFile {
                    label: "base".into(),
                    raw: &base,
                },
                ChainFile {
                    label: "child".into(),
                    raw: &child,
                },
            ],
        )
    }

    #[test]
    fn child_addresses_materialise_base_tables() {
        let d = merged();
        let names: Vec<&str> = d.tables.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(names, ["Map", "Limiter", "Dup @0x500", "Dup @0x600"]);
        assert_eq!(d.unresolvable.len(), 1);
        assert_eq!(d.unresolvable[0].0, "NoType");
        assert_eq!(d.checksum_module(), Some("mitsucan"));
        assert_eq!(d.display_name(), "child 2011 Lancer");
        assert_eq!(d.vehicle().as_deref(), Some("2011 Mitsubishi Lancer"));
        assert_eq!(d.chain, ["base", "child"]);
    }

    #[test]
    fn axes_merge_by_name_with_child_overrides() {
        let d = merged();
        let Lookup::Found(t) = d.table("Map") else {
            panic!()
        };
        assert_eq!(t.table_type, TableType::Grid);
        assert!(t.swapxy);
        assert_eq!(t.dimensions(), "4x2");
        assert_eq!(t.col_axis.as_ref().unwrap().name.as_deref(), Some("Load"));
        assert_eq!(t.cell_offset(1, 2), 0x100 + 2 * 2 + 1);
        let Lookup::Found(l) = d.table("Limiter") else {
            panic!()
        };
        assert_eq!(l.dimensions(), "1x2");
        assert_eq!(
            l.row_axis.as_ref().unwrap().source,
            AxisSource::Static(vec!["ON".into(), "OFF".into()])
        );
    }

    /// Found by fuzzing (fuzz/fuzz_targets/ecuflash_xml.rs): a static axis
    /// with `elements="1444444444444444446"` numbered its missing labels up
    /// to that count, until memory ran out.
    #[test]
    fn huge_element_counts_make_the_table_unresolvable() {
        let xml = r#"<rom><romid><xmlid>t</xmlid></romid>
  <scaling name="u8" storagetype="uint8"/>
  <table name="Static" type="2D" scaling="u8" address="10">
    <table type="Static Y Axis" elements="1444444444444444446"><data>a</data></table>
  </table>
  <table name="Dynamic" type="3D" scaling="u8" address="20">
    <table name="X" type="X Axis" elements="18446744073709551615" scaling="u8" address="0"/>
    <table name="Y" type="Y Axis" elements="2" scaling="u8" address="4"/>
  </table>
  <table name="Largest" type="3D" scaling="u8" address="0">
    <table name="X" type="X Axis" elements="65536" scaling="u8" address="0"/>
    <table name="Y" type="Y Axis" elements="65536" scaling="u8" address="4"/>
  </table>
</rom>"#;
        let d = definition(xml);
        let reasons: Vec<&str> = d.unresolvable.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons.iter().all(|r| r.contains("at most 65536")),
            "{reasons:?}"
        );
        // The largest allowed table is sized without overflow, and does not fit.
        let Lookup::Found(t) = d.table("Largest") else {
            panic!()
        };
        assert_eq!(t.byte_len(), 65_536 * 65_536);
        assert!(ecu_model::decode::read_table(t, &[0; 64]).is_err());
    }

    fn chain(xmls: &[&str]) -> Definition {
        let raws: Vec<RawDefinition> = xmls.iter().map(|x| parse_definition(x).unwrap()).collect();
        let files: Vec<ChainFile<'_>> = raws
            .iter()
            .enumerate()
            .map(|(i, raw)| ChainFile {
                label: format!("f{i}"),
                raw,
            })
            .collect();
        merge("leaf.xml".into(), &files)
    }

    /// Issue 17 #2: SubaruDefs children (A2WC510N over 32BITBASE) give the
    /// axes' addresses as `X`/`Y`, not by the base's axis names.
    #[test]
    fn subarudefs_children_address_axes_by_role() {
        let base = r#"<rom><romid><xmlid>32BITBASE</xmlid></romid>
  <scaling name="%1" units="%" toexpr="x*.591715976" frexpr="x/.591715976" format="%.1f" storagetype="uint8"/>
  <scaling name="RPM" units="RPM" toexpr="x" frexpr="x" format="%.0f" storagetype="float"/>
  <scaling name="Boost" units="psi" toexpr="x" frexpr="x" storagetype="uint16"/>
  <table name="Target Boost A" category="Boost Control - Target" type="3D" level="4" scaling="Boost">
    <table name="Throttle Plate Opening Angle" type="X Axis" elements="8" scaling="%1" />
    <table name="Engine Speed" type="Y Axis" elements="12" scaling="RPM" />
  </table>
  <table name="Rev Limit (Fuel Cut)" category="Misc" type="2D" scaling="Boost">
    <table name="Vehicle Speed" type="Y Axis" elements="4" scaling="%1" />
  </table>
</rom>"#;
        let child = r#"<rom><romid><xmlid>A2WC510N</xmlid></romid><include>32BITBASE</include>
  <table name="Target Boost A" address="c11c8">
    <table name="X" address="c1178" />
    <table name="Y" address="c1198" />
  </table>
  <table name="Rev Limit (Fuel Cut)" address="d000"><table name="X" address="d100"/></table>
</rom>"#;
        let d = chain(&[base, child]);
        assert!(d.unresolvable.is_empty(), "{:?}", d.unresolvable);
        let Lookup::Found(t) = d.table("Target Boost A") else {
            panic!()
        };
        let col = t.col_axis.as_ref().unwrap();
        assert_eq!(col.name.as_deref(), Some("Throttle Plate Opening Angle"));
        assert!(matches!(
            col.source,
            AxisSource::Dynamic {
                address: 0xC1178,
                elements: 8,
                ..
            }
        ));
        let row = t.row_axis.as_ref().unwrap();
        assert!(matches!(
            row.source,
            AxisSource::Dynamic {
                address: 0xC1198,
                elements: 12,
                ..
            }
        ));
        assert_eq!(t.dimensions(), "8x12");
        let Lookup::Found(t) = d.table("Rev Limit (Fuel Cut)") else {
            panic!()
        };
        assert!(matches!(
            t.row_axis.as_ref().unwrap().source,
            AxisSource::Dynamic {
                address: 0xD100,
                ..
            }
        ));
    }

    /// Issue 17 #5: the H8 Magna children give every base table a new
    /// address; that moves the table, it does not make a second one. The
    /// same name twice at two addresses in one file is still two tables.
    #[test]
    fn a_later_file_moves_a_table_to_its_new_address() {
        let base = r#"<rom><romid><xmlid>magna_3g_base</xmlid></romid>
  <scaling name="Hex8" toexpr="x" frexpr="x" storagetype="uint8"/>
  <table name="ECU Case Part Number - Spec Number 0" address="f6b" category="Identification" type="3D" scaling="Hex8">
    <table name="Part Number" type="Static X Axis" elements="3"><data>PN2 .</data><data>PN3 .</data><data>PN4 .</data></table>
    <table name="PN1" address="f6a" type="Y Axis" elements="1" scaling="Hex8" />
  </table>
  <table name="Dup" address="20" type="1D" scaling="Hex8"/>
  <table name="Dup" address="30" type="1D" scaling="Hex8"/>
</rom>"#;
        let child = r#"<rom><romid><xmlid>22490005</xmlid><memmodel>H8539F</memmodel></romid><include>magna_3g_base</include>
  <table name="ECU Case Part Number - Spec Number 0" address="10233">
    <table name="Part Number" />
    <table name="PN1" address="10232" />
  </table>
</rom>"#;
        let d = chain(&[base, child]);
        let Lookup::Found(t) = d.table("ECU Case Part Number - Spec Number 0") else {
            panic!("{:?}", d.table("ECU Case Part Number - Spec Number 0"))
        };
        assert_eq!(t.address, 0x10233);
        assert!(matches!(
            t.row_axis.as_ref().unwrap().source,
            AxisSource::Dynamic {
                address: 0x10232,
                ..
            }
        ));
        assert_eq!(d.tables.len(), 3);
        assert!(matches!(d.table("Dup"), Lookup::Ambiguous(v) if v.len() == 2));
    }

    /// The Magna case part number: a bloblist `PN1` Y axis.
    #[test]
    fn bloblist_axes_resolve_and_show_choice_names() {
        let xml = r#"<rom><romid><xmlid>m</xmlid></romid>
  <scaling name="CaseAlphaNumeric" storagetype="bloblist" storagebits="8"><data name="MB" value="10"/><data name="MD" value="20"/></scaling>
  <scaling name="Hex8" toexpr="x" frexpr="x" format="%02X" storagetype="uint8"/>
  <table name="PN" address="3" type="3D" scaling="Hex8">
    <table name="Part Number" type="Static X Axis" elements="2"><data>PN2</data><data>PN3</data></table>
    <table name="PN1" address="2" type="Y Axis" elements="1" scaling="CaseAlphaNumeric" />
  </table>
</rom>"#;
        let d = chain(&[xml]);
        assert!(d.unresolvable.is_empty(), "{:?}", d.unresolvable);
        let Lookup::Found(t) = d.table("PN") else {
            panic!()
        };
        let data = ecu_model::decode::read_table(t, &[0, 0, 0x20, 0xAB, 0xCD]).unwrap();
        assert_eq!(data.row_axis.as_ref().unwrap().labels, ["MD"]);
        assert_eq!(data.display(0, 1), "CD");
    }

    #[test]
    fn lookups_report_ambiguity_and_suggest_names() {
        let d = merged();
        assert!(matches!(d.table("Dup"), Lookup::Ambiguous(v) if v.len() == 2));
        assert!(matches!(d.table("Dup @0x600"), Lookup::Found(t) if t.address == 0x600));
        match d.table("map") {
            Lookup::Missing(s) => assert_eq!(s[0], "Map"),
            other => panic!("{other:?}"),
        }
        match d.table("Limitr") {
            Lookup::Missing(s) => assert_eq!(s[0], "Limiter"),
            other => panic!("{other:?}"),
        }
    }
}
