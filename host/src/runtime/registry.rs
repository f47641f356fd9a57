//! The live catalogue: which tool, prompt and resource belongs to which
//! plugin.
//!
//! A catalogue is an immutable snapshot; changes (hot swap) build a new one
//! and swap it in, so in-flight calls keep the plugin they started with.

use crate::runtime::plugin::Plugin;
use crate::wit::uri_template::{Namespace, UriTemplate};
// The same distance the plugins use for their own "did you mean" hints.
use plugin_kit::suggest::edit_distance;
use rmcp::model::{Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolAnnotations};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

/// A URI's reader: the plugin, its resource index, and the template's
/// variables with their values.
pub type ResourceMatch = (Arc<Plugin>, usize, Vec<(String, String)>);

/// One immutable set of loaded plugins and what they offer.
#[derive(Default)]
pub struct Catalog {
    plugins: Vec<Arc<Plugin>>,
    tools: BTreeMap<String, (Arc<Plugin>, usize)>,
    listing: Vec<Tool>,
    prompts: BTreeMap<String, (Arc<Plugin>, usize)>,
    prompt_listing: Vec<Prompt>,
    /// Fixed URIs and templates, in URI order.
    resources: Vec<(UriTemplate, Arc<Plugin>, usize)>,
    resource_listing: Vec<Resource>,
    template_listing: Vec<ResourceTemplate>,
}

/// A plugin left out of a catalogue: a name it offers is taken, or a URI
/// it would serve is another plugin's.
pub struct Refusal {
    /// The plugin refused.
    pub plugin: Arc<Plugin>,
    /// Why, naming both plugins and the way out ([`Clash`] as text).
    pub message: String,
    /// Why, as a value.
    pub clash: Clash,
}

impl Catalog {
    /// Builds a catalogue from plugins in load order. A plugin is refused
    /// whole (none of its tools, prompts or resources are served) when a
    /// tool or prompt name it offers is taken by an earlier plugin, when
    /// one of its resources is in a namespace that belongs to another
    /// plugin (whatever the load order: the owner is served), or when one
    /// of its resources could answer a URI that an earlier plugin's
    /// resource answers ([`admit`] says how). Each refusal's error names
    /// both plugins.
    pub fn build(plugins: Vec<Arc<Plugin>>) -> (Self, Vec<Refusal>) {
        let mut catalog = Catalog::default();
        let mut refusals = Vec::new();
        let verdicts = admit(&plugins);
        for (plugin, verdict) in plugins.into_iter().zip(verdicts) {
            if let Some(clash) = verdict {
                refusals.push(Refusal {
                    message: clash.to_string(),
                    clash,
                    plugin,
                });
                continue;
            }
            for i in 0..plugin.interface.tools.len() {
                catalog
                    .tools
                    .insert(plugin.tool_name(i), (plugin.clone(), i));
            }
            for i in 0..plugin.interface.prompts.len() {
                catalog
                    .prompts
                    .insert(plugin.prompt_name(i), (plugin.clone(), i));
            }
            for (i, def) in plugin.interface.resources.iter().enumerate() {
                // Checked when the interface was read.
                if let Ok(t) = UriTemplate::parse(def.resource_uri()) {
                    catalog.resources.push((t, plugin.clone(), i));
                }
            }
            catalog.plugins.push(plugin);
        }
        catalog.listing = catalog
            .tools
            .iter()
            .map(|(name, (plugin, i))| mcp_tool(name, plugin, *i))
            .collect();
        catalog.prompt_listing = catalog
            .prompts
            .iter()
            .map(|(name, (plugin, i))| mcp_prompt(name, &plugin.interface.prompts[*i]))
            .collect();
        catalog
            .resources
            .sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        for (t, plugin, i) in &catalog.resources {
            let def = &plugin.interface.resources[*i];
            let description = def.description.clone();
            let mime = crate::wit::interface::mime_of(def);
            let name = def.name.clone();
            if t.is_template() {
                catalog.template_listing.push(
                    ResourceTemplate::new(t.as_str(), name)
                        .with_description(description)
                        .with_mime_type(mime),
                );
            } else {
                let mut resource = Resource::new(t.as_str(), name)
                    .with_description(description)
                    .with_mime_type(mime);
                resource.meta = view_meta(t.as_str());
                catalog.resource_listing.push(resource);
            }
        }
        // A view may come from another plugin (a companion whose only job
        // is views), so a missing one is a warning, not a refusal.
        for (name, (plugin, i)) in &catalog.tools {
            if let Some(view) = &plugin.interface.tools[*i].view
                && catalog.resource(view).is_none()
            {
                tracing::warn!(
                    "tool `{name}` names the view {view}, which no loaded plugin serves; clients that render views will show nothing for it"
                );
            }
        }
        (catalog, refusals)
    }

