//! `benchtop:host/peers`, and the imports it routes: interfaces one plugin
//! serves another (docs/design.md, "Plugins serving plugins").
//!
//! A plugin that imports an interface neither WASI nor `benchtop:host`
//! gets each of its functions defined here as a forwarder: the call's
//! arguments, as dynamic values, go to the plugin the caller chose with
//! `peers.route`, whose export of the same interface answers. Nothing here
//! knows what the interface means, so any plugin can serve any other.

use super::{PluginState, bindings};
use crate::runtime::context::CallContext;
use anyhow::{Result, bail};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, Linker, Type, Val};

/// A call to a serving plugin, as the host runs it.
pub type PeerCall<'a> = Pin<Box<dyn Future<Output = Result<Vec<Val>, String>> + Send + 'a>>;

/// The plugins that serve interfaces, as a plugin's imports see them: the
/// host's live catalogue, behind a trait so this layer needs nothing from
/// the catalogue's.
pub trait PeerDirectory: Send + Sync {
    /// `(plugin, generation)` of each plugin serving `interface` now, in
    /// load order.
    fn providers(&self, interface: &str) -> Vec<(String, u64)>;

    /// Calls `func` of `interface` as `plugin` exports it, with the
    /// caller's call context (its cancellation, its client).
    fn call<'a>(
        &'a self,
        plugin: &'a str,
        interface: &'a str,
        func: &'a str,
        params: &'a [Val],
        ctx: CallContext,
    ) -> PeerCall<'a>;
}

/// A directory with no plugins in it (`benchtop check`, tests).
pub struct NoPeers;

impl PeerDirectory for NoPeers {
    fn providers(&self, _interface: &str) -> Vec<(String, u64)> {
        Vec::new()
    }

    fn call<'a>(
        &'a self,
        plugin: &'a str,
        interface: &'a str,
        _func: &'a str,
        _params: &'a [Val],
        _ctx: CallContext,
    ) -> PeerCall<'a> {
        Box::pin(async move { Err(format!("plugin `{plugin}` does not serve {interface}")) })
    }
}

impl bindings::benchtop::host::peers::Host for PluginState {
    fn providers(&mut self, name: String) -> Vec<bindings::benchtop::host::peers::Provider> {
        self.sinks
            .peers
            .providers(&name)
            .into_iter()
            .filter(|(plugin, _)| **plugin != *self.plugin)
            .map(
                |(plugin, generation)| bindings::benchtop::host::peers::Provider {
                    plugin,
                    generation,
                },
            )
            .collect()
    }

    fn route(&mut self, name: String, plugin: String) -> Result<(), String> {
        if *plugin == *self.plugin {
            return Err(format!(
                "a plugin cannot route {name} to itself (`{plugin}`): its calls would wait on its own"
            ));
        }
        if !self
            .sinks
            .peers
            .providers(&name)
            .iter()
            .any(|(p, _)| *p == plugin)
        {
            return Err(format!(
                "no loaded plugin `{plugin}` serves {name}; peers.providers lists the ones that do"
            ));
        }
        self.routes.insert(name, plugin);
        Ok(())
    }
}

/// Defines, in `linker`, every function of each interface in `uses` that
/// `component` imports, as a forwarder to the plugin the caller routed
/// that interface to.
pub fn link_peer_imports(
    linker: &mut Linker<PluginState>,
    engine: &Engine,
    component: &Component,
    uses: &[String],
) -> Result<()> {
    for (name, import) in component.component_type().imports(engine) {
        if !uses.iter().any(|u| u == name) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = import.ty else {
            bail!("`{name}` is imported as a function, not an interface another plugin can serve");
        };
        let interface: Arc<str> = name.into();
        let mut linked = linker.instance(name)?;
        for (func, export) in instance.exports(engine) {
            match export.ty {
                ComponentItem::ComponentFunc(_) => {}
                // Records, variants and the like travel as values.
                ComponentItem::Type(_) => continue,
                _ => bail!(
                    "`{name}` has `{func}`, which is neither a function nor a value type: an interface served by a plugin holds no resources"
                ),
            }
            let interface = interface.clone();
            let func_name: Arc<str> = func.into();
            linked.func_new_async(func, move |store, ty, params, results| {
                let interface = interface.clone();
                let func_name = func_name.clone();
                Box::new(async move {
                    let state = store.data();
                    let routed = state.routes.get(&*interface).cloned();
                    let ctx = state
                        .call
                        .as_ref()
                        .map_or_else(CallContext::detached, |c| c.ctx.clone());
                    let peers = state.sinks.peers.clone();
                    let outcome = match routed {
                        None => Err(format!(
                            "no plugin was chosen to serve {interface}: call peers.route first"
                        )),
                        Some(plugin) => {
                            let started = std::time::Instant::now();
                            let outcome = peers
                                .call(&plugin, &interface, &func_name, params, ctx)
                                .await
                                .map_err(|e| format!("{plugin}: {e}"));
                            // What the seam costs, per call, for whoever tunes it.
                            tracing::debug!(
                                provider = %plugin,
                                "{interface}#{func_name} took {:?}",
                                started.elapsed()
                            );
                            outcome
                        }
                    };
                    match outcome {
                        Ok(values) if values.len() == results.len() => {
                            // Moved, not cloned: an answer can be a whole
                            // definition's tables.
                            for (slot, value) in results.iter_mut().zip(values) {
                                *slot = value;
                            }
                            Ok(())
                        }
                        Ok(values) => wasmtime::bail!(
                            "{interface}#{func_name} answered {} values where {} were expected",
                            values.len(),
                            results.len()
                        ),
                        Err(message) => fail_as_value(&ty, results, message),
                    }
                })
            })?;
        }
    }
    Ok(())
}

/// A failed peer call reaches the caller as the `err` of its
/// `result<_, string>`; a function without one traps with the message.
fn fail_as_value(ty: &ComponentFunc, results: &mut [Val], message: String) -> wasmtime::Result<()> {
    let carries_error = matches!(
        (ty.results().next(), results.len()),
        (Some(Type::Result(r)), 1) if matches!(r.err(), Some(Type::String))
    );
    if !carries_error {
        wasmtime::bail!("{message}");
    }
    results[0] = Val::Result(Err(Some(Box::new(Val::String(message)))));
    Ok(())
}
