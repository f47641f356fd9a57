//! `benchtop:host/durable`: a plugin says which handles a call changed or
//! ended, for the state store (Contract 9). Without a store the marks are
//! read by nobody.

use super::{PluginState, bindings};
use crate::runtime::context::HandleMark;

impl bindings::benchtop::host::durable::Host for PluginState {
    fn changed(&mut self, handle: String) {
        self.mark(&handle, HandleMark::Changed);
    }

    fn closed(&mut self, handle: String) {
        self.mark(&handle, HandleMark::Closed);
    }
}

impl PluginState {
    fn mark(&self, handle: &str, mark: HandleMark) {
        // A tick runs outside any call: nothing to save it for.
        if let Some(call) = &self.call {
            call.ctx.marks.mark(handle, mark);
        }
    }
}
