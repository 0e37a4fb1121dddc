//! Command-line interface (clap). `anyhow` is allowed here only.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod new;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use toolhost::{
    Aliases, CallError, Config, Confirm, ConfirmationHint, Context as Cx, Decision, Engine,
    EngineConfig, Filter, HttpOptions, LoadState, McpServer, MediaKind, Part, PluginDir,
    PluginOptions, PluginSet, Predicate, ServeConfig, StaticPlugins, ToolAliases, ToolSpec,
    Toolset, ToolsetExt, UnmatchedName,
};

/// Run LLM-agent tools as sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version, about, after_help = LOG_HELP)]
struct Cli {
    /// Directory of plugin `.wasm` files [default: the config's `plugins`, else target/plugins].
    #[arg(long, global = true, env = "TOOLHOST_PLUGINS")]
    plugins: Option<PathBuf>,

    /// Configuration file [default: ./toolhost.toml if it exists].
    #[arg(long, global = true, env = "TOOLHOST_CONFIG")]
    config: Option<PathBuf>,

    /// Where compiled code is cached [default: the OS cache dir, or $TOOLHOST_CACHE_DIR].
    #[arg(long, global = true)]
    cache_dir: Option<PathBuf>,

    /// Do not cache compiled code on disk.
    #[arg(long, global = true)]
    no_cache: bool,

    /// Fuel (CPU budget, ~wasm instructions) per call.
    #[arg(long, global = true)]
    fuel: Option<u64>,

    /// Linear memory limit per call, in MiB.
    #[arg(long, global = true)]
    memory_mib: Option<u64>,

    /// Wall-clock deadline per call, in milliseconds.
    #[arg(long, global = true)]
    timeout_ms: Option<u64>,

    /// Output size limit per call, in bytes.
    #[arg(long, global = true)]
    max_output: Option<u64>,

    /// Guest memory all calls together may hold, in MiB [default: half the
    /// machine's memory]; past it a call waits briefly, then fails as busy.
    #[arg(long, global = true)]
    max_guest_memory_mib: Option<u64>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the tools of every plugin: plugin, tool, description, long-running.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show each plugin file: loaded (with its tools) or why it failed. Exits
    /// non-zero when any failed.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a tool's declaration, as the model sees it.
    Describe {
        /// The tool (`name` or `plugin.name`).
        tool: String,
    },
    /// Call a tool and print its result as JSON.
    Call {
        /// The tool (`name` or `plugin.name`).
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from stdin.
        #[arg(default_value = "{}")]
        args: String,
        /// Where binary parts (images, files) are written [default: a new temp dir].
        #[arg(long)]
        out_dir: Option<PathBuf>,
        /// The call ID the tool sees.
        #[arg(long)]
        call_id: Option<String>,
        /// Approve a call that needs confirmation without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Serve the tools over the Model Context Protocol: stdio by default, or
    /// streamable HTTP at `http://ADDR/mcp`. Follows the plugins directory live.
    Serve {
        /// Serve streamable HTTP on this address (like `127.0.0.1:8383`;
        /// port 0 picks a free one) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Do not follow changes to the plugins directory.
        #[arg(long)]
        no_watch: bool,
        /// HTTP: the most connections open at once [default: 256; config: [serve] max_connections].
        #[arg(long, value_name = "N")]
        max_connections: Option<usize>,
        /// HTTP: milliseconds a connection may take to send a request head [default: 10000].
        #[arg(long, value_name = "MS")]
        header_read_timeout_ms: Option<u64>,
        /// HTTP: milliseconds a connection may move no bytes [default: 120000].
        #[arg(long, value_name = "MS")]
        idle_timeout_ms: Option<u64>,
        /// HTTP: milliseconds a session may go without traffic before it ends [default: 300000].
        #[arg(long, value_name = "MS")]
        session_idle_timeout_ms: Option<u64>,
        /// Milliseconds between two progress notifications of one call [default: 100].
        #[arg(long, value_name = "MS")]
        progress_interval_ms: Option<u64>,
    },
    /// Create a plugin project in NAME/ that builds with `./build.sh`: a
    /// sample tool, the guest SDK of the language and the WIT contract.
    New {
        /// The plugin's name: lowercase letters, digits and `-` (the component is
        /// NAME.wasm; Go: the package is NAME without `-`, and may not be a Go keyword).
        name: String,
        /// The language of the project.
        #[arg(long, value_enum, default_value = "rust")]
        lang: new::Lang,
        /// Where to create NAME/ [default: the current directory].
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Show what a component file is: world, version, tools, imported interfaces.
    Inspect {
        /// The `.wasm` file.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The `--help` text on logging.
const LOG_HELP: &str = "\
Logging:
  Logs go to stderr, never stdout. TOOLHOST_LOG picks what is logged, in
  tracing's EnvFilter syntax: a level (error, warn, info, debug, trace), or
  comma-separated `target=level` directives. Default: warnings only, and for
  `serve` also each plugin's load, reload and removal (target toolhost::load)
  at info. The commands that load plugins once (list, status, describe, call)
  report load failures themselves, not in the log.
  Examples: TOOLHOST_LOG=debug, TOOLHOST_LOG=info,toolhost::plugin=debug";

/// The log filter when `TOOLHOST_LOG` is not set: warnings; `serve` also
/// logs each plugin's load, reload and removal, and one-shot commands leave
/// load failures to their own output (one report per failure, not two).
fn default_filter(command: &Command) -> &'static str {
    match command {
        Command::Serve { .. } => "warn,toolhost::load=info",
        _ => "warn,toolhost::load=off",
    }
}

/// Log fields as tracing's default formatter writes them (`message`, then
/// `name=value`), with control characters escaped: text a plugin or a client
/// chose (an error message, a tool name, a trap's backtrace) stays on its own
/// log line and cannot forge another or drive the terminal.
fn log_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt as _;
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let value = format!("{value:?}");
        let text = toolhost::escape_control(&value);
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{field}={text}")
        }
    })
    .delimited(" ")
}

