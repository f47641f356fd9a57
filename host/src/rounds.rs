//! Elicitation in MCP's 2026-07-28 form: multi round-trip requests.
//!
//! From 2026-07-28 a server no longer sends `elicitation/create` in the
//! middle of a call (a stateless transport has no channel for it). It answers
//! `tools/call` with an `input_required` result naming its questions; the
//! client asks its user and sends the same call again with the answers
//! (`inputResponses`) and the `requestState` it was given.
//!
//! benchtop keeps no state between the rounds: the call simply runs again.
//! Each question a plugin asks (`benchtop:host/elicit.ask`) is keyed by its
//! place in the call and a hash of its text; one already answered gets its
//! answer, one not yet answered is collected and told `cancelled` so the
//! plugin changes nothing, and the round's result is replaced by the
//! questions. The answers so far travel in `requestState`, which is safe
//! untrusted: they are the client's own answers, which it could send anyway.
//! A plugin must therefore ask before it changes anything (the WIT of
//! `benchtop:host/elicit` says so).

use crate::call::{Elicited, Elicitor};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};

/// Most answers one call may carry; a plugin asking more in one call is
/// surely looping.
const MAX_ANSWERS: usize = 16;
/// Largest `requestState` read back; the answers are small forms.
const MAX_STATE_BYTES: usize = 64 << 10;

/// The questions and answers of one round of a call.
#[derive(Default)]
pub struct Rounds {
    /// Answers so far, by question key (each an `ElicitResult` as JSON).
    answers: Map<String, Value>,
    /// What this round asked.
    asked: Mutex<Asked>,
}

#[derive(Default)]
struct Asked {
    /// Questions asked so far in this round, answered or not.
    count: usize,
    /// Questions without an answer yet, by key.
    pending: InputRequests,
}

impl Rounds {
    /// The round of a call carrying `state` (the `requestState` of an
    /// earlier round, if any) and `responses` (its `inputResponses`).
    pub fn new(state: Option<&str>, responses: Option<&InputResponses>) -> Self {
        let mut answers = state
            .filter(|s| s.len() <= MAX_STATE_BYTES)
            .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok())
            .unwrap_or_default();
        for (key, answer) in responses.into_iter().flatten() {
            answers.insert(key.clone(), answer.clone());
        }
        if answers.len() > MAX_ANSWERS {
            answers = answers.into_iter().take(MAX_ANSWERS).collect();
        }
        Self {
            answers,
            asked: Mutex::default(),
        }
    }

    /// The elicitor a call of this round asks with.
    pub fn elicitor(self: &Arc<Self>) -> Elicitor {
        let rounds = self.clone();
        Arc::new(move |message: String, schema: Value| {
            let answer = rounds.ask(message, schema);
            Box::pin(async move { answer })
        })
    }

    fn ask(&self, message: String, schema: Value) -> Elicited {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("q{}-{:016x}", asked.count, fnv1a(&message, &schema));
        asked.count += 1;
        if let Some(answer) = self.answers.get(&key) {
            return read_answer(answer);
        }
        if asked.count > MAX_ANSWERS {
            return Elicited::Unsupported(format!(
                "the call asked more than {MAX_ANSWERS} questions"
            ));
        }
        let requested_schema: ElicitationSchema = match serde_json::from_value(schema) {
            Ok(s) => s,
            Err(e) => {
                return Elicited::Unsupported(format!(
                    "the plugin's form is not an elicitation schema: {e}"
                ));
            }
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        asked
            .pending
            .insert(key, InputRequest::Elicitation(ElicitRequest::new(params)));
        // Nothing is to change before the user has answered.
        Elicited::Cancelled
    }

    /// The `input_required` result to answer with instead of the call's
    /// own, when the call asked something not yet answered.
    pub fn input_required(&self) -> Option<InputRequiredResult> {
        let asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if asked.pending.is_empty() {
            return None;
        }
        let state = serde_json::to_string(&self.answers).unwrap_or_else(|_| "{}".into());
        Some(InputRequiredResult::new(
            Some(asked.pending.clone()),
            Some(state),
        ))
    }
}

