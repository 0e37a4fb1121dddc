//! Tools under `[confirm]` as an MCP client sees them: marked in `tools/list`,
//! and refused with a message that reads as a decision.

use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_test_plugins::ECHO;

/// `toolhost serve` over stdio, with `echo` and `[confirm] tools = ["add"]`.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
        let config = dir.path().join("toolhost.toml");
        std::fs::write(&config, "plugins = \".\"\n[confirm]\ntools = [\"add\"]\n").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--config")
            .arg(&config)
            .args(["--no-cache", "serve", "--no-watch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            _dir: dir,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> Value {
        // Bounds a hang only; no timing is asserted.
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .expect("the server answers");
        serde_json::from_str(&line).unwrap()
    }

    /// The response to request `id`, answering every approval question on
    /// the way with `answer` (an `ElicitResult`).
    fn response(&mut self, id: u64, answer: &Value) -> Value {
        loop {
            let message = self.next();
            if message["method"] == "elicitation/create" {
                let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": answer});
                self.send(reply);
            } else if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// A 2025-11-25 session of a client that can answer form elicitations.
    fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "confirm-test", "version": "0"}}}),
        );
        let answer = self.response(1, &Value::Null);
        assert!(answer.get("result").is_some(), "{answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn confirm_gated_tools_are_marked_in_tools_list_and_others_are_not() {
    let mut server = Server::start();
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = server.response(2, &Value::Null);
    let tools = listed["result"]["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` is listed: {listed}"))
    };
    let add = tool("add");
    assert_eq!(add["_meta"], json!({"dev.toolhost/confirm": true}), "{add}");
    assert_eq!(
        add["annotations"],
        json!({"destructiveHint": true}),
        "{add}"
    );
    for other in tools.iter().filter(|t| t["name"] != "add") {
        assert!(other.get("_meta").is_none(), "{other}");
        assert!(other.get("annotations").is_none(), "{other}");
    }
}

#[test]
fn confirm_refusals_over_mcp_read_as_decisions() {
    let mut server = Server::start();
    server.initialize();
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    };
    let answers = [
        (json!({"action": "decline"}), "the user declined it"),
        (
            json!({"action": "cancel"}),
            "the user cancelled the approval",
        ),
        (
            json!({"action": "accept", "content": {"approve": false}}),
            "the user did not approve it",
        ),
    ];
    for (id, (answer, why)) in (3..).zip(answers) {
        server.send(call(id));
        let response = server.response(id, &answer);
        let result = &response["result"];
        assert_eq!(result["isError"], true, "{response}");
        let text = result["content"][0]["text"].as_str().unwrap();
        // The whole message: no "host error:", no call ID.
        assert_eq!(text, format!("`add` was not run: {why}"), "{response}");
    }
    // A yes runs it.
    server.send(call(9));
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let response = server.response(9, &approve);
    let text = response["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"result": 3})
    );
}
