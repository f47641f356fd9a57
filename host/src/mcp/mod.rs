//! MCP over the [`crate::runtime`] catalogue.
//!
//! Bottom up: [`result`] (a return value as an MCP result), [`call`] (a
//! tool call's one path, for every front end), [`primitives`] (resources,
//! prompts, completions), [`rounds`] (2026-07-28 elicitation rounds),
//! [`tasks`] (tool calls as tasks), [`skills`] (skills served as
//! resources) and [`server`] (rmcp's `ServerHandler`).

pub mod call;
pub mod durable;
pub mod primitives;
pub mod result;
pub mod rounds;
pub mod server;
pub mod skills;
pub mod tasks;
