//! The MCP tools as plain Rust: sessions of emulated machines, and one
//! method per tool returning its document ([`crate::results`], the spec's
//! JSON shape) or a coded error. The wit-bindgen glue in `component.rs`
//! only converts arguments and results.

use crate::cart::{self, Header, Start, StartKind};
use crate::cpu::CpuState;
use crate::diagnose::{describe_diagnosis, instruction_at};
use crate::disasm::{Instr, disassemble, disassemble_range};
use crate::machine::{Limits, Machine, RunResult, StopReason, StopWhen, TRACE_MAX};
use crate::memory::{Memory, Region};
use crate::results::*;
use crate::rom::{self, Image};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod load;
mod screen;
pub use load::LoadOptions;

/// At most this many sessions at once, of all clients (each holds about
/// 330 KiB).
pub const MAX_SESSIONS: usize = 64;
/// At most this many sessions per client, so one client filling its share
/// leaves room for others. Not lower: one client stepping through a set of
/// 20 test programs keeps a session per program. The global cap stays at 64
/// because a session with a full trace buffer holds about 4 MiB.
pub const MAX_SESSIONS_PER_CLIENT: usize = 24;
/// Default `cp1600_run` budget (spec) and `cp1600_run_until` budget.
pub const RUN_DEFAULT_CYCLES: u64 = 10_000;
/// Default `cp1600_run_until` budget: large, as a condition usually stops it first.
pub const RUN_UNTIL_DEFAULT_CYCLES: u64 = 100_000_000;
/// Output bounds.
pub const DISASM_DEFAULT_SPAN: u16 = 16;
/// Most instructions one disassembly returns; the note says where to go on.
pub const DISASM_MAX: usize = 256;
/// Words `cp1600_examine_memory` reads by default.
pub const MEMORY_DEFAULT_COUNT: u32 = 16;
/// Most words one memory read returns (tool and resource).
pub const MEMORY_MAX: u32 = 1024;
/// Trace entries `cp1600_get_trace` returns by default.
pub const TRACE_DEFAULT_COUNT: u32 = 32;
/// Most trace entries per call: each is under 200 bytes of JSON, so a page
/// stays far below the host's 8 MiB result limit (the whole 65536-entry
/// buffer did not).
pub const TRACE_PAGE_MAX: u32 = 4096;
/// A single call stops by itself after this long (reason `time_limit`), so
/// the host's call deadline never traps the plugin and loses every session.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(10);

pub use plugin_kit::ToolError;

/// A tool's document, or the coded error an agent can branch on.
pub type ToolResult<T> = Result<T, ToolError>;

/// Progress callback the glue supplies: `(done, total, message) -> keep going`.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64, &str) -> bool;

struct RomInfo {
    path: String,
    format: &'static str,
    bytes: usize,
    segments: Vec<(u16, u16)>,
    /// An EXEC image is mapped at $1000 (reset then runs it).
    exec: bool,
}

struct Session {
    created_at: String,
    machine: Machine,
    rom: Option<RomInfo>,
    /// Extra RAM the image asked for, re-mapped on reset.
    image_ram: Vec<(u16, u16, Region)>,
    /// Where and with which registers the program starts (load and reset).
    start: Start,
    /// Code or data was written with `cp1600_write_memory`, so running
    /// without a ROM is deliberate.
    poked: bool,
    /// Counts the calls that wrote memory (load, reset, write_memory), so
    /// a change that leaves the registers alone is still seen by [`Look`].
    edits: u64,
}

impl Session {
    /// A session as a snapshot saved it, created at `created_at`.
    fn from_saved(v: crate::snapshot::Saved, created_at: String) -> Self {
        Session {
            created_at,
            machine: v.machine,
            rom: v.rom.map(|r| RomInfo {
                path: r.path,
                format: r.format,
                bytes: r.bytes,
                segments: r.segments,
                exec: r.exec,
            }),
            image_ram: v.image_ram,
            start: v.start,
            poked: v.poked,
            edits: 0,
        }
    }

    fn status(&self) -> SessionStatus {
        let st = &self.machine.cpu.st;
        if st.halted {
            SessionStatus::Halted
        } else if st.instructions == 0 {
            SessionStatus::Idle
        } else {
            SessionStatus::Running
        }
    }
}

/// A session as its resources show it, cheap to take and compare: the
/// CPU state (plus pending interrupt, memory edits and whether a ROM is
/// loaded) for `…/state`, memory and disassembly; the trace's settings,
/// length and newest entry for `…/trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// CPU state, pending interrupt, memory edits and whether a ROM is loaded.
    pub state: (CpuState, bool, u64, bool),
    /// Tracing on, capacity, length and the newest entry's step.
    pub trace: (bool, usize, usize, Option<u64>),
}

/// The sessions of one client (`benchtop:host/caller.id`): its own ids,
/// its own active session. Other clients' sessions are not in here, so they
/// answer exactly like unknown ones.
#[derive(Default)]
pub struct Sessions {
    sessions: BTreeMap<String, Session>,
    active: Option<String>,
    /// What this call may know of the other clients, for the global cap.
    room: plugin_kit::clients::Room,
}

impl plugin_kit::clients::Holdings for Sessions {
    fn held(&self) -> usize {
        self.sessions.len()
    }
    fn room(&mut self) -> &mut plugin_kit::clients::Room {
        &mut self.room
    }
}

/// Every session of the plugin instance, by client.
#[derive(Default)]
pub struct Clients(plugin_kit::clients::PerClient<Sessions>);

impl Clients {
    /// No client has sessions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the sessions of `caller`.
    pub fn with<R>(&mut self, caller: &str, f: impl FnOnce(&mut Sessions) -> R) -> R {
        self.0.with(caller, f)
    }
}

fn now_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// RFC 3339 UTC timestamp for a Unix time in milliseconds.
pub fn rfc3339(millis: u128) -> String {
    let secs = (millis / 1000) as i64;
    format!(
        "{}Z",
        plugin_kit::civil::DateTime::from_unix_secs(secs).iso_seconds()
    )
}

