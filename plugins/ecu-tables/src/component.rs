//! wit-bindgen glue: WIT argument records into [`tools`] calls, the domain
//! [`Error`] out as the host's `tool-error` (its code and its text).

use crate::bindings::benchtop;
use crate::bindings::exports::benchtop::ecu_tables::offers as wit_offers;
use crate::bindings::exports::benchtop::ecu_tables::tables as wit;
use crate::{Config, Error, Explorer, offers, tools};
use std::cell::RefCell;

thread_local! {
    // One instance serves every call, so parsed definitions and ROM images
    // stay cached between calls.
    // Families other plugins serve are asked only inside a component:
    // natively there is no host to route to, and no family.
    static EXPLORER: RefCell<Explorer> = RefCell::new(if cfg!(target_arch = "wasm32") {
        Explorer::with_served(Box::new(crate::family::peer::PeerFamilies))
    } else {
        Explorer::new()
    });
}

fn with_explorer(
    f: impl FnOnce(&mut Explorer, &Config) -> Result<String, Error>,
) -> Result<String, wit::ToolError> {
    explorer(f).map_err(|e| wit::ToolError {
        code: e.code().into(),
        message: e.to_string(),
    })
}

/// Like [`with_explorer`], with the tool's `definition` argument chosen
/// for this call only.
fn with_definition(
    definition: Option<String>,
    f: impl FnOnce(&mut Explorer, &Config) -> Result<String, Error>,
) -> Result<String, wit::ToolError> {
    with_explorer(|ex, cfg| {
        ex.choose(definition);
        let out = f(ex, cfg);
        ex.choose(None);
        out
    })
}

/// Runs `f` on the shared explorer with the current configuration.
fn explorer<T>(f: impl FnOnce(&mut Explorer, &Config) -> T) -> T {
    let cfg = Config::from_env();
    EXPLORER.with(|ex| f(&mut ex.borrow_mut(), &cfg))
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Component;

/// The setting that turns the question before a patch off (`off`, `false`,
/// `no` or `0`), for users who review patches their own way.
const CONFIRM_VAR: &str = "ECU_CONFIRM_PATCHES";

/// Asks the user to confirm a patch before it is written, when the client
/// can ask (MCP elicitation) and the setting does not turn it off. A client
/// that cannot ask gets the patch as before: the agent's call is the
/// confirmation, and `diff_tables` shows what changed. The question comes
/// from a dry run, so it names the cells really written, and a patch that
/// would be refused fails before anyone is asked. Returns the digest of
/// the change the user confirmed, which the write must still match, or
/// `None` when nobody was asked.
fn confirm_patch(
    ex: &mut Explorer,
    cfg: &Config,
    args: &tools::PatchTable,
) -> Result<Option<String>, Error> {
    use benchtop::host::elicit::{Answer, ask_keyed};
    let off = std::env::var(CONFIRM_VAR).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "false" | "no" | "0"
        )
    });
    // No one to ask: no dry run to word a question with (the write makes
    // every check the dry run would).
    if off || !benchtop::host::elicit::can_ask() {
        return Ok(None);
    }
    let (question, change) = tools::patch_confirmation(ex, cfg, args)?;
    // The change's digest is part of the question, so an answer given to
    // one change is never taken for another (the host binds answers to
    // the question's text). Keyed, so a 2026-07-28 client sees what it is
    // asked to answer.
    let question = format!("{question} (change {change})");
    match ask_keyed("confirm_patch", &question, "") {
        Answer::Accepted(_) => Ok(Some(change)),
        Answer::Unsupported => Ok(None),
        Answer::Declined => Err(Error::NotConfirmed("declined")),
        Answer::Cancelled => Err(Error::NotConfirmed("dismissed")),
    }
}

/// Times a user is asked again when the ROM changed under a confirmed
/// patch, before the call gives up and says so.
const CONFIRM_ATTEMPTS: usize = 3;

