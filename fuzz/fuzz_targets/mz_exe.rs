//! DOS programs (`x86_inspect::dos`, through `machine::Machine::load`): MZ
//! `.EXE` headers and relocations, and `.COM` images, then 2,000
//! instructions of the program (500 when tracked) and a disassembly at
//! where it stopped.
//!
//! Byte 0 is options (bit 0: track calls and the control-flow graph, as
//! `x86_load_program`'s tracking does; bit 1: an 8086 instead of the default
//! 80186); the rest is the file. Drive C: is a directory that does not
//! exist, so the program's DOS file calls fail instead of touching the disk.
//!
//! The console and file limits are cut to a few hundred bytes, so a short
//! run reaches them: the cap handling is fuzzed, not only the plain path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use x86_inspect::cpu::{CS, Cpu, Model};
use x86_inspect::disasm::decode;
use x86_inspect::dos::{Limits, default_model};
use x86_inspect::machine::Machine;

fuzz_target!(|data: &[u8]| {
    let Some((&options, image)) = data.split_first() else {
        return;
    };
    let tracking = options & 1 != 0;
    let model = if options & 2 != 0 {
        Model::I8086
    } else {
        default_model()
    };
    let path = Path::new("/nonexistent/benchtop-fuzz/PROGRAM.EXE");
    let limits = Limits {
        console_bytes: 512,
        write_bytes: 2048,
        file_bytes: 1024,
    };
    let Ok(mut m) = Machine::load_with_limits(1, path, image, "", model, tracking, limits) else {
        return;
    };
    // Short runs: with 10,000 instructions (1,000 tracked) the target ran
    // 1.7k inputs a second, most of it spent going round the same loop
    // (a mutated program soon loops, often through INT 21h), which finds
    // nothing new after its first pass; coverage comes from the bytes the
    // fuzzer changes, so more inputs a second find more. Tracking
    // disassembles every instruction, hence its shorter run.
    let budget = if tracking { 500 } else { 2_000 };
    let _ = m.run(budget, &mut |_, _| true);
    let (cs, mut ip) = (m.cpu.sregs[CS], m.cpu.ip);
    for _ in 0..16 {
        let insn = decode(&|off| m.cpu.rb(Cpu::lin(cs, off)), ip, m.cpu.model);
        assert!(
            insn.len > 0,
            "a zero-length instruction at {cs:04X}:{ip:04X}"
        );
        ip = ip.wrapping_add(insn.len as u16);
    }
});
