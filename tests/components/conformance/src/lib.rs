//! The conformance suite's fixture tools, resources, prompts and completion.

use std::time::Duration;

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::content::{Audio, Block, Embedded, EmbeddedContents, Image};
use benchtop::host::{log, progress};
use exports::benchtop_test::conformance::{fixtures, offers};

/// A 1x1 red pixel.
const RED_PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of four silent 8-bit mono samples at 8 kHz: the 44-byte
/// RIFF header, then the samples.
fn silent_wav() -> Vec<u8> {
    let samples = [0x80u8; 4];
    let mut wav = Vec::with_capacity(44 + samples.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000u32.to_le_bytes()); // bytes per second
    wav.extend_from_slice(&1u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(&samples);
    wav
}

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Fixtures;

impl fixtures::Guest for Fixtures {
    fn test_simple_text() -> String {
        "This is a simple text response for testing.".into()
    }

    fn test_image_content() -> Vec<Block> {
        vec![Block::Image(Image {
            mime_type: "image/png".into(),
            data: RED_PIXEL_PNG.to_vec(),
        })]
    }

    fn test_audio_content() -> Vec<Block> {
        vec![Block::Audio(Audio {
            mime_type: "audio/wav".into(),
            data: silent_wav(),
        })]
    }

    fn test_embedded_resource() -> Vec<Block> {
        vec![Block::Resource(Embedded {
            uri: "test://embedded-resource".into(),
            mime_type: "text/plain".into(),
            contents: EmbeddedContents::Text("This is an embedded resource content.".into()),
        })]
    }

    fn test_multiple_content_types() -> Vec<Block> {
        vec![
            Block::Text("Multiple content types test:".into()),
            Block::Image(Image {
                mime_type: "image/png".into(),
                data: RED_PIXEL_PNG.to_vec(),
            }),
            Block::Resource(Embedded {
                uri: "test://mixed-content-resource".into(),
                mime_type: "application/json".into(),
                contents: EmbeddedContents::Text(r#"{"test":"data","value":123}"#.into()),
            }),
        ]
    }

    fn test_error_handling() -> Result<String, String> {
        Err("This tool intentionally returns an error for testing".into())
    }

    fn test_tool_with_progress() -> String {
        for done in [0, 50, 100] {
            progress::report(done, 100, "");
            if done < 100 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        "Progress test completed".into()
    }

    fn test_header_routing(args: fixtures::Routed) -> String {
        format!("routed by region {}", args.region)
    }

    fn greet(name: String) -> String {
        format!("Hello, {name}!")
    }

    fn slow_compute(seconds: u32, label: Option<String>) -> Result<String, String> {
        let label = label.unwrap_or_else(|| "run".into());
        let steps = seconds * 10;
        for step in 0..steps {
            if progress::cancelled() {
                return Ok(format!("{label}: stopped after {} ms", step * 100));
            }
            progress::report(u64::from(step), u64::from(steps), &label);
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(format!("{label}: computed for {seconds} s"))
    }

    fn failing_job() -> Result<String, String> {
        std::thread::sleep(Duration::from_secs(1));
        Err("the job failed, as it always does".into())
    }

    fn protocol_error_job() -> String {
        panic!("protocol_error_job crashes on purpose")
    }

    fn confirm_delete(filename: String) -> Result<String, String> {
        use benchtop::host::elicit::{self, Answer};
        let form = r#"{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}"#;
        match elicit::ask_keyed("confirm_delete", &format!("Delete {filename}?"), form) {
            Answer::Accepted(json) => Ok(format!(
                "{filename}: confirmed={}",
                field_of_bool(&json, "confirm")
            )),
            Answer::Declined => Ok(format!("{filename}: kept (declined)")),
            Answer::Cancelled => Ok(format!("{filename}: kept (cancelled)")),
            Answer::Unsupported => Err("the client cannot ask its user".into()),
        }
    }

    fn test_tool_with_task() -> Result<String, String> {
        use benchtop::host::elicit::{self, Answer};
        let form =
            r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;
        match elicit::ask_keyed("user_name", "What is your name?", form) {
            Answer::Accepted(json) => Ok(format!("Hello, {}!", field_of(&json, "name"))),
            Answer::Declined | Answer::Cancelled => Ok("Hello, whoever you are!".into()),
            Answer::Unsupported => Err("the client cannot ask its user".into()),
        }
    }

    fn multi_input() -> Result<String, String> {
        use benchtop::host::elicit::{self, Answer, Question};
        let form = |field: &str, kind: &str| {
            format!(
                r#"{{"type":"object","properties":{{"{field}":{{"type":"{kind}"}}}},"required":["{field}"]}}"#
            )
        };
        let questions = [
            Question {
                key: "name".into(),
                message: "What is your name?".into(),
                schema: form("name", "string"),
            },
            Question {
                key: "confirm".into(),
                message: "Go ahead?".into(),
                schema: form("confirm", "boolean"),
            },
        ];
        let answers = elicit::ask_all(&questions);
        let shown: Vec<String> = answers
            .iter()
            .map(|a| match a {
                Answer::Accepted(json) => json.clone(),
                Answer::Declined => "declined".into(),
                Answer::Cancelled => "cancelled".into(),
                Answer::Unsupported => "unsupported".into(),
            })
            .collect();
        Ok(format!("answers: {}", shown.join("; ")))
    }

    fn test_logging_tool() -> String {
        log::write(log::Level::Info, "test_logging_tool ran");
        "logged one message".into()
    }

    fn test_missing_capability() -> Result<String, String> {
        match sample("missing_capability", "Say anything.")? {
            Some(text) => Ok(format!("The model said: {text}")),
            None => Ok("waiting for the client's model".into()),
        }
    }

    fn test_streaming_elicitation() -> Result<String, String> {
        progress::report(1, 2, "asking");
        let name = ask_field("user_name", "What is your name?", "name")?;
        progress::report(2, 2, "answered");
        Ok(format!("Hello, {name}!"))
    }

    fn test_tool_with_logging() -> String {
        for (i, message) in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .iter()
        .enumerate()
        {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            log::write(log::Level::Info, message);
        }
        "Logging test completed".into()
    }

    fn test_elicitation(message: String) -> Result<String, String> {
        ask("User response", &message, USER_FORM)
    }

    fn test_elicitation_sep1034_defaults() -> Result<String, String> {
        ask(
            "Elicitation completed",
            "Please review and update the form fields with defaults",
            DEFAULTS_FORM,
        )
    }

    fn test_elicitation_sep1330_enums() -> Result<String, String> {
        ask(
            "Elicitation completed",
            "Please select options from the enum fields",
            ENUMS_FORM,
        )
    }

    fn test_sampling(prompt: String) -> Result<String, String> {
        match sample("test_sampling", &prompt)? {
            Some(text) => Ok(format!("LLM response: {text}")),
            None => Ok("waiting for the client's model".into()),
        }
    }

    fn test_input_required_result_sampling() -> Result<String, String> {
        match sample("capital_question", "What is the capital of France?")? {
            Some(text) => Ok(format!("The model answered: {text}")),
            None => Ok("waiting for the client's model".into()),
        }
    }

    fn test_input_required_result_list_roots() -> Result<String, String> {
        match roots("client_roots")? {
            Some(roots) => Ok(format!("Roots: {roots}")),
            None => Ok("waiting for the client's roots".into()),
        }
    }

    fn test_input_required_result_multiple_inputs() -> Result<String, String> {
        // All three are asked in one round before any answer is used.
        let name = ask_field("user_name", "What is your name?", "name");
        let greeting = sample("greeting", "Say hello.");
        let roots = roots("client_roots");
        Ok(format!(
            "name={}, greeting={}, roots={}",
            name?,
            greeting?.unwrap_or_default(),
            roots?.unwrap_or_default()
        ))
    }

    fn test_input_required_result_capabilities() -> Result<String, String> {
        // A question the client cannot be asked is left out; what it can
        // be asked still goes round.
        let confirmed = confirm().unwrap_or(false);
        let summary = sample("summary", "Summarize: benchtop serves plugins.")?;
        Ok(format!(
            "confirmed={confirmed}, summary={}",
            summary.unwrap_or_default()
        ))
    }

    fn test_input_required_result_elicitation() -> Result<String, String> {
        let name = ask_field("user_name", "What is your name?", "name")?;
        Ok(format!("Hello, {name}!"))
    }

    fn test_input_required_result_request_state() -> Result<String, String> {
        confirm().map(|ok| format!("state-ok: confirmed={ok}"))
    }

    fn test_input_required_result_multi_round() -> Result<String, String> {
        let name = ask_field("step1", "Step 1: What is your name?", "name")?;
        let color = ask_field("step2", "Step 2: What is your favorite color?", "color")?;
        Ok(format!("Hello, {name}! Your favorite color is {color}."))
    }

    fn test_input_required_result_tampered_state() -> Result<String, String> {
        confirm().map(|ok| format!("confirmed={ok}"))
    }
}

/// Asks the keyed question `confirm` with a boolean `ok` and returns it.
fn confirm() -> Result<bool, String> {
    use benchtop::host::elicit::{self, Answer};
    let form = r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#;
    match elicit::ask_keyed("confirm", "Please confirm", form) {
        Answer::Accepted(json) => {
            Ok(serde_json::from_str::<serde_json::Value>(&json).is_ok_and(|v| v["ok"] == true))
        }
        Answer::Declined => Err("the user declined".into()),
        Answer::Cancelled => Err("the user dismissed the question".into()),
        Answer::Unsupported => Err("the client cannot ask its user".into()),
    }
}

/// Asks the keyed question `key` with a one-string-field `form` and returns
/// that field's value; `Err` says why there is none.
fn ask_field(key: &str, message: &str, field: &str) -> Result<String, String> {
    use benchtop::host::elicit::{self, Answer};
    let form = format!(
        r#"{{"type":"object","properties":{{"{field}":{{"type":"string"}}}},"required":["{field}"]}}"#
    );
    match elicit::ask_keyed(key, message, &form) {
        Answer::Accepted(json) => Ok(field_of(&json, field)),
        Answer::Declined => Err("the user declined".into()),
        Answer::Cancelled => Err("the user dismissed the question".into()),
        Answer::Unsupported => Err("the client cannot ask its user".into()),
    }
}

/// The client's model's answer to `prompt` (request `key`): None while the
/// request is out to a 2026-07-28 client.
fn sample(key: &str, prompt: &str) -> Result<Option<String>, String> {
    use benchtop::host::sampling::{self, Message, Reply, Role};
    let messages = [Message {
        role: Role::User,
        text: prompt.into(),
    }];
    match sampling::create_message(key, &messages, None, 100) {
        Reply::Text(c) => Ok(Some(c.text)),
        Reply::Pending => Ok(None),
        Reply::Refused(why) => Err(format!("the client refused: {why}")),
        Reply::Unsupported(why) => Err(format!("the client's model cannot be asked: {why}")),
    }
}

/// The client's roots' URIs, joined (request `key`): None while the
/// request is out to a 2026-07-28 client.
fn roots(key: &str) -> Result<Option<String>, String> {
    use benchtop::host::roots::{self, Listing};
    match roots::list_roots(key) {
        Listing::Roots(list) => Ok(Some(
            list.iter()
                .map(|r| r.uri.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )),
        Listing::Pending => Ok(None),
        Listing::Unsupported(why) => Err(format!("the client's roots cannot be listed: {why}")),
    }
}

/// The boolean value of `field` in a JSON object (false when it has none).
fn field_of_bool(json: &str, field: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| v[field] == true)
}

/// The string value of `field` in a JSON object ("" when it has none).
fn field_of(json: &str, field: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get(field)?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The form `test_elicitation` asks for.
const USER_FORM: &str = r#"{"type":"object","properties":{
"username":{"type":"string","description":"User's response"},
"email":{"type":"string","description":"User's email address"}},
"required":["username","email"]}"#;

/// SEP-1034: a default for every primitive type.
const DEFAULTS_FORM: &str = r#"{"type":"object","properties":{
"name":{"type":"string","description":"User name","default":"John Doe"},
"age":{"type":"integer","description":"User age","default":30},
"score":{"type":"number","description":"User score","default":95.5},
"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
"verified":{"type":"boolean","description":"Verification status","default":true}}}"#;

/// SEP-1330: untitled, titled and legacy single-select; untitled and titled
/// multi-select.
const ENUMS_FORM: &str = r#"{"type":"object","properties":{
"untitledSingle":{"type":"string","description":"Untitled single-select","enum":["option1","option2","option3"]},
"titledSingle":{"type":"string","description":"Titled single-select","oneOf":[
{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
"legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
"untitledMulti":{"type":"array","description":"Untitled multi-select","items":{"type":"string","enum":["option1","option2","option3"]}},
"titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[
{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}"#;

/// Asks `message` with `form` and reports the answer after `prefix`; a
/// client that cannot ask its user is an error, as the suite expects.
fn ask(prefix: &str, message: &str, form: &str) -> Result<String, String> {
    use benchtop::host::elicit::{self, Answer};
    let (action, content) = match elicit::ask(message, form) {
        Answer::Accepted(json) => ("accept", json),
        Answer::Declined => ("decline", "{}".to_owned()),
        Answer::Cancelled => ("cancel", "{}".to_owned()),
        Answer::Unsupported => {
            return Err(
                "the client cannot ask its user (no elicitation capability); connect with a client that declares elicitation".into(),
            );
        }
    };
    Ok(format!("{prefix}: action={action}, content={content}"))
}

/// The template `test://template/{id}/data`, as completion names it.
const TEMPLATE: &str = "test://template/{id}/data";

/// What completion offers for the prompt's arguments (the suite asks for
/// `arg1` starting with `test`).
const ARGUMENT_VALUES: &[&str] = &["test", "testValue1", "testValue2", "hello", "world"];

/// Ids the template is documented with.
const TEMPLATE_IDS: &[&str] = &["123", "456"];

impl offers::Guest for Fixtures {
    fn static_text() -> String {
        "This is the content of the static text resource.".into()
    }

    fn static_binary() -> Vec<u8> {
        RED_PIXEL_PNG.to_vec()
    }

    fn template_data(id: String) -> String {
        template_json(&id)
    }

    fn watched_resource() -> String {
        "This is the content of the watched resource.".into()
    }

    fn test_simple_prompt() -> String {
        "This is a simple prompt for testing.".into()
    }

    fn test_prompt_with_image() -> Vec<Block> {
        vec![
            Block::Image(Image {
                mime_type: "image/png".into(),
                data: RED_PIXEL_PNG.to_vec(),
            }),
            Block::Text("Please analyze the image above.".into()),
        ]
    }

    fn test_prompt_with_embedded_resource(args: offers::EmbeddedArgs) -> Vec<Block> {
        vec![
            Block::Resource(Embedded {
                uri: args.resource_uri,
                mime_type: "text/plain".into(),
                contents: EmbeddedContents::Text("Embedded resource content for testing.".into()),
            }),
            Block::Text("Please process the embedded resource above.".into()),
        ]
    }

    fn test_prompt_with_arguments(arg1: String, arg2: String) -> String {
        format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
    }

    fn test_input_required_result_prompt() -> Result<String, String> {
        let context = ask_field(
            "user_context",
            "What context should the prompt use?",
            "context",
        )?;
        Ok(format!("Answer with this context in mind: {context}"))
    }

    fn complete(target: String, argument: String, value: String) -> Vec<String> {
        completions(&target, &argument, &value)
    }
}

/// The template resource's JSON for one id.
fn template_json(id: &str) -> String {
    format!(
        r#"{{"id":{},"templateTest":true,"data":{}}}"#,
        json_string(id),
        json_string(&format!("Data for ID: {id}"))
    )
}

/// `text` as a JSON string literal, quotes included.
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// Values of `argument` of `target` (a prompt name or the template) that
/// start with `value`; nothing for targets and arguments this plugin lacks.
fn completions(target: &str, argument: &str, value: &str) -> Vec<String> {
    let pool = match (target, argument) {
        ("test_prompt_with_arguments", "arg1" | "arg2") => ARGUMENT_VALUES,
        (TEMPLATE, "id") => TEMPLATE_IDS,
        _ => &[],
    };
    pool.iter()
        .filter(|v| v.starts_with(value))
        .map(|v| (*v).to_owned())
        .collect()
}

#[cfg(target_arch = "wasm32")]
export!(Fixtures);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_flat_json_schema_objects() {
        for (form, fields) in [
            (USER_FORM, &["username", "email"][..]),
            (
                DEFAULTS_FORM,
                &["name", "age", "score", "status", "verified"],
            ),
            (
                ENUMS_FORM,
                &[
                    "untitledSingle",
                    "titledSingle",
                    "legacyEnum",
                    "untitledMulti",
                    "titledMulti",
                ],
            ),
        ] {
            let schema: serde_json::Value = serde_json::from_str(form).expect(form);
            assert_eq!(schema["type"], "object");
            let props = schema["properties"].as_object().expect("properties");
            let names: Vec<&str> = props.keys().map(String::as_str).collect();
            assert_eq!(names.len(), fields.len(), "{names:?}");
            for f in fields {
                assert!(props.contains_key(*f), "{f} missing from {names:?}");
            }
        }
        let defaults: serde_json::Value = serde_json::from_str(DEFAULTS_FORM).unwrap();
        assert_eq!(defaults["properties"]["score"]["default"], 95.5);
    }

    #[test]
    fn template_json_is_valid_json() {
        let v: serde_json::Value = serde_json::from_str(&template_json("a\"b")).unwrap();
        assert_eq!(v["id"], "a\"b");
    }

    #[test]
    fn template_json_is_what_the_suite_documents() {
        assert_eq!(
            template_json("123"),
            r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#
        );
    }

    #[test]
    fn template_json_escapes_the_id() {
        assert_eq!(
            template_json("a\"b\\c\n"),
            r#"{"id":"a\"b\\c\n","templateTest":true,"data":"Data for ID: a\"b\\c\n"}"#
        );
        assert_eq!(json_string("\u{1}"), r#""\u0001""#);
    }

    #[test]
    fn completion_filters_by_prefix_and_target() {
        assert_eq!(
            completions("test_prompt_with_arguments", "arg1", "test"),
            ["test", "testValue1", "testValue2"]
        );
        assert_eq!(completions(TEMPLATE, "id", "4"), ["456"]);
        assert!(completions("test_prompt_with_arguments", "arg3", "").is_empty());
        assert!(completions("test_simple_prompt", "arg1", "").is_empty());
    }

    #[test]
    fn prompt_substitutes_both_arguments() {
        use offers::Guest as _;
        assert_eq!(
            Fixtures::test_prompt_with_arguments("hello".into(), "world".into()),
            "Prompt with arguments: arg1='hello', arg2='world'"
        );
    }
}
