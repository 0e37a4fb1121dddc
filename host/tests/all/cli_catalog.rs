//! What plugins offer besides tools, on the command line: `list`'s sections,
//! `read`, `prompt`, and a tool's questions on the terminal (or nobody to ask
//! without one). A child of `cli` (its helpers), in a file of its own.

use std::path::Path;

use serde_json::Value;
use toolhost_test_plugins::{ECHO, MCP_CONFORMANCE};

use super::{on_a_terminal, plugins_dir, stderr, stdout_json, toolhost};

/// The conformance plugin (resources, a template, prompts, a tool that asks)
/// next to the echo plugin.
fn catalog_dir() -> tempfile::TempDir {
    let dir = plugins_dir();
    std::fs::copy(MCP_CONFORMANCE, dir.path().join("conformance.wasm")).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn list_shows_resources_templates_and_prompts_after_the_tools() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let at = |needle: &str| {
        table
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in {table}"))
    };
    assert!(at("PLUGIN") < at("\nRESOURCE "), "{table}");
    assert!(at("\nRESOURCE ") < at("\nRESOURCE TEMPLATE "), "{table}");
    assert!(at("\nRESOURCE TEMPLATE ") < at("\nPROMPT "), "{table}");
    let line = |needle: &str| {
        table
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        line("test://static-text")
            .starts_with("test://static-text conformance text/plain static-text A static text"),
        "{table}"
    );
    assert!(
        line("test://static-binary").contains("image/png"),
        "{table}"
    );
    assert!(
        line("test://template/{id}/data")
            .starts_with("test://template/{id}/data conformance application/json template-data"),
        "{table}"
    );
    assert!(
        line("test_prompt_with_arguments")
            .starts_with("test_prompt_with_arguments conformance arg1, arg2 A prompt"),
        "{table}"
    );
    assert!(
        line("test_simple_prompt").contains("conformance - A simple"),
        "{table}"
    );

    // A set without any shows none of the sections.
    let plain = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, plain.path().join("echo.wasm")).unwrap();
    let table = stdout(&toolhost(plain.path(), &["list"]));
    assert!(
        !table.contains("RESOURCE") && !table.contains("PROMPT"),
        "{table}"
    );
}

