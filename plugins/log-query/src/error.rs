//! How log-query fails: a [`ToolError`] (`benchtop:host/errors.tool-error`)
//! whose code is one of the constants below, so an agent can branch on what
//! went wrong (configure the directory, pick another file, fix the filter)
//! while the message says it in words. The host shows `CODE: message`.

use crate::filter::CompileError;
pub use plugin_kit::ToolError;

/// No logs directory is configured (`--logs-dir`, `ECU_LOGS_DIR`, or
/// `ecuExplorer.logsDir`).
pub const NO_LOGS_DIR: &str = "NO_LOGS_DIR";
/// The configured logs directory cannot be listed (missing, not granted).
pub const LOGS_DIR_UNREADABLE: &str = "LOGS_DIR_UNREADABLE";
/// The logs directory holds no `.csv` files.
pub const NO_LOGS: &str = "NO_LOGS";
/// `file` names no log of the directory (the message suggests the closest).
pub const UNKNOWN_FILE: &str = "UNKNOWN_FILE";
/// A log cannot be read, or is not a log log-query understands.
pub const UNREADABLE_LOG: &str = "UNREADABLE_LOG";
/// This call's time for reading logs ran out before any was read: call
/// again (what is read is kept) or pass `file`.
pub const NOT_READ_YET: &str = "NOT_READ_YET";
/// The client cancelled the call.
pub const CANCELLED: &str = "CANCELLED";
/// The filter does not parse; the message points at the position.
pub const BAD_FILTER: &str = "BAD_FILTER";
/// A channel named in the filter or `channels` is in no searched log.
pub const UNKNOWN_CHANNEL: &str = "UNKNOWN_CHANNEL";
/// An argument out of its range (`limit`, `sample_rate`, `width`, …).
pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
/// The log has no numeric channel or no rows to draw.
pub const NOTHING_TO_PLOT: &str = "NOTHING_TO_PLOT";
/// `start_s`/`end_s` select no rows of the log.
pub const EMPTY_WINDOW: &str = "EMPTY_WINDOW";

/// A fault of log-query itself (the PNG encoder failed): report it.
pub const INTERNAL: &str = "INTERNAL";

/// Every code log-query answers with.
pub const CODES: [&str; 13] = [
    NO_LOGS_DIR,
    LOGS_DIR_UNREADABLE,
    NO_LOGS,
    UNKNOWN_FILE,
    UNREADABLE_LOG,
    NOT_READ_YET,
    CANCELLED,
    BAD_FILTER,
    UNKNOWN_CHANNEL,
    INVALID_ARGUMENT,
    NOTHING_TO_PLOT,
    EMPTY_WINDOW,
    INTERNAL,
];

/// `BAD_FILTER`: the filter's compile error as it reads, the filter text
/// and a caret under the position included.
pub fn bad_filter(e: CompileError) -> ToolError {
    ToolError::new(BAD_FILTER, e.to_string())
}

/// `CANCELLED`: the client asked to stop (progress returned false).
pub fn cancelled() -> ToolError {
    ToolError::new(CANCELLED, "cancelled by the client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_screaming_snake_case() {
        for (i, c) in CODES.iter().enumerate() {
            assert!(
                !c.is_empty()
                    && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
                    && !c.starts_with('_')
                    && !c.ends_with('_'),
                "{c}"
            );
            assert!(!CODES[..i].contains(c), "{c} twice");
        }
    }
}
