//! The component glue: `benchtop:ecu-family/family` answered from
//! [`crate::document`], through the conversions `ecu_family_guest` shares
//! with the other first-party families.

use ecu_family_guest::bindings::benchtop::host::blobs;
use ecu_family_guest::bindings::exports::benchtop::ecu_family::family::{
    Blob, Candidate, Definition, Edit, Guest, Source, Verdict,
};
use ecu_family_guest::{self as guest, bindings::exports::benchtop::host::provider};

/// The family's name, as rom_info's `definition_format` shows it.
const NAME: &str = "RomRaider";

/// The component: a unit struct, because every answer is a function of
/// the bytes it is given (ecu-tables caches them per file).
pub struct RomRaider;

/// A definitions file's text: RomRaider writes UTF-8 (or its ASCII subset).
fn text(file_name: &str, contents: Blob) -> Result<String, String> {
    String::from_utf8(blobs::read(contents, 0, u64::MAX)?)
        .map_err(|e| format!("{file_name} is not UTF-8 text: {e}"))
}

impl Guest for RomRaider {
    fn name() -> Result<String, String> {
        Ok(NAME.into())
    }

    fn extensions() -> Result<Vec<String>, String> {
        Ok(vec!["xml".into()])
    }

    fn claims(_file_name: String, head: Blob) -> Result<bool, String> {
        let head = blobs::read(head, 0, u64::MAX)?;
        Ok(crate::document::is_romraider(&String::from_utf8_lossy(
            &head,
        )))
    }

    fn identify(file_name: String, contents: Blob) -> Result<Vec<Candidate>, String> {
        let document = crate::document::parse(&text(&file_name, contents)?)?;
        // A rom's base is in the same document, which `resolve` reads
        // whole: no other file is needed, so none is named as included.
        Ok(document
            .roms()
            .filter_map(|romid| guest::candidate(romid, Vec::new()))
            .collect())
    }

    fn resolve(key: String, files: Vec<Source>) -> Result<Definition, String> {
        let file = files
            .first()
            .ok_or("resolve was given no file to read the definition from")?;
        let document = crate::document::parse(&text(&file.file_name, file.contents)?)?;
        let definition = document.definition(&key, file.file_name.clone().into())?;
        Ok(guest::definition(&definition, NAME))
    }

    fn verify(plan: String, image: Blob) -> Result<Verdict, String> {
        guest::verify(&plan, &blobs::read(image, 0, u64::MAX)?)
    }

    fn fix(plan: String, image: Blob) -> Result<Vec<Edit>, String> {
        guest::fix(&plan, &blobs::read(image, 0, u64::MAX)?)
    }
}

impl provider::Guest for RomRaider {
    fn describe() -> String {
        "ECU definition family: RomRaider definitions (<roms><rom base=…>, .xml)".into()
    }
}

// Natively the exported symbol names are not valid in a linker version
// script, so the component exports them on wasm only; natively the glue
// above still type-checks and the tests call `document` directly.
#[cfg(target_arch = "wasm32")]
ecu_family_guest::bindings::export!(RomRaider with_types_in ecu_family_guest::bindings);