/// Compact flags for trace lines: `SZOCI`, `-` for a clear flag, `D` when
/// SDBD is pending.
fn flags_compact(st: &CpuState) -> String {
    let mut s = String::with_capacity(6);
    for (on, ch) in [
        (st.s, 'S'),
        (st.z, 'Z'),
        (st.ov, 'O'),
        (st.c, 'C'),
        (st.i, 'I'),
    ] {
        s.push(if on { ch } else { '-' });
    }
    if st.d {
        s.push('D');
    }
    s
}

fn instr_info(ins: &Instr) -> InstrInfo {
    InstrInfo {
        address: ins.address,
        opcode: ins.mnemonic,
        operands: ins.operands.clone(),
        raw: ins.words[0],
        size: ins.len,
    }
}

/// Parses `R0`–`R7` (also `PC` = R7, `SP` = R6).
pub fn parse_register(name: &str) -> Result<usize, ToolError> {
    let n = name.trim().to_ascii_uppercase();
    match n.as_str() {
        "PC" => Ok(7),
        "SP" => Ok(6),
        _ => n
            .strip_prefix('R')
            .and_then(|d| d.parse::<usize>().ok())
            .filter(|d| *d < 8)
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "unknown register `{name}`; use R0 to R7 (or PC, SP)"
                ))
            }),
    }
}

/// Condition set for `run_until`.
#[derive(Default, Clone)]
pub struct UntilOptions {
    /// Stop when the PC reaches this address.
    pub pc: Option<u16>,
    /// Register to watch (R0-R7, PC, SP), with `register_value`.
    pub register: Option<String>,
    /// The value that stops the run.
    pub register_value: Option<u16>,
    /// Memory word to watch, with `memory_value`.
    pub address: Option<u16>,
    /// The value that stops the run.
    pub memory_value: Option<u16>,
    /// Stop at breakpoints (default true).
    pub stop_on_breakpoint: Option<bool>,
    /// Cycle budget (default [`RUN_UNTIL_DEFAULT_CYCLES`]).
    pub max_cycles: Option<u64>,
    /// Stop on the checks (default true): see `Machine::run`.
    pub checks: Option<bool>,
}

/// New register and flag values for `write_registers`; `None` keeps one.
#[derive(Default, Clone)]
pub struct RegisterWrite {
    /// New R0-R7.
    pub r: [Option<u16>; 8],
    /// New sign flag.
    pub s: Option<bool>,
    /// New zero flag.
    pub z: Option<bool>,
    /// New overflow flag.
    pub ov: Option<bool>,
    /// New carry flag.
    pub c: Option<bool>,
    /// New interrupt enable.
    pub i: Option<bool>,
    /// New halted state (false resumes after HLT).
    pub halted: Option<bool>,
}

impl Sessions {
    /// A client with no sessions.
    pub fn new() -> Self {
        Self::default()
    }

    fn resolve_id(&self, session_id: Option<&str>) -> Result<String, ToolError> {
        match session_id.filter(|s| !s.is_empty()) {
            Some(id) => {
                if self.sessions.contains_key(id) {
                    Ok(id.to_string())
                } else {
                    let known: Vec<&str> = self.sessions.keys().map(String::as_str).collect();
                    Err(ToolError::new(
                        "SESSION_NOT_FOUND",
                        format!(
                            "Session not found: {}. Existing sessions: [{}]; create one with cp1600_create_session",
                            plugin_kit::text::clip(id),
                            known.join(", ")
                        ),
                    ))
                }
            }
            None => self.active.clone().ok_or_else(|| {
                ToolError::new(
                    "SESSION_NOT_FOUND",
                    "no session_id given and no active session; call cp1600_create_session first",
                )
            }),
        }
    }

