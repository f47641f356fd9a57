//! The documents the tools return, as plain Rust: one struct per result
//! (and per part of one). The WIT records of `wit/cp1600/cp1600.wit` mirror
//! them field for field and `component.rs` converts one into the other, so
//! the host serves typed results with an `outputSchema`.
//!
//! serde gives the same JSON the host makes of the WIT records (keys the
//! snake_case field names or their `@key`, an absent option omitted), for
//! the resources, which serve text, and for the native tests, which check
//! what an agent reads without a component.

use crate::cart::StartKind;
use crate::cpu::CpuState;
use crate::machine::StopReason;
use crate::memory::Region;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// `doc` as a JSON value: keys sorted, as the host prints the text block
/// of a typed result.
pub fn to_json<T: Serialize>(doc: &T) -> Value {
    // These structs hold only strings, numbers, lists and string-keyed
    // fields, which always serialize; `Null` is unreachable.
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// JSON of any result, for tests and resources: `r.json()["pc"]`.
pub trait Json {
    /// This document as a JSON value (see [`to_json`]).
    fn json(&self) -> Value;
}

impl<T: Serialize> Json for T {
    fn json(&self) -> Value {
        to_json(self)
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for StartKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Serialize for Region {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `cp1600_create_session`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionCreated {
    /// The new session's id (the one asked for, or a minted one).
    pub session_id: String,
    /// Always `created`.
    pub status: &'static str,
    /// Always true: a new session becomes the active one.
    pub active: bool,
    /// Set when another client's idle sessions were closed to make room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Set when the session was made from a snapshot: where it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<Restored>,
}

/// Where a session made from a snapshot stands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Restored {
    /// The program counter (R7).
    pub pc: u16,
    /// Cycles since reset.
    pub cycles: u64,
    /// Instructions since reset.
    pub instructions: u64,
    /// Breakpoints set.
    pub breakpoints: u32,
    /// The ROM the saved session had loaded (a path on the machine that loaded it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rom_path: Option<String>,
}

/// `cp1600_snapshot`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SnapshotTaken {
    /// The session saved.
    pub session_id: String,
    /// The snapshot's layout version.
    pub format_version: u16,
    /// Size of `snapshot` in bytes (base64 is ASCII: a byte a character),
    /// all of which this result carries.
    pub bytes: u32,
    /// The program counter when saved.
    pub pc: u16,
    /// Cycles since reset when saved.
    pub cycles: u64,
    /// The state: base64 text to pass to `cp1600_create_session`.
    pub snapshot: String,
}

/// What a session is doing, from its CPU state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// No instruction executed since the load or reset.
    Idle,
    /// Instructions executed and not halted.
    Running,
    /// Stopped by HLT.
    Halted,
}

/// One session of `cp1600_list_sessions`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionInfo {
    /// The session's id.
    pub session_id: String,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// Whether a ROM is loaded.
    pub rom_loaded: bool,
    /// The loaded ROM's resolved path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rom_path: Option<String>,
    /// The loaded ROM's format (`bin`, `bin+cfg`, `rom`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rom_format: Option<&'static str>,
    /// What the CPU is doing.
    pub state: SessionStatus,
    /// Whether this is the active session.
    pub active: bool,
}

/// `cp1600_list_sessions`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionList {
    /// The caller's sessions, by id.
    pub sessions: Vec<SessionInfo>,
}

/// `cp1600_switch_session`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionSwitched {
    /// The session now active.
    pub session_id: String,
    /// Always `active`.
    pub status: &'static str,
}

/// `cp1600_destroy_session`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionDestroyed {
    /// The session destroyed.
    pub session_id: String,
    /// Always `destroyed`.
    pub status: &'static str,
    /// The active session afterwards; none when the destroyed one was it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_session: Option<String>,
}

/// An inclusive address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// First address.
    pub start: u16,
    /// Last address (inclusive).
    pub end: u16,
}

/// A cartridge header (at $5000) as the EXEC reads it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeaderInfo {
    /// The title string.
    pub title: String,
    /// The copyright year.
    pub year: u16,
    /// The program start the header names.
    pub start: u16,
    /// Where the title block is.
    pub title_address: u16,
    /// The code after the title, when flag bit 7 has the EXEC run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_after_title: Option<u16>,
    /// The header's flags word.
    pub flags: u16,
}

