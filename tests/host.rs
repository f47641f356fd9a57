//! End-to-end tests of the host runtime (docs/design.md, Contracts 1–3): the real

// MCP logging is deprecated for the 2026-07-28 revision (SEP-2577), but the
// host still serves it to the clients in the field; the tests check it.
#![allow(deprecated)]
//! binary, a real MCP client over stdio, and the kitchen-sink test component.

use e2e::{Sandbox, Server, is_error, sandbox, test_plugins, text};
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

async fn start(sb: &Sandbox) -> Server {
    Server::start(&[
        "--config",
        sb.config.to_str().unwrap(),
        "--workspace",
        sb.rw.to_str().unwrap(),
    ])
    .await
}

fn structured(r: &rmcp::model::CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn lists_tools_with_docs_annotations_and_schemas() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let tools = s.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "deterministic order: {names:?}"
    );
    for expected in [
        "echo_ints",
        "echo_nested",
        "hello",
        "slow_count",
        "structured_error",
        "blocks",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo_ints = tools.iter().find(|t| t.name == "echo_ints").unwrap();
    assert_eq!(
        echo_ints.description.as_deref(),
        Some("Returns every integer it is given, unchanged.")
    );
    let ann = echo_ints.annotations.as_ref().expect("annotations");
    assert_eq!(ann.read_only_hint, Some(true));
    let schema = Value::Object((*echo_ints.input_schema).clone());
    assert_eq!(schema["properties"]["g"]["maximum"], json!(u64::MAX));
    assert_eq!(schema["properties"]["h"]["minimum"], json!(i64::MIN));
    // A lone record parameter: its fields are the arguments, with their docs.
    let nested = tools.iter().find(|t| t.name == "echo_nested").unwrap();
    let schema = Value::Object((*nested.input_schema).clone());
    assert_eq!(
        schema["properties"]["origin"]["description"],
        "Where it sits."
    );
    assert_eq!(schema["properties"]["maybe_count"]["type"], "integer");
    let required = schema["required"].as_array().unwrap();
    assert!(
        !required.contains(&json!("maybe_count")),
        "options are optional"
    );
    assert!(required.contains(&json!("name")));
    // Results that are not text carry an output schema.
    assert!(nested.output_schema.is_some());
    assert!(
        tools
            .iter()
            .find(|t| t.name == "hello")
            .unwrap()
            .output_schema
            .is_none()
    );
    s.stop().await;
}

