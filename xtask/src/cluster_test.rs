//! `cargo xtask cluster-test [PYTEST ARGS]`: the scale-out tests
//! (`tests/cluster`): redis-server, three `toolhost serve --http` replicas,
//! nginx in front and prometheus scraping them, on loopback ports in a temp
//! dir, driven through nginx by the official Python MCP SDK. The tests start
//! and stop every service themselves. Extra arguments go to pytest.

use anyhow::Result;

use crate::mcp_test::pytest;
use crate::toolchain::ensure_debian_packages;

/// The Debian packages the cluster's services are (the interop suite runs
/// them too).
pub(crate) const SERVICES: [&str; 3] = ["redis-server", "nginx", "prometheus"];

/// What the cluster tests need besides: systemd (`systemd-analyze` checks
/// the deploy page's unit); podman, runc and debootstrap build and run the
/// page's container, there being no Docker engine here, from a base image
/// made of Debian's packages.
const CHECKS: [&str; 4] = ["systemd", "podman", "runc", "debootstrap"];

/// Installs the services, then runs the cluster tests as `mcp-test` runs
/// its own (same build, same venv).
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    ensure_debian_packages(
        "the cluster tests",
        &[SERVICES.as_slice(), &CHECKS].concat(),
    )?;
    pytest("tests/cluster", pytest_args)
}
