//! The MCP face of the host: rmcp's `ServerHandler` over the live catalogue.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by
// SEP-2577 for the stateless 2026-07-28 revision, but clients up to
// 2025-11-25, which are most clients in the field, still use it.
#![allow(deprecated)]

use crate::mcp::call::call_tool;
use crate::mcp::rounds::{Askable, Rounds};
use crate::runtime::context::{CallContext, ProgressSink};
use crate::runtime::host::LogEvent;
use crate::runtime::imports::LogLevel;
use crate::runtime::registry::Registry;
use crate::runtime::registry::ResourceUpdate;
use crate::wit::names::clip;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// One MCP session's handler. Cheap to clone: state is shared.
#[derive(Clone)]
pub struct Server {
    registry: Arc<Registry>,
    logs: broadcast::Sender<LogEvent>,
    /// Minimum level of plugin logs forwarded to this session's client.
    log_level: Arc<AtomicU8>,
    /// The caller id of an HTTP request that names neither an MCP session
    /// nor an owner: unique to this handler, which rmcp builds per request
    /// when a client uses no session, so such calls share nothing.
    anonymous: Arc<str>,
    /// URIs this session subscribed to (`resources/subscribe`), each with
    /// the caller id of the client that did.
    subscriptions: Arc<Mutex<HashMap<String, Arc<str>>>>,
}

/// Most URIs one session may subscribe to: each costs a set entry and a
/// check per notice.
const MAX_SUBSCRIPTIONS: usize = 256;

/// Notices of one URI reach a client at most this often; changes in
/// between are merged into the next notice.
const UPDATE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// How often a session's notification task looks whether its session
/// has closed.
const CLOSED_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Longest URI a session may subscribe to: far above any resource URI the
/// plugins make, and small enough that [`MAX_SUBSCRIPTIONS`] of them stay
/// a few hundred KiB per session.
const MAX_SUBSCRIBED_URI: usize = 2048;

/// The caller id of the one stdio client.
pub const STDIO_CALLER: &str = "stdio";

/// The header a client without an MCP session may send to have its calls
/// recognised as one client (any secret string it keeps for itself).
pub const OWNER_HEADER: &str = "benchtop-owner";

/// A short, stable, opaque id for a client secret: `PREFIX-` and 16 hex
/// digits of its SHA-256, so a plugin learns nothing it could replay.
fn hashed_id(prefix: &str, secret: &[u8]) -> Arc<str> {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(secret);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}").into()
}

/// Who makes a request: the one stdio client; over HTTP, the MCP session
/// (rmcp has checked that it exists), else the owner token, else nobody
/// else (`anonymous`).
fn caller_of(extensions: &Extensions, anonymous: &Arc<str>) -> Arc<str> {
    let Some(parts) = extensions.get::<axum::http::request::Parts>() else {
        return STDIO_CALLER.into();
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| v.as_bytes())
            .filter(|v| !v.is_empty())
    };
    if let Some(session) = header("mcp-session-id") {
        hashed_id("s", session)
    } else if let Some(owner) = header(OWNER_HEADER) {
        hashed_id("o", owner)
    } else {
        anonymous.clone()
    }
}

/// How a plugin asks this client's user (`benchtop:host/elicit`): an MCP
/// `elicitation/create` form request, when the client declared it can.
fn elicitor(peer: &rmcp::Peer<RoleServer>) -> Option<crate::runtime::context::Elicitor> {
    use crate::runtime::context::Elicited;
    let asks = peer
        .peer_info()
        .is_some_and(|i| i.capabilities.elicitation.is_some());
    if !asks {
        return None;
    }
    let peer = peer.clone();
    Some(Arc::new(
        move |crate::runtime::context::Question {
                  message, schema, ..
              }| {
            let peer = peer.clone();
            Box::pin(async move {
                let params = match crate::mcp::rounds::form_request(message, schema) {
                    Ok(params) => params,
                    Err(unsupported) => return unsupported,
                };
                match peer.create_elicitation(params).await {
                    Ok(r) => crate::mcp::rounds::answer_of(r),
                    Err(e) => Elicited::Unsupported(e.to_string()),
                }
            })
        },
    ))
}

