//! Tool descriptions from WIT doc comments.
//!
//! The plugin build injects the WIT docs into the component (see the
//! `wit-docs` crate); here we copy them onto the decoded [`Resolve`] and
//! split doc-comment tags (`@read-only`, `@json`, `@ui`, `@setting …`) from the prose.

use serde_json::Value;
use wit_parser::{Resolve, TypeDefKind};

pub use wit_docs::{SECTION_NAME, copy as copy_section, read as read_section};

fn docs_of(entry: &Value) -> Option<String> {
    match entry {
        // Format v0 stores a function's docs as a bare string.
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => map.get("docs").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// Copies docs from the section JSON onto every interface, function, type and
/// field of `resolve` whose name matches, in packages other than
/// `benchtop:host`. World-level docs are returned (they carry `@setting` lines).
pub fn apply(resolve: &mut Resolve, docs: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let interfaces = docs
        .get("interfaces")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let iface_ids: Vec<_> = resolve.interfaces.iter().map(|(id, _)| id).collect();
    for id in iface_ids {
        let iface = &resolve.interfaces[id];
        let Some(name) = iface.name.clone() else {
            continue;
        };
        if iface.package.is_some_and(|p| {
            resolve.packages[p].name.namespace == "benchtop"
                && resolve.packages[p].name.name == "host"
        }) {
            continue;
        }
        let Some(meta) = interfaces.get(&name) else {
            continue;
        };
        apply_interface(resolve, id, meta);
    }

    // World-level function exports live in the synthetic root world of the
    // decoded component, whose name differs from the source world's name, so
    // match world functions by name across every documented world.
    let mut world_docs = Vec::new();
    if let Some(worlds) = docs.get("worlds").and_then(Value::as_object) {
        for meta in worlds.values() {
            if let Some(d) = meta.get("docs").and_then(Value::as_str) {
                world_docs.push(d.to_owned());
            }
            // `func_exports` holds names that are also imported; `funcs` the rest.
            for key in ["funcs", "func_exports"] {
                let Some(funcs) = meta.get(key).and_then(Value::as_object) else {
                    continue;
                };
                for world in resolve.worlds.iter_mut().map(|(_, w)| w) {
                    for item in world.exports.values_mut() {
                        if let wit_parser::WorldItem::Function(f) = item
                            && let Some(d) = funcs.get(&f.name).and_then(docs_of)
                        {
                            f.docs.contents = Some(d);
                        }
                    }
                }
            }
        }
    }
    world_docs
}

fn apply_interface(resolve: &mut Resolve, id: wit_parser::InterfaceId, meta: &Value) {
    if let Some(funcs) = meta.get("funcs").and_then(Value::as_object) {
        for (fname, entry) in funcs {
            if let Some(f) = resolve.interfaces[id].functions.get_mut(fname) {
                f.docs.contents = docs_of(entry);
            }
        }
    }
    let Some(types) = meta.get("types").and_then(Value::as_object) else {
        return;
    };
    for (tname, entry) in types {
        let Some(&tid) = resolve.interfaces[id].types.get(tname) else {
            continue;
        };
        let ty = &mut resolve.types[tid];
        ty.docs.contents = docs_of(entry);
        let Some(items) = entry.get("items").and_then(Value::as_object) else {
            continue;
        };
        let item_doc = |name: &str| items.get(name).and_then(Value::as_str).map(str::to_owned);
        match &mut ty.kind {
            TypeDefKind::Record(r) => {
                for f in &mut r.fields {
                    f.docs.contents = item_doc(&f.name);
                }
            }
            TypeDefKind::Variant(v) => {
                for c in &mut v.cases {
                    c.docs.contents = item_doc(&c.name);
                }
            }
            TypeDefKind::Enum(e) => {
                for c in &mut e.cases {
                    c.docs.contents = item_doc(&c.name);
                }
            }
            TypeDefKind::Flags(fl) => {
                for f in &mut fl.flags {
                    f.docs.contents = item_doc(&f.name);
                }
            }
            _ => {}
        }
    }
}

/// A doc comment split into prose and tags.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tagged {
    /// The prose, with tag lines removed and trimmed.
    pub text: String,
    /// Tags without their `@`, e.g. `read-only`, with any arguments.
    pub tags: Vec<(String, String)>,
}

impl Tagged {
    /// Whether the bare tag `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.tags.iter().any(|(t, _)| t == name)
    }

    /// The arguments of the first tag `name`, when present.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(t, _)| t == name)
            .map(|(_, a)| a.as_str())
    }
}

/// Splits lines starting with `@` (after whitespace) from the rest.
pub fn split_tags(docs: &str) -> Tagged {
    let mut text = Vec::new();
    let mut tags = Vec::new();
    for line in docs.lines() {
        let trimmed = line.trim();
        if let Some(tag) = trimmed.strip_prefix('@')
            && tag.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        {
            let (name, args) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
            tags.push((name.to_owned(), args.trim().to_owned()));
        } else {
            text.push(line);
        }
    }
    Tagged {
        text: text.join("\n").trim().to_owned(),
        tags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_split_from_prose() {
        let t = split_tags(
            "Reads a table.\n@read-only\n  @idempotent\nMore text.\n@setting X flag=--x",
        );
        assert_eq!(t.text, "Reads a table.\nMore text.");
        assert!(t.has("read-only"));
        assert!(t.has("idempotent"));
        assert_eq!(t.tags[2], ("setting".into(), "X flag=--x".into()));
    }

    #[test]
    fn email_like_at_is_not_a_tag() {
        let t = split_tags("contact @ someone");
        assert!(t.tags.is_empty());
    }
}
