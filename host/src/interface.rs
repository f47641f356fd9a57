//! What a component offers: its tools, settings and hooks, derived from the
//! component alone (docs/design.md, Contract 1: a `.wasm` file is self-describing).

use crate::docs::{self, Tagged};
use crate::names::{check_tool_name, json_name};
use crate::schema::{self, Direction, resolve_alias};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::Arc;
use wit_parser::{Resolve, Type, TypeDefKind, TypeId, TypeOwner, WorldItem, WorldKey};

/// MCP tool annotations taken from doc-comment tags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// `@read-only`
    pub read_only: bool,
    /// `@destructive`
    pub destructive: bool,
    /// `@idempotent`
    pub idempotent: bool,
    /// `@open-world`
    pub open_world: bool,
}

/// How a function's return value becomes a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// No value: a short confirmation text.
    Nothing,
    /// A `string`, returned as one text block.
    Text,
    /// A `string` holding JSON (`@json`): text, plus the parsed value as structured content.
    Json,
    /// A `list<benchtop:host/content.block>`: the blocks themselves.
    Blocks,
    /// Any other value: structured content; `wrapped` when it is not a record
    /// and travels as `{"result": …}`.
    Structured {
        /// Whether the value is wrapped as `{"result": value}`.
        wrapped: bool,
    },
    /// A `result<T, E>`: `ok` maps as above, `err` becomes an `isError` result.
    Result {
        /// How the `ok` payload maps.
        ok: Box<Output>,
        /// How the `err` payload maps.
        err: ErrorOutput,
    },
}

/// How the `err` payload of a `result` becomes the error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorOutput {
    /// No payload.
    Nothing,
    /// A `string`: the message itself.
    Text,
    /// A record with `code` and `message`: `CODE: message`, record as structured content.
    CodeMessage,
    /// Anything else: its JSON.
    Other,
}

/// One exported function, as a tool.
#[derive(Debug, Clone)]
pub struct ToolDef {
    /// Tool name (the function name in snake_case), before any prefix.
    pub name: String,
    /// The exported interface holding the function (`ns:pkg/iface@ver`), or
    /// `None` for a world-level function.
    pub interface: Option<String>,
    /// The WIT function name.
    pub func: String,
    /// Parameters, in order.
    pub params: Vec<wit_parser::Param>,
    /// Whether the lone record parameter's fields are the arguments.
    pub flatten: bool,
    /// The return type.
    pub result: Option<Type>,
    /// How the result maps to MCP.
    pub output: Output,
    /// Description (doc comment without tags).
    pub description: String,
    /// Annotations from tags.
    pub annotations: Annotations,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured result, when there is one.
    pub output_schema: Option<Value>,
}

/// A setting a plugin declares with `@setting ENV flag=--x vscode=a.b access=ro`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingDecl {
    /// Environment variable the plugin reads.
    pub env: String,
    /// Command-line flag (`--definitions-path`), if any.
    pub flag: Option<String>,
    /// `.vscode/settings.json` key, if any.
    pub vscode: Option<String>,
    /// Directory access to grant for the value, if it names a directory.
    pub access: Option<crate::sandbox::Access>,
}

/// Everything benchtop derives from a component's bytes.
#[derive(Debug, Clone)]
pub struct PluginInterface {
    /// The component's WIT, with docs applied.
    pub resolve: Arc<Resolve>,
    /// Its tools.
    pub tools: Vec<ToolDef>,
    /// Settings it declares.
    pub settings: Vec<SettingDecl>,
    /// The export name of `benchtop:host/tick`, when the plugin exports it.
    pub tick_interface: Option<String>,
    /// Problems that do not prevent loading (such as missing docs).
    pub warnings: Vec<String>,
}

