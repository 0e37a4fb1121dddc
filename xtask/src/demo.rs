//! `cargo xtask demo`: build the Rust example plugins and the `toolhost` CLI,
//! then list and call tools, one command at a time, as a reader would.

use std::process::{Command, ExitStatus};

use anyhow::Result;

use crate::plugins;
use crate::workspace::{cargo, run, target_dir};

/// Runs the demo: each `toolhost` command is echoed, then run on the example
/// plugins; the last shows how a bad argument is refused.
pub(crate) fn show() -> Result<()> {
    let dir = plugins::build(false)?;
    run(cargo().args(["build", "--release", "--package", "toolhost"]))?;
    let toolhost = target_dir().join("release/toolhost");
    let step = |args: &[&str]| -> Result<()> {
        eprintln!("\n$ toolhost {}", args.join(" "));
        run(Command::new(&toolhost)
            .arg("--plugins")
            .arg(&dir)
            .args(args))
    };
    step(&["list"])?;
    step(&["describe", "evaluate"])?;
    step(&["call", "word_count", r#"{"text": "the quick brown fox"}"#])?;
    step(&["call", "evaluate", r#"{"expression": "2 * (3 + 4) ^ 2"}"#])?;
    step(&[
        "call",
        "convert_units",
        r#"{"value": "5", "from": "km", "to": "mi"}"#,
    ])?;
    step(&[
        "call",
        "hash",
        r#"{"algorithm": "sha256", "input": "hello"}"#,
    ])?;
    step(&[
        "call",
        "split_lines",
        r#"{"text": "one\ntwo\nthree", "numbered": true}"#,
    ])?;
    step(&["call", "qr_code", r#"{"text": "https://example.com"}"#])?;
    eprintln!("\n$ toolhost call evaluate '{{\"expression\": 42}}'   # a bad argument");
    let status = Command::new(&toolhost)
        .arg("--plugins")
        .arg(&dir)
        .args(["call", "evaluate", r#"{"expression": 42}"#])
        .status()?;
    eprintln!("{}", exit_note(status));
    Ok(())
}

/// How the demo shows a command's exit: `(exit status: 1)`, as the shell
/// would word it (`ExitStatus`'s own text already says "exit status").
fn exit_note(status: ExitStatus) -> String {
    format!("({status})")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::exit_note;

    #[test]
    fn a_failed_command_says_exit_status_once() {
        let status = Command::new("sh")
            .args(["-c", "exit 1"])
            .status()
            .expect("sh runs");
        assert_eq!(exit_note(status), "(exit status: 1)");
    }
}
