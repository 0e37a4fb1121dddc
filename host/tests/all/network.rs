//! Network capabilities against a local HTTP server on 127.0.0.1 that each
//! test starts: only granted destinations are reached (the server's request
//! log shows that nothing else was), redirects to other hosts are refused,
//! response size is capped, and raw sockets and name lookup are off unless
//! granted.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use toolhost::policy::Grants;
use toolhost::tool::{Part, ToolCall};
use toolhost::{CallError, Plugin, PluginOptions, ToolOutput};
use toolhost_test_plugins::{CAPS, HTTP};

use crate::caps::log_lines;
use crate::plugin_with;

/// What a test server answers to a request's head (and the port it listens
/// on): status line, extra header lines, body.
pub(crate) type Respond = fn(head: &str, port: u16) -> (&'static str, String, Vec<u8>);

/// A local HTTP/1.1 server on 127.0.0.1: it records the head of every request
/// it gets and answers with what its [`Respond`] makes of it.
pub(crate) struct Server {
    pub(crate) port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// The server of this module's tests ([`pages`]).
    async fn start() -> Self {
        Self::start_with(pages).await
    }

    pub(crate) async fn start_with(respond: Respond) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, port, respond, Arc::clone(&log)));
            }
        });
        Self { port, heads }
    }

    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// The heads of the requests it got, as received.
    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// The `Host` and path of each request it got.
    fn seen(&self) -> Vec<String> {
        self.heads()
            .iter()
            .map(|head| {
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let host = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("host: ")
                            .or_else(|| l.strip_prefix("Host: "))
                    })
                    .unwrap_or("");
                format!("{host}{path}")
            })
            .collect()
    }
}

