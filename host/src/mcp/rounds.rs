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
//! clear error rather than trusted. A state is bound to its call (client,
//! method, name and arguments) and lives ten minutes; an answer counts only
//! for the question the state asked, by a digest of its text, so a state
//! replayed on another call, an answer sent with no question asked, or a
//! question that changed since it was asked (other cells, other values)
//! never passes for a confirmation. A plugin must ask before it changes
//! anything (the WIT of `benchtop:host/elicit` says so).

// Sampling and roots are deprecated in 2026-07-28 (SEP-2577) and rmcp
// marks their types so; they are still scored and still offered by some
// clients, so plugins may ask for them deliberately.
#![allow(deprecated)]

use crate::runtime::cache::{hex, hmac_sha256};
use crate::runtime::context::{
    ClientReply, ClientRequest, Elicited, Elicitor, Question, Requester,
};
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ListRootsRequest, ListRootsResult, SamplingMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Most answers one call may carry; a plugin asking more in one call is
/// surely looping.
const MAX_ANSWERS: usize = 16;
/// Largest `requestState` read back; the answers are small forms.
const MAX_STATE_BYTES: usize = 64 << 10;
/// How long a `requestState` may be answered: as long as the call's
/// deadline waits for a user who is asked in the call itself.
const STATE_LIFETIME: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// What a `requestState` carries, sealed: whose call it belongs to, until
/// when, which questions it asked (by the digest of their text), and the
/// answers so far, each bound to the question it answered.
#[derive(Default, Serialize, Deserialize)]
struct State {
    /// Digest of the caller, method, name and arguments of the call.
    call: String,
    /// Seconds since the Unix epoch after which the state is refused.
    expires: u64,
    /// Questions the round that issued it asked: key → question digest.
    asked: BTreeMap<String, String>,
    /// Answers so far: key → the answer and the digest of its question.
    answers: BTreeMap<String, Answered>,
}

#[derive(Clone, Serialize, Deserialize)]
struct Answered {
    /// Digest of the question's message and form.
    question: String,
    /// The client's `ElicitResult`, as JSON.
    answer: Value,
}

/// What the client declared it can be asked (its capabilities).
#[derive(Debug, Clone, Copy)]
pub struct Askable {
    /// Its user, by elicitation.
    pub elicitation: bool,
    /// Its model, by sampling.
    pub sampling: bool,
    /// Its roots.
    pub roots: bool,
}

impl Askable {
    /// What `declared` (a client's capabilities, if it sent any) says it
    /// may be asked.
    pub fn of(declared: Option<&rmcp::model::ClientCapabilities>) -> Self {
        Self {
            elicitation: declared.is_some_and(|c| c.elicitation.is_some()),
            sampling: declared.is_some_and(|c| c.sampling.is_some()),
            roots: declared.is_some_and(|c| c.roots.is_some()),
        }
    }

    /// Whether anything may be asked at all.
    pub fn any(self) -> bool {
        self.elicitation || self.sampling || self.roots
    }

    /// Whether `request` may be put to the client, or why not.
    pub fn allows(self, request: &ClientRequest) -> Result<(), ClientReply> {
        let declared = match request {
            ClientRequest::Sample { .. } => self.sampling,
            ClientRequest::Roots => self.roots,
        };
        match declared {
            true => Ok(()),
            false => Err(ClientReply::Unsupported(format!(
                "the client did not declare {}",
                request.capability()
            ))),
        }
    }
}

/// The kinds of requests, as the digests of the questions asked name them:
/// an answer is read as the kind of result its question asked for.
const ELICIT: &str = "elicit:";
const SAMPLE: &str = "sample:";
const ROOTS: &str = "roots:";

/// The questions and answers of one round of a call.
pub struct Rounds {
    /// Digest of the call this round belongs to.
    call: String,
    /// What the client may be asked.
    askable: Askable,
    /// Answers so far, by question key.
    answers: BTreeMap<String, Answered>,
    /// What this round asked.
    asked: Mutex<Asked>,
}

#[derive(Default)]
struct Asked {
    /// Questions asked so far in this round, answered or not.
    count: usize,
    /// Questions without an answer yet, by key.
    pending: InputRequests,
    /// Their digests, by key.
    digests: BTreeMap<String, String>,
}

/// What a request is, for binding its round's state to it: a state (and
/// the answers in it) is good for this exact call of this client only.
pub fn call_binding(caller: &str, method: &str, name: &str, arguments: &Value) -> String {
    hex(&Sha256::digest(
        format!("{caller}\n{method}\n{name}\n{arguments}").as_bytes(),
    ))
}