/// How a plugin asks this client's model or roots (`benchtop:host/sampling`,
/// `benchtop:host/roots`) during the call: MCP `sampling/createMessage` and
/// `roots/list` requests, each when the client declared it can answer.
#[allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still offered.
fn requester(peer: &rmcp::Peer<RoleServer>) -> crate::runtime::context::Requester {
    use crate::runtime::context::{ClientReply, ClientRequest};
    let peer = peer.clone();
    Arc::new(move |_key: String, request: ClientRequest| {
        let peer = peer.clone();
        Box::pin(async move {
            let declared = peer.peer_info().map(|i| i.capabilities.clone());
            if let Err(unsupported) = Askable::of(declared.as_ref()).allows(&request) {
                return unsupported;
            }
            match request {
                ClientRequest::Sample {
                    messages,
                    system_prompt,
                    max_tokens,
                } => {
                    let params =
                        crate::mcp::rounds::sampling_params(messages, system_prompt, max_tokens);
                    match peer.create_message(params).await {
                        Ok(r) => crate::mcp::rounds::sampled(r),
                        Err(e) => ClientReply::Refused(e.to_string()),
                    }
                }
                ClientRequest::Roots => match peer.list_roots().await {
                    Ok(r) => crate::mcp::rounds::rooted(r),
                    Err(e) => ClientReply::Unsupported(e.to_string()),
                },
            }
        })
    })
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

impl Server {
    /// A handler over `registry`, forwarding plugin logs from `logs`.
    pub fn new(registry: Arc<Registry>, logs: broadcast::Sender<LogEvent>) -> Self {
        Self {
            registry,
            logs,
            log_level: Arc::new(AtomicU8::new(rank(LoggingLevel::Info))),
            anonymous: {
                static NEXT: AtomicU64 = AtomicU64::new(1);
                // The prefix is part of `benchtop:host/caller.id`'s contract.
                format!("anon-{}", NEXT.fetch_add(1, Ordering::Relaxed)).into()
            },
            subscriptions: Arc::default(),
        }
    }
}

impl Server {
    /// The context of a request that reports no progress: who asks, the
    /// request's cancellation, and how to ask the user (in `rounds` for a
    /// 2026-07-28 client).
    fn context(
        &self,
        context: &RequestContext<RoleServer>,
        rounds: Option<&Arc<Rounds>>,
    ) -> CallContext {
        CallContext {
            cancel: context.ct.clone(),
            progress: None,
            caller: caller_of(&context.extensions, &self.anonymous),
            elicit: match rounds {
                Some(rounds) => Some(rounds.elicitor()),
                None => elicitor(&context.peer),
            },
            request: Some(match rounds {
                Some(rounds) => rounds.requester(),
                None => requester(&context.peer),
            }),
            marks: Default::default(),
            idempotency_key: idempotency_key_of(&context.extensions),
            instance: None,
        }
    }
}

/// The header naming one attempt of a call, so a retry of it (after a
/// replica died mid-answer) is answered from the state store instead of
/// run twice (draft-ietf-httpapi-idempotency-key-header).
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// The request's `Idempotency-Key`, when it has a usable one (1 to 255
/// visible ASCII characters).
fn idempotency_key_of(extensions: &Extensions) -> Option<Arc<str>> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    let value = parts.headers.get(IDEMPOTENCY_HEADER)?.to_str().ok()?;
    let value = value.trim().trim_matches('"');
    (!value.is_empty() && value.len() < 256 && value.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| value.into())
}

