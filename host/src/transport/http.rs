//! Streamable HTTP transport (docs/design.md, Contract 4), loopback by default,
//! with Host and Origin checks against DNS rebinding.
//!
//! In front of rmcp's service sit the limits that keep one client from
//! taking the server down: a cap on TCP connections and a deadline for a
//! request's headers (so half-sent requests cannot hold descriptors), a cap
//! on MCP sessions with an idle timeout, and a gate that answers malformed
//! bodies with JSON-RPC errors (rmcp answers them with a bare 415) and takes
//! `Accept: */*` as accepting what the transport sends (rmcp answers 406).

use crate::mcp::server::Server;
use crate::runtime::config::HttpConfig;
use crate::runtime::host::LogEvent;
use crate::runtime::registry::Registry;
use crate::transport::framing::{Verdict, error_response, judge, without_bom};
use anyhow::{Context, Result, bail};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientRequest, ErrorCode, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// Largest request body (the same 4 MiB rmcp allows).
const MAX_BODY: usize = 4 << 20;

const SESSION_HEADER: &str = "mcp-session-id";

/// The limits of the HTTP transport, from the config file's `[http]`.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// MCP sessions open at once.
    pub max_sessions: usize,
    /// A session without requests for this long is closed.
    pub session_idle: Duration,
    /// TCP connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Time a client has to send a request's headers.
    pub header_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_sessions: 64,
            session_idle: Duration::from_secs(300),
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
        }
    }
}

impl HttpLimits {
    /// The limits a config sets, defaults for the rest.
    pub fn from_config(c: &HttpConfig) -> Result<Self> {
        let d = Self::default();
        let limits = Self {
            max_sessions: c.max_sessions.unwrap_or(d.max_sessions),
            session_idle: c
                .session_idle_secs
                .map_or(d.session_idle, Duration::from_secs),
            max_connections: c.max_connections.unwrap_or(d.max_connections),
            header_timeout: c
                .header_timeout_secs
                .map_or(d.header_timeout, Duration::from_secs),
        };
        for (name, zero) in [
            ("max_sessions", limits.max_sessions == 0),
            ("session_idle_secs", limits.session_idle.is_zero()),
            ("max_connections", limits.max_connections == 0),
            ("header_timeout_secs", limits.header_timeout.is_zero()),
        ] {
            if zero {
                bail!("[http] {name} must be at least 1");
            }
        }
        Ok(limits)
    }
}

/// Serves MCP on `http://ADDR/mcp` until Ctrl-C, and with `web` the static
/// files of that directory (the built web bench, `web/dist`) at `/`.
pub async fn serve(
    addr: &str,
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
    web: Option<PathBuf>,
    limits: HttpLimits,
) -> Result<()> {
    if let Some(dir) = &web
        && !dir.join("index.html").is_file()
    {
        bail!(
            "--web {}: no index.html there; build the page with `make web`",
            dir.display()
        );
    }
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("`{addr}` is not an address like 127.0.0.1:8081"))?;
    if !addr.ip().is_loopback() && std::env::var_os("BENCHTOP_ALLOW_REMOTE").is_none() {
        bail!(
            "refusing to serve on {addr}: it is not a loopback address. benchtop grants plugins your files; \
             set BENCHTOP_ALLOW_REMOTE=1 if you really mean to expose it"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    let mut router = router(local, registry, logs, limits);
    tracing::info!("serving MCP on http://{local}/mcp");
    eprintln!("benchtop: MCP endpoint http://{local}/mcp");
    if let Some(dir) = &web {
        router = with_web(router, dir);
        eprintln!("benchtop: web bench http://{local}/");
    }
    let shutdown = tokio::signal::ctrl_c();
    tokio::select! {
        _ = accept_loop(listener, router, limits) => {}
        _ = shutdown => {}
    }
    Ok(())
}

/// Header deadline for connections accepted while at least half the
/// connection slots are taken: a real client sends its headers at once, so
/// under a flood of half-sent requests the queue drains fast.
const PRESSED_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// Accepts connections while fewer than `max_connections` are open (the
/// rest wait in the kernel's backlog, costing no descriptor here), each
/// served over HTTP/1.1 with a deadline for its request headers.
async fn accept_loop(listener: tokio::net::TcpListener, router: axum::Router, limits: HttpLimits) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let builder = |timeout: Duration| {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.timer(TokioTimer::new()).header_read_timeout(timeout);
        b
    };
    let relaxed = builder(limits.header_timeout);
    let pressed = builder(limits.header_timeout.min(PRESSED_HEADER_TIMEOUT));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, most likely: wait for some to close.
                tracing::warn!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let under_pressure = slots.available_permits() < limits.max_connections / 2;
        let conn = if under_pressure { &pressed } else { &relaxed }
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        tokio::spawn(async move {
            let _slot = slot;
            let _ = conn.await;
        });
    }
}