    fn get(&mut self, session_id: Option<&str>) -> Result<(String, &mut Session), ToolError> {
        let id = self.resolve_id(session_id)?;
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| ToolError::new("SESSION_NOT_FOUND", id.clone()))?;
        Ok((id, s))
    }

    fn runnable(&mut self, session_id: Option<&str>) -> Result<(String, &mut Session), ToolError> {
        let (id, s) = self.get(session_id)?;
        if s.rom.is_none() && !s.poked {
            return Err(ToolError::new(
                "NO_ROM_LOADED",
                format!(
                    "session {id} has no program; call cp1600_load_rom first (or write code with cp1600_write_memory)"
                ),
            ));
        }
        Ok((id, s))
    }

    /// `cp1600_create_session`: a session at $5000 with no ROM, made active; refused past the per-client or global cap (closing a departed client's idle sessions to make room first).
    pub fn create_session(&mut self, session_id: Option<&str>) -> ToolResult<SessionCreated> {
        self.create_session_from(session_id, None)
    }

    /// `cp1600_create_session` with its `snapshot`: the new session is the
    /// one `cp1600_snapshot` saved (checked before any session is made).
    pub fn create_session_from(
        &mut self,
        session_id: Option<&str>,
        snapshot: Option<&str>,
    ) -> ToolResult<SessionCreated> {
        use plugin_kit::clients::{Full, hex64, mint};
        let saved = match snapshot {
            Some(text) => Some(crate::snapshot::decode(text).map_err(|e| {
                ToolError::new(
                    "INVALID_SNAPSHOT",
                    format!(
                        "snapshot refused: {e}; pass the `snapshot` text of a cp1600_snapshot result unchanged"
                    ),
                )
            })?),
            None => None,
        };
        let freed = match self.room.admit(
            self.sessions.len(),
            MAX_SESSIONS_PER_CLIENT,
            MAX_SESSIONS,
        ) {
            Ok(freed) => freed,
            Err(Full::Mine { share }) => {
                return Err(ToolError::new(
                    "SESSION_LIMIT",
                    format!(
                        "you have {share} sessions, the most one client may hold; destroy one with cp1600_destroy_session first"
                    ),
                ));
            }
            Err(Full::Everyone { cap }) => {
                return Err(ToolError::new(
                    "SESSION_LIMIT",
                    format!(
                        "the plugin holds {cap} sessions of all its clients, its limit, and none has been idle for {} min; destroy one of yours with cp1600_destroy_session, or retry later",
                        plugin_kit::clients::IDLE_AFTER.as_secs() / 60
                    ),
                ));
            }
            Err(Full::Anonymous) => {
                return Err(ToolError::new(
                    "UNIDENTIFIED_CLIENT",
                    plugin_kit::clients::ANONYMOUS_HELP,
                ));
            }
        };
        let millis = now_millis();
        let id = match session_id.map(str::trim).filter(|s| !s.is_empty()) {
            Some(id) => {
                if id.len() > 64
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                {
                    return Err(ToolError::invalid(
                        "session_id must be 1-64 characters of letters, digits, `_`, `-` or `.`",
                    ));
                }
                if self.sessions.contains_key(id) {
                    return Err(ToolError::new(
                        "SESSION_EXISTS",
                        format!("session {id} already exists; pick another id or destroy it first"),
                    ));
                }
                id.to_string()
            }
            // 64 random bits: a handle no other client can guess.
            None => mint(
                |n| format!("session_{}", hex64(n)),
                |id| self.sessions.contains_key(id),
            )
            .map_err(|e| {
                ToolError::invalid(format!(
                    "cannot mint a session id ({e}); pass session_id yourself"
                ))
            })?,
        };
        let session = match saved {
            None => {
                let mut machine = Machine::new();
                machine.cpu.reset_to(0x5000);
                Session {
                    created_at: rfc3339(millis),
                    machine,
                    rom: None,
                    image_ram: vec![],
                    start: Start::plain(0x5000),
                    poked: false,
                    edits: 0,
                }
            }
            Some(v) => Session::from_saved(v, rfc3339(millis)),
        };
        let restored = snapshot.is_some().then(|| {
            let m = &session.machine;
            Restored {
                pc: m.cpu.st.r[7],
                cycles: m.cpu.st.cycles,
                instructions: m.cpu.st.instructions,
                breakpoints: m.breakpoints().len() as u32,
                rom_path: session.rom.as_ref().map(|r| r.path.clone()),
            }
        });
        self.sessions.insert(id.clone(), session);
        self.active = Some(id.clone());
        Ok(SessionCreated {
            session_id: id,
            status: "created",
            active: true,
            note: freed.map(|f| f.note("session")),
            restored,
        })
    }

    /// `cp1600_snapshot`: the session's whole state as one base64 blob
    /// (layout in [`crate::snapshot`]) that `cp1600_create_session` takes back.
    pub fn snapshot(&mut self, session_id: Option<&str>) -> ToolResult<SnapshotTaken> {
        let (id, s) = self.get(session_id)?;
        let saved = crate::snapshot::Saved {
            machine: s.machine.clone(),
            rom: s.rom.as_ref().map(|r| crate::snapshot::SavedRom {
                path: r.path.clone(),
                format: r.format,
                bytes: r.bytes,
                segments: r.segments.clone(),
                exec: r.exec,
            }),
            image_ram: s.image_ram.clone(),
            start: s.start,
            poked: s.poked,
        };
        let text = crate::snapshot::encode(&saved);
        let st = &s.machine.cpu.st;
        Ok(SnapshotTaken {
            session_id: id,
            format_version: crate::snapshot::VERSION,
            bytes: text.len() as u32,
            pc: st.r[7],
            cycles: st.cycles,
            snapshot: text,
        })
    }

    /// The whole state of session `id` as snapshot text, for the state
    /// store replicas share (`benchtop:host/durable-state.save`); `None`
    /// when this client holds no such session.
    pub fn save_durable(&mut self, id: &str) -> Option<String> {
        if !self.sessions.contains_key(id) {
            return None;
        }
        self.snapshot(Some(id)).ok().map(|s| s.snapshot)
    }

    /// Makes snapshot `text` this client's session `id`, replacing the copy
    /// held here (its creation time kept), or taking a place under the caps
    /// when there is none (`benchtop:host/durable-state.restore`).
    pub fn restore_durable(&mut self, id: &str, text: &str) -> Result<(), String> {
        let saved = crate::snapshot::decode(text)?;
        let created_at = match self.sessions.get(id) {
            Some(held) => held.created_at.clone(),
            None => {
                self.room
                    .admit(self.sessions.len(), MAX_SESSIONS_PER_CLIENT, MAX_SESSIONS)
                    .map_err(|full| format!("no room for the session here: {full:?}"))?;
                rfc3339(now_millis())
            }
        };
        self.sessions
            .insert(id.to_owned(), Session::from_saved(saved, created_at));
        if self.active.is_none() {
            self.active = Some(id.to_owned());
        }
        Ok(())
    }

    /// Drops this client's copy of session `id`, if held
    /// (`benchtop:host/durable-state.forget`).
    pub fn forget(&mut self, id: &str) {
        self.sessions.remove(id);
        if self.active.as_deref() == Some(id) {
            self.active = None;
        }
    }

    /// `cp1600_list_sessions`: this client's sessions with their ROM and
    /// CPU status, by id.
    pub fn list_sessions(&self) -> ToolResult<SessionList> {
        let sessions = self
            .sessions
            .iter()
            .map(|(id, s)| SessionInfo {
                session_id: id.clone(),
                created_at: s.created_at.clone(),
                rom_loaded: s.rom.is_some(),
                rom_path: s.rom.as_ref().map(|r| r.path.clone()),
                rom_format: s.rom.as_ref().map(|r| r.format),
                state: s.status(),
                active: self.active.as_deref() == Some(id.as_str()),
            })
            .collect();
        Ok(SessionList { sessions })
    }

    /// `cp1600_switch_session`: the session used when an id is omitted.
    pub fn switch_session(&mut self, session_id: &str) -> ToolResult<SessionSwitched> {
        let id = self.resolve_id(Some(session_id))?;
        self.active = Some(id.clone());
        Ok(SessionSwitched {
            session_id: id,
            status: "active",
        })
    }

    /// `cp1600_destroy_session`; the active session is unset when it was this one.
    pub fn destroy_session(&mut self, session_id: &str) -> ToolResult<SessionDestroyed> {
        let id = self.resolve_id(Some(session_id))?;
        self.sessions.remove(&id);
        if self.active.as_deref() == Some(id.as_str()) {
            self.active = None;
        }
        Ok(SessionDestroyed {
            session_id: id,
            status: "destroyed",
            active_session: self.active.clone(),
        })
    }

    fn run_with(
        s: &mut Session,
        limits: Limits,
        when: &StopWhen,
        total: u64,
        unit: &str,
        progress: Progress,
    ) -> RunResult {
        let started = Instant::now();
        let mut timed_out = false;
        let mut report = |done: u64, cycles: u64| {
            if started.elapsed() > CALL_TIME_LIMIT {
                timed_out = true;
                return false;
            }
            let d = if unit == "cycles" { cycles } else { done };
            progress(d, total, &format!("{done} instructions, {cycles} cycles"))
        };
        let mut r = s.machine.run(limits, when, &mut report);
        if timed_out && r.reason == StopReason::Cancelled {
            r.reason = StopReason::TimeLimit;
        }
        r
    }

    /// `cp1600_step`: `count` instructions, ignoring breakpoints, stopping early at HLT or a check.
    pub fn step(
        &mut self,
        session_id: Option<&str>,
        count: Option<u64>,
        checks: Option<bool>,
        progress: Progress,
    ) -> ToolResult<Stepped> {
        let count = count.unwrap_or(1);
        if count == 0 {
            return Err(ToolError::invalid("count must be at least 1"));
        }
        let (id, s) = self.runnable(session_id)?;
        s.machine.cpu.checks = checks.unwrap_or(true);
        let limits = Limits {
            instructions: count,
            cycles: u64::MAX,
        };
        let r = Self::run_with(
            s,
            limits,
            &StopWhen::default(),
            count,
            "instructions",
            progress,
        );
        let st = &s.machine.cpu.st;
        Ok(Stepped {
            executed: r.executed,
            halted: st.halted,
            pc: st.r[7],
            cycles: st.cycles,
            session_id: id,
            reason: (!matches!(r.reason, StopReason::Count | StopReason::Halted))
                .then_some(r.reason),
            stop: r
                .diagnosis
                .as_ref()
                .map(|d| describe_diagnosis(&s.machine, d)),
        })
    }

    /// `cp1600_run`: until HLT, a breakpoint, a check, the budget or the time limit.
    pub fn run(
        &mut self,
        session_id: Option<&str>,
        max_cycles: Option<u64>,
        checks: Option<bool>,
        progress: Progress,
    ) -> ToolResult<RunOutcome> {
        let budget = max_cycles.unwrap_or(RUN_DEFAULT_CYCLES);
        if budget == 0 {
            return Err(ToolError::invalid("max_cycles must be at least 1"));
        }
        let (id, s) = self.runnable(session_id)?;
        let checks = checks.unwrap_or(true);
        s.machine.cpu.checks = checks;
        let when = StopWhen {
            breakpoints: true,
            idle: checks,
            ..Default::default()
        };
        let limits = Limits {
            instructions: u64::MAX,
            cycles: budget,
        };
        let r = Self::run_with(s, limits, &when, budget, "cycles", progress);
        Ok(run_outcome(&id, s, &r))
    }

    /// `cp1600_run_until`: `cp1600_run` plus PC, register and memory conditions.
    pub fn run_until(
        &mut self,
        session_id: Option<&str>,
        u: &UntilOptions,
        progress: Progress,
    ) -> ToolResult<RunOutcome> {
        let register = match (&u.register, u.register_value) {
            (Some(name), Some(v)) => Some((parse_register(name)?, v)),
            (None, None) => None,
            _ => {
                return Err(ToolError::invalid(
                    "register and register_value go together; pass both or neither",
                ));
            }
        };
        let memory = match (u.address, u.memory_value) {
            (Some(a), Some(v)) => Some((a, v)),
            (None, None) => None,
            _ => {
                return Err(ToolError::invalid(
                    "address and memory_value go together; pass both or neither",
                ));
            }
        };
        let budget = u.max_cycles.unwrap_or(RUN_UNTIL_DEFAULT_CYCLES);
        if budget == 0 {
            return Err(ToolError::invalid("max_cycles must be at least 1"));
        }
        let (id, s) = self.runnable(session_id)?;
        let checks = u.checks.unwrap_or(true);
        s.machine.cpu.checks = checks;
        let when = StopWhen {
            breakpoints: u.stop_on_breakpoint.unwrap_or(true),
            pc: u.pc,
            register,
            memory,
            idle: checks,
        };
        let limits = Limits {
            instructions: u64::MAX,
            cycles: budget,
        };
        let r = Self::run_with(s, limits, &when, budget, "cycles", progress);
        Ok(run_outcome(&id, s, &r))
    }

    /// `cp1600_reset`: back to the load's start with RAM cleared; `preserve_rom` false also unloads.
    pub fn reset(
        &mut self,
        session_id: Option<&str>,
        preserve_rom: Option<bool>,
    ) -> ToolResult<ResetDone> {
        let (id, s) = self.get(session_id)?;
        if preserve_rom.unwrap_or(true) {
            s.machine.cpu.mem.clear_ram();
        } else {
            s.machine.cpu.mem = Memory::new();
            s.rom = None;
            s.image_ram.clear();
            s.poked = false;
            s.start = Start::plain(0x5000);
        }
        let start = s.start;
        let entry = start.pc;
        apply_start(&mut s.machine, &start);
        s.machine.clear_trace();
        s.edits = s.edits.wrapping_add(1);
        Ok(ResetDone {
            status: "reset",
            pc: entry,
            session_id: id,
            rom_loaded: s.rom.is_some(),
        })
    }

    /// `cp1600_get_state`: registers, flags and counters of the session
    /// (the active one when `session_id` is None).
    pub fn get_state(&mut self, session_id: Option<&str>) -> ToolResult<CpuSnapshot> {
        let (id, s) = self.get(session_id)?;
        Ok(CpuSnapshot::new(&id, &s.machine.cpu.st))
    }

    /// What each of the caller's sessions shows through its resources, by
    /// id: taken before and after a call to tell which URIs changed.
    pub fn looks(&self) -> Vec<(String, Look)> {
        self.sessions
            .iter()
            .map(|(id, s)| {
                let m = &s.machine;
                let look = Look {
                    state: (m.cpu.st, m.cpu.irq, s.edits, s.rom.is_some()),
                    trace: (
                        m.tracing(),
                        m.trace_capacity(),
                        m.trace().len(),
                        m.trace().back().map(|t| t.before.instructions),
                    ),
                };
                (id.clone(), look)
            })
            .collect()
    }

    /// The caller's session ids, in order (for completion).
    pub fn session_ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.keys().map(String::as_str)
    }

    /// [`get_state`](Self::get_state) plus the session's `status` and ROM,
    /// for the state resource and the debugging prompt.
    pub fn state_document(&mut self, session_id: &str) -> ToolResult<StateDocument> {
        let (id, s) = self.get(Some(session_id))?;
        Ok(StateDocument {
            cpu: CpuSnapshot::new(&id, &s.machine.cpu.st),
            status: s.status(),
            rom_path: s.rom.as_ref().map(|r| r.path.clone()),
        })
    }

    /// `count` words from `start` (wrapping at $FFFF), for the memory
    /// resource; the caller bounds `count`.
    pub fn read_words(
        &mut self,
        session_id: &str,
        start: u16,
        count: u16,
    ) -> Result<Vec<u16>, ToolError> {
        let (_, s) = self.get(Some(session_id))?;
        let mem = &s.machine.cpu.mem;
        Ok((0..count)
            .map(|i| mem.read(start.wrapping_add(i)))
            .collect())
    }

    /// `cp1600_get_registers`: R0-R7 alone, a smaller answer than the state.
    pub fn get_registers(&mut self, session_id: Option<&str>) -> ToolResult<RegisterValues> {
        let (_, s) = self.get(session_id)?;
        Ok(RegisterValues {
            registers: (&s.machine.cpu.st).into(),
        })
    }

    /// `cp1600_get_flags`: C, OV, Z and S alone.
    pub fn get_flags(&mut self, session_id: Option<&str>) -> ToolResult<FlagValues> {
        let (_, s) = self.get(session_id)?;
        Ok(FlagValues {
            flags: (&s.machine.cpu.st).into(),
        })
    }

    /// `cp1600_disassemble`: from `start` to `end` (default start + 16), at most [`DISASM_MAX`] instructions.
    pub fn disassemble(
        &mut self,
        session_id: Option<&str>,
        start: u16,
        end: Option<u16>,
    ) -> ToolResult<Disassembly> {
        let (_, s) = self.get(session_id)?;
        let end = end.unwrap_or(start.saturating_add(DISASM_DEFAULT_SPAN));
        if end < start {
            return Err(ToolError::invalid(format!(
                "end_address ${end:04X} is below start_address ${start:04X}"
            )));
        }
        let mem = &s.machine.cpu.mem;
        let list = disassemble_range(|a| mem.read(a), start, end, DISASM_MAX);
        let note = list.last().and_then(|last| {
            let next = last.address as u32 + last.len as u32;
            (list.len() == DISASM_MAX && next <= end as u32).then(|| {
                format!(
                    "stopped after {DISASM_MAX} instructions; call again with start_address {next} for the rest"
                )
            })
        });
        Ok(Disassembly {
            disassembly: list.iter().map(instr_info).collect(),
            note,
        })
    }

    /// `cp1600_examine_memory`: `count` words (default 16, at most [`MEMORY_MAX`]), stopping at $FFFF.
    pub fn examine_memory(
        &mut self,
        session_id: Option<&str>,
        start: u16,
        count: Option<u32>,
    ) -> ToolResult<MemoryWords> {
        let (_, s) = self.get(session_id)?;
        let want = count.unwrap_or(MEMORY_DEFAULT_COUNT);
        if want == 0 {
            return Err(ToolError::invalid("count must be at least 1"));
        }
        let avail = 0x1_0000 - start as u32;
        let n = want.min(MEMORY_MAX).min(avail);
        let mem = &s.machine.cpu.mem;
        let memory = (0..n)
            .map(|i| {
                let a = start + i as u16;
                Word {
                    address: a,
                    value: mem.read(a),
                }
            })
            .collect();
        let note = (n < want).then(|| {
            if n < avail {
                format!(
                    "showing {n} of {want} words (limit {MEMORY_MAX}); call again with start_address {}",
                    start as u32 + n
                )
            } else {
                format!("showing {n} words: the address space ends at $FFFF")
            }
        });
        Ok(MemoryWords { memory, note })
    }

    /// `cp1600_memory_map`: the mapped ranges.
    pub fn memory_map(&mut self, session_id: Option<&str>) -> ToolResult<MemoryMap> {
        let (_, s) = self.get(session_id)?;
        let regions = s
            .machine
            .cpu
            .mem
            .regions()
            .into_iter()
            .map(|(start, end, kind)| RegionInfo { start, end, kind })
            .collect();
        Ok(MemoryMap {
            regions,
            unmapped_reads: 0xFFFF,
        })
    }

    /// `cp1600_set_breakpoint`: runs stop before executing `address`; setting
    /// one twice is not an error (status `already_set`).
    pub fn set_breakpoint(
        &mut self,
        session_id: Option<&str>,
        address: u16,
    ) -> ToolResult<BreakpointSet> {
        let (_, s) = self.get(session_id)?;
        let added = s.machine.set_breakpoint(address);
        Ok(BreakpointSet {
            status: if added {
                BreakpointStatus::Set
            } else {
                BreakpointStatus::AlreadySet
            },
            address,
            breakpoints: s.machine.breakpoints(),
        })
    }

    /// `cp1600_clear_breakpoint`: one (an error when none is there) or all.
    pub fn clear_breakpoint(
        &mut self,
        session_id: Option<&str>,
        address: Option<u16>,
    ) -> ToolResult<BreakpointsCleared> {
        let (_, s) = self.get(session_id)?;
        let cleared = match address {
            Some(a) => {
                if !s.machine.clear_breakpoint(a) {
                    return Err(ToolError::new(
                        "BREAKPOINT_NOT_FOUND",
                        format!("no breakpoint at {a} (${a:04X}); see cp1600_list_breakpoints"),
                    ));
                }
                1
            }
            None => s.machine.clear_all_breakpoints(),
        };
        Ok(BreakpointsCleared {
            cleared: cleared as u32,
            breakpoints: s.machine.breakpoints(),
        })
    }

    /// `cp1600_list_breakpoints`: every breakpoint, ascending.
    pub fn list_breakpoints(&mut self, session_id: Option<&str>) -> ToolResult<BreakpointList> {
        let (_, s) = self.get(session_id)?;
        Ok(BreakpointList {
            breakpoints: s.machine.breakpoints(),
        })
    }

    /// `cp1600_configure_trace`: on or off, and the number of entries kept.
    pub fn configure_trace(
        &mut self,
        session_id: Option<&str>,
        enabled: bool,
        capacity: Option<u32>,
    ) -> ToolResult<TraceSettings> {
        let (_, s) = self.get(session_id)?;
        if capacity == Some(0) || capacity.is_some_and(|c| c as usize > TRACE_MAX) {
            return Err(ToolError::invalid(format!(
                "capacity must be 1 to {TRACE_MAX}"
            )));
        }
        s.machine
            .configure_trace(enabled, capacity.map(|c| c as usize));
        Ok(TraceSettings {
            tracing: s.machine.tracing(),
            capacity: s.machine.trace_capacity() as u32,
            entries: s.machine.trace().len() as u32,
        })
    }

    /// `cp1600_get_trace`: a page of `count` entries, `offset` back from the newest.
    pub fn get_trace(
        &mut self,
        session_id: Option<&str>,
        count: Option<u32>,
        offset: Option<u32>,
    ) -> ToolResult<TracePage> {
        let (_, s) = self.get(session_id)?;
        let want = count.unwrap_or(TRACE_DEFAULT_COUNT);
        if want == 0 || want > TRACE_PAGE_MAX {
            return Err(ToolError::invalid(format!(
                "count must be 1 to {TRACE_PAGE_MAX} (a page within the host's result limit); page with offset for more"
            )));
        }
        let trace = s.machine.trace();
        let len = trace.len();
        let skip = (offset.unwrap_or(0) as usize).min(len);
        // Entries [lo, hi) in oldest-first order: the `want` before the newest `skip`.
        let hi = len - skip;
        let lo = hi.saturating_sub(want as usize);
        let mut prev_sdbd = lo > 0 && trace[lo - 1].words[0] & 0x3FF == 1;
        let entries = trace
            .range(lo..hi)
            .map(|t| {
                let ins = disassemble(
                    |a| t.words[a.wrapping_sub(t.before.r[7]) as usize % 3],
                    t.before.r[7],
                    prev_sdbd,
                );
                prev_sdbd = ins.mnemonic == "SDBD";
                TraceEntry {
                    step: t.before.instructions,
                    pc: t.before.r[7],
                    r: t.before.r,
                    flags: flags_compact(&t.before),
                    cycles: t.before.cycles,
                    text: ins.text(),
                }
            })
            .collect();
        let note = if !s.machine.tracing() && len == 0 {
            Some("tracing is off; enable it with cp1600_configure_trace, then step or run".into())
        } else if lo > 0 {
            Some(format!(
                "entries {} to {} (newest = 1) of {len} buffered instructions, state before each; pass offset {} for older ones",
                skip + 1,
                len - lo,
                len - lo
            ))
        } else {
            None
        };
        Ok(TracePage {
            trace: entries,
            tracing: s.machine.tracing(),
            buffered: len as u32,
            next_offset: (lo > 0).then_some((len - lo) as u32),
            note,
        })
    }

    /// `cp1600_write_memory`: to RAM, STIC registers or loaded ROM, never to unmapped addresses; answers with the words as read back.
    pub fn write_memory(
        &mut self,
        session_id: Option<&str>,
        address: u16,
        values: &[u16],
    ) -> ToolResult<MemoryWritten> {
        let (_, s) = self.get(session_id)?;
        if values.is_empty() {
            return Err(ToolError::invalid(
                "values is empty; pass at least one word",
            ));
        }
        if address as usize + values.len() > 0x1_0000 {
            return Err(ToolError::invalid("the write runs past $FFFF"));
        }
        let mem = &mut s.machine.cpu.mem;
        if let Some(bad) = (0..values.len())
            .map(|i| address + i as u16)
            .find(|a| mem.region(*a) == Region::Unmapped)
        {
            return Err(ToolError::new(
                "UNMAPPED_ADDRESS",
                format!(
                    "address {bad} (${bad:04X}) is unmapped; writable: RAM $0100-$01EF (8-bit), $0200-$035F, the STIC registers $0000-$003F (their unimplemented bits stay fixed), and loaded ROM"
                ),
            ));
        }
        for (i, v) in values.iter().enumerate() {
            mem.poke(address + i as u16, *v);
        }
        s.poked = true;
        s.edits = s.edits.wrapping_add(1);
        let read_back: Vec<u16> = (0..values.len())
            .map(|i| mem.read(address + i as u16))
            .collect();
        Ok(MemoryWritten {
            written: values.len() as u32,
            address,
            values: read_back,
        })
    }

    /// `cp1600_write_registers`: the given registers and flags; answers with the new state.
    pub fn write_registers(
        &mut self,
        session_id: Option<&str>,
        w: &RegisterWrite,
    ) -> ToolResult<CpuSnapshot> {
        let (_, s) = self.get(session_id)?;
        let st = &mut s.machine.cpu.st;
        for (i, v) in w.r.iter().enumerate() {
            if let Some(v) = v {
                st.r[i] = *v;
            }
        }
        let set = |f: &mut bool, v: Option<bool>| {
            if let Some(v) = v {
                *f = v;
            }
        };
        set(&mut st.s, w.s);
        set(&mut st.z, w.z);
        set(&mut st.ov, w.ov);
        set(&mut st.c, w.c);
        set(&mut st.i, w.i);
        set(&mut st.halted, w.halted);
        self.get_state(session_id)
    }

    /// `cp1600_interrupt`: raises the interrupt request and warns when the next run would stop on it.
    pub fn interrupt(&mut self, session_id: Option<&str>) -> ToolResult<InterruptRaised> {
        let (_, s) = self.get(session_id)?;
        s.machine.cpu.irq = true;
        let i = s.machine.cpu.st.i;
        let mem = &s.machine.cpu.mem;
        let sp = s.machine.cpu.st.r[6];
        let note = if i {
            "taken after the next interruptible instruction: pushes the PC and jumps to $1004"
        } else {
            "interrupts are disabled (EIS enables them); the request stays pending"
        };
        // Say now what the next run would stop on.
        let mut warnings = Vec::new();
        if mem.region(crate::cpu::INTERRUPT_VECTOR) == Region::Unmapped {
            warnings.push("no EXEC is loaded, so nothing is at $1004: the run will stop there (jump_to_no_code); pass exec_path to cp1600_load_rom for the EXEC's handler".to_string());
        }
        if !mem.is_ram(sp) {
            warnings.push(format!(
                "R6 = ${sp:04X} is not RAM, so the PC cannot be pushed: the run will stop (stack_outside_ram) with the interrupt pending"
            ));
        }
        Ok(InterruptRaised {
            status: "pending",
            interrupts_enabled: i,
            note,
            warnings: (!warnings.is_empty()).then_some(warnings),
        })
    }
}

