//! Test support: start the real `benchtop` binary and talk MCP to it over

// MCP logging is deprecated for the 2026-07-28 revision (SEP-2577), but the
// host still serves it to the clients in the field; the tests check it.
#![allow(deprecated)]
//! stdio with rmcp's client, recording the notifications it sends.

pub mod cluster;
pub mod hardening;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, LoggingMessageNotificationParam,
    ProgressNotificationParam, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;
use tokio::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repo")
        .to_owned()
}

/// The `benchtop` binary under test (`BENCHTOP_BIN`, or the debug build).
pub fn bin() -> PathBuf {
    let path = std::env::var_os("BENCHTOP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/debug/benchtop"));
    assert!(
        path.exists(),
        "{} is missing: run `make test` (it builds the host and the plugins first)",
        path.display()
    );
    path
}

/// Directory of the test components (`make plugins` builds them).
pub fn test_plugins() -> PathBuf {
    let dir = repo().join("target/test-plugins");
    assert!(
        dir.join("kitchen_sink.wasm").exists(),
        "test components missing: run `make plugins`"
    );
    dir
}

/// Directory of the first-party plugins.
pub fn plugins() -> PathBuf {
    repo().join("target/plugins")
}

/// `../shared/fixtures/<sub>`, or `None` (with a message) when absent.
pub fn fixtures(sub: &str) -> Option<PathBuf> {
    let dir = repo().join("../shared/fixtures").join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: {} not found (fixtures live beside the repository)",
            dir.display()
        );
        None
    }
}

/// `samples/<sub>` of the repository (the bundled sample data).
pub fn samples(sub: &str) -> PathBuf {
    repo().join("samples").join(sub)
}

/// Puts `src` at `dest` the way a deploy would: copied beside it, then
/// renamed, so a watching server never sees half a file.
pub fn install(src: &Path, dest: &Path) {
    let tmp = dest.with_extension("partial");
    std::fs::copy(src, &tmp).expect("copying the plugin");
    std::fs::rename(&tmp, dest).expect("renaming the plugin into place");
}

/// The `notifications/resources/updated` URIs the server sent so far, in
/// arrival order, after waiting out the host's 250 ms coalescing window.
pub async fn heard(server: &Server) -> Vec<String> {
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    server.events.lock().unwrap().resource_updates.clone()
}

/// What the server sent besides responses.
#[derive(Default, Debug)]
pub struct Events {
    /// Progress notifications.
    pub progress: Vec<ProgressNotificationParam>,
    /// `notifications/tools/list_changed` count.
    pub list_changed: usize,
    /// Logging notifications.
    pub logs: Vec<LoggingMessageNotificationParam>,
    /// URIs of `notifications/resources/updated`, in order.
    pub resource_updates: Vec<String>,
}

/// A client handler that records notifications.
#[derive(Clone, Default)]
pub struct Recorder {
    /// Recorded events.
    pub events: Arc<Mutex<Events>>,
}

#[allow(deprecated)]
impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.events.lock().unwrap().progress.push(params);
    }
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.events.lock().unwrap().list_changed += 1;
    }
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.events
            .lock()
            .unwrap()
            .resource_updates
            .push(params.uri);
    }
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.events.lock().unwrap().logs.push(params);
    }
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// A running `benchtop serve` with a connected client.
pub struct Server {
    /// The MCP client session.
    pub client: RunningService<RoleClient, Recorder>,
    /// Notifications received.
    pub events: Arc<Mutex<Events>>,
    /// Everything the server wrote to stderr.
    pub stderr: Arc<Mutex<String>>,
    /// The server's process id, when it is a child process.
    pub pid: Option<u32>,
}

impl Server {
    /// Starts `benchtop serve ARGS…` and initializes a session.
    pub async fn start(args: &[&str]) -> Server {
        let mut cmd = Command::new(bin());
        cmd.arg("serve").args(args).env("BENCHTOP_LOG", "info");
        Server::connect(cmd).await.expect("starting benchtop")
    }

