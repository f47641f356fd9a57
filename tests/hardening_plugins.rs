//! Hardening against plugins and their arguments: every tool of every
//! plugin fed generated bad arguments and hostile files, and a hostile
//! plugin (kitchen-sink) contained while another plugin is served, and
//! (hardening item 9) a plugin that declares another plugin's view or
//! resource templates refused, whatever the load order.
//!
//! Each test prints its figures (`cargo test -p e2e --test hardening_plugins --
//! --nocapture`). The tests take a lock so that they do not run beside each
//! other on a small machine and disturb each other's timings.

use e2e::hardening::{
    CALL_TIMEOUT, PLUGIN_FILES, Tally, Workspace, fuzz_server, judge, plugin_copy, serial,
};
use e2e::{
    RawFailure, RawServer, Server, is_error, plugins, raw_text, sandbox, test_plugins, text,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Values of the wrong type, out of range, or hostile, for any property.
fn generic_values() -> Vec<(&'static str, Value)> {
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    vec![
        ("null", Value::Null),
        ("true", json!(true)),
        ("false", json!(false)),
        ("zero", json!(0)),
        ("minus_one", json!(-1)),
        ("fraction", json!(1.5)),
        ("negative_fraction", json!(-0.5)),
        ("float_integer", json!(3.0)),
        ("1e300", json!(1e300)),
        ("-1e300", json!(-1e300)),
        ("1e-300", json!(1e-300)),
        ("i64_min", json!(i64::MIN)),
        ("i64_max", json!(i64::MAX)),
        ("u64_max", json!(u64::MAX)),
        ("u64_max+1", json!(18_446_744_073_709_551_616.0)),
        ("u32_max+1", json!(4_294_967_296u64)),
        ("u16_max+1", json!(65_536)),
        ("string_NaN", json!("NaN")),
        ("string_Infinity", json!("Infinity")),
        ("string_-Infinity", json!("-Infinity")),
        ("numeric_string", json!("42")),
        ("empty_string", json!("")),
        ("blank_string", json!("   ")),
        ("string_100k", json!("A".repeat(100 * 1024))),
        ("nul", json!("a\u{0}b")),
        (
            "control_chars",
            json!("\u{1}\u{7}\u{8}\u{1b}[31m\r\n\t\u{7f}"),
        ),
        ("unicode", json!("💥\u{202e}ǅ\u{fffd}\u{feff}")),
        ("empty_object", json!({})),
        ("object", json!({"a": 1, "b": [2]})),
        ("empty_array", json!([])),
        ("mixed_array", json!([1, "two", null, {"x": 3}])),
        ("array_100k", Value::Array(vec![json!(7); 100_000])),
        ("deep_array", deep),
    ]
}

/// Paths that must not be read, or that are not what a tool expects.
fn path_values(ws: &Workspace) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = [
        "/",
        "/etc/passwd",
        "/etc/shadow",
        "/dev/zero",
        "/dev/urandom",
        "/dev/null",
        "/proc/self/mem",
        "/proc/self/environ",
        "../../..",
        "../../../etc/passwd",
        "..",
        ".",
        "ecu",
        "nonexistent/none.bin",
        "ecu/BT000001.bin/",
        "file:///etc/passwd",
        "~/.ssh/id_rsa",
        "ecu/BT000001.bin\u{0}.txt",
        "C:\\Windows\\win.ini",
        "*",
        "logs/*.csv",
        "#1",
        "#0",
        "#-1",
        "#99999",
    ]
    .iter()
    .map(|p| (format!("path {p:?}"), json!(p)))
    .collect();
    v.push(("path: absolute dir".into(), json!(ws.path("ecu"))));
    v.push(("path: long".into(), json!("a/".repeat(3000))));
    v.push(("path: long name".into(), json!("x".repeat(300))));
    for f in ws.hostile_files() {
        match f.strip_prefix("logs/") {
            // One named pipe is enough where a path is expected.
            Some(name) if name.contains("fifo") => {}
            _ => v.push((format!("file {f}"), json!(f.clone()))),
        }
        if let Some(name) = f.strip_prefix("logs/") {
            v.push((format!("file {name}"), json!(name)));
        }
    }
    v
}

