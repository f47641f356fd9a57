//! What the tools return, as plain Rust values. `component` turns each into
//! its WIT record, whose `@key` tags and left-out `none` fields make the
//! host print the same JSON that serde prints here: the serde derives keep
//! the shapes testable natively and give the registers resource its JSON.
//! The four Spice86 tools keep Spice86's keys (`generalPurpose`, `EAX`,
//! `calledCount`, ...); benchtop's own tools use snake_case keys.

use serde::Serialize;

use crate::dos::Format;
use crate::machine::{MachineId, StopReason};

/// The 32-bit general-purpose registers (the upper halves read 0 on an
/// 8086/80186).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[allow(non_snake_case, missing_docs)]
pub struct GeneralPurpose {
    pub EAX: u32,
    pub EBX: u32,
    pub ECX: u32,
    pub EDX: u32,
    pub ESI: u32,
    pub EDI: u32,
    pub ESP: u32,
    pub EBP: u32,
}

/// The segment registers (FS and GS read 0: the 8086/80186 has none).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[allow(non_snake_case, missing_docs)]
pub struct Segments {
    pub CS: u16,
    pub DS: u16,
    pub ES: u16,
    pub FS: u16,
    pub GS: u16,
    pub SS: u16,
}

/// The instruction pointer.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[allow(non_snake_case, missing_docs)]
pub struct InstructionPointer {
    pub IP: u16,
}

/// The status flags Spice86 reports.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[allow(non_snake_case, missing_docs)]
pub struct Flags {
    pub CarryFlag: bool,
    pub ParityFlag: bool,
    pub AuxiliaryFlag: bool,
    pub ZeroFlag: bool,
    pub SignFlag: bool,
    pub DirectionFlag: bool,
    pub OverflowFlag: bool,
    pub InterruptFlag: bool,
}

/// `read_cpu_registers` (and `x86_write_registers`), in Spice86's shape.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct Registers {
    pub general_purpose: GeneralPurpose,
    pub segments: Segments,
    pub instruction_pointer: InstructionPointer,
    pub flags: Flags,
}

/// One disassembled instruction.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DisasmLine {
    /// `SSSS:OOOO`.
    pub address: String,
    /// The linear address.
    pub linear: u32,
    /// The instruction's bytes in hex.
    pub bytes: String,
    /// Intel syntax.
    pub asm: String,
}

/// `x86_load_program`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct Loaded {
    pub machine: MachineId,
    pub program: String,
    pub format: Format,
    pub cpu: &'static str,
    pub size: u64,
    pub psp_segment: String,
    pub load_segment: String,
    pub entry_point: String,
    pub stack: String,
    pub tracking: bool,
    pub stdin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    pub console_kib: u32,
    pub write_limit_kib: u32,
    pub next: &'static str,
    /// Another client's idle machines removed to make room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One row of `x86_list_machines`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct MachineRow {
    pub machine: MachineId,
    pub program: String,
    pub cpu: &'static str,
    pub address: String,
    pub instructions: u64,
    pub state: MachineState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    pub tracking: bool,
}

/// `x86_list_machines`.
#[derive(Serialize, Debug, Clone)]
pub struct MachineList {
    /// The caller's machines, the default last.
    pub machines: Vec<MachineRow>,
    /// The default machine, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<MachineId>,
}

/// `x86_remove_machine`.
#[derive(Serialize, Debug, Clone)]
pub struct MachineRemoved {
    /// The removed machine.
    pub removed: MachineId,
    /// How many machines the caller still has.
    pub remaining: u32,
}

/// `read_memory`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct MemoryRead {
    pub address: u32,
    pub length: u32,
    pub data: String,
}

/// `x86_write_memory`.
#[derive(Serialize, Debug, Clone)]
pub struct MemoryWritten {
    /// Where the write started.
    pub address: u32,
    /// Bytes written.
    pub length: u32,
    /// Whether the write ran past 1 MiB and wrapped to address 0.
    pub wrapped: bool,
}

/// One function of `list_functions`.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct FunctionInfo {
    pub address: String,
    pub name: String,
    pub called_count: u64,
    pub has_override: bool,
    pub callers: Vec<String>,
}

/// `list_functions`.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct FunctionCatalogue {
    pub functions: Vec<FunctionInfo>,
    pub total_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One execution context of `read_cfg_cpu_graph`.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct CfgContext {
    pub depth: u32,
    pub entry_point: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_executed_address: Option<String>,
}

