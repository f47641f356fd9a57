//! Replicas past one machine, on loopback (issue 33): a real Redis as the
//! state store, benchtop replicas serving HTTP with `--store`, and a real
//! HAProxy in front of them with the repository's own
//! `deploy/haproxy.cfg`. Also a 2026-07-28 HTTP client that retries a
//! failed call with its `Idempotency-Key`, as a client of a load-balanced
//! server must.

use crate::free_port;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// What the cluster needs from this machine: Debian's `redis-server` and
/// `haproxy` (`.ci/run` installs them). The error says what to install.
pub fn tools_available() -> Result<(), String> {
    let missing: Vec<&str> = ["redis-server", "haproxy"]
        .into_iter()
        .filter(|t| {
            std::process::Command::new(t)
                .arg("-v")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_err()
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} not found: apt-get install -y redis-server haproxy (as .ci/run does)",
            missing.join(" and ")
        ))
    }
}

/// The plugins a cluster serves: cp1600 and x86-inspect, the stateful ones.
fn plugin_dir(dir: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["cp1600.wasm", "x86_inspect.wasm"] {
        let from = crate::plugins().join(name);
        assert!(
            from.exists(),
            "{} missing: run `make plugins`",
            from.display()
        );
        std::fs::copy(&from, plugins.join(name)).unwrap();
    }
    plugins
}

/// Waits until `GET url` answers 200.
async fn healthy(url: &str, within: Duration) -> bool {
    let client = reqwest::Client::new();
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok(r) = client.get(url).send().await
            && r.status().is_success()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// `bin serve` on `port`, its log in `log`, with `extra` arguments.
fn spawn_server(bin: &Path, plugins: &Path, port: u16, extra: &[String], log: &Path) -> Child {
    let samples = crate::repo().join("samples");
    Command::new(bin)
        .args(["serve", "--no-watch", "--plugins"])
        .arg(plugins)
        .arg("--allow")
        .arg(format!("{}:ro", samples.display()))
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(extra)
        // What the state store did with each handle, for a failing test.
        .env("BENCHTOP_LOG", "info,benchtop::mcp::durable=debug")
        .stdout(std::process::Stdio::null())
        // Appended: a restarted replica's log keeps what it said before.
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap(),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("benchtop starts")
}

/// One benchtop without a store: the reference a cluster must agree with.
pub struct Single {
    _child: Child,
    /// The MCP endpoint.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Single {
    /// Starts it and waits until it serves.
    pub async fn start() -> Self {
        Self::start_with(&crate::bin()).await
    }

    /// [`start`](Self::start) with the binary `bin`.
    pub async fn start_with(bin: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = spawn_server(
            bin,
            &plugin_dir(dir.path()),
            port,
            &[],
            &dir.path().join("single.log"),
        );
        assert!(
            healthy(
                &format!("http://127.0.0.1:{port}/healthz"),
                Duration::from_secs(60)
            )
            .await,
            "the reference server did not start"
        );
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            _dir: dir,
        }
    }
}

/// Redis, replicas sharing it, and HAProxy in front.
pub struct Cluster {
    redis: Child,
    haproxy: Child,
    replicas: Vec<Option<Child>>,
    ports: Vec<u16>,
    store: String,
    bin: PathBuf,
    plugins: PathBuf,
    dir: tempfile::TempDir,
    /// The load balancer's MCP endpoint, where clients connect.
    pub url: String,
}

impl Cluster {
    /// Starts Redis, `replicas` (1 to 3) benchtop replicas and HAProxy,
    /// and waits until the balancer serves.
    pub async fn start(replicas: usize) -> Self {
        Self::start_with(&crate::bin(), replicas).await
    }

