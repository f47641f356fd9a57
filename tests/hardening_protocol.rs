//! Hardening of the protocol layer: malformed `tools/call` requests and
//! lines that are not JSON-RPC, sent raw over stdio.
//!
//! Each test prints its figures (`cargo test -p e2e --test hardening_protocol --
//! --nocapture`). The tests take a lock so that they do not run beside each
//! other on a small machine and disturb each other's timings.

use e2e::hardening::{CALL_TIMEOUT, Tally, Workspace, fuzz_server, judge, plugin_copy, serial};
use serde_json::{Value, json};
use std::time::Duration;

/// Requests around the tools: malformed `tools/call` params get JSON-RPC
/// errors saying what to fix; lines that are not JSON-RPC are ignored (as
/// by every MCP SDK: there is no id to answer) and the server goes on.
#[tokio::test]
async fn malformed_requests_get_errors_and_junk_lines_get_parse_errors() {
    let _serial = serial().await;
    let ws = Workspace::new();
    let plugins = plugin_copy();
    let mut s = fuzz_server(&ws, plugins.path()).await;
    let mut tally = Tally::default();
    let mut trapped = Vec::new();
    let mut problems = Vec::new();
    for (label, params, expect) in [
        (
            "params = null",
            Some(Value::Null),
            "`params` must be an object",
        ),
        ("params missing", None, "`params` must be an object"),
        // Params that are not an object cannot be typed: the framing
        // answers them itself, with the request's id.
        (
            "params = array",
            Some(json!([1])),
            "Invalid request: `params` must be an object",
        ),
        (
            "params = string",
            Some(json!("tools/call")),
            "Invalid request: `params` must be an object",
        ),
        (
            "name missing",
            Some(json!({"arguments": {}})),
            "`params.name` must be present",
        ),
        (
            "name = number",
            Some(json!({"name": 5, "arguments": {}})),
            "`params.name` must be a string",
        ),
        (
            "name = null",
            Some(json!({"name": null})),
            "`params.name` must be present",
        ),
        (
            "arguments = array",
            Some(json!({"name": "rom_info", "arguments": [1]})),
            "`params.arguments` must be an object",
        ),
        (
            "arguments = string",
            Some(json!({"name": "rom_info", "arguments": "x"})),
            "`params.arguments` must be an object",
        ),
        ("name empty", Some(json!({"name": ""})), "Unknown tool"),
        (
            "name unknown",
            Some(json!({"name": "rom_inf", "arguments": {}})),
            "did you mean `rom_info`",
        ),
        (
            "name 100k",
            Some(json!({"name": "x".repeat(100_000)})),
            "(100000 characters)",
        ),
        (
            "name with NUL",
            Some(json!({"name": "rom_info\u{0}"})),
            "Unknown tool",
        ),
    ] {
        let r = match params {
            Some(params) => {
                s.request("tools/call", params, Duration::from_secs(5))
                    .await
            }
            None => {
                let id = s.take_id();
                s.send_line(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#
                ))
                .await;
                s.response(id, Duration::from_secs(5)).await
            }
        };
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("tools/call [{label}]: no answer ({e:?})"));
                continue;
            }
        };
        if let Some(p) = judge(&r, &mut tally, &mut trapped) {
            problems.push(format!("tools/call [{label}]: {p}"));
        }
        let msg = r["error"]["message"].as_str().unwrap_or("");
        if !msg.contains(expect) {
            problems.push(format!(
                "tools/call [{label}]: expected `{expect}`, got {r}"
            ));
        }
    }
    // An unknown method is named as such.
    let r = s
        .request("tools/cal", json!({}), Duration::from_secs(5))
        .await
        .expect("answered");
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Method not found: `tools/cal`"),
        "{r}"
    );

    // Lines that are not JSON: each gets a parse error, with the request's
    // id where it can be read and a null id where not.
    let id = s.take_id();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let call = |arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"rom_info","arguments":{arguments}}}}}"#
        )
    };
    let mut junk: Vec<Vec<u8>> = vec![
        call(r#"{"rom":NaN}"#).into_bytes(),
        call(&format!(r#"{{"rom":{deep}}}"#)).into_bytes(),
        b"\x00\x01garbage".to_vec(),
        "{".repeat(100_000).into_bytes(),
    ];
    let mut bad_utf8 = call(r#"{"rom":"@"}"#).into_bytes();
    let at = bad_utf8.iter().position(|b| *b == b'@').unwrap();
    bad_utf8.splice(at..=at, [0xff, 0xfe]);
    junk.push(bad_utf8);
    for line in &junk {
        s.send_bytes(line).await;
        let label = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
        match s.response(id, Duration::from_secs(5)).await {
            Ok(r) if r["error"]["code"] == -32700 => {}
            Ok(r) => problems.push(format!(
                "junk line {label:?}: expected a parse error, got {r}"
            )),
            Err(e) => problems.push(format!("junk line {label:?}: no answer ({e:?})")),
        }
    }
    // The next request gets its own answer.
    let r = s
        .call("list_logs", json!({}), CALL_TIMEOUT)
        .await
        .expect("the server answers after junk lines");
    assert!(
        r["result"]["isError"] != true && r.get("result").is_some(),
        "{r}"
    );
    assert!(s.alive(), "the server is alive");
    println!(
        "malformed requests: {} answered ({} JSON-RPC errors), {} junk lines answered with parse errors; {} problems",
        tally.total(),
        tally.rpc_error,
        junk.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
