//! The one WebAssembly engine every plugin shares: its configuration, the
//! thread that advances its epoch (deadlines and cancellation are checked
//! on each tick), and compiling a component (docs/design.md, "The host").

use anyhow::{Context, Result, anyhow};
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::Component;

/// How often the engine's epoch advances; deadlines and cancellation are
/// checked at this granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Creates the engine every plugin shares, with epoch interruption on, and
/// starts the thread that advances its epoch.
pub fn new_engine() -> Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    #[cfg(target_os = "linux")]
    if let Some(creator) = super::memory::creator() {
        config.with_host_memory(creator);
        // wasmtime maps a module's initial memory image copy-on-write only
        // into memories of its own; into these it copies the data segments.
        config.memory_init_cow(false);
    }
    // `BENCHTOP_PERFMAP=1` names the compiled plugin functions for `perf`
    // (it writes /tmp/perf-PID.map), so a plugin's hot loop can be profiled
    // as it runs inside the host. Use with --no-cache.
    if std::env::var_os("BENCHTOP_PERFMAP").is_some_and(|v| v != "0") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config)
        .map_err(anyhow::Error::from)
        .context("creating the WebAssembly engine")?;
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("benchtop-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .context("starting the epoch thread")?;
    Ok(engine)
}

/// Compiles a component, without the cache.
pub fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm).map_err(|e| anyhow!("compiling the component: {e:#}"))
}
