//! ecu-tables: ROM calibration tables in physical units, and safe
//! patching with checksum repair, as a benchtop component, through the
//! definition families other components serve (ECUFlash, RomRaider,
//! TunerPro XDF, a third party's).
//!
//! The domain logic lives in plain modules ([`tools`] is the library API the
//! tests and benchmarks use); this file declares them, and `component` is
//! the thin wit-bindgen glue.

pub mod bins;
pub mod error;
pub mod family;
pub mod folder_index;
pub mod image;
pub mod lookup;
pub mod offers;
pub mod overlay;
pub mod patch;
pub mod propose;
pub mod records;
pub mod sample;
pub mod store;
pub mod tools;

// The family-neutral model, under the paths the tools have always used.
pub use ecu_model::{checksum, decode, definition, expr, memmodel, printf, scaling};

#[cfg(test)]
pub(crate) mod decode_tests;

/// What the unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    /// An explorer reading ECUFlash and RomRaider definitions through the
    /// family crates linked in.
    pub(crate) fn explorer() -> crate::Explorer {
        crate::Explorer::with_formats(vec![
            Arc::new(ecuflash::EcuFlash),
            Arc::new(romraider::RomRaider),
        ])
    }
}

mod bindings;
mod component;

pub use error::Error;
pub use store::Explorer;
pub use tools::Config;
