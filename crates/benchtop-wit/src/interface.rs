//! What a component offers: its tools, settings and hooks, derived from the
//! component alone (docs/design.md, Contract 1: a `.wasm` file is self-describing).

use crate::docs::{self, Tagged};
use crate::names::{check_tool_name, json_name};
use crate::schema::{self, Direction};
use crate::shape::Shape;
use crate::types::resolve_alias;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::Arc;
use wit_parser::{Resolve, Type, TypeDefKind, TypeId, TypeOwner, WorldItem, WorldKey};

/// Directory access granted to a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read only.
    Ro,
    /// Read and write.
    Rw,
}

impl std::str::FromStr for Access {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "ro" => Ok(Access::Ro),
            "rw" => Ok(Access::Rw),
            other => bail!("unknown access `{other}`: use `ro` (read-only) or `rw` (read-write)"),
        }
    }
}

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
        /// How the value's type spells it in JSON.
        shape: Arc<Shape>,
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

/// What an exported function is to MCP, by its doc tags (docs/design.md,
/// Contract 6): a tool unless tagged otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// A tool (no tag).
    Tool,
    /// `@resource URI [mime=TYPE]`: reads a resource. A URI without
    /// `{variables}` is a fixed resource; with them it is a template whose
    /// variables are the function's (string) parameters.
    Resource {
        /// The URI or URI template (RFC 6570 `{var}` and `{+var}`).
        uri: String,
        /// The contents' MIME type (default `text/markdown` for text,
        /// `application/json` for `@json`, `application/octet-stream` for bytes).
        mime: Option<String>,
    },
    /// `@prompt`: builds a prompt; its parameters are the prompt's
    /// arguments, its `string` result the user message (or each of its
    /// content blocks one user message).
    Prompt,
    /// `@completion`: `func(target: string, argument: string, value: string)
    /// -> list<string>`, suggesting values for an argument of one of the
    /// plugin's prompts (`target` is its name) or a variable of one of its
    /// resource templates (`target` is the template).
    Completion,
}

/// A JSON Schema object.
pub type Schema = serde_json::Map<String, Value>;

/// One exported function: a tool, or (by its tags) a resource, a prompt or
/// the completion hook.
#[derive(Debug, Clone)]
pub struct ToolDef {
    /// What the function is to MCP.
    pub role: Role,
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
    /// JSON Schema of the arguments. Shared: every `tools/list` answer
    /// holds it, and a copy of every schema costs a start a millisecond.
    pub input_schema: Arc<Schema>,
    /// JSON Schema of the structured result, when there is one.
    pub output_schema: Option<Arc<Schema>>,
    /// `@ui ui://…`: the view (MCP Apps) a client that renders views shows
    /// for this tool's results; served as a resource by any plugin.
    pub view: Option<String>,
    /// `@requires sampling|roots|elicitation`: client capabilities the
    /// function cannot work without; a 2026-07-28 client that did not
    /// declare one is refused (-32021) before the plugin runs.
    pub requires: Vec<String>,
    /// `@task` (`@task required`, `@task asks-first`): the tool may run as
    /// a task of MCP's tasks extension (SEP-2663), outliving the request
    /// that started it.
    pub task: Option<TaskMode>,
}

impl ToolDef {
    /// The argument naming the state a call works on (a session, a
    /// machine): the top-level field tagged `@header`, which a load
    /// balancer routes on (SEP-2243) and the state store keys by.
    pub fn handle_argument(&self) -> Option<&str> {
        let props = self.input_schema.get("properties")?.as_object()?;
        props
            .iter()
            .find(|(_, p)| p.get("x-mcp-header").is_some())
            .map(|(name, _)| name.as_str())
    }
}

/// How a tool runs as a task: `@task [required] [asks-first]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMode {
    /// Whether a client that takes no tasks may still call it.
    pub support: TaskSupport,
    /// `asks-first`: the tool asks its questions before its long work, so
    /// a 2026-07-28 client is asked them in `input_required` rounds and
    /// the call becomes a task on the round that brings the answers
    /// (SEP-2663's composition with SEP-2322), rather than a task that
    /// waits on `tasks/update` from its first request.
    pub asks_first: bool,
}