/// Extra values for properties whose meaning invites particular attacks.
fn special_values(prop: &str) -> Vec<(String, Value)> {
    let s = |label: &str, v: Value| (label.to_owned(), v);
    match prop {
        "filter" => vec![
            s(
                "deep parens",
                json!(format!("{}RPM{}", "(".repeat(20_000), ")".repeat(20_000))),
            ),
            s(
                "deep not",
                json!(format!("{}(RPM > 1)", "not ".repeat(20_000))),
            ),
            s(
                "deep unary minus",
                json!(format!("{}RPM > 1", "-".repeat(20_000))),
            ),
            s("long chain", json!(vec!["RPM > 1"; 5000].join(" and "))),
            s(
                "deep if",
                json!(format!(
                    "{}1{}",
                    "if RPM > 1 then (".repeat(5000),
                    ") else 0".repeat(5000)
                )),
            ),
            s(
                "huge in list",
                json!(format!("RPM in ({})", vec!["1"; 50_000].join(","))),
            ),
            s("unterminated", json!("'Knock Sum > 0")),
            s("bad regex", json!("Phase ~= \"(a+\"")),
            s("pathological regex", json!("Phase ~= \"(a+)+$\"")),
            s("huge number", json!(format!("RPM > {}", "9".repeat(5000)))),
            s("power tower", json!("RPM ^ RPM ^ RPM ^ RPM > 1")),
            s("unknown channel", json!("Nope > 1")),
            s("assignment", json!("RPM = 3000")),
        ],
        "hex_pattern" | "data" => vec![
            s("wildcards", json!("??".repeat(5000))),
            s("not hex", json!("zz")),
            s("half byte", json!("0")),
            s("regex", json!("(.*")),
            s("8192 bytes", json!("90".repeat(8192))),
            s("split nibbles", json!("9 0")),
        ],
        "since" => vec![
            s("last", json!("last")),
            s("all", json!("all")),
            s("-1", json!("-1")),
            s("huge id", json!("99999999999999999999999")),
            s("huge duration", json!("99999999999999d")),
            s("bad date", json!("2026-13-45T99:99:99Z")),
            s("zero duration", json!("0s")),
        ],
        "register" => vec![
            s("R8", json!("R8")),
            s("pc", json!("pc")),
            s("R-1", json!("R-1")),
        ],
        "session_id" => vec![
            s("traversal", json!("../../etc")),
            s("long id", json!("s".repeat(10_000))),
            s("unknown", json!("no-such-session")),
        ],
        "op" | "direction" | "cpu" => {
            vec![s("wrong case", json!("SET")), s("near miss", json!("tx "))]
        }
        "channels" => vec![
            s("many channels", json!(vec!["RPM"; 10_000])),
            s("unknown channels", json!(["Nope", "", "\u{0}"])),
            s("numbers", json!([1, 2])),
        ],
        "values" => vec![
            s("too many words", Value::Array(vec![json!(1); 70_000])),
            s("out of range words", json!([65536, -1])),
            s("float words", json!([1.5])),
        ],
        "command_tail" => vec![s("200 chars", json!("x".repeat(200)))],
        _ => vec![],
    }
}

/// Whether a property names a file (by its name or description).
fn is_path_property(name: &str, schema: &Value) -> bool {
    let desc = schema["description"].as_str().unwrap_or("").to_lowercase();
    schema["type"] == "string"
        && (["rom", "other", "path", "rom_path", "cfg_path", "file"].contains(&name)
            || desc.contains("path")
            || desc.contains("file name"))
}

