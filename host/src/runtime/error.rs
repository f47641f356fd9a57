//! Why a call failed, and the words for it: a trap, an interruption or a
//! plugin that cannot start, said so that a user knows what was lost.

use crate::runtime::sandbox::GuestOutput;
use crate::wit::convert::ArgumentError;
use std::time::Duration;

/// How long a cancelled call may take to return on its own before the host
/// interrupts it (and resets the plugin's state).
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Interrupted {
    #[error("it ran past its deadline of {0:?}")]
    Deadline(Duration),
    #[error("the client cancelled the call and the plugin did not stop within {CANCEL_GRACE:?}")]
    Cancelled,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The arguments do not fit the tool's schema.
    #[error(transparent)]
    Arguments(#[from] ArgumentError),
    /// The guest trapped or was interrupted; its instance was rebuilt.
    #[error(
        "plugin `{plugin}` failed: {reason}. Its instance was reset, so any state it held (sessions, buffers) is lost."
    )]
    Trapped {
        /// The plugin's name.
        plugin: String,
        /// What happened.
        reason: String,
    },
    /// The call needed the instance named in its context
    /// (`CallContext::instance`), which a trap replaced before the call
    /// began; nothing ran.
    #[error(
        "plugin `{plugin}` was reset before the call began, and the state it relied on went with it; nothing ran, so retry it"
    )]
    Replaced {
        /// The plugin's name.
        plugin: String,
    },
    /// The caller and the plugin serving it were built against different
    /// shapes of the interface between them; nothing ran.
    #[error(
        "plugin `{plugin}` serves {interface} in another shape than the caller was built against ({differences}); nothing ran. Rebuild one of the two against the WIT the other uses"
    )]
    Mismatch {
        /// The serving plugin's name.
        plugin: String,
        /// The interface.
        interface: String,
        /// How the two shapes differ (see `imports::shape_differences`).
        differences: String,
    },
    /// The plugin could not be instantiated.
    #[error("plugin `{plugin}` could not start: {reason}")]
    Unavailable {
        /// The plugin's name.
        plugin: String,
        /// Why.
        reason: String,
    },
}

/// What stopped a guest, in words: the interruption, the trap, or the
/// root cause (a memory cap named as such), with the last lines the guest
/// wrote to stderr.
pub(crate) fn describe_trap(
    err: &wasmtime::Error,
    memory_cap: usize,
    output: &GuestOutput,
) -> String {
    if let Some(i) = err.downcast_ref::<Interrupted>() {
        return i.to_string();
    }
    let mut reason = match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::UnreachableCodeReached) => {
            "it panicked (wasm `unreachable`)".to_owned()
        }
        Some(wasmtime::Trap::StackOverflow) => {
            "it overflowed its stack (unbounded recursion?)".to_owned()
        }
        Some(wasmtime::Trap::OutOfFuel) => "it ran out of fuel".to_owned(),
        Some(trap) => format!("it trapped: {trap}"),
        None => {
            // The root cause, without the wasm backtrace wasmtime attaches.
            let root = err.root_cause().to_string();
            if root.contains("growing memory") || root.contains("memory growth") {
                format!("it exceeded its memory cap of {} MiB", memory_cap >> 20)
            } else {
                root
            }
        }
    };
    let tail = output.take_tail();
    let tail = tail.trim();
    if !tail.is_empty() {
        let last: Vec<&str> = tail.lines().rev().take(3).collect();
        let last: Vec<&str> = last.into_iter().rev().collect();
        reason.push_str(&format!(" — guest stderr: {}", last.join(" / ")));
    }
    reason
}
