//! End-to-end tests of the lifecycle (docs/design.md, Contracts 4–5): hot swap
//! while serving, the compile cache, name collisions, streamable HTTP.

use e2e::{Server, bin, install, is_error, serve_http, test_plugins, text};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn component(name: &str) -> PathBuf {
    test_plugins().join(format!("{name}.wasm"))
}

/// Replaces `dest` the way a build does: write beside, then rename.
fn install_bytes(bytes: &[u8], dest: &Path) {
    let tmp = dest.with_extension("partial");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dest).unwrap();
}

/// Writes `dir/benchtop.toml` giving plugin `file` (in `dir`) a prefix.
fn prefixed(dir: &Path, file: &str, prefix: &str) -> PathBuf {
    let config = dir.join("benchtop.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugin]]\npath = \"{}\"\nprefix = \"{prefix}\"\n",
            dir.join(file).display()
        ),
    )
    .unwrap();
    config
}

async fn hello(s: &Server) -> String {
    text(&s.call("hello", json!({})).await)
}

async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn hot_swap_under_load_loses_no_call() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("plugin.wasm");
    install(&component("kitchen_sink"), &live);
    let s = Arc::new(Server::start(&["--plugins", dir.path().to_str().unwrap()]).await);
    assert_eq!(hello(&s).await, "hello from kitchen-sink");

    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let looper = {
        let (s, stop, failures, calls) = (s.clone(), stop.clone(), failures.clone(), calls.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match s.try_call("hello", json!({})).await {
                    Ok(r) if !is_error(&r) => {}
                    other => {
                        eprintln!("failed call during swap: {other:?}");
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                calls.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for round in 0..4 {
        let (next, expect) = if round % 2 == 0 {
            ("greeter", "hello from greeter")
        } else {
            ("kitchen_sink", "hello from kitchen-sink")
        };
        install(&component(next), &live);
        wait_for(&format!("round {round}: {next} serving"), async || {
            hello(&s).await == expect
        })
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    looper.await.unwrap();
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "calls failed during the swaps"
    );
    assert!(calls.load(Ordering::Relaxed) > 20, "the loop ran");
    // The notice of the last swap may still be on its way when the new
    // plugin already answers: wait for it rather than race it.
    wait_for(
        "clients told the list changed after each swap",
        async || s.events.lock().unwrap().list_changed >= 4,
    )
    .await;
}

#[tokio::test]
async fn a_broken_replacement_keeps_the_old_version_serving() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("plugin.wasm");
    install(&component("greeter"), &live);
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap()]).await;
    assert_eq!(hello(&s).await, "hello from greeter");
    install_bytes(b"\0asm\x0d\0\x01\0 this is not a component", &live);
    let stderr = s.stderr.clone();
    wait_for("the refusal to be logged", async || {
        stderr.lock().unwrap().contains("hot swap refused")
    })
    .await;
    assert_eq!(hello(&s).await, "hello from greeter");
    let log = s.log_with(&["plugin.wasm", "keeps serving"]).await;
    assert!(
        log.contains("plugin.wasm") && log.contains("keeps serving"),
        "{log}"
    );
    // A good file afterwards is picked up.
    install(&component("kitchen_sink"), &live);
    wait_for("the fixed file", async || {
        hello(&s).await == "hello from kitchen-sink"
    })
    .await;
    s.stop().await;
}

#[tokio::test]
async fn adding_and_removing_files_loads_and_unloads_tools() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap()]).await;
    assert!(s.tools().await.is_empty());
    let file = dir.path().join("greeter.wasm");
    install(&component("greeter"), &file);
    wait_for("greeter's tools", async || {
        s.tools().await.iter().any(|t| t.name == "greet")
    })
    .await;
    assert_eq!(
        text(&s.call("greet", json!({"name": "Ada"})).await),
        "hello, Ada"
    );
    std::fs::remove_file(&file).unwrap();
    wait_for("the tools to go", async || s.tools().await.is_empty()).await;
    let err = s
        .try_call("greet", json!({"name": "Ada"}))
        .await
        .expect_err("unloaded");
    assert!(err.to_string().contains("Unknown tool: greet"), "{err}");
    assert!(s.events.lock().unwrap().list_changed >= 2);
    s.stop().await;
}

#[tokio::test]
async fn colliding_tool_names_are_refused_unless_prefixed() {
    let dir = tempfile::tempdir().unwrap();
    install(
        &component("kitchen_sink"),
        &dir.path().join("a_kitchen.wasm"),
    );
    install(&component("greeter"), &dir.path().join("b_greeter.wasm"));
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch"]).await;
    assert_eq!(hello(&s).await, "hello from kitchen-sink");
    assert!(
        !s.tools().await.iter().any(|t| t.name == "greet"),
        "the later plugin is refused whole"
    );
    let log = s.log_with(&["plugin `b-greeter`", "prefix"]).await;
    assert!(
        log.contains("plugin `b-greeter`")
            && log.contains("plugin `a-kitchen`")
            && log.contains("prefix"),
        "{log}"
    );
    s.stop().await;

    let config = prefixed(dir.path(), "b_greeter.wasm", "gr");
    let s = Server::start(&[
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        dir.path().to_str().unwrap(),
    ])
    .await;
    assert_eq!(hello(&s).await, "hello from kitchen-sink");
    assert_eq!(
        text(&s.call("gr_hello", json!({})).await),
        "hello from greeter"
    );
    s.stop().await;
}