/// Runs the CLI; prints a one-line error and exits non-zero on failure.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .fmt_fields(log_fields())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(default_filter(&cli.command))
            }),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`toolhost describe x | head -1`): it has
        // what it wanted; end quietly, as a command killed by SIGPIPE would.
        Err(err) if broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}

/// Whether an error is a write to a closed stdout.
fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            })
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The error on one line, with any other control character (a plugin's or a
/// client's text may hold one) escaped.
fn one_line(err: &anyhow::Error) -> String {
    toolhost::escape_control(&format!("{err:#}").replace('\n', " ")).into_owned()
}

/// The configuration file: `--config`, else `./toolhost.toml` when present.
fn config(cli: &Cli) -> Result<Config> {
    match &cli.config {
        Some(path) => Ok(Config::load(path)?),
        None if Path::new("toolhost.toml").is_file() => Ok(Config::load("toolhost.toml")?),
        None => Ok(Config::default()),
    }
}

fn plugins_dir(cli: &Cli, config: &Config) -> PathBuf {
    cli.plugins
        .clone()
        .or_else(|| config.plugins.clone())
        .unwrap_or_else(|| PathBuf::from("target/plugins"))
}

fn engine(cli: &Cli, config: &Config) -> Result<Engine> {
    let mut engine_config = EngineConfig::default();
    if cli.no_cache {
        engine_config.cache_dir(None);
    } else if let Some(dir) = cli.cache_dir.as_ref().or(config.cache_dir.as_ref()) {
        engine_config.cache_dir(Some(dir.clone()));
    }
    if let Some(mib) = cli
        .max_guest_memory_mib
        .or(config.engine.max_guest_memory_mib)
    {
        engine_config.max_guest_memory(Some(mib.saturating_mul(1 << 20)));
    }
    config.load.apply(&mut engine_config);
    Ok(Engine::new(&engine_config)?)
}

/// Each plugin's options: the config's limits for it, then the command-line flags.
fn options(cli: &Cli, config: &Config) -> impl Fn(&str) -> PluginOptions + Send + Sync + 'static {
    let config = config.clone();
    let (fuel, memory_mib, timeout_ms, max_output) =
        (cli.fuel, cli.memory_mib, cli.timeout_ms, cli.max_output);
    move |plugin| {
        let mut limits = config.limits_for(plugin);
        if let Some(fuel) = fuel {
            limits.fuel(fuel);
        }
        if let Some(mib) = memory_mib {
            limits.memory_bytes(mib.saturating_mul(1 << 20));
        }
        if let Some(ms) = timeout_ms {
            limits.deadline(Duration::from_millis(ms));
        }
        if let Some(bytes) = max_output {
            limits.output_bytes(bytes);
        }
        let mut options = PluginOptions::default();
        options.limits(limits).reuse(config.reuse_for(plugin));
        apply_grants(&config, plugin, &mut options);
        options
    }
}

