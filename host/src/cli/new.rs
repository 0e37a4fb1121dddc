//! `toolhost new`: a plugin project that builds with one command (`./build.sh`),
//! in any supported language. The project vendors the WIT contract and the
//! language's guest SDK (compiled into this binary), so it builds anywhere,
//! outside this repository too.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde_json::Value;

/// The languages `toolhost new` writes a project for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Lang {
    /// Rust, with the `toolhost-guest` crate (cargo, wasm32-wasip2).
    Rust,
    /// Python, with the `toolhost_guest` package (componentize-py).
    Python,
    /// JavaScript, with `toolhost-guest.js` (componentize-qjs, QuickJS).
    Js,
    /// Go, with the `toolhost/guest` package (Go 1.27 for wasip1, wasm-tools).
    Go,
    /// C, with `toolhost_guest.h` and cJSON (clang for wasm32-wasi, wasm-tools).
    C,
}

const WIT: &str = include_str!("../../../wit/plugin.wit");

/// The guest-trace package (`toolhost_guest::trace` binds it).
const TRACE_WIT: &str = include_str!("../../../wit/trace/trace.wit");

/// The WASI preview-1 reactor adapter of our wasmtime version: C and Go
/// projects build wasip1 modules and adapt them into components with it.
const ADAPTER: &[u8] =
    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

/// A file of the project: its path inside it, and its contents.
struct File {
    path: &'static str,
    contents: Contents,
    executable: bool,
}

