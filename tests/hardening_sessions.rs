//! Hardening (issue 22, "Sessions belong to their client"): over HTTP, two
//! MCP clients of one server share the cp1600 and x86-inspect plugin
//! instances, yet neither can see, read, run or destroy the other's
//! emulator sessions or DOS machines, use its default, or starve it by
//! filling the caps; minted session ids and machine ids are unguessable.
//! (Freeing a departed client's sessions after 15 idle minutes is tested in
//! plugin_kit::clients and the plugins' unit tests with a moved clock.)

use e2e::{coded_error, is_error, json as result_json, plugins, repo, serve_http, text};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The per-client shares and global caps the plugins document (wit/).
const CP1600_SHARE: usize = 24;
const X86_SHARE: usize = 5;

struct Client(RunningService<RoleClient, ()>);

impl Client {
    async fn connect(url: &str) -> Client {
        Client(
            ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
                .await
                .expect("HTTP MCP session"),
        )
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        self.0
            .call_tool(params)
            .await
            .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"))
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone()).await;
        assert!(!is_error(&r), "{tool} {args}: {}", text(&r));
        result_json(&r)
    }

    /// `(code, "CODE: message")` of a call that must fail.
    async fn err(&self, tool: &str, args: Value) -> (String, String) {
        let r = self.call(tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args} should fail, got {}", text(&r));
        coded_error(&r)
    }
}

/// One HTTP server with cp1600 and x86-inspect, the samples readable.
async fn server() -> (tokio::process::Child, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for f in ["cp1600.wasm", "x86_inspect.wasm"] {
        let src = plugins().join(f);
        assert!(
            src.exists(),
            "{} is missing: run `make plugins`",
            src.display()
        );
        std::fs::copy(&src, dir.path().join(f)).unwrap();
    }
    let allow = format!("{}:ro", repo().join("samples").display());
    let (child, url) =
        serve_http(&["--plugins", dir.path().to_str().unwrap(), "--allow", &allow]).await;
    (child, url, dir)
}