/// The questions and answers of a `tools/call`, `prompts/get` or
/// `resources/read` from a client that speaks 2026-07-28 and can be asked:
/// its questions go back as an `input_required` result and the request runs
/// again with the answers (`rounds.rs`). `None` for other clients.
fn rounds_of(
    context: &RequestContext<RoleServer>,
    anonymous: &Arc<str>,
    (method, name, arguments): (&str, &str, &serde_json::Value),
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<Option<Arc<Rounds>>, ErrorData> {
    let modern = context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    let askable = Askable::of(context.client_capabilities().as_ref());
    if !(modern && askable.any()) {
        return Ok(None);
    }
    // An anonymous caller's id is new for every request, so its state is
    // bound to the call alone: it has no identity to bind to.
    let caller = caller_of(&context.extensions, anonymous);
    let who = if caller == *anonymous {
        "anonymous"
    } else {
        &*caller
    };
    let call = crate::mcp::rounds::call_binding(who, method, name, arguments);
    Rounds::new(state, responses, &call)
        .map(|r| Some(Arc::new(r.for_client(askable))))
        .map_err(|why| ErrorData::invalid_params(why, None))
}

/// Refuses a 2026-07-28 request for a function that `@requires` client
/// capabilities the request's `_meta` did not declare: SEP-2575 has the
/// server say so (-32021, naming them) rather than run and fail midway.
/// Earlier clients declared theirs once; the plugin finds out when it asks.
fn undeclared(context: &RequestContext<RoleServer>, requires: &[String]) -> Result<(), ErrorData> {
    let modern = context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    if requires.is_empty() || !modern {
        return Ok(());
    }
    let declared = context.client_capabilities().unwrap_or_default();
    let mut missing = rmcp::model::ClientCapabilities::default();
    let mut any = false;
    for capability in requires {
        match capability.as_str() {
            "sampling" if declared.sampling.is_none() => {
                missing.sampling = Some(Default::default());
                any = true;
            }
            "roots" if declared.roots.is_none() => {
                missing.roots = Some(Default::default());
                any = true;
            }
            "elicitation" if declared.elicitation.is_none() => {
                missing.elicitation = Some(Default::default());
                any = true;
            }
            _ => {}
        }
    }
    if any {
        return Err(ErrorData::missing_required_client_capability(missing));
    }
    Ok(())
}

/// Where one client's notices go: a session's peer (`notifications/…`
/// until it closes), or a 2026-07-28 `subscriptions/listen` stream's sink.
/// Each send says whether the client is still there.
trait Notices {
    /// `tools`, `prompts` and `resources` `list_changed`: a swap may change
    /// any of the three lists.
    async fn lists_changed(&self) -> bool;
    /// `notifications/resources/updated` for `uri`.
    async fn resource_updated(&self, uri: &str) -> bool;
    /// A plugin's log message.
    async fn log(&self, param: LoggingMessageNotificationParam) -> bool;
}

impl Notices for rmcp::Peer<RoleServer> {
    async fn lists_changed(&self) -> bool {
        self.notify_tool_list_changed().await.is_ok()
            && self.notify_prompt_list_changed().await.is_ok()
            && self.notify_resource_list_changed().await.is_ok()
    }
    async fn resource_updated(&self, uri: &str) -> bool {
        let param = ResourceUpdatedNotificationParam::new(uri.to_owned());
        self.notify_resource_updated(param).await.is_ok()
    }
    async fn log(&self, param: LoggingMessageNotificationParam) -> bool {
        self.notify_logging_message(param).await.is_ok()
    }
}

impl Notices for &rmcp::service::SubscriptionSink {
    async fn lists_changed(&self) -> bool {
        self.notify_tool_list_changed().await.is_ok()
            && self.notify_prompt_list_changed().await.is_ok()
            && self.notify_resource_list_changed().await.is_ok()
    }
    async fn resource_updated(&self, uri: &str) -> bool {
        self.notify_resource_updated(uri.to_owned()).await.is_ok()
    }
    async fn log(&self, _: LoggingMessageNotificationParam) -> bool {
        true
    }
}

/// What one client hears of: catalogue swaps, resource updates and, for a
/// session, plugin logs at or above its level.
struct FanOut {
    changes: broadcast::Receiver<()>,
    updates: broadcast::Receiver<ResourceUpdate>,
    logs: Option<(broadcast::Receiver<LogEvent>, Arc<AtomicU8>)>,
}

impl FanOut {
    /// Sends to `to` until it is gone or `stop` completes: list changes at
    /// once, the updates `wanted` picks at most every [`UPDATE_INTERVAL`]
    /// per URI (changes in between are merged), logs as they come.
    async fn run(
        mut self,
        to: impl Notices,
        wanted: impl Fn(&ResourceUpdate) -> bool,
        stop: impl std::future::Future<Output = ()>,
    ) {
        use broadcast::error::RecvError;
        let mut pending: HashSet<Arc<str>> = HashSet::new();
        let mut flush = tokio::time::interval(UPDATE_INTERVAL);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(stop);
        loop {
            let log = async {
                match &mut self.logs {
                    Some((logs, _)) => logs.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut stop => return,
                change = self.changes.recv() => match change {
                    Ok(()) | Err(RecvError::Lagged(_)) => {
                        if !to.lists_changed().await { return; }
                    }
                    Err(RecvError::Closed) => return,
                },
                event = log => match event {
                    Ok(event) => {
                        let lvl = mcp_level(event.level);
                        let floor = self.logs.as_ref().map_or(0, |(_, l)| l.load(Ordering::Relaxed));
                        if rank(lvl) >= floor {
                            let param = LoggingMessageNotificationParam::new(lvl, serde_json::Value::String(event.message))
                                .with_logger(event.plugin);
                            if !to.log(param).await { return; }
                        }
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
                update = self.updates.recv() => match update {
                    Ok(update) if wanted(&update) => { pending.insert(update.uri); }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
                _ = flush.tick(), if !pending.is_empty() => {
                    for uri in pending.drain() {
                        if !to.resource_updated(&uri).await { return; }
                    }
                }
            }
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            // Skills are served as `skill://` resources (`skills.rs`).
            .enable_skills()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_completions()
            .enable_logging()
            .build();
        // Views (MCP Apps): tools may name a `ui://` resource to render.
        let mut ui = serde_json::Map::new();
        ui.insert(
            "mimeTypes".into(),
            serde_json::json!([crate::wit::interface::VIEW_MIME]),
        );
        let extensions = capabilities.extensions.get_or_insert_with(Default::default);
        extensions.insert("io.modelcontextprotocol/ui".to_owned(), ui);
        // Tools tagged @task run as tasks (`tasks.rs`).
        extensions.insert(TASKS_EXTENSION_ID.to_owned(), serde_json::Map::new());
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("benchtop", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "benchtop serves tools from WebAssembly plugins. Call tools/list to see them; \
             the list can change while serving (notifications/tools/list_changed).",
            )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Catalogue changes, plugin logs and updates of subscribed
        // resources go to this session until it closes.
        let peer = context.peer;
        let subscriptions = self.subscriptions.clone();
        let fan_out = FanOut {
            changes: self.registry.subscribe(),
            updates: self.registry.resource_updates(),
            logs: Some((self.logs.subscribe(), self.log_level.clone())),
        };
        // A session closed by DELETE or for idling sends nothing here, so
        // without a look of its own this task (and the session's
        // subscriptions it holds) would outlive it forever.
        let closed = {
            let peer = peer.clone();
            async move {
                let mut look = tokio::time::interval(CLOSED_CHECK);
                while !peer.is_transport_closed() {
                    look.tick().await;
                }
            }
        };
        let wanted = move |update: &ResourceUpdate| {
            subscriptions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&*update.uri)
                .is_some_and(|caller| update.reaches(caller))
        };
        tokio::spawn(fan_out.run(peer, wanted, closed));
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri.len() > MAX_SUBSCRIBED_URI {
            return Err(ErrorData::invalid_params(
                format!(
                    "cannot subscribe to {}: the URI is {} bytes, over the {MAX_SUBSCRIBED_URI} a subscription may name",
                    clip(&request.uri),
                    request.uri.len()
                ),
                None,
            ));
        }
        if self.registry.snapshot().resource(&request.uri).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "cannot subscribe to {}: no such resource (resources/list and resources/templates/list show what there is)",
                    clip(&request.uri)
                ),
                None,
            ));
        }
        let mut subs = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        if subs.len() >= MAX_SUBSCRIPTIONS && !subs.contains_key(&request.uri) {
            return Err(ErrorData::invalid_params(
                format!(
                    "this session holds {MAX_SUBSCRIPTIONS} subscriptions, the most it may; unsubscribe from one first"
                ),
                None,
            ));
        }
        let caller = caller_of(&context.extensions, &self.anonymous);
        subs.insert(request.uri, caller);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed();
        if let Some(uris) = &requested.resource_subscriptions {
            accepted = accepted.resource_subscriptions(
                uris.iter()
                    .filter(|uri| uri.len() <= MAX_SUBSCRIBED_URI)
                    .take(MAX_SUBSCRIPTIONS)
                    .cloned(),
            );
        }
        Some(accepted.build())
    }

    /// The 2026-07-28 form of list_changed and resource updates: one
    /// `subscriptions/listen` stream (its sink passes only what the client
    /// asked for and was accepted).
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let caller = caller_of(&context.request_context().extensions, &self.anonymous);
        let wanted: HashSet<String> = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let fan_out = FanOut {
            changes: self.registry.subscribe(),
            updates: self.registry.resource_updates(),
            // 2026-07-28 moved the log level into each request's `_meta`.
            logs: None,
        };
        fan_out
            .run(
                context.sink(),
                |update: &ResourceUpdate| wanted.contains(&*update.uri) && update.reaches(&caller),
                context.cancelled(),
            )
            .await;
        Ok(())
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let catalog = self.registry.snapshot();
        let ctx = self.context(&context, None);
        Ok(ListSkillsResult::with_all_items(
            crate::mcp::skills::list(&catalog, &ctx).await,
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let catalog = self.registry.snapshot();
        let ctx = self.context(&context, None);
        crate::mcp::skills::get(&catalog, &request.uri, &ctx)
            .await
            .map(GetSkillResult::new)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = caller_of(&context.extensions, &self.anonymous);
        crate::mcp::tasks::tasks()
            .get(&request.task_id, &caller)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = caller_of(&context.extensions, &self.anonymous);
        crate::mcp::tasks::tasks().update(&request.task_id, &caller, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = caller_of(&context.extensions, &self.anonymous);
        crate::mcp::tasks::tasks().cancel(&request.task_id, &caller)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.store(rank(request.level), Ordering::Relaxed);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.registry.snapshot().tools().to_vec(),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.registry.snapshot().prompts().to_vec(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let rounds = rounds_of(
            &context,
            &self.anonymous,
            (
                "prompts/get",
                &request.name,
                &serde_json::to_value(&args).unwrap_or_default(),
            ),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
        )?;
        let catalog = self.registry.snapshot();
        let ctx = self.context(&context, rounds.as_ref());
        let prompt = crate::mcp::primitives::get_prompt(&catalog, &request.name, args, ctx).await;
        // Unanswered questions come first: the prompt's own answer to a
        // question not yet put to the user means nothing.
        if let Some(questions) = rounds.and_then(|r| r.input_required()) {
            return Ok(questions.into());
        }
        prompt.map(GetPromptResponse::Complete)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let catalog = self.registry.snapshot();
        let ctx = self.context(&context, None);
        Ok(ListResourcesResult::with_all_items(
            crate::mcp::skills::listed(&catalog, &ctx).await,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.registry.snapshot().resource_templates().to_vec(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let rounds = rounds_of(
            &context,
            &self.anonymous,
            ("resources/read", &request.uri, &serde_json::Value::Null),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
        )?;
        let catalog = self.registry.snapshot();
        let ctx = self.context(&context, rounds.as_ref());
        let contents = crate::mcp::primitives::read_resource(&catalog, &request.uri, ctx).await;
        if let Some(questions) = rounds.and_then(|r| r.input_required()) {
            return Ok(questions.into());
        }
        contents.map(ReadResourceResponse::Complete)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let catalog = self.registry.snapshot();
        crate::mcp::primitives::complete(
            &catalog,
            &request.r#ref,
            &request.argument.name,
            &request.argument.value,
            self.context(&context, None),
        )
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry
            .snapshot()
            .tools()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// Requests rmcp could not type: a known method with params that do
    /// not fit (rmcp would answer a bare "Method not found: tools/call"),
    /// or a method that does not exist.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(malformed_request(&request.method, request.params.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Progress goes through one ordered queue that is drained before the
        // response, so notifications arrive in order and never after it.
        let mut forwarder = None;
        let progress: Option<ProgressSink> = context.meta.get_progress_token().map(|token| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
            let peer = context.peer.clone();
            forwarder = Some(tokio::spawn(async move {
                while let Some(param) = rx.recv().await {
                    let _ = peer.notify_progress(param).await;
                }
            }));
            let sink: ProgressSink = Arc::new(move |done, total, message: String| {
                let mut param = ProgressNotificationParam::new(token.clone(), done as f64);
                if total > 0 {
                    param = param.with_total(total as f64);
                }
                if !message.is_empty() {
                    param = param.with_message(message);
                }
                let _ = tx.send(param);
            });
            sink
        });
        let rounds = rounds_of(
            &context,
            &self.anonymous,
            (
                "tools/call",
                &request.name,
                &request
                    .arguments
                    .as_ref()
                    .map_or(serde_json::Value::Null, |a| {
                        serde_json::Value::Object(a.clone())
                    }),
            ),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
        )?;
        let ctx = CallContext {
            progress,
            ..self.context(&context, rounds.as_ref())
        };
        let args = request.arguments.unwrap_or_default();
        // The snapshot is taken now: a hot swap during the call does not
        // change the plugin it runs in.
        let catalog = self.registry.snapshot();
        // A task call that finishes within its request (`@task required
        // asks-first`, nothing to ask) still answers as a task.
        let mut answer_as_task = None;
        if let Some((plugin, index)) = catalog.lookup(&request.name) {
            let def = &plugin.interface.tools[index];
            undeclared(&context, &def.requires)?;
            if let Some(mode) = def.task {
                let declared = context.client_capabilities();
                let caller = caller_of(&context.extensions, &self.anonymous);
                let owner = (caller.clone(), caller == self.anonymous);
                let takes_tasks = declared.as_ref().is_some_and(|c| c.supports_tasks());
                // Asked first: a round without answers runs in the request
                // (its questions go back as `input_required`); the round
                // that brings them becomes the task.
                let in_rounds =
                    mode.asks_first && rounds.as_ref().is_some_and(|r| !r.has_answers());
                if takes_tasks && !in_rounds {
                    let askable = Askable::of(declared.as_ref());
                    let answered = rounds.clone().filter(|_| mode.asks_first);
                    let task = crate::mcp::tasks::tasks().start(
                        (plugin, index, args),
                        owner,
                        askable,
                        answered,
                    )?;
                    return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
                }
                if mode.support == crate::wit::interface::TaskSupport::Required {
                    if !takes_tasks {
                        return Err(ErrorData::missing_required_client_capability(
                            ClientCapabilities::builder().enable_tasks().build(),
                        ));
                    }
                    answer_as_task = Some(owner);
                }
            }
        }
        let result = call_tool(&catalog, &request.name, &args, ctx).await;
        drop(catalog);
        // The call has dropped its context, and with it the queue's sender.
        if let Some(forwarder) = forwarder {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), forwarder).await;
        }
        match result {
            Ok(result) => Ok(match rounds.and_then(|r| r.input_required()) {
                Some(questions) => questions.into(),
                None => match answer_as_task {
                    Some(owner) => CallToolResponse::Task(CreateTaskResult::new(
                        crate::mcp::tasks::tasks().finished(result, owner)?,
                    )),
                    None => result.into(),
                },
            }),
            Err(unknown) => Err(ErrorData::invalid_params(unknown.to_string(), None)),
        }
    }
}

/// Methods a client may send that this server knows (rmcp types them all;
/// one that reaches [`ServerHandler::on_custom_request`] had bad params).
const KNOWN_METHODS: [&str; 14] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "logging/setLevel",
    "completion/complete",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
];

/// The error for a request whose method is unknown or whose params do not
/// fit its method, saying what to fix.
fn malformed_request(method: &str, params: Option<&serde_json::Value>) -> ErrorData {
    use serde_json::Value;
    if !KNOWN_METHODS.contains(&method) {
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: `{}`", clip(method)),
            None,
        );
    }
    let problem = match (method, params) {
        ("tools/call", None | Some(Value::Null)) => {
            "`params` must be an object with the tool's `name` and its `arguments`, but got nothing".to_owned()
        }
        ("tools/call", Some(Value::Object(p))) => match (p.get("name"), p.get("arguments")) {
            (None | Some(Value::Null), _) => {
                "`params.name` must be present: the name of the tool to call (see tools/list)".to_owned()
            }
            (Some(name), _) if !name.is_string() => format!(
                "`params.name` must be a string, the name of the tool to call, but got {}",
                crate::wit::convert::describe(name)
            ),
            (_, Some(args)) if !args.is_object() && !args.is_null() => format!(
                "`params.arguments` must be an object of named arguments, but got {}",
                crate::wit::convert::describe(args)
            ),
            _ => "`params` do not fit tools/call: expected `name` (a string), `arguments` (an object) and optionally `_meta` (an object)".to_owned(),
        },
        (_, Some(other)) if !other.is_object() => format!(
            "`params` must be an object, but got {}",
            crate::wit::convert::describe(other)
        ),
        _ => format!("the params do not fit `{method}`"),
    };
    ErrorData::invalid_params(format!("invalid params for {method}: {problem}"), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_requests_say_what_to_fix() {
        let msg = |m: &str, p: Option<serde_json::Value>| {
            let e = malformed_request(m, p.as_ref());
            (e.code, e.message.into_owned())
        };
        let (code, m) = msg("tools/call", None);
        assert_eq!(code, ErrorCode::INVALID_PARAMS);
        assert!(m.contains("`params` must be an object"), "{m}");
        let (_, m) = msg("tools/call", Some(json!({"arguments": {}})));
        assert!(m.contains("`params.name` must be present"), "{m}");
        let (_, m) = msg("tools/call", Some(json!({"name": 5})));
        assert!(
            m.contains("must be a string") && m.contains("the number 5"),
            "{m}"
        );
        let (_, m) = msg(
            "tools/call",
            Some(json!({"name": "x", "arguments": [1, 2]})),
        );
        assert!(
            m.contains("`params.arguments` must be an object") && m.contains("an array of 2 items"),
            "{m}"
        );
        let (code, m) = msg("nope/nothing", None);
        assert_eq!(code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(m, "Method not found: `nope/nothing`");
        let long = "x".repeat(100_000);
        assert!(msg(&long, None).1.len() < 200);
    }

    fn http_request(headers: &[(&str, &str)]) -> Extensions {
        let mut req = axum::http::Request::builder();
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let (parts, ()) = req.body(()).unwrap().into_parts();
        let mut ext = Extensions::new();
        ext.insert(parts);
        ext
    }

    #[test]
    fn callers_are_told_apart_by_session_then_owner() {
        let anon: Arc<str> = "anon-7".into();
        assert_eq!(&*caller_of(&Extensions::new(), &anon), STDIO_CALLER);
        let a = caller_of(&http_request(&[("mcp-session-id", "uuid-a")]), &anon);
        let a2 = caller_of(&http_request(&[("mcp-session-id", "uuid-a")]), &anon);
        let b = caller_of(&http_request(&[("mcp-session-id", "uuid-b")]), &anon);
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert!(a.starts_with("s-") && a.len() == 18, "{a}");
        assert!(
            !a.contains("uuid"),
            "the session id itself never reaches a plugin"
        );
        // The session wins over an owner header; the owner over nothing.
        let both = http_request(&[("mcp-session-id", "uuid-a"), (OWNER_HEADER, "t")]);
        assert_eq!(caller_of(&both, &anon), a);
        let o = caller_of(&http_request(&[(OWNER_HEADER, "t")]), &anon);
        assert!(o.starts_with("o-") && o != a, "{o}");
        assert_eq!(caller_of(&http_request(&[]), &anon), anon);
    }
}
