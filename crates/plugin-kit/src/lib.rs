//! Shared guest-side helpers for benchtop plugins.
//!
//! Plugins answer agents with documents made of a YAML frontmatter block and
//! a markdown body (the ECU and log tools), so the formatting lives here once:
//! [`frontmatter`] writes the metadata block, [`markdown`] renders tables, and
//! [`yaml`] quotes scalars so that any string survives a YAML parser.

pub mod frontmatter;
pub mod markdown;
pub mod paths;
pub mod suggest;
pub mod text;
pub mod yaml;

pub use frontmatter::Frontmatter;
pub use markdown::MarkdownTable;