#[tokio::test]
async fn cp1600_sessions_belong_to_the_client_that_created_them() {
    let (_child, url, _dir) = server().await;
    let a = Client::connect(&url).await;
    let b = Client::connect(&url).await;
    let rom = repo().join("samples/cp1600/01-hello-world.bin");

    let created = a.ok("cp1600_create_session", json!({})).await;
    let id = created["session_id"].as_str().unwrap().to_owned();
    let hex = id
        .strip_prefix("session_")
        .unwrap_or_else(|| panic!("{id}"));
    assert!(
        hex.len() == 16 && hex.bytes().all(|c| c.is_ascii_hexdigit()),
        "a minted id carries 64 random bits: {id}"
    );
    let again = a.ok("cp1600_create_session", json!({})).await;
    assert_ne!(again["session_id"], id.as_str());
    a.ok(
        "cp1600_destroy_session",
        json!({"session_id": again["session_id"]}),
    )
    .await;
    a.ok("cp1600_switch_session", json!({"session_id": id}))
        .await;
    a.ok(
        "cp1600_load_rom",
        json!({"session_id": id, "rom_path": rom.to_str().unwrap()}),
    )
    .await;
    let before = a.ok("cp1600_get_state", json!({"session_id": id})).await;

    // B sees none of it, and A's id answers exactly like one nobody has.
    let listed = b.ok("cp1600_list_sessions", json!({})).await;
    assert_eq!(listed, json!({"sessions": []}), "B lists A's sessions");
    let nobody = "session_0123456789abcdef";
    let (code, unknown) = b
        .err("cp1600_get_state", json!({"session_id": nobody}))
        .await;
    assert_eq!(code, "SESSION_NOT_FOUND");
    for (tool, args) in [
        ("cp1600_get_state", json!({"session_id": id})),
        ("cp1600_get_registers", json!({"session_id": id})),
        (
            "cp1600_examine_memory",
            json!({"session_id": id, "start_address": 0x5000}),
        ),
        ("cp1600_run", json!({"session_id": id, "max_cycles": 1000})),
        ("cp1600_step", json!({"session_id": id})),
        ("cp1600_reset", json!({"session_id": id})),
        ("cp1600_switch_session", json!({"session_id": id})),
        ("cp1600_destroy_session", json!({"session_id": id})),
    ] {
        let (code, msg) = b.err(tool, args).await;
        assert_eq!(code, "SESSION_NOT_FOUND", "{tool}: {msg}");
        if tool == "cp1600_get_state" {
            assert_eq!(
                msg,
                unknown.replace(nobody, &id),
                "the answer leaks A's session"
            );
        }
    }
    // A's active session is not B's default.
    let (code, msg) = b.err("cp1600_get_state", json!({})).await;
    assert_eq!(code, "SESSION_NOT_FOUND");
    assert!(msg.contains("no active session"), "{msg}");
    // A custom id A uses is free for B, and stays A's for A.
    b.ok("cp1600_create_session", json!({"session_id": id}))
        .await;
    b.ok("cp1600_destroy_session", json!({"session_id": id}))
        .await;

    // A's session is untouched by all of that.
    let after = a.ok("cp1600_get_state", json!({})).await;
    assert_eq!(after, before, "B's calls changed A's session");

    // B fills its share; A can still create.
    for _ in 0..CP1600_SHARE {
        b.ok("cp1600_create_session", json!({})).await;
    }
    let (code, msg) = b.err("cp1600_create_session", json!({})).await;
    assert_eq!(code, "SESSION_LIMIT");
    println!("B past its share: {msg}");
    a.ok("cp1600_create_session", json!({})).await;
    assert_eq!(
        a.ok("cp1600_list_sessions", json!({})).await["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn x86_machines_belong_to_the_client_that_loaded_them() {
    let (_child, url, _dir) = server().await;
    let a = Client::connect(&url).await;
    let b = Client::connect(&url).await;
    let greet = repo().join("samples/dos/greet.com");
    let path = greet.to_str().unwrap();

    let loaded = a.ok("x86_load_program", json!({"path": path})).await;
    let m = loaded["machine"].as_u64().unwrap();
    // Minted, not counted: a random integer below 2^53 (exact in any JSON
    // client), so no id tells anything about another.
    assert!((1..1 << 53).contains(&m), "machine id {m}");
    let second = a.ok("x86_load_program", json!({"path": path})).await["machine"]
        .as_u64()
        .unwrap();
    assert!(second != m && second != m + 1, "ids {m}, {second}");
    a.ok("x86_remove_machine", json!({"machine": second})).await;
    let before = a.ok("read_cpu_registers", json!({"machine": m})).await;

    let listed = b.ok("x86_list_machines", json!({})).await;
    assert_eq!(listed["machines"], json!([]), "B lists A's machines");
    assert_eq!(listed["default"], Value::Null);
    let (code, unknown) = b
        .err("read_cpu_registers", json!({"machine": 4_000_000_000u32}))
        .await;
    assert_eq!(code, "UNKNOWN_MACHINE");
    for (tool, args) in [
        ("read_cpu_registers", json!({"machine": m})),
        (
            "read_memory",
            json!({"machine": m, "address": 256, "length": 4}),
        ),
        ("x86_run", json!({"machine": m})),
        ("x86_step", json!({"machine": m})),
        ("x86_read_console", json!({"machine": m})),
        ("x86_remove_machine", json!({"machine": m})),
    ] {
        let (code, msg) = b.err(tool, args).await;
        assert_eq!(code, "UNKNOWN_MACHINE", "{tool}: {msg}");
        if tool == "read_cpu_registers" {
            assert_eq!(
                msg,
                unknown.replace("4000000000", &m.to_string()),
                "the answer leaks A's machine"
            );
        }
    }
    // A's machine is not B's default.
    let (code, _) = b.err("read_cpu_registers", json!({})).await;
    assert_eq!(code, "NO_MACHINE");
    let after = a.ok("read_cpu_registers", json!({})).await;
    assert_eq!(after, before, "B's calls changed A's machine");

    // B fills its share; A can still load.
    for _ in 0..X86_SHARE {
        b.ok("x86_load_program", json!({"path": path})).await;
    }
    let (code, msg) = b.err("x86_load_program", json!({"path": path})).await;
    assert_eq!(code, "TOO_MANY_MACHINES");
    println!("B past its share: {msg}");
    a.ok("x86_load_program", json!({"path": path})).await;
    let mine = a.ok("x86_list_machines", json!({})).await;
    assert_eq!(mine["machines"].as_array().unwrap().len(), 2);
    // A's own run still works on its first machine.
    let run = a.ok("x86_run", json!({"machine": m})).await;
    assert_eq!(run["machine"], m);
}

/// A `tools/call` in MCP 2026-07-28's form over raw HTTP, with `headers`
/// besides: the HTTP status and the body.
async fn call_2026(url: &str, headers: &[(&str, &str)], tool: &str, args: Value) -> (u16, String) {
    let params = json!({"name": tool, "arguments": args});
    rpc_2026(url, headers, "tools/call", params, json!({})).await
}

/// A request `method` in MCP 2026-07-28's form over raw HTTP, from a client
/// declaring `capabilities`, with `headers` besides the standard ones
/// (`Mcp-Name` from the params' `name` or `taskId`): the HTTP status and
/// the body.
async fn rpc_2026(
    url: &str,
    headers: &[(&str, &str)],
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, String) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    let mut all = vec![
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if !name.is_empty() {
        all.push(("Mcp-Name", &name));
    }
    all.extend_from_slice(headers);
    let (status, _, answer) = e2e::hardening::http(url, "POST", &all, &body).await;
    (status, answer)
}

/// The JSON-RPC message of an HTTP answer, plain or as one SSE event.
fn rpc_body(answer: &str) -> Value {
    let json = answer
        .lines()
        .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
        .unwrap_or(answer);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// Hardening item 6: a 2026-07-28 client sending no owner header was a new
/// client on every request, so each session it created was orphaned at
/// once, and 64 creates filled the global cap for every other client for
/// 15 minutes. Such a caller now gets no lasting state and is told how to
/// identify; with an owner header it keeps its sessions.
#[tokio::test]
async fn anonymous_2026_callers_get_no_lasting_state() {
    let (_child, url, _dir) = server().await;
    for _ in 0..3 {
        let (status, answer) = call_2026(&url, &[], "cp1600_create_session", json!({})).await;
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains("UNIDENTIFIED_CLIENT"), "{answer}");
        assert!(answer.contains("benchtop-owner"), "{answer}");
    }
    let rom = repo().join("samples/dos/greet.com");
    let (_, answer) = call_2026(
        &url,
        &[],
        "x86_load_program",
        json!({"path": rom.display().to_string()}),
    )
    .await;
    assert!(answer.contains("UNIDENTIFIED_CLIENT"), "{answer}");

    // Named by an owner header, the same client keeps what it creates.
    let owner = [("benchtop-owner", "a-secret-of-my-own")];
    let (_, answer) = call_2026(&url, &owner, "cp1600_create_session", json!({})).await;
    let created = rpc_body(&answer);
    let id = created["result"]["structuredContent"]["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a session: {created}"))
        .to_owned();
    let (_, listed) = call_2026(&url, &owner, "cp1600_list_sessions", json!({})).await;
    assert!(listed.contains(&id), "{listed}");

    // The other clients were never crowded out.
    let other = Client::connect(&url).await;
    other.ok("cp1600_create_session", json!({})).await;
}

/// Issue 34 (SEP-2243): a session or machine id is mirrored into an
/// `Mcp-Param-*` header, so a load balancer can route a call to the replica
/// holding its session without reading the body. tools/list marks the
/// parameters; a call whose header is missing or differs from its body is
/// refused with HTTP 400 and -32020 before any plugin runs; an rmcp client
/// sends the headers on its own.
#[tokio::test]
async fn session_ids_travel_in_routing_headers() {
    let (_child, url, _dir) = server().await;
    let client = Client::connect(&url).await;
    let tools = client.0.list_all_tools().await.unwrap();
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(&tool.input_schema).unwrap()
    };
    assert_eq!(
        schema("cp1600_step")["properties"]["session_id"]["x-mcp-header"],
        "Session"
    );
    assert_eq!(
        schema("x86_step")["properties"]["machine"]["x-mcp-header"],
        "Machine"
    );
    // The rmcp client mirrors the id itself: its calls go through.
    let created = client
        .ok("cp1600_create_session", json!({"session_id": "routed"}))
        .await;
    assert_eq!(created["session_id"], "routed");
    client
        .ok("cp1600_get_state", json!({"session_id": "routed"}))
        .await;

    let owner = ("benchtop-owner", "a-secret-of-my-own");
    let args = json!({"session_id": "routed-raw"});
    let (status, answer) = call_2026(
        &url,
        &[owner, ("Mcp-Param-Session", "routed-raw")],
        "cp1600_create_session",
        args.clone(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        rpc_body(&answer)["result"]["structuredContent"]["session_id"],
        "routed-raw"
    );
    for headers in [
        vec![owner],
        vec![owner, ("Mcp-Param-Session", "another")],
        vec![owner, ("Mcp-Param-Session", "=?base64?cm91dGVk!?=")],
    ] {
        let (status, answer) = call_2026(&url, &headers, "cp1600_get_state", args.clone()).await;
        assert_eq!(status, 400, "{headers:?}: {answer}");
        assert_eq!(rpc_body(&answer)["error"]["code"], -32020, "{answer}");
    }
    // Base64 as SEP-2243 spells it is decoded before comparing.
    let (status, answer) = call_2026(
        &url,
        &[owner, ("Mcp-Param-Session", "=?base64?cm91dGVkLXJhdw==?=")],
        "cp1600_get_state",
        args,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(rpc_body(&answer)["error"].is_null(), "{answer}");
}

/// A JSON-RPC request in MCP 2026-07-28's form over raw HTTP, from a client
/// that takes tasks (`io.modelcontextprotocol/tasks`), as `owner`: the
/// JSON-RPC message answered.
async fn tasks_client(url: &str, owner: &str, method: &str, params: Value) -> Value {
    let machine = params["arguments"]["machine"]
        .as_u64()
        .map(|m| m.to_string());
    let mut headers = vec![("benchtop-owner", owner)];
    if let Some(m) = &machine {
        headers.push(("Mcp-Param-Machine", m));
    }
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (status, answer) = rpc_2026(url, &headers, method, params, tasks).await;
    assert_eq!(status, 200, "{method}: {answer}");
    rpc_body(&answer)
}

/// Issue 34: a long x86 run started as a task outlives its request: the
/// client polls it (its progress is the status message), cancels it, sees
/// it settle as cancelled with the machine kept, and runs on from there.
#[tokio::test]
async fn an_x86_run_is_a_task_polled_cancelled_and_resumed() {
    let (_child, url, _dir) = server().await;
    let owner = "a-task-owner-of-my-own";
    let rom = repo().join("samples/dos/greet.com");
    let loaded = tasks_client(
        &url,
        owner,
        "tools/call",
        json!({"name": "x86_load_program", "arguments": {"path": rom.display().to_string()}}),
    )
    .await;
    let loaded = &loaded["result"]["structuredContent"];
    let machine = loaded["machine"].as_u64().expect("a machine");
    let psp = u32::from_str_radix(loaded["psp_segment"].as_str().unwrap(), 16).unwrap();
    // `jmp $` at the entry point: the program spins until stopped.
    tasks_client(
        &url,
        owner,
        "tools/call",
        json!({"name": "x86_write_memory", "arguments": {
            "machine": machine, "address": psp * 16 + 0x100, "data": "EB FE"}}),
    )
    .await;

    let started = std::time::Instant::now();
    let created = tasks_client(
        &url,
        owner,
        "tools/call",
        json!({"name": "x86_run", "arguments": {"machine": machine, "max_instructions": 1u64 << 40}}),
    )
    .await;
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();

    // Polled while it runs: working, with the run's progress.
    let mut polled = Value::Null;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        polled =
            tasks_client(&url, owner, "tasks/get", json!({"taskId": id})).await["result"].clone();
        if polled["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("instructions"))
        {
            break;
        }
    }
    assert_eq!(polled["status"], "working", "{polled}");
    assert!(
        polled["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("instructions"),
        "{polled}"
    );
    // Another client cannot see it.
    let other = tasks_client(&url, "someone-else", "tasks/get", json!({"taskId": id})).await;
    assert!(other["error"].is_object(), "{other}");

    let ack = tasks_client(&url, owner, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack["error"].is_null(), "{ack}");
    let mut settled = Value::Null;
    for _ in 0..100 {
        settled =
            tasks_client(&url, owner, "tasks/get", json!({"taskId": id})).await["result"].clone();
        if settled["status"] != "working" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(settled["status"], "cancelled", "{settled}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "the run stopped when cancelled, not at its 10 s limit: {:?}",
        started.elapsed()
    );

    // The machine kept its state: a plain call runs on from there.
    let resumed = tasks_client(
        &url,
        owner,
        "tools/call",
        json!({"name": "x86_step", "arguments": {"machine": machine}}),
    )
    .await;
    let text = resumed["result"].to_string();
    assert!(resumed["error"].is_null(), "{text}");
    assert!(text.contains("JMP") || text.contains("jmp"), "{text}");
}
