//! The tools' logic, independent of wit-bindgen so that it is tested
//! natively; each returns a value of [`crate::results`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::console::{MAX_CONSOLE_KIB, MAX_PENDING_INPUT};
use crate::cpu::{self, Cpu, Model};
use crate::disasm;
use crate::dos::{self, Limits, MAX_WRITE_LIMIT_KIB};
use crate::machine::{MAX_BREAKPOINTS, Machine, MachineId, StopReason};
use crate::results::*;
use crate::tracking::SegOff;

pub use plugin_kit::ToolError;

fn err<T>(code: &'static str, message: impl Into<String>) -> Result<T, ToolError> {
    Err(ToolError {
        code,
        message: message.into(),
    })
}

/// Machines at once, of all clients.
pub const MAX_MACHINES: usize = 8;
/// Machines per client, so one client filling its share leaves room for
/// others. The global cap stays at 8 because a machine may hold a 16 MiB
/// console and 1 MiB of pending input besides its 1 MiB of memory.
pub const MAX_MACHINES_PER_CLIENT: usize = 5;
/// Instructions one `x86_run` executes at most when the client names no budget.
pub const DEFAULT_BUDGET: u64 = 200_000_000;
const OUTPUT_PREVIEW: usize = 2000;
/// A run stops by itself after this long (reason `time_limit`, machine
/// intact), well before the host's call deadline resets the plugin and
/// every machine in it.
pub const RUN_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Bytes the console streams of every machine of every client may keep
/// together. The plugin's memory cap (512 MiB by default) must hold them
/// with their buffers' slack (a ring may reserve up to twice what it
/// keeps), eight machines' memory and tracking, and a snapshot being
/// built; 96 MiB leaves that room, and still lets two machines keep the
/// largest console (3 × 16 MiB) or every machine a few MiB.
pub const CONSOLE_BUDGET: usize = 96 << 20;

/// Bytes a machine's consoles count against [`CONSOLE_BUDGET`]: what its
/// three streams may keep.
fn console_weight(m: &Machine) -> usize {
    3 * m.dos.limits.console_bytes
}

/// The answer when the caps refuse one more machine; `reuse` when the
/// call could reuse one of the caller's machines instead (a load).
fn refused(full: plugin_kit::clients::Full, reuse: bool) -> ToolError {
    use plugin_kit::clients::{ANONYMOUS_HELP, Full, IDLE_AFTER};
    let or_reuse = if reuse {
        " or pass machine to reuse it"
    } else {
        ""
    };
    let message = match full {
        Full::Mine { share } => format!(
            "you have {share} machines, the most one client may hold; remove one with x86_remove_machine{}",
            if reuse { or_reuse } else { " first" }
        ),
        Full::Everyone { cap } => format!(
            "the plugin holds {cap} machines of all its clients, its limit, and none has been idle for {} min; remove one of yours with x86_remove_machine{or_reuse}, or retry later",
            IDLE_AFTER.as_secs() / 60
        ),
        Full::Anonymous => {
            return ToolError {
                code: "UNIDENTIFIED_CLIENT",
                message: ANONYMOUS_HELP.to_owned(),
            };
        }
    };
    ToolError {
        code: "TOO_MANY_MACHINES",
        message,
    }
}

/// Everything x86_load_program accepts besides the path.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// The command tail (with `<`, `>` and `>>` redirections).
    pub command_tail: Option<String>,
    /// CPU model; default [`dos::default_model`].
    pub model: Option<Model>,
    /// Record functions and the CFG; default on.
    pub tracking: Option<bool>,
    /// Reload into this machine.
    pub machine: Option<MachineId>,
    /// Text typed at the keyboard (standard input unless redirected).
    pub stdin: Option<String>,
    /// A host file as standard input (as `< file`), already resolved.
    pub stdin_file: Option<PathBuf>,
    /// Keep the keyboard open after `stdin`: the program waits for
    /// x86_write_console_input instead of reading end-of-input.
    pub stdin_open: Option<bool>,
    /// KiB kept per console stream.
    pub console_kib: Option<u32>,
    /// KiB the machine may write to files.
    pub write_limit_kib: Option<u32>,
}

/// Status shared by both resources: exit code, halted, CS:IP, instructions.
type Status = (Option<u8>, bool, u16, u16, u64);

/// A machine as its resources show it, cheap to take and compare: the CPU
/// (plus memory edits and reloads) for `…/registers`, memory and
/// disassembly; the status line, the streams' byte counts and the input
/// queue for `…/console`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// What `…/registers` shows: registers, segments, IP, status, memory edits.
    pub registers: ([u16; 8], [u16; 4], u16, Status, u64),
    /// What `…/console` shows: status, stream totals, input queue.
    pub console: (Status, [u64; 3], (usize, u64, bool)),
}

/// The tool's view of machine breakpoint `id`.
fn breakpoint_view(id: u32, b: &crate::machine::Breakpoint) -> Breakpoint {
    Breakpoint {
        id,
        linear: b.first,
        kind: b.kind,
        length: b.last - b.first + 1,
        condition: b.condition.as_ref().map(|c| c.text().to_owned()),
    }
}

/// `x86_add_breakpoint`'s arguments (Spice86's `add_breakpoint`, plus a
/// segment:offset address and a range).
#[derive(Default, Clone, Debug)]
pub struct BreakpointSpec {
    /// Linear address, or the port of an I/O breakpoint.
    pub address: Option<u32>,
    /// Segment, with `offset`, instead of `address`.
    pub segment: Option<u16>,
    /// Offset, with `segment`.
    pub offset: Option<u16>,
    /// What it stops on (default execution).
    pub kind: Option<BreakpointKind>,
    /// Addresses or ports covered (default 1).
    pub length: Option<u32>,
    /// A condition that must hold (see [`crate::watch`]).
    pub condition: Option<String>,
}

/// The machines of one client (`benchtop:host/caller.id`) and its own
/// default. Other clients' machines are not in here, so they answer exactly
/// like unknown ones. Ids are random (53 bits,
/// [`plugin_kit::clients::json_int`]), not counted, so a handle seen in a
/// transcript or log tells nothing about any other.
pub struct Session {
    machines: Vec<Machine>,
    /// What this call may know of the other clients, for the global cap.
    room: plugin_kit::clients::Room,
    /// Wall time one run may take ([`RUN_TIME_LIMIT`]; shorter in tests).
    pub run_time_limit: Duration,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            machines: Vec::new(),
            room: plugin_kit::clients::Room::default(),
            run_time_limit: RUN_TIME_LIMIT,
        }
    }
}

impl plugin_kit::clients::Holdings for Session {
    fn held(&self) -> usize {
        self.machines.len()
    }
    fn weight(&self) -> usize {
        self.machines.iter().map(console_weight).sum()
    }
    fn room(&mut self) -> &mut plugin_kit::clients::Room {
        &mut self.room
    }
}

/// Every machine of the plugin instance, by client.
#[derive(Default)]
pub struct Clients(plugin_kit::clients::PerClient<Session>);

impl Clients {
    /// Runs `f` on the machines of `caller`.
    pub fn with<R>(&mut self, caller: &str, f: impl FnOnce(&mut Session) -> R) -> R {
        self.0.with(caller, f)
    }
}

fn addr(a: SegOff) -> String {
    a.to_string()
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// The registers of `c` in Spice86's shape.
pub fn registers(c: &Cpu) -> Registers {
    use cpu::*;
    let r = |i: usize| c.regs[i] as u32;
    let f = |b: u16| c.flags & b != 0;
    Registers {
        general_purpose: GeneralPurpose {
            EAX: r(AX),
            EBX: r(BX),
            ECX: r(CX),
            EDX: r(DX),
            ESI: r(SI),
            EDI: r(DI),
            ESP: r(SP),
            EBP: r(BP),
        },
        segments: Segments {
            CS: c.sregs[CS],
            DS: c.sregs[DS],
            ES: c.sregs[ES],
            FS: 0,
            GS: 0,
            SS: c.sregs[SS],
        },
        instruction_pointer: InstructionPointer { IP: c.ip },
        flags: Flags {
            CarryFlag: f(CF),
            ParityFlag: f(PF),
            AuxiliaryFlag: f(AF),
            ZeroFlag: f(ZF),
            SignFlag: f(SF),
            DirectionFlag: f(DF),
            OverflowFlag: f(OF),
            InterruptFlag: f(IF),
        },
    }
}

/// The instruction at `seg:off`, and its length.
fn disasm_line(m: &Machine, seg: u16, off: u16) -> (DisasmLine, u16) {
    let read = |o: u16| m.cpu.rb(Cpu::lin(seg, o));
    let insn = disasm::decode(&read, off, m.cpu.model);
    let bytes: String = (0..insn.len)
        .map(|i| format!("{:02X}", read(off.wrapping_add(i as u16))))
        .collect();
    let line = DisasmLine {
        address: addr(SegOff(seg, off)),
        linear: Cpu::lin(seg, off),
        bytes,
        asm: insn.text,
    };
    (line, insn.len as u16)
}

fn disassemble(m: &Machine, seg: u16, mut off: u16, count: usize) -> Vec<DisasmLine> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let (line, len) = disasm_line(m, seg, off);
        out.push(line);
        off = off.wrapping_add(len);
    }
    out
}

fn parse_hex(data: &str) -> Result<Vec<u8>, ToolError> {
    let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let clean = clean.trim_start_matches("0x");
    if !clean.len().is_multiple_of(2) {
        return err(
            "INVALID_ARGUMENT",
            "data must hold an even number of hex digits, e.g. \"B8341290\"",
        );
    }
    (0..clean.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&clean[i..i + 2], 16).or_else(|_| {
                err(
                    "INVALID_ARGUMENT",
                    format!(
                        "data has a non-hex pair {:?} at offset {i}",
                        &clean[i..i + 2]
                    ),
                )
            })
        })
        .collect()
}

/// Registers to change; `None` leaves a register as it is.
#[derive(Default, Clone, Copy)]
pub struct RegisterWrite {
    /// AX.
    pub ax: Option<u16>,
    /// BX.
    pub bx: Option<u16>,
    /// CX.
    pub cx: Option<u16>,
    /// DX.
    pub dx: Option<u16>,
    /// SI.
    pub si: Option<u16>,
    /// DI.
    pub di: Option<u16>,
    /// SP.
    pub sp: Option<u16>,
    /// BP.
    pub bp: Option<u16>,
    /// CS.
    pub cs: Option<u16>,
    /// DS.
    pub ds: Option<u16>,
    /// ES.
    pub es: Option<u16>,
    /// SS.
    pub ss: Option<u16>,
    /// IP.
    pub ip: Option<u16>,
    /// The FLAGS word.
    pub flags: Option<u16>,
}

impl Session {
    fn index(&self, id: Option<MachineId>) -> Result<usize, ToolError> {
        match id {
            None if self.machines.is_empty() => err(
                "NO_MACHINE",
                "no machine exists yet; call x86_load_program first",
            ),
            None => Ok(self.machines.len() - 1),
            Some(id) => self.machines.iter().position(|m| m.id == id).map_or_else(
                || {
                    let ids: Vec<String> = self.machines.iter().map(|m| m.id.to_string()).collect();
                    err(
                        "UNKNOWN_MACHINE",
                        format!(
                            "no machine {id}; existing: [{}] (x86_list_machines)",
                            ids.join(", ")
                        ),
                    )
                },
                Ok,
            ),
        }
    }

    fn machine(&mut self, id: Option<MachineId>) -> Result<&mut Machine, ToolError> {
        let i = self.index(id)?;
        Ok(&mut self.machines[i])
    }

    /// What each of the caller's machines shows through its resources, by
    /// id: taken before and after a call to tell which URIs changed.
    pub fn looks(&self) -> Vec<(MachineId, Look)> {
        self.machines
            .iter()
            .map(|m| {
                let c = &m.cpu;
                let status = (
                    m.exit_code,
                    m.halted,
                    c.sregs[cpu::CS],
                    c.ip,
                    c.instructions,
                );
                let i = &m.dos.input;
                let look = Look {
                    registers: (c.regs, c.sregs, c.flags, status, m.edits),
                    console: (
                        status,
                        [
                            m.dos.stdout.total(),
                            m.dos.stderr.total(),
                            m.dos.screen.total(),
                        ],
                        (i.pending(), i.consumed, i.closed),
                    ),
                };
                (m.id, look)
            })
            .collect()
    }

