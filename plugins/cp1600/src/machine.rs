//! A CPU plus its debugger state (breakpoints, trace buffer) and the run
//! loop that honours limits, stop conditions and cancellation.
//!
//! Runs with nothing to watch take the fast path: a bare `step` loop checked
//! only against the halt flag and the limits. Breakpoints, conditions or an
//! enabled trace switch to the checked loop.

use crate::cpu::{Cpu, CpuState};
use std::collections::VecDeque;

/// Instructions between two progress reports (and cancellation checks).
pub const SLICE: u64 = 1 << 20;

/// Default and maximum trace buffer sizes.
pub const TRACE_DEFAULT: usize = 1024;
pub const TRACE_MAX: usize = 65536;

/// The state before one executed instruction.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    pub before: CpuState,
    /// The instruction's words as they were when it executed.
    pub words: [u16; 3],
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Halted,
    MaxCycles,
    /// The instruction count asked for was executed (`step`).
    Count,
    Breakpoint,
    PcReached,
    RegisterMatch,
    MemoryMatch,
    Cancelled,
    /// The caller's wall-clock allowance ran out (set by the tool layer).
    TimeLimit,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Halted => "halted",
            StopReason::MaxCycles => "max_cycles_reached",
            StopReason::Count => "count_reached",
            StopReason::Breakpoint => "breakpoint",
            StopReason::PcReached => "pc_reached",
            StopReason::RegisterMatch => "register_match",
            StopReason::MemoryMatch => "memory_match",
            StopReason::Cancelled => "cancelled",
            StopReason::TimeLimit => "time_limit",
        }
    }
}

/// Extra reasons to stop, checked around every instruction.
#[derive(Clone, Copy, Debug, Default)]
pub struct StopWhen {
    /// Stop at breakpoints (before executing the instruction there).
    pub breakpoints: bool,
    /// Stop when the PC reaches this address (before executing it).
    pub pc: Option<u16>,
    /// Stop once register `.0` holds `.1`.
    pub register: Option<(usize, u16)>,
    /// Stop once memory word `.0` holds `.1`.
    pub memory: Option<(u16, u16)>,
}

impl StopWhen {
    fn any(&self) -> bool {
        self.pc.is_some() || self.register.is_some() || self.memory.is_some()
    }
}

/// How far a run may go (both bounds apply; counted from the run's start).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub instructions: u64,
    pub cycles: u64,
}

/// What a run did.
#[derive(Clone, Copy, Debug)]
pub struct RunResult {
    pub reason: StopReason,
    pub executed: u64,
    pub cycles_run: u64,
}

/// A CPU under a debugger.
#[derive(Clone)]
pub struct Machine {
    pub cpu: Cpu,
    breakpoints: Box<[u64; 1024]>,
    breakpoint_count: usize,
    trace: VecDeque<TraceEntry>,
    trace_capacity: usize,
    tracing: bool,
}

impl Default for Machine {
    fn default() -> Self {
        Self::new()
    }
}

impl Machine {
    pub fn new() -> Self {
        Machine {
            cpu: Cpu::new(),
            breakpoints: Box::new([0; 1024]),
            breakpoint_count: 0,
            trace: VecDeque::new(),
            trace_capacity: TRACE_DEFAULT,
            tracing: false,
        }
    }

    /// Adds a breakpoint; false when it was already set.
    pub fn set_breakpoint(&mut self, addr: u16) -> bool {
        let (w, b) = ((addr >> 6) as usize, addr & 63);
        let was = self.breakpoints[w] >> b & 1 != 0;
        if !was {
            self.breakpoints[w] |= 1 << b;
            self.breakpoint_count += 1;
        }
        !was
    }

    /// Removes a breakpoint; false when none was set there.
    pub fn clear_breakpoint(&mut self, addr: u16) -> bool {
        let had = self.has_breakpoint(addr);
        if had {
            self.breakpoints[(addr >> 6) as usize] &= !(1 << (addr & 63));
            self.breakpoint_count -= 1;
        }
        had
    }

