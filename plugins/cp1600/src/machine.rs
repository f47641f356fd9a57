//! A CPU plus its debugger state (breakpoints, trace buffer) and the run
//! loop that honours limits, stop conditions and cancellation.
//!
//! Runs with nothing to watch take the fast path: a bare `step` loop checked
//! only against the halt flag and the limits. Breakpoints, conditions or an
//! enabled trace switch to the checked loop.

use crate::cpu::{Cpu, CpuState, FAULT, Fault, HALTED, INTERRUPT_VECTOR, MAX_EXEC_CYCLES};
use crate::disasm::disassemble;
use std::collections::VecDeque;

/// Instructions between two progress reports (and cancellation checks).
pub const SLICE: u64 = 1 << 20;

/// Default and maximum trace buffer sizes.
pub const TRACE_DEFAULT: usize = 1024;
/// The most entries a trace keeps (each costs about 64 bytes).
pub const TRACE_MAX: usize = 65536;

/// The state before one executed instruction.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    /// Registers, flags and counters before the instruction executed.
    pub before: CpuState,
    /// The instruction's words as they were when it executed.
    pub words: [u16; 3],
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// HLT executed.
    Halted,
    /// The cycle budget was used up.
    MaxCycles,
    /// The instruction count asked for was executed (`step`).
    Count,
    /// A breakpoint's address was reached (before executing it).
    Breakpoint,
    /// `run_until`'s PC was reached.
    PcReached,
    /// `run_until`'s register holds its value.
    RegisterMatch,
    /// `run_until`'s memory word holds its value.
    MemoryMatch,
    /// The progress callback asked to stop (the client cancelled).
    Cancelled,
    /// The caller's wall-clock allowance ran out (set by the tool layer).
    TimeLimit,
    /// Execution ran on (sequentially) into memory with nothing mapped.
    UnmappedExecution,
    /// A jump, branch, return or interrupt went where nothing is mapped.
    JumpToNoCode,
    /// A push or pull through R6 (or an interrupt's push) outside RAM.
    StackOutsideRam,
    /// A loop came round to exactly the same registers with no memory
    /// changed: it can only be waiting for something outside the CPU.
    IdleLoop,
}

impl StopReason {
    /// The name agents see in `reason` (snake_case, stable).
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
            StopReason::UnmappedExecution => "unmapped_execution",
            StopReason::JumpToNoCode => "jump_to_no_code",
            StopReason::StackOutsideRam => "stack_outside_ram",
            StopReason::IdleLoop => "idle_loop",
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
    /// Stop in a loop that can never end by itself ([`StopReason::IdleLoop`]).
    pub idle: bool,
}

impl StopWhen {
    fn any(&self) -> bool {
        self.pc.is_some() || self.register.is_some() || self.memory.is_some()
    }
}

/// How far a run may go (both bounds apply; counted from the run's start).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// At most this many instructions.
    pub instructions: u64,
    /// At most this many cycles.
    pub cycles: u64,
}

/// Why a run stopped on one of the checks, with the addresses involved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diagnosis {
    /// The PC reached `at`, where nothing is mapped. `from` is the
    /// instruction executed just before (None when the run began there);
    /// `interrupt` when an interrupt entry jumped there.
    NoCode {
        /// The address with nothing mapped.
        at: u16,
        /// The instruction executed just before, if any.
        from: Option<u16>,
        /// An interrupt entry jumped there.
        interrupt: bool,
        /// Execution ran on sequentially into it (not a jump).
        fell_through: bool,
    },
    /// The instruction at `pc` would push to or pull from `addr`, not RAM.
    Stack {
        /// The instruction not executed.
        pc: u16,
        /// The stack address it would use.
        addr: u16,
        /// A push (else a pull).
        push: bool,
    },
    /// An interrupt before the instruction at `pc` would push to `addr`.
    InterruptStack {
        /// The instruction the interrupt came before.
        pc: u16,
        /// Where the PC would be pushed.
        addr: u16,
    },
    /// The loop from `start` to the backward jump at `end` repeats itself.
    Idle {
        /// The loop's first address (the backward jump's target).
        start: u16,
        /// The backward jump's address.
        end: u16,
    },
    /// The loop from `start` to `end` has gone round for `cycles` (over
    /// [`SPIN_CYCLES`]) with interrupts on: it changes something each pass
    /// (a random seed, a counter) but can only be waiting for an interrupt.
    Spin {
        /// The loop's first address.
        start: u16,
        /// The backward jump's address.
        end: u16,
        /// Cycles spent in the loop so far.
        cycles: u64,
    },
}

