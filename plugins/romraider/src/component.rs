//! RomRaider as a [`Format`]: the trait ecu-tables asks every family
//! through, natively in tests and as the component's export.

use crate::document;
use ecu_model::family::{self, Format, Identified, Resolved, Source, utf8_text as text};

/// The family's name, as rom_info's `definition_format` shows it.
const NAME: &str = "RomRaider";

/// The RomRaider family: a unit struct, because every answer is a
/// function of the bytes it is given (ecu-tables caches them per file).
#[derive(Debug, Default, Clone, Copy)]
pub struct RomRaider;

impl Format for RomRaider {
    fn name(&self) -> Result<String, String> {
        Ok(NAME.into())
    }

    fn extensions(&self) -> Result<Vec<String>, String> {
        Ok(vec!["xml".into()])
    }

    fn claims(&self, _file_name: &str, head: &[u8]) -> Result<bool, String> {
        Ok(document::is_romraider(&String::from_utf8_lossy(head)))
    }

    fn identify(
        &self,
        file_name: &str,
        contents: &[u8],
        whole: bool,
    ) -> Result<Identified, String> {
        // A document's roms are spread through the whole file.
        if !whole {
            return Ok(Identified::NeedsWholeFile);
        }
        let document = document::parse(text(file_name, contents)?)?;
        // A rom's base is in the same document, which `resolve` reads
        // whole: no other file is needed, so none is named as included.
        Ok(Identified::Candidates(
            document
                .roms()
                .filter_map(|romid| family::candidate(romid, Vec::new()))
                .collect(),
        ))
    }

    fn resolve(&self, key: &str, files: &[Source<'_>]) -> Result<Resolved, String> {
        let file = files
            .first()
            .ok_or("resolve was given no file to read the definition from")?;
        let document = document::parse(text(file.file_name, file.contents)?)?;
        let definition = document.definition(key, file.file_name.into())?;
        Ok(Resolved::of(&definition, NAME))
    }

    fn describe(&self) -> String {
        "ECU definition family: RomRaider definitions (<roms><rom base=…>, .xml)".into()
    }
}

// Natively the exported symbol names are not valid in a linker version
// script, so the component exports them on wasm only; natively the tests
// call the format directly.
#[cfg(target_arch = "wasm32")]
mod export {
    type Component = ecu_family_guest::Exported<super::RomRaider>;
    ecu_family_guest::bindings::export!(Component with_types_in ecu_family_guest::bindings);
}
