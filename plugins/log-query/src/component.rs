//! wit-bindgen glue: WIT arguments into domain types, results out.

wit_bindgen::generate!({
    path: "../../wit/log-query",
    world: "plugin",
    generate_all,
});

use crate::error::ToolError;
use crate::logs::{cache, logs_dir};
use crate::plot::PlotArgs;
use crate::query::QueryArgs;
use benchtop::host::content::{Block, Image};
use benchtop::host::progress;
use exports::benchtop::log_query::{offers, tools};

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Component;

/// The domain failure as the host's `tool-error` record.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn to_wit(e: ToolError) -> tools::ToolError {
    tools::ToolError {
        code: e.code.into(),
        message: e.message,
    }
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn report(done: u64, total: u64, message: &str) -> bool {
    progress::report(done, total, message)
}

impl tools::Guest for Component {
    fn list_logs() -> Result<String, tools::ToolError> {
        let dir = logs_dir().map_err(to_wit)?;
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        crate::query::list_logs(&dir, &mut cache, &mut report).map_err(to_wit)
    }

    fn query_logs(args: tools::QueryArgs) -> Result<String, tools::ToolError> {
        let dir = logs_dir().map_err(to_wit)?;
        let args = QueryArgs {
            filter: args.filter,
            channels: args.channels,
            file: args.file,
            sample_rate: args.sample_rate,
            limit: args.limit,
            offset: args.offset,
        };
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        crate::query::query_logs(&dir, &mut cache, &args, &mut report).map_err(to_wit)
    }

    fn plot_log(args: tools::PlotArgs) -> Result<Vec<Block>, tools::ToolError> {
        let dir = logs_dir().map_err(to_wit)?;
        let args = PlotArgs {
            file: args.file,
            channels: args.channels,
            filter: args.filter,
            start_s: args.start_s,
            end_s: args.end_s,
            width: args.width,
            height: args.height,
        };
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        let plot = crate::plot::plot_log(&dir, &mut cache, &args, &mut report).map_err(to_wit)?;
        Ok(vec![
            Block::Text(plot.caption),
            Block::Image(Image {
                mime_type: "image/png".into(),
                data: plot.png,
            }),
        ])
    }
}

impl offers::Guest for Component {
    fn skill_log_investigation() -> String {
        // A skill file, served as `skill://log-investigation/SKILL.md`.
        include_str!("../skills/log-investigation/SKILL.md").into()
    }

    fn log_summary(file: String) -> Result<String, tools::ToolError> {
        let dir = logs_dir().map_err(to_wit)?;
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        crate::offers::log_summary(&dir, &mut cache, &file, &mut report).map_err(to_wit)
    }

    fn investigate_log(
        file: String,
        channel: Option<String>,
        question: Option<String>,
    ) -> Result<String, tools::ToolError> {
        let dir = logs_dir().map_err(to_wit)?;
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        crate::offers::investigate_log(
            &dir,
            &mut cache,
            &file,
            channel.as_deref(),
            question.as_deref(),
            &mut report,
        )
        .map_err(to_wit)
    }

    fn complete(_target: String, argument: String, value: String) -> Vec<String> {
        // The argument's name decides (`file`, `channel`), whichever prompt
        // or template asks; no logs directory completes to nothing.
        let Ok(dir) = logs_dir() else {
            return Vec::new();
        };
        let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        crate::offers::complete(&dir, &mut cache, &argument, &value, &mut report)
    }
}

// Exported symbols carry `:` and `@` in their names, which a native cdylib's
// linker version script rejects; natively the glue is only type-checked.
#[cfg(target_arch = "wasm32")]
export!(Component);