    /// Spawns any MCP server on stdio and initializes a session with it,
    /// capturing its stderr.
    pub async fn connect(mut cmd: Command) -> anyhow::Result<Server> {
        cmd.kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let pid = transport.id();
        let captured = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = stderr {
            let sink = captured.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut s = sink.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        let recorder = Recorder::default();
        let events = recorder.events.clone();
        match recorder.serve(transport).await {
            Ok(client) => Ok(Server {
                client,
                events,
                stderr: captured,
                pid,
            }),
            Err(e) => {
                // Let the stderr reader catch up with the server's last words.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                anyhow::bail!(
                    "MCP initialize failed: {e}; server stderr:\n{}",
                    captured.lock().unwrap()
                )
            }
        }
    }

    /// `tools/list`.
    pub async fn tools(&self) -> Vec<Tool> {
        self.client.list_all_tools().await.expect("tools/list")
    }

    /// The names of the tools, in the server's order.
    pub async fn tool_names(&self) -> Vec<String> {
        self.tools()
            .await
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// The description `tools/list` gives tool `name` (empty when it has
    /// none or is not listed).
    pub async fn tool_description(&self, name: &str) -> String {
        self.tools()
            .await
            .into_iter()
            .find(|t| t.name == name)
            .and_then(|t| t.description.map(|d| d.to_string()))
            .unwrap_or_default()
    }

    /// The URI templates of `resources/templates/list`, sorted.
    pub async fn template_uris(&self) -> Vec<String> {
        let mut uris: Vec<String> = self
            .client
            .list_all_resource_templates()
            .await
            .expect("resources/templates/list")
            .into_iter()
            .map(|t| t.uri_template.clone())
            .collect();
        uris.sort();
        uris
    }

    /// `resources/read` of a resource with one text: its text and MIME
    /// type, or the protocol error's text.
    pub async fn read_text(&self, uri: &str) -> Result<(String, String), String> {
        use rmcp::model::{ReadResourceRequestParams, ResourceContents};
        let r = self
            .client
            .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
            .await
            .map_err(|e| e.to_string())?;
        match &r.contents[..] {
            [
                ResourceContents::TextResourceContents {
                    text, mime_type, ..
                },
            ] => Ok((text.clone(), mime_type.clone().unwrap_or_default())),
            other => panic!("{uri}: one text expected, got {other:?}"),
        }
    }

    /// `tools/call`, panicking on a protocol error.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        self.try_call(name, args)
            .await
            .unwrap_or_else(|e| panic!("tools/call {name} failed at the protocol level: {e}"))
    }

    /// `tools/call`, returning protocol errors.
    pub async fn try_call(
        &self,
        name: &str,
        args: Value,
    ) -> Result<CallToolResult, rmcp::ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        self.client.call_tool(params).await
    }

    /// Calls a tool that must succeed; returns the call's result.
    pub async fn ok(&self, name: &str, args: Value) -> CallToolResult {
        let r = self.call(name, args.clone()).await;
        assert!(!is_error(&r), "{name} {args}: {}", text(&r));
        r
    }

    /// Calls a tool that must fail (an `isError` result); returns the result.
    pub async fn err(&self, name: &str, args: Value) -> CallToolResult {
        let r = self.call(name, args.clone()).await;
        assert!(is_error(&r), "{name} {args} should fail, got: {}", text(&r));
        r
    }

    /// The server's stderr once it holds every one of `needles`, waiting up
    /// to 10 s for the reader task to catch up (lines reach it
    /// asynchronously, so an immediate look can miss the latest ones).
    pub async fn log_with(&self, needles: &[&str]) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let log = self.stderr.lock().unwrap().clone();
            if needles.iter().all(|n| log.contains(n)) || std::time::Instant::now() > deadline {
                return log;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Stops the server.
    pub async fn stop(self) {
        let _ = self.client.cancel().await;
    }
}

/// A config that lets ble-buffer reach a bridge on 127.0.0.1:`port`,
/// drained every 10 ms.
pub fn ble_config(port: u16) -> String {
    format!(
        "[[plugin]]\npath = {:?}\nnetwork = [\"127.0.0.1:{port}\"]\nenv = {{ BLE_BRIDGE_URL = \"ws://127.0.0.1:{port}\" }}\ntick_ms = 10\n",
        plugins().join("ble_buffer.wasm").display().to_string()
    )
}

