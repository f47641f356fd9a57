//! wit-bindgen glue: converts WIT records into calls on [`Sessions`] and
//! serializes the JSON results.

use crate::offers;
use crate::tools::{
    Clients, LoadOptions, RegisterWrite, Sessions, ToolError, ToolResult, UntilOptions,
};
use std::cell::RefCell;

wit_bindgen::generate!({
    path: "../../wit/cp1600",
    world: "plugin",
    generate_all,
});

use benchtop::host::{caller, progress, resources};
use exports::benchtop::cp1600::tools as wit;

thread_local! {
    static SESSIONS: RefCell<Clients> = RefCell::new(Clients::new());
}

/// Runs a tool on the calling client's sessions only, then tells the host
/// which of their resources the call changed (once per URI per call; the
/// host passes it to the subscriptions of this caller alone).
fn with(f: impl FnOnce(&mut Sessions) -> ToolResult) -> Result<String, wit::ToolError> {
    on_sessions(|s| {
        let before = s.looks();
        let r = f(s);
        // A failed call may still have changed something (a load that
        // failed halfway), so compare whatever the outcome.
        for uri in offers::changed_uris(&before, &s.looks()) {
            resources::changed_for_caller(&uri);
        }
        r
    })
    .map(|v| v.to_string())
}

/// Runs `f` on the calling client's sessions only, any result type.
fn on_sessions<T>(
    f: impl FnOnce(&mut Sessions) -> Result<T, ToolError>,
) -> Result<T, wit::ToolError> {
    let caller = caller::id();
    SESSIONS
        .with(|s| s.borrow_mut().with(&caller, f))
        .map_err(|e: ToolError| wit::ToolError {
            code: e.code.to_string(),
            message: e.message,
        })
}

fn report(done: u64, total: u64, message: &str) -> bool {
    progress::report(done, total, message)
}

struct Plugin;

impl wit::Guest for Plugin {
    fn cp1600_create_session(args: wit::CreateSessionArgs) -> Result<String, wit::ToolError> {
        with(|s| s.create_session(args.session_id.as_deref()))
    }

    fn cp1600_list_sessions() -> Result<String, wit::ToolError> {
        with(|s| s.list_sessions())
    }

    fn cp1600_switch_session(args: wit::SessionArgs) -> Result<String, wit::ToolError> {
        with(|s| s.switch_session(&args.session_id))
    }

    fn cp1600_destroy_session(args: wit::SessionArgs) -> Result<String, wit::ToolError> {
        with(|s| s.destroy_session(&args.session_id))
    }

    fn cp1600_load_rom(args: wit::LoadRomArgs) -> Result<String, wit::ToolError> {
        let opts = LoadOptions {
            load_address: args.load_address,
            cfg_path: args.cfg_path,
            entry_point: args.entry_point,
            keep_existing: args.keep_existing.unwrap_or(false),
            start: args.start,
            exec_path: args.exec_path,
            grom_path: args.grom_path,
        };
        with(|s| s.load_rom(args.session_id.as_deref(), &args.rom_path, &opts))
    }

    fn cp1600_step(args: wit::StepArgs) -> Result<String, wit::ToolError> {
        with(|s| {
            s.step(
                args.session_id.as_deref(),
                args.count,
                args.checks,
                &mut report,
            )
        })
    }

    fn cp1600_run(args: wit::RunArgs) -> Result<String, wit::ToolError> {
        with(|s| {
            s.run(
                args.session_id.as_deref(),
                args.max_cycles,
                args.checks,
                &mut report,
            )
        })
    }

    fn cp1600_run_until(args: wit::RunUntilArgs) -> Result<String, wit::ToolError> {
        let u = UntilOptions {
            pc: args.pc,
            register: args.register,
            register_value: args.register_value,
            address: args.address,
            memory_value: args.memory_value,
            stop_on_breakpoint: args.stop_on_breakpoint,
            max_cycles: args.max_cycles,
            checks: args.checks,
        };
        with(|s| s.run_until(args.session_id.as_deref(), &u, &mut report))
    }

