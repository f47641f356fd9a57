//! Streamable HTTP transport (DESIGN.md, Contract 4), loopback by default,
//! with Host and Origin checks against DNS rebinding.

use crate::host::LogEvent;
use crate::registry::Registry;
use crate::server::Server;
use anyhow::{Context, Result, bail};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Serves MCP on `http://ADDR/mcp` until Ctrl-C, and with `web` the static
/// files of that directory (the built web bench, `web/dist`) at `/`.
pub async fn serve(
    addr: &str,
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
    web: Option<PathBuf>,
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
    let mut router = router(local, registry, logs);
    tracing::info!("serving MCP on http://{local}/mcp");
    eprintln!("benchtop: MCP endpoint http://{local}/mcp");
    if let Some(dir) = &web {
        router = with_web(router, dir);
        eprintln!("benchtop: web bench http://{local}/");
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("HTTP server")?;
    Ok(())
}

/// The HTTP routes for a server bound at `local`.
pub fn router(
    local: SocketAddr,
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
) -> axum::Router {
    let port = local.port();
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
    ];
    hosts.push(local.ip().to_string());
    let origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .map(|h| format!("http://{h}:{port}"))
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    let service = StreamableHttpService::new(
        move || Ok(Server::new(registry.clone(), logs.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Adds the static files of `dir` at `/` (the MCP endpoint keeps `/mcp`).
pub fn with_web(router: axum::Router, dir: &Path) -> axum::Router {
    router.fallback_service(tower_http::services::ServeDir::new(dir))
}
