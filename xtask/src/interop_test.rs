//! `cargo xtask interop-test [PYTEST ARGS]`: the interop tests
//! (`tests/interop`): the agent frameworks' own code from PyPI (google-genai,
//! Google ADK, LangChain's MCP adapters, the OpenAI Agents SDK) on the example
//! plugins: their schema converters on every tool's `inputSchema`, and the
//! snippets of `docs/frameworks.md` against `toolhost serve`. Offline; extra
//! arguments go to pytest.

use std::process::Command;

use anyhow::Result;

use crate::guests;
use crate::toolchain::{ensure_wasm_target, venv};
use crate::workspace::{cargo, root, run, target_dir};

/// Builds `toolhost` and the example plugins, then runs pytest on
/// `tests/interop` in its own venv (`target/interop-venv`, from the pinned
/// `tests/interop/requirements.txt`: the frameworks need `mcp` 1.x, the MCP
/// tests 2.x), with `TOOLHOST_BIN`, `TOOLHOST_GUESTS` and `TOOLHOST_POLYGLOT`
/// pointing at what was built.
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    ensure_wasm_target()?;
    let python = venv(
        "interop-venv",
        &root().join("tests/interop/requirements.txt"),
    )?;
    // As `mcp-test` builds: the features unified as in `cargo test --workspace`,
    // so right after it nothing is rebuilt.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    // The example plugins in other languages than Rust (the Rust ones come
    // with the test artifacts' build).
    let examples: Vec<String> = guests::list()?
        .into_iter()
        .filter(|guest| guest.example)
        .map(|guest| guest.name)
        .collect();
    // (An empty list would mean every guest.)
    if !examples.is_empty() {
        guests::build(&examples)?;
    }
    let target = target_dir();
    run(Command::new(&python)
        .current_dir(root())
        .args(["-m", "pytest", "-q", "tests/interop"])
        .args(pytest_args)
        .env("TOOLHOST_BIN", target.join("debug/toolhost"))
        .env(
            "TOOLHOST_GUESTS",
            target.join("wasm-guests/wasm32-wasip2/guest"),
        )
        .env("TOOLHOST_POLYGLOT", target.join("polyglot"))
        // The Agents SDK would try to export traces to OpenAI.
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}
