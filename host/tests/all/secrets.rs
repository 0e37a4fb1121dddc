//! Secrets the guest never sees (`[[network.secrets]]`): the host adds the
//! header to requests to the granted host and path, against a loopback
//! server that records what it gets; the guest's view of the request and the
//! response, its environment and its output never hold the secret; a redirect
//! off the grant gets none; per-caller secrets; the leak check.

use serde_json::{Value, json};
use std::path::Path;
use toolhost::policy::{Grants, GrantsConfig};
use toolhost::tool::{Caller, ToolCall};
use toolhost::{CallError, Plugin, PluginOptions, ToolOutput};
use toolhost_test_plugins::{CAPS, HTTP};

use crate::caps::{log_lines, logs};
use crate::network::Server;
use crate::plugin_with;

const TOKEN: &str = "tok-3f9a1c2e77b5";
const ANA_TOKEN: &str = "ana-9d8c7b6a5f4e";

/// A loopback server: `/…/echo` answers with the request's headers in its
/// body and its `authorization` in a response header; `/…/redirect?to=URL`
/// redirects there.
async fn start() -> Server {
    Server::start_with(echo).await
}

fn echo(head: &str, _port: u16) -> (&'static str, String, Vec<u8>) {
    let head = head.to_ascii_lowercase();
    let target = head.split_whitespace().nth(1).unwrap_or("/");
    let auth = head
        .lines()
        .find_map(|l| l.strip_prefix("authorization: "))
        .unwrap_or("");
    if let Some((_, to)) = target.split_once("redirect?to=") {
        ("302 Found", format!("location: {to}\r\n"), Vec::new())
    } else if target.ends_with("/echo") {
        let headers: Vec<&str> = head.lines().skip(1).filter(|l| !l.is_empty()).collect();
        (
            "200 OK",
            format!("content-type: text/plain\r\nx-echo-auth: {auth}\r\n"),
            headers.join("\n").into_bytes(),
        )
    } else {
        ("404 Not Found", String::new(), Vec::new())
    }
}

/// The heads of the requests `server` got, lower-cased.
fn seen(server: &Server) -> Vec<String> {
    server
        .heads()
        .iter()
        .map(|head| head.to_ascii_lowercase())
        .collect()
}

/// Grants from a policy's text, resolved in `dir` (where its files are).
fn grants(dir: &Path, policy: &str) -> Grants {
    let path = dir.join("http.policy.toml");
    GrantsConfig::parse(policy, &path)
        .unwrap()
        .resolve(&path, "")
        .unwrap()
}

fn options(grants: Grants) -> PluginOptions {
    let mut options = PluginOptions::default();
    options.grants(grants);
    options
}

async fn fetch(plugin: &Plugin, call: ToolCall) -> Result<ToolOutput, CallError> {
    plugin.invoke(call).await
}

fn call(args: Value, id: &str) -> ToolCall {
    ToolCall::new("http_fetch", args).with_call_id(id)
}