/// The text of a result's first text block.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

/// The `(code, text)` of an error result whose structured content is a
/// `{code, message}` record; checks the text reads `CODE: message`.
pub fn coded_error(result: &CallToolResult) -> (String, String) {
    let code = result
        .structured_content
        .as_ref()
        .and_then(|v| v["code"].as_str())
        .unwrap_or_default()
        .to_owned();
    let text = text(result);
    assert!(
        text.starts_with(&format!("{code}: ")),
        "not `CODE: message`: {text}"
    );
    (code, text)
}

/// Whether a result is an error.
pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// A temporary plugins directory holding only `target/plugins/<file>` (e.g.
/// `ecu_tables.wasm`), so that a server serves one plugin's tools.
pub fn only_plugin(file: &str) -> tempfile::TempDir {
    isolate(&plugins().join(file))
}

/// The first-party ECU definition families, each a component of its own
/// that ecu-tables asks through `benchtop:ecu-family`.
pub const ECU_FAMILIES: [&str; 2] = ["ecuflash.wasm", "romraider.wasm"];

/// A plugins directory holding the first-party ECU plugins only: the
/// tools (ecu-tables) and the definition families (ECUFlash, RomRaider),
/// as the bundled set serves them.
pub fn ecu_plugins() -> tempfile::TempDir {
    let dir = only_plugin("ecu_tables.wasm");
    add_ecu_families(dir.path());
    dir
}

/// Copies the first-party ECU definition families into `dir`.
pub fn add_ecu_families(dir: &Path) {
    for file in ECU_FAMILIES {
        let family = plugins().join(file);
        assert!(
            family.exists(),
            "{} is missing: run `make plugins`",
            family.display()
        );
        std::fs::copy(&family, dir.join(file)).expect("copying the plugin");
    }
}

/// Builds the crate at `krate` for wasm32-wasip2 as an author would (in
/// release, sharing this repository's build cache) and returns the
/// component cargo wrote.
pub fn build_component(krate: &Path) -> PathBuf {
    let target = repo().join("target");
    let status =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--target", "wasm32-wasip2"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(krate)
            .status()
            .expect("running cargo");
    assert!(status.success(), "{} builds", krate.display());
    let name = krate
        .file_name()
        .expect("a crate directory")
        .to_string_lossy()
        .replace('-', "_");
    target.join(format!("wasm32-wasip2/release/{name}.wasm"))
}

/// Directory of the examples for plugin authors (`make plugins` builds
/// them from `examples/`).
pub fn examples() -> PathBuf {
    let dir = repo().join("target/examples");
    assert!(
        dir.join("units.wasm").exists(),
        "examples missing: run `make plugins`"
    );
    dir
}

/// A temporary plugins directory holding only this test component.
pub fn only_test_plugin(file: &str) -> tempfile::TempDir {
    isolate(&test_plugins().join(file))
}

fn isolate(src: &Path) -> tempfile::TempDir {
    assert!(
        src.exists(),
        "{} is missing: run `make plugins`",
        src.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(src, dir.path().join(src.file_name().expect("a file")))
        .expect("copying the plugin");
    dir
}

/// A result's structured content, or its text parsed as JSON.
pub fn json(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&text(result)).unwrap_or(Value::Null))
}

/// A prompt's arguments as `(name, required)`, in the server's order.
pub fn prompt_arguments(prompt: &rmcp::model::Prompt) -> Vec<(&str, Option<bool>)> {
    prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.as_str(), a.required))
        .collect()
}

/// The value of `key: value` in a YAML-frontmatter document (first match).
pub fn field(doc: &str, key: &str) -> Option<String> {
    let prefix = format!("{key}: ");
    doc.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_owned)
}

/// The value of `key: value` in a frontmatter document; panics, showing the
/// document, when the key is missing.
pub fn required_field(doc: &str, key: &str) -> String {
    field(doc, key).unwrap_or_else(|| panic!("no `{key}` in\n{doc}"))
}

/// The rows of the first markdown table in a document, header first,
/// without the `|---|` separator; cells trimmed.
pub fn markdown_rows(doc: &str) -> Vec<Vec<String>> {
    doc.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|-"))
        .map(|l| split_cells(l.trim()))
        .collect()
}