    /// The tools, sorted by name (a deterministic order, as MCP asks).
    pub fn tools(&self) -> &[Tool] {
        &self.listing
    }

    /// The plugin and tool index behind a tool name.
    pub fn lookup(&self, name: &str) -> Option<(Arc<Plugin>, usize)> {
        self.tools.get(name).map(|(p, i)| (p.clone(), *i))
    }

    /// The prompts, sorted by name.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompt_listing
    }

    /// The plugin and prompt index behind a prompt name.
    pub fn prompt(&self, name: &str) -> Option<(Arc<Plugin>, usize)> {
        self.prompts.get(name).map(|(p, i)| (p.clone(), *i))
    }

    /// The fixed resources, sorted by URI.
    pub fn resources(&self) -> &[Resource] {
        &self.resource_listing
    }

    /// The resource templates, sorted by template.
    pub fn resource_templates(&self) -> &[ResourceTemplate] {
        &self.template_listing
    }

    /// The plugin, resource index and variables behind a URI: a fixed URI
    /// first, then the first template (in order) that matches.
    pub fn resource(&self, uri: &str) -> Option<ResourceMatch> {
        let fixed = self
            .resources
            .iter()
            .find(|(t, _, _)| !t.is_template() && t.as_str() == uri);
        fixed
            .map(|(_, p, i)| (p.clone(), *i, Vec::new()))
            .or_else(|| {
                self.resources
                    .iter()
                    .find_map(|(t, p, i)| t.matches(uri).map(|vars| (p.clone(), *i, vars)))
            })
    }

    /// The plugin and resource index of a template or fixed URI, as written.
    pub fn resource_by_template(&self, template: &str) -> Option<(Arc<Plugin>, usize)> {
        self.resources
            .iter()
            .find(|(t, _, _)| t.as_str() == template)
            .map(|(_, p, i)| (p.clone(), *i))
    }

    /// The loaded plugins.
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// Tool names closest to `name`, for "did you mean" hints.
    pub fn similar(&self, name: &str) -> Vec<&str> {
        // A name this long is no typo, and the distance costs its length
        // times every tool name's: only say which names it contains.
        if name.len() > 256 {
            return self
                .tools
                .keys()
                .filter(|k| name.contains(k.as_str()))
                .take(3)
                .map(String::as_str)
                .collect();
        }
        let mut scored: Vec<(usize, &str)> = self
            .tools
            .keys()
            .map(|k| (edit_distance(name, k), k.as_str()))
            .filter(|(d, k)| {
                *d <= k.len().max(name.len()) / 3 + 1 || k.contains(name) || name.contains(&**k)
            })
            .collect();
        scored.sort();
        scored.into_iter().take(3).map(|(_, k)| k).collect()
    }
}

/// Namespaces that belong to benchtop's first-party plugins whether or not
/// they are loaded, so that no other plugin can serve their URIs even when
/// they are absent: the views the first-party tools name (`ui://benchtop/`),
/// each domain plugin's scheme and the first-party skills. Each pairs a
/// [`Namespace`] as shown
/// with the plugin's name (its file stem, `_` as `-`).
pub const RESERVED_NAMESPACES: &[(&str, &str)] = &[
    ("ui://benchtop/", "views"),
    ("ble:", "ble-buffer"),
    ("cp1600:", "cp1600"),
    ("log:", "log-query"),
    ("rom:", "ecu-tables"),
    ("x86:", "x86-inspect"),
    // The first-party skills (`plugins/*/skills/`).
    ("skill://ble-sniffing/", "ble-buffer"),
    ("skill://cp1600-debugging/", "cp1600"),
    ("skill://dos-debugging/", "x86-inspect"),
    ("skill://ecu-tuning/", "ecu-tables"),
    ("skill://knock-diagnosis/", "ecu-tables"),
    ("skill://log-investigation/", "log-query"),
];

/// Who may serve URIs in a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ownership {
    /// A first-party namespace: only the plugin of this name, loaded or not.
    Reserved(&'static str),
    /// Named after these claimants (indices): only they may serve it.
    Named(Vec<usize>),
    /// No plugin's: any may serve it, and where two would answer one URI,
    /// the earlier-loaded keeps it.
    Shared,
}

/// Who owns `namespace`, given the names of the plugins that declare
/// resources in it (`claimants`, in any order: the answer does not depend
/// on it). A reserved namespace is its first-party plugin's. Otherwise it
/// belongs to the claimants named after it: the one whose name is its key
/// (the scheme, or a view's authority), else those whose name is the key
/// and a `-` word more (`kitchen-sink` owns `kitchen:` and `ui://kitchen/`).
/// Names are the operator's (file stem or config name), never the
/// component's say, which is why they decide.
fn owner_of(namespace: &Namespace, claimants: &[&str]) -> Ownership {
    let shown = namespace.to_string();
    if let Some((_, owner)) = RESERVED_NAMESPACES.iter().find(|(ns, _)| *ns == shown) {
        return Ownership::Reserved(owner);
    }
    let ranks: Vec<u8> = claimants
        .iter()
        .map(|name| name_match(name, namespace.key()))
        .collect();
    match ranks.iter().copied().max() {
        Some(best) if best > 0 => {
            Ownership::Named((0..claimants.len()).filter(|&i| ranks[i] == best).collect())
        }
        _ => Ownership::Shared,
    }
}

