//! Per-instruction comparison with jzIntv traces (`../shared/fixtures/cp1600`).

use cp1600::cpu::Cpu;
use cp1600::disasm::disassemble;
use cp1600::results::Json;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/cp1600");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("fixtures not found at {}; skipping", dir.display());
        None
    }
}

fn programs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.strip_suffix(".bin").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

fn load(dir: &Path, name: &str) -> Cpu {
    let bytes = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
    let mut cpu = Cpu::new();
    for (i, w) in bytes.chunks_exact(2).enumerate() {
        cpu.mem
            .load_word(0x5000 + i as u16, u16::from_be_bytes([w[0], w[1]]));
    }
    cpu.reset_to(0x5000);
    cpu
}

fn flag(v: &Value, k: &str) -> bool {
    v["flags"][k].as_bool().unwrap()
}

/// jzIntv's debugger text, reduced to as1600 spelling.
fn normalize_jzintv(dis: &str) -> String {
    let s = dis
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(',', ", ");
    match s.as_str() {
        "NOP 2" => "NOP2".into(),
        "SIN 2" => "SIN2".into(),
        _ => s,
    }
}

#[test]
fn shared_every_fixture_matches_jzintv_trace() {
    let Some(dir) = fixture_dir() else { return };
    let names = programs(&dir);
    assert_eq!(names.len(), 20);
    for name in names {
        let mut cpu = load(&dir, &name);
        let trace = std::fs::read_to_string(dir.join(format!("{name}.trace.jsonl"))).unwrap();
        let mut prev_sdbd = false;
        for line in trace.lines() {
            let t: Value = serde_json::from_str(line).unwrap();
            let step = t["step"].as_u64().unwrap();
            let r: Vec<u16> = t["r"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u16)
                .collect();
            let st = &cpu.st;
            let ctx = format!("{name} step {step} ({})", t["dis"]);
            assert_eq!(st.r.to_vec(), r, "{ctx}: registers");
            assert_eq!(
                (st.s, st.z, st.ov, st.c, st.i, st.d),
                (
                    flag(&t, "S"),
                    flag(&t, "Z"),
                    flag(&t, "OV"),
                    flag(&t, "C"),
                    flag(&t, "I"),
                    flag(&t, "D")
                ),
                "{ctx}: flags S Z OV C I D"
            );
            assert_eq!(st.cycles, t["cycles"].as_u64().unwrap(), "{ctx}: cycles");
            assert_eq!(st.instructions, step, "{ctx}: instruction count");
            let ins = disassemble(|a| cpu.mem.read(a), st.r[7], prev_sdbd);
            let mut want = normalize_jzintv(t["dis"].as_str().unwrap());
            if ins.mnemonic == "BEXT" {
                want = want.trim_end_matches(", E").to_string();
                assert_eq!(
                    ins.text().rsplit_once(", ").unwrap().0,
                    want,
                    "{ctx}: disassembly"
                );
            } else {
                assert_eq!(ins.text(), want, "{ctx}: disassembly");
            }
            prev_sdbd = ins.mnemonic == "SDBD";
            assert!(!cpu.st.halted, "{ctx}: halted early");
            cpu.step();
        }
        let fin: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.final.json"))).unwrap(),
        )
        .unwrap();
        let r: Vec<u16> = fin["r"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u16)
            .collect();
        assert!(cpu.st.halted, "{name}: not halted after the trace");
        assert_eq!(cpu.st.r.to_vec(), r, "{name}: final registers");
        assert_eq!(
            cpu.st.cycles,
            fin["cycles"].as_u64().unwrap(),
            "{name}: final cycles"
        );
        assert_eq!(
            cpu.st.instructions,
            fin["instructions"].as_u64().unwrap(),
            "{name}: instructions"
        );
        let ram = fin["ram"].as_object().unwrap();
        for a in (0x0100u16..=0x01EF).chain(0x0200..=0x035F) {
            let want = ram
                .get(&format!("0x{a:04X}"))
                .map_or(0, |v| v.as_u64().unwrap() as u16);
            assert_eq!(cpu.mem.read(a), want, "{name}: RAM ${a:04X}");
        }
    }
}

#[test]
fn shared_assembler_reproduces_every_fixture_image() {
    let Some(dir) = fixture_dir() else { return };
    for name in programs(&dir) {
        let src = std::fs::read_to_string(dir.join(format!("{name}.asm"))).unwrap();
        let prog = cp1600::asm::assemble(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bin = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        assert_eq!(prog.origin, 0x5000, "{name}");
        let got = prog.to_bytes();
        if got != bin {
            let first = got.chunks(2).zip(bin.chunks(2)).position(|(a, b)| a != b);
            panic!(
                "{name}: image differs (lengths {} vs {}), first differing word {first:?}",
                got.len(),
                bin.len()
            );
        }
    }
}

/// End to end through the tool layer: load each fixture with
/// `cp1600_load_rom`, run to HLT with `cp1600_run`, compare `cp1600_get_state`
/// and `cp1600_examine_memory` with the final state.
#[test]
fn shared_every_fixture_final_state_through_tools() {
    use cp1600::tools::Sessions;
    let Some(dir) = fixture_dir() else { return };
    let mut s = Sessions::new();
    for name in programs(&dir) {
        s.create_session(Some(&name)).unwrap();
        let path = dir.join(format!("{name}.bin"));
        s.load_rom(Some(&name), path.to_str().unwrap(), &Default::default())
            .unwrap();
        let fin: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.final.json"))).unwrap(),
        )
        .unwrap();
        let run = s
            .run(Some(&name), Some(1_000_000), None, &mut |_, _, _| true)
            .unwrap()
            .json();
        assert_eq!(run["reason"], "halted", "{name}: {run}");
        assert_eq!(run["executed"], fin["instructions"], "{name}");
        let st = s.get_state(Some(&name)).unwrap().json();
        for i in 0..8 {
            assert_eq!(
                st["registers"][format!("R{i}")],
                fin["r"][i],
                "{name}: R{i}"
            );
        }
        for f in ["S", "Z", "OV", "C"] {
            assert_eq!(st["flags"][f], fin["flags"][f], "{name}: flag {f}");
        }
        assert_eq!(st["cycles"], fin["cycles"], "{name}: cycles");
        assert_eq!(st["halted"], true);
        for (lo, n) in [(0x0100u16, 0xF0u32), (0x0200, 0x160)] {
            let mem = s.examine_memory(Some(&name), lo, Some(n)).unwrap().json();
            for cell in mem["memory"].as_array().unwrap() {
                let a = cell["address"].as_u64().unwrap();
                let want = fin["ram"]
                    .get(format!("0x{a:04X}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                assert_eq!(
                    cell["value"].as_u64().unwrap(),
                    want,
                    "{name}: RAM ${a:04X}"
                );
            }
        }
    }
    assert_eq!(
        s.list_sessions().unwrap().json()["sessions"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
}
