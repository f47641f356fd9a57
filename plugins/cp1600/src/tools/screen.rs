//! What the console shows and takes: `cp1600_run_frames` (whole frames,
//! each begun by the STIC's VBLANK interrupt), `cp1600_screenshot` (the
//! STIC's picture, [`crate::stic`]) and `cp1600_controller` (the hand
//! controllers, read through the PSG's ports).

use super::{Progress, Sessions, ToolError, ToolResult, run_outcome};
use crate::machine::{Limits, StopReason, StopWhen};
use crate::results::{ControllerSet, FramesRun, Screenshot};
use crate::stic;

/// CPU cycles in one NTSC frame (894,886 Hz, 59.92 frames a second).
pub const FRAME_CYCLES: u64 = 14_934;
/// Most frames one call runs: ten seconds of console time.
pub const MAX_FRAMES: u32 = 600;

/// The disc's 16 directions and the lines each pulls low.
const DISC: [(&str, u8); 16] = [
    ("N", 0x04),
    ("NNE", 0x14),
    ("NE", 0x16),
    ("ENE", 0x06),
    ("E", 0x02),
    ("ESE", 0x12),
    ("SE", 0x13),
    ("SSE", 0x03),
    ("S", 0x01),
    ("SSW", 0x11),
    ("SW", 0x19),
    ("WSW", 0x09),
    ("W", 0x08),
    ("WNW", 0x18),
    ("NW", 0x1C),
    ("NNW", 0x0C),
];

/// The keypad's keys.
const KEYPAD: [(&str, u8); 12] = [
    ("1", 0x81),
    ("2", 0x41),
    ("3", 0x21),
    ("4", 0x82),
    ("5", 0x42),
    ("6", 0x22),
    ("7", 0x84),
    ("8", 0x44),
    ("9", 0x24),
    ("clear", 0x88),
    ("0", 0x48),
    ("enter", 0x28),
];

/// The action buttons (both sides' top buttons are one line).
const BUTTONS: [(&str, u8); 3] = [("top", 0xA0), ("left", 0x60), ("right", 0xC0)];

fn lookup(table: &[(&str, u8)], what: &str, given: &str) -> Result<(String, u8), ToolError> {
    table
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(given.trim()))
        .map(|(name, bits)| ((*name).to_owned(), *bits))
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            ToolError::invalid(format!(
                "unknown {what} `{}`; use one of {}",
                plugin_kit::text::clip(given),
                names.join(", ")
            ))
        })
}

impl Sessions {
    /// `cp1600_run_frames`: `frames` frames, each begun by the VBLANK
    /// interrupt request.
    pub fn run_frames(
        &mut self,
        session_id: Option<&str>,
        frames: Option<u32>,
        checks: Option<bool>,
        progress: Progress,
    ) -> ToolResult<FramesRun> {
        let frames = frames.unwrap_or(1);
        if !(1..=MAX_FRAMES).contains(&frames) {
            return Err(ToolError::invalid(format!(
                "frames must be 1 to {MAX_FRAMES} (60 are a second); call again for more"
            )));
        }
        let (id, s) = self.runnable(session_id)?;
        let checks = checks.unwrap_or(false);
        s.machine.cpu.checks = checks;
        let when = StopWhen {
            breakpoints: true,
            idle: checks,
            ..Default::default()
        };
        let (mut done, mut shown, mut executed, mut cycles_run) = (0, 0, 0, 0);
        let mut last = None;
        let total = u64::from(frames) * FRAME_CYCLES;
        for _ in 0..frames {
            // The STIC asserts INTRM as the frame's vertical blank begins;
            // the CPU takes it once interrupts are enabled.
            s.machine.cpu.irq = true;
            s.machine.cpu.mem.start_frame();
            let limits = Limits {
                instructions: u64::MAX,
                cycles: FRAME_CYCLES,
            };
            let offset = u64::from(done) * FRAME_CYCLES;
            let mut frame_progress =
                |d: u64, t: u64, m: &str| progress(offset + d, total.max(t), m);
            let r = Self::run_with(
                s,
                limits,
                &when,
                FRAME_CYCLES,
                "cycles",
                &mut frame_progress,
            );
            executed += r.executed;
            cycles_run += r.cycles_run;
            let ended = r.reason == StopReason::MaxCycles;
            if ended {
                done += 1;
                shown += u32::from(s.machine.cpu.mem.display_enabled());
            }
            last = Some(r);
            if !ended {
                break;
            }
        }
        let mut r = last.expect("at least one frame");
        r.executed = executed;
        r.cycles_run = cycles_run;
        Ok(FramesRun {
            frames: done,
            display_enabled: shown,
            run: run_outcome(&id, s, &r),
        })
    }

    /// The STIC's picture of the session's memory now.
    pub fn picture(
        &mut self,
        session_id: Option<&str>,
    ) -> ToolResult<(String, stic::Picture, bool)> {
        let (id, s) = self.get(session_id)?;
        let mem = &s.machine.cpu.mem;
        let mode = if mem.fg_bg() {
            stic::Mode::ForegroundBackground
        } else {
            stic::Mode::ColourStack
        };
        Ok((id, stic::render(mem, mode), mem.display_enabled()))
    }

    /// `cp1600_screenshot`: the STIC's picture now, with its caption.
    pub fn screenshot(&mut self, session_id: Option<&str>) -> ToolResult<Screenshot> {
        let (id, picture, display_enabled) = self.picture(session_id)?;
        let png = picture
            .png()
            .map_err(|e| ToolError::new("SCREENSHOT_FAILED", e))?;
        let caption = format!(
            "session: {id}\n{}",
            stic::caption(&picture, display_enabled)
        );
        Ok(Screenshot { caption, png })
    }

    /// `cp1600_controller`: holds `disc`, `key` and `buttons` of controller
    /// `which` (0 left, 1 right) down; none releases all.
    pub fn controller(
        &mut self,
        session_id: Option<&str>,
        which: usize,
        disc: Option<&str>,
        key: Option<&str>,
        buttons: &[String],
    ) -> ToolResult<ControllerSet> {
        let mut pressed = Vec::new();
        let mut lines = 0u8;
        if let Some(d) = disc {
            let (name, bits) = lookup(&DISC, "disc direction", d)?;
            pressed.push(format!("disc {name}"));
            lines |= bits;
        }
        if let Some(k) = key {
            let (name, bits) = lookup(&KEYPAD, "key", k)?;
            pressed.push(format!("key {name}"));
            lines |= bits;
        }
        for b in buttons {
            let (name, bits) = lookup(&BUTTONS, "button", b)?;
            pressed.push(format!("button {name}"));
            lines |= bits;
        }
        let (id, s) = self.get(session_id)?;
        let mem = &mut s.machine.cpu.mem;
        mem.set_controller(which, lines);
        Ok(ControllerSet {
            session_id: id,
            controller: which,
            pressed,
            reads: mem.read(crate::memory::CONTROLLERS[which]),
        })
    }
}
