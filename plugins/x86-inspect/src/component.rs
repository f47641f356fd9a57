//! wit-bindgen glue: argument records in, the tools' [`crate::results`]
//! out as their WIT records (the registers resource as JSON text).

use std::cell::RefCell;

use crate::cpu::Model;
use crate::dos::Format;
use crate::machine::StopReason;
use crate::offers;
use crate::results as r;
use crate::tools::{Clients, LoadOptions, RegisterWrite, Session, ToolError as DomainError};

wit_bindgen::generate!({
    path: "../../wit/x86-inspect",
    world: "plugin",
    generate_all,
});

use benchtop::host::content::{Block, Image};
use benchtop::host::{blobs, caller, durable, progress, resources};
use exports::benchtop::x86_inspect::tools::{self as wit, CpuModel, Guest, ToolError};

thread_local! {
    static SESSION: RefCell<Clients> = RefCell::new(Clients::default());
}

/// Runs a tool (or a resource, prompt or completion) on the calling
/// client's machines only.
fn with<T>(f: impl FnOnce(&mut Session) -> Result<T, DomainError>) -> Result<T, ToolError> {
    for_caller(f).map_err(|e| ToolError {
        code: e.code.into(),
        message: e.message,
    })
}

/// Runs `f` on the calling client's machines only.
fn for_caller<T>(f: impl FnOnce(&mut Session) -> T) -> T {
    let caller = caller::id();
    SESSION.with(|s| s.borrow_mut().with(&caller, f))
}

/// Runs a tool like [`with`], then tells the host which of the caller's
/// resources the call changed (once per URI per call; the host passes it to
/// this caller's subscriptions alone). Compared whatever the outcome, as a
/// failed run may still have moved the machine.
fn tool<T>(f: impl FnOnce(&mut Session) -> Result<T, DomainError>) -> Result<T, ToolError> {
    with(|s| {
        let before = s.looks();
        let r = f(s);
        let after = s.looks();
        for uri in offers::changed_uris(&before, &after) {
            resources::changed_for_caller(&uri);
        }
        // For the state store replicas share (a no-op without one).
        let (changed, ended) = plugin_kit::changes::item_changes(&before, &after);
        changed
            .into_iter()
            .for_each(|id| durable::changed(&id.to_string()));
        ended
            .into_iter()
            .for_each(|id| durable::closed(&id.to_string()));
        r
    })
}

/// A machine handle as the host keys it (its digits).
fn machine_id(handle: &str) -> Option<crate::machine::MachineId> {
    handle.parse().ok()
}

impl exports::benchtop::host::durable_state::Guest for Plugin {
    fn save(handle: String) -> Result<Option<blobs::Blob>, String> {
        let Some(id) = machine_id(&handle) else {
            return Ok(None);
        };
        let text = for_caller(|s| s.save_durable(id))?;
        text.map(|t| blobs::keep(t.as_bytes())).transpose()
    }

    fn restore(handle: String, saved: blobs::Blob) -> Result<(), String> {
        let id = machine_id(&handle).ok_or_else(|| format!("`{handle}` is not a machine id"))?;
        let text = plugin_kit::blob::text(blobs::read(saved, 0, u64::MAX)?)?;
        for_caller(|s| s.restore_durable(id, &text))
    }

    fn forget(handle: String) {
        if let Some(id) = machine_id(&handle) {
            for_caller(|s| s.forget(id));
        }
    }
}

// Off wasm the plugin is type-checked but not exported: a native cdylib
// cannot carry export names such as `benchtop:x86-inspect/tools@0.1.0#x86-run`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Plugin;

impl Guest for Plugin {
    fn x86_load_program(a: wit::LoadProgramArgs) -> Result<wit::Loaded, ToolError> {
        let path = plugin_kit::paths::resolve(&a.path);
        let model = match a.cpu {
            Some(CpuModel::I8086) => Model::I8086,
            _ => Model::I80186,
        };
        let o = LoadOptions {
            command_tail: a.command_tail,
            model: Some(model),
            tracking: a.tracking,
            machine: a.machine,
            stdin: a.stdin,
            stdin_file: a.stdin_file.map(|p| plugin_kit::paths::resolve(&p)),
            stdin_open: a.stdin_open,
            console_kib: a.console_kib,
            write_limit_kib: a.write_limit_kib,
        };
        tool(|s| s.load(&path, &o)).map(Into::into)
    }

