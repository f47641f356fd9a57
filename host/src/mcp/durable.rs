//! State beyond one process (docs/design.md, Contract 9): with a state
//! store configured, every call on a stateful handle (the argument tagged
//! `@header`: a session, a machine) runs under the handle's lease, on the
//! handle's latest state, and leaves its new state in the store, so any
//! replica can serve the handle's next call.
//!
//! Around a call on a plugin that exports `benchtop:host/durable-state`:
//!
//! 1. take the handle's lease (waiting while another call holds it, up to
//!    a lease's life, so a dead replica's lease runs out first);
//! 2. a retry of the call last answered on the handle (same
//!    `Idempotency-Key`) gets that answer again, and runs nothing;
//! 3. when the store's version is not the one this instance holds, restore
//!    the snapshot (or forget a copy the store no longer has);
//! 4. run the call on the instance holding that copy, renewing the lease
//!    meanwhile;
//! 5. save every handle the call marked (`benchtop:host/durable`) and the
//!    handle itself unless the tool is read-only, compressed; a state that
//!    cannot move is pinned to this replica instead; then let the lease go.
//!
//! Copies beyond the cache are forgotten after a call; a call on a copy
//! being forgotten waits for the forget before restoring it.
//!
//! Without a store, [`current`] is `None` and calls run as before.

use crate::runtime::context::{CallContext, HandleMark};
use crate::runtime::error::CallError;
use crate::runtime::plugin::Plugin;
use crate::wit::interface::ToolDef;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};
use state_store::{Acquired, Change, Key, Record, Store, StoreError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::Val;

/// How long a lease lives unless renewed: a replica that dies mid-call
/// holds its handles for at most this long.
pub const LEASE: Duration = Duration::from_secs(2);

/// How long a handle's record outlives its last call: the plugins' own
/// idle limit for a departed client (`plugin_kit::clients::IDLE_AFTER`).
pub const IDLE: Duration = Duration::from_secs(15 * 60);

/// Largest snapshot restored: a compressed snapshot claiming more is not
/// one of ours.
const MAX_SNAPSHOT: usize = 64 << 20;

/// How many handles' state each plugin keeps in memory on a replica by
/// default ([`Durable::with_cache`]). With a store a replica's copies are a
/// cache: the least recently used beyond this are dropped after a call
/// (their state is in the store; the next call on one restores it), so a
/// replica serving many clients stays under the plugins' own caps (8 x86
/// machines, 64 cp1600 sessions) and memory.
pub const CACHE: usize = 6;

/// `(plugin, owner, handle)`.
type HandleId = (String, String, String);

/// This replica's copy of a handle's state.
#[derive(Debug, Clone)]
struct Held {
    /// The plugin instance holding it: a new instance holds nothing.
    instance: u64,
    /// The store version it is.
    version: u64,
    /// Its state cannot move: never dropped from the cache.
    pinned: bool,
    /// Calls on it running here now: never dropped while any runs.
    running: u32,
    last_used: Instant,
    /// Being forgotten by a trim: cancelled once the forget has run. A
    /// call on the handle waits for it before restoring the handle, so
    /// the forget cannot land after the restore, whatever order the
    /// plugin's queue takes them in.
    leaving: Option<CancellationToken>,
}

/// What [`Durable::claim`] found.
enum Claim {
    /// A copy, now marked in use: its store version.
    Held(u64),
    /// A copy being forgotten: wait for the token, then claim again.
    Leaving(CancellationToken),
    /// No copy in the current instance.
    None,
}

/// The process's tie to the state store.
pub struct Durable {
    store: Store,
    replica: String,
    cache: usize,
    held: Mutex<HashMap<HandleId, Held>>,
    /// Calls on stateful handles running at once per plugin (the plugin
    /// runs them one at a time anyway): bounds the copies restored at once,
    /// so the cache stays under the plugin's own cap.
    permits: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
}

/// [`Durable::permits`] per plugin: one call running, one restoring.
const PERMITS: usize = 2;

static CURRENT: OnceLock<Arc<Durable>> = OnceLock::new();

/// Sets the process's state store (once, at `serve`).
pub fn install(durable: Durable) -> Arc<Durable> {
    CURRENT.get_or_init(|| Arc::new(durable)).clone()
}

/// The process's state store, when one is configured.
pub fn current() -> Option<&'static Arc<Durable>> {
    CURRENT.get()
}

