//! Elicitation in MCP's 2026-07-28 form: multi round-trip requests.
//!
//! From 2026-07-28 a server no longer sends `elicitation/create` in the
//! middle of a call (a stateless transport has no channel for it). It answers
//! `tools/call` with an `input_required` result naming its questions; the
//! client asks its user and sends the same call again with the answers
//! (`inputResponses`) and the `requestState` it was given.
//!
//! benchtop keeps no state between the rounds: the call simply runs again.
//! Each question a plugin asks (`benchtop:host/elicit`) is keyed by the
//! plugin's name for it (`ask-keyed`) or else by its place in the call and a
//! hash of its text; one already answered gets its answer, one not yet
//! answered is collected and told `cancelled` so the plugin changes nothing,
//! and the round's result is replaced by the questions. The answers so far
//! travel in `requestState`, sealed with an HMAC under a key this process
//! draws at start: the client cannot forge an answer to a question asked in
//! an earlier round, and a state from before a restart is refused with a
//! clear error rather than trusted. A plugin must ask before it changes
//! anything (the WIT of `benchtop:host/elicit` says so).

use crate::cache::hmac_sha256;
use crate::call::{Elicited, Elicitor, Question};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex, OnceLock};

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
    /// earlier round, if any) and `responses` (its `inputResponses`). A state
    /// this process did not seal is refused, saying what to do.
    pub fn new(state: Option<&str>, responses: Option<&InputResponses>) -> Result<Self, String> {
        let mut answers = match state {
            None => Map::new(),
            Some(state) => open(state).ok_or_else(|| {
                "requestState failed its integrity check: it was changed, or the server \
                 restarted since it was issued; call again without requestState and \
                 inputResponses to be asked afresh"
                    .to_owned()
            })?,
        };
        for (key, answer) in responses.into_iter().flatten() {
            // Only elicitation is asked; anything else is the client's
            // mistake, said now rather than taken for "no answer".
            if let Err(e) = serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone()) {
                return Err(format!(
                    "inputResponses.{key} is not an elicitation result ({e}); answer with \
                     {{\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {{…}}}}"
                ));
            }
            answers.insert(key.clone(), answer.clone());
        }
        if answers.len() > MAX_ANSWERS {
            answers = answers.into_iter().take(MAX_ANSWERS).collect();
        }
        Ok(Self {
            answers,
            asked: Mutex::default(),
        })
    }

    /// The elicitor a call of this round asks with.
    pub fn elicitor(self: &Arc<Self>) -> Elicitor {
        let rounds = self.clone();
        Arc::new(move |question: Question| {
            let answer = rounds.ask(question);
            Box::pin(async move { answer })
        })
    }

    fn ask(
        &self,
        Question {
            key,
            message,
            schema,
        }: Question,
    ) -> Elicited {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let key =
            key.unwrap_or_else(|| format!("q{}-{:016x}", asked.count, fnv1a(&message, &schema)));
        asked.count += 1;
        if let Some(answer) = self.answers.get(&key) {
            return read_answer(answer);
        }
        if asked.count > MAX_ANSWERS {
            return Elicited::Unsupported(format!(
                "the call asked more than {MAX_ANSWERS} questions"
            ));
        }
        let params = match form_request(message, schema) {
            Ok(params) => params,
            Err(unsupported) => return unsupported,
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
        Some(InputRequiredResult::new(
            Some(asked.pending.clone()),
            Some(seal(&self.answers)),
        ))
    }
}

/// This process's key for sealing request states, drawn once.
fn secret() -> &'static [u8; 32] {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    SECRET.get_or_init(|| {
        let mut key = [0u8; 32];
        // Without randomness a fixed key still catches tampering by
        // accident, if not by design; the host logs nothing secret with it.
        let _ = getrandom::fill(&mut key);
        key
    })
}

/// `answers` as a request state: `MAC.JSON`, the MAC in hex.
fn seal(answers: &Map<String, Value>) -> String {
    let json = serde_json::to_string(answers).unwrap_or_else(|_| "{}".into());
    let mac = hmac_sha256(secret(), &[json.as_bytes()]);
    let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.{json}")
}

