//! One emulated PC: CPU, DOS state, breakpoints and optional tracking.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cpu::{CS, Cpu, Exit, Model, SP};
use crate::dos::{Dos, Flow, Limits, LoadError, Program};
use crate::tracking::{SegOff, Tracker};

/// Why a run or step stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The program terminated (INT 20h, INT 21h AH=00h/4Ch).
    Exited(u8),
    /// An execution breakpoint (its id) is at CS:IP.
    Breakpoint(u32),
    /// The instruction budget (or the step count) was used up.
    Budget,
    /// HLT with no interrupt source.
    Halted,
    /// The client cancelled the call (or progress asked to stop).
    Cancelled,
    /// The call's wall-time budget ran out (the machine is intact).
    TimeLimit,
    /// The program reads the keyboard and no input is queued; the read is
    /// retried when the run continues after input is added.
    WaitingForInput,
}

impl StopReason {
    /// The reason as results print it (`exited`, `time_limit`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Exited(_) => "exited",
            StopReason::Breakpoint(_) => "breakpoint",
            StopReason::Budget => "budget",
            StopReason::Halted => "halted",
            StopReason::Cancelled => "cancelled",
            StopReason::TimeLimit => "time_limit",
            StopReason::WaitingForInput => "waiting_for_input",
        }
    }
}

/// Why a machine cannot run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RunError {
    /// The program exited with this code.
    #[error("the program has exited with code {0}; call x86_load_program to start it again")]
    AlreadyExited(u8),
    #[error(
        "the CPU is halted (HLT with no interrupt source); call x86_load_program or x86_write_registers to continue"
    )]
    /// The CPU halted with no interrupt source.
    Halted,
}

/// Instructions per progress report / cancellation check.
pub const CHUNK: u64 = 1 << 20;
/// Most breakpoints per machine (client-made, but bounded all the same).
pub const MAX_BREAKPOINTS: usize = 1024;

/// A breakpoint: what it stops on, where, and on what condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakpoint {
    /// Execution, or a kind of memory or port access.
    pub kind: crate::watch::Kind,
    /// The linear address (or port) it starts at.
    pub first: u32,
    /// The last address (or port) it covers; `first` for execution.
    pub last: u32,
    /// When set, a hit stops the run only if it holds.
    pub condition: Option<crate::condition::Condition>,
}

impl Breakpoint {
    /// An execution breakpoint at `linear`, unconditional.
    pub fn execution(linear: u32) -> Self {
        Breakpoint {
            kind: crate::watch::Kind::Execution,
            first: linear & 0xFFFFF,
            last: linear & 0xFFFFF,
            condition: None,
        }
    }
}

/// Reads of the empty keyboard ports within one run chunk that make a
/// run stop waiting for input: a tight polling loop reads them about every
/// six instructions (over 100,000 times a chunk); a game reading them once
/// a frame, a few times.
const POLLS_WAITING: u32 = 10_000;

/// A machine's handle: random, minted by the server (see `tools::Session`).
pub type MachineId = u64;

/// One emulated PC: CPU, DOS state, the loaded program, its breakpoints
/// and, with tracking, its function catalogue and control-flow graph.
pub struct Machine {
    /// Its handle.
    pub id: MachineId,
    /// The CPU and memory.
    pub cpu: Cpu,
    /// DOS and BIOS state.
    pub dos: Dos,
    /// The loaded program.
    pub program: Program,
    /// Function and CFG tracking, when on.
    pub tracker: Option<Tracker>,
    /// Breakpoints by id.
    pub breakpoints: BTreeMap<u32, Breakpoint>,
    next_breakpoint: u32,
    /// A conditional breakpoint at CS:IP did not hold: the next run
    /// chunk starts past it.
    pass_breakpoint: bool,
    /// The access that stopped the last run at an access breakpoint.
    pub last_access: Option<crate::watch::Access>,
    /// The break code owed for the last key delivered through port 60h.
    key_release: Option<u8>,
    bp_bitmap: Vec<u64>,
    /// Some bit of `bp_bitmap` is set: a breakpoint, or the return
    /// address a step over a call waits for.
    bp_armed: bool,
    /// The exit code, once the program exited.
    pub exit_code: Option<u8>,
    /// Whether HLT stopped the CPU with no interrupt source.
    pub halted: bool,
    /// Counts loads and `x86_write_memory` calls into this machine id, so a
    /// change the registers do not show is still seen by `tools::Look`.
    pub edits: u64,
}

impl Machine {
    /// Loads a program image. `root` is drive C: for the DOS file services.
    pub fn load(
        id: MachineId,
        path: &Path,
        image: &[u8],
        tail: &str,
        model: Model,
        tracking: bool,
    ) -> Result<Machine, LoadError> {
        Self::load_with_limits(id, path, image, tail, model, tracking, Limits::default())
    }

    /// [`Machine::load`] with explicit console and file-write limits.
    pub fn load_with_limits(
        id: MachineId,
        path: &Path,
        image: &[u8],
        tail: &str,
        model: Model,
        tracking: bool,
        limits: Limits,
    ) -> Result<Machine, LoadError> {
        let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut cpu = Cpu::new(model);
        let mut dos = Dos::with_limits(root, limits);
        let program = dos.load(&mut cpu, path, image, tail)?;
        let tracker = tracking.then(|| Tracker::new(SegOff(program.entry.0, program.entry.1)));
        Ok(Machine {
            id,
            cpu,
            dos,
            program,
            tracker,
            breakpoints: BTreeMap::new(),
            next_breakpoint: 1,
            pass_breakpoint: false,
            last_access: None,
            key_release: None,
            bp_bitmap: vec![0; crate::cpu::MEM_SIZE / 64],
            bp_armed: false,
            exit_code: None,
            halted: false,
            edits: 0,
        })
    }

