//! `benchtop:host/resources`: a plugin says one of its resources changed.

use super::{PluginState, bindings};
use crate::runtime::context::CLI_CALLER;

impl bindings::benchtop::host::resources::Host for PluginState {
    fn changed(&mut self, uri: String) {
        self.announce(&uri, None);
    }

    fn changed_for_caller(&mut self, uri: String) {
        // A tick's (or the command line's) call belongs to no client.
        let caller = self
            .call
            .as_ref()
            .map(|c| c.ctx.caller.clone())
            .filter(|c| &**c != CLI_CALLER);
        self.announce(&uri, caller.as_deref());
    }
}

impl PluginState {
    fn announce(&self, uri: &str, caller: Option<&str>) {
        // Bounded: a URI is at most a few KiB of text, and the host
        // coalesces notices per URI.
        if uri.len() <= 4096 {
            (self.sinks.changed)(&self.plugin, uri, caller);
        }
    }
}