/// How closely plugin `name` matches a namespace's `key`: 2 when it is the
/// key, 1 when it is the key and a `-` word more, else 0.
fn name_match(name: &str, key: &str) -> u8 {
    // File stems become names with `_` as `-`, a config name may keep `_`,
    // and a scheme or authority has no case.
    let name = name.to_ascii_lowercase().replace('_', "-");
    let key = key.replace('_', "-");
    if name == key {
        2
    } else if name
        .strip_prefix(&key)
        .is_some_and(|rest| rest.starts_with('-'))
    {
        1
    } else {
        0
    }
}

/// A plugin as a refusal names it: `` `name` (source) ``, or
/// `` `name` (not loaded) `` for a reserved namespace's absent owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Who {
    /// The plugin's name.
    pub name: String,
    /// Its file, when it is loaded.
    pub source: Option<String>,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Some(source) => write!(f, "`{}` ({source})", self.name),
            None => write!(f, "`{}` (not loaded)", self.name),
        }
    }
}

/// Why a plugin was left out of a catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Clash {
    /// A tool or prompt name that an earlier-loaded plugin offers.
    #[error(
        "plugin {plugin} was not loaded: its {kind} `{name}` is already provided by plugin {other}. Give one of them a prefix in the config file."
    )]
    Name {
        /// The plugin refused.
        plugin: Who,
        /// `tool` or `prompt`.
        kind: &'static str,
        /// The name, with prefix.
        name: String,
        /// The plugin that offers it.
        other: Who,
    },
    /// A resource in a namespace that belongs to another plugin.
    #[error(
        "plugin {plugin} was not loaded: its resource `{uri}` is in the namespace `{namespace}`, {}. A plugin serves resources only in namespaces of its own or of no plugin, and a prefix does not rename URIs: serve it under `{suggestion}` instead (wit/README.md, \"Who serves which URI\").",
        owned_by(.owner, .reserved)
    )]
    Foreign {
        /// The plugin refused.
        plugin: Who,
        /// Its resource's URI or template, as written.
        uri: String,
        /// The namespace.
        namespace: Namespace,
        /// The namespace's owner.
        owner: Who,
        /// Whether it is a first-party namespace ([`RESERVED_NAMESPACES`]).
        reserved: bool,
        /// A namespace the refused plugin may use: one named after it.
        suggestion: String,
    },
    /// A resource that could answer a URI that a resource of an
    /// earlier-loaded plugin answers, in a namespace both may serve.
    #[error(
        "plugin {plugin} was not loaded: its resource `{uri}` overlaps the resource `{other_uri}` of plugin {other} (both would answer `{example}`). A prefix does not rename URIs: serve only one of them, or move one under a scheme named after its plugin."
    )]
    Overlap {
        /// The plugin refused.
        plugin: Who,
        /// Its resource's URI or template, as written.
        uri: String,
        /// The plugin that serves the other.
        other: Who,
        /// The other resource's URI or template, as written.
        other_uri: String,
        /// A URI both would answer.
        example: String,
    },
}

fn owned_by(owner: &Who, reserved: &bool) -> String {
    if *reserved {
        format!("which is reserved for the first-party plugin {owner}")
    } else {
        format!("which belongs to plugin {owner}, named after it")
    }
}

/// What [`admit`] needs of a plugin; a trait so that the rules can be
/// tested without compiling components.
trait Offer {
    /// Its name.
    fn name(&self) -> &str;
    /// Its file, as errors show it.
    fn source(&self) -> String;
    /// Its tools' names, prefix included.
    fn tool_names(&self) -> Vec<String>;
    /// Its prompts' names, prefix included.
    fn prompt_names(&self) -> Vec<String>;
    /// Its resources' URIs and templates, as written, in URI order.
    fn resource_uris(&self) -> Vec<String>;
}

impl Offer for Arc<Plugin> {
    fn name(&self) -> &str {
        &self.name
    }
    fn source(&self) -> String {
        self.source.display().to_string()
    }
    fn tool_names(&self) -> Vec<String> {
        (0..self.interface.tools.len())
            .map(|i| self.tool_name(i))
            .collect()
    }
    fn prompt_names(&self) -> Vec<String> {
        (0..self.interface.prompts.len())
            .map(|i| self.prompt_name(i))
            .collect()
    }
    fn resource_uris(&self) -> Vec<String> {
        self.interface
            .resources
            .iter()
            .map(|r| r.resource_uri().to_owned())
            .collect()
    }
}

