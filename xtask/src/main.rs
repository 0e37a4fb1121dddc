//! `cargo xtask <command>`: project automation in plain Rust.
//!
//! - `plugins [--all]`: build the Rust example plugins into `target/plugins/`
//!   (needs only rustup's wasm32-wasip2 target); `--all` adds the Python,
//!   JavaScript, Go and C examples (installing their pinned toolchains).
//! - `guests [NAME...]`: build the guests written in other languages than Rust
//!   (`tests/plugins/*` and `plugins/*` without a `Cargo.toml`) into
//!   `<target>/polyglot/<name>.wasm`, with toolchains pinned by the repo. The host
//!   tests load them from there (`toolhost_test_plugins::POLYGLOT`).
//! - `sdk-test`: the guest SDKs' native unit tests (Python: pytest; JavaScript:
//!   `node --test`; Go: `go test`).
//! - `bindings [--check]`: regenerate the C and Go bindings of `wit/` that the
//!   guest SDKs commit (`guest-sdk/c/gen`, `guest-sdk/go/bindings`) and the Go
//!   bindings' runtime package (`guest-sdk/go/witpkg`); `--check` fails if they
//!   differ from fresh ones instead.
//! - `demo`: build the Rust example plugins and the `toolhost` CLI, then list and call tools.
//! - `docs-test`: run the README's install and tour verbatim in a scratch copy
//!   of the repository, and every command and config snippet of the README and
//!   `docs/` (see `docs.rs`).
//! - `test`: check the committed bindings (`bindings --check`), build the
//!   non-Rust guests, run the SDK unit tests and every cargo test (installs the
//!   wasm32-wasip2 target if missing), then `new-test`, `docs-test`, `mcp-test`,
//!   `conformance-test`, `cluster-test` and `interop-test`.
//! - `new-test [LANG...]`: `toolhost new` end to end: a project in each language, built
//!   by its own `build.sh`, then called through the `toolhost` binary; then
//!   every snippet of `docs/writing-tools.md` and `docs/languages/*.md` is
//!   applied to it, built and called as the page shows.
//! - `mcp-test`: the MCP end-to-end tests (`tests/mcp`): the official Python MCP SDK
//!   drives `toolhost serve` over stdio and HTTP. Extra arguments go to pytest.
//! - `conformance-test`: the official MCP conformance suite (`tests/conformance`,
//!   pinned npm packages) against `toolhost serve --http`; scenarios listed in
//!   `tests/conformance/expected-failures.yml` may fail, no other. Extra
//!   arguments go to the suite's `server` command.
//! - `cluster-test`: the scale-out tests (`tests/cluster`): redis-server, three
//!   replicas, nginx and prometheus (Debian packages, installed if missing), driven
//!   through nginx by the official Python MCP SDK. Extra arguments go to pytest.
//! - `interop-test`: the interop tests (`tests/interop`): the agent frameworks'
//!   own code from PyPI (google-genai, Google ADK, LangChain's MCP adapters, the
//!   OpenAI Agents SDK) converts every example tool's schema and runs the
//!   snippets of `docs/frameworks.md` and `docs/observability.md`. Extra
//!   arguments go to pytest.
//! - `bench [NAME...]`: every performance figure in one run: builds the Python and
//!   JavaScript guests, installs the pinned Node MCP server the `mcp` bench compares
//!   against (`npm ci` of `host/benches/node/` into `<target>/bench-node`), then runs
//!   the cargo benches in sequence (all of them, or those named).
//! - `ci`: `cargo fmt --check`, clippy with `-D warnings`, docs, then `test`.

use anyhow::{Result, bail};

mod bench;
mod bindings;
mod ci;
mod cluster_test;
mod conformance_test;
mod demo;
mod docs;
mod guests;
mod interop_test;
mod mcp_test;
mod new_test;
mod plugins;
mod sdk_test;
mod test;
mod toolchain;
mod workspace;

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "plugins" => plugins::build(std::env::args().nth(2).as_deref() == Some("--all")).map(drop),
        "guests" => guests::build(&std::env::args().skip(2).collect::<Vec<_>>()).map(drop),
        "sdk-test" => sdk_test::test(),
        "bindings" => bindings::generate(std::env::args().nth(2).as_deref() == Some("--check")),
        "demo" => demo::show(),
        "test" => test::all(),
        "mcp-test" => mcp_test::test(std::env::args().skip(2).collect()),
        "conformance-test" => conformance_test::test(std::env::args().skip(2).collect()),
        "cluster-test" => cluster_test::test(std::env::args().skip(2).collect()),
        "interop-test" => interop_test::test(std::env::args().skip(2).collect()),
        "new-test" => new_test::test(&std::env::args().skip(2).collect::<Vec<_>>()),
        "docs-test" => docs::test(),
        "bench" => bench::measure(&std::env::args().skip(2).collect::<Vec<_>>()),
        "ci" => ci::check(),
        _ => {
            eprintln!(
                "usage: cargo xtask <plugins [--all]|guests [NAME...]|sdk-test|bindings [--check]|demo|test|new-test [LANG...]|docs-test|mcp-test [PYTEST ARGS]|conformance-test [SUITE ARGS]|cluster-test [PYTEST ARGS]|interop-test [PYTEST ARGS]|bench [NAME...]|ci>"
            );
            bail!("unknown task `{task}`")
        }
    }
}
