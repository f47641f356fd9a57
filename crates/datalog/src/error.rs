//! The codes of the failures the log reader, the logs directory and the
//! filter report ([`ToolError`], `benchtop:host/errors.tool-error`), shared
//! by every plugin that reads logs so an agent branches on the same code
//! whichever tool met the log.

use crate::filter::CompileError;
pub use plugin_kit::ToolError;

/// No logs directory is configured (`--logs-dir`, `ECU_LOGS_DIR`, or
/// `ecuExplorer.logsDir`).
pub const NO_LOGS_DIR: &str = "NO_LOGS_DIR";
/// The configured logs directory cannot be listed (missing, not granted).
pub const LOGS_DIR_UNREADABLE: &str = "LOGS_DIR_UNREADABLE";
/// The logs directory (and its subfolders) holds no log files.
pub const NO_LOGS: &str = "NO_LOGS";
/// `file` names no log of the directory (the message suggests the closest).
pub const UNKNOWN_FILE: &str = "UNKNOWN_FILE";
/// A log cannot be read, or is not a log the reader understands.
pub const UNREADABLE_LOG: &str = "UNREADABLE_LOG";
/// This call's time for reading logs ran out before any was read: call
/// again (what is read is kept) or pass `file`.
pub const NOT_READ_YET: &str = "NOT_READ_YET";
/// The client cancelled the call.
pub const CANCELLED: &str = "CANCELLED";
/// The filter does not parse; the message points at the position.
pub const BAD_FILTER: &str = "BAD_FILTER";
/// A channel named in the filter or the arguments is in no searched log.
pub const UNKNOWN_CHANNEL: &str = "UNKNOWN_CHANNEL";

/// `BAD_FILTER`: the filter's compile error as it reads, the filter text
/// and a caret under the position included.
pub fn bad_filter(e: CompileError) -> ToolError {
    ToolError::new(BAD_FILTER, e.to_string())
}

/// `CANCELLED`: the client asked to stop (progress returned false).
pub fn cancelled() -> ToolError {
    ToolError::new(CANCELLED, "cancelled by the client")
}
