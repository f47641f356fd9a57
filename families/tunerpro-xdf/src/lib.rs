//! TunerPro XDF definitions (XML, versions 1.50 and later) as a benchtop ECU
//! definition family: the ECU tools read a bin through an XDF once this
//! component is in the plugins directory.
//!
//! An XDF describes one bin, identified only by its size (`REGION size`).
//! Its tables, constants and functions become tables; whatever cannot be
//! read exactly (section headings, equations outside the tools' expression
//! subset, flags, patches) is listed as unreadable with the reason. TunerPro
//! keeps no checksum in an XDF that this family could verify, so patches
//! are written with a warning saying so.
//!
//! [`convert`] holds the three calls the interface asks for; this file is
//! only the export glue.

/// Types and traits generated from `wit/` (the `family` world). Generated
/// items carry the WIT doc comments where the WIT has them; the rest (enum
/// cases, glue) cannot be documented here.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "family", generate_all });
}

pub mod convert;
pub mod equation;
pub mod text;
pub mod xdf;

use bindings::benchtop::host::blobs;
use bindings::exports::benchtop::ecu_family::family::{
    Blob, Definition, Fixed, Guest, Identified, Source, Verdict,
};

/// The component: a unit struct, because the family keeps no state (every
/// answer is a function of the bytes it is given).
pub struct Xdf;

/// Answer of `verify` and `fix`: `resolve` says the checksum is unknown, so
/// the tools never call them.
const NO_PLAN: &str = "this family verifies no checksum";

impl Guest for Xdf {
    fn name() -> Result<String, String> {
        Ok("TunerPro XDF".into())
    }

    fn extensions() -> Result<Vec<String>, String> {
        Ok(vec!["xdf".into()])
    }

    fn claims(file_name: String, head: Blob) -> Result<bool, String> {
        Ok(convert::claims(
            &file_name,
            &blobs::read(head, 0, u64::MAX)?,
        ))
    }

    fn identify(file_name: String, contents: Blob, whole: bool) -> Result<Identified, String> {
        let contents = blobs::read(contents, 0, u64::MAX)?;
        if whole {
            return convert::identify(&file_name, &contents).map(Identified::Candidates);
        }
        Ok(match convert::identify_head(&file_name, &contents) {
            Some(found) => Identified::Candidates(found?),
            None => Identified::NeedsWholeFile,
        })
    }

    fn resolve(key: String, files: Vec<Source>) -> Result<Definition, String> {
        // An XDF includes nothing: the definition is the first file alone.
        let file = files
            .first()
            .ok_or("resolve was given no file to read the definition from")?;
        convert::resolve(
            &file.file_name,
            &blobs::read(file.contents, 0, u64::MAX)?,
            &key,
        )
    }

    fn verify(_plan: String, _image: Blob) -> Result<Verdict, String> {
        Err(NO_PLAN.into())
    }

    fn fix(_plan: String, _image: Blob) -> Result<Fixed, String> {
        Err(NO_PLAN.into())
    }
}

impl bindings::exports::benchtop::host::provider::Guest for Xdf {
    fn describe() -> String {
        "ECU definition family: TunerPro XDF 1.50/1.60 definitions (.xdf)".into()
    }
}

// Natively the exported symbol names (`benchtop:ecu-family/family@0.1.0#…`)
// are not valid in a linker version script, so the cdylib exports them on
// wasm only (as every benchtop plugin does); natively the glue above still
// type-checks and the tests call `convert` directly.
#[cfg(target_arch = "wasm32")]
bindings::export!(Xdf with_types_in bindings);