/// Everything the guest got back, as text.
fn text(out: &ToolOutput) -> String {
    format!("{:?} {:?}", out.result, out.parts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_reaches_a_server_with_a_secret_it_never_sees() {
    let server = start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
    let policy = format!(
        "[network]\nhttp = [\"{origin}\"]\n\n[[network.secrets]]\nhost = \"{origin}\"\n\
         path_prefix = \"/api/\"\nfrom_file = \"token\"\n",
        origin = server.origin()
    );
    let grants = grants(dir.path(), &policy);
    assert!(!format!("{grants:?} {:?}", grants.summary()).contains(TOKEN));
    let http = plugin_with(HTTP, &options(grants.clone())).await;

    // The guest sends no secret, even one of its own: the host's replaces it.
    let args = json!({
        "url": server.url("/api/echo"),
        "headers": [{"name": "authorization", "value": "Bearer the-guest's-own"}],
    });
    let out = fetch(&http, call(args, "secret-api")).await.unwrap();
    let heads = seen(&server);
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].contains(&format!("authorization: bearer {TOKEN}")),
        "{heads:?}"
    );
    assert!(!heads[0].contains("the-guest's-own"), "{heads:?}");
    // The server echoed it in its body and a header: the guest sees stars.
    let result = out.result.as_ref().unwrap();
    assert_eq!(result["status"], 200, "{result}");
    assert!(!text(&out).contains(TOKEN), "{}", text(&out));
    let stars = "*".repeat(TOKEN.len());
    assert_eq!(
        result["headers"]["x-echo-auth"],
        format!("bearer {stars}"),
        "{result}"
    );
    assert!(
        result["body"].as_str().unwrap().contains(&stars),
        "{result}"
    );

    // Outside the path prefix, or a climb out of it: no secret.
    for path in [
        "/other/echo",
        "/api/../other/echo",
        "/api/%2e%2e/other/echo",
    ] {
        fetch(&http, call(json!({"url": server.url(path)}), "secret-off"))
            .await
            .unwrap();
        let last = seen(&server).pop().unwrap();
        assert!(!last.contains("authorization"), "{path}: {last}");
    }

    // Its environment does not hold it either (nothing is granted there).
    let caps = plugin_with(CAPS, &options(grants)).await;
    let env = caps
        .invoke(ToolCall::new("environment", json!({})))
        .await
        .unwrap();
    assert_eq!(env.result.as_ref().unwrap()["env"], json!([]), "{env:?}");
    assert!(!text(&env).contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_off_the_grant_gets_no_secret() {
    let with_secret = start().await;
    let elsewhere = start().await;
    // A variable of the host's that `cargo test` always sets stands for a token.
    let token = std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR");
    let policy = format!(
        "[network]\nhttp = [\"{a}\", \"{b}\"]\n\n[[network.secrets]]\nhost = \"{a}\"\n\
         from_env = \"CARGO_MANIFEST_DIR\"\nheader = \"X-Api-Key\"\nformat = \"key {{secret}}\"\n",
        a = with_secret.origin(),
        b = elsewhere.origin()
    );
    let dir = tempfile::tempdir().unwrap();
    let http = plugin_with(HTTP, &options(grants(dir.path(), &policy))).await;
    let target = elsewhere.url("/api/echo");
    let out = fetch(
        &http,
        call(
            json!({"url": with_secret.url(&format!("/api/redirect?to={target}"))}),
            "secret-redirect",
        ),
    )
    .await
    .unwrap();
    let result = out.result.unwrap();
    assert_eq!(result["status"], 200, "{result}");
    assert_eq!(result["redirects"].as_array().unwrap().len(), 1, "{result}");
    let first = seen(&with_secret);
    let token = token.to_ascii_lowercase();
    assert!(
        first[0].contains(&format!("x-api-key: key {token}")),
        "{first:?}"
    );
    let second = seen(&elsewhere);
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(!second[0].contains("x-api-key"), "{second:?}");
    assert!(!second[0].contains(&token), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_caller_secrets_go_to_their_caller_only() {
    let server = start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tokens.toml"),
        format!("\"ana@example.com\" = \"{ANA_TOKEN}\"\n"),
    )
    .unwrap();
    let policy = format!(
        "[network]\nhttp = [\"{origin}\"]\n\n[[network.secrets]]\nhost = \"{origin}\"\n\
         per_caller = {{ file = \"tokens.toml\", claim = \"email\" }}\n",
        origin = server.origin()
    );
    let http = plugin_with(HTTP, &options(grants(dir.path(), &policy))).await;
    let url = json!({"url": server.url("/echo")});
    let ana = Caller::new("https://id.example.com", "ana").with_claim("email", "ana@example.com");
    let out = fetch(&http, call(url.clone(), "secret-ana").with_caller(ana))
        .await
        .unwrap();
    assert!(!text(&out).contains(ANA_TOKEN));
    assert!(
        seen(&server)[0].contains(&format!("authorization: bearer {ANA_TOKEN}")),
        "{:?}",
        seen(&server)
    );
    // Another caller, or none: refused before anything is sent.
    logs();
    let rita =
        Caller::new("https://id.example.com", "rita").with_claim("email", "rita@example.com");
    for (id, call) in [
        (
            "secret-rita",
            call(url.clone(), "secret-rita").with_caller(rita),
        ),
        ("secret-nobody", call(url.clone(), "secret-nobody")),
    ] {
        let failed = fetch(&http, call).await;
        assert!(
            matches!(&failed, Err(CallError::Failed { message, .. }) if message.contains("HttpRequestDenied")),
            "{id}: {failed:?}"
        );
        let lines = log_lines(id);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("its secret header has no value")),
            "{id}: {lines:?}"
        );
    }
    assert_eq!(seen(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leak_check_refuses_requests_and_masks_output() {
    logs();
    let server = start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), TOKEN).unwrap();
    let policy = format!(
        "[network]\nhttp = [\"{origin}\"]\n\n[[network.secrets]]\nhost = \"{origin}\"\n\
         from_file = \"token\"\n\n[env_vars]\nLEAKED = {{ from_file = \"token\" }}\n",
        origin = server.origin()
    );
    let grants = grants(dir.path(), &policy);
    // A guest that got hold of the value (here: the operator also granted it
    // as a variable) cannot send it anywhere, in the URL or a header.
    let http = plugin_with(HTTP, &options(grants.clone())).await;
    for (id, args) in [
        (
            "leak-url",
            json!({"url": server.url(&format!("/echo?k={TOKEN}"))}),
        ),
        (
            "leak-header",
            json!({"url": server.url("/echo"), "headers": [{"name": "x-k", "value": TOKEN}]}),
        ),
    ] {
        let failed = fetch(&http, call(args, id)).await;
        assert!(
            matches!(failed, Err(CallError::Failed { .. })),
            "{id}: {failed:?}"
        );
        let lines = log_lines(id);
        assert!(
            lines.iter().any(|l| l.contains("leak check")),
            "{id}: {lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains(TOKEN)), "{lines:?}");
    }
    assert!(seen(&server).is_empty(), "{:?}", seen(&server));
    // Nor return it: the tool's output is masked, and the log says so.
    let caps = plugin_with(CAPS, &options(grants)).await;
    let out = caps
        .invoke(ToolCall::new("env", json!({"name": "LEAKED"})).with_call_id("leak-output"))
        .await
        .unwrap();
    assert!(!text(&out).contains(TOKEN), "{}", text(&out));
    assert!(
        text(&out).contains(&"*".repeat(TOKEN.len())),
        "{}",
        text(&out)
    );
    let lines = log_lines("leak-output");
    assert!(lines.iter().any(|l| l.contains("leak check")), "{lines:?}");
    // Nor in its error message or what it logs (stdout and the `log` import).
    let failed = caps
        .invoke(ToolCall::new("leak", json!({"name": "LEAKED"})).with_call_id("leak-error"))
        .await;
    let Err(CallError::Failed { message, .. }) = &failed else {
        panic!("expected the tool to fail: {failed:?}");
    };
    assert_eq!(*message, format!("error: {}", "*".repeat(TOKEN.len())));
    let lines = log_lines("leak-error");
    for what in ["stdout: ", "log: "] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("{what}{}", "*".repeat(TOKEN.len())))),
            "{what}: {lines:?}"
        );
    }
    assert!(!lines.iter().any(|l| l.contains(TOKEN)), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("leak check") && l.contains("error message")),
        "{lines:?}"
    );
}