/// The config's `[plugin.NAME.grants]`, when it has them, win over a sidecar policy.
fn apply_grants(config: &Config, plugin: &str, options: &mut PluginOptions) {
    match config.grants_for(plugin) {
        Ok(Some(grants)) => {
            options.grants(grants);
        }
        Ok(None) => {}
        Err(error) => {
            // Checked when the config was loaded; if it broke since (a granted
            // directory removed), grant nothing rather than guess.
            tracing::error!(plugin, %error, "invalid grants; the plugin gets none");
            options.grants(toolhost::Grants::default());
        }
    }
}

async fn load(cli: &Cli, config: &Config, engine: &Engine) -> Result<PluginSet> {
    let dir = plugins_dir(cli, config);
    if !dir.is_dir() {
        bail!(
            "plugins directory {} does not exist (build the examples with `cargo xtask plugins`, or pass --plugins DIR)",
            dir.display()
        );
    }
    // A first load compiles every plugin; large ones (Python, JavaScript) take
    // seconds. A person at a terminal is told what is happening when it is
    // slow; a script or a pipe gets only the result (`TOOLHOST_LOG=info` logs
    // each load anyway).
    let progress = std::io::stderr().is_terminal();
    let start = Instant::now();
    let notice = progress.then(|| {
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            eprintln!("toolhost: compiling plugins (cached for later runs)…");
        })
    });
    let options = options(cli, config);
    let set = PluginSet::load_dir_configured(engine, &dir, &options, |loaded| {
        if progress && loaded.result.is_ok() && start.elapsed() > Duration::from_secs(1) {
            eprintln!(
                "toolhost: loaded {} in {:.1} s",
                loaded.path.display(),
                loaded.elapsed.as_secs_f64()
            );
        }
    })
    .await?;
    if let Some(notice) = notice {
        notice.abort();
    }
    for failure in set.failures() {
        eprintln!("warning: {failure}");
    }
    Ok(set)
}

/// The loaded plugins as the model sees them (see [`layered`]), after warning
/// about the config names that match none of them.
fn layered_set(set: &PluginSet, config: &Config) -> Result<Box<dyn Toolset>> {
    let plugins = StaticPlugins::new("plugins", set);
    let names: Vec<String> = set
        .plugins()
        .iter()
        .map(|p| p.name().to_owned())
        .chain(set.failures().iter().filter_map(|f| file_stem(f.path())))
        .collect();
    for name in unmatched(config, &names, &plugins) {
        warn_unmatched(&name);
    }
    layered(plugins, config)
}

fn file_stem(path: &Path) -> Option<String> {
    path.file_stem().map(|s| s.to_string_lossy().into_owned())
}

/// The config names that match none of `plugins` (file names, loaded or not)
/// and none of the tools of `tools` (before any layer: a name a filter hides
/// still matches).
fn unmatched(config: &Config, plugins: &[String], tools: &dyn Toolset) -> Vec<UnmatchedName> {
    let tools = tools.tools(&Cx::new());
    let specs: Vec<&ToolSpec> = tools.iter().map(|t| t.spec()).collect();
    config.unmatched_names(plugins.iter().map(String::as_str), &specs)
}

fn warn_unmatched(name: &UnmatchedName) {
    tracing::warn!("configuration: {name}");
}

