//! What ecu-tables reads back from its cache directory: a definitions
//! folder's index (`folder_index`) and a definition a family resolved
//! (`family::remembered`). Both are checked by a CRC, which guards against
//! damage, not against a crafted file: any payload must give an answer or
//! an error, never a panic, an overflow or an allocation past the data.
//!
//! The first byte picks the reader; the rest is the payload, past the
//! frame (the entry's question is compared byte for byte before its
//! definition is read, so the definition's reader gets the payload here).
#![no_main]

use ecu_tables::family::peer::resolved_from_payload;
use ecu_tables::folder_index::FolderIndex;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, payload)) = data.split_first() else {
        return;
    };
    if which & 1 == 0 {
        if let Ok(index) = FolderIndex::from_payload(payload) {
            assert!(index.files.len() <= payload.len());
        }
    } else if let Ok(resolved) = resolved_from_payload(payload) {
        assert!(resolved.tables.len() <= payload.len());
    }
});
