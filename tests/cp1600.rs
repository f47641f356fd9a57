//! End-to-end tests of the cp1600 plugin through a real MCP client: the
//! sample programs (samples/cp1600) reach the final states their README
//! documents, the debugging tools, the errors; in `shared_` tests every
//! fixture program of ../shared/fixtures/cp1600 reaches its jzIntv final state.

use e2e::{
    Server, fixtures, heard, is_error, json as result_json, only_plugin, repo, samples, text,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A server with only cp1600, the given directories granted read-only.
struct Cp {
    server: Server,
    /// Each tool's `outputSchema`, which every result is checked against.
    schemas: HashMap<String, Value>,
    _plugins: TempDir,
}

impl Cp {
    async fn start(read_only: &[&Path], workspace: Option<&Path>) -> Cp {
        let plugins = only_plugin("cp1600.wasm");
        let mut args: Vec<String> =
            vec!["--plugins".into(), plugins.path().to_string_lossy().into()];
        for d in read_only {
            args.extend(["--allow".into(), format!("{}:ro", d.display())]);
        }
        if let Some(ws) = workspace {
            args.extend(["--workspace".into(), ws.to_string_lossy().into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::start(&args).await;
        let schemas = server
            .tools()
            .await
            .into_iter()
            .filter_map(|t| {
                let schema = Value::Object((*t.output_schema?).clone());
                Some((t.name.to_string(), schema))
            })
            .collect();
        Cp {
            server,
            schemas,
            _plugins: plugins,
        }
    }

    async fn samples() -> Cp {
        Cp::start(&[&samples("cp1600")], None).await
    }

    /// Calls a tool that must succeed; returns its JSON document, checked
    /// against the tool's `outputSchema`.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self.server.ok(tool, args).await;
        // The text block carries the same JSON as the structured content,
        // compact with sorted keys (as the plugin printed it when its results
        // were `@json` strings).
        let v = result_json(&r);
        assert_eq!(
            text(&r),
            v.to_string(),
            "{tool}: text and structured content"
        );
        let schema = self
            .schemas
            .get(tool)
            .unwrap_or_else(|| panic!("{tool} has no outputSchema"));
        if let Err(e) = conforms(schema, &v, tool) {
            panic!("{e}\nin {v}");
        }
        v
    }

    /// Calls a tool that must fail; returns (code, text).
    async fn err(&self, tool: &str, args: Value) -> (String, String) {
        e2e::coded_error(&self.server.err(tool, args).await)
    }

    /// Creates session `id`, loads `rom` into it; returns the load result.
    async fn load(&self, id: &str, rom: &Path) -> Value {
        let c = self
            .ok("cp1600_create_session", json!({"session_id": id}))
            .await;
        assert_eq!(
            (c["session_id"].as_str(), c["status"].as_str()),
            (Some(id), Some("created")),
            "{c}"
        );
        self.ok(
            "cp1600_load_rom",
            json!({"session_id": id, "rom_path": rom}),
        )
        .await
    }

    /// One memory word.
    async fn word(&self, id: &str, addr: u16) -> u64 {
        let m = self
            .ok(
                "cp1600_examine_memory",
                json!({"session_id": id, "start_address": addr, "count": 1}),
            )
            .await;
        assert_eq!(m["memory"][0]["address"], addr);
        m["memory"][0]["value"].as_u64().unwrap()
    }
}

/// Whether `v` follows `schema` in the vocabulary the host's output schemas
/// use (type, properties, required, additionalProperties, items, enum,
/// minimum, maximum); `at` names the place for the error.
fn conforms(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let ty = schema["type"].as_str().unwrap_or("");
    let fits = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        other => return Err(format!("{at}: schema type `{other}` not understood")),
    };
    if !fits {
        return Err(format!("{at}: {v} is not {ty}"));
    }
    if let Some(cases) = schema["enum"].as_array()
        && !cases.contains(v)
    {
        return Err(format!("{at}: {v} is not one of {cases:?}"));
    }
    if let Some(n) = v.as_f64() {
        let min = schema["minimum"].as_f64().unwrap_or(f64::MIN);
        let max = schema["maximum"].as_f64().unwrap_or(f64::MAX);
        if n < min || n > max {
            return Err(format!("{at}: {n} is outside {min}..={max}"));
        }
    }
    if let Some(items) = v.as_array() {
        for (i, item) in items.iter().enumerate() {
            conforms(&schema["items"], item, &format!("{at}[{i}]"))?;
        }
    }
    if let Some(obj) = v.as_object() {
        for key in schema["required"].as_array().into_iter().flatten() {
            let key = key.as_str().unwrap_or_default();
            if !obj.contains_key(key) {
                return Err(format!("{at}: required `{key}` is missing"));
            }
        }
        for (key, value) in obj {
            match schema["properties"].get(key) {
                Some(s) => conforms(s, value, &format!("{at}.{key}"))?,
                None => return Err(format!("{at}: `{key}` is not in the schema")),
            }
        }
    }
    Ok(())
}

fn sample(name: &str) -> PathBuf {
    samples("cp1600").join(format!("{name}.bin"))
}

// ---------------------------------------------------------------- samples

/// A program's documented final state: registers, flags, RAM words.
type Expected = (
    &'static str,
    Vec<(&'static str, u64)>,
    Vec<(&'static str, bool)>,
    Vec<(u16, u64)>,
);

#[tokio::test]
async fn every_sample_program_reaches_its_documented_final_state() {
    let cp = Cp::samples().await;
    // (program, registers, flags, RAM) from samples/cp1600/README.md.
    let lvl1 = 0x5009u64; // start: MVII(2) CLRR(1) CALL(3) MVO(2) HLT(1)
    let lvl2 = lvl1 + 6; // lvl1: PSHR(1) INCR(1) CALL(3) PULR(1)
    let cases: Vec<Expected> = vec![
        (
            "01-hello-world",
            vec![("R0", 142), ("R1", 100), ("R2", 142)],
            vec![],
            vec![(0x0200, 142)],
        ),
        (
            "02-counter-loop",
            vec![("R0", 10), ("R1", 0)],
            vec![("Z", true)],
            vec![(0x0200, 10)],
        ),
        (
            "03-subroutine-call",
            vec![("R0", 13), ("R6", 0x02F0)],
            vec![],
            vec![(0x0200, 10), (0x0201, 13)],
        ),
        (
            "04-bit-manipulation",
            vec![("R0", 0), ("R1", 4), ("R2", 0), ("R3", 0x0012)],
            vec![],
            vec![(0x0200, 4), (0x0201, 0x0012)],
        ),
        (
            "05-signed-math",
            vec![("R0", 0x8000), ("R1", 0xA0A0), ("R2", 2), ("R3", 0xFFFD)],
            vec![("C", true), ("OV", false), ("Z", false), ("S", false)],
            vec![],
        ),
        (
            "06-nested-calls",
            vec![
                ("R0", 111),
                ("R6", 0x02F0),
                ("R4", lvl2 + 1 + 2 + 3),
                ("R5", lvl1 + 2 + 3),
            ],
            vec![],
            vec![
                (0x0200, 111),
                (0x02F0, 0x5000 + 2 + 1 + 3),
                (0x02F1, lvl1 + 2 + 3),
            ],
        ),
    ];
    for (name, regs, flags, ram) in &cases {
        let size = std::fs::metadata(sample(name)).unwrap().len();
        let loaded = cp.load(name, &sample(name)).await;
        assert_eq!(loaded["status"], "loaded", "{name}");
        assert_eq!(loaded["rom_size"], size, "{name}");
        assert_eq!(
            (
                loaded["load_address"].clone(),
                loaded["entry_point"].clone()
            ),
            (json!(0x5000), json!(0x5000)),
            "{name}"
        );
        let run = cp
            .ok(
                "cp1600_run",
                json!({"session_id": name, "max_cycles": 100_000}),
            )
            .await;
        assert_eq!(
            (run["halted"].clone(), run["reason"].clone()),
            (json!(true), json!("halted")),
            "{name}: {run}"
        );
        let st = cp.ok("cp1600_get_state", json!({"session_id": name})).await;
        assert_eq!(st["halted"], true, "{name}");
        assert_eq!(st["cycles"], run["cycles"], "{name}");
        assert_eq!(st["pc"], st["registers"]["R7"], "{name}");
        for (r, v) in regs {
            assert_eq!(st["registers"][r], *v, "{name}: {r} in {st}");
        }
        for (f, v) in flags {
            assert_eq!(st["flags"][f], *v, "{name}: flag {f} in {st}");
        }
        for (addr, v) in ram {
            assert_eq!(cp.word(name, *addr).await, *v, "{name}: RAM ${addr:04X}");
        }
        // The narrower views agree with the snapshot.
        let regs = cp
            .ok("cp1600_get_registers", json!({"session_id": name}))
            .await;
        assert_eq!(regs["registers"], st["registers"], "{name}");
        let fl = cp.ok("cp1600_get_flags", json!({"session_id": name})).await;
        assert_eq!(fl["flags"], st["flags"], "{name}");
    }
    let list = cp.ok("cp1600_list_sessions", json!({})).await;
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), cases.len());
    assert!(
        sessions
            .iter()
            .all(|s| s["state"] == "halted" && s["rom_loaded"] == true),
        "{list}"
    );
    // The last created session is the active one.
    let active: Vec<&Value> = sessions.iter().filter(|s| s["active"] == true).collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0]["session_id"], "06-nested-calls");
    cp.server.stop().await;
}