    fn cp1600_reset(args: wit::ResetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.reset(args.session_id.as_deref(), args.preserve_rom))
    }

    fn cp1600_get_state(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.get_state(args.session_id.as_deref()))
    }

    fn cp1600_get_registers(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.get_registers(args.session_id.as_deref()))
    }

    fn cp1600_get_flags(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.get_flags(args.session_id.as_deref()))
    }

    fn cp1600_disassemble(args: wit::DisassembleArgs) -> Result<String, wit::ToolError> {
        with(|s| {
            s.disassemble(
                args.session_id.as_deref(),
                args.start_address,
                args.end_address,
            )
        })
    }

    fn cp1600_examine_memory(args: wit::ExamineMemoryArgs) -> Result<String, wit::ToolError> {
        with(|s| s.examine_memory(args.session_id.as_deref(), args.start_address, args.count))
    }

    fn cp1600_memory_map(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.memory_map(args.session_id.as_deref()))
    }

    fn cp1600_set_breakpoint(args: wit::BreakpointArgs) -> Result<String, wit::ToolError> {
        with(|s| s.set_breakpoint(args.session_id.as_deref(), args.address))
    }

    fn cp1600_clear_breakpoint(args: wit::ClearBreakpointArgs) -> Result<String, wit::ToolError> {
        with(|s| s.clear_breakpoint(args.session_id.as_deref(), args.address))
    }

    fn cp1600_list_breakpoints(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.list_breakpoints(args.session_id.as_deref()))
    }

    fn cp1600_configure_trace(args: wit::ConfigureTraceArgs) -> Result<String, wit::ToolError> {
        with(|s| s.configure_trace(args.session_id.as_deref(), args.enabled, args.capacity))
    }

    fn cp1600_get_trace(args: wit::GetTraceArgs) -> Result<String, wit::ToolError> {
        with(|s| s.get_trace(args.session_id.as_deref(), args.count, args.offset))
    }

    fn cp1600_write_memory(args: wit::WriteMemoryArgs) -> Result<String, wit::ToolError> {
        with(|s| s.write_memory(args.session_id.as_deref(), args.address, &args.values))
    }

    fn cp1600_write_registers(args: wit::WriteRegistersArgs) -> Result<String, wit::ToolError> {
        let w = RegisterWrite {
            r: [
                args.r0, args.r1, args.r2, args.r3, args.r4, args.r5, args.r6, args.r7,
            ],
            s: args.s,
            z: args.z,
            ov: args.ov,
            c: args.c,
            i: args.i,
            halted: args.halted,
        };
        with(|s| s.write_registers(args.session_id.as_deref(), &w))
    }

    fn cp1600_interrupt(args: wit::TargetArgs) -> Result<String, wit::ToolError> {
        with(|s| s.interrupt(args.session_id.as_deref()))
    }
}

impl exports::benchtop::cp1600::offers::Guest for Plugin {
    fn session_state(session_id: String) -> Result<String, wit::ToolError> {
        on_sessions(|s| offers::state(s, &session_id))
    }

    fn session_memory(
        session_id: String,
        start: String,
        end: String,
    ) -> Result<String, wit::ToolError> {
        on_sessions(|s| offers::memory(s, &session_id, &start, &end))
    }

    fn session_disassembly(session_id: String, address: String) -> Result<String, wit::ToolError> {
        on_sessions(|s| offers::disassembly(s, &session_id, &address))
    }

    fn session_trace(session_id: String) -> Result<String, wit::ToolError> {
        on_sessions(|s| offers::trace(s, &session_id))
    }

    fn cp1600_debug(symptom: String, session_id: Option<String>) -> Result<String, wit::ToolError> {
        on_sessions(|s| offers::debug_prompt(s, &symptom, session_id.as_deref()))
    }

    fn complete(_target: String, argument: String, value: String) -> Vec<String> {
        let caller = caller::id();
        SESSIONS.with(|s| {
            s.borrow_mut()
                .with(&caller, |s| offers::complete(s, &argument, &value))
        })
    }
}

// Exported symbols carry `:` and `@` in their names, which a native cdylib's
// linker version script rejects; natively the glue is only type-checked.
#[cfg(target_arch = "wasm32")]
export!(Plugin);
