//! ecu-tables: ECUFlash definitions, ROM calibration tables in physical
//! units, and safe patching with checksum repair, as a benchtop component.
//!
//! The domain logic lives in plain modules ([`tools`] is the library API the
//! tests and benchmarks use); this file declares them, and `component` is
//! the thin wit-bindgen glue.

pub mod bins;
pub mod definition;
pub mod error;
pub mod family;
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
pub mod xml;

// The family-neutral model, under the paths the tools have always used.
pub use ecu_model::{checksum, decode, expr, memmodel, printf, scaling};

#[cfg(test)]
pub(crate) mod decode_tests;

mod bindings;
mod component;

pub use error::Error;
pub use store::Explorer;
pub use tools::Config;