#[tokio::test]
async fn the_readme_walkthrough_works_with_a_workspace_relative_path() {
    let cp = Cp::start(&[&samples("cp1600")], Some(&repo())).await;
    let c = cp.ok("cp1600_create_session", json!({})).await;
    let id = c["session_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("session_"), "{id}");
    cp.ok(
        "cp1600_load_rom",
        json!({"rom_path": "samples/cp1600/01-hello-world.bin"}),
    )
    .await;
    let run = cp.ok("cp1600_run", json!({})).await;
    assert_eq!(run["reason"], "halted");
    let st = cp.ok("cp1600_get_state", json!({})).await;
    assert_eq!(st["session_id"], id.as_str());
    assert_eq!(
        (st["registers"]["R0"].clone(), st["registers"]["R1"].clone()),
        (json!(142), json!(100))
    );
    cp.server.stop().await;
}

/// Every tool has an `outputSchema` (its result is a typed record), and
/// every property in it says what it is: the descriptions come from the
/// WIT doc comments, and are what an agent reads.
#[tokio::test]
async fn every_tool_declares_its_output_schema_with_descriptions() {
    let cp = Cp::samples().await;
    let tools = cp.server.tools().await;
    assert_eq!(
        tools.len(),
        27,
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    // All but the screenshot, which answers in a caption and a PNG.
    assert_eq!(
        cp.schemas.len(),
        tools.len() - 1,
        "a tool without outputSchema"
    );
    assert!(!cp.schemas.contains_key("cp1600_screenshot"));
    fn described(schema: &Value, at: &str, out: &mut Vec<String>) {
        for (key, prop) in schema["properties"].as_object().into_iter().flatten() {
            if prop["description"].as_str().is_none_or(str::is_empty) {
                out.push(format!("{at}.{key}"));
            }
            described(prop, &format!("{at}.{key}"), out);
            described(&prop["items"], &format!("{at}.{key}[]"), out);
        }
    }
    let mut bare = Vec::new();
    for (name, schema) in &cp.schemas {
        assert_eq!(schema["type"], "object", "{name}");
        described(schema, name, &mut bare);
    }
    assert!(bare.is_empty(), "undocumented: {bare:?}");
    // Keys WIT cannot spell keep the spec's names.
    let state = &cp.schemas["cp1600_get_state"]["properties"];
    let regs: Vec<&String> = state["registers"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(regs, ["R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7"]);
    let flags: Vec<&String> = state["flags"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(flags, ["C", "OV", "S", "Z"]);
}

#[tokio::test]
async fn disassemble_breakpoints_step_and_trace() {
    let cp = Cp::samples().await;
    cp.load("loop", &sample("02-counter-loop")).await;
    // start: CLRR R0 / MVII #10, R1 / loop: INCR R0 / DECR R1 / BNEQ loop / MVO R0, $0200 / HLT
    let d = cp
        .ok(
            "cp1600_disassemble",
            json!({"start_address": 0x5000, "end_address": 0x5009}),
        )
        .await;
    let ins = d["disassembly"].as_array().unwrap();
    let addrs: Vec<u64> = ins.iter().map(|i| i["address"].as_u64().unwrap()).collect();
    assert_eq!(
        addrs,
        [0x5000, 0x5001, 0x5003, 0x5004, 0x5005, 0x5007, 0x5009]
    );
    let ops: Vec<&str> = ins.iter().map(|i| i["opcode"].as_str().unwrap()).collect();
    assert_eq!(ops, ["CLRR", "MVII", "INCR", "DECR", "BNEQ", "MVO", "HLT"]);
    assert_eq!(ins[1]["operands"], "#$000A, R1");
    assert_eq!(ins[4]["operands"], "$5003");
    assert_eq!(ins[1]["size"], 2);
    assert_eq!(ins[2]["raw"], 0x0008, "INCR R0");

    // A breakpoint at `loop`: run stops before it, every iteration.
    cp.ok("cp1600_set_breakpoint", json!({"address": 0x5003}))
        .await;
    assert_eq!(
        cp.ok("cp1600_list_breakpoints", json!({})).await["breakpoints"],
        json!([0x5003])
    );
    let r = cp.ok("cp1600_run", json!({})).await;
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone(), r["halted"].clone()),
        (json!("breakpoint"), json!(0x5003), json!(false))
    );
    // CLRR (6) + MVII (8) cycles, jzIntv's counts.
    assert_eq!(r["cycles"], 14);
    assert_eq!(
        cp.ok("cp1600_get_registers", json!({})).await["registers"]["R0"],
        0
    );
    let r = cp.ok("cp1600_run", json!({})).await;
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("breakpoint"), json!(0x5003))
    );
    // INCR (6) + DECR (6) + BNEQ taken (9).
    assert_eq!(r["cycles"], 14 + 21);
    assert_eq!(
        cp.ok("cp1600_get_registers", json!({})).await["registers"]["R0"],
        1
    );
    // Stepping ignores breakpoints and reports where it stopped.
    let s = cp.ok("cp1600_step", json!({"count": 1})).await;
    assert_eq!(
        (s["executed"].clone(), s["pc"].clone(), s["halted"].clone()),
        (json!(1), json!(0x5004), json!(false))
    );
    cp.ok(
        "cp1600_configure_trace",
        json!({"enabled": true, "capacity": 16}),
    )
    .await;
    let s = cp.ok("cp1600_step", json!({"count": 3})).await;
    assert_eq!(s["pc"], 0x5004);
    let t = cp.ok("cp1600_get_trace", json!({"count": 3})).await;
    let texts: Vec<&str> = t["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["DECR R1", "BNEQ $5003", "INCR R0"]);
    assert_eq!(t["trace"][2]["r"][0], 2, "state before the second INCR R0");
    // Clearing the breakpoint lets the loop run to HLT.
    assert_eq!(
        cp.ok("cp1600_clear_breakpoint", json!({"address": 0x5003}))
            .await["cleared"],
        1
    );
    assert_eq!(
        cp.ok("cp1600_list_breakpoints", json!({})).await["breakpoints"],
        json!([])
    );
    let r = cp.ok("cp1600_run", json!({})).await;
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("halted"), json!(0x5009))
    );
    assert_eq!(cp.word("loop", 0x0200).await, 10);
    // run_until a register value, after a reset.
    let reset = cp.ok("cp1600_reset", json!({})).await;
    assert_eq!(
        (reset["status"].clone(), reset["pc"].clone()),
        (json!("reset"), json!(0x5000))
    );
    assert_eq!(cp.word("loop", 0x0200).await, 0, "reset clears RAM");
    let r = cp
        .ok(
            "cp1600_run_until",
            json!({"register": "R0", "register_value": 4}),
        )
        .await;
    assert_eq!(r["reason"], "register_match");
    assert_eq!(
        cp.ok("cp1600_get_registers", json!({})).await["registers"]["R1"],
        7,
        "stopped right after the 4th INCR"
    );
    let r = cp.ok("cp1600_run_until", json!({"pc": 0x5007})).await;
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("pc_reached"), json!(0x5007))
    );
    // Writing registers and memory.
    let st = cp
        .ok("cp1600_write_registers", json!({"r0": 0x1234, "c": true}))
        .await;
    assert_eq!(
        (st["registers"]["R0"].clone(), st["flags"]["C"].clone()),
        (json!(0x1234), json!(true))
    );
    cp.ok("cp1600_step", json!({"count": 2})).await;
    assert_eq!(
        cp.word("loop", 0x0200).await,
        0x1234,
        "MVO stored the written R0"
    );
    let w = cp
        .ok(
            "cp1600_write_memory",
            json!({"address": 0x0100, "values": [0x1234]}),
        )
        .await;
    assert_eq!(w["values"], json!([0x34]), "8-bit RAM keeps the low byte");
    cp.server.stop().await;
}

