//! Command-line interface (clap). `anyhow` is allowed here only.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use tracing::Instrument as _;

mod ask;
mod call;
mod catalog;
mod dialects;
mod inspect;
mod new;
mod oci;
mod plugins;
mod report;
mod serve;
mod sources;
mod stderr;
mod telemetry;

use call::{call_tool, read_arguments};
use clap::{Parser, Subcommand};
use plugins::{Takes, plugins_dir};
use report::{declaration, list, print_json, status};
use serve::serve;
use toolhost::config::UnmatchedName;
use toolhost::{
    Config, Context as Cx, Engine, EngineConfig, PluginOptions, PluginSet, ToolSpec, Toolset,
    ToolsetExt,
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

    /// Output size limit per call, in bytes (`max_output_bytes` in the
    /// configuration; `--max-output` is the old name).
    #[arg(long, global = true, alias = "max-output")]
    max_output_bytes: Option<u64>,

    /// Guest memory all calls together may hold, in MiB [default: half the
    /// machine's memory]; past it a call waits briefly, then fails as busy.
    #[arg(long, global = true)]
    max_guest_memory_mib: Option<u64>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the tools of every plugin: plugin, tool, description, long-running;
    /// then the resources, resource templates and prompts, if any.
    List {
        /// Print JSON instead of a table (the tools, as an array).
        #[arg(long)]
        json: bool,
        /// With --json: print an object with every kind of item: `tools` (the
        /// array --json prints), `resources`, `resource_templates`, `prompts`.
        #[arg(long, requires = "json")]
        catalog: bool,
        /// Check each tool's input schema against the dialects model providers
        /// accept (JSON Schema, OpenAI strict mode, Gemini); exit non-zero if any
        /// refuses a tool or loses part of its schema.
        #[arg(long)]
        check: bool,
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
    /// Read a resource (listed, or one a resource template matches): text is
    /// printed, binary content written to a file whose path is printed.
    Read {
        /// The resource's URI.
        uri: String,
        /// Where binary content is written [default: a new temp dir].
        #[arg(long)]
        out_dir: Option<PathBuf>,
        /// Print JSON: each content's URI, MIME type and text or file.
        #[arg(long)]
        json: bool,
    },
    /// Get a prompt filled in with arguments and print its messages (`role:
    /// text`); images and audio are written to files.
    Prompt {
        /// The prompt (`name` or `plugin.name`).
        name: String,
        /// Its arguments, as KEY=VALUE.
        #[arg(value_name = "KEY=VALUE")]
        arguments: Vec<String>,
        /// Where images, audio and binary resources are written [default: a new temp dir].
        #[arg(long)]
        out_dir: Option<PathBuf>,
        /// Print JSON: the description and the messages.
        #[arg(long)]
        json: bool,
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
        /// HTTP: the most connections one peer address may hold [default: half of max_connections; behind a proxy, set it to max_connections; config: [serve] max_connections_per_peer].
        #[arg(long, value_name = "N")]
        max_connections_per_peer: Option<usize>,
        /// HTTP: milliseconds a connection may take to send a request head [default: 10000].
        #[arg(long, value_name = "MS")]
        header_read_timeout_ms: Option<u64>,
        /// HTTP: milliseconds a connection may move no bytes [default: 120000].
        #[arg(long, value_name = "MS")]
        idle_timeout_ms: Option<u64>,
        /// HTTP: milliseconds a session may go without traffic before it ends [default: 300000].
        #[arg(long, value_name = "MS")]
        session_idle_timeout_ms: Option<u64>,
        /// HTTP: milliseconds a dropped call stream may be resumed (Last-Event-ID) [default: 30000].
        #[arg(long, value_name = "MS")]
        stream_resume_ms: Option<u64>,
        /// HTTP: end a call's stream after this long so the client resumes it (SEP-1699 polling) [default: never].
        #[arg(long, value_name = "MS")]
        stream_close_after_ms: Option<u64>,
        /// Milliseconds between two progress notifications of one call [default: 100].
        #[arg(long, value_name = "MS")]
        progress_interval_ms: Option<u64>,
        /// HTTP: milliseconds a stop lets running calls finish before cancelling them [default: 30000].
        #[arg(long, value_name = "MS")]
        drain_timeout_ms: Option<u64>,
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
    /// Push a component to an OCI registry (as `wkg oci push` does); prints
    /// the pinned reference.
    Push {
        /// The component (`.wasm`); a core module or anything else is refused.
        file: PathBuf,
        /// Where: HOST/REPOSITORY:TAG (an `oci://` prefix is fine).
        reference: String,
        #[command(flatten)]
        registry: oci::RegistryArgs,
    },
    /// Pull a component from an OCI registry, verify it, and write it as
    /// DIR/NAME.wasm (NAME: the repository's last segment); prints the pinned
    /// reference and the file's SHA-256.
    Pull {
        /// HOST/REPOSITORY:TAG or HOST/REPOSITORY@sha256:DIGEST (an `oci://` prefix is fine).
        reference: String,
        /// Where to write it [default: the plugins directory].
        #[arg(long, value_name = "DIR")]
        to: Option<PathBuf>,
        /// The largest component taken, in bytes [default: [oci] max_bytes, else 256 MiB].
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
        /// Refuse it unless it has a cosign signature made with this public
        /// key (PEM; repeat for several, one is enough).
        #[arg(long, value_name = "FILE.pub")]
        key: Vec<PathBuf>,
        #[command(flatten)]
        registry: oci::RegistryArgs,
    },
    /// Generate a key pair to sign components with, as `cosign
    /// generate-key-pair` does: PREFIX.key (encrypted with $COSIGN_PASSWORD,
    /// which may be empty) and PREFIX.pub. Never overwrites.
    Keygen {
        /// Where: PREFIX.key and PREFIX.pub.
        #[arg(default_value = "cosign")]
        prefix: PathBuf,
    },
    /// Sign a component in an OCI registry with a private key (cosign's
    /// layout: `cosign verify --key` accepts it); prints where the signature is.
    Sign {
        /// HOST/REPOSITORY:TAG or HOST/REPOSITORY@sha256:DIGEST; a tag is
        /// signed as the digest it points to now.
        reference: String,
        /// The private key (PEM, from `cosign generate-key-pair`, then
        /// decrypted with $COSIGN_PASSWORD, or `openssl genpkey`).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[command(flatten)]
        registry: oci::RegistryArgs,
    },
    /// Show what a component file is: world, version, tools, imported
    /// interfaces, and the resources, templates and prompts it offers.
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
  and the drain of a stop (target toolhost::serve) at info. The commands that
  load plugins once (list, status, describe, call, read, prompt) report load
  failures themselves, and write plain `warning: ...` lines; `serve`, and any
  command run with TOOLHOST_LOG set, write tracing's timestamped lines. Tools
  that several plugins offer are warned about by list, status and serve.
  Examples: TOOLHOST_LOG=debug, TOOLHOST_LOG=info,toolhost::plugin=debug";

/// Runs the CLI; prints a one-line error and exits non-zero on failure.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
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
    // In the runtime: the gRPC exporter's client needs one.
    let telemetry = match runtime.block_on(async { telemetry::start(&cli) }) {
        Ok(telemetry) => telemetry,
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            return ExitCode::FAILURE;
        }
    };
    stderr::init(&cli.command, telemetry.as_ref());
    let result = runtime.block_on(run(cli));
    // Exports what waits, while the runtime still runs its client.
    drop(telemetry);
    // A blocking job still running (a guest's file read on a slow disk, a
    // DNS lookup) does not hold the exit up for long.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
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
    if let Some(n) = config.engine.max_concurrent_instances {
        engine_config.max_concurrent_instances(n);
    }
    if let Some(compilation) = config.engine.compilation {
        engine_config.compilation(compilation);
    }
    config.load.apply(&mut engine_config);
    config.state.apply(&mut engine_config);
    Ok(Engine::new(&engine_config)?)
}

/// Each plugin's options: the configuration's ([`Config::plugin_options`]),
/// then the command-line flags.
fn options(cli: &Cli, config: &Config) -> impl Fn(&str) -> PluginOptions + Send + Sync + 'static {
    let config = config.clone();
    let (fuel, memory_mib, timeout_ms, max_output) = (
        cli.fuel,
        cli.memory_mib,
        cli.timeout_ms,
        cli.max_output_bytes,
    );
    move |plugin| {
        let mut options = config.plugin_options(plugin);
        let limits = &mut options.limits;
        if let Some(fuel) = fuel {
            limits.fuel(fuel);
        }
        if let Some(mib) = memory_mib {
            limits.memory_bytes(mib.saturating_mul(1 << 20));
        }
        if let Some(ms) = timeout_ms {
            limits.timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = max_output {
            limits.max_output_bytes(bytes);
        }
        options
    }
}

async fn load(cli: &Cli, config: &Config, engine: &Engine) -> Result<Arc<PluginSet>> {
    let dir = plugins::checked(cli, config, Takes::DirOrFile)?;
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
    let mut set = PluginSet::load_dir_configured(engine, &dir, &options, |loaded| {
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
    let mut failed_sources = 0;
    if let Some(sources) = sources::open(config, engine)? {
        let plugins = sources.load(engine, &options).await;
        failed_sources = sources::warn_failed(&sources);
        set = set.with_plugins(plugins);
    }
    // Said before the command's own output, which is then empty.
    let failed = set.failures().len() + failed_sources;
    if let Some(why) = plugins::emptiness(&dir, set.plugins().len(), failed) {
        eprintln!("warning: {why}");
    }
    Ok(Arc::new(set))
}

/// The loaded plugins as the model sees them (see [`layered`]), after warning
/// about the config names that match none of them.
fn layered_set(set: &Arc<PluginSet>, config: &Config, engine: &Engine) -> Result<Box<dyn Toolset>> {
    let plugins = Arc::clone(set);
    let names: Vec<String> = set
        .plugins()
        .iter()
        .map(|p| p.name().to_owned())
        .chain(set.failures().iter().filter_map(|f| file_stem(f.path())))
        .collect();
    for name in unmatched(config, &names, &plugins) {
        warn_unmatched(&name);
    }
    layered(plugins, config, engine)
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

/// The plugins as the model sees them ([`Config::layered_with_state`]),
/// approvals kept in the engine's state store.
fn layered(
    plugins: impl Toolset + 'static,
    config: &Config,
    engine: &Engine,
) -> Result<Box<dyn Toolset>> {
    Ok(Box::new(
        config.layered_with_state(plugins, engine.state())?,
    ))
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
    // Registries need no engine.
    match &cli.command {
        Command::Push {
            file,
            reference,
            registry,
        } => return oci::push(file, reference, registry, &config).await,
        Command::Pull {
            reference,
            to,
            max_bytes,
            key,
            registry,
        } => {
            let dir = to.clone().unwrap_or_else(|| plugins_dir(&cli, &config));
            return oci::pull(reference, &dir, *max_bytes, key, registry, &config).await;
        }
        Command::Sign {
            reference,
            key,
            registry,
        } => return oci::sign(reference, key, registry, &config).await,
        Command::Keygen { prefix } => return oci::keygen(prefix),
        _ => {}
    }
    let engine = engine(&cli, &config)?;
    match &cli.command {
        Command::List {
            json,
            catalog,
            check,
        } => {
            let set = load(&cli, &config, &engine).await?;
            let layered = layered_set(&set, &config, &engine)?;
            list(&set, &*layered, *json, *catalog, *check)
        }
        Command::Status { json } => status(&cli, &config, &engine, *json).await,
        Command::Describe { tool } => {
            let set = load(&cli, &config, &engine).await?;
            let tools = layered_set(&set, &config, &engine)?;
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
            let tools = layered_set(&set, &config, &engine)?;
            let arguments = read_arguments(args)?;
            let mut cx = Cx::new();
            if let Some(id) = call_id {
                cx = cx.with_call_id(id.clone());
            }
            // A tool's questions go to the terminal; without one, nobody is
            // asked and the tool hears so.
            if let Some(asker) = ask::terminal() {
                cx = cx.with_asker(asker);
            }
            let invocation = cx.invocation_id().to_owned();
            // Joins the trace of whoever ran this command (`TRACEPARENT`).
            let span = toolhost::telemetry::span_from_environment("toolhost call");
            let result = call_tool(&*tools, cx, tool, arguments, *yes, out_dir.as_deref())
                .instrument(span)
                .await;
            engine.end_invocation(&invocation);
            result
        }
        Command::Read { uri, out_dir, json } => {
            let set = load(&cli, &config, &engine).await?;
            let items = layered_set(&set, &config, &engine)?;
            let cx = Cx::new();
            let result = catalog::read(&*items, &cx, uri, out_dir.as_deref(), *json).await;
            engine.end_invocation(cx.invocation_id());
            result
        }
        Command::Prompt {
            name,
            arguments,
            out_dir,
            json,
        } => {
            let set = load(&cli, &config, &engine).await?;
            let items = layered_set(&set, &config, &engine)?;
            let cx = Cx::new();
            let result =
                catalog::prompt(&*items, &cx, name, arguments, out_dir.as_deref(), *json).await;
            engine.end_invocation(cx.invocation_id());
            result
        }
        Command::Serve {
            http,
            no_watch,
            max_connections,
            max_connections_per_peer,
            header_read_timeout_ms,
            idle_timeout_ms,
            session_idle_timeout_ms,
            stream_resume_ms,
            stream_close_after_ms,
            progress_interval_ms,
            drain_timeout_ms,
        } => {
            // Flags win over the configuration file.
            let mut settings = config.serve.clone();
            let or = |flag: &Option<u64>, file: Option<u64>| flag.or(file);
            settings.max_connections = max_connections.or(settings.max_connections);
            settings.max_connections_per_peer =
                max_connections_per_peer.or(settings.max_connections_per_peer);
            settings.header_read_timeout_ms =
                or(header_read_timeout_ms, settings.header_read_timeout_ms);
            settings.idle_timeout_ms = or(idle_timeout_ms, settings.idle_timeout_ms);
            settings.session_idle_timeout_ms =
                or(session_idle_timeout_ms, settings.session_idle_timeout_ms);
            settings.stream_resume_ms = or(stream_resume_ms, settings.stream_resume_ms);
            settings.stream_close_after_ms =
                or(stream_close_after_ms, settings.stream_close_after_ms);
            settings.progress_interval_ms = or(progress_interval_ms, settings.progress_interval_ms);
            settings.drain_timeout_ms = or(drain_timeout_ms, settings.drain_timeout_ms);
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
        Command::Inspect { file, json } => inspect::inspect(&engine, file, *json).await,
        Command::New { .. }
        | Command::Push { .. }
        | Command::Pull { .. }
        | Command::Sign { .. }
        | Command::Keygen { .. } => {
            unreachable!("handled before the engine starts")
        }
    }
}
