//! Running plugins: one long-lived instance per plugin, calls serialized per
//! plugin, limits enforced per call, and a trapped instance rebuilt
//! (docs/design.md, Contracts 2 and 3).

use crate::convert::{ArgumentError, FromJson};
use crate::plugin::PluginInterface;
use crate::sandbox::{GuestOutput, Policy};
use anyhow::{Context, Result, anyhow};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::{
    Component, ComponentExportIndex, Instance, InstancePre, Linker, ResourceTable, Val,
};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/host",
        world: "imports",
    });
}

pub use bindings::benchtop::host::log::Level as LogLevel;

/// How often the engine's epoch advances; deadlines and cancellation are
/// checked at this granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How long a cancelled call may take to return on its own before the host
/// interrupts it (and resets the plugin's state).
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Creates the engine every plugin shares, with epoch interruption on, and
/// starts the thread that advances its epoch.
pub fn new_engine() -> Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    // `BENCHTOP_PERFMAP=1` names the compiled plugin functions for `perf`
    // (it writes /tmp/perf-PID.map), so a plugin's hot loop can be profiled
    // as it runs inside the host. Use with --no-cache.
    if std::env::var_os("BENCHTOP_PERFMAP").is_some_and(|v| v != "0") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config)
        .map_err(anyhow::Error::from)
        .context("creating the WebAssembly engine")?;
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("benchtop-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .context("starting the epoch thread")?;
    Ok(engine)
}

/// Per-call limits of a plugin.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock deadline of one call.
    pub deadline: Duration,
    /// Linear-memory cap of one instance, in bytes.
    pub memory: usize,
    /// Interval of the `tick` hook, when the plugin exports it.
    pub tick: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(30),
            memory: 512 << 20,
            tick: None,
        }
    }
}

/// Receives progress reports of the current call: `(done, total, message)`.
pub type ProgressSink = Arc<dyn Fn(u64, u64, String) + Send + Sync>;

/// Receives a plugin's log messages: `(plugin, level, message)`.
pub type LogSink = Arc<dyn Fn(&str, LogLevel, &str) + Send + Sync>;

/// What the host knows about the call in progress.
#[derive(Clone)]
pub struct CallContext {
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// The opaque id of the calling client (`benchtop:host/caller.id`).
    pub caller: Arc<str>,
}

/// The caller id of calls no MCP client made: `benchtop call`, hooks.
pub const CLI_CALLER: &str = "cli";

impl CallContext {
    /// A context that is never cancelled, reports no progress, and whose
    /// caller is [`CLI_CALLER`].
    pub fn detached() -> Self {
        Self {
            cancel: CancellationToken::new(),
            progress: None,
            caller: CLI_CALLER.into(),
        }
    }
}