/// The answers of a sealed state, or `None` when its seal does not hold.
fn open(state: &str) -> Option<Map<String, Value>> {
    if state.len() > MAX_STATE_BYTES {
        return None;
    }
    let (hex, json) = state.split_once('.')?;
    let mac = hmac_sha256(secret(), &[json.as_bytes()]);
    let expected: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    // Not secret-dependent timing that matters here: the MAC guards
    // answers the client gave itself, not a credential.
    if hex != expected {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// The elicitation form request for a plugin's question, in either form of
/// elicitation; a schema MCP cannot carry makes the question unsupported.
pub(crate) fn form_request(
    message: String,
    schema: Value,
) -> Result<ElicitRequestParams, Elicited> {
    let requested_schema: ElicitationSchema = serde_json::from_value(schema).map_err(|e| {
        Elicited::Unsupported(format!(
            "the plugin's form is not an elicitation schema: {e}"
        ))
    })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// What the client's `ElicitResult` tells the plugin.
pub(crate) fn answer_of(result: rmcp::model::ElicitResult) -> Elicited {
    match result.action {
        ElicitationAction::Accept => {
            Elicited::Accepted(result.content.unwrap_or_else(|| Value::Object(Map::new())))
        }
        ElicitationAction::Decline => Elicited::Declined,
        _ => Elicited::Cancelled,
    }
}

/// An `ElicitResult` (as JSON, checked when it arrived) as the plugin's answer.
fn read_answer(answer: &Value) -> Elicited {
    match serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone()) {
        Ok(r) => answer_of(r),
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
        (rounds.elicitor())(Question {
            key: None,
            message: message.into(),
            schema: form(),
        })
        .await
    }

    /// The key of the first question `rounds` collected.
    fn first_key(rounds: &Rounds) -> String {
        let r = rounds.input_required().expect("a question");
        r.input_requests.unwrap().into_keys().next().unwrap()
    }

    fn round(state: Option<&str>, responses: Option<&InputResponses>) -> Arc<Rounds> {
        Arc::new(Rounds::new(state, responses).expect("a sound state"))
    }

    #[tokio::test]
    async fn an_unanswered_question_is_collected_and_the_plugin_told_to_wait() {
        let rounds = round(None, None);
        assert_eq!(ask(&rounds, "Write 3 cells?").await, Elicited::Cancelled);
        let r = rounds.input_required().expect("questions to ask");
        let requests = r.input_requests.unwrap();
        assert_eq!(requests.len(), 1);
        let key = requests.keys().next().unwrap().clone();
        assert!(key.starts_with("q0-"), "{key}");

        // The next round carries the answer; the same question gets it.
        let responses: InputResponses =
            [(key, json!({"action": "accept", "content": {"ok": true}}))].into();
        let next = round(r.request_state.as_deref(), Some(&responses));
        assert_eq!(
            ask(&next, "Write 3 cells?").await,
            Elicited::Accepted(json!({"ok": true}))
        );
        assert!(next.input_required().is_none());
    }

    #[tokio::test]
    async fn a_different_question_in_the_same_place_is_asked_anew() {
        let rounds = round(None, None);
        ask(&rounds, "Write 3 cells?").await;
        let key = first_key(&rounds);
        let responses: InputResponses = [(key, json!({"action": "accept"}))].into();
        let next = round(None, Some(&responses));
        assert_eq!(ask(&next, "Write 300 cells?").await, Elicited::Cancelled);
        assert!(next.input_required().is_some());
    }

    #[tokio::test]
    async fn answers_of_earlier_rounds_travel_in_the_state() {
        let first = round(None, None);
        ask(&first, "one?").await;
        let r1 = first.input_required().unwrap();
        let k1 = r1.input_requests.unwrap().into_keys().next().unwrap();
        let responses: InputResponses = [(k1, json!({"action": "decline"}))].into();
        let second = round(r1.request_state.as_deref(), Some(&responses));
        assert_eq!(ask(&second, "one?").await, Elicited::Declined);
        assert_eq!(ask(&second, "two?").await, Elicited::Cancelled);
        let r2 = second.input_required().unwrap();
        let third = round(r2.request_state.as_deref(), None);
        assert_eq!(ask(&third, "one?").await, Elicited::Declined);
    }

    #[tokio::test]
    async fn a_tampered_state_is_refused() {
        let first = round(None, None);
        ask(&first, "one?").await;
        let state = first.input_required().unwrap().request_state.unwrap();
        assert!(Rounds::new(Some(&state), None).is_ok());
        let forged = state.replace("{}", r#"{"q0-0":{"action":"accept"}}"#);
        assert_ne!(forged, state);
        let err = Rounds::new(Some(&forged), None).err().expect("refused");
        assert!(err.contains("integrity check"), "{err}");
        assert!(Rounds::new(Some("not a state"), None).is_err());
    }

    #[tokio::test]
    async fn a_keyed_question_goes_by_its_key() {
        let rounds = round(None, None);
        let keyed = Question {
            key: Some("confirm_patch".into()),
            message: "Write?".into(),
            schema: form(),
        };
        (rounds.elicitor())(keyed.clone()).await;
        let requests = rounds.input_required().unwrap().input_requests.unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["confirm_patch"]);
        let responses: InputResponses =
            [("confirm_patch".to_owned(), json!({"action": "decline"}))].into();
        let next = round(None, Some(&responses));
        assert_eq!((next.elicitor())(keyed).await, Elicited::Declined);
    }

    #[tokio::test]
    async fn a_garbled_answer_is_refused() {
        let rounds = round(None, None);
        assert_eq!(ask(&rounds, "one?").await, Elicited::Cancelled);
        let key = first_key(&rounds);
        let responses: InputResponses = [(key, json!({"action": 7}))].into();
        let err = Rounds::new(None, Some(&responses)).err().expect("refused");
        assert!(err.contains("not an elicitation result"), "{err}");
    }
}