#[test]
fn list_json_stays_an_array_and_catalog_adds_every_kind() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["list", "--json"]);
    let rows = stdout_json(&out);
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["tool"] == "test_elicitation"),
        "{rows}"
    );
    let out = toolhost(dir.path(), &["list", "--json", "--catalog"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let all = stdout_json(&out);
    assert_eq!(
        all["tools"].as_array().unwrap().len(),
        rows.as_array().unwrap().len()
    );
    let resource = all["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "test://static-text")
        .unwrap();
    assert_eq!(resource["mime_type"], "text/plain");
    assert_eq!(resource["plugin"], "conformance");
    assert_eq!(
        all["resource_templates"][0]["uri_template"],
        "test://template/{id}/data"
    );
    let prompt = all["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "test_prompt_with_arguments")
        .unwrap();
    assert_eq!(prompt["arguments"][0]["name"], "arg1");
    assert_eq!(prompt["arguments"][0]["required"], true);
    // --catalog is a shape of --json, nothing alone.
    assert!(
        !toolhost(dir.path(), &["list", "--catalog"])
            .status
            .success()
    );
}

#[test]
fn read_prints_text_and_writes_binary_content_to_a_file() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["read", "test://static-text"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "This is the content of the static text resource.\n"
    );

    let files = tempfile::tempdir().unwrap();
    let out_dir = files.path().to_str().unwrap();
    let out = toolhost(
        dir.path(),
        &["read", "test://static-binary", "--out-dir", out_dir],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let path = files.path().join("static-binary.png");
    assert_eq!(stdout(&out).trim_end(), path.display().to_string());
    assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
    // Never over an existing file.
    let out = toolhost(
        dir.path(),
        &[
            "read",
            "test://static-binary",
            "--out-dir",
            out_dir,
            "--json",
        ],
    );
    let json = stdout_json(&out);
    let content = &json["contents"][0];
    assert_eq!(content["uri"], "test://static-binary");
    assert_eq!(content["mime_type"], "image/png");
    assert!(
        content["file"]
            .as_str()
            .unwrap()
            .ends_with("static-binary-2.png"),
        "{json}"
    );
    assert!(content["bytes"].as_u64().unwrap() > 8, "{json}");
}

#[test]
fn read_reaches_a_templates_resources() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["read", "test://template/42/data"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let data: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(data["id"], "42");
    assert_eq!(data["data"], "Data for ID: 42");
    let out = toolhost(dir.path(), &["read", "--json", "test://template/7/data"]);
    let json = stdout_json(&out);
    assert_eq!(json["contents"][0]["uri"], "test://template/7/data");
    assert!(
        json["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Data for ID: 7"),
        "{json}"
    );
}

#[test]
fn an_unknown_uri_says_there_is_nothing_there_and_lists_nothing() {
    let dir = catalog_dir();
    for uri in ["test://static-txt", "test://template/1/other"] {
        let out = toolhost(dir.path(), &["read", uri]);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!("error: no resource at `{uri}`"))
                && err.contains("toolhost list"),
            "{err}"
        );
        assert!(!err.contains("static-text"), "{err}");
    }
}

#[test]
fn prompt_prints_the_filled_in_messages() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["prompt", "test_simple_prompt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "user: This is a simple prompt for testing.\n");

    let out = toolhost(
        dir.path(),
        &[
            "prompt",
            "test_prompt_with_arguments",
            "arg1=a b",
            "arg2=x=y",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "user: Prompt with arguments: arg1='a b', arg2='x=y'\n"
    );

    let out = toolhost(
        dir.path(),
        &[
            "prompt",
            "test_prompt_with_embedded_resource",
            "resourceUri=test://doc",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "user: [resource test://doc, text/plain]\n  Embedded resource content for testing.\n\
         user: Please process the embedded resource above.\n"
    );

    let files = tempfile::tempdir().unwrap();
    let out_dir = files.path().to_str().unwrap();
    let out = toolhost(
        dir.path(),
        &["prompt", "test_prompt_with_image", "--out-dir", out_dir],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("user: [image image/png, "), "{text}");
    let file = first.rsplit(' ').next().unwrap();
    assert!(Path::new(file).starts_with(files.path()), "{text}");
    assert!(std::fs::read(file).unwrap().starts_with(b"\x89PNG"));
    assert!(
        text.ends_with("user: Please analyze the image above.\n"),
        "{text}"
    );

    let out = toolhost(
        dir.path(),
        &[
            "prompt",
            "--json",
            "test_prompt_with_arguments",
            "arg1=a",
            "arg2=b",
        ],
    );
    let json = stdout_json(&out);
    assert_eq!(json["messages"][0]["role"], "user");
    assert_eq!(json["messages"][0]["content"]["type"], "text");
    assert_eq!(
        json["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );
}

#[test]
fn prompt_arguments_are_checked() {
    let dir = catalog_dir();
    let out = toolhost(
        dir.path(),
        &["prompt", "test_prompt_with_arguments", "arg1=a", "arg3=c"],
    );
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("missing required argument `arg2`")
            && err.contains("no argument named `arg3`"),
        "{err}"
    );
    let out = toolhost(
        dir.path(),
        &["prompt", "test_prompt_with_arguments", "arg1"],
    );
    assert!(stderr(&out).contains("KEY=VALUE"), "{}", stderr(&out));
    let out = toolhost(dir.path(), &["prompt", "no_such_prompt"]);
    let err = stderr(&out);
    assert!(err.contains("no prompt named `no_such_prompt`"), "{err}");
}

#[test]
fn a_tool_that_asks_without_a_terminal_hears_nobody_can_be_asked() {
    let dir = catalog_dir();
    let out = toolhost(
        dir.path(),
        &["call", "test_elicitation", r#"{"message": "Who are you?"}"#],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("could not ask the user") && err.contains("nobody can be asked"),
        "{err}"
    );
    assert!(!err.contains("Who are you?"), "{err}");
}

#[test]
fn a_tool_asks_on_the_terminal() {
    let dir = catalog_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "plugins = \".\"\n").unwrap();
    let call = r#"--timeout-ms 60000 call test_elicitation '{"message": "Who are you?"}'"#;
    // The form's fields in order (email, username), then accept.
    let (ok, screen) = on_a_terminal(&config, call, "ada@example.com\nada\n\n");
    assert!(ok, "{screen}");
    assert!(
        screen.contains("`conformance.test_elicitation` asks: Who are you?"),
        "{screen}"
    );
    assert!(screen.contains("Send this answer?"), "{screen}");
    assert!(screen.contains("User response: accepted"), "{screen}");
    assert!(screen.contains("ada@example.com"), "{screen}");
    let (ok, screen) = on_a_terminal(&config, call, "a@b\nada\nd\n");
    assert!(ok, "{screen}");
    assert!(screen.contains("User response: declined"), "{screen}");
}

#[test]
fn inspect_shows_what_a_plugin_offers_besides_tools() {
    let dir = catalog_dir();
    let out = toolhost(dir.path(), &["inspect", MCP_CONFORMANCE]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("world:    toolhost:plugin/catalog-plugin@"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nresources: test://static-text, test://static-binary, test://watched-resource\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\ntemplates: test://template/{id}/data\n"),
        "{text}"
    );
    assert!(text.contains("\nprompts:   test_simple_prompt, "), "{text}");
    let out = toolhost(dir.path(), &["inspect", "--json", MCP_CONFORMANCE]);
    let info = stdout_json(&out);
    assert_eq!(info["resources"][1]["mime_type"], "image/png");
    assert_eq!(info["resource_templates"][0]["name"], "template-data");
    assert_eq!(info["prompts"][1]["arguments"][1]["name"], "arg2");
}