/// The steps that looking for URIs two plugins' templates share may take
/// in one catalogue build, all pairs together (see [`UriTemplate::overlap`]):
/// ten times what one pair may, so that plugins with many templates in a
/// shared namespace delay a build by a bounded time (seconds at most).
const ADMISSION_SEARCH_BUDGET: usize = 10 * crate::wit::uri_template::SEARCH_BUDGET;

/// Decides which plugins join a catalogue, one verdict per plugin (`None`:
/// admitted), in load order. A plugin is refused whole, as for a tool name
/// taken, when:
/// - a tool or prompt name of it is taken by an earlier admitted plugin;
/// - one of its resources is in a namespace that belongs to another plugin
///   ([`owner_of`]), whichever loads first: the owner's claim does not
///   depend on order, so an intruder that sorts first cannot win;
/// - one of its resources overlaps ([`UriTemplate::overlap`]) a resource of
///   an earlier admitted plugin, which can only be in a namespace both may
///   serve (one nobody owns, or one two plugins are named after).
fn admit<P: Offer>(plugins: &[P]) -> Vec<Option<Clash>> {
    let who = |i: usize| Who {
        name: plugins[i].name().to_owned(),
        source: Some(plugins[i].source()),
    };
    // Checked when each interface was read; one that fails here is skipped
    // by `Catalog::build` too.
    let templates: Vec<Vec<UriTemplate>> = plugins
        .iter()
        .map(|p| {
            p.resource_uris()
                .iter()
                .filter_map(|u| UriTemplate::parse(u).ok())
                .collect()
        })
        .collect();
    // Who declares what, over every plugin: ownership ignores load order
    // (and whether the owner itself gets refused for another reason).
    let mut claimants: BTreeMap<&Namespace, Vec<usize>> = BTreeMap::new();
    for (i, ts) in templates.iter().enumerate() {
        for t in ts {
            let list = claimants.entry(t.namespace()).or_default();
            if !list.contains(&i) {
                list.push(i);
            }
        }
    }
    let ownership: BTreeMap<&Namespace, (Ownership, &Vec<usize>)> = claimants
        .iter()
        .map(|(ns, list)| {
            let names: Vec<&str> = list.iter().map(|&i| plugins[i].name()).collect();
            (*ns, (owner_of(ns, &names), list))
        })
        .collect();

    let mut tools: BTreeMap<String, usize> = BTreeMap::new();
    let mut prompts: BTreeMap<String, usize> = BTreeMap::new();
    let mut served: Vec<(&UriTemplate, usize)> = Vec::new();
    let mut budget = ADMISSION_SEARCH_BUDGET;
    let mut verdicts = Vec::with_capacity(plugins.len());
    for (i, plugin) in plugins.iter().enumerate() {
        let tool_names = plugin.tool_names();
        let prompt_names = plugin.prompt_names();
        let taken = |kind: &'static str, names: &[String], taken: &BTreeMap<String, usize>| {
            names.iter().find_map(|n| {
                taken.get(n).map(|&o| Clash::Name {
                    plugin: who(i),
                    kind,
                    name: n.clone(),
                    other: who(o),
                })
            })
        };
        let foreign = || {
            templates[i].iter().find_map(|t| {
                let ns = t.namespace();
                let (ownership, claimants) = ownership.get(ns)?;
                let (owner, reserved) = match ownership {
                    Ownership::Reserved(name) if *name != plugin.name() => {
                        let loaded = plugins.iter().position(|p| p.name() == *name);
                        let owner = match loaded {
                            Some(o) => who(o),
                            None => Who {
                                name: (*name).to_owned(),
                                source: None,
                            },
                        };
                        (owner, true)
                    }
                    Ownership::Named(owners) => {
                        if owners.iter().any(|&o| claimants[o] == i) {
                            return None;
                        }
                        (who(claimants[owners[0]]), false)
                    }
                    Ownership::Reserved(_) | Ownership::Shared => return None,
                };
                let suggestion = match ns.is_view() {
                    true => format!("{}://{}/…", ns.scheme(), plugin.name()),
                    false => format!("{}://…", plugin.name()),
                };
                Some(Clash::Foreign {
                    plugin: who(i),
                    uri: t.as_str().to_owned(),
                    namespace: ns.clone(),
                    owner,
                    reserved,
                    suggestion,
                })
            })
        };
        let overlap = || {
            templates[i].iter().find_map(|t| {
                served
                    .iter()
                    // URIs of two namespaces never meet: a scheme, and a
                    // view's authority, are literal text of the template.
                    .filter(|(u, o)| *o != i && u.namespace() == t.namespace())
                    .find_map(|(u, o)| {
                        t.overlap_within(u, &mut budget)
                            .map(|example| Clash::Overlap {
                                plugin: who(i),
                                uri: t.as_str().to_owned(),
                                other: who(*o),
                                other_uri: u.as_str().to_owned(),
                                example,
                            })
                    })
            })
        };
        let clash = taken("tool", &tool_names, &tools)
            .or_else(|| taken("prompt", &prompt_names, &prompts))
            .or_else(foreign)
            .or_else(overlap);
        if clash.is_none() {
            tools.extend(tool_names.into_iter().map(|n| (n, i)));
            prompts.extend(prompt_names.into_iter().map(|n| (n, i)));
            served.extend(templates[i].iter().map(|t| (t, i)));
        }
        verdicts.push(clash);
    }
    verdicts
}

