//! A loaded plugin: one long-lived instance, calls serialized per plugin,
//! limits enforced per call, and a trapped instance rebuilt
//! (docs/design.md, Contracts 2 and 3).

use crate::runtime::context::CallContext;
use crate::runtime::error::{CANCEL_GRACE, CallError, Interrupted, describe_trap};
use crate::runtime::imports::{
    ActiveCall, PluginState, Shape, Side, Sinks, interface_shape, link_peer_imports,
    shape_differences,
};
use crate::runtime::sandbox::{GuestOutput, Policy};
use crate::wit::interface::PluginInterface;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::types::ComponentFunc;
use wasmtime::component::{
    Component, ComponentExportIndex, Instance, InstancePre, Linker, ResourceTable, Val,
};
use wasmtime::{Store, StoreLimitsBuilder, UpdateDeadline};

/// Returns once the time is half a second past `deadline`, which may move
/// on while waiting (a question to the user pauses a call's deadline).
async fn past(deadline: &std::sync::Mutex<Instant>) {
    loop {
        let until =
            *deadline.lock().unwrap_or_else(|p| p.into_inner()) + Duration::from_millis(500);
        if Instant::now() >= until {
            return;
        }
        tokio::time::sleep_until(until.into()).await;
    }
}

/// One of a plugin's exported functions, by role and index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// Tool `index` of [`PluginInterface::tools`].
    Tool(usize),
    /// Resource `index` of [`PluginInterface::resources`].
    Resource(usize),
    /// Prompt `index` of [`PluginInterface::prompts`].
    Prompt(usize),
    /// The completion hook.
    Completion,
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

struct Live {
    store: Store<PluginState>,
    instance: Instance,
    /// Which instance this is ([`Plugin::instance`] when it was made).
    generation: u64,
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
    /// Names its code: the first eight bytes of the component's SHA-256.
    /// Served interfaces' callers key what they cache from its answers by
    /// it, in memory and on disk (a plugin's cache directory outlives the
    /// process): the same code gives the same answers.
    pub code: u64,
}

/// A compiled component linked to the host's imports, with the export
/// indices of what the plugin offers.
struct Linked {
    pre: InstancePre<PluginState>,
    funcs: Vec<ComponentExportIndex>,
    resource_funcs: Vec<ComponentExportIndex>,
    prompt_funcs: Vec<ComponentExportIndex>,
    completion_func: Option<ComponentExportIndex>,
    tick: Option<ComponentExportIndex>,
}

impl Linked {
    fn new(
        component: &Component,
        interface: &PluginInterface,
        linker: &Linker<PluginState>,
    ) -> Result<Self> {
        // Imports other plugins serve are forwarded by functions defined
        // for this component alone.
        let with_peers;
        let linker = if interface.uses.is_empty() {
            linker
        } else {
            let mut own = linker.clone();
            link_peer_imports(&mut own, linker.engine(), component, &interface.uses)?;
            with_peers = own;
            &with_peers
        };
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
        let lookup_all = |defs: &[crate::wit::interface::ToolDef]| {
            defs.iter()
                .map(|t| lookup(t.interface.as_deref(), &t.func))
                .collect::<Result<Vec<_>>>()
        };
        Ok(Self {
            pre,
            funcs: lookup_all(&interface.tools)?,
            resource_funcs: lookup_all(&interface.resources)?,
            prompt_funcs: lookup_all(&interface.prompts)?,
            completion_func: interface
                .completion
                .as_ref()
                .map(|c| lookup(c.interface.as_deref(), &c.func))
                .transpose()?,
            tick: interface
                .tick_interface
                .as_deref()
                .map(|i| lookup(Some(i), "tick"))
                .transpose()?,
        })
    }

    /// `interface` on `side` of the component (see [`interface_shape`]).
    fn shape(&self, interface: &str, side: Side) -> Vec<(String, ComponentFunc)> {
        interface_shape(self.pre.engine(), self.pre.component(), interface, side)
    }
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
    /// Names the code loaded ([`PluginSpec::code`]): a hot swap to other
    /// code changes it; what callers of its served interfaces key their
    /// caches by, in this process and in later ones.
    pub generation: u64,
    /// The linked component, once compiled (at load, or in the background
    /// for [`Plugin::load_deferred`]); the error says why it cannot run.
    linked: std::sync::OnceLock<Result<Linked, String>>,
    /// Woken when `linked` is set.
    linked_set: tokio::sync::Notify,
    /// How many instances were made: a new one (after a trap) holds none
    /// of the state the old one did, which the state store must know.
    instances: std::sync::atomic::AtomicU64,
    live: tokio::sync::Mutex<Option<Live>>,
    output: GuestOutput,
    sinks: Sinks,
    /// Callers' shapes of the interfaces it serves found to fit its own
    /// ([`Plugin::check_shape`]).
    shapes_fit: std::sync::Mutex<Vec<Arc<Shape>>>,
}

