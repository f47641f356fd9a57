//! One tool call's path, the same for every front end (the MCP server, the
//! HTTP transport through it, `benchtop call`): look the name up in the
//! catalogue, convert the JSON arguments to the tool's WIT parameters, invoke
//! the plugin, and turn its return value (or its failure) into an MCP result
//! (docs/design.md, "A call's path"). Front ends only decide how a
//! [`CallContext`] is made and how an [`UnknownTool`] is shown.

use crate::convert::{ArgumentError, FromJson};
use crate::error::CallError;
use crate::imports::ProgressSink;
use crate::interface::ToolDef;
use crate::plugin::Plugin;
use crate::registry::Catalog;
use crate::result::to_call_result;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Val;

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

/// A tool name the catalogue does not hold, with the names it may have
/// meant.
#[derive(Debug, Clone, thiserror::Error)]
#[error("Unknown tool: {} ({})", clip(name), hint(similar))]
pub struct UnknownTool {
    /// The name asked for.
    pub name: String,
    /// Close names in the catalogue, best first.
    pub similar: Vec<String>,
}

fn hint(similar: &[String]) -> String {
    if similar.is_empty() {
        return "tools/list, or `benchtop tools`, lists them".to_owned();
    }
    let names: Vec<String> = similar.iter().map(|s| format!("`{s}`")).collect();
    format!("did you mean {}?", names.join(" or "))
}

/// At most 80 characters of a name a client sent, for error messages.
pub fn clip(name: &str) -> String {
    let count = name.chars().count();
    if count <= 80 {
        return name.to_owned();
    }
    let head: String = name.chars().take(60).collect();
    format!("{head}… ({count} characters)")
}

/// Calls tool `name` of `catalog`. A failure of the call itself (bad
/// arguments, a trap, a plugin that cannot start) is an `isError` result the
/// agent can read and act on; only a name that is not in the catalogue is an
/// error of the request.
pub async fn call_tool(
    catalog: &Catalog,
    name: &str,
    args: &Map<String, Value>,
    ctx: CallContext,
) -> Result<CallToolResult, UnknownTool> {
    let Some((plugin, index)) = catalog.lookup(name) else {
        return Err(UnknownTool {
            name: name.to_owned(),
            similar: catalog
                .similar(name)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        });
    };
    Ok(call_plugin(&plugin, index, args, ctx).await)
}

/// Calls tool `index` of `plugin`: arguments → invoke → result.
pub async fn call_plugin(
    plugin: &Plugin,
    index: usize,
    args: &Map<String, Value>,
    ctx: CallContext,
) -> CallToolResult {
    let outcome = match arguments(plugin, index, args) {
        Ok(params) => plugin.call(index, &params, ctx).await,
        Err(e) => Err(CallError::from(e)),
    };
    match outcome {
        Ok(value) => to_call_result(&plugin.interface.tools[index].output, value),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}

/// Converts JSON arguments to the parameters of `plugin`'s tool `index`,
/// checked against the same WIT types the tool's input schema came from.
pub fn arguments(
    plugin: &Plugin,
    index: usize,
    args: &Map<String, Value>,
) -> Result<Vec<Val>, ArgumentError> {
    arguments_for(plugin, &plugin.interface.tools[index], args)
}

/// Converts JSON arguments to the parameters of any of `plugin`'s exported
/// functions (a tool, a prompt, a resource's variables).
pub fn arguments_for(
    plugin: &Plugin,
    def: &ToolDef,
    args: &Map<String, Value>,
) -> Result<Vec<Val>, ArgumentError> {
    let conv = FromJson::new(&plugin.interface.resolve);
    if def.flatten {
        let ty = def.params[0].ty;
        return Ok(vec![conv.value(
            "arguments",
            &ty,
            &Value::Object(args.clone()),
        )?]);
    }
    let slots: Vec<(&str, &wit_parser::Type)> = def
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.ty))
        .collect();
    Ok(conv
        .fields("arguments", &slots, args)?
        .into_iter()
        .map(|(_, v)| v)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tools_name_the_close_ones() {
        let e = UnknownTool {
            name: "helo".into(),
            similar: vec!["hello".into(), "help".into()],
        };
        assert_eq!(
            e.to_string(),
            "Unknown tool: helo (did you mean `hello` or `help`?)"
        );
        let e = UnknownTool {
            name: "x".repeat(100),
            similar: vec![],
        };
        assert!(
            e.to_string()
                .ends_with("(100 characters) (tools/list, or `benchtop tools`, lists them)")
        );
    }
}
