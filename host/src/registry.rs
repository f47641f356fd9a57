//! The live tool catalogue: which tool name belongs to which plugin.
//!
//! A catalogue is an immutable snapshot; changes (hot swap) build a new one
//! and swap it in, so in-flight calls keep the plugin they started with.

use crate::plugin::Plugin;
// The same distance the plugins use for their own "did you mean" hints.
use plugin_kit::suggest::edit_distance;
use rmcp::model::{Tool, ToolAnnotations};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

/// One immutable set of loaded plugins and their tools.
#[derive(Default)]
pub struct Catalog {
    plugins: Vec<Arc<Plugin>>,
    tools: BTreeMap<String, (Arc<Plugin>, usize)>,
    listing: Vec<Tool>,
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
            for name in &names {
                if let Some((other, _)) = catalog.tools.get(name) {
                    let message = format!(
                        "plugin `{}` ({}) was not loaded: its tool `{name}` is already provided by plugin `{}` ({}). Give one of them a prefix in the config file.",
                        plugin.name,
                        plugin.source.display(),
                        other.name,
                        other.source.display()
                    );
                    refusals.push(Refusal { plugin, message });
                    continue 'plugins;
                }
            }
            for (i, name) in names.into_iter().enumerate() {
                catalog.tools.insert(name, (plugin.clone(), i));
            }
            catalog.plugins.push(plugin);
        }
        catalog.listing = catalog
            .tools
            .iter()
            .map(|(name, (plugin, i))| mcp_tool(name, plugin, *i))
            .collect();
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
    tool
}

/// The current catalogue, swapped atomically, with change notifications.
pub struct Registry {
    current: RwLock<Arc<Catalog>>,
    changes: broadcast::Sender<()>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            current: RwLock::new(Arc::new(Catalog::default())),
            changes: broadcast::channel(16).0,
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
}
