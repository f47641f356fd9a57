//! `benchtop:host/log`: a plugin's log messages, to the host log and MCP logging.

use super::{LogLevel, PluginState, bindings};

impl bindings::benchtop::host::log::Host for PluginState {
    fn write(&mut self, level: LogLevel, message: String) {
        let plugin = self.plugin.clone();
        match level {
            LogLevel::Debug => tracing::debug!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Info => tracing::info!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Warning => tracing::warn!(target: "guest", plugin = %plugin, "{message}"),
            LogLevel::Error => tracing::error!(target: "guest", plugin = %plugin, "{message}"),
        }
        (self.sinks.log)(&plugin, level, &message);
    }
}
