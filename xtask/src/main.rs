//! `cargo xtask <command>`: project automation in plain Rust.
//!
//! - `plugins [--all]`: build the Rust example plugins into `target/plugins/`
//!   (needs only rustup's wasm32-wasip2 target); `--all` adds the Python,
//!   JavaScript, Go and C examples (installing their pinned toolchains).
//! - `guests [NAME...]`: build the guests written in other languages than Rust
//!   (`tests/plugins/*` and `plugins/*` without a `Cargo.toml`) into
//!   `<target>/polyglot/<name>.wasm`, with toolchains pinned by the repo. The host
//!   tests load them from there (`toolhost_test_plugins::POLYGLOT`).
//! - `sdk-test`: the guest SDKs' native unit tests (Python: pytest; JavaScript:
//!   `node --test`; Go: `go test`).
//! - `bindings [--check]`: regenerate the C and Go bindings of `wit/` that the
//!   guest SDKs commit (`guest-sdk/c/gen`, `guest-sdk/go/bindings`) and the Go
//!   bindings' runtime package (`guest-sdk/go/witpkg`); `--check` fails if they
//!   differ from fresh ones instead.
//! - `demo`: build the Rust example plugins and the `toolhost` CLI, then list and call tools.
//! - `docs-test`: run the README's install and tour verbatim in a scratch copy
//!   of the repository, and every command and config snippet of the README and
//!   `docs/` (see `docs.rs`).
//! - `test`: check the committed bindings (`bindings --check`), build the
//!   non-Rust guests, run the SDK unit tests and every cargo test (installs the
//!   wasm32-wasip2 target if missing), then `new-test`, `docs-test` and `mcp-test`.
//! - `new-test [LANG...]`: `toolhost new` end to end: a project in each language, built
//!   by its own `build.sh`, then called through the `toolhost` binary; then
//!   every snippet of `docs/writing-tools.md` and `docs/languages/*.md` is
//!   applied to it, built and called as the page shows.
//! - `mcp-test`: the MCP end-to-end tests (`tests/mcp`): the official Python MCP SDK
//!   drives `toolhost serve` over stdio and HTTP. Extra arguments go to pytest.
//! - `bench [NAME...]`: every performance figure in one run: builds the Python and
//!   JavaScript guests, installs the pinned Node MCP server the `mcp` bench compares
//!   against (`npm ci` of `host/benches/node/` into `<target>/bench-node`), then runs
//!   the cargo benches in sequence (all of them, or those named).
//! - `ci`: `cargo fmt --check`, clippy with `-D warnings`, docs, then `test`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

mod docs;

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "plugins" => build_plugins(std::env::args().nth(2).as_deref() == Some("--all")).map(drop),
        "guests" => build_guests(&std::env::args().skip(2).collect::<Vec<_>>()).map(drop),
        "sdk-test" => sdk_test(),
        "bindings" => bindings(std::env::args().nth(2).as_deref() == Some("--check")),
        "demo" => demo(),
        "test" => test(),
        "mcp-test" => mcp_test(std::env::args().skip(2).collect()),
        "new-test" => new_test(&std::env::args().skip(2).collect::<Vec<_>>()),
        "docs-test" => docs::test(),
        "bench" => bench(&std::env::args().skip(2).collect::<Vec<_>>()),
        "ci" => ci(),
        _ => {
            eprintln!(
                "usage: cargo xtask <plugins [--all]|guests [NAME...]|sdk-test|bindings [--check]|demo|test|new-test [LANG...]|docs-test|mcp-test [PYTEST ARGS]|bench [NAME...]|ci>"
            );
            bail!("unknown task `{task}`")
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to the workspace root,
/// where [`cargo`] runs) if set, else `target/`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root().join(dir),
        _ => root().join("target"),
    }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Installs the wasm32-wasip2 target if rustup does not have it yet.
fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("cannot run rustup (it installs the wasm32-wasip2 target)")?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == "wasm32-wasip2")
    {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", "wasm32-wasip2"]))
}

/// The Rust example plugins: every `plugins/*/Cargo.toml`.
fn rust_plugins() -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root().join("plugins")).context("reading plugins/")? {
        let manifest = entry?.path().join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_owned())
            .with_context(|| format!("no package name in {}", manifest.display()))?;
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Builds the Rust example plugins (and with `all`, those in other languages)
/// and copies the components into `target/plugins/`.
fn build_plugins(all: bool) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let names = rust_plugins()?;
    let mut cmd = cargo();
    cmd.args(["build", "--profile", "guest", "--target", "wasm32-wasip2"]);
    for name in &names {
        cmd.arg("--package").arg(name);
    }
    run(&mut cmd)?;
    let out = root().join("target/plugins");
    std::fs::create_dir_all(&out)?;
    let mut built = Vec::new();
    for name in &names {
        let file = format!("{}.wasm", name.replace('-', "_"));
        built.push((
            name.clone(),
            target_dir().join("wasm32-wasip2/guest").join(&file),
        ));
    }
    let examples: Vec<String> = guests()?
        .into_iter()
        .filter(|guest| all && guest.example)
        .map(|guest| guest.name)
        .collect();
    if !examples.is_empty() {
        built.extend(build_guests(&examples)?);
    }
    for (name, wasm) in built {
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&wasm, &dest)
            .with_context(|| format!("copying {} to {}", wasm.display(), dest.display()))?;
        eprintln!("xtask: {}", dest.display());
    }
    Ok(out)
}

