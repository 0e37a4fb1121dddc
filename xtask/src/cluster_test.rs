//! `cargo xtask cluster-test [PYTEST ARGS]`: the scale-out tests
//! (`tests/cluster`): redis-server, three `toolhost serve --http` replicas,
//! nginx in front and prometheus scraping them, on loopback ports in a temp
//! dir, driven through nginx by the official Python MCP SDK. The tests start
//! and stop every service themselves. Extra arguments go to pytest.

use anyhow::Result;

use crate::mcp_test::pytest;
use crate::toolchain::ensure_debian_packages;

/// The Debian packages the cluster runs on (systemd: `systemd-analyze` checks
/// the deploy page's unit).
pub(crate) const PACKAGES: [&str; 4] = ["redis-server", "nginx", "prometheus", "systemd"];

/// Installs the services, then runs the cluster tests as `mcp-test` runs
/// its own (same build, same venv).
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    ensure_debian_packages("the cluster tests", &PACKAGES)?;
    pytest("tests/cluster", pytest_args)
}