/// Everything a client sees of a session but its id: state, RAM, the
/// program, breakpoints, the map.
async fn observe(cp: &Cp, id: &str) -> Value {
    let mut state = cp.ok("cp1600_get_state", json!({"session_id": id})).await;
    state.as_object_mut().unwrap().remove("session_id");
    let mem = |start: u32, count: u32| {
        cp.ok(
            "cp1600_examine_memory",
            json!({"session_id": id, "start_address": start, "count": count}),
        )
    };
    let (ram, rom) = (mem(0x0100, 0x260).await, mem(0x5000, 32).await);
    let bps = cp
        .ok("cp1600_list_breakpoints", json!({"session_id": id}))
        .await;
    let map = cp.ok("cp1600_memory_map", json!({"session_id": id})).await;
    json!([state, ram, rom, bps, map])
}

#[tokio::test]
async fn a_snapshot_restores_into_a_session_that_steps_identically() {
    let cp = Cp::samples().await;
    cp.load("orig", &sample("06-nested-calls")).await;
    cp.ok("cp1600_step", json!({"session_id": "orig", "count": 5}))
        .await;
    cp.ok(
        "cp1600_set_breakpoint",
        json!({"session_id": "orig", "address": 0x5012}),
    )
    .await;
    let snap = cp
        .ok("cp1600_snapshot", json!({"session_id": "orig"}))
        .await;
    let text = snap["snapshot"].as_str().unwrap().to_owned();
    // Version 2 carries the STIC registers (version 1 still restores).
    assert_eq!(snap["format_version"], 2);
    // The size in bytes, and the tool says the text is for restoring.
    assert_eq!(snap["bytes"], text.len());
    let doc = cp.server.tool_description("cp1600_snapshot").await;
    assert!(doc.contains("not for reading"), "{doc}");
    // Only the mapped words travel: RAM, GRAM and the small program.
    assert!(text.len() < 2600, "{} characters", text.len());
    let made = cp
        .ok(
            "cp1600_create_session",
            json!({"session_id": "copy", "snapshot": text}),
        )
        .await;
    assert_eq!(made["restored"]["pc"], snap["pc"]);
    assert_eq!(made["restored"]["cycles"], snap["cycles"]);
    assert_eq!(made["restored"]["breakpoints"], 1);
    assert!(
        made["restored"]["rom_path"]
            .as_str()
            .unwrap()
            .ends_with("06-nested-calls.bin")
    );
    assert_eq!(observe(&cp, "orig").await, observe(&cp, "copy").await);
    for n in [1, 3, 50] {
        for id in ["orig", "copy"] {
            cp.ok("cp1600_step", json!({"session_id": id, "count": n}))
                .await;
        }
        assert_eq!(
            observe(&cp, "orig").await,
            observe(&cp, "copy").await,
            "after {n} more"
        );
    }
    // The copy is its own session: stepping it leaves the original alone.
    cp.ok("cp1600_reset", json!({"session_id": "copy"})).await;
    assert_ne!(observe(&cp, "orig").await, observe(&cp, "copy").await);

    // Damaged snapshots are refused and make no session.
    let before = cp.ok("cp1600_list_sessions", json!({})).await["sessions"]
        .as_array()
        .unwrap()
        .len();
    let mut flipped = text.clone().into_bytes();
    let mid = flipped.len() / 2;
    flipped[mid] = if flipped[mid] == b'Q' { b'R' } else { b'Q' };
    let flipped = String::from_utf8(flipped).unwrap();
    for (bad, says) in [
        (text[..text.len() / 2].to_owned(), "snapshot refused"),
        (flipped, "checksum"),
        ("not base64!".to_owned(), "not base64"),
    ] {
        let (code, msg) = cp
            .err(
                "cp1600_create_session",
                json!({"session_id": "bad", "snapshot": bad}),
            )
            .await;
        assert_eq!(code, "INVALID_SNAPSHOT", "{msg}");
        assert!(msg.contains(says), "{msg}");
    }
    let after = cp.ok("cp1600_list_sessions", json!({})).await["sessions"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after);
}

