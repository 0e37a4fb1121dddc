//! `cargo xtask cluster-test [PYTEST ARGS]`: the scale-out tests
//! (`tests/cluster`): redis-server, three `toolhost serve --http` replicas,
//! nginx in front and prometheus scraping them, on loopback ports in a temp
//! dir, driven through nginx by the official Python MCP SDK. The tests start
//! and stop every service themselves. Extra arguments go to pytest.

use std::process::Command;

use anyhow::Result;

use crate::toolchain::{ensure_debian_packages, ensure_wasm_target, venv};
use crate::workspace::{cargo, root, run, target_dir};

/// The Debian packages the cluster runs on.
const PACKAGES: [&str; 3] = ["redis-server", "nginx", "prometheus"];

/// Installs the services, builds `toolhost` and the guests, then runs the
/// cluster tests in the MCP tests' Python venv.
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    ensure_wasm_target()?;
    ensure_debian_packages("the cluster tests", &PACKAGES)?;
    let python = venv("mcp-venv", &root().join("tests/mcp/requirements.txt"))?;
    // As `mcp-test` does: the features unified as in `cargo test --workspace`.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    run(Command::new(&python)
        .current_dir(root())
        .args(["-m", "pytest", "-q", "tests/cluster"])
        .args(pytest_args)
        .env("TOOLHOST_BIN", target.join("debug/toolhost"))
        .env(
            "TOOLHOST_GUESTS",
            target.join("wasm-guests/wasm32-wasip2/guest"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}