/// A language other than Rust that a guest is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    /// `app.py`, built with componentize-py.
    Python,
    /// `app.js`, built with componentize-qjs (QuickJS).
    Js,
    /// `go.mod`.
    Go,
    /// `app.c`.
    C,
}

impl Language {
    /// The language of a guest directory by its entry file; the same rules as
    /// `tests/artifacts/build.rs` (`language_of`).
    fn of(dir: &Path) -> Option<Self> {
        [
            ("app.py", Self::Python),
            ("app.js", Self::Js),
            ("go.mod", Self::Go),
            ("app.c", Self::C),
        ]
        .into_iter()
        .find(|(file, _)| dir.join(file).is_file())
        .map(|(_, language)| language)
    }
}

/// A guest directory without a `Cargo.toml`.
struct Guest {
    name: String,
    dir: PathBuf,
    language: Language,
    /// Under `plugins/` (an example) rather than `tests/plugins/`.
    example: bool,
}

/// Every non-Rust guest under `tests/plugins/` and `plugins/`, by name.
fn guests() -> Result<Vec<Guest>> {
    let mut found = Vec::new();
    for (parent, example) in [("tests/plugins", false), ("plugins", true)] {
        for entry in
            std::fs::read_dir(root().join(parent)).with_context(|| format!("reading {parent}/"))?
        {
            let dir = entry?.path();
            if dir.join("Cargo.toml").is_file() {
                continue;
            }
            let Some(language) = Language::of(&dir) else {
                continue;
            };
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            found.push(Guest {
                name,
                dir,
                language,
                example,
            });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// Builds the named non-Rust guests (all of them if `names` is empty) into
/// `<target>/polyglot/`, skipping those whose component is newer than all their
/// inputs. Returns (name, component path) for each.
fn build_guests(names: &[String]) -> Result<Vec<(String, PathBuf)>> {
    let all = guests()?;
    for name in names {
        if !all.iter().any(|guest| &guest.name == name) {
            bail!("no guest named `{name}` under tests/plugins/ or plugins/");
        }
    }
    let out = target_dir().join("polyglot");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut built = Vec::new();
    for guest in all
        .iter()
        .filter(|guest| names.is_empty() || names.contains(&guest.name))
    {
        let wasm = out.join(format!("{}.wasm", guest.name));
        let started = std::time::Instant::now();
        match guest.language {
            Language::Python => build_python(guest, &wasm)?,
            Language::Js => build_js(guest, &wasm)?,
            Language::C => build_c(guest, &wasm)?,
            Language::Go => build_go(guest, &wasm)?,
        }
        let size = std::fs::metadata(&wasm).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "xtask: {} ({:.1} MB, {:.1} s)",
            wasm.display(),
            size as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        built.push((guest.name.clone(), wasm));
    }
    Ok(built)
}

/// The newest modification time of the files under `paths` (caches skipped).
fn newest(paths: &[PathBuf]) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let skip = path
                .file_name()
                .is_some_and(|n| n == "__pycache__" || n == "node_modules" || n == ".pytest_cache");
            if !skip && let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.filter_map(Result::ok).map(|e| e.path()));
            }
        } else if let Ok(modified) = meta.modified() {
            newest = newest.max(Some(modified));
        }
    }
    newest
}

/// True if `output` exists and is newer than every file under `inputs`.
fn up_to_date(output: &Path, inputs: &[PathBuf]) -> bool {
    let built = std::fs::metadata(output).and_then(|m| m.modified()).ok();
    matches!((built, newest(inputs)), (Some(built), Some(input)) if built > input)
}