/// Splits `| a | b \| c |` into `["a", "b | c"]` (`\|` is an escaped pipe).
fn split_cells(line: &str) -> Vec<String> {
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = inner
        .strip_suffix('|')
        .filter(|s| !s.ends_with('\\'))
        .unwrap_or(inner);
    let (mut cells, mut cell, mut escaped) = (Vec::new(), String::new(), false);
    for c in inner.chars() {
        match c {
            '|' if escaped => {
                cell.pop();
                cell.push('|');
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            _ => cell.push(c),
        }
        escaped = c == '\\';
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// A `benchtop serve` spoken to with hand-written JSON-RPC lines over stdio,
/// for requests a well-behaved client cannot send (arguments that are not an
/// object, malformed params) and for per-request timeouts.
pub struct RawServer {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
    /// Everything the server wrote to stderr.
    pub stderr: Arc<Mutex<String>>,
}

/// Why a raw request got no response.
#[derive(Debug)]
pub enum RawFailure {
    /// Nothing came back in time.
    Timeout,
    /// The server closed stdout (it died).
    Closed,
}

impl RawServer {
    /// Starts `benchtop serve ARGS…` and completes the initialize handshake.
    pub async fn start(args: &[&str]) -> RawServer {
        Self::start_declaring(args, serde_json::json!({})).await
    }

    /// Like [`start`](Self::start), the client declaring `capabilities`
    /// (elicitation, the tasks extension…) at initialize.
    pub async fn start_declaring(args: &[&str], capabilities: Value) -> RawServer {
        let mut child = Command::new(bin())
            .arg("serve")
            .args(args)
            .env("BENCHTOP_LOG", "info")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning benchtop");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let err = child.stderr.take().expect("stderr piped");
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let stdin = child.stdin.take().expect("stdin piped");
        let lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout piped")).lines();
        let mut raw = RawServer {
            child,
            stdin,
            lines,
            next_id: 0,
            stderr,
        };
        let init = raw
            .request(
                "initialize",
                serde_json::json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "raw-e2e", "version": "1"}
                }),
                std::time::Duration::from_secs(30),
            )
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "initialize failed: {e:?}; stderr:\n{}",
                    raw.stderr.lock().unwrap()
                )
            });
        assert!(init.get("result").is_some(), "initialize: {init}");
        raw.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Writes one line as is (it need not be valid JSON).
    pub async fn send_line(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    /// Writes one line of any bytes (they need not be UTF-8).
    pub async fn send_bytes(&mut self, line: &[u8]) {
        use tokio::io::AsyncWriteExt;
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        self.stdin.write_all(&bytes).await.expect("writing stdin");
        self.stdin.flush().await.expect("flushing stdin");
    }

    /// Sends a request and waits for the response with its id (skipping
    /// notifications), or an error response without an id; returns the
    /// whole response message. One request at a time.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, RawFailure> {
        self.next_id += 1;
        let id = self.next_id;
        let msg =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&msg.to_string()).await;
        self.response(id, timeout).await
    }

    /// Waits for the response to request `id`.
    pub async fn response(
        &mut self,
        id: u64,
        timeout: std::time::Duration,
    ) -> Result<Value, RawFailure> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let line = match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Err(_) => return Err(RawFailure::Timeout),
                Ok(Ok(Some(line))) => line,
                Ok(_) => return Err(RawFailure::Closed),
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                panic!("the server wrote a line that is not JSON to stdout: {line:?}");
            };
            // An error without an id (rmcp's answer to a request it cannot
            // parse) answers the one request outstanding.
            let orphan_error =
                msg.get("error").is_some() && msg.get("id").is_none_or(Value::is_null);
            if msg.get("id").and_then(Value::as_u64) == Some(id) || orphan_error {
                return Ok(msg);
            }
        }
    }

    /// A fresh request id, for requests built by hand with [`send_line`].
    pub fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// `tools/call` with any `arguments` value (or none, for `Value::Null`
    /// passed as `omit`).
    pub async fn call(
        &mut self,
        tool: &str,
        arguments: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, RawFailure> {
        self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
            timeout,
        )
        .await
    }

    /// `tools/list`: the tools as JSON.
    pub async fn tools(&mut self) -> Vec<Value> {
        let r = self
            .request(
                "tools/list",
                serde_json::json!({}),
                std::time::Duration::from_secs(30),
            )
            .await
            .expect("tools/list answered");
        r["result"]["tools"].as_array().expect("tools").clone()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// The text of a raw `tools/call` result's text blocks, joined.
pub fn raw_text(response: &Value) -> String {
    response["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A process's resident set size and its peak (`VmRSS`, `VmHWM`) in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Sends SIGKILL to a process.
pub fn sigkill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -KILL {pid}");
}

/// A free TCP port on loopback (for the bridge simulator and the like).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An MCP client over streamable HTTP with no handler of its own: one MCP
/// session, as a second user of a shared server has.
pub type HttpClient = RunningService<RoleClient, ()>;

/// A new HTTP client (its own MCP session) of the server at `url`.
pub async fn http_client(url: &str) -> HttpClient {
    use rmcp::transport::StreamableHttpClientTransport;
    ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .expect("HTTP MCP session")
}

/// Reads a resource as `client`: `Ok`, or the error's text.
pub async fn read_as(client: &HttpClient, uri: &str) -> Result<(), String> {
    client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.to_owned()))
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// What `client` is offered when completing `argument` of `prompt` from
/// `value`.
pub async fn prompt_completions(
    client: &HttpClient,
    prompt: &str,
    argument: &str,
    value: &str,
) -> Vec<String> {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference};
    client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt(prompt),
            ArgumentInfo::new(argument, value),
        ))
        .await
        .expect("completion/complete")
        .completion
        .values
}

