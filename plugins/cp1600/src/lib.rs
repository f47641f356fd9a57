//! CP-1600 emulator plugin for benchtop: an exact CP-1600 core (jzIntv
//! cycle conventions), the Intellivision memory map, ROM formats, sessions
//! and debugging tools. The domain modules are plain Rust; `component` is
//! the thin wit-bindgen layer.

pub mod asm;
pub mod cart;
pub mod cpu;
mod diagnose;
pub mod disasm;
pub mod machine;
pub mod memory;
pub mod offers;
pub mod results;
pub mod rom;
pub mod snapshot;
pub mod stic;
pub mod tools;

mod component;
