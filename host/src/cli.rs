//! Command-line interface (clap). `anyhow` is allowed here only.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use toolhost::{
    Engine, EngineConfig, Limits, MediaKind, Part, PluginOptions, PluginSet, ToolCall, ToolSpec,
};

/// Run LLM-agent tools as sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version, about)]
struct Cli {
    /// Directory of plugin `.wasm` files.
    #[arg(
        long,
        global = true,
        env = "TOOLHOST_PLUGINS",
        default_value = "target/plugins"
    )]
    plugins: PathBuf,

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

/// Runs the CLI; prints a one-line error and exits non-zero on failure.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
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
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}

fn one_line(err: &anyhow::Error) -> String {
    format!("{err:#}").replace('\n', " ")
}

fn engine(cli: &Cli) -> Result<Engine> {
    let mut config = EngineConfig::default();
    if cli.no_cache {
        config.cache_dir(None);
    } else if let Some(dir) = &cli.cache_dir {
        config.cache_dir(Some(dir.clone()));
    }
    Ok(Engine::new(&config)?)
}

fn options(cli: &Cli) -> PluginOptions {
    let mut limits = Limits::default();
    if let Some(fuel) = cli.fuel {
        limits.fuel(fuel);
    }
    if let Some(mib) = cli.memory_mib {
        limits.memory_bytes(mib.saturating_mul(1 << 20));
    }
    if let Some(ms) = cli.timeout_ms {
        limits.deadline(Duration::from_millis(ms));
    }
    if let Some(bytes) = cli.max_output {
        limits.output_bytes(bytes);
    }
    let mut options = PluginOptions::default();
    options.limits(limits);
    options
}

async fn load(cli: &Cli, engine: &Engine) -> Result<PluginSet> {
    if !cli.plugins.is_dir() {
        bail!(
            "plugins directory {} does not exist (build the examples with `cargo xtask plugins`, or pass --plugins DIR)",
            cli.plugins.display()
        );
    }
    let start = Instant::now();
    // A first load compiles every plugin; large ones (Python, JavaScript) take
    // seconds, so say what is happening when it is slow.
    let notice = tokio::spawn(async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        eprintln!("toolhost: compiling plugins (cached for later runs)…");
    });
    let set = PluginSet::load_dir_with(engine, &cli.plugins, &options(cli), |loaded| {
        if start.elapsed() > Duration::from_secs(1) {
            let outcome = if loaded.result.is_ok() {
                "loaded"
            } else {
                "failed"
            };
            eprintln!(
                "toolhost: {outcome} {} in {:.1} s",
                loaded.path.display(),
                loaded.elapsed.as_secs_f64()
            );
        }
    })
    .await?;
    notice.abort();
    for failure in set.failures() {
        eprintln!("warning: {failure}");
    }
    Ok(set)
}

async fn run(cli: Cli) -> Result<()> {
    let engine = engine(&cli)?;
    match &cli.command {
        Command::List { json } => list(&load(&cli, &engine).await?, *json),
        Command::Describe { tool } => {
            let set = load(&cli, &engine).await?;
            let (plugin, spec) = set.resolve(tool)?;
            let mut declaration = declaration(spec);
            declaration["plugin"] = json!(plugin.name());
            print_json(&declaration)
        }
        Command::Call {
            tool,
            args,
            out_dir,
            call_id,
        } => {
            let set = load(&cli, &engine).await?;
            let arguments = read_arguments(args)?;
            let mut call = ToolCall::new(tool.clone(), arguments);
            if let Some(id) = call_id {
                call = call.with_call_id(id.clone());
            }
            let invocation = call.invocation_id().to_owned();
            let result = call_tool(&set, call, out_dir.as_deref()).await;
            engine.end_invocation(&invocation);
            result
        }
        Command::Inspect { file, json } => inspect(&engine, file, *json).await,
    }
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

fn list(set: &PluginSet, as_json: bool) -> Result<()> {
    let tools = set.tools();
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
                let file_name = name
                    .as_deref()
                    .and_then(|n| Path::new(n).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| format!("part-{}.{}", self.count, extension(&mime_type)));
                let path = dir.join(file_name);
                std::fs::write(&path, &data)
                    .with_context(|| format!("writing {}", path.display()))?;
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
                Instant::now().elapsed().as_nanos()
            )),
        };
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        self.dir = Some(dir.clone());
        Ok(dir)
    }
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

async fn call_tool(set: &PluginSet, call: ToolCall, out_dir: Option<&Path>) -> Result<()> {
    let (_, spec) = set.resolve(call.tool())?;
    let mut writer = PartWriter {
        dir: None,
        requested: out_dir.map(Path::to_owned),
        count: 0,
    };
    if spec.streaming {
        // Print each chunk as a JSON line the moment it arrives.
        let mut stream = set.stream(call).await?;
        while let Some(part) = stream.next().await {
            let line = writer.describe(part?)?;
            let mut out = std::io::stdout().lock();
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
            out.flush()?;
        }
        return Ok(());
    }
    let output = set.invoke(call).await?;
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
