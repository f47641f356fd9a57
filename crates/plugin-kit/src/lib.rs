//! Shared guest-side helpers for benchtop plugins.
//!
//! Plugins answer agents with documents made of a YAML frontmatter block and
//! a markdown body (the ECU and log tools), so the formatting lives here once:
//! [`frontmatter`] writes the metadata block, [`markdown`] renders tables, and
//! [`yaml`] quotes scalars so that any string survives a YAML parser.
//!
//! Files come through the sandbox: [`paths`] explains refused paths and
//! refuses pipes and devices before opening them, and [`file_stream`] reads
//! a large file front to back in the host's largest pieces. [`clients`]
//! keeps each MCP client's sessions apart. [`safe_write`] rewrites a user's
//! file under a lock that works across processes, keeping its inode (mode
//! and owner).
//!
//! Every plugin fails the same way: [`ToolError`] is the Rust side of
//! `benchtop:host/errors.tool-error`.
//!
//! Small algorithms more than one crate needs live here once too: [`civil`]
//! turns Unix time into calendar dates and back, [`suggest`] measures how
//! far a mistyped name is from the real ones, [`blob`] frames the
//! emulators' session snapshots (base64, versioned, checksummed), and
//! [`placed`] runs an emulator's loop on its state at a fixed address.

pub mod blob;
pub mod bytes;
pub mod cache_files;
pub mod changes;
pub mod civil;
pub mod clients;
pub mod error;
pub mod file_io;
pub mod file_stream;
pub mod fnv;
pub mod frontmatter;
pub mod markdown;
pub mod paths;
pub mod placed;
pub mod safe_write;
pub mod suggest;
pub mod text;
pub mod yaml;

pub use error::ToolError;
pub use frontmatter::Frontmatter;
pub use markdown::MarkdownTable;
