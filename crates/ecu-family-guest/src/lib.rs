//! Any [`Format`] as a component serving `benchtop:ecu-family/family`: the
//! WIT bindings, and [`Exported`], which answers the interface by asking
//! the format and converting between ecu-model's types and the WIT records.
//!
//! A crate of its own, not a feature of ecu-model: ecu-tables, which
//! imports the interface, must not link bindings that export it.
//!
//! A family crate implements [`Format`] for its own type (natively: the
//! tests call it directly) and exports it in one line:
//!
//! ```ignore
//! type Component = ecu_family_guest::Exported<MyFormat>;
//! ecu_family_guest::bindings::export!(Component with_types_in ecu_family_guest::bindings);
//! ```

use bindings::benchtop::host::blobs;
use bindings::exports::benchtop::ecu_family::family as wit;
use bindings::exports::benchtop::host::provider;
use ecu_model::definition::{Axis, AxisSource, Table};
use ecu_model::family::{
    Candidate, Checksum, Edit, Fixed, Format, Identified, ImageId, Resolved, Source, Verdict,
};
use ecu_model::scaling::{Endian, Kind, Scaling, Storage};
use std::marker::PhantomData;

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

/// The component of format `F`: every call asks a fresh `F::default()`,
/// since a family's answers are functions of the bytes given (ecu-tables
/// caches them per file).
pub struct Exported<F>(PhantomData<F>);

/// The bytes of a blob ecu-tables handed over.
fn bytes(blob: wit::Blob) -> Result<Vec<u8>, String> {
    blobs::read(blob, 0, u64::MAX)
}

impl<F: Format + Default + 'static> wit::Guest for Exported<F> {
    fn name() -> Result<String, String> {
        F::default().name()
    }

    fn extensions() -> Result<Vec<String>, String> {
        F::default().extensions()
    }

    fn claims(file_name: String, head: wit::Blob) -> Result<bool, String> {
        F::default().claims(&file_name, &bytes(head)?)
    }

    fn identify(
        file_name: String,
        contents: wit::Blob,
        whole: bool,
    ) -> Result<wit::Identified, String> {
        Ok(
            match F::default().identify(&file_name, &bytes(contents)?, whole)? {
                Identified::Candidates(found) => {
                    wit::Identified::Candidates(found.into_iter().map(candidate).collect())
                }
                Identified::NeedsWholeFile => wit::Identified::NeedsWholeFile,
            },
        )
    }

    fn resolve(key: String, files: Vec<wit::Source>) -> Result<wit::Definition, String> {
        let contents = files
            .iter()
            .map(|f| bytes(f.contents))
            .collect::<Result<Vec<_>, _>>()?;
        let sources: Vec<Source<'_>> = files
            .iter()
            .zip(&contents)
            .map(|(f, contents)| Source {
                file_name: &f.file_name,
                contents,
            })
            .collect();
        Ok(definition(F::default().resolve(&key, &sources)?))
    }

    fn verify(plan: String, image: wit::Blob) -> Result<wit::Verdict, String> {
        Ok(verdict(F::default().verify(&plan, &bytes(image)?)?))
    }

    fn fix(plan: String, image: wit::Blob) -> Result<wit::Fixed, String> {
        let Fixed { edits, after } = F::default().fix_checked(&plan, &mut bytes(image)?)?;
        Ok(wit::Fixed {
            edits: edits
                .into_iter()
                .map(|Edit { offset, bytes }| wit::Edit { offset, bytes })
                .collect(),
            after: verdict(after),
        })
    }
}

impl<F: Format + Default + 'static> provider::Guest for Exported<F> {
    fn describe() -> String {
        F::default().describe()
    }
}

fn verdict(v: Verdict) -> wit::Verdict {
    match v {
        Verdict::Valid => wit::Verdict::Valid,
        Verdict::Disabled(why) => wit::Verdict::Disabled(why),
        Verdict::Invalid(why) => wit::Verdict::Invalid(why),
        Verdict::Unknown(why) => wit::Verdict::Unknown(why),
    }
}

/// A resolved definition as the interface's `definition` record.
pub fn definition(resolved: Resolved) -> wit::Definition {
    wit::Definition {
        fields: resolved.fields,
        chain: resolved.chain,
        tables: resolved.tables.iter().map(table).collect(),
        unreadable: resolved.unreadable,
        checksum: match resolved.checksum {
            Checksum::Plan(plan) => wit::Checksum::Plan(plan),
            Checksum::Unknown(why) => wit::Checksum::Unknown(why),
        },
    }
}

fn candidate(c: Candidate) -> wit::Candidate {
    wit::Candidate {
        key: c.key,
        title: c.title,
        id: match c.id {
            ImageId::Bytes { offset, bytes } => wit::ImageId::Bytes(wit::IdBytes { offset, bytes }),
            ImageId::Length(n) => wit::ImageId::Length(n),
            ImageId::None => wit::ImageId::None,
        },
        fields: c.fields,
        includes: c.includes,
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
        name: Some(s.name.clone()).filter(|n| !n.is_empty()),
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