    fn x86_list_machines() -> Result<wit::MachineList, ToolError> {
        tool(|s| Ok(s.list_machines())).map(Into::into)
    }

    fn x86_remove_machine(a: wit::RemoveMachineArgs) -> Result<wit::MachineRemoved, ToolError> {
        tool(|s| s.remove_machine(a.machine)).map(Into::into)
    }

    fn x86_snapshot(a: wit::MachineArgs) -> Result<wit::SnapshotTaken, ToolError> {
        tool(|s| s.snapshot(a.machine)).map(Into::into)
    }

    fn x86_restore_machine(a: wit::RestoreMachineArgs) -> Result<wit::MachineRestored, ToolError> {
        tool(|s| s.restore_machine(&a.snapshot)).map(Into::into)
    }

    fn read_cpu_registers(a: wit::MachineArgs) -> Result<wit::Registers, ToolError> {
        tool(|s| s.read_cpu_registers(a.machine)).map(Into::into)
    }

    fn read_memory(a: wit::ReadMemoryArgs) -> Result<wit::MemoryRead, ToolError> {
        tool(|s| s.read_memory(a.address, a.length, a.machine)).map(Into::into)
    }

    fn read_stack(a: wit::ReadStackArgs) -> Result<wit::StackRead, ToolError> {
        let v = tool(|s| s.read_stack(a.count, a.machine))?;
        Ok(wit::StackRead {
            top: v.top,
            words: v
                .words
                .into_iter()
                .map(|w| wit::StackWord {
                    address: w.address,
                    value: w.value,
                })
                .collect(),
        })
    }

    fn read_interrupt_vector(
        a: wit::ReadInterruptVectorArgs,
    ) -> Result<wit::InterruptVector, ToolError> {
        let v = tool(|s| s.read_interrupt_vector(a.vector_number, a.machine))?;
        Ok(wit::InterruptVector {
            vector: v.vector,
            address: v.address,
            handler: v.handler.into(),
        })
    }

    fn search_memory(a: wit::SearchMemoryArgs) -> Result<wit::MemoryFound, ToolError> {
        let q = r::MemorySearch {
            pattern: a.pattern,
            text: a.text,
            start_segment: a.start_segment,
            start_offset: a.start_offset,
            length: a.length,
            limit: a.limit,
        };
        let v = tool(|s| s.search_memory(&q, a.machine))?;
        Ok(wit::MemoryFound {
            pattern: v.pattern,
            matches: v.matches,
            more: u32::try_from(v.more).unwrap_or(u32::MAX),
        })
    }

    fn x86_write_memory(a: wit::WriteMemoryArgs) -> Result<wit::MemoryWritten, ToolError> {
        tool(|s| s.write_memory(a.address, &a.data, a.machine)).map(Into::into)
    }

    fn x86_write_registers(a: wit::WriteRegistersArgs) -> Result<wit::Registers, ToolError> {
        let w = RegisterWrite {
            ax: a.ax,
            bx: a.bx,
            cx: a.cx,
            dx: a.dx,
            si: a.si,
            di: a.di,
            sp: a.sp,
            bp: a.bp,
            cs: a.cs,
            ds: a.ds,
            es: a.es,
            ss: a.ss,
            ip: a.ip,
            flags: a.flags,
        };
        tool(|s| s.write_registers(w, a.machine)).map(Into::into)
    }

    fn list_functions(a: wit::ListFunctionsArgs) -> Result<wit::FunctionCatalogue, ToolError> {
        tool(|s| s.list_functions(a.limit, a.machine)).map(Into::into)
    }

    fn read_cfg_cpu_graph(a: wit::ReadCfgCpuGraphArgs) -> Result<wit::CfgGraph, ToolError> {
        tool(|s| s.read_cfg_cpu_graph(a.node_limit, a.machine)).map(Into::into)
    }

    fn x86_run(a: wit::RunArgs) -> Result<wit::RunResult, ToolError> {
        let mut report =
            |done: u64, total: u64| progress::report(done, total, &format!("{done} instructions"));
        tool(|s| s.run(a.max_instructions, a.machine, &mut report)).map(Into::into)
    }

    fn x86_step(a: wit::StepArgs) -> Result<wit::StepResult, ToolError> {
        tool(|s| s.step(a.count, a.over.unwrap_or(false), a.machine)).map(Into::into)
    }