#[test]
fn secret_config_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.policy.toml");
    std::fs::write(dir.path().join("short"), "abc").unwrap();
    let error = |policy: &str| {
        GrantsConfig::parse(policy, &path)
            .and_then(|config| config.resolve(&path, ""))
            .unwrap_err()
    };
    let http = "[network]\nhttp = [\"api.example.com\"]\n[[network.secrets]]\n";
    for (policy, key, reason) in [
        (
            format!("{http}host = \"other.example.com\"\nfrom_env = \"X\"\n"),
            "network.secrets[0].host",
            "must be one of `network.http`",
        ),
        (
            format!("{http}host = \"api.example.com\"\n"),
            "network.secrets[0]",
            "exactly one of",
        ),
        (
            format!("{http}host = \"api.example.com\"\nfrom_env = \"TOOLHOST_TEST_NO_SUCH_VAR\"\n"),
            "network.secrets[0].from_env",
            "no environment variable",
        ),
        (
            format!("{http}host = \"api.example.com\"\nfrom_file = \"short\"\n"),
            "network.secrets[0].from_file",
            "shorter than 8 bytes",
        ),
        (
            format!(
                "{http}host = \"api.example.com\"\nfrom_file = \"short\"\nformat = \"Bearer\"\n"
            ),
            "network.secrets[0].format",
            "exactly once",
        ),
        (
            format!(
                "{http}host = \"api.example.com\"\nfrom_file = \"short\"\npath_prefix = \"api\"\n"
            ),
            "network.secrets[0].path_prefix",
            "must start with `/`",
        ),
    ] {
        let err = error(&policy);
        assert_eq!(err.key.as_deref(), Some(key), "{policy}: {err}");
        assert!(err.reason.contains(reason), "{policy}: {err}");
    }
}
