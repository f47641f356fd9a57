//! Component return values as MCP tool results (docs/design.md, Contract 1).

use crate::wit::convert::to_json;
use crate::wit::interface::{ErrorOutput, Output};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{CallToolResult, ContentBlock as Content, Resource, ResourceContents};
use serde_json::{Value, json};
use wasmtime::component::Val;

/// Largest text a tool result may carry; beyond it the result is refused
/// with an error rather than flooding the client (and the agent's context).
pub const MAX_RESULT_BYTES: usize = 8 << 20;

/// Builds the MCP result of a successful call from the function's return value.
pub fn to_call_result(output: &Output, value: Option<Val>) -> CallToolResult {
    let result = build(output, value);
    let size: usize = result
        .content
        .iter()
        .map(|c| c.as_text().map_or(0, |t| t.text.len()))
        .sum();
    if size > MAX_RESULT_BYTES {
        return CallToolResult::error(vec![Content::text(format!(
            "the result is {size} bytes, over benchtop's limit of {MAX_RESULT_BYTES} bytes; ask for less (a smaller range or limit)"
        ))]);
    }
    result
}

fn build(output: &Output, value: Option<Val>) -> CallToolResult {
    match output {
        Output::Nothing => CallToolResult::success(vec![Content::text("done")]),
        Output::Text => CallToolResult::success(vec![Content::text(string_of(value))]),
        Output::Json => {
            let text = string_of(value);
            match serde_json::from_str::<Value>(&text) {
                Ok(parsed) => {
                    let mut r = CallToolResult::success(vec![Content::text(text)]);
                    r.structured_content = Some(wrap(parsed));
                    r
                }
                // Still useful to a reader; the plugin's bug is logged.
                Err(e) => {
                    tracing::warn!("a @json tool returned text that is not JSON: {e}");
                    CallToolResult::success(vec![Content::text(text)])
                }
            }
        }
        Output::Blocks => CallToolResult::success(blocks(value)),
        Output::Structured { wrapped, shape } => {
            let json = value.as_ref().map_or(Value::Null, |v| shape.to_json(v));
            let structured = if *wrapped {
                json!({ "result": json })
            } else {
                json
            };
            structured_success(structured)
        }
        Output::Result { ok, err } => match value {
            Some(Val::Result(Ok(inner))) => build(ok, inner.map(|b| *b)),
            Some(Val::Result(Err(inner))) => error_result(*err, inner.map(|b| *b)),
            other => build(
                &Output::Structured {
                    wrapped: true,
                    shape: Default::default(),
                },
                other,
            ),
        },
    }
}

fn structured_success(structured: Value) -> CallToolResult {
    let text = serde_json::to_string(&structured).unwrap_or_default();
    let mut r = CallToolResult::success(vec![Content::text(text)]);
    r.structured_content = Some(structured);
    r
}

fn error_result(kind: ErrorOutput, value: Option<Val>) -> CallToolResult {
    let mut r = CallToolResult::error(vec![Content::text(error_text(kind, value.as_ref()))]);
    if let (ErrorOutput::CodeMessage, Some(v)) = (kind, &value) {
        r.structured_content = Some(to_json(v));
    }
    r
}

/// The text of a function's `err` payload: `CODE: message` for a
/// `tool-error`, the string itself, or its JSON.
pub fn error_text(kind: ErrorOutput, value: Option<&Val>) -> String {
    match (kind, value) {
        (ErrorOutput::CodeMessage, Some(v)) => {
            let json = to_json(v);
            let code = json.get("code").and_then(Value::as_str).unwrap_or("ERROR");
            let message = json.get("message").and_then(Value::as_str).unwrap_or("");
            format!("{code}: {message}")
        }
        (ErrorOutput::Text, Some(Val::String(s))) => s.clone(),
        (_, Some(v)) => to_json(v).to_string(),
        (_, None) => "the plugin reported an error without details".to_owned(),
    }
}