impl Rounds {
    /// The round of the call `call` (see [`call_binding`]) carrying
    /// `state` (the `requestState` of an earlier round, if any) and
    /// `responses` (its `inputResponses`). A state this process did not
    /// seal, sealed for another call, or expired is refused, saying what to
    /// do; an answer to a question the state did not ask is ignored.
    pub fn new(
        state: Option<&str>,
        responses: Option<&InputResponses>,
        call: &str,
    ) -> Result<Self, String> {
        const AFRESH: &str =
            "call again without requestState and inputResponses to be asked afresh";
        let state = match state {
            None => State::default(),
            Some(state) => {
                let state = open(state).ok_or_else(|| {
                    format!(
                        "requestState failed its integrity check: it was changed, or the server \
                         restarted since it was issued; {AFRESH}"
                    )
                })?;
                if state.call != call {
                    return Err(format!(
                        "requestState was issued for another call (another tool, prompt or \
                         resource, other arguments, or another client); {AFRESH}"
                    ));
                }
                if now_secs() > state.expires {
                    return Err(format!(
                        "requestState expired: a question must be answered within {} minutes; {AFRESH}",
                        STATE_LIFETIME.as_secs() / 60
                    ));
                }
                state
            }
        };
        let State {
            asked, mut answers, ..
        } = state;
        for (key, answer) in responses.into_iter().flatten() {
            // An answer must be a result of the kind its question asked
            // for (any kind, for a key no question had); anything else is
            // the client's mistake, said now rather than taken for "no
            // answer".
            let question = asked.get(key);
            let kind = question.map_or("", |q| kind_of(q));
            if let Err(e) = check_answer(kind, answer) {
                return Err(format!(
                    "inputResponses.{} is not {e}",
                    crate::wit::names::clip(key)
                ));
            }
            // An answer counts only for the question it was given for: one
            // the issuing round asked, as it asked it. Any other is ignored
            // (as SEP-2322 has servers ignore what they did not ask), so
            // the question it might stand for is asked again, never taken
            // as answered.
            let Some(question) = question else {
                continue;
            };
            answers.insert(
                key.clone(),
                Answered {
                    question: question.clone(),
                    answer: answer.clone(),
                },
            );
        }
        if answers.len() > MAX_ANSWERS {
            answers = answers.into_iter().take(MAX_ANSWERS).collect();
        }
        Ok(Self {
            call: call.to_owned(),
            askable: Askable {
                elicitation: true,
                sampling: true,
                roots: true,
            },
            answers,
            asked: Mutex::default(),
        })
    }

    /// The round, for a client that declared it can be asked `askable`:
    /// a request it cannot answer is never put to it.
    pub fn for_client(mut self, askable: Askable) -> Self {
        self.askable = askable;
        self
    }

    /// The elicitor a call of this round asks with.
    pub fn elicitor(self: &Arc<Self>) -> Elicitor {
        let rounds = self.clone();
        Arc::new(move |question: Question| {
            let answer = rounds.ask(question);
            Box::pin(async move { answer })
        })
    }

