//! The `toolhost` command: list, describe, call and inspect tool plugins.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