    fn x86_add_breakpoint(a: wit::AddBreakpointArgs) -> Result<wit::BreakpointAdded, ToolError> {
        let spec = crate::tools::BreakpointSpec {
            address: a.address,
            segment: a.segment,
            offset: a.offset,
            kind: a.type_.map(kind_of),
            length: a.length,
            condition: a.condition,
        };
        tool(|s| s.add_breakpoint_spec(&spec, a.machine)).map(Into::into)
    }

    fn x86_remove_breakpoint(
        a: wit::RemoveBreakpointArgs,
    ) -> Result<wit::BreakpointRemoved, ToolError> {
        tool(|s| s.remove_breakpoint(a.id, a.machine)).map(Into::into)
    }

    fn x86_list_breakpoints(a: wit::MachineArgs) -> Result<wit::BreakpointList, ToolError> {
        tool(|s| s.list_breakpoints(a.machine)).map(Into::into)
    }

    fn x86_read_disassembly(a: wit::ReadDisassemblyArgs) -> Result<wit::Disassembly, ToolError> {
        tool(|s| s.read_disassembly(a.segment, a.offset, a.instruction_count, a.machine))
            .map(Into::into)
    }

    fn x86_read_console(a: wit::ReadConsoleArgs) -> Result<wit::ConsoleRead, ToolError> {
        tool(|s| s.read_console(a.offset, a.max_bytes, a.machine)).map(Into::into)
    }

    fn x86_write_console_input(
        a: wit::WriteConsoleInputArgs,
    ) -> Result<wit::InputQueued, ToolError> {
        let keys = a.keys.unwrap_or_default();
        tool(|s| s.write_console_keys(a.text.as_deref(), &keys, a.end, a.machine)).map(Into::into)
    }

    fn read_dos_state(a: wit::MachineArgs) -> Result<wit::DosState, ToolError> {
        let v = tool(|s| s.read_dos_state(a.machine))?;
        Ok(wit::DosState {
            machine: v.machine,
            psp: v.psp,
            program: v.program,
            drive_c: v.drive_c,
            command_tail: v.command_tail,
            environment: v.environment,
            dta: v.dta,
            memory_blocks: v
                .memory_blocks
                .into_iter()
                .map(|b| wit::MemoryBlock {
                    segment: b.segment,
                    paragraphs: b.paragraphs,
                })
                .collect(),
            free_paragraphs: v.free_paragraphs,
            handles: v
                .handles
                .into_iter()
                .map(|h| wit::OpenHandle {
                    handle: h.handle,
                    kind: h.kind.into(),
                    position: h.position,
                    size: h.size,
                })
                .collect(),
            fcb_files: v.fcb_files,
            stdin: v.stdin,
        })
    }

    fn x86_screenshot(a: wit::MachineArgs) -> Result<Vec<Block>, ToolError> {
        let shot = tool(|s| s.screenshot(a.machine))?;
        let mut caption = format!(
            "machine: {}\nmode: {} ({})\n",
            shot.machine, shot.mode, shot.description
        );
        if let Some(cursor) = &shot.cursor {
            caption.push_str(&format!("cursor: {cursor}\n"));
        }
        if shot.png.is_none() {
            caption.push_str("image: none (this mode is not drawn)\n");
        }
        if let Some(text) = &shot.text {
            caption.push_str("---\n");
            caption.push_str(text);
            caption.push('\n');
        }
        let mut blocks = vec![Block::Text(caption)];
        if let Some(png) = shot.png {
            blocks.push(Block::Image(Image {
                mime_type: "image/png".into(),
                data: png,
            }));
        }
        Ok(blocks)
    }
}

#[cfg(target_arch = "wasm32")]
export!(Plugin);

impl exports::benchtop::x86_inspect::offers::Guest for Plugin {
    fn skill_dos_debugging() -> String {
        // A skill file, served as `skill://dos-debugging/SKILL.md`.
        include_str!("../skills/dos-debugging/SKILL.md").into()
    }

    fn machine_registers(machine: String) -> Result<String, ToolError> {
        with(|s| offers::registers(s, &machine))
    }

    fn machine_memory(
        machine: String,
        segment: String,
        offset: String,
        length: String,
    ) -> Result<String, ToolError> {
        with(|s| offers::memory(s, &machine, &segment, &offset, &length))
    }