    fn ask(&self, question: Question) -> Elicited {
        if !self.askable.elicitation {
            return Elicited::Unsupported("the client did not declare elicitation".into());
        }
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let (key, digest) = match self.recall_in(&mut asked, &question) {
            Ok(answer) => return answer,
            Err(unanswered) => unanswered,
        };
        let Question {
            message, schema, ..
        } = question;
        if asked.count > MAX_ANSWERS {
            return Elicited::Unsupported(format!(
                "the call asked more than {MAX_ANSWERS} questions"
            ));
        }
        let params = match form_request(message, schema) {
            Ok(params) => params,
            Err(unsupported) => return unsupported,
        };
        asked.pending.insert(
            key.clone(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        asked.digests.insert(key, digest);
        // Nothing is to change before the user has answered.
        Elicited::Cancelled
    }

    /// The requester a call of this round asks the client's model and
    /// roots with.
    pub fn requester(self: &Arc<Self>) -> Requester {
        let rounds = self.clone();
        Arc::new(move |key: String, request: ClientRequest| {
            let reply = rounds.request(key, request);
            Box::pin(async move { reply })
        })
    }

    fn request(&self, key: String, request: ClientRequest) -> ClientReply {
        if let Err(unsupported) = self.askable.allows(&request) {
            return unsupported;
        }
        let (kind, input) = client_input(request);
        let digest = request_digest(kind, &input);
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(reply) = self.reply_in(&mut asked, &key, kind, &digest) {
            return reply;
        }
        if asked.count > MAX_ANSWERS {
            return ClientReply::Unsupported(format!(
                "the call asked more than {MAX_ANSWERS} questions"
            ));
        }
        asked.pending.insert(key.clone(), input);
        asked.digests.insert(key, digest);
        ClientReply::Pending
    }

    /// Counts a request of `kind` made under `key`; the reply this round
    /// brought to exactly that request (`digest`), if any.
    fn reply_in(
        &self,
        asked: &mut Asked,
        key: &str,
        kind: &str,
        digest: &str,
    ) -> Option<ClientReply> {
        asked.count += 1;
        self.answers
            .get(key)
            .filter(|answered| answered.question == digest)
            .map(|answered| read_reply(kind, &answered.answer))
    }

    /// The key and digest of `question`, the `count`-th asked; its answer
    /// when this round brought one to exactly this question (a question
    /// that changed since, over other cells or another ROM, is asked
    /// again).
    fn recall_in(
        &self,
        asked: &mut Asked,
        question: &Question,
    ) -> Result<Elicited, (String, String)> {
        let digest = format!(
            "{ELICIT}{}",
            question_digest(&question.message, &question.schema)
        );
        let key = question.key.clone().unwrap_or_else(|| {
            format!(
                "q{}-{}",
                asked.count,
                &digest[ELICIT.len()..ELICIT.len() + 16]
            )
        });
        asked.count += 1;
        match self.answers.get(&key) {
            Some(answered) if answered.question == digest => Ok(read_answer(&answered.answer)),
            _ => Err((key, digest)),
        }
    }

    /// The answer this round brought to `question`, if any, without asking
    /// it: a call that became a task on this round (`@task asks-first`)
    /// takes the answers gathered in rounds and asks the rest through the
    /// task.
    pub fn recall(&self, question: &Question) -> Option<Elicited> {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        self.recall_in(&mut asked, question).ok()
    }

    /// Like [`Rounds::recall`], for a request to the client's model or
    /// roots made under `key`.
    pub fn recall_reply(&self, key: &str, request: &ClientRequest) -> Option<ClientReply> {
        let (kind, input) = client_input(request.clone());
        let digest = request_digest(kind, &input);
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        self.reply_in(&mut asked, key, kind, &digest)
    }

    /// Whether the request brought answers: a later round of its call.
    pub fn has_answers(&self) -> bool {
        !self.answers.is_empty()
    }

    /// The `input_required` result to answer with instead of the call's
    /// own, when the call asked something not yet answered.
    pub fn input_required(&self) -> Option<InputRequiredResult> {
        let asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if asked.pending.is_empty() {
            return None;
        }
        let state = State {
            call: self.call.clone(),
            expires: now_secs() + STATE_LIFETIME.as_secs(),
            asked: asked.digests.clone(),
            answers: self.answers.clone(),
        };
        Some(InputRequiredResult::new(
            Some(asked.pending.clone()),
            Some(seal(&state)),
        ))
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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

/// `state` as a request state: `MAC.JSON`, the MAC in hex.
fn seal(state: &State) -> String {
    let json = serde_json::to_string(state).unwrap_or_else(|_| "{}".into());
    let mac = hmac_sha256(secret(), &[json.as_bytes()]);
    format!("{}.{json}", hex(&mac))
}

/// The state a request state holds, or `None` when its seal does not hold.
fn open(state: &str) -> Option<State> {
    if state.len() > MAX_STATE_BYTES {
        return None;
    }
    let (mac, json) = state.split_once('.')?;
    let expected = hex(&hmac_sha256(secret(), &[json.as_bytes()]));
    // Not secret-dependent timing that matters here: the MAC guards
    // answers the client gave itself, not a credential.
    if mac != expected {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// What identifies a request to the client's model or roots, so that an
/// answer is taken only for the request it was given for.
fn request_digest(kind: &str, input: &InputRequest) -> String {
    format!(
        "{kind}{}",
        hex(&Sha256::digest(
            serde_json::to_string(input).unwrap_or_default().as_bytes()
        ))
    )
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

/// The MCP request that asks the client `request`, and its kind
/// ([`SAMPLE`] or [`ROOTS`]), which its answer is read as.
pub(crate) fn client_input(request: ClientRequest) -> (&'static str, InputRequest) {
    match request {
        ClientRequest::Sample {
            messages,
            system_prompt,
            max_tokens,
        } => (
            SAMPLE,
            InputRequest::CreateMessage(CreateMessageRequest::new(sampling_params(
                messages,
                system_prompt,
                max_tokens,
            ))),
        ),
        ClientRequest::Roots => (
            ROOTS,
            InputRequest::ListRoots(ListRootsRequest {
                method: Default::default(),
                extensions: Default::default(),
            }),
        ),
    }
}

/// A sampling request for a plugin's conversation, in either form.
pub(crate) fn sampling_params(
    messages: Vec<(bool, String)>,
    system_prompt: Option<String>,
    max_tokens: u32,
) -> CreateMessageRequestParams {
    let messages = messages
        .into_iter()
        .map(|(user, text)| {
            if user {
                SamplingMessage::user_text(text)
            } else {
                SamplingMessage::assistant_text(text)
            }
        })
        .collect();
    let params = CreateMessageRequestParams::new(messages, max_tokens);
    match system_prompt {
        Some(p) => params.with_system_prompt(p),
        None => params,
    }
}

/// What the client's `CreateMessageResult` tells the plugin: its text
/// (the text blocks joined) and the model.
pub(crate) fn sampled(result: CreateMessageResult) -> ClientReply {
    let text: Vec<String> = result
        .message
        .content
        .into_vec()
        .into_iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    ClientReply::Sampled {
        text: text.join("\n"),
        model: result.model,
    }
}

/// What the client's `ListRootsResult` tells the plugin.
pub(crate) fn rooted(result: ListRootsResult) -> ClientReply {
    ClientReply::Roots(result.roots.into_iter().map(|r| (r.uri, r.name)).collect())
}

/// The kind a question's digest names ([`ELICIT`], [`SAMPLE`], [`ROOTS`]).
fn kind_of(digest: &str) -> &'static str {
    [ELICIT, SAMPLE, ROOTS]
        .into_iter()
        .find(|k| digest.starts_with(k))
        .unwrap_or(ELICIT)
}

/// Checks that `answer` is a result of `kind` (of any kind when empty),
/// or says what it should have been.
fn check_answer(kind: &str, answer: &Value) -> Result<(), String> {
    let elicit = || serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone()).map(|_| ());
    let sample = || serde_json::from_value::<CreateMessageResult>(answer.clone()).map(|_| ());
    let roots = || serde_json::from_value::<ListRootsResult>(answer.clone()).map(|_| ());
    match kind {
        ELICIT => elicit().map_err(|e| {
            format!(
                "an elicitation result ({e}); answer with \
                 {{\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {{…}}}}"
            )
        }),
        SAMPLE => sample().map_err(|e| {
            format!("a sampling result ({e}); answer with {{\"role\", \"content\", \"model\"}}")
        }),
        ROOTS => roots().map_err(|e| format!("a roots list ({e}); answer with {{\"roots\": […]}}")),
        _ => elicit().or_else(|_| sample()).or_else(|_| roots()).map_err(|e| {
            format!(
                "an elicitation result, a sampling result or a roots list ({e}); answer an \
                 elicitation with {{\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {{…}}}}"
            )
        }),
    }
}

/// A checked answer of `kind` as the plugin's reply.
pub(crate) fn read_reply(kind: &str, answer: &Value) -> ClientReply {
    let garbled = |e: serde_json::Error| {
        ClientReply::Unsupported(format!("the client's answer does not read: {e}"))
    };
    match kind {
        SAMPLE => serde_json::from_value(answer.clone()).map_or_else(garbled, sampled),
        _ => serde_json::from_value(answer.clone()).map_or_else(garbled, rooted),
    }
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
pub(crate) fn read_answer(answer: &Value) -> Elicited {
    match serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone()) {
        Ok(r) => answer_of(r),
        Err(e) => Elicited::Unsupported(format!(
            "the client's answer is not an elicitation result: {e}"
        )),
    }
}

/// The digest of a question's text and form, so that an answer is never
/// given to a different question asked under the same key.
fn question_digest(message: &str, schema: &Value) -> String {
    let mut h = Sha256::new();
    h.update(message.as_bytes());
    h.update([0]);
    h.update(schema.to_string().as_bytes());
    hex(&h.finalize())
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

    const CALL: &str = "call-a";

    fn round(state: Option<&str>, responses: Option<&InputResponses>) -> Arc<Rounds> {
        Arc::new(Rounds::new(state, responses, CALL).expect("a sound state"))
    }

    /// A first round that asked `message` (keyed `key`, if any), and the
    /// state it issued.
    async fn asked(key: Option<&str>, message: &str) -> (String, String) {
        let rounds = round(None, None);
        (rounds.elicitor())(Question {
            key: key.map(str::to_owned),
            message: message.into(),
            schema: form(),
        })
        .await;
        let r = rounds.input_required().expect("a question");
        let key = r.input_requests.unwrap().into_keys().next().unwrap();
        (key, r.request_state.unwrap())
    }

    fn accept(key: &str) -> InputResponses {
        [(key.to_owned(), json!({"action": "accept"}))].into()
    }

    #[tokio::test]
    async fn a_round_that_becomes_a_task_hands_over_its_answers_only() {
        let (key, state) = asked(None, "Your name?").await;
        let responses: InputResponses = [(
            key,
            json!({"action": "accept", "content": {"name": "Alice"}}),
        )]
        .into();
        let rounds = round(Some(&state), Some(&responses));
        assert!(rounds.has_answers());
        let question = |message: &str| Question {
            key: None,
            message: message.into(),
            schema: form(),
        };
        // The question the round asked is recalled, by the same order.
        assert!(matches!(
            rounds.recall(&question("Your name?")),
            Some(Elicited::Accepted(_))
        ));
        // A question it did not ask is the task's to ask: nothing is
        // collected for an input_required result.
        assert_eq!(rounds.recall(&question("Sure?")), None);
        assert!(rounds.input_required().is_none());
        assert!(!round(None, None).has_answers());
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
        let (key, state) = asked(None, "Write 3 cells?").await;
        let next = round(Some(&state), Some(&accept(&key)));
        assert_eq!(ask(&next, "Write 300 cells?").await, Elicited::Cancelled);
        assert!(next.input_required().is_some());
    }

    /// Hardening item 7: round one's state with "accept" once confirmed a
    /// different call (another ROM, table and operation).
    #[tokio::test]
    async fn a_state_answers_only_the_call_it_was_issued_for() {
        let (key, state) = asked(Some("confirm_patch"), "Write 3 cells?").await;
        let e = Rounds::new(Some(&state), Some(&accept(&key)), "call-b")
            .err()
            .expect("refused");
        assert!(e.contains("another call"), "{e}");
    }

    /// Hardening item 7: an answer sent with no state and no question
    /// asked once wrote. It is ignored: the question is asked.
    #[tokio::test]
    async fn an_answer_to_no_question_is_not_taken() {
        let keyed = || Question {
            key: Some("confirm_patch".into()),
            message: "Write?".into(),
            schema: form(),
        };
        let bare = round(None, Some(&accept("confirm_patch")));
        assert_eq!((bare.elicitor())(keyed()).await, Elicited::Cancelled);
        assert!(
            bare.input_required().is_some(),
            "asked, not taken as answered"
        );
        let (_, state) = asked(Some("confirm_patch"), "Write?").await;
        let other = round(Some(&state), Some(&accept("other")));
        assert_eq!((other.elicitor())(keyed()).await, Elicited::Cancelled);
    }

    /// Hardening item 7: states replayed and never expired.
    #[tokio::test]
    async fn an_expired_state_is_refused() {
        let old = State {
            call: CALL.into(),
            expires: now_secs() - 1,
            ..State::default()
        };
        let e = Rounds::new(Some(&seal(&old)), None, CALL)
            .err()
            .expect("refused");
        assert!(e.contains("expired"), "{e}");
    }

    /// Hardening item 8: the user confirmed one set of cells; by the next
    /// round the table moved and the same call would write others. The
    /// question (its text names the cells and values) changed, so the
    /// confirmation does not carry over: it is asked again.
    #[tokio::test]
    async fn a_confirmation_holds_only_for_the_question_confirmed() {
        let (key, state) = asked(Some("confirm_patch"), "Write rows 3-4 (3500, 4000 rpm)?").await;
        let next = round(Some(&state), Some(&accept(&key)));
        let moved = Question {
            key: Some("confirm_patch".into()),
            message: "Write rows 3-4 (4500, 5000 rpm)?".into(),
            schema: form(),
        };
        assert_eq!((next.elicitor())(moved).await, Elicited::Cancelled);
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
        assert!(Rounds::new(Some(&state), None, CALL).is_ok());
        let forged = state.replace(
            "\"answers\":{}",
            r#""answers":{"q0":{"question":"","answer":{"action":"accept"}}}"#,
        );
        assert_ne!(forged, state);
        let err = Rounds::new(Some(&forged), None, CALL)
            .err()
            .expect("refused");
        assert!(err.contains("integrity check"), "{err}");
        assert!(Rounds::new(Some("not a state"), None, CALL).is_err());
    }

    #[tokio::test]
    async fn a_keyed_question_goes_by_its_key() {
        let (key, state) = asked(Some("confirm_patch"), "Write?").await;
        assert_eq!(key, "confirm_patch");
        let responses: InputResponses =
            [("confirm_patch".to_owned(), json!({"action": "decline"}))].into();
        let next = round(Some(&state), Some(&responses));
        let keyed = Question {
            key: Some("confirm_patch".into()),
            message: "Write?".into(),
            schema: form(),
        };
        assert_eq!((next.elicitor())(keyed).await, Elicited::Declined);
    }

    fn sample(text: &str) -> ClientRequest {
        ClientRequest::Sample {
            messages: vec![(true, text.into())],
            system_prompt: None,
            max_tokens: 100,
        }
    }

    /// Issue 34: a plugin asks the client's model and roots as it asks its
    /// user: pending in round one, answered in round two, each answer read
    /// as the kind of result its request asked for.
    #[tokio::test]
    async fn sampling_and_roots_go_round_as_questions_do() {
        let first = round(None, None);
        let ask = first.requester();
        assert_eq!(
            ask("capital".into(), sample("Capital of France?")).await,
            ClientReply::Pending
        );
        assert_eq!(
            ask("roots".into(), ClientRequest::Roots).await,
            ClientReply::Pending
        );
        let r = first.input_required().expect("requests");
        let requests = serde_json::to_value(r.input_requests.unwrap()).unwrap();
        assert_eq!(requests["capital"]["method"], "sampling/createMessage");
        assert_eq!(requests["roots"]["method"], "roots/list");

        let responses: InputResponses = [
            (
                "capital".to_owned(),
                json!({"role": "assistant", "content": {"type": "text", "text": "Paris."}, "model": "m1"}),
            ),
            ("roots".to_owned(), json!({"roots": [{"uri": "file:///w", "name": "w"}]})),
        ]
        .into();
        let next = round(r.request_state.as_deref(), Some(&responses));
        let ask = next.requester();
        assert_eq!(
            ask("capital".into(), sample("Capital of France?")).await,
            ClientReply::Sampled {
                text: "Paris.".into(),
                model: "m1".into()
            }
        );
        assert_eq!(
            ask("roots".into(), ClientRequest::Roots).await,
            ClientReply::Roots(vec![("file:///w".into(), Some("w".into()))])
        );
        // Another conversation under the same key is asked afresh.
        assert_eq!(
            ask("capital".into(), sample("Capital of Spain?")).await,
            ClientReply::Pending
        );

        // A roots list is no answer to a sampling request.
        let wrong: InputResponses = [("capital".to_owned(), json!({"roots": []}))].into();
        let err = Rounds::new(r.request_state.as_deref(), Some(&wrong), CALL)
            .err()
            .expect("refused");
        assert!(err.contains("not a sampling result"), "{err}");
    }

    /// Issue 34 (SEP-2322): only what the client declared is asked of it.
    #[tokio::test]
    async fn a_client_is_asked_only_what_it_declared() {
        let rounds = Arc::new(Rounds::new(None, None, CALL).unwrap().for_client(Askable {
            elicitation: false,
            sampling: true,
            roots: false,
        }));
        assert!(matches!(
            ask(&rounds, "Name?").await,
            Elicited::Unsupported(_)
        ));
        let request = rounds.requester();
        assert!(matches!(
            request("r".into(), ClientRequest::Roots).await,
            ClientReply::Unsupported(_)
        ));
        assert_eq!(
            request("s".into(), sample("Hi")).await,
            ClientReply::Pending
        );
        let asked = rounds.input_required().unwrap().input_requests.unwrap();
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["s"]);
    }

    #[tokio::test]
    async fn a_garbled_answer_is_refused() {
        let rounds = round(None, None);
        assert_eq!(ask(&rounds, "one?").await, Elicited::Cancelled);
        let key = first_key(&rounds);
        let responses: InputResponses = [(key, json!({"action": 7}))].into();
        let err = Rounds::new(None, Some(&responses), CALL)
            .err()
            .expect("refused");
        assert!(err.contains("not an elicitation result"), "{err}");
    }
}