fn mcp_tool(name: &str, plugin: &Plugin, index: usize) -> Tool {
    let def = &plugin.interface.tools[index];
    let mut tool = Tool::new(
        name.to_owned(),
        def.description.clone(),
        def.input_schema.clone(),
    );
    if let Some(schema) = &def.output_schema {
        tool = tool.with_raw_output_schema(schema.clone());
    }
    let a = &def.annotations;
    if *a != Default::default() {
        let mut ann = ToolAnnotations::new().read_only(a.read_only);
        if !a.read_only {
            ann = ann.destructive(a.destructive).idempotent(a.idempotent);
        }
        ann = ann.open_world(a.open_world);
        tool = tool.with_annotations(ann);
    }
    if let Some(view) = &def.view {
        // MCP Apps (SEP-1865): `ui.resourceUri`, and the flat key its
        // first clients read.
        let meta = serde_json::json!({
            "ui": { "resourceUri": view },
            "ui/resourceUri": view,
        });
        if let serde_json::Value::Object(meta) = meta {
            tool.meta = Some(rmcp::model::MetaObject(meta));
        }
    }
    tool
}

fn mcp_prompt(name: &str, def: &crate::wit::interface::ToolDef) -> Prompt {
    let arguments: Vec<PromptArgument> = def
        .argument_names()
        .into_iter()
        .map(|(name, required, description)| {
            let mut a = PromptArgument::new(name).with_required(required);
            if let Some(d) = description {
                a = a.with_description(d);
            }
            a
        })
        .collect();
    Prompt::new(
        name,
        Some(def.description.clone()),
        (!arguments.is_empty()).then_some(arguments),
    )
}

/// A plugin's notice that a resource changed.
#[derive(Debug, Clone)]
pub struct ResourceUpdate {
    /// The resource.
    pub uri: Arc<str>,
    /// The client whose call changed it, when one did: only that client's
    /// subscriptions hear of it (another client's session is none of its
    /// business). `None` (a background tick) reaches every subscriber.
    pub caller: Option<Arc<str>>,
}

impl ResourceUpdate {
    /// Whether a subscriber that is client `caller` may hear of it.
    pub fn reaches(&self, caller: &str) -> bool {
        self.caller.as_deref().is_none_or(|c| c == caller)
    }
}

/// The current catalogue, swapped atomically, with change notifications.
pub struct Registry {
    current: RwLock<Arc<Catalog>>,
    changes: broadcast::Sender<()>,
    updates: broadcast::Sender<ResourceUpdate>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            current: RwLock::new(Arc::new(Catalog::default())),
            changes: broadcast::channel(16).0,
            // Sessions coalesce what they receive; one that lags only
            // misses notices it would have merged anyway.
            updates: broadcast::channel(1024).0,
        }
    }
}

impl Registry {
    /// The catalogue now.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().expect("registry lock").clone()
    }

    /// Replaces the catalogue and tells subscribers the tool list changed.
    pub fn replace(&self, catalog: Catalog) {
        *self.current.write().expect("registry lock") = Arc::new(catalog);
        let _ = self.changes.send(());
    }

    /// Subscribes to tool-list changes.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changes.subscribe()
    }

    /// Passes on `plugin`'s notice that resource `uri` changed, when the
    /// URI is one of that plugin's (a plugin cannot speak for another's).
    /// A notice given during a client's call is that client's alone.
    pub fn resource_changed(&self, plugin: &str, uri: &str, caller: Option<&str>) {
        if self
            .snapshot()
            .resource(uri)
            .is_some_and(|(owner, _, _)| owner.name == plugin)
        {
            let _ = self.updates.send(ResourceUpdate {
                uri: uri.into(),
                caller: caller.map(Into::into),
            });
        }
    }

    /// Subscribes to resource change notices.
    pub fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.updates.subscribe()
    }
}