/// A Python guest: `componentize-py` (pinned in the SDK's requirements) wraps
/// the guest's `app` module, the SDK package and CPython into a component.
fn build_python(guest: &Guest, wasm: &Path) -> Result<()> {
    let sdk = root().join("guest-sdk/python");
    let requirements = sdk.join("requirements-build.txt");
    let inputs = [
        guest.dir.clone(),
        sdk.join("toolhost_guest"),
        requirements.clone(),
        root().join("wit"),
    ];
    if up_to_date(wasm, &inputs) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    let python = venv("guest-venv", &requirements)?;
    let componentize = python.with_file_name("componentize-py");
    run(Command::new(componentize)
        .current_dir(root())
        .arg("-d")
        .arg(root().join("wit"))
        .args(["-w", "plugin", "componentize", "-p"])
        .arg(&guest.dir)
        .arg("-p")
        .arg(&sdk)
        .arg("app")
        .arg("-o")
        .arg(wasm)
        // Keep the sources free of __pycache__ (it would also look like a change).
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}

/// A JavaScript guest: the guest's files and the SDK (`toolhost-guest.js`) are
/// staged in one directory, then `componentize-qjs` (pinned in the SDK's
/// `package.json` and `package-lock.json`) wizer-initializes QuickJS with them.
fn build_js(guest: &Guest, wasm: &Path) -> Result<()> {
    let sdk = root().join("guest-sdk/js");
    let inputs = [guest.dir.clone(), sdk.clone(), root().join("wit")];
    if up_to_date(wasm, &inputs) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    let componentize = js_toolchain(&sdk)?.join("node_modules/.bin/componentize-qjs");
    let stage = target_dir().join("polyglot-build").join(&guest.name);
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    std::fs::create_dir_all(&stage)?;
    for entry in std::fs::read_dir(&guest.dir)? {
        let path = entry?.path();
        if path.is_file() {
            std::fs::copy(&path, stage.join(path.file_name().unwrap_or_default()))?;
        }
    }
    std::fs::copy(
        sdk.join("toolhost-guest.js"),
        stage.join("toolhost-guest.js"),
    )?;
    run(Command::new(componentize)
        .arg("--wit")
        .arg(root().join("wit"))
        .args(["-n", "plugin", "--sync", "--js"])
        .arg(stage.join("app.js"))
        .arg("--module-root")
        .arg(&stage)
        .arg("-o")
        .arg(wasm))
}

/// A C guest: every `.c` file of the guest, the SDK (`guest-sdk/c`, with the
/// vendored cJSON and the `wit-bindgen c` bindings in `gen/`), compiled by
/// clang for `wasm32-wasi` as a reactor; then the WIT is embedded and the
/// module made a component with the WASI preview-1 reactor adapter (Debian's
/// wasi-libc is preview-1 only).
fn build_c(guest: &Guest, wasm: &Path) -> Result<()> {
    let sdk = root().join("guest-sdk/c");
    let inputs = [guest.dir.clone(), sdk.clone(), root().join("wit")];
    if up_to_date(wasm, &inputs) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    ensure_c_toolchain()?;
    let wasm_tools =
        venv("c-venv", &sdk.join("requirements-build.txt"))?.with_file_name("wasm-tools");
    let adapter = reactor_adapter()?;
    let stage = fresh_stage(&guest.name)?;
    let generated = sdk.join("gen");
    let mut sources = files_with_extension(&guest.dir, "c")?;
    sources.push(sdk.join("toolhost_guest.c"));
    sources.push(sdk.join("vendor/cjson/cJSON.c"));
    sources.push(generated.join("plugin.c"));
    let core = stage.join("core.wasm");
    run(Command::new("clang-19")
        .args([
            "--target=wasm32-wasi",
            "-Oz",
            "-mexec-model=reactor",
            "-std=c11",
            "-Wall",
            "-Werror",
            "-Wl,--strip-all",
        ])
        .arg("-I")
        .arg(&guest.dir)
        .arg("-I")
        .arg(&sdk)
        .arg("-I")
        .arg(sdk.join("vendor/cjson"))
        .arg("-I")
        .arg(&generated)
        .args(&sources)
        .arg("-o")
        .arg(&core))?;
    componentize(&wasm_tools, &core, &stage, &adapter, wasm)
}

/// Makes a component of a preview-1 core module `core`: embeds the WIT's
/// `plugin` world, then adapts it to preview 2 with the reactor `adapter`.
fn componentize(
    wasm_tools: &Path,
    core: &Path,
    stage: &Path,
    adapter: &Path,
    wasm: &Path,
) -> Result<()> {
    let embedded = stage.join("embedded.wasm");
    run(Command::new(wasm_tools)
        .args(["component", "embed", "--world", "plugin"])
        .arg(root().join("wit"))
        .arg(core)
        .arg("-o")
        .arg(&embedded))?;
    run(Command::new(wasm_tools)
        .args(["component", "new"])
        .arg(&embedded)
        .arg("--adapt")
        .arg(format!("wasi_snapshot_preview1={}", adapter.display()))
        .arg("-o")
        .arg(wasm))
}

/// The files directly in `dir` whose name ends in `.extension`, sorted.
fn files_with_extension(dir: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == extension) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// An empty staging directory for one guest's build: `<target>/polyglot-build/NAME`.
fn fresh_stage(name: &str) -> Result<PathBuf> {
    let stage = target_dir().join("polyglot-build").join(name);
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    std::fs::create_dir_all(&stage).with_context(|| format!("creating {}", stage.display()))?;
    Ok(stage)
}

/// A Go guest: a Go package (its own module, `go.mod`) that registers tools
/// with the SDK (`guest-sdk/go`, module `toolhost/guest`) from `init`. The
/// `wit-bindgen go` bindings (`guest-sdk/go/bindings`) form the main module;
/// the SDK's glue (`glue/tools.go`) goes into their export package, a
/// generated `main` imports the guest, and Go (from PyPI, pinned in
/// `requirements-build.txt`) builds it for `wasip1` as a reactor, with the
/// bindings' runtime package from `guest-sdk/go/witpkg`. Then as for C: embed
/// the WIT, adapt.
fn build_go(guest: &Guest, wasm: &Path) -> Result<()> {
    let sdk = root().join("guest-sdk/go");
    let inputs = [guest.dir.clone(), sdk.clone(), root().join("wit")];
    if up_to_date(wasm, &inputs) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    let python = venv("go-venv", &sdk.join("requirements-build.txt"))?;
    let (go, wasm_tools) = (
        python.with_file_name("go"),
        python.with_file_name("wasm-tools"),
    );
    let runtime = sdk.join("witpkg");
    let adapter = reactor_adapter()?;
    let module = go_module_path(&guest.dir)?;
    let stage = fresh_stage(&guest.name)?;
    copy_dir(&sdk.join("bindings"), &stage)?;
    std::fs::copy(
        sdk.join("glue/tools.go"),
        stage.join("export_toolhost_plugin_tools/toolhost_glue.go"),
    )?;
    std::fs::write(
        stage.join("toolhost_guest.go"),
        format!(
            "// Generated by xtask: links the guest's tools in.\npackage main\n\nimport _ {module:?}\n"
        ),
    )?;
    let mut go_mod = std::fs::read_to_string(stage.join("go.mod"))?;
    for (path, dir) in [
        ("go.bytecodealliance.org/pkg", runtime.as_path()),
        ("toolhost/guest", sdk.as_path()),
        (module.as_str(), guest.dir.as_path()),
    ] {
        if path != "go.bytecodealliance.org/pkg" {
            go_mod.push_str(&format!("\nrequire {path} v0.0.0\n"));
        }
        go_mod.push_str(&format!("replace {path} => {}\n", dir.display()));
    }
    std::fs::write(stage.join("go.mod"), go_mod)?;
    let core = stage.join("core.wasm");
    run(Command::new(&go)
        .current_dir(&stage)
        .args(["build", "-o"])
        .arg(&core)
        .args([
            "-buildmode=c-shared",
            "-ldflags=-checklinkname=0 -s -w",
            ".",
        ])
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        // No module proxy: every module is local (replace directives).
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env("GOCACHE", target_dir().join("go-cache")))?;
    componentize(&wasm_tools, &core, &stage, &adapter, wasm)
}

/// The `module` path declared by `dir/go.mod`.
fn go_module_path(dir: &Path) -> Result<String> {
    let manifest = dir.join("go.mod");
    std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?
        .lines()
        .find_map(|line| line.trim().strip_prefix("module "))
        .map(|path| path.trim().trim_matches('"').to_owned())
        .with_context(|| format!("no `module` line in {}", manifest.display()))
}

/// `go.bytecodealliance.org/pkg`, the runtime package of the `wit-bindgen go`
/// bindings: `src/pkg` of the crates.io crate `wit-bindgen-go`, which cargo
/// has fetched for `xtask/bindgen`.
fn go_runtime_source() -> Result<PathBuf> {
    let metadata = cargo()
        .args([
            "metadata",
            "--locked",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(bindgen_manifest())
        .output()
        .context("running cargo metadata")?;
    if !metadata.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&metadata.stderr)
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout)?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["name"] == "wit-bindgen-go")
        .context("xtask/bindgen does not depend on wit-bindgen-go")?;
    package["manifest_path"]
        .as_str()
        .and_then(|manifest| Path::new(manifest).parent())
        .map(|crate_dir| crate_dir.join("src/pkg"))
        .context("cargo metadata gives wit-bindgen-go's manifest path")
}

