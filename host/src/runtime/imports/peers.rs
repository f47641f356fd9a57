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

/// The functions of one interface as a plugin imports or exports it, by
/// name: what a caller expects of the plugin that serves it.
pub type Shape = [(String, ComponentFunc)];

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
    /// caller's call context (its cancellation, its client). `expected` is
    /// the interface as the caller imports it: a plugin that serves it in
    /// another shape is refused before anything runs.
    fn call<'a>(
        &'a self,
        plugin: &'a str,
        interface: &'a str,
        func: &'a str,
        params: &'a [Val],
        expected: &'a Arc<Shape>,
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
        _expected: &'a Arc<Shape>,
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
        // Records, variants and the like travel as values.
        if let Some((func, _)) = instance.exports(engine).find(|(_, e)| {
            !matches!(
                e.ty,
                ComponentItem::ComponentFunc(_) | ComponentItem::Type(_)
            )
        }) {
            bail!(
                "`{name}` has `{func}`, which is neither a function nor a value type: an interface served by a plugin holds no resources"
            );
        }
        let interface: Arc<str> = name.into();
        let shape: Arc<Shape> = interface_shape(engine, component, name, Side::Import).into();
        let mut linked = linker.instance(name)?;
        for (func, _) in shape.iter() {
            let interface = interface.clone();
            let shape = shape.clone();
            let func_name: Arc<str> = func.as_str().into();
            linked.func_new_async(func, move |store, ty, params, results| {
                let interface = interface.clone();
                let func_name = func_name.clone();
                let shape = shape.clone();
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
                                .call(&plugin, &interface, &func_name, params, &shape, ctx)
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

/// Which side of a component an interface is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The component imports it (calls it).
    Import,
    /// The component exports it (serves it).
    Export,
}

/// `interface` as `component` imports or exports it: its functions, by
/// name (empty when it is not on that side of the component).
pub fn interface_shape(
    engine: &Engine,
    component: &Component,
    interface: &str,
    side: Side,
) -> Vec<(String, ComponentFunc)> {
    let ty = component.component_type();
    let item = match side {
        Side::Import => ty.get_import(engine, interface),
        Side::Export => ty.get_export(engine, interface),
    };
    let Some(ComponentItem::ComponentInstance(instance)) = item.map(|e| e.ty) else {
        return Vec::new();
    };
    instance
        .exports(engine)
        .filter_map(|(name, export)| match export.ty {
            ComponentItem::ComponentFunc(f) => Some((name.to_string(), f)),
            _ => None,
        })
        .collect()
}

/// How `served` falls short of `expected`: each function the caller
/// imports that the server lacks or types otherwise, said in WIT and
/// bounded in length. `None` when the server fits.
///
/// A peer's answer is handed to its caller as the server typed it, so a
/// server built against another version of the interface would make the
/// caller trap (and lose its state) on the first value it cannot take.
pub fn shape_differences(expected: &Shape, served: &Shape) -> Option<String> {
    let mut differences = Vec::new();
    for (name, want) in expected {
        match served.iter().find(|(n, _)| n == name) {
            None => differences.push(format!("it has no `{name}`")),
            Some((_, have)) => {
                if let Some(d) = func_difference(want, have) {
                    differences.push(format!("`{name}` {d}"));
                }
            }
        }
    }
    if differences.is_empty() {
        return None;
    }
    let shown = differences.len().min(3);
    let mut text = differences[..shown].join("; ");
    if differences.len() > shown {
        text.push_str(&format!("; and {} more", differences.len() - shown));
    }
    Some(text)
}

/// How `have` differs from `want`: the first parameter or result that does.
fn func_difference(want: &ComponentFunc, have: &ComponentFunc) -> Option<String> {
    if want.params().len() != have.params().len() {
        return Some(format!(
            "takes {} parameters where {} are expected",
            have.params().len(),
            want.params().len()
        ));
    }
    for ((name, w), (_, h)) in want.params().zip(have.params()) {
        if w != h {
            return Some(format!(
                "takes `{name}` as {} where {} is expected",
                shown(&h),
                shown(&w)
            ));
        }
    }
    let (wr, hr): (Vec<Type>, Vec<Type>) = (want.results().collect(), have.results().collect());
    if wr != hr {
        let show = |r: &[Type]| match r {
            [] => "nothing".to_string(),
            [one] => shown(one),
            more => format!(
                "({})",
                more.iter().map(shown).collect::<Vec<_>>().join(", ")
            ),
        };
        return Some(format!(
            "returns {} where {} is expected",
            show(&hr),
            show(&wr)
        ));
    }
    None
}

/// `ty` as WIT, cut to a length an error message can carry.
fn shown(ty: &Type) -> String {
    plugin_kit::text::head(&wit(ty, 0), 160)
}

/// `ty` written as WIT, nested types past the second level elided: enough
/// to see what differs.
fn wit(ty: &Type, depth: usize) -> String {
    let inner = |t: &Type| wit(t, depth + 1);
    let deep = depth >= 2;
    match ty {
        Type::Bool => "bool".into(),
        Type::S8 => "s8".into(),
        Type::U8 => "u8".into(),
        Type::S16 => "s16".into(),
        Type::U16 => "u16".into(),
        Type::S32 => "s32".into(),
        Type::U32 => "u32".into(),
        Type::S64 => "s64".into(),
        Type::U64 => "u64".into(),
        Type::Float32 => "f32".into(),
        Type::Float64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::List(l) => format!("list<{}>", inner(&l.ty())),
        Type::Option(o) => format!("option<{}>", inner(&o.ty())),
        Type::Result(r) => {
            let side = |t: Option<Type>| t.map_or("_".to_string(), |t| inner(&t));
            format!("result<{}, {}>", side(r.ok()), side(r.err()))
        }
        Type::Tuple(t) => format!(
            "tuple<{}>",
            t.types().map(|t| inner(&t)).collect::<Vec<_>>().join(", ")
        ),
        Type::Record(_) if deep => "record {…}".into(),
        Type::Variant(_) if deep => "variant {…}".into(),
        Type::Enum(_) if deep => "enum {…}".into(),
        Type::Flags(_) if deep => "flags {…}".into(),
        Type::Record(r) => format!(
            "record {{ {} }}",
            r.fields()
                .map(|f| format!("{}: {}", f.name, inner(&f.ty)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Type::Variant(v) => format!(
            "variant {{ {} }}",
            v.cases()
                .map(|c| match c.ty {
                    Some(t) => format!("{}({})", c.name, inner(&t)),
                    None => c.name.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Type::Enum(e) => format!("enum {{ {} }}", e.names().collect::<Vec<_>>().join(", ")),
        Type::Flags(f) => format!("flags {{ {} }}", f.names().collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}
