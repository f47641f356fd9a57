//! ecu-tables: ECUFlash definitions, ROM calibration tables in physical
//! units, and safe patching with checksum repair, as a benchtop component.
//!
//! The domain logic lives in plain modules ([`tools`] is the library API the
//! tests and benchmarks use); this file declares them, and `component` is
//! the thin wit-bindgen glue.

pub mod bins;
pub mod checksum;
pub mod decode;
pub mod definition;
pub mod error;
pub mod expr;
pub mod family;
pub mod image;
pub mod lookup;
pub mod memmodel;
pub mod offers;
pub mod overlay;
pub mod patch;
pub mod printf;
pub mod propose;
pub mod records;
pub mod romraider;
pub mod sample;
pub mod scaling;
pub mod store;
pub mod tools;
pub mod xml;

mod bindings;
mod component;

pub use error::Error;
pub use store::Explorer;
pub use tools::Config;
