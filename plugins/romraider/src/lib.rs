//! RomRaider definitions as a benchtop ECU definition family: with this
//! component in the plugins directory, ecu-tables' tools read and patch
//! ROMs through RomRaider's `<roms>` documents.
//!
//! [`document`] reads a document and resolves a rom's `base=` chain into
//! the family-neutral [`ecu_model::Definition`]; `component` answers
//! `benchtop:ecu-family/family` with it.

pub mod document;

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod component;
