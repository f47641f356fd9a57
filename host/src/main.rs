//! The `benchtop` command line.

use anyhow::{Context, Result, bail};
use benchtop::mcp::server::Server;
use benchtop::runtime::host::{Host, Options};
use benchtop::wit::interface::PluginInterface;
use clap::{Args, CommandFactory, Parser, Subcommand};
use rmcp::ServiceExt;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

/// mimalloc rather than the system allocator: deriving plugins' interfaces
/// at start, JSON in every call and the state store's copies allocate
/// small objects by the thousand; glibc's malloc took about a third of the
/// time deriving an interface.
///
/// Built without transparent huge pages (`no_thp`): mimalloc otherwise
/// asks the kernel for them on each region it reserves, and the kernel
/// zeroes a whole 2 MiB page at the first touch of each. That was about
/// 1.7 ms of a 15 ms warm start (perf: `clear_page_erms` under
/// `do_huge_pmd_anonymous_page`, from `mi_page_free_list_extend`), and a
/// millisecond of a start with no plugin.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An MCP server whose tools come from WebAssembly components.
///
/// Every function a plugin component exports becomes an MCP tool. Plugins run
/// sandboxed: they see only the directories, network addresses and settings
/// you grant them.
#[derive(Parser)]
#[command(
    name = "benchtop",
    version,
    after_help = "\
Plugins may declare options of their own (for example --definitions-path or\n\
--logs-dir); pass them to serve, tools or call like any other option.\n\n\
Examples:\n  \
benchtop serve --plugins target/plugins --workspace samples --allow samples:rw\n  \
benchtop tools --plugins target/plugins\n  \
benchtop call hello '{}' --plugins target/plugins\n  \
benchtop check target/plugins/ecu_tables.wasm"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the plugins' tools over MCP (stdio by default, or streamable HTTP).
    Serve {
        #[command(flatten)]
        common: Common,
        /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8081) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With --http, also serve this directory at `/`: the web bench built by
        /// `make web` (web/dist), to watch the emulators in a browser.
        #[arg(long, value_name = "DIR", requires = "http")]
        web: Option<PathBuf>,
        /// Do not watch the plugins directory (no hot swap).
        #[arg(long)]
        no_watch: bool,
        /// Share emulator sessions and machines with other replicas through
        /// this state store (redis://host:port[/db], Redis or Valkey): any
        /// replica behind a load balancer can then serve any call.
        #[arg(long, value_name = "URL", env = "BENCHTOP_STORE", requires = "http")]
        store: Option<String>,
        /// This replica's name among those sharing the store, unique to it
        /// (default: the host name and process id).
        #[arg(
            long,
            value_name = "NAME",
            env = "BENCHTOP_REPLICA",
            requires = "store"
        )]
        replica: Option<String>,
        /// With --store, how many sessions or machines each plugin keeps in
        /// memory on this replica; the least recently used beyond it live
        /// only in the store until their next call.
        #[arg(long, value_name = "N", default_value_t = benchtop::mcp::durable::CACHE, requires = "store")]
        store_cache: usize,
    },
    /// List the tools the plugins provide.
    Tools {
        #[command(flatten)]
        common: Common,
        /// Print the full tool definitions (schemas, annotations) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool and print its result (text on stdout; errors on stderr, exit 1).
    Call {
        /// The tool's name, as `benchtop tools` lists it.
        tool: String,
        /// Arguments as a JSON object, e.g. '{"rom": "rom.bin"}'.
        #[arg(default_value = "{}")]
        json: String,
        #[command(flatten)]
        common: Common,
        /// Print the whole MCP result as JSON.
        #[arg(long = "raw")]
        raw: bool,
    },
    /// Check a plugin component: the tools it yields, their schemas, and what is wrong.
    Check {
        /// The component (.wasm) to check.
        file: PathBuf,
    },
    /// Create a new plugin crate from the template (see its README to build it).
    New {
        /// Plugin name: lowercase words joined by `-`, like `my-ecu`.
        name: String,
        /// Where to create the crate's directory.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// WIT package namespace (the `acme` of `acme:my-ecu`).
        #[arg(long, default_value = "my")]
        namespace: String,
        /// Create an ECU definition family (a format the ECU tools read)
        /// instead of a plugin with tools.
        #[arg(long)]
        family: bool,
    },
    /// Plugins from OCI registries: push, pull (verified), sign, keygen.
    #[command(subcommand)]
    Plugin(benchtop::plugin_cmd::PluginCommand),
    /// Copy a WIT package's doc comments into a built component (they become tool descriptions).
    InjectDocs {
        /// The plugin's WIT directory.
        wit: PathBuf,
        /// The component built by cargo.
        input: PathBuf,
        /// Where to write the result (default: replace the input).
        output: Option<PathBuf>,
    },
}