/// The `_meta` of a view (an MCP Apps `ui://` resource), for its listing
/// and its contents: `ui.csp` with no outside domains (a component serves
/// its views whole and the sandbox gives it no network, so a view has
/// nothing to fetch: the client may lock the frame down completely) and
/// `ui.prefersBorder` (an explicit value, as the extension recommends,
/// since clients' defaults differ). `None` for any other resource.
pub fn view_meta(uri: &str) -> Option<rmcp::model::MetaObject> {
    if !uri.starts_with("ui://") {
        return None;
    }
    let meta = serde_json::json!({
        "ui": {
            "csp": { "connectDomains": [], "resourceDomains": [] },
            "prefersBorder": true,
        }
    });
    match meta {
        serde_json::Value::Object(m) => Some(rmcp::model::MetaObject(m)),
        _ => None,
    }
}

#[cfg(test)]
mod update_tests {
    use super::ResourceUpdate;

    #[test]
    fn a_change_in_a_call_reaches_only_that_client() {
        let mine = ResourceUpdate {
            uri: "x://s/1".into(),
            caller: Some("s-aaaa".into()),
        };
        assert!(mine.reaches("s-aaaa"));
        assert!(!mine.reaches("s-bbbb"));
        let ticked = ResourceUpdate {
            uri: "x://buffer".into(),
            caller: None,
        };
        assert!(ticked.reaches("s-aaaa") && ticked.reaches("stdio"));
    }
}

/// Hardening item 9: a plugin cannot take over another plugin's view or
/// resources, by spelling a template differently or by loading first.
#[cfg(test)]
mod admission_tests {
    use super::*;
    use std::path::Path;

    struct Fake {
        name: String,
        tools: Vec<String>,
        uris: Vec<String>,
    }

    impl Offer for Fake {
        fn name(&self) -> &str {
            &self.name
        }
        fn source(&self) -> String {
            format!("/plugins/{}.wasm", self.name.replace('-', "_"))
        }
        fn tool_names(&self) -> Vec<String> {
            self.tools.clone()
        }
        fn prompt_names(&self) -> Vec<String> {
            Vec::new()
        }
        fn resource_uris(&self) -> Vec<String> {
            let mut uris = self.uris.clone();
            uris.sort();
            uris
        }
    }

    fn fake(name: &str, uris: &[&str]) -> Fake {
        Fake {
            name: name.to_owned(),
            tools: Vec::new(),
            uris: uris.iter().map(|u| (*u).to_owned()).collect(),
        }
    }

    fn with_tools(mut plugin: Fake, tools: &[&str]) -> Fake {
        plugin.tools = tools.iter().map(|t| (*t).to_owned()).collect();
        plugin
    }

    /// The refusals' messages, `None` for a plugin admitted.
    fn messages(plugins: &[Fake]) -> Vec<Option<String>> {
        admit(plugins)
            .into_iter()
            .map(|c| c.map(|c| c.to_string()))
            .collect()
    }

    fn views() -> Fake {
        fake(
            "views",
            &[
                "ui://benchtop/ecu-table",
                "ui://benchtop/log-plot",
                "ui://benchtop/emulator",
            ],
        )
    }

    fn cp1600() -> Fake {
        fake(
            "cp1600",
            &[
                "cp1600://sessions/{session_id}/state",
                "cp1600://sessions/{session_id}/trace",
            ],
        )
    }

    #[test]
    fn hardening_9_a_plugin_loaded_first_cannot_take_the_views_plugins_view() {
        // `aaa` sorts, and so loads, before `views`.
        let plugins = [
            with_tools(fake("aaa", &["ui://benchtop/ecu-table"]), &["hello"]),
            views(),
        ];
        let verdicts = admit(&plugins);
        assert_eq!(verdicts[1], None, "the owner is served");
        let Some(Clash::Foreign {
            plugin,
            uri,
            namespace,
            owner,
            reserved,
            ..
        }) = &verdicts[0]
        else {
            panic!("{:?}", verdicts[0]);
        };
        assert_eq!(plugin.name, "aaa");
        assert_eq!(uri, "ui://benchtop/ecu-table");
        assert_eq!(namespace.to_string(), "ui://benchtop/");
        assert_eq!(owner.name, "views");
        assert!(*reserved);
        let message = verdicts[0].as_ref().unwrap().to_string();
        for needle in [
            "plugin `aaa` (/plugins/aaa.wasm) was not loaded",
            "`ui://benchtop/ecu-table`",
            "plugin `views` (/plugins/views.wasm)",
            "`ui://aaa/…`",
        ] {
            assert!(message.contains(needle), "{needle} in: {message}");
        }
        // Whatever the load order.
        let reversed = [views(), fake("aaa", &["ui://benchtop/ecu-table"])];
        let verdicts = messages(&reversed);
        assert_eq!(verdicts[0], None);
        assert!(verdicts[1].is_some());
        // And when the views plugin is not loaded at all: no one else
        // becomes the ECU table view that the ECU tools name.
        let alone = messages(&[fake("aaa", &["UI://Benchtop/ecu-table"])]);
        let message = alone[0].as_deref().expect("refused");
        assert!(message.contains("plugin `views` (not loaded)"), "{message}");
    }

