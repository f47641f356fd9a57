//! benchtop: an MCP server runtime whose tools come from WebAssembly components.
//!
//! The layers, bottom up (docs/design.md tells the whole story):
//! - [`interface`] derives tools from a component's WIT ([`docs`], [`schema`], [`names`]);
//! - [`engine`] is the shared WebAssembly engine, [`imports`] what a plugin
//!   may import, [`sandbox`] its WASI context, and [`plugin`] one running
//!   instance under its limits, failing with an [`error`];
//! - [`cache`] keeps compiled components on disk;
//! - [`host`] loads plugins into a [`registry`] (the live catalogue);
//! - [`call`] is a tool call's one path: lookup, [`convert`] arguments,
//!   invoke, [`result`]; [`server`] (stdio, and [`http`] with [`framing`])
//!   and `benchtop call` both go through it.

pub mod cache;
pub mod call;
pub mod config;
pub mod convert;
pub mod docs;
pub mod engine;
pub mod error;
pub mod framing;
pub mod host;
pub mod http;
pub mod imports;
pub mod interface;
pub mod names;
pub mod plugin;
pub mod primitives;
pub mod registry;
pub mod result;
pub mod rounds;
pub mod sandbox;
pub mod scaffold;
pub mod schema;
pub mod server;
pub mod settings;
pub mod shape;
pub mod uri_template;
pub mod watch;