    fn machine_console(machine: String) -> Result<String, ToolError> {
        with(|s| offers::console(s, &machine))
    }

    fn x86_debug(symptom: String, machine: Option<String>) -> Result<String, ToolError> {
        with(|s| offers::debug_prompt(s, &symptom, machine.as_deref()))
    }

    fn complete(_target: String, argument: String, value: String) -> Vec<String> {
        let caller = caller::id();
        SESSION.with(|s| {
            s.borrow_mut()
                .with(&caller, |s| offers::complete(s, &argument, &value))
        })
    }
}

// The tools' results as their WIT records. Field for field: the WIT's
// `@key` tags give the records the keys serde gives the results.

impl From<r::Registers> for wit::Registers {
    fn from(v: r::Registers) -> Self {
        let (g, s, f) = (v.general_purpose, v.segments, v.flags);
        wit::Registers {
            general_purpose: wit::GeneralPurposeRegisters {
                eax: g.EAX,
                ebx: g.EBX,
                ecx: g.ECX,
                edx: g.EDX,
                esi: g.ESI,
                edi: g.EDI,
                esp: g.ESP,
                ebp: g.EBP,
            },
            segments: wit::SegmentRegisters {
                cs: s.CS,
                ds: s.DS,
                es: s.ES,
                fs: s.FS,
                gs: s.GS,
                ss: s.SS,
            },
            instruction_pointer: wit::InstructionPointer {
                ip: v.instruction_pointer.IP,
            },
            flags: wit::CpuFlags {
                carry_flag: f.CarryFlag,
                parity_flag: f.ParityFlag,
                auxiliary_flag: f.AuxiliaryFlag,
                zero_flag: f.ZeroFlag,
                sign_flag: f.SignFlag,
                direction_flag: f.DirectionFlag,
                overflow_flag: f.OverflowFlag,
                interrupt_flag: f.InterruptFlag,
            },
        }
    }
}

impl From<r::Loaded> for wit::Loaded {
    fn from(v: r::Loaded) -> Self {
        wit::Loaded {
            machine: v.machine,
            program: v.program,
            format: match v.format {
                Format::Com => wit::ProgramFormat::Com,
                Format::Exe => wit::ProgramFormat::Exe,
            },
            cpu: v.cpu.into(),
            size: v.size,
            psp_segment: v.psp_segment,
            load_segment: v.load_segment,
            entry_point: v.entry_point,
            stack: v.stack,
            tracking: v.tracking,
            stdin: v.stdin,
            stdout: v.stdout,
            console_kib: v.console_kib,
            write_limit_kib: v.write_limit_kib,
            next: v.next.into(),
            note: v.note,
        }
    }
}

impl From<r::MachineList> for wit::MachineList {
    fn from(v: r::MachineList) -> Self {
        let row = |m: r::MachineRow| wit::MachineRow {
            machine: m.machine,
            program: m.program,
            cpu: m.cpu.into(),
            address: m.address,
            instructions: m.instructions,
            state: machine_state(m.state),
            exit_code: m.exit_code,
            tracking: m.tracking,
        };
        wit::MachineList {
            machines: v.machines.into_iter().map(row).collect(),
            default: v.default,
        }
    }
}

fn machine_state(v: r::MachineState) -> wit::MachineState {
    match v {
        r::MachineState::Ready => wit::MachineState::Ready,
        r::MachineState::Halted => wit::MachineState::Halted,
        r::MachineState::Exited => wit::MachineState::Exited,
    }
}

impl From<r::SnapshotTaken> for wit::SnapshotTaken {
    fn from(v: r::SnapshotTaken) -> Self {
        wit::SnapshotTaken {
            machine: v.machine,
            format_version: v.format_version,
            bytes: v.bytes,
            address: v.address,
            instructions: v.instructions,
            snapshot: v.snapshot,
        }
    }
}

impl From<r::MachineRestored> for wit::MachineRestored {
    fn from(v: r::MachineRestored) -> Self {
        wit::MachineRestored {
            machine: v.machine,
            program: v.program,
            drive_c: v.drive_c,
            address: v.address,
            instructions: v.instructions,
            state: machine_state(v.state),
            note: v.note,
        }
    }
}

impl From<r::MachineRemoved> for wit::MachineRemoved {
    fn from(v: r::MachineRemoved) -> Self {
        wit::MachineRemoved {
            removed: v.removed,
            remaining: v.remaining,
        }
    }
}