struct ActiveCall {
    ctx: CallContext,
    deadline: Instant,
    cancel_seen: Option<Instant>,
    last_progress: Option<(u64, Instant)>,
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
enum Interrupted {
    #[error("it ran past its deadline of {0:?}")]
    Deadline(Duration),
    #[error("the client cancelled the call and the plugin did not stop within {CANCEL_GRACE:?}")]
    Cancelled,
}

/// The data of a plugin's store.
pub struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    plugin: Arc<str>,
    call: Option<ActiveCall>,
    deadline_budget: Duration,
    on_log: LogSink,
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

impl bindings::benchtop::host::log::Host for PluginState {
    fn write(&mut self, level: LogLevel, message: String) {
        let plugin = self.plugin.clone();
        match level {
            LogLevel::Debug => tracing::debug!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Info => tracing::info!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Warning => tracing::warn!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Error => tracing::error!(target: "guest", plugin = %plugin, "{message}"),
        }
        (self.on_log)(&plugin, level, &message);
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

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The arguments do not fit the tool's schema.
    #[error(transparent)]
    Arguments(#[from] ArgumentError),
    /// The guest trapped or was interrupted; its instance was rebuilt.
    #[error(
        "plugin `{plugin}` failed: {reason}. Its instance was reset, so any state it held (sessions, buffers) is lost."
    )]
    Trapped {
        /// The plugin's name.
        plugin: String,
        /// What happened.
        reason: String,
    },
    /// The plugin could not be instantiated.
    #[error("plugin `{plugin}` could not start: {reason}")]
    Unavailable {
        /// The plugin's name.
        plugin: String,
        /// Why.
        reason: String,
    },
}

struct Live {
    store: Store<PluginState>,
    instance: Instance,
}

/// How to run one plugin: identity, sandbox and limits.
#[derive(Debug, Clone)]
pub struct PluginSpec {
    /// The plugin's name (its file stem or config name).
    pub name: String,
    /// Where the component comes from.
    pub source: PathBuf,
    /// Prefix added to its tool names (`prefix_tool`), if any.
    pub prefix: Option<String>,
    /// Sandbox.
    pub policy: Policy,
    /// Limits.
    pub limits: Limits,
}

/// A loaded plugin: its compiled component, what it offers, and its instance.
pub struct Plugin {
    /// The plugin's name (its file stem or config name).
    pub name: String,
    /// Where the component came from.
    pub source: PathBuf,
    /// Prefix of its tool names.
    pub prefix: Option<String>,
    /// Tools, settings and hooks.
    pub interface: PluginInterface,
    /// Sandbox.
    pub policy: Policy,
    /// Limits.
    pub limits: Limits,
    pre: InstancePre<PluginState>,
    funcs: Vec<ComponentExportIndex>,
    tick: Option<ComponentExportIndex>,
    live: tokio::sync::Mutex<Option<Live>>,
    output: GuestOutput,
    on_log: LogSink,
}

impl Plugin {
    /// Links a compiled component and instantiates it once, so a plugin that
    /// cannot start is refused at load time rather than at its first call.
    pub async fn load(
        spec: PluginSpec,
        component: &Component,
        interface: PluginInterface,
        linker: &Linker<PluginState>,
        on_log: LogSink,
    ) -> Result<Self> {
        let PluginSpec {
            name,
            source,
            prefix,
            policy,
            limits,
        } = spec;
        let pre = linker
            .instantiate_pre(component)
            .map_err(anyhow::Error::from)
            .context("linking the component: it imports something benchtop does not provide")?;
        let lookup = |iface: Option<&str>, func: &str| -> Result<ComponentExportIndex> {
            let parent = match iface {
                Some(i) => Some(
                    component
                        .get_export_index(None, i)
                        .with_context(|| format!("export `{i}` not found"))?,
                ),
                None => None,
            };
            component
                .get_export_index(parent.as_ref(), func)
                .with_context(|| format!("exported function `{func}` not found"))
        };
        let funcs = interface
            .tools
            .iter()
            .map(|t| lookup(t.interface.as_deref(), &t.func))
            .collect::<Result<Vec<_>>>()?;
        let tick = interface
            .tick_interface
            .as_deref()
            .map(|i| lookup(Some(i), "tick"))
            .transpose()?;
        let output = GuestOutput::new(&name);
        let plugin = Self {
            name,
            source,
            prefix,
            interface,
            policy,
            limits,
            pre,
            funcs,
            tick,
            live: tokio::sync::Mutex::new(None),
            output,
            on_log,
        };
        let live = plugin.instantiate().await?;
        *plugin.live.lock().await = Some(live);
        Ok(plugin)
    }

    async fn instantiate(&self) -> Result<Live> {
        let state = PluginState {
            wasi: self.policy.wasi_ctx(&self.name, self.output.clone())?,
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(self.limits.memory)
                .trap_on_grow_failure(true)
                .instances(64)
                .build(),
            plugin: self.name.as_str().into(),
            call: None,
            deadline_budget: self.limits.deadline,
            on_log: self.on_log.clone(),
        };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut cx| {
            let state = cx.data_mut();
            let budget = state.deadline_budget;
            if let Some(call) = &mut state.call {
                let now = Instant::now();
                if now >= call.deadline {
                    return Err(Interrupted::Deadline(budget).into());
                }
                if call.ctx.cancel.is_cancelled() {
                    let seen = *call.cancel_seen.get_or_insert(now);
                    if now.duration_since(seen) >= CANCEL_GRACE {
                        return Err(Interrupted::Cancelled.into());
                    }
                }
            }
            // Yield so other plugins' calls and the transport keep running.
            Ok(UpdateDeadline::Yield(1))
        });
        // Instantiation runs guest start code: bound it like a call.
        store.data_mut().call = Some(ActiveCall {
            ctx: CallContext::detached(),
            deadline: Instant::now() + self.limits.deadline,
            cancel_seen: None,
            last_progress: None,
        });
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(anyhow::Error::from)
            .with_context(|| format!("instantiating plugin `{}`", self.name))?;
        store.data_mut().call = None;
        Ok(Live { store, instance })
    }

    /// The MCP name of tool `index`, with the plugin's prefix.
    pub fn tool_name(&self, index: usize) -> String {
        let name = &self.interface.tools[index].name;
        match &self.prefix {
            Some(p) => format!("{p}_{name}"),
            None => name.clone(),
        }
    }

    /// Converts JSON arguments to the parameters of tool `index`.
    pub fn arguments(
        &self,
        index: usize,
        args: &Map<String, Value>,
    ) -> Result<Vec<Val>, ArgumentError> {
        let tool = &self.interface.tools[index];
        let conv = FromJson::new(&self.interface.resolve);
        if tool.flatten {
            let ty = tool.params[0].ty;
            return Ok(vec![conv.value(
                "arguments",
                &ty,
                &Value::Object(args.clone()),
            )?]);
        }
        let slots: Vec<(&str, &wit_parser::Type)> = tool
            .params
            .iter()
            .map(|p| (p.name.as_str(), &p.ty))
            .collect();
        Ok(conv
            .fields("arguments", &slots, args)?
            .into_iter()
            .map(|(_, v)| v)
            .collect())
    }