/// Follows the names of `config` that match nothing in `plugins`: warns about
/// each once its first load is done, then, after each reload, about those that
/// newly match nothing (and notes those that match again), so a reload loop
/// repeats nothing.
fn follow_unmatched(config: &Config, plugins: &std::sync::Arc<PluginDir>) {
    let config = config.clone();
    let mut changes = plugins.subscribe();
    let first_load = plugins.when_loaded();
    let plugins = std::sync::Arc::downgrade(plugins);
    tokio::spawn(async move {
        first_load.await;
        let mut reported: std::collections::BTreeMap<_, UnmatchedName> = Default::default();
        loop {
            let Some(dir) = plugins.upgrade() else { return };
            let files: Vec<String> = dir.status().into_iter().map(|s| s.plugin).collect();
            let now: std::collections::BTreeMap<_, _> = unmatched(&config, &files, &*dir)
                .into_iter()
                .map(|name| ((name.source.clone(), name.name.clone()), name))
                .collect();
            drop(dir);
            for (key, name) in &now {
                if !reported.contains_key(key) {
                    warn_unmatched(name);
                }
            }
            for (key, name) in &reported {
                if !now.contains_key(key) {
                    tracing::info!(
                        "configuration: {}: `{}` matches again",
                        name.place(),
                        name.name
                    );
                }
            }
            reported = now;
            match changes.recv().await {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

/// The plugins as the model sees them, in the documented order (inner to
/// outer): plugins → filter → confirmation → aliases.
fn layered(plugins: impl Toolset + 'static, config: &Config) -> Result<Box<dyn Toolset>> {
    let filter = &config.filter;
    let mut visible = Predicate::new(|_, _| true);
    if !filter.allow.is_empty() {
        visible = visible.and(Predicate::glob(filter.allow.clone()));
    }
    if !filter.deny.is_empty() {
        visible = visible.and(!Predicate::glob(filter.deny.clone()));
    }
    let filtered = Filter::new(plugins, visible);
    let hint = config
        .confirm
        .hint
        .clone()
        .unwrap_or_else(|| "This tool needs a human's approval for each call.".to_owned());
    let mut confirmed = Confirm::new(filtered);
    if config.confirm.all {
        confirmed = confirmed.require_all_with(ConfirmationHint::new(hint.clone()));
    }
    if !config.confirm.tools.is_empty() {
        let needs = Predicate::glob(config.confirm.tools.clone());
        confirmed = confirmed.provider(move |cx, spec, _| {
            needs
                .test(cx, spec)
                .then(|| ConfirmationHint::new(hint.clone()))
        });
    }
    let mut aliases: std::collections::BTreeMap<String, ToolAliases> = Default::default();
    for (alias, tool) in &config.aliases.tools {
        let entry = aliases.entry(tool.clone()).or_default();
        *entry = std::mem::take(entry).name(alias.clone());
    }
    for (tool, keys) in &config.aliases.arguments {
        let entry = aliases.entry(tool.clone()).or_default();
        for (alias, canonical) in keys {
            *entry = std::mem::take(entry).argument(canonical.clone(), [alias.clone()]);
        }
    }
    let aliased =
        Aliases::new(confirmed, aliases).context("invalid [aliases] in the configuration")?;
    Ok(Box::new(aliased))
}

async fn run(cli: Cli) -> Result<()> {
    if let Command::New { name, lang, dir } = &cli.command {
        let root = new::create(name, *lang, dir)?;
        writeln!(
            std::io::stdout(),
            "created {}: build it with {}/build.sh",
            root.display(),
            root.display()
        )?;
        return Ok(());
    }
    let config = config(&cli)?;
    let engine = engine(&cli, &config)?;
    match &cli.command {
        Command::List { json } => {
            let set = load(&cli, &config, &engine).await?;
            list(&set, &*layered_set(&set, &config)?, *json)
        }
        Command::Status { json } => status(&cli, &config, &engine, *json).await,
        Command::Describe { tool } => {
            let set = load(&cli, &config, &engine).await?;
            let tools = layered_set(&set, &config)?;
            let found = tools.find(&Cx::new(), tool)?;
            print_json(&declaration(found.spec()))
        }
        Command::Call {
            tool,
            args,
            out_dir,
            call_id,
            yes,
        } => {
            let set = load(&cli, &config, &engine).await?;
            let tools = layered_set(&set, &config)?;
            let arguments = read_arguments(args)?;
            let mut cx = Cx::new();
            if let Some(id) = call_id {
                cx = cx.with_call_id(id.clone());
            }
            let invocation = cx.invocation_id().to_owned();
            let result = call_tool(&*tools, cx, tool, arguments, *yes, out_dir.as_deref()).await;
            engine.end_invocation(&invocation);
            result
        }
        Command::Serve {
            http,
            no_watch,
            max_connections,
            header_read_timeout_ms,
            idle_timeout_ms,
            session_idle_timeout_ms,
            progress_interval_ms,
        } => {
            // Flags win over the configuration file.
            let mut settings = config.serve.clone();
            let or = |flag: &Option<u64>, file: Option<u64>| flag.or(file);
            settings.max_connections = max_connections.or(settings.max_connections);
            settings.header_read_timeout_ms =
                or(header_read_timeout_ms, settings.header_read_timeout_ms);
            settings.idle_timeout_ms = or(idle_timeout_ms, settings.idle_timeout_ms);
            settings.session_idle_timeout_ms =
                or(session_idle_timeout_ms, settings.session_idle_timeout_ms);
            settings.progress_interval_ms = or(progress_interval_ms, settings.progress_interval_ms);
            serve(
                &cli,
                &config,
                &settings,
                &engine,
                http.as_deref(),
                !*no_watch,
            )
            .await
        }
        Command::Inspect { file, json } => inspect(&engine, file, *json).await,
        Command::New { .. } => unreachable!("handled before the engine starts"),
    }
}

/// `toolhost serve`: the plugins directory, layered as configured, over MCP.
async fn serve(
    cli: &Cli,
    config: &Config,
    settings: &ServeConfig,
    engine: &Engine,
    http: Option<&str>,
    watch: bool,
) -> Result<()> {
    let dir = plugins_dir(cli, config);
    if !dir.is_dir() {
        bail!(
            "plugins directory {} does not exist (build the examples with `cargo xtask plugins`, or pass --plugins DIR)",
            dir.display()
        );
    }
    // The server answers at once; each plugin joins as it loads (a slow or
    // failing one delays no other), and `tools/list` waits for the first load.
    let plugins =
        std::sync::Arc::new(PluginDir::start_configured(engine, &dir, options(cli, config)).await?);
    follow_unmatched(config, &plugins);
    let (loaded, ready) = tokio::sync::watch::channel(false);
    let first_load = plugins.when_loaded();
    // Each plugin's compile and load is logged as it happens (target
    // `toolhost::load`, at info by default for `serve`).
    tokio::spawn(async move {
        first_load.await;
        let _ = loaded.send(true);
    });
    if watch {
        plugins
            .watch()
            .with_context(|| format!("cannot watch {}", dir.display()))?;
    }
    let changes = plugins.subscribe();
    let tools = layered(plugins, config)?;
    let mut server = McpServer::new(tools)
        .with_changes(changes)
        .with_engine(engine)
        .with_ready(ready);
    if let Some(ms) = settings.progress_interval_ms {
        server = server.with_progress_interval(Duration::from_millis(ms));
    }
    let Some(addr) = http else {
        server.serve_stdio().await?;
        return Ok(());
    };
    let mut options = HttpOptions::default();
    for host in &config.serve.allowed_hosts {
        options.allow_host(host.clone());
    }
    for origin in &config.serve.allowed_origins {
        options.allow_origin(origin.clone());
    }
    if let Some(max) = settings.max_connections {
        options.max_connections(max);
    }
    if let Some(ms) = settings.header_read_timeout_ms {
        options.header_read_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.idle_timeout_ms {
        options.idle_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.session_idle_timeout_ms {
        options.session_idle_timeout(Duration::from_millis(ms));
    }
    let token = match (
        std::env::var("TOOLHOST_MCP_TOKEN"),
        &config.serve.token_file,
    ) {
        (Ok(token), _) if !token.trim().is_empty() => Some(token.trim().to_owned()),
        (_, Some(file)) => {
            let token = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the token file {}", file.display()))?;
            if token.trim().is_empty() {
                bail!("the token file {} is empty", file.display());
            }
            Some(token.trim().to_owned())
        }
        _ => None,
    };
    if let Some(token) = token {
        options.bearer_token(token);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback()
        && std::env::var("TOOLHOST_MCP_TOKEN").is_err()
        && config.serve.token_file.is_none()
    {
        eprintln!(
            "warning: serving on {local}, which is not a loopback address, without a bearer token (set TOOLHOST_MCP_TOKEN or [serve] token_file)"
        );
    }
    eprintln!("toolhost: serving MCP at http://{local}/mcp");
    let shutdown = async {
        // Ctrl-C (or SIGINT) ends the server after in-flight requests.
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_http(listener, options, shutdown).await?;
    Ok(())
}

async fn status(cli: &Cli, config: &Config, engine: &Engine, as_json: bool) -> Result<()> {
    let dir = plugins_dir(cli, config);
    if !dir.is_dir() {
        bail!("plugins directory {} does not exist", dir.display());
    }
    let plugins = PluginDir::open_configured(engine, &dir, options(cli, config)).await?;
    let files: Vec<String> = plugins.status().into_iter().map(|s| s.plugin).collect();
    let unmatched = unmatched(config, &files, &plugins);
    for name in &unmatched {
        warn_unmatched(name);
    }
    let rows: Vec<Value> = plugins
        .status()
        .into_iter()
        .map(|status| {
            let file = status
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match status.state {
                LoadState::Loaded { tools } => {
                    json!({"file": file, "plugin": status.plugin, "state": "loaded", "tools": tools})
                }
                LoadState::Failed { error, .. } => {
                    json!({"file": file, "plugin": status.plugin, "state": "failed", "error": error})
                }
                _ => json!({"file": file, "plugin": status.plugin, "state": "unknown"}),
            }
        })
        .collect();
    let failed = rows.iter().filter(|r| r["state"] != "loaded").count();
    if as_json {
        let unmatched: Vec<Value> = unmatched
            .iter()
            .map(|name| {
                json!({
                    "from": name.place(),
                    "name": name.name,
                    "suggestion": name.suggestion,
                    "candidates": name.candidates,
                    "message": name.to_string(),
                })
            })
            .collect();
        print_json(&json!({"plugins": rows, "unmatched_config_names": unmatched}))?;
    } else {
        let mut out = std::io::stdout().lock();
        for row in &rows {
            let detail = match row["tools"].as_array() {
                Some(tools) => tools
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                None => row["error"].as_str().unwrap_or("").to_owned(),
            };
            writeln!(
                out,
                "{:24}  {:7}  {detail}",
                row["file"].as_str().unwrap_or(""),
                row["state"].as_str().unwrap_or("")
            )?;
        }
        if !unmatched.is_empty() {
            writeln!(out, "\nCONFIG NAMES THAT MATCH NOTHING")?;
            for name in &unmatched {
                writeln!(out, "{name}")?;
            }
        }
    }
    if failed > 0 {
        bail!("{failed} plugin file(s) failed to load");
    }
    Ok(())
}

fn declaration(spec: &ToolSpec) -> Value {
    let mut value = json!({
        "name": spec.name,
        "description": spec.model_description(),
        "parameters": spec.input_schema,
        "long_running": spec.long_running,
        "streaming": spec.streaming,
    });
    if let Some(output) = &spec.output_schema {
        value["response"] = output.clone();
    }
    value
}

fn print_json(value: &Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

fn list(set: &PluginSet, layered: &dyn Toolset, as_json: bool) -> Result<()> {
    let visible: std::collections::HashSet<String> = layered
        .tools(&Cx::new())
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    let mut tools = set.tools();
    tools.retain(|t| visible.contains(&t.call_name()));
    if as_json {
        let rows: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "plugin": t.plugin.name(),
                    "tool": t.spec.name,
                    "call_name": t.call_name(),
                    "description": t.spec.description,
                    "long_running": t.spec.long_running,
                    "streaming": t.spec.streaming,
                    "asks": asks(t.plugin),
                    "granted": t.plugin.grants().summary(),
                })
            })
            .collect();
        return print_json(&Value::Array(rows));
    }
    let mut rows = vec![[
        "PLUGIN".to_owned(),
        "TOOL".to_owned(),
        "LONG-RUNNING".to_owned(),
        "DESCRIPTION".to_owned(),
    ]];
    for t in &tools {
        let mut description = t.spec.description.lines().next().unwrap_or("").to_owned();
        if description.chars().count() > 70 {
            description = description.chars().take(69).collect::<String>() + "…";
        }
        let name = if t.spec.streaming {
            format!("{} (stream)", t.call_name())
        } else {
            t.call_name()
        };
        let long = if t.spec.long_running { "yes" } else { "no" };
        rows.push([
            t.plugin.name().to_owned(),
            name,
            long.to_owned(),
            description,
        ]);
    }
    let widths: Vec<usize> = (0..3)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = std::io::stdout().lock();
    for row in rows {
        writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )?;
    }
    capabilities(&mut out, set)
}

/// What a plugin's imports ask for: capability names, `!` marking those not granted.
fn asks(plugin: &toolhost::Plugin) -> Vec<String> {
    plugin
        .requested()
        .into_iter()
        .map(|cap| {
            if cap.needs_grant() && !plugin.grants().covers(cap) {
                format!("{cap}!")
            } else {
                cap.to_string()
            }
        })
        .collect()
}

/// Per plugin: what its WASI imports ask for and what it is granted.
fn capabilities(out: &mut impl Write, set: &PluginSet) -> Result<()> {
    writeln!(out)?;
    let rows: Vec<[String; 3]> = set
        .plugins()
        .iter()
        .map(|p| {
            let granted = p.grants().summary();
            [
                p.name().to_owned(),
                asks(p).join(", "),
                if granted.is_empty() {
                    "nothing".to_owned()
                } else {
                    granted.join("; ")
                },
            ]
        })
        .collect();
    let width = |i: usize, title: &str| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0, "PLUGIN"), width(1, "ASKS FOR"));
    writeln!(out, "{:w0$}  {:w1$}  GRANTED", "PLUGIN", "ASKS FOR")?;
    for [plugin, asks, granted] in &rows {
        writeln!(out, "{plugin:w0$}  {asks:w1$}  {granted}")?;
    }
    if rows.iter().any(|r| r[1].contains('!')) {
        writeln!(
            out,
            "(`!`: imported but not granted; calls that use it are refused. Grant it in toolhost.toml or NAME{}.)",
            toolhost::SIDECAR_SUFFIX
        )?;
    }
    Ok(())
}

fn read_arguments(args: &str) -> Result<Value> {
    let text = if args == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading arguments from stdin")?;
        text
    } else {
        args.to_owned()
    };
    let value: Value = serde_json::from_str(&text).context("the arguments are not valid JSON")?;
    if !value.is_object() {
        bail!("the arguments must be a JSON object, like {{\"text\": \"hello\"}}");
    }
    Ok(value)
}

/// Writes binary parts to files and describes every part as JSON.
struct PartWriter {
    dir: Option<PathBuf>,
    requested: Option<PathBuf>,
    count: usize,
}

impl PartWriter {
    fn describe(&mut self, part: Part) -> Result<Value> {
        Ok(match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Json(value) => json!({"type": "json", "json": value}),
            Part::Blob {
                kind,
                mime_type,
                name,
                data,
            } => {
                let dir = self.dir()?;
                self.count += 1;
                let path = create_new_file(&dir, name.as_deref(), self.count, &mime_type, &data)?;
                let kind = match kind {
                    MediaKind::Image => "image",
                    MediaKind::Audio => "audio",
                    MediaKind::Video => "video",
                    _ => "file",
                };
                json!({"type": kind, "mime_type": mime_type, "bytes": data.len(), "file": path})
            }
            _ => json!({"type": "unknown"}),
        })
    }

    fn dir(&mut self) -> Result<PathBuf> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let dir = match &self.requested {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir().join(format!(
                "toolhost-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default()
            )),
        };
        match &self.requested {
            Some(_) => std::fs::create_dir_all(&dir),
            // A fresh directory of our own: fail rather than use one that
            // someone else made at that name first.
            None => std::fs::create_dir(&dir),
        }
        .with_context(|| format!("creating {}", dir.display()))?;
        self.dir = Some(dir.clone());
        Ok(dir)
    }
}