/// One `[vars]` entry of a `.cfg`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CfgVar {
    /// The variable's name.
    pub name: String,
    /// Its value; values of a repeated name are joined with `; `.
    pub value: String,
}

/// `cp1600_load_rom`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RomLoaded {
    /// Always `loaded`.
    pub status: &'static str,
    /// The session loaded into.
    pub session_id: String,
    /// The file's size in bytes.
    pub rom_size: u64,
    /// The load address given, or the lowest loaded address.
    pub load_address: u16,
    /// The PC after loading.
    pub entry_point: u16,
    /// The file's format: `bin`, `bin+cfg` or `rom`.
    pub format: &'static str,
    /// The address ranges this file loaded.
    pub segments: Vec<Span>,
    /// The cartridge header at $5000, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderInfo>,
    /// How the start was chosen.
    pub start: StartKind,
    /// What the start does (or where the cartridge would start instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_note: Option<String>,
    /// Quick-boot code the header start skips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick_boot: Option<String>,
    /// True when an EXEC image is mapped at $1000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<bool>,
    /// True when a GROM image is mapped at $3000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grom: Option<bool>,
    /// The `.cfg`'s `[vars]`, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cfg_vars: Option<Vec<CfgVar>>,
    /// Set when the `.cfg` maps JLP RAM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jlp: Option<String>,
    /// `.cfg` lines skipped as jzIntv skips them (a malformed `[vars]`
    /// line), each with its line number and what was wrong; the cartridge
    /// loaded without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

/// The instruction a run or step stopped at, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stop {
    /// The instruction's address.
    pub address: u16,
    /// The instruction there; none when nothing is mapped there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// What a check found and what to do (checks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where a jump went where nothing is mapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<u16>,
    /// The idle loop's range.
    #[serde(rename = "loop", skip_serializing_if = "Option::is_none")]
    pub idle_loop: Option<Span>,
}

/// `cp1600_step`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stepped {
    /// Instructions executed.
    pub executed: u64,
    /// Whether the CPU is halted.
    pub halted: bool,
    /// The PC afterwards.
    pub pc: u16,
    /// Total cycles since the reset.
    pub cycles: u64,
    /// The session stepped.
    pub session_id: String,
    /// Why it stopped before `count`, when it did (not for HLT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<StopReason>,
    /// The check that stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
}

/// `cp1600_run` and `cp1600_run_until`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunOutcome {
    /// Whether the CPU is halted.
    pub halted: bool,
    /// Why the run stopped.
    pub reason: StopReason,
    /// Total cycles since the reset.
    pub cycles: u64,
    /// The PC afterwards.
    pub pc: u16,
    /// Instructions executed by this call.
    pub executed: u64,
    /// Cycles run by this call.
    pub cycles_run: u64,
    /// The session run.
    pub session_id: String,
    /// Set when the client cancelled or the time limit stopped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The instruction the run stopped at.
    pub stop: Stop,
}

/// `cp1600_reset`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResetDone {
    /// Always `reset`.
    pub status: &'static str,
    /// The PC after the reset.
    pub pc: u16,
    /// The session reset.
    pub session_id: String,
    /// Whether a ROM is still loaded.
    pub rom_loaded: bool,
}

/// R0-R7 under their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Registers {
    /// R0: general purpose.
    #[serde(rename = "R0")]
    pub r0: u16,
    /// R1: general purpose.
    #[serde(rename = "R1")]
    pub r1: u16,
    /// R2: general purpose.
    #[serde(rename = "R2")]
    pub r2: u16,
    /// R3: general purpose.
    #[serde(rename = "R3")]
    pub r3: u16,
    /// R4: auto-incrementing when used as a pointer.
    #[serde(rename = "R4")]
    pub r4: u16,
    /// R5: auto-incrementing when used as a pointer.
    #[serde(rename = "R5")]
    pub r5: u16,
    /// R6: the stack pointer (pushes increment it).
    #[serde(rename = "R6")]
    pub r6: u16,
    /// R7: the program counter.
    #[serde(rename = "R7")]
    pub r7: u16,
}

impl From<&CpuState> for Registers {
    fn from(st: &CpuState) -> Self {
        let [r0, r1, r2, r3, r4, r5, r6, r7] = st.r;
        Registers {
            r0,
            r1,
            r2,
            r3,
            r4,
            r5,
            r6,
            r7,
        }
    }
}