#[derive(Args, Clone)]
struct Common {
    /// TOML config file (plugins, sandbox, limits, settings).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory whose *.wasm files are plugins.
    #[arg(long = "plugins", value_name = "DIR")]
    plugins_dir: Option<PathBuf>,
    /// Grant every plugin a directory: DIR (read-only), DIR:ro or DIR:rw. Repeatable.
    #[arg(long, value_name = "DIR[:ro|:rw]")]
    allow: Vec<String>,
    /// Workspace directory: relative paths in tool arguments resolve here (default: current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Compile cache directory (default: ~/.cache/benchtop).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Do not use the compile cache.
    #[arg(long)]
    no_cache: bool,
}

impl Common {
    fn options(self, settings: Vec<(String, String)>) -> Options {
        Options {
            config: self.config,
            plugins_dir: self.plugins_dir,
            allow: self.allow,
            workspace: self.workspace,
            cache_dir: self.cache_dir,
            no_cache: self.no_cache,
            settings,
        }
    }
}

/// Splits plugin-declared options (`--logs-dir X`, `--logs-dir=X`) from the
/// arguments clap knows, since they are known only once plugins are loaded.
fn split_plugin_options(args: Vec<String>) -> (Vec<String>, Vec<(String, String)>) {
    let cmd = Cli::command();
    // Only the commands that load plugins take their settings.
    let Some(sub) = args
        .get(1)
        .filter(|s| ["serve", "tools", "call"].contains(&s.as_str()))
        .and_then(|s| cmd.find_subcommand(s))
    else {
        return (args, Vec::new());
    };
    let known: Vec<String> = sub
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .chain(["help".into(), "version".into()])
        .collect();
    let mut kept = Vec::new();
    let mut settings = Vec::new();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        if let Some(long) = arg.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (long.to_owned(), None),
            };
            if !known.contains(&name) {
                let value = inline.or_else(|| iter.next()).unwrap_or_default();
                settings.push((name, value));
                continue;
            }
        }
        kept.push(arg);
    }
    (kept, settings)
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BENCHTOP_LOG")
        .unwrap_or_else(|_| "info,wasmtime=warn,cranelift=warn,rmcp=warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (args, settings) = split_plugin_options(std::env::args().collect());
    let cli = Cli::parse_from(args);
    init_logging();
    match run(cli, settings).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, settings: Vec<(String, String)>) -> Result<std::process::ExitCode> {
    match cli.command {
        Command::Serve {
            common,
            http,
            web,
            no_watch,
            store,
            replica,
            store_cache,
        } => {
            if let Some(url) = store {
                let replica = replica.unwrap_or_else(default_replica);
                let durable = benchtop::mcp::durable::Durable::new(&url, &replica)
                    .context("--store")?
                    .with_cache(store_cache);
                let durable = benchtop::mcp::durable::install(durable);
                match durable.ready().await {
                    Ok(()) => tracing::info!(
                        "replica {replica}: sessions and machines are kept in the state store at {url}"
                    ),
                    // The store may start after the replica (a pod beside
                    // its Redis); /healthz says not ready until it answers.
                    Err(e) => tracing::warn!(
                        "replica {replica}: {e}; calls on sessions and machines fail until it answers"
                    ),
                }
            }
            let host = Arc::new(Host::new(common.options(settings))?);
            if let Some(dir) = host.plugins_dir().filter(|_| host.serves_bundled()) {
                tracing::info!(
                    "serving the plugins built into benchtop (from {}); --plugins DIR or a config file serves others",
                    dir.display()
                );
            }
            host.load_all().await?;
            // Kept alive while serving: dropping the watcher stops hot swap.
            // The bundled plugins' directory is this binary's, not the user's.
            let _watcher = match host.plugins_dir() {
                Some(dir) if !no_watch && !host.serves_bundled() => {
                    Some(benchtop::runtime::watch::watch(host.clone(), &dir)?)
                }
                _ => None,
            };
            serve(host, http, web).await?;
        }
        Command::Tools { common, json } => {
            let host = Host::new(common.options(settings))?;
            let problems = host.load_all().await?;
            let catalog = host.registry().snapshot();
            // Cached code is checked as it is mapped, in the background: a
            // listing waits for it, so a damaged or swapped artifact is
            // reported before the command exits.
            for plugin in catalog.plugins() {
                let _ = plugin.ready().await;
            }
            if json {
                println!("{}", serde_json::to_string_pretty(catalog.tools())?);
            } else {
                for plugin in catalog.plugins() {
                    println!("{} ({})", plugin.name, plugin.source.display());
                    if let Some(from) = host.provenance(&plugin.source) {
                        println!("  from {}", from.describe());
                    }
                    for served in &plugin.interface.provides {
                        println!("  serves {served} to plugins");
                    }
                    for used in &plugin.interface.uses {
                        let mut by = Vec::new();
                        let mut shaped_otherwise = Vec::new();
                        for p in catalog.plugins() {
                            if !p.interface.provides.contains(used) {
                                continue;
                            }
                            match plugin.shape_against(used, p).await {
                                None => by.push(p.name.as_str()),
                                Some(d) => shaped_otherwise.push((p.name.as_str(), d)),
                            }
                        }
                        println!(
                            "  uses {used} from {}",
                            if by.is_empty() {
                                "no loaded plugin".into()
                            } else {
                                by.join(", ")
                            }
                        );
                        for (p, d) in shaped_otherwise {
                            println!("    not from {p}, which serves it in another shape: {d}");
                        }
                    }
                    for (i, tool) in plugin.interface.tools.iter().enumerate() {
                        let first = tool.description.lines().next().unwrap_or("");
                        println!("  {:<32} {first}", plugin.tool_name(i));
                    }
                }
            }
            if !problems.is_empty() {
                return Ok(std::process::ExitCode::FAILURE);
            }
        }
        Command::Call {
            tool,
            json,
            common,
            raw,
        } => {
            let host = Host::new(common.options(settings))?;
            host.load_all().await?;
            return call(&host, &tool, &json, raw).await;
        }
        Command::Check { file } => return check(&file).await,
        Command::Plugin(command) => benchtop::plugin_cmd::run(command).await?,
        Command::New {
            name,
            dir,
            namespace,
            family,
        } => {
            let made = if family {
                benchtop::scaffold::new_family(&dir, &name, &namespace)?
            } else {
                benchtop::scaffold::new_plugin(&dir, &name, &namespace)?
            };
            println!(
                "created {} — build it as its README.md says",
                made.display()
            );
        }
        Command::InjectDocs { wit, input, output } => {
            let wasm =
                std::fs::read(&input).with_context(|| format!("reading {}", input.display()))?;
            let out = wit_docs::inject(&wit, &wasm)?;
            let output = output.unwrap_or(input);
            std::fs::write(&output, out)
                .with_context(|| format!("writing {}", output.display()))?;
            println!("wrote {}", output.display());
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// A replica's name when none is given: unique per process on a machine,
/// and telling which machine.
fn default_replica() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "benchtop".into());
    format!("{host}-{}", std::process::id())
}

async fn serve(host: Arc<Host>, http: Option<String>, web: Option<PathBuf>) -> Result<()> {
    let registry = host.registry();
    let count = registry.snapshot().tools().len();
    if std::io::stderr().is_terminal() {
        print_connect_help(count);
    }
    let logs = host.log_sender();
    match http {
        None => {
            // Our framing, not rmcp's: it answers lines rmcp would drop.
            let (stdin, stdout) = benchtop::transport::stdio::streams();
            let (transport, writer) = benchtop::transport::framing::framed(stdin, stdout);
            let server = Server::new(registry, logs)
                .serve(transport)
                .await
                .context("starting the stdio transport")?;
            server.waiting().await?;
            // Responses already queued still reach the client.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
        }
        Some(addr) => {
            let limits = benchtop::transport::http::HttpLimits::from_config(host.http_config())
                .context("the config file's [http] section")?;
            benchtop::transport::http::serve(&addr, registry, logs, web, limits).await?
        }
    }
    Ok(())
}

fn print_connect_help(tools: usize) {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "benchtop".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = format!("{exe} {}", args.join(" "));
    eprintln!(
        "\nbenchtop is serving {tools} tools over MCP on stdin/stdout. Connect a client:\n\
         \n  Claude Code:    claude mcp add benchtop -- {cmd}\
         \n  VS Code:        add to .vscode/mcp.json: {{\"servers\": {{\"benchtop\": {{\"command\": \"{exe}\", \"args\": {}}}}}}}\
         \n  MCP Inspector:  npx @modelcontextprotocol/inspector {cmd}\
         \n\nOr try a tool without a client:  {exe} tools ...  then  {exe} call TOOL '{{...}}' ...\
         \n(same options as serve). Press Ctrl-C to stop.\n",
        serde_json::to_string(&args).unwrap_or_default()
    );
}

async fn call(host: &Host, tool: &str, json: &str, raw: bool) -> Result<std::process::ExitCode> {
    let args: serde_json::Value = serde_json::from_str(json)
        .with_context(|| format!("the arguments are not valid JSON: {json}"))?;
    let serde_json::Value::Object(args) = args else {
        bail!("the arguments must be a JSON object, like '{{\"name\": \"value\"}}'");
    };
    let catalog = host.registry().snapshot();
    let result = benchtop::mcp::call::call_tool(
        &catalog,
        tool,
        &args,
        benchtop::runtime::context::CallContext::detached(),
    )
    .await?;
    let failed = result.is_error == Some(true);
    if raw {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        for block in &result.content {
            match block.as_text() {
                Some(t) if failed => eprintln!("{}", t.text),
                Some(t) => println!("{}", t.text),
                None => println!("{}", serde_json::to_string(block)?),
            }
        }
    }
    Ok(if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}

async fn check(file: &std::path::Path) -> Result<std::process::ExitCode> {
    let wasm = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let mut problems = Vec::new();
    let interface = match PluginInterface::from_component(&wasm) {
        Ok(i) => i,
        Err(e) => {
            println!("✗ {}: {e:#}", file.display());
            return Ok(std::process::ExitCode::FAILURE);
        }
    };
    problems.extend(interface.warnings.iter().cloned());
    let engine = benchtop::runtime::engine::new_engine()?;
    let mut linker = benchtop::runtime::imports::new_linker(&engine)?;
    match benchtop::runtime::engine::compile(&engine, &wasm).and_then(|c| {
        benchtop::runtime::imports::link_peer_imports(&mut linker, &engine, &c, &interface.uses)?;
        linker
            .instantiate_pre(&c)
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("it imports something benchtop does not provide: {e:#}"))
    }) {
        Ok(()) => {}
        Err(e) => problems.push(format!("{e:#}")),
    }
    println!(
        "{}: {} tools, {} resources, {} prompts",
        file.display(),
        interface.tools.len(),
        interface.resources.len(),
        interface.prompts.len()
    );
    for served in &interface.provides {
        println!("\n● serves {served} to plugins (not as tools)");
        match benchtop::wit::interface::functions_of(&interface.resolve, served) {
            Some(funcs) => {
                for f in funcs {
                    println!("    {f}");
                }
            }
            None => problems.push(format!(
                "the served interface {served} is not in the component's WIT"
            )),
        }
    }
    for used in &interface.uses {
        println!("\n● uses {used}, served by another plugin (peers.route chooses which)");
        if let Some(funcs) = benchtop::wit::interface::functions_of(&interface.resolve, used) {
            for f in funcs {
                println!("    {f}");
            }
        }
    }
    for tool in &interface.tools {
        println!("\n● {}", tool.name);
        for line in tool.description.lines() {
            println!("    {line}");
        }
        let a = &tool.annotations;
        let tags: Vec<&str> = [
            (a.read_only, "read-only"),
            (a.destructive, "destructive"),
            (a.idempotent, "idempotent"),
            (a.open_world, "open-world"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        if !tags.is_empty() {
            println!("    annotations: {}", tags.join(", "));
        }
        println!("    input:  {}", serde_json::to_string(&tool.input_schema)?);
        if let Some(out) = &tool.output_schema {
            println!("    output: {}", serde_json::to_string(out)?);
        }
    }
    for r in &interface.resources {
        let kind = if r.resource_uri().contains('{') {
            "resource template"
        } else {
            "resource"
        };
        println!(
            "\n● {kind} {} ({})",
            r.resource_uri(),
            benchtop::wit::interface::mime_of(r)
        );
        println!(
            "    read by `{}`: {}",
            r.func,
            r.description.lines().next().unwrap_or("")
        );
    }
    for p in &interface.prompts {
        let args: Vec<String> = p
            .argument_names()
            .into_iter()
            .map(|(n, required, _)| if required { n } else { format!("{n}?") })
            .collect();
        println!("\n● prompt {}({})", p.name, args.join(", "));
        println!("    {}", p.description.lines().next().unwrap_or(""));
    }
    if let Some(c) = &interface.completion {
        println!("\n● completion by `{}`", c.func);
    }
    for s in &interface.settings {
        println!(
            "\nsetting {} (flag: {}, vscode: {}, access: {:?})",
            s.env,
            s.flag
                .as_deref()
                .map(|f| format!("--{f}"))
                .unwrap_or_else(|| "none".into()),
            s.vscode.as_deref().unwrap_or("none"),
            s.access
        );
    }
    if problems.is_empty() {
        println!("\n✓ no problems found");
        Ok(std::process::ExitCode::SUCCESS)
    } else {
        println!("\nProblems:");
        for p in &problems {
            println!("  ✗ {p}");
        }
        Ok(std::process::ExitCode::FAILURE)
    }
}
