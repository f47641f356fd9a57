//! datalog: CSV datalogs read into typed columns, and filtrex filters over
//! them. The single log reader of benchtop: log-query queries and plots
//! logs with it, ecu-tables lays them over calibration tables.
//!
//! Plain Rust with no component glue, so it is tested natively and linked
//! into any plugin that reads logs. [`reader`] detects a logger's layout and
//! parses a file; [`logs`] finds the logs of the configured directory and
//! caches parsed ones; [`filter`] compiles and runs filtrex expressions on a
//! parsed log. Failures a tool reports carry a code from [`error`].

pub mod column;
pub mod error;
pub mod filter;
pub mod format;
pub mod logs;
pub mod reader;
pub mod separators;

// Layout detection is the reader's first step, not an API of its own.
mod detect;

pub use error::ToolError;
