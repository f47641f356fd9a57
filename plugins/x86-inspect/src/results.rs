//! What the tools return, as plain Rust values. `component` turns each into
//! its WIT record, whose `@key` tags and left-out `none` fields make the
//! host print the same JSON that serde prints here: the serde derives keep
//! the shapes testable natively and give the registers resource its JSON.
//! The four Spice86 tools keep Spice86's keys (`generalPurpose`, `EAX`,
//! `calledCount`, ...); benchtop's own tools use snake_case keys.

use serde::Serialize;

use crate::dos::Format;
pub use crate::machine::MachineState;
use crate::machine::{MachineId, StopReason};

/// The 32-bit general-purpose registers (the upper halves read 0 on an
/// 8086/80186).
#[derive(Serialize, Debug, Clone, PartialEq)]
// The field names are the registers and flags Spice86 prints.
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
// The field names are the registers and flags Spice86 prints.
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
// The field names are the registers and flags Spice86 prints.
#[allow(non_snake_case, missing_docs)]
pub struct InstructionPointer {
    pub IP: u16,
}

/// The status flags Spice86 reports.
#[derive(Serialize, Debug, Clone, PartialEq)]
// The field names are the registers and flags Spice86 prints.
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
pub struct Registers {
    /// EAX..EBP.
    pub general_purpose: GeneralPurpose,
    /// CS, DS, ES, FS, GS, SS.
    pub segments: Segments,
    /// IP.
    pub instruction_pointer: InstructionPointer,
    /// CarryFlag..InterruptFlag.
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
pub struct Loaded {
    /// The new machine (the default from now on).
    pub machine: MachineId,
    /// Path of the program.
    pub program: String,
    /// COM or EXE.
    pub format: Format,
    /// The CPU model emulated: `8086` or `80186`.
    pub cpu: &'static str,
    /// File size in bytes.
    pub size: u64,
    /// Segment of the PSP, hex.
    pub psp_segment: String,
    /// Segment the image was loaded at, hex.
    pub load_segment: String,
    /// Entry point CS:IP.
    pub entry_point: String,
    /// Initial SS:SP.
    pub stack: String,
    /// Whether functions and the CFG are recorded.
    pub tracking: bool,
    /// Where standard input comes from.
    pub stdin: String,
    /// `> FILE` or `>> FILE` when standard output is redirected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// KiB kept per console stream.
    pub console_kib: u32,
    /// KiB the machine may write to files.
    pub write_limit_kib: u32,
    /// The tools to call next.
    pub next: &'static str,
    /// Another client's idle machines removed to make room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One row of `x86_list_machines`.
#[derive(Serialize, Debug, Clone)]
pub struct MachineRow {
    /// Its id.
    pub machine: MachineId,
    /// Path of the program.
    pub program: String,
    /// `8086` or `80186`.
    pub cpu: &'static str,
    /// CS:IP.
    pub address: String,
    /// Instructions executed since the load.
    pub instructions: u64,
    /// Whether it can run on.
    pub state: MachineState,
    /// The exit code, once it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// Whether functions and the CFG are recorded.
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

/// `x86_snapshot`.
#[derive(Serialize, Debug, Clone)]
pub struct SnapshotTaken {
    /// The machine saved.
    pub machine: MachineId,
    /// The snapshot layout's version.
    pub format_version: u16,
    /// Size of `snapshot` in bytes (base64 is ASCII: a byte a character),
    /// all of which this result carries.
    pub bytes: u32,
    /// CS:IP when saved.
    pub address: String,
    /// Instructions since the load when saved.
    pub instructions: u64,
    /// The machine as base64 text, for `x86_restore_machine`.
    pub snapshot: String,
}

/// `x86_restore_machine`.
#[derive(Serialize, Debug, Clone)]
pub struct MachineRestored {
    /// The new machine's id (now the default).
    pub machine: MachineId,
    /// Path of its program (where it was loaded).
    pub program: String,
    /// The host folder that is drive C: (the program's folder): where the
    /// program's DOS file calls create, write and delete files.
    pub drive_c: String,
    /// CS:IP.
    pub address: String,
    /// Instructions since the load.
    pub instructions: u64,
    /// ready, halted or exited.
    pub state: MachineState,
    /// What the restored machine does not have.
    pub note: String,
}

/// `read_memory`.
#[derive(Serialize, Debug, Clone)]
pub struct MemoryRead {
    /// The first linear address.
    pub address: u32,
    /// Bytes read.
    pub length: u32,
    /// The bytes as uppercase hex.
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
pub struct FunctionInfo {
    /// Entry address.
    pub address: String,
    /// A name from how it was reached.
    pub name: String,
    /// Times called.
    pub called_count: u64,
    /// Always false (Spice86 only: a C# override).
    pub has_override: bool,
    /// Up to 8 call sites.
    pub callers: Vec<String>,
}

/// `list_functions`.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCatalogue {
    /// Most called first, at most the limit.
    pub functions: Vec<FunctionInfo>,
    /// Functions in the catalogue.
    pub total_count: u32,
    /// Calls to functions past the catalogue bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_calls: Option<u64>,
    /// What that bound is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_note: Option<String>,
    /// Says how many were left out by the limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One execution context of `read_cfg_cpu_graph`.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CfgContext {
    /// Nesting depth (0: the program).
    pub depth: u32,
    /// Where the context began.
    pub entry_point: String,
    /// Its last executed instruction, once it ran one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_executed_address: Option<String>,
}

/// One instruction node of `read_cfg_cpu_graph`.
#[derive(Serialize, Debug, Clone)]
pub struct CfgNode {
    /// Node id, as successors name it.
    pub id: u32,
    /// Where the instruction is.
    pub address: String,
    /// `BYTES|text`: the bytes this variant of the instruction was seen with.
    pub asm: String,
    /// Ids of the nodes executed next.
    pub successors: Vec<u32>,
    /// Number of nodes leading here.
    pub predecessors: u32,
    /// Times executed.
    pub executions: u64,
}

/// What tracking could not record (`read_cfg_cpu_graph`).
#[derive(Serialize, Debug, Clone)]
pub struct CfgDropped {
    /// Executions of instructions that got no node.
    pub instructions: u64,
    /// Edges not recorded.
    pub edges: u64,
    /// Fault contexts not recorded.
    pub contexts: u64,
    /// The bounds.
    pub note: String,
}

/// `read_cfg_cpu_graph`: Spice86's five fields, then benchtop's graph.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CfgGraph {
    /// Depth of the current context.
    pub current_context_depth: u32,
    /// Where the current context began.
    pub current_context_entry_point: String,
    /// Entry points of every context.
    pub total_entry_points: u32,
    /// Those entry points.
    pub entry_point_addresses: Vec<String>,
    /// `None` (the string) before any instruction ran, as Spice86 prints it.
    pub last_executed_address: String,
    /// Instruction nodes.
    pub node_count: u32,
    /// Edges recorded.
    pub edge_count: u64,
    /// Addresses with several variants.
    pub self_modified_addresses: u64,
    /// The context stack, outermost first.
    pub contexts: Vec<CfgContext>,
    /// Nodes in discovery order, up to the limit.
    pub nodes: Vec<CfgNode>,
    /// Whether nodes were left out by the limit.
    pub truncated: bool,
    /// What tracking bounds left out, when anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<CfgDropped>,
    /// Says how many nodes were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The kind of a breakpoint (Spice86's `type`).
pub use crate::watch::Kind as BreakpointKind;

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `x86_run`.
#[derive(Serialize, Debug, Clone)]
pub struct RunResult {
    /// The machine that ran.
    pub machine: MachineId,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// The exit code, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// The breakpoint that stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakpoint: Option<u32>,
    /// The access that hit a memory or I/O breakpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit: Option<String>,
    /// Instructions executed by this call.
    pub instructions: u64,
    /// Instructions since the load.
    pub total_instructions: u64,
    /// CS:IP where it stopped.
    pub address: String,
    /// Standard output written by this call (its first 2000 bytes).
    pub output: String,
    /// What output was left out and what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_note: Option<String>,
    /// `SERVICE xCOUNT` for each unsupported service called; `None` when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_services: Option<Vec<String>>,
}

/// `x86_step`: a run's result plus what the steps did.
#[derive(Serialize, Debug, Clone)]
pub struct StepResult {
    /// Where the steps stopped, as a run reports it.
    #[serde(flatten)]
    pub run: RunResult,
    /// The last 20 executed instructions.
    pub executed: Vec<DisasmLine>,
    /// Says how many instructions ran when more than 20 did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The registers after the steps.
    pub registers: Registers,
    /// The instruction at CS:IP.
    pub next_instruction: DisasmLine,
}

/// A breakpoint (`x86_add_breakpoint`, `x86_list_breakpoints`).
#[derive(Serialize, Debug, Clone)]
pub struct Breakpoint {
    /// Its id.
    pub id: u32,
    /// The linear address it stops at (or the first of its range), or
    /// the first port of an I/O breakpoint.
    pub linear: u32,
    /// What it stops on.
    #[serde(rename = "type")]
    pub kind: BreakpointKind,
    /// Addresses (or ports) it covers from `linear`: 1 for execution.
    pub length: u32,
    /// The condition that must hold for it to stop a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
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
pub struct BreakpointList {
    /// The machine.
    pub machine: MachineId,
    /// Its breakpoints, by id.
    pub breakpoints: Vec<Breakpoint>,
}

/// `x86_read_disassembly`.
#[derive(Serialize, Debug, Clone)]
pub struct Disassembly {
    /// The machine.
    pub machine: MachineId,
    /// The model decoded for.
    pub cpu: &'static str,
    /// The instructions, in order.
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
pub struct InputState {
    /// Where standard input comes from.
    pub stdin: String,
    /// Bytes typed and not yet read.
    pub pending: u64,
    /// Bytes read so far.
    pub consumed: u64,
    /// Whether reads past the queue get end of file.
    pub ended: bool,
}

/// DOS file writes of a machine (`x86_read_console`).
#[derive(Serialize, Debug, Clone)]
pub struct FileWrites {
    /// Bytes written to files.
    pub bytes_written: u64,
    /// Bytes the machine may write in all.
    pub write_limit: u64,
    /// Bytes one file may grow to.
    pub file_size_limit: u64,
    /// Writes cut short as on a full disk.
    pub disk_full: u64,
}

/// `read_stack`.
#[derive(Serialize, Debug, Clone)]
pub struct StackRead {
    /// SS:SP.
    pub top: String,
    /// The words from SS:SP up.
    pub words: Vec<StackWord>,
}

/// One stack word.
#[derive(Serialize, Debug, Clone)]
pub struct StackWord {
    /// Where it is, `SSSS:OOOO`.
    pub address: String,
    /// The word.
    pub value: u16,
}

/// `read_interrupt_vector`.
#[derive(Serialize, Debug, Clone)]
pub struct InterruptVector {
    /// The vector number.
    pub vector: u8,
    /// Where it points, `SSSS:OOOO`.
    pub address: String,
    /// Whose handler it is.
    pub handler: &'static str,
}

pub use crate::dos::{DosState, MemoryBlock, OpenHandle};

/// What `search_memory` looks for.
#[derive(Debug, Clone, Default)]
pub struct MemorySearch {
    /// Hex bytes.
    pub pattern: Option<String>,
    /// Text, one byte a character.
    pub text: Option<String>,
    /// Segment of the start (default 0).
    pub start_segment: Option<u16>,
    /// Offset of the start (default 0).
    pub start_offset: Option<u16>,
    /// Bytes searched (default: to the end of memory).
    pub length: Option<u32>,
    /// Most places returned (default 20, at most 100).
    pub limit: Option<u32>,
}

/// `search_memory`.
#[derive(Serialize, Debug, Clone)]
pub struct MemoryFound {
    /// The bytes looked for, hex.
    pub pattern: String,
    /// Where they are, `SSSS:OOOO`.
    pub matches: Vec<String>,
    /// Places past `limit`, not listed.
    pub more: usize,
}

/// `x86_screenshot`: the display now.
#[derive(Debug, Clone)]
pub struct Screen {
    /// The machine.
    pub machine: u64,
    /// The video mode, e.g. `03h`.
    pub mode: String,
    /// What the mode is, e.g. `80x25 text`.
    pub description: String,
    /// In a text mode, the cursor: `row R, column C`.
    pub cursor: Option<String>,
    /// In a text mode, the screen's text.
    pub text: Option<String>,
    /// The picture (640×400 PNG); none for a mode not drawn.
    pub png: Option<Vec<u8>>,
}

/// `x86_read_console`.
#[derive(Serialize, Debug, Clone)]
pub struct ConsoleRead {
    /// The machine.
    pub machine: MachineId,
    /// Standard output from the offset.
    pub stdout: String,
    /// Bytes ever written to it.
    pub stdout_bytes: u64,
    /// Bytes of it dropped, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_dropped: Option<u64>,
    /// Standard error from the offset.
    pub stderr: String,
    /// Bytes ever written to it.
    pub stderr_bytes: u64,
    /// Bytes of it dropped, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_dropped: Option<u64>,
    /// INT 10h output from the offset.
    pub screen: String,
    /// Bytes ever written to it.
    pub screen_bytes: u64,
    /// Bytes of it dropped, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_dropped: Option<u64>,
    /// INT 21h calls by function, in function order.
    pub int21_calls: Vec<ServiceCount>,
    /// The keyboard queue.
    pub input: InputState,
    /// File-write totals, once the program wrote a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FileWrites>,
    /// What was left out or cut short, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Unsupported services called, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_services: Option<Vec<ServiceCount>>,
}

/// `x86_write_console_input`.
#[derive(Serialize, Debug, Clone)]
pub struct InputQueued {
    /// The machine.
    pub machine: MachineId,
    /// Bytes queued by this call.
    pub queued: u64,
    /// Bytes waiting to be read.
    pub pending: u64,
    /// Whether the input is ended.
    pub ended: bool,
    /// What to call next.
    pub next: &'static str,
}