#[tokio::test]
async fn every_type_round_trips() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let ints = json!({"a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295u64, "f": -2147483648i64,
                      "g": 18446744073709551615u64, "h": -9223372036854775808i64});
    let r = s.call("echo_ints", ints.clone()).await;
    assert_eq!(
        structured(&r)["result"],
        json!([
            255,
            -128,
            65535,
            -32768,
            4294967295u64,
            -2147483648i64,
            18446744073709551615u64,
            -9223372036854775808i64
        ])
    );
    // The text block carries the same JSON for text-only clients.
    assert_eq!(
        serde_json::from_str::<Value>(&text(&r)).unwrap(),
        structured(&r)
    );

    let r = s
        .call("echo_floats", json!({"single": 0.1, "double": -2.5e300}))
        .await;
    assert_eq!(structured(&r)["result"][0], json!(0.1));
    assert_eq!(structured(&r)["result"][1], json!(-2.5e300));
    let r = s.call("divide", json!({"a": 0.0, "b": 0.0})).await;
    assert_eq!(structured(&r)["result"], "NaN");
    let r = s.call("divide", json!({"a": -1.0, "b": 0.0})).await;
    assert_eq!(structured(&r)["result"], "-Infinity");
    let r = s
        .call(
            "echo_floats",
            json!({"single": "NaN", "double": "Infinity"}),
        )
        .await;
    assert_eq!(structured(&r)["result"], json!(["NaN", "Infinity", "NaN"]));

    let nested = json!({
        "name": "ünïcode ✓", "origin": {"x": -1, "y": 2147483647}, "tags": ["a", ""],
        "color": "dark_blue", "shape": {"rect": {"x": 3, "y": 4}}, "perms": ["exec_all", "read"],
        "pair": [7, "seven"], "maybe_count": 9, "path": [{"x": 0, "y": 0}], "outcome": {"err": "bad"}
    });
    let r = s.call("echo_nested", nested.clone()).await;
    assert!(!is_error(&r), "{}", text(&r));
    // Flags are a set: they come back in declaration order.
    let mut expected = nested.clone();
    expected["perms"] = json!(["read", "exec_all"]);
    assert_eq!(structured(&r), expected);
    let mut without = nested.clone();
    without.as_object_mut().unwrap().remove("maybe_count");
    without["shape"] = json!("empty");
    let r = s.call("echo_nested", without).await;
    // A `none` field of a result is left out, not written as null.
    assert!(
        structured(&r).get("maybe_count").is_none(),
        "{}",
        structured(&r)
    );
    assert_eq!(structured(&r)["shape"], "empty");

    // `@key` names a field's JSON key where WIT cannot spell it, in the
    // result and its schema alike; the text is the same JSON.
    let r = s.call("read_sensor", json!({"knock": true})).await;
    assert_eq!(
        structured(&r),
        json!({"RPM": 3000, "knockRetard": 1.5, "source_name": "bench"})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text(&r)).unwrap(),
        structured(&r)
    );
    let r = s.call("read_sensor", json!({"knock": false})).await;
    assert_eq!(structured(&r), json!({"RPM": 3000, "source_name": "bench"}));
    let tools = s.client.list_all_tools().await.unwrap();
    let sensor = tools.iter().find(|t| t.name == "read_sensor").unwrap();
    let schema = Value::Object((*sensor.output_schema.clone().expect("an output schema")).clone());
    assert_eq!(schema["required"], json!(["RPM", "source_name"]));
    let knock = schema["properties"]["knockRetard"].to_string();
    assert!(
        knock.contains("number") && !knock.contains("null"),
        "{knock}"
    );
    assert_eq!(
        schema["properties"]["RPM"]["description"],
        "Engine speed in rpm."
    );

    let r = s.call("echo_char", json!({"c": "😀"})).await;
    assert_eq!(structured(&r)["result"], json!(["😀", 0x1F600]));
    let r = s
        .call(
            "echo_flags",
            json!({"perms": [], "color": "red", "shape": {"circle": 2.5}}),
        )
        .await;
    assert_eq!(
        structured(&r)["result"],
        json!([[], "red", {"circle": 2.5}])
    );
    let r = s
        .call("echo_option", json!({"value": "v", "numbers": [1, -2]}))
        .await;
    assert_eq!(structured(&r)["result"], "v [1, -2]");
    let r = s.call("echo_option", json!({"value": null})).await;
    assert_eq!(structured(&r)["result"], Value::Null);
    let r = s.call("hello", json!({})).await;
    assert_eq!(text(&r), "hello from kitchen-sink");
    assert!(r.structured_content.is_none());
    let r = s.call("nothing", json!({})).await;
    assert!(!is_error(&r));
    s.stop().await;
}

#[tokio::test]
async fn results_errors_and_content_blocks_map_as_specified() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let r = s.call("structured_error", json!({"fail": true})).await;
    assert!(is_error(&r));
    assert_eq!(text(&r), "BAD_THING: the thing was bad; pass fail=false");
    assert_eq!(structured(&r)["code"], "BAD_THING");
    let r = s.call("structured_error", json!({"fail": false})).await;
    assert_eq!(structured(&r), json!({"x": 1, "y": -1}));
    let r = s.call("plain_error", json!({"fail": true})).await;
    assert!(is_error(&r));
    assert_eq!(text(&r), "plain failure");
    let r = s.call("plain_error", json!({"fail": false})).await;
    assert_eq!(text(&r), "plain success");
    let r = s.call("blocks", json!({})).await;
    assert_eq!(r.content.len(), 5);
    assert_eq!(text(&r), "a caption");
    let image = r.content[1].as_image().expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(image.data, "iVBORw==");
    let embedded = serde_json::to_value(&r.content[2]).unwrap();
    assert_eq!(
        embedded,
        json!({"type": "resource", "resource": {"uri": "kitchen://bytes",
            "mimeType": "application/octet-stream", "blob": "AAH+/w=="}})
    );
    let link = r.content[3].as_resource_link().expect("a resource link");
    assert_eq!(
        (link.uri.as_str(), link.name.as_str()),
        ("kitchen://greeting", "greeting")
    );
    assert_eq!(link.description.as_deref(), Some("A fixed greeting."));
    let audio = serde_json::to_value(&r.content[4]).unwrap();
    assert_eq!(
        audio,
        json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="})
    );
    s.stop().await;
}

