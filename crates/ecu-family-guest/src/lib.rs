//! The family side of `benchtop:ecu-family/family` for families that
//! build `ecu_model`'s [`Definition`]s (the first-party ones): the WIT
//! bindings, and the answers every such family gives the same way.
//!
//! A crate of its own, not a feature of ecu-model: ecu-tables, which
//! imports the interface, must not link bindings that export it.
//!
//! A family crate implements the generated `Guest` trait for its own
//! type, answers `identify` with [`candidate`] and `resolve` with
//! [`definition`], leaves `verify` and `fix` to [`verify`] and [`fix`]
//! when its checksums are ecu-model's [`Module`]s, and exports itself
//! with [`bindings::export!`]: the format's own code stays in the
//! family crate, and no two families copy the conversion.

use ecu_model::checksum::Module;
use ecu_model::definition::{Axis, AxisSource, Definition, RomId, Table};
use ecu_model::scaling::{Endian, Kind, Scaling, Storage};

/// Types and traits generated from `wit/ecu-family` (the `family-plugin`
/// world), and the `export!` macro a family crate exports itself with.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/ecu-family",
        world: "family-plugin",
        generate_all,
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "ecu_family_guest::bindings",
    });
}

use bindings::exports::benchtop::ecu_family::family as wit;

/// The candidate a definition's `<romid>` makes: its xmlid names it, its
/// internal id (hex, else text) at its internal id address identifies its
/// images; a romid without both is a base, which no image is.
pub fn candidate(romid: &RomId, includes: Vec<String>) -> Option<wit::Candidate> {
    let title = romid.xmlid.clone().filter(|x| !x.trim().is_empty())?;
    let id = match romid.internal_id() {
        Some(id) if !id.bytes.is_empty() => wit::ImageId::Bytes(wit::IdBytes {
            offset: u64::from(id.address),
            bytes: id.bytes,
        }),
        _ => wit::ImageId::None,
    };
    Some(wit::Candidate {
        key: title.clone(),
        title,
        id,
        fields: romid
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        includes,
    })
}

/// A resolved definition as the interface carries it. Its checksum is
/// the [`Module`] its `checksummodule` field names (the plan is the
/// module's name, for [`verify`] and [`fix`]); any other is unknown, with
/// why.
pub fn definition(d: &Definition, family: &str) -> wit::Definition {
    let mut fields: Vec<(String, String)> = d
        .fields
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    fields.sort();
    let checksum = match d.checksum_module() {
        Some(name) => match Module::by_name(name) {
            Ok(module) => wit::Checksum::Plan(module.name().to_owned()),
            Err(e) => wit::Checksum::Unknown(e.to_string()),
        },
        None => {
            wit::Checksum::Unknown(format!("this {family} definition names no checksum module"))
        }
    };
    wit::Definition {
        fields,
        chain: d.chain.clone(),
        tables: d.tables.iter().map(table).collect(),
        unreadable: d.unresolvable.clone(),
        checksum,
    }
}

fn table(t: &Table) -> wit::Table {
    wit::Table {
        name: t.name.clone(),
        category: t.category.clone(),
        address: u64::from(t.address),
        scaling: scaling(&t.scaling),
        rows: t.row_axis.as_ref().map(axis),
        columns: t.col_axis.as_ref().map(axis),
        column_major: t.swapxy,
        rows_reversed: t.flipy,
        columns_reversed: t.flipx,
        level: t.level,
    }
}

fn axis(a: &Axis) -> wit::Axis {
    wit::Axis {
        name: a.name.clone(),
        points: match &a.source {
            AxisSource::Static(labels) => wit::Points::Labels(labels.clone()),
            AxisSource::Dynamic {
                address,
                elements,
                scaling: s,
            } => wit::Points::Stored(wit::StoredPoints {
                address: u64::from(*address),
                count: u32::try_from(*elements).unwrap_or(u32::MAX),
                scaling: scaling(s),
            }),
        },
        reversed: a.flip,
    }
}

fn scaling(s: &Scaling) -> wit::Scaling {
    let storage = match s.storage {
        Storage::U8 | Storage::Blob(_) => wit::Storage::Uint8,
        Storage::I8 => wit::Storage::Int8,
        Storage::U16 => wit::Storage::Uint16,
        Storage::I16 => wit::Storage::Int16,
        Storage::U32 => wit::Storage::Uint32,
        Storage::I32 => wit::Storage::Int32,
        Storage::F32 => wit::Storage::Float32,
        Storage::Bits => wit::Storage::Bits,
    };
    let (to_physical, from_physical, choices) = match &s.kind {
        Kind::Numeric { to, from } => (
            to.source().to_owned(),
            from.as_ref().map(|f| f.source().to_owned()),
            Vec::new(),
        ),
        Kind::Blobs(blobs) => (
            "x".to_owned(),
            None,
            blobs
                .iter()
                .map(|(name, bytes)| wit::Choice {
                    name: name.clone(),
                    bytes: bytes.clone(),
                })
                .collect(),
        ),
        Kind::Bit => ("x".to_owned(), Some("x".to_owned()), Vec::new()),
    };
    wit::Scaling {
        storage,
        little_endian: s.endian == Endian::Little,
        to_physical,
        from_physical,
        units: s.units.clone(),
        format: s.format_text.clone(),
        min: s.min,
        max: s.max,
        choices,
    }
}