/// Writes a blob into `dir` as a new file: under its own name's last
/// component if it has a usable one (else `part-N.EXT`), with `-2`, `-3`, ...
/// before the extension while that name is taken. Never overwrites a file and
/// never follows a link already in the directory (`O_CREAT | O_EXCL`).
fn create_new_file(
    dir: &Path,
    name: Option<&str>,
    count: usize,
    mime_type: &str,
    data: &[u8],
) -> Result<PathBuf> {
    let name = name
        .and_then(|n| Path::new(n).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .unwrap_or_else(|| format!("part-{count}.{}", extension(mime_type)));
    let (stem, ext) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
        _ => (name.clone(), String::new()),
    };
    for n in 1..=1000 {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{stem}-{n}{ext}")
        };
        let path = dir.join(&candidate);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(data)
                    .with_context(|| format!("writing {}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    bail!(
        "cannot write `{name}` into {}: that name and 999 numbered variants are taken",
        dir.display()
    )
}

fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// What the human said to a call that needs confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    /// Nobody to ask: stdin is not a terminal.
    NoTerminal,
}

/// Asks the human on the terminal (stdin, when it is one) whether to run a
/// call that needs confirmation; the question goes to stderr.
fn ask(request: &toolhost::ConfirmationRequest) -> Result<Answer> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(Answer::NoTerminal);
    }
    ask_on(request, &mut stdin.lock(), &mut std::io::stderr())
}