/// Resets the CPU to a start: registers, and the word it stacks.
fn apply_start(m: &mut Machine, start: &Start) {
    m.cpu.reset_to(start.pc);
    m.cpu.st.r[..7].copy_from_slice(&start.r);
    if let Some((addr, v)) = start.stacked {
        m.cpu.mem.write(addr, v);
    }
}

fn run_outcome(id: &str, s: &Session, r: &RunResult) -> RunOutcome {
    let st = &s.machine.cpu.st;
    let note = match r.reason {
        StopReason::Cancelled => {
            Some("cancelled by the client; the session is intact, run again to continue".to_owned())
        }
        StopReason::TimeLimit => Some(format!(
            "stopped after {}s of wall time to stay within the call deadline; run again to continue",
            CALL_TIME_LIMIT.as_secs()
        )),
        _ => None,
    };
    let stop = match &r.diagnosis {
        Some(d) => describe_diagnosis(&s.machine, d),
        None => {
            let pc = st.r[7];
            Stop {
                address: pc,
                instruction: Some(instruction_at(&s.machine, pc)),
                message: None,
                target: None,
                idle_loop: None,
            }
        }
    };
    RunOutcome {
        halted: st.halted,
        reason: r.reason,
        cycles: st.cycles,
        pc: st.r[7],
        executed: r.executed,
        cycles_run: r.cycles_run,
        session_id: id.to_owned(),
        note,
        stop,
    }
}