/// The HTTP routes for a server bound at `local`.
pub fn router(
    local: SocketAddr,
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
    limits: HttpLimits,
) -> axum::Router {
    let port = local.port();
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
    ];
    hosts.push(local.ip().to_string());
    // Behind a load balancer or a Kubernetes Service, clients name the
    // balancer (`benchtop.tools.svc`), not the replica: the operator lists
    // those names, and only those pass the DNS-rebinding check.
    if let Ok(extra) = std::env::var("BENCHTOP_ALLOWED_HOSTS") {
        hosts.extend(
            extra
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_owned),
        );
    }
    let origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .map(|h| format!("http://{h}:{port}"))
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    let mut manager = LocalSessionManager::default();
    // rmcp's own idle timeout ends the session's worker; the gate's sweep
    // also drops it from the manager's table, which rmcp does not.
    manager.session_config.keep_alive = Some(limits.session_idle);
    let manager = Arc::new(manager);
    let service = StreamableHttpService::new(
        move || Ok(Server::new(registry.clone(), logs.clone())),
        manager.clone(),
        config,
    );
    let gate = Arc::new(Gate {
        manager,
        limits,
        last_seen: Mutex::new(HashMap::new()),
        admitting: tokio::sync::Mutex::new(()),
    });
    spawn_sweeper(Arc::downgrade(&gate));
    axum::Router::new()
        .route("/healthz", axum::routing::get(health))
        .nest_service(
            "/mcp",
            axum::Router::new()
                .fallback_service(service)
                .layer(axum::middleware::from_fn_with_state(gate, gate_request)),
        )
}

/// `GET /healthz`, for load balancers and readiness probes: 200 while this
/// replica can serve, 503 while its state store (when it has one) does not
/// answer, as a call on a session would fail then.
async fn health() -> (axum::http::StatusCode, String) {
    match crate::mcp::durable::current() {
        None => (axum::http::StatusCode::OK, "ok\n".into()),
        Some(d) => match d.ready().await {
            Ok(()) => (
                axum::http::StatusCode::OK,
                format!("ok: replica {}\n", d.replica()),
            ),
            Err(e) => (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                format!("replica {}: {e}\n", d.replica()),
            ),
        },
    }
}

/// Adds the static files of `dir` at `/` (the MCP endpoint keeps `/mcp`).
pub fn with_web(router: axum::Router, dir: &Path) -> axum::Router {
    router.fallback_service(tower_http::services::ServeDir::new(dir))
}

/// Session bookkeeping in front of rmcp's session manager.
struct Gate {
    manager: Arc<LocalSessionManager>,
    limits: HttpLimits,
    /// When each session this gate admitted last had a request.
    last_seen: Mutex<HashMap<String, Instant>>,
    /// One new session at a time, so the cap holds under concurrency.
    admitting: tokio::sync::Mutex<()>,
}