    /// Whether the machine can run on, as x86_list_machines shows it.
    pub fn state(&self) -> MachineState {
        if self.exit_code.is_some() {
            MachineState::Exited
        } else if self.halted {
            MachineState::Halted
        } else {
            MachineState::Ready
        }
    }

    /// [`Machine::state`] in words: `exited`, `halted` or `ready`.
    pub fn state_name(&self) -> &'static str {
        match self.state() {
            MachineState::Exited => "exited",
            MachineState::Halted => "halted",
            MachineState::Ready => "ready",
        }
    }

    /// Where the CPU stands.
    pub fn cs_ip(&self) -> SegOff {
        SegOff(self.cpu.sregs[CS], self.cpu.ip)
    }

    /// Adds an execution breakpoint; None when the machine already has
    /// [`MAX_BREAKPOINTS`].
    pub fn add_breakpoint(&mut self, linear: u32) -> Option<u32> {
        self.add(Breakpoint::execution(linear))
    }

    /// Adds any breakpoint; None when the machine already has
    /// [`MAX_BREAKPOINTS`].
    pub fn add(&mut self, bp: Breakpoint) -> Option<u32> {
        if self.breakpoints.len() >= MAX_BREAKPOINTS {
            return None;
        }
        let id = self.next_breakpoint;
        self.next_breakpoint += 1;
        self.breakpoints.insert(id, bp);
        self.rebuild_bitmap();
        Some(id)
    }

    /// Removes a breakpoint; false when there is no such id.
    pub fn remove_breakpoint(&mut self, id: u32) -> bool {
        let removed = self.breakpoints.remove(&id).is_some();
        self.rebuild_bitmap();
        removed
    }

    fn rebuild_bitmap(&mut self) {
        use crate::watch::Kind;
        self.bp_bitmap.iter_mut().for_each(|w| *w = 0);
        let mut ranges = Vec::new();
        for bp in self.breakpoints.values() {
            if bp.kind == Kind::Execution {
                let a = bp.first;
                self.bp_bitmap[(a >> 6) as usize] |= 1 << (a & 63);
            } else {
                ranges.push((bp.kind, bp.first, bp.last));
            }
        }
        self.cpu.watch = (!ranges.is_empty()).then(|| Box::new(crate::watch::Watch::new(ranges)));
        self.bp_armed = !self.breakpoints.is_empty();
    }

    /// The execution breakpoint at `linear` that stops a run now: one
    /// without a condition, or whose condition holds.
    fn breakpoint_at(&self, linear: u32) -> Option<u32> {
        self.breakpoints
            .iter()
            .filter(|(_, b)| b.kind == crate::watch::Kind::Execution && b.first == linear)
            .find(|(_, b)| b.condition.as_ref().is_none_or(|c| c.holds(&self.cpu)))
            .map(|(id, _)| *id)
    }

    /// The access breakpoint that `access` stops a run at, its condition
    /// holding.
    fn watch_hit(&self, access: crate::watch::Access) -> Option<u32> {
        self.breakpoints
            .iter()
            .filter(|(_, b)| {
                b.kind != crate::watch::Kind::Execution
                    && b.kind.io() == access.io
                    && b.kind.hit_by(access.write)
                    && (b.first..=b.last).contains(&access.addr)
            })
            .find(|(_, b)| b.condition.as_ref().is_none_or(|c| c.holds(&self.cpu)))
            .map(|(id, _)| *id)
    }

    fn check(&self) -> Result<(), RunError> {
        if let Some(c) = self.exit_code {
            return Err(RunError::AlreadyExited(c));
        }
        if self.halted {
            return Err(RunError::Halted);
        }
        Ok(())
    }

    /// For a program that reads the keyboard through its ports (and, when
    /// it installed one, its INT 9 handler): the next typed key's make
    /// code, then its break code, one scan code per run chunk, each raising
    /// IRQ 1 (INT 9) when interrupts are on. A program using INT 16h or
    /// DOS never reads the ports, and its keys stay queued for those.
    fn feed_keyboard(&mut self) {
        let io = &self.cpu.io;
        if !io.kbd_used && !self.hooks_int9() || io.kbd_full {
            return;
        }
        let scan = match self.key_release.take() {
            Some(b) => b,
            None => match self.dos.input.take() {
                crate::console::Read::Byte(0) => match self.dos.input.take() {
                    crate::console::Read::Byte(scan) => scan,
                    _ => return,
                },
                crate::console::Read::Byte(b) => crate::dos::scan_code_of(b),
                _ => return,
            },
        };
        if scan & 0x80 == 0 {
            self.key_release = Some(scan | 0x80);
        }
        self.cpu.io.deliver_key(scan);
        if self.hooks_int9() {
            self.cpu.hardware_interrupt(9);
        }
    }

    /// Whether the program pointed INT 9 (the keyboard's IRQ 1) at a
    /// handler of its own.
    fn hooks_int9(&self) -> bool {
        self.cpu.read_word(0, 9 * 4 + 2) != crate::cpu::STUB_SEGMENT
    }

    /// Handles an exit of the CPU loop; returns a stop reason when the run ends.
    fn on_exit(&mut self, e: Exit) -> Option<StopReason> {
        match e {
            Exit::Budget => None,
            Exit::Halt => {
                self.halted = true;
                Some(StopReason::Halted)
            }
            Exit::Breakpoint => {
                let a = Cpu::lin(self.cpu.sregs[CS], self.cpu.ip);
                let listed = self
                    .breakpoints
                    .values()
                    .any(|b| b.kind == crate::watch::Kind::Execution && b.first == a);
                match self.breakpoint_at(a) {
                    Some(id) => Some(StopReason::Breakpoint(id)),
                    // Only conditional ones, none holding: run on past it.
                    None if listed => {
                        self.pass_breakpoint = true;
                        None
                    }
                    // A step over's own return address.
                    None => Some(StopReason::Breakpoint(0)),
                }
            }
            Exit::Watch(access) => {
                let id = self.watch_hit(access)?;
                self.last_access = Some(access);
                Some(StopReason::Breakpoint(id))
            }
            Exit::Service(n) => match self.dos.service(n, &mut self.cpu) {
                Flow::Continue => None,
                Flow::Exit(code) => {
                    self.exit_code = Some(code);
                    Some(StopReason::Exited(code))
                }
                Flow::WaitInput => {
                    // Back to the INT instruction, so that continuing the
                    // run performs the read again.
                    self.cpu.sregs[CS] = self.cpu.insn_cs;
                    self.cpu.ip = self.cpu.insn_ip;
                    Some(StopReason::WaitingForInput)
                }
            },
        }
    }

    /// Runs up to `budget` instructions. `progress(done, total)` is called
    /// every [`CHUNK`] instructions; returning false stops the run cleanly.
    pub fn run(
        &mut self,
        budget: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(u64, StopReason), RunError> {
        self.check()?;
        self.last_access = None;
        let mut done = 0u64;
        let mut since_report = 0u64;
        while done < budget {
            let chunk = (budget - done).min(CHUNK);
            // The first instruction of a run never stops at a breakpoint, so
            // a run resumes from one; nor one whose condition did not hold.
            let passing = std::mem::take(&mut self.pass_breakpoint);
            let resume = done == 0 || passing;
            self.feed_keyboard();
            let (n, exit) = if self.tracker.is_some() {
                // At a fixed address in a component, as `Cpu::run` runs
                // (see `plugin_kit::placed`).
                plugin_kit::placed::run_placed(self, |m| m.run_tracked(chunk, resume))
            } else {
                let bp = self.bp_armed.then_some(&self.bp_bitmap[..]);
                self.cpu.run(chunk, bp, resume)
            };
            done += n;
            since_report += n;
            if let Some(r) = self.on_exit(exit) {
                return Ok((done, r));
            }
            // A loop polling the keyboard ports with nothing typed, for a
            // whole chunk: wait for the client, as a read of the keyboard
            // through DOS does. (A program glancing at the port now and
            // then runs on.)
            let polls = std::mem::take(&mut self.cpu.io.kbd_empty_polls);
            let io = &self.cpu.io;
            if polls >= POLLS_WAITING
                && io.kbd_polled_empty
                && !io.kbd_full
                && self.key_release.is_none()
                && self.dos.input.pending() == 0
                && !self.dos.input.closed
            {
                return Ok((done, StopReason::WaitingForInput));
            }
            if since_report >= CHUNK && done < budget {
                since_report = 0;
                if !progress(done, budget) {
                    return Ok((done, StopReason::Cancelled));
                }
            }
        }
        Ok((done, StopReason::Budget))
    }

    /// Steps over the instruction at CS:IP: a CALL runs until it returns
    /// to the instruction after it with its stack back where it was (a
    /// recursive call passing the same return address deeper down runs
    /// on), at most `budget` instructions; any other instruction is one
    /// step. It stops earlier as a run does (exit, a breakpoint, keyboard
    /// input). Answers the instructions executed and why it stopped:
    /// [`StopReason::Budget`] once the call has returned.
    pub fn step_over(
        &mut self,
        budget: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(u64, StopReason), RunError> {
        let (cs, ip, sp) = (self.cpu.sregs[CS], self.cpu.ip, self.cpu.regs[SP]);
        let cpu = &self.cpu;
        let insn = crate::disasm::decode(&|off| cpu.rb(Cpu::lin(cs, off)), ip, cpu.model);
        if !insn.text.starts_with("call") {
            return self.step(1).map(|(n, r)| (u64::from(n), r));
        }
        let back = Cpu::lin(cs, ip.wrapping_add(u16::from(insn.len)));
        // A breakpoint of this step's own: in the bitmap, not in the list.
        self.bp_bitmap[(back >> 6) as usize] |= 1 << (back & 63);
        self.bp_armed = true;
        let mut done = 0;
        let outcome = loop {
            let (n, reason) = match self.run(budget - done, progress) {
                Ok(ran) => ran,
                Err(e) => break Err(e),
            };
            done += n;
            let at = Cpu::lin(self.cpu.sregs[CS], self.cpu.ip);
            match reason {
                StopReason::Breakpoint(_) if at == back && self.cpu.regs[SP] >= sp => {
                    break Ok((done, StopReason::Budget));
                }
                StopReason::Breakpoint(0) if at == back && done < budget => continue,
                other => break Ok((done, other)),
            }
        };
        self.rebuild_bitmap();
        outcome
    }

    fn run_tracked(&mut self, budget: u64, resume: bool) -> (u64, Exit) {
        let mut n = 0;
        let Some(t) = self.tracker.as_mut() else {
            return (0, Exit::Budget);
        };
        let has_bp = self.bp_armed;
        while n < budget {
            if has_bp && (n > 0 || !resume) {
                let a = Cpu::lin(self.cpu.sregs[CS], self.cpu.ip) as usize;
                if self.bp_bitmap[a >> 6] & (1 << (a & 63)) != 0 {
                    return (n, Exit::Breakpoint);
                }
            }
            t.before(&self.cpu);
            let e = self.cpu.step();
            n += 1;
            let serviced = match e {
                Some(Exit::Service(v)) => Some(v),
                _ => None,
            };
            t.after(&self.cpu, serviced);
            if let Some(e) = e {
                return (n, e);
            }
            if let Some(w) = &self.cpu.watch
                && let Some(hit) = w.take_hit()
            {
                return (n, Exit::Watch(hit));
            }
        }
        (n, Exit::Budget)
    }

    /// Executes up to `count` instructions one at a time (stopping at exit or
    /// HLT; breakpoints are ignored so stepping always advances).
    pub fn step(&mut self, count: u32) -> Result<(u32, StopReason), RunError> {
        self.check()?;
        for i in 0..count {
            let exit = if let Some(t) = self.tracker.as_mut() {
                t.before(&self.cpu);
                let e = self.cpu.step();
                let serviced = match e {
                    Some(Exit::Service(v)) => Some(v),
                    _ => None,
                };
                t.after(&self.cpu, serviced);
                e
            } else {
                self.cpu.step()
            };
            // Steps ignore breakpoints, access breakpoints too.
            if let Some(w) = &self.cpu.watch {
                w.take_hit();
            }
            if let Some(e) = exit
                && let Some(r) = self.on_exit(e)
            {
                return Ok((i + 1, r));
            }
        }
        Ok((count, StopReason::Budget))
    }
}

/// Whether a machine can run on.
#[derive(serde::Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MachineState {
    /// It can run or step.
    Ready,
    /// HLT with no interrupt source.
    Halted,
    /// The program exited.
    Exited,
}