#[tokio::test]
async fn the_bench_loop_never_halts_and_budgets_stop_it() {
    let cp = Cp::samples().await;
    cp.load("bench", &sample("bench-loop")).await;
    let s = cp.ok("cp1600_step", json!({"count": 100_000})).await;
    assert_eq!(
        (s["executed"].clone(), s["halted"].clone()),
        (json!(100_000), json!(false))
    );
    let r = cp.ok("cp1600_run", json!({"max_cycles": 5000})).await;
    assert_eq!(
        (r["reason"].clone(), r["halted"].clone()),
        (json!("max_cycles_reached"), json!(false))
    );
    let c = r["cycles"].as_u64().unwrap() - s["cycles"].as_u64().unwrap();
    assert!(
        (5000..5020).contains(&c),
        "ran {c} cycles for a 5000-cycle budget"
    );
    cp.server.stop().await;
}

#[tokio::test]
async fn errors_carry_codes_and_say_what_to_do() {
    let scratch = tempfile::tempdir().unwrap();
    let scratch = scratch.path().canonicalize().unwrap();
    std::fs::write(scratch.join("odd.bin"), [0u8, 1, 2]).unwrap();
    let cp = Cp::start(&[&samples("cp1600"), &scratch], None).await;
    let (code, msg) = cp.err("cp1600_get_state", json!({})).await;
    assert_eq!(code, "SESSION_NOT_FOUND");
    assert!(msg.contains("cp1600_create_session"), "{msg}");
    let (code, _) = cp
        .err("cp1600_get_state", json!({"session_id": "nope"}))
        .await;
    assert_eq!(code, "SESSION_NOT_FOUND");
    cp.ok("cp1600_create_session", json!({"session_id": "a"}))
        .await;
    let (code, _) = cp
        .err("cp1600_create_session", json!({"session_id": "a"}))
        .await;
    assert_eq!(code, "SESSION_EXISTS");
    let (code, _) = cp.err("cp1600_run", json!({})).await;
    assert_eq!(code, "NO_ROM_LOADED");
    let missing = samples("cp1600").join("missing.bin");
    let (code, msg) = cp
        .err("cp1600_load_rom", json!({"rom_path": missing}))
        .await;
    assert_eq!(code, "FILE_ERROR");
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
    let (code, msg) = cp
        .err(
            "cp1600_load_rom",
            json!({"rom_path": scratch.join("odd.bin")}),
        )
        .await;
    assert_eq!(code, "INVALID_ROM", "an odd-sized file is not a ROM");
    assert!(msg.contains("odd"), "{msg}");
    cp.ok(
        "cp1600_load_rom",
        json!({"rom_path": sample("01-hello-world")}),
    )
    .await;
    let (code, _) = cp
        .err(
            "cp1600_disassemble",
            json!({"start_address": 10, "end_address": 5}),
        )
        .await;
    assert_eq!(code, "INVALID_ARGUMENT");
    let (code, _) = cp
        .err("cp1600_clear_breakpoint", json!({"address": 1}))
        .await;
    assert_eq!(code, "BREAKPOINT_NOT_FOUND");
    let (code, _) = cp
        .err(
            "cp1600_write_memory",
            json!({"address": 0x01EF, "values": [1, 2]}),
        )
        .await;
    assert_eq!(code, "UNMAPPED_ADDRESS");
    let (code, _) = cp
        .err(
            "cp1600_run_until",
            json!({"register": "R9", "register_value": 1}),
        )
        .await;
    assert_eq!(code, "INVALID_ARGUMENT");
    // Schema errors come from the host: an address beyond 16 bits.
    let r = cp
        .server
        .call("cp1600_set_breakpoint", json!({"address": 70000}))
        .await;
    assert!(
        is_error(&r) && text(&r).contains("`arguments.address` must be an integer from 0 to 65535"),
        "{}",
        text(&r)
    );
    assert_eq!(
        cp.ok("cp1600_destroy_session", json!({"session_id": "a"}))
            .await["status"],
        "destroyed"
    );
    let (code, _) = cp
        .err("cp1600_destroy_session", json!({"session_id": "a"}))
        .await;
    assert_eq!(code, "SESSION_NOT_FOUND");
    cp.server.stop().await;
}

#[tokio::test]
async fn a_rom_outside_the_sandbox_is_refused_naming_the_allowed_roots() {
    let outside = tempfile::tempdir().unwrap();
    let rom = outside.path().canonicalize().unwrap().join("prog.bin");
    std::fs::copy(sample("01-hello-world"), &rom).unwrap();
    let cp = Cp::samples().await;
    cp.ok("cp1600_create_session", json!({})).await;
    let (code, msg) = cp.err("cp1600_load_rom", json!({"rom_path": rom})).await;
    assert_eq!(code, "FILE_ERROR");
    assert!(
        msg.contains("outside"),
        "should say the path is outside the allowed directories: {msg}"
    );
    assert!(
        msg.contains(&samples("cp1600").display().to_string()),
        "should list the allowed roots: {msg}"
    );
    cp.server.stop().await;
}

// ---------------------------------------------------------------- fixtures

