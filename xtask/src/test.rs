//! `cargo xtask test`: every test, in order: the committed bindings
//! (`bindings --check`), the non-Rust guests, the SDK unit tests, every cargo
//! test (installs the wasm32-wasip2 target, `redis-server`, `docker-registry`
//! and `script` if missing, and builds `wkg` once), then
//! `new-test`, `docs-test`, `mcp-test`, `conformance-test`, `cluster-test` and
//! `interop-test`.

use anyhow::Result;

use crate::toolchain::{
    ensure_redis, ensure_registry, ensure_script, ensure_wasm_target, ensure_wkg,
};
use crate::workspace::{cargo, run};
use crate::{
    bindings, cluster_test, conformance_test, docs, guests, interop_test, mcp_test, new_test,
    sdk_test,
};

/// Runs every test; stops at the first that fails.
pub(crate) fn all() -> Result<()> {
    ensure_wasm_target()?;
    bindings::generate(true)?;
    // The host's conformance tests load these; without them they fail.
    guests::build(&[])?;
    sdk_test::test()?;
    // The host's shared-state tests start their own redis-server.
    ensure_redis()?;
    // Its OCI tests start their own docker-registry.
    ensure_registry()?;
    // Its confirmation-prompt tests type into a terminal made by `script`.
    ensure_script()?;
    // Its OCI interop tests push and pull with wkg too.
    let wkg = ensure_wkg()?;
    run(cargo()
        .args(["test", "--workspace"])
        .env("TOOLHOST_WKG", &wkg))?;
    new_test::test(&[])?;
    docs::test()?;
    mcp_test::test(Vec::new())?;
    conformance_test::test(Vec::new())?;
    cluster_test::test(Vec::new())?;
    interop_test::test(Vec::new())
}