/// Confirms and writes a patch: the write happens only if it is exactly
/// the change confirmed, checked under the ROM's lock; when another writer
/// changed it in between, the user is asked about the new change.
fn confirmed_patch(
    ex: &mut Explorer,
    cfg: &Config,
    args: &tools::PatchTable,
) -> Result<tools::Patched, Error> {
    let mut attempt = 1;
    loop {
        let result = match confirm_patch(ex, cfg, args)? {
            Some(change) => tools::patch_table_confirmed(ex, cfg, args, &change),
            None => tools::patch_written(ex, cfg, args),
        };
        match result {
            Err(Error::ChangedSinceConfirmed) if attempt < CONFIRM_ATTEMPTS => attempt += 1,
            other => return other,
        }
    }
}

/// Tells clients subscribed to the patched table's `rom://` resource that
/// it changed (the host ignores URIs nobody subscribed to).
fn announce_patch(rom: &str, table: &str, canonical: &str) {
    let resolved = plugin_kit::paths::resolve(rom);
    for uri in offers::patched_uris(rom, &resolved, table, canonical) {
        benchtop::host::resources::changed(&uri);
    }
}

fn op_kind(op: wit::Op) -> tools::OpKind {
    match op {
        wit::Op::Set => tools::OpKind::Set,
        wit::Op::Add => tools::OpKind::Add,
        wit::Op::Multiply => tools::OpKind::Multiply,
        wit::Op::Clamp => tools::OpKind::Clamp,
        wit::Op::Smooth => tools::OpKind::Smooth,
    }
}

/// Runs `f` with the logs directory and the log cache (the same cache type
/// log-query keeps; this plugin's own copy).
fn with_logs(
    definition: Option<String>,
    f: impl FnOnce(
        &mut Explorer,
        &Config,
        &std::path::Path,
        &mut datalog::logs::Cache,
        &mut dyn FnMut(u64, u64, &str) -> bool,
    ) -> Result<String, Error>,
) -> Result<String, wit::ToolError> {
    with_definition(definition, |ex, cfg| {
        let dir = datalog::logs::logs_dir().map_err(Error::Log)?;
        let mut cache = datalog::logs::cache()
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        f(ex, cfg, &dir, &mut cache, &mut |done, total, msg| {
            benchtop::host::progress::report(done, total, msg)
        })
    })
}

impl wit::Guest for Component {
    fn list_tables(args: wit::ListTablesArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = tools::ListTables {
            rom: args.rom,
            category: args.category,
            search: args.search,
            offset: args.offset,
            limit: args.limit,
        };
        with_definition(definition, |ex, cfg| tools::list_tables(ex, cfg, &args))
    }

    fn read_table(args: wit::ReadTableArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = tools::ReadTable {
            rom: args.rom,
            table: args.table,
            row_start: args.row_start,
            row_count: args.row_count,
            col_start: args.col_start,
            col_count: args.col_count,
            rows_where: args.rows_where,
            cols_where: args.cols_where,
        };
        with_definition(definition, |ex, cfg| tools::read_table(ex, cfg, &args))
    }

    fn patch_table(args: wit::PatchTableArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = tools::PatchTable {
            rom: args.rom,
            table: args.table,
            op: op_kind(args.op),
            value: args.value,
            min: args.min,
            max: args.max,
            row: args.row,
            col: args.col,
            choice: args.choice,
            force: args.force.unwrap_or(false),
            rows_where: args.rows_where,
            cols_where: args.cols_where,
            cells: args.cells,
        };
        with_definition(definition, |ex, cfg| {
            let patched = confirmed_patch(ex, cfg, &args)?;
            announce_patch(&args.rom, &args.table, &patched.table_id);
            Ok(patched.answer)
        })
    }

    fn rom_info(args: wit::RomInfoArgs) -> Result<String, wit::ToolError> {
        with_definition(args.definition, |ex, cfg| {
            tools::rom_info(ex, cfg, &args.rom)
        })
    }

    fn diff_tables(args: wit::DiffTablesArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = tools::DiffTables {
            rom: args.rom,
            other: args.other,
            table: args.table,
            limit: args.limit,
        };
        with_definition(definition, |ex, cfg| tools::diff_tables(ex, cfg, &args))
    }

    fn lookup_table(args: wit::LookupTableArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = crate::lookup::LookupTable {
            rom: args.rom,
            table: args.table,
            x: args.x,
            y: args.y,
        };
        with_definition(definition, |ex, cfg| {
            crate::lookup::lookup_table(ex, cfg, &args)
        })
    }

