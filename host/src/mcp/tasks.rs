//! Tool calls as tasks: MCP's tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`).
//!
//! A tool tagged `@task` in its WIT runs as a task for a client that
//! declared the extension: `tools/call` answers at once with the task's id,
//! the call runs on in the background, and the client polls `tasks/get`
//! (status, the progress the plugin reports as the status message, and the
//! result once done), answers the plugin's questions with `tasks/update`,
//! and stops it with `tasks/cancel`. So a long emulator run or a query over
//! a large folder outlives the request (and the connection) that started
//! it, though not the server. rmcp's [`TaskManager`] keeps the lifecycle;
//! this file links it to the plugin call: the call's cancellation, its
//! progress and its questions (elicitation, sampling, roots) go through the
//! task.
//!
//! A task belongs to the client that started it (by caller id); another
//! client asking for it is told it does not exist. A caller that cannot be
//! recognised again (an anonymous 2026-07-28 client) holds its task by the
//! id alone, an unguessable UUID. At most [`MAX_LIVE`] tasks run at once
//! and [`MAX_KEPT`] are kept; each is forgotten [`TTL_MS`] after it started.

#![allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still offered.

use crate::mcp::call::run_plugin;
use crate::mcp::rounds::{Askable, Rounds};
use crate::runtime::context::{
    CallContext, ClientReply, ClientRequest, Elicited, Elicitor, ProgressSink, Question, Requester,
};
use crate::runtime::plugin::Plugin;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, DetailedTask, ElicitRequest, InputRequest, Task};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

/// Tasks running at once, server-wide.
const MAX_LIVE: usize = 64;
/// Tasks kept at once, running or finished (with their results) and not
/// yet forgotten, server-wide: what a client that starts task after task
/// can make the server hold.
const MAX_KEPT: usize = 256;
/// How long a task is kept after it started (its result too): 30 minutes.
const TTL_MS: u64 = 30 * 60 * 1000;
/// How often a client is asked to poll.
const POLL_MS: u64 = 500;

/// The server's tasks: rmcp's manager and who owns each.
#[derive(Default)]
pub struct Tasks {
    manager: TaskManager,
    /// Task id → the caller id that started it (none: anyone with the id).
    owners: Mutex<HashMap<String, Option<Arc<str>>>>,
}

/// The one set of tasks of this process: every request handler (one per
/// HTTP request for a client without a session) sees the same tasks.
pub fn tasks() -> &'static Tasks {
    static TASKS: OnceLock<Tasks> = OnceLock::new();
    TASKS.get_or_init(Tasks::default)
}

impl Tasks {
    /// Starts tool `index` of `plugin` with `args` as a task of `caller`
    /// (`anonymous` when the caller cannot be recognised again): the seed
    /// state to answer `tools/call` with.
    ///
    /// `answered` is the 2026-07-28 round the call became a task on
    /// (`@task asks-first`): its answers are taken before anything is asked
    /// through the task.
    pub fn start(
        &self,
        (plugin, index, args): (Arc<Plugin>, usize, Map<String, Value>),
        (caller, anonymous): (Arc<str>, bool),
        askable: Askable,
        answered: Option<Arc<Rounds>>,
    ) -> Result<Task, ErrorData> {
        self.spawn(caller.clone(), anonymous, move |task| {
            Box::pin(async move {
                let cancel = CancellationToken::new();
                let ctx = CallContext {
                    cancel: cancel.clone(),
                    progress: Some(progress(&task)),
                    caller,
                    elicit: askable
                        .elicitation
                        .then(|| elicitor(&task, answered.clone())),
                    request: Some(requester(&task, askable, answered)),
                    marks: Default::default(),
                    idempotency_key: None,
                    instance: None,
                };
                // tasks/cancel stops the call as a cancelled request would:
                // the plugin sees `progress.cancelled()` and ends with its
                // state kept.
                let watch = {
                    let task = task.clone();
                    let cancel = cancel.clone();
                    tokio::spawn(async move {
                        task.cancelled().await;
                        cancel.cancel();
                    })
                };
                let outcome = run_plugin(&plugin, index, &args, ctx).await;
                watch.abort();
                if task.is_cancel_requested() {
                    return Err(TaskExit::Cancelled);
                }
                outcome.map_err(|e| TaskExit::Error(ErrorData::internal_error(e.to_string(), None)))
            })
        })
    }

    /// A task of `caller` that is already done: the result of a call that
    /// must answer as a task (`@task required asks-first`) but finished
    /// within its request, having nothing to ask.
    pub fn finished(
        &self,
        result: CallToolResult,
        (caller, anonymous): (Arc<str>, bool),
    ) -> Result<Task, ErrorData> {
        self.spawn(caller, anonymous, move |_| {
            Box::pin(async move { Ok(result) })
        })
    }

