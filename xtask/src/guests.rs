//! `cargo xtask guests [NAME...]`: build the guests written in other languages
//! than Rust (`tests/plugins/*` and `plugins/*` without a `Cargo.toml`) into
//! `<target>/polyglot/<name>.wasm`: Python with componentize-py, JavaScript
//! with componentize-qjs, C with clang and Go with Go's `wasip1` port (both
//! then adapted to preview 2), with toolchains pinned by the repo. The host
//! tests load them from there (`toolhost_test_plugins::POLYGLOT`).
//!
//! A guest is built against the toolhost SDK and its WIT (`wit/` at the root,
//! world `catalog-plugin`) unless it has a `wit/` directory of its own: then it
//! is a component of its own WIT and no SDK (issue 34, "any component is a
//! toolset"), built against that directory alone, for the world that WIT
//! defines (it must define exactly one). Only Python and JavaScript guests may
//! do that (`tests/plugins/any-component-py`, `tests/plugins/any-component-js`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::toolchain::{ensure_c_toolchain, venv};
use crate::workspace::{copy_dir, root, run, target_dir};

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
pub(crate) struct Guest {
    pub(crate) name: String,
    dir: PathBuf,
    language: Language,
    /// Under `plugins/` (an example) rather than `tests/plugins/`.
    pub(crate) example: bool,
}

impl Guest {
    /// The guest's own WIT directory (`<guest>/wit`), if it has one: then it
    /// is built against that alone, without the toolhost SDK.
    fn own_wit(&self) -> Option<PathBuf> {
        let wit = self.dir.join("wit");
        wit.is_dir().then_some(wit)
    }
}

