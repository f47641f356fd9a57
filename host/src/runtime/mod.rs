//! Components running under their limits, over the [`crate::wit`] side.
//!
//! Bottom up: [`engine`] (the shared wasmtime engine, whose plugins'
//! linear memories `memory` makes on Linux) and [`cache`] (compiled
//! components on disk); [`config`] and [`settings`] (what the
//! operator grants); [`sandbox`] (a plugin's WASI context) and [`context`]
//! (the call in progress); [`imports`] (what a plugin may import from
//! `benchtop:host`); [`error`] and [`plugin`] (one running instance);
//! [`registry`] (the live catalogue); [`host`] (loads plugins into it) and
//! [`watch`] (swaps them while serving).

pub mod bundled;
pub mod cache;
pub mod config;
pub mod context;
pub mod engine;
pub mod error;
pub mod host;
pub mod imports;
#[cfg(target_os = "linux")]
pub mod memory;
pub mod plugin;
pub mod registry;
pub mod remote;
pub mod sandbox;
pub mod settings;
pub mod watch;
