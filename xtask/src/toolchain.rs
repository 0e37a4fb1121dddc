//! Toolchains the tasks install on first use: rustup's wasm32-wasip2 target,
//! Python venvs with pinned requirements (componentize-py, Go, wasm-tools,
//! pytest, the MCP SDK), and Debian packages: what C guests compile with,
//! `redis-server` for the host's shared-state tests and `docker-registry` for
//! its OCI registry tests; `wkg` (built from crates.io) for its OCI
//! interop tests; and npm packages pinned by a lockfile (`npm ci`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::workspace::{cargo, root, run, target_dir};

/// `npm ci` of the pinned `package.json` and `package-lock.json` in `src`
/// (relative to the workspace root) into `<target>/<name>`; returns that
/// directory. Installs only when the lockfile differs from the last
/// install's (a stamp file holds a copy).
pub(crate) fn npm_ci(src: &str, name: &str) -> Result<PathBuf> {
    let src = root().join(src);
    let dir = target_dir().join(name);
    let lock = std::fs::read_to_string(src.join("package-lock.json"))
        .with_context(|| format!("reading {}/package-lock.json", src.display()))?;
    let stamp = dir.join("lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(file), dir.join(file))?;
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"]))
    .context("npm ci needs Node.js and npm")?;
    std::fs::write(&stamp, lock)?;
    Ok(dir)
}

/// Installs the wasm32-wasip2 target if rustup does not have it yet.
pub(crate) fn ensure_wasm_target() -> Result<()> {
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

/// The venv `<target>/<name>` with `requirements` installed; returns its Python.
/// Installs only when the requirements differ from the last install's (a stamp
/// file holds a copy), so reruns are fast.
pub(crate) fn venv(name: &str, requirements: &Path) -> Result<PathBuf> {
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

/// The Debian packages a C guest needs: clang and wasm-ld for wasm32, wasi-libc
/// (the sysroot) and compiler-rt's wasm32 builtins.
const C_PACKAGES: [&str; 4] = [
    "clang-19",
    "lld-19",
    "wasi-libc",
    "libclang-rt-19-dev-wasm32",
];

/// Installs the missing [`C_PACKAGES`] with apt-get (through sudo unless root).
pub(crate) fn ensure_c_toolchain() -> Result<()> {
    ensure_debian_packages("C guests", &C_PACKAGES)
}

/// The Debian packages the host's shared-state tests run: `redis-server`.
const REDIS_PACKAGES: [&str; 1] = ["redis-server"];

/// Installs `redis-server` if missing (the host's tests start their own).
pub(crate) fn ensure_redis() -> Result<()> {
    ensure_debian_packages("the shared-state tests", &REDIS_PACKAGES)
}

/// The Debian package whose `script` gives the CLI's prompt tests a terminal.
const TERMINAL_PACKAGES: [&str; 1] = ["bsdutils"];

/// Installs `script` (util-linux, Debian's `bsdutils`) if missing.
pub(crate) fn ensure_script() -> Result<()> {
    ensure_debian_packages("the CLI's terminal tests", &TERMINAL_PACKAGES)
}

/// The Debian package the host's OCI tests run: `docker-registry` (CNCF
/// distribution, the registry behind Docker Hub).
const REGISTRY_PACKAGES: [&str; 1] = ["docker-registry"];

/// Installs `docker-registry` if missing (the host's tests start their own).
pub(crate) fn ensure_registry() -> Result<()> {
    ensure_debian_packages("the OCI registry tests", &REGISTRY_PACKAGES)
}

/// The `wkg` (bytecodealliance wasm-pkg-tools) the host's OCI interop tests
/// push and pull with.
const WKG_VERSION: &str = "0.16.1";

/// Builds `wkg` [`WKG_VERSION`] into `<target>/tools/wkg` unless that one is
/// there already; returns the binary's path. A debug build without debug
/// info: it only pushes and pulls a few small files, and that is the quickest
/// build (cold, about 4 minutes on 2 cores; a 60 MB binary instead of 245 MB
/// with debug info). Its own target directory (`<target>/tools/wkg-build`)
/// lets an interrupted build resume; it is removed once the binary is
/// installed. It needs no Debian package: rustls, with aws-lc-sys built by
/// `cc` (no cmake, no OpenSSL headers).
pub(crate) fn ensure_wkg() -> Result<PathBuf> {
    let tools = target_dir().join("tools");
    let root = tools.join("wkg");
    let wkg = root.join("bin/wkg");
    if wkg_version(&wkg).as_deref() == Some(WKG_VERSION) {
        return Ok(wkg);
    }
    eprintln!("xtask: the OCI interop tests need wkg {WKG_VERSION}; building it (once, minutes)");
    let build = tools.join("wkg-build");
    run(cargo()
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .args(["install", "--locked", "--debug", "--force", "--version"])
        .args([WKG_VERSION, "wkg", "--root"])
        .arg(&root)
        .arg("--target-dir")
        .arg(&build))
    .context("cannot build wkg from crates.io")?;
    if wkg_version(&wkg).as_deref() != Some(WKG_VERSION) {
        bail!(
            "{} is not wkg {WKG_VERSION} after installing it",
            wkg.display()
        );
    }
    // Only a resumed build needs it; a finished one leaves 0.7 GiB.
    let _ = std::fs::remove_dir_all(&build);
    Ok(wkg)
}

/// The version `wkg --version` prints (`wkg 0.16.1`), if it runs.
fn wkg_version(wkg: &Path) -> Option<String> {
    let out = Command::new(wkg).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("wkg ")?;
    out.status.success().then(|| version.to_owned())
}

/// Installs whichever of the Debian `packages` are missing, with apt-get
/// (through sudo unless root); `needed_by` says who needs them, in messages.
pub(crate) fn ensure_debian_packages(needed_by: &str, packages: &[&str]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|package| !debian_package_installed(package))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    eprintln!("xtask: {needed_by} need the Debian packages {list}; installing them with apt-get");
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
                "cannot install the Debian packages {needed_by} need; on Debian 12 run \
                 `apt-get install --no-install-recommends {list}` as root"
            )
        })
}

/// Whether dpkg says the Debian `package` is installed.
fn debian_package_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|out| {
            out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with(" installed")
        })
}

/// Whether xtask runs as root (then apt-get needs no sudo).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}
