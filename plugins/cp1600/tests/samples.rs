//! The example programs in `samples/cp1600`: their `.bin` files match their
//! sources, and run through the tool layer to their documented final states.
//! Set CP1600_WRITE_SAMPLES=1 to (re)write the `.bin` files.

use cp1600::asm::{Program, assemble};
use cp1600::results::Json;
use cp1600::tools::Sessions;
use serde_json::{Value, json};
use std::path::PathBuf;

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/cp1600")
}

fn assembled(name: &str) -> (PathBuf, Program) {
    let dir = samples_dir();
    let src = std::fs::read_to_string(dir.join(format!("{name}.asm"))).unwrap();
    let prog = assemble(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bin = dir.join(format!("{name}.bin"));
    if std::env::var_os("CP1600_WRITE_SAMPLES").is_some() {
        std::fs::write(&bin, prog.to_bytes()).unwrap();
    }
    let on_disk = std::fs::read(&bin).unwrap_or_default();
    assert_eq!(
        on_disk,
        prog.to_bytes(),
        "{name}.bin is stale: rerun with CP1600_WRITE_SAMPLES=1"
    );
    (bin, prog)
}

fn no_progress(_: u64, _: u64, _: &str) -> bool {
    true
}

/// Loads and runs a sample to HLT through the tools; returns (state, program).
fn run_sample(name: &str) -> (Sessions, Value, Program) {
    let (bin, prog) = assembled(name);
    let mut s = Sessions::new();
    s.create_session(Some(name)).unwrap();
    let loaded = s
        .load_rom(None, bin.to_str().unwrap(), &Default::default())
        .unwrap()
        .json();
    assert_eq!(loaded["entry_point"], 0x5000);
    assert_eq!(loaded["rom_size"], prog.words.len() * 2);
    let run = s
        .run(None, Some(100_000), None, &mut no_progress)
        .unwrap()
        .json();
    assert_eq!(run["reason"], "halted", "{name}: {run}");
    let state = s.get_state(None).unwrap().json();
    (s, state, prog)
}

fn ram(s: &mut Sessions, addr: u16) -> u64 {
    s.examine_memory(None, addr, Some(1)).unwrap().json()["memory"][0]["value"]
        .as_u64()
        .unwrap()
}

#[test]
fn sample_01_hello_world() {
    let (mut s, st, _) = run_sample("01-hello-world");
    assert_eq!(st["registers"]["R0"], 142);
    assert_eq!(st["registers"]["R1"], 100);
    assert_eq!(st["registers"]["R2"], 142);
    assert_eq!(ram(&mut s, 0x0200), 142);
}

#[test]
fn sample_02_counter_loop() {
    let (mut s, st, _) = run_sample("02-counter-loop");
    assert_eq!(st["registers"]["R0"], 10);
    assert_eq!(st["registers"]["R1"], 0);
    assert_eq!(st["flags"]["Z"], true);
    assert_eq!(ram(&mut s, 0x0200), 10);
}

#[test]
fn sample_03_subroutine_call() {
    let (mut s, st, prog) = run_sample("03-subroutine-call");
    assert_eq!(st["registers"]["R0"], 13);
    assert_eq!(st["registers"]["R6"], 0x02F0);
    assert_eq!(ram(&mut s, 0x0200), 10);
    assert_eq!(ram(&mut s, 0x0201), 13);
    // add3 pushed the address after `CALL add3` (3 words long).
    let call = prog.labels["start"] + 2 + 2 + 3 + 2;
    assert_eq!(ram(&mut s, 0x02F0), (call + 3) as u64);
}

#[test]
fn sample_04_bit_manipulation() {
    let (mut s, st, _) = run_sample("04-bit-manipulation");
    assert_eq!(st["registers"]["R0"], 0);
    assert_eq!(st["registers"]["R1"], 4);
    assert_eq!(st["registers"]["R2"], 0);
    assert_eq!(st["registers"]["R3"], 0x0012);
    assert_eq!(ram(&mut s, 0x0200), 4);
    assert_eq!(ram(&mut s, 0x0201), 0x12);
}

#[test]
fn sample_05_signed_math() {
    let (mut s, st, _) = run_sample("05-signed-math");
    assert_eq!(st["registers"]["R0"], 0x8000);
    assert_eq!(st["registers"]["R1"], 0xA0A0);
    assert_eq!(st["registers"]["R2"], 2);
    assert_eq!(st["registers"]["R3"], 0xFFFD);
    assert_eq!(
        st["flags"],
        json!({"C": true, "OV": false, "Z": false, "S": false})
    );
    assert_eq!(ram(&mut s, 0x0202), 2);
}

#[test]
fn sample_06_nested_calls() {
    let (mut s, st, prog) = run_sample("06-nested-calls");
    let l = |n: &str| prog.labels[n] as u64;
    assert_eq!(st["registers"]["R0"], 111);
    assert_eq!(st["registers"]["R6"], 0x02F0);
    // R4: after `JSR R4, leaf` in lvl2 (PSHR, ADDI = 3 words, JSR = 3 words).
    assert_eq!(st["registers"]["R4"], l("lvl2") + 1 + 2 + 3);
    // R5: set last by `CALL lvl2` in lvl1 (PSHR, INCR, CALL).
    assert_eq!(st["registers"]["R5"], l("lvl1") + 2 + 3);
    assert_eq!(ram(&mut s, 0x0200), 111);
    assert_eq!(ram(&mut s, 0x02F0), l("start") + 2 + 1 + 3);
    assert_eq!(ram(&mut s, 0x02F1), l("lvl1") + 2 + 3);
}

#[test]
fn bench_loop_sample_runs_without_halting() {
    let (bin, _) = assembled("bench-loop");
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    s.load_rom(None, bin.to_str().unwrap(), &Default::default())
        .unwrap();
    let r = s
        .step(None, Some(100_000), None, &mut no_progress)
        .unwrap()
        .json();
    assert_eq!(r["executed"], 100_000);
    assert_eq!(r["halted"], false);
}