/// `verify` for a plan [`definition`] made: the named module's verdict on
/// `image`.
pub fn verify(plan: &str, image: &[u8]) -> Result<wit::Verdict, String> {
    let module = Module::by_name(plan).map_err(|e| e.to_string())?;
    Ok(match module.validate(image) {
        Ok(true) => match module.disabled_note(image) {
            Some(why) => wit::Verdict::Disabled(why),
            None => wit::Verdict::Valid,
        },
        Ok(false) => wit::Verdict::Invalid(format!("the {plan} checksum does not match")),
        Err(e) => wit::Verdict::Unknown(e.to_string()),
    })
}

/// `fix` for a plan [`definition`] made: the bytes the named module
/// rewrites in `image`, one edit per changed run.
pub fn fix(plan: &str, image: &[u8]) -> Result<Vec<wit::Edit>, String> {
    let module = Module::by_name(plan).map_err(|e| e.to_string())?;
    let mut fixed = image.to_vec();
    module.fix(&mut fixed).map_err(|e| e.to_string())?;
    Ok(changed_runs(image, &fixed))
}

/// The runs of bytes where `after` differs from `before` (same length).
fn changed_runs(before: &[u8], after: &[u8]) -> Vec<wit::Edit> {
    let mut edits: Vec<wit::Edit> = Vec::new();
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        if a == b {
            continue;
        }
        match edits.last_mut() {
            Some(e) if e.offset as usize + e.bytes.len() == i => e.bytes.push(*b),
            _ => edits.push(wit::Edit {
                offset: i as u64,
                bytes: vec![*b],
            }),
        }
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecu_model::checksum::{SUBARUDBW_TARGET, word_sum};

    #[test]
    fn romids_become_candidates_and_bases_have_no_id() {
        let mut id = RomId {
            xmlid: Some("AE5L500V".into()),
            internal_id_address: Some("2004".into()),
            internal_id_string: Some("AE5L500V".into()),
            ..RomId::default()
        };
        id.fields.insert("memmodel".into(), "SH7058".into());
        let c = candidate(&id, Vec::new()).unwrap();
        assert_eq!(c.key, "AE5L500V");
        match c.id {
            wit::ImageId::Bytes(b) => {
                assert_eq!((b.offset, b.bytes), (0x2004, b"AE5L500V".to_vec()))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.fields, [("memmodel".to_string(), "SH7058".to_string())]);
        id.internal_id_hex = Some("0x2249".into());
        assert!(matches!(
            candidate(&id, Vec::new()).unwrap().id,
            wit::ImageId::Bytes(b) if b.bytes == [0x22, 0x49]
        ));
        let base = RomId {
            xmlid: Some("32BITBASE".into()),
            ..RomId::default()
        };
        assert!(matches!(
            candidate(&base, Vec::new()).unwrap().id,
            wit::ImageId::None
        ));
        assert!(candidate(&RomId::default(), Vec::new()).is_none());
    }

    #[test]
    fn checksums_verify_and_fix_as_edits() {
        // A subarudbw table at 0x480 below the end: entry 0 sums 0..0x100.
        let mut image = vec![0u8; 0x8_0000];
        image[0x10..0x14].copy_from_slice(&7u32.to_be_bytes());
        let table = image.len() - 0x480;
        let entry = |image: &mut Vec<u8>, i: usize, words: [u32; 3]| {
            for (k, w) in words.iter().enumerate() {
                let at = table + i * 12 + k * 4;
                image[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        };
        entry(&mut image, 0, [0, 0x100, 0]);
        for i in 1..17 {
            entry(&mut image, i, [0, 0, SUBARUDBW_TARGET]);
        }
        assert!(matches!(
            verify("subarudbw", &image),
            Ok(wit::Verdict::Invalid(_))
        ));
        let edits = fix("subarudbw", &image).unwrap();
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(edits[0].offset as usize, table + 8);
        for e in &edits {
            image[e.offset as usize..][..e.bytes.len()].copy_from_slice(&e.bytes);
        }
        assert!(matches!(
            verify("subarudbw", &image),
            Ok(wit::Verdict::Valid)
        ));
        assert_eq!(
            word_sum(&image[..0x100]).wrapping_add(u32::from_be_bytes(
                image[table + 8..table + 12].try_into().unwrap()
            )),
            SUBARUDBW_TARGET
        );
        assert!(fix("sum8", &image).unwrap_err().contains("sum8"));
    }
}
