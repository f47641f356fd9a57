//! What the host knows about the call in progress, for every layer that
//! serves it: the store's imports (progress, caller, elicitation), the
//! plugin that runs it and the MCP front ends that make it. Kept apart from
//! the call path itself so that the runtime layers below the catalogue need
//! nothing from above it.

use serde_json::Value;
use std::sync::Arc;
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
}

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
        }
    }
}