    /// The caller's machine ids, oldest first (for completion).
    pub fn machine_ids(&self) -> impl Iterator<Item = MachineId> + '_ {
        self.machines.iter().map(|m| m.id)
    }

    /// One of the caller's machines by id, for the resources.
    pub fn find(&mut self, id: MachineId) -> Result<&mut Machine, ToolError> {
        self.machine(Some(id))
    }

    /// Loads a program into a new machine (or replaces `replace`).
    pub fn load_program(
        &mut self,
        path: &Path,
        command_tail: Option<&str>,
        model: Model,
        tracking: bool,
        replace: Option<MachineId>,
    ) -> Result<Loaded, ToolError> {
        self.load(
            path,
            &LoadOptions {
                command_tail: command_tail.map(str::to_string),
                model: Some(model),
                tracking: Some(tracking),
                machine: replace,
                ..LoadOptions::default()
            },
        )
    }

    /// Loads a program with every option of the x86_load_program tool.
    pub fn load(&mut self, path: &Path, o: &LoadOptions) -> Result<Loaded, ToolError> {
        let model = o.model.unwrap_or_else(dos::default_model);
        let tracking = o.tracking.unwrap_or(true);
        let replace = o.machine;
        let console_kib = o.console_kib.unwrap_or(crate::console::DEFAULT_CONSOLE_KIB);
        if !(1..=MAX_CONSOLE_KIB).contains(&console_kib) {
            return err(
                "INVALID_ARGUMENT",
                format!("console_kib must be between 1 and {MAX_CONSOLE_KIB}"),
            );
        }
        let write_kib = o.write_limit_kib.unwrap_or(dos::DEFAULT_WRITE_LIMIT_KIB);
        if write_kib > MAX_WRITE_LIMIT_KIB {
            return err(
                "INVALID_ARGUMENT",
                format!("write_limit_kib must be at most {MAX_WRITE_LIMIT_KIB}"),
            );
        }
        if o.stdin.is_some() && o.stdin_file.is_some() {
            return err(
                "INVALID_ARGUMENT",
                "pass either stdin (text) or stdin_file, not both",
            );
        }
        let stdin_text = match o.stdin.as_deref() {
            Some(t) => Some(dos::keyboard_text(&latin1_bytes(t)?)),
            None => None,
        };
        if stdin_text
            .as_ref()
            .is_some_and(|t| t.len() > MAX_PENDING_INPUT)
        {
            return err(
                "INVALID_ARGUMENT",
                format!("stdin is over {MAX_PENDING_INPUT} bytes; pass a file as stdin_file"),
            );
        }
        let image = crate::machine::read_program(path).map_err(|e| ToolError {
            code: "LOAD_FAILED",
            message: format!("cannot read the program: {e}"),
        })?;
        let stdin_file = match &o.stdin_file {
            Some(p) => Some(open_input_file(p)?),
            None => None,
        };
        use plugin_kit::clients::{json_int, mint};
        let (slot, freed) = match replace {
            Some(id) => (Some(self.index(Some(id))?), None),
            None => {
                let freed = self
                    .room
                    .admit(self.machines.len(), MAX_MACHINES_PER_CLIENT, MAX_MACHINES)
                    .map_err(|full| refused(full, true))?;
                (None, freed)
            }
        };
        let console_bytes = console_kib as usize * 1024;
        self.check_console_budget(console_bytes, slot)?;
        let redir =
            dos::split_redirections(o.command_tail.as_deref().unwrap_or("")).map_err(|e| {
                ToolError {
                    code: "INVALID_ARGUMENT",
                    message: format!("command_tail: {e}"),
                }
            })?;
        // Text stays the keyboard (MORE reads its keys there while `<`
        // feeds it the file); only two files for one handle conflict.
        if redir.input.is_some() && stdin_file.is_some() {
            return err(
                "INVALID_ARGUMENT",
                "command_tail redirects input with `<`; drop stdin_file or the redirection",
            );
        }
        let mut tail = redir.tail.clone();
        if !tail.is_empty() && !tail.starts_with(' ') {
            tail.insert(0, ' ');
        }
        let id = match slot {
            Some(i) => self.machines[i].id,
            None => {
                mint(json_int, |id| self.machines.iter().any(|m| m.id == *id)).map_err(|e| {
                    ToolError {
                        code: "LOAD_FAILED",
                        message: format!("cannot mint a machine id: {e}"),
                    }
                })?
            }
        };
        let limits = Limits {
            console_bytes,
            write_bytes: write_kib as u64 * 1024,
            ..Limits::default()
        };
        let mut m = Machine::load_with_limits(id, path, &image, &tail, model, tracking, limits)
            .map_err(|e| ToolError {
                code: "LOAD_FAILED",
                message: e.to_string(),
            })?;
        m.dos
            .redirect(
                redir.input.as_deref(),
                redir.output.as_deref(),
                redir.append,
            )
            .map_err(|e| ToolError {
                code: "LOAD_FAILED",
                message: format!("command_tail redirection: {e}"),
            })?;
        if let Some(f) = stdin_file {
            m.dos.set_stdin_file(f);
        }
        if let Some(t) = &stdin_text {
            // Checked against MAX_PENDING_INPUT above.
            let _ = m.dos.input.add(t);
        }
        m.dos.input.closed = stdin_text.is_some() && !o.stdin_open.unwrap_or(false);
        let out = Loaded {
            machine: id,
            program: path.display().to_string(),
            format: m.program.format,
            cpu: m.cpu.model.name(),
            size: m.program.size as u64,
            psp_segment: format!("{:04X}", m.program.psp),
            load_segment: format!("{:04X}", m.program.load_segment),
            entry_point: addr(SegOff(m.program.entry.0, m.program.entry.1)),
            stack: addr(SegOff(m.cpu.sregs[cpu::SS], m.cpu.regs[cpu::SP])),
            tracking,
            stdin: m.dos.stdin_description(),
            stdout: redir
                .output
                .as_ref()
                .map(|o| format!("{} {o}", if redir.append { ">>" } else { ">" })),
            console_kib,
            write_limit_kib: write_kib,
            next: "x86_run (to exit/breakpoint), x86_step, x86_add_breakpoint, x86_read_disassembly",
            note: freed.map(|f| f.note("machine")),
        };
        match slot {
            Some(i) => {
                // Keep the machine last so that it becomes the default.
                let old = self.machines.remove(i);
                // A reload is a change even when the new machine starts
                // exactly as the old one stood.
                m.edits = old.edits.wrapping_add(1);
                self.machines.push(m);
            }
            None => self.machines.push(m),
        }
        Ok(out)
    }

    /// `x86_list_machines`: the caller's machines, the default last.
    pub fn list_machines(&self) -> MachineList {
        let machines = self
            .machines
            .iter()
            .map(|m| MachineRow {
                machine: m.id,
                program: m.program.path.display().to_string(),
                cpu: m.cpu.model.name(),
                address: addr(m.cs_ip()),
                instructions: m.cpu.instructions,
                state: m.state(),
                exit_code: m.exit_code,
                tracking: m.tracker.is_some(),
            })
            .collect();
        MachineList {
            machines,
            default: self.machines.last().map(|m| m.id),
        }
    }

    /// Refuses a machine keeping `console_bytes` per stream (in place of
    /// the caller's machine at `replacing`) when every client's consoles
    /// together would pass [`CONSOLE_BUDGET`], before anything is built.
    fn check_console_budget(
        &self,
        console_bytes: usize,
        replacing: Option<usize>,
    ) -> Result<(), ToolError> {
        use plugin_kit::clients::Holdings;
        let freed = replacing.map_or(0, |i| console_weight(&self.machines[i]));
        let used = self.room.others_weight() + self.weight() - freed;
        let want = 3 * console_bytes;
        if used + want <= CONSOLE_BUDGET {
            return Ok(());
        }
        let fits_kib = CONSOLE_BUDGET.saturating_sub(used) / 3 / 1024;
        err(
            "CONSOLE_BUDGET",
            format!(
                "a machine keeping {} KiB per console stream needs {want} bytes, but the consoles of all machines (every client's) already keep {used} of the plugin's {CONSOLE_BUDGET}-byte budget; {}",
                console_bytes / 1024,
                if fits_kib == 0 {
                    "remove a machine with x86_remove_machine first".to_owned()
                } else {
                    format!(
                        "pass console_kib {fits_kib} or less, or remove a machine with x86_remove_machine"
                    )
                }
            ),
        )
    }

    /// Machine `id` as snapshot text, for the state store replicas share
    /// (`benchtop:host/durable-state.save`): `Ok(None)` when this client
    /// holds no such machine, `Err` when its state cannot move (files open).
    pub fn save_durable(&self, id: MachineId) -> Result<Option<String>, String> {
        match self.machines.iter().find(|m| m.id == id) {
            Some(m) => m.snapshot().map(Some),
            None => Ok(None),
        }
    }

    /// Makes snapshot `text` this client's machine `id`, in place of the
    /// copy held here or taking a place under the caps
    /// (`benchtop:host/durable-state.restore`).
    pub fn restore_durable(&mut self, id: MachineId, text: &str) -> Result<(), String> {
        let m = Machine::restore(id, text)?;
        let held = self.machines.iter().position(|x| x.id == id);
        if held.is_none() {
            self.room
                .admit(self.machines.len(), MAX_MACHINES_PER_CLIENT, MAX_MACHINES)
                .map_err(|full| format!("no room for the machine here: {full:?}"))?;
        }
        self.check_console_budget(m.dos.limits.console_bytes, held)
            .map_err(|e| e.message)?;
        match held {
            Some(i) => self.machines[i] = m,
            None => self.machines.push(m),
        }
        Ok(())
    }

    /// Drops this client's copy of machine `id`, if held
    /// (`benchtop:host/durable-state.forget`).
    pub fn forget(&mut self, id: MachineId) {
        self.machines.retain(|m| m.id != id);
    }

    /// `x86_remove_machine`.
    pub fn remove_machine(&mut self, id: MachineId) -> Result<MachineRemoved, ToolError> {
        let i = self.index(Some(id))?;
        self.machines.remove(i);
        Ok(MachineRemoved {
            removed: id,
            remaining: self.machines.len() as u32,
        })
    }

    /// `x86_snapshot`: the machine as base64 text (see [`Machine::snapshot`]).
    pub fn snapshot(&mut self, id: Option<MachineId>) -> Result<SnapshotTaken, ToolError> {
        let m = self.machine(id)?;
        let text = m.snapshot().map_err(|e| ToolError {
            code: "SNAPSHOT_REFUSED",
            message: e,
        })?;
        Ok(SnapshotTaken {
            machine: m.id,
            format_version: crate::machine::SNAPSHOT_VERSION,
            bytes: text.len() as u32,
            address: addr(m.cs_ip()),
            instructions: m.cpu.instructions,
            snapshot: text,
        })
    }

    /// `x86_restore_machine`: a new machine (the default) from a snapshot,
    /// checked before it takes a place under the caps.
    pub fn restore_machine(&mut self, text: &str) -> Result<MachineRestored, ToolError> {
        use plugin_kit::clients::{json_int, mint};
        // Checked under a placeholder id first, so bad text costs no slot.
        let mut m = Machine::restore(0, text).map_err(|e| ToolError {
            code: "INVALID_SNAPSHOT",
            message: format!(
                "snapshot refused: {e}; pass the `snapshot` text of an x86_snapshot result unchanged"
            ),
        })?;
        let freed = self
            .room
            .admit(self.machines.len(), MAX_MACHINES_PER_CLIENT, MAX_MACHINES)
            .map_err(|full| refused(full, false))?;
        self.check_console_budget(m.dos.limits.console_bytes, None)?;
        m.id = mint(json_int, |id| self.machines.iter().any(|x| x.id == *id)).map_err(|e| {
            ToolError {
                code: "INVALID_SNAPSHOT",
                message: format!("cannot mint a machine id: {e}"),
            }
        })?;
        let mut note = "restored with tracking off: list_functions and read_cfg_cpu_graph have nothing until the program is loaded again".to_owned();
        if let Some(f) = freed {
            note.push_str("; ");
            note.push_str(&f.note("machine"));
        }
        let out = MachineRestored {
            machine: m.id,
            program: m.program.path.display().to_string(),
            drive_c: m.dos.drive_c().display().to_string(),
            address: addr(m.cs_ip()),
            instructions: m.cpu.instructions,
            state: m.state(),
            note,
        };
        self.machines.push(m);
        Ok(out)
    }

    /// `read_cpu_registers`, in Spice86's shape.
    pub fn read_cpu_registers(&mut self, id: Option<MachineId>) -> Result<Registers, ToolError> {
        let m = self.machine(id)?;
        Ok(registers(&m.cpu))
    }

    /// `read_memory`: `length` (1..=4096) bytes from a linear address, as hex.
    pub fn read_memory(
        &mut self,
        address: u32,
        length: u32,
        id: Option<MachineId>,
    ) -> Result<MemoryRead, ToolError> {
        if !(1..=4096).contains(&length) {
            return err("INVALID_ARGUMENT", "Length must be between 1 and 4096");
        }
        if address > 0xFFFFF {
            return err(
                "INVALID_ARGUMENT",
                format!("address {address:#X} is beyond 1 MiB (0xFFFFF); pass a linear address"),
            );
        }
        let m = self.machine(id)?;
        let data: String = (0..length)
            .map(|i| format!("{:02X}", m.cpu.rb(address + i)))
            .collect();
        Ok(MemoryRead {
            address,
            length,
            data,
        })
    }

    /// `x86_write_memory`: hex bytes to a linear address (wrapping at 1 MiB).
    pub fn write_memory(
        &mut self,
        address: u32,
        data: &str,
        id: Option<MachineId>,
    ) -> Result<MemoryWritten, ToolError> {
        let bytes = parse_hex(data)?;
        if bytes.is_empty() || bytes.len() > 4096 {
            return err("INVALID_ARGUMENT", "data must hold 1 to 4096 bytes of hex");
        }
        if address > 0xFFFFF {
            return err(
                "INVALID_ARGUMENT",
                format!("address {address:#X} is beyond 1 MiB (0xFFFFF)"),
            );
        }
        let m = self.machine(id)?;
        for (i, b) in bytes.iter().enumerate() {
            m.cpu.wb(address + i as u32, *b);
        }
        m.edits = m.edits.wrapping_add(1);
        Ok(MemoryWritten {
            address,
            length: bytes.len() as u32,
            wrapped: address as usize + bytes.len() > 0x100000,
        })
    }

    /// `x86_write_registers`: sets the given registers; returns all of them.
    pub fn write_registers(
        &mut self,
        w: RegisterWrite,
        id: Option<MachineId>,
    ) -> Result<Registers, ToolError> {
        use cpu::*;
        let m = self.machine(id)?;
        let c = &mut m.cpu;
        for (v, r) in [
            (w.ax, AX),
            (w.bx, BX),
            (w.cx, CX),
            (w.dx, DX),
            (w.si, SI),
            (w.di, DI),
            (w.sp, SP),
            (w.bp, BP),
        ] {
            if let Some(v) = v {
                c.regs[r] = v;
            }
        }
        for (v, s) in [(w.cs, CS), (w.ds, DS), (w.es, ES), (w.ss, SS)] {
            if let Some(v) = v {
                c.sregs[s] = v;
            }
        }
        if let Some(v) = w.ip {
            c.ip = v;
        }
        if let Some(v) = w.flags {
            c.load_flags(v);
        }
        if w.cs.is_some() || w.ip.is_some() {
            m.halted = false;
        }
        Ok(registers(&m.cpu))
    }

    /// `list_functions`: the catalogue, most called first, at most `limit`
    /// (default 100).
    pub fn list_functions(
        &mut self,
        limit: Option<u32>,
        id: Option<MachineId>,
    ) -> Result<FunctionCatalogue, ToolError> {
        let limit = limit.unwrap_or(100) as usize;
        let m = self.machine(id)?;
        let mid = m.id;
        let Some(t) = m.tracker.as_ref() else {
            return err(
                "TRACKING_OFF",
                format!(
                    "function tracking is off for machine {mid}; call x86_load_program again with tracking=true"
                ),
            );
        };
        let mut fs: Vec<_> = t.functions.values().collect();
        fs.sort_by(|a, b| {
            b.called_count
                .cmp(&a.called_count)
                .then(a.address.cmp(&b.address))
        });
        let functions = fs
            .iter()
            .take(limit)
            .map(|f| FunctionInfo {
                address: addr(f.address),
                name: f.name.clone(),
                called_count: f.called_count,
                has_override: false,
                callers: f.callers.iter().take(8).map(|a| addr(*a)).collect(),
            })
            .collect();
        let dropped = t.dropped.calls > 0;
        Ok(FunctionCatalogue {
            functions,
            total_count: fs.len() as u32,
            dropped_calls: dropped.then_some(t.dropped.calls),
            limit_note: dropped.then(|| {
                format!(
                    "the catalogue holds at most {} functions; calls to further ones are counted in droppedCalls",
                    crate::tracking::MAX_FUNCTIONS
                )
            }),
            note: (fs.len() > limit).then(|| {
                format!(
                    "showing {limit} of {}; pass a larger limit for more",
                    fs.len()
                )
            }),
        })
    }

    /// `read_cfg_cpu_graph`: Spice86's context fields and up to `node_limit`
    /// (default 50, at most 2000) nodes in discovery order.
    pub fn read_cfg_cpu_graph(
        &mut self,
        node_limit: Option<u32>,
        id: Option<MachineId>,
    ) -> Result<CfgGraph, ToolError> {
        let limit = node_limit.unwrap_or(50).min(2000) as usize;
        let m = self.machine(id)?;
        let mid = m.id;
        let Some(t) = m.tracker.as_ref() else {
            return err(
                "TRACKING_OFF",
                format!(
                    "CFG CPU is not enabled for machine {mid}; call x86_load_program again with tracking=true"
                ),
            );
        };
        let ctx = t.current_context();
        let contexts = t
            .contexts()
            .map(|c| CfgContext {
                depth: c.depth,
                entry_point: addr(c.entry_point),
                last_executed_address: c.last_executed.map(|i| addr(t.nodes[i as usize].address)),
            })
            .collect();
        let nodes = t
            .nodes
            .iter()
            .enumerate()
            .take(limit)
            .map(|(i, n)| {
                let (seg, off) = (n.address.0, n.address.1);
                let read = |o: u16| m.cpu.rb(Cpu::lin(seg, o));
                let bytes: String = (0..n.len.min(8))
                    .map(|k| format!("{:02X}", (n.signature >> (8 * k)) as u8))
                    .collect();
                let text = disasm::decode(
                    &|o: u16| {
                        let k = o.wrapping_sub(off);
                        if k < 8 {
                            (n.signature >> (8 * k)) as u8
                        } else {
                            read(o)
                        }
                    },
                    off,
                    m.cpu.model,
                )
                .text;
                CfgNode {
                    id: i as u32,
                    address: addr(n.address),
                    asm: format!("{bytes}|{text}"),
                    successors: n.successors.clone(),
                    predecessors: n.predecessors,
                    executions: n.executions,
                }
            })
            .collect();
        let dropped = t.dropped.any().then(|| {
            use crate::tracking::*;
            CfgDropped {
                instructions: t.dropped.instructions,
                edges: t.dropped.edges,
                contexts: t.dropped.contexts,
                note: format!("tracking keeps at most {MAX_NODES} nodes, {MAX_VARIANTS} self-modified variants per address, {MAX_SUCCESSORS} successors per node and {MAX_CONTEXTS} nested contexts; executions past those bounds are counted here, not recorded"),
            }
        });
        Ok(CfgGraph {
            current_context_depth: ctx.depth,
            current_context_entry_point: addr(ctx.entry_point),
            total_entry_points: t.entry_points.len() as u32,
            entry_point_addresses: t.entry_points.iter().map(|a| addr(*a)).collect(),
            last_executed_address: t
                .last_executed()
                .map(addr)
                .unwrap_or_else(|| "None".into()),
            node_count: t.nodes.len() as u32,
            edge_count: t.edges,
            self_modified_addresses: t.variant_addresses,
            contexts,
            nodes,
            truncated: t.nodes.len() > limit,
            dropped,
            note: (t.nodes.len() > limit).then(|| {
                format!(
                    "showing {limit} of {} nodes in discovery order; pass node_limit (max 2000) for more",
                    t.nodes.len()
                )
            }),
        })
    }

    /// `x86_run`: runs until exit, a breakpoint, HLT, waiting for input, the
    /// budget, cancellation through `progress`, or the time limit.
    pub fn run(
        &mut self,
        max_instructions: Option<u64>,
        id: Option<MachineId>,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<RunResult, ToolError> {
        let budget = max_instructions.unwrap_or(DEFAULT_BUDGET);
        if budget == 0 {
            return err("INVALID_ARGUMENT", "max_instructions must be at least 1");
        }
        let started = Instant::now();
        let limit = self.run_time_limit;
        let m = self.machine(id)?;
        let out_before = m.dos.stdout.total();
        let mut timed_out = false;
        let mut check = |done: u64, total: u64| {
            if started.elapsed() > limit {
                timed_out = true;
                return false;
            }
            progress(done, total)
        };
        let (n, mut reason) = m.run(budget, &mut check).map_err(|e| ToolError {
            code: "NOT_RUNNABLE",
            message: e.to_string(),
        })?;
        if timed_out && reason == StopReason::Cancelled {
            reason = StopReason::TimeLimit;
        }
        Ok(run_result(m, n, reason, out_before))
    }

    /// `x86_step`: `count` (1..=10000) instructions; breakpoints do not stop it.
    pub fn step(
        &mut self,
        count: Option<u32>,
        over: bool,
        id: Option<MachineId>,
    ) -> Result<StepResult, ToolError> {
        let count = count.unwrap_or(1);
        if !(1..=10_000).contains(&count) {
            return err(
                "INVALID_ARGUMENT",
                "count must be between 1 and 10000; use x86_run for longer stretches",
            );
        }
        let started = Instant::now();
        let limit = self.run_time_limit;
        let m = self.machine(id)?;
        let out_before = m.dos.stdout.total();
        let mut executed = Vec::new();
        let mut done = 0;
        let mut reason = StopReason::Budget;
        let mut timed_out = false;
        for _ in 0..count {
            let here = m.cs_ip();
            let line = disassemble(m, here.0, here.1, 1).pop();
            let stepped = if over {
                // A call stepped over runs as x86_run would, within the
                // same wall-time limit.
                let mut check = |_: u64, _: u64| {
                    timed_out |= started.elapsed() > limit;
                    !timed_out
                };
                m.step_over(DEFAULT_BUDGET, &mut check)
            } else {
                m.step(1).map(|(n, r)| (u64::from(n), r))
            };
            let (n, mut r) = stepped.map_err(|e| ToolError {
                code: "NOT_RUNNABLE",
                message: e.to_string(),
            })?;
            if timed_out && r == StopReason::Cancelled {
                r = StopReason::TimeLimit;
            }
            done += n;
            if let Some(l) = line {
                if executed.len() == 20 {
                    executed.remove(0);
                }
                executed.push(l);
            }
            reason = r;
            if r != StopReason::Budget {
                break;
            }
        }
        let run = run_result(m, done, reason, out_before);
        let (cs, ip) = (m.cpu.sregs[cpu::CS], m.cpu.ip);
        Ok(StepResult {
            run,
            executed,
            note: (done > 20).then(|| format!("executed lists the last 20 of {done} instructions")),
            registers: registers(&m.cpu),
            next_instruction: disasm_line(m, cs, ip).0,
        })
    }

    /// `x86_add_breakpoint` at a linear address or at `segment:offset`: an
    /// execution breakpoint without a condition.
    pub fn add_breakpoint(
        &mut self,
        address: Option<u32>,
        segment: Option<u16>,
        offset: Option<u16>,
        id: Option<MachineId>,
    ) -> Result<BreakpointAdded, ToolError> {
        let spec = BreakpointSpec {
            address,
            segment,
            offset,
            ..Default::default()
        };
        self.add_breakpoint_spec(&spec, id)
    }

    /// `x86_add_breakpoint` with its every argument.
    pub fn add_breakpoint_spec(
        &mut self,
        spec: &BreakpointSpec,
        id: Option<MachineId>,
    ) -> Result<BreakpointAdded, ToolError> {
        use crate::watch::Kind;
        let kind: Kind = spec.kind.unwrap_or(Kind::Execution);
        let limit: u32 = if kind.io() { 0xFFFF } else { 0xFFFFF };
        let first = match (spec.address, spec.segment, spec.offset) {
            (Some(a), None, None) if a <= limit => a,
            (Some(a), None, None) => {
                return err(
                    "INVALID_ARGUMENT",
                    if kind.io() {
                        format!("port {a:#X} is beyond 0xFFFF")
                    } else {
                        format!("address {a:#X} is beyond 0xFFFFF")
                    },
                );
            }
            (None, Some(s), Some(o)) if !kind.io() => Cpu::lin(s, o),
            _ if kind.io() => {
                return err(
                    "INVALID_ARGUMENT",
                    "an I/O breakpoint takes address: the port number",
                );
            }
            _ => {
                return err(
                    "INVALID_ARGUMENT",
                    "pass either address (linear) or both segment and offset",
                );
            }
        };
        let length = spec.length.unwrap_or(1);
        if length == 0 || (kind == Kind::Execution && length != 1) {
            return err(
                "INVALID_ARGUMENT",
                "length is 1 or more, and only memory and I/O breakpoints cover ranges",
            );
        }
        let last = first.saturating_add(length - 1);
        if last > limit {
            return err(
                "INVALID_ARGUMENT",
                format!("the range {first:#X}..{last:#X} passes {limit:#X}"),
            );
        }
        let condition = match spec.condition.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(crate::condition::Condition::parse(text).map_err(|e| ToolError {
                code: "INVALID_CONDITION",
                message: format!(
                    "condition refused: {e}; write it over registers (ax, al, cs, ip, flags, zf …), numbers and byte[…]/word[…], e.g. `ax == 0x1234 && byte[ds:si] != 0`"
                ),
            })?),
        };
        let bp = crate::machine::Breakpoint {
            kind,
            first,
            last,
            condition,
        };
        let m = self.machine(id)?;
        let Some(bid) = m.add(bp) else {
            return err(
                "TOO_MANY_BREAKPOINTS",
                format!(
                    "machine {} has {MAX_BREAKPOINTS} breakpoints; remove some with x86_remove_breakpoint",
                    m.id
                ),
            );
        };
        Ok(BreakpointAdded {
            breakpoint: breakpoint_view(bid, &m.breakpoints[&bid]),
            machine: m.id,
        })
    }

    /// `x86_remove_breakpoint`.
    pub fn remove_breakpoint(
        &mut self,
        bp: u32,
        id: Option<MachineId>,
    ) -> Result<BreakpointRemoved, ToolError> {
        let m = self.machine(id)?;
        if !m.remove_breakpoint(bp) {
            return err(
                "NOT_FOUND",
                format!(
                    "machine {} has no breakpoint {bp}; see x86_list_breakpoints",
                    m.id
                ),
            );
        }
        Ok(BreakpointRemoved {
            removed: bp,
            remaining: m.breakpoints.len() as u32,
        })
    }

    /// `x86_list_breakpoints`.
    pub fn list_breakpoints(&mut self, id: Option<MachineId>) -> Result<BreakpointList, ToolError> {
        let m = self.machine(id)?;
        let breakpoints = m
            .breakpoints
            .iter()
            .map(|(&id, b)| breakpoint_view(id, b))
            .collect();
        Ok(BreakpointList {
            machine: m.id,
            breakpoints,
        })
    }

    /// `x86_read_disassembly`: `count` (1..=500, default 20) instructions from
    /// `segment:offset`, by default from CS:IP.
    pub fn read_disassembly(
        &mut self,
        segment: Option<u16>,
        offset: Option<u16>,
        count: Option<u32>,
        id: Option<MachineId>,
    ) -> Result<Disassembly, ToolError> {
        let count = count.unwrap_or(20);
        if !(1..=500).contains(&count) {
            return err("INVALID_ARGUMENT", "count must be between 1 and 500");
        }
        let m = self.machine(id)?;
        let seg = segment.unwrap_or(m.cpu.sregs[cpu::CS]);
        let off = offset.unwrap_or(if segment.is_some() { 0 } else { m.cpu.ip });
        Ok(Disassembly {
            machine: m.id,
            cpu: m.cpu.model.name(),
            instructions: disassemble(m, seg, off, count as usize),
        })
    }

    /// `read_stack`: the top `count` (1..=256, default 16) words at SS:SP,
    /// in Spice86's shape.
    pub fn read_stack(
        &mut self,
        count: Option<u32>,
        id: Option<MachineId>,
    ) -> Result<StackRead, ToolError> {
        let count = count.unwrap_or(16);
        if !(1..=256).contains(&count) {
            return err("INVALID_ARGUMENT", "count must be between 1 and 256");
        }
        let m = self.machine(id)?;
        let (ss, sp) = (m.cpu.sregs[cpu::SS], m.cpu.regs[cpu::SP]);
        let words = (0..count as u16)
            .map(|i| {
                let offset = sp.wrapping_add(2 * i);
                StackWord {
                    address: format!("{ss:04X}:{offset:04X}"),
                    value: m.cpu.read_word(ss, offset),
                }
            })
            .collect();
        Ok(StackRead {
            top: format!("{ss:04X}:{sp:04X}"),
            words,
        })
    }

    /// `read_dos_state`: the program's PSP, memory blocks and open handles.
    pub fn read_dos_state(&mut self, id: Option<MachineId>) -> Result<DosState, ToolError> {
        let m = self.machine(id)?;
        Ok(m.dos
            .state(m.id, &m.program.path.display().to_string(), &m.cpu))
    }

    /// `read_interrupt_vector`: where vector `vector` points, and whether
    /// the program installed that handler (the BIOS and DOS vectors point
    /// at stubs this emulator serves natively).
    pub fn read_interrupt_vector(
        &mut self,
        vector: u32,
        id: Option<MachineId>,
    ) -> Result<InterruptVector, ToolError> {
        let Ok(n) = u8::try_from(vector) else {
            return err("INVALID_ARGUMENT", "vectorNumber must be between 0 and 255");
        };
        let m = self.machine(id)?;
        let offset = m.cpu.read_word(0, u16::from(n) * 4);
        let segment = m.cpu.read_word(0, u16::from(n) * 4 + 2);
        let native = segment == cpu::STUB_SEGMENT && offset == u16::from(n);
        Ok(InterruptVector {
            vector: n,
            address: format!("{segment:04X}:{offset:04X}"),
            handler: if native {
                "native (the BIOS or DOS service this emulator performs)"
            } else {
                "installed by the program"
            },
        })
    }

    /// `search_memory`: where `pattern` (hex bytes) or `text` occurs in
    /// `length` bytes from `start_segment:start_offset`, at most `limit`
    /// places.
    pub fn search_memory(
        &mut self,
        q: &MemorySearch,
        id: Option<MachineId>,
    ) -> Result<MemoryFound, ToolError> {
        let needle = match (&q.pattern, &q.text) {
            (Some(hex), None) => {
                let bytes = parse_hex(hex).map_err(|e| ToolError {
                    code: e.code,
                    message: e.message.replacen("data", "pattern", 1),
                })?;
                if bytes.is_empty() {
                    return err(
                        "INVALID_ARGUMENT",
                        "pattern holds no bytes; give hex, e.g. \"CD21\"",
                    );
                }
                bytes
            }
            (None, Some(text)) if !text.is_empty() => latin1_bytes(text)?,
            _ => {
                return err(
                    "INVALID_ARGUMENT",
                    "give exactly one of pattern (hex bytes) or text",
                );
            }
        };
        if needle.len() > 256 {
            return err("INVALID_ARGUMENT", "a pattern is at most 256 bytes");
        }
        let segment = q.start_segment.unwrap_or(0);
        let start = Cpu::lin(segment, q.start_offset.unwrap_or(0)) as usize;
        let room = cpu::MEM_SIZE - start;
        let length = q.length.map_or(room, |l| (l as usize).min(room));
        let limit = q.limit.unwrap_or(20).clamp(1, 100) as usize;
        let m = self.machine(id)?;
        let hay = &m.cpu.mem[start..start + length];
        let mut hits = hay
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle.as_slice())
            .map(|(i, _)| start + i);
        let matches: Vec<String> = hits
            .by_ref()
            .take(limit)
            .map(|linear| {
                // Within the start segment when it reaches, else normalised.
                let from_segment = linear.checked_sub(usize::from(segment) << 4);
                match from_segment {
                    Some(off) if off <= 0xFFFF => format!("{segment:04X}:{off:04X}"),
                    _ => format!("{:04X}:{:04X}", linear >> 4, linear & 0xF),
                }
            })
            .collect();
        let more = hits.count();
        Ok(MemoryFound {
            pattern: needle.iter().map(|b| format!("{b:02X}")).collect(),
            matches,
            more,
        })
    }

    /// `x86_screenshot`: the display as the monitor shows it, as a PNG, and
    /// in a text mode the text (with the cursor) as well.
    pub fn screenshot(&mut self, id: Option<MachineId>) -> Result<Screen, ToolError> {
        let m = self.machine(id)?;
        let shot = crate::video::screenshot(&m.cpu);
        let png = match &shot.image {
            Some(canvas) => Some(canvas.encode().map_err(|e| ToolError {
                code: "INTERNAL",
                message: e,
            })?),
            None => None,
        };
        Ok(Screen {
            machine: m.id,
            mode: format!("{:02X}h", shot.mode),
            description: shot.description,
            cursor: shot
                .cursor
                .map(|(row, col)| format!("row {row}, column {col}")),
            text: shot.text,
            png,
        })
    }

    /// `x86_read_console`: each stream from absolute `offset`, at most
    /// `max_bytes`, with totals, the input state and call counts.
    pub fn read_console(
        &mut self,
        offset: Option<u32>,
        max_bytes: Option<u32>,
        id: Option<MachineId>,
    ) -> Result<ConsoleRead, ToolError> {
        let offset = offset.unwrap_or(0) as u64;
        let max = max_bytes.unwrap_or(8192).clamp(1, 65536) as usize;
        let m = self.machine(id)?;
        let mut notes = Vec::new();
        // A stream's text from offset, bytes ever written and bytes dropped.
        let console_kib = m.dos.limits.console_bytes / 1024;
        let mut stream = |name: &str, s: &crate::console::Stream| {
            let (bytes, start) = s.read(offset, max);
            if s.dropped() > 0 && offset < s.dropped() {
                notes.push(format!(
                    "{name}: the first {} of {} bytes were dropped (the console keeps the last {console_kib} KiB; set console_kib in x86_load_program); showing from offset {start}",
                    s.dropped(),
                    s.total(),
                ));
            }
            if start + (bytes.len() as u64) < s.total() {
                notes.push(format!(
                    "{name}: {} more bytes after offset {}; pass offset/max_bytes for the rest",
                    s.total() - start - bytes.len() as u64,
                    start + bytes.len() as u64
                ));
            }
            let dropped = (s.dropped() > 0).then(|| s.dropped());
            (latin1(&bytes), s.total(), dropped)
        };
        let (stdout, stdout_bytes, stdout_dropped) = stream("stdout", &m.dos.stdout);
        let (stderr, stderr_bytes, stderr_dropped) = stream("stderr", &m.dos.stderr);
        let (screen, screen_bytes, screen_dropped) = stream("screen", &m.dos.screen);
        if m.dos.disk_full > 0 {
            notes.push(format!(
                "{} write(s) were cut short as on a full disk (write_limit_kib in x86_load_program; files at most {} MiB)",
                m.dos.disk_full,
                m.dos.limits.file_bytes >> 20
            ));
        }
        if let Some(n) = &m.dos.search_note {
            notes.push(n.clone());
        }
        let counts = |it: &mut dyn Iterator<Item = (String, u64)>| -> Vec<ServiceCount> {
            it.map(|(service, calls)| ServiceCount { service, calls })
                .collect()
        };
        Ok(ConsoleRead {
            machine: m.id,
            stdout,
            stdout_bytes,
            stdout_dropped,
            stderr,
            stderr_bytes,
            stderr_dropped,
            screen,
            screen_bytes,
            screen_dropped,
            int21_calls: counts(
                &mut m
                    .dos
                    .int21_calls
                    .iter()
                    .map(|(k, v)| (format!("21h/{k:02X}h"), *v)),
            ),
            input: InputState {
                stdin: m.dos.stdin_description(),
                pending: m.dos.input.pending() as u64,
                consumed: m.dos.input.consumed,
                ended: m.dos.input.closed,
            },
            files: (m.dos.file_bytes_written > 0 || m.dos.disk_full > 0).then_some(FileWrites {
                bytes_written: m.dos.file_bytes_written,
                write_limit: m.dos.limits.write_bytes,
                file_size_limit: m.dos.limits.file_bytes,
                disk_full: m.dos.disk_full,
            }),
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            unsupported_services: (!m.dos.unsupported.is_empty())
                .then(|| counts(&mut m.dos.unsupported.iter().map(|(k, v)| (k.clone(), *v)))),
        })
    }

    /// Queues keyboard input for a machine (and, with `end`, ends it).
    pub fn write_console_input(
        &mut self,
        text: Option<&str>,
        end: Option<bool>,
        id: Option<MachineId>,
    ) -> Result<InputQueued, ToolError> {
        self.write_console_keys(text, &[], end, id)
    }

    /// `x86_write_console_input` with named keys after the text.
    pub fn write_console_keys(
        &mut self,
        text: Option<&str>,
        keys: &[String],
        end: Option<bool>,
        id: Option<MachineId>,
    ) -> Result<InputQueued, ToolError> {
        let mut bytes = match text {
            Some(t) => dos::keyboard_text(&latin1_bytes(t)?),
            None => Vec::new(),
        };
        for k in keys {
            let Some(typed) = dos::named_key(k) else {
                return err(
                    "INVALID_ARGUMENT",
                    format!(
                        "unknown key `{}`; keys are {}",
                        plugin_kit::text::clip(k),
                        dos::KEY_NAMES
                    ),
                );
            };
            bytes.extend(typed);
        }
        if text.is_none() && keys.is_empty() && end.is_none() {
            return err(
                "INVALID_ARGUMENT",
                "pass text or keys to type, end=true to end the input, or both",
            );
        }
        let m = self.machine(id)?;
        if let Err(room) = m.dos.input.add(&bytes) {
            return err(
                "INPUT_FULL",
                format!(
                    "{} bytes of input are already waiting and only {room} more fit; x86_run the program to consume them first",
                    m.dos.input.pending()
                ),
            );
        }
        if !bytes.is_empty() {
            // New text reopens input that was ended before.
            m.dos.input.closed = false;
        }
        if end == Some(true) {
            m.dos.input.closed = true;
        }
        Ok(InputQueued {
            machine: m.id,
            queued: bytes.len() as u64,
            pending: m.dos.input.pending() as u64,
            ended: m.dos.input.closed,
            next: "x86_run to continue the program",
        })
    }
}