/// A second of console time: a loop with interrupts on that spins this long
/// without leaving is waiting for the VBLANK interrupt (60 a second on a
/// console, none here unless raised).
pub const SPIN_CYCLES: u64 = 894_886;

impl Diagnosis {
    /// The reason a run reports for this diagnosis.
    pub fn reason(&self) -> StopReason {
        match self {
            Diagnosis::NoCode {
                fell_through: true, ..
            } => StopReason::UnmappedExecution,
            Diagnosis::NoCode { .. } => StopReason::JumpToNoCode,
            Diagnosis::Stack { .. } | Diagnosis::InterruptStack { .. } => {
                StopReason::StackOutsideRam
            }
            Diagnosis::Idle { .. } | Diagnosis::Spin { .. } => StopReason::IdleLoop,
        }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug)]
pub struct RunResult {
    /// Why it stopped.
    pub reason: StopReason,
    /// Instructions executed by this run.
    pub executed: u64,
    /// Cycles spent by this run.
    pub cycles_run: u64,
    /// Set when a check stopped the run.
    pub diagnosis: Option<Diagnosis>,
}

/// Snapshots taken at backward jumps: coming back to the same place with
/// the same registers and flags, no memory changed in between and no
/// interrupt able to arrive, the machine is in a cycle it cannot leave.
/// A few slots (by target address) catch loops with several backward jumps.
#[derive(Clone, Copy, Default)]
struct IdleSlot {
    valid: bool,
    target: u16,
    from: u16,
    r: [u16; 8],
    flags: u8,
    changes: u64,
}

const IDLE_SLOTS: usize = 8;

#[derive(Clone, Default)]
struct IdleWatch {
    slots: [IdleSlot; IDLE_SLOTS],
    /// The backward jump seen last (target, from) and the cycle count when
    /// it started repeating with interrupts on.
    spin: Option<(u16, u16, u64)>,
}

impl IdleWatch {
    /// After the instruction at `from` jumped backward, at `cycles`: the
    /// loop's diagnosis when it cannot end by itself.
    #[inline(never)]
    fn check(&mut self, cpu: &Cpu, from: u16, cycles: u64) -> Option<Diagnosis> {
        let st = &cpu.st;
        let target = st.r[7];
        match self.spin {
            Some((t, f, since)) if t == target && f == from && st.i => {
                // `since` was taken from the same counter, so never above;
                // saturating anyway, as the counters come from snapshots too.
                if cycles.saturating_sub(since) > SPIN_CYCLES {
                    return Some(Diagnosis::Spin {
                        start: target,
                        end: from,
                        cycles: cycles.saturating_sub(since),
                    });
                }
            }
            _ => self.spin = st.i.then_some((target, from, cycles)),
        }
        let flags = (st.s as u8)
            | (st.z as u8) << 1
            | (st.ov as u8) << 2
            | (st.c as u8) << 3
            | (st.i as u8) << 4
            | (st.d as u8) << 5;
        let changes = cpu.mem.changes();
        let slot = &mut self.slots[(target as usize ^ (target as usize >> 3)) % IDLE_SLOTS];
        if slot.valid
            && slot.target == target
            && slot.from == from
            && slot.r == st.r
            && slot.flags == flags
            && slot.changes == changes
            && !(cpu.irq && st.i)
        {
            return Some(Diagnosis::Idle {
                start: target,
                end: from,
            });
        }
        *slot = IdleSlot {
            valid: true,
            target,
            from,
            r: st.r,
            flags,
            changes,
        };
        None
    }
}

/// A CPU under a debugger.
#[derive(Clone)]
pub struct Machine {
    /// The CPU and its memory.
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
    /// Runs `instructions` instructions (fewer if the program halts or
    /// faults) with no stop condition and no cycle limit: the bare core,
    /// as benchmarks time it.
    pub fn run_count(&mut self, instructions: u64) -> RunResult {
        let limits = Limits {
            instructions,
            cycles: u64::MAX,
        };
        self.run(limits, &StopWhen::default(), &mut |_, _| true)
    }

    /// A machine with a raw image (big-endian 16-bit words, as a `.bin`)
    /// loaded at `at` and the CPU reset there: how benchmarks and tests run
    /// the core natively, without a session.
    pub fn with_raw_image(bytes: &[u8], at: u16) -> Self {
        let mut m = Machine::new();
        for (i, w) in bytes.chunks_exact(2).enumerate() {
            m.cpu
                .mem
                .load_word(at.wrapping_add(i as u16), u16::from_be_bytes([w[0], w[1]]));
        }
        m.cpu.reset_to(at);
        m
    }