/// Names an x86-inspect machine snapshot (`plugin_kit::blob`'s frame).
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"X86S";
/// The payload layout written (and the newest read): 2 adds the display
/// ports (the VGA palette) after the rest; 3 adds the keyboard
/// controller to the ports and, after them, the kind, range end and
/// condition of every breakpoint that is not a plain execution breakpoint.
/// Formats 1 and 2 are still read.
pub const SNAPSHOT_VERSION: u16 = 3;
/// Longest snapshot accepted or made: under the host's 8 MiB result
/// limit. Console buffers of several MiB (console_kib) can exceed it; such
/// a machine is refused with the reason.
pub const SNAPSHOT_MAX_CHARS: usize = 6 << 20;

impl Machine {
    /// The machine as snapshot text: CPU and the non-zero 4 KiB pages of
    /// memory, DOS state (console streams, keyboard queue, handles, memory
    /// blocks, counters), the program's facts, breakpoints, exit code.
    /// Not kept: the function catalogue and CFG (a restored machine starts
    /// with tracking off). Refused while files are open.
    pub fn snapshot(&self) -> Result<String, String> {
        // Sized before anything is built: five machines keeping 48 MiB of
        // console each once made one snapshot serialise and encode all of
        // it before this check, past the plugin's memory cap.
        let streams = self.dos.stdout.kept() + self.dos.stderr.kept() + self.dos.screen.kept();
        let at_least = (streams + self.dos.input.pending()).div_ceil(3) * 4;
        if at_least > SNAPSHOT_MAX_CHARS {
            return Err(format!(
                "the snapshot would be at least {at_least} characters, more than the {SNAPSHOT_MAX_CHARS} a result may carry (the console streams hold {streams} bytes); load the program with a smaller console_kib"
            ));
        }
        let mut w = plugin_kit::blob::Writer::new();
        self.cpu.save(&mut w);
        self.dos.save(&mut w)?;
        let p = &self.program;
        w.str(&p.path.to_string_lossy(), crate::dos::SNAPSHOT_PATH_MAX);
        w.u8(match p.format {
            crate::dos::Format::Com => 0,
            crate::dos::Format::Exe => 1,
        });
        w.u16(p.psp)
            .u16(p.load_segment)
            .u16(p.entry.0)
            .u16(p.entry.1);
        w.u32(p.size as u32);
        w.u32(self.next_breakpoint)
            .u16(self.breakpoints.len() as u16);
        for (id, b) in &self.breakpoints {
            w.u32(*id).u32(b.first);
        }
        w.u8(self.exit_code.map_or(0, |_| 1))
            .u8(self.exit_code.unwrap_or(0));
        w.u8(self.halted as u8).u64(self.edits);
        self.cpu.io.save(&mut w);
        let extended: Vec<_> = self
            .breakpoints
            .iter()
            .filter(|(_, b)| b.kind != crate::watch::Kind::Execution || b.condition.is_some())
            .collect();
        w.u16(extended.len() as u16);
        for (id, b) in extended {
            w.u32(*id).u8(b.kind.code()).u32(b.last);
            w.str(
                b.condition.as_ref().map_or("", |c| c.text()),
                crate::condition::MAX_CONDITION,
            );
        }
        let text = plugin_kit::blob::seal(SNAPSHOT_MAGIC, SNAPSHOT_VERSION, &w.0);
        if text.len() > SNAPSHOT_MAX_CHARS {
            return Err(format!(
                "the snapshot would be {} characters, over the {SNAPSHOT_MAX_CHARS} a result may carry (the console streams hold {} bytes); load the program with a smaller console_kib",
                text.len(),
                streams
            ));
        }
        Ok(text)
    }