/// Asks once on `output` and reads one line of `input`: `y` or `yes` (any
/// case) runs the call; anything else, or the end of input, declines.
fn ask_on(
    request: &toolhost::ConfirmationRequest,
    input: &mut impl std::io::BufRead,
    output: &mut impl Write,
) -> Result<Answer> {
    write!(
        output,
        "toolhost: `{}` needs confirmation: {}\n  arguments: {}\nRun it? [y/N] ",
        request.tool, request.hint, request.arguments
    )?;
    output.flush()?;
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    Ok(if yes { Answer::Yes } else { Answer::No })
}

async fn call_tool(
    tools: &dyn Toolset,
    cx: Cx,
    name: &str,
    arguments: Value,
    yes: bool,
    out_dir: Option<&Path>,
) -> Result<()> {
    let tool = tools.find(&cx, name)?;
    let streaming = tool.spec().streaming;
    let start = |cx: Cx, arguments: Value| {
        let tool = tool.clone();
        async move {
            if streaming {
                tool.stream(&cx, arguments).await.map(Ok)
            } else {
                tool.invoke(&cx, arguments).await.map(Err)
            }
        }
    };
    let started = match start(cx.clone(), arguments).await {
        Err(CallError::ConfirmationRequired(request)) => {
            match if yes { Answer::Yes } else { ask(&request)? } {
                Answer::Yes => {}
                Answer::No => bail!("declined: `{}` was not run", request.tool),
                Answer::NoTerminal => bail!(
                    "`{}` needs confirmation ({}) and there is no terminal to ask on; run again with --yes to approve it",
                    request.tool,
                    request.hint
                ),
            }
            let approved = cx.with_decision(
                request.call_id.clone(),
                Decision::Approve {
                    arguments: request.arguments.clone(),
                    payload: request.payload.clone(),
                },
            );
            start(approved, request.arguments.clone()).await?
        }
        other => other?,
    };
    let mut writer = PartWriter {
        dir: None,
        requested: out_dir.map(Path::to_owned),
        count: 0,
    };
    let output = match started {
        Err(output) => output,
        Ok(mut stream) => {
            // Print each chunk as a JSON line the moment it arrives.
            while let Some(part) = stream.next().await {
                let line = writer.describe(part?)?;
                let mut out = std::io::stdout().lock();
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
                out.flush()?;
            }
            return Ok(());
        }
    };
    if output.parts.is_empty() {
        return print_json(&output.result.unwrap_or(Value::Null));
    }
    let parts = output
        .parts
        .into_iter()
        .map(|p| writer.describe(p))
        .collect::<Result<Vec<_>>>()?;
    print_json(&json!({"result": output.result, "parts": parts}))
}