/// A call that did not run, as the client reads it.
fn refused(code: &str, message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))])
}

/// The context of a hook call (save, restore, forget) made for `caller`:
/// never cancelled by the client, asking nobody; run only in `instance`
/// when one is named (the instance holding the copy the hook is about).
fn hook_context(caller: Arc<str>, instance: Option<u64>) -> CallContext {
    CallContext {
        caller,
        instance,
        ..CallContext::detached()
    }
}

/// A handle argument as the store keys it: a string, or a number's digits.
fn handle_of(def: &ToolDef, args: &Map<String, Value>) -> Option<String> {
    match args.get(def.handle_argument()?)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What a plugin's `save` gave for a handle.
enum Saved {
    /// The snapshot, compressed.
    Packed(Vec<u8>),
    /// The caller holds no such handle.
    Absent,
    /// Its state cannot move (the plugin said why).
    CannotMove,
}

/// The lease one call holds, renewed until dropped.
struct Lease {
    key: Key,
    token: String,
    renewer: tokio::task::JoinHandle<()>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// A call on a handle, from its claim until its state is committed: if
/// the call is dropped midway (its client went away), the claim ends
/// with it, and a copy the call may have changed without saving is marked
/// stale, so the next call here restores the store's state instead of
/// running on one the store never saw (a retry would apply twice).
struct InFlight<'a> {
    durable: &'a Durable,
    id: Option<HandleId>,
    /// The call may have changed the copy, not yet saved.
    unsaved: bool,
}

impl InFlight<'_> {
    /// Ends the claim: the call's outcome is in the store, or there was
    /// none to save.
    fn end(mut self) {
        if let Some(id) = self.id.take() {
            self.durable.release_claim(&id);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if self.unsaved
            && let Some(h) = self.durable.held().get_mut(&id)
        {
            tracing::debug!(replica = %self.durable.replica, handle = %id.2, "call dropped before its state was saved: copy marked stale");
            // No store version is 0: the next call restores over it, and a
            // trim may still forget it.
            h.version = 0;
        }
        self.durable.release_claim(&id);
    }
}

/// A copy [`Durable::trim`] is forgetting: once the forget has run (or
/// was dropped), the copy leaves `held` and the calls waiting on it go on.
struct Gone<'a> {
    durable: &'a Durable,
    id: &'a HandleId,
    leaving: CancellationToken,
}

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        let mut held = self.durable.held();
        if held
            .get(self.id)
            .is_some_and(|h| h.leaving.as_ref() == Some(&self.leaving))
        {
            held.remove(self.id);
        }
        self.leaving.cancel();
    }
}

