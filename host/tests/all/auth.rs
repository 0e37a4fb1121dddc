//! Authentication over streamable HTTP: an `Authenticator`'s principal is the
//! caller filters and tools see; a request it refuses never reaches MCP.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use toolhost::mcp::{AuthError, Authenticator, HttpOptions, McpServer};
use toolhost::toolset::{BoxFuture, Filter, Predicate, Principal, SinglePlugin, Started};
use toolhost::{CallError, Context, Prepared, Tool, ToolOutput, ToolSpec, Toolset};
use toolhost_test_plugins::ECHO;

use crate::plugin;

/// `x-user: NAME` is that user of `gateway`; `ana` is an admin. Without the
/// header the request is refused.
struct Gateway;

impl Authenticator for Gateway {
    fn authenticate<'a>(
        &'a self,
        headers: &'a http::HeaderMap,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let user = headers.get("x-user").and_then(|v| v.to_str().ok());
        let principal = match user {
            Some("ana") => Ok(Principal::new("gateway", "ana").with_roles(["admin"])),
            Some(user) => Ok(Principal::new("gateway", user)),
            None => Err(AuthError::Missing),
        };
        Box::pin(std::future::ready(principal))
    }
}

/// Says who called it, as its context tells.
pub(crate) struct Caller(pub(crate) ToolSpec);

impl Tool for Caller {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        _arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        let identity = cx.identity();
        let principal = identity.principal.as_deref();
        let result = json!({
            "issuer": principal.map(|p| p.issuer.clone()),
            "subject": principal.map(|p| p.subject.clone()),
            "roles": identity.roles.iter().collect::<Vec<_>>(),
        });
        let output = ToolOutput {
            result: Some(result),
            ..ToolOutput::default()
        };
        Box::pin(std::future::ready(Ok(Started::Output(output))))
    }
}

/// The echo plugin's tools and `caller`.
pub(crate) struct Tools {
    pub(crate) echo: SinglePlugin,
    pub(crate) caller: Arc<dyn Tool>,
}

impl Toolset for Tools {
    fn name(&self) -> &str {
        "tools"
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.echo.tools(cx);
        tools.push(Arc::clone(&self.caller));
        tools
    }
}

/// One MCP 2026-07-28 request (sessionless) as `user`: the HTTP status and
/// the JSON-RPC answer (`Null` when refused).
pub(crate) async fn request(
    port: u16,
    user: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let headers: Vec<(&str, &str)> = user.map(|user| ("x-user", user)).into_iter().collect();
    let (status, _, answer) = request_with(port, &headers, method, params).await;
    (status, answer)
}

/// As [`request`], with these extra headers; also the response's headers.
pub(crate) async fn request_with(
    port: u16,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> (u16, http::HeaderMap, Value) {
    let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut params = params;
    // The revision's own `_meta` keys, beside any the caller gave.
    let mut meta = params["_meta"].as_object().cloned().unwrap_or_default();
    meta.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        json!("2026-07-28"),
    );
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    params["_meta"] = Value::Object(meta);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut builder = hyper::Request::post("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        builder = builder.header("mcp-name", name);
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    // An SSE stream of one event (`data: {...}`), or a JSON body.
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(&text);
    (
        status,
        headers,
        serde_json::from_str(json).unwrap_or(Value::Null),
    )
}

fn names(listed: &Value) -> Vec<String> {
    let mut names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a listing: {listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_authenticated_principal_is_the_caller_filters_and_tools_see() {
    let caller = Caller(ToolSpec::new(
        "caller",
        "Who called.",
        json!({"type": "object"}),
    ));
    let tools = Tools {
        echo: SinglePlugin::new(plugin(ECHO).await),
        caller: Arc::new(caller),
    };
    // Everyone sees `caller`; the echo plugin's tools only admins.
    let set = Filter::new(
        tools,
        Predicate::allow(["caller"]).or(Predicate::role("admin")),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut options = HttpOptions::default();
    options.authenticator(Gateway);
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(
        McpServer::new(set).serve_http(listener, options, async move {
            stopped.cancelled().await;
        }),
    );

    let (status, refused) = request(port, None, "tools/list", json!({})).await;
    assert_eq!(status, 401, "{refused}");

    let (status, listed) = request(port, Some("bo"), "tools/list", json!({})).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(names(&listed), ["caller"]);
    let (_, listed) = request(port, Some("ana"), "tools/list", json!({})).await;
    let admin = names(&listed);
    assert!(
        admin.len() > 1 && admin.contains(&"caller".to_owned()),
        "{admin:?}"
    );

    let call = json!({"name": "caller", "arguments": {}});
    let (_, answer) = request(port, Some("ana"), "tools/call", call.clone()).await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"issuer": "gateway", "subject": "ana", "roles": ["admin"]}),
        "{answer}"
    );
    let (_, answer) = request(port, Some("bo"), "tools/call", call).await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"issuer": "gateway", "subject": "bo", "roles": []}),
        "{answer}"
    );
    // A tool hidden from this caller is not there to call.
    let hidden = json!({"name": admin.iter().find(|n| *n != "caller").unwrap(), "arguments": {}});
    let (_, answer) = request(port, Some("bo"), "tools/call", hidden).await;
    assert!(answer["error"].is_object(), "{answer}");

    stop.cancel();
    serving.await.unwrap().unwrap();
}