    /// The machine a snapshot holds, under the new id `id`, or what is
    /// wrong with the text (frame, version, checksum, any field).
    pub fn restore(id: MachineId, text: &str) -> Result<Machine, String> {
        let (version, payload) = plugin_kit::blob::open(
            SNAPSHOT_MAGIC,
            SNAPSHOT_VERSION,
            SNAPSHOT_MAX_CHARS,
            text.trim(),
        )?;
        let mut r = plugin_kit::blob::Reader::new(&payload);
        let mut cpu = Cpu::restore(&mut r)?;
        let (mut dos, stored_root) = Dos::restore(&mut r)?;
        let path = std::path::PathBuf::from(r.str("program path", crate::dos::SNAPSHOT_PATH_MAX)?);
        dos.set_drive_c(drive_c_for(&path, &stored_root, cpu.model, dos.limits)?);
        let format = match r.u8("program format")? {
            0 => crate::dos::Format::Com,
            1 => crate::dos::Format::Exe,
            n => return Err(format!("program format {n} is neither 0 (COM) nor 1 (EXE)")),
        };
        let program = Program {
            path,
            format,
            psp: r.u16("program")?,
            load_segment: r.u16("program")?,
            entry: (r.u16("program")?, r.u16("program")?),
            size: r.u32("program")? as usize,
        };
        let next_breakpoint = r.u32("breakpoints")?;
        let n = r.u16("breakpoints")? as usize;
        if n > MAX_BREAKPOINTS {
            return Err(format!("{n} breakpoints, over {MAX_BREAKPOINTS}"));
        }
        let mut breakpoints = BTreeMap::new();
        for _ in 0..n {
            let (bid, a) = (r.u32("breakpoints")?, r.u32("breakpoints")?);
            if bid == 0
                || bid >= next_breakpoint
                || a > 0xFFFFF
                || breakpoints.insert(bid, Breakpoint::execution(a)).is_some()
            {
                return Err(format!(
                    "breakpoint {bid} at {a:#x} is out of range or repeated"
                ));
            }
        }
        let exited = r.u8("exit code")?;
        let code = r.u8("exit code")?;
        let halted = r.u8("halted")? != 0;
        let edits = r.u64("edits")?;
        // Format 1 kept no display ports: the text palette a PC starts with.
        *cpu.io = if version >= 2 {
            crate::ports::Ports::restore(&mut r, version)?
        } else {
            crate::ports::Ports::default()
        };
        if version >= 3 {
            let n = r.u16("breakpoint kinds")?;
            for _ in 0..n {
                let bid = r.u32("breakpoint kinds")?;
                let kind = crate::watch::Kind::from_code(r.u8("breakpoint kinds")?)
                    .ok_or("a breakpoint kind this build does not know")?;
                let last = r.u32("breakpoint kinds")?;
                let text = r.str("breakpoint condition", crate::condition::MAX_CONDITION)?;
                let bp = breakpoints
                    .get_mut(&bid)
                    .ok_or_else(|| format!("breakpoint {bid}'s kind, but no breakpoint {bid}"))?;
                let limit = if kind.io() { 0xFFFF } else { 0xFFFFF };
                if last < bp.first || last > limit {
                    return Err(format!("breakpoint {bid}'s range ends at {last:#x}"));
                }
                bp.kind = kind;
                bp.last = last;
                bp.condition = if text.is_empty() {
                    None
                } else {
                    Some(crate::condition::Condition::parse(&text)?)
                };
            }
        }
        r.finish()?;
        let mut m = Machine {
            id,
            cpu,
            dos,
            program,
            tracker: None,
            breakpoints,
            next_breakpoint,
            pass_breakpoint: false,
            last_access: None,
            key_release: None,
            bp_bitmap: vec![0; crate::cpu::MEM_SIZE / 64],
            bp_armed: false,
            exit_code: (exited != 0).then_some(code),
            halted,
            edits,
        };
        m.rebuild_bitmap();
        Ok(m)
    }
}