    /// A machine at reset with no breakpoints and tracing off.
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

    /// Removes every breakpoint; returns how many there were.
    pub fn clear_all_breakpoints(&mut self) -> usize {
        let n = self.breakpoint_count;
        *self.breakpoints = [0; 1024];
        self.breakpoint_count = 0;
        n
    }

    #[inline(always)]
    /// Whether a breakpoint is set at `addr` (checked before every instruction, hence inline).
    pub fn has_breakpoint(&self, addr: u16) -> bool {
        self.breakpoints[(addr >> 6) as usize] >> (addr & 63) & 1 != 0
    }

    /// Every breakpoint address, ascending.
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

    /// Whether executed instructions are being recorded.
    pub fn tracing(&self) -> bool {
        self.tracing
    }

    /// How many entries the trace keeps.
    pub fn trace_capacity(&self) -> usize {
        self.trace_capacity
    }

    /// The trace, oldest first.
    pub fn trace(&self) -> &VecDeque<TraceEntry> {
        &self.trace
    }

    /// Empties the trace (on load and reset, whose history no longer applies).
    pub fn clear_trace(&mut self) {
        self.trace.clear();
    }

    /// Runs until a limit, a halt, a stop condition, a check or
    /// cancellation. `progress(executed, cycles_run)` is called every
    /// [`SLICE`] instructions; returning false cancels (the machine stays
    /// consistent).
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
        let mut idle = when.idle.then(IdleWatch::default);
        let mut last: Option<u16> = None;
        let mut first = true;
        let mut diagnosis = None;
        let reason = loop {
            let slice_end = instr_end.min(self.cpu.st.instructions.saturating_add(SLICE));
            let stop = if checked {
                self.run_checked(slice_end, cycle_end, when, &mut first, &mut idle, &mut last)
            } else {
                self.run_fast(slice_end, cycle_end, &mut idle, &mut last)
            };
            let st = &self.cpu.st;
            match stop {
                Some(Stop::Reason(r)) => break r,
                Some(Stop::Check(d)) => {
                    diagnosis = Some(d);
                    break d.reason();
                }
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
            diagnosis,
        }
    }

    /// Turns the fault the CPU reported into a diagnosis. `last` is the
    /// instruction executed before (None at the start of a run).
    #[cold]
    #[inline(never)]
    fn diagnose(&mut self, last: Option<u16>) -> Diagnosis {
        let cpu = &mut self.cpu;
        match cpu.fault.take() {
            Some(Fault::Unmapped { pc }) => {
                let interrupt = pc == INTERRUPT_VECTOR && last.is_some() && cpu.irq_entered;
                let fell_through = !interrupt
                    && last.is_some_and(|from| {
                        let ins = disassemble(|a| cpu.mem.read(a), from, false);
                        from.wrapping_add(ins.len) == pc
                    });
                cpu.irq_entered = false;
                Diagnosis::NoCode {
                    at: pc,
                    from: last,
                    interrupt,
                    fell_through,
                }
            }
            Some(Fault::Stack { pc, addr, push }) => Diagnosis::Stack { pc, addr, push },
            Some(Fault::InterruptStack { addr }) => Diagnosis::InterruptStack {
                pc: cpu.st.r[7],
                addr,
            },
            None => unreachable!("FAULT is only returned with a fault recorded"),
        }
    }

    fn run_fast(
        &mut self,
        instr_end: u64,
        cycle_end: u64,
        idle: &mut Option<IdleWatch>,
        last: &mut Option<u16>,
    ) -> Option<Stop> {
        // Two instantiations, so a run without the idle watch (step, the
        // benchmarks) pays nothing for it.
        let (stop, faulted) = match idle.as_mut() {
            Some(w) => self.fast_loop::<true>(instr_end, cycle_end, w, last),
            None => self.fast_loop::<false>(instr_end, cycle_end, &mut IdleWatch::default(), last),
        };
        if faulted {
            return Some(Stop::Check(self.diagnose(*last)));
        }
        stop
    }