/// Text to bytes, one byte per character (code page 437 programs get the
/// Latin-1 values); characters past U+00FF cannot be typed.
fn latin1_bytes(t: &str) -> Result<Vec<u8>, ToolError> {
    t.chars()
        .map(|c| {
            u8::try_from(c as u32).or_else(|_| {
                err(
                    "INVALID_ARGUMENT",
                    format!("input holds {c:?}, beyond one byte; DOS input is 8-bit text"),
                )
            })
        })
        .collect()
}

/// Opens a host file as standard input, refusing pipes and devices.
fn open_input_file(p: &Path) -> Result<std::fs::File, ToolError> {
    let fail = |e: std::io::Error| ToolError {
        code: "LOAD_FAILED",
        message: format!(
            "cannot open stdin_file: {}",
            plugin_kit::paths::explain_io_error(p, &e, false)
        ),
    };
    let meta = std::fs::metadata(p).map_err(fail)?;
    if !meta.is_file() {
        return err(
            "LOAD_FAILED",
            format!("stdin_file {} is not a regular file", p.display()),
        );
    }
    std::fs::File::open(p).map_err(fail)
}

fn run_result(m: &Machine, n: u64, reason: StopReason, out_before: u64) -> RunResult {
    let out = &m.dos.stdout;
    let (new, start) = out.read(out_before, OUTPUT_PREVIEW);
    let end = start + new.len() as u64;
    let mut notes = Vec::new();
    if start > out_before {
        notes.push(format!(
            "{} bytes of this run's output were dropped (the console keeps the last {} KiB)",
            start - out_before,
            m.dos.limits.console_bytes / 1024
        ));
    }
    if end < out.total() {
        notes.push(format!(
            "{} more bytes; x86_read_console with offset {end}",
            out.total() - end
        ));
    }
    if let Some(n) = &m.dos.search_note {
        notes.push(n.clone());
    }
    match reason {
        StopReason::TimeLimit => notes.push(format!(
            "stopped after {}s of wall time to stay within the call deadline; x86_run again to continue",
            RUN_TIME_LIMIT.as_secs()
        )),
        StopReason::WaitingForInput => notes.push(
            "the program waits for keyboard input; add it with x86_write_console_input, then x86_run again"
                .into(),
        ),
        _ => {}
    }
    let output = latin1(&new);
    let output_note = (!notes.is_empty()).then(|| notes.join("; "));
    RunResult {
        machine: m.id,
        stop_reason: reason,
        exit_code: match reason {
            StopReason::Exited(c) => Some(c),
            _ => None,
        },
        breakpoint: match reason {
            StopReason::Breakpoint(b) => Some(b),
            _ => None,
        },
        hit: match (reason, m.last_access) {
            (StopReason::Breakpoint(_), Some(a)) if a.io => Some(format!(
                "port {:#06X} {}",
                a.addr,
                if a.write { "write (OUT)" } else { "read (IN)" }
            )),
            (StopReason::Breakpoint(_), Some(a)) => Some(format!(
                "memory {} at {:#07X}",
                if a.write { "write" } else { "read" },
                a.addr
            )),
            _ => None,
        },
        instructions: n,
        total_instructions: m.cpu.instructions,
        address: addr(m.cs_ip()),
        output,
        output_note,
        unsupported_services: (!m.dos.unsupported.is_empty()).then(|| {
            m.dos
                .unsupported
                .iter()
                .map(|(k, v)| format!("{k} x{v}"))
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn session_with(code: &[u8]) -> Session {
        // One directory per call: tests run in parallel, and two programs
        // of the same length sharing a file made one test run the other's.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("x86-inspect-tools-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("T.COM");
        std::fs::write(&p, code).unwrap();
        let mut s = Session::default();
        s.load_program(&p, None, Model::I80186, true, None).unwrap();
        s
    }

    // call f ; mov ax,4c03h ; int 21h ; f: mov dl,'A' ; mov ah,2 ; int 21h ; ret
    const PROG: [u8; 17] = [
        0xE8, 5, 0, 0xB8, 3, 0x4C, 0xCD, 0x21, 0xB2, b'A', 0xB4, 2, 0xCD, 0x21, 0xC3, 0, 0,
    ];

    /// Everything a client sees of machine `id` but its id.
    fn observe(s: &mut Session, id: MachineId) -> Value {
        let regs = serde_json::to_value(s.read_cpu_registers(Some(id)).unwrap()).unwrap();
        let mut con = serde_json::to_value(s.read_console(None, None, Some(id)).unwrap()).unwrap();
        con.as_object_mut().unwrap().remove("machine");
        let mem: Vec<Value> = [0x0u32, 0x870, 0x970, 0x10860]
            .iter()
            .map(|a| serde_json::to_value(s.read_memory(*a, 256, Some(id)).unwrap()).unwrap())
            .collect();
        let bps =
            serde_json::to_value(s.list_breakpoints(Some(id)).unwrap()).unwrap()["breakpoints"]
                .clone();
        let row = s
            .list_machines()
            .machines
            .into_iter()
            .find(|m| m.machine == id)
            .unwrap();
        serde_json::json!([
            regs,
            con,
            mem,
            bps,
            row.address,
            row.instructions,
            row.state,
            row.exit_code
        ])
    }

    #[test]
    fn a_restored_snapshot_runs_exactly_like_its_original() {
        let mut s = session_with(&PROG);
        s.write_console_input(Some("queued"), None, None).unwrap();
        s.step(Some(2), false, None).unwrap();
        s.add_breakpoint(Some(0x970 + 6), None, None, None).unwrap();
        let a = s.list_machines().default.unwrap();
        let snap = s.snapshot(None).unwrap();
        assert_eq!(snap.bytes as usize, snap.snapshot.len());
        assert!(
            snap.snapshot.len() < 40_000,
            "{} characters",
            snap.snapshot.len()
        );
        let made = s.restore_machine(&snap.snapshot).unwrap();
        let b = made.machine;
        assert_ne!(a, b);
        assert_eq!(
            s.list_machines().default,
            Some(b),
            "the copy is the default"
        );
        assert!(made.note.contains("tracking off"));
        assert_eq!(observe(&mut s, a), observe(&mut s, b));
        // Run both to the breakpoint, then to the exit, step by step.
        for _ in 0..2 {
            s.run(None, Some(a), &mut |_, _| true).unwrap();
            s.run(None, Some(b), &mut |_, _| true).unwrap();
            assert_eq!(observe(&mut s, a), observe(&mut s, b));
        }
        let v = serde_json::to_value(s.read_console(None, None, Some(b)).unwrap()).unwrap();
        assert_eq!(v["stdout"], "A");
        assert_eq!(s.list_machines().machines[1].exit_code, Some(3));
    }

    /// Hardening item 3: five machines keeping 16 MiB per console stream
    /// (within the old per-machine cap) and one snapshot passed the
    /// plugin's 512 MiB memory cap. Consoles now share one budget across
    /// every client, and a snapshot is sized before it is built.
    #[test]
    fn consoles_of_every_client_share_one_budget() {
        let dir = std::env::temp_dir().join(format!("x86-console-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("T.COM");
        std::fs::write(&p, PROG).unwrap();
        let big = LoadOptions {
            console_kib: Some(MAX_CONSOLE_KIB),
            ..LoadOptions::default()
        };
        let mut all = Clients::default();
        assert!(all.with("s-a", |s| s.load(&p, &big)).is_ok());
        assert!(all.with("s-b", |s| s.load(&p, &big)).is_ok());
        let Err(e) = all.with("s-c", |s| s.load(&p, &big)) else {
            panic!("over budget");
        };
        assert_eq!(e.code, "CONSOLE_BUDGET");
        assert!(e.message.contains("remove a machine"), "{}", e.message);
        // Reloading one's own machine gives back its share first.
        let id = all.with("s-a", |s| s.list_machines().default).unwrap();
        let half = LoadOptions {
            machine: Some(id),
            console_kib: Some(MAX_CONSOLE_KIB / 2),
            ..LoadOptions::default()
        };
        assert!(all.with("s-a", |s| s.load(&p, &half)).is_ok());
        let Err(e) = all.with("s-c", |s| s.load(&p, &big)) else {
            panic!("over budget");
        };
        assert!(
            e.message
                .contains(&format!("pass console_kib {} or less", MAX_CONSOLE_KIB / 2)),
            "{}",
            e.message
        );
        assert!(
            all.with("s-c", |s| s.load(&p, &LoadOptions::default()))
                .is_ok()
        );

        // A machine whose console is full is refused a snapshot up front.
        let mut m = all.with("s-b", |s| s.machines.pop()).unwrap();
        m.dos
            .stdout
            .extend(&vec![b'x'; MAX_CONSOLE_KIB as usize * 1024]);
        let e = m.snapshot().expect_err("too big");
        assert!(e.contains("smaller console_kib"), "{e}");
    }

    /// Hardening item 6: an anonymous caller gets no machine.
    #[test]
    fn anonymous_callers_get_no_machine() {
        let dir = std::env::temp_dir().join(format!("x86-anon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("T.COM");
        std::fs::write(&p, PROG).unwrap();
        let mut all = Clients::default();
        let Err(e) = all.with("anon-1", |s| s.load(&p, &LoadOptions::default())) else {
            panic!("refused");
        };
        assert_eq!(e.code, "UNIDENTIFIED_CLIENT");
        assert!(e.message.contains("benchtop-owner"), "{}", e.message);
    }

    #[test]
    fn any_damaged_payload_is_refused_not_a_panic() {
        // Well-framed payloads (so past the CRC) cut short at every length,
        // and with each byte flipped: every one answers an error or a machine.
        let s = session_with(&PROG);
        let text = s.machines[0].snapshot().unwrap();
        let (_, payload) = plugin_kit::blob::open(
            *b"X86S",
            crate::machine::SNAPSHOT_VERSION,
            usize::MAX,
            &text,
        )
        .unwrap();
        let step = (payload.len() / 1000).max(1);
        for cut in (0..payload.len()).step_by(step) {
            let t =
                plugin_kit::blob::seal(*b"X86S", crate::machine::SNAPSHOT_VERSION, &payload[..cut]);
            assert!(Machine::restore(1, &t).is_err(), "cut at {cut}");
        }
        for i in (0..payload.len()).step_by(step) {
            let mut p = payload.clone();
            p[i] ^= 0xFF;
            let _ = Machine::restore(
                1,
                &plugin_kit::blob::seal(*b"X86S", crate::machine::SNAPSHOT_VERSION, &p),
            );
        }
    }

    #[test]
    fn snapshots_refuse_open_files_and_bad_text() {
        let mut s = session_with(&PROG);
        let good = s.snapshot(None).unwrap().snapshot;
        let dir = std::env::temp_dir().join(format!("x86-snap-redir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("R.COM");
        std::fs::write(&p, PROG).unwrap();
        s.load_program(&p, Some("> OUT.TXT"), Model::I80186, true, None)
            .unwrap();
        let e = s.snapshot(None).unwrap_err();
        assert_eq!(e.code, "SNAPSHOT_REFUSED");
        assert!(e.message.contains("handle 1"), "{}", e.message);
        std::fs::remove_dir_all(&dir).ok();
        let held = s.list_machines().machines.len();
        let mut flipped = good.clone().into_bytes();
        let mid = flipped.len() / 2;
        flipped[mid] = if flipped[mid] == b'Q' { b'R' } else { b'Q' };
        for (bad, says) in [
            (String::from_utf8(flipped).unwrap(), "checksum"),
            (good[..good.len() / 2].to_owned(), "snapshot refused"),
            (plugin_kit::blob::seal(*b"CPSN", 1, b"x"), "not a X86S"),
        ] {
            let e = s.restore_machine(&bad).unwrap_err();
            assert_eq!(e.code, "INVALID_SNAPSHOT");
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert_eq!(s.list_machines().machines.len(), held, "no machine made");
    }

    /// `text`'s payload with the first string field equal to `from`
    /// (u16 length + bytes) replaced by `to`, resealed: a crafted snapshot.
    fn with_string_replaced(text: &str, from: &str, to: &str) -> String {
        let (_, payload) =
            plugin_kit::blob::open(*b"X86S", crate::machine::SNAPSHOT_VERSION, usize::MAX, text)
                .unwrap();
        let mut old = (from.len() as u16).to_le_bytes().to_vec();
        old.extend_from_slice(from.as_bytes());
        let at = payload
            .windows(old.len())
            .position(|w| w == old.as_slice())
            .expect("the field is in the payload");
        let mut p = payload[..at].to_vec();
        p.extend_from_slice(&(to.len() as u16).to_le_bytes());
        p.extend_from_slice(to.as_bytes());
        p.extend_from_slice(&payload[at + old.len()..]);
        plugin_kit::blob::seal(*b"X86S", crate::machine::SNAPSHOT_VERSION, &p)
    }

    #[test]
    fn a_snapshot_cannot_aim_drive_c_at_another_folder() {
        let mut s = session_with(&PROG);
        let program = s.machines[0].program.path.clone();
        let home = program.parent().unwrap().to_path_buf();
        let good = s.snapshot(None).unwrap().snapshot;
        let made = s.restore_machine(&good).unwrap();
        assert_eq!(made.drive_c, home.display().to_string());
        assert_eq!(s.machines.last().unwrap().dos.drive_c(), home);
        // A folder of the user's, which the program must never reach.
        let roms = home.join("roms");
        std::fs::create_dir_all(&roms).unwrap();
        std::fs::write(roms.join("GAME.ROM"), b"precious").unwrap();
        let held = s.machines.len();
        let crafted = with_string_replaced(&good, &home.to_string_lossy(), &roms.to_string_lossy());
        let e = s.restore_machine(&crafted).unwrap_err();
        assert_eq!(e.code, "INVALID_SNAPSHOT");
        assert!(e.message.contains("drive C:"), "{}", e.message);
        // The program path pointed into that folder: no program there.
        let crafted = with_string_replaced(
            &good,
            &program.to_string_lossy(),
            &roms.join("T.COM").to_string_lossy(),
        );
        let e = s.restore_machine(&crafted).unwrap_err();
        assert!(e.message.contains("where it was loaded"), "{}", e.message);
        // Longer than the writer keeps: refused by its length.
        let long = format!("{}/{}.COM", home.display(), "L".repeat(4096));
        let crafted = with_string_replaced(&good, &program.to_string_lossy(), &long);
        let e = s.restore_machine(&crafted).unwrap_err();
        assert!(e.message.contains("`program path` is"), "{}", e.message);
        assert!(e.message.contains("over the 4096"), "{}", e.message);
        // A `..` path (never what a load resolved) is refused outright.
        let sneaky = format!("{}/../roms/GAME.ROM", home.display());
        let crafted = with_string_replaced(&good, &program.to_string_lossy(), &sneaky);
        let e = s.restore_machine(&crafted).unwrap_err();
        assert!(
            e.message.contains("not absolute and normal"),
            "{}",
            e.message
        );
        assert_eq!(s.machines.len(), held, "no machine made");
        // The program removed: refused, not a machine with C: elsewhere.
        std::fs::remove_file(&program).unwrap();
        let e = s.restore_machine(&good).unwrap_err();
        assert!(e.message.contains("where it was loaded"), "{}", e.message);
        assert_eq!(std::fs::read(roms.join("GAME.ROM")).unwrap(), b"precious");
    }

    #[test]
    fn registers_have_spice86_keys() {
        let mut s = session_with(&PROG);
        let v: Value = serde_json::to_value(s.read_cpu_registers(None).unwrap()).unwrap();
        assert_eq!(v["generalPurpose"]["ESP"], 0xFFFE);
        assert_eq!(v["segments"]["CS"], 0x87);
        assert_eq!(v["segments"]["FS"], 0);
        assert_eq!(v["instructionPointer"]["IP"], 0x100);
        assert_eq!(v["flags"]["InterruptFlag"], true);
        assert_eq!(v["flags"]["CarryFlag"], false);
        assert_eq!(v.as_object().unwrap().len(), 4);
    }

    #[test]
    fn read_memory_validates_and_reads() {
        let mut s = session_with(&PROG);
        let v: Value = serde_json::to_value(s.read_memory(0x970, 3, None).unwrap()).unwrap();
        assert_eq!(v["data"], "E80500");
        assert_eq!(v["length"], 3);
        assert_eq!(
            s.read_memory(0, 4097, None).unwrap_err().message,
            "Length must be between 1 and 4096"
        );
        assert_eq!(
            s.read_memory(0, 0, None).unwrap_err().code,
            "INVALID_ARGUMENT"
        );
    }

    #[test]
    fn run_reports_exit_and_functions() {
        let mut s = session_with(&PROG);
        let v: Value = serde_json::to_value(s.run(None, None, &mut |_, _| true).unwrap()).unwrap();
        assert_eq!(v["stop_reason"], "exited");
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["output"], "A");
        let f: Value = serde_json::to_value(s.list_functions(None, None).unwrap()).unwrap();
        let names: Vec<&str> = f["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"interrupt_handler_21"));
        assert_eq!(f["functions"][0]["calledCount"], 2);
        let g: Value = serde_json::to_value(s.read_cfg_cpu_graph(None, None).unwrap()).unwrap();
        assert_eq!(g["currentContextDepth"], 0);
        assert_eq!(g["currentContextEntryPoint"], "0087:0100");
        assert_eq!(g["lastExecutedAddress"], "0087:0106");
        assert!(g["nodeCount"].as_u64().unwrap() >= 7);
        let c: Value = serde_json::to_value(s.read_console(None, None, None).unwrap()).unwrap();
        assert_eq!(c["stdout"], "A");
        assert_eq!(
            s.run(None, None, &mut |_, _| true).unwrap_err().code,
            "NOT_RUNNABLE"
        );
    }

    /// Issue 38: a service the program calls that this DOS does not
    /// perform, a whole function or one subfunction, is listed with its
    /// count by both x86_run and x86_read_console.
    #[test]
    fn unsupported_services_are_reported_with_counts() {
        let mut s = session_with(&[
            0xB4, 0x3B, 0xCD, 0x21, // AH=3Bh (chdir)
            0xB4, 0x3B, 0xCD, 0x21, //
            0xB8, 0x01, 0x44, 0xBB, 0x01, 0x00, 0xCD, 0x21, // AX=4401h, BX=1
            0xB8, 0x00, 0x63, 0xCD, 0x21, // AX=6300h (performed)
            0xB8, 0x00, 0x4C, 0xCD, 0x21, // exit 0
        ]);
        let v: Value = serde_json::to_value(s.run(None, None, &mut |_, _| true).unwrap()).unwrap();
        assert_eq!(v["exit_code"], 0);
        assert_eq!(
            v["unsupported_services"],
            serde_json::json!(["INT 21h AH=3Bh x2", "INT 21h AX=4401h x1"])
        );
        let c: Value = serde_json::to_value(s.read_console(None, None, None).unwrap()).unwrap();
        assert_eq!(
            c["unsupported_services"],
            serde_json::json!([
                {"service": "INT 21h AH=3Bh", "calls": 2},
                {"service": "INT 21h AX=4401h", "calls": 1}
            ])
        );
    }

    #[test]
    fn step_breakpoints_and_writes() {
        let mut s = session_with(&PROG);
        let v: Value = serde_json::to_value(s.step(Some(1), false, None).unwrap()).unwrap();
        assert_eq!(v["executed"][0]["asm"], "call 0x0108");
        assert_eq!(v["registers"]["instructionPointer"]["IP"], 0x108);
        let b: Value = serde_json::to_value(
            s.add_breakpoint(None, Some(0x87), Some(0x103), None)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(b["type"], "execution");
        let v: Value = serde_json::to_value(s.run(None, None, &mut |_, _| true).unwrap()).unwrap();
        assert_eq!(v["stop_reason"], "breakpoint");
        assert_eq!(v["breakpoint"], b["id"]);
        s.write_registers(
            RegisterWrite {
                ax: Some(0x4C09),
                ..Default::default()
            },
            None,
        )
        .unwrap();
        s.write_memory(0x973, "90 90 90", None).unwrap();
        let v: Value = serde_json::to_value(s.run(None, None, &mut |_, _| true).unwrap()).unwrap();
        assert_eq!(v["exit_code"], 9);
        assert!(s.remove_breakpoint(99, None).is_err());
        let d = s
            .read_disassembly(Some(0x87), Some(0x100), Some(3), None)
            .unwrap();
        assert_eq!(d.instructions[0].asm, "call 0x0108");
    }

    #[test]
    fn cancellation_keeps_the_machine() {
        // jmp $ (an endless loop)
        let mut s = session_with(&[0xEB, 0xFE]);
        let v: Value =
            serde_json::to_value(s.run(Some(5 << 20), None, &mut |_, _| false).unwrap()).unwrap();
        assert_eq!(v["stop_reason"], "cancelled");
        assert_eq!(v["address"], "0087:0100");
        assert!(s.step(Some(1), false, None).is_ok());
    }

    #[test]
    fn errors_name_the_fix() {
        let mut s = Session::default();
        assert_eq!(s.read_cpu_registers(None).unwrap_err().code, "NO_MACHINE");
        assert_eq!(
            s.load_program(
                Path::new("/nonexistent/X.COM"),
                None,
                Model::I8086,
                false,
                None
            )
            .unwrap_err()
            .code,
            "LOAD_FAILED"
        );
        let mut s = session_with(&PROG);
        assert_eq!(
            s.read_cpu_registers(Some(42)).unwrap_err().code,
            "UNKNOWN_MACHINE"
        );
        assert!(parse_hex("ABC").is_err());
    }

    #[test]
    fn another_clients_machine_answers_like_an_unknown_one() {
        let dir = dir_with("clients", &PROG);
        let prog = dir.join("T.COM");
        let mut all = Clients::default();
        let load = |s: &mut Session| s.load_program(&prog, None, Model::I80186, false, None);
        let a: Value = serde_json::to_value(all.with("a", load).unwrap()).unwrap();
        let ma = a["machine"].as_u64().unwrap();
        let ma_text = ma.to_string();
        assert!((1..1 << 53).contains(&ma), "a minted id: {ma}");
        all.with("b", |s| {
            let list: Value = serde_json::to_value(s.list_machines()).unwrap();
            // No machine, no default: the field is left out, not null.
            assert_eq!(list, serde_json::json!({ "machines": [] }));
            // No default: A's machine is not B's.
            assert_eq!(s.read_cpu_registers(None).unwrap_err().code, "NO_MACHINE");
            // The same answer as for a machine nobody has, with the id swapped.
            let nobody: MachineId = 4_000_000_000;
            let unknown = s.read_cpu_registers(Some(nobody)).unwrap_err();
            let theirs = s.read_cpu_registers(Some(ma)).unwrap_err();
            assert_eq!(
                (unknown.code, theirs.code),
                ("UNKNOWN_MACHINE", "UNKNOWN_MACHINE")
            );
            assert_eq!(
                theirs.message,
                unknown.message.replace(&nobody.to_string(), &ma_text)
            );
            assert_eq!(s.remove_machine(ma).unwrap_err().code, "UNKNOWN_MACHINE");
            assert!(s.run(Some(10), Some(ma), &mut |_, _| true).is_err());
            // B's own machine gets an id of its own, without touching A's.
            let b: Value = serde_json::to_value(load(s).unwrap()).unwrap();
            assert_ne!(b["machine"], ma);
        });
        all.with("a", |s| {
            let list: Value = serde_json::to_value(s.list_machines()).unwrap();
            assert_eq!(list["machines"].as_array().unwrap().len(), 1);
            assert_eq!(
                list["machines"][0]["instructions"], 0,
                "B ran nothing of A's"
            );
        });
        // Each client a share: B fills its own, A can still load.
        all.with("b", |s| {
            while s.machines.len() < MAX_MACHINES_PER_CLIENT {
                load(s).unwrap();
            }
            let e = load(s).unwrap_err();
            assert_eq!(e.code, "TOO_MANY_MACHINES");
            assert!(e.message.contains("one client may hold"), "{}", e.message);
        });
        all.with("a", |s| load(s).unwrap());
        // The global cap holds too, with its own explanation.
        all.with("a", |s| {
            while s.machines.len() + s.room.others() < MAX_MACHINES {
                load(s).unwrap();
            }
        });
        let e = all.with("late", load).unwrap_err();
        assert_eq!(e.code, "TOO_MANY_MACHINES");
        assert!(e.message.contains("of all its clients"), "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_departed_clients_machines_make_room_and_the_answer_says_so() {
        use std::time::{Duration, Instant};
        let dir = dir_with("departed", &PROG);
        let prog = dir.join("T.COM");
        let load = |s: &mut Session| s.load_program(&prog, None, Model::I80186, false, None);
        let t0 = Instant::now();
        let mut all = Clients::default();
        // Clients that load their share and leave fill the global cap.
        let mut c = 0;
        while all.0.total() < MAX_MACHINES {
            all.0.with_at(&format!("gone{c}"), t0, |s| {
                while s.machines.len() < MAX_MACHINES_PER_CLIENT
                    && s.machines.len() + s.room.others() < MAX_MACHINES
                {
                    load(s).unwrap();
                }
            });
            c += 1;
        }
        let at = |m: u64| t0 + Duration::from_secs(m * 60);
        // Minutes later they may be back: nothing is taken from them.
        let e = all.0.with_at("new", at(5), load).unwrap_err();
        assert_eq!(e.code, "TOO_MANY_MACHINES");
        assert!(e.message.contains("idle for 15 min"), "{}", e.message);
        // Past the idle time the first one's machines go, and the answer
        // says so.
        let v: Value = serde_json::to_value(all.0.with_at("new", at(20), load).unwrap()).unwrap();
        assert_eq!(
            v["note"],
            format!(
                "closed {MAX_MACHINES_PER_CLIENT} machines of another client, idle for 20 min, to make room under the plugin's limit"
            )
        );
        assert_eq!(all.0.total(), MAX_MACHINES - MAX_MACHINES_PER_CLIENT + 1);
        // The gone client finds nothing; a later load has no note.
        all.0.with_at("gone0", at(21), |s| {
            assert_eq!(s.read_cpu_registers(None).unwrap_err().code, "NO_MACHINE");
            let v: Value = serde_json::to_value(load(s).unwrap()).unwrap();
            assert!(v.get("note").is_none(), "{v}");
        });
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fresh directory holding `code` as T.COM.
    fn dir_with(name: &str, code: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("x86-inspect-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("T.COM"), code).unwrap();
        dir
    }

    fn load_with(dir: &Path, o: LoadOptions) -> Session {
        let mut s = Session::default();
        s.load(&dir.join("T.COM"), &o).unwrap();
        s
    }

    fn run_json(s: &mut Session, budget: u64) -> Value {
        serde_json::to_value(s.run(Some(budget), None, &mut |_, _| true).unwrap()).unwrap()
    }

    fn console(s: &mut Session) -> Value {
        serde_json::to_value(s.read_console(None, Some(65536), None).unwrap()).unwrap()
    }

    // l: mov dl,'x' ; mov ah,2 ; int 21h ; jmp l
    const PRINT_FOREVER: [u8; 8] = [0xB2, b'x', 0xB4, 2, 0xCD, 0x21, 0xEB, 0xF8];

    /// cat: copies handle 0 to handle 1 with AH=3Fh/40h until a read returns 0.
    const CAT: [u8; 35] = [
        0xB4, 0x3F, 0x31, 0xDB, 0xB9, 0x00, 0x01, 0xBA, 0x00, 0x02, 0xCD, 0x21, 0x09, 0xC0, 0x74,
        0x0E, 0x89, 0xC1, 0xB4, 0x40, 0xBB, 0x01, 0x00, 0xBA, 0x00, 0x02, 0xCD, 0x21, 0xEB, 0xE2,
        0xB8, 0x00, 0x4C, 0xCD, 0x21,
    ];

    #[test]
    fn the_console_keeps_its_tail_and_says_what_it_dropped() {
        let dir = dir_with("forever", &PRINT_FOREVER);
        let mut s = load_with(
            &dir,
            LoadOptions {
                console_kib: Some(1),
                tracking: Some(false),
                ..Default::default()
            },
        );
        let v = run_json(&mut s, 400_000);
        assert_eq!(v["stop_reason"], "budget");
        assert_eq!(v["output"].as_str().unwrap().len(), 1024);
        assert!(
            v["output_note"].as_str().unwrap().contains("dropped"),
            "{v}"
        );
        let c = console(&mut s);
        assert_eq!(c["stdout_bytes"], 100_000);
        assert_eq!(c["stdout_dropped"], 100_000 - 1024);
        assert_eq!(c["stdout"].as_str().unwrap().len(), 1024);
        assert!(
            c["note"]
                .as_str()
                .unwrap()
                .contains("first 98976 of 100000 bytes were dropped")
        );
        let bad = s.load(
            &dir.join("T.COM"),
            &LoadOptions {
                console_kib: Some(0),
                ..Default::default()
            },
        );
        assert_eq!(bad.unwrap_err().code, "INVALID_ARGUMENT");
    }

    #[test]
    fn a_run_stops_itself_at_its_time_limit() {
        let dir = dir_with("timelimit", &PRINT_FOREVER);
        let mut s = load_with(&dir, LoadOptions::default());
        s.run_time_limit = Duration::from_millis(50);
        let v = run_json(&mut s, u64::MAX);
        assert_eq!(v["stop_reason"], "time_limit");
        assert!(v["output_note"].as_str().unwrap().contains("x86_run again"));
        // The machine is intact and runs on.
        assert_eq!(run_json(&mut s, 10)["stop_reason"], "budget");
    }

    #[test]
    fn a_line_read_waits_for_input_and_resumes() {
        // mov dx,110h ; mov ah,0Ah ; int 21h ; mov al,[111h] ; mov ah,4Ch ; int 21h
        let mut code = vec![
            0xBA, 0x10, 0x01, 0xB4, 0x0A, 0xCD, 0x21, 0xA0, 0x11, 0x01, 0xB4, 0x4C, 0xCD, 0x21,
            0x90, 0x90, 10, 0,
        ];
        code.extend([0; 12]);
        let dir = dir_with("waitline", &code);
        let mut s = load_with(&dir, LoadOptions::default());
        let v = run_json(&mut s, 1000);
        assert_eq!(v["stop_reason"], "waiting_for_input");
        assert_eq!(v["address"], "0087:0105");
        assert_eq!(run_json(&mut s, 1000)["stop_reason"], "waiting_for_input");
        s.write_console_input(Some("hel"), None, None).unwrap();
        // No Enter yet: still waiting.
        assert_eq!(run_json(&mut s, 1000)["stop_reason"], "waiting_for_input");
        s.write_console_input(Some("lo world, too long\n"), None, None)
            .unwrap();
        let v = run_json(&mut s, 1000);
        assert_eq!(v["stop_reason"], "exited");
        // The buffer holds 10 bytes: 9 characters and the CR.
        assert_eq!(v["exit_code"], 9);
        assert_eq!(v["output"], "hello wor\r");
        let c = console(&mut s);
        assert!(
            c["int21_calls"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!({"service": "21h/0Ah", "calls": 1})),
            "{c}"
        );
        assert_eq!(c["input"]["pending"], 0);
        assert!(s.write_console_input(None, None, None).is_err());
    }

    #[test]
    fn keyboard_text_reads_as_lines_then_end_of_file() {
        let dir = dir_with("catkbd", &CAT);
        let mut s = load_with(
            &dir,
            LoadOptions {
                stdin: Some("b\r\na\n".into()),
                ..Default::default()
            },
        );
        let v = run_json(&mut s, 10_000);
        assert_eq!(v["stop_reason"], "exited");
        // Each line is echoed as typed, then written back by the program.
        assert_eq!(v["output"], "b\r\nb\r\na\r\na\r\n");
        // With the keyboard left open, the end of the text waits instead.
        let mut s = load_with(
            &dir,
            LoadOptions {
                stdin: Some("x\n".into()),
                stdin_open: Some(true),
                ..Default::default()
            },
        );
        assert_eq!(run_json(&mut s, 10_000)["stop_reason"], "waiting_for_input");
        s.write_console_input(None, Some(true), None).unwrap();
        assert_eq!(run_json(&mut s, 10_000)["stop_reason"], "exited");
    }

    #[test]
    fn redirection_in_the_tail_works_as_command_com() {
        let dir = dir_with("catredir", &CAT);
        std::fs::write(dir.join("IN.TXT"), b"line 1\r\nline 2\r\n").unwrap();
        let mut s = load_with(
            &dir,
            LoadOptions {
                command_tail: Some("< in.txt > out.txt".into()),
                ..Default::default()
            },
        );
        let v = run_json(&mut s, 10_000);
        assert_eq!(v["stop_reason"], "exited");
        assert_eq!(v["output"], "");
        assert_eq!(
            std::fs::read(dir.join("OUT.TXT")).unwrap(),
            b"line 1\r\nline 2\r\n"
        );
        // Appending, and the PSP tail without the redirections.
        let mut s = load_with(
            &dir,
            LoadOptions {
                command_tail: Some("/x <IN.TXT >>OUT.TXT".into()),
                ..Default::default()
            },
        );
        run_json(&mut s, 10_000);
        assert_eq!(std::fs::read(dir.join("OUT.TXT")).unwrap().len(), 32);
        let tail = s.read_memory(0x870 + 0x80, 5, None).unwrap();
        assert_eq!(tail.data, "03202F780D");
        let missing = Session::default()
            .load(
                &dir.join("T.COM"),
                &LoadOptions {
                    command_tail: Some("< NONE.TXT".into()),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(
            missing.message.contains("File not found: NONE.TXT"),
            "{missing:?}"
        );
    }

    #[test]
    fn file_writes_stop_at_the_limit_as_on_a_full_disk() {
        let dir = dir_with("diskfull", &CAT);
        std::fs::write(dir.join("BIG.TXT"), vec![b'z'; 5000]).unwrap();
        let mut s = load_with(
            &dir,
            LoadOptions {
                command_tail: Some("<BIG.TXT >OUT.TXT".into()),
                write_limit_kib: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(run_json(&mut s, 100_000)["stop_reason"], "exited");
        assert_eq!(std::fs::metadata(dir.join("OUT.TXT")).unwrap().len(), 1024);
        let c = console(&mut s);
        assert_eq!(c["files"]["bytes_written"], 1024);
        assert!(c["files"]["disk_full"].as_u64().unwrap() > 0);
        assert!(c["note"].as_str().unwrap().contains("full disk"));
    }

    #[test]
    fn breakpoints_are_bounded() {
        let mut s = session_with(&PROG);
        for i in 0..crate::machine::MAX_BREAKPOINTS as u32 {
            s.add_breakpoint(Some(0x1000 + i), None, None, None)
                .unwrap();
        }
        let e = s.add_breakpoint(Some(0x100), None, None, None).unwrap_err();
        assert_eq!(e.code, "TOO_MANY_BREAKPOINTS");
    }

    /// Every `x86_…` name the plugin's messages and docs tell an agent to
    /// call is a function of the WIT, so renaming a tool cannot leave a
    /// hint pointing at one that no longer exists.
    #[test]
    fn hints_name_only_real_tools() {
        let wit = include_str!("../../../wit/x86-inspect/x86-inspect.wit");
        let mut seen = 0;
        for src in [
            include_str!("tools.rs"),
            include_str!("machine.rs"),
            include_str!("dos/mod.rs"),
            include_str!("dos/console.rs"),
            include_str!("dos/files.rs"),
            include_str!("dos/loader.rs"),
            include_str!("dos/snapshot.rs"),
            include_str!("offers.rs"),
        ] {
            for (i, _) in src.match_indices("x86_") {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                if src[..i].ends_with(word) {
                    continue;
                }
                let name: String = src[i..].chars().take_while(|&c| word(c)).collect();
                if name.len() == 4 {
                    continue; // this test's own prefix literal
                }
                let wit_name = format!("    {}: func", name.replace('_', "-"));
                assert!(
                    wit.contains(&wit_name),
                    "{name} is not a function of the WIT"
                );
                seen += 1;
            }
        }
        assert!(seen >= 30, "only {seen} tool names found");
    }

    /// A PNG's pixels, RGB, row by row.
    fn decode_png(png: &[u8]) -> (usize, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        (info.width as usize, buf)
    }

    // mov ax,13h ; int 10h ; DAC 1 := red through ports 3C8h/3C9h ;
    // ES:DI = A000:0 ; 64000 times: al = di & 1 ; stosb ; int 20h
    const MODE13: [u8; 37] = [
        0xB8, 0x13, 0x00, 0xCD, 0x10, 0xBA, 0xC8, 0x03, 0xB0, 0x01, 0xEE, 0x42, 0xB0, 0x3F, 0xEE,
        0x30, 0xC0, 0xEE, 0xEE, 0xB8, 0x00, 0xA0, 0x8E, 0xC0, 0x31, 0xFF, 0xB9, 0x00, 0xFA, 0x89,
        0xF8, 0x24, 0x01, 0xAA, 0xE2, 0xF9, 0xCD,
    ];

    #[test]
    fn a_program_drawing_in_mode_13h_is_seen_pixel_by_pixel() {
        let mut code = MODE13.to_vec();
        code.push(0x20);
        let mut s = session_with(&code);
        s.run(None, None, &mut |_, _| true).unwrap();
        let shot = s.screenshot(None).unwrap();
        assert_eq!(shot.mode, "13h");
        assert_eq!(shot.text, None);
        let (w, px) = decode_png(&shot.png.unwrap());
        assert_eq!((w, px.len()), (640, 640 * 400 * 3));
        for y in 0..200 {
            for x in 0..320 {
                let at = ((2 * y) * w + 2 * x) * 3;
                let want: [u8; 3] = if x % 2 == 1 { [255, 0, 0] } else { [0, 0, 0] };
                assert_eq!(px[at..at + 3], want, "pixel ({x}, {y})");
            }
        }
        // The palette the program set survives a snapshot.
        let text = s.snapshot(None).unwrap().snapshot;
        let restored = s.restore_machine(&text).unwrap();
        let again = s.screenshot(Some(restored.machine)).unwrap();
        assert_eq!(again.png, s.screenshot(None).unwrap().png);
    }

    // mov ah,0Eh ; mov al,'H' ; int 10h ; mov al,'I' ; int 10h ;
    // mov dx,msg ; mov ah,9 ; int 21h ; es = B800h ;
    // mov word [es:0148h], 4E58h ("X", yellow on red at row 2, column 4) ;
    // int 20h ; msg: "\r\nDOS$"
    const TEXT: [u8; 36] = [
        0xB4, 0x0E, 0xB0, b'H', 0xCD, 0x10, 0xB0, b'I', 0xCD, 0x10, 0xBA, 0x1F, 0x01, 0xB4, 0x09,
        0xCD, 0x21, 0xB8, 0x00, 0xB8, 0x8E, 0xC0, 0x26, 0xC7, 0x06, 0x48, 0x01, 0x58, 0x4E, 0xCD,
        0x20, b'\r', b'\n', b'D', b'O', b'S',
    ];

    #[test]
    fn a_program_writing_text_is_seen_as_text_and_as_a_picture() {
        let mut code = TEXT.to_vec();
        code.push(b'$');
        let mut s = session_with(&code);
        s.run(None, None, &mut |_, _| true).unwrap();
        let shot = s.screenshot(None).unwrap();
        assert_eq!(
            (shot.mode.as_str(), shot.description.as_str()),
            ("03h", "80x25 text")
        );
        // BIOS teletype, then DOS console output, then a direct write.
        assert_eq!(shot.text.as_deref(), Some("HI\nDOS\n    X"));
        assert_eq!(shot.cursor.as_deref(), Some("row 1, column 3"));
        let (w, px) = decode_png(&shot.png.unwrap());
        let at = |x: usize, y: usize| &px[(y * w + x) * 3..(y * w + x) * 3 + 3];
        // Row 2, column 4: red background at the cell's last line.
        assert_eq!(at(4 * 8, 2 * 16 + 15), [170, 0, 0]);
        // Row 0, column 0: "H" in light grey on black.
        let lit = (0..8)
            .flat_map(|x| (0..16).map(move |y| (x, y)))
            .filter(|&(x, y)| at(x, y) == [170, 170, 170])
            .count();
        assert!(lit > 10, "{lit}");
    }

    #[test]
    fn a_format_1_snapshot_restores_with_the_text_palette() {
        let mut s = session_with(&PROG);
        let text = s.snapshot(None).unwrap().snapshot;
        let (_, payload) = plugin_kit::blob::open(
            *b"X86S",
            crate::machine::SNAPSHOT_VERSION,
            usize::MAX,
            &text,
        )
        .unwrap();
        // Format 1 ended before the display ports (768 palette bytes and 5
        // more, and format 3's keyboard controller, 2) and format 3's
        // breakpoint kinds (a count, here 0).
        let old = plugin_kit::blob::seal(*b"X86S", 1, &payload[..payload.len() - 775 - 2]);
        let restored = s.restore_machine(&old).unwrap();
        let m = s.machine(Some(restored.machine)).unwrap();
        assert_eq!(*m.cpu.io, crate::ports::Ports::default());
    }

    #[test]
    fn stack_vectors_and_memory_search_in_spice86_shapes() {
        let mut s = session_with(&PROG);
        let cs = s.machine(None).unwrap().cpu.sregs[cpu::CS];
        // A .COM starts with a zero word on its stack (RET to PSP:0000).
        let stack = s.read_stack(Some(2), None).unwrap();
        assert_eq!(stack.top, format!("{cs:04X}:FFFE"));
        assert_eq!(
            (stack.words[0].address.as_str(), stack.words[0].value),
            (stack.top.as_str(), 0)
        );
        assert_eq!(
            s.read_stack(Some(0), None).unwrap_err().code,
            "INVALID_ARGUMENT"
        );
        // INT 21h is DOS's until the program takes it over.
        let v = s.read_interrupt_vector(0x21, None).unwrap();
        assert!(v.handler.starts_with("native"), "{v:?}");
        s.write_memory(0x21 * 4, "34120010", None).unwrap();
        let v = s.read_interrupt_vector(0x21, None).unwrap();
        assert_eq!(
            (v.address.as_str(), v.handler),
            ("1000:1234", "installed by the program")
        );
        assert_eq!(
            s.read_interrupt_vector(256, None).unwrap_err().code,
            "INVALID_ARGUMENT"
        );
        // Both INT 21h instructions of the program, in its segment.
        let q = |pattern: Option<&str>, text: Option<&str>| MemorySearch {
            pattern: pattern.map(str::to_owned),
            text: text.map(str::to_owned),
            start_segment: Some(cs),
            start_offset: Some(0x100),
            length: Some(0x20),
            limit: None,
        };
        let found = s.search_memory(&q(Some("CD 21"), None), None).unwrap();
        assert_eq!(found.pattern, "CD21");
        assert_eq!(
            found.matches,
            [format!("{cs:04X}:0106"), format!("{cs:04X}:010C")]
        );
        let limited = s
            .search_memory(
                &MemorySearch {
                    limit: Some(1),
                    ..q(Some("CD21"), None)
                },
                None,
            )
            .unwrap();
        assert_eq!((limited.matches.len(), limited.more), (1, 1));
        let text = s.search_memory(&q(None, Some("A")), None).unwrap();
        assert_eq!(text.matches, [format!("{cs:04X}:0109")]);
        for bad in [q(None, None), q(Some("C"), None), q(Some("CD"), Some("x"))] {
            assert_eq!(
                s.search_memory(&bad, None).unwrap_err().code,
                "INVALID_ARGUMENT"
            );
        }
    }

    #[test]
    fn stepping_over_a_call_runs_it_to_its_return() {
        let mut s = session_with(&PROG);
        let cs = s.machine(None).unwrap().cpu.sregs[cpu::CS];
        // call f: the call, f's three instructions and its ret.
        let over = s.step(Some(1), true, None).unwrap();
        assert_eq!(over.run.stop_reason, StopReason::Budget);
        assert_eq!(over.run.instructions, 5);
        assert_eq!(over.run.address, format!("{cs:04X}:0103"));
        assert_eq!(over.run.output, "A");
        assert_eq!(over.executed.len(), 1, "one step: the call");
        // Anything but a call is one instruction.
        let next = s.step(Some(1), true, None).unwrap();
        assert_eq!(next.run.instructions, 1);
        // A breakpoint inside the call stops the step there.
        let mut s = session_with(&PROG);
        let inside = Cpu::lin(cs, 0x10A);
        s.add_breakpoint(Some(inside), None, None, None).unwrap();
        let stopped = s.step(Some(1), true, None).unwrap();
        assert!(matches!(stopped.run.stop_reason, StopReason::Breakpoint(_)));
        assert_eq!(stopped.run.address, format!("{cs:04X}:010A"));
        // The step's own return breakpoint is gone: only the user's is listed.
        assert_eq!(s.list_breakpoints(None).unwrap().breakpoints.len(), 1);
    }

    // mov cx,5 ; l: mov [0200h],cx ; in al,60h ; dec cx ; jnz l ;
    // mov ah,4Ch ; int 21h
    const LOOP: [u8; 16] = [
        0xB9, 5, 0, 0x89, 0x0E, 0x00, 0x02, 0xE4, 0x60, 0x49, 0x75, 0xF7, 0xB4, 0x4C, 0xCD, 0x21,
    ];

    fn spec(
        kind: BreakpointKind,
        address: u32,
        length: u32,
        condition: Option<&str>,
    ) -> BreakpointSpec {
        BreakpointSpec {
            address: Some(address),
            kind: Some(kind),
            length: Some(length),
            condition: condition.map(str::to_owned),
            ..Default::default()
        }
    }

    /// Issue 37: memory and I/O breakpoints over ranges, and conditions,
    /// in Spice86's shapes; with tracking on and off, and through a
    /// snapshot.
    #[test]
    fn access_and_conditional_breakpoints_stop_where_they_say() {
        for tracking in [true, false] {
            let mut s = session_with(&LOOP);
            if !tracking {
                let path = s.machines[0].program.path.clone();
                s.load_program(&path, None, Model::I80186, false, None)
                    .unwrap();
            }
            let ds = s.machine(None).unwrap().cpu.sregs[crate::cpu::DS];
            let cell = Cpu::lin(ds, 0x0200);
            // A write to the word at DS:0200, only once CX is 2.
            let w = s
                .add_breakpoint_spec(
                    &spec(BreakpointKind::MemoryWrite, cell, 2, Some("cx == 2")),
                    None,
                )
                .unwrap();
            let v = run_json(&mut s, 1_000_000);
            assert_eq!(v["stop_reason"], "breakpoint", "{v}");
            assert_eq!(v["breakpoint"], w.breakpoint.id);
            assert_eq!(v["hit"], format!("memory write at {cell:#07X}"));
            // Stopped after the MOV: at the IN, with the word written.
            assert!(v["address"].as_str().unwrap().ends_with(":0107"), "{v}");
            let m = s.machine(None).unwrap();
            assert_eq!(
                (m.cpu.regs[crate::cpu::CX], m.cpu.read_word(ds, 0x200)),
                (2, 2)
            );
            // The port read stops after the IN; reads of code (fetches) never do.
            s.remove_breakpoint(w.breakpoint.id, None).unwrap();
            let code = Cpu::lin(s.machine(None).unwrap().cpu.sregs[crate::cpu::CS], 0x0100);
            s.add_breakpoint_spec(&spec(BreakpointKind::MemoryRead, code, 16, None), None)
                .unwrap();
            let io = s
                .add_breakpoint_spec(&spec(BreakpointKind::IoRead, 0x60, 1, None), None)
                .unwrap();
            let v = run_json(&mut s, 1_000_000);
            assert_eq!(v["breakpoint"], io.breakpoint.id, "{v}");
            assert_eq!(v["hit"], "port 0x0060 read (IN)");
            assert!(v["address"].as_str().unwrap().ends_with(":0109"), "{v}");
            // A conditional execution breakpoint passes while false.
            s.remove_breakpoint(io.breakpoint.id, None).unwrap();
            let e = s
                .add_breakpoint_spec(
                    &BreakpointSpec {
                        address: Some(code + 9),
                        condition: Some("cx == 1 && zf == 0".into()),
                        ..Default::default()
                    },
                    None,
                )
                .unwrap();
            let v = run_json(&mut s, 1_000_000);
            assert_eq!(v["breakpoint"], e.breakpoint.id, "{v}");
            assert_eq!(s.machine(None).unwrap().cpu.regs[crate::cpu::CX], 1);
            // A snapshot keeps kinds, ranges and conditions.
            let listed = serde_json::to_value(s.list_breakpoints(None).unwrap()).unwrap();
            let text = s.snapshot(None).unwrap().snapshot;
            let restored = s.restore_machine(&text).unwrap();
            let again =
                serde_json::to_value(s.list_breakpoints(Some(restored.machine)).unwrap()).unwrap();
            assert_eq!(listed["breakpoints"], again["breakpoints"]);
            assert_eq!(again["breakpoints"][0]["type"], "memory_read");
            assert_eq!(again["breakpoints"][0]["length"], 16);
            assert_eq!(again["breakpoints"][1]["condition"], "cx == 1 && zf == 0");
            let v = run_json(&mut s, 1_000_000);
            assert_eq!(v["stop_reason"], "exited", "{v}");
        }
    }

    #[test]
    fn breakpoint_arguments_are_checked() {
        let mut s = session_with(&LOOP);
        for (bad, says) in [
            (
                spec(BreakpointKind::IoWrite, 0x10000, 1, None),
                "beyond 0xFFFF",
            ),
            (
                spec(BreakpointKind::MemoryWrite, 0xFFFFF, 2, None),
                "passes 0xFFFFF",
            ),
            (
                spec(BreakpointKind::Execution, 0x100, 4, None),
                "only memory and I/O",
            ),
            (
                spec(BreakpointKind::MemoryRead, 0x100, 0, None),
                "length is 1 or more",
            ),
            (
                spec(BreakpointKind::MemoryRead, 0x100, 1, Some("ax ==")),
                "condition refused",
            ),
        ] {
            let e = s.add_breakpoint_spec(&bad, None).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
        }
        let e = s
            .add_breakpoint_spec(
                &BreakpointSpec {
                    segment: Some(0),
                    offset: Some(0x60),
                    kind: Some(BreakpointKind::IoRead),
                    ..Default::default()
                },
                None,
            )
            .unwrap_err();
        assert!(e.message.contains("port number"), "{}", e.message);
    }

    /// Issue 37: the DOS state a debugger shows: PSP, command tail,
    /// memory, handles (a redirected standard output is a file).
    #[test]
    fn dos_state_shows_the_psp_memory_and_open_handles() {
        let dir = std::env::temp_dir().join(format!("x86-dos-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("S.COM");
        std::fs::write(&p, PROG).unwrap();
        let mut s = Session::default();
        s.load_program(&p, Some("fast > OUT.TXT"), Model::I80186, false, None)
            .unwrap();
        let cs = s.machine(None).unwrap().cpu.sregs[crate::cpu::CS];
        s.run(None, None, &mut |_, _| true).unwrap();
        let v = serde_json::to_value(s.read_dos_state(None).unwrap()).unwrap();
        assert_eq!(v["psp"], format!("{cs:04X}"), "a COM runs in its PSP: {v}");
        assert!(v["command_tail"].as_str().unwrap().contains("fast"), "{v}");
        assert_eq!(v["memory_blocks"][0]["segment"], format!("{cs:04X}"), "{v}");
        assert!(v["free_paragraphs"].as_u64().unwrap() < 0xA000, "{v}");
        let out = &v["handles"][1];
        assert_eq!(
            (
                out["kind"].clone(),
                out["position"].clone(),
                out["size"].clone()
            ),
            (
                serde_json::json!("file"),
                serde_json::json!(1),
                serde_json::json!(1)
            ),
            "{v}"
        );
        assert_eq!(v["handles"][0]["kind"], "stdin");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Issue 37: keys a program reads by scan code. A program waiting at
    /// INT 16h for the up arrow (AH = 48h, AL = 0) is driven by the named
    /// key, and letters carry their own scan codes.
    #[test]
    fn named_keys_reach_int_16h_with_their_scan_codes() {
        // l: mov ah,0 ; int 16h ; cmp ax,4800h ; jne l ; mov ah,0 ;
        // int 16h ; mov dl,ah ; mov ah,2 ; int 21h ; mov ax,4c00h ; int 21h
        let prog = [
            0xB4, 0x00, 0xCD, 0x16, 0x3D, 0x00, 0x48, 0x75, 0xF7, 0xB4, 0x00, 0xCD, 0x16, 0x88,
            0xE2, 0xB4, 0x02, 0xCD, 0x21, 0xB8, 0x00, 0x4C, 0xCD, 0x21,
        ];
        let mut s = session_with(&prog);
        let v = run_json(&mut s, 10_000);
        assert_eq!(v["stop_reason"], "waiting_for_input", "{v}");
        // Keys that are not the arrow are read and passed over.
        s.write_console_keys(Some("x"), &["down".into(), "up".into()], None, None)
            .unwrap();
        let v = run_json(&mut s, 10_000);
        assert_eq!(v["stop_reason"], "waiting_for_input", "{v}");
        // 'q' is scan code 10h: the program prints it as a character.
        s.write_console_keys(Some("q"), &[], None, None).unwrap();
        let v = run_json(&mut s, 10_000);
        assert_eq!(v["stop_reason"], "exited", "{v}");
        assert_eq!(v["output"], "\u{10}");
        let e = s
            .write_console_keys(None, &["hyper".into()], None, None)
            .unwrap_err();
        assert!(e.message.contains("f1 to f12"), "{}", e.message);
        assert_eq!(crate::dos::named_key("F10"), Some(vec![0, 0x44]));
    }

    /// Issue 37: a program reading the keyboard controller (port 60h),
    /// polling or from its own INT 9 handler, gets typed keys as make and
    /// break scan codes; one polling with nothing typed waits for input.
    #[test]
    fn keys_reach_port_60h_and_an_int_9_handler() {
        // l: in al,64h ; test al,1 ; jz l ; in al,60h ; cmp al,1 ; jne l ;
        // mov ax,4C00h ; int 21h
        let poll = [
            0xE4, 0x64, 0xA8, 0x01, 0x74, 0xFA, 0xE4, 0x60, 0x3C, 0x01, 0x75, 0xF4, 0xB8, 0x00,
            0x4C, 0xCD, 0x21,
        ];
        let mut s = session_with(&poll);
        let v = run_json(&mut s, 50_000_000);
        assert_eq!(v["stop_reason"], "waiting_for_input", "{v}");
        s.write_console_keys(Some("x"), &["esc".into()], None, None)
            .unwrap();
        let v = run_json(&mut s, 50_000_000);
        assert_eq!(v["stop_reason"], "exited", "{v}");
        assert_eq!(
            s.machine(None).unwrap().cpu.io.kbd_data,
            0x01,
            "Esc's make code"
        );

        // The same through the program's own IRQ 1 handler: it sets a flag
        // on Esc's make code, acknowledges the PIC and returns.
        let hook = [
            0xFA, 0x31, 0xC0, 0x8E, 0xC0, 0x26, 0xC7, 0x06, 0x24, 0x00, 0x1E, 0x01, 0x26, 0x8C,
            0x0E, 0x26, 0x00, 0xFB, 0x80, 0x3E, 0x30, 0x01, 0x01, 0x75, 0xF9, 0xB8, 0x00, 0x4C,
            0xCD, 0x21, // handler at 011Eh
            0x50, 0xE4, 0x60, 0x3C, 0x01, 0x75, 0x05, 0xC6, 0x06, 0x30, 0x01, 0x01, 0xB0, 0x20,
            0xE6, 0x20, 0x58, 0xCF, // the flag at 0130h
            0x00,
        ];
        let mut s = session_with(&hook);
        s.write_console_keys(Some("ab"), &["esc".into()], None, None)
            .unwrap();
        let v = run_json(&mut s, 50_000_000);
        assert_eq!(v["stop_reason"], "exited", "{v}");
        let m = s.machine(None).unwrap();
        assert_eq!(m.dos.input.pending(), 0, "every key was delivered");
        // A snapshot carries the keyboard controller.
        let text = s.snapshot(None).unwrap().snapshot;
        let r = s.restore_machine(&text).unwrap();
        assert_eq!(s.machine(Some(r.machine)).unwrap().cpu.io.kbd_data, 0x01);
    }
}
