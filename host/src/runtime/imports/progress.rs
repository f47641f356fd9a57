//! `benchtop:host/progress`: progress reports and cancellation of the call in progress.

use super::{PluginState, bindings};
use std::time::{Duration, Instant};

impl bindings::benchtop::host::progress::Host for PluginState {
    fn report(&mut self, done: u64, total: u64, message: String) -> bool {
        let Some(call) = &mut self.call else {
            return true;
        };
        if call.ctx.cancel.is_cancelled() {
            return false;
        }
        if let Some(sink) = &call.ctx.progress {
            // Progress must increase, and a chatty guest must not flood the client.
            let now = Instant::now();
            let due = match call.last_progress {
                None => true,
                Some((last, at)) => {
                    done > last
                        && (now.duration_since(at) >= Duration::from_millis(20) || done == total)
                }
            };
            if due {
                call.last_progress = Some((done, now));
                sink(done, total, message);
            }
        }
        true
    }

    fn cancelled(&mut self) -> bool {
        self.call
            .as_ref()
            .is_some_and(|c| c.ctx.cancel.is_cancelled())
    }
}