enum Contents {
    /// Text with `{{name}}`, `{{crate_name}}`, `{{go_package}}` and
    /// `{{go_module}}` still to fill in.
    Text(String),
    /// Bytes written as they are.
    Binary(&'static [u8]),
    /// The Rust project's `Cargo.lock` ([`cargo_lock`]).
    CargoLock,
}

fn file(path: &'static str, text: impl Into<String>) -> File {
    File {
        path,
        contents: Contents::Text(text.into()),
        executable: false,
    }
}

fn script(path: &'static str, text: &str) -> File {
    File {
        path,
        contents: Contents::Text(text.to_owned()),
        executable: true,
    }
}

/// Files copied from this repository: `vendored!["to" => "from", ...]`, with
/// `from` relative to the repository root.
macro_rules! vendored {
    ($($to:literal => $from:literal),* $(,)?) => {
        [$(file($to, include_str!(concat!("../../../", $from)))),*]
    };
}

/// `go.mod` of the Go SDK's generated bindings (`guest-sdk/go/bindings`, the
/// module `wit_component`), placed as the project's main module: they import
/// its tools through `plugin.go` and find everything by `replace`. Written as
/// `go build` would tidy it, so that building does not rewrite it.
fn go_bindings_go_mod() -> Result<String> {
    let generated = include_str!("../../../guest-sdk/go/bindings/go.mod");
    let runtime = generated
        .lines()
        .find_map(|line| line.trim().strip_prefix("go.bytecodealliance.org/pkg "))
        .context("the bundled Go bindings' go.mod requires no go.bytecodealliance.org/pkg")?;
    // The runtime package (witpkg/go.mod) needs Go 1.27.1.
    Ok(format!(
        "module wit_component\n\n\
         go 1.27.1\n\n\
         // Written by `toolhost new`: everything is vendored in this project.\n\
         require (\n\
         \tgo.bytecodealliance.org/pkg {runtime}\n\
         \t{{{{go_module}}}} v0.0.0\n\
         \ttoolhost/guest v0.0.0\n\
         )\n\n\
         replace go.bytecodealliance.org/pkg => ../witpkg\n\n\
         replace toolhost/guest => ..\n\n\
         replace {{{{go_module}}}} => ../..\n"
    ))
}

/// What a Go or C project adds to its preview-1 module: the reactor adapter
/// that makes it a preview-2 component, and a `.gitignore` for the build.
fn preview1_files() -> [File; 2] {
    [
        File {
            path: "toolhost-guest/wasi_snapshot_preview1.reactor.wasm",
            contents: Contents::Binary(ADAPTER),
            executable: false,
        },
        file(".gitignore", "/*.wasm\n/build/\n"),
    ]
}

/// The files of a new project in `lang`.
fn files(lang: Lang) -> Result<Vec<File>> {
    let mut files = vec![file("wit/plugin.wit", WIT)];
    match lang {
        Lang::Rust => files.extend([
            file(
                "Cargo.toml",
                include_str!("../../templates/rust/Cargo.toml.tmpl"),
            ),
            file(
                ".cargo/config.toml",
                "[build]\ntarget = \"wasm32-wasip2\"\n",
            ),
            File {
                path: "Cargo.lock",
                contents: Contents::CargoLock,
                executable: false,
            },
            file(
                "src/lib.rs",
                include_str!("../../templates/rust/lib.rs.tmpl"),
            ),
            script(
                "build.sh",
                include_str!("../../templates/rust/build.sh.tmpl"),
            ),
            file(
                "toolhost-guest/Cargo.toml",
                include_str!("../../templates/rust/toolhost-guest.Cargo.toml"),
            ),
            file(
                "toolhost-guest/src/lib.rs",
                include_str!("../../../guest-sdk/src/lib.rs"),
            ),
            file(
                "toolhost-guest/src/ask.rs",
                include_str!("../../../guest-sdk/src/ask.rs"),
            ),
            file(
                "toolhost-guest/src/catalog.rs",
                include_str!("../../../guest-sdk/src/catalog.rs"),
            ),
            file(
                "toolhost-guest/src/catalog/completion.rs",
                include_str!("../../../guest-sdk/src/catalog/completion.rs"),
            ),
            file(
                "toolhost-guest/src/catalog/prompt.rs",
                include_str!("../../../guest-sdk/src/catalog/prompt.rs"),
            ),
            file(
                "toolhost-guest/src/catalog/resource.rs",
                include_str!("../../../guest-sdk/src/catalog/resource.rs"),
            ),
            file(
                "toolhost-guest/src/export/catalog.rs",
                include_str!("../../../guest-sdk/src/export/catalog.rs"),
            ),
            file(
                "toolhost-guest/src/context.rs",
                include_str!("../../../guest-sdk/src/context.rs"),
            ),
            file(
                "toolhost-guest/src/error.rs",
                include_str!("../../../guest-sdk/src/error.rs"),
            ),
            file(
                "toolhost-guest/src/export.rs",
                include_str!("../../../guest-sdk/src/export.rs"),
            ),
            file(
                "toolhost-guest/src/output.rs",
                include_str!("../../../guest-sdk/src/output.rs"),
            ),
            file(
                "toolhost-guest/src/schema.rs",
                include_str!("../../../guest-sdk/src/schema.rs"),
            ),
            file(
                "toolhost-guest/src/schema/tests.rs",
                include_str!("../../../guest-sdk/src/schema/tests.rs"),
            ),
            file(
                "toolhost-guest/src/tool.rs",
                include_str!("../../../guest-sdk/src/tool.rs"),
            ),
            file(
                "toolhost-guest/src/trace.rs",
                include_str!("../../../guest-sdk/src/trace.rs"),
            ),
            file("wit/trace/trace.wit", TRACE_WIT),
            file(".gitignore", "/target\n*.wasm\n"),
        ]),
        Lang::Python => files.extend([
            file(
                "src/app.py",
                include_str!("../../templates/python/app.py.tmpl"),
            ),
            file(
                "requirements-build.txt",
                include_str!("../../templates/python/requirements-build.txt"),
            ),
            script(
                "build.sh",
                include_str!("../../templates/python/build.sh.tmpl"),
            ),
            file(
                "src/toolhost_guest/__init__.py",
                include_str!("../../../guest-sdk/python/toolhost_guest/__init__.py"),
            ),
            file(
                "src/toolhost_guest/_catalog.py",
                include_str!("../../../guest-sdk/python/toolhost_guest/_catalog.py"),
            ),
            file(
                "src/toolhost_guest/_core.py",
                include_str!("../../../guest-sdk/python/toolhost_guest/_core.py"),
            ),
            file(
                "src/toolhost_guest/_schema.py",
                include_str!("../../../guest-sdk/python/toolhost_guest/_schema.py"),
            ),
            file(
                "src/toolhost_guest/component.py",
                include_str!("../../../guest-sdk/python/toolhost_guest/component.py"),
            ),
            file(".gitignore", "*.wasm\n__pycache__/\n"),
        ]),
        Lang::Js => {
            let (package, lock) = js_package()?;
            files.extend([
                file("src/app.js", include_str!("../../templates/js/app.js.tmpl")),
                file(
                    "src/toolhost-guest.js",
                    include_str!("../../../guest-sdk/js/toolhost-guest.js"),
                ),
                file(
                    "src/toolhost-catalog.js",
                    include_str!("../../../guest-sdk/js/toolhost-catalog.js"),
                ),
                file("package.json", package),
                file("package-lock.json", lock),
                script("build.sh", include_str!("../../templates/js/build.sh.tmpl")),
                file(".gitignore", "*.wasm\nnode_modules/\n"),
            ]);
        }
        Lang::Go => {
            files.extend([
                file("go.mod", include_str!("../../templates/go/go.mod.tmpl")),
                file("tools.go", include_str!("../../templates/go/tools.go.tmpl")),
                script("build.sh", include_str!("../../templates/go/build.sh.tmpl")),
                file("toolhost-guest/bindings/go.mod", go_bindings_go_mod()?),
                file(
                    "toolhost-guest/bindings/plugin.go",
                    "// Links the plugin's tools in (its init registers them).\n\
                     package main\n\nimport _ \"{{go_module}}\"\n",
                ),
            ]);
            files.extend(preview1_files());
            files.extend(vendored![
                "requirements-build.txt" => "guest-sdk/go/requirements-build.txt",
                "toolhost-guest/go.mod" => "guest-sdk/go/go.mod",
                "toolhost-guest/guest.go" => "guest-sdk/go/guest.go",
                "toolhost-guest/catalog.go" => "guest-sdk/go/catalog.go",
                "toolhost-guest/bindings/export_toolhost_plugin_catalog/toolhost_glue.go" =>
                    "guest-sdk/go/glue/catalog.go",
                "toolhost-guest/bindings/toolhost_plugin_catalog/wit_bindings.go" =>
                    "guest-sdk/go/bindings/toolhost_plugin_catalog/wit_bindings.go",
                "toolhost-guest/bindings/toolhost_plugin_catalog/empty.s" =>
                    "guest-sdk/go/bindings/toolhost_plugin_catalog/empty.s",
                "toolhost-guest/bindings/export_toolhost_plugin_tools/toolhost_glue.go" =>
                    "guest-sdk/go/glue/tools.go",
                "toolhost-guest/bindings/wit_exports.go" => "guest-sdk/go/bindings/wit_exports.go",
                "toolhost-guest/bindings/export_toolhost_plugin_tools/wit_bindings.go" =>
                    "guest-sdk/go/bindings/export_toolhost_plugin_tools/wit_bindings.go",
                "toolhost-guest/bindings/export_toolhost_plugin_tools/empty.s" =>
                    "guest-sdk/go/bindings/export_toolhost_plugin_tools/empty.s",
                "toolhost-guest/bindings/toolhost_plugin_host/wit_bindings.go" =>
                    "guest-sdk/go/bindings/toolhost_plugin_host/wit_bindings.go",
                "toolhost-guest/bindings/toolhost_plugin_host/empty.s" =>
                    "guest-sdk/go/bindings/toolhost_plugin_host/empty.s",
                "toolhost-guest/bindings/toolhost_plugin_tools/wit_bindings.go" =>
                    "guest-sdk/go/bindings/toolhost_plugin_tools/wit_bindings.go",
                "toolhost-guest/bindings/toolhost_plugin_tools/empty.s" =>
                    "guest-sdk/go/bindings/toolhost_plugin_tools/empty.s",
                "toolhost-guest/bindings/toolhost_plugin_types/wit_bindings.go" =>
                    "guest-sdk/go/bindings/toolhost_plugin_types/wit_bindings.go",
                "toolhost-guest/bindings/toolhost_plugin_types/empty.s" =>
                    "guest-sdk/go/bindings/toolhost_plugin_types/empty.s",
                "toolhost-guest/witpkg/go.mod" => "guest-sdk/go/witpkg/go.mod",
                "toolhost-guest/witpkg/LICENSE" => "guest-sdk/go/witpkg/LICENSE",
                "toolhost-guest/witpkg/wit/async/async.go" => "guest-sdk/go/witpkg/wit/async/async.go",
                "toolhost-guest/witpkg/wit/async/empty.s" => "guest-sdk/go/witpkg/wit/async/empty.s",
                "toolhost-guest/witpkg/wit/runtime/runtime.go" =>
                    "guest-sdk/go/witpkg/wit/runtime/runtime.go",
                "toolhost-guest/witpkg/wit/runtime/empty.s" => "guest-sdk/go/witpkg/wit/runtime/empty.s",
                "toolhost-guest/witpkg/wit/types/future.go" => "guest-sdk/go/witpkg/wit/types/future.go",
                "toolhost-guest/witpkg/wit/types/option.go" => "guest-sdk/go/witpkg/wit/types/option.go",
                "toolhost-guest/witpkg/wit/types/result.go" => "guest-sdk/go/witpkg/wit/types/result.go",
                "toolhost-guest/witpkg/wit/types/stream.go" => "guest-sdk/go/witpkg/wit/types/stream.go",
                "toolhost-guest/witpkg/wit/types/tuple.go" => "guest-sdk/go/witpkg/wit/types/tuple.go",
                "toolhost-guest/witpkg/wit/types/unit.go" => "guest-sdk/go/witpkg/wit/types/unit.go",
            ]);
        }
        Lang::C => {
            files.extend([
                file("src/app.c", include_str!("../../templates/c/app.c.tmpl")),
                script("build.sh", include_str!("../../templates/c/build.sh.tmpl")),
            ]);
            files.extend(preview1_files());
            files.extend(vendored![
                "requirements-build.txt" => "guest-sdk/c/requirements-build.txt",
                "toolhost-guest/toolhost_guest.h" => "guest-sdk/c/toolhost_guest.h",
                "toolhost-guest/toolhost_guest.c" => "guest-sdk/c/toolhost_guest.c",
                "toolhost-guest/toolhost_catalog.c" => "guest-sdk/c/toolhost_catalog.c",
                "toolhost-guest/toolhost_internal.h" => "guest-sdk/c/toolhost_internal.h",
                "toolhost-guest/gen/catalog_plugin.h" => "guest-sdk/c/gen/catalog_plugin.h",
                "toolhost-guest/gen/catalog_plugin.c" => "guest-sdk/c/gen/catalog_plugin.c",
                "toolhost-guest/vendor/cjson/cJSON.h" => "guest-sdk/c/vendor/cjson/cJSON.h",
                "toolhost-guest/vendor/cjson/cJSON.c" => "guest-sdk/c/vendor/cjson/cJSON.c",
                "toolhost-guest/vendor/cjson/LICENSE" => "guest-sdk/c/vendor/cjson/LICENSE",
                "toolhost-guest/vendor/cjson/README.md" => "guest-sdk/c/vendor/cjson/README.md",
            ]);
        }
    }
    files.push(file("README.md", readme(lang)));
    Ok(files)
}

/// The Rust project's `Cargo.lock`: the dependency versions this repository
/// builds and tests the Rust SDK with (`templates/rust/Cargo.lock`, the
/// workspace's lock trimmed to the project's dependencies), plus the
/// project's own package where cargo sorts it, so that a first build resolves
/// nothing new (it builds offline from crates already downloaded) and
/// `cargo build --locked` holds. `Cargo.toml.tmpl`'s dependencies are listed
/// here too: a test checks the two agree.
///
/// To refresh the template after the workspace's versions change: write a
/// project with `toolhost new x --lang rust`, copy the workspace's
/// `Cargo.lock` into it, run `cargo metadata --offline --format-version 1`
/// there (cargo trims the lock to the project), and save the result without
/// the `x` package as `templates/rust/Cargo.lock`.
fn cargo_lock(name: &str) -> String {
    const DEPENDENCIES: &str = include_str!("../../templates/rust/Cargo.lock");
    let root = format!(
        "[[package]]\n\
         name = \"{name}\"\n\
         version = \"0.1.0\"\n\
         dependencies = [\n \"schemars\",\n \"serde\",\n \"serde_json\",\n \"toolhost-guest\",\n]"
    );
    // A header, then one `[[package]]` block per package, sorted by name.
    let mut blocks: Vec<&str> = DEPENDENCIES.split("\n\n").map(str::trim_end).collect();
    let named = |block: &str| {
        block
            .lines()
            .find_map(|line| line.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .map(str::to_owned)
    };
    let at = blocks
        .iter()
        .skip(1)
        .position(|block| named(block).is_some_and(|other| other.as_str() > name))
        .map_or(blocks.len(), |i| i + 1);
    blocks.insert(at, &root);
    blocks.join("\n\n") + "\n"
}

/// `package.json` and `package-lock.json`: the JS SDK's pinned toolchain, renamed.
fn js_package() -> Result<(String, String)> {
    let mut package: Value =
        serde_json::from_str(include_str!("../../../guest-sdk/js/package.json"))
            .context("the bundled JS package.json")?;
    let mut lock: Value =
        serde_json::from_str(include_str!("../../../guest-sdk/js/package-lock.json"))
            .context("the bundled JS package-lock.json")?;
    package["name"] = "{{name}}".into();
    package["description"] = "A toolhost plugin in JavaScript; `./build.sh` builds it.".into();
    package["scripts"] = serde_json::json!({ "build": "sh build.sh" });
    lock["name"] = "{{name}}".into();
    if let Some(root) = lock.pointer_mut("/packages/") {
        root["name"] = "{{name}}".into();
    }
    Ok((
        serde_json::to_string_pretty(&package)? + "\n",
        serde_json::to_string_pretty(&lock)? + "\n",
    ))
}

fn readme(lang: Lang) -> String {
    let (source, sdk, toolchain) = match lang {
        Lang::Rust => (
            "src/lib.rs",
            "toolhost-guest/ (the Rust guest SDK)",
            "cargo; the script adds the wasm32-wasip2 target with rustup, and builds in \
             a cargo target dir shared by your toolhost Rust projects \
             (`$CARGO_TARGET_DIR`, else `~/.cache/toolhost/cargo-target`)",
        ),
        Lang::Python => (
            "src/app.py",
            "src/toolhost_guest/ (the Python guest SDK)",
            "python3 with venv; the script installs componentize-py once",
        ),
        Lang::Js => (
            "src/app.js",
            "src/toolhost-guest.js and src/toolhost-catalog.js (the JavaScript guest SDK)",
            "Node.js and npm; the script installs componentize-qjs once (npm ci)",
        ),
        Lang::Go => (
            "tools.go",
            "toolhost-guest/ (the Go guest SDK, its generated WIT bindings and their \
             runtime package, and the WASI adapter)",
            "Go 1.27.1 or later and wasm-tools; the script installs both from PyPI \
             into a venv if they are missing",
        ),
        Lang::C => (
            "src/app.c",
            "toolhost-guest/ (the C guest SDK, cJSON, the generated WIT bindings and \
             the WASI adapter)",
            "clang for wasm32 with wasm-ld, wasi-libc and compiler-rt, on Debian 12 \
             `apt-get install clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32` (run \
             as root, the script installs them); and wasm-tools, which the script \
             installs from PyPI into a venv if it is missing",
        ),
    };
    format!(
        "# {{{{name}}}}\n\n\
         A toolhost plugin. Its tools are in `{source}`.\n\n\
         - Build: `./build.sh` writes `{{{{name}}}}.wasm` (needs {toolchain}).\n\
         - Try: `toolhost --plugins . list`, then \
         `toolhost --plugins . call greet '{{\"name\": \"Ada\"}}'`.\n\
         - Serve: copy `{{{{name}}}}.wasm` into your plugins directory; a running \
         `toolhost serve` picks it up.\n\
         - Grants: `list` shows what the component imports (ASKS FOR), `!` where not \
         granted. Runtimes import more than tools use (files in every language but \
         Rust, sockets in Python): a tool that uses none of it needs no grant.\n\n\
         Vendored by `toolhost new`: `wit/` (the contract) and {sdk}. Refresh them \
         from a newer toolhost with `toolhost new` into a scratch directory.\n"
    )
}

/// Checks a plugin name: it becomes the file name `NAME.wasm` and the package name.
fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && name.len() <= 64;
    if !valid {
        bail!(
            "`{name}` is not a plugin name: use lowercase letters, digits and `-`, starting \
             with a letter (at most 64 characters), like `weather-tools`"
        );
    }
    Ok(())
}

/// The Go package name of a plugin named `name`: its letters and digits
/// (`weather-tools` → `weathertools`, as Go names packages).
fn go_package(name: &str) -> Result<String> {
    let package: String = name.chars().filter(|c| *c != '-').collect();
    // Go keywords cannot name a package, and a `main` package is a program
    // that the bindings' `main` cannot import.
    const RESERVED: [&str; 26] = [
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "fallthrough",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "type",
        "var",
        "main",
    ];
    if RESERVED.contains(&package.as_str()) {
        bail!(
            "`{name}` cannot name a Go plugin: its package would be `{package}`, which Go \
             reserves; choose another name, like `{package}-tools`"
        );
    }
    Ok(package)
}

/// Writes the project `dir/name` and returns its path. Refuses to touch an
/// existing non-empty directory.
pub(crate) fn create(name: &str, lang: Lang, dir: &Path) -> Result<PathBuf> {
    check_name(name)?;
    // Only Go needs more of the name than `check_name` gives: C uses it in
    // strings and file names alone.
    let go_package = match lang {
        Lang::Go => go_package(name)?,
        _ => String::new(),
    };
    let root = dir.join(name);
    if root
        .read_dir()
        .is_ok_and(|mut entries| entries.next().is_some())
    {
        bail!(
            "{} already exists and is not empty; choose another name or --dir",
            root.display()
        );
    }
    let crate_name = name.replace('-', "_");
    // A path with a dot in its first element is never taken for the standard
    // library's (a plugin named `time` must not become the package `time`).
    let go_module = format!("toolhost.local/{name}");
    for file in files(lang)? {
        let path = root.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let written = match &file.contents {
            Contents::Text(text) => std::fs::write(
                &path,
                text.replace("{{name}}", name)
                    .replace("{{crate_name}}", &crate_name)
                    .replace("{{go_package}}", &go_package)
                    .replace("{{go_module}}", &go_module),
            ),
            Contents::Binary(bytes) => std::fs::write(&path, bytes),
            Contents::CargoLock => std::fs::write(&path, cargo_lock(name)),
        };
        written.with_context(|| format!("writing {}", path.display()))?;
        if file.executable {
            make_executable(&path)?;
        }
    }
    Ok(root)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests;