async fn serve(
    mut stream: tokio::net::TcpStream,
    port: u16,
    respond: Respond,
    heads: Arc<Mutex<Vec<String>>>,
) {
    let mut head = Vec::new();
    let mut buf = [0_u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    heads.lock().unwrap().push(head.clone());
    let (status, extra, body) = respond(&head, port);
    let response = format!(
        "HTTP/1.1 {status}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.write_all(&body).await;
    let _ = stream.shutdown().await;
}

/// The pages of this module's tests.
fn pages(head: &str, port: u16) -> (&'static str, String, Vec<u8>) {
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    match path {
        "/hello" => (
            "200 OK",
            "content-type: text/plain\r\n".into(),
            b"hello from the test server".to_vec(),
        ),
        "/bytes" => (
            "200 OK",
            "content-type: application/octet-stream\r\n".into(),
            vec![0, 159, 146, 150, 255],
        ),
        "/headers" => {
            // The request's `x-` headers, one per line, as received.
            let lines: Vec<&str> = head
                .lines()
                .filter(|l| l.to_ascii_lowercase().starts_with("x-"))
                .collect();
            (
                "200 OK",
                "content-type: text/plain\r\n".into(),
                lines.join("\n").into_bytes(),
            )
        }
        "/redirect-in" => ("302 Found", "location: /hello\r\n".into(), Vec::new()),
        "/redirect-out" => (
            "302 Found",
            format!("location: http://localhost:{port}/secret\r\n"),
            Vec::new(),
        ),
        "/big" => (
            "200 OK",
            "content-type: text/plain\r\n".into(),
            vec![b'x'; 2 << 20],
        ),
        _ => ("404 Not Found", String::new(), b"no such page".to_vec()),
    }
}

fn granting(hosts: &[String]) -> PluginOptions {
    let mut grants = Grants::default();
    for host in hosts {
        grants.http(host.parse().unwrap());
    }
    let mut options = PluginOptions::default();
    options.grants(grants);
    options
}

async fn fetch(plugin: &Plugin, args: Value, id: &str) -> Result<ToolOutput, CallError> {
    plugin
        .invoke(ToolCall::new("http_fetch", args).with_call_id(id))
        .await
}

fn failure(result: Result<ToolOutput, CallError>) -> String {
    match result {
        Err(CallError::Failed { message, .. }) => message,
        other => panic!("expected the tool to fail, got {other:?}"),
    }
}

/// A guest that retries a refused request in a loop gets one warning per
/// call and capability, naming plugin, tool, interface and the grant that
/// would allow it: it cannot flood the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_logged_once_per_call_however_often_the_guest_retries() {
    crate::caps::logs();
    let mut options = PluginOptions::default();
    options.name("caps-refusal-flood");
    let caps = plugin_with(CAPS, &options).await;
    let flood = |call_id: &'static str| {
        let caps = caps.clone();
        async move {
            caps.invoke(
                ToolCall::new(
                    "tcp_connect",
                    json!({"addr": "127.0.0.1:9", "attempts": 2000}),
                )
                .with_call_id(call_id),
            )
            .await
        }
    };
    let err = failure(flood("refusal-flood-1").await);
    assert!(err.contains("access-denied"), "{err}");
    let warned: Vec<String> = log_lines("refusal-flood-1")
        .into_iter()
        .filter(|l| l.contains("WARN"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:#?}");
    let line = &warned[0];
    for part in [
        "refused a TCP socket",
        "plugin=caps-refusal-flood",
        "tool=tcp_connect",
        "interface=\"wasi:sockets/tcp-create-socket\"",
        "capability=tcp",
        "tcp = [",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    // Another call of the same plugin is warned about again, once.
    failure(flood("refusal-flood-2").await);
    let refused = |call_id| {
        log_lines(call_id)
            .into_iter()
            .filter(|l| l.contains("refused"))
            .count()
    };
    assert_eq!(refused("refusal-flood-2"), 1);
    // A name lookup is another capability, refused where it is tried.
    let err = failure(
        caps.invoke(
            ToolCall::new("resolve", json!({"host": "localhost"})).with_call_id("refusal-lookup"),
        )
        .await,
    );
    assert!(err.contains("resolve"), "{err}");
    let logged = log_lines("refusal-lookup");
    assert!(
        logged.len() == 1
            && logged[0].contains("name lookup")
            && logged[0].contains("name_lookup = true"),
        "{logged:#?}"
    );
    // A call that reaches for nothing logs nothing.
    caps.invoke(ToolCall::new("ok", json!({})).with_call_id("refusal-none"))
        .await
        .unwrap();
    assert_eq!(refused("refusal-none"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_fetches_from_a_granted_host() {
    let server = Server::start().await;
    let http = plugin_with(
        HTTP,
        &granting(&[format!("http://127.0.0.1:{}", server.port)]),
    )
    .await;
    let out = fetch(&http, json!({"url": server.url("/hello")}), "fetch-ok")
        .await
        .unwrap();
    let result = out.result.unwrap();
    assert_eq!(result["status"], 200);
    assert_eq!(result["body"], "hello from the test server");
    assert_eq!(result["headers"]["content-type"], "text/plain");
    let out = fetch(&http, json!({"url": server.url("/bytes")}), "fetch-bytes")
        .await
        .unwrap();
    assert_eq!(out.result.as_ref().unwrap()["body"], Value::Null);
    match out.parts.as_slice() {
        [
            Part::Blob {
                mime_type, data, ..
            },
        ] => {
            assert_eq!(mime_type, "application/octet-stream");
            assert_eq!(data, &[0, 159, 146, 150, 255]);
        }
        other => panic!("expected one binary part, got {other:?}"),
    }
    let out = fetch(&http, json!({"url": server.url("/missing")}), "fetch-404")
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["status"], 404);
    let out = fetch(
        &http,
        json!({"url": server.url("/redirect-in")}),
        "fetch-redirect-in",
    )
    .await
    .unwrap();
    let result = out.result.unwrap();
    assert_eq!(result["body"], "hello from the test server");
    assert_eq!(result["redirects"], json!([server.url("/redirect-in")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_headers_are_sent_in_order_and_nulls_are_defaults() {
    let server = Server::start().await;
    let http = plugin_with(
        HTTP,
        &granting(&[format!("http://127.0.0.1:{}", server.port)]),
    )
    .await;
    // Headers are a list of pairs (a name may repeat); every optional argument
    // may be `null`, meaning its default, as OpenAI's strict mode sends them.
    let args = json!({
        "url": server.url("/headers"),
        "headers": [
            {"name": "x-one", "value": "1"},
            {"name": "x-one", "value": "2"},
            {"name": "x-two", "value": "three"},
        ],
        "method": null,
        "body": null,
        "body_as": null,
        "follow_redirects": null,
        "max_redirects": null,
    });
    let out = fetch(&http, args, "fetch-headers").await.unwrap();
    let result = out.result.unwrap();
    assert_eq!(result["status"], 200, "{result}");
    assert_eq!(
        result["body"], "x-one: 1\nx-one: 2\nx-two: three",
        "{result}"
    );
    // The map shape of earlier versions is refused before the guest runs.
    let old = json!({"url": server.url("/headers"), "headers": {"x-one": "1"}});
    match fetch(&http, old, "fetch-map").await {
        Err(CallError::InvalidArguments { problems, .. }) => {
            assert!(
                problems.iter().any(|p| p.starts_with("/headers")),
                "{problems:?}"
            );
        }
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_to_a_host_not_granted_is_refused_before_any_connection() {
    crate::caps::logs();
    let server = Server::start().await;
    // Granted: 127.0.0.1 on this port. `localhost` is the same server under
    // another name, another port is another destination: both are refused.
    let http = plugin_with(
        HTTP,
        &granting(&[format!("http://127.0.0.1:{}", server.port)]),
    )
    .await;
    for (url, id) in [
        (
            format!("http://localhost:{}/secret", server.port),
            "deny-name",
        ),
        (
            format!("http://127.0.0.1:{}/secret", server.port + 1),
            "deny-port",
        ),
        (
            format!("https://127.0.0.1:{}/secret", server.port),
            "deny-scheme",
        ),
        (
            format!("http://user@127.0.0.1:{}/secret", server.port),
            "deny-userinfo",
        ),
    ] {
        let err = failure(fetch(&http, json!({"url": url}), id).await);
        assert!(err.contains("HttpRequestDenied"), "{url}: {err}");
        let logged = log_lines(id);
        assert!(
            logged
                .iter()
                .any(|l| l.contains("refused an HTTP request") && l.contains("plugin=http")),
            "{url}: {logged:#?}"
        );
    }
    // Without any grant, nothing goes out.
    let bare = plugin_with(HTTP, &PluginOptions::default()).await;
    let err = failure(fetch(&bare, json!({"url": server.url("/hello")}), "deny-bare").await);
    assert!(err.contains("HttpRequestDenied"), "{err}");
    assert_eq!(
        server.seen(),
        Vec::<String>::new(),
        "the server saw no request"
    );
    let ok = fetch(&http, json!({"url": server.url("/hello")}), "after-deny").await;
    assert!(ok.is_ok(), "the host keeps serving: {ok:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_host_not_granted_is_refused() {
    let server = Server::start().await;
    let http = plugin_with(
        HTTP,
        &granting(&[format!("http://127.0.0.1:{}", server.port)]),
    )
    .await;
    let err = failure(
        fetch(
            &http,
            json!({"url": server.url("/redirect-out")}),
            "redirect-out",
        )
        .await,
    );
    assert!(
        err.contains("HttpRequestDenied") && err.contains("localhost"),
        "{err}"
    );
    let seen = server.seen();
    assert_eq!(seen, [format!("127.0.0.1:{}/redirect-out", server.port)]);
    assert!(!seen.iter().any(|p| p.ends_with("/secret")), "{seen:?}");
    // Not following it returns the redirect itself.
    let out = fetch(
        &http,
        json!({"url": server.url("/redirect-out"), "follow_redirects": false}),
        "redirect-not-followed",
    )
    .await
    .unwrap();
    assert_eq!(out.result.unwrap()["status"], 302);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_larger_than_allowed_is_refused() {
    let server = Server::start().await;
    let mut options = granting(&[format!("http://127.0.0.1:{}", server.port)]);
    let mut grants = options.grants.as_ref().unwrap().clone();
    grants.max_response_bytes(1 << 20);
    options.grants(grants);
    let http = plugin_with(HTTP, &options).await;
    let err = failure(fetch(&http, json!({"url": server.url("/big")}), "too-big").await);
    assert!(err.contains("larger than the host allows"), "{err}");
    let ok = fetch(&http, json!({"url": server.url("/hello")}), "after-big").await;
    assert!(ok.is_ok(), "{ok:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_sockets_and_name_lookup_are_off_unless_granted() {
    crate::caps::logs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let caps = plugin_with(CAPS, &PluginOptions::default()).await;
    let call = |tool: &'static str, args: Value| {
        let caps = caps.clone();
        async move { caps.invoke(ToolCall::new(tool, args)).await }
    };
    let err = failure(call("tcp_connect", json!({"addr": addr})).await);
    assert!(err.contains("access-denied"), "{err}");
    let err = failure(call("resolve", json!({"host": "localhost"})).await);
    assert!(
        err.contains("resolve-addresses") || err.contains("resolve-next-address"),
        "{err}"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection reached the listener"
    );

    // Granted one address: that one connects, any other is refused and logged.
    let mut grants = Grants::default();
    grants.tcp(addr.parse().unwrap());
    let mut options = PluginOptions::default();
    options.grants(grants);
    let granted = plugin_with(CAPS, &options).await;
    let out = granted
        .invoke(ToolCall::new("tcp_connect", json!({"addr": addr})))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["connected"], addr);
    let mut accepted = false;
    for _ in 0..200 {
        if listener.accept().is_ok() {
            accepted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(accepted, "the granted connection reached the listener");
    let other = format!("127.0.0.1:{}", listener.local_addr().unwrap().port() + 1);
    let err = failure(
        granted
            .invoke(ToolCall::new("tcp_connect", json!({"addr": other})).with_call_id("tcp-other"))
            .await,
    );
    assert!(err.contains("access-denied"), "{err}");
    let logged = log_lines("tcp-other");
    assert!(
        logged
            .iter()
            .any(|l| l.contains("refused a TCP connection")),
        "{logged:#?}"
    );
}
