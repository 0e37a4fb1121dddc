//! `cargo xtask sdk-test`: the guest SDKs' native unit tests (Python: pytest;
//! JavaScript: `node --test`; Go: `go test`).

use std::process::Command;

use anyhow::{Context, Result};

use crate::toolchain::venv;
use crate::workspace::{root, run, target_dir};

/// The guest SDKs' native unit tests (schema derivation, calls): Python with
/// pytest, JavaScript with `node --test` (the WIT host import stubbed), Go with
/// `go test`.
pub(crate) fn test() -> Result<()> {
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
            "test/catalog.test.mjs",
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