    pub fn clear_all_breakpoints(&mut self) -> usize {
        let n = self.breakpoint_count;
        *self.breakpoints = [0; 1024];
        self.breakpoint_count = 0;
        n
    }

    #[inline(always)]
    pub fn has_breakpoint(&self, addr: u16) -> bool {
        self.breakpoints[(addr >> 6) as usize] >> (addr & 63) & 1 != 0
    }

    pub fn breakpoints(&self) -> Vec<u16> {
        (0..=u16::MAX).filter(|a| self.has_breakpoint(*a)).collect()
    }

    /// Turns the trace buffer on or off; a new capacity drops older entries.
    pub fn configure_trace(&mut self, enabled: bool, capacity: Option<usize>) {
        self.tracing = enabled;
        if let Some(c) = capacity {
            self.trace_capacity = c.clamp(1, TRACE_MAX);
            while self.trace.len() > self.trace_capacity {
                self.trace.pop_front();
            }
        }
    }

    pub fn tracing(&self) -> bool {
        self.tracing
    }

    pub fn trace_capacity(&self) -> usize {
        self.trace_capacity
    }

    /// The trace, oldest first.
    pub fn trace(&self) -> &VecDeque<TraceEntry> {
        &self.trace
    }

    pub fn clear_trace(&mut self) {
        self.trace.clear();
    }