/// Valid arguments a bad one is swapped into: the required properties, and
/// whatever else makes the call meaningful.
fn base_arguments(tool: &str) -> Value {
    let rom = "ecu/BT000001.bin";
    match tool {
        "rom_info" => json!({"rom": rom}),
        "list_tables" => json!({"rom": rom}),
        "read_table" => json!({"rom": rom, "table": "Boost Target"}),
        "patch_table" => json!({"rom": rom, "table": "Boost Target", "op": "add", "value": 0.0}),
        "diff_tables" => json!({"rom": rom, "other": rom}),
        "overlay_log" => json!({"rom": rom, "table": "Ignition Timing Base Map"}),
        "query_logs" => json!({"filter": "RPM > 3000", "limit": 5}),
        "plot_log" => json!({"width": 320, "height": 200}),
        "cp1600_load_rom" => json!({"rom_path": "cp1600/01-hello-world.bin"}),
        "cp1600_destroy_session" | "cp1600_switch_session" => json!({"session_id": "fuzz"}),
        "cp1600_configure_trace" => json!({"enabled": false}),
        "cp1600_disassemble" | "cp1600_examine_memory" => json!({"start_address": 20480}),
        "cp1600_set_breakpoint" => json!({"address": 20482}),
        "cp1600_write_memory" => json!({"address": 512, "values": [1, 2]}),
        "cp1600_run" | "cp1600_run_until" => json!({"max_cycles": 1000}),
        "x86_load_program" => json!({"path": "dos/sums.com"}),
        "read_memory" => json!({"address": 256, "length": 16}),
        "x86_write_memory" => json!({"address": 4096, "data": "90"}),
        "x86_remove_breakpoint" => json!({"id": 1}),
        "x86_remove_machine" => json!({"machine": 1}),
        "x86_run" => json!({"max_instructions": 1000}),
        "import_btsnoop" => json!({"path": "ble-buffer/btsnoop_hci.log"}),
        "search_packets" => json!({"hex_pattern": "01"}),
        "scan_devices" => json!({"duration": 1000}),
        _ => json!({}),
    }
}

/// Which plugin serves which tool (`benchtop tools --json` per plugin).
fn tool_owners() -> BTreeMap<String, &'static str> {
    let mut owners = BTreeMap::new();
    for file in PLUGIN_FILES {
        let dir = e2e::only_plugin(file);
        let out = std::process::Command::new(e2e::bin())
            .args(["tools", "--json", "--plugins", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "benchtop tools for {file}");
        let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
        for t in tools.as_array().unwrap() {
            owners.insert(t["name"].as_str().unwrap().to_owned(), file);
        }
    }
    owners
}

async fn must(s: &mut RawServer, tool: &str, args: Value) -> Value {
    let r = s.call(tool, args.clone(), CALL_TIMEOUT).await.unwrap();
    assert!(
        r["result"]["isError"] != true && r.get("error").is_none(),
        "setup {tool} {args}: {r}"
    );
    r
}