#[tokio::test]
async fn shared_every_fixture_program_reaches_its_final_state() {
    let Some(dir) = fixtures("cp1600").map(|d| d.canonicalize().unwrap()) else {
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .strip_suffix(".final.json")
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 20);
    let cp = Cp::start(&[&dir], None).await;
    for name in &names {
        let fin: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.final.json"))).unwrap(),
        )
        .unwrap();
        let loaded = cp.load(name, &dir.join(format!("{name}.bin"))).await;
        assert_eq!(loaded["entry_point"], 0x5000, "{name}");
        let run = cp
            .ok(
                "cp1600_run",
                json!({"session_id": name, "max_cycles": 1_000_000}),
            )
            .await;
        assert_eq!(run["reason"], "halted", "{name}: {run}");
        assert_eq!(run["executed"], fin["instructions"], "{name}: instructions");
        let st = cp.ok("cp1600_get_state", json!({"session_id": name})).await;
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
        assert_eq!(st["interrupts_enabled"], fin["flags"]["I"], "{name}: I");
        assert_eq!(st["sdbd_pending"], fin["flags"]["D"], "{name}: D");
        assert_eq!(st["cycles"], fin["cycles"], "{name}: cycles");
        assert_eq!(
            st["instructions"], fin["instructions"],
            "{name}: instructions"
        );
        assert_eq!(st["halted"], true, "{name}");
        for (lo, n) in [(0x0100u16, 0xF0u32), (0x0200, 0x160)] {
            let mem = cp
                .ok(
                    "cp1600_examine_memory",
                    json!({"session_id": name, "start_address": lo, "count": n}),
                )
                .await;
            let cells = mem["memory"].as_array().unwrap();
            assert_eq!(cells.len(), n as usize, "{name}");
            for cell in cells {
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
    let list = cp.ok("cp1600_list_sessions", json!({})).await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), names.len());
    cp.server.stop().await;
}

// ---------------------------------------------------------------- cartridges

/// Big-endian bytes of words.
fn be(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A cartridge as IntyBASIC lays one out: the EXEC header at $5000, the
/// title "Tiny" (2025), the program right after it; 256 words.
fn headered_cartridge() -> Vec<u16> {
    let mut words = cp1600::asm::assemble(
        " ROMW 16
 ORG $5000
 BIDECLE zero, zero, main, zero, ones, title
 DECLE $03C0
zero: DECLE 0, 0
ones: DECLE 1, 1, 1, 1, 1
title: DECLE 125, 84, 105, 110, 121, 0
main: DIS
 MVII #$02F0, R6
 MVII #$42, R0
 PSHR R0
 PULR R1
 MVO R1, $0200
 HLT
",
    )
    .unwrap()
    .words;
    words.resize(256, 0);
    words
}

/// A scratch directory (canonical path) and a server granted it read-only.
async fn scratch_server() -> (TempDir, PathBuf, Cp) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let cp = Cp::start(&[&dir], None).await;
    (tmp, dir, cp)
}