async fn inspect(engine: &Engine, file: &Path, as_json: bool) -> Result<()> {
    let (info, plugin) = toolhost::inspect(engine, file).await?;
    let wasi: Vec<&String> = info
        .imports
        .iter()
        .filter(|i| i.starts_with("wasi:"))
        .collect();
    let tools = plugin
        .as_ref()
        .map(|p| p.tools().map(declaration).collect::<Vec<_>>());
    if as_json {
        return print_json(&json!({
            "file": file,
            "toolhost_version": info.toolhost_version(),
            "imports": info.imports,
            "exports": info.exports,
            "tools": tools.as_ref().ok(),
            "error": plugin.as_ref().err().map(ToString::to_string),
        }));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "file:     {}", file.display())?;
    match info.toolhost_version() {
        Some(version) => writeln!(out, "world:    toolhost:plugin/plugin@{version}")?,
        None => writeln!(
            out,
            "world:    not a toolhost plugin (exports: {})",
            info.exports.join(", ")
        )?,
    }
    writeln!(
        out,
        "wasi:     {}",
        if wasi.is_empty() {
            "none".to_owned()
        } else {
            wasi.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    // The loaded plugin's own answer; from the imports alone if it did not load.
    let caps = match &plugin {
        Ok(plugin) => plugin.requested(),
        Err(_) => toolhost::Capability::of_imports(&info.imports),
    };
    let asks: Vec<String> = caps.iter().map(ToString::to_string).collect();
    writeln!(
        out,
        "asks:     {}",
        if asks.is_empty() {
            "nothing".to_owned()
        } else {
            asks.join(", ")
        }
    )?;
    match &tools {
        Ok(tools) => {
            writeln!(out, "tools:")?;
            for tool in tools {
                writeln!(
                    out,
                    "  {}  {}",
                    tool["name"].as_str().unwrap_or(""),
                    tool["description"]
                        .as_str()
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or("")
                )?;
            }
        }
        Err(err) => writeln!(out, "error:    {err}")?,
    }
    if std::io::stdout().is_terminal() {
        out.flush()?;
    }
    Ok(())
}
