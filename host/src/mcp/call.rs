//! One tool call's path, the same for every front end (the MCP server, the
//! HTTP transport through it, `benchtop call`): look the name up in the
//! catalogue, convert the JSON arguments to the tool's WIT parameters, invoke
//! the plugin, and turn its return value (or its failure) into an MCP result
//! (docs/design.md, "A call's path"). Front ends only decide how a
//! [`CallContext`] is made and how an [`UnknownTool`] is shown.

use crate::mcp::result::to_call_result;
use crate::runtime::context::CallContext;
use crate::runtime::error::CallError;
use crate::runtime::plugin::Plugin;
use crate::runtime::registry::Catalog;
use crate::wit::convert::{ArgumentError, FromJson};
use crate::wit::interface::ToolDef;
use crate::wit::names::clip;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};
use wasmtime::component::Val;

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
    run_plugin(plugin, index, args, ctx)
        .await
        .unwrap_or_else(|e| CallToolResult::error(vec![ContentBlock::text(e.to_string())]))
}

/// Like [`call_plugin`], telling the plugin's failure (it trapped or
/// cannot start) apart from a result: a task reports it as `failed`.
/// Arguments that do not fit are a result, as in [`call_plugin`].
pub async fn run_plugin(
    plugin: &Plugin,
    index: usize,
    args: &Map<String, Value>,
    ctx: CallContext,
) -> Result<CallToolResult, CallError> {
    let params = match arguments(plugin, index, args) {
        Ok(params) => params,
        Err(e) => {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                CallError::from(e).to_string(),
            )]));
        }
    };
    let def = &plugin.interface.tools[index];
    // Borrowed: the state store may run the call again (`around`).
    let params = &params;
    let invoke = |ctx| async move {
        let outcome = plugin.call(index, params, ctx).await?;
        Ok(to_call_result(&def.output, outcome))
    };
    // With a state store, a plugin whose state can move runs each call on
    // the handle's latest state and leaves its new state there; a caller
    // that cannot be recognised again has no state to keep.
    match crate::mcp::durable::current() {
        Some(durable)
            if plugin.interface.durable_interface.is_some()
                && !plugin_kit::clients::is_anonymous(&ctx.caller) =>
        {
            durable.around(plugin, def, args, ctx, invoke).await
        }
        _ => invoke(ctx).await,
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