    /// Runs until a limit, a halt, a stop condition or cancellation.
    /// `progress(executed, cycles_run)` is called every [`SLICE`]
    /// instructions; returning false cancels (the machine stays consistent).
    pub fn run(
        &mut self,
        limits: Limits,
        when: &StopWhen,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> RunResult {
        let start_instr = self.cpu.st.instructions;
        let start_cycles = self.cpu.st.cycles;
        let instr_end = start_instr.saturating_add(limits.instructions);
        let cycle_end = start_cycles.saturating_add(limits.cycles);
        let checked = self.tracing || when.any() || (when.breakpoints && self.breakpoint_count > 0);
        let mut first = true;
        let reason = loop {
            let slice_end = instr_end.min(self.cpu.st.instructions.saturating_add(SLICE));
            let stop = if checked {
                self.run_checked(slice_end, cycle_end, when, &mut first)
            } else {
                self.run_fast(slice_end, cycle_end)
            };
            let st = &self.cpu.st;
            match stop {
                Some(r) => break r,
                None if st.halted => break StopReason::Halted,
                None if st.cycles >= cycle_end => break StopReason::MaxCycles,
                None if st.instructions >= instr_end => break StopReason::Count,
                None => {
                    let (done, cyc) = (st.instructions - start_instr, st.cycles - start_cycles);
                    if !progress(done, cyc) {
                        break StopReason::Cancelled;
                    }
                }
            }
        };
        RunResult {
            reason,
            executed: self.cpu.st.instructions - start_instr,
            cycles_run: self.cpu.st.cycles - start_cycles,
        }
    }

    #[inline(never)]
    fn run_fast(&mut self, instr_end: u64, cycle_end: u64) -> Option<StopReason> {
        let cpu = &mut self.cpu;
        let mut cycles = cpu.st.cycles;
        let mut n = cpu.st.instructions;
        while !cpu.st.halted && cycles < cycle_end && n < instr_end {
            cycles += cpu.exec() as u64;
            n += 1;
        }
        cpu.st.cycles = cycles;
        cpu.st.instructions = n;
        None
    }

    fn run_checked(
        &mut self,
        instr_end: u64,
        cycle_end: u64,
        when: &StopWhen,
        first: &mut bool,
    ) -> Option<StopReason> {
        while !self.cpu.st.halted
            && self.cpu.st.cycles < cycle_end
            && self.cpu.st.instructions < instr_end
        {
            let pc = self.cpu.st.r[7];
            if !*first {
                if when.breakpoints && self.has_breakpoint(pc) {
                    return Some(StopReason::Breakpoint);
                }
                if when.pc == Some(pc) {
                    return Some(StopReason::PcReached);
                }
            }
            *first = false;
            if self.tracing {
                if self.trace.len() >= self.trace_capacity {
                    self.trace.pop_front();
                }
                let m = &self.cpu.mem;
                self.trace.push_back(TraceEntry {
                    before: self.cpu.st,
                    words: [
                        m.read(pc),
                        m.read(pc.wrapping_add(1)),
                        m.read(pc.wrapping_add(2)),
                    ],
                });
            }
            self.cpu.step();
            if let Some((r, v)) = when.register
                && self.cpu.st.r[r & 7] == v
            {
                return Some(StopReason::RegisterMatch);
            }
            if let Some((a, v)) = when.memory
                && self.cpu.mem.read(a) == v
            {
                return Some(StopReason::MemoryMatch);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MVII #0,R0 ; loop: INCR R0 ; B loop
    fn looping() -> Machine {
        let mut m = Machine::new();
        for (i, w) in [0x02B8u16, 0x0000, 0x0008, 0x0220, 0x0002]
            .iter()
            .enumerate()
        {
            m.cpu.mem.load_word(0x5000 + i as u16, *w);
        }
        m.cpu.reset_to(0x5000);
        m
    }

    fn never(_: u64, _: u64) -> bool {
        true
    }

    #[test]
    fn cycle_limit_and_count_limit() {
        let mut m = looping();
        let r = m.run(
            Limits {
                instructions: u64::MAX,
                cycles: 100,
            },
            &StopWhen::default(),
            &mut never,
        );
        assert_eq!(r.reason, StopReason::MaxCycles);
        assert!(r.cycles_run >= 100 && r.cycles_run < 110);
        let r = m.run(
            Limits {
                instructions: 3,
                cycles: u64::MAX,
            },
            &StopWhen::default(),
            &mut never,
        );
        assert_eq!((r.reason, r.executed), (StopReason::Count, 3));
    }

    #[test]
    fn breakpoints_skip_the_starting_instruction() {
        let mut m = looping();
        m.set_breakpoint(0x5002);
        let when = StopWhen {
            breakpoints: true,
            ..Default::default()
        };
        let lim = Limits {
            instructions: u64::MAX,
            cycles: 1000,
        };
        let r = m.run(lim, &when, &mut never);
        assert_eq!((r.reason, m.cpu.st.r[7]), (StopReason::Breakpoint, 0x5002));
        let r = m.run(lim, &when, &mut never);
        assert_eq!(
            (r.reason, r.executed, m.cpu.st.r[0]),
            (StopReason::Breakpoint, 2, 1)
        );
        assert_eq!(m.breakpoints(), vec![0x5002]);
        assert!(m.clear_breakpoint(0x5002));
        assert_eq!(m.breakpoints(), Vec::<u16>::new());
    }

    #[test]
    fn register_condition_and_trace() {
        let mut m = looping();
        m.configure_trace(true, Some(4));
        let when = StopWhen {
            register: Some((0, 5)),
            ..Default::default()
        };
        let r = m.run(
            Limits {
                instructions: u64::MAX,
                cycles: u64::MAX,
            },
            &when,
            &mut never,
        );
        assert_eq!(r.reason, StopReason::RegisterMatch);
        assert_eq!(m.cpu.st.r[0], 5);
        assert_eq!(m.trace().len(), 4);
        assert_eq!(m.trace().back().map(|t| t.words[0]), Some(0x0008));
    }

    #[test]
    fn cancellation_keeps_state() {
        let mut m = looping();
        let mut calls = 0;
        let r = m.run(
            Limits {
                instructions: u64::MAX,
                cycles: u64::MAX,
            },
            &StopWhen::default(),
            &mut |done, _| {
                calls += 1;
                done < 2 * SLICE
            },
        );
        assert_eq!(r.reason, StopReason::Cancelled);
        assert_eq!(calls, 2);
        assert_eq!(r.executed, 2 * SLICE);
        assert!(!m.cpu.st.halted);
    }
}
