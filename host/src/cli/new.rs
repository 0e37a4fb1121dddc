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
}

const WIT: &str = include_str!("../../../wit/plugin.wit");

/// A file of the project: its path inside it, and its text (with `{{name}}`
/// and `{{crate_name}}` still to fill in).
struct File {
    path: &'static str,
    text: String,
    executable: bool,
}

fn file(path: &'static str, text: impl Into<String>) -> File {
    File {
        path,
        text: text.into(),
        executable: false,
    }
}

fn script(path: &'static str, text: &str) -> File {
    File {
        path,
        text: text.to_owned(),
        executable: true,
    }
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
                "toolhost-guest/src/tool.rs",
                include_str!("../../../guest-sdk/src/tool.rs"),
            ),
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
                file("package.json", package),
                file("package-lock.json", lock),
                script("build.sh", include_str!("../../templates/js/build.sh.tmpl")),
                file(".gitignore", "*.wasm\nnode_modules/\n"),
            ]);
        }
    }
    files.push(file("README.md", readme(lang)));
    Ok(files)
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
            "cargo and the wasm32-wasip2 target (the script adds it with rustup)",
        ),
        Lang::Python => (
            "src/app.py",
            "src/toolhost_guest/ (the Python guest SDK)",
            "python3 with venv; the script installs componentize-py once",
        ),
        Lang::Js => (
            "src/app.js",
            "src/toolhost-guest.js (the JavaScript guest SDK)",
            "Node.js and npm; the script installs componentize-qjs once (npm ci)",
        ),
    };
    format!(
        "# {{{{name}}}}\n\n\
         A toolhost plugin. Its tools are in `{source}`.\n\n\
         - Build: `./build.sh` writes `{{{{name}}}}.wasm` (needs {toolchain}).\n\
         - Try: `toolhost --plugins . list`, then \
         `toolhost --plugins . call greet '{{\"name\": \"Ada\"}}'`.\n\
         - Serve: copy `{{{{name}}}}.wasm` into your plugins directory; a running \
         `toolhost serve` picks it up.\n\n\
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

/// Writes the project `dir/name` and returns its path. Refuses to touch an
/// existing non-empty directory.
pub(crate) fn create(name: &str, lang: Lang, dir: &Path) -> Result<PathBuf> {
    check_name(name)?;
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
    for file in files(lang)? {
        let path = root.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = file
            .text
            .replace("{{name}}", name)
            .replace("{{crate_name}}", &crate_name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
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
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["weather", "weather-tools", "a1"] {
            check_name(good).unwrap();
        }
        for bad in [
            "",
            "Weather",
            "1abc",
            "-x",
            "x-",
            "a_b",
            "a.b",
            "a/b",
            &"a".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn every_language_writes_a_filled_in_project() {
        let scratch = std::env::temp_dir().join(format!("toolhost-new-{}", std::process::id()));
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let root = create("my-tools", lang, &scratch.join(format!("{lang:?}"))).unwrap();
            for file in files(lang).unwrap() {
                let text = std::fs::read_to_string(root.join(file.path)).unwrap();
                for placeholder in ["{{name}}", "{{crate_name}}"] {
                    assert!(
                        !text.contains(placeholder),
                        "{lang:?} {}: {placeholder}",
                        file.path
                    );
                }
            }
            let build = std::fs::read_to_string(root.join("build.sh")).unwrap();
            assert!(build.contains("my-tools.wasm"), "{build}");
            // A second `new` into the same place is refused, and changes nothing.
            let err = create("my-tools", lang, &scratch.join(format!("{lang:?}"))).unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
        }
        let lock = std::fs::read_to_string(scratch.join("Js/my-tools/package-lock.json")).unwrap();
        let lock: Value = serde_json::from_str(&lock).unwrap();
        assert_eq!(lock["packages"][""]["name"], "my-tools");
        let cargo = std::fs::read_to_string(scratch.join("Rust/my-tools/Cargo.toml")).unwrap();
        assert!(cargo.contains("name = \"my-tools\""), "{cargo}");
        std::fs::remove_dir_all(&scratch).unwrap();
    }
}
