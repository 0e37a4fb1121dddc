//! Paths of the plugins of this workspace, built for `wasm32-wasip2` by this
//! crate's build script (a nested `cargo build --profile guest`).
//!
//! Each component has a constant named after its package, in SHOUTY case
//! (`echo` → [`ECHO`], `bad-schema` → `BAD_SCHEMA`), holding the absolute path of
//! its `.wasm`. [`ALL`] lists every plugin with its package name, [`TESTS`] the
//! test-only plugins under `tests/plugins/`, and [`EXAMPLES`] the real plugins
//! under `plugins/`. [`POLYGLOT`] lists the guests written in other languages
//! (a directory with `app.py`, `app.js`, `go.mod` or `app.c` instead of a
//! `Cargo.toml`), each with a constant too (`conformance-py` → `CONFORMANCE_PY`):
//! this script does not build them, `cargo xtask guests` does, into
//! `<target>/polyglot/`. [`foreach_plugin!`] calls a macro once per plugin with its
//! snake-case name, so a test suite can make "a plugin without a test" a compile
//! error.
//!
//! ```
//! let wasm = std::fs::read(toolhost_test_plugins::ECHO).expect("built by build.rs");
//! assert_eq!(&wasm[..8], b"\0asm\x0d\0\x01\0", "a component, not a core module");
//! ```
//!
//! [`wit`] makes components from WIT text, with no toolhost SDK.
//!
//! The build needs the `wasm32-wasip2` target: `rustup target add wasm32-wasip2`.

include!(concat!(env!("OUT_DIR"), "/plugins.rs"));

pub mod wit;
