//! Contract versions side by side: plugins of the frozen `toolhost:plugin@0.1.0`
//! (`abi-v0-1`, and `raw`, both built with wit-bindgen on `wit/v0.1.0`) and
//! `@0.2.0` (`abi-v0-2`, on `wit/v0.2.0`) in one directory with `@0.3.0`
//! plugins (the SDK's), and the tool hints (`@0.2.0` on)
//! from the declaration to the manifest cache, `inspect` and MCP `tools/list`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolhost::tool::{Part, ToolCall};
use toolhost::{Context, Plugin, PluginOptions, PluginSet, ToolsetExt};
use toolhost_test_plugins::{ABI_V0_1, ABI_V0_2, CONFORMANCE, ECHO, RAW};

use crate::engine;

#[tokio::test]
async fn a_0_1_plugin_loads_and_runs_beside_0_2_plugins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(ABI_V0_1, dir.path().join("old.wasm")).unwrap();
    std::fs::copy(RAW, dir.path().join("raw.wasm")).unwrap();

    let set = PluginSet::load_dir(engine(), dir.path(), &PluginOptions::default())
        .await
        .unwrap();
    assert!(set.failures().is_empty(), "{:?}", set.failures());
    let loaded: Vec<&str> = set.plugins().iter().map(Plugin::name).collect();
    assert_eq!(loaded, ["echo", "old", "raw"]);

    // `@0.1.0` has no hints: its tools have none.
    let old = &set.plugins()[1];
    let shout = old.tool("shout").unwrap();
    assert_eq!(shout.description, "Upper-cases `text`.");
    assert!(shout.hints.is_empty(), "{:?}", shout.hints);
    assert!(old.tool("count").unwrap().hints.is_empty());

    // Calls of both versions, through one set.
    let out = set
        .invoke(&Context::new(), "shout", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"text": "HELLO"})));
    let out = set
        .invoke(&Context::new(), "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
    let out = set
        .invoke(&Context::new(), "bare_string", json!({}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "hello"})));

    // Streams of both versions.
    let mut stream = set
        .stream(&Context::new(), "count", json!({}))
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(part) = stream.next().await {
        chunks.push(part.unwrap());
    }
    assert_eq!(
        chunks,
        ["1", "2", "3"].map(|n| Part::Text(n.to_owned())).to_vec()
    );
    let out = set
        .invoke(&Context::new(), "countdown", json!({"from": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "2\n1\n0\n"})));
}

/// Loading with a cache directory lists plugins of both versions from their
/// manifests on a warm start, hints included.
#[tokio::test]
async fn plugins_of_both_versions_restart_warm_with_their_hints() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = toolhost::EngineConfig::default();
    config.cache_dir(Some(cache.path().to_owned()));
    for _ in 0..2 {
        let engine = toolhost::Engine::new(&config).unwrap();
        let old = Plugin::load(&engine, ABI_V0_1, &PluginOptions::default())
            .await
            .unwrap();
        let new = Plugin::load(&engine, CONFORMANCE, &PluginOptions::default())
            .await
            .unwrap();
        // Before the code is ready: what the manifest said, on the warm start.
        let add = &new.tool("add").unwrap().hints;
        assert_eq!(add.title.as_deref(), Some("Add"));
        assert_eq!(add.read_only, Some(true));
        assert_eq!(add.open_world, Some(false));
        assert!(old.tool("shout").unwrap().hints.is_empty());
        old.ready().await.unwrap();
        new.ready().await.unwrap();
        let out = old
            .invoke(ToolCall::new("shout", json!({"text": "again"})))
            .await
            .unwrap();
        assert_eq!(out.result, Some(json!({"text": "AGAIN"})));
    }
}

fn toolhost(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn inspect_reports_each_plugins_version_and_hints() {
    let out = toolhost(&["inspect", ABI_V0_1, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let old: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(old["toolhost_version"], "0.1.0");
    for tool in old["tools"].as_array().unwrap() {
        assert!(tool.get("hints").is_none(), "{tool}");
    }

    // `@0.2.0`, frozen: hints, and no caller.
    let out = toolhost(&["inspect", ABI_V0_2, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let frozen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(frozen["toolhost_version"], "0.2.0");
    assert_eq!(
        frozen["tools"][0]["hints"],
        json!({"title": "Whisper", "read_only": true, "idempotent": true, "open_world": false})
    );

    let out = toolhost(&["inspect", CONFORMANCE, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let new: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(new["toolhost_version"], "0.4.0");
    let tools = new["tools"].as_array().unwrap();
    let add = tools.iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(
        add["hints"],
        json!({"title": "Add", "read_only": true, "idempotent": true, "open_world": false})
    );
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert!(echo.get("hints").is_none(), "{echo}");

    let out = toolhost(&["inspect", CONFORMANCE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("world:    toolhost:plugin/catalog-plugin@0.4.0"),
        "{text}"
    );
    assert!(
        text.contains("hints: title \"Add\", read-only, idempotent, not open-world"),
        "{text}"
    );
}

/// `tools/list` over stdio: a `@0.2.0` plugin's hints are its tools'
/// annotations; a `@0.1.0` plugin's tools list as before, without any.
#[test]
fn hints_reach_tools_list_as_annotations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ABI_V0_1, dir.path().join("old.wasm")).unwrap();
    std::fs::copy(CONFORMANCE, dir.path().join("conformance.wasm")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .args(["--no-cache", "serve", "--no-watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Owns stdin: dropping it ends the session.
    let mut send = move |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut response = |id: u64| loop {
        let line = lines.next().expect("the server answers").unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "versions-test", "version": "0"}}}),
    );
    assert!(response(1).get("result").is_some());
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = response(2);
    drop(send);
    let tools = listed["result"]["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` is listed: {listed}"))
    };
    let add = tool("add");
    assert_eq!(add["title"], "Add", "{add}");
    assert_eq!(
        add["annotations"],
        json!({"title": "Add", "readOnlyHint": true, "idempotentHint": true,
            "openWorldHint": false}),
        "{add}"
    );
    for name in ["shout", "count", "echo"] {
        let other = tool(name);
        assert!(other.get("annotations").is_none(), "{other}");
        assert!(other.get("title").is_none(), "{other}");
    }
    let _ = child.wait();
}