#[tokio::test]
async fn corrupt_compile_cache_entries_are_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    install(&component("greeter"), &dir.path().join("greeter.wasm"));
    let cache = dir.path().join("cache");
    let args = [
        "--plugins",
        dir.path().to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--no-watch",
    ];
    let s = Server::start(&args).await;
    assert_eq!(hello(&s).await, "hello from greeter");
    s.stop().await;
    // Beside the entries lies the host's key (secret.key).
    let entries: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(entries.len(), 1, "one cache entry: {entries:?}");
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entries[0], &bytes).unwrap();
    let s = Server::start(&args).await;
    assert_eq!(hello(&s).await, "hello from greeter");
    let log = s.log_with(&["fails its check", "rebuilding"]).await;
    assert!(
        log.contains("fails its check") && log.contains("rebuilding"),
        "{log}"
    );
    s.stop().await;
    // The rebuilt entry is valid again: a third start is a clean hit.
    let s = Server::start(&args).await;
    let log = s.log_with(&["compiled=Hit"]).await;
    assert!(log.contains("compiled=Hit"), "{log}");
    s.stop().await;
}

/// `benchtop serve --http` on a free port, without watching `plugins`.
async fn start_http(plugins: &Path) -> (tokio::process::Child, String) {
    serve_http(&["--no-watch", "--plugins", plugins.to_str().unwrap()]).await
}

/// A raw HTTP/1.1 POST, to send headers a well-behaved client would not.
async fn raw_post(url: &str, host: &str, origin: Option<&str>) -> u16 {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn streamable_http_serves_many_clients_and_refuses_rebinding() {
    let dir = tempfile::tempdir().unwrap();
    install(
        &component("kitchen_sink"),
        &dir.path().join("kitchen_sink.wasm"),
    );
    let (_child, url) = start_http(dir.path()).await;
    let client = ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo_nested"));
    client.cancel().await.unwrap();

    // Many concurrent sessions, each making calls.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
            for j in 0..10 {
                let args = json!({"c": char::from(b'a' + ((i + j) % 26) as u8).to_string()});
                let r = client
                    .call_tool(
                        rmcp::model::CallToolRequestParams::new("echo_char")
                            .with_arguments(args.as_object().unwrap().clone()),
                    )
                    .await
                    .unwrap();
                assert!(!is_error(&r), "{}", text(&r));
            }
            client.cancel().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    // DNS rebinding: a foreign Host or Origin is refused.
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_owned();
    assert!(
        raw_post(&url, &format!("127.0.0.1:{port}"), None).await < 400,
        "a plain local request is served"
    );
    let status = raw_post(&url, "evil.example", None).await;
    assert!((400..500).contains(&status), "foreign Host got {status}");
    let status = raw_post(
        &url,
        &format!("127.0.0.1:{port}"),
        Some("http://evil.example"),
    )
    .await;
    assert!((400..500).contains(&status), "foreign Origin got {status}");
}

#[test]
fn http_refuses_non_loopback_addresses() {
    let out = std::process::Command::new(bin())
        .args([
            "serve",
            "--http",
            "0.0.0.0:0",
            "--plugins",
            test_plugins().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
}

#[tokio::test]
async fn a_plugin_made_with_benchtop_new_builds_checks_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], cwd: &Path| {
        let out = std::process::Command::new(bin())
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "benchtop {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["new", "my-ecu", "--namespace", "acme"], dir.path());
    let krate = dir.path().join("my-ecu");
    let built = e2e::build_component(&krate);
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let packaged = plugins.join("my_ecu.wasm");
    run(
        &[
            "inject-docs",
            "wit",
            built.to_str().unwrap(),
            packaged.to_str().unwrap(),
        ],
        &krate,
    );
    let report = run(&["check", packaged.to_str().unwrap()], &krate);
    assert!(
        report.contains("● hexdump") && report.contains("no problems found"),
        "{report}"
    );

    let s = Server::start(&[
        "--plugins",
        plugins.to_str().unwrap(),
        "--allow",
        krate.to_str().unwrap(),
        "--workspace",
        krate.to_str().unwrap(),
    ])
    .await;
    let tool = s
        .tools()
        .await
        .into_iter()
        .find(|t| t.name == "hexdump")
        .expect("the template's tool");
    assert!(
        tool.description
            .unwrap()
            .starts_with("Shows the bytes of a file as hex")
    );
    let r = s
        .call("hexdump", json!({"path": "Cargo.toml", "length": 16}))
        .await;
    assert!(
        text(&r).contains("5B 70 61 63 6B 61 67 65 5D"),
        "{}",
        text(&r)
    ); // "[package]"
    let r = s.call("hexdump", json!({"path": "/etc/hostname"})).await;
    assert!(
        is_error(&r) && text(&r).starts_with("CANNOT_READ: "),
        "{}",
        text(&r)
    );
    s.stop().await;
}

#[tokio::test]
async fn prompts_and_resources_swap_with_their_plugin_and_never_share_a_uri() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap()]).await;
    assert!(s.client.list_all_prompts().await.unwrap().is_empty());
    install(&component("kitchen_sink"), &dir.path().join("kitchen.wasm"));
    wait_for("the plugin's prompt", async || {
        s.client.list_all_prompts().await.unwrap().len() == 1
    })
    .await;
    assert_eq!(s.client.list_all_resources().await.unwrap().len(), 3);
    std::fs::remove_file(dir.path().join("kitchen.wasm")).unwrap();
    wait_for("the resources to go", async || {
        s.client.list_all_resources().await.unwrap().is_empty()
    })
    .await;
    s.stop().await;

    // A prefix renames a second copy's tools and prompts, but not its URIs:
    // it is refused, and the log says why.
    install(&component("kitchen_sink"), &dir.path().join("a.wasm"));
    install(&component("kitchen_sink"), &dir.path().join("b.wasm"));
    let config = prefixed(dir.path(), "b.wasm", "two");
    let s = Server::start(&[
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        dir.path().to_str().unwrap(),
        "--no-watch",
    ])
    .await;
    let log = s.log_with(&["its resource"]).await;
    assert!(
        log.contains("its resource `kitchen://") && log.contains("does not rename URIs"),
        "{log}"
    );
    assert!(!s.tools().await.iter().any(|t| t.name == "two_hello"));
    s.stop().await;
}

