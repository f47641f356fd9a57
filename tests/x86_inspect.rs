//! End-to-end tests of the x86-inspect plugin through a real MCP client: the
//! sample programs (samples/dos) run, inspected with the Spice86 tools and
//! benchtop's debugging tools; in `shared_` tests every program of
//! ../shared/fixtures/dos gives its reference stdout, exit code, files and
//! call counts.

use e2e::{Server, fixtures, heard, is_error, json as result_json, only_plugin, samples, text};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A server with only x86-inspect and the given grants (`DIR:ro` / `DIR:rw`).
struct X86 {
    server: Server,
    _plugins: TempDir,
}

impl X86 {
    async fn start(allow: &[String]) -> X86 {
        let plugins = only_plugin("x86_inspect.wasm");
        let mut args: Vec<String> =
            vec!["--plugins".into(), plugins.path().to_string_lossy().into()];
        for a in allow {
            args.extend(["--allow".into(), a.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        X86 {
            server: Server::start(&args).await,
            _plugins: plugins,
        }
    }

    async fn samples() -> X86 {
        X86::start(&[format!("{}:ro", samples("dos").display())]).await
    }

    /// The samples read-only and a drive of the test's own (`ro` or `rw`).
    async fn samples_and(drive: &Path, mode: &str) -> X86 {
        X86::start(&[
            format!("{}:ro", samples("dos").display()),
            format!("{}:{mode}", drive.display()),
        ])
        .await
    }

    /// Calls a tool that must succeed; returns its JSON document.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        result_json(&self.server.ok(tool, args).await)
    }

    /// Calls a tool that must fail; returns (code, text).
    async fn err(&self, tool: &str, args: Value) -> (String, String) {
        e2e::coded_error(&self.server.err(tool, args).await)
    }
}

fn sample(name: &str) -> PathBuf {
    samples("dos").join(name)
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort();
    k
}

fn sorted(mut v: Vec<&str>) -> Vec<&str> {
    v.sort();
    v
}

// ---------------------------------------------------------------- samples

#[tokio::test]
async fn serves_the_spice86_tools_and_the_debugging_tools() {
    let x = X86::samples().await;
    let tools = x.server.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let want = [
        "list_functions",
        "read_cfg_cpu_graph",
        "read_cpu_registers",
        "read_dos_state",
        "read_interrupt_vector",
        "read_memory",
        "read_stack",
        "search_memory",
        "x86_add_breakpoint",
        "x86_list_breakpoints",
        "x86_list_machines",
        "x86_load_program",
        "x86_read_console",
        "x86_read_disassembly",
        "x86_remove_breakpoint",
        "x86_remove_machine",
        "x86_restore_machine",
        "x86_run",
        "x86_screenshot",
        "x86_snapshot",
        "x86_step",
        "x86_write_console_input",
        "x86_write_memory",
        "x86_write_registers",
    ];
    assert_eq!(names, want);
    // Every tool but the screenshot (a caption and a picture) returns a
    // typed record, so it says its shape; the Spice86 keys come from the
    // WIT's @key tags, and a field that may be left out is not required.
    for t in tools.iter().filter(|t| t.name != "x86_screenshot") {
        assert!(t.output_schema.is_some(), "{} has no outputSchema", t.name);
    }
    let schema = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object((*t.output_schema.clone().unwrap()).clone())
    };
    let regs = schema("read_cpu_registers");
    assert_eq!(
        sorted(
            regs["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect()
        ),
        ["flags", "generalPurpose", "instructionPointer", "segments"]
    );
    assert!(
        regs["properties"]["generalPurpose"]["properties"]["EAX"].is_object(),
        "{regs}"
    );
    assert!(
        regs["properties"]["flags"]["properties"]["CarryFlag"].is_object(),
        "{regs}"
    );
    let run = schema("x86_run");
    let required: Vec<&str> = run["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        required.contains(&"stop_reason") && !required.contains(&"exit_code"),
        "{run}"
    );
    let read_memory = tools.iter().find(|t| t.name == "read_memory").unwrap();
    let schema = Value::Object((*read_memory.input_schema).clone());
    assert_eq!(schema["required"], json!(["address", "length"]));
    assert_eq!(
        read_memory.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    x.server.stop().await;
}

#[tokio::test]
async fn greet_runs_to_exit_echoing_its_command_tail() {
    let x = X86::samples().await;
    let loaded = x
        .ok(
            "x86_load_program",
            json!({"path": sample("greet.com"), "command_tail": "abc"}),
        )
        .await;
    // Minted by the server: a random integer exact in any JSON client.
    let m = loaded["machine"].as_u64().unwrap();
    assert!((1..1 << 53).contains(&m), "machine id {m}");
    assert_eq!(loaded["format"], "com");
    assert_eq!(loaded["entry_point"], "0087:0100");
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "exited");
    assert_eq!(run["exit_code"], 0);
    let out = "Hello from benchtop x86-inspect!\r\nCommand tail:[ abc]\r\n";
    assert_eq!(run["output"], out);
    let console = x.ok("x86_read_console", json!({})).await;
    assert_eq!(console["stdout"], out);
    // The text block is the structured content as compact JSON.
    let regs = x.server.ok("read_cpu_registers", json!({})).await;
    let structured = regs.structured_content.clone().unwrap();
    assert_eq!(text(&regs), structured.to_string());
    assert_eq!(
        keys(&structured),
        ["flags", "generalPurpose", "instructionPointer", "segments"]
    );
    assert_eq!(console["stderr"], "");
    assert_eq!(console["stdout_bytes"], out.len());
    // puts (AH=09h) three times, putc (AH=02h) once per tail byte, then exit.
    assert_eq!(
        console["int21_calls"],
        json!([
            {"service": "21h/02h", "calls": 4},
            {"service": "21h/09h", "calls": 3},
            {"service": "21h/4Ch", "calls": 1},
        ])
    );
    let machines = x.ok("x86_list_machines", json!({})).await;
    assert!(machines.to_string().contains("greet.com"), "{machines}");
    x.server.stop().await;
}

#[tokio::test]
async fn sums_exits_42_and_the_spice86_tools_describe_it() {
    let x = X86::samples().await;
    x.ok(
        "x86_load_program",
        json!({"path": sample("sums.com"), "cpu": "i8086"}),
    )
    .await;
    // At the entry point: Spice86's register document, keys exactly as its spec.
    let regs = x.ok("read_cpu_registers", json!({})).await;
    assert_eq!(
        keys(&regs),
        ["flags", "generalPurpose", "instructionPointer", "segments"]
    );
    assert_eq!(
        keys(&regs["generalPurpose"]),
        sorted(vec!["EAX", "EBX", "ECX", "EDX", "ESI", "EDI", "ESP", "EBP"])
    );
    assert_eq!(
        keys(&regs["segments"]),
        sorted(vec!["CS", "DS", "ES", "FS", "GS", "SS"])
    );
    assert_eq!(keys(&regs["instructionPointer"]), ["IP"]);
    assert_eq!(
        keys(&regs["flags"]),
        sorted(vec![
            "CarryFlag",
            "ParityFlag",
            "AuxiliaryFlag",
            "ZeroFlag",
            "SignFlag",
            "DirectionFlag",
            "OverflowFlag",
            "InterruptFlag"
        ])
    );
    assert_eq!(regs["segments"]["CS"], 0x87);
    assert_eq!(regs["segments"]["SS"], 0x87);
    assert_eq!(regs["instructionPointer"]["IP"], 0x100);
    assert_eq!(regs["generalPurpose"]["ESP"], 0xFFFE);

    // read_memory: the program image at 0087:0100 (linear 0x970).
    let image = std::fs::read(sample("sums.com")).unwrap();
    let m = x
        .ok("read_memory", json!({"address": 0x970, "length": 16}))
        .await;
    let hex: String = image[..16].iter().map(|b| format!("{b:02X}")).collect();
    assert_eq!(
        (m["address"].clone(), m["length"].clone(), m["data"].clone()),
        (json!(0x970), json!(16), json!(hex))
    );
    let full = x
        .ok("read_memory", json!({"address": 0, "length": 4096}))
        .await;
    assert_eq!(full["data"].as_str().unwrap().len(), 8192);
    let (code, msg) = x
        .err("read_memory", json!({"address": 0, "length": 4097}))
        .await;
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(msg.contains("4096"), "{msg}");

    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(
        (run["stop_reason"].clone(), run["exit_code"].clone()),
        (json!("exited"), json!(42))
    );
    assert_eq!(run["output"], "sum of 1..100 = 5050\r\n");
    // print_dec (0087:0121) is called once per digit; the entry is catalogued too.
    let f = x.ok("list_functions", json!({"limit": 10})).await;
    let functions = f["functions"].as_array().unwrap();
    assert_eq!(f["totalCount"], functions.len());
    let print_dec = functions
        .iter()
        .find(|f| f["address"] == "0087:0121")
        .expect("print_dec catalogued");
    assert_eq!(print_dec["calledCount"], 4);
    assert_eq!(print_dec["hasOverride"], false);
    assert!(print_dec["name"].is_string());
    assert!(functions.iter().any(|f| f["address"] == "0087:0100"), "{f}");
    let counts: Vec<u64> = functions
        .iter()
        .map(|f| f["calledCount"].as_u64().unwrap())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "ordered by call count: {counts:?}"
    );
    // The CFG: entry points, and the last instruction was the exit INT 21h.
    let g = x
        .ok("read_cfg_cpu_graph", json!({"node_limit": 2000}))
        .await;
    assert_eq!(g["currentContextDepth"], 0);
    assert_eq!(g["currentContextEntryPoint"], "0087:0100");
    assert_eq!(g["lastExecutedAddress"], "0087:011F");
    let entries = g["entryPointAddresses"].as_array().unwrap();
    assert_eq!(g["totalEntryPoints"], entries.len());
    assert!(entries.contains(&json!("0087:0100")), "{g}");
    x.server.stop().await;
}

/// What a client sees of machine `m` but its id.
async fn observe(x: &X86, m: u64) -> Value {
    let regs = x.ok("read_cpu_registers", json!({"machine": m})).await;
    let mut con = x.ok("x86_read_console", json!({"machine": m})).await;
    con.as_object_mut().unwrap().remove("machine");
    let stack = x
        .ok(
            "read_memory",
            json!({"machine": m, "address": 0x10800, "length": 0x100}),
        )
        .await;
    let prog = x
        .ok(
            "read_memory",
            json!({"machine": m, "address": 0x970, "length": 0x100}),
        )
        .await;
    let machines = x.ok("x86_list_machines", json!({})).await;
    let mut row = machines["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["machine"] == m)
        .unwrap()
        .clone();
    let row = row.as_object_mut().unwrap();
    for k in ["machine", "tracking"] {
        row.remove(k);
    }
    json!([regs, con, stack, prog, row])
}

#[tokio::test]
async fn a_snapshot_restores_into_a_machine_that_runs_identically() {
    let x = X86::samples().await;
    let a = x
        .ok("x86_load_program", json!({"path": sample("sums.com")}))
        .await["machine"]
        .as_u64()
        .unwrap();
    x.ok("x86_step", json!({"count": 40})).await;
    let snap = x.ok("x86_snapshot", json!({"machine": a})).await;
    let text = snap["snapshot"].as_str().unwrap().to_owned();
    assert_eq!(snap["format_version"], 3);
    // The size in bytes, and the tool says the text is for restoring.
    assert_eq!(snap["bytes"], text.len());
    let doc = x.server.tool_description("x86_snapshot").await;
    assert!(doc.contains("not for reading"), "{doc}");
    // Only the pages in use travel: the IVT, the PSP and program, the stack.
    assert!(text.len() < 40_000, "{} characters", text.len());
    let made = x.ok("x86_restore_machine", json!({"snapshot": text})).await;
    let b = made["machine"].as_u64().unwrap();
    assert_ne!(a, b);
    assert_eq!(made["address"], snap["address"]);
    assert_eq!(made["instructions"], snap["instructions"]);
    assert_eq!(made["state"], "ready");
    // Drive C: is shown, and it is the program's own folder.
    let program = std::path::Path::new(made["program"].as_str().unwrap());
    assert_eq!(
        made["drive_c"].as_str().map(std::path::Path::new),
        program.parent(),
        "{made}"
    );
    assert_eq!(observe(&x, a).await, observe(&x, b).await);
    for count in [1, 7, 30] {
        for m in [a, b] {
            x.ok("x86_step", json!({"machine": m, "count": count}))
                .await;
        }
        assert_eq!(
            observe(&x, a).await,
            observe(&x, b).await,
            "after {count} more"
        );
    }
    let ra = x.ok("x86_run", json!({"machine": a})).await;
    let rb = x.ok("x86_run", json!({"machine": b})).await;
    assert_eq!(
        (ra["stop_reason"].clone(), ra["exit_code"].clone()),
        (json!("exited"), json!(42))
    );
    assert_eq!(
        (
            rb["stop_reason"].clone(),
            rb["exit_code"].clone(),
            rb["output"].clone()
        ),
        (
            ra["stop_reason"].clone(),
            ra["exit_code"].clone(),
            ra["output"].clone()
        )
    );
    assert_eq!(observe(&x, a).await, observe(&x, b).await);

    // Damaged text makes no machine.
    let before = x.ok("x86_list_machines", json!({})).await["machines"]
        .as_array()
        .unwrap()
        .len();
    let mut flipped = text.clone().into_bytes();
    let mid = flipped.len() / 2;
    flipped[mid] = if flipped[mid] == b'Q' { b'R' } else { b'Q' };
    for (bad, says) in [
        (String::from_utf8(flipped).unwrap(), "checksum"),
        (text[..100].to_owned(), "snapshot refused"),
    ] {
        let (code, msg) = x.err("x86_restore_machine", json!({"snapshot": bad})).await;
        assert_eq!(code, "INVALID_SNAPSHOT", "{msg}");
        assert!(msg.contains(says), "{msg}");
    }
    let after = x.ok("x86_list_machines", json!({})).await["machines"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after);
    x.server.stop().await;
}

#[tokio::test]
async fn breakpoints_step_disassembly_and_writes() {
    let x = X86::samples().await;
    x.ok("x86_load_program", json!({"path": sample("sums.com")}))
        .await;
    let d = x
        .ok("x86_read_disassembly", json!({"instruction_count": 3}))
        .await;
    let ins = d["instructions"].as_array().unwrap();
    let addrs: Vec<&str> = ins.iter().map(|i| i["address"].as_str().unwrap()).collect();
    assert_eq!(addrs, ["0087:0100", "0087:0102", "0087:0105"]);
    assert_eq!(
        ins[0]["bytes"]
            .as_str()
            .unwrap()
            .replace(' ', "")
            .to_uppercase(),
        "31C0"
    );
    assert!(
        ins[0]["asm"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .starts_with("xor"),
        "{d}"
    );
    assert!(
        ins[1]["asm"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("cx"),
        "{d}"
    );

    // Stop at print_dec's first call: AX holds the sum.
    let bp = x
        .ok(
            "x86_add_breakpoint",
            json!({"segment": 0x87, "offset": 0x121}),
        )
        .await;
    assert_eq!(bp["linear"], 0x870 + 0x121);
    let id = bp["id"].as_u64().unwrap();
    let listed = x.ok("x86_list_breakpoints", json!({})).await;
    assert_eq!(listed["breakpoints"].as_array().unwrap().len(), 1);
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "breakpoint");
    assert_eq!(run["address"], "0087:0121");
    assert_eq!(run["output"], "sum of 1..100 = ");
    let regs = x.ok("read_cpu_registers", json!({})).await;
    assert_eq!(
        regs["generalPurpose"]["EAX"].as_u64().unwrap() & 0xFFFF,
        5050
    );
    // Step two instructions: xor dx, dx / mov bx, 10.
    let s = x.ok("x86_step", json!({"count": 2})).await;
    assert_eq!(s["executed"].as_array().unwrap().len(), 2);
    assert_eq!(
        s["registers"]["generalPurpose"]["EBX"].as_u64().unwrap() & 0xFFFF,
        10
    );
    assert_eq!(
        s["registers"]["generalPurpose"]["EDX"].as_u64().unwrap() & 0xFFFF,
        0
    );
    assert_eq!(s["address"], "0087:0126");
    // Change the number being printed, then finish without the breakpoint.
    let w = x.ok("x86_write_registers", json!({"ax": 1234})).await;
    assert_eq!(w["generalPurpose"]["EAX"].as_u64().unwrap() & 0xFFFF, 1234);
    x.ok("x86_remove_breakpoint", json!({"id": id})).await;
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(
        (run["stop_reason"].clone(), run["exit_code"].clone()),
        (json!("exited"), json!(42))
    );
    assert_eq!(
        x.ok("x86_read_console", json!({})).await["stdout"],
        "sum of 1..100 = 1234\r\n"
    );
    // x86_write_memory shows up in read_memory.
    x.ok(
        "x86_write_memory",
        json!({"address": 0x500, "data": "DE AD be ef"}),
    )
    .await;
    assert_eq!(
        x.ok("read_memory", json!({"address": 0x500, "length": 4}))
            .await["data"],
        "DEADBEEF"
    );
    x.server.stop().await;
}

// ------------------------------------------------ bounded state and input

/// A temporary drive C: holding hand-assembled programs (never committed
/// binaries: the bytes are here, with their source in comments).
fn drive_with(files: &[(&str, &[u8])]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

// l: mov dl,'x' ; mov ah,2 ; int 21h ; jmp l
const PRINT_FOREVER: [u8; 8] = [0xB2, b'x', 0xB4, 2, 0xCD, 0x21, 0xEB, 0xF8];

// cat: l: mov ah,3Fh ; xor bx,bx ; mov cx,100h ; mov dx,200h ; int 21h ;
// or ax,ax ; jz done ; mov cx,ax ; mov ah,40h ; mov bx,1 ; mov dx,200h ;
// int 21h ; jmp l ; done: mov ax,4C00h ; int 21h
const CAT: [u8; 35] = [
    0xB4, 0x3F, 0x31, 0xDB, 0xB9, 0x00, 0x01, 0xBA, 0x00, 0x02, 0xCD, 0x21, 0x09, 0xC0, 0x74, 0x0E,
    0x89, 0xC1, 0xB4, 0x40, 0xBB, 0x01, 0x00, 0xBA, 0x00, 0x02, 0xCD, 0x21, 0xEB, 0xE2, 0xB8, 0x00,
    0x4C, 0xCD, 0x21,
];

// mov ax,13h ; int 10h ; mov ax,0C04h ; mov cx,10 ; mov dx,20 ; int 10h
// (pixel 10,20 in colour 4, red) ; mov ah,0Eh ; mov al,'!' ; int 10h ;
// int 20h
const PIXEL: [u8; 26] = [
    0xB8, 0x13, 0x00, 0xCD, 0x10, 0xB8, 0x04, 0x0C, 0xB9, 0x0A, 0x00, 0xBA, 0x14, 0x00, 0xCD, 0x10,
    0xB4, 0x0E, 0xB0, b'!', 0xCD, 0x10, 0xCD, 0x20, 0x90, 0x90,
];

/// Issue 37: what a program shows is seen. A text screen comes as its text
/// (the DOS prompt's blank screen, then a program's output) and a picture;
/// a mode 13h screen as a picture whose pixels are the program's.
#[tokio::test]
async fn x86_screenshot_shows_the_text_and_the_pixels_a_program_drew() {
    let drive = drive_with(&[("PIXEL.COM", &PIXEL), ("PRINT.COM", &PRINT_FOREVER)]);
    let x = X86::start(&[format!("{}:ro", drive.path().display())]).await;
    let load = |name: &str| json!({"path": drive.path().join(name).to_str().unwrap()});
    x.ok("x86_load_program", load("PRINT.COM")).await;
    x.ok("x86_run", json!({"max_instructions": 40})).await;
    let shot = x.server.ok("x86_screenshot", json!({})).await;
    let caption = text(&shot);
    assert!(caption.contains("mode: 03h (80x25 text)"), "{caption}");
    assert!(caption.contains("---\nxxxxxxxxxx"), "{caption}");
    let image = shot
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    // The debugger's Spice86-shaped views of the same machine.
    let v = x
        .ok("read_interrupt_vector", json!({"vectorNumber": 33}))
        .await;
    assert!(v["handler"].as_str().unwrap().starts_with("native"), "{v}");
    let found = x
        .ok("search_memory", json!({"pattern": "CD21", "limit": 1}))
        .await;
    assert_eq!(found["matches"].as_array().unwrap().len(), 1, "{found}");
    let stack = x.ok("read_stack", json!({"count": 3})).await;
    assert_eq!(stack["words"].as_array().unwrap().len(), 3, "{stack}");

    x.ok("x86_load_program", load("PIXEL.COM")).await;
    x.ok("x86_run", json!({})).await;
    let shot = x.server.ok("x86_screenshot", json!({})).await;
    let caption = text(&shot);
    assert!(
        caption.contains("mode: 13h (320x200 256-colour VGA graphics)"),
        "{caption}"
    );
    assert!(
        !caption.contains("---"),
        "no text in a graphics mode: {caption}"
    );
    let pic = e2e::picture_of(&shot);
    assert_eq!((pic.width, pic.height), (640, 400));
    let at = |x, y| pic.at(x, y);
    // Colour 4 of the VGA default palette is dark red; doubled pixels.
    assert_eq!(at(20, 40), [170, 0, 0]);
    assert_eq!(at(21, 41), [170, 0, 0]);
    assert_eq!(at(22, 40), [0, 0, 0]);
    x.server.stop().await;
}

#[tokio::test]
async fn a_program_printing_forever_leaves_the_plugin_serving() {
    let drive = drive_with(&[("FOREVER.COM", &PRINT_FOREVER)]);
    let x = X86::samples_and(drive.path(), "rw").await;
    let greet = x
        .ok(
            "x86_load_program",
            json!({"path": sample("greet.com"), "command_tail": "abc"}),
        )
        .await;
    let forever = x
        .ok(
            "x86_load_program",
            json!({"path": drive.path().join("FOREVER.COM"), "tracking": true}),
        )
        .await;
    let started = std::time::Instant::now();
    let run = x
        .ok(
            "x86_run",
            json!({"machine": forever["machine"], "max_instructions": 1_000_000_000_000u64}),
        )
        .await;
    // The run stops itself, well before the host's deadline resets the plugin.
    assert_eq!(run["stop_reason"], "time_limit", "{run}");
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    let console = x
        .ok(
            "x86_read_console",
            json!({"machine": forever["machine"], "offset": 0, "max_bytes": 16}),
        )
        .await;
    let total = console["stdout_bytes"].as_u64().unwrap();
    assert!(total > 1 << 20, "{console}");
    assert_eq!(
        console["stdout_dropped"].as_u64().unwrap(),
        total - 256 * 1024
    );
    assert!(console["note"].as_str().unwrap().contains("were dropped"));
    // Both machines survive, and the other one still runs.
    let machines = x.ok("x86_list_machines", json!({})).await;
    assert_eq!(
        machines["machines"].as_array().unwrap().len(),
        2,
        "{machines}"
    );
    let run = x.ok("x86_run", json!({"machine": greet["machine"]})).await;
    assert_eq!(run["stop_reason"], "exited");
    assert!(run["output"].as_str().unwrap().contains("[ abc]"));
    // And the endless one continues where it stopped.
    let more = x
        .ok(
            "x86_run",
            json!({"machine": forever["machine"], "max_instructions": 1000}),
        )
        .await;
    assert_eq!(more["stop_reason"], "budget");
    x.server.stop().await;
}

/// mov ax,2626h ; mov cx,8000h ; xor di,di ; rep stosw: the program fills
/// its whole segment, itself included, with ES: prefixes.
const PREFIXES_FOREVER: [u8; 10] = [0xB8, 0x26, 0x26, 0xB9, 0x00, 0x80, 0x31, 0xFF, 0xF3, 0xAB];

#[tokio::test]
async fn a_segment_of_prefixes_stops_at_the_budget_and_keeps_the_machines() {
    // It used to be one instruction that never ended: the host's deadline
    // reset the plugin after 30 s and every machine was lost.
    let drive = drive_with(&[("PREFIX.COM", &PREFIXES_FOREVER)]);
    let x = X86::samples_and(drive.path(), "ro").await;
    let greet = x
        .ok("x86_load_program", json!({"path": sample("greet.com")}))
        .await;
    let stuck = x
        .ok(
            "x86_load_program",
            json!({"path": drive.path().join("PREFIX.COM")}),
        )
        .await;
    let started = std::time::Instant::now();
    let run = x
        .ok(
            "x86_run",
            json!({"machine": stuck["machine"], "max_instructions": 100}),
        )
        .await;
    assert_eq!(run["stop_reason"], "budget", "{run}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let run = x.ok("x86_run", json!({"machine": greet["machine"]})).await;
    assert_eq!(run["stop_reason"], "exited", "{run}");
    x.server.stop().await;
}

#[tokio::test]
async fn input_comes_from_text_the_client_types_or_a_redirected_file() {
    let drive = drive_with(&[("CAT.COM", &CAT), ("IN.TXT", b"one\r\ntwo\r\n")]);
    let x = X86::start(&[format!("{}:rw", drive.path().display())]).await;
    let cat = drive.path().join("CAT.COM");
    // No input yet: the program stops waiting for it, then resumes.
    x.ok("x86_load_program", json!({"path": cat})).await;
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "waiting_for_input", "{run}");
    let queued = x
        .ok("x86_write_console_input", json!({"text": "hi\n"}))
        .await;
    assert_eq!(queued["queued"], 3);
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "waiting_for_input");
    assert_eq!(run["output"], "hi\r\nhi\r\n");
    x.ok("x86_write_console_input", json!({"end": true})).await;
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "exited");
    // Text given at load time ends after itself.
    x.ok("x86_load_program", json!({"path": cat, "stdin": "a\nb"}))
        .await;
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["output"], "a\r\na\r\nbb");
    // `<` and `>` in the tail, as COMMAND.COM does.
    let loaded = x
        .ok(
            "x86_load_program",
            json!({"path": cat, "command_tail": "< in.txt > out.txt"}),
        )
        .await;
    assert_eq!(loaded["stdin"], "file IN.TXT");
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(
        (run["stop_reason"].as_str(), run["output"].as_str()),
        (Some("exited"), Some(""))
    );
    assert_eq!(
        std::fs::read(drive.path().join("OUT.TXT")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    // A workspace file as stdin, and a full "disk".
    std::fs::write(drive.path().join("BIG.TXT"), vec![b'z'; 5000]).unwrap();
    x.ok(
        "x86_load_program",
        json!({"path": cat, "stdin_file": drive.path().join("BIG.TXT"),
               "command_tail": ">big.out", "write_limit_kib": 2}),
    )
    .await;
    assert_eq!(x.ok("x86_run", json!({})).await["stop_reason"], "exited");
    assert_eq!(
        std::fs::metadata(drive.path().join("BIG.OUT"))
            .unwrap()
            .len(),
        2048
    );
    let console = x.ok("x86_read_console", json!({})).await;
    assert!(
        console["files"]["disk_full"].as_u64().unwrap() > 0,
        "{console}"
    );
    let (code, msg) = x
        .err(
            "x86_load_program",
            json!({"path": cat, "command_tail": "< missing.txt"}),
        )
        .await;
    assert_eq!(code, "LOAD_FAILED");
    assert!(msg.contains("File not found: missing.txt"), "{msg}");
    x.server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn dos_paths_do_not_follow_links_out_of_drive_c() {
    let base = tempfile::tempdir().unwrap();
    let drive = base.path().join("drive");
    std::fs::create_dir(&drive).unwrap();
    std::os::unix::fs::symlink("..", drive.join("UP")).unwrap();
    // mov dx,10Eh ; mov ah,3Ch ; xor cx,cx ; int 21h ; mov ah,4Ch ; int 21h ;
    // "UP\NEW.TXT",0  (exit code: the handle, or the DOS error)
    let mut prog = vec![
        0xBA, 0x0E, 0x01, 0xB4, 0x3C, 0x31, 0xC9, 0xCD, 0x21, 0xB4, 0x4C, 0xCD, 0x21, 0x90,
    ];
    prog.extend_from_slice(b"UP\\NEW.TXT\0");
    std::fs::write(drive.join("MK.COM"), &prog).unwrap();
    let x = X86::start(&[format!("{}:rw", base.path().display())]).await;
    x.ok("x86_load_program", json!({"path": drive.join("MK.COM")}))
        .await;
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(
        (run["stop_reason"].as_str(), run["exit_code"].as_u64()),
        (Some("exited"), Some(5))
    );
    assert!(!base.path().join("NEW.TXT").exists());
    x.server.stop().await;
}

#[tokio::test]
async fn errors_name_the_problem() {
    let x = X86::samples().await;
    let (code, msg) = x.err("read_cpu_registers", json!({})).await;
    assert_eq!(code, "NO_MACHINE");
    assert!(msg.contains("x86_load_program"), "{msg}");
    let missing = sample("missing.com");
    let (code, msg) = x.err("x86_load_program", json!({"path": missing})).await;
    assert!(!code.is_empty(), "{msg}");
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
    x.ok(
        "x86_load_program",
        json!({"path": sample("sums.com"), "tracking": false}),
    )
    .await;
    let (code, _) = x.err("read_cfg_cpu_graph", json!({})).await;
    assert_eq!(code, "TRACKING_OFF");
    let (code, _) = x.err("list_functions", json!({})).await;
    assert_eq!(code, "TRACKING_OFF");
    let (code, _) = x.err("x86_step", json!({"count": 10_001})).await;
    assert_eq!(code, "INVALID_ARGUMENT");
    let (_, msg) = x.err("x86_remove_machine", json!({"machine": 99})).await;
    assert!(msg.contains("99"), "{msg}");
    let (code, _) = x
        .err("x86_write_memory", json!({"address": 0, "data": "XYZ"}))
        .await;
    assert_eq!(code, "INVALID_ARGUMENT");
    let r = x
        .server
        .call(
            "x86_load_program",
            json!({"path": sample("sums.com"), "cpu": "z80"}),
        )
        .await;
    assert!(
        is_error(&r) && text(&r).contains("must be one of [i8086, i80186]"),
        "{}",
        text(&r)
    );
    x.server.stop().await;
}

#[tokio::test]
async fn a_program_outside_the_sandbox_is_refused_naming_the_allowed_roots() {
    let outside = tempfile::tempdir().unwrap();
    let program = outside.path().canonicalize().unwrap().join("SUMS.COM");
    std::fs::copy(sample("sums.com"), &program).unwrap();
    let x = X86::samples().await;
    let (_, msg) = x.err("x86_load_program", json!({"path": program})).await;
    assert!(
        msg.contains("outside"),
        "should say the path is outside the allowed directories: {msg}"
    );
    assert!(
        msg.contains(&samples("dos").display().to_string()),
        "should list the allowed roots: {msg}"
    );
    x.server.stop().await;
}

// ---------------------------------------------------------------- fixtures

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// Runs one fixture program through MCP in its own directory; returns the
/// mismatches.
async fn check_program(x: &X86, work: &Path, src: &Path, exp: &Value) -> Vec<String> {
    let program = exp["program"].as_str().unwrap();
    std::fs::create_dir_all(work).unwrap();
    std::fs::copy(src, work.join(program)).unwrap();
    let calls = exp["calls"].as_array().unwrap();
    // Call counts need tracking; the 90M-instruction benchmark runs without.
    let tracking = !calls.is_empty() || exp["instructions"].as_u64().unwrap_or(0) < 1_000_000;
    let loaded = x
        .ok(
            "x86_load_program",
            json!({"path": work.join(program), "tracking": tracking}),
        )
        .await;
    let load_segment = u16::from_str_radix(loaded["load_segment"].as_str().unwrap(), 16).unwrap();
    let mut errs = Vec::new();
    let mut run = x
        .ok("x86_run", json!({"max_instructions": 200_000_000}))
        .await;
    let mut executed = run["instructions"].as_u64().unwrap();
    // A long run may come back early (progress/time slice): continue it.
    while run["stop_reason"] == "cancelled" {
        run = x
            .ok("x86_run", json!({"max_instructions": 200_000_000}))
            .await;
        executed += run["instructions"].as_u64().unwrap();
    }
    if run["stop_reason"] != "exited" || run["exit_code"] != exp["exit_code"] {
        errs.push(format!(
            "stop: {} exit {}, want exit {}",
            run["stop_reason"], run["exit_code"], exp["exit_code"]
        ));
    }
    if let Some(want) = exp["instructions"].as_u64()
        && executed != want
    {
        errs.push(format!("instructions: {executed}, want {want}"));
    }
    let console = x.ok("x86_read_console", json!({"max_bytes": 65536})).await;
    for (k, want) in [("stdout", &exp["stdout"]), ("stderr", &exp["stderr"])] {
        if &console[k] != want {
            errs.push(format!("{k}: {}, want {want}", console[k]));
        }
    }
    if let Some(tty) = exp.get("bios_teletype")
        && &console["screen"] != tty
    {
        errs.push(format!("screen: {}, want {tty}", console["screen"]));
    }
    // The reference keeps the counts as an object by service; the tool
    // lists them, in service order.
    let int21: serde_json::Map<String, Value> = console["int21_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["service"].as_str().unwrap_or("?").to_owned(),
                c["calls"].clone(),
            )
        })
        .collect();
    if Value::Object(int21.clone()) != exp["int21_calls"] {
        errs.push(format!(
            "int21 calls: {}, want {}",
            Value::Object(int21),
            exp["int21_calls"]
        ));
    }
    if !calls.is_empty() {
        let f = x.ok("list_functions", json!({"limit": 1000})).await;
        let by_address: BTreeMap<&str, u64> = f["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["address"].as_str().unwrap(),
                    f["calledCount"].as_u64().unwrap(),
                )
            })
            .collect();
        for c in calls {
            // Expected addresses are relative to the load segment.
            let rel = c["address"].as_str().unwrap();
            let seg = u16::from_str_radix(&rel[..4], 16).unwrap() + load_segment;
            let address = format!("{seg:04X}:{}", &rel[5..]);
            let got = by_address.get(address.as_str()).copied().unwrap_or(0);
            if got != c["count"].as_u64().unwrap() {
                errs.push(format!(
                    "calls to {} ({address}): {got}, want {}",
                    c["name"], c["count"]
                ));
            }
        }
    }
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(work).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name != program {
            files.insert(name, latin1(&std::fs::read(e.path()).unwrap()));
        }
    }
    let want_files: BTreeMap<String, String> = exp["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    if files != want_files {
        errs.push(format!("files: {files:?}, want {want_files:?}"));
    }
    let removed = x
        .ok("x86_remove_machine", json!({"machine": loaded["machine"]}))
        .await;
    assert_eq!(removed["removed"], loaded["machine"]);
    errs
}

