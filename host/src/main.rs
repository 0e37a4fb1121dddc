//! The `toolhost` command: list, describe, call and inspect tool plugins.

mod cli;

/// jemalloc, configured at build time (`.cargo/config.toml`) with a
/// background thread that returns freed pages to the OS: the RSS of a
/// long-running server falls again after a burst of sessions or calls, where
/// glibc's malloc keeps what its arenas once held.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
