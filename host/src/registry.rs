//! The live catalogue: which tool, prompt and resource belongs to which
//! plugin.
//!
//! A catalogue is an immutable snapshot; changes (hot swap) build a new one
//! and swap it in, so in-flight calls keep the plugin they started with.

use crate::plugin::Plugin;
// The same distance the plugins use for their own "did you mean" hints.
use crate::uri_template::UriTemplate;
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

/// A plugin left out of a catalogue because a tool name was already taken.
pub struct Refusal {
    /// The plugin refused.
    pub plugin: Arc<Plugin>,
    /// Why, naming both plugins and the way out.
    pub message: String,
}

impl Catalog {
    /// Builds a catalogue from plugins in load order. A plugin whose tool
    /// name is already taken is refused, with an error naming both plugins.
    pub fn build(plugins: Vec<Arc<Plugin>>) -> (Self, Vec<Refusal>) {
        let mut catalog = Catalog::default();
        let mut refusals = Vec::new();
        'plugins: for plugin in plugins {
            let names: Vec<String> = (0..plugin.interface.tools.len())
                .map(|i| plugin.tool_name(i))
                .collect();
            let prompts: Vec<String> = (0..plugin.interface.prompts.len())
                .map(|i| plugin.prompt_name(i))
                .collect();
            let taken = |what: &str, name: &str, other: &Plugin| {
                format!(
                    "plugin `{}` ({}) was not loaded: its {what} `{name}` is already provided by plugin `{}` ({}). Give one of them a prefix in the config file.",
                    plugin.name,
                    plugin.source.display(),
                    other.name,
                    other.source.display()
                )
            };
            let clash = names
                .iter()
                .find_map(|n| catalog.tools.get(n).map(|(o, _)| taken("tool", n, o)))
                .or_else(|| {
                    prompts
                        .iter()
                        .find_map(|n| catalog.prompts.get(n).map(|(o, _)| taken("prompt", n, o)))
                })
                .or_else(|| {
                    plugin.interface.resources.iter().find_map(|r| {
                        catalog
                            .resources
                            .iter()
                            .find(|(t, _, _)| t.as_str() == r.resource_uri())
                            .map(|(_, o, _)| {
                                // A prefix renames tools and prompts, never a URI.
                                taken("resource", r.resource_uri(), o).replace(
                                    "Give one of them a prefix in the config file.",
                                    "A prefix does not rename URIs: serve only one of them.",
                                )
                            })
                    })
                });
            if let Some(message) = clash {
                refusals.push(Refusal { plugin, message });
                continue 'plugins;
            }
            for (i, name) in names.into_iter().enumerate() {
                catalog.tools.insert(name, (plugin.clone(), i));
            }
            for (i, name) in prompts.into_iter().enumerate() {
                catalog.prompts.insert(name, (plugin.clone(), i));
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
            let mime = crate::primitives::mime_of(def);
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
                resource.meta = crate::primitives::view_meta(t.as_str());
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

fn mcp_tool(name: &str, plugin: &Plugin, index: usize) -> Tool {
    let def = &plugin.interface.tools[index];
    let schema = match &def.input_schema {
        serde_json::Value::Object(o) => o.clone(),
        _ => serde_json::Map::new(),
    };
    let mut tool = Tool::new(name.to_owned(), def.description.clone(), Arc::new(schema));
    if let Some(serde_json::Value::Object(o)) = &def.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(o.clone()));
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

fn mcp_prompt(name: &str, def: &crate::interface::ToolDef) -> Prompt {
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