/// Runs `work` on a thread of its own at the lowest CPU priority and
/// answers its result (an error if it panicked).
///
/// Mapping a warm start's cached code (reading, checking and mapping it:
/// milliseconds a plugin) starts while the server is still answering its
/// client's first requests. On a machine with few cores it would take the
/// cores those answers need; at the lowest priority it runs on what they
/// leave. The priority is the thread's own (Linux sets it per thread), and
/// the thread ends with the work, so no pooled thread keeps it. Not for
/// compiling: threads the compiler starts would inherit the priority, and
/// a call waiting for its plugin would wait behind every other call.
fn beside_serving<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> impl std::future::Future<Output = Result<T, tokio::sync::oneshot::error::RecvError>> {
    let (done, answer) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("benchtop-prepare".into())
        .spawn(move || {
            #[cfg(target_os = "linux")]
            // SAFETY: setpriority only reads its arguments; who = 0 is the
            // calling thread. A refusal leaves the priority as it was.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, 0, 19);
            }
            let _ = done.send(work());
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start a thread to prepare a plugin: {e}");
    }
    answer
}

impl Plugin {
    /// Links a compiled component and instantiates it once, so a plugin that
    /// cannot start is refused at load time rather than at its first call.
    pub async fn load(
        spec: PluginSpec,
        component: &Component,
        interface: PluginInterface,
        linker: &Linker<PluginState>,
        sinks: Sinks,
    ) -> Result<Self> {
        let linked = Linked::new(component, &interface, linker)?;
        let plugin = Self::unlinked(spec, interface, sinks);
        let live = plugin.instantiate(&linked).await?;
        *plugin.live.lock().await = Some(live);
        let _ = plugin.linked.set(Ok(linked));
        Ok(plugin)
    }

    /// A plugin whose tools are offered at once while `compile` runs in
    /// the background (then it is linked and instantiated): a call waits
    /// until it is ready, and answers why it cannot run if that failed.
    /// For code known to link: the bundled first-party plugins on a start
    /// with an empty compile cache, and any plugin this host has run
    /// before from its cache. `cached` says `compile` should only map
    /// cached code, which then waits for the server's first answers
    /// (see `beside_serving`). `running` is called once it is instantiated.
    pub fn load_deferred(
        spec: PluginSpec,
        interface: PluginInterface,
        linker: std::sync::Arc<Linker<PluginState>>,
        sinks: Sinks,
        cached: bool,
        compile: impl FnOnce() -> Result<Component> + Send + 'static,
        running: impl FnOnce() + Send + 'static,
    ) -> std::sync::Arc<Self> {
        let plugin = std::sync::Arc::new(Self::unlinked(spec, interface, sinks));
        let ready = plugin.clone();
        // One at a time: the engine already compiles a component's
        // functions on every core, and one by one each plugin is ready as
        // early as it can be rather than all of them at the end.
        static COMPILING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
        tokio::spawn(async move {
            let turn = COMPILING.acquire().await;
            // Cached code is only mapped: that waits for the first answers.
            let compiled = if cached {
                beside_serving(compile)
                    .await
                    .map_err(|_| "its thread panicked".to_owned())
            } else {
                tokio::task::spawn_blocking(compile)
                    .await
                    .map_err(|e| e.to_string())
            };
            drop(turn);
            let linked = match compiled {
                Ok(compiled) => compiled
                    .and_then(|c| Linked::new(&c, &ready.interface, &linker))
                    .map_err(|e| format!("{e:#}")),
                Err(e) => Err(format!("compiling it stopped: {e}")),
            };
            match &linked {
                // Instantiated now, so the first call finds it running.
                Ok(linked) => match ready.instantiate(linked).await {
                    Ok(l) => {
                        *ready.live.lock().await = Some(l);
                        running();
                    }
                    Err(e) => tracing::warn!(plugin = %ready.name, "{e:#}"),
                },
                Err(reason) => tracing::error!(plugin = %ready.name, "cannot load: {reason}"),
            }
            let _ = ready.linked.set(linked);
            ready.linked_set.notify_waiters();
        });
        plugin
    }