/// Writes generated files into a directory (the second argument), with the
/// `xtask/bindgen` binary (the first) if it needs it.
type Generate = fn(&Path, &Path) -> Result<()>;

/// Generates `lang`'s bindings of the `plugin` world into `out`.
fn bindgen_run(bindgen: &Path, lang: &str, out: &Path) -> Result<()> {
    run(Command::new(bindgen)
        .arg(lang)
        .arg(root().join("wit"))
        .arg("plugin")
        .arg(out))
}

/// The generated files the guest SDKs commit, so that their builds (and the
/// projects `toolhost new` writes) need no bindings generator: where each
/// lives, and how to make it afresh into a directory.
const GENERATED: [(&str, Generate); 3] = [
    ("guest-sdk/c/gen", |bindgen, out| {
        bindgen_run(bindgen, "c", out)
    }),
    ("guest-sdk/go/bindings", |bindgen, out| {
        bindgen_run(bindgen, "go", out)
    }),
    // Only what the bindings import (wit/...), its go.mod and its license.
    ("guest-sdk/go/witpkg", |_, out| {
        let source = go_runtime_source()?;
        std::fs::create_dir_all(out)?;
        for file in ["go.mod", "LICENSE"] {
            std::fs::copy(source.join(file), out.join(file))
                .with_context(|| format!("copying {}", source.join(file).display()))?;
        }
        copy_dir(&source.join("wit"), &out.join("wit"))
    }),
];

/// `bindings`: rewrites the [`GENERATED`] files (after a change to `wit/` or a
/// wit-bindgen update in `xtask/bindgen`); with `check`, fails if any differs
/// from what they would be instead (`cargo xtask test` runs that, so they
/// never drift).
fn bindings(check: bool) -> Result<()> {
    let bindgen = bindgen()?;
    let fresh = target_dir().join("bindings-fresh");
    if fresh.exists() {
        std::fs::remove_dir_all(&fresh).with_context(|| format!("removing {}", fresh.display()))?;
    }
    let mut stale = Vec::new();
    for (dir, generate) in GENERATED {
        let made = fresh.join(dir);
        generate(&bindgen, &made)?;
        let committed = root().join(dir);
        if check {
            if tree(&made)? != tree(&committed)? {
                stale.push(dir);
            }
        } else {
            if committed.exists() {
                std::fs::remove_dir_all(&committed)
                    .with_context(|| format!("removing {}", committed.display()))?;
            }
            copy_dir(&made, &committed)?;
            eprintln!("xtask: wrote {dir}");
        }
    }
    if !stale.is_empty() {
        bail!(
            "stale generated files in {} (fresh ones are in {}): \
             run `cargo xtask bindings` and commit the result",
            stale.join(", "),
            fresh.display()
        );
    }
    Ok(())
}

/// Every file under `dir` (relative path → contents); empty if `dir` is missing.
fn tree(dir: &Path) -> Result<std::collections::BTreeMap<PathBuf, Vec<u8>>> {
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_owned();
                let contents =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                files.insert(relative, contents);
            }
        }
    }
    Ok(files)
}

/// Copies the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let dest = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest)
                .with_context(|| format!("copying {} to {}", path.display(), dest.display()))?;
        }
    }
    Ok(())
}

/// The Debian packages a C guest needs: clang and wasm-ld for wasm32, wasi-libc
/// (the sysroot) and compiler-rt's wasm32 builtins.
const C_PACKAGES: [&str; 4] = [
    "clang-19",
    "lld-19",
    "wasi-libc",
    "libclang-rt-19-dev-wasm32",
];

