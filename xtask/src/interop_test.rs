//! `cargo xtask interop-test [PYTEST ARGS]`: the interop tests
//! (`tests/interop`): the agent frameworks' own code from PyPI (google-genai,
//! Google ADK, LangChain's MCP adapters, the OpenAI Agents SDK) on the example
//! plugins: their schema converters on every tool's `inputSchema` (and on the
//! component toolsets' `outputSchema`s, issue 34), and the snippets of
//! `docs/frameworks.md` against `toolhost serve`, and ADK's trace with
//! toolhost's spans in it (`docs/observability.md`'s snippet, exporting to a
//! loopback OTLP receiver), and their MCP clients (mcp 1.x, 2025-11-25
//! sessions) through the cluster's nginx to three replicas sharing Redis
//! (`tests/cluster/services.py`). Offline; extra arguments go to pytest.

use anyhow::Result;

use crate::guests;
use crate::mcp_test::pytest_with;
use crate::toolchain::ensure_debian_packages;
use crate::toolchain::venv;
use crate::workspace::{root, target_dir};

/// Builds `toolhost` and every guest, then runs pytest on `tests/interop` in
/// its own venv (`target/interop-venv`, from the pinned
/// `tests/interop/requirements.txt`: the frameworks need `mcp` 1.x, the MCP
/// tests 2.x), with `TOOLHOST_BIN`, `TOOLHOST_GUESTS` and `TOOLHOST_POLYGLOT`
/// pointing at what was built.
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    // The frameworks' clients also run through the cluster (`test_cluster.py`).
    ensure_debian_packages("the interop tests", &crate::cluster_test::SERVICES)?;
    let python = venv(
        "interop-venv",
        &root().join("tests/interop/requirements.txt"),
    )?;
    // Every guest in other languages than Rust, not only the examples: the
    // agreement test also checks the Go and C conformance plugins, and the
    // schema tests the JavaScript and Python component toolsets. (Only what
    // changed is rebuilt.)
    guests::build(&[])?;
    let polyglot = target_dir().join("polyglot");
    pytest_with(
        &python,
        "tests/interop",
        pytest_args,
        &[
            ("TOOLHOST_POLYGLOT", polyglot.as_os_str()),
            // The Agents SDK would try to export traces to OpenAI.
            ("OPENAI_AGENTS_DISABLE_TRACING", "1".as_ref()),
        ],
    )
}
