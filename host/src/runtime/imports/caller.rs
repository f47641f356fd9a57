//! `benchtop:host/caller`: the id of the client making the call.

use super::{PluginState, bindings};
use crate::runtime::context::CLI_CALLER;

impl bindings::benchtop::host::caller::Host for PluginState {
    fn id(&mut self) -> String {
        self.call
            .as_ref()
            .map_or(CLI_CALLER, |c| &*c.ctx.caller)
            .to_owned()
    }
}
