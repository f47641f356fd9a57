//! wit-bindgen glue: argument records in, JSON strings out.

use std::cell::RefCell;

use crate::cpu::Model;
use crate::offers;
use crate::tools::{Clients, LoadOptions, RegisterWrite, Session, ToolError as DomainError};

wit_bindgen::generate!({
    path: "../../wit/x86-inspect",
    world: "plugin",
    generate_all,
});

use benchtop::host::{caller, progress, resources};
use exports::benchtop::x86_inspect::tools::{self as wit, CpuModel, Guest, ToolError};

thread_local! {
    static SESSION: RefCell<Clients> = RefCell::new(Clients::default());
}

/// Runs a tool (or a resource, prompt or completion) on the calling
/// client's machines only.
fn with<T>(f: impl FnOnce(&mut Session) -> Result<T, DomainError>) -> Result<T, ToolError> {
    let caller = caller::id();
    SESSION
        .with(|s| s.borrow_mut().with(&caller, f))
        .map_err(|e| ToolError {
            code: e.code.into(),
            message: e.message,
        })
}

/// Runs a tool like [`with`], then tells the host which of the caller's
/// resources the call changed (once per URI per call; the host passes it to
/// this caller's subscriptions alone). Compared whatever the outcome, as a
/// failed run may still have moved the machine.
fn tool<T>(f: impl FnOnce(&mut Session) -> Result<T, DomainError>) -> Result<T, ToolError> {
    with(|s| {
        let before = s.looks();
        let r = f(s);
        for uri in offers::changed_uris(&before, &s.looks()) {
            resources::changed_for_caller(&uri);
        }
        r
    })
}

// Off wasm the plugin is type-checked but not exported: a native cdylib
// cannot carry export names such as `benchtop:x86-inspect/tools@0.1.0#x86-run`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Plugin;

impl Guest for Plugin {
    fn x86_load_program(a: wit::LoadProgramArgs) -> Result<String, ToolError> {
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
        tool(|s| s.load(&path, &o))
    }

    fn x86_list_machines() -> Result<String, ToolError> {
        tool(|s| Ok(s.list_machines()))
    }

    fn x86_remove_machine(a: wit::RemoveMachineArgs) -> Result<String, ToolError> {
        tool(|s| s.remove_machine(a.machine))
    }

    fn read_cpu_registers(a: wit::MachineArgs) -> Result<String, ToolError> {
        tool(|s| s.read_cpu_registers(a.machine))
    }

    fn read_memory(a: wit::ReadMemoryArgs) -> Result<String, ToolError> {
        tool(|s| s.read_memory(a.address, a.length, a.machine))
    }

    fn x86_write_memory(a: wit::WriteMemoryArgs) -> Result<String, ToolError> {
        tool(|s| s.write_memory(a.address, &a.data, a.machine))
    }

    fn x86_write_registers(a: wit::WriteRegistersArgs) -> Result<String, ToolError> {
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
        tool(|s| s.write_registers(w, a.machine))
    }

    fn list_functions(a: wit::ListFunctionsArgs) -> Result<String, ToolError> {
        tool(|s| s.list_functions(a.limit, a.machine))
    }

    fn read_cfg_cpu_graph(a: wit::ReadCfgCpuGraphArgs) -> Result<String, ToolError> {
        tool(|s| s.read_cfg_cpu_graph(a.node_limit, a.machine))
    }

    fn x86_run(a: wit::RunArgs) -> Result<String, ToolError> {
        let mut report =
            |done: u64, total: u64| progress::report(done, total, &format!("{done} instructions"));
        tool(|s| s.run(a.max_instructions, a.machine, &mut report))
    }

    fn x86_step(a: wit::StepArgs) -> Result<String, ToolError> {
        tool(|s| s.step(a.count, a.machine))
    }

    fn x86_add_breakpoint(a: wit::AddBreakpointArgs) -> Result<String, ToolError> {
        tool(|s| s.add_breakpoint(a.address, a.segment, a.offset, a.machine))
    }

    fn x86_remove_breakpoint(a: wit::RemoveBreakpointArgs) -> Result<String, ToolError> {
        tool(|s| s.remove_breakpoint(a.id, a.machine))
    }

    fn x86_list_breakpoints(a: wit::MachineArgs) -> Result<String, ToolError> {
        tool(|s| s.list_breakpoints(a.machine))
    }

    fn x86_read_disassembly(a: wit::ReadDisassemblyArgs) -> Result<String, ToolError> {
        tool(|s| s.read_disassembly(a.segment, a.offset, a.instruction_count, a.machine))
    }

    fn x86_read_console(a: wit::ReadConsoleArgs) -> Result<String, ToolError> {
        tool(|s| s.read_console(a.offset, a.max_bytes, a.machine))
    }

    fn x86_write_console_input(a: wit::WriteConsoleInputArgs) -> Result<String, ToolError> {
        tool(|s| s.write_console_input(a.text.as_deref(), a.end, a.machine))
    }
}

#[cfg(target_arch = "wasm32")]
export!(Plugin);

impl exports::benchtop::x86_inspect::offers::Guest for Plugin {
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