    fn unlinked(spec: PluginSpec, interface: PluginInterface, sinks: Sinks) -> Self {
        let PluginSpec {
            name,
            source,
            prefix,
            policy,
            limits,
            code,
        } = spec;
        let output = GuestOutput::new(&name);
        Self {
            name,
            source,
            prefix,
            interface,
            policy,
            limits,
            generation: code,
            linked: std::sync::OnceLock::new(),
            linked_set: tokio::sync::Notify::new(),
            instances: std::sync::atomic::AtomicU64::new(0),
            live: tokio::sync::Mutex::new(None),
            shapes_fit: Default::default(),
            output,
            sinks,
        }
    }

    /// Waits until the plugin can run calls (its background compile, if
    /// any, has ended), or answers why it cannot.
    pub async fn ready(&self) -> Result<(), CallError> {
        self.linked().await.map(|_| ())
    }

    /// The linked component, waiting for a background compile.
    async fn linked(&self) -> Result<&Linked, CallError> {
        loop {
            // Created before the check: a notification in between is kept.
            let set = self.linked_set.notified();
            if let Some(linked) = self.linked.get() {
                return linked.as_ref().map_err(|reason| CallError::Unavailable {
                    plugin: self.name.clone(),
                    reason: reason.clone(),
                });
            }
            set.await;
        }
    }