/// `benchtop serve --http 127.0.0.1:0 ARGS…` on a free port: the child and
/// the endpoint it announced.
pub async fn serve_http(args: &[&str]) -> (tokio::process::Child, String) {
    let mut child = Command::new(bin())
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("benchtop: MCP endpoint ") {
                return url.to_owned();
            }
        }
        panic!("benchtop exited before serving HTTP");
    })
    .await
    .expect("HTTP endpoint announced");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// A decoded screenshot: width, height and RGB bytes, row by row.
pub struct Picture {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    rgb: Vec<u8>,
}

impl Picture {
    /// The RGB of pixel (`x`, `y`).
    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// The PNG image block of a tool result (a screenshot), decoded.
pub fn picture_of(r: &CallToolResult) -> Picture {
    use base64::Engine as _;
    let image = r
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .expect("base64 image data");
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .expect("a PNG");
    let mut rgb = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut rgb).expect("a frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    Picture {
        width: info.width as usize,
        height: info.height as usize,
        rgb,
    }
}

/// The BLE bridge simulator binary as `make build` builds it.
pub fn simulator_bin() -> PathBuf {
    let bin = repo().join("target/debug/ble-bridge-sim");
    assert!(
        bin.exists(),
        "{} is missing: run `make build`",
        bin.display()
    );
    bin
}

/// The bridge simulator `bin` on `port` with further `args` (rate, count…),
/// quiet, and killed when the handle drops.
pub fn spawn_simulator(
    bin: &Path,
    port: u16,
    args: &[&str],
) -> std::io::Result<tokio::process::Child> {
    Command::new(bin)
        .args(["--port", &port.to_string()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
}

/// A sandbox layout for the kitchen-sink component: a read-write and a
/// read-only directory, a secret outside both, and a config granting the two
/// (`extra` is appended to the plugin's table, or adds further plugins).
pub struct Sandbox {
    _tmp: tempfile::TempDir,
    pub rw: PathBuf,
    pub ro: PathBuf,
    pub outside: PathBuf,
    pub config: PathBuf,
}

pub fn sandbox(extra: &str) -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (rw, ro, outside) = (root.join("rw"), root.join("ro"), root.join("outside"));
    for d in [&rw, &ro, &outside] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(ro.join("note.txt"), "read me").unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    let config = root.join("benchtop.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugin]]\npath = \"{}\"\nallow = [\"{}:rw\", \"{}:ro\"]\ndeadline_ms = 3000\nmemory_mb = 64\n{extra}",
            test_plugins().join("kitchen_sink.wasm").display(),
            rw.display(),
            ro.display()
        ),
    )
    .unwrap();
    Sandbox {
        _tmp: tmp,
        rw,
        ro,
        outside,
        config,
    }
}

