//! wit-bindgen glue: converts WIT argument records into calls on
//! [`Sessions`], and the [`results`](crate::results) documents into the WIT
//! result records the host serves with an `outputSchema`.

use crate::cart::StartKind;
use crate::machine::StopReason;
use crate::memory::Region;
use crate::offers;
use crate::results as r;
use crate::tools::{Clients, LoadOptions, RegisterWrite, Sessions, ToolError, UntilOptions};
use std::cell::RefCell;

wit_bindgen::generate!({
    path: "../../wit/cp1600",
    world: "plugin",
    generate_all,
});

use benchtop::host::content::{Block, Image};
use benchtop::host::{blobs, caller, durable, progress, resources};
use exports::benchtop::cp1600::tools as wit;

thread_local! {
    static SESSIONS: RefCell<Clients> = RefCell::new(Clients::new());
}

/// Runs a tool on the calling client's sessions only, then tells the host
/// which of their resources the call changed (once per URI per call; the
/// host passes it to the subscriptions of this caller alone).
fn with<T, W: From<T>>(
    f: impl FnOnce(&mut Sessions) -> Result<T, ToolError>,
) -> Result<W, wit::ToolError> {
    on_sessions(|s| {
        let before = s.looks();
        let r = f(s);
        // A failed call may still have changed something (a load that
        // failed halfway), so compare whatever the outcome.
        let after = s.looks();
        for uri in offers::changed_uris(&before, &after) {
            resources::changed_for_caller(&uri);
        }
        mark_durable(&before, &after);
        r
    })
    .map(W::from)
}

/// Tells the host which of the caller's sessions the call created, changed
/// or ended, for the state store replicas share (a no-op without one).
fn mark_durable<L: PartialEq>(before: &[(String, L)], after: &[(String, L)]) {
    let (changed, ended) = plugin_kit::changes::item_changes(before, after);
    changed.into_iter().for_each(|id| durable::changed(id));
    ended.into_iter().for_each(|id| durable::closed(id));
}

/// Runs `f` on the calling client's sessions only.
fn for_caller<T>(f: impl FnOnce(&mut Sessions) -> T) -> T {
    let caller = caller::id();
    SESSIONS.with(|s| s.borrow_mut().with(&caller, f))
}

/// Runs `f` on the calling client's sessions only, any result type.
fn on_sessions<T>(
    f: impl FnOnce(&mut Sessions) -> Result<T, ToolError>,
) -> Result<T, wit::ToolError> {
    for_caller(f).map_err(|e: ToolError| wit::ToolError {
        code: e.code.to_string(),
        message: e.message,
    })
}

fn report(done: u64, total: u64, message: &str) -> bool {
    progress::report(done, total, message)
}

struct Plugin;

impl exports::benchtop::host::durable_state::Guest for Plugin {
    fn save(handle: String) -> Result<Option<blobs::Blob>, String> {
        let text = for_caller(|s| s.save_durable(&handle));
        text.map(|t| blobs::keep(t.as_bytes())).transpose()
    }

    fn restore(handle: String, saved: blobs::Blob) -> Result<(), String> {
        let text = plugin_kit::blob::text(blobs::read(saved, 0, u64::MAX)?)?;
        for_caller(|s| s.restore_durable(&handle, &text))
    }

    fn forget(handle: String) {
        for_caller(|s| s.forget(&handle));
    }
}

impl wit::Guest for Plugin {
    fn cp1600_create_session(
        args: wit::CreateSessionArgs,
    ) -> Result<wit::SessionCreated, wit::ToolError> {
        with(|s| s.create_session_from(args.session_id.as_deref(), args.snapshot.as_deref()))
    }

    fn cp1600_snapshot(args: wit::TargetArgs) -> Result<wit::SnapshotTaken, wit::ToolError> {
        with(|s| s.snapshot(args.session_id.as_deref()))
    }

    fn cp1600_list_sessions() -> Result<wit::SessionList, wit::ToolError> {
        with(|s| s.list_sessions())
    }

    fn cp1600_switch_session(
        args: wit::SessionArgs,
    ) -> Result<wit::SessionSwitched, wit::ToolError> {
        with(|s| s.switch_session(&args.session_id))
    }

    fn cp1600_destroy_session(
        args: wit::SessionArgs,
    ) -> Result<wit::SessionDestroyed, wit::ToolError> {
        with(|s| s.destroy_session(&args.session_id))
    }