    async fn instantiate(&self, linked: &Linked) -> Result<Live> {
        let generation = self
            .instances
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
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
            blobs: self.sinks.blobs.owner(),
            sinks: self.sinks.clone(),
            routes: Default::default(),
        };
        let mut store = Store::new(linked.pre.engine(), state);
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
            // tokio's own yield, as wasmtime advises for tokio: it defers
            // the wake until the worker has polled for I/O, where the bare
            // `Yield` wakes the task at once into the worker's LIFO slot,
            // ahead of requests waiting to be read.
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        });
        // Instantiation runs guest start code: bound it like a call.
        store.data_mut().call = Some(ActiveCall::new(
            CallContext::detached(),
            self.limits.deadline,
        ));
        let instance = linked
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(anyhow::Error::from)
            .with_context(|| format!("instantiating plugin `{}`", self.name))?;
        store.data_mut().call = None;
        Ok(Live {
            store,
            instance,
            generation,
        })
    }

    /// The MCP name of tool `index`, with the plugin's prefix.
    pub fn tool_name(&self, index: usize) -> String {
        let name = &self.interface.tools[index].name;
        match &self.prefix {
            Some(p) => format!("{p}_{name}"),
            None => name.clone(),
        }
    }

    /// Calls tool `index` with its parameters (see [`crate::mcp::call`] for
    /// where they come from). Calls to one plugin are serialized; a trap or
    /// an interruption rebuilds the instance before the error is returned.
    pub async fn call(
        &self,
        index: usize,
        params: &[Val],
        ctx: CallContext,
    ) -> Result<Option<Val>, CallError> {
        let has_result = self.interface.tools[index].result.is_some();
        self.invoke(
            |l| Ok(l.funcs[index]),
            params,
            Some(has_result),
            ctx,
            self.limits.deadline,
        )
        .await
        .map(|mut r| r.pop())
    }

    /// Calls one of the plugin's other exports (a resource, a prompt, the
    /// completion hook), with the same serialization, limits and recovery
    /// as a tool call.
    pub async fn call_export(
        &self,
        export: Export,
        params: &[Val],
        ctx: CallContext,
    ) -> Result<Option<Val>, CallError> {
        let Some(def) = self.def(export) else {
            return Ok(None);
        };
        let index = move |l: &Linked| {
            Ok(match export {
                Export::Tool(i) => l.funcs[i],
                Export::Resource(i) => l.resource_funcs[i],
                Export::Prompt(i) => l.prompt_funcs[i],
                Export::Completion => l.completion_func.expect("the interface declares it"),
            })
        };
        self.invoke(
            index,
            params,
            Some(def.result.is_some()),
            ctx,
            self.limits.deadline,
        )
        .await
        .map(|mut r| r.pop())
    }

    /// Calls `func` of `interface`, an interface this plugin serves to
    /// other plugins ([`PluginInterface::provides`]), with the same
    /// serialization, limits and recovery as a tool call.
    pub async fn call_provided(
        &self,
        interface: &str,
        func: &str,
        params: &[Val],
        expected: &Arc<Shape>,
        ctx: CallContext,
    ) -> Result<Vec<Val>, CallError> {
        let unavailable = |reason: String| CallError::Unavailable {
            plugin: self.name.clone(),
            reason,
        };
        if !self.interface.provides.iter().any(|p| p == interface) {
            return Err(unavailable(format!("it does not serve {interface}")));
        }
        self.check_shape(interface, expected).await?;
        self.call_in(interface, func, params, ctx).await
    }

    /// How this plugin's import of `interface` differs from `provider`'s
    /// export of it: `None` when it fits, or when either cannot run.
    pub async fn shape_against(&self, interface: &str, provider: &Plugin) -> Option<String> {
        let (mine, theirs) = (self.linked().await.ok()?, provider.linked().await.ok()?);
        shape_differences(
            &mine.shape(interface, Side::Import),
            &theirs.shape(interface, Side::Export),
        )
    }

    /// Refuses a caller that imports `interface` in another shape than
    /// this plugin exports it: its answers would not fit the caller, whose
    /// instance would trap on them. A shape found to fit is remembered
    /// (a few, each kept alive so that its address names it).
    async fn check_shape(&self, interface: &str, expected: &Arc<Shape>) -> Result<(), CallError> {
        const REMEMBERED: usize = 8;
        let fitting = |fits: &Vec<Arc<Shape>>| fits.iter().any(|s| Arc::ptr_eq(s, expected));
        if fitting(&self.shapes_fit.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(());
        }
        let served = self.linked().await?.shape(interface, Side::Export);
        if let Some(differences) = shape_differences(expected, &served) {
            return Err(CallError::Mismatch {
                plugin: self.name.clone(),
                interface: interface.to_string(),
                differences,
            });
        }
        let mut fits = self.shapes_fit.lock().unwrap_or_else(|e| e.into_inner());
        if !fitting(&fits) {
            if fits.len() == REMEMBERED {
                fits.remove(0);
            }
            fits.push(expected.clone());
        }
        Ok(())
    }

    /// Calls `func` of the plugin's `benchtop:host/durable-state` export
    /// (save, restore, forget a handle's state), with the same
    /// serialization, limits and recovery as a tool call.
    pub async fn call_durable(
        &self,
        func: &str,
        params: &[Val],
        ctx: CallContext,
    ) -> Result<Vec<Val>, CallError> {
        let Some(interface) = self.interface.durable_interface.as_deref() else {
            return Err(CallError::Unavailable {
                plugin: self.name.clone(),
                reason: "it keeps no state that can move (no durable-state export)".into(),
            });
        };
        self.call_in(interface, func, params, ctx).await
    }

    /// Calls `func` of the exported interface `interface`, looked up by
    /// name (served interfaces and hooks are not analysed at load).
    async fn call_in(
        &self,
        interface: &str,
        func: &str,
        params: &[Val],
        ctx: CallContext,
    ) -> Result<Vec<Val>, CallError> {
        let index = |l: &Linked| {
            let component = l.pre.component();
            component
                .get_export_index(None, interface)
                .and_then(|parent| component.get_export_index(Some(&parent), func))
                .ok_or_else(|| CallError::Unavailable {
                    plugin: self.name.clone(),
                    reason: format!("{interface} has no function `{func}`"),
                })
        };
        self.invoke(index, params, None, ctx, self.limits.deadline)
            .await
    }

    /// The host-wide blob store (`benchtop:host/blobs`).
    pub fn blobs(&self) -> &std::sync::Arc<crate::runtime::imports::BlobStore> {
        &self.sinks.blobs
    }

    /// Which instance serves calls now: it changes when a trap or a
    /// reload replaced the instance, and with it every state it held.
    pub fn instance(&self) -> u64 {
        self.instances.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The definition behind an export.
    pub fn def(&self, export: Export) -> Option<&crate::wit::interface::ToolDef> {
        match export {
            Export::Tool(i) => self.interface.tools.get(i),
            Export::Resource(i) => self.interface.resources.get(i),
            Export::Prompt(i) => self.interface.prompts.get(i),
            Export::Completion => self.interface.completion.as_ref(),
        }
    }

    /// The MCP name of prompt `index`, with the plugin's prefix.
    pub fn prompt_name(&self, index: usize) -> String {
        let name = &self.interface.prompts[index].name;
        match &self.prefix {
            Some(p) => format!("{p}_{name}"),
            None => name.clone(),
        }
    }

    /// Runs the `tick` hook if the plugin exports one and is idle.
    pub async fn tick(&self) -> Result<(), CallError> {
        // Not yet compiled (or failed): nothing to tick.
        let Some(Ok(Linked {
            tick: Some(index), ..
        })) = self.linked.get()
        else {
            return Ok(());
        };
        let index = *index;
        if self.live.try_lock().is_err() {
            return Ok(()); // a call is running; tick next time
        }
        let budget = self.limits.deadline.min(Duration::from_secs(5));
        self.invoke(
            |_| Ok(index),
            &[],
            Some(false),
            CallContext::detached(),
            budget,
        )
        .await
        .map(|_| ())
    }

    /// Runs the export `index` picks. `has_result` says whether it returns a value;
    /// none asks its type (served interfaces are not analysed at load).
    async fn invoke(
        &self,
        index: impl FnOnce(&Linked) -> Result<ComponentExportIndex, CallError>,
        params: &[Val],
        has_result: Option<bool>,
        ctx: CallContext,
        budget: Duration,
    ) -> Result<Vec<Val>, CallError> {
        let linked = self.linked().await?;
        let index = index(linked)?;
        let mut guard = self.live.lock().await;
        // Taken out for the call, and put back only if the call completes:
        // a trapped or abandoned store is never entered again.
        let mut live = match guard.take() {
            Some(live) => live,
            None => self
                .instantiate(linked)
                .await
                .map_err(|e| CallError::Unavailable {
                    plugin: self.name.clone(),
                    reason: format!("{e:#}"),
                })?,
        };
        if let Some(wanted) = ctx.instance
            && wanted != live.generation
        {
            *guard = Some(live);
            return Err(CallError::Replaced {
                plugin: self.name.clone(),
            });
        }
        self.output.take_tail();
        let cancel = ctx.cancel.clone();
        live.store.data_mut().deadline_budget = budget;
        let active = ActiveCall::new(ctx, budget);
        let watchdog = active.watchdog.clone();
        live.store.data_mut().call = Some(active);
        let func = live
            .instance
            .get_func(&mut live.store, index)
            .expect("export index resolved at load time");
        let result_count = match has_result {
            Some(has) => usize::from(has),
            None => func.ty(&live.store).results().len(),
        };
        let mut results = vec![Val::Bool(false); result_count];
        // Epochs cannot interrupt a guest blocked inside a host call (a
        // socket read, a sleep), so the call is also raced against timers.
        let outcome = {
            let call = func.call_async(&mut live.store, params, &mut results);
            // Biased, the call first: one that returns on its first poll
            // (most do) never arms the deadline's timer.
            tokio::select! {
                biased;
                r = call => r.map_err(|e| describe_trap(&e, self.limits.memory, &self.output)),
                _ = past(&watchdog) => {
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
                Ok(results)
            }
            Err(reason) => {
                drop(live);
                tracing::warn!(plugin = %self.name, "instance reset: {reason}");
                // Rebuild now, so the next call finds a fresh instance.
                match self.instantiate(linked).await {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::imports::new_linker;

    #[tokio::test]
    async fn a_plugin_whose_background_compile_fails_says_why_at_every_call() {
        let engine = crate::runtime::engine::new_engine().unwrap();
        let linker = new_linker(&engine).unwrap();
        let served = "acme:family/family@0.1.0";
        let interface = PluginInterface {
            resolve: Default::default(),
            tools: Vec::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
            completion: None,
            settings: Vec::new(),
            tick_interface: None,
            durable_interface: None,
            provides: vec![served.into()],
            provider_interface: None,
            uses: Vec::new(),
            warnings: Vec::new(),
        };
        let spec = PluginSpec {
            name: "broken".into(),
            source: "/plugins/broken.wasm".into(),
            prefix: None,
            policy: Policy::default(),
            limits: Limits::default(),
            code: 1,
        };
        let plugin = Plugin::load_deferred(
            spec,
            interface,
            std::sync::Arc::new(linker),
            Sinks::none(),
            true,
            || anyhow::bail!("the compiler ran out of memory"),
            || {},
        );
        let expected: Arc<Shape> = Vec::new().into();
        // The first call waits for the compile; later ones find its result.
        for _ in 0..2 {
            let err = plugin
                .call_provided(served, "name", &[], &expected, CallContext::detached())
                .await
                .unwrap_err();
            assert!(
                matches!(&err, CallError::Unavailable { plugin, reason }
                    if plugin == "broken" && reason.contains("ran out of memory")),
                "{err}"
            );
        }
        // Nothing to tick, and no panic for lack of an instance.
        assert!(plugin.tick().await.is_ok());
    }
}
