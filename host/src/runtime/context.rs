//! What the host knows about the call in progress, for every layer that
//! serves it: the store's imports (progress, caller, elicitation), the
//! plugin that runs it and the MCP front ends that make it. Kept apart from
//! the call path itself so that the runtime layers below the catalogue need
//! nothing from above it.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Receives progress reports of the current call: `(done, total, message)`.
pub type ProgressSink = Arc<dyn Fn(u64, u64, String) + Send + Sync>;

/// What the host knows about the call in progress.
#[derive(Clone)]
pub struct CallContext {
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// The opaque id of the calling client (`benchtop:host/caller.id`).
    pub caller: Arc<str>,
    /// How to ask the client's user a question (`benchtop:host/elicit`),
    /// when the client can.
    pub elicit: Option<Elicitor>,
    /// How to ask the client's model or roots (`benchtop:host/sampling`,
    /// `benchtop:host/roots`), when there is a client to ask.
    pub request: Option<Requester>,
    /// The handles the call said it changed or ended
    /// (`benchtop:host/durable`), for the state store.
    pub marks: HandleMarks,
    /// The client's `Idempotency-Key` for this call, when it sent one: a
    /// call retried with the same key on a handle is answered, not run
    /// again (with a state store).
    pub idempotency_key: Option<Arc<str>>,
    /// The plugin instance the call must run on ([`Plugin::instance`]),
    /// when it relies on state held in that instance: a state store's copy
    /// of a handle. If a trap replaced it meanwhile, the call is refused
    /// with [`CallError::Replaced`] rather than run on a fresh instance.
    ///
    /// [`Plugin::instance`]: crate::runtime::plugin::Plugin::instance
    /// [`CallError::Replaced`]: crate::runtime::error::CallError::Replaced
    pub instance: Option<u64>,
}

/// What a call did to the state behind a handle (`benchtop:host/durable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleMark {
    /// Created or changed.
    Changed,
    /// Ended: gone for every replica.
    Closed,
}

/// The handles one call marked, in order, each once (its last mark).
/// Shared by the clones of a call's context, so a call's marks reach
/// whoever made the context.
#[derive(Clone, Default)]
pub struct HandleMarks(Arc<Mutex<Vec<(String, HandleMark)>>>);

/// Most handles one call may mark: far above what a tool touches (one
/// session, or a few), and a bound on what a plugin can make the host
/// save after a call.
pub const MAX_MARKS: usize = 64;

/// Longest handle kept: handles are short ids.
pub const MAX_HANDLE: usize = 256;

impl HandleMarks {
    /// Notes `mark` for `handle`; marks past [`MAX_MARKS`] distinct handles,
    /// and handles longer than [`MAX_HANDLE`] bytes, are dropped.
    pub fn mark(&self, handle: &str, mark: HandleMark) {
        if handle.is_empty() || handle.len() > MAX_HANDLE {
            return;
        }
        let mut all = self.0.lock().expect("marks lock");
        if let Some(slot) = all.iter_mut().find(|(h, _)| h == handle) {
            slot.1 = mark;
        } else if all.len() < MAX_MARKS {
            all.push((handle.to_owned(), mark));
        }
    }

    /// The marks so far, leaving none.
    pub fn take(&self) -> Vec<(String, HandleMark)> {
        std::mem::take(&mut *self.0.lock().expect("marks lock"))
    }
}

/// A request a plugin makes of the client itself, not its user.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientRequest {
    /// A completion from the client's model (MCP sampling).
    Sample {
        /// The conversation: `(from the user?, text)` per message.
        messages: Vec<(bool, String)>,
        /// What guides the model, if anything.
        system_prompt: Option<String>,
        /// The most tokens to answer with.
        max_tokens: u32,
    },
    /// The client's roots.
    Roots,
}

impl ClientRequest {
    /// The client capability that answers it (`sampling`, `roots`).
    pub fn capability(&self) -> &'static str {
        match self {
            ClientRequest::Sample { .. } => "sampling",
            ClientRequest::Roots => "roots",
        }
    }
}

/// What became of a [`ClientRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ClientReply {
    /// The model's text and its name.
    Sampled {
        /// The reply's text.
        text: String,
        /// The model that answered.
        model: String,
    },
    /// The client's roots: `(uri, name)`.
    Roots(Vec<(String, Option<String>)>),
    /// Sent as part of an `input_required` round: the call runs again
    /// with the answer.
    Pending,
    /// The client or its user refused: why.
    Refused(String),
    /// The client cannot be asked: why.
    Unsupported(String),
}

/// Makes a [`ClientRequest`] of the calling client; the key names it in a
/// 2026-07-28 `input_required` round.
pub type Requester = Arc<
    dyn Fn(
            String,
            ClientRequest,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ClientReply> + Send>>
        + Send
        + Sync,
>;

/// What a user made of a question ([`Elicitor`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// Accepted, with the form's values (an object).
    Accepted(Value),
    /// Declined.
    Declined,
    /// Dismissed.
    Cancelled,
    /// The client could not ask (it said why).
    Unsupported(String),
}

/// A question for the client's user (`benchtop:host/elicit`).
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The plugin's name for it (`ask-keyed`), if it gave one.
    pub key: Option<String>,
    /// What to ask.
    pub message: String,
    /// The form: a JSON Schema object of flat properties.
    pub schema: Value,
}

/// Asks the client's user a [`Question`].
pub type Elicitor = Arc<
    dyn Fn(Question) -> std::pin::Pin<Box<dyn std::future::Future<Output = Elicited> + Send>>
        + Send
        + Sync,
>;

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
            elicit: None,
            request: None,
            marks: HandleMarks::default(),
            idempotency_key: None,
            instance: None,
        }
    }
}