/// How a tool runs as a task (`@task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// As a task for a client that takes tasks, else within its request.
    Optional,
    /// Only as a task: a client that takes none is refused (-32021).
    Required,
}

/// The client capabilities a function may `@requires`.
pub const REQUIRABLE: [&str; 3] = ["elicitation", "sampling", "roots"];

/// The MIME type of an MCP Apps view (`io.modelcontextprotocol/ui`).
pub const VIEW_MIME: &str = "text/html;profile=mcp-app";

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
    pub access: Option<Access>,
}

/// Everything benchtop derives from a component's bytes.
#[derive(Debug, Clone)]
pub struct PluginInterface {
    /// The component's WIT, with docs applied.
    pub resolve: Arc<Resolve>,
    /// Its tools.
    pub tools: Vec<ToolDef>,
    /// Its resources and resource templates (`@resource`), by URI.
    pub resources: Vec<ToolDef>,
    /// Its prompts (`@prompt`), by name.
    pub prompts: Vec<ToolDef>,
    /// Its completion hook (`@completion`), if any.
    pub completion: Option<ToolDef>,
    /// Settings it declares.
    pub settings: Vec<SettingDecl>,
    /// The export name of `benchtop:host/tick`, when the plugin exports it.
    pub tick_interface: Option<String>,
    /// The export name of `benchtop:host/durable-state`, when the plugin
    /// exports it: its state can move between replicas (Contract 9).
    pub durable_interface: Option<String>,
    /// The interfaces it serves to other plugins (full names with
    /// versions), when it exports `benchtop:host/provider`: their functions
    /// are never tools.
    pub provides: Vec<String>,
    /// The export name of `benchtop:host/provider`, when it exports it.
    pub provider_interface: Option<String>,
    /// The interfaces it imports from other plugins (neither WASI nor
    /// `benchtop:host`): the host routes their calls to a serving plugin.
    pub uses: Vec<String>,
    /// Problems that do not prevent loading (such as missing docs).
    pub warnings: Vec<String>,
}

impl PluginInterface {
    /// Derives tools, settings and hooks from a component's bytes.
    pub fn from_component(wasm: &[u8]) -> Result<Self> {
        let (resolve, world) = decode_component(wasm)?;
        Self::from_decoded(resolve, world, docs::read_section(wasm)?)
    }

    /// [`Self::from_component`], with the component's outline: its WIT and
    /// docs alone, a few KiB from which [`Self::from_outline`] derives the
    /// same interface. Decoding a component walks all of its code, which
    /// is most of the time deriving takes; an outline has none.
    ///
    /// The outline leaves out the WASI and `benchtop:host` interfaces the
    /// component imports unless an export needs their types: nothing is
    /// derived from them, and decoding them was about 40% of deriving a
    /// plugin's interface at every start. The interface is derived from
    /// that same pruned WIT, so a start from the outline sees what this
    /// one does.
    pub fn with_outline(wasm: &[u8]) -> Result<(Self, Vec<u8>)> {
        let (mut resolve, world) = decode_component(wasm)?;
        prune_unused_imports(&mut resolve, world);
        let package = resolve.worlds[world]
            .package
            .context("the component's world belongs to no package")?;
        let mut outline = wit_component::encode(&resolve, package)
            .context("encoding the component's WIT as an outline")?;
        docs::copy_section(wasm, &mut outline)?;
        let interface = Self::from_decoded(resolve, world, docs::read_section(wasm)?)?;
        Ok((interface, outline))
    }

    /// Derives the interface from an outline made by [`Self::with_outline`].
    pub fn from_outline(outline: &[u8]) -> Result<Self> {
        let decoded = wit_parser::decoding::decode(outline).context("decoding an outline")?;
        let wit_parser::decoding::DecodedWasm::WitPackage(resolve, package) = decoded else {
            bail!("an outline holds a WIT package, and this is a component");
        };
        let mut worlds = resolve.packages[package].worlds.values();
        let (Some(&world), None) = (worlds.next(), worlds.next()) else {
            bail!("an outline holds exactly one world");
        };
        Self::from_decoded(resolve, world, docs::read_section(outline)?)
    }