#[cfg(test)]
mod client_tests {
    use super::*;
    use serde_json::json;

    fn code<T: std::fmt::Debug>(r: ToolResult<T>) -> (String, String) {
        let e = r.expect_err("an error");
        (e.code.to_string(), e.message)
    }

    /// Everything a client can see of a session, minus its id.
    fn observe(s: &mut Sessions, id: &str) -> serde_json::Value {
        let mut state = s.get_state(Some(id)).unwrap().json();
        state.as_object_mut().unwrap().remove("session_id");
        let ram = s
            .examine_memory(Some(id), 0x0100, Some(0x260))
            .unwrap()
            .json();
        let rom = s.examine_memory(Some(id), 0x5000, Some(64)).unwrap().json();
        let bps = s.list_breakpoints(Some(id)).unwrap().json();
        let map = s.memory_map(Some(id)).unwrap().json();
        json!([state, ram, rom, bps, map])
    }

    #[test]
    fn a_restored_snapshot_steps_exactly_like_its_original() {
        let mut s = Sessions::new();
        s.create_session(Some("a")).unwrap();
        let p = crate::asm::assemble(
            " ORG $5000\n MVII #$02F0, R6\n MVII #500, R1\nl: MVO R1, $0200\n MVO R1, $0100\n PSHR R1\n PULR R2\n DECR R1\n BNEQ l\n HLT\n",
        )
        .unwrap();
        // Loaded from a real .bin, so the snapshot carries the ROM details too.
        let dir = std::env::temp_dir().join(format!("cp1600-snap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("loop.bin");
        let bytes: Vec<u8> = p.words.iter().flat_map(|w| w.to_be_bytes()).collect();
        std::fs::write(&bin, bytes).unwrap();
        let opts = LoadOptions {
            load_address: Some(p.origin),
            ..Default::default()
        };
        s.load_rom(Some("a"), bin.to_str().unwrap(), &opts).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        s.step(Some("a"), Some(25), None, &mut |_, _, _| true)
            .unwrap();
        s.set_breakpoint(Some("a"), 0x5008).unwrap();
        let snap = s.snapshot(Some("a")).unwrap();
        assert_eq!(
            (snap.format_version, snap.bytes as usize),
            (2, snap.snapshot.len())
        );
        let made = s
            .create_session_from(Some("b"), Some(&snap.snapshot))
            .unwrap();
        let restored = made.restored.expect("restored details");
        assert_eq!(
            (restored.pc, restored.cycles, restored.breakpoints),
            (snap.pc, snap.cycles, 1)
        );
        assert!(restored.rom_path.unwrap().ends_with("loop.bin"));
        let listed = s.list_sessions().unwrap().json();
        assert_eq!(
            listed["sessions"][0]["rom_path"],
            listed["sessions"][1]["rom_path"]
        );
        assert_eq!(listed["sessions"][1]["rom_format"], "bin");
        assert_eq!(observe(&mut s, "a"), observe(&mut s, "b"));
        for n in [1, 13, 400] {
            s.step(Some("a"), Some(n), None, &mut |_, _, _| true)
                .unwrap();
            s.step(Some("b"), Some(n), None, &mut |_, _, _| true)
                .unwrap();
            assert_eq!(observe(&mut s, "a"), observe(&mut s, "b"), "after {n} more");
        }
        // Breakpoints came along: both runs stop at the same one.
        let ra = s
            .run(Some("a"), Some(1_000_000), None, &mut |_, _, _| true)
            .unwrap()
            .json();
        let rb = s
            .run(Some("b"), Some(1_000_000), None, &mut |_, _, _| true)
            .unwrap()
            .json();
        assert_eq!(ra["reason"], "breakpoint");
        assert_eq!(ra["pc"], rb["pc"]);
        assert_eq!(observe(&mut s, "a"), observe(&mut s, "b"));
        // A snapshot is no link: the copy moves on alone.
        s.step(Some("b"), Some(1), None, &mut |_, _, _| true)
            .unwrap();
        assert_ne!(observe(&mut s, "a"), observe(&mut s, "b"));
    }

    #[test]
    fn a_bad_snapshot_makes_no_session() {
        let mut s = Sessions::new();
        s.create_session(Some("a")).unwrap();
        let good = s.snapshot(Some("a")).unwrap().snapshot;
        let cut = &good[..good.len() / 2];
        // One character in the middle changed: a payload byte differs.
        let mut flipped = good.clone().into_bytes();
        let mid = flipped.len() / 2;
        flipped[mid] = if flipped[mid] == b'Q' { b'R' } else { b'Q' };
        let flipped = String::from_utf8(flipped).unwrap();
        for (bad, says) in [
            ("hello", "base64"),
            (cut, "snapshot refused"),
            (&flipped, "checksum"),
        ] {
            let (c, m) = code(s.create_session_from(Some("x"), Some(bad)));
            assert_eq!(c, "INVALID_SNAPSHOT");
            assert!(m.contains(says), "{m}");
        }
        assert_eq!(s.list_sessions().unwrap().sessions.len(), 1);
        assert!(s.create_session_from(Some("x"), Some(&good)).is_ok());
    }

    #[test]
    fn minted_ids_are_64_random_bits() {
        let mut s = Sessions::new();
        let a = s.create_session(None).unwrap().json()["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let b = s.create_session(None).unwrap().json()["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        for id in [&a, &b] {
            let hex = id.strip_prefix("session_").expect(id);
            assert_eq!(hex.len(), 16, "{id}");
            assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
        assert_ne!(a, b);
    }

    #[test]
    fn another_clients_session_answers_like_an_unknown_one() {
        let mut all = Clients::new();
        let id = all.with("a", |s| s.create_session(None)).unwrap().json()["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        all.with("b", |s| {
            assert_eq!(s.list_sessions().unwrap().json(), json!({ "sessions": [] }));
            // The same answer as for an id nobody has, with the id swapped.
            let (c, unknown) = code(s.get_state(Some("session_0000000000000000")));
            let (c2, theirs) = code(s.get_state(Some(&id)));
            assert_eq!(
                (c.as_str(), c2.as_str()),
                ("SESSION_NOT_FOUND", "SESSION_NOT_FOUND")
            );
            assert_eq!(theirs, unknown.replace("session_0000000000000000", &id));
            assert_eq!(code(s.destroy_session(&id)).0, "SESSION_NOT_FOUND");
            assert_eq!(code(s.switch_session(&id)).0, "SESSION_NOT_FOUND");
            // No default: A's active session is not B's.
            let (c, m) = code(s.get_state(None));
            assert_eq!(c, "SESSION_NOT_FOUND");
            assert!(m.contains("no active session"), "{m}");
            // B may use the same custom name as A without learning of A's.
            s.create_session(Some(&id)).unwrap();
        });
        all.with("a", |s| {
            assert_eq!(s.get_state(None).unwrap().json()["session_id"], id.as_str());
            assert_eq!(
                s.list_sessions().unwrap().json()["sessions"]
                    .as_array()
                    .unwrap()
                    .len(),
                1
            );
        });
    }

    #[test]
    fn each_client_gets_a_share_of_the_cap() {
        let mut all = Clients::new();
        let mut c = 0;
        // Clients take their shares until the global cap is reached.
        while all.0.total() < MAX_SESSIONS {
            all.with(&format!("c{c}"), |s| {
                for _ in 0..MAX_SESSIONS_PER_CLIENT.min(MAX_SESSIONS - s.room.others()) {
                    s.create_session(None).unwrap();
                }
                if s.sessions.len() == MAX_SESSIONS_PER_CLIENT {
                    let (code_, m) = code(s.create_session(None));
                    assert_eq!(code_, "SESSION_LIMIT");
                    assert!(m.contains("one client may hold"), "{m}");
                }
            });
            c += 1;
        }
        assert!(c >= 3, "a share is well below the cap");
        // Everyone's shares fill the global cap: a newcomer is told so.
        let (c, m) = code(all.with("late", |s| s.create_session(None)));
        assert_eq!(c, "SESSION_LIMIT");
        assert!(m.contains("of all its clients"), "{m}");
        // One session freed anywhere makes room again.
        all.with("c0", |s| {
            let id = s.list_sessions().unwrap().json()["sessions"][0]["session_id"]
                .as_str()
                .unwrap()
                .to_owned();
            s.destroy_session(&id).unwrap();
        });
        all.with("late", |s| s.create_session(None)).unwrap();
    }

    #[test]
    fn a_departed_clients_sessions_make_room_and_the_answer_says_so() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let at = |m: u64| t0 + Duration::from_secs(m * 60);
        let mut all = Clients::new();
        // Clients that create their share and leave fill the global cap.
        let mut c = 0;
        while all.0.total() < MAX_SESSIONS {
            all.0.with_at(&format!("gone{c}"), at(c), |s| {
                while s.sessions.len() < MAX_SESSIONS_PER_CLIENT
                    && s.sessions.len() + s.room.others() < MAX_SESSIONS
                {
                    s.create_session(None).unwrap();
                }
            });
            c += 1;
        }
        let (code_, m) = code(all.0.with_at("new", at(10), |s| s.create_session(None)));
        assert_eq!(code_, "SESSION_LIMIT");
        assert!(m.contains("idle for 15 min"), "{m}");
        // 30 minutes on, the client idle longest (the first) gives way; a
        // failed creation frees nothing.
        let (code_, _) = code(
            all.0
                .with_at("new", at(30), |s| s.create_session(Some("not a valid id"))),
        );
        assert_eq!(code_, "INVALID_ARGUMENT");
        assert_eq!(all.0.total(), MAX_SESSIONS);
        let v = all
            .0
            .with_at("new", at(30), |s| s.create_session(None))
            .unwrap();
        assert_eq!(v.status, "created");
        assert_eq!(
            v.note.unwrap(),
            format!(
                "closed {MAX_SESSIONS_PER_CLIENT} sessions of another client, idle for 30 min, to make room under the plugin's limit"
            )
        );
        all.0.with_at("gone0", at(31), |s| {
            assert_eq!(s.list_sessions().unwrap().json(), json!({ "sessions": [] }));
            assert!(s.create_session(None).unwrap().note.is_none());
        });
    }
}