impl Gate {
    /// Closes sessions idle for longer than the limit.
    async fn sweep(&self) {
        let idle: Vec<String> = {
            let seen = self.last_seen.lock().expect("sessions lock");
            seen.iter()
                .filter(|(_, t)| t.elapsed() >= self.limits.session_idle)
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in idle {
            tracing::info!(
                "closing HTTP session {id}: idle for {:?}",
                self.limits.session_idle
            );
            let _ = self.manager.close_session(&id.as_str().into()).await;
            self.last_seen.lock().expect("sessions lock").remove(&id);
        }
    }

    /// Whether `id` names a session the manager holds now.
    async fn is_open(&self, id: &str) -> bool {
        self.manager.sessions.read().await.contains_key(id)
    }

    async fn open_sessions(&self) -> usize {
        self.manager.sessions.read().await.len()
    }
}

fn spawn_sweeper(gate: std::sync::Weak<Gate>) {
    tokio::spawn(async move {
        loop {
            let tick = match gate.upgrade() {
                Some(g) => (g.limits.session_idle / 4)
                    .clamp(Duration::from_millis(250), Duration::from_secs(15)),
                None => return,
            };
            tokio::time::sleep(tick).await;
            let Some(gate) = gate.upgrade() else { return };
            gate.sweep().await;
        }
    });
}

/// A JSON-RPC error as an HTTP response.
fn rpc_error(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// Rewrites a wildcard `Accept` (or none, which means anything) into the
/// types the transport sends, which rmcp requires by name.
fn widen_accept(req: &mut Request) {
    let mut types: Vec<String> = Vec::new();
    let mut any = false;
    for value in req.headers().get_all(header::ACCEPT) {
        for item in value.to_str().unwrap_or("").split(',') {
            let essence = item
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if essence.is_empty() {
                continue;
            }
            any = true;
            types.push(essence);
        }
    }
    let has = |t: &str| types.iter().any(|x| x == t);
    let mut add = Vec::new();
    if !any || has("*/*") || has("application/*") {
        add.push("application/json");
    }
    if !any || has("*/*") || has("text/*") {
        add.push("text/event-stream");
    }
    add.retain(|t| !has(t));
    if add.is_empty() {
        return;
    }
    let mut all: Vec<String> = types;
    all.extend(add.iter().map(|s| (*s).to_owned()));
    if let Ok(v) = HeaderValue::from_str(&all.join(", ")) {
        req.headers_mut().insert(header::ACCEPT, v);
    }
}

async fn gate_request(State(gate): State<Arc<Gate>>, mut req: Request, next: Next) -> Response {
    widen_accept(&mut req);
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && let Some(t) = gate.last_seen.lock().expect("sessions lock").get_mut(id)
    {
        *t = Instant::now();
    }
    // rmcp checks the session of an initialized-style request, but a
    // 2026-07-28 request is stateless to it: a DELETEd session's id would
    // still name its client (and reach its emulator sessions) forever.
    if let Some(id) = &session
        && req.method() != Method::DELETE
        && !gate.is_open(id).await
    {
        return rpc_error(
            StatusCode::NOT_FOUND,
            error_response(
                Value::Null,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Session not found: Mcp-Session-Id `{}` names no open session (closed by \
                     DELETE, or after {} s idle, or never opened here); send initialize for a \
                     new session, or with MCP 2026-07-28 drop the header and send \
                     `benchtop-owner` to be recognised across requests",
                    crate::wit::names::clip(id),
                    gate.limits.session_idle.as_secs()
                ),
            ),
        );
    }
    if req.method() == Method::DELETE {
        let response = next.run(req).await;
        if let Some(id) = &session {
            gate.last_seen.lock().expect("sessions lock").remove(id);
        }
        return response;
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                error_response(
                    Value::Null,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Invalid request: the body is larger than {} MiB (or was cut off); \
                         pass large data by file path instead",
                        MAX_BODY >> 20
                    ),
                ),
            );
        }
    };
    let (initialize, removed_method) = match judge(&bytes) {
        Verdict::Answer(answer) => return rpc_error(StatusCode::BAD_REQUEST, answer),
        Verdict::Ignore if bytes.iter().all(u8::is_ascii_whitespace) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                error_response(
                    Value::Null,
                    ErrorCode::PARSE_ERROR,
                    "Parse error: the body is empty; POST one JSON-RPC message".to_owned(),
                ),
            );
        }
        Verdict::Ignore => return StatusCode::ACCEPTED.into_response(),
        Verdict::Message(message) => match *message {
            JsonRpcMessage::Request(r) => {
                let removed = REMOVED_IN_2026.contains(&r.request.method());
                let initialize = matches!(r.request, ClientRequest::InitializeRequest(_));
                (initialize.then(|| r.id.into_json_value()), removed)
            }
            _ => (None, false),
        },
    };
    // Only the four removed methods are looked at again, for their version.
    if removed_method && let Some(answer) = removed_in_2026(&parts.headers, &bytes) {
        return rpc_error(StatusCode::NOT_FOUND, answer);
    }
    let req = Request::from_parts(parts, Body::from(without_bom(bytes)));
    let (Some(id), None) = (initialize, &session) else {
        return next.run(req).await;
    };
    // A new session: admit it under the cap.
    let _one = gate.admitting.lock().await;
    gate.sweep().await;
    let open = gate.open_sessions().await;
    if open >= gate.limits.max_sessions {
        tracing::warn!("refused a new HTTP session: {open} are open, the limit");
        let mut response = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            error_response(
                id,
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "Too many sessions: {open} are open, the most this server allows \
                     ([http] max_sessions in the config file). Close a session you no longer \
                     need (HTTP DELETE), or retry later: a session idle for {} s is closed",
                    gate.limits.session_idle.as_secs()
                ),
            ),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return response;
    }
    let response = next.run(req).await;
    if let Some(id) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        gate.last_seen
            .lock()
            .expect("sessions lock")
            .insert(id.to_owned(), Instant::now());
    }
    response
}