#[tokio::test]
async fn bad_calls_get_errors_that_say_what_to_fix() {
    let sb = sandbox("");
    let s = start(&sb).await;
    // Unknown tool: a JSON-RPC error with a suggestion.
    let err = s
        .try_call("helo", json!({}))
        .await
        .expect_err("unknown tool is a protocol error");
    let msg = err.to_string();
    assert!(
        msg.contains("Unknown tool: helo") && msg.contains("hello"),
        "{msg}"
    );
    // Arguments that do not fit: isError naming path, expectation and value.
    let cases = [
        (
            "echo_ints",
            json!({"a": 256, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0}),
            "`arguments.a` must be an integer from 0 to 255, but got the number 256",
        ),
        (
            "echo_ints",
            json!({"a": 1.5, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0}),
            "`arguments.a` must be an integer",
        ),
        (
            "echo_ints",
            json!({"a": -1}),
            "`arguments.a` must be an integer from 0 to 255, but got the number -1",
        ),
        (
            "echo_char",
            json!({"c": "ab"}),
            "`arguments.c` must be a string of exactly one character",
        ),
        ("echo_char", json!({}), "`arguments.c` must be present"),
        (
            "hello",
            json!({"extra": 1}),
            "`arguments.extra` must be absent (this takes no arguments)",
        ),
        (
            "echo_flags",
            json!({"perms": ["read", "read"], "color": "red", "shape": "empty"}),
            "`arguments.perms[1]` must be a flag not already listed",
        ),
        (
            "echo_flags",
            json!({"perms": [], "color": "purple", "shape": "empty"}),
            "`arguments.color` must be one of [red, green, dark_blue], but got the string \"purple\"",
        ),
        (
            "echo_flags",
            json!({"perms": [], "color": "red", "shape": "circle"}),
            "{\"circle\": value} (this case carries data)",
        ),
        (
            "echo_nested",
            json!({"name": "n", "origin": {"x": 1}}),
            "`arguments.origin.y` must be present",
        ),
    ];
    for (tool, args, expected) in cases {
        let r = s.call(tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args} should fail");
        assert!(
            text(&r).contains(expected),
            "{tool} {args}: got `{}`, expected `{expected}`",
            text(&r)
        );
    }
    // The server is still fine.
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_runaway_plugin_is_stopped_by_its_deadline_and_rebuilt() {
    let sb = sandbox("");
    let s = start(&sb).await;
    assert_eq!(structured(&s.call("counter", json!({})).await)["result"], 1);
    assert_eq!(structured(&s.call("counter", json!({})).await)["result"], 2);
    let started = Instant::now();
    let r = s.call("spin", json!({})).await;
    let took = started.elapsed();
    assert!(is_error(&r));
    assert!(
        text(&r).contains("ran past its deadline of 3s"),
        "{}",
        text(&r)
    );
    assert!(text(&r).contains("instance was reset"), "{}", text(&r));
    assert!(took < Duration::from_secs(6), "stopped in {took:?}");
    // A fresh instance: state was reset, and it serves again.
    assert_eq!(structured(&s.call("counter", json!({})).await)["result"], 1);
    s.stop().await;
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_by_the_cap() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let r = s.call("allocate", json!({"mebibytes": 16})).await;
    assert_eq!(structured(&r)["result"], 16, "{}", text(&r));
    let r = s.call("allocate", json!({"mebibytes": 4000})).await;
    assert!(is_error(&r));
    assert!(text(&r).contains("memory cap of 64 MiB"), "{}", text(&r));
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_panic_is_reported_with_its_message() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let r = s.call("panic", json!({"message": "boom at line 7"})).await;
    assert!(is_error(&r));
    assert!(
        text(&r).contains("panicked") && text(&r).contains("boom at line 7"),
        "{}",
        text(&r)
    );
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    s.stop().await;
}

async fn read(s: &Server, path: &Path) -> rmcp::model::CallToolResult {
    s.call("read_file", json!({"path": path.to_str().unwrap()}))
        .await
}

#[tokio::test]
async fn the_filesystem_is_confined_to_granted_directories() {
    let sb = sandbox("");
    let s = start(&sb).await;
    // Same-path mapping: absolute host paths work unchanged.
    assert_eq!(text(&read(&s, &sb.ro.join("note.txt")).await), "read me");
    // Workspace-relative paths resolve against --workspace.
    let r = s
        .call("write_file", json!({"path": "made.txt", "contents": "hi"}))
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(sb.rw.join("made.txt")).unwrap(),
        "hi"
    );
    // Outside every grant: absolute, `..` walk, symlink, hard-to-guess paths.
    let r = read(&s, &sb.outside.join("secret.txt")).await;
    assert!(
        is_error(&r) && text(&r).contains("outside the directories"),
        "{}",
        text(&r)
    );
    assert!(
        text(&r).contains(&format!("{} (read-write)", sb.rw.display())),
        "lists the roots: {}",
        text(&r)
    );
    let walk = sb.rw.join("../outside/secret.txt");
    let r = read(&s, &walk).await;
    assert!(
        is_error(&r) && !text(&r).contains("top secret"),
        "{}",
        text(&r)
    );
    std::os::unix::fs::symlink(&sb.outside, sb.rw.join("escape")).unwrap();
    let r = read(&s, &sb.rw.join("escape/secret.txt")).await;
    assert!(
        is_error(&r) && !text(&r).contains("top secret"),
        "symlink escape: {}",
        text(&r)
    );
    let r = read(&s, Path::new("/etc/hostname")).await;
    assert!(is_error(&r), "{}", text(&r));
    // Writes to a read-only directory fail cleanly.
    let r = s
        .call(
            "write_file",
            json!({"path": sb.ro.join("new.txt"), "contents": "x"}),
        )
        .await;
    assert!(
        is_error(&r) && text(&r).contains("read-only for this plugin"),
        "{}",
        text(&r)
    );
    assert!(!sb.ro.join("new.txt").exists());
    s.stop().await;
}

