//! x86-inspect: a real-mode 8086/80186 PC running DOS programs, inspected
//! like Spice86. The domain logic lives in plain modules; `component` is the
//! thin wit-bindgen glue.

pub mod condition;
pub mod console;
pub mod cp437;
pub mod cpu;
pub mod disasm;
pub mod dos;
pub mod machine;
pub mod offers;
pub mod ports;
pub mod results;
pub mod tools;
pub mod tracking;
pub mod video;
pub mod watch;

mod component;