/// A client that can be asked (MCP elicitation) and answers every question
/// with `action` and `content`, recording the questions' messages.
#[derive(Clone)]
pub struct Asker {
    /// The answer it gives.
    pub action: rmcp::model::ElicitationAction,
    /// The form's values when it accepts.
    pub content: Option<Value>,
    /// The messages it was asked.
    pub asked: Arc<Mutex<Vec<String>>>,
}

/// The questions an [`Asker`] was asked.
pub type Asked = Arc<Mutex<Vec<String>>>;

impl Asker {
    /// Starts `benchtop ARGS…` and connects an asker to it; returns the
    /// client and the list the questions land in.
    pub async fn connect(
        args: &[&str],
        action: rmcp::model::ElicitationAction,
        content: Option<Value>,
    ) -> (RunningService<RoleClient, Asker>, Asked) {
        let (client, transport, asked) = Self::start(args, action, content);
        let running = client.serve(transport).await.expect("MCP initialize");
        (running, asked)
    }

    /// Like [`Asker::connect`], but speaking MCP 2026-07-28 without an
    /// `initialize` handshake: every request carries the client's version
    /// and capabilities, and questions come back as `input_required`
    /// results that rmcp's client answers (through this asker) and retries.
    pub async fn connect_2026(
        args: &[&str],
        action: rmcp::model::ElicitationAction,
        content: Option<Value>,
    ) -> (RunningService<RoleClient, Asker>, Asked) {
        let (client, transport, asked) = Self::start(args, action, content);
        let mut server = rmcp::model::InitializeResult::new(Default::default());
        server.protocol_version = rmcp::model::ProtocolVersion::V_2026_07_28;
        let running = rmcp::service::serve_directly::<RoleClient, _, _, _, _>(
            client,
            transport,
            Some(server.into()),
        );
        (running, asked)
    }

    fn start(
        args: &[&str],
        action: rmcp::model::ElicitationAction,
        content: Option<Value>,
    ) -> (Asker, TokioChildProcess, Asked) {
        let mut cmd = Command::new(bin());
        cmd.args(args).kill_on_drop(true);
        let transport = TokioChildProcess::new(cmd).expect("starting benchtop");
        let asked: Asked = Arc::default();
        let client = Asker {
            action,
            content,
            asked: asked.clone(),
        };
        (client, transport, asked)
    }
}

impl ClientHandler for Asker {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        let mut r = rmcp::model::ElicitResult::new(self.action.clone());
        r.content = self.content.clone();
        Ok(r)
    }
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities = serde_json::from_value(serde_json::json!({"elicitation": {}}))
            .expect("an elicitation capability");
        info
    }
}

/// An OCI registry (Debian's `docker-registry`, the CNCF distribution
/// registry) on a free loopback port, storing into a scratch directory;
/// stopped when dropped.
pub struct Registry {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its storage root (blobs are under `docker/registry/v2/blobs`).
    pub storage: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where Debian installs the registry, if it is installed.
pub fn registry_binary() -> Option<PathBuf> {
    ["/usr/bin/docker-registry", "/usr/bin/registry"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Starts a registry storing under `dir`; None when none is installed.
// The child is waited for by `Registry`'s Drop, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn start_registry(dir: &Path) -> Option<Registry> {
    let binary = registry_binary()?;
    let port = free_port();
    let storage = dir.join("registry");
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        ),
    )
    .expect("writing the registry's config");
    let child = std::process::Command::new(binary)
        .args(["serve", config.to_str().expect("a UTF-8 path")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting docker-registry");
    // Owned first, so it is stopped even if it never listens.
    let registry = Registry {
        child,
        addr: format!("127.0.0.1:{port}"),
        storage,
    };
    for _ in 0..100 {
        if std::net::TcpStream::connect(&registry.addr).is_ok() {
            return Some(registry);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("docker-registry did not listen on {}", registry.addr);
}