impl From<r::MemoryRead> for wit::MemoryRead {
    fn from(v: r::MemoryRead) -> Self {
        wit::MemoryRead {
            address: v.address,
            length: v.length,
            data: v.data,
        }
    }
}

impl From<r::MemoryWritten> for wit::MemoryWritten {
    fn from(v: r::MemoryWritten) -> Self {
        wit::MemoryWritten {
            address: v.address,
            length: v.length,
            wrapped: v.wrapped,
        }
    }
}

impl From<r::FunctionCatalogue> for wit::FunctionCatalogue {
    fn from(v: r::FunctionCatalogue) -> Self {
        let function = |f: r::FunctionInfo| wit::FunctionInfo {
            address: f.address,
            name: f.name,
            called_count: f.called_count,
            has_override: f.has_override,
            callers: f.callers,
        };
        wit::FunctionCatalogue {
            functions: v.functions.into_iter().map(function).collect(),
            total_count: v.total_count,
            dropped_calls: v.dropped_calls,
            limit_note: v.limit_note,
            note: v.note,
        }
    }
}

impl From<r::CfgGraph> for wit::CfgGraph {
    fn from(v: r::CfgGraph) -> Self {
        let context = |c: r::CfgContext| wit::CfgContext {
            depth: c.depth,
            context_entry_point: c.entry_point,
            last_executed_address: c.last_executed_address,
        };
        let node = |n: r::CfgNode| wit::CfgNode {
            id: n.id,
            address: n.address,
            asm: n.asm,
            successors: n.successors,
            predecessors: n.predecessors,
            executions: n.executions,
        };
        wit::CfgGraph {
            current_context_depth: v.current_context_depth,
            current_context_entry_point: v.current_context_entry_point,
            total_entry_points: v.total_entry_points,
            entry_point_addresses: v.entry_point_addresses,
            last_executed_address: v.last_executed_address,
            node_count: v.node_count,
            edge_count: v.edge_count,
            self_modified_addresses: v.self_modified_addresses,
            contexts: v.contexts.into_iter().map(context).collect(),
            nodes: v.nodes.into_iter().map(node).collect(),
            truncated: v.truncated,
            dropped: v.dropped.map(|d| wit::CfgDropped {
                instructions: d.instructions,
                edges: d.edges,
                contexts: d.contexts,
                note: d.note,
            }),
            note: v.note,
        }
    }
}

fn stop_reason(s: StopReason) -> wit::StopReason {
    match s {
        StopReason::Exited(_) => wit::StopReason::Exited,
        StopReason::Breakpoint(_) => wit::StopReason::Breakpoint,
        StopReason::Budget => wit::StopReason::Budget,
        StopReason::Halted => wit::StopReason::Halted,
        StopReason::Cancelled => wit::StopReason::Cancelled,
        StopReason::TimeLimit => wit::StopReason::TimeLimit,
        StopReason::WaitingForInput => wit::StopReason::WaitingForInput,
    }
}

impl From<r::RunResult> for wit::RunResult {
    fn from(v: r::RunResult) -> Self {
        wit::RunResult {
            machine: v.machine,
            stop_reason: stop_reason(v.stop_reason),
            exit_code: v.exit_code,
            breakpoint: v.breakpoint,
            hit: v.hit,
            instructions: v.instructions,
            total_instructions: v.total_instructions,
            address: v.address,
            output: v.output,
            output_note: v.output_note,
            unsupported_services: v.unsupported_services,
        }
    }
}

impl From<r::DisasmLine> for wit::DisasmLine {
    fn from(v: r::DisasmLine) -> Self {
        wit::DisasmLine {
            address: v.address,
            linear: v.linear,
            bytes: v.bytes,
            asm: v.asm,
        }
    }
}

impl From<r::StepResult> for wit::StepResult {
    fn from(v: r::StepResult) -> Self {
        let run = v.run;
        wit::StepResult {
            machine: run.machine,
            stop_reason: stop_reason(run.stop_reason),
            exit_code: run.exit_code,
            breakpoint: run.breakpoint,
            instructions: run.instructions,
            total_instructions: run.total_instructions,
            address: run.address,
            output: run.output,
            output_note: run.output_note,
            unsupported_services: run.unsupported_services,
            executed: v.executed.into_iter().map(Into::into).collect(),
            note: v.note,
            registers: v.registers.into(),
            next_instruction: v.next_instruction.into(),
        }
    }
}