/// The `skill://` URIs a server lists in skills/list.
async fn skill_uris(s: &Server) -> Vec<String> {
    s.client
        .list_all_skills()
        .await
        .expect("skills/list")
        .into_iter()
        .map(|skill| skill.uri)
        .collect()
}

/// Issue 34 (SEP-2640): the first-party plugins serve their playbooks as
/// skills. skills/list names each with its frontmatter and a manifest of
/// its files (the digest is of the very bytes resources/read returns);
/// skills/get answers one and refuses a URI that is none; and a skill
/// comes and goes with its plugin, as its tools do.
#[tokio::test]
async fn plugins_serve_skills_that_come_and_go_with_them() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "ecu_tables.wasm",
        "log_query.wasm",
        "cp1600.wasm",
        "x86_inspect.wasm",
        "ble_buffer.wasm",
    ] {
        install(&e2e::plugins().join(file), &dir.path().join(file));
    }
    let s = Server::start(&["--plugins", dir.path().to_str().unwrap()]).await;
    assert_eq!(
        skill_uris(&s).await,
        [
            "skill://ble-sniffing/SKILL.md",
            "skill://cp1600-debugging/SKILL.md",
            "skill://dos-debugging/SKILL.md",
            "skill://ecu-tuning/SKILL.md",
            "skill://knock-diagnosis/SKILL.md",
            "skill://log-investigation/SKILL.md",
        ]
    );
    let uri = "skill://knock-diagnosis/SKILL.md";
    let skill = s
        .client
        .get_skill(rmcp::model::GetSkillRequestParams::new(uri))
        .await
        .expect("skills/get")
        .skill;
    assert_eq!(skill.frontmatter.name, "knock-diagnosis");
    assert!(
        skill.frontmatter.description.contains("knock"),
        "{:?}",
        skill.frontmatter
    );
    assert_eq!(skill.frontmatter.extra["metadata"]["author"], "benchtop");
    let file =
        std::fs::read(e2e::repo().join("plugins/ecu-tables/skills/knock-diagnosis/SKILL.md"))
            .unwrap();
    let manifest = serde_json::to_value(&skill.resources).unwrap();
    let digest = {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(&file);
        format!(
            "sha256:{}",
            hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    assert_eq!(
        manifest,
        json!([{"uri": uri, "digest": digest, "size": file.len()}])
    );
    let read = s
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
        .await
        .expect("the skill's file reads");
    assert!(
        serde_json::to_string(&read)
            .unwrap()
            .contains("propose_patch")
    );
    // The listed resource is named and described by the frontmatter.
    let listed = s.client.list_all_resources().await.unwrap();
    let entry = listed.iter().find(|r| r.uri == uri).expect("listed");
    assert_eq!(entry.name, "knock-diagnosis");
    assert_eq!(
        entry.description.as_deref(),
        Some(skill.frontmatter.description.as_str())
    );
    let err = s
        .client
        .get_skill(rmcp::model::GetSkillRequestParams::new(
            "skill://nothing/SKILL.md",
        ))
        .await
        .expect_err("no such skill");
    assert!(err.to_string().contains("skills/list shows"), "{err}");

    std::fs::remove_file(dir.path().join("ble_buffer.wasm")).unwrap();
    wait_for("ble-sniffing to go", async || {
        !skill_uris(&s)
            .await
            .iter()
            .any(|u| u.contains("ble-sniffing"))
    })
    .await;
    assert_eq!(skill_uris(&s).await.len(), 5);
    s.stop().await;
}