#[tokio::test]
async fn a_headered_cartridge_starts_at_its_program_and_bin_cfg_loads_as_rom() {
    let (_tmp, dir, cp) = scratch_server().await;
    let words = headered_cartridge();
    std::fs::write(dir.join("tiny.bin"), be(&words)).unwrap();
    std::fs::write(dir.join("tiny.cfg"), "[mapping]\n$0000 - $00FF = $5000\n").unwrap();
    let rom = cp1600::rom::encode_rom(&[cp1600::rom::Segment {
        addr: 0x5000,
        words: words.clone(),
    }]);
    std::fs::write(dir.join("tiny.rom"), rom).unwrap();
    let a = cp.load("bin", &dir.join("tiny.bin")).await;
    let b = cp.load("rom", &dir.join("tiny.rom")).await;
    assert_eq!(
        a["header"],
        json!({"title": "Tiny", "year": 2025, "start": 0x501A, "title_address": 0x5014,
               "code_after_title": 0x501A, "flags": 0x03C0})
    );
    assert_eq!(
        (a["start"].clone(), a["entry_point"].clone()),
        (json!("header"), json!(0x501A))
    );
    assert_eq!(
        (a["format"].as_str(), b["format"].as_str()),
        (Some("bin+cfg"), Some("rom"))
    );
    for k in [
        "header",
        "entry_point",
        "start",
        "start_note",
        "segments",
        "load_address",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
    for id in ["bin", "rom"] {
        let m = cp
            .ok(
                "cp1600_examine_memory",
                json!({"session_id": id, "start_address": 0x5000, "count": 256}),
            )
            .await;
        let got: Vec<u64> = m["memory"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["value"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = words.iter().map(|&w| w as u64).collect();
        assert_eq!(got, want, "{id}");
        let r = cp.ok("cp1600_run", json!({"session_id": id})).await;
        assert_eq!(
            (r["reason"].clone(), r["stop"]["instruction"].clone()),
            (json!("halted"), json!("HLT")),
            "{id}: {r}"
        );
        assert_eq!(cp.word(id, 0x0200).await, 0x42, "{id}");
    }
    cp.server.stop().await;
}

#[tokio::test]
async fn every_check_stops_a_run_with_address_instruction_and_advice() {
    let (_tmp, dir, cp) = scratch_server().await;
    let program = |name: &str, src: &str| {
        let p = cp1600::asm::assemble(&format!(" ORG $5000\n{src}")).unwrap();
        let path = dir.join(format!("{name}.bin"));
        std::fs::write(&path, p.to_bytes()).unwrap();
        path
    };
    // (program, reason, stop.address, stop.instruction, words in the message)
    let cases = [
        (
            program("exec-call", " MVII #$02F0, R6\n JSR R5, $1738\n"),
            "jump_to_no_code",
            0x5002,
            "JSR R5, $1738",
            vec!["EXEC", "exec_path"],
        ),
        (
            program("no-stack", " MVII #5, R0\n PSHR R0\n"),
            "stack_outside_ram",
            0x5002,
            "PSHR R0",
            vec!["R6 = $0000", "not RAM"],
        ),
        (
            program(
                "vblank",
                " MVII #$02F0, R6\n EIS\nw: MVI $0102, R0\n TSTR R0\n BEQ w\n",
            ),
            "idle_loop",
            0x5006,
            "BEQ $5003",
            vec!["$0102", "cp1600_interrupt"],
        ),
        (
            program("off-the-end", " NOP\n"),
            "unmapped_execution",
            0x5000,
            "NOP",
            vec!["past the end"],
        ),
    ];
    for (path, reason, address, instruction, words) in &cases {
        cp.load(reason, path).await;
        let r = cp
            .ok(
                "cp1600_run",
                json!({"session_id": reason, "max_cycles": 1_000_000}),
            )
            .await;
        assert_eq!(r["reason"], *reason, "{r}");
        assert_eq!(
            (
                r["stop"]["address"].clone(),
                r["stop"]["instruction"].clone()
            ),
            (json!(address), json!(instruction)),
            "{reason}: {r}"
        );
        let msg = r["stop"]["message"].as_str().unwrap();
        for w in words {
            assert!(msg.contains(w), "{reason}: `{w}` in {msg}");
        }
        assert!(
            r["executed"].as_u64().unwrap() < 100,
            "{reason} found at once: {r}"
        );
    }
    // The idle loop's interrupt goes to $1004: no EXEC there.
    cp.ok("cp1600_interrupt", json!({"session_id": "idle_loop"}))
        .await;
    let r = cp
        .ok("cp1600_run", json!({"session_id": "idle_loop"}))
        .await;
    assert_eq!(
        (r["reason"].clone(), r["pc"].clone()),
        (json!("jump_to_no_code"), json!(0x1004))
    );
    // checks false runs as the bare chip would.
    let r = cp
        .ok(
            "cp1600_run",
            json!({"session_id": "stack_outside_ram", "checks": false, "max_cycles": 1000}),
        )
        .await;
    assert_eq!(r["reason"], "max_cycles_reached");
    cp.server.stop().await;
}

#[tokio::test]
async fn the_whole_trace_buffer_pages_out_within_the_result_limit() {
    let (_tmp, dir, cp) = scratch_server().await;
    let p = cp1600::asm::assemble(" ORG $5000\nl: INCR R0\n B l\n").unwrap();
    std::fs::write(dir.join("count.bin"), p.to_bytes()).unwrap();
    cp.load("t", &dir.join("count.bin")).await;
    cp.ok(
        "cp1600_configure_trace",
        json!({"enabled": true, "capacity": 65536}),
    )
    .await;
    cp.ok("cp1600_step", json!({"count": 70_000})).await;
    let mut offset = 0u64;
    let mut seen = 0u64;
    let mut newest_step = None;
    loop {
        let page = cp
            .ok("cp1600_get_trace", json!({"count": 4096, "offset": offset}))
            .await;
        let n = page["trace"].as_array().unwrap().len() as u64;
        newest_step.get_or_insert(page["trace"][n as usize - 1]["step"].as_u64().unwrap());
        seen += n;
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!((seen, newest_step), (65536, Some(69_999)));
    let r = cp
        .server
        .call("cp1600_get_trace", json!({"count": 65536}))
        .await;
    assert!(is_error(&r) && text(&r).contains("4096"), "{}", text(&r));
    cp.server.stop().await;
}

#[tokio::test]
async fn text_files_and_unreadable_or_ungranted_cfgs_are_reported() {
    let (_tmp, dir, cp) = scratch_server().await;
    let outside = tempfile::tempdir().unwrap();
    let outside_cfg = outside.path().canonicalize().unwrap().join("prog.cfg");
    std::fs::write(&outside_cfg, "[mapping]\n$0000 - $0000 = $5000\n").unwrap();
    std::fs::write(dir.join("prog.asm"), "; hello\n ORG $5000\n HLT\n").unwrap();
    std::fs::write(dir.join("prog.bin"), [0u8, 0]).unwrap();
    std::fs::create_dir(dir.join("prog.cfg")).unwrap();
    cp.ok("cp1600_create_session", json!({})).await;
    let (code, msg) = cp
        .err("cp1600_load_rom", json!({"rom_path": dir.join("prog.asm")}))
        .await;
    assert_eq!(code, "INVALID_ROM");
    assert!(msg.contains("text file"), "{msg}");
    let (code, msg) = cp
        .err("cp1600_load_rom", json!({"rom_path": dir.join("prog.bin")}))
        .await;
    assert_eq!(code, "FILE_ERROR");
    assert!(msg.contains(".cfg beside the ROM"), "{msg}");
    let (code, msg) = cp
        .err(
            "cp1600_load_rom",
            json!({"rom_path": dir.join("prog.bin"), "cfg_path": outside_cfg}),
        )
        .await;
    assert_eq!(code, "FILE_ERROR");
    assert!(
        msg.starts_with("FILE_ERROR: cannot read the .cfg") && msg.contains("outside"),
        "{msg}"
    );
    cp.server.stop().await;
}

// ------------------------------------------------- resources, prompt, completion

#[tokio::test]
async fn resources_prompt_and_completion_show_the_callers_sessions() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
    let cp = Cp::samples().await;
    let client = &cp.server.client;
    assert_eq!(
        cp.server.template_uris().await,
        [
            "cp1600://sessions/{session_id}/disassembly/{address}",
            "cp1600://sessions/{session_id}/memory/{start}/{end}",
            "cp1600://sessions/{session_id}/state",
            "cp1600://sessions/{session_id}/trace",
        ]
    );
    let tools = cp.server.tool_names().await;
    assert!(
        !tools
            .iter()
            .any(|t| t == "cp1600_debug" || t.starts_with("session_"))
    );

    // A real session, run to its HLT with tracing on.
    cp.load("loop", &sample("02-counter-loop")).await;
    cp.ok("cp1600_configure_trace", json!({"enabled": true}))
        .await;
    let run = cp.ok("cp1600_run", json!({})).await;
    assert_eq!(run["halted"], true, "{run}");

    let (state, mime) = cp
        .server
        .read_text("cp1600://sessions/loop/state")
        .await
        .unwrap();
    assert_eq!(mime, "application/json");
    let state: Value = serde_json::from_str(&state).unwrap();
    let tool_state = cp
        .ok("cp1600_get_state", json!({"session_id": "loop"}))
        .await;
    assert_eq!(state["registers"], tool_state["registers"]);
    assert_eq!(state["cycles"], tool_state["cycles"]);
    assert_eq!(
        (state["status"].as_str(), state["registers"]["R0"].as_u64()),
        (Some("halted"), Some(10))
    );
    assert!(
        state["rom_path"]
            .as_str()
            .unwrap()
            .ends_with("02-counter-loop.bin")
    );

    // The counter the program stored at $0200, and INCR R0 at $5003.
    let (dump, mime) = cp
        .server
        .read_text("cp1600://sessions/loop/memory/$0200/513")
        .await
        .unwrap();
    assert_eq!(mime, "text/plain");
    assert_eq!(
        dump.lines().collect::<Vec<_>>(),
        [
            "session loop: $0200-$0201 (2 words, hex)",
            "$0200: 000A 0000"
        ]
    );
    let (dump, _) = cp
        .server
        .read_text("cp1600://sessions/loop/memory/0x5000/20490")
        .await
        .unwrap();
    assert!(
        dump.lines().nth(1).unwrap().starts_with("$5000: "),
        "{dump}"
    );
    assert_eq!(
        &dump.lines().nth(1).unwrap()[7 + 3 * 5..7 + 3 * 5 + 4],
        "0008",
        "{dump}"
    );
    for (uri, needle) in [
        ("cp1600://sessions/loop/memory/0/1024", "at most 1024"),
        ("cp1600://sessions/loop/memory/$5010/$5000", "below"),
        ("cp1600://sessions/loop/memory/ten/20", "start `ten`"),
    ] {
        let e = cp.server.read_text(uri).await.unwrap_err();
        assert!(
            e.contains("INVALID_ARGUMENT") && e.contains(needle),
            "{uri}: {e}"
        );
    }

    let (d, _) = cp
        .server
        .read_text("cp1600://sessions/loop/disassembly/$5000")
        .await
        .unwrap();
    let d: Value = serde_json::from_str(&d).unwrap();
    let ops: Vec<&str> = d["disassembly"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["opcode"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops[..7],
        ["CLRR", "MVII", "INCR", "DECR", "BNEQ", "MVO", "HLT"]
    );

    let (t, _) = cp
        .server
        .read_text("cp1600://sessions/loop/trace")
        .await
        .unwrap();
    let t: Value = serde_json::from_str(&t).unwrap();
    let entries = t["trace"].as_array().unwrap();
    assert_eq!(entries.len() as u64, t["buffered"].as_u64().unwrap(), "{t}");
    assert!(entries.len() > 30 && entries.len() <= 64, "{t}");
    assert_eq!(entries[0]["pc"], 0x5000);

    // An unknown session (as another client's would) names the way out.
    for uri in [
        "cp1600://sessions/nope/state",
        "cp1600://sessions/nope/memory/0/1",
        "cp1600://sessions/nope/trace",
    ] {
        let e = cp.server.read_text(uri).await.unwrap_err();
        assert!(
            e.contains("SESSION_NOT_FOUND") && e.contains("cp1600_create_session"),
            "{e}"
        );
    }

    // Completion: the caller's own ids, prefixes first, for templates and the prompt.
    for id in ["lobby", "other"] {
        cp.ok("cp1600_create_session", json!({"session_id": id}))
            .await;
    }
    let complete = |reference: Reference, value: &str| {
        client.complete(CompleteRequestParams::new(
            reference,
            ArgumentInfo::new("session_id", value),
        ))
    };
    let c = complete(
        Reference::for_resource("cp1600://sessions/{session_id}/state"),
        "lo",
    )
    .await
    .unwrap();
    assert_eq!(c.completion.values, ["lobby", "loop"]);
    let c = complete(Reference::for_prompt("cp1600_debug"), "")
        .await
        .unwrap();
    assert_eq!(c.completion.values, ["lobby", "loop", "other"]);
    let c = complete(Reference::for_prompt("cp1600_debug"), "O")
        .await
        .unwrap();
    assert_eq!(c.completion.values, ["other", "lobby", "loop"]);
    let c = complete(Reference::for_prompt("cp1600_debug"), "x")
        .await
        .unwrap();
    assert!(c.completion.values.is_empty());

    // The prompt: its arguments, and text naming only real tools.
    let prompts = client.list_all_prompts().await.unwrap();
    let p = prompts.iter().find(|p| p.name == "cp1600_debug").unwrap();
    assert_eq!(
        e2e::prompt_arguments(p),
        [("symptom", Some(true)), ("session_id", Some(false))]
    );
    let get = |args: Value| {
        let mut params = GetPromptRequestParams::new("cp1600_debug");
        params.arguments = args.as_object().cloned();
        client.get_prompt(params)
    };
    let p = get(json!({"symptom": "R1 ends at 0", "session_id": "loop"}))
        .await
        .unwrap();
    let message = serde_json::to_value(&p.messages[0]).unwrap();
    let text = message["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("Symptom: R1 ends at 0") && text.contains("Session `loop` is halted"),
        "{text}"
    );
    let named: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("cp1600_"))
        .collect();
    assert!(named.len() >= 10, "{text}");
    for n in named {
        assert!(tools.iter().any(|t| t == n), "{n} is not a tool");
    }
    let e = get(json!({"symptom": "x", "session_id": "nope"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("SESSION_NOT_FOUND"), "{e}");
    cp.server.stop().await;
}

/// Over HTTP, another client's session id in a URI, the prompt or
/// completion answers exactly like an unknown one.
#[tokio::test]
async fn another_clients_session_is_unknown_to_resources_prompt_and_completion() {
    use e2e::{http_client, prompt_completions, read_as};
    use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
    let plugins = only_plugin("cp1600.wasm");
    let (_child, url) = e2e::serve_http(&["--plugins", plugins.path().to_str().unwrap()]).await;
    let (alice, bob) = (http_client(&url).await, http_client(&url).await);
    let params = CallToolRequestParams::new("cp1600_create_session")
        .with_arguments(json!({"session_id": "alices"}).as_object().unwrap().clone());
    assert!(!is_error(&alice.call_tool(params).await.unwrap()));
    assert!(
        read_as(&alice, "cp1600://sessions/alices/state")
            .await
            .is_ok()
    );
    for kind in ["state", "trace", "memory/0/1", "disassembly/0"] {
        let theirs = read_as(&bob, &format!("cp1600://sessions/alices/{kind}"))
            .await
            .unwrap_err();
        let unknown = read_as(&bob, &format!("cp1600://sessions/nobodys/{kind}"))
            .await
            .unwrap_err();
        assert!(theirs.contains("SESSION_NOT_FOUND"), "{theirs}");
        assert_eq!(
            theirs.replace("alices", "X"),
            unknown.replace("nobodys", "X")
        );
    }
    assert_eq!(
        prompt_completions(&alice, "cp1600_debug", "session_id", "a").await,
        ["alices"]
    );
    assert!(
        prompt_completions(&bob, "cp1600_debug", "session_id", "a")
            .await
            .is_empty()
    );
    let mut params = GetPromptRequestParams::new("cp1600_debug");
    params.arguments = json!({"symptom": "x", "session_id": "alices"})
        .as_object()
        .cloned();
    let e = bob.get_prompt(params).await.unwrap_err().to_string();
    assert!(e.contains("SESSION_NOT_FOUND"), "{e}");
}

/// Resource notices heard so far, after the host's 250 ms merge window.
/// A call that changes a session announces its state (and its trace when
/// tracing), once however many instructions ran; subscribers of other
/// sessions or of unchanged URIs hear nothing, nor after a read.
// resources/subscribe is the legacy form, and the one today's clients send.
#[allow(deprecated)]
#[tokio::test]
async fn subscribers_hear_when_a_call_changes_their_session() {
    use rmcp::model::SubscribeRequestParams;
    let cp = Cp::samples().await;
    cp.load("a", &sample("02-counter-loop")).await;
    cp.load("b", &sample("02-counter-loop")).await;
    // The loads' own notices go out at the end of the host's 250 ms merge
    // window; let it pass, or a subscription made inside it hears them.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    for uri in [
        "cp1600://sessions/a/state",
        "cp1600://sessions/a/trace",
        "cp1600://sessions/b/state",
    ] {
        cp.server
            .client
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .unwrap();
    }
    assert!(heard(&cp.server).await.is_empty(), "nothing changed yet");
    cp.ok("cp1600_step", json!({"session_id": "a", "count": 20}))
        .await;
    assert_eq!(
        heard(&cp.server).await,
        ["cp1600://sessions/a/state"],
        "one notice for 20 instructions; the trace is off, b untouched"
    );
    cp.ok("cp1600_get_state", json!({"session_id": "a"})).await;
    cp.ok(
        "cp1600_examine_memory",
        json!({"session_id": "a", "start_address": 0x200, "count": 1}),
    )
    .await;
    assert_eq!(heard(&cp.server).await.len(), 1, "reads change nothing");
    cp.ok(
        "cp1600_configure_trace",
        json!({"session_id": "a", "enabled": true}),
    )
    .await;
    assert_eq!(
        heard(&cp.server).await[1..],
        ["cp1600://sessions/a/trace"],
        "the trace resource shows whether tracing is on"
    );
    cp.ok("cp1600_run", json!({"session_id": "a"})).await;
    let mut got = heard(&cp.server).await.split_off(2);
    got.sort();
    assert_eq!(
        got,
        ["cp1600://sessions/a/state", "cp1600://sessions/a/trace"]
    );
    // Another session's change reaches its own subscription only.
    cp.ok("cp1600_reset", json!({"session_id": "b"})).await;
    let got = heard(&cp.server).await;
    assert_eq!(got[4..], ["cp1600://sessions/b/state"], "{got:?}");
    cp.server.stop().await;
}

/// Over HTTP, a client subscribed to another client's session URI hears
/// nothing when that client steps it, while the owner hears of it.
#[allow(deprecated)]
#[tokio::test]
async fn another_client_subscribed_to_your_session_hears_nothing() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, SubscribeRequestParams};
    use rmcp::transport::StreamableHttpClientTransport;
    let plugins = only_plugin("cp1600.wasm");
    let (_child, url) = e2e::serve_http(&["--plugins", plugins.path().to_str().unwrap()]).await;
    let connect = || async {
        let r = e2e::Recorder::default();
        let events = r.events.clone();
        let c = r
            .serve(StreamableHttpClientTransport::from_uri(url.clone()))
            .await
            .expect("HTTP MCP session");
        (c, events)
    };
    let ((alice, alice_heard), (bob, bob_heard)) = (connect().await, connect().await);
    let call = async |tool: &str, args: Value| {
        let params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().unwrap().clone());
        let r = alice.call_tool(params).await.unwrap();
        assert!(!is_error(&r), "{tool}: {}", text(&r));
    };
    // NOP NOP NOP in RAM, and the PC on them: a program without a ROM.
    call("cp1600_create_session", json!({"session_id": "alices"})).await;
    call(
        "cp1600_write_memory",
        json!({"address": 0x200, "values": [0x34, 0x34, 0x34]}),
    )
    .await;
    call("cp1600_write_registers", json!({"r7": 0x200})).await;
    let uri = "cp1600://sessions/alices/state";
    for c in [&alice, &bob] {
        c.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    call("cp1600_step", json!({"count": 2})).await;
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert_eq!(alice_heard.lock().unwrap().resource_updates, [uri]);
    assert!(bob_heard.lock().unwrap().resource_updates.is_empty());
}

/// Issue 37: a cartridge drawn by the STIC and driven by a hand controller,
/// through MCP: frames run with their VBLANK interrupts, a screenshot whose
/// PNG shows the GRAM card the program drew, and the keypad's Enter ending
/// the program's wait.
#[tokio::test]
async fn a_cartridge_shows_its_screen_and_takes_the_keypad() {
    use cp1600::asm::assemble;
    let dir = tempfile::tempdir().unwrap();
    // A stand-in EXEC: the stack, the cartridge, and $1004 to its handler.
    let mut exec = assemble(
        " ORG $1000\n J init\n ORG $1004\n J $5100\n ORG $1010\ninit: MVII #$02F0, R6\n J $5000\n",
    )
    .unwrap()
    .words;
    exec.resize(4096, 0);
    let exec_bytes: Vec<u8> = exec.iter().flat_map(|w| w.to_be_bytes()).collect();
    std::fs::write(dir.path().join("exec.bin"), exec_bytes).unwrap();
    let cart = assemble(
        " ORG $5000
 CLRR R0
 MVII #$0000, R4
 MVII #24, R1
c: MVO@ R0, R4
 DECR R1
 BNEQ c
 MVO R0, $0028
 MVO R0, $0030
 MVO R0, $0031
 MVO R0, $0032
 MVII #1, R0
 MVO R0, $002C
 MVII #$3800, R4
 MVII #$FF, R0
 MVII #8, R1
g: MVO@ R0, R4
 DECR R1
 BNEQ g
 MVII #$0802, R0
 MVO R0, $0200
 EIS
w: MVI $01FF, R0
 COMR R0
 ANDI #$FF, R0
 CMPI #$28, R0
 BNEQ w
 HLT
 ORG $5100
 MVO R0, $0020
 PULR R7
",
    )
    .unwrap();
    std::fs::write(dir.path().join("cart.bin"), cart.to_bytes()).unwrap();
    let cp = Cp::start(&[dir.path()], None).await;
    cp.ok("cp1600_create_session", json!({})).await;
    cp.ok(
        "cp1600_load_rom",
        json!({"rom_path": dir.path().join("cart.bin"), "exec_path": dir.path().join("exec.bin")}),
    )
    .await;
    let frames = cp.ok("cp1600_run_frames", json!({"frames": 3})).await;
    assert_eq!(
        (frames["frames"].clone(), frames["display_enabled"].clone()),
        (json!(3), json!(3)),
        "{frames}"
    );
    assert_eq!(frames["run"]["reason"], "max_cycles_reached", "{frames}");

    let shot = cp.server.ok("cp1600_screenshot", json!({})).await;
    let caption = text(&shot);
    assert!(
        caption.contains("colour-stack mode, border blue"),
        "{caption}"
    );
    assert!(caption.contains("1 cards from GRAM"), "{caption}");
    let pic = e2e::picture_of(&shot);
    assert_eq!((pic.width, pic.height), (704, 448));
    let at = |x, y| pic.at(x, y);
    // The display's first pixel (inside the 8-pixel border, each pixel 4
    // wide and 4 high): card 0, all on, in red; the border in blue.
    assert_eq!(at(8 * 4, 16 * 2), [0xFF, 0x3D, 0x10]);
    assert_eq!(at(0, 0), [0x00, 0x2D, 0xFF]);

    let set = cp
        .ok(
            "cp1600_controller",
            json!({"controller": "left", "key": "enter"}),
        )
        .await;
    assert_eq!(set["reads"], 0xFFD7, "{set}");
    let frames = cp.ok("cp1600_run_frames", json!({"frames": 2})).await;
    assert_eq!(frames["run"]["reason"], "halted", "{frames}");
    assert_eq!(frames["frames"], 0, "{frames}");
    cp.server.stop().await;
}
