//! What a plugin's store holds and the `benchtop:host` imports it answers
//! (`log`, `progress`, `caller`, and the `errors` types), beside WASI p2 (docs/design.md, Contract 2).
//! The linker built here is the whole of what a component may import.

use crate::call::{CLI_CALLER, CallContext};
use anyhow::Result;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The `benchtop:host` WIT, as Rust (generated).
mod bindings {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        path: "../wit/host",
        world: "imports",
        // Waiting for the user must not block a runtime thread.
        imports: {
            "benchtop:host/elicit.ask": async,
            "benchtop:host/elicit.ask-keyed": async,
        },
    });
}

pub use bindings::benchtop::host::log::Level as LogLevel;

/// Receives progress reports of the current call: `(done, total, message)`.
pub type ProgressSink = Arc<dyn Fn(u64, u64, String) + Send + Sync>;

/// Receives a plugin's log messages: `(plugin, level, message)`.
pub type LogSink = Arc<dyn Fn(&str, LogLevel, &str) + Send + Sync>;

/// Receives a plugin's resource change notices: `(plugin, uri, caller)`,
/// the caller being the client whose call made the change, if any.
pub type ChangeSink = Arc<dyn Fn(&str, &str, Option<&str>) + Send + Sync>;

/// Where what a plugin tells the host, outside a call's result, goes.
#[derive(Clone)]
pub struct Sinks {
    /// Log messages (`benchtop:host/log`).
    pub log: LogSink,
    /// Resource change notices (`benchtop:host/resources`).
    pub changed: ChangeSink,
}

impl Sinks {
    /// Sinks that drop everything (`benchtop check`, tests).
    pub fn none() -> Self {
        Self {
            log: Arc::new(|_, _, _| {}),
            changed: Arc::new(|_, _, _| {}),
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
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl bindings::benchtop::host::progress::Host for PluginState {
    fn report(&mut self, done: u64, total: u64, message: String) -> bool {
        let Some(call) = &mut self.call else {
            return true;
        };
        if call.ctx.cancel.is_cancelled() {
            return false;
        }
        if let Some(sink) = &call.ctx.progress {
            // Progress must increase, and a chatty guest must not flood the client.
            let now = Instant::now();
            let due = match call.last_progress {
                None => true,
                Some((last, at)) => {
                    done > last
                        && (now.duration_since(at) >= Duration::from_millis(20) || done == total)
                }
            };
            if due {
                call.last_progress = Some((done, now));
                sink(done, total, message);
            }
        }
        true
    }

    fn cancelled(&mut self) -> bool {
        self.call
            .as_ref()
            .is_some_and(|c| c.ctx.cancel.is_cancelled())
    }
}

impl bindings::benchtop::host::caller::Host for PluginState {
    fn id(&mut self) -> String {
        self.call
            .as_ref()
            .map_or(CLI_CALLER, |c| &*c.ctx.caller)
            .to_owned()
    }
}

impl bindings::benchtop::host::resources::Host for PluginState {
    fn changed(&mut self, uri: String) {
        self.announce(&uri, None);
    }

    fn changed_for_caller(&mut self, uri: String) {
        // A tick's (or the command line's) call belongs to no client.
        let caller = self
            .call
            .as_ref()
            .map(|c| c.ctx.caller.clone())
            .filter(|c| &**c != CLI_CALLER);
        self.announce(&uri, caller.as_deref());
    }
}

impl PluginState {
    fn announce(&self, uri: &str, caller: Option<&str>) {
        // Bounded: a URI is at most a few KiB of text, and the host
        // coalesces notices per URI.
        if uri.len() <= 4096 {
            (self.sinks.changed)(&self.plugin, uri, caller);
        }
    }
}

/// The longest a question may wait for its user.
const MAX_QUESTION: Duration = Duration::from_secs(600);

impl bindings::benchtop::host::elicit::Host for PluginState {
    async fn ask(
        &mut self,
        message: String,
        schema: String,
    ) -> bindings::benchtop::host::elicit::Answer {
        self.question(None, message, schema).await
    }

    async fn ask_keyed(
        &mut self,
        key: String,
        message: String,
        schema: String,
    ) -> bindings::benchtop::host::elicit::Answer {
        if let Err(why) = crate::names::check_tool_name(&key) {
            tracing::warn!(plugin = %self.plugin, "elicit.ask-keyed: {}; not asking", why.replace("tool name", "question key"));
            return bindings::benchtop::host::elicit::Answer::Unsupported;
        }
        self.question(Some(key), message, schema).await
    }
}

impl PluginState {
    /// Asks the calling client's user, when there is one who can be asked.
    async fn question(
        &mut self,
        key: Option<String>,
        message: String,
        schema: String,
    ) -> bindings::benchtop::host::elicit::Answer {
        use crate::call::{Elicited, Question};
        use bindings::benchtop::host::elicit::Answer;
        let Some(call) = &mut self.call else {
            return Answer::Unsupported;
        };
        let Some(elicit) = call.ctx.elicit.clone() else {
            return Answer::Unsupported;
        };
        let schema = if schema.trim().is_empty() {
            serde_json::json!({"type": "object", "properties": {}})
        } else {
            match serde_json::from_str(&schema) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(plugin = %self.plugin, "elicit.ask: the schema is not JSON ({e}); not asking");
                    return Answer::Unsupported;
                }
            }
        };
        let started = Instant::now();
        let question = Question {
            key,
            message,
            schema,
        };
        let outcome = tokio::time::timeout(MAX_QUESTION, elicit(question)).await;
        // The user's thinking time is not the plugin's: move the deadline on.
        let waited = started.elapsed();
        call.deadline += waited;
        *call.watchdog.lock().unwrap_or_else(|p| p.into_inner()) += waited;
        match outcome {
            Ok(Elicited::Accepted(v)) => Answer::Accepted(v.to_string()),
            Ok(Elicited::Declined) => Answer::Declined,
            Ok(Elicited::Cancelled) | Err(_) => Answer::Cancelled,
            Ok(Elicited::Unsupported(why)) => {
                tracing::debug!(plugin = %self.plugin, "elicit.ask unsupported: {why}");
                Answer::Unsupported
            }
        }
    }
}

// `errors` holds only the `tool-error` type: nothing to answer.
impl bindings::benchtop::host::errors::Host for PluginState {}

impl bindings::benchtop::host::log::Host for PluginState {
    fn write(&mut self, level: LogLevel, message: String) {
        let plugin = self.plugin.clone();
        match level {
            LogLevel::Debug => tracing::debug!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Info => tracing::info!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Warning => tracing::warn!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Error => tracing::error!(target: "guest", plugin = %plugin, "{message}"),
        }
        (self.sinks.log)(&plugin, level, &message);
    }
}

/// Builds the linker every plugin is instantiated with: WASI p2 plus `benchtop:host`.
pub fn new_linker(engine: &Engine) -> Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    bindings::Imports::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)
        .map_err(anyhow::Error::from)?;
    Ok(linker)
}