/// Puts a plugin in a known, useful state before its tools are attacked:
/// one cp1600 session with a program, one x86 machine, a btsnoop capture.
async fn prepare(s: &mut RawServer, plugin: &str) {
    match plugin {
        "cp1600.wasm" => {
            let r = must(s, "cp1600_list_sessions", json!({})).await;
            let list: Value = serde_json::from_str(&raw_text(&r)).unwrap_or(Value::Null);
            let ids: Vec<String> = list["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x["session_id"].as_str().map(str::to_owned))
                .collect();
            for id in ids {
                must(s, "cp1600_destroy_session", json!({"session_id": id})).await;
            }
            must(s, "cp1600_create_session", json!({"session_id": "fuzz"})).await;
            must(
                s,
                "cp1600_load_rom",
                json!({"rom_path": "cp1600/01-hello-world.bin"}),
            )
            .await;
        }
        "x86_inspect.wasm" => {
            let r = must(s, "x86_list_machines", json!({})).await;
            let list: Value = serde_json::from_str(&raw_text(&r)).unwrap_or(Value::Null);
            let ids: Vec<u64> = list["machines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["machine"].as_u64())
                .collect();
            for id in ids {
                must(s, "x86_remove_machine", json!({"machine": id})).await;
            }
            must(s, "x86_load_program", json!({"path": "dos/sums.com"})).await;
            must(s, "x86_add_breakpoint", json!({"address": 0x970})).await;
        }
        "ble_buffer.wasm" => {
            must(
                s,
                "import_btsnoop",
                json!({"path": "ble-buffer/btsnoop_hci.log"}),
            )
            .await;
        }
        _ => {}
    }
}

/// A cheap call per plugin that must succeed: the plugin is alive and well.
fn probe(plugin: &str) -> (&'static str, Value) {
    match plugin {
        "ecu_tables.wasm" => ("rom_info", json!({"rom": "ecu/BT000001.bin"})),
        "log_query.wasm" => (
            "query_logs",
            json!({"filter": "RPM > 6000", "file": "log-2026-02-22T14-30-00-000Z.csv", "limit": 1}),
        ),
        "cp1600.wasm" => ("cp1600_list_sessions", json!({})),
        "x86_inspect.wasm" => ("x86_list_machines", json!({})),
        _ => ("status", json!({})),
    }
}

/// The generated cases for one tool: (label, arguments).
fn cases_for(tool: &Value, ws_paths: &[(String, Value)]) -> Vec<(String, Value)> {
    let name = tool["name"].as_str().unwrap();
    let schema = &tool["inputSchema"];
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect();
    let base = base_arguments(name);
    let mut cases: Vec<(String, Value)> = Vec::new();
    for (prop, prop_schema) in &props {
        let mut values: Vec<(String, Value)> = generic_values()
            .into_iter()
            .map(|(l, v)| (l.to_string(), v))
            .collect();
        if is_path_property(prop, prop_schema) {
            values.extend(ws_paths.iter().cloned());
        }
        values.extend(special_values(prop));
        for (label, value) in values {
            let mut args = base.clone();
            args[prop.as_str()] = value;
            cases.push((format!("{prop} = {label}"), args));
        }
    }
    for prop in &required {
        let mut args = base.clone();
        args.as_object_mut().unwrap().remove(prop);
        cases.push((format!("missing {prop}"), args));
    }
    cases.push(("no arguments".into(), json!({})));
    for (label, extra) in [
        ("unknown field", json!({"zz_unknown": 1})),
        ("empty key", json!({"": null})),
        ("__proto__", json!({"__proto__": {"polluted": true}})),
        ("camelCase twin", json!({"sessionId": "x", "maxCycles": 1})),
    ] {
        let mut args = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            args[k.as_str()] = v.clone();
        }
        cases.push((label.into(), args));
    }
    for (label, whole) in [
        ("arguments = array", json!([1, 2])),
        ("arguments = string", json!("rom")),
        ("arguments = number", json!(5)),
        ("arguments = true", json!(true)),
        ("arguments = null", Value::Null),
    ] {
        cases.push((label.into(), whole));
    }
    cases
}

/// Feeds every tool of `plugin` its generated bad arguments; every answer
/// must be an understandable error (or a success where the value was in
/// fact valid), never a hang, a dead server, a leaked panic or a trap.
async fn bad_arguments(plugin: &'static str) {
    let _serial = serial().await;
    let started = Instant::now();
    let ws = Workspace::new();
    let plugins = plugin_copy();
    let mut s = fuzz_server(&ws, plugins.path()).await;
    let owners = tool_owners();
    let tools = s.tools().await;
    assert_eq!(tools.len(), owners.len(), "every plugin's tools are served");
    let paths = path_values(&ws);

    let mut tally = Tally::default();
    let mut problems: Vec<String> = Vec::new();
    let mut trapped: Vec<String> = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    let mut mine: Vec<&Value> = tools
        .iter()
        .filter(|t| owners[t["name"].as_str().unwrap()] == plugin)
        .collect();
    mine.sort_by_key(|t| t["name"].as_str().unwrap().to_owned());
    assert!(!mine.is_empty(), "{plugin} serves tools");
    for tool in &mine {
        let name = tool["name"].as_str().unwrap();
        let cases = cases_for(tool, &paths);
        prepare(&mut s, plugin).await;
        for (i, (label, args)) in cases.iter().enumerate() {
            if i > 0 && i % 25 == 0 {
                prepare(&mut s, plugin).await;
            }
            let t = Instant::now();
            let response = match s.call(name, args.clone(), CALL_TIMEOUT).await {
                Ok(r) => r,
                Err(RawFailure::Timeout) => {
                    problems.push(format!("{name} [{label}]: no answer in {CALL_TIMEOUT:?}"));
                    continue;
                }
                Err(RawFailure::Closed) => panic!(
                    "the server died on {name} [{label}]; problems so far: {problems:#?}\nstderr:\n{}",
                    s.stderr.lock().unwrap()
                ),
            };
            let took = t.elapsed();
            if took > slowest.0 {
                slowest = (took, format!("{name} [{label}]"));
            }
            if let Some(problem) = judge(&response, &mut tally, &mut trapped) {
                problems.push(format!("{name} [{label}]: {problem}"));
            }
        }
        // The server, and this plugin, still answer.
        let (probe_tool, probe_args) = probe(plugin);
        let r = s
            .call(probe_tool, probe_args, CALL_TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("probe after {name}: {e:?}"));
        assert!(
            r.get("error").is_none() && r["result"]["isError"] != true,
            "after {name}, {probe_tool} fails: {r}"
        );
    }
    assert!(s.alive(), "the server is alive");
    println!(
        "bad arguments, {plugin}: {} tools, {} cases: {} ok, {} isError, {} JSON-RPC errors; {} problems, {} traps; slowest {:?} ({}); took {:?}",
        mine.len(),
        tally.total(),
        tally.ok,
        tally.is_error,
        tally.rpc_error,
        problems.len(),
        trapped.len(),
        slowest.0,
        slowest.1,
        started.elapsed()
    );
    assert!(tally.total() >= 500, "hundreds of cases ran");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .map(|p| p.chars().take(600).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test]
async fn bad_arguments_to_ecu_tables() {
    bad_arguments("ecu_tables.wasm").await;
}

#[tokio::test]
async fn bad_arguments_to_log_query() {
    bad_arguments("log_query.wasm").await;
}

#[tokio::test]
async fn bad_arguments_to_cp1600() {
    bad_arguments("cp1600.wasm").await;
}

#[tokio::test]
async fn bad_arguments_to_x86_inspect() {
    bad_arguments("x86_inspect.wasm").await;
}

#[tokio::test]
async fn bad_arguments_to_ble_buffer() {
    bad_arguments("ble_buffer.wasm").await;
}

/// The kitchen-sink test component tries every escape and exhaustion the
/// issue lists, one after another, while a second plugin (greeter) is
/// called every 20 ms from another task: each attempt must fail with a
/// clear error, nothing outside the grants may change, and the other
/// plugin must keep answering promptly throughout.
#[tokio::test]
async fn a_hostile_plugin_is_contained_while_others_are_served() {
    let _serial = serial().await;
    let sb = sandbox(&format!(
        "\n[[plugin]]\npath = \"{}\"\nprefix = \"bystander\"\n",
        test_plugins().join("greeter.wasm").display()
    ));
    let cfg = std::fs::read_to_string(&sb.config)
        .unwrap()
        .replace("memory_mb = 64", "memory_mb = 400");
    std::fs::write(&sb.config, cfg).unwrap();
    let (rw, ro, outside, config) = (
        sb.rw.clone(),
        sb.ro.clone(),
        sb.outside.clone(),
        sb.config.clone(),
    );
    std::fs::write(rw.join("mine.txt"), "mine").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = Arc::new(
        Server::start(&[
            "--config",
            config.to_str().unwrap(),
            "--workspace",
            rw.to_str().unwrap(),
        ])
        .await,
    );

    // The bystander: greeter's `greet`, every 20 ms, timed.
    let done = Arc::new(AtomicBool::new(false));
    let bystander = {
        let (server, done) = (server.clone(), done.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = tokio::time::timeout(
                    Duration::from_secs(10),
                    server.call("bystander_greet", json!({"name": "bench"})),
                )
                .await
                .expect("greeter did not answer within 10 s");
                assert!(!is_error(&r), "greeter failed: {}", text(&r));
                latencies.push(t.elapsed());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            latencies
        })
    };

    let secret = outside.join("secret.txt");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let attempts: Vec<(&str, &str, Value, &str)> = vec![
        (
            "absolute path outside the grants",
            "read_file",
            json!({"path": s(&secret)}),
            "outside the directories",
        ),
        (
            "`..` walk out of a grant",
            "read_file",
            json!({"path": format!("{}/../outside/secret.txt", s(&rw))}),
            "",
        ),
        (
            "a system file",
            "read_file",
            json!({"path": "/etc/passwd"}),
            "outside the directories",
        ),
        (
            "symlink to an absolute path outside",
            "symlink_file",
            json!({"target": s(&secret), "link": s(&rw.join("abs-link"))}),
            "",
        ),
        (
            "symlink with a relative target outside",
            "symlink_file",
            json!({"target": "../outside/secret.txt", "link": s(&rw.join("rel-link"))}),
            "",
        ),
        (
            "hard link to a file outside",
            "link_file",
            json!({"target": s(&secret), "link": s(&rw.join("stolen.txt"))}),
            "",
        ),
        (
            "rename out of the grants",
            "rename_file",
            json!({"src": s(&rw.join("mine.txt")), "dst": s(&outside.join("moved.txt"))}),
            "",
        ),
        (
            "rename into the read-only grant",
            "rename_file",
            json!({"src": s(&rw.join("mine.txt")), "dst": s(&ro.join("moved.txt"))}),
            "",
        ),
        (
            "write into the read-only grant",
            "write_file",
            json!({"path": s(&ro.join("new.txt")), "contents": "x"}),
            "read-only for this plugin",
        ),
        (
            "connect to a loopback port not allowed",
            "connect",
            json!({"address": format!("127.0.0.1:{port}")}),
            "",
        ),
        ("endless loop", "spin", json!({}), "deadline"),
        (
            "allocate past the memory cap",
            "allocate",
            json!({"mebibytes": 2048}),
            "",
        ),
        (
            "unbounded recursion",
            "recurse",
            json!({"depth": u64::MAX}),
            "overflowed its stack",
        ),
        (
            "a 100 MB result",
            "big_result",
            json!({"mebibytes": 100}),
            "over benchtop's limit",
        ),
        ("a panic", "panic", json!({"message": "hostile"}), "hostile"),
    ];
    let mut contained = 0;
    for (what, tool, args, says) in &attempts {
        let t = Instant::now();
        let r = server.call(tool, args.clone()).await;
        let msg = text(&r);
        if *tool == "symlink_file" && !is_error(&r) {
            // A link is only text: creating one may succeed, as long as
            // following it is refused (checked below for every link).
            let link = args["link"].as_str().unwrap();
            let r = server.call("read_file", json!({"path": link})).await;
            assert!(is_error(&r), "{what}: followed: {}", text(&r));
            eprintln!("contained: {what}: created, but following it: {}", text(&r));
            contained += 1;
            continue;
        }
        assert!(is_error(&r), "{what}: not refused: {msg}");
        assert!(!msg.contains("top secret"), "{what}: leaked the secret");
        assert!(msg.contains(says), "{what}: expected `{says}` in: {msg}");
        assert!(msg.len() < 4096, "{what}: a {}-byte message", msg.len());
        // Whatever was created inside the grant must not lead outside it.
        for link in ["abs-link", "rel-link", "stolen.txt"] {
            let r = server
                .call("read_file", json!({"path": s(&rw.join(link))}))
                .await;
            assert!(
                !text(&r).contains("top secret"),
                "{what}: read the secret through {link}"
            );
        }
        eprintln!(
            "contained: {what} ({} ms): {}",
            t.elapsed().as_millis(),
            msg.lines().next().unwrap_or("")
        );
        contained += 1;
    }
    // Environment: nothing but what the host documents.
    let r = server.call("env_var", json!({"name": "HOME"})).await;
    assert_eq!(
        r.structured_content.clone().unwrap_or(Value::Null)["result"],
        Value::Null
    );
    contained += 1;

    done.store(true, Ordering::Relaxed);
    let mut latencies = bystander.await.unwrap();
    latencies.sort();
    // Nothing outside the grants changed, and the plugin itself recovered.
    let names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["secret.txt"]);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");
    assert!(!ro.join("new.txt").exists() && !ro.join("moved.txt").exists());
    assert_eq!(
        std::fs::read_to_string(rw.join("mine.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        text(&server.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    let worst = *latencies.last().unwrap();
    eprintln!(
        "hostile plugin: {contained}/{} attempts contained; greeter answered {} calls meanwhile, p50 {:?}, worst {:?}",
        attempts.len() + 1,
        latencies.len(),
        latencies[latencies.len() / 2],
        worst
    );
    assert!(latencies.len() > 50, "the bystander barely ran");
    assert!(
        worst < Duration::from_secs(1),
        "greeter stalled for {worst:?}"
    );
    drop(listener);
    Arc::into_inner(server).expect("one owner").stop().await;
}

/// The name of the custom section that carries a component's WIT docs,
/// and with them its `@resource` and `@ui` tags (crates/wit-docs).
const DOCS_SECTION: &str = "benchtop-package-docs";

fn read_leb(bytes: &[u8], at: &mut usize) -> usize {
    let (mut value, mut shift) = (0usize, 0);
    loop {
        let b = bytes[*at];
        *at += 1;
        value |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return value;
        }
        shift += 7;
    }
}

fn push_leb(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let b = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// `wasm` with its docs section's text edited (`from` → `to`, each at
/// least once): the way a hostile plugin declares whatever URIs it likes
/// for functions it has, without building a component of its own.
fn redocument(wasm: &[u8], edits: &[(&str, &str)]) -> Vec<u8> {
    let mut out = wasm[..8].to_vec();
    let mut at = 8;
    let mut edited = false;
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let size = read_leb(wasm, &mut at);
        let body = &wasm[at..at + size];
        at += size;
        let mut name_at = 0;
        let name_len = if id == 0 {
            read_leb(body, &mut name_at)
        } else {
            0
        };
        if id != 0 || &body[name_at..name_at + name_len] != DOCS_SECTION.as_bytes() {
            out.push(id);
            push_leb(&mut out, size);
            out.extend_from_slice(body);
            continue;
        }
        // One version byte, then JSON; the edits are plain text in it.
        let data = &body[name_at + name_len..];
        let mut json = String::from_utf8(data[1..].to_vec()).unwrap();
        for (from, to) in edits {
            assert!(json.contains(from), "`{from}` is not in the docs");
            json = json.replace(from, to);
        }
        let mut new_body = Vec::new();
        push_leb(&mut new_body, name_len);
        new_body.extend_from_slice(DOCS_SECTION.as_bytes());
        new_body.push(data[0]);
        new_body.extend_from_slice(json.as_bytes());
        out.push(0);
        push_leb(&mut out, new_body.len());
        out.extend_from_slice(&new_body);
        edited = true;
    }
    assert!(edited, "no {DOCS_SECTION} section");
    out
}

/// The server log's line that refuses `plugin`.
fn refusal_line(log: &str, plugin: &str) -> String {
    log.lines()
        .find(|l| l.contains(&format!("plugin `{plugin}`")) && l.contains("was not loaded"))
        .unwrap_or_else(|| panic!("no refusal of `{plugin}` in:\n{log}"))
        .to_owned()
}

/// Hardening item 9, as reported: a plugin with no grants declared
/// `ui://benchtop/ecu-table` and, under another variable name, cp1600's
/// `cp1600://sessions/{session_id}/state`; loading first (by name), it was
/// served as the ECU table view and answered reads of other clients'
/// session state, while the views plugin was refused and cp1600's notices
/// were dropped. Now both squatters are refused (whole, as for a tool name
/// taken), the view is the views plugin's, and the state is cp1600's,
/// notices included.
// resources/subscribe is the legacy form, and the one today's clients send.
#[allow(deprecated)]
#[tokio::test]
async fn hardening_9_a_plugin_cannot_take_over_a_view_or_a_session_template() {
    use rmcp::model::SubscribeRequestParams;
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    let kitchen = std::fs::read(test_plugins().join("kitchen_sink.wasm")).unwrap();
    // Names that sort, and so load, before `cp1600` and `views`.
    std::fs::write(
        dir.path().join("aaa_view.wasm"),
        redocument(
            &kitchen,
            &[("ui://kitchen/item", "ui://benchtop/ecu-table")],
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("aab_state.wasm"),
        redocument(
            &kitchen,
            &[("kitchen://items/{id}", "cp1600://sessions/{id}/state")],
        ),
    )
    .unwrap();
    for file in ["views.wasm", "cp1600.wasm"] {
        let src = plugins().join(file);
        assert!(src.exists(), "{} missing: run `make build`", src.display());
        std::fs::copy(&src, dir.path().join(file)).unwrap();
    }
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch"]).await;

    let log = s
        .log_with(&["plugin `aaa-view`", "plugin `aab-state`"])
        .await;
    let view = refusal_line(&log, "aaa-view");
    assert!(
        view.contains("`ui://benchtop/ecu-table`") && view.contains("plugin `views`"),
        "{view}"
    );
    let state = refusal_line(&log, "aab-state");
    assert!(
        state.contains("`cp1600://sessions/{id}/state`") && state.contains("plugin `cp1600`"),
        "{state}"
    );
    for owner in ["views.wasm", "cp1600.wasm"] {
        assert!(
            !log.contains(&format!("{owner}) was not loaded")),
            "{owner} is served:\n{log}"
        );
    }
    eprintln!("refused: {view}\nrefused: {state}");

    // Refused whole: none of the squatters' tools are served.
    assert!(!s.tool_names().await.iter().any(|t| t == "hello"));

    // The ECU table view is the views plugin's page.
    let (html, mime) = s.read_text("ui://benchtop/ecu-table").await.unwrap();
    assert!(
        html.contains("<title>ECU table</title>"),
        "{}",
        &html[..html.len().min(200)]
    );
    assert_eq!(mime, "text/html;profile=mcp-app");

    // Session state is cp1600's, and so are the templates listed.
    assert!(
        s.template_uris()
            .await
            .iter()
            .all(|t| t.starts_with("cp1600://sessions/{session_id}/")),
        "{:?}",
        s.template_uris().await
    );
    // cp1600's notice that the session appeared reaches a subscriber...
    s.client
        .subscribe(SubscribeRequestParams::new("cp1600://sessions/mine/state"))
        .await
        .unwrap();
    s.ok("cp1600_create_session", json!({"session_id": "mine"}))
        .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.events.lock().unwrap().resource_updates.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and a read of its state is answered by cp1600.
    let (state, mime) = s.read_text("cp1600://sessions/mine/state").await.unwrap();
    assert_eq!(mime, "application/json");
    assert!(
        !state.contains("item mine"),
        "the squatter answered: {state}"
    );
    serde_json::from_str::<Value>(&state).expect("cp1600's JSON state");
    assert_eq!(
        s.events.lock().unwrap().resource_updates,
        ["cp1600://sessions/mine/state"]
    );
    s.stop().await;
}

/// Hardening item 9: a namespace named after a plugin (`kitchen:` and
/// `ui://kitchen/` for `kitchen-sink`) is that plugin's whatever the load
/// order: a copy under a name that sorts first is refused, and one that
/// was serving those URIs while the owner was absent gives way when the
/// owner arrives (hot swap).
#[tokio::test]
async fn hardening_9_the_owner_of_a_namespace_wins_whatever_the_load_order() {
    let _serial = serial().await;
    let kitchen = std::fs::read(test_plugins().join("kitchen_sink.wasm")).unwrap();
    // The squatter's greeting reads like the owner's, but its listing
    // tells them apart.
    let squatter = redocument(&kitchen, &[("A fixed greeting.", "A squatted greeting.")]);
    let greeting = async |s: &Server| {
        s.client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.uri == "kitchen://greeting")
            .and_then(|r| r.description.clone())
    };

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("aaa.wasm"), &squatter).unwrap();
    std::fs::write(dir.path().join("kitchen_sink.wasm"), &kitchen).unwrap();
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch"]).await;
    let log = s.log_with(&["plugin `aaa`"]).await;
    let line = refusal_line(&log, "aaa");
    assert!(
        line.contains("its resource `kitchen://")
            && line.contains("plugin `kitchen-sink`")
            && line.contains("named after it"),
        "{line}"
    );
    assert!(
        !log.contains("kitchen_sink.wasm) was not loaded"),
        "the owner is served:\n{log}"
    );
    assert_eq!(greeting(&s).await.as_deref(), Some("A fixed greeting."));
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    s.stop().await;

    // The squatter alone serves the URIs nobody owns, until the owner comes.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("aaa.wasm"), &squatter).unwrap();
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap()]).await;
    assert_eq!(greeting(&s).await.as_deref(), Some("A squatted greeting."));
    let tmp = dir.path().join("kitchen_sink.partial");
    std::fs::write(&tmp, &kitchen).unwrap();
    std::fs::rename(&tmp, dir.path().join("kitchen_sink.wasm")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while greeting(&s).await.as_deref() != Some("A fixed greeting.") {
        assert!(
            Instant::now() < deadline,
            "the owner did not take its namespace back:\n{}",
            s.stderr.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.stop().await;
}
