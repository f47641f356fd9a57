//! datalog: datalogs (CSV and binary) read into typed columns, and filtrex
//! filters over them. The single log reader of benchtop: log-query queries
//! and plots logs with it, ecu-tables lays them over calibration tables.
//!
//! Plain Rust with no component glue, so it is tested natively and linked
//! into any plugin that reads logs. [`reader`] detects a logger's layout and
//! parses a file (binary formats through [`binary`]); [`logs`] finds the logs
//! of the configured directory and its subfolders and caches parsed ones;
//! [`filter`] compiles and runs filtrex expressions on a parsed log.
//! Failures a tool reports carry a code from [`error`].

pub mod binary;
pub mod column;
pub mod dates;
pub mod error;
pub mod filter;
pub mod format;
pub mod logs;
pub mod reader;
pub mod scan;
pub mod separators;

// Layout detection is the reader's first step, not an API of its own.
mod detect;
// Haltech's preamble and scales, a part of detection and reading.
mod haltech;
// The parsed log type, shared by the CSV and binary readers; its public
// path is `reader::{Log, Marker, Need}`.
mod log;
// What detection hands the reader (and Haltech's preamble builds).
mod plan;

pub use error::ToolError;
