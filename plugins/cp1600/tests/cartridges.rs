//! Cartridges as real ones are built: an EXEC header at $5000, .bin + .cfg
//! and .rom of one program, [vars], EXEC images, and the stops a cartridge
//! run without the EXEC meets. Images are assembled here by `cp1600::asm`.

use cp1600::asm::assemble;
use cp1600::results::Json;
use cp1600::rom::{Segment, encode_rom};
use cp1600::tools::{LoadOptions, Sessions};
use serde_json::{Value, json};
use std::path::PathBuf;

fn ok(_: u64, _: u64, _: &str) -> bool {
    true
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("cp1600-carts-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, bytes: &[u8]) -> String {
    let p = dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// A cartridge in the SDK-1600 / IntyBASIC layout: header, title "Tiny"
/// (2025), flags `flags`, then `body` (which starts at label `main` or
/// `after` as the source places them).
fn cartridge(flags: u16, body: &str) -> Vec<u16> {
    let src = format!(
        " ROMW 16
 ORG $5000
 BIDECLE zero, zero, main, zero, ones, title
 DECLE {flags}
zero: DECLE 0, 0
ones: DECLE 1, 1, 1, 1, 1
title: DECLE 125, 84, 105, 110, 121, 0
{body}"
    );
    assemble(&src).unwrap().words
}

fn bytes(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn load(s: &mut Sessions, path: &str, opts: LoadOptions) -> Value {
    s.load_rom(None, path, &opts).unwrap().json()
}

fn run(s: &mut Sessions) -> Value {
    s.run(None, Some(100_000), None, &mut ok).unwrap().json()
}

#[test]
fn the_header_is_read_and_the_program_starts_where_it_says() {
    // IntyBASIC: the program follows the title; it sets its own stack.
    let words = cartridge(
        0x03C0,
        "main: DIS\n MVII #$02F0, R6\n MVII #$42, R0\n PSHR R0\n PULR R1\n MVO R1, $0200\n HLT\n",
    );
    let rom = write("inty.bin", &bytes(&words));
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(&mut s, &rom, LoadOptions::default());
    assert_eq!(
        l["header"],
        json!({"title": "Tiny", "year": 2025, "start": 0x501A, "title_address": 0x5014,
               "code_after_title": 0x501A, "flags": 0x03C0})
    );
    assert_eq!(
        (l["start"].clone(), l["entry_point"].clone()),
        (json!("header"), json!(0x501A))
    );
    assert!(l["start_note"].as_str().unwrap().contains("approximation"));
    let r = run(&mut s);
    assert_eq!(r["reason"], "halted", "{r}");
    assert_eq!(r["stop"]["instruction"], "HLT");
    assert_eq!(
        s.examine_memory(None, 0x0200, Some(1)).unwrap().json()["memory"][0]["value"],
        0x42
    );
    // Reset starts there again.
    assert_eq!(s.reset(None, None).unwrap().json()["pc"], 0x501A);
    // start load_address keeps the old behaviour, and says where the program is.
    let l = load(
        &mut s,
        &rom,
        LoadOptions {
            start: Some("load_address".into()),
            ..Default::default()
        },
    );
    assert_eq!(l["entry_point"], 0x5000);
    assert!(l["start_note"].as_str().unwrap().contains("$501A"), "{l}");
    // An unknown start is refused.
    let e = s
        .load_rom(
            None,
            &rom,
            &LoadOptions {
                start: Some("boot".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code, "INVALID_ARGUMENT");
}

#[test]
fn code_after_the_title_returns_into_the_program_start() {
    // SDK-1600 hello: code after the title returns (JR R5) to the EXEC,
    // which then calls the program start; without the EXEC R5 leads there.
    let words = cartridge(
        0x03C0,
        " MVII #1, R0\n MVO R0, $0201\n JR R5\nmain: MVII #2, R0\n MVO R0, $0202\n PULR R7\n",
    );
    let rom = write("sdk.bin", &bytes(&words));
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(&mut s, &rom, LoadOptions::default());
    assert_eq!(l["header"]["code_after_title"], 0x501A);
    assert_ne!(l["header"]["start"], 0x501A);
    let st = s.get_state(None).unwrap().json();
    assert_eq!(st["registers"]["R5"], l["header"]["start"]);
    assert_eq!(st["registers"]["R6"], 0x02F2);
    // The program's own PULR R7 then returns through the stacked start
    // again: a loop, nothing changes... so the first pass writes both words.
    let r = s.run(None, Some(200), None, &mut ok).unwrap().json();
    let m = s.examine_memory(None, 0x0201, Some(2)).unwrap().json();
    assert_eq!(
        (
            m["memory"][0]["value"].clone(),
            m["memory"][1]["value"].clone()
        ),
        (json!(1), json!(2)),
        "{r}"
    );
}

#[test]
fn a_bin_with_cfg_and_a_rom_of_one_program_load_identically() {
    let mut words = cartridge(
        0x0340,
        "main: MVII #$02F1, R6\n MVII #7, R0\n MVO R0, $0200\n HLT\n",
    );
    words.resize(256, 0);
    let bin = write("pair.bin", &bytes(&words));
    write("pair.cfg", b"[mapping]\n$0000 - $00FF = $5000\n");
    let rom = write(
        "pair.rom",
        &encode_rom(&[Segment {
            addr: 0x5000,
            words: words.clone(),
        }]),
    );
    let mut s = Sessions::new();
    s.create_session(Some("bin")).unwrap();
    s.create_session(Some("rom")).unwrap();
    let a = s
        .load_rom(Some("bin"), &bin, &LoadOptions::default())
        .unwrap()
        .json();
    let b = s
        .load_rom(Some("rom"), &rom, &LoadOptions::default())
        .unwrap()
        .json();
    assert_eq!(
        (a["format"].clone(), b["format"].clone()),
        (json!("bin+cfg"), json!("rom"))
    );
    for k in ["header", "entry_point", "segments", "start", "load_address"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!(a["start"], "header");
    assert_eq!(
        s.memory_map(Some("bin")).unwrap().json(),
        s.memory_map(Some("rom")).unwrap().json()
    );
    for start in (0x5000u16..0x5100).step_by(64) {
        assert_eq!(
            s.examine_memory(Some("bin"), start, Some(64))
                .unwrap()
                .json(),
            s.examine_memory(Some("rom"), start, Some(64))
                .unwrap()
                .json()
        );
    }
    let ra = s.run(Some("bin"), None, None, &mut ok).unwrap().json();
    let rb = s.run(Some("rom"), None, None, &mut ok).unwrap().json();
    assert_eq!(ra["reason"], "halted");
    assert_eq!(
        (ra["cycles"].clone(), ra["pc"].clone()),
        (rb["cycles"].clone(), rb["pc"].clone())
    );
}

#[test]
fn jlp_ram_comes_from_the_cfg_vars() {
    let p = assemble(
        " ORG $5000\n MVII #$1234, R0\n MVO R0, $8040\n MVI $8040, R1\n MVO R0, $9F7F\n HLT\n",
    )
    .unwrap();
    let bin = write("jlp.bin", &p.to_bytes());
    write(
        "jlp.cfg",
        b"[mapping]\n$0000 - $0008 = $5000\n[vars]\nname = \"JLP test\"\njlp = 1\n",
    );
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(&mut s, &bin, LoadOptions::default());
    // In name order: WIT has no map type, so the vars are a list.
    assert_eq!(
        l["cfg_vars"],
        json!([{"name": "jlp", "value": "1"}, {"name": "name", "value": "JLP test"}])
    );
    assert!(l["jlp"].as_str().unwrap().contains("$8040-$9F7F"));
    assert_eq!(run(&mut s)["reason"], "halted");
    assert_eq!(
        s.get_registers(None).unwrap().json()["registers"]["R1"],
        0x1234
    );
    let map = s.memory_map(None).unwrap().json();
    assert!(
        map["regions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == &json!({"start": 0x8040, "end": 0x9F7F, "kind": "ram16"})),
        "{map}"
    );
    // Without jlp the write vanishes (unmapped reads $FFFF).
    write("jlp.cfg", b"[mapping]\n$0000 - $0008 = $5000\n");
    load(&mut s, &bin, LoadOptions::default());
    run(&mut s);
    assert_eq!(
        s.get_registers(None).unwrap().json()["registers"]["R1"],
        0xFFFF
    );
}

/// Issue 38 item 13: a .cfg with one malformed `[vars]` line loads (jzIntv
/// warns and goes on), and the answer's `warnings` name the line and what
/// was wrong; a malformed `[mapping]` line is still refused.
#[test]
fn a_malformed_vars_line_loads_with_a_warning() {
    let p =
        assemble(" ORG $5000\n MVII #$1234, R0\n MVO R0, $8040\n MVI $8040, R1\n HLT\n").unwrap();
    let bin = write("badvars.bin", &p.to_bytes());
    write(
        "badvars.cfg",
        b"[mapping]\n$0000 - $0006 = $5000\n\n[vars]\nname = Space Armada\nyear = 1981\njlp = 1\n",
    );
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(&mut s, &bin, LoadOptions::default());
    assert_eq!(l["status"], "loaded");
    assert_eq!(l["format"], "bin+cfg");
    let w = l["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{l}");
    let w = w[0].as_str().unwrap();
    assert!(
        w.starts_with("CFG line 5: [vars]: `Armada` follows the value of `name`")
            && w.contains("name = \"Space Armada\""),
        "{w}"
    );
    assert_eq!(
        l["cfg_vars"],
        json!([{"name": "jlp", "value": "1"}, {"name": "year", "value": "1981"}])
    );
    assert_eq!(run(&mut s)["reason"], "halted");
    assert_eq!(
        s.get_registers(None).unwrap().json()["registers"]["R1"],
        0x1234,
        "the lines after the bad one (jlp = 1) still count"
    );

    // Thousands of bad lines: the first 20 and how many more.
    let mut cfg = String::from("[mapping]\n$0000 - $0006 = $5000\n[vars]\n");
    for i in 0..1000 {
        cfg.push_str(&format!("bad line {i}\n"));
    }
    write("badvars.cfg", cfg.as_bytes());
    let l = load(&mut s, &bin, LoadOptions::default());
    let w = l["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 21);
    assert_eq!(w[20], "… and 980 more skipped .cfg lines");

    // A [mapping] line jzIntv cannot read is an error there and here.
    write(
        "badvars.cfg",
        b"[mapping]\n$0000 $0006 = $5000\n[vars]\nname = \"x\"\n",
    );
    let e = s.load_rom(None, &bin, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.code, "INVALID_ROM");
    assert!(e.message.contains("CFG line 2"), "{}", e.message);
}

#[test]
fn files_that_are_not_rom_images_are_refused() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let asm = write("prog.asm", b"; a source file\n ROMW 16\n ORG $5000\n HLT\n");
    let e = s.load_rom(None, &asm, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.code, "INVALID_ROM");
    assert!(
        e.message.contains("text file") && e.message.contains("; a source file"),
        "{}",
        e.message
    );
    let odd = write("odd.bin", &[0, 0, 0]);
    let e = s.load_rom(None, &odd, &LoadOptions::default()).unwrap_err();
    assert!(
        e.message.contains("odd") && e.message.contains(".cfg"),
        "{}",
        e.message
    );
    let short = write("short.rom", &[0xA8]);
    assert_eq!(
        s.load_rom(None, &short, &LoadOptions::default())
            .unwrap_err()
            .code,
        "INVALID_ROM"
    );
}

#[test]
fn a_cfg_that_cannot_be_read_is_reported() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let bin = write("cfgdir.bin", &[0, 0]);
    let cfg = dir().join("cfgdir.cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    let e = s.load_rom(None, &bin, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.code, "FILE_ERROR");
    assert!(
        e.message.contains(".cfg beside the ROM") && e.message.contains("directory"),
        "{}",
        e.message
    );
    // An explicit cfg_path that is missing names the .cfg, not the ROM.
    let e = s
        .load_rom(
            None,
            &bin,
            &LoadOptions {
                cfg_path: Some(dir().join("none.cfg").to_string_lossy().into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        e.message.starts_with("cannot read the .cfg"),
        "{}",
        e.message
    );
    // load_address loads the .bin without its .cfg.
    assert!(
        s.load_rom(
            None,
            &bin,
            &LoadOptions {
                load_address: Some(0x5000),
                ..Default::default()
            }
        )
        .is_ok()
    );
}

#[test]
fn stops_are_reported_with_address_instruction_and_advice() {
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    // A call into the EXEC, which is not loaded.
    let p = assemble(" ORG $5000\n MVII #$02F0, R6\n JSR R5, $1738\n").unwrap();
    let rom = write("call-exec.bin", &p.to_bytes());
    load(&mut s, &rom, LoadOptions::default());
    let r = run(&mut s);
    assert_eq!(r["reason"], "jump_to_no_code");
    assert_eq!(
        (
            r["stop"]["address"].clone(),
            r["stop"]["instruction"].clone(),
            r["stop"]["target"].clone()
        ),
        (json!(0x5002), json!("JSR R5, $1738"), json!(0x1738))
    );
    let msg = r["stop"]["message"].as_str().unwrap();
    assert!(msg.contains("EXEC") && msg.contains("exec_path"), "{msg}");
    // The stack never set.
    let p = assemble(" ORG $5000\n PSHR R5\n").unwrap();
    load(
        &mut s,
        &write("nostack.bin", &p.to_bytes()),
        LoadOptions::default(),
    );
    let r = run(&mut s);
    assert_eq!(
        (r["reason"].clone(), r["executed"].clone()),
        (json!("stack_outside_ram"), json!(0))
    );
    assert!(
        r["stop"]["message"]
            .as_str()
            .unwrap()
            .contains("R6 = $0000"),
        "{r}"
    );
    // Stepping stops there too.
    let st = s.step(None, Some(10), None, &mut ok).unwrap().json();
    assert_eq!(
        (st["executed"].clone(), st["reason"].clone()),
        (json!(0), json!("stack_outside_ram"))
    );
    // Unless the checks are off.
    let st = s.step(None, Some(10), Some(false), &mut ok).unwrap().json();
    assert_eq!(st["executed"], 10);
    // Waiting for VBLANK with interrupts on.
    let p =
        assemble(" ORG $5000\n MVII #$02F0, R6\n EIS\nw: MVI $0102, R0\n TSTR R0\n BEQ w\n HLT\n")
            .unwrap();
    load(
        &mut s,
        &write("vblank.bin", &p.to_bytes()),
        LoadOptions::default(),
    );
    let r = run(&mut s);
    assert_eq!(r["reason"], "idle_loop");
    assert_eq!(r["stop"]["loop"], json!({"start": 0x5003, "end": 0x5006}));
    let msg = r["stop"]["message"].as_str().unwrap();
    assert!(
        msg.contains("$0102 (ram8)") && msg.contains("cp1600_interrupt"),
        "{msg}"
    );
    // The interrupt then goes to $1004, where no EXEC is.
    let i = s.interrupt(None).unwrap().json();
    assert!(
        i["warnings"][0].as_str().unwrap().contains("no EXEC"),
        "{i}"
    );
    let r = run(&mut s);
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("jump_to_no_code"), json!(0x1004))
    );
    assert!(
        r["stop"]["message"].as_str().unwrap().contains("interrupt"),
        "{r}"
    );
    // Running off the end.
    let p = assemble(" ORG $5000\n NOP\n").unwrap();
    load(
        &mut s,
        &write("end.bin", &p.to_bytes()),
        LoadOptions::default(),
    );
    let r = run(&mut s);
    assert_eq!(
        (r["reason"].clone(), r["stop"]["target"].clone()),
        (json!("unmapped_execution"), json!(0x5001))
    );
}

#[test]
fn an_exec_image_makes_reset_go_through_it() {
    // A stand-in EXEC: at $1000 set the stack and jump to the cartridge.
    let exec = assemble(" ORG $1000\n MVII #$02F1, R6\n J $5000\n").unwrap();
    let mut image = exec.words.clone();
    image.resize(4096, 0);
    let exec_path = write("exec.bin", &bytes(&image));
    let p = assemble(" ORG $5000\n PSHR R6\n HLT\n").unwrap();
    let rom = write("cart-for-exec.bin", &p.to_bytes());
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(
        &mut s,
        &rom,
        LoadOptions {
            exec_path: Some(exec_path.clone()),
            ..Default::default()
        },
    );
    assert_eq!(
        (
            l["start"].clone(),
            l["entry_point"].clone(),
            l["exec"].clone()
        ),
        (json!("exec"), json!(0x1000), json!(true))
    );
    let r = run(&mut s);
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("halted"), json!(0x5001))
    );
    assert_eq!(
        s.examine_memory(None, 0x02F1, Some(1)).unwrap().json()["memory"][0]["value"],
        0x02F1
    );
    assert_eq!(s.reset(None, None).unwrap().json()["pc"], 0x1000);
    // A file of the wrong size is not taken for an EXEC.
    let e = s
        .load_rom(
            None,
            &rom,
            &LoadOptions {
                exec_path: Some(rom.clone()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(e.message.contains("8192"), "{}", e.message);
    // start exec without one.
    let e = s
        .load_rom(
            None,
            &rom,
            &LoadOptions {
                start: Some("exec".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(e.message.contains("exec_path"), "{}", e.message);
}

#[test]
fn the_trace_pages_within_the_result_limit() {
    let p = assemble(" ORG $5000\nl: INCR R0\n B l\n").unwrap();
    let rom = write("count.bin", &p.to_bytes());
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    load(&mut s, &rom, LoadOptions::default());
    s.configure_trace(None, true, Some(65536)).unwrap();
    s.step(None, Some(70_000), None, &mut ok).unwrap();
    let page = s.get_trace(None, Some(4096), None).unwrap().json();
    assert!(
        page.to_string().len() < 1 << 20,
        "a full page is well under the 8 MiB limit"
    );
    assert_eq!(page["buffered"], 65536);
    assert_eq!(page["next_offset"], 4096);
    let newest = &page["trace"][4095];
    assert_eq!(newest["step"], 69_999);
    let older = s.get_trace(None, Some(3), Some(4096)).unwrap().json();
    let steps: Vec<u64> = older["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [69_999 - 4098, 69_999 - 4097, 69_999 - 4096]);
    // The oldest page has no next_offset.
    let last = s.get_trace(None, Some(10), Some(65530)).unwrap().json();
    assert_eq!(last["trace"].as_array().unwrap().len(), 6);
    assert!(last.get("next_offset").is_none());
    assert_eq!(
        s.get_trace(None, Some(4097), None).unwrap_err().code,
        "INVALID_ARGUMENT"
    );
}

#[test]
fn quick_boot_code_at_4800_starts_alone_and_yields_to_a_header() {
    // IntyBASIC's ECS hook at $4800 returns into the EXEC's boot.
    let hook = assemble(" ORG $4800\n NOP\n B $1041\n").unwrap().words;
    let mut file = hook.clone();
    file.resize(8, 0);
    let cart = cartridge(0x03C0, "main: HLT\n");
    file.extend(&cart);
    let bin = write("qb.bin", &bytes(&file));
    write(
        "qb.cfg",
        format!(
            "[mapping]\n$0000 - $0007 = $4800\n$0008 - ${:04X} = $5000\n",
            7 + cart.len()
        )
        .as_bytes(),
    );
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    let l = load(&mut s, &bin, LoadOptions::default());
    assert_eq!(
        (l["start"].clone(), l["entry_point"].clone()),
        (json!("header"), json!(0x501A))
    );
    assert!(l["quick_boot"].as_str().unwrap().contains("$4800"), "{l}");
    // Without a header, the EXEC would jump to $4800 with these registers.
    let only = write("qb-only.bin", &bytes(&hook));
    write("qb-only.cfg", b"[mapping]\n$0000 - $0002 = $4800\n");
    let l = load(&mut s, &only, LoadOptions::default());
    assert_eq!(
        (l["start"].clone(), l["entry_point"].clone()),
        (json!("quick_boot"), json!(0x4800))
    );
    let regs = &s.get_registers(None).unwrap().json()["registers"];
    assert_eq!(
        (regs["R1"].clone(), regs["R5"].clone(), regs["R6"].clone()),
        (json!(0x4800), json!(0x1041), json!(0x02F1))
    );
    let r = run(&mut s);
    assert_eq!(
        (r["reason"].clone(), r["stop"]["target"].clone()),
        (json!("jump_to_no_code"), json!(0x1041))
    );
}