/// Methods MCP 2026-07-28 removed: the lifecycle moved into each request's
/// `_meta`, the log level too, and resource subscriptions into
/// `subscriptions/listen`.
const REMOVED_IN_2026: [&str; 4] = [
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The answer to a request for a method its own protocol revision removed:
/// the specification wants it treated like any unknown method (HTTP 404,
/// -32601), which rmcp, serving every revision on one endpoint, does not do.
/// The revision is the `MCP-Protocol-Version` header or the request's
/// `_meta`; older clients still get these methods.
fn removed_in_2026(headers: &axum::http::HeaderMap, body: &[u8]) -> Option<Value> {
    let message: Value = serde_json::from_slice(body).ok()?;
    let method = message.get("method")?.as_str()?;
    if !REMOVED_IN_2026.contains(&method) {
        return None;
    }
    let version = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            let meta = message.get("params")?.get("_meta")?;
            Some(
                meta.get("io.modelcontextprotocol/protocolVersion")?
                    .as_str()?
                    .to_owned(),
            )
        })?;
    if version.as_str() < "2026-07-28" {
        return None;
    }
    let instead = match method {
        "initialize" => "send requests directly, each with its `_meta` (or call `server/discover`)",
        "logging/setLevel" => "set `_meta.io.modelcontextprotocol/logLevel` on each request",
        _ => "open `subscriptions/listen` instead",
    };
    Some(error_response(
        message.get("id").cloned().unwrap_or(Value::Null),
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: `{method}` was removed in MCP {version}; {instead}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> String {
        let mut req = Request::new(Body::empty());
        for v in values {
            req.headers_mut()
                .append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        widen_accept(&mut req);
        req.headers()
            .get_all(header::ACCEPT)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Found by the jsonrpc_framing fuzz target: a body judge passed on
    /// after a byte order mark reached rmcp with the mark, and got a 415.
    #[test]
    fn a_body_judge_passes_on_is_one_rmcp_parses() {
        let body = axum::body::Bytes::from_static(
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        );
        assert!(matches!(judge(&body), Verdict::Message(_)));
        let parsed =
            serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&without_bom(body));
        assert!(parsed.is_ok(), "{parsed:?}");
        let plain = axum::body::Bytes::from_static(b"{}");
        assert_eq!(without_bom(plain.clone()), plain);
    }

    #[test]
    fn wildcard_accept_means_what_the_transport_sends() {
        assert_eq!(accept(&["*/*"]), "*/*, application/json, text/event-stream");
        assert_eq!(accept(&[]), "application/json, text/event-stream");
        assert_eq!(
            accept(&["application/json, text/*;q=0.5"]),
            "application/json, text/*, text/event-stream"
        );
        // Already explicit: left as sent.
        assert_eq!(
            accept(&["application/json, text/event-stream"]),
            "application/json, text/event-stream"
        );
        assert_eq!(accept(&["text/html"]), "text/html");
    }

    #[test]
    fn limits_come_from_the_config_and_refuse_zero() {
        let l = HttpLimits::from_config(&HttpConfig {
            max_sessions: Some(3),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(l.max_sessions, 3);
        assert_eq!(l.header_timeout, Duration::from_secs(10));
        let e = HttpLimits::from_config(&HttpConfig {
            header_timeout_secs: Some(0),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("header_timeout_secs"), "{e}");
    }
}
