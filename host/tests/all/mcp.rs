//! The MCP server as a library: `McpServer::serve_io` over an in-memory pipe.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;
use toolhost::mcp::McpServer;
use toolhost::toolset::SinglePlugin;
use toolhost::{Context, Tool, Toolset};
use toolhost_test_plugins::ECHO;

use crate::plugin;

/// A set whose first load ends just after a call's first lookup missed:
/// that lookup sees nothing, and marks the load done as it returns.
struct LoadsDuringLookup {
    plugin: SinglePlugin,
    ready: watch::Sender<bool>,
    lookups: AtomicUsize,
}

impl LoadsDuringLookup {
    fn loaded(&self) -> bool {
        self.lookups.load(Ordering::SeqCst) >= 2
    }
}

impl Toolset for LoadsDuringLookup {
    fn name(&self) -> &str {
        "late"
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        if self.loaded() {
            self.plugin.tools(cx)
        } else {
            Vec::new()
        }
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        if self.lookups.fetch_add(1, Ordering::SeqCst) == 0 {
            self.ready.send_replace(true);
            return None;
        }
        self.plugin.lookup(cx, name)
    }
}

#[tokio::test]
async fn a_call_racing_the_end_of_the_first_load_finds_its_tool() {
    let (ready, ready_rx) = watch::channel(false);
    let set = LoadsDuringLookup {
        plugin: SinglePlugin::new(plugin(ECHO).await),
        ready,
        lookups: AtomicUsize::new(0),
    };
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let serving = tokio::spawn(
        McpServer::new(set)
            .with_ready(ready_rx)
            .serve_io(server_read, server_write),
    );
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        write.write_all(line.as_bytes()).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    )
    .await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert!(answer["result"].is_object(), "{answer}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}))
    .await;
    let answer: Value = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("an answer");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == 2 {
                break message;
            }
        }
    })
    .await
    .expect("the call is answered");
    // Before: "no tool named `add`", the load having ended between the miss
    // and the check whether it had.
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"result": 3}),
        "{answer}"
    );
    // The end of input ends the session.
    write.shutdown().await.unwrap();
    drop(write);
    drop(lines);
    tokio::time::timeout(std::time::Duration::from_secs(30), serving)
        .await
        .expect("the session ends at the end of input")
        .unwrap()
        .unwrap();
}