/// One instruction node of `read_cfg_cpu_graph`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct CfgNode {
    pub id: u32,
    pub address: String,
    /// `BYTES|text`: the bytes this variant of the instruction was seen with.
    pub asm: String,
    pub successors: Vec<u32>,
    pub predecessors: u32,
    pub executions: u64,
}

/// What tracking could not record (`read_cfg_cpu_graph`).
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct CfgDropped {
    pub instructions: u64,
    pub edges: u64,
    pub contexts: u64,
    pub note: String,
}

/// `read_cfg_cpu_graph`: Spice86's five fields, then benchtop's graph.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct CfgGraph {
    pub current_context_depth: u32,
    pub current_context_entry_point: String,
    pub total_entry_points: u32,
    pub entry_point_addresses: Vec<String>,
    /// `None` (the string) before any instruction ran, as Spice86 prints it.
    pub last_executed_address: String,
    pub node_count: u32,
    pub edge_count: u64,
    pub self_modified_addresses: u64,
    pub contexts: Vec<CfgContext>,
    pub nodes: Vec<CfgNode>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<CfgDropped>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Whether a machine can run on.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MachineState {
    /// It can run or step.
    Ready,
    /// HLT with no interrupt source.
    Halted,
    /// The program exited.
    Exited,
}

/// The kind of a breakpoint: benchtop has execution breakpoints only.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BreakpointKind {
    /// Stops before the instruction at its address executes.
    Execution,
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `x86_run`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct RunResult {
    pub machine: MachineId,
    pub stop_reason: StopReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakpoint: Option<u32>,
    pub instructions: u64,
    pub total_instructions: u64,
    pub address: String,
    pub output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_note: Option<String>,
    /// `SERVICE xCOUNT` for each unsupported service called; `None` when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_services: Option<Vec<String>>,
}

/// `x86_step`: a run's result plus what the steps did.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct StepResult {
    #[serde(flatten)]
    pub run: RunResult,
    /// The last 20 executed instructions.
    pub executed: Vec<DisasmLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub registers: Registers,
    pub next_instruction: DisasmLine,
}

/// A breakpoint (`x86_add_breakpoint`, `x86_list_breakpoints`); every one
/// is an execution breakpoint.
#[derive(Serialize, Debug, Clone)]
pub struct Breakpoint {
    /// Its id.
    pub id: u32,
    /// The linear address it stops before.
    pub linear: u32,
    /// Always [`BreakpointKind::Execution`].
    #[serde(rename = "type")]
    pub kind: BreakpointKind,
}

/// `x86_add_breakpoint`.
#[derive(Serialize, Debug, Clone)]
pub struct BreakpointAdded {
    /// The new breakpoint.
    #[serde(flatten)]
    pub breakpoint: Breakpoint,
    /// The machine it belongs to.
    pub machine: MachineId,
}

/// `x86_remove_breakpoint`.
#[derive(Serialize, Debug, Clone)]
pub struct BreakpointRemoved {
    /// The removed breakpoint's id.
    pub removed: u32,
    /// How many breakpoints the machine still has.
    pub remaining: u32,
}

/// `x86_list_breakpoints`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct BreakpointList {
    pub machine: MachineId,
    pub breakpoints: Vec<Breakpoint>,
}

/// `x86_read_disassembly`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct Disassembly {
    pub machine: MachineId,
    pub cpu: &'static str,
    pub instructions: Vec<DisasmLine>,
}

/// How often the program called one DOS service.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ServiceCount {
    /// The service, e.g. `21h/09h`.
    pub service: String,
    /// How many times it was called.
    pub calls: u64,
}

/// The keyboard input queue (`x86_read_console`).
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct InputState {
    pub stdin: String,
    pub pending: u64,
    pub consumed: u64,
    pub ended: bool,
}

/// DOS file writes of a machine (`x86_read_console`).
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct FileWrites {
    pub bytes_written: u64,
    pub write_limit: u64,
    pub file_size_limit: u64,
    pub disk_full: u64,
}

/// `x86_read_console`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct ConsoleRead {
    pub machine: MachineId,
    pub stdout: String,
    pub stdout_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_dropped: Option<u64>,
    pub stderr: String,
    pub stderr_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_dropped: Option<u64>,
    pub screen: String,
    pub screen_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_dropped: Option<u64>,
    pub int21_calls: Vec<ServiceCount>,
    pub input: InputState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FileWrites>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_services: Option<Vec<ServiceCount>>,
}

/// `x86_write_console_input`.
#[derive(Serialize, Debug, Clone)]
#[allow(missing_docs)]
pub struct InputQueued {
    pub machine: MachineId,
    pub queued: u64,
    pub pending: u64,
    pub ended: bool,
    pub next: &'static str,
}