impl PluginInterface {
    /// Derives tools, settings and hooks from a component's bytes.
    pub fn from_component(wasm: &[u8]) -> Result<Self> {
        let decoded = wit_parser::decoding::decode(wasm)
            .context("decoding the component's WIT (is this a WebAssembly component, built for wasm32-wasip2?)")?;
        let (mut resolve, world) = match decoded {
            wit_parser::decoding::DecodedWasm::Component(r, w) => (r, w),
            wit_parser::decoding::DecodedWasm::WitPackage(..) => {
                bail!("this is a WIT package, not a component: build the plugin for wasm32-wasip2")
            }
        };
        let mut warnings = Vec::new();
        let world_docs = match docs::read_section(wasm)? {
            Some(json) => docs::apply(&mut resolve, &json),
            None => {
                warnings.push(format!(
                    "no `{}` section: tool descriptions are generated; build the plugin with `make plugins` (xtask inject-docs) to carry its WIT docs",
                    docs::SECTION_NAME
                ));
                Vec::new()
            }
        };
        let settings = world_docs
            .iter()
            .flat_map(|d| docs::split_tags(d).tags)
            .filter(|(t, _)| t == "setting")
            .map(|(_, args)| parse_setting(&args))
            .collect::<Result<Vec<_>>>()?;

        let mut tools = Vec::new();
        let mut tick_interface = None;
        for (key, item) in &resolve.worlds[world].exports {
            match item {
                WorldItem::Interface { id, .. } => {
                    let iface = &resolve.interfaces[*id];
                    let export_name = match key {
                        WorldKey::Name(n) => n.clone(),
                        WorldKey::Interface(i) => resolve.id_of(*i).context("unnamed interface")?,
                    };
                    if is_host_package(&resolve, iface.package) {
                        if iface.name.as_deref() == Some("tick") {
                            tick_interface = Some(export_name);
                        }
                        continue;
                    }
                    for func in iface.functions.values() {
                        tools.push(tool_def(&resolve, Some(&export_name), func, &mut warnings)?);
                    }
                }
                WorldItem::Function(func) => {
                    tools.push(tool_def(&resolve, None, func, &mut warnings)?);
                }
                WorldItem::Type { .. } => {}
            }
        }
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        for pair in tools.windows(2) {
            if pair[0].name == pair[1].name {
                bail!(
                    "two exported functions map to the tool name `{}` ({} and {}); rename one in the WIT",
                    pair[0].name,
                    pair[0].interface.as_deref().unwrap_or("world"),
                    pair[1].interface.as_deref().unwrap_or("world"),
                );
            }
        }
        Ok(Self {
            resolve: Arc::new(resolve),
            tools,
            settings,
            tick_interface,
            warnings,
        })
    }
}

fn is_host_package(resolve: &Resolve, pkg: Option<wit_parser::PackageId>) -> bool {
    pkg.is_some_and(|p| {
        let n = &resolve.packages[p].name;
        n.namespace == "benchtop" && n.name == "host"
    })
}

fn parse_setting(args: &str) -> Result<SettingDecl> {
    let mut words = args.split_whitespace();
    let env = words
        .next()
        .context("`@setting` needs an environment variable name")?
        .to_owned();
    let mut decl = SettingDecl {
        env,
        flag: None,
        vscode: None,
        access: None,
    };
    for word in words {
        let (k, v) = word
            .split_once('=')
            .with_context(|| format!("`@setting {args}`: expected key=value, got `{word}`"))?;
        match k {
            "flag" => decl.flag = Some(v.trim_start_matches('-').to_owned()),
            "vscode" => decl.vscode = Some(v.to_owned()),
            "access" => decl.access = Some(v.parse()?),
            other => {
                bail!("`@setting {args}`: unknown key `{other}` (known: flag, vscode, access)")
            }
        }
    }
    Ok(decl)
}