impl Durable {
    /// A tie to the store at `url` (`redis://host:port`), as replica
    /// `replica` (a name unique among the replicas: the pod's, say).
    pub fn new(url: &str, replica: &str) -> Result<Self, StoreError> {
        Ok(Self {
            store: Store::new(url)?,
            replica: replica.to_owned(),
            cache: CACHE,
            held: Mutex::new(HashMap::new()),
            permits: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps at most `cache` handles' state in memory per plugin (at least 1).
    pub fn with_cache(mut self, cache: usize) -> Self {
        self.cache = cache.max(1);
        self
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<HandleId, Held>> {
        self.held.lock().expect("held lock")
    }

    /// Marks this replica's copy of `id` in use by the calling call, if
    /// the current `instance` holds one, and answers its version. Checked
    /// and marked under one lock: another call's [`Self::trim`] (on
    /// another thread) must not drop the copy between this call deciding
    /// it is up to date and running on it.
    fn claim(&self, id: &HandleId, instance: u64) -> Claim {
        let mut held = self.held();
        let Some(h) = held.get_mut(id).filter(|h| h.instance == instance) else {
            return Claim::None;
        };
        if let Some(leaving) = &h.leaving {
            return Claim::Leaving(leaving.clone());
        }
        h.running = h.running.saturating_add(1);
        h.last_used = Instant::now();
        Claim::Held(h.version)
    }

    /// Notes a call on `id` ending here: the end of its [`Self::claim`].
    fn release_claim(&self, id: &HandleId) {
        if let Some(h) = self.held().get_mut(id) {
            h.running = h.running.saturating_sub(1);
            h.last_used = Instant::now();
        }
    }

    async fn permit(&self, plugin: &str) -> tokio::sync::OwnedSemaphorePermit {
        let semaphore = self
            .permits
            .lock()
            .expect("permits lock")
            .entry(plugin.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(PERMITS)))
            .clone();
        semaphore.acquire_owned().await.expect("never closed")
    }

    /// Drops `plugin`'s least recently used copies beyond the cache (less
    /// `reserve`, room for copies about to be restored), none pinned or in
    /// use.
    async fn trim(&self, plugin: &Plugin, reserve: usize) {
        let instance = plugin.instance();
        while let Some((id, leaving)) = self.victim(&plugin.name, instance, reserve) {
            let (_, owner, handle) = &id;
            tracing::debug!(replica = %self.replica, handle, "dropped from the cache");
            // Ends the leaving even if this call is dropped mid-forget, so
            // no call waits on it forever.
            let _gone = Gone {
                durable: self,
                id: &id,
                leaving,
            };
            // Only in the instance that holds the copy: in one that
            // replaced it after a trap, the handle may be restored already.
            let hooks = hook_context(owner.as_str().into(), Some(instance));
            let _ = plugin
                .call_durable("forget", &[Val::String(handle.clone())], hooks)
                .await;
        }
    }

    /// Marks leaving the least recently used copy of `plugin` (whose
    /// current instance is `instance`) that `trim` must drop.
    fn victim(
        &self,
        plugin: &str,
        instance: u64,
        reserve: usize,
    ) -> Option<(HandleId, CancellationToken)> {
        let mut held = self.held();
        // Copies of an instance that trapped are gone already.
        held.retain(|(p, _, _), h| *p != plugin || h.instance == instance);
        let mut idle = 0;
        let mut busy = 0;
        let mut oldest: Option<(&HandleId, Instant)> = None;
        for (id, h) in held.iter().filter(|((p, _, _), _)| *p == plugin) {
            if h.leaving.is_some() {
                continue;
            }
            if h.pinned || h.running > 0 {
                busy += 1;
                continue;
            }
            idle += 1;
            if oldest.is_none_or(|(_, t)| h.last_used < t) {
                oldest = Some((id, h.last_used));
            }
        }
        if idle <= self.cache.saturating_sub(busy + reserve) {
            return None;
        }
        let id = oldest?.0.clone();
        let leaving = CancellationToken::new();
        held.get_mut(&id)?.leaving = Some(leaving.clone());
        Some((id, leaving))
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Whether the store answers (the readiness probe).
    pub async fn ready(&self) -> Result<(), StoreError> {
        self.store.ping().await
    }

    /// Takes `key`'s lease, waiting while another call holds it for at
    /// most a lease's life plus a little (a dead holder's lease runs out
    /// by then).
    async fn lease(self: &Arc<Self>, key: Key) -> Result<(Lease, Record), CallToolResult> {
        let token = format!("{}/{:016x}", self.replica, getrandom::u64().unwrap_or(0));
        let give_up = Instant::now() + LEASE * 2 + Duration::from_millis(500);
        let record = loop {
            match self.store.acquire(&key, &token, LEASE).await {
                Ok(Acquired::Granted(record)) => break record,
                Ok(Acquired::Busy { holder, left }) => {
                    if Instant::now() >= give_up {
                        let replica = holder.split('/').next().unwrap_or("?");
                        return Err(refused(
                            "STATE_BUSY",
                            format!(
                                "another call on replica {replica} is using this handle (its lease has {} ms left); retry when it has answered",
                                left.as_millis()
                            ),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(store_down(&e)),
            }
        };
        let renewer = {
            let this = self.clone();
            let (key, token) = (key.clone(), token.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(LEASE / 3).await;
                    match this.store.renew(&key, &token, LEASE).await {
                        Ok(true) => {}
                        // Another holds it now: the commit will say so.
                        Ok(false) => return,
                        // A broken connection is not a lost lease: the
                        // next renewal, on a new connection, may still
                        // come in time.
                        Err(e) => {
                            tracing::debug!(replica = %this.replica, "renewing a lease: {e}")
                        }
                    }
                }
            })
        };
        Ok((
            Lease {
                key,
                token,
                renewer,
            },
            record,
        ))
    }

    /// Runs tool `def` of `plugin` on `args` (`invoke` does the call
    /// itself) under the lease of the handle it names, as the module docs
    /// say. `Err` is the plugin's failure, for tasks to report as such.
    pub async fn around<F, Fut>(
        self: &Arc<Self>,
        plugin: &Plugin,
        def: &ToolDef,
        args: &Map<String, Value>,
        ctx: CallContext,
        invoke: F,
    ) -> Result<CallToolResult, CallError>
    where
        F: Fn(CallContext) -> Fut,
        Fut: std::future::Future<Output = Result<CallToolResult, CallError>>,
    {
        let owner = ctx.caller.to_string();
        let handle = handle_of(def, args);
        tracing::debug!(replica = %self.replica, ?handle, tool = %def.name, key = ?ctx.idempotency_key, "call");
        let mut held_lease = None;
        let mut up_to_date = None;
        let mut permit = None;
        if let Some(handle) = &handle {
            let key = Key::new(&plugin.name, &owner, handle);
            let (lease, record) = match self.lease(key).await {
                Ok(l) => l,
                Err(answer) => return Ok(answer),
            };
            permit = Some(self.permit(&plugin.name).await);
            if let Some(answer) = self.answered_before(&lease, &record, &ctx).await {
                self.release(&lease, None).await;
                return Ok(answer);
            }
            held_lease = Some(lease);
            up_to_date = Some(record);
        }
        if permit.is_none() {
            permit = Some(self.permit(&plugin.name).await);
        }
        // Claimed by `bring_up_to_date` when this replica holds a copy.
        let running = handle
            .as_ref()
            .map(|h| (plugin.name.clone(), owner.clone(), h.clone()));
        let mut in_flight = InFlight {
            durable: self,
            id: running.clone(),
            unsaved: false,
        };
        let marks = ctx.marks.clone();
        let hooks = hook_context(ctx.caller.clone(), None);
        let idempotency_key = ctx.idempotency_key.clone();
        let mut attempts = 0;
        let outcome = loop {
            let mut ctx = ctx.clone();
            if let (Some(handle), Some(record)) = (&handle, &up_to_date) {
                match self
                    .bring_up_to_date(plugin, &owner, handle, record, &ctx)
                    .await
                {
                    Ok(instance) => ctx.instance = instance,
                    Err(answer) => {
                        in_flight.end();
                        if let Some(lease) = &held_lease {
                            self.release(lease, None).await;
                        }
                        return Ok(answer);
                    }
                }
            }
            in_flight.unsaved = !def.annotations.read_only;
            match invoke(ctx).await {
                // A trap elsewhere replaced the instance holding the copy
                // after it was found current: nothing ran, and the copy is
                // gone with the instance; restore it and run again.
                Err(CallError::Replaced { .. }) if attempts < 3 => {
                    attempts += 1;
                    tracing::debug!(replica = %self.replica, ?handle, "instance replaced before the call: restoring again");
                    in_flight.unsaved = false;
                    if let Some(id) = &running {
                        self.release_claim(id);
                    }
                }
                outcome => break outcome,
            }
        };
        if let Ok(r) = &outcome
            && r.is_error == Some(true)
        {
            tracing::debug!(replica = %self.replica, ?handle, "the call failed: {:.160}", text_of(r));
        }
        let mut marked = marks.take();
        if let Some(handle) = &handle
            && !def.annotations.read_only
            && !marked.iter().any(|(h, _)| h == handle)
        {
            marked.push((handle.clone(), HandleMark::Changed));
        }
        let answer_text = match (&outcome, &idempotency_key) {
            (Ok(result), Some(_)) => serde_json::to_string(result).ok(),
            _ => None,
        };
        // The answer kept for a retry of this call, under its key.
        let answered = idempotency_key.as_deref().zip(answer_text.as_deref());
        let mut failures = Vec::new();
        for (h, mark) in marked {
            let own = handle.as_ref() == Some(&h);
            let lease = if own {
                held_lease.take()
            } else {
                match self.lease(Key::new(&plugin.name, &owner, &h)).await {
                    Ok((l, _)) => Some(l),
                    Err(e) => {
                        failures.push(text_of(&e));
                        None
                    }
                }
            };
            let Some(lease) = lease else { continue };
            let answered = answered.filter(|_| own);
            if let Err(e) = self
                .commit(plugin, &owner, &h, mark, &lease, answered, &hooks)
                .await
            {
                failures.push(e);
            }
        }
        if let Some(lease) = held_lease {
            // Nothing to save (a read): let the lease go, keeping the
            // answer for a retry.
            self.release(&lease, answered).await;
        }
        in_flight.unsaved = false;
        in_flight.end();
        self.trim(plugin, 0).await;
        drop(permit);
        let mut result = outcome?;
        if !failures.is_empty() {
            // The call ran and its answer stands; what the store missed is
            // said, since another replica would serve the older state.
            result.content.push(ContentBlock::text(format!(
                "STATE_NOT_SAVED: {}; this replica still holds the new state, but a call served elsewhere may see the older one",
                failures.join("; ")
            )));
        }
        Ok(result)
    }

    /// The answer kept for this very call, when it is a retry.
    async fn answered_before(
        &self,
        lease: &Lease,
        record: &Record,
        ctx: &CallContext,
    ) -> Option<CallToolResult> {
        let key = ctx.idempotency_key.as_deref()?;
        if record.answered.as_deref() != Some(key) {
            return None;
        }
        let text = self.store.answer(&lease.key).await.ok()??;
        tracing::info!(replica = %self.replica, "a retried call answered from the store, not run again");
        serde_json::from_str(&text).ok()
    }

    /// Lets `lease` go, writing nothing but the call's answer, if any.
    async fn release(&self, lease: &Lease, answered: Option<(&str, &str)>) {
        let _ = self
            .store
            .commit(&lease.key, &lease.token, Change::Keep, answered, IDLE)
            .await;
    }

    /// Makes the plugin's copy of `handle` the store's latest, marked in
    /// use by this call ([`Self::claim`]), or answers why the call cannot
    /// run here. `Some(instance)`: the copy lives in that plugin instance,
    /// and the call must run there; `None`: there is no copy (the handle
    /// ended), and the plugin answers as for an unknown one.
    async fn bring_up_to_date(
        &self,
        plugin: &Plugin,
        owner: &str,
        handle: &str,
        record: &Record,
        ctx: &CallContext,
    ) -> Result<Option<u64>, CallToolResult> {
        let id = (plugin.name.clone(), owner.to_owned(), handle.to_owned());
        // Claimed even when stale, so no trim forgets it while it is
        // restored below (a forget landing after the restore would lose it).
        let (instance, mine) = loop {
            let instance = plugin.instance();
            match self.claim(&id, instance) {
                Claim::Held(version) => break (instance, Some(version)),
                Claim::None => break (instance, None),
                // Restoring before the forget has run would let it undo
                // the restore.
                Claim::Leaving(forgotten) => forgotten.cancelled().await,
            }
        };
        if let Some(replica) = &record.pinned {
            if *replica == self.replica && mine.is_some() {
                return Ok(Some(instance));
            }
            return Err(refused(
                "STATE_PINNED",
                format!(
                    "`{handle}` lives on replica {replica}, as its state cannot move (it was saved with a file open, say); send the call with the same Mcp-Param header so the load balancer routes it there, or end and recreate it"
                ),
            ));
        }
        if record.gone || record.version == 0 {
            // Ended elsewhere, or expired from the store: a copy kept here
            // is stale, and the plugin must answer as for an unknown handle.
            if self.held().remove(&id).is_some() {
                tracing::debug!(replica = %self.replica, handle, "ended elsewhere: copy forgotten");
                let hooks = hook_context(ctx.caller.clone(), Some(instance));
                let _ = plugin
                    .call_durable("forget", &[Val::String(handle.into())], hooks)
                    .await;
            }
            return Ok(None);
        }
        if mine == Some(record.version) {
            tracing::debug!(replica = %self.replica, handle, version = record.version, "copy current");
            return Ok(Some(instance));
        }
        let key = Key::new(&plugin.name, owner, handle);
        let packed = match self.store.snapshot(&key).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                tracing::debug!(replica = %self.replica, handle, version = record.version, "no snapshot in the store");
                return Ok(None);
            }
            Err(e) => return Err(store_down(&e)),
        };
        let saved = unpack(&packed).map_err(|e| refused("STATE_RESTORE", e))?;
        self.trim(plugin, 1).await;
        let started = Instant::now();
        let (_kept, blob) = plugin
            .blobs()
            .put(saved)
            .map_err(|e| refused("STATE_RESTORE", e))?;
        // The instance read before the restore: if a trap replaces it
        // meanwhile, `held` names one that is gone, and the call (pinned
        // to it) is refused unrun and restores again (`around`).
        let instance = plugin.instance();
        let restored = plugin
            .call_durable(
                "restore",
                &[Val::String(handle.into()), Val::U64(blob)],
                hook_context(ctx.caller.clone(), None),
            )
            .await;
        match restored.as_deref() {
            Ok([Val::Result(Ok(_))]) => {
                tracing::debug!(replica = %self.replica, handle, version = record.version, "restored in {:?}", started.elapsed());
                self.held().insert(
                    id,
                    Held {
                        instance,
                        version: record.version,
                        pinned: false,
                        // This call's (the lease lets no other run on it).
                        running: 1,
                        last_used: Instant::now(),
                        leaving: None,
                    },
                );
                Ok(Some(instance))
            }
            Ok([Val::Result(Err(Some(e)))]) => Err(refused(
                "STATE_RESTORE",
                format!(
                    "the plugin could not restore `{handle}` from the store: {}",
                    text_val(e)
                ),
            )),
            Ok(other) => Err(refused(
                "STATE_RESTORE",
                format!("restore answered {other:?}"),
            )),
            Err(e) => Err(refused("STATE_RESTORE", e.to_string())),
        }
    }

    /// The plugin's snapshot of `handle`, compressed for the store.
    async fn save(
        &self,
        plugin: &Plugin,
        handle: &str,
        hooks: &CallContext,
    ) -> Result<Saved, String> {
        let saved = plugin
            .call_durable("save", &[Val::String(handle.into())], hooks.clone())
            .await
            .map_err(|e| format!("saving `{handle}` failed: {e}"))?;
        match saved.as_slice() {
            [Val::Result(Ok(Some(v)))] => match &**v {
                Val::Option(Some(blob)) => {
                    let Val::U64(blob) = **blob else {
                        return Err(format!("save answered {blob:?}, not a blob"));
                    };
                    let bytes = plugin
                        .blobs()
                        .take(blob)
                        .map_err(|e| format!("saving `{handle}`: {e}"))?;
                    Ok(Saved::Packed(lz4_flex::compress_prepend_size(&bytes)))
                }
                // The client holds no such handle (the call failed on an
                // unknown one): nothing to write.
                _ => Ok(Saved::Absent),
            },
            [Val::Result(Err(Some(why)))] => {
                tracing::info!(handle, "pinned to this replica: {}", text_val(why));
                Ok(Saved::CannotMove)
            }
            other => Err(format!("save answered {other:?}")),
        }
    }

    /// Writes what the call did to `handle` and lets its lease go.
    #[allow(clippy::too_many_arguments)]
    async fn commit(
        &self,
        plugin: &Plugin,
        owner: &str,
        handle: &str,
        mark: HandleMark,
        lease: &Lease,
        answered: Option<(&str, &str)>,
        hooks: &CallContext,
    ) -> Result<(), String> {
        let id = (plugin.name.clone(), owner.to_owned(), handle.to_owned());
        let saved = match mark {
            HandleMark::Closed => None,
            HandleMark::Changed => match self.save(plugin, handle, hooks).await {
                Ok(saved) => Some(saved),
                Err(e) => {
                    // Nothing written: the lease goes now, not at expiry.
                    self.release(lease, None).await;
                    return Err(e);
                }
            },
        };
        let change = match &saved {
            None => Change::Close,
            Some(Saved::Packed(bytes)) => Change::Save(bytes),
            Some(Saved::Absent) => Change::Keep,
            Some(Saved::CannotMove) => Change::Pin(&self.replica),
        };
        match self
            .store
            .commit(&lease.key, &lease.token, change, answered, IDLE)
            .await
        {
            Ok(Some(version)) => {
                tracing::debug!(replica = %self.replica, handle, version, ?mark, "committed");
                let mut held = self.held();
                match change {
                    Change::Close => {
                        held.remove(&id);
                    }
                    Change::Keep => {}
                    // A copy being forgotten (a handle this call marked
                    // but did not name) goes: its next call restores the
                    // version just written.
                    Change::Save(_) | Change::Pin(_)
                        if held.get(&id).is_some_and(|h| h.leaving.is_some()) => {}
                    Change::Save(_) | Change::Pin(_) => {
                        let running = held.get(&id).map_or(0, |h| h.running);
                        held.insert(
                            id,
                            Held {
                                instance: plugin.instance(),
                                version,
                                pinned: matches!(change, Change::Pin(_)),
                                running,
                                last_used: Instant::now(),
                                leaving: None,
                            },
                        );
                    }
                }
                Ok(())
            }
            Ok(None) => Err(format!(
                "the lease of `{handle}` ran out before its state was written"
            )),
            Err(e) => Err(format!("saving `{handle}`: {e}")),
        }
    }
}

fn store_down(e: &StoreError) -> CallToolResult {
    refused(
        "STATE_STORE",
        format!(
            "{e}; the call was not run (with a store configured, a call never runs on state the store may not hold); retry, and check the store"
        ),
    )
}

fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn text_val(v: &Val) -> String {
    match v {
        Val::String(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// The snapshot bytes of a stored record, checked before decompressing.
fn unpack(packed: &[u8]) -> Result<Vec<u8>, String> {
    let claimed = packed
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("the stored snapshot is truncated")?;
    if claimed > MAX_SNAPSHOT {
        return Err(format!(
            "the stored snapshot claims {claimed} bytes, more than any snapshot"
        ));
    }
    lz4_flex::decompress_size_prepended(packed)
        .map_err(|e| format!("the stored snapshot is damaged: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_pack_and_unpack_and_bombs_are_refused() {
        let raw: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let packed = lz4_flex::compress_prepend_size(&raw);
        assert!(packed.len() < raw.len() / 10, "{}", packed.len());
        assert_eq!(unpack(&packed).unwrap(), raw);
        let mut bomb = packed.clone();
        bomb[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            unpack(&bomb)
                .unwrap_err()
                .contains("more than any snapshot")
        );
        assert!(
            unpack(&packed[..packed.len() - 3])
                .unwrap_err()
                .contains("damaged")
        );
        assert!(unpack(&[1]).is_err());
    }

    fn copy(durable: &Durable, handle: &str, version: u64) -> HandleId {
        let id = ("p".to_owned(), "o".to_owned(), handle.to_owned());
        durable.held().insert(
            id.clone(),
            Held {
                instance: 1,
                version,
                pinned: false,
                running: 0,
                last_used: Instant::now(),
                leaving: None,
            },
        );
        id
    }

    /// A copy being forgotten is never claimed: the call waits until the
    /// forget has run and then finds no copy (so it restores one), and the
    /// copies in use or leaving are never picked again.
    #[test]
    fn a_copy_being_forgotten_is_waited_for_not_claimed() {
        let durable = Durable::new("redis://127.0.0.1:1", "r1")
            .unwrap()
            .with_cache(1);
        let old = copy(&durable, "old", 3);
        std::thread::sleep(Duration::from_millis(2));
        let new = copy(&durable, "new", 5);
        assert!(matches!(durable.claim(&new, 1), Claim::Held(5)));

        // Two copies, one in use: the idle one leaves.
        let (victim, leaving) = durable.victim("p", 1, 0).unwrap();
        assert_eq!(victim, old);
        let Claim::Leaving(wait) = durable.claim(&old, 1) else {
            panic!("a leaving copy was claimed");
        };
        assert!(durable.victim("p", 1, 0).is_none(), "picked twice");

        drop(Gone {
            durable: &durable,
            id: &victim,
            leaving,
        });
        assert!(wait.is_cancelled(), "the waiting call goes on");
        assert!(matches!(durable.claim(&old, 1), Claim::None));
        // Another instance holds none of them.
        assert!(matches!(durable.claim(&new, 2), Claim::None));
    }
}