/// Largest program file x86_load_program reads: a real-mode load image
/// fits in 640 KiB, but an EXE may carry overlays after it; far above any
/// DOS program, far below what would strain the plugin's memory cap.
pub const MAX_PROGRAM_FILE: u64 = 16 << 20;

/// The bytes of a program file, read as x86_load_program reads them: a
/// regular file (a pipe would hang the call) of at most
/// [`MAX_PROGRAM_FILE`] bytes, checked before it is read.
pub fn read_program(path: &Path) -> Result<Vec<u8>, String> {
    let explain = |e: &std::io::Error| plugin_kit::paths::explain_io_error(path, e, false);
    let meta = std::fs::metadata(path).map_err(|e| explain(&e))?;
    if meta.is_file() && meta.len() > MAX_PROGRAM_FILE {
        return Err(format!(
            "`{}` is {} bytes, over the {MAX_PROGRAM_FILE} a DOS program file may have",
            plugin_kit::paths::shown(path),
            meta.len()
        ));
    }
    plugin_kit::paths::read_regular_file(path).map_err(|e| explain(&e))
}

/// Drive C: of a restored machine: the folder of its program, as
/// x86_load_program derives it, never a folder the text names. A snapshot
/// is outside data (its CRC-32 is no seal), so the machine it gives may
/// have no file access a load could not give: the program must still be a
/// file x86_load_program would load (a ROM beside it would be refused
/// there, so naming it here must not turn its folder into drive C:, where
/// the restored code could delete or overwrite it), and the text's own
/// folder must agree.
fn drive_c_for(
    program: &Path,
    stored_root: &str,
    model: Model,
    limits: crate::dos::Limits,
) -> Result<std::path::PathBuf, String> {
    let shown = program.display();
    if !program.is_absolute() || plugin_kit::paths::normalize(program) != program {
        return Err(format!(
            "the program path `{shown}` is not absolute and normal; a snapshot holds the path x86_load_program resolved"
        ));
    }
    let image = read_program(program).map_err(|e| {
        format!("its program must still be where it was loaded, since drive C: is that folder: {e}")
    })?;
    // The same loader a load runs, on a scratch machine that is dropped.
    if let Err(e) = Machine::load_with_limits(0, program, &image, "", model, false, limits) {
        return Err(format!(
            "`{shown}` is not a program x86_load_program would load ({e}); a restored machine gets only the file access a load of its program gives"
        ));
    }
    let root = match program.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => return Err(format!("the program path `{shown}` has no folder")),
    };
    if Path::new(stored_root) != root {
        return Err(format!(
            "drive C: is given as `{stored_root}` but the program's folder is `{}`; a snapshot's drive C: is always its program's folder",
            root.display()
        ));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(code: &[u8]) -> Machine {
        Machine::load(1, Path::new("/tmp/T.COM"), code, "", Model::I80186, true).unwrap()
    }

    // mov cx,3 ; l: call f ; loop l ; mov ax,4c02h ; int 21h ; f: ret
    const LOOP: [u8; 14] = [
        0xB9, 3, 0, 0xE8, 7, 0, 0xE2, 0xFB, 0xB8, 2, 0x4C, 0xCD, 0x21, 0xC3,
    ];

    #[test]
    fn run_counts_calls_and_exits() {
        let mut m = machine(&LOOP);
        let (n, r) = m.run(1000, &mut |_, _| true).unwrap();
        assert_eq!(r, StopReason::Exited(2));
        assert_eq!(n, 1 + 3 * 3 + 2);
        let t = m.tracker.as_ref().unwrap();
        let f = &t.functions[&SegOff(0x87, 0x10D)];
        assert_eq!(f.called_count, 3);
        assert_eq!(m.run(10, &mut |_, _| true), Err(RunError::AlreadyExited(2)));
    }

    #[test]
    fn breakpoints_stop_and_resume() {
        let mut m = machine(&LOOP);
        let id = m.add_breakpoint(Cpu::lin(0x87, 0x10D)).unwrap();
        let (_, r) = m.run(1000, &mut |_, _| true).unwrap();
        assert_eq!(r, StopReason::Breakpoint(id));
        assert_eq!(m.cs_ip(), SegOff(0x87, 0x10D));
        let (_, r) = m.run(1000, &mut |_, _| true).unwrap();
        assert_eq!(r, StopReason::Breakpoint(id));
        m.remove_breakpoint(id);
        let (_, r) = m.run(1000, &mut |_, _| true).unwrap();
        assert_eq!(r, StopReason::Exited(2));
    }

    /// What a state store does between calls: every step of `sums.com`
    /// followed by a snapshot and a restore must leave the machine where
    /// stepping it straight does, in every alignment of the step sizes.
    #[test]
    fn stepping_through_snapshots_equals_stepping_straight() {
        let dir = std::env::temp_dir().join(format!("x86-snap-steps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("SUMS.COM");
        let code =
            std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/dos/sums.com"))
                .unwrap();
        std::fs::write(&prog, &code).unwrap();
        let state = |m: &Machine| {
            (
                m.cpu.regs,
                m.cpu.sregs,
                m.cpu.ip,
                m.cpu.flags,
                m.cpu.instructions,
                m.exit_code,
            )
        };
        for first in 0..2 {
            let load = || Machine::load(1, &prog, &code, "", Model::I80186, true).unwrap();
            let (mut straight, mut moved) = (load(), load());
            for k in 0..200 {
                let count = (first + k) % 2 + 1;
                let a = straight.step(count as u32);
                let b = moved.step(count as u32);
                assert_eq!(a, b, "alignment {first}, step {k}");
                assert_eq!(
                    state(&straight),
                    state(&moved),
                    "alignment {first}, step {k}"
                );
                if a.is_err() {
                    break;
                }
                moved = Machine::restore(1, &moved.snapshot().unwrap()).unwrap();
            }
            let a = straight.run(1000, &mut |_, _| true);
            let b = moved.run(1000, &mut |_, _| true);
            assert_eq!(a, b, "alignment {first}: the rest of the run");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Vector 0 → handler (0124); cx = 5..1: div bl by cl-3 faults at
    /// cl = 3, the handler sets bl = 1 and the 80186 retries the division.
    const FAULTS: [u8; 39] = [
        0x31, 0xC0, 0x8E, 0xC0, 0x26, 0xC7, 0x06, 0x00, 0x00, 0x24, 0x01, 0x26, 0x8C, 0x0E, 0x02,
        0x00, 0xB9, 0x05, 0x00, 0x88, 0xCB, 0x80, 0xEB, 0x03, 0xB8, 0x0A, 0x00, 0xF6, 0xF3, 0xE2,
        0xF4, 0xB8, 0x00, 0x4C, 0xCD, 0x21, 0xB3, 0x01, 0xCF,
    ];

    /// The tracker's fast path (the successor seen last, unchanged)
    /// records exactly what looking every instruction up records: over
    /// loops, calls, self-modifying code, and a fault handler that
    /// returns into the faulting instruction.
    #[test]
    fn tracking_fast_path_records_what_the_slow_path_records() {
        // l: mov ax,imm16 ; inc word [0x101] (the immediate) ; jmp l
        let rewrites = [0xB8, 0, 0, 0xFF, 0x06, 0x01, 0x01, 0xEB, 0xF7];
        let sums =
            std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/dos/sums.com"))
                .unwrap();
        for (name, code, budget) in [
            ("loop", &LOOP[..], 1000),
            ("faults", &FAULTS[..], 1000),
            ("rewrites", &rewrites[..], 100_000),
            ("sums", &sums[..], 1_000_000),
        ] {
            let run = |slow: bool| {
                let mut m = machine(code);
                m.tracker.as_mut().unwrap().slow_only = slow;
                // Stepped and run, as the tools do both.
                let stepped = m.step(7).unwrap();
                let ran = m.run(budget, &mut |_, _| true).unwrap();
                (stepped, ran, m.tracker.as_ref().unwrap().record())
            };
            let (fast, slow) = (run(false), run(true));
            assert_eq!(fast.0, slow.0, "{name}: steps");
            assert_eq!(fast.1, slow.1, "{name}: run");
            assert_eq!(fast.2, slow.2, "{name}: records");
            if name == "faults" {
                assert_eq!(fast.1.1, StopReason::Exited(0));
                assert!(
                    fast.2.contains("0087:0124 interrupt_handler_00 1"),
                    "{}",
                    fast.2
                );
            }
        }
    }

    #[test]
    fn each_context_keeps_its_last_executed_instruction() {
        // The fourth `div bl` (at 011B) faults, the handler (0124:
        // mov bl,1 ; iret) returns to retry it.
        let mut m = machine(&FAULTS);
        let cs = m.cpu.sregs[CS];
        let lasts = |m: &Machine| -> Vec<Option<SegOff>> {
            let t = m.tracker.as_ref().unwrap();
            t.contexts()
                .map(|c| c.last_executed.map(|i| t.nodes[i as usize].address))
                .collect()
        };
        // Five setup instructions, three turns of four, and the faulting
        // division's three before it: 19; the handler's first is the 20th.
        m.step(20).unwrap();
        assert_eq!(
            lasts(&m),
            [Some(SegOff(cs, 0x11B)), Some(SegOff(cs, 0x124))]
        );
        // The IRET, then the retried division, back in the program.
        m.step(1).unwrap();
        assert_eq!(lasts(&m), [Some(SegOff(cs, 0x11B))]);
        m.step(1).unwrap();
        assert_eq!(lasts(&m), [Some(SegOff(cs, 0x11B))]);
        assert_eq!(m.cpu.ip, 0x11D, "the division ran again");
        // Run as well as stepped: LOOP, then mov bl,cl and sub bl,3.
        m.run(3, &mut |_, _| true).unwrap();
        assert_eq!(lasts(&m), [Some(SegOff(cs, 0x115))]);
    }

    #[test]
    fn step_advances_one_instruction() {
        let mut m = machine(&LOOP);
        let (n, r) = m.step(1).unwrap();
        assert_eq!((n, r), (1, StopReason::Budget));
        assert_eq!(m.cpu.ip, 0x103);
    }

    #[test]
    fn self_modifying_code_is_tracked_in_bounded_time_and_space() {
        // l: mov ax,imm16 ; inc word [0x101] (the immediate) ; jmp l
        let code = [0xB8, 0, 0, 0xFF, 0x06, 0x01, 0x01, 0xEB, 0xF7];
        let mut m = machine(&code);
        let started = std::time::Instant::now();
        let (n, r) = m.run(3_000_000, &mut |_, _| true).unwrap();
        assert_eq!((n, r), (3_000_000, StopReason::Budget));
        let t = m.tracker.as_ref().unwrap();
        // One node per variant up to the bound, then nothing more.
        assert!(
            t.nodes.len() <= crate::tracking::MAX_VARIANTS + 2,
            "{}",
            t.nodes.len()
        );
        assert!(t.dropped.instructions > 900_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    /// Runs `code` as T.COM in a fresh directory with `tail`; returns the
    /// machine (exited) and the directory.
    fn run_in_dir(name: &str, code: &[u8], tail: &str) -> (Machine, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("x86-dos-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut m = Machine::load(1, &dir.join("T.COM"), code, tail, Model::I80186, false).unwrap();
        let (_, r) = m.run(100_000, &mut |_, _| true).unwrap();
        assert!(matches!(r, StopReason::Exited(_)), "{r:?}");
        (m, dir)
    }

    /// Hardening item 1: a snapshot naming a ROM as its program once made
    /// the ROM's folder drive C:, and the restored code deleted the ROM.
    /// The snapshot here is sealed properly (its CRC holds), as a crafted
    /// one would be; restore must still refuse a program a load refuses.
    #[test]
    fn a_snapshot_naming_a_file_no_load_accepts_is_refused() {
        let dir = std::env::temp_dir().join(format!("x86-rom-drive-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let rom = dir.join("A.BIN");
        std::fs::write(&rom, vec![0xFFu8; 128 * 1024]).unwrap();
        // INT 21h AH=41h (delete) on A.BIN, as the attack ran.
        let code = [
            0xB4, 0x41, 0xBA, 0x0A, 0x01, 0xCD, 0x21, 0xCD, 0x20, 0x90, b'A', b'.', b'B', b'I',
            b'N', 0,
        ];
        let crafted = Machine::load(1, &rom, &code, "", Model::I80186, false)
            .unwrap()
            .snapshot()
            .unwrap();
        let e = Machine::restore(2, &crafted).err().expect("refused");
        assert!(e.contains("would load") && e.contains("65280"), "{e}");
        assert!(rom.exists());

        // The same program really loaded from its own file restores.
        let prog = dir.join("DEL.COM");
        std::fs::write(&prog, code).unwrap();
        let honest = Machine::load(1, &prog, &code, "", Model::I80186, false)
            .unwrap()
            .snapshot()
            .unwrap();
        let m = Machine::restore(2, &honest).unwrap();
        assert_eq!(m.dos.drive_c(), dir.as_path());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn mem(m: &Machine, off: u16, n: u16) -> Vec<u8> {
        (0..n).map(|i| m.cpu.rb(Cpu::lin(0x87, off + i))).collect()
    }

    #[test]
    fn fcb_create_write_close_open_random_read() {
        let code = [
            0xB4, 0x1A, 0xBA, 0x00, 0x02, 0xCD, 0x21, // set DTA 200h
            0xB4, 0x16, 0xBA, 0x5C, 0x00, 0xCD, 0x21, // create (PSP FCB 1)
            0xC7, 0x06, 0x6A, 0x00, 0x04, 0x00, // record size 4
            0xC7, 0x06, 0x00, 0x02, 0x41, 0x42, // DTA = "ABCD"
            0xC7, 0x06, 0x02, 0x02, 0x43, 0x44, //
            0xB4, 0x15, 0xBA, 0x5C, 0x00, 0xCD, 0x21, // sequential write x2
            0xB4, 0x15, 0xBA, 0x5C, 0x00, 0xCD, 0x21, //
            0xB4, 0x10, 0xBA, 0x5C, 0x00, 0xCD, 0x21, // close
            0xB4, 0x0F, 0xBA, 0x5C, 0x00, 0xCD, 0x21, // open
            0xC7, 0x06, 0x6A, 0x00, 0x04, 0x00, // record size 4
            0xC7, 0x06, 0x00, 0x02, 0x00, 0x00, // clear the DTA
            0xC7, 0x06, 0x7D, 0x00, 0x01, 0x00, // random record 1 (4 bytes:
            0xC6, 0x06, 0x80, 0x00, 0x00, // its top byte is PSP:80h, as in DOS)
            0xB4, 0x21, 0xBA, 0x5C, 0x00, 0xCD, 0x21, // random read
            0xB4, 0x4C, 0xCD, 0x21, // exit with AL
        ];
        let (m, dir) = run_in_dir("fcb", &code, " test.dat");
        assert_eq!(m.exit_code, Some(0));
        assert_eq!(std::fs::read(dir.join("TEST.DAT")).unwrap(), b"ABCDABCD");
        assert_eq!(mem(&m, 0x200, 4), b"ABCD");
        // File size in the FCB.
        assert_eq!(mem(&m, 0x5C + 0x10, 4), [8, 0, 0, 0]);
        assert!(m.dos.unsupported.is_empty(), "{:?}", m.dos.unsupported);
    }

    /// Issue 38 item 6: `ls`, `wc FILE` and `cat FILE` said "Unable to
    /// access FILE": FindFirst/FindNext always failed. This program is a
    /// small `ls *.TXT`: it prints each name the search finds, then exits
    /// with the error that ended the search.
    #[test]
    fn a_program_lists_files_with_find_first_and_next() {
        let code = [
            0xB4, 0x1A, 0xBA, 0x00, 0x02, 0xCD, 0x21, // set DTA 200h
            0xB4, 0x4E, 0x31, 0xC9, 0xBA, 0x32, 0x01, 0xCD, 0x21, // find first *.TXT, CX=0
            0x72, 0x1C, // jc done
            0xBE, 0x1E, 0x02, // next: mov si,21Eh (the name)
            0xAC, 0x08, 0xC0, 0x74, 0x08, // name: lodsb; or al,al; jz eol
            0x88, 0xC2, 0xB4, 0x02, 0xCD, 0x21, 0xEB, 0xF3, // print it; jmp name
            0xB2, 0x20, 0xB4, 0x02, 0xCD, 0x21, // eol: print ' '
            0xB4, 0x4F, 0xCD, 0x21, 0x73, 0xE4, // find next; jnc next
            0xB4, 0x4C, 0xCD, 0x21, // done: exit with AL (the error)
            b'*', b'.', b'T', b'X', b'T', 0,
        ];
        let dir = std::env::temp_dir().join(format!("x86-dos-ls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["b.txt", "A.TXT", "NOTES.DOC", "a-very-long-name.txt"] {
            std::fs::write(dir.join(n), n).unwrap();
        }
        let mut m = Machine::load(1, &dir.join("LS.COM"), &code, "", Model::I80186, false).unwrap();
        let (_, r) = m.run(100_000, &mut |_, _| true).unwrap();
        assert_eq!(r, StopReason::Exited(18), "no more files");
        assert_eq!(m.dos.stdout.contents(), b"A.TXT B.TXT ");
        assert!(m.dos.unsupported.is_empty(), "{:?}", m.dos.unsupported);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn switch_char_parse_filename_and_default_fcbs() {
        let code = [
            0xB8, 0x00, 0x37, 0xCD, 0x21, // AH=37h AL=0
            0x88, 0x16, 0x00, 0x03, // mov [300h],dl
            0xB8, 0x01, 0x29, 0xBE, 0x81, 0x00, 0xBF, 0x10, 0x03, // parse the tail
            0xCD, 0x21, //
            0xB4, 0x4C, 0xCD, 0x21, // exit with AL
        ];
        let (m, _) = run_in_dir("parse", &code, " *.dat x.y");
        assert_eq!(m.exit_code, Some(1), "wildcards");
        assert_eq!(mem(&m, 0x300, 1), b"/");
        assert_eq!(mem(&m, 0x310, 12), b"\0????????DAT");
        assert_eq!(mem(&m, 0x5C, 12), b"\0????????DAT");
        assert_eq!(mem(&m, 0x6C, 12), b"\0X       Y  ");
        // SI moved past the name.
        assert_eq!(m.cpu.regs[crate::cpu::SI], 0x81 + 6);
    }
}
