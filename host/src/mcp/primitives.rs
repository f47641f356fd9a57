//! What a plugin offers besides tools (docs/design.md, Contract 6):
//! resources read by `@resource` functions, prompts built by `@prompt`
//! functions, and argument completion by the `@completion` hook. Each goes
//! through the same instance, limits and recovery as a tool call
//! ([`Plugin::call_export`]); only the mapping of values differs.

use crate::mcp::call::arguments_for;
use crate::mcp::result::ok_or_text;
use crate::runtime::context::CallContext;
use crate::runtime::plugin::{Export, Plugin};
use crate::runtime::registry::Catalog;
use crate::runtime::registry::view_meta;
use crate::wit::interface::ToolDef;
use crate::wit::interface::mime_of;
use crate::wit::names::clip;
use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteResult, CompletionInfo, ErrorCode, GetPromptResult, PromptMessage, ReadResourceResult,
    Reference, ResourceContents, Role as MessageRole,
};
use serde_json::{Map, Value};
use wasmtime::component::Val;

/// The JSON-RPC code MCP gives an unknown resource.
const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// At most this many completion values are returned (MCP's own cap).
const MAX_COMPLETIONS: usize = CompletionInfo::MAX_VALUES;

/// `resources/read`: finds the function behind `uri` (a fixed URI, or a
/// template's variables) and returns what it returns as text or bytes.
pub async fn read_resource(
    catalog: &Catalog,
    uri: &str,
    ctx: CallContext,
) -> Result<ReadResourceResult, ErrorData> {
    let Some((plugin, index, vars)) = catalog.resource(uri) else {
        return Err(ErrorData::new(
            RESOURCE_NOT_FOUND,
            format!(
                "Resource not found: {} (resources/list and resources/templates/list show what there is)",
                clip(uri)
            ),
            Some(serde_json::json!({ "uri": clip(uri) })),
        ));
    };
    let def = &plugin.interface.resources[index];
    let args: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let value = invoke(&plugin, Export::Resource(index), def, &args, ctx).await?;
    let mime = mime_of(def);
    let contents = match value {
        Some(Val::String(text)) => ResourceContents::text(text, uri),
        Some(Val::List(items)) => {
            let bytes: Vec<u8> = items
                .into_iter()
                .filter_map(|b| if let Val::U8(b) = b { Some(b) } else { None })
                .collect();
            ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
        }
        _ => ResourceContents::text("", uri),
    };
    let mut contents = contents.with_mime_type(mime);
    if let Some(meta) = view_meta(def.resource_uri()) {
        contents = contents.with_meta(meta);
    }
    Ok(ReadResourceResult::new(vec![contents]))
}

/// `prompts/get`: the prompt function's text as the user's message.
pub async fn get_prompt(
    catalog: &Catalog,
    name: &str,
    args: Map<String, Value>,
    ctx: CallContext,
) -> Result<GetPromptResult, ErrorData> {
    let Some((plugin, index)) = catalog.prompt(name) else {
        return Err(ErrorData::invalid_params(
            format!(
                "Unknown prompt: {} (prompts/list shows the prompts)",
                clip(name)
            ),
            None,
        ));
    };
    let def = &plugin.interface.prompts[index];
    let messages = match invoke(&plugin, Export::Prompt(index), def, &args, ctx).await? {
        Some(Val::String(s)) => vec![PromptMessage::new_text(MessageRole::User, s)],
        blocks @ Some(Val::List(_)) => crate::mcp::result::blocks(blocks)
            .into_iter()
            .map(|b| PromptMessage::new(MessageRole::User, b))
            .collect(),
        _ => Vec::new(),
    };
    let mut result = GetPromptResult::new(messages);
    result.description = Some(def.description.clone());
    Ok(result)
}

/// `completion/complete`: asks the owning plugin's `@completion` hook for
/// values of one argument of a prompt or one variable of a template. A
/// plugin without the hook, or an argument it does not know, completes to
/// nothing (as MCP asks), never to an error.
pub async fn complete(
    catalog: &Catalog,
    reference: &Reference,
    argument: &str,
    value: &str,
    ctx: CallContext,
) -> Result<CompleteResult, ErrorData> {
    let (plugin, target) = match reference {
        Reference::Prompt(p) => match catalog.prompt(&p.name) {
            Some((plugin, i)) => {
                let name = plugin.interface.prompts[i].name.clone();
                (plugin, name)
            }
            None => return Err(unknown_reference(reference)),
        },
        Reference::Resource(r) => match catalog.resource_by_template(&r.uri) {
            Some((plugin, _)) => (plugin, r.uri.clone()),
            None => return Err(unknown_reference(reference)),
        },
        _ => return Err(unknown_reference(reference)),
    };
    let Some(def) = plugin.interface.completion.as_ref() else {
        return Ok(CompleteResult::new(CompletionInfo::default()));
    };
    let params = def.argument_names();
    let args: Map<String, Value> = params
        .iter()
        .zip([target.as_str(), argument, value])
        .map(|((name, _, _), v)| (name.clone(), Value::String(v.to_owned())))
        .collect();
    let values: Vec<String> = match invoke(&plugin, Export::Completion, def, &args, ctx).await? {
        Some(Val::List(items)) => items
            .into_iter()
            .filter_map(|v| {
                if let Val::String(s) = v {
                    Some(s)
                } else {
                    None
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    let total = values.len();
    let shown: Vec<String> = values.into_iter().take(MAX_COMPLETIONS).collect();
    let has_more = total > shown.len();
    let info =
        CompletionInfo::with_pagination(shown, Some(total as u32), has_more).unwrap_or_default();
    Ok(CompleteResult::new(info))
}

fn unknown_reference(reference: &Reference) -> ErrorData {
    let what = match reference {
        Reference::Prompt(p) => format!("prompt `{}`", clip(&p.name)),
        Reference::Resource(r) => format!("resource template `{}`", clip(&r.uri)),
        _ => "reference".to_owned(),
    };
    ErrorData::invalid_params(
        format!(
            "completion/complete: no {what} (prompts/list and resources/templates/list show what can be completed)"
        ),
        None,
    )
}

/// Converts the arguments, calls the export and takes its `result` apart;
/// every failure is a JSON-RPC error whose message says what went wrong.
async fn invoke(
    plugin: &Plugin,
    export: Export,
    def: &ToolDef,
    args: &Map<String, Value>,
    ctx: CallContext,
) -> Result<Option<Val>, ErrorData> {
    let params = arguments_for(plugin, def, args)
        .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    let value = plugin
        .call_export(export, &params, ctx)
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    ok_or_text(&def.output, value).map_err(|text| match export {
        Export::Resource(_) => ErrorData::new(RESOURCE_NOT_FOUND, text, None),
        _ => ErrorData::invalid_params(text, None),
    })
}

#[cfg(test)]
mod tests {
    use crate::runtime::registry::view_meta;

    #[test]
    fn views_carry_a_closed_csp_and_a_border_preference() {
        let meta = view_meta("ui://benchtop/ecu-table").expect("a ui:// resource has _meta");
        let ui = &meta.0["ui"];
        assert_eq!(ui["csp"]["connectDomains"], serde_json::json!([]));
        assert_eq!(ui["csp"]["resourceDomains"], serde_json::json!([]));
        assert_eq!(ui["prefersBorder"], true);
    }

    #[test]
    fn other_resources_carry_no_view_meta() {
        assert!(view_meta("log://x.csv").is_none());
        assert!(view_meta("kitchen://greeting").is_none());
        // Only the scheme counts, not a `ui://` further in.
        assert!(view_meta("app://ui://x").is_none());
    }
}
