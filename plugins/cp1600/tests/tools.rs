//! The tool layer: JSON shapes, defaults, errors, ROM formats and the
//! debugging tools, without fixtures.

use cp1600::results::Json;
use cp1600::rom::{Segment, encode_rom};
use cp1600::tools::{LoadOptions, RegisterWrite, Sessions, UntilOptions};
use serde_json::json;
use std::path::PathBuf;

fn ok(_: u64, _: u64, _: &str) -> bool {
    true
}

fn temp(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("cp1600-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn words(w: &[u16]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

/// MVII #0,R0 / loop: INCR R0 / B loop
const LOOP: [u16; 5] = [0x02B8, 0x0000, 0x0008, 0x0220, 0x0002];
/// MVII #$42,R1 / MVO R1,$0200 / HLT
const SHORT: [u16; 5] = [0x02B9, 0x0042, 0x0241, 0x0200, 0x0000];

#[test]
fn session_lifecycle_and_errors() {
    let mut s = Sessions::new();
    let e = s.get_state(None).unwrap_err();
    assert_eq!(e.code, "SESSION_NOT_FOUND");
    let c = s.create_session(None).unwrap().json();
    assert_eq!(c["status"], "created");
    let id = c["session_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("session_"));
    s.create_session(Some("b")).unwrap();
    assert_eq!(
        s.create_session(Some("b")).unwrap_err().code,
        "SESSION_EXISTS"
    );
    let list = s.list_sessions().unwrap().json();
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(list["sessions"][0]["state"], "idle");
    assert_eq!(list["sessions"][0]["rom_loaded"], false);
    assert!(
        list["sessions"][0]["created_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(
        s.get_state(Some("nope")).unwrap_err().code,
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        s.step(None, None, None, &mut ok).unwrap_err().code,
        "NO_ROM_LOADED"
    );
    s.switch_session(&id).unwrap();
    assert_eq!(s.get_state(None).unwrap().json()["session_id"], id.as_str());
    assert_eq!(
        s.destroy_session("b").unwrap().json()["status"],
        "destroyed"
    );
    assert_eq!(
        s.destroy_session("b").unwrap_err().code,
        "SESSION_NOT_FOUND"
    );
}

#[test]
fn load_step_run_reset_and_inspect() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let path = temp("short.bin", &words(&SHORT));
    let l = s
        .load_rom(None, &path, &LoadOptions::default())
        .unwrap()
        .json();
    assert_eq!(l["status"], "loaded");
    assert_eq!(
        (
            l["rom_size"].clone(),
            l["load_address"].clone(),
            l["entry_point"].clone()
        ),
        (json!(10), json!(0x5000), json!(0x5000))
    );
    let st = s.step(None, None, None, &mut ok).unwrap().json();
    assert_eq!(
        st,
        json!({"executed": 1, "halted": false, "pc": 0x5002, "cycles": 8, "session_id": st["session_id"]})
    );
    let r = s.run(None, None, None, &mut ok).unwrap().json();
    assert_eq!(
        (r["halted"].clone(), r["reason"].clone(), r["pc"].clone()),
        (json!(true), json!("halted"), json!(0x5004))
    );
    assert_eq!(
        s.get_registers(None).unwrap().json()["registers"]["R1"],
        0x42
    );
    assert_eq!(
        s.get_flags(None).unwrap().json(),
        json!({"flags": {"C": false, "OV": false, "Z": false, "S": false}})
    );
    assert_eq!(
        s.examine_memory(None, 0x0200, Some(2)).unwrap().json(),
        json!({"memory": [{"address": 512, "value": 66}, {"address": 513, "value": 0}]})
    );
    let d = s.disassemble(None, 0x5000, Some(0x5004)).unwrap().json();
    let ops: Vec<&str> = d["disassembly"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["opcode"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["MVII", "MVO", "HLT"]);
    assert_eq!(d["disassembly"][0]["operands"], "#$0042, R1");
    assert_eq!(d["disassembly"][0]["raw"], 0x02B9);
    // Stepping a halted CPU executes nothing.
    assert_eq!(
        s.step(None, Some(5), None, &mut ok).unwrap().json()["executed"],
        0
    );
    let r = s.reset(None, None).unwrap().json();
    assert_eq!(
        (r["status"].clone(), r["pc"].clone()),
        (json!("reset"), json!(0x5000))
    );
    assert_eq!(
        s.examine_memory(None, 0x0200, Some(1)).unwrap().json()["memory"][0]["value"],
        0
    );
    s.reset(None, Some(false)).unwrap();
    assert_eq!(
        s.run(None, None, None, &mut ok).unwrap_err().code,
        "NO_ROM_LOADED"
    );
}

#[test]
fn load_errors_name_the_problem() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let e = s
        .load_rom(None, "/nonexistent/x.bin", &LoadOptions::default())
        .unwrap_err();
    assert_eq!(e.code, "FILE_ERROR");
    assert!(e.message.contains("/nonexistent/x.bin"));
    let odd = temp("odd.bin", &[0, 1, 2]);
    let e = s.load_rom(None, &odd, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.code, "INVALID_ROM");
    assert!(e.message.contains("odd"));
    let mut rom = encode_rom(&[Segment {
        addr: 0x5000,
        words: SHORT.to_vec(),
    }]);
    rom[20] ^= 0xFF;
    let bad = temp("bad.rom", &rom);
    let e = s.load_rom(None, &bad, &LoadOptions::default()).unwrap_err();
    assert!(e.message.contains("CRC"), "{}", e.message);
    // A directory, or a named pipe (opening one would block until a
    // writer came), is refused before it is opened.
    let dir = std::env::temp_dir();
    let e = s
        .load_rom(None, dir.to_str().unwrap(), &LoadOptions::default())
        .unwrap_err();
    assert!(e.message.contains("is a directory"), "{}", e.message);
    let e = s
        .load_rom(None, "/dev/null", &LoadOptions::default())
        .unwrap_err();
    assert!(e.message.contains("not a regular file"), "{}", e.message);
}

#[test]
fn long_arguments_are_not_echoed_whole() {
    let mut s = Sessions::new();
    let long = "x".repeat(100_000);
    let e = s.get_state(Some(&long)).unwrap_err();
    assert_eq!(e.code, "SESSION_NOT_FOUND");
    assert!(
        e.message.len() < 400 && e.message.contains("(100000 characters)"),
        "{}",
        e.message
    );
    let e = s
        .load_rom(None, &format!("/{long}.bin"), &LoadOptions::default())
        .unwrap_err();
    assert!(e.message.len() < 400, "{}", e.message);
}

#[test]
fn rom_and_cfg_formats_load() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let rom = temp(
        "prog.rom",
        &encode_rom(&[Segment {
            addr: 0x5000,
            words: SHORT.to_vec(),
        }]),
    );
    let l = s
        .load_rom(None, &rom, &LoadOptions::default())
        .unwrap()
        .json();
    assert_eq!(
        (l["format"].clone(), l["entry_point"].clone()),
        (json!("rom"), json!(0x5000))
    );
    assert_eq!(
        s.run(None, None, None, &mut ok).unwrap().json()["reason"],
        "halted"
    );
    // A .bin whose .cfg places it at $6000.
    let bin = temp("cfgprog.bin", &words(&SHORT));
    temp("cfgprog.cfg", b"[mapping]\n$0000 - $0004 = $6000\n");
    let l = s
        .load_rom(None, &bin, &LoadOptions::default())
        .unwrap()
        .json();
    assert_eq!(
        (l["format"].clone(), l["entry_point"].clone()),
        (json!("bin+cfg"), json!(0x6000))
    );
    assert_eq!(
        s.examine_memory(None, 0x5000, Some(1)).unwrap().json()["memory"][0]["value"],
        0xFFFF
    );
    // An explicit load address wins over the .cfg.
    let l = s
        .load_rom(
            None,
            &bin,
            &LoadOptions {
                load_address: Some(0x7000),
                ..Default::default()
            },
        )
        .unwrap()
        .json();
    assert_eq!(
        (l["format"].clone(), l["entry_point"].clone()),
        (json!("bin"), json!(0x7000))
    );
    // Adding an overlapping image is refused.
    let e = s
        .load_rom(
            None,
            &bin,
            &LoadOptions {
                load_address: Some(0x7002),
                keep_existing: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(e.message.contains("$7002"), "{}", e.message);
}

#[test]
fn breakpoints_run_until_trace_and_writes() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let path = temp("loop.bin", &words(&LOOP));
    s.load_rom(None, &path, &LoadOptions::default()).unwrap();
    s.set_breakpoint(None, 0x5003).unwrap();
    assert_eq!(
        s.list_breakpoints(None).unwrap().json()["breakpoints"],
        json!([0x5003])
    );
    let r = s.run(None, Some(1000), None, &mut ok).unwrap().json();
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("breakpoint"), json!(0x5003))
    );
    assert_eq!(s.clear_breakpoint(None, None).unwrap().json()["cleared"], 1);
    assert_eq!(
        s.clear_breakpoint(None, Some(1)).unwrap_err().code,
        "BREAKPOINT_NOT_FOUND"
    );
    let r = s.run(None, Some(90), None, &mut ok).unwrap().json();
    assert_eq!(r["reason"], "max_cycles_reached");
    s.configure_trace(None, true, Some(8)).unwrap();
    let u = UntilOptions {
        register: Some("r0".into()),
        register_value: Some(100),
        ..Default::default()
    };
    let r = s.run_until(None, &u, &mut ok).unwrap().json();
    assert_eq!(r["reason"], "register_match");
    assert_eq!(
        s.get_registers(None).unwrap().json()["registers"]["R0"],
        100
    );
    let t = s.get_trace(None, Some(2), None).unwrap().json();
    assert_eq!(t["trace"].as_array().unwrap().len(), 2);
    assert_eq!(t["trace"][1]["text"], "INCR R0");
    assert_eq!(t["trace"][1]["r"][0], 99);
    let u = UntilOptions {
        pc: Some(0x5003),
        ..Default::default()
    };
    assert_eq!(
        s.run_until(None, &u, &mut ok).unwrap().json()["reason"],
        "pc_reached"
    );
    let u = UntilOptions {
        register: Some("R9".into()),
        register_value: Some(1),
        ..Default::default()
    };
    assert_eq!(
        s.run_until(None, &u, &mut ok).unwrap_err().code,
        "INVALID_ARGUMENT"
    );
    // Writes: RAM widths, ROM patching, unmapped refusal, registers.
    let w = s.write_memory(None, 0x01EF, &[0x1234, 0x5678]).unwrap_err();
    assert_eq!(w.code, "UNMAPPED_ADDRESS");
    assert_eq!(
        s.write_memory(None, 0x0100, &[0x1234]).unwrap().json()["values"],
        json!([0x34])
    );
    s.write_memory(None, 0x5002, &[0x0000]).unwrap(); // patch INCR into HLT
    let mut w = RegisterWrite::default();
    w.r[7] = Some(0x5002);
    w.c = Some(true);
    let st = s.write_registers(None, &w).unwrap().json();
    assert_eq!(
        (st["pc"].clone(), st["flags"]["C"].clone()),
        (json!(0x5002), json!(true))
    );
    assert_eq!(
        s.run(None, None, None, &mut ok).unwrap().json()["reason"],
        "halted"
    );
}

#[test]
fn cancellation_stops_cleanly() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    s.load_rom(
        None,
        &temp("loop2.bin", &words(&LOOP)),
        &LoadOptions::default(),
    )
    .unwrap();
    let mut calls = 0;
    let r = s
        .run(None, Some(u64::MAX), None, &mut |_, _, _| {
            calls += 1;
            false
        })
        .unwrap()
        .json();
    assert_eq!(r["reason"], "cancelled");
    assert_eq!(calls, 1);
    assert_eq!(
        s.step(None, Some(1), None, &mut ok).unwrap().json()["executed"],
        1
    );
}

#[test]
fn output_is_bounded() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let m = s.examine_memory(None, 0, Some(5000)).unwrap().json();
    assert_eq!(m["memory"].as_array().unwrap().len(), 1024);
    assert!(m["note"].as_str().unwrap().contains("1024"));
    let d = s.disassemble(None, 0x0000, Some(0xFFFF)).unwrap().json();
    assert_eq!(d["disassembly"].as_array().unwrap().len(), 256);
    assert!(d["note"].is_string());
    assert_eq!(
        s.disassemble(None, 10, Some(5)).unwrap_err().code,
        "INVALID_ARGUMENT"
    );
}
