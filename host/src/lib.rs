//! benchtop: an MCP server runtime whose tools come from WebAssembly components.
//!
//! The layers, bottom up:
//! - [`plugin`] derives tools from a component's WIT ([`docs`], [`schema`], [`names`]);
//! - [`convert`] and [`result`] map JSON arguments and return values;
//! - [`sandbox`] and [`runtime`] run a plugin under its policy and limits;
//! - [`cache`] keeps compiled components on disk;
//! - [`host`] loads plugins into a [`registry`] that [`server`] serves over MCP.

pub mod cache;
pub mod config;
pub mod convert;
pub mod docs;
pub mod framing;
pub mod host;
pub mod http;
pub mod names;
pub mod plugin;
pub mod registry;
pub mod result;
pub mod runtime;
pub mod sandbox;
pub mod scaffold;
pub mod schema;
pub mod server;
pub mod watch;