    /// The bare loop: returns (a check's stop, whether the CPU faulted) and
    /// leaves the last executed instruction's address in `last`.
    #[inline(never)]
    fn fast_loop<const IDLE: bool>(
        &mut self,
        instr_end: u64,
        cycle_end: u64,
        watch: &mut IdleWatch,
        last: &mut Option<u16>,
    ) -> (Option<Stop>, bool) {
        let cpu = &mut self.cpu;
        let mut cycles = cpu.st.cycles;
        let start_n = cpu.st.instructions;
        let mut n = start_n;
        // The address of the last instruction executed (valid once n > start_n).
        let mut prev = 0u16;
        let mut stop = None;
        let mut faulted = false;
        'run: while !cpu.st.halted && cycles < cycle_end && n < instr_end {
            // No instruction takes more than MAX_EXEC_CYCLES, so a chunk of
            // `room` instructions cannot reach the cycle limit before its
            // last one and the inner loop tests one counter: in a component
            // every bound it tests is a spill and a reload per instruction.
            // Near the limit the chunk is one instruction, as before.
            let room = (cycle_end - cycles) / u64::from(MAX_EXEC_CYCLES);
            let chunk = (instr_end - n).min(room).max(1);
            let chunk_start = cycles;
            // Counted down: the test is the decrement's own flag.
            let mut left = chunk;
            loop {
                let pc = cpu.st.r[7];
                let c = cpu.exec();
                // HLT or a fault, flagged in the value tested anyway.
                if c >= HALTED {
                    let ran = c & !(FAULT | HALTED);
                    if ran != 0 {
                        cycles = cycles.saturating_add(ran as u64);
                        left -= 1;
                        prev = pc;
                    }
                    faulted = c & FAULT != 0;
                    n += chunk - left;
                    break 'run;
                }
                debug_assert!(c <= MAX_EXEC_CYCLES, "{c} cycles at ${pc:04X}");
                // Cannot wrap before the chunk's last instruction (see
                // above); a one-instruction chunk is checked after it.
                cycles = cycles.wrapping_add(c as u64);
                left -= 1;
                prev = pc;
                if IDLE
                    && cpu.st.r[7] <= pc
                    && let Some(d) = watch.check(cpu, pc, cycles)
                {
                    n += chunk - left;
                    stop = Some(Stop::Check(d));
                    break 'run;
                }
                if left == 0 {
                    break;
                }
            }
            n += chunk;
            // Saturating, as in `Cpu::step`: a restored session may start
            // near the end (up to 2^63).
            if cycles < chunk_start {
                cycles = u64::MAX;
            }
        }
        cpu.st.cycles = cycles;
        cpu.st.instructions = n;
        if n > start_n {
            *last = Some(prev);
        }
        (stop, faulted)
    }

    fn run_checked(
        &mut self,
        instr_end: u64,
        cycle_end: u64,
        when: &StopWhen,
        first: &mut bool,
        idle: &mut Option<IdleWatch>,
        last: &mut Option<u16>,
    ) -> Option<Stop> {
        while !self.cpu.st.halted
            && self.cpu.st.cycles < cycle_end
            && self.cpu.st.instructions < instr_end
        {
            let pc = self.cpu.st.r[7];
            if !*first {
                if when.breakpoints && self.has_breakpoint(pc) {
                    return Some(Stop::Reason(StopReason::Breakpoint));
                }
                if when.pc == Some(pc) {
                    return Some(Stop::Reason(StopReason::PcReached));
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
            let before = self.cpu.st.instructions;
            if self.cpu.step().is_some() {
                if self.cpu.st.instructions == before {
                    // Refused: it never executed, so it is not in the trace.
                    if self.tracing {
                        self.trace.pop_back();
                    }
                } else {
                    *last = Some(pc);
                }
                return Some(Stop::Check(self.diagnose(*last)));
            }
            if self.cpu.st.r[7] <= pc
                && let Some(w) = idle.as_mut()
                && let Some(d) = w.check(&self.cpu, pc, self.cpu.st.cycles)
            {
                *last = Some(pc);
                return Some(Stop::Check(d));
            }
            *last = Some(pc);
            if let Some((r, v)) = when.register
                && self.cpu.st.r[r & 7] == v
            {
                return Some(Stop::Reason(StopReason::RegisterMatch));
            }
            if let Some((a, v)) = when.memory
                && self.cpu.mem.read(a) == v
            {
                return Some(Stop::Reason(StopReason::MemoryMatch));
            }
        }
        None
    }
}

/// How a run slice ended early.
enum Stop {
    Reason(StopReason),
    Check(Diagnosis),
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

    /// The fast loop runs in chunks that test one counter; wherever the
    /// limits fall, it must stop where stepping one instruction at a time
    /// against both limits stops.
    #[test]
    fn chunked_runs_stop_where_single_steps_stop() {
        let programs: [&[u8]; 3] = [
            include_bytes!("../../../samples/cp1600/01-hello-world.bin"),
            include_bytes!("../../../samples/cp1600/06-nested-calls.bin"),
            include_bytes!("../../../samples/cp1600/bench-loop.bin"),
        ];
        for (p, image) in programs.iter().enumerate() {
            for (instructions, cycles) in (0..400)
                .map(|c| (u64::MAX, c))
                .chain((0..300).map(|i| (i, u64::MAX)))
                .chain([(97, 1000), (1000, 613), (5000, 40_000)])
            {
                let mut fast = Machine::with_raw_image(image, 0x5000);
                let r = fast.run(
                    Limits {
                        instructions,
                        cycles,
                    },
                    &StopWhen::default(),
                    &mut never,
                );
                let mut slow = Machine::with_raw_image(image, 0x5000);
                let going = |st: &CpuState| {
                    !st.halted && st.cycles < cycles && st.instructions < instructions
                };
                while going(&slow.cpu.st) {
                    assert_eq!(slow.cpu.step(), None);
                }
                let at = format!("program {p}, limits ({instructions}, {cycles})");
                assert_eq!(fast.cpu.st, slow.cpu.st, "{at}");
                assert_eq!(r.executed, slow.cpu.st.instructions, "{at}");
                let why = if slow.cpu.st.halted {
                    StopReason::Halted
                } else if slow.cpu.st.cycles >= cycles {
                    StopReason::MaxCycles
                } else {
                    StopReason::Count
                };
                assert_eq!(r.reason, why, "{at}");
            }
        }
    }

    /// A restored session may start near the end of the cycle counter: it
    /// saturates there rather than wrapping.
    #[test]
    fn the_cycle_counter_saturates() {
        let mut m = looping();
        m.cpu.st.cycles = u64::MAX - 20;
        let unlimited = Limits {
            instructions: 1000,
            cycles: u64::MAX,
        };
        let r = m.run(unlimited, &StopWhen::default(), &mut never);
        assert_eq!(
            (r.reason, m.cpu.st.cycles),
            (StopReason::MaxCycles, u64::MAX)
        );
        assert!(r.executed >= 3 && r.executed <= 4, "{}", r.executed);
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

    /// A machine running `src` (as1600 syntax, assembled by `crate::asm`).
    fn program(src: &str) -> Machine {
        let p = crate::asm::assemble(src).unwrap();
        let mut m = Machine::new();
        for (i, w) in p.words.iter().enumerate() {
            m.cpu.mem.load_word(p.origin + i as u16, *w);
        }
        m.cpu.reset_to(p.origin);
        m
    }

    fn run_checked_all(m: &mut Machine, trace: bool) -> RunResult {
        let when = StopWhen {
            breakpoints: true,
            idle: true,
            ..Default::default()
        };
        m.configure_trace(trace, None);
        m.run(
            Limits {
                instructions: u64::MAX,
                cycles: 2_000_000,
            },
            &when,
            &mut never,
        )
    }

    /// Every check, through both run loops (plain and traced).
    #[test]
    fn each_check_stops_with_its_diagnosis() {
        for trace in [false, true] {
            // A jump to nowhere: stops at the target, blaming the jump.
            let mut m = program(" ORG $5000\n MVII #$02F0, R6\n J $6000\n");
            let r = run_checked_all(&mut m, trace);
            assert_eq!(r.reason, StopReason::JumpToNoCode);
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::NoCode {
                    at: 0x6000,
                    from: Some(0x5002),
                    interrupt: false,
                    fell_through: false
                })
            );
            assert_eq!((r.executed, m.cpu.st.r[7]), (2, 0x6000));
            // Running again stops at once, executing nothing.
            let r = run_checked_all(&mut m, trace);
            assert_eq!((r.reason, r.executed), (StopReason::JumpToNoCode, 0));
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::NoCode {
                    at: 0x6000,
                    from: None,
                    interrupt: false,
                    fell_through: false
                })
            );

            // Falling off the end of the code.
            let mut m = program(" ORG $5000\n NOP\n MVII #1, R0\n");
            let r = run_checked_all(&mut m, trace);
            assert_eq!(r.reason, StopReason::UnmappedExecution, "trace {trace}");
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::NoCode {
                    at: 0x5003,
                    from: Some(0x5001),
                    interrupt: false,
                    fell_through: true
                })
            );

            // A push with R6 never set: refused, nothing changed.
            let mut m = program(" ORG $5000\n MVII #7, R5\n PSHR R5\n HLT\n");
            let r = run_checked_all(&mut m, trace);
            assert_eq!(r.reason, StopReason::StackOutsideRam);
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::Stack {
                    pc: 0x5002,
                    addr: 0,
                    push: true
                })
            );
            assert_eq!((r.executed, m.cpu.st.r[7], m.cpu.st.r[6]), (1, 0x5002, 0));
            if trace {
                assert_eq!(m.trace().len(), 1, "the refused PSHR is not traced");
            }
            // A pull from below RAM ($01FF-1 is the sound chip).
            let mut m = program(" ORG $5000\n MVII #$0200, R6\n PULR R0\n PULR R7\n");
            let r = run_checked_all(&mut m, trace);
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::Stack {
                    pc: 0x5002,
                    addr: 0x01FF,
                    push: false
                })
            );
            assert_eq!(m.cpu.st.r[6], 0x0200, "the refused PULR left R6");

            // An idle loop polling RAM an interrupt handler would set.
            let mut m = program(
                " ORG $5000\n MVII #$02F0, R6\nwait: MVI $0103, R0\n TSTR R0\n BEQ wait\n HLT\n",
            );
            let r = run_checked_all(&mut m, trace);
            assert_eq!(r.reason, StopReason::IdleLoop);
            assert_eq!(
                r.diagnosis,
                Some(Diagnosis::Idle {
                    start: 0x5002,
                    end: 0x5005
                })
            );
            assert!(r.executed < 20, "found on the second pass: {}", r.executed);
            // A counting loop is progress, not idling.
            let mut m = program(" ORG $5000\n MVII #300, R1\nl: DECR R1\n BNEQ l\n HLT\n");
            assert_eq!(run_checked_all(&mut m, trace).reason, StopReason::Halted);
            // A loop stirring a seed with interrupts on: waiting for VBLANK.
            let mut m = program(" ORG $5000\n EIS\nl: INCR R0\n MVO R0, $0200\n B l\n");
            let r = run_checked_all(&mut m, trace);
            assert!(
                matches!(r.diagnosis, Some(Diagnosis::Spin { start: 0x5001, end: 0x5004, cycles }) if cycles > SPIN_CYCLES),
                "{:?}",
                r.diagnosis
            );
            // The same loop with interrupts off may be a delay: runs to the budget.
            let mut m = program(" ORG $5000\nl: INCR R0\n MVO R0, $0200\n B l\n");
            assert_eq!(run_checked_all(&mut m, trace).reason, StopReason::MaxCycles);
            // A loop that writes the same value every pass changes nothing.
            let mut m = program(" ORG $5000\nl: MVO R0, $0200\n B l\n");
            assert_eq!(run_checked_all(&mut m, trace).reason, StopReason::IdleLoop);
        }
    }

    #[test]
    fn interrupts_without_an_exec_or_a_stack_are_diagnosed() {
        let mut m = program(" ORG $5000\n EIS\n NOP\n NOP\n");
        m.cpu.irq = true;
        let r = run_checked_all(&mut m, false);
        assert_eq!(
            r.diagnosis,
            Some(Diagnosis::InterruptStack {
                pc: 0x5002,
                addr: 0
            })
        );
        assert!(m.cpu.irq, "still pending");
        m.cpu.st.r[6] = 0x02F0;
        let r = run_checked_all(&mut m, false);
        assert_eq!(r.reason, StopReason::JumpToNoCode);
        assert_eq!(
            r.diagnosis,
            Some(Diagnosis::NoCode {
                at: INTERRUPT_VECTOR,
                from: Some(0x5002),
                interrupt: true,
                fell_through: false
            })
        );
        assert_eq!(m.cpu.mem.read(0x02F0), 0x5003, "the PC was pushed");
    }

    #[test]
    fn checks_off_run_as_before() {
        let mut m = program(" ORG $5000\n J $6000\n");
        m.cpu.checks = false;
        let r = m.run(
            Limits {
                instructions: u64::MAX,
                cycles: 10_000,
            },
            &StopWhen::default(),
            &mut never,
        );
        assert_eq!((r.reason, r.diagnosis), (StopReason::MaxCycles, None));
    }
}
