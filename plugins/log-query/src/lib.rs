//! log-query: CSV datalogs (EvoScan, RomRaider, plain) queried with filtrex
//! filters, tabulated or plotted, as a benchtop plugin.
//!
//! The domain logic is plain Rust ([`reader`], [`filter`], [`logs`],
//! [`query`], [`plot`]); `component` is the thin wit-bindgen glue. Every
//! tool fails with a [`ToolError`] whose code is one of [`error`]'s.

pub mod column;
#[cfg(not(target_os = "wasi"))]
pub mod duckdb;
pub mod error;
pub mod filter;
pub mod logs;
pub mod offers;
pub mod plot;
pub mod query;
pub mod reader;
pub mod separators;
pub mod synth;

mod component;
// Layout detection is the reader's first step, not an API of its own.
mod detect;

pub use error::ToolError;