/// An `ElicitResult` (as JSON) as the plugin's answer.
fn read_answer(answer: &Value) -> Elicited {
    match serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone()) {
        Ok(r) => match r.action {
            ElicitationAction::Accept => {
                Elicited::Accepted(r.content.unwrap_or_else(|| Value::Object(Map::new())))
            }
            ElicitationAction::Decline => Elicited::Declined,
            _ => Elicited::Cancelled,
        },
        Err(e) => Elicited::Unsupported(format!(
            "the client's answer is not an elicitation result: {e}"
        )),
    }
}

/// A stable hash of a question (FNV-1a), so that an answer is never given
/// to a different question asked in the same place on a later round.
fn fnv1a(message: &str, schema: &Value) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in message.bytes().chain([0]).chain(schema.to_string().bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}})
    }

    async fn ask(rounds: &Arc<Rounds>, message: &str) -> Elicited {
        (rounds.elicitor())(message.into(), form()).await
    }

    #[tokio::test]
    async fn an_unanswered_question_is_collected_and_the_plugin_told_to_wait() {
        let rounds = Arc::new(Rounds::new(None, None));
        assert_eq!(ask(&rounds, "Write 3 cells?").await, Elicited::Cancelled);
        let r = rounds.input_required().expect("questions to ask");
        let requests = r.input_requests.unwrap();
        assert_eq!(requests.len(), 1);
        let key = requests.keys().next().unwrap().clone();
        assert!(key.starts_with("q0-"), "{key}");

        // The next round carries the answer; the same question gets it.
        let responses: InputResponses =
            [(key, json!({"action": "accept", "content": {"ok": true}}))].into();
        let next = Arc::new(Rounds::new(r.request_state.as_deref(), Some(&responses)));
        assert_eq!(
            ask(&next, "Write 3 cells?").await,
            Elicited::Accepted(json!({"ok": true}))
        );
        assert!(next.input_required().is_none());
    }

    #[tokio::test]
    async fn a_different_question_in_the_same_place_is_asked_anew() {
        let rounds = Arc::new(Rounds::new(None, None));
        ask(&rounds, "Write 3 cells?").await;
        let key = rounds
            .input_required()
            .unwrap()
            .input_requests
            .unwrap()
            .into_keys()
            .next()
            .unwrap();
        let responses: InputResponses = [(key, json!({"action": "accept"}))].into();
        let next = Arc::new(Rounds::new(None, Some(&responses)));
        assert_eq!(ask(&next, "Write 300 cells?").await, Elicited::Cancelled);
        assert!(next.input_required().is_some());
    }

    #[tokio::test]
    async fn answers_of_earlier_rounds_travel_in_the_state() {
        let first = Arc::new(Rounds::new(None, None));
        ask(&first, "one?").await;
        let r1 = first.input_required().unwrap();
        let k1 = r1.input_requests.unwrap().into_keys().next().unwrap();
        let responses: InputResponses = [(k1, json!({"action": "decline"}))].into();
        let second = Arc::new(Rounds::new(r1.request_state.as_deref(), Some(&responses)));
        assert_eq!(ask(&second, "one?").await, Elicited::Declined);
        assert_eq!(ask(&second, "two?").await, Elicited::Cancelled);
        let r2 = second.input_required().unwrap();
        let third = Arc::new(Rounds::new(r2.request_state.as_deref(), None));
        assert_eq!(ask(&third, "one?").await, Elicited::Declined);
    }

    #[tokio::test]
    async fn a_garbled_state_or_answer_is_no_answer() {
        let rounds = Arc::new(Rounds::new(Some("not json"), None));
        assert_eq!(ask(&rounds, "one?").await, Elicited::Cancelled);
        let key = rounds
            .input_required()
            .unwrap()
            .input_requests
            .unwrap()
            .into_keys()
            .next()
            .unwrap();
        let responses: InputResponses = [(key, json!({"action": 7}))].into();
        let next = Arc::new(Rounds::new(None, Some(&responses)));
        assert!(matches!(ask(&next, "one?").await, Elicited::Unsupported(_)));
    }
}