/// The four arithmetic flags under their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Flags {
    /// Carry.
    #[serde(rename = "C")]
    pub c: bool,
    /// Overflow.
    #[serde(rename = "OV")]
    pub ov: bool,
    /// Zero.
    #[serde(rename = "Z")]
    pub z: bool,
    /// Sign.
    #[serde(rename = "S")]
    pub s: bool,
}

impl From<&CpuState> for Flags {
    fn from(st: &CpuState) -> Self {
        Flags {
            c: st.c,
            ov: st.ov,
            z: st.z,
            s: st.s,
        }
    }
}

/// `cp1600_get_state` and `cp1600_write_registers`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuSnapshot {
    /// R0-R7.
    pub registers: Registers,
    /// C, OV, Z, S.
    pub flags: Flags,
    /// Whether the CPU is halted.
    pub halted: bool,
    /// Total cycles since the reset.
    pub cycles: u64,
    /// R7.
    pub pc: u16,
    /// Instructions executed since the reset.
    pub instructions: u64,
    /// Interrupt enable.
    pub interrupts_enabled: bool,
    /// The next instruction is prefixed by SDBD.
    pub sdbd_pending: bool,
    /// The session shown.
    pub session_id: String,
}

impl CpuSnapshot {
    /// The snapshot of `st` in session `id`.
    pub fn new(id: &str, st: &CpuState) -> Self {
        CpuSnapshot {
            registers: st.into(),
            flags: st.into(),
            halted: st.halted,
            cycles: st.cycles,
            pc: st.r[7],
            instructions: st.instructions,
            interrupts_enabled: st.i,
            sdbd_pending: st.d,
            session_id: id.to_owned(),
        }
    }
}

/// The state resource: the snapshot plus what the session is doing and
/// its ROM.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateDocument {
    /// The `cp1600_get_state` document.
    #[serde(flatten)]
    pub cpu: CpuSnapshot,
    /// What the CPU is doing.
    pub status: SessionStatus,
    /// The loaded ROM's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rom_path: Option<String>,
}

/// `cp1600_get_registers`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegisterValues {
    /// R0-R7.
    pub registers: Registers,
}

/// `cp1600_get_flags`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlagValues {
    /// C, OV, Z, S.
    pub flags: Flags,
}

/// One disassembled instruction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstrInfo {
    /// Its address.
    pub address: u16,
    /// The mnemonic.
    pub opcode: &'static str,
    /// The operands in as1600 syntax (may be empty).
    pub operands: String,
    /// The first word (the opcode word).
    pub raw: u16,
    /// Words it occupies.
    pub size: u16,
}

/// `cp1600_disassemble`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Disassembly {
    /// The instructions, in address order.
    pub disassembly: Vec<InstrInfo>,
    /// Set when the instruction limit cut the range short.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One memory word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Word {
    /// Its address.
    pub address: u16,
    /// Its value (65535 when unmapped).
    pub value: u16,
}

/// `cp1600_examine_memory`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryWords {
    /// The words read, in address order.
    pub memory: Vec<Word>,
    /// Set when fewer words than asked were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One mapped range of the memory map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RegionInfo {
    /// First address.
    pub start: u16,
    /// Last address (inclusive).
    pub end: u16,
    /// What is mapped there.
    pub kind: Region,
}

/// `cp1600_memory_map`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryMap {
    /// Mapped ranges, in address order.
    pub regions: Vec<RegionInfo>,
    /// What a read of an unmapped address gives (65535).
    pub unmapped_reads: u16,
}

/// Whether `cp1600_set_breakpoint` added one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakpointStatus {
    /// Added.
    Set,
    /// It was there already.
    AlreadySet,
}

/// `cp1600_set_breakpoint`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakpointSet {
    /// Added, or there already.
    pub status: BreakpointStatus,
    /// The breakpoint's address.
    pub address: u16,
    /// Every breakpoint afterwards.
    pub breakpoints: Vec<u16>,
}

/// `cp1600_clear_breakpoint`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakpointsCleared {
    /// How many were removed.
    pub cleared: u32,
    /// Every breakpoint afterwards.
    pub breakpoints: Vec<u16>,
}

/// `cp1600_list_breakpoints`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakpointList {
    /// Breakpoint addresses, ascending.
    pub breakpoints: Vec<u16>,
}