#[tokio::test]
async fn shared_every_dos_program_matches_its_reference_run() {
    let Some(dir) = fixtures("dos").map(|d| d.canonicalize().unwrap()) else {
        return;
    };
    let mut expected: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".expected.json"))
        .collect();
    expected.sort();
    assert!(expected.len() >= 10, "{} programs", expected.len());
    let work = tempfile::tempdir().unwrap();
    let work = work.path().canonicalize().unwrap();
    let x = X86::start(&[format!("{}:rw", work.display())]).await;
    let mut failed = Vec::new();
    for path in &expected {
        let exp: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let stem = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".expected.json", "");
        let src = dir.join(format!("{stem}.{}", exp["format"].as_str().unwrap()));
        let errs = check_program(&x, &work.join(&stem), &src, &exp).await;
        if errs.is_empty() {
            eprintln!("{stem}: ok");
        } else {
            eprintln!("{stem}: FAILED\n  {}", errs.join("\n  "));
            failed.push(format!("{stem}: {}", errs.join("; ")));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} programs failed:\n{}",
        failed.len(),
        expected.len(),
        failed.join("\n")
    );
    x.server.stop().await;
}

// ------------------------------------------------- resources, prompt, completion

#[tokio::test]
async fn resources_prompt_and_completion_show_the_callers_machines() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
    let x = X86::samples().await;
    let client = &x.server.client;
    assert_eq!(
        x.server.template_uris().await,
        [
            "x86://machines/{machine}/console",
            "x86://machines/{machine}/memory/{segment}/{offset}/{length}",
            "x86://machines/{machine}/registers",
        ]
    );
    let tools = x.server.tool_names().await;
    assert!(
        !tools
            .iter()
            .any(|t| t == "x86_debug" || t.starts_with("machine_"))
    );

    let loaded = x
        .ok(
            "x86_load_program",
            json!({"path": sample("greet.com"), "command_tail": "abc"}),
        )
        .await;
    let m = loaded["machine"].as_u64().unwrap();
    let base = format!("x86://machines/{m}");
    let run = x.ok("x86_run", json!({})).await;
    assert_eq!(run["stop_reason"], "exited");

    let (regs, mime) = x
        .server
        .read_text(&format!("{base}/registers"))
        .await
        .unwrap();
    assert_eq!(mime, "application/json");
    let regs: Value = serde_json::from_str(&regs).unwrap();
    assert_eq!(
        regs,
        x.ok("read_cpu_registers", json!({"machine": m})).await
    );

    // The program's first bytes, as read_memory reads them at 0087:0100.
    let (dump, mime) = x
        .server
        .read_text(&format!("{base}/memory/0087/0100/16"))
        .await
        .unwrap();
    assert_eq!(mime, "text/plain");
    let lines: Vec<&str> = dump.lines().collect();
    assert_eq!(lines[0], format!("machine {m}: 0087:0100, 16 bytes (hex)"));
    let data = x
        .ok(
            "read_memory",
            json!({"address": 0x970, "length": 16, "machine": m}),
        )
        .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let spaced: Vec<&str> = (0..16).map(|i| &data[2 * i..2 * i + 2]).collect();
    assert!(
        lines[1].starts_with(&format!("0087:0100  {}  |", spaced.join(" "))),
        "{dump}"
    );
    for (tail, needle) in [
        ("memory/0087/0100/4097", "1 to 4096"),
        ("memory/0087/0100/0", "1 to 4096"),
        ("memory/87G/0100/1", "segment `87G`"),
        ("memory/0087/10000/1", "offset `10000`"),
    ] {
        let e = x
            .server
            .read_text(&format!("{base}/{tail}"))
            .await
            .unwrap_err();
        assert!(
            e.contains("INVALID_ARGUMENT") && e.contains(needle),
            "{tail}: {e}"
        );
    }

    let (console, mime) = x
        .server
        .read_text(&format!("{base}/console"))
        .await
        .unwrap();
    assert_eq!(mime, "text/plain");
    let out = "Hello from benchtop x86-inspect!\r\nCommand tail:[ abc]\r\n";
    assert!(console.starts_with(&format!("machine {m} (")), "{console}");
    assert!(console.contains("exited with exit code 0"), "{console}");
    assert!(
        console.ends_with(&format!("--- stdout: {} bytes ---\n{out}", out.len())),
        "{console}"
    );

    // An unknown machine (as another client's would) names the way out.
    for uri in [
        "x86://machines/12345/registers".to_owned(),
        "x86://machines/12345/console".to_owned(),
        "x86://machines/notanumber/memory/0/0/1".to_owned(),
    ] {
        let e = x.server.read_text(&uri).await.unwrap_err();
        assert!(
            e.contains("UNKNOWN_MACHINE") && e.contains("x86_list_machines"),
            "{e}"
        );
    }

    // Completion: the caller's own ids by prefix.
    let second = x
        .ok("x86_load_program", json!({"path": sample("greet.com")}))
        .await["machine"]
        .as_u64()
        .unwrap();
    let complete = |reference: Reference, value: &str| {
        client.complete(CompleteRequestParams::new(
            reference,
            ArgumentInfo::new("machine", value),
        ))
    };
    let c = complete(
        Reference::for_resource("x86://machines/{machine}/console"),
        "",
    )
    .await
    .unwrap();
    assert_eq!(c.completion.values, [m.to_string(), second.to_string()]);
    let c = complete(Reference::for_prompt("x86_debug"), &m.to_string())
        .await
        .unwrap();
    assert_eq!(c.completion.values, [m.to_string()]);
    let c = complete(Reference::for_prompt("x86_debug"), "x")
        .await
        .unwrap();
    assert!(c.completion.values.is_empty());

    // The prompt: its arguments, and text naming only real tools.
    let prompts = client.list_all_prompts().await.unwrap();
    let p = prompts.iter().find(|p| p.name == "x86_debug").unwrap();
    assert_eq!(
        e2e::prompt_arguments(p),
        [("symptom", Some(true)), ("machine", Some(false))]
    );
    let get = |args: Value| {
        let mut params = GetPromptRequestParams::new("x86_debug");
        params.arguments = args.as_object().cloned();
        client.get_prompt(params)
    };
    let p = get(json!({"symptom": "tail is wrong", "machine": m.to_string()}))
        .await
        .unwrap();
    let message = serde_json::to_value(&p.messages[0]).unwrap();
    let text = message["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("Symptom: tail is wrong") && text.contains(&format!("machine {m} (")),
        "{text}"
    );
    let named: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    assert!(named.len() >= 14, "{text}");
    for n in named {
        assert!(tools.iter().any(|t| t == n), "{n} is not a tool");
    }
    let e = get(json!({"symptom": "x", "machine": "12345"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("UNKNOWN_MACHINE"), "{e}");
    x.server.stop().await;
}

/// Over HTTP, another client's machine id in a URI, the prompt or
/// completion answers exactly like an unknown one.
#[tokio::test]
async fn another_clients_machine_is_unknown_to_resources_prompt_and_completion() {
    use e2e::{http_client, prompt_completions, read_as};
    use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
    let plugins = only_plugin("x86_inspect.wasm");
    let allow = format!("{}:ro", samples("dos").display());
    let (_child, url) = e2e::serve_http(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &allow,
    ])
    .await;
    let (alice, bob) = (http_client(&url).await, http_client(&url).await);
    let params = CallToolRequestParams::new("x86_load_program").with_arguments(
        json!({"path": sample("greet.com")})
            .as_object()
            .unwrap()
            .clone(),
    );
    let loaded = alice.call_tool(params).await.unwrap();
    assert!(!is_error(&loaded), "{}", text(&loaded));
    let m = result_json(&loaded)["machine"]
        .as_u64()
        .unwrap()
        .to_string();
    // An id no one holds, as long as hers.
    let nobody = if m.starts_with('9') {
        m.replacen('9', "8", 1)
    } else {
        format!("9{}", &m[1..])
    };
    assert!(
        read_as(&alice, &format!("x86://machines/{m}/console"))
            .await
            .is_ok()
    );
    for kind in ["registers", "console", "memory/0/0/1"] {
        let theirs = read_as(&bob, &format!("x86://machines/{m}/{kind}"))
            .await
            .unwrap_err();
        let unknown = read_as(&bob, &format!("x86://machines/{nobody}/{kind}"))
            .await
            .unwrap_err();
        assert!(theirs.contains("UNKNOWN_MACHINE"), "{theirs}");
        assert_eq!(theirs.replace(&m, "X"), unknown.replace(&nobody, "X"));
    }
    assert_eq!(
        prompt_completions(&alice, "x86_debug", "machine", "").await,
        vec![m.clone()]
    );
    assert!(
        prompt_completions(&bob, "x86_debug", "machine", "")
            .await
            .is_empty()
    );
    let mut params = GetPromptRequestParams::new("x86_debug");
    params.arguments = json!({"symptom": "x", "machine": m}).as_object().cloned();
    let e = bob.get_prompt(params).await.unwrap_err().to_string();
    assert!(e.contains("UNKNOWN_MACHINE"), "{e}");
}

/// Resource notices heard so far, after the host's 250 ms merge window.
/// The URIs announced so far, sorted: a run announces its URIs in no set
/// order.
async fn heard_sorted(server: &Server) -> Vec<String> {
    let mut got = heard(server).await;
    got.sort();
    got
}

/// A call that changes a machine announces its registers and console
/// where they changed, once however many instructions ran; subscribers of
/// another machine hear nothing, nor after a read.
// resources/subscribe is the legacy form, and the one today's clients send.
#[allow(deprecated)]
#[tokio::test]
async fn subscribers_hear_when_a_call_changes_their_machine() {
    use rmcp::model::SubscribeRequestParams;
    let x = X86::samples().await;
    let load = async || {
        x.ok("x86_load_program", json!({"path": sample("greet.com")}))
            .await["machine"]
            .as_u64()
            .unwrap()
    };
    let (a, b) = (load().await, load().await);
    let (regs, console) = (
        format!("x86://machines/{a}/registers"),
        format!("x86://machines/{a}/console"),
    );
    let other = format!("x86://machines/{b}/console");
    // The loads' own notices go out at the end of the host's 250 ms merge
    // window; let it pass, or a subscription made inside it hears them.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    for uri in [&regs, &console, &other] {
        x.server
            .client
            .subscribe(SubscribeRequestParams::new(uri.as_str()))
            .await
            .unwrap();
    }
    assert!(
        heard_sorted(&x.server).await.is_empty(),
        "nothing changed yet"
    );
    x.ok("x86_write_registers", json!({"machine": a, "ax": 7}))
        .await;
    assert_eq!(
        heard_sorted(&x.server).await,
        [regs.as_str()],
        "AX is not on the console"
    );
    x.ok(
        "read_memory",
        json!({"machine": a, "address": 0x870, "length": 16}),
    )
    .await;
    x.ok("x86_read_console", json!({"machine": a})).await;
    assert_eq!(
        heard_sorted(&x.server).await.len(),
        1,
        "reads change nothing"
    );
    let run = x.ok("x86_run", json!({"machine": a})).await;
    assert_eq!(run["stop_reason"], "exited");
    let mut want = vec![console.clone(), regs.clone(), regs.clone()];
    want.sort();
    assert_eq!(
        heard_sorted(&x.server).await,
        want,
        "one notice each for the run"
    );
    x.ok(
        "x86_write_console_input",
        json!({"machine": b, "text": "y"}),
    )
    .await;
    want.push(other.clone());
    want.sort();
    assert_eq!(
        heard_sorted(&x.server).await,
        want,
        "typed input is news for b only"
    );
    x.server.stop().await;
}

/// Over HTTP, a client subscribed to another client's machine URI hears
/// nothing when that client runs it, while the owner hears of it.
#[allow(deprecated)]
#[tokio::test]
async fn another_client_subscribed_to_your_machine_hears_nothing() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, SubscribeRequestParams};
    use rmcp::transport::StreamableHttpClientTransport;
    let plugins = only_plugin("x86_inspect.wasm");
    let allow = format!("{}:ro", samples("dos").display());
    let (_child, url) = e2e::serve_http(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &allow,
    ])
    .await;
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
        result_json(&r)
    };
    let m = call("x86_load_program", json!({"path": sample("greet.com")})).await["machine"]
        .as_u64()
        .unwrap();
    let uri = format!("x86://machines/{m}/console");
    for c in [&alice, &bob] {
        c.subscribe(SubscribeRequestParams::new(uri.as_str()))
            .await
            .unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    call("x86_run", json!({})).await;
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert_eq!(alice_heard.lock().unwrap().resource_updates, [uri]);
    assert!(bob_heard.lock().unwrap().resource_updates.is_empty());
}
