//! What a plugin's store holds and the `benchtop:host` imports it answers,
//! beside WASI p2 (docs/design.md, Contracts 2 and 3): one file per
//! interface, each over the one store context, [`PluginState`], as
//! wasmtime-wasi keeps one file per WASI interface over its `WasiCtx`.
//! The linker built here is the whole of what a component may import.

use crate::runtime::context::CallContext;
use anyhow::Result;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The `benchtop:host` WIT, as Rust (generated).
mod bindings {
    #![allow(missing_docs)]
    macro_rules! host_bindings {
        ($wit:literal) => {
            wasmtime::component::bindgen!({
                path: $wit,
                world: "imports",
                // Waiting for the user must not block a runtime thread.
                imports: {
                    "benchtop:host/elicit.ask": async,
                    "benchtop:host/elicit.ask-keyed": async,
                    "benchtop:host/elicit.ask-all": async,
                    "benchtop:host/sampling.create-message": async,
                    "benchtop:host/roots.list-roots": async,
                },
            });
        };
    }
    // The workspace's wit/ is the one source; the crates.io package
    // carries a copy (host/build.rs says which is here).
    #[cfg(not(benchtop_packaged))]
    host_bindings!("../wit/host");
    #[cfg(benchtop_packaged)]
    host_bindings!("bundle/wit/host");
}

pub use bindings::benchtop::host::log::Level as LogLevel;
pub use blobs::{BlobOwner, BlobStore};
pub use peers::{
    NoPeers, PeerCall, PeerDirectory, Shape, Side, interface_shape, link_peer_imports,
    shape_differences,
};

/// Receives a plugin's log messages: `(plugin, level, message)`.
pub type LogSink = Arc<dyn Fn(&str, LogLevel, &str) + Send + Sync>;

/// Receives a plugin's resource change notices: `(plugin, uri, caller)`,
/// the caller being the client whose call made the change, if any.
pub type ChangeSink = Arc<dyn Fn(&str, &str, Option<&str>) + Send + Sync>;

/// Where what a plugin tells the host, outside a call's result, goes, and
/// where its calls to other plugins go.
#[derive(Clone)]
pub struct Sinks {
    /// Log messages (`benchtop:host/log`).
    pub log: LogSink,
    /// Resource change notices (`benchtop:host/resources`).
    pub changed: ChangeSink,
    /// The plugins serving interfaces (`benchtop:host/peers`).
    pub peers: Arc<dyn PeerDirectory>,
    /// Blobs plugins hand each other (`benchtop:host/blobs`), host-wide.
    pub blobs: Arc<BlobStore>,
}

impl Sinks {
    /// Sinks that drop everything (`benchtop check`, tests).
    pub fn none() -> Self {
        Self {
            log: Arc::new(|_, _, _| {}),
            changed: Arc::new(|_, _, _| {}),
            peers: Arc::new(NoPeers),
            blobs: Arc::default(),
        }
    }
}

/// The call a store is running, as its imports and epoch callback see it.
pub(crate) struct ActiveCall {
    pub(crate) ctx: CallContext,
    pub(crate) deadline: Instant,
    /// The deadline as the watchdog outside the store sees it: moved on
    /// by the time a user takes to answer a question.
    pub(crate) watchdog: Arc<std::sync::Mutex<Instant>>,
    pub(crate) cancel_seen: Option<Instant>,
    pub(crate) last_progress: Option<(u64, Instant)>,
}

impl ActiveCall {
    /// A call of `ctx` that must end within `budget` from now.
    pub(crate) fn new(ctx: CallContext, budget: Duration) -> Self {
        let deadline = Instant::now() + budget;
        Self {
            ctx,
            deadline,
            watchdog: Arc::new(std::sync::Mutex::new(deadline)),
            cancel_seen: None,
            last_progress: None,
        }
    }
}

/// The data of a plugin's store.
pub struct PluginState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: StoreLimits,
    pub(crate) plugin: Arc<str>,
    pub(crate) call: Option<ActiveCall>,
    pub(crate) deadline_budget: Duration,
    pub(crate) sinks: Sinks,
    /// The plugin each served interface's calls go to (`peers.route`).
    pub(crate) routes: std::collections::HashMap<String, String>,
    /// The blobs this instance keeps, released with it.
    pub(crate) blobs: BlobOwner,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

mod blobs;
mod caller;
mod durable;
mod elicit;
mod log;
mod peers;
mod progress;
mod resources;
mod sampling;

// `errors` holds only the `tool-error` type: nothing to answer.
impl bindings::benchtop::host::errors::Host for PluginState {}

/// Builds the linker every plugin is instantiated with: WASI p2 plus `benchtop:host`.
pub fn new_linker(engine: &Engine) -> Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    bindings::Imports::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)
        .map_err(anyhow::Error::from)?;
    Ok(linker)
}
