//! log-query: CSV datalogs (EvoScan, RomRaider, plain) queried with filtrex
//! filters, tabulated or plotted, as a benchtop plugin.
//!
//! The domain logic is plain Rust ([`query`], [`plot`]); `component` is the
//! thin wit-bindgen glue. The log reader and the filter language live in the
//! shared `datalog` crate (ecu-tables reads logs with the same code); they
//! are re-exported here under their old paths ([`reader`], [`filter`],
//! [`logs`]). Every tool fails with a [`ToolError`] whose code is one of
//! [`error`]'s.

#[cfg(not(target_os = "wasi"))]
pub mod duckdb;
pub mod error;
pub mod offers;
pub mod plot;
pub mod query;
pub mod synth;

mod component;

pub use datalog::{column, filter, logs, reader, separators};

pub use error::ToolError;