    /// [`start`](Self::start) with the binary `bin`.
    pub async fn start_with(bin: &Path, replicas: usize) -> Self {
        assert!(
            (1..=3).contains(&replicas),
            "deploy/haproxy.cfg names 3 servers"
        );
        tools_available().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let plugins = plugin_dir(dir.path());
        let redis_port = free_port();
        let redis = state_store::spawn_local_redis(redis_port).expect("redis-server starts");
        let store = format!("redis://127.0.0.1:{redis_port}");
        let ports: Vec<u16> = (0..replicas).map(|_| free_port()).collect();
        let mut cluster = Self {
            redis,
            haproxy: Command::new("true").spawn().unwrap(),
            replicas: Vec::new(),
            ports: ports.clone(),
            store,
            bin: bin.to_owned(),
            plugins,
            url: String::new(),
            dir,
        };
        for i in 0..replicas {
            let child = cluster.spawn_replica(i);
            cluster.replicas.push(Some(child));
        }
        for i in 0..replicas {
            assert!(
                healthy(&cluster.health_url(i), Duration::from_secs(60)).await,
                "replica {} did not become ready (log: {})",
                i + 1,
                cluster.log(i).display()
            );
        }
        let lb = free_port();
        // With fewer than three replicas, the balancer's other servers
        // name the first again.
        let server = |i: usize| format!("127.0.0.1:{}", ports[i.min(replicas - 1)]);
        cluster.haproxy = Command::new("haproxy")
            .arg("-f")
            .arg(crate::repo().join("deploy/haproxy.cfg"))
            .arg("-db")
            .env("BENCHTOP_LB_BIND", format!("127.0.0.1:{lb}"))
            .env("BENCHTOP_R1", server(0))
            .env("BENCHTOP_R2", server(1))
            .env("BENCHTOP_R3", server(2))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(cluster.dir.path().join("haproxy.log")).unwrap())
            .kill_on_drop(true)
            .spawn()
            .expect("haproxy starts");
        assert!(
            healthy(
                &format!("http://127.0.0.1:{lb}/healthz"),
                Duration::from_secs(20)
            )
            .await,
            "haproxy did not serve"
        );
        cluster.url = format!("http://127.0.0.1:{lb}/mcp");
        cluster
    }

    fn health_url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}/healthz", self.ports[i])
    }

    /// Replica `i`'s own MCP endpoint, past the balancer.
    pub fn replica_url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}/mcp", self.ports[i])
    }

    /// Kills the state store.
    pub async fn kill_store(&mut self) {
        self.redis.start_kill().unwrap();
        let _ = self.redis.wait().await;
    }

    /// Replica `i`'s log file.
    pub fn log(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("r{}.log", i + 1))
    }

    /// The replicas' warnings and errors (at most `max` lines), for a
    /// failing test to show what the servers saw.
    pub fn warnings(&self, max: usize) -> String {
        let mut out = Vec::new();
        for i in 0..self.ports.len() {
            let text = std::fs::read_to_string(self.log(i)).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                    // Said at every start: this cluster serves no views.
                    .filter(|l| !l.contains("which no loaded plugin serves"))
                    .map(|l| format!("r{}: {l}", i + 1)),
            );
        }
        let skipped = out.len().saturating_sub(max);
        out.truncate(max);
        if skipped > 0 {
            out.push(format!("… and {skipped} more"));
        }
        out.join("\n")
    }

    /// Keeps the cluster's directory (logs, plugins) after the test, for
    /// a failure to be read; answers where it is.
    pub fn keep_logs(&mut self) -> PathBuf {
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        dir.keep()
    }

    fn spawn_replica(&self, i: usize) -> Child {
        let extra = [
            "--store".to_owned(),
            self.store.clone(),
            "--replica".to_owned(),
            format!("r{}", i + 1),
        ];
        spawn_server(
            &self.bin,
            &self.plugins,
            self.ports[i],
            &extra,
            &self.log(i),
        )
    }

    /// Kills replica `i` with SIGKILL: no goodbye, calls in flight lost.
    pub async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.replicas[i].take() {
            child.start_kill().unwrap();
            let _ = child.wait().await;
        }
    }

    /// Starts replica `i` again on its port and waits until it is ready.
    pub async fn restart(&mut self, i: usize) {
        let child = self.spawn_replica(i);
        self.replicas[i] = Some(child);
        assert!(
            healthy(&self.health_url(i), Duration::from_secs(60)).await,
            "replica {} did not come back",
            i + 1
        );
    }

    /// Whether Redis and HAProxy still run (a test failing otherwise
    /// would blame benchtop).
    pub fn parts_alive(&mut self) -> bool {
        matches!(self.redis.try_wait(), Ok(None)) && matches!(self.haproxy.try_wait(), Ok(None))
    }
}

