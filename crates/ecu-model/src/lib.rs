//! The family-neutral ECU calibration model: what a definition is once a
//! family has read it, whatever its format (ECUFlash, RomRaider, or one a
//! component serves), and how a table's cells are read from an image.
//!
//! ecu-tables' tools work on these types alone; each first-party family
//! crate builds them from its own format. Nothing here reads files or
//! knows a format, except [`sniff`], which tells two `.xml` formats apart.

pub mod checksum;
pub mod decode;
pub mod definition;
pub mod expr;
pub mod family;
pub mod memmodel;
pub mod printf;
pub mod scaling;
pub mod sniff;

pub use definition::{Axis, AxisSource, Definition, RomId, Table, TableType};