fn tool_def(
    resolve: &Resolve,
    interface: Option<&str>,
    func: &wit_parser::Function,
    warnings: &mut Vec<String>,
) -> Result<ToolDef> {
    let name = json_name(&func.name);
    check_tool_name(&name).map_err(anyhow::Error::msg)?;
    let tagged = func
        .docs
        .contents
        .as_deref()
        .map(docs::split_tags)
        .unwrap_or_default();
    let Tagged { text, .. } = &tagged;
    let description = if text.is_empty() {
        warnings.push(format!(
            "tool `{name}` has no doc comment: add `///` docs to `{}` in the WIT",
            func.name
        ));
        format!("Calls `{}`.", func.name)
    } else {
        text.clone()
    };
    let annotations = Annotations {
        read_only: tagged.has("read-only"),
        destructive: tagged.has("destructive"),
        idempotent: tagged.has("idempotent"),
        open_world: tagged.has("open-world"),
    };
    let flatten = func.params.len() == 1
        && matches!(
            resolve_alias(resolve, &func.params[0].ty),
            Err(TypeDefKind::Record(_))
        );
    let input_schema = schema::input_schema(resolve, &func.params, flatten)
        .with_context(|| format!("tool `{name}`: a parameter"))?;
    let json_tag = tagged.has("json");
    let output = classify(resolve, func.result.as_ref(), json_tag);
    if json_tag
        && !matches!(&output, Output::Json)
        && !matches!(&output, Output::Result { ok, .. } if **ok == Output::Json)
    {
        bail!("tool `{name}` is tagged @json but does not return a string (or result<string, _>)");
    }
    let structured = match &output {
        Output::Structured { wrapped } => func.result.map(|t| (t, *wrapped)),
        Output::Result { ok, .. } => match **ok {
            Output::Structured { wrapped } => {
                func.result.and_then(|t| match resolve_alias(resolve, &t) {
                    Err(TypeDefKind::Result(r)) => r.ok.map(|ok| (ok, wrapped)),
                    _ => None,
                })
            }
            _ => None,
        },
        _ => None,
    };
    let output_schema = structured
        .map(|(t, wrapped)| structured_schema(resolve, &t, wrapped))
        .transpose()
        .with_context(|| format!("tool `{name}`: its result"))?;
    Ok(ToolDef {
        name,
        interface: interface.map(str::to_owned),
        func: func.name.clone(),
        params: func.params.clone(),
        flatten,
        result: func.result,
        output,
        description,
        annotations,
        input_schema,
        output_schema,
    })
}

fn structured_schema(
    resolve: &Resolve,
    ty: &Type,
    wrapped: bool,
) -> Result<Value, schema::Unsupported> {
    let inner = schema::schema(resolve, ty, Direction::Output)?;
    Ok(if wrapped {
        json!({"type": "object", "properties": {"result": inner}, "required": ["result"]})
    } else {
        inner
    })
}

/// Decides how a return type maps to a tool result.
pub fn classify(resolve: &Resolve, ty: Option<&Type>, json_tag: bool) -> Output {
    let Some(ty) = ty else { return Output::Nothing };
    match resolve_alias(resolve, ty) {
        Ok(Type::String) if json_tag => Output::Json,
        Ok(Type::String) => Output::Text,
        Ok(_) => Output::Structured { wrapped: true },
        Err(TypeDefKind::List(inner)) if is_content_block(resolve, inner) => Output::Blocks,
        Err(TypeDefKind::Record(_)) => Output::Structured { wrapped: false },
        Err(TypeDefKind::Result(r)) => Output::Result {
            ok: Box::new(classify(resolve, r.ok.as_ref(), json_tag)),
            err: match r.err.as_ref().map(|e| resolve_alias(resolve, e)) {
                None => ErrorOutput::Nothing,
                Some(Ok(Type::String)) => ErrorOutput::Text,
                Some(Err(TypeDefKind::Record(rec)))
                    if ["code", "message"]
                        .iter()
                        .all(|n| rec.fields.iter().any(|f| f.name == *n)) =>
                {
                    ErrorOutput::CodeMessage
                }
                Some(_) => ErrorOutput::Other,
            },
        },
        Err(_) => Output::Structured { wrapped: true },
    }
}

/// The id of the definition behind aliases (`use` creates aliases).
fn base_id(resolve: &Resolve, ty: &Type) -> Option<TypeId> {
    let mut id = match ty {
        Type::Id(id) => *id,
        _ => return None,
    };
    while let TypeDefKind::Type(Type::Id(next)) = resolve.types[id].kind {
        id = next;
    }
    Some(id)
}

fn is_content_block(resolve: &Resolve, ty: &Type) -> bool {
    let Some(id) = base_id(resolve, ty) else {
        return false;
    };
    let def = &resolve.types[id];
    let TypeOwner::Interface(iface) = def.owner else {
        return false;
    };
    let iface = &resolve.interfaces[iface];
    def.name.as_deref() == Some("block")
        && iface.name.as_deref() == Some("content")
        && is_host_package(resolve, iface.package)
}