    fn from_decoded(
        mut resolve: Resolve,
        world: wit_parser::WorldId,
        docs_section: Option<Value>,
    ) -> Result<Self> {
        let mut warnings = Vec::new();
        let provider_interface = host_export(&resolve, world, "provider");
        // A plugin that serves other plugins offers no tool of its own
        // unless the world exports bare functions.
        let only_serves = provider_interface.is_some()
            && !resolve.worlds[world]
                .exports
                .values()
                .any(|item| matches!(item, WorldItem::Function(_)));
        let world_docs = match docs_section {
            Some(json) => docs::apply(&mut resolve, &json),
            // Nothing to describe: there are no tools.
            None if only_serves => Vec::new(),
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
        let mut durable_interface = None;
        let mut provides = Vec::new();
        for (key, item) in &resolve.worlds[world].exports {
            match item {
                WorldItem::Interface { id, .. } => {
                    let iface = &resolve.interfaces[*id];
                    let export_name = world_key_name(&resolve, key);
                    if is_host_package(&resolve, iface.package) {
                        match iface.name.as_deref() {
                            Some("tick") => tick_interface = Some(export_name),
                            Some("durable-state") => durable_interface = Some(export_name),
                            _ => {}
                        }
                        continue;
                    }
                    if provider_interface.is_some() {
                        provides.push(export_name);
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
        let (mut resources, mut prompts, mut completion) = (Vec::new(), Vec::new(), None);
        let mut all = std::mem::take(&mut tools);
        for def in all.drain(..) {
            match &def.role {
                Role::Tool => tools.push(def),
                Role::Resource { .. } => resources.push(def),
                Role::Prompt => prompts.push(def),
                Role::Completion => {
                    if let Some(first) = completion.replace(def) {
                        bail!(
                            "two functions are tagged @completion (`{}` and another); one completion hook answers for all of a plugin's prompts and templates",
                            first.func
                        );
                    }
                }
            }
        }
        resources.sort_by(|a, b| a.resource_uri().cmp(b.resource_uri()));
        distinct_resources(&resources)?;
        prompts.sort_by(|a, b| a.name.cmp(&b.name));
        for pair in prompts.windows(2) {
            if pair[0].name == pair[1].name {
                bail!(
                    "two exported functions map to the prompt name `{}`",
                    pair[0].name
                );
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
        let uses = resolve.worlds[world]
            .imports
            .iter()
            .filter_map(|(key, item)| match item {
                WorldItem::Interface { id, .. } => {
                    (!is_host_or_wasi(&resolve, *id)).then(|| world_key_name(&resolve, key))
                }
                _ => None,
            })
            .collect();
        Ok(Self {
            resolve: Arc::new(resolve),
            tools,
            resources,
            prompts,
            completion,
            settings,
            tick_interface,
            durable_interface,
            provides,
            provider_interface,
            uses,
            warnings,
        })
    }
}

/// A component's WIT: the resolve and the world it targets.
fn decode_component(wasm: &[u8]) -> Result<(Resolve, wit_parser::WorldId)> {
    let decoded = wit_parser::decoding::decode(wasm).context(
        "decoding the component's WIT (is this a WebAssembly component, built for wasm32-wasip2?)",
    )?;
    match decoded {
        wit_parser::decoding::DecodedWasm::Component(r, w) => Ok((r, w)),
        wit_parser::decoding::DecodedWasm::WitPackage(..) => {
            bail!("this is a WIT package, not a component: build the plugin for wasm32-wasip2")
        }
    }
}

/// The export name of the `benchtop:host` interface `name` (such as
/// `provider`) when the world exports it.
fn host_export(resolve: &Resolve, world: wit_parser::WorldId, name: &str) -> Option<String> {
    resolve.worlds[world]
        .exports
        .iter()
        .find_map(|(key, item)| match item {
            WorldItem::Interface { id, .. }
                if is_host_package(resolve, resolve.interfaces[*id].package)
                    && resolve.interfaces[*id].name.as_deref() == Some(name) =>
            {
                Some(world_key_name(resolve, key))
            }
            _ => None,
        })
}

/// `name(param, …)` of each function of the interface named `full_name`
/// (`ns:pkg/iface@ver`) in `resolve`: what `benchtop check` shows of an
/// interface served between plugins. None when there is no such interface.
pub fn functions_of(resolve: &Resolve, full_name: &str) -> Option<Vec<String>> {
    let (_, iface) = resolve
        .interfaces
        .iter()
        .find(|(id, _)| resolve.id_of(*id).as_deref() == Some(full_name))?;
    Some(
        iface
            .functions
            .values()
            .map(|f| {
                let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
                format!("{}({})", f.name, params.join(", "))
            })
            .collect(),
    )
}

/// The name a world item is imported or exported under: the interface's
/// full name (`ns:pkg/iface@ver`) or the plain name.
fn world_key_name(resolve: &Resolve, key: &WorldKey) -> String {
    match key {
        WorldKey::Name(n) => n.clone(),
        WorldKey::Interface(i) => resolve.id_of(*i).unwrap_or_default(),
    }
}

/// Drops from `world`'s imports the WASI and `benchtop:host` interfaces
/// that neither its exports nor its other imports need (through `use`):
/// what a plugin reads, writes and calls on the host says nothing about
/// its tools. Interfaces from other packages (served by peer plugins,
/// [`PluginInterface::uses`]) stay.
fn prune_unused_imports(resolve: &mut Resolve, world: wit_parser::WorldId) {
    let w = &resolve.worlds[world];
    let exported = w.exports.values().filter_map(|item| match item {
        WorldItem::Interface { id, .. } => Some(*id),
        _ => None,
    });
    let imported = w.imports.values().filter_map(|item| match item {
        WorldItem::Interface { id, .. } => (!is_host_or_wasi(resolve, *id)).then_some(*id),
        // A type the world `use`s from an interface needs it.
        WorldItem::Type { id, .. } => match resolve.types[*id].kind {
            TypeDefKind::Type(Type::Id(used)) => match resolve.types[used].owner {
                TypeOwner::Interface(owner) => Some(owner),
                _ => None,
            },
            _ => None,
        },
        WorldItem::Function(_) => None,
    });
    let mut pending: Vec<_> = exported.chain(imported).collect();
    let mut needed = std::collections::HashSet::new();
    while let Some(id) = pending.pop() {
        if needed.insert(id) {
            pending.extend(resolve.interface_direct_deps(id));
        }
    }
    resolve.worlds[world].imports.retain(|_, item| match item {
        WorldItem::Interface { id, .. } => needed.contains(id),
        _ => true,
    });
}

/// Whether interface `id` is the host's (`benchtop:host`) or WASI's, not
/// a peer plugin's.
fn is_host_or_wasi(resolve: &Resolve, id: wit_parser::InterfaceId) -> bool {
    let package = resolve.interfaces[id].package;
    is_host_package(resolve, package)
        || package.is_some_and(|p| resolve.packages[p].name.namespace == "wasi")
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
    schema::check_headers(&input_schema)
        .map_err(|e| anyhow::anyhow!("tool `{name}`: argument {e}"))?;
    let role = role_of(&tagged, &name, &input_schema)?;
    let json_tag = tagged.has("json");
    let output = classify(resolve, func.result.as_ref(), json_tag);
    if json_tag
        && !matches!(&output, Output::Json)
        && !matches!(&output, Output::Result { ok, .. } if **ok == Output::Json)
    {
        bail!("tool `{name}` is tagged @json but does not return a string (or result<string, _>)");
    }
    let structured = match &output {
        Output::Structured { wrapped, .. } => func.result.map(|t| (t, *wrapped)),
        Output::Result { ok, .. } => match **ok {
            Output::Structured { wrapped, .. } => {
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
    if let Role::Resource { .. } | Role::Prompt | Role::Completion = role {
        check_non_tool_result(resolve, &role, &name, func.result.as_ref(), &output)?;
    }
    let view = match tagged.arg("ui") {
        None => None,
        Some(uri)
            if role == Role::Tool
                && uri.starts_with("ui://")
                && !uri.contains(char::is_whitespace) =>
        {
            Some(uri.to_owned())
        }
        Some(uri) if role != Role::Tool => {
            bail!("`{name}`: @ui {uri} names a view, which only a tool has; drop the tag")
        }
        Some(uri) => {
            bail!("`{name}`: @ui needs one `ui://` URI (the view's resource), not `{uri}`")
        }
    };
    let mut requires = Vec::new();
    for (tag, args) in &tagged.tags {
        if tag != "requires" {
            continue;
        }
        for capability in args.split_whitespace() {
            if !REQUIRABLE.contains(&capability) {
                bail!(
                    "`{name}`: @requires {capability}: a function may require {} (client capabilities)",
                    REQUIRABLE.join(", ")
                );
            }
            if !requires.iter().any(|r| r == capability) {
                requires.push(capability.to_owned());
            }
        }
    }
    let task = match tagged.arg("task") {
        None => None,
        Some(_) if role != Role::Tool => {
            bail!("`{name}`: @task is for tools (a prompt or resource answers within its request)")
        }
        Some(words) => {
            let mut mode = TaskMode {
                support: TaskSupport::Optional,
                asks_first: false,
            };
            for word in words.split_whitespace() {
                match word {
                    "optional" => mode.support = TaskSupport::Optional,
                    "required" => mode.support = TaskSupport::Required,
                    "asks-first" => mode.asks_first = true,
                    other => bail!(
                        "`{name}`: @task takes `required` and `asks-first` (or nothing), not `{other}`"
                    ),
                }
            }
            Some(mode)
        }
    };
    Ok(ToolDef {
        role,
        name,
        interface: interface.map(str::to_owned),
        func: func.name.clone(),
        params: func.params.clone(),
        flatten,
        result: func.result,
        output,
        description,
        annotations,
        input_schema: Arc::new(into_object(input_schema)),
        output_schema: output_schema.map(|s| Arc::new(into_object(s))),
        view,
        requires,
        task,
    })
}

/// The MIME type of a resource's contents: as tagged, else by its type.
pub fn mime_of(def: &ToolDef) -> String {
    if let Role::Resource {
        mime: Some(mime), ..
    } = &def.role
    {
        return mime.clone();
    }
    if def.resource_uri().starts_with("ui://") {
        return VIEW_MIME.to_owned();
    }
    let ok = match &def.output {
        Output::Result { ok, .. } => ok.as_ref(),
        other => other,
    };
    match ok {
        Output::Json => "application/json",
        Output::Text => "text/markdown",
        _ => "application/octet-stream",
    }
    .to_owned()
}

impl ToolDef {
    /// The URI (or URI template) of a resource function; empty for others.
    pub fn resource_uri(&self) -> &str {
        match &self.role {
            Role::Resource { uri, .. } => uri,
            _ => "",
        }
    }

    /// The names of the arguments (JSON names), in order, with whether each
    /// is required: a prompt's arguments, a template's variables.
    pub fn argument_names(&self) -> Vec<(String, bool, Option<String>)> {
        let props = self
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = props else {
            return Vec::new();
        };
        // In the function's order (the schema's map is sorted by name);
        // a flattened record's fields keep the schema's order.
        let mut names: Vec<String> = if self.flatten {
            props.keys().cloned().collect()
        } else {
            self.params.iter().map(|p| json_name(&p.name)).collect()
        };
        names.retain(|n| props.contains_key(n));
        names
            .into_iter()
            .map(|k| {
                let description = props[&k]["description"].as_str().map(str::to_owned);
                let required = required.contains(&k.as_str());
                (k, required, description)
            })
            .collect()
    }
}

/// The role a function's tags give it, checked against its arguments.
/// Fails when two of a plugin's resources read the same URIs: one URI, or
/// templates that differ only in variable names (the second would never be
/// reached, since the first answers every URI it matches).
fn distinct_resources(resources: &[ToolDef]) -> Result<()> {
    let mut shapes = std::collections::BTreeMap::new();
    for def in resources {
        let shape = crate::uri_template::UriTemplate::parse(def.resource_uri())
            .map(|t| t.shape())
            .unwrap_or_else(|_| def.resource_uri().to_owned());
        if let Some(first) = shapes.insert(shape, def) {
            bail!(
                "`{}` (`{}`) and `{}` (`{}`) both read the same resources (variable names do not tell templates apart); give one another URI",
                first.func,
                first.resource_uri(),
                def.func,
                def.resource_uri()
            );
        }
    }
    Ok(())
}

/// A schema the derivation made: always an object.
fn into_object(schema: Value) -> Schema {
    match schema {
        Value::Object(o) => o,
        _ => Schema::new(),
    }
}

fn role_of(tagged: &Tagged, name: &str, input_schema: &Value) -> Result<Role> {
    let roles = ["resource", "prompt", "completion"]
        .iter()
        .filter(|t| tagged.has(t))
        .count();
    if roles > 1 {
        bail!("`{name}` has more than one of @resource, @prompt, @completion; keep one");
    }
    let props = input_schema["properties"].as_object();
    let all_strings = props.is_none_or(|p| {
        p.values()
            .all(|v| v["type"] == "string" || v["type"] == serde_json::json!(["string", "null"]))
    });
    if let Some(args) = tagged.arg("resource") {
        let mut words = args.split_whitespace();
        let uri = words
            .next()
            .with_context(|| format!("`{name}`: @resource needs a URI, e.g. `@resource app://state` or `@resource app://items/{{id}}`"))?
            .to_owned();
        let template = crate::uri_template::UriTemplate::parse(&uri)
            .with_context(|| format!("`{name}`: @resource {uri}"))?;
        let mut mime = None;
        for word in words {
            match word.split_once('=') {
                Some(("mime", m)) => mime = Some(m.to_owned()),
                _ => bail!("`{name}`: @resource {args}: unknown `{word}` (known: mime=TYPE)"),
            }
        }
        let mut vars: Vec<String> = template.variables().map(str::to_owned).collect();
        let mut params: Vec<String> = props
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        vars.sort();
        params.sort();
        if vars != params || !all_strings {
            bail!(
                "`{name}`: the variables of @resource {uri} ({}) must be exactly its parameters, all strings ({})",
                vars.join(", "),
                params.join(", ")
            );
        }
        return Ok(Role::Resource { uri, mime });
    }
    if tagged.has("prompt") {
        if !all_strings {
            bail!(
                "`{name}`: a @prompt's arguments must all be strings (MCP prompt arguments are strings)"
            );
        }
        return Ok(Role::Prompt);
    }
    if tagged.has("completion") {
        if props.map_or(0, |p| p.len()) != 3 || !all_strings {
            bail!(
                "`{name}`: @completion must be `func(target: string, argument: string, value: string) -> list<string>`"
            );
        }
        return Ok(Role::Completion);
    }
    Ok(Role::Tool)
}

/// A resource returns text (`string`, `@json`) or bytes (`list<u8>`); a
/// prompt text; the completion hook a list of strings — each possibly in a
/// `result` whose error is shown to the client.
fn check_non_tool_result(
    resolve: &Resolve,
    role: &Role,
    name: &str,
    result: Option<&Type>,
    output: &Output,
) -> Result<()> {
    let ok_output = match output {
        Output::Result { ok, .. } => ok.as_ref(),
        other => other,
    };
    let ok_type = result.and_then(|t| match resolve_alias(resolve, t) {
        Err(TypeDefKind::Result(r)) => r.ok,
        _ => Some(*t),
    });
    let is_list_of = |want: Type| {
        ok_type.is_some_and(|t| {
            matches!(resolve_alias(resolve, &t), Err(TypeDefKind::List(inner)) if resolve_alias(resolve, inner) == Ok(want))
        })
    };
    let fits = match role {
        Role::Resource { .. } => {
            matches!(ok_output, Output::Text | Output::Json) || is_list_of(Type::U8)
        }
        Role::Prompt => matches!(ok_output, Output::Text | Output::Blocks),
        Role::Completion => is_list_of(Type::String),
        Role::Tool => true,
    };
    if !fits {
        bail!(
            "`{name}`: {} must return {}",
            match role {
                Role::Resource { .. } => "a @resource",
                Role::Prompt => "a @prompt",
                _ => "@completion",
            },
            match role {
                Role::Resource { .. } => "string (text), list<u8> (bytes), or a result of one",
                Role::Prompt =>
                    "string (the user message) or list<benchtop:host/content.block> (one user message each), or a result of one",
                _ => "list<string>",
            }
        );
    }
    Ok(())
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
        Ok(_) => Output::Structured {
            wrapped: true,
            shape: Arc::default(),
        },
        Err(TypeDefKind::List(inner)) if is_content_block(resolve, inner) => Output::Blocks,
        Err(TypeDefKind::Record(_)) => Output::Structured {
            wrapped: false,
            shape: Arc::new(Shape::of(resolve, ty)),
        },
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
        Err(_) => Output::Structured {
            wrapped: true,
            shape: Arc::new(Shape::of(resolve, ty)),
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool definition of `f` in a one-function interface with `docs`.
    fn def(docs: &str, signature: &str) -> Result<ToolDef> {
        let docs: String = docs.lines().map(|l| format!("    /// {l}\n")).collect();
        tool_f(&format!("{docs}    f: {signature};"))
    }

    /// The tool definition of `f` in interface `i` whose body is `items`.
    fn tool_f(items: &str) -> Result<ToolDef> {
        let wit = format!("package t:t;\ninterface i {{\n{items}\n}}\n");
        let mut resolve = Resolve::default();
        let pkg = resolve.push_str("t.wit", &wit)?;
        let iface = resolve.packages[pkg].interfaces["i"];
        let func = resolve.interfaces[iface].functions["f"].clone();
        tool_def(&resolve, Some("t:t/i"), &func, &mut Vec::new())
    }

    /// An outline keeps what the exports need and the peers' interfaces,
    /// and drops the host's and WASI's interfaces nothing else uses.
    #[test]
    fn pruning_keeps_what_exports_use_and_peer_imports() {
        let wit = r#"
            package t:t;
            interface tools {
                use benchtop:host/types.{thing};
                f: func(x: thing) -> string;
            }
            world plugin {
                import wasi:io/streams;
                import benchtop:host/log;
                import acme:peer/api;
                export tools;
            }
            package wasi:io { interface streams { read: func() -> u8; } }
            package benchtop:host {
                interface types { type thing = u32; }
                interface log { write: func(s: string); }
            }
            package acme:peer { interface api { ask: func() -> string; } }
        "#;
        let mut resolve = Resolve::default();
        let pkg = resolve.push_str("t.wit", wit).unwrap();
        let world = resolve.packages[pkg].worlds["plugin"];
        let names = |r: &Resolve| {
            let mut n: Vec<String> = r.worlds[world]
                .imports
                .keys()
                .map(|k| r.name_world_key(k))
                .collect();
            n.sort();
            n
        };
        assert_eq!(
            names(&resolve),
            [
                "acme:peer/api",
                "benchtop:host/log",
                "benchtop:host/types",
                "wasi:io/streams"
            ]
        );
        prune_unused_imports(&mut resolve, world);
        assert_eq!(names(&resolve), ["acme:peer/api", "benchtop:host/types"]);
        // Still a world that encodes and decodes.
        let outline = wit_component::encode(&resolve, pkg).unwrap();
        wit_parser::decoding::decode(&outline).unwrap();
    }

    /// Hardening item 9: templates that differ only in variable names are
    /// one resource; a view's URI names whose it is literally.
    #[test]
    fn hardening_9_one_plugin_reads_a_template_shape_once() {
        let a = def(
            "A.\n@resource x://s/{id}/state",
            "func(id: string) -> string",
        )
        .unwrap();
        let b = def(
            "B.\n@resource x://s/{sid}/state",
            "func(sid: string) -> string",
        )
        .unwrap();
        let c = def(
            "C.\n@resource x://s/{id}/trace",
            "func(id: string) -> string",
        )
        .unwrap();
        assert!(distinct_resources(&[a.clone(), c.clone()]).is_ok());
        let e = distinct_resources(&[a, c, b]).unwrap_err().to_string();
        assert!(
            e.contains("`x://s/{id}/state`") && e.contains("`x://s/{sid}/state`"),
            "{e}"
        );
        let e = def("V.\n@resource ui://{x}/view", "func(x: string) -> string").unwrap_err();
        assert!(format!("{e:#}").contains("`ui://NAME/…`"), "{e:#}");
    }

    /// The tool `f(args: a)` where `a` is a record with `fields` (WIT).
    fn with_record(fields: &str) -> Result<ToolDef> {
        tool_f(&format!(
            "    record inner {{ /// @header Deep\n deep: string }}\n    record a {{\n{fields}\n    }}\n    /// F.\n    f: func(args: a) -> string;"
        ))
    }

    /// SEP-2243: a field tagged `@header NAME` is mirrored into the
    /// `Mcp-Param-NAME` header (`x-mcp-header`), where clients and load
    /// balancers can only carry one value of a simple type.
    #[test]
    fn header_tags_become_x_mcp_header_where_a_header_can_carry_them() {
        let d = with_record(
            "/// The session.\n/// @header Session\nsession-id: option<string>,\nsteps: u32,",
        )
        .unwrap();
        let session = &d.input_schema["properties"]["session_id"];
        assert_eq!(session["x-mcp-header"], "Session");
        assert_eq!(session["description"], "The session.");
        assert!(
            d.input_schema["properties"]["steps"]
                .get("x-mcp-header")
                .is_none()
        );
        // Nested records keep a properties-only path: allowed.
        assert!(with_record("/// @header Id\nid: u32,\nnested: inner,").is_ok());
        for (fields, why) in [
            (
                "/// @header Bad Name\nid: string,",
                "must name an HTTP header",
            ),
            (
                "/// @header Id\na: string,\n/// @header id\nb: string,",
                "two fields",
            ),
            (
                "/// @header Cells\ncells: list<u32>,",
                "string, integer or bool",
            ),
            ("many: list<inner>,", "not inside lists"),
        ] {
            let e = format!("{:#}", with_record(fields).unwrap_err());
            assert!(e.contains(why), "{fields}: {e}");
        }
    }

    #[test]
    fn a_tool_says_whether_it_runs_as_a_task() {
        let mode = |support, asks_first| {
            Some(TaskMode {
                support,
                asks_first,
            })
        };
        assert_eq!(
            def("Runs.\n@task", "func() -> string").unwrap().task,
            mode(TaskSupport::Optional, false)
        );
        assert_eq!(
            def("Runs.\n@task required", "func() -> string")
                .unwrap()
                .task,
            mode(TaskSupport::Required, false)
        );
        assert_eq!(
            def("Runs.\n@task asks-first required", "func() -> string")
                .unwrap()
                .task,
            mode(TaskSupport::Required, true)
        );
        assert_eq!(def("Runs.", "func() -> string").unwrap().task, None);
        let e = def("Runs.\n@task always", "func() -> string").unwrap_err();
        assert!(format!("{e:#}").contains("`required`"), "{e:#}");
        let e = def("P.\n@prompt\n@task", "func() -> string").unwrap_err();
        assert!(format!("{e:#}").contains("for tools"), "{e:#}");
    }

    #[test]
    fn a_function_names_the_client_capabilities_it_requires() {
        let d = def(
            "Asks the model.\n@requires sampling\n@requires roots sampling",
            "func() -> string",
        )
        .unwrap();
        assert_eq!(d.requires, ["sampling", "roots"]);
        assert_eq!(d.description, "Asks the model.");
        let e = def("X.\n@requires telepathy", "func() -> string").unwrap_err();
        assert!(
            format!("{e:#}").contains("elicitation, sampling, roots"),
            "{e:#}"
        );
    }

    #[test]
    fn a_tool_names_its_view_with_ui() {
        let d = def("Shows a table.\n@ui ui://ecu/table", "func() -> string").unwrap();
        assert_eq!(d.view.as_deref(), Some("ui://ecu/table"));
        assert_eq!(d.description, "Shows a table.");
        assert_eq!(def("No view.", "func() -> string").unwrap().view, None);
    }

    #[test]
    fn tuples_are_fixed_length_arrays_strict_clients_accept() {
        let d = def("Pairs.", "func(cells: list<tuple<u32, u32>>) -> string").unwrap();
        let pair = &d.input_schema["properties"]["cells"]["items"];
        assert_eq!(pair["prefixItems"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            (&pair["minItems"], &pair["maxItems"]),
            (&2.into(), &2.into())
        );
        // The MCP Inspector's --strict refuses a bare `false` schema.
        assert!(pair.get("items").is_none(), "{pair}");
    }

    #[test]
    fn a_view_must_be_one_ui_uri_on_a_tool() {
        let e = def("@ui https://x", "func() -> string").unwrap_err();
        assert!(e.to_string().contains("one `ui://` URI"), "{e}");
        let e = def("@ui", "func() -> string").unwrap_err();
        assert!(e.to_string().contains("one `ui://` URI"), "{e}");
        let e = def("@resource ui://a\n@ui ui://b", "func() -> string").unwrap_err();
        assert!(e.to_string().contains("only a tool has"), "{e}");
    }
}