/// `cp1600_configure_trace`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSettings {
    /// Whether instructions are being recorded.
    pub tracing: bool,
    /// Entries kept.
    pub capacity: u32,
    /// Entries buffered now.
    pub entries: u32,
}

/// One traced instruction, with the state before it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceEntry {
    /// Instructions executed before this one.
    pub step: u64,
    /// Its address.
    pub pc: u16,
    /// R0-R7 before it.
    pub r: [u16; 8],
    /// `SZOCI` flags before it, `-` for a clear flag, `D` when SDBD is pending.
    pub flags: String,
    /// Total cycles before it.
    pub cycles: u64,
    /// The instruction in as1600 syntax.
    pub text: String,
}

/// `cp1600_get_trace`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TracePage {
    /// Entries, oldest first.
    pub trace: Vec<TraceEntry>,
    /// Whether instructions are being recorded.
    pub tracing: bool,
    /// Entries buffered in all.
    pub buffered: u32,
    /// The offset for the next, older page; none at the oldest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
    /// How to page, or how to turn tracing on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `cp1600_write_memory`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryWritten {
    /// Words written.
    pub written: u32,
    /// The first address written.
    pub address: u16,
    /// The words as read back (8-bit RAM keeps the low byte).
    pub values: Vec<u16>,
}

/// `cp1600_interrupt`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InterruptRaised {
    /// Always `pending`.
    pub status: &'static str,
    /// Whether interrupts are enabled.
    pub interrupts_enabled: bool,
    /// When the request will be taken.
    pub note: &'static str,
    /// What the next run would stop on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// serde spells the documents as the host spells their WIT records:
    /// `@key` names, enum cases in snake_case, an absent option left out.
    #[test]
    fn json_follows_the_hosts_rules_for_the_wit_records() {
        let st = CpuState {
            r: [1, 2, 3, 4, 5, 6, 0x02F1, 0x5000],
            ov: true,
            ..CpuState::default()
        };
        let snap = CpuSnapshot::new("a", &st).json();
        assert_eq!(snap["registers"]["R6"], 0x02F1);
        assert_eq!(
            snap["flags"],
            json!({"C": false, "OV": true, "Z": false, "S": false})
        );
        let step = Stepped {
            executed: 1,
            halted: false,
            pc: 0x5001,
            cycles: 6,
            session_id: "a".into(),
            reason: None,
            stop: None,
        };
        assert_eq!(
            step.json().to_string(),
            r#"{"cycles":6,"executed":1,"halted":false,"pc":20481,"session_id":"a"}"#
        );
        let stop = Stop {
            address: 0x5006,
            instruction: Some("B $5003".into()),
            message: None,
            target: None,
            idle_loop: Some(Span {
                start: 0x5003,
                end: 0x5006,
            }),
        };
        let stepped = Stepped {
            reason: Some(StopReason::IdleLoop),
            stop: Some(stop),
            ..step
        }
        .json();
        assert_eq!(stepped["reason"], "idle_loop");
        assert_eq!(
            stepped["stop"]["loop"],
            json!({"start": 0x5003, "end": 0x5006})
        );
        assert!(stepped["stop"].get("message").is_none());
        let set = BreakpointSet {
            status: BreakpointStatus::AlreadySet,
            address: 1,
            breakpoints: vec![1],
        };
        assert_eq!(set.json()["status"], "already_set");
        let kinds: Vec<Value> = [Region::Ram8, Region::Ram16, Region::Rom]
            .iter()
            .map(Json::json)
            .collect();
        assert_eq!(kinds, [json!("ram8"), json!("ram16"), json!("rom")]);
    }
}

/// `cp1600_run_frames`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FramesRun {
    /// Frames run to their end.
    pub frames: u32,
    /// Frames whose handler enabled the display.
    pub display_enabled: u32,
    /// The run as `cp1600_run` answers it.
    pub run: RunOutcome,
}

/// `cp1600_controller`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControllerSet {
    /// The session.
    pub session_id: String,
    /// 0 left, 1 right.
    pub controller: usize,
    /// What is held, by name.
    pub pressed: Vec<String>,
    /// The word the program reads.
    pub reads: u16,
}

/// `cp1600_screenshot`: the caption and the PNG.
#[derive(Clone, Debug)]
pub struct Screenshot {
    /// One line per thing shown.
    pub caption: String,
    /// The picture.
    pub png: Vec<u8>,
}