/// Why one attempt at a call failed.
#[derive(Debug)]
pub enum Failure {
    /// Worth another attempt: the replica died or restarted, the handle
    /// was busy, the store did not answer.
    Retry(String),
    /// The tool's answer was an error: what it said.
    Tool(String),
}

/// A 2026-07-28 client over HTTP: no session, its owner header on every
/// request, each call's handle mirrored into its `Mcp-Param-*` header.
pub struct McpHttp {
    http: reqwest::Client,
    url: String,
    owner: String,
    seq: AtomicU64,
    /// Attempts that failed and were made again: when, and why.
    pub retries: std::sync::Mutex<Vec<(Instant, String)>>,
    /// What the server added to answers that succeeded, such as
    /// `STATE_NOT_SAVED`: the call ran, but the store missed its state.
    pub notices: std::sync::Mutex<Vec<String>>,
}

/// The `Mcp-Param-*` header of a tool argument that carries a handle.
fn param_header(name: &str) -> Option<&'static str> {
    match name {
        "session_id" => Some("Mcp-Param-Session"),
        "machine" => Some("Mcp-Param-Machine"),
        _ => None,
    }
}

impl McpHttp {
    /// A client of `url` known to the server as `owner`.
    pub fn new(url: &str, owner: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            url: url.to_owned(),
            owner: owner.to_owned(),
            seq: AtomicU64::new(0),
            retries: Default::default(),
            notices: Default::default(),
        }
    }

    /// One attempt at `tool` with `args` under `key`: its structured
    /// content (or text), or why it failed.
    pub async fn attempt(&self, tool: &str, args: &Value, key: &str) -> Result<Value, Failure> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "scale", "version": "1"}
            }}
        });
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", tool)
            .header("benchtop-owner", &self.owner)
            .header("Idempotency-Key", key);
        for (name, value) in args.as_object().into_iter().flatten() {
            if let Some(header) = param_header(name) {
                let v = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                req = req.header(header, v);
            }
        }
        let resp = req
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| Failure::Retry(format!("request: {e}")))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| Failure::Retry(format!("answer cut off: {e}")))?;
        if status >= 500 {
            return Err(Failure::Retry(format!("HTTP {status}: {text}")));
        }
        let json = text
            .lines()
            .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
            .unwrap_or(&text);
        let msg: Value = serde_json::from_str(json)
            .map_err(|e| Failure::Retry(format!("HTTP {status}, not JSON ({e}): {text}")))?;
        let result = &msg["result"];
        if result.is_null() {
            return Err(Failure::Tool(format!("HTTP {status}: {msg}")));
        }
        let said: String = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if result["isError"] == true {
            return Err(
                if said.starts_with("STATE_BUSY") || said.starts_with("STATE_STORE") {
                    Failure::Retry(said)
                } else {
                    Failure::Tool(said)
                },
            );
        }
        self.notices.lock().unwrap().extend(
            said.lines()
                .filter(|l| l.starts_with("STATE_"))
                .map(|l| format!("{tool}: {l}")),
        );
        Ok(match &result["structuredContent"] {
            Value::Null => Value::String(said),
            v => v.clone(),
        })
    }

    /// `tool` with `args`, tried again with the same key (up to 30 times,
    /// 100 ms apart) while attempts fail for a reason worth retrying.
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let key = format!(
            "{}-{}",
            self.owner,
            self.seq.fetch_add(1, Ordering::Relaxed)
        );
        let mut last = String::new();
        for _ in 0..30 {
            match self.attempt(tool, &args, &key).await {
                Ok(v) => return Ok(v),
                Err(Failure::Tool(e)) => return Err(format!("{tool}: {e}")),
                Err(Failure::Retry(e)) => {
                    self.retries
                        .lock()
                        .unwrap()
                        .push((Instant::now(), e.clone()));
                    last = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        Err(format!("{tool}: still failing after 30 attempts: {last}"))
    }
}
