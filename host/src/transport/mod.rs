//! How MCP messages reach the [`crate::mcp`] server: [`framing`] (stdio
//! lines and JSON-RPC bodies judged before rmcp parses them), [`stdio`]
//! (the byte streams under it) and [`http`] (streamable HTTP with its
//! session gate).

pub mod http;
pub mod stdio;

/// The framing, from its own crate (fuzzed without the runtime).
pub use jsonrpc_framing as framing;
