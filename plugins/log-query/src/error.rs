//! How log-query fails: a [`ToolError`] (`benchtop:host/errors.tool-error`)
//! whose code is one of the constants below, so an agent can branch on what
//! went wrong (configure the directory, pick another file, fix the filter)
//! while the message says it in words. The host shows `CODE: message`.

pub use datalog::error::{
    BAD_FILTER, CANCELLED, LOGS_DIR_UNREADABLE, NO_LOGS, NO_LOGS_DIR, NOT_READ_YET,
    UNKNOWN_CHANNEL, UNKNOWN_FILE, UNREADABLE_LOG, bad_filter, cancelled,
};
pub use plugin_kit::ToolError;

// The codes of reading logs and filters come from datalog (the shared log
// reader); these are log-query's own.

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
