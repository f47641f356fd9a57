//! ECUFlash definitions as a benchtop ECU definition family: with this
//! component in the plugins directory (it is bundled), ecu-tables' tools
//! read and patch ROMs through ECUFlash's `<rom>` files and their
//! `<include>` chains.
//!
//! [`xml`] reads one file as written into [`raw`]'s types ([`plain`]
//! directly, when it is plainly written), [`merge`] merges an include chain
//! into the family-neutral [`ecu_model::Definition`], and [`EcuFlash`]
//! answers ecu-model's [`ecu_model::family::Format`] with them, which the
//! component exports as `benchtop:ecu-family/family`.

pub mod merge;
pub mod plain;
pub mod raw;
pub mod xml;

mod component;

pub use component::EcuFlash;