fn breakpoint_kind(k: r::BreakpointKind) -> wit::BreakpointKind {
    use r::BreakpointKind as R;
    use wit::BreakpointKind as W;
    match k {
        R::Execution => W::Execution,
        R::MemoryRead => W::MemoryRead,
        R::MemoryWrite => W::MemoryWrite,
        R::MemoryAccess => W::MemoryAccess,
        R::IoRead => W::IoRead,
        R::IoWrite => W::IoWrite,
        R::IoAccess => W::IoAccess,
    }
}

fn kind_of(k: wit::BreakpointKind) -> r::BreakpointKind {
    use r::BreakpointKind as R;
    use wit::BreakpointKind as W;
    match k {
        W::Execution => R::Execution,
        W::MemoryRead => R::MemoryRead,
        W::MemoryWrite => R::MemoryWrite,
        W::MemoryAccess => R::MemoryAccess,
        W::IoRead => R::IoRead,
        W::IoWrite => R::IoWrite,
        W::IoAccess => R::IoAccess,
    }
}

impl From<r::BreakpointAdded> for wit::BreakpointAdded {
    fn from(v: r::BreakpointAdded) -> Self {
        wit::BreakpointAdded {
            id: v.breakpoint.id,
            linear: v.breakpoint.linear,
            type_: breakpoint_kind(v.breakpoint.kind),
            length: v.breakpoint.length,
            condition: v.breakpoint.condition,
            machine: v.machine,
        }
    }
}

impl From<r::BreakpointRemoved> for wit::BreakpointRemoved {
    fn from(v: r::BreakpointRemoved) -> Self {
        wit::BreakpointRemoved {
            removed: v.removed,
            remaining: v.remaining,
        }
    }
}

impl From<r::BreakpointList> for wit::BreakpointList {
    fn from(v: r::BreakpointList) -> Self {
        let breakpoint = |b: r::Breakpoint| wit::Breakpoint {
            id: b.id,
            linear: b.linear,
            type_: breakpoint_kind(b.kind),
            length: b.length,
            condition: b.condition,
        };
        wit::BreakpointList {
            machine: v.machine,
            breakpoints: v.breakpoints.into_iter().map(breakpoint).collect(),
        }
    }
}

impl From<r::Disassembly> for wit::Disassembly {
    fn from(v: r::Disassembly) -> Self {
        wit::Disassembly {
            machine: v.machine,
            cpu: v.cpu.into(),
            instructions: v.instructions.into_iter().map(Into::into).collect(),
        }
    }
}

fn service_counts(v: Vec<r::ServiceCount>) -> Vec<wit::ServiceCount> {
    v.into_iter()
        .map(|c| wit::ServiceCount {
            service: c.service,
            calls: c.calls,
        })
        .collect()
}

impl From<r::ConsoleRead> for wit::ConsoleRead {
    fn from(v: r::ConsoleRead) -> Self {
        wit::ConsoleRead {
            machine: v.machine,
            stdout: v.stdout,
            stdout_bytes: v.stdout_bytes,
            stdout_dropped: v.stdout_dropped,
            stderr: v.stderr,
            stderr_bytes: v.stderr_bytes,
            stderr_dropped: v.stderr_dropped,
            screen: v.screen,
            screen_bytes: v.screen_bytes,
            screen_dropped: v.screen_dropped,
            int21_calls: service_counts(v.int21_calls),
            input: wit::InputState {
                stdin: v.input.stdin,
                pending: v.input.pending,
                consumed: v.input.consumed,
                ended: v.input.ended,
            },
            files: v.files.map(|f| wit::FileWrites {
                bytes_written: f.bytes_written,
                write_limit: f.write_limit,
                file_size_limit: f.file_size_limit,
                disk_full: f.disk_full,
            }),
            note: v.note,
            unsupported_services: v.unsupported_services.map(service_counts),
        }
    }
}

impl From<r::InputQueued> for wit::InputQueued {
    fn from(v: r::InputQueued) -> Self {
        wit::InputQueued {
            machine: v.machine,
            queued: v.queued,
            pending: v.pending,
            ended: v.ended,
            next: v.next.into(),
        }
    }
}