    #[test]
    fn hardening_9_a_session_template_under_another_variable_name_is_refused() {
        let plugins = [fake("aaa", &["cp1600://sessions/{id}/state"]), cp1600()];
        let verdicts = messages(&plugins);
        assert_eq!(verdicts[1], None);
        let message = verdicts[0].as_deref().expect("refused");
        for needle in [
            "plugin `aaa`",
            "`cp1600://sessions/{id}/state`",
            "namespace `cp1600:`",
            "plugin `cp1600` (/plugins/cp1600.wasm)",
        ] {
            assert!(message.contains(needle), "{needle} in: {message}");
        }
        // The owner keeps its namespace even when it is itself refused for
        // another reason (here a tool name taken first).
        let plugins = [
            with_tools(fake("a-tools", &[]), &["cp1600_step"]),
            with_tools(cp1600(), &["cp1600_step"]),
            fake("aaa", &["cp1600://sessions/{id}/state"]),
        ];
        let verdicts = admit(&plugins);
        assert!(matches!(verdicts[1], Some(Clash::Name { .. })));
        assert!(matches!(verdicts[2], Some(Clash::Foreign { .. })));
    }

    #[test]
    fn hardening_9_a_namespace_named_after_a_plugin_is_its_own_in_any_load_order() {
        let intruder = || fake("aaa", &["kitchen://greeting"]);
        let owner = || fake("kitchen-sink", &["kitchen://greeting", "ui://kitchen/item"]);
        for plugins in [[intruder(), owner()], [owner(), intruder()]] {
            let verdicts = admit(&plugins);
            for (plugin, verdict) in plugins.iter().zip(&verdicts) {
                match plugin.name.as_str() {
                    "kitchen-sink" => assert_eq!(verdict, &None),
                    _ => assert!(
                        matches!(verdict, Some(Clash::Foreign { reserved: false, owner, .. }) if owner.name == "kitchen-sink"),
                        "{verdict:?}"
                    ),
                }
            }
        }
        // A view authority named after a plugin is its own too.
        let verdicts = messages(&[fake("aaa", &["ui://kitchen/other"]), owner()]);
        let message = verdicts[0].as_deref().expect("refused");
        assert!(
            message.contains("namespace `ui://kitchen/`")
                && message.contains("plugin `kitchen-sink`"),
            "{message}"
        );
        // A plugin named exactly after the scheme outranks one named after
        // it and a word more.
        let verdicts = messages(&[
            fake("kitchen-sink", &["kitchen://greeting"]),
            fake("kitchen", &["kitchen://items/{id}"]),
        ]);
        assert!(
            verdicts[0].is_some() && verdicts[1].is_none(),
            "{verdicts:?}"
        );
    }

    #[test]
    fn hardening_9_overlaps_in_a_shared_namespace_are_refused_to_the_later_plugin() {
        // Nobody is named after `test:`: the earlier-loaded keeps a URI.
        let verdicts = admit(&[fake("a", &["test://{x}/b"]), fake("b", &["test://c/{y}"])]);
        assert_eq!(verdicts[0], None);
        let Some(Clash::Overlap {
            plugin,
            uri,
            other,
            other_uri,
            example,
        }) = &verdicts[1]
        else {
            panic!("{:?}", verdicts[1]);
        };
        assert_eq!(
            (plugin.name.as_str(), uri.as_str(), other.name.as_str()),
            ("b", "test://c/{y}", "a")
        );
        assert_eq!(
            (other_uri.as_str(), example.as_str()),
            ("test://{x}/b", "test://c/b")
        );
        // A fixed URI that another plugin's template matches.
        let verdicts = messages(&[
            fake("a", &["file:///logs/{name}"]),
            fake("b", &["file:///logs/x.csv"]),
        ]);
        assert!(
            verdicts[1]
                .as_deref()
                .unwrap()
                .contains("`file:///logs/x.csv`")
        );
        // One shape under other variable names.
        let verdicts = messages(&[
            fake("a", &["test://s/{id}"]),
            fake("b", &["test://s/{session}"]),
        ]);
        assert!(verdicts[1].is_some());
        // Two copies of one plugin, the later with a prefix: the message
        // says why a prefix does not help.
        let verdicts = messages(&[
            fake("a", &["kitchen://bytes"]),
            fake("b", &["kitchen://bytes"]),
        ]);
        let message = verdicts[1].as_deref().expect("refused");
        assert!(
            message.contains("its resource `kitchen://bytes`")
                && message.contains("plugin `a` (/plugins/a.wasm)")
                && message.contains("does not rename URIs"),
            "{message}"
        );
        // URIs that cannot meet share a namespace peacefully, and two
        // plugins named after one scheme share it the same way.
        assert_eq!(
            messages(&[
                fake("a", &["file:///logs/{x}"]),
                fake("b", &["file:///roms/{y}"])
            ]),
            [None, None]
        );
        let verdicts = messages(&[
            fake("acme-logs", &["acme://logs/{x}"]),
            fake("acme-roms", &["acme://roms/{x}"]),
            fake("acme-more", &["acme://{x}/y"]),
        ]);
        assert_eq!(verdicts[..2], [None, None]);
        assert!(
            verdicts[2].as_deref().unwrap().contains("overlaps"),
            "{verdicts:?}"
        );
    }

