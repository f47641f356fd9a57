//! `benchtop:host/elicit`: asking the calling client's user, in whichever
//! form of elicitation it has; and the wait every request of the client
//! shares (`sampling`, `roots`).

use super::{PluginState, bindings};
use std::time::{Duration, Instant};

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
        if let Err(why) = crate::wit::names::check_tool_name(&key) {
            tracing::warn!(plugin = %self.plugin, "elicit.ask-keyed: {}; not asking", why.replace("tool name", "question key"));
            return bindings::benchtop::host::elicit::Answer::Unsupported;
        }
        self.question(Some(key), message, schema).await
    }

    fn can_ask(&mut self) -> bool {
        self.call
            .as_ref()
            .is_some_and(|call| call.ctx.elicit.is_some())
    }

    async fn ask_all(
        &mut self,
        questions: Vec<bindings::benchtop::host::elicit::Question>,
    ) -> Vec<bindings::benchtop::host::elicit::Answer> {
        use bindings::benchtop::host::elicit::Answer;
        let mut asked = Vec::with_capacity(questions.len());
        let mut answers = vec![Answer::Unsupported; questions.len()];
        for (i, q) in questions.into_iter().enumerate() {
            if let Err(why) = crate::wit::names::check_tool_name(&q.key) {
                tracing::warn!(plugin = %self.plugin, "elicit.ask-all: {}; not asking", why.replace("tool name", "question key"));
                continue;
            }
            match self.prepare(Some(q.key), q.message, q.schema) {
                Ok(pending) => asked.push((i, pending)),
                Err(answer) => answers[i] = answer,
            }
        }
        // All at once: each is out with the client before any is answered.
        let (places, pending): (Vec<usize>, Vec<_>) = asked.into_iter().unzip();
        if let Some(got) = self
            .waiting_for_client(futures::future::join_all(pending))
            .await
        {
            for (i, elicited) in places.into_iter().zip(got) {
                answers[i] = self.answer_of(Some(elicited));
            }
        } else {
            for i in places {
                answers[i] = Answer::Cancelled;
            }
        }
        answers
    }
}

impl PluginState {
    /// Waits at most [`MAX_QUESTION`] for `answer`, from the client or its
    /// user, moving the call's deadline on by the time it took: their
    /// thinking time is not the plugin's. None when it took too long.
    pub(super) async fn waiting_for_client<T>(
        &mut self,
        answer: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let started = Instant::now();
        let outcome = tokio::time::timeout(MAX_QUESTION, answer).await;
        if let Some(call) = &mut self.call {
            let waited = started.elapsed();
            call.deadline += waited;
            *call.watchdog.lock().unwrap_or_else(|p| p.into_inner()) += waited;
        }
        outcome.ok()
    }

    /// Asks the calling client's user, when there is one who can be asked.
    async fn question(
        &mut self,
        key: Option<String>,
        message: String,
        schema: String,
    ) -> bindings::benchtop::host::elicit::Answer {
        match self.prepare(key, message, schema) {
            Ok(pending) => {
                let elicited = self.waiting_for_client(pending).await;
                self.answer_of(elicited)
            }
            Err(answer) => answer,
        }
    }

    /// The question put to the client, to be awaited; or the answer at
    /// once when no one can be asked or the form is not JSON.
    fn prepare(
        &self,
        key: Option<String>,
        message: String,
        schema: String,
    ) -> Result<
        std::pin::Pin<
            Box<dyn std::future::Future<Output = crate::runtime::context::Elicited> + Send>,
        >,
        bindings::benchtop::host::elicit::Answer,
    > {
        use crate::runtime::context::Question;
        use bindings::benchtop::host::elicit::Answer;
        let Some(call) = &self.call else {
            return Err(Answer::Unsupported);
        };
        let Some(elicit) = call.ctx.elicit.clone() else {
            return Err(Answer::Unsupported);
        };
        let schema = if schema.trim().is_empty() {
            serde_json::json!({"type": "object", "properties": {}})
        } else {
            match serde_json::from_str(&schema) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(plugin = %self.plugin, "elicit.ask: the schema is not JSON ({e}); not asking");
                    return Err(Answer::Unsupported);
                }
            }
        };
        Ok(elicit(Question {
            key,
            message,
            schema,
        }))
    }

    /// What the plugin is told of a question's fate (none: it took too long).
    fn answer_of(
        &self,
        elicited: Option<crate::runtime::context::Elicited>,
    ) -> bindings::benchtop::host::elicit::Answer {
        use crate::runtime::context::Elicited;
        use bindings::benchtop::host::elicit::Answer;
        match elicited {
            Some(Elicited::Accepted(v)) => Answer::Accepted(v.to_string()),
            Some(Elicited::Declined) => Answer::Declined,
            Some(Elicited::Cancelled) | None => Answer::Cancelled,
            Some(Elicited::Unsupported(why)) => {
                tracing::debug!(plugin = %self.plugin, "elicit.ask unsupported: {why}");
                Answer::Unsupported
            }
        }
    }
}
