//! RomRaider definitions as a benchtop ECU definition family: with this
//! component in the plugins directory, ecu-tables' tools read and patch
//! ROMs through RomRaider's `<roms>` documents.
//!
//! [`document`] reads a document and resolves a rom's `base=` chain into
//! the family-neutral [`ecu_model::Definition`]; [`RomRaider`] answers
//! ecu-model's [`ecu_model::family::Format`] with it, which the component
//! exports as `benchtop:ecu-family/family`.

pub mod document;

mod component;

pub use component::RomRaider;