#[tokio::test]
async fn no_network_and_no_environment_by_default() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sb = sandbox("");
    let s = start(&sb).await;
    let r = s
        .call("connect", json!({"address": addr.to_string()}))
        .await;
    assert!(is_error(&r), "connected without permission: {}", text(&r));
    let r = s.call("env_var", json!({"name": "HOME"})).await;
    assert_eq!(structured(&r)["result"], Value::Null);
    s.stop().await;
}

#[tokio::test]
async fn granted_network_addresses_are_reachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sb = sandbox(&format!(
        "network = [\"{addr}\"]\nenv = {{ GREETING = \"hi\" }}\n"
    ));
    let s = start(&sb).await;
    let r = s
        .call("connect", json!({"address": addr.to_string()}))
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    let other = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let r = s
        .call("connect", json!({"address": other.to_string()}))
        .await;
    assert!(is_error(&r), "only the granted port: {}", text(&r));
    let r = s.call("env_var", json!({"name": "GREETING"})).await;
    assert_eq!(structured(&r)["result"], "hi");
    s.stop().await;
}

#[tokio::test]
async fn guest_output_stays_out_of_the_protocol_stream() {
    let sb = sandbox("");
    let s = start(&sb).await;
    // Were guest stdout on the JSON-RPC stream, the client would fail to parse it.
    let r = s.call("noisy", json!({})).await;
    assert_eq!(text(&r), "noisy done");
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    let stderr = s
        .log_with(&[
            "this line goes to guest stdout",
            "this line goes to guest stderr",
        ])
        .await;
    assert!(
        stderr.contains("this line goes to guest stdout"),
        "{stderr}"
    );
    assert!(
        stderr.contains("this line goes to guest stderr"),
        "{stderr}"
    );
    {
        let events = s.events.lock().unwrap();
        assert!(
            events
                .logs
                .iter()
                .any(|l| l.data == json!("a log line from kitchen-sink")),
            "guest log forwarded as MCP logging: {:?}",
            events.logs
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn progress_is_reported_to_the_client() {
    let sb = sandbox("");
    let s = start(&sb).await;
    let r = s
        .call("slow_count", json!({"steps": 8, "millis_per_step": 40}))
        .await;
    assert_eq!(structured(&r)["result"], 8);
    {
        let events = s.events.lock().unwrap();
        assert!(
            events.progress.len() >= 3,
            "progress: {:?}",
            events.progress
        );
        assert!(
            events
                .progress
                .windows(2)
                .all(|w| w[1].progress > w[0].progress),
            "increasing"
        );
        assert_eq!(events.progress[0].total, Some(8.0));
    }
    s.stop().await;
}

/// Starts a `tools/call` that the test can cancel.
async fn call_cancellable(
    s: &Server,
    name: &str,
    args: Value,
) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().unwrap().clone());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    s.client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_cancelled_call_stops_and_the_server_goes_on() {
    let sb = sandbox("deadline_ms = 20000\n");
    // The sandbox already sets a deadline; the later key must not be duplicated.
    let cfg = std::fs::read_to_string(&sb.config)
        .unwrap()
        .replace("deadline_ms = 3000\n", "");
    std::fs::write(&sb.config, cfg).unwrap();
    let s = start(&sb).await;
    let handle = call_cancellable(
        &s,
        "slow_count",
        json!({"steps": 1000, "millis_per_step": 10}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    // The plugin sees the cancellation cooperatively and keeps its state.
    assert_eq!(structured(&s.call("counter", json!({})).await)["result"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(structured(&s.call("counter", json!({})).await)["result"], 2);
    s.stop().await;
}

#[tokio::test]
async fn a_plugin_that_ignores_cancellation_is_interrupted() {
    let sb = sandbox("");
    let cfg = std::fs::read_to_string(&sb.config)
        .unwrap()
        .replace("deadline_ms = 3000", "deadline_ms = 60000");
    std::fs::write(&sb.config, cfg).unwrap();
    let s = start(&sb).await;
    let handle = call_cancellable(&s, "spin", json!({})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    handle.cancel(None).await.unwrap();
    let r = s.call("hello", json!({})).await;
    assert_eq!(text(&r), "hello from kitchen-sink");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    s.stop().await;
}

#[test]
fn call_subcommand_prints_results_and_fails_on_errors() {
    let dir = e2e::only_test_plugin("kitchen_sink.wasm");
    let plugins = dir.path();
    let out = std::process::Command::new(e2e::bin())
        .args([
            "call",
            "hello",
            "{}",
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from kitchen-sink"
    );
    let out = std::process::Command::new(e2e::bin())
        .args([
            "call",
            "plain_error",
            "{\"fail\": true}",
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("plain failure"));
}

#[test]
fn check_subcommand_describes_a_component() {
    let out = std::process::Command::new(e2e::bin())
        .args([
            "check",
            test_plugins().join("kitchen_sink.wasm").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("● echo_ints") && stdout.contains("annotations: read-only, idempotent"),
        "{stdout}"
    );
    assert!(stdout.contains("no problems found"));
    let out = std::process::Command::new(e2e::bin())
        .args(["check", "/etc/hostname"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[tokio::test]
async fn links_and_renames_cannot_cross_grants() {
    let sb = sandbox("");
    let s = start(&sb).await;
    std::fs::write(sb.rw.join("mine.txt"), "mine").unwrap();
    // A hard link inside the read-write directory to a file outside it.
    let r = s
        .call(
            "link_file",
            json!({"target": sb.outside.join("secret.txt"), "link": sb.rw.join("stolen.txt")}),
        )
        .await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(!sb.rw.join("stolen.txt").exists());
    // Moving a file out of the sandbox, or into the read-only directory.
    for dst in [sb.outside.join("moved.txt"), sb.ro.join("moved.txt")] {
        let r = s
            .call(
                "rename_file",
                json!({"src": sb.rw.join("mine.txt"), "dst": dst}),
            )
            .await;
        assert!(is_error(&r), "moved to {}: {}", dst.display(), text(&r));
        assert!(!dst.exists());
    }
    assert!(sb.rw.join("mine.txt").exists(), "the file stayed put");
    // Inside the grant, both work.
    let r = s
        .call(
            "rename_file",
            json!({"src": "mine.txt", "dst": "renamed.txt"}),
        )
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    let r = s
        .call(
            "link_file",
            json!({"target": "renamed.txt", "link": "linked.txt"}),
        )
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(sb.rw.join("linked.txt")).unwrap(),
        "mine"
    );
    s.stop().await;
}

#[tokio::test]
async fn unbounded_recursion_and_huge_results_are_contained() {
    let sb = sandbox("");
    let cfg = std::fs::read_to_string(&sb.config)
        .unwrap()
        .replace("memory_mb = 64", "memory_mb = 400");
    std::fs::write(&sb.config, cfg).unwrap();
    let s = start(&sb).await;
    assert_eq!(
        structured(&s.call("recurse", json!({"depth": 100})).await)["result"],
        100
    );
    let r = s.call("recurse", json!({"depth": u64::MAX})).await;
    assert!(
        is_error(&r) && text(&r).contains("overflowed its stack"),
        "{}",
        text(&r)
    );
    // 100 MB of text is refused with a hint, not sent to the client.
    let r = s.call("big_result", json!({"mebibytes": 100})).await;
    assert!(is_error(&r), "a 100 MB result");
    assert!(
        text(&r).contains("over benchtop's limit") && text(&r).len() < 1000,
        "{}",
        &text(&r)[..200.min(text(&r).len())]
    );
    assert_eq!(
        text(&s.call("hello", json!({})).await),
        "hello from kitchen-sink"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_tool_names_its_view_and_the_view_is_a_ui_resource() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let sb = sandbox("");
    let s = start(&sb).await;
    let info = s.client.peer_info().expect("server info");
    let ui =
        &info.capabilities.extensions.as_ref().expect("extensions")["io.modelcontextprotocol/ui"];
    assert_eq!(ui["mimeTypes"], json!(["text/html;profile=mcp-app"]));
    let tools = s.tools().await;
    let show = tools.iter().find(|t| t.name == "show_item").unwrap();
    let meta = serde_json::to_value(show.meta.as_ref().expect("_meta")).unwrap();
    assert_eq!(meta["ui"]["resourceUri"], "ui://kitchen/item", "{meta}");
    assert_eq!(meta["ui/resourceUri"], "ui://kitchen/item", "{meta}");
    // Tools without a view carry no view metadata.
    let hello = tools.iter().find(|t| t.name == "hello").unwrap();
    assert!(hello.meta.is_none(), "{:?}", hello.meta);
    // The view is served with the MCP Apps MIME type; the tool still
    // answers in text for clients that show no views.
    let r = s
        .client
        .read_resource(ReadResourceRequestParams::new("ui://kitchen/item"))
        .await
        .unwrap();
    match &r.contents[..] {
        [
            ResourceContents::TextResourceContents {
                text, mime_type, ..
            },
        ] => {
            assert!(text.starts_with("<!doctype html>"), "{text}");
            assert_eq!(mime_type.as_deref(), Some("text/html;profile=mcp-app"));
        }
        other => panic!("one text expected, got {other:?}"),
    }
    let r = s.call("show_item", json!({"id": "7"})).await;
    assert_eq!(text(&r), "item 7");
}

#[tokio::test]
async fn resources_prompts_and_completions_come_from_tags() {
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
        Reference, ResourceContents,
    };
    let sb = sandbox("");
    let s = start(&sb).await;
    let info = s.client.peer_info().expect("server info");
    assert!(info.capabilities.resources.is_some() && info.capabilities.prompts.is_some());
    assert!(info.capabilities.completions.is_some());
    // Tagged functions are not tools.
    let tools = s.tools().await;
    assert!(
        !tools
            .iter()
            .any(|t| t.name == "greeting" || t.name == "review")
    );

    let resources = s.client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["kitchen://bytes", "kitchen://greeting", "ui://kitchen/item"]
    );
    assert_eq!(
        resources[1].description.as_deref(),
        Some("A fixed greeting.")
    );
    let templates = s.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "kitchen://items/{id}");

    let read = |uri: &str| {
        s.client
            .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
    };
    let r = read("kitchen://greeting").await.unwrap();
    match &r.contents[0] {
        ResourceContents::TextResourceContents {
            text,
            uri,
            mime_type,
            ..
        } => {
            assert_eq!(text, "hello from a resource");
            assert_eq!(uri, "kitchen://greeting");
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
        }
        other => panic!("text expected, got {other:?}"),
    }
    let r = read("kitchen://bytes").await.unwrap();
    match &r.contents[0] {
        ResourceContents::BlobResourceContents {
            blob, mime_type, ..
        } => {
            assert_eq!(blob, "AAH+/w==");
            assert_eq!(mime_type.as_deref(), Some("application/octet-stream"));
        }
        other => panic!("blob expected, got {other:?}"),
    }
    let r = read("kitchen://items/pear%20tree").await.unwrap();
    assert!(matches!(&r.contents[0],
        ResourceContents::TextResourceContents { text, .. } if text == "item pear tree"));
    // The plugin's own error, and an unknown URI, are errors naming the way out.
    let e = read("kitchen://items/missing")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("NO_ITEM") && e.contains("apple"), "{e}");
    let e = read("kitchen://nothing").await.unwrap_err().to_string();
    assert!(
        e.contains("Resource not found") && e.contains("resources/list"),
        "{e}"
    );

    let prompts = s.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(
        e2e::prompt_arguments(&prompts[0]),
        [("subject", Some(true)), ("focus", Some(false))]
    );
    let mut params = GetPromptRequestParams::new("review");
    params.arguments = Some(
        json!({"subject": "the patch", "focus": "timing"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let p = s.client.get_prompt(params).await.unwrap();
    let message = serde_json::to_value(&p.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    assert_eq!(
        message["content"]["text"],
        "Review the patch, looking first at timing."
    );
    let e = s
        .client
        .get_prompt(GetPromptRequestParams::new("review"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("subject"), "a missing argument is named: {e}");

    let complete = |reference: Reference, name: &str, value: &str| {
        s.client.complete(CompleteRequestParams::new(
            reference,
            ArgumentInfo::new(name, value),
        ))
    };
    let c = complete(Reference::for_resource("kitchen://items/{id}"), "id", "ap")
        .await
        .unwrap();
    assert_eq!(c.completion.values, ["apple", "apricot"]);
    let c = complete(Reference::for_prompt("review"), "subject", "p")
        .await
        .unwrap();
    assert_eq!(c.completion.values, ["patch", "plan"]);
    let c = complete(Reference::for_prompt("review"), "focus", "")
        .await
        .unwrap();
    assert!(c.completion.values.is_empty());
    assert!(
        complete(Reference::for_prompt("nope"), "x", "")
            .await
            .is_err()
    );
    s.stop().await;
}

#[tokio::test]
async fn subscribers_hear_of_resource_changes_merged_and_only_their_own() {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    let sb = sandbox("");
    let s = start(&sb).await;
    s.client
        .subscribe(SubscribeRequestParams::new("kitchen://items/apple"))
        .await
        .unwrap();
    let e = s
        .client
        .subscribe(SubscribeRequestParams::new("kitchen://nothing"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such resource"), "{e}");
    // 50 changes of apple, and of pear (not subscribed), in one call.
    let r = s
        .call(
            "touch_items",
            json!({"ids": ["apple", "pear"], "times": 50}),
        )
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    tokio::time::sleep(Duration::from_millis(800)).await;
    let updates = s.events.lock().unwrap().resource_updates.clone();
    assert!(
        // One per 250 ms while the call runs: one or two on an idle
        // machine, a few more if a loaded one stalls the call.
        !updates.is_empty() && updates.len() <= 5,
        "50 changes merge into a few notices: {updates:?}"
    );
    assert!(
        updates.iter().all(|u| u == "kitchen://items/apple"),
        "{updates:?}"
    );
    s.client
        .unsubscribe(UnsubscribeRequestParams::new("kitchen://items/apple"))
        .await
        .unwrap();
    s.call("touch_items", json!({"ids": ["apple"], "times": 3}))
        .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        s.events.lock().unwrap().resource_updates.len(),
        updates.len()
    );
    s.stop().await;
}

#[tokio::test]
async fn a_plugin_asks_the_user_and_falls_back_when_it_cannot() {
    use e2e::Asker;
    use rmcp::model::ElicitationAction;
    let sb = sandbox("");
    let args = [
        "serve",
        "--config",
        sb.config.to_str().unwrap(),
        "--workspace",
        sb.rw.to_str().unwrap(),
    ];
    let connect = async |action: ElicitationAction, content: Option<Value>| {
        Asker::connect(&args, action, content).await
    };
    let call = async |client: &rmcp::service::RunningService<rmcp::RoleClient, Asker>,
                      args: Value| {
        let params = CallToolRequestParams::new("delete_item")
            .with_arguments(args.as_object().unwrap().clone());
        let r = client.call_tool(params).await.unwrap();
        (is_error(&r), text(&r))
    };
    let (client, asked) = connect(ElicitationAction::Accept, Some(json!({}))).await;
    assert_eq!(
        call(&client, json!({"id": "apple"})).await,
        (false, "deleted apple {}".into())
    );
    assert_eq!(asked.lock().unwrap().as_slice(), ["Delete item apple?"]);
    client.cancel().await.unwrap();

    let (client, _) = connect(ElicitationAction::Accept, Some(json!({"reason": "stale"}))).await;
    assert_eq!(
        call(&client, json!({"id": "pear", "with_reason": true})).await,
        (false, r#"deleted pear {"reason":"stale"}"#.into())
    );
    client.cancel().await.unwrap();

    let (client, _) = connect(ElicitationAction::Decline, None).await;
    assert_eq!(
        call(&client, json!({"id": "apple"})).await,
        (false, "kept apple: the user declined".into())
    );
    client.cancel().await.unwrap();

    // A client without elicitation: the plugin says how to go on.
    let s = start(&sb).await;
    let r = s.call("delete_item", json!({"id": "apple"})).await;
    assert!(
        is_error(&r) && text(&r).contains("confirm: true"),
        "{}",
        text(&r)
    );
    let r = s
        .call("delete_item", json!({"id": "apple", "confirm": true}))
        .await;
    assert_eq!(text(&r), "deleted apple (confirmed by argument)");
    s.stop().await;
}

/// docs/design.md says how many first-party tools list an `outputSchema`
/// and how many `benchtop:host` interfaces there are; both are checked
/// here against `benchtop tools --json` and the WIT, so the document stays
/// true to the code.
#[test]
fn the_design_documents_figures_match_the_code() {
    let out = std::process::Command::new(e2e::bin())
        .args(["tools", "--json", "--plugins"])
        .arg(e2e::plugins())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = tools
        .as_array()
        .or_else(|| tools["tools"].as_array())
        .expect("a list of tools")
        .clone();
    let typed = tools
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .count();
    let design = std::fs::read_to_string(e2e::repo().join("docs/design.md")).unwrap();
    let said = format!(
        "so {typed} of the\n{} first-party tools list an `outputSchema`",
        tools.len()
    );
    assert!(
        design.replace("\n", " ").contains(&said.replace("\n", " ")),
        "docs/design.md should say \"{said}\""
    );
    let wit = std::fs::read_to_string(e2e::repo().join("wit/host/host.wit")).unwrap();
    let interfaces = wit.lines().filter(|l| l.starts_with("interface ")).count();
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    ];
    let count = format!(
        "{} interfaces",
        words.get(interfaces).copied().unwrap_or("many")
    );
    assert!(
        design.replace("\n", " ").contains(&count),
        "docs/design.md should say \"{count}\" of benchtop:host"
    );
}