    fn overlay_log(args: wit::OverlayLogArgs) -> Result<String, wit::ToolError> {
        use crate::overlay::{OverlayLog, Stat, overlay_log};
        let definition = args.definition;
        let args = OverlayLog {
            rom: args.rom,
            table: args.table,
            file: args.file,
            filter: args.filter,
            channels: args.channels.unwrap_or_default(),
            stats: args
                .stats
                .unwrap_or_default()
                .into_iter()
                .map(|s| match s {
                    wit::Stat::Mean => Stat::Mean,
                    wit::Stat::Min => Stat::Min,
                    wit::Stat::Max => Stat::Max,
                    wit::Stat::Percentile => Stat::Percentile,
                })
                .collect(),
            percentile: args.percentile,
            x_channel: args.x_channel,
            y_channel: args.y_channel,
            clamp_to_edges: args.clamp_to_edges.unwrap_or(false),
            keep_points: false,
        };
        with_logs(definition, |ex, cfg, dir, cache, progress| {
            overlay_log(ex, cfg, dir, cache, &args, progress)
        })
    }

    fn propose_patch(args: wit::ProposePatchArgs) -> Result<String, wit::ToolError> {
        let definition = args.definition;
        let args = crate::propose::ProposePatch {
            rom: args.rom,
            table: args.table,
            file: args.file,
            filter: args.filter,
            op: op_kind(args.op),
            value: args.value,
            min: args.min,
            max: args.max,
            min_samples: args.min_samples,
            x_channel: args.x_channel,
            y_channel: args.y_channel,
            clamp_to_edges: args.clamp_to_edges.unwrap_or(false),
            cells: match args.cells {
                None | Some(wit::CellChoice::Nearest) => crate::propose::CellChoice::Nearest,
                Some(wit::CellChoice::Bracketing) => crate::propose::CellChoice::Bracketing,
            },
        };
        with_logs(definition, |ex, cfg, dir, cache, progress| {
            crate::propose::propose_patch(ex, cfg, dir, cache, &args, progress)
        })
    }
}

impl wit_offers::Guest for Component {
    fn skill_ecu_tuning() -> String {
        // A skill file, served as `skill://ecu-tuning/SKILL.md`.
        include_str!("../skills/ecu-tuning/SKILL.md").into()
    }

    fn skill_knock_diagnosis() -> String {
        // A skill file, served as `skill://knock-diagnosis/SKILL.md`.
        include_str!("../skills/knock-diagnosis/SKILL.md").into()
    }

    fn rom_tables(rom: String) -> Result<String, wit::ToolError> {
        with_explorer(|ex, cfg| offers::rom_tables(ex, cfg, &rom))
    }

    fn rom_category(rom: String, category: String) -> Result<String, wit::ToolError> {
        with_explorer(|ex, cfg| offers::rom_category(ex, cfg, &rom, &category))
    }

    fn rom_table(rom: String, table: String) -> Result<String, wit::ToolError> {
        with_explorer(|ex, cfg| offers::rom_table(ex, cfg, &rom, &table))
    }

    fn ecu_tuning_assistant() -> String {
        offers::ECU_TUNING_ASSISTANT.to_owned()
    }

    fn diagnose_knock(rom: String, log_file: Option<String>) -> String {
        explorer(|ex, cfg| offers::diagnose_knock(ex, cfg, &rom, log_file.as_deref()))
    }

    fn review_patch(rom: String, table: String, stock_rom: Option<String>) -> String {
        explorer(|ex, cfg| offers::review_patch(ex, cfg, &rom, &table, stock_rom.as_deref()))
    }

    fn complete(_target: String, argument: String, value: String) -> Vec<String> {
        // The argument's name decides (`rom`, `stock_rom`, `table`,
        // `category`), whichever prompt or template asks.
        explorer(|ex, cfg| offers::complete(ex, cfg, &argument, &value))
    }
}

// Natively the exported symbol names (`benchtop:ecu-tables/tables@0.1.0#…`)
// are not valid in a linker version script, so the cdylib only exports them
// on wasm; the glue above still type-checks natively.
#[cfg(target_arch = "wasm32")]
crate::bindings::export!(Component with_types_in crate::bindings);
