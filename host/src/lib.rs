//! benchtop: an MCP server runtime whose tools come from WebAssembly components.
//!
//! Four layers, each importing only the ones below it (`cargo run -p xtask
//! -- layers`, part of `make lint`, fails otherwise; docs/design.md tells
//! the whole story):
//! - [`wit`]: what a component's WIT says, and nothing else: its tools,
//!   resources and prompts ([`wit::interface`]), their JSON Schemas, and
//!   JSON ↔ WIT values. No engine, no MCP: it is its own crate,
//!   `benchtop-wit`, re-exported here.
//! - [`runtime`]: components running under their limits: the engine and
//!   its compile cache, the sandbox, what a plugin may import, one plugin
//!   instance, the live catalogue ([`runtime::registry`]) and the host that
//!   loads, watches and swaps plugins.
//! - [`mcp`]: MCP over that catalogue: a tool call's one path
//!   ([`mcp::call`]), resources, prompts and completions, elicitation
//!   rounds, and rmcp's server handler.
//! - [`transport`]: how messages arrive: stdio framing and streamable HTTP.
//!
//! [`scaffold`] writes a new plugin's files (`benchtop new`);
//! [`plugin_cmd`] moves plugins to and from OCI registries (`benchtop
//! plugin`).

pub mod mcp;
pub mod plugin_cmd;
pub mod runtime;
pub mod scaffold;
pub mod transport;
pub use benchtop_wit as wit;
