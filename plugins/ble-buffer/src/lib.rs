//! ble-buffer: a circular buffer of BLE packets fed by a web-ble-bridge
//! WebSocket, with search, reply correlation and btsnoop import.
//!
//! The domain logic lives in plain modules, declared here; `component` is
//! the thin WIT glue.

pub mod bridge;
pub mod btsnoop;
pub mod buffer;
pub mod feed;
pub mod hex;
pub mod offers;
pub mod service;
pub mod since;
pub mod time;
pub mod ws;

mod component;