/// Every non-Rust guest under `tests/plugins/` and `plugins/`, by name.
pub(crate) fn list() -> Result<Vec<Guest>> {
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
pub(crate) fn build(names: &[String]) -> Result<Vec<(String, PathBuf)>> {
    let all = list()?;
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
        match (guest.language, guest.own_wit()) {
            (Language::Python, Some(wit)) => build_python_own_wit(guest, &wit, &wasm)?,
            (Language::Js, Some(wit)) => build_js_own_wit(guest, &wit, &wasm)?,
            (language @ (Language::C | Language::Go), Some(_)) => bail!(
                "{}: a {language:?} guest cannot have a WIT of its own (only Python and \
                 JavaScript guests can)",
                guest.dir.display()
            ),
            (Language::Python, None) => build_python(guest, &wasm)?,
            (Language::Js, None) => build_js(guest, &wasm)?,
            (Language::C, None) => build_c(guest, &wasm)?,
            (Language::Go, None) => build_go(guest, &wasm)?,
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
/// the guest's `app` module, the SDK package and CPython into a component of
/// the `catalog-plugin` world (its catalog is empty unless it declares one).
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
        .args(["-w", "catalog-plugin", "componentize", "-p"])
        .arg(&guest.dir)
        .arg("-p")
        .arg(&sdk)
        .arg("app")
        .arg("-o")
        .arg(wasm)
        // Keep the sources free of __pycache__ (it would also look like a change).
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}

/// A Python guest of its own WIT (`wit`, no SDK): componentize-py wraps its
/// `app` module and CPython into a component of the WIT's one world.
fn build_python_own_wit(guest: &Guest, wit: &Path, wasm: &Path) -> Result<()> {
    let requirements = root().join("guest-sdk/python/requirements-build.txt");
    if up_to_date(wasm, &[guest.dir.clone(), requirements.clone()]) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    let python = venv("guest-venv", &requirements)?;
    run(Command::new(python.with_file_name("componentize-py"))
        .current_dir(root())
        .arg("-d")
        .arg(wit)
        .args(["componentize", "-p"])
        .arg(&guest.dir)
        .arg("app")
        .arg("-o")
        .arg(wasm)
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}

/// A JavaScript guest of its own WIT (`wit`, no SDK): componentize-qjs
/// wizer-initializes QuickJS with its `app.js` (and the modules it imports
/// from its directory) for the WIT's one world, without the component-model
/// async ABI.
fn build_js_own_wit(guest: &Guest, wit: &Path, wasm: &Path) -> Result<()> {
    let sdk = root().join("guest-sdk/js");
    let lock = sdk.join("package-lock.json");
    if up_to_date(wasm, &[guest.dir.clone(), lock]) {
        eprintln!("xtask: {} is up to date", wasm.display());
        return Ok(());
    }
    let componentize = js_toolchain(&sdk)?.join("node_modules/.bin/componentize-qjs");
    run(Command::new(componentize)
        .arg("--wit")
        .arg(wit)
        .args(["--sync", "--js"])
        .arg(guest.dir.join("app.js"))
        .arg("--module-root")
        .arg(&guest.dir)
        .arg("-o")
        .arg(wasm))
}

/// The JavaScript SDK's modules (`guest-sdk/js`), staged beside `app.js`:
/// `toolhost-guest.js` imports `toolhost-catalog.js`.
const JS_SDK_FILES: [&str; 2] = ["toolhost-guest.js", "toolhost-catalog.js"];

/// The JavaScript component's entry module, staged beside `app.js`.
const JS_ENTRY: &str = "__toolhost_entry.js";

/// The entry's source (the same as `host/templates/js/build.sh.tmpl` writes):
/// the world `catalog-plugin` exports `tools` and `catalog`, and a module that
/// offers only tools exports no `catalog`, so the entry adds the SDK's (empty
/// unless the module declared resources or prompts).
const JS_ENTRY_SOURCE: &str = "\
import * as app from './app.js';
import { exportCatalog } from './toolhost-guest.js';

export const tools = app.tools;
export const catalog = app.catalog ?? exportCatalog();
";

/// A JavaScript guest: the guest's files and the SDK ([`JS_SDK_FILES`]) are
/// staged in one directory with an entry module ([`JS_ENTRY_SOURCE`]), then
/// `componentize-qjs` (pinned in the SDK's `package.json` and
/// `package-lock.json`) wizer-initializes QuickJS with them for the world
/// `catalog-plugin`.
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
    for file in JS_SDK_FILES {
        std::fs::copy(sdk.join(file), stage.join(file))?;
    }
    std::fs::write(stage.join(JS_ENTRY), JS_ENTRY_SOURCE)?;
    run(Command::new(componentize)
        .arg("--wit")
        .arg(root().join("wit"))
        .args(["-n", "catalog-plugin", "--sync", "--js"])
        .arg(stage.join(JS_ENTRY))
        .arg("--module-root")
        .arg(&stage)
        .arg("-o")
        .arg(wasm))
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

/// A C guest: every `.c` file of the guest, the SDK (`guest-sdk/c`, with the
/// vendored cJSON and the `wit-bindgen c` bindings in `gen/`), compiled by
/// clang for `wasm32-wasi` as a reactor; then the WIT's `catalog-plugin` world
/// is embedded (its catalog is empty unless the guest declares one) and the
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
    sources.push(sdk.join("toolhost_catalog.c"));
    sources.push(sdk.join("vendor/cjson/cJSON.c"));
    sources.push(generated.join("catalog_plugin.c"));
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
    componentize(&wasm_tools, &core, &stage, "catalog-plugin", &adapter, wasm)
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

/// A Go guest: a Go package (its own module, `go.mod`) that registers tools
/// with the SDK (`guest-sdk/go`, module `toolhost/guest`) from `init`. The
/// `wit-bindgen go` bindings (`guest-sdk/go/bindings`) form the main module;
/// the SDK's glue (`glue/tools.go`, `glue/catalog.go`) goes into their export
/// packages, a generated `main` imports the guest, and Go (from PyPI, pinned in
/// `requirements-build.txt`) builds it for `wasip1` as a reactor, with the
/// bindings' runtime package from `guest-sdk/go/witpkg`. Then as for C: embed
/// the WIT's `catalog-plugin` world, adapt.
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
    for (glue, package) in [
        ("tools.go", "export_toolhost_plugin_tools"),
        ("catalog.go", "export_toolhost_plugin_catalog"),
    ] {
        std::fs::create_dir_all(stage.join(package))?;
        std::fs::copy(
            sdk.join("glue").join(glue),
            stage.join(package).join("toolhost_glue.go"),
        )?;
    }
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
    componentize(&wasm_tools, &core, &stage, "catalog-plugin", &adapter, wasm)
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

/// An empty staging directory for one guest's build: `<target>/polyglot-build/NAME`.
fn fresh_stage(name: &str) -> Result<PathBuf> {
    let stage = target_dir().join("polyglot-build").join(name);
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    std::fs::create_dir_all(&stage).with_context(|| format!("creating {}", stage.display()))?;
    Ok(stage)
}

/// Makes a component of a preview-1 core module `core`: embeds the WIT's
/// `world`, then adapts it to preview 2 with the reactor `adapter`.
fn componentize(
    wasm_tools: &Path,
    core: &Path,
    stage: &Path,
    world: &str,
    adapter: &Path,
    wasm: &Path,
) -> Result<()> {
    let embedded = stage.join("embedded.wasm");
    run(Command::new(wasm_tools)
        .args(["component", "embed", "--world", world])
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
