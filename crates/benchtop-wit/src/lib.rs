//! benchtop-wit: what a component's WIT says, as benchtop reads it when the
//! component loads (docs/design.md, Contract 1): its tools, resources,
//! prompts and hooks, their JSON Schemas, and JSON ↔ WIT values. Nothing
//! here runs a component or speaks MCP, so `benchtop check` and third-party
//! tooling (a plugin's own tests, an editor, a registry) can use it alone.
//! The host re-exports it as `benchtop::wit`.
//!
//! Bottom up: [`names`] (tool and JSON names), [`docs`] (doc comments and
//! their `@tags`), [`uri_template`]; [`types`] (aliases, bounds, field
//! keys); [`schema`] (JSON Schemas), [`convert`] (JSON ↔ WIT values),
//! [`shape`] (how a result's type spells itself in JSON); [`interface`]
//! (a component's tools, resources, prompts and hooks).

pub mod convert;
pub mod docs;
pub mod interface;
pub mod names;
pub mod schema;
pub mod shape;
pub mod types;
pub mod uri_template;