    #[test]
    fn hardening_9_tool_names_still_go_to_the_earlier_plugin() {
        let verdicts = messages(&[
            with_tools(fake("a-kitchen", &[]), &["hello"]),
            with_tools(fake("b-greeter", &[]), &["hello"]),
        ]);
        assert_eq!(verdicts[0], None);
        let message = verdicts[1].as_deref().expect("refused");
        assert!(
            message.contains("plugin `b-greeter`")
                && message.contains("plugin `a-kitchen`")
                && message.contains("its tool `hello`")
                && message.contains("prefix"),
            "{message}"
        );
    }

    #[test]
    fn hardening_9_ownership_rule() {
        let ns = |uri: &str| UriTemplate::parse(uri).unwrap().namespace().clone();
        for (shown, owner) in RESERVED_NAMESPACES {
            assert_eq!(
                ns(shown).to_string(),
                *shown,
                "a reserved namespace is as shown"
            );
            assert_eq!(owner_of(&ns(shown), &["aaa"]), Ownership::Reserved(owner));
        }
        assert_eq!(
            owner_of(&ns("x86://m"), &["x86"]),
            Ownership::Reserved("x86-inspect")
        );
        assert_eq!(
            owner_of(&ns("kitchen://x"), &["a", "kitchen-sink"]),
            Ownership::Named(vec![1])
        );
        assert_eq!(
            owner_of(&ns("KITCHEN://x"), &["Kitchen_Sink"]),
            Ownership::Named(vec![0])
        );
        assert_eq!(
            owner_of(&ns("ui://kitchen/x"), &["kitchen-sink", "kitchen"]),
            Ownership::Named(vec![1])
        );
        assert_eq!(
            owner_of(&ns("kitchen://x"), &["a", "kitchenette", "b-kitchen"]),
            Ownership::Shared
        );
        assert_eq!(
            owner_of(&ns("test://x"), &["conformance"]),
            Ownership::Shared
        );
        assert_eq!(name_match("my-ecu-tools", "my-ecu"), 1);
    }

    /// Every resource the first-party plugins and the test components
    /// declare in their WIT is in a namespace of their own or of no
    /// plugin, so that all of them load together.
    #[test]
    fn hardening_9_the_first_party_plugins_and_test_components_all_load_together() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut plugins = Vec::new();
        for (dir, wit) in [("wit", ""), ("tests/components", "wit")] {
            for entry in std::fs::read_dir(repo.join(dir)).unwrap() {
                let path = entry.unwrap().path().join(wit);
                let name = path
                    .components()
                    .rev()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .find(|c| !c.is_empty() && c != "wit")
                    .unwrap();
                let mut uris = Vec::new();
                for file in std::fs::read_dir(&path).into_iter().flatten() {
                    let file = file.unwrap().path();
                    if file.extension().is_some_and(|e| e == "wit") {
                        let text = std::fs::read_to_string(&file).unwrap();
                        uris.extend(text.lines().filter_map(|l| {
                            let tag = l.trim().strip_prefix("/// @resource ")?;
                            Some(tag.split_whitespace().next()?.to_owned())
                        }));
                    }
                }
                plugins.push(Fake {
                    name,
                    tools: Vec::new(),
                    uris,
                });
            }
        }
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        let declaring: Vec<&str> = plugins
            .iter()
            .filter(|p| !p.uris.is_empty())
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(
            declaring,
            [
                "ble-buffer",
                "conformance",
                "cp1600",
                "ecu-tables",
                "kitchen-sink",
                "log-query",
                "views",
                "x86-inspect"
            ]
        );
        let verdicts = messages(&plugins);
        assert!(verdicts.iter().all(Option::is_none), "{verdicts:?}");
        // Each first-party plugin's resources are all in its reserved
        // namespaces, so none of them can be squatted.
        for p in &plugins {
            for uri in &p.uris {
                let shown = UriTemplate::parse(uri).unwrap().namespace().to_string();
                if let Some((_, owner)) = RESERVED_NAMESPACES.iter().find(|(ns, _)| *ns == shown) {
                    assert_eq!(*owner, p.name, "{uri}");
                } else {
                    assert!(
                        ["conformance", "kitchen-sink"].contains(&p.name.as_str()),
                        "{uri} of {} is not reserved",
                        p.name
                    );
                }
            }
        }
    }
}