/// Installs the missing [`C_PACKAGES`] with apt-get (through sudo unless root).
fn ensure_c_toolchain() -> Result<()> {
    let missing: Vec<&str> = C_PACKAGES
        .into_iter()
        .filter(|package| !debian_package_installed(package))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    eprintln!("xtask: C guests need the Debian packages {list}; installing them with apt-get");
    let apt = || {
        let mut cmd = if is_root() {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg("apt-get");
            sudo
        };
        cmd.env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    run(apt().args(["update", "-qq"]))
        .and_then(|()| {
            run(apt()
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(&missing))
        })
        .with_context(|| {
            format!(
                "cannot install the C toolchain; on Debian 12 run \
                 `apt-get install --no-install-recommends {list}` as root"
            )
        })
}

fn debian_package_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|out| {
            out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with(" installed")
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// `xtask/bindgen`: wit-bindgen's C and Go generators (0.63.0, pinned by its
/// `Cargo.lock`) in a small binary, for [`bindings`]. Built into
/// `<target>/tools/bindgen` on first use (about a CPU-minute; `cargo install wit-bindgen-cli` with only
/// those two generators takes about seven, as it also builds its test harness),
/// then a no-op.
fn bindgen_manifest() -> PathBuf {
    root().join("xtask/bindgen/Cargo.toml")
}

fn bindgen() -> Result<PathBuf> {
    let build = target_dir().join("tools/bindgen");
    run(cargo()
        .args(["build", "--locked", "--manifest-path"])
        .arg(bindgen_manifest())
        .arg("--target-dir")
        .arg(&build))
    .context("building xtask/bindgen (the C and Go bindings generator)")?;
    Ok(build.join("debug/toolhost-bindgen"))
}

/// The WASI preview-1 reactor adapter of the host's wasmtime version, written
/// from the `wasi-preview1-component-adapter-provider` crate to `<target>/tools`.
fn reactor_adapter() -> Result<PathBuf> {
    use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER as ADAPTER;
    let path = target_dir().join("tools/wasi_snapshot_preview1.reactor.wasm");
    if std::fs::read(&path).ok().as_deref() != Some(ADAPTER) {
        std::fs::create_dir_all(target_dir().join("tools"))?;
        std::fs::write(&path, ADAPTER).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(path)
}

/// `<target>/js-toolchain` with the SDK's pinned npm packages (`npm ci`);
/// reinstalls only when the lockfile changed.
fn js_toolchain(sdk: &Path) -> Result<PathBuf> {
    let dir = target_dir().join("js-toolchain");
    let lock = std::fs::read_to_string(sdk.join("package-lock.json"))
        .context("reading guest-sdk/js/package-lock.json")?;
    let stamp = dir.join("lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(sdk.join(file), dir.join(file))?;
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"]))
    .context("installing the JavaScript toolchain needs Node.js and npm")?;
    std::fs::write(&stamp, lock)?;
    Ok(dir)
}

/// The guest SDKs' native unit tests (schema derivation, calls): Python with
/// pytest, JavaScript with `node --test` (the WIT host import stubbed), Go with
/// `go test`.
fn sdk_test() -> Result<()> {
    let sdk = root().join("guest-sdk/python");
    let python = venv("guest-venv", &sdk.join("requirements-build.txt"))?;
    run(Command::new(python)
        .current_dir(&sdk)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .env("PYTHONDONTWRITEBYTECODE", "1"))?;
    run(Command::new("node")
        .current_dir(root().join("guest-sdk/js"))
        .args([
            "--import",
            "./test/register.mjs",
            "--test",
            "--test-reporter=dot",
            "test/sdk.test.mjs",
        ]))
    .context("the JavaScript SDK tests need Node.js 20.6 or later")?;
    // The Go SDK is plain Go: its tests run natively (the host stubbed).
    let go_sdk = root().join("guest-sdk/go");
    let go = venv("go-venv", &go_sdk.join("requirements-build.txt"))?.with_file_name("go");
    run(Command::new(go)
        .current_dir(&go_sdk)
        .args(["test", "."])
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env("GOCACHE", target_dir().join("go-cache")))
}

fn demo() -> Result<()> {
    let dir = build_plugins(false)?;
    run(cargo().args(["build", "--release", "--package", "toolhost"]))?;
    let toolhost = target_dir().join("release/toolhost");
    let step = |args: &[&str]| -> Result<()> {
        eprintln!("\n$ toolhost {}", args.join(" "));
        run(Command::new(&toolhost)
            .arg("--plugins")
            .arg(&dir)
            .args(args))
    };
    step(&["list"])?;
    step(&["describe", "evaluate"])?;
    step(&["call", "word_count", r#"{"text": "the quick brown fox"}"#])?;
    step(&["call", "evaluate", r#"{"expression": "2 * (3 + 4) ^ 2"}"#])?;
    step(&[
        "call",
        "convert_units",
        r#"{"value": "5", "from": "km", "to": "mi"}"#,
    ])?;
    step(&[
        "call",
        "hash",
        r#"{"algorithm": "sha256", "input": "hello"}"#,
    ])?;
    step(&[
        "call",
        "split_lines",
        r#"{"text": "one\ntwo\nthree", "numbered": true}"#,
    ])?;
    step(&["call", "qr_code", r#"{"text": "https://example.com"}"#])?;
    eprintln!("\n$ toolhost call evaluate '{{\"expression\": 42}}'   # a bad argument");
    let status = Command::new(&toolhost)
        .arg("--plugins")
        .arg(&dir)
        .args(["call", "evaluate", r#"{"expression": 42}"#])
        .status()?;
    eprintln!("(exit status {status})");
    Ok(())
}

fn test() -> Result<()> {
    ensure_wasm_target()?;
    bindings(true)?;
    // The host's conformance tests load these; without them they fail.
    build_guests(&[])?;
    sdk_test()?;
    run(cargo().args(["test", "--workspace"]))?;
    new_test(&[])?;
    docs::test()?;
    mcp_test(Vec::new())
}

/// `toolhost new` end to end: for each language, a project `hello` in
/// `<target>/new-test/LANG/`, built by its own `build.sh`, then called through
/// the `toolhost` binary (a greeting, a misspelt key and an argument the tool
/// refuses). Then the docs: every fenced block of `docs/writing-tools.md` and
/// `docs/languages/LANG.md` is marked with what to do with it (see
/// [`Snippet`]): its files replace the project's, the project is rebuilt, and
/// its calls must print what the page shows. Reuses the toolchains `guests`
/// installed (Python, C and Go venvs, npm cache, Go build cache, Debian C
/// packages), one cargo target dir and one compiled-code cache, so a rerun is
/// quick.
fn new_test(only: &[String]) -> Result<()> {
    for lang in only {
        if !LANGS.contains(&lang.as_str()) {
            bail!("no language `{lang}` (languages: {})", LANGS.join(", "));
        }
    }
    ensure_wasm_target()?;
    ensure_c_toolchain()?;
    // Same feature unification as `cargo test --workspace`: nothing to rebuild after it.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    let toolhost = target.join("debug/toolhost");
    let scratch = target.join("new-test");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    let venv_dir = |name: &str, requirements: &str| -> Result<PathBuf> {
        let python = venv(name, &root().join(requirements))?;
        python
            .parent()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .with_context(|| format!("the {name} python has no venv directory"))
    };
    let py_venv = venv_dir("guest-venv", "guest-sdk/python/requirements-build.txt")?;
    let c_venv = venv_dir("c-venv", "guest-sdk/c/requirements-build.txt")?;
    let go_venv = venv_dir("go-venv", "guest-sdk/go/requirements-build.txt")?;
    let overview = snippets(&root().join("docs/writing-tools.md"))?;
    for lang in LANGS
        .into_iter()
        .filter(|lang| only.is_empty() || only.iter().any(|o| o == lang))
    {
        let started = std::time::Instant::now();
        let dir = scratch.join(lang);
        run(Command::new(&toolhost)
            .args(["new", "hello", "--lang", lang, "--dir"])
            .arg(&dir))?;
        let project = NewProject {
            lang,
            dir: dir.join("hello"),
            toolhost: &toolhost,
            cache: target.join("new-test-cache"),
        };
        let build_sh = || -> Command {
            let mut cmd = Command::new("sh");
            cmd.arg(project.dir.join("build.sh"))
                .env("CARGO_TARGET_DIR", target.join("new-test-cargo"))
                .env("TOOLHOST_PY_VENV", &py_venv)
                .env("TOOLHOST_C_VENV", &c_venv)
                .env("TOOLHOST_GO_VENV", &go_venv)
                .env("GOCACHE", target.join("go-cache"));
            cmd
        };
        let build = || run(&mut build_sh());
        build()?;
        let built = started.elapsed();
        project.expect(
            "greet",
            r#"{"name": "Ada", "excited": true}"#,
            &Expected::Values(vec![serde_json::json!({"greeting": "Hello, Ada!"})]),
        )?;
        project.expect(
            "greet",
            r#"{"name": " "}"#,
            &Expected::Error("invalid arguments for `greet`: `name` must not be empty".to_owned()),
        )?;
        // A misspelt key is refused by the schema, and named.
        project.expect(
            "greet",
            r#"{"name": "Ada", "excitd": true}"#,
            &Expected::Error("'excitd' was unexpected".to_owned()),
        )?;
        if lang == "python" {
            python_build_error(&project.dir, build_sh())?;
        }
        let page = snippets(&root().join(format!("docs/languages/{lang}.md")))?;
        let mut changed = false;
        let mut checked = 0;
        for snippet in overview.iter().chain(&page) {
            if snippet.lang != lang {
                continue;
            }
            checked += 1;
            match &snippet.kind {
                SnippetKind::File(path) => {
                    let file = project.dir.join(path);
                    if !file.is_file() {
                        bail!(
                            "{}: `{path}` is not a file of a new {lang} project",
                            snippet.origin
                        );
                    }
                    std::fs::write(&file, &snippet.body)
                        .with_context(|| format!("writing {}", file.display()))?;
                    changed = true;
                }
                SnippetKind::Commands | SnippetKind::Calls => {
                    if changed {
                        build().with_context(|| format!("building {}", snippet.origin))?;
                        changed = false;
                    }
                    project
                        .run_shell(snippet)
                        .with_context(|| snippet.origin.clone())?;
                }
            }
        }
        if checked == 0 {
            bail!("docs/languages/{lang}.md has no `<!-- new-test: ... {lang} -->` snippet");
        }
        eprintln!(
            "xtask: toolhost new --lang {lang}: built in {:.1} s; {checked} doc snippets checked, all in {:.1} s",
            built.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// A Python project whose module fails at build time (a parameter without a
/// JSON Schema): `build.sh` must fail and say first what and where, in the
/// project's own terms (`src/app.py:LINE`, not componentize-py's `/0/app.py`).
/// Leaves `src/app.py` as it found it.
fn python_build_error(project: &Path, mut build: Command) -> Result<()> {
    let app = project.join("src/app.py");
    let good =
        std::fs::read_to_string(&app).with_context(|| format!("reading {}", app.display()))?;
    let (head, tail) = good
        .rsplit_once("\nfrom toolhost_guest.component import")
        .context("the Python template ends by importing toolhost_guest.component")?;
    let bad = format!(
        "{head}\n\n@tool\ndef broken(callback: type) -> None:\n    \"\"\"Takes what JSON cannot say.\"\"\"\n\n\
         from toolhost_guest.component import{tail}"
    );
    let decorator = bad
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "@tool")
        .map(|(i, _)| i + 1)
        .last()
        .context("no @tool line")?;
    std::fs::write(&app, bad)?;
    let output = build.output().context("running build.sh")?;
    std::fs::write(&app, good)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    let expected = format!(
        "error: src/app.py:{decorator}: SchemaError: broken, parameter callback: cannot express"
    );
    if output.status.success() || !first.starts_with(&expected) {
        bail!(
            "python: a build error should come first as `{expected} …`; build.sh gave {}:\n{stderr}",
            output.status
        );
    }
    if stderr.contains("\"/0/") {
        bail!("python: build.sh shows componentize-py's internal paths:\n{stderr}");
    }
    Ok(())
}

/// The languages of `toolhost new --lang`.
const LANGS: [&str; 5] = ["rust", "python", "js", "go", "c"];

/// A project `new-test` made, and how to call its tools.
struct NewProject<'a> {
    lang: &'a str,
    dir: PathBuf,
    toolhost: &'a Path,
    cache: PathBuf,
}

/// What a call must print.
enum Expected {
    /// These JSON values on stdout (one, or one a chunk for a stream).
    Values(Vec<serde_json::Value>),
    /// A failure whose stderr contains this text.
    Error(String),
}

impl NewProject<'_> {
    /// `toolhost call TOOL ARGUMENTS` on this project, with its cache.
    fn call(&self, tool: &str, arguments: &str) -> Command {
        let mut cmd = Command::new(self.toolhost);
        cmd.arg("--cache-dir")
            .arg(&self.cache)
            .arg("--plugins")
            .arg(&self.dir)
            .args(["call", tool, arguments]);
        cmd
    }

    /// Calls `tool` with `arguments` and checks the outcome.
    fn expect(&self, tool: &str, arguments: &str, expected: &Expected) -> Result<()> {
        let output = self
            .call(tool, arguments)
            .output()
            .context("running toolhost call")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let ok = match expected {
            Expected::Values(values) => {
                let printed: Result<Vec<serde_json::Value>, _> =
                    serde_json::Deserializer::from_slice(&output.stdout)
                        .into_iter()
                        .collect();
                output.status.success() && printed.ok().as_ref() == Some(values)
            }
            Expected::Error(text) => !output.status.success() && stderr.contains(text.as_str()),
        };
        if !ok {
            let wanted = match expected {
                Expected::Values(values) => format!("{values:?}"),
                Expected::Error(text) => format!("an error saying {text:?}"),
            };
            bail!(
                "{}: `toolhost call {tool} '{arguments}'` gave {}, not {wanted}:\n{stdout}\n{stderr}",
                self.lang,
                output.status
            );
        }
        Ok(())
    }

    /// Runs a shell snippet: the commands that make and build a project must be
    /// the ones `new-test` ran; each `toolhost --plugins . call TOOL 'ARGS'`
    /// runs, and the `# ` lines after it say what it must print (`# error: TEXT`
    /// for a failure).
    fn run_shell(&self, snippet: &Snippet) -> Result<()> {
        let setup = [
            format!("toolhost new hello --lang {}", self.lang),
            "cd hello".to_owned(),
            "./build.sh".to_owned(),
        ];
        let mut lines = snippet.body.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            // A trailing `  # comment` explains a command; it is not part of it.
            let line = line.split("  #").next().unwrap_or(line).trim_end();
            if line.is_empty() || setup.iter().any(|s| s == line) {
                continue;
            }
            let Some(call) = line.strip_prefix("toolhost --plugins . call ") else {
                bail!("`{line}` is not a command new-test runs");
            };
            let (tool, arguments) = call
                .split_once(' ')
                .map(|(tool, args)| (tool, args.trim().trim_matches('\'')))
                .with_context(|| format!("`{line}`: no arguments"))?;
            let mut shown = Vec::new();
            while let Some(comment) = lines.peek().and_then(|l| l.strip_prefix("# ")) {
                shown.push(comment.to_owned());
                lines.next();
            }
            let expected = match shown.first().and_then(|s| s.strip_prefix("error: ")) {
                Some(text) => Expected::Error(text.to_owned()),
                None => Expected::Values(
                    shown
                        .iter()
                        .map(|s| serde_json::from_str(s))
                        .collect::<Result<_, _>>()
                        .with_context(|| format!("`{line}`: its output is not JSON"))?,
                ),
            };
            if let Expected::Values(values) = &expected
                && values.is_empty()
            {
                // Shown without its output: it must succeed.
                let output = self.call(tool, arguments).output()?;
                if !output.status.success() {
                    bail!(
                        "`{line}` failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                continue;
            }
            self.expect(tool, arguments, &expected)?;
        }
        Ok(())
    }
}

/// A fenced block of a doc page that `new-test` exercises, marked by an HTML
/// comment on the line before it:
///
/// - `<!-- new-test: file LANG PATH -->`: the block is the file PATH of a new
///   LANG project (it replaces it; the project is rebuilt before the next call);
/// - `<!-- new-test: commands LANG -->` / `<!-- new-test: calls LANG -->`: shell
///   lines, run by [`NewProject::run_shell`].
///
/// A fenced block without a mark is an error: every snippet is tested.
struct Snippet {
    lang: String,
    kind: SnippetKind,
    body: String,
    /// `page:line`, for messages.
    origin: String,
}

enum SnippetKind {
    File(String),
    Commands,
    Calls,
}

fn snippets(page: &Path) -> Result<Vec<Snippet>> {
    let text =
        std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut found = Vec::new();
    for block in docs::blocks(&text).with_context(|| name.clone())? {
        let origin = format!("{name}:{}", block.line);
        let Some(words) = block
            .mark
            .as_deref()
            .and_then(|mark| mark.strip_prefix("new-test:"))
            .map(|words| {
                words
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        else {
            bail!(
                "{origin}: a code block without a `<!-- new-test: ... -->` mark (every snippet is tested)"
            );
        };
        let kind = match words.as_slice() {
            [kind, lang, path] if kind == "file" => (SnippetKind::File(path.clone()), lang),
            [kind, lang] if kind == "commands" => (SnippetKind::Commands, lang),
            [kind, lang] if kind == "calls" => (SnippetKind::Calls, lang),
            _ => bail!("{origin}: unknown mark `new-test: {}`", words.join(" ")),
        };
        if !LANGS.contains(&kind.1.as_str()) {
            bail!("{origin}: unknown language `{}`", kind.1);
        }
        found.push(Snippet {
            lang: kind.1.clone(),
            kind: kind.0,
            body: block.text,
            origin,
        });
    }
    Ok(found)
}

/// Builds `toolhost` and the guests, then runs the MCP end-to-end tests in a
/// Python venv with the pinned `tests/mcp/requirements.txt`.
fn mcp_test(pytest_args: Vec<String>) -> Result<()> {
    ensure_wasm_target()?;
    let python = venv("mcp-venv", &root().join("tests/mcp/requirements.txt"))?;
    // The binary and the guests (`toolhost-test-plugins`' build script builds
    // them into `<target>/wasm-guests`), with the features unified as in
    // `cargo test --workspace`: right after it this rebuilds nothing, where a
    // `cargo build -p toolhost` would rebuild wasmtime with other features.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    run(Command::new(&python)
        .current_dir(root())
        .args(["-m", "pytest", "-q", "tests/mcp"])
        .args(pytest_args)
        .env("TOOLHOST_BIN", target.join("debug/toolhost"))
        .env(
            "TOOLHOST_GUESTS",
            target.join("wasm-guests/wasm32-wasip2/guest"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}

/// The venv `<target>/<name>` with `requirements` installed; returns its Python.
/// Installs only when the requirements differ from the last install's (a stamp
/// file holds a copy), so reruns are fast.
fn venv(name: &str, requirements: &Path) -> Result<PathBuf> {
    let venv = target_dir().join(name);
    let python = venv.join("bin/python");
    if !python.is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))
            .context("creating a venv needs python3 with its venv module")?;
    }
    let wanted = std::fs::read_to_string(requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(requirements))?;
    std::fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(python)
}

/// The cargo benches `cargo xtask bench` runs, in order.
const BENCHES: &[&str] = &[
    "call",
    "throughput",
    "startup",
    "mcp",
    "reload",
    "languages",
];

/// Runs the benches (all, or those named) one after another, after building
/// what they compare against. A guest or Node install that fails is reported
/// and the benches that need it say what they skip.
fn bench(names: &[String]) -> Result<()> {
    for name in names {
        if !BENCHES.contains(&name.as_str()) {
            bail!("no bench named `{name}` (benches: {})", BENCHES.join(", "));
        }
    }
    let selected: Vec<&str> = BENCHES
        .iter()
        .copied()
        .filter(|b| names.is_empty() || names.iter().any(|n| n == b))
        .collect();
    ensure_wasm_target()?;
    let mut guests_built = true;
    if selected
        .iter()
        .any(|b| ["startup", "languages"].contains(b))
        && let Err(err) = build_guests(&["conformance-js".into(), "conformance-py".into()])
    {
        eprintln!("xtask: warning: the Python and JavaScript guests did not build: {err:#}");
        guests_built = false;
    }
    if selected.contains(&"mcp")
        && let Err(err) = bench_node()
    {
        eprintln!("xtask: warning: the Node MCP server did not install: {err:#}");
    }
    run(cargo().args(["bench", "--package", "toolhost", "--no-run"]))?;
    for name in selected {
        if name == "languages" && !guests_built {
            eprintln!(
                "xtask: skipping the languages bench: it needs the Python and JavaScript guests"
            );
            continue;
        }
        println!();
        run(cargo().args(["bench", "--quiet", "--package", "toolhost", "--bench", name]))?;
    }
    Ok(())
}

/// Installs the pinned `@modelcontextprotocol/server-everything` into
/// `<target>/bench-node` (`npm ci`), unless that lockfile is installed already.
fn bench_node() -> Result<()> {
    let src = root().join("host/benches/node");
    let dir = target_dir().join("bench-node");
    let lock = std::fs::read_to_string(src.join("package-lock.json"))
        .context("reading host/benches/node/package-lock.json")?;
    let stamp = dir.join("lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) {
        return Ok(());
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(file), dir.join(file))?;
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"]))
    .context("installing the Node MCP server needs Node.js and npm")?;
    std::fs::write(&stamp, lock)?;
    Ok(())
}

fn ci() -> Result<()> {
    ensure_wasm_target()?;
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo()
        .args(["doc", "--no-deps", "--workspace"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    test()
}