    fn cp1600_load_rom(args: wit::LoadRomArgs) -> Result<wit::RomLoaded, wit::ToolError> {
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

    fn cp1600_step(args: wit::StepArgs) -> Result<wit::Stepped, wit::ToolError> {
        with(|s| {
            s.step(
                args.session_id.as_deref(),
                args.count,
                args.checks,
                &mut report,
            )
        })
    }

    fn cp1600_run(args: wit::RunArgs) -> Result<wit::RunOutcome, wit::ToolError> {
        with(|s| {
            s.run(
                args.session_id.as_deref(),
                args.max_cycles,
                args.checks,
                &mut report,
            )
        })
    }

    fn cp1600_run_until(args: wit::RunUntilArgs) -> Result<wit::RunOutcome, wit::ToolError> {
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

    fn cp1600_reset(args: wit::ResetArgs) -> Result<wit::ResetDone, wit::ToolError> {
        with(|s| s.reset(args.session_id.as_deref(), args.preserve_rom))
    }

    fn cp1600_get_state(args: wit::TargetArgs) -> Result<wit::CpuSnapshot, wit::ToolError> {
        with(|s| s.get_state(args.session_id.as_deref()))
    }

    fn cp1600_get_registers(args: wit::TargetArgs) -> Result<wit::RegisterValues, wit::ToolError> {
        with(|s| s.get_registers(args.session_id.as_deref()))
    }

    fn cp1600_get_flags(args: wit::TargetArgs) -> Result<wit::FlagValues, wit::ToolError> {
        with(|s| s.get_flags(args.session_id.as_deref()))
    }

    fn cp1600_disassemble(args: wit::DisassembleArgs) -> Result<wit::Disassembly, wit::ToolError> {
        with(|s| {
            s.disassemble(
                args.session_id.as_deref(),
                args.start_address,
                args.end_address,
            )
        })
    }

    fn cp1600_examine_memory(
        args: wit::ExamineMemoryArgs,
    ) -> Result<wit::MemoryWords, wit::ToolError> {
        with(|s| s.examine_memory(args.session_id.as_deref(), args.start_address, args.count))
    }

    fn cp1600_memory_map(args: wit::TargetArgs) -> Result<wit::MemoryMap, wit::ToolError> {
        with(|s| s.memory_map(args.session_id.as_deref()))
    }

    fn cp1600_set_breakpoint(
        args: wit::BreakpointArgs,
    ) -> Result<wit::BreakpointSet, wit::ToolError> {
        with(|s| s.set_breakpoint(args.session_id.as_deref(), args.address))
    }

    fn cp1600_clear_breakpoint(
        args: wit::ClearBreakpointArgs,
    ) -> Result<wit::BreakpointsCleared, wit::ToolError> {
        with(|s| s.clear_breakpoint(args.session_id.as_deref(), args.address))
    }

    fn cp1600_list_breakpoints(
        args: wit::TargetArgs,
    ) -> Result<wit::BreakpointList, wit::ToolError> {
        with(|s| s.list_breakpoints(args.session_id.as_deref()))
    }

    fn cp1600_configure_trace(
        args: wit::ConfigureTraceArgs,
    ) -> Result<wit::TraceSettings, wit::ToolError> {
        with(|s| s.configure_trace(args.session_id.as_deref(), args.enabled, args.capacity))
    }

    fn cp1600_get_trace(args: wit::GetTraceArgs) -> Result<wit::TracePage, wit::ToolError> {
        with(|s| s.get_trace(args.session_id.as_deref(), args.count, args.offset))
    }

    fn cp1600_write_memory(
        args: wit::WriteMemoryArgs,
    ) -> Result<wit::MemoryWritten, wit::ToolError> {
        with(|s| s.write_memory(args.session_id.as_deref(), args.address, &args.values))
    }

    fn cp1600_write_registers(
        args: wit::WriteRegistersArgs,
    ) -> Result<wit::CpuSnapshot, wit::ToolError> {
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

    fn cp1600_interrupt(args: wit::TargetArgs) -> Result<wit::InterruptRaised, wit::ToolError> {
        with(|s| s.interrupt(args.session_id.as_deref()))
    }

    fn cp1600_screenshot(args: wit::TargetArgs) -> Result<Vec<Block>, wit::ToolError> {
        let shot = with::<_, r::Screenshot>(|s| s.screenshot(args.session_id.as_deref()))?;
        Ok(vec![
            Block::Text(shot.caption),
            Block::Image(Image {
                mime_type: "image/png".into(),
                data: shot.png,
            }),
        ])
    }

    fn cp1600_run_frames(args: wit::RunFramesArgs) -> Result<wit::FramesRun, wit::ToolError> {
        with(|s| {
            s.run_frames(
                args.session_id.as_deref(),
                args.frames,
                args.checks,
                &mut report,
            )
        })
    }

    fn cp1600_controller(args: wit::ControllerArgs) -> Result<wit::ControllerSet, wit::ToolError> {
        let which = match args.controller {
            wit::ControllerSide::Left => 0,
            wit::ControllerSide::Right => 1,
        };
        with(|s| {
            s.controller(
                args.session_id.as_deref(),
                which,
                args.disc.as_deref(),
                args.key.as_deref(),
                args.buttons.as_deref().unwrap_or_default(),
            )
        })
    }
}

impl From<r::FramesRun> for wit::FramesRun {
    fn from(v: r::FramesRun) -> Self {
        Self {
            frames: v.frames,
            display_enabled: v.display_enabled,
            run: v.run.into(),
        }
    }
}

impl From<r::ControllerSet> for wit::ControllerSet {
    fn from(v: r::ControllerSet) -> Self {
        Self {
            session_id: v.session_id,
            controller: if v.controller == 0 {
                wit::ControllerSide::Left
            } else {
                wit::ControllerSide::Right
            },
            pressed: v.pressed,
            reads: v.reads,
        }
    }
}

impl exports::benchtop::cp1600::offers::Guest for Plugin {
    fn skill_cp1600_debugging() -> String {
        // A skill file, served as `skill://cp1600-debugging/SKILL.md`.
        include_str!("../skills/cp1600-debugging/SKILL.md").into()
    }

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

// ---- results: domain documents to WIT records, field for field ----------

fn opt<T, W: From<T>>(v: Option<T>) -> Option<W> {
    v.map(W::from)
}

fn all<T, W: From<T>>(v: Vec<T>) -> Vec<W> {
    v.into_iter().map(W::from).collect()
}

impl From<r::SessionCreated> for wit::SessionCreated {
    fn from(v: r::SessionCreated) -> Self {
        Self {
            session_id: v.session_id,
            status: v.status.into(),
            active: v.active,
            note: v.note,
            restored: v.restored.map(|r| wit::Restored {
                pc: r.pc,
                cycles: r.cycles,
                instructions: r.instructions,
                breakpoints: r.breakpoints,
                rom_path: r.rom_path,
            }),
        }
    }
}

impl From<r::SnapshotTaken> for wit::SnapshotTaken {
    fn from(v: r::SnapshotTaken) -> Self {
        Self {
            session_id: v.session_id,
            format_version: v.format_version,
            bytes: v.bytes,
            pc: v.pc,
            cycles: v.cycles,
            snapshot: v.snapshot,
        }
    }
}

impl From<r::SessionStatus> for wit::SessionStatus {
    fn from(v: r::SessionStatus) -> Self {
        match v {
            r::SessionStatus::Idle => Self::Idle,
            r::SessionStatus::Running => Self::Running,
            r::SessionStatus::Halted => Self::Halted,
        }
    }
}

impl From<r::SessionInfo> for wit::SessionInfo {
    fn from(v: r::SessionInfo) -> Self {
        Self {
            session_id: v.session_id,
            created_at: v.created_at,
            rom_loaded: v.rom_loaded,
            rom_path: v.rom_path,
            rom_format: v.rom_format.map(Into::into),
            state: v.state.into(),
            active: v.active,
        }
    }
}

impl From<r::SessionList> for wit::SessionList {
    fn from(v: r::SessionList) -> Self {
        Self {
            sessions: all(v.sessions),
        }
    }
}

impl From<r::SessionSwitched> for wit::SessionSwitched {
    fn from(v: r::SessionSwitched) -> Self {
        Self {
            session_id: v.session_id,
            status: v.status.into(),
        }
    }
}

impl From<r::SessionDestroyed> for wit::SessionDestroyed {
    fn from(v: r::SessionDestroyed) -> Self {
        Self {
            session_id: v.session_id,
            status: v.status.into(),
            active_session: v.active_session,
        }
    }
}

impl From<r::Span> for wit::Span {
    fn from(v: r::Span) -> Self {
        Self {
            start: v.start,
            end: v.end,
        }
    }
}

impl From<r::HeaderInfo> for wit::CartHeader {
    fn from(v: r::HeaderInfo) -> Self {
        Self {
            title: v.title,
            year: v.year,
            start: v.start,
            title_address: v.title_address,
            code_after_title: v.code_after_title,
            flags: v.flags,
        }
    }
}

impl From<StartKind> for wit::StartKind {
    fn from(v: StartKind) -> Self {
        match v {
            StartKind::Plain => Self::LoadAddress,
            StartKind::Header => Self::Header,
            StartKind::QuickBoot => Self::QuickBoot,
            StartKind::Exec => Self::Exec,
        }
    }
}

impl From<r::CfgVar> for wit::CfgVar {
    fn from(v: r::CfgVar) -> Self {
        Self {
            name: v.name,
            value: v.value,
        }
    }
}

impl From<r::RomLoaded> for wit::RomLoaded {
    fn from(v: r::RomLoaded) -> Self {
        Self {
            status: v.status.into(),
            session_id: v.session_id,
            rom_size: v.rom_size,
            load_address: v.load_address,
            entry_point: v.entry_point,
            format: v.format.into(),
            segments: all(v.segments),
            header: opt(v.header),
            start: v.start.into(),
            start_note: v.start_note,
            quick_boot: v.quick_boot,
            exec: v.exec,
            grom: v.grom,
            cfg_vars: v.cfg_vars.map(all),
            jlp: v.jlp,
            warnings: v.warnings,
        }
    }
}

impl From<StopReason> for wit::StopReason {
    fn from(v: StopReason) -> Self {
        match v {
            StopReason::Halted => Self::Halted,
            StopReason::MaxCycles => Self::MaxCyclesReached,
            StopReason::Count => Self::CountReached,
            StopReason::Breakpoint => Self::Breakpoint,
            StopReason::PcReached => Self::PcReached,
            StopReason::RegisterMatch => Self::RegisterMatch,
            StopReason::MemoryMatch => Self::MemoryMatch,
            StopReason::Cancelled => Self::Cancelled,
            StopReason::TimeLimit => Self::TimeLimit,
            StopReason::UnmappedExecution => Self::UnmappedExecution,
            StopReason::JumpToNoCode => Self::JumpToNoCode,
            StopReason::StackOutsideRam => Self::StackOutsideRam,
            StopReason::IdleLoop => Self::IdleLoop,
        }
    }
}

impl From<r::Stop> for wit::Stop {
    fn from(v: r::Stop) -> Self {
        Self {
            address: v.address,
            instruction: v.instruction,
            message: v.message,
            target: v.target,
            idle_loop: opt(v.idle_loop),
        }
    }
}

impl From<r::Stepped> for wit::Stepped {
    fn from(v: r::Stepped) -> Self {
        Self {
            executed: v.executed,
            halted: v.halted,
            pc: v.pc,
            cycles: v.cycles,
            session_id: v.session_id,
            reason: opt(v.reason),
            stop: opt(v.stop),
        }
    }
}

impl From<r::RunOutcome> for wit::RunOutcome {
    fn from(v: r::RunOutcome) -> Self {
        Self {
            halted: v.halted,
            reason: v.reason.into(),
            cycles: v.cycles,
            pc: v.pc,
            executed: v.executed,
            cycles_run: v.cycles_run,
            session_id: v.session_id,
            note: v.note,
            stop: v.stop.into(),
        }
    }
}

impl From<r::ResetDone> for wit::ResetDone {
    fn from(v: r::ResetDone) -> Self {
        Self {
            status: v.status.into(),
            pc: v.pc,
            session_id: v.session_id,
            rom_loaded: v.rom_loaded,
        }
    }
}

impl From<r::Registers> for wit::Registers {
    fn from(v: r::Registers) -> Self {
        Self {
            r0: v.r0,
            r1: v.r1,
            r2: v.r2,
            r3: v.r3,
            r4: v.r4,
            r5: v.r5,
            r6: v.r6,
            r7: v.r7,
        }
    }
}

impl From<r::Flags> for wit::CpuFlags {
    fn from(v: r::Flags) -> Self {
        Self {
            c: v.c,
            ov: v.ov,
            z: v.z,
            s: v.s,
        }
    }
}

impl From<r::CpuSnapshot> for wit::CpuSnapshot {
    fn from(v: r::CpuSnapshot) -> Self {
        Self {
            registers: v.registers.into(),
            flags: v.flags.into(),
            halted: v.halted,
            cycles: v.cycles,
            pc: v.pc,
            instructions: v.instructions,
            interrupts_enabled: v.interrupts_enabled,
            sdbd_pending: v.sdbd_pending,
            session_id: v.session_id,
        }
    }
}

impl From<r::RegisterValues> for wit::RegisterValues {
    fn from(v: r::RegisterValues) -> Self {
        Self {
            registers: v.registers.into(),
        }
    }
}

impl From<r::FlagValues> for wit::FlagValues {
    fn from(v: r::FlagValues) -> Self {
        Self {
            flags: v.flags.into(),
        }
    }
}

impl From<r::InstrInfo> for wit::Instruction {
    fn from(v: r::InstrInfo) -> Self {
        Self {
            address: v.address,
            opcode: v.opcode.into(),
            operands: v.operands,
            raw: v.raw,
            size: v.size,
        }
    }
}

impl From<r::Disassembly> for wit::Disassembly {
    fn from(v: r::Disassembly) -> Self {
        Self {
            disassembly: all(v.disassembly),
            note: v.note,
        }
    }
}

impl From<r::Word> for wit::Word {
    fn from(v: r::Word) -> Self {
        Self {
            address: v.address,
            value: v.value,
        }
    }
}

impl From<r::MemoryWords> for wit::MemoryWords {
    fn from(v: r::MemoryWords) -> Self {
        Self {
            memory: all(v.memory),
            note: v.note,
        }
    }
}

impl From<Region> for wit::RegionKind {
    fn from(v: Region) -> Self {
        match v {
            Region::Unmapped => Self::Unmapped,
            Region::Rom => Self::Rom,
            Region::Ram8 => Self::Ram8,
            Region::Ram16 => Self::Ram16,
            Region::Stic => Self::Stic,
        }
    }
}

impl From<r::RegionInfo> for wit::Region {
    fn from(v: r::RegionInfo) -> Self {
        Self {
            start: v.start,
            end: v.end,
            kind: v.kind.into(),
        }
    }
}

impl From<r::MemoryMap> for wit::MemoryMap {
    fn from(v: r::MemoryMap) -> Self {
        Self {
            regions: all(v.regions),
            unmapped_reads: v.unmapped_reads,
        }
    }
}

impl From<r::BreakpointSet> for wit::BreakpointSet {
    fn from(v: r::BreakpointSet) -> Self {
        Self {
            status: match v.status {
                r::BreakpointStatus::Set => wit::BreakpointStatus::Set,
                r::BreakpointStatus::AlreadySet => wit::BreakpointStatus::AlreadySet,
            },
            address: v.address,
            breakpoints: v.breakpoints,
        }
    }
}

impl From<r::BreakpointsCleared> for wit::BreakpointsCleared {
    fn from(v: r::BreakpointsCleared) -> Self {
        Self {
            cleared: v.cleared,
            breakpoints: v.breakpoints,
        }
    }
}

impl From<r::BreakpointList> for wit::BreakpointList {
    fn from(v: r::BreakpointList) -> Self {
        Self {
            breakpoints: v.breakpoints,
        }
    }
}

impl From<r::TraceSettings> for wit::TraceSettings {
    fn from(v: r::TraceSettings) -> Self {
        Self {
            tracing: v.tracing,
            capacity: v.capacity,
            entries: v.entries,
        }
    }
}

impl From<r::TraceEntry> for wit::TraceEntry {
    fn from(v: r::TraceEntry) -> Self {
        Self {
            step: v.step,
            pc: v.pc,
            r: v.r.to_vec(),
            flags: v.flags,
            cycles: v.cycles,
            text: v.text,
        }
    }
}

impl From<r::TracePage> for wit::TracePage {
    fn from(v: r::TracePage) -> Self {
        Self {
            trace: all(v.trace),
            tracing: v.tracing,
            buffered: v.buffered,
            next_offset: v.next_offset,
            note: v.note,
        }
    }
}

impl From<r::MemoryWritten> for wit::MemoryWritten {
    fn from(v: r::MemoryWritten) -> Self {
        Self {
            written: v.written,
            address: v.address,
            values: v.values,
        }
    }
}

impl From<r::InterruptRaised> for wit::InterruptRaised {
    fn from(v: r::InterruptRaised) -> Self {
        Self {
            status: v.status.into(),
            interrupts_enabled: v.interrupts_enabled,
            note: v.note.into(),
            warnings: v.warnings,
        }
    }
}

// Exported symbols carry `:` and `@` in their names, which a native cdylib's
// linker version script rejects; natively the glue is only type-checked.
#[cfg(target_arch = "wasm32")]
export!(Plugin);