    /// Starts `job` as a task of `caller`, within the caps.
    fn spawn(
        &self,
        caller: Arc<str>,
        anonymous: bool,
        job: impl FnOnce(TaskContext) -> rmcp::task_manager::TaskFuture,
    ) -> Result<Task, ErrorData> {
        {
            let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
            // At the cap, forget the owners of tasks the manager has
            // forgotten (asking it clones each task, results and all, so
            // not on every start).
            if owners.len() >= MAX_KEPT {
                owners.retain(|id, _| self.manager.get_task(id).is_ok());
            }
            if owners.len() >= MAX_KEPT {
                return Err(ErrorData::invalid_request(
                    format!(
                        "{} tasks are kept (running, or finished within the last {} minutes), the most this server keeps; wait for older ones to be forgotten",
                        owners.len(),
                        TTL_MS / 60_000
                    ),
                    None,
                ));
            }
        }
        let live = self.manager.running_task_count();
        if live >= MAX_LIVE {
            return Err(ErrorData::invalid_request(
                format!(
                    "{live} tasks are running, the most this server runs at once; wait for one to finish or cancel one (tasks/cancel)"
                ),
                None,
            ));
        }
        let owner = (!anonymous).then(|| caller.clone());
        let options = TaskOptions::new()
            .with_ttl_ms(TTL_MS)
            .with_poll_interval_ms(POLL_MS);
        let task = self.manager.spawn(options, job);
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task.task_id.clone(), owner);
        Ok(task)
    }

    /// `tasks/get` for `caller`.
    pub fn get(&self, id: &str, caller: &str) -> Result<DetailedTask, ErrorData> {
        self.check_owner(id, caller)?;
        self.manager.get_task(id)
    }

    /// `tasks/update` for `caller`: answers to the task's questions.
    pub fn update(
        &self,
        id: &str,
        caller: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        self.check_owner(id, caller)?;
        self.manager.update_task(id, responses)
    }

    /// `tasks/cancel` for `caller`.
    pub fn cancel(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        self.check_owner(id, caller)?;
        self.manager.cancel_task(id)
    }

    /// Another client's task is answered as an unknown one (as the
    /// manager answers an id it never made).
    fn check_owner(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        match owners.get(id) {
            Some(Some(owner)) if &**owner != caller => Err(ErrorData::invalid_params(
                format!(
                    "no task {} (tasks belong to the client that started them)",
                    crate::wit::names::clip(id)
                ),
                None,
            )),
            _ => Ok(()),
        }
    }
}

/// Progress reports as the task's status message (`3/10: running`).
fn progress(task: &TaskContext) -> ProgressSink {
    let task = task.clone();
    Arc::new(move |done, total, message: String| {
        let mut status = if total > 0 {
            format!("{done}/{total}")
        } else {
            format!("{done}")
        };
        if !message.is_empty() {
            status = format!("{status}: {message}");
        }
        task.set_status_message(status);
    })
}

/// The keys a task's input requests are made under: a plugin's own key the
/// first time, numbered after (the extension wants each key once per task).
fn key_for(used: &Mutex<HashSet<String>>, wanted: Option<String>) -> String {
    let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
    let base = wanted.unwrap_or_else(|| format!("q{}", used.len()));
    let mut key = base.clone();
    let mut n = 1;
    while !used.insert(key.clone()) {
        n += 1;
        key = format!("{base}-{n}");
    }
    key
}

/// Questions for the user asked inside the task: the task reports
/// `input_required` until `tasks/update` answers.
fn elicitor(task: &TaskContext, answered: Option<Arc<Rounds>>) -> Elicitor {
    let task = task.clone();
    let used = Arc::new(Mutex::new(HashSet::new()));
    Arc::new(move |question: Question| {
        let recalled = answered.as_ref().and_then(|r| r.recall(&question));
        let Question {
            key,
            message,
            schema,
        } = question;
        let task = task.clone();
        let key = key_for(&used, key);
        Box::pin(async move {
            if let Some(answer) = recalled {
                return answer;
            }
            let params = match crate::mcp::rounds::form_request(message, schema) {
                Ok(params) => params,
                Err(unsupported) => return unsupported,
            };
            let request = InputRequest::Elicitation(ElicitRequest::new(params));
            match task.request_input(key, request).await {
                Ok(answer) => crate::mcp::rounds::read_answer(&answer),
                Err(_) => Elicited::Cancelled,
            }
        })
    })
}

/// The client's model and roots asked inside the task, as questions are,
/// each only if the client declared it can answer.
fn requester(task: &TaskContext, askable: Askable, answered: Option<Arc<Rounds>>) -> Requester {
    let task = task.clone();
    let used = Arc::new(Mutex::new(HashSet::new()));
    Arc::new(move |key: String, request: ClientRequest| {
        let recalled = answered
            .as_ref()
            .and_then(|r| r.recall_reply(&key, &request));
        let task = task.clone();
        let key = key_for(&used, Some(key));
        let allowed = askable.allows(&request);
        Box::pin(async move {
            if let Some(reply) = recalled {
                return reply;
            }
            if let Err(unsupported) = allowed {
                return unsupported;
            }
            let (kind, input) = crate::mcp::rounds::client_input(request);
            match task.request_input(key, input).await {
                Ok(answer) => crate::mcp::rounds::read_reply(kind, &answer),
                Err(_) => ClientReply::Unsupported("the task was cancelled".into()),
            }
        })
    })
}