    /// Calls tool `index`. Calls to one plugin are serialized; a trap or an
    /// interruption rebuilds the instance before the error is returned.
    pub async fn call(
        &self,
        index: usize,
        args: &Map<String, Value>,
        ctx: CallContext,
    ) -> Result<Option<Val>, CallError> {
        let params = self.arguments(index, args)?;
        let has_result = self.interface.tools[index].result.is_some();
        self.invoke(
            self.funcs[index],
            &params,
            has_result,
            ctx,
            self.limits.deadline,
        )
        .await
    }

    /// Runs the `tick` hook if the plugin exports one and is idle.
    pub async fn tick(&self) -> Result<(), CallError> {
        let Some(index) = self.tick else {
            return Ok(());
        };
        if self.live.try_lock().is_err() {
            return Ok(()); // a call is running; tick next time
        }
        let budget = self.limits.deadline.min(Duration::from_secs(5));
        self.invoke(index, &[], false, CallContext::detached(), budget)
            .await
            .map(|_| ())
    }

    async fn invoke(
        &self,
        index: ComponentExportIndex,
        params: &[Val],
        has_result: bool,
        ctx: CallContext,
        budget: Duration,
    ) -> Result<Option<Val>, CallError> {
        let mut guard = self.live.lock().await;
        // Taken out for the call, and put back only if the call completes:
        // a trapped or abandoned store is never entered again.
        let mut live = match guard.take() {
            Some(live) => live,
            None => self
                .instantiate()
                .await
                .map_err(|e| CallError::Unavailable {
                    plugin: self.name.clone(),
                    reason: format!("{e:#}"),
                })?,
        };
        self.output.take_tail();
        let cancel = ctx.cancel.clone();
        live.store.data_mut().deadline_budget = budget;
        live.store.data_mut().call = Some(ActiveCall {
            ctx,
            deadline: Instant::now() + budget,
            cancel_seen: None,
            last_progress: None,
        });
        let func = live
            .instance
            .get_func(&mut live.store, index)
            .expect("export index resolved at load time");
        let mut results = vec![Val::Bool(false); usize::from(has_result)];
        // Epochs cannot interrupt a guest blocked inside a host call (a
        // socket read, a sleep), so the call is also raced against timers.
        let outcome = {
            let call = func.call_async(&mut live.store, params, &mut results);
            tokio::select! {
                r = call => r.map_err(|e| self.describe_trap(&e)),
                _ = tokio::time::sleep(budget + Duration::from_millis(500)) => {
                    Err(format!("it ran past its deadline of {budget:?} (blocked in a host call)"))
                }
                _ = async { cancel.cancelled().await; tokio::time::sleep(CANCEL_GRACE + Duration::from_millis(500)).await } => {
                    Err(Interrupted::Cancelled.to_string())
                }
            }
        };
        match outcome {
            Ok(()) => {
                live.store.data_mut().call = None;
                *guard = Some(live);
                Ok(results.pop())
            }
            Err(reason) => {
                drop(live);
                tracing::warn!(plugin = %self.name, "instance reset: {reason}");
                // Rebuild now, so the next call finds a fresh instance.
                match self.instantiate().await {
                    Ok(fresh) => *guard = Some(fresh),
                    Err(e) => {
                        tracing::error!(plugin = %self.name, "cannot rebuild the instance: {e:#}")
                    }
                }
                Err(CallError::Trapped {
                    plugin: self.name.clone(),
                    reason,
                })
            }
        }
    }

    fn describe_trap(&self, err: &wasmtime::Error) -> String {
        if let Some(i) = err.downcast_ref::<Interrupted>() {
            return i.to_string();
        }
        let mut reason = match err.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::UnreachableCodeReached) => {
                "it panicked (wasm `unreachable`)".to_owned()
            }
            Some(wasmtime::Trap::StackOverflow) => {
                "it overflowed its stack (unbounded recursion?)".to_owned()
            }
            Some(wasmtime::Trap::OutOfFuel) => "it ran out of fuel".to_owned(),
            Some(trap) => format!("it trapped: {trap}"),
            None => {
                // The root cause, without the wasm backtrace wasmtime attaches.
                let root = err.root_cause().to_string();
                if root.contains("growing memory") || root.contains("memory growth") {
                    format!(
                        "it exceeded its memory cap of {} MiB",
                        self.limits.memory >> 20
                    )
                } else {
                    root
                }
            }
        };
        let tail = self.output.take_tail();
        let tail = tail.trim();
        if !tail.is_empty() {
            let last: Vec<&str> = tail.lines().rev().take(3).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            reason.push_str(&format!(" — guest stderr: {}", last.join(" / ")));
        }
        reason
    }
}

/// Compiles a component, without the cache.
pub fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm).map_err(|e| anyhow!("compiling the component: {e:#}"))
}