/// A return value with any `result` taken apart: the `ok` payload, or the
/// error's text ([`error_text`]).
pub fn ok_or_text(output: &Output, value: Option<Val>) -> Result<Option<Val>, String> {
    match (output, value) {
        (Output::Result { .. }, Some(Val::Result(Ok(inner)))) => Ok(inner.map(|b| *b)),
        (Output::Result { err, .. }, Some(Val::Result(Err(inner)))) => {
            Err(error_text(*err, inner.as_deref()))
        }
        (_, other) => Ok(other),
    }
}

fn wrap(v: Value) -> Value {
    if v.is_object() {
        v
    } else {
        json!({ "result": v })
    }
}

fn string_of(value: Option<Val>) -> String {
    match value {
        Some(Val::String(s)) => s,
        Some(other) => to_json(&other).to_string(),
        None => String::new(),
    }
}

/// A `list<benchtop:host/content.block>` value as MCP content blocks.
pub(crate) fn blocks(value: Option<Val>) -> Vec<Content> {
    let Some(Val::List(items)) = value else {
        return Vec::new();
    };
    items
        .into_iter()
        .filter_map(|item| match item {
            Val::Variant(case, Some(payload)) => block(&case, *payload),
            _ => None,
        })
        .collect()
}

/// One `benchtop:host/content.block` as an MCP content block.
fn block(case: &str, payload: Val) -> Option<Content> {
    let fields = |v: Val| match v {
        Val::Record(fields) => fields,
        _ => Vec::new(),
    };
    match (case, payload) {
        ("text", Val::String(s)) => Some(Content::text(s)),
        ("image", image) => {
            let (data, mime) = media(fields(image));
            Some(Content::image(data, mime))
        }
        ("audio", audio) => {
            let (data, mime) = media(fields(audio));
            Some(Content::audio(data, mime))
        }
        ("resource", embedded) => {
            let (mut uri, mut mime, mut contents) = (String::new(), String::new(), None);
            for (name, v) in fields(embedded) {
                match (name.as_str(), v) {
                    ("uri", Val::String(s)) => uri = s,
                    ("mime-type", Val::String(s)) => mime = s,
                    ("contents", Val::Variant(kind, Some(inner))) => {
                        contents = Some((kind, *inner))
                    }
                    _ => {}
                }
            }
            let resource = match contents? {
                (kind, Val::String(text)) if kind == "text" => ResourceContents::text(text, uri),
                (_, v) => ResourceContents::blob(BASE64.encode(bytes(v)), uri),
            };
            Some(Content::resource(resource.with_mime_type(mime)))
        }
        ("resource-link", link) => {
            let mut resource = Resource::new("", "");
            for (name, v) in fields(link) {
                match (name.as_str(), v) {
                    ("uri", Val::String(s)) => resource.uri = s,
                    ("name", Val::String(s)) => resource.name = s,
                    ("description", Val::Option(Some(d))) => {
                        if let Val::String(s) = *d {
                            resource.description = Some(s);
                        }
                    }
                    ("mime-type", Val::Option(Some(m))) => {
                        if let Val::String(s) = *m {
                            resource.mime_type = Some(s);
                        }
                    }
                    _ => {}
                }
            }
            Some(Content::resource_link(resource))
        }
        _ => None,
    }
}

/// An `image` or `audio` record's bytes (base64) and media type.
fn media(fields: Vec<(String, Val)>) -> (String, String) {
    let mut mime = String::new();
    let mut data = Vec::new();
    for (name, v) in fields {
        match (name.as_str(), v) {
            ("mime-type", Val::String(s)) => mime = s,
            ("data", v) => data = bytes(v),
            _ => {}
        }
    }
    (BASE64.encode(data), mime)
}

/// A `list<u8>` value's bytes.
fn bytes(v: Val) -> Vec<u8> {
    match v {
        Val::List(items) => items
            .into_iter()
            .filter_map(|b| if let Val::U8(b) = b { Some(b) } else { None })
            .collect(),
        _ => Vec::new(),
    }
}
