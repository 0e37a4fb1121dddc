//! The MCP HTTP server as an OAuth 2.1 resource server, against a real
//! issuer on loopback: discovered metadata, a JWKS, real ES256-signed JWTs.
//! Every way a token can be wrong is refused with the challenge the MCP
//! authorization specification asks for; trouble at the issuer's JWKS never
//! stops the server answering, and cached keys keep working.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::McpServer;
use toolhost::mcp::{HttpOptions, OAuth, OAuthOptions};
use toolhost::toolset::SinglePlugin;
use toolhost::{Tool, ToolSpec};
use toolhost_test_plugins::ECHO;

use crate::auth::{Caller, Tools, request_with};
use crate::plugin;

/// An ES256 signing key and its public JWK.
struct Key {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl Key {
    fn new(kid: &str) -> Self {
        let secret = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let pem = secret.to_pkcs8_pem(Default::default()).unwrap();
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let point = secret.public_key().to_encoded_point(false);
        let coordinate = |c: Option<&p256::FieldBytes>| URL_SAFE_NO_PAD.encode(c.unwrap());
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": coordinate(point.x()),
            "y": coordinate(point.y()),
            "kid": kid,
            "alg": "ES256",
            "use": "sig",
        });
        Self {
            kid: kid.to_owned(),
            encoding,
            jwk,
        }
    }

    /// A token of these claims, signed by this key, naming `kid`.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// How the issuer's JWKS endpoint behaves.
const NORMAL: u8 = 0;
const DOWN: u8 = 1;
const SLOW: u8 = 2;
const HUGE: u8 = 3;

/// An authorization server's public side on loopback: RFC 8414 metadata
/// and a JWKS, whose behaviour a test switches, counting its fetches.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    mode: Arc<AtomicU8>,
    fetches: Arc<AtomicU64>,
    stop: CancellationToken,
}

impl Issuer {
    async fn start(keys: &[&Key]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let published = Arc::new(Mutex::new(
            keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>(),
        ));
        let mode = Arc::new(AtomicU8::new(NORMAL));
        let fetches = Arc::new(AtomicU64::new(0));
        let metadata = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/jwks"),
            "authorization_endpoint": format!("{url}/authorize"),
            "token_endpoint": format!("{url}/token"),
            "response_types_supported": ["code"],
        })
        .to_string();
        let jwks = {
            let (published, mode, fetches) = (published.clone(), mode.clone(), fetches.clone());
            move || {
                let (published, mode, fetches) = (published.clone(), mode.clone(), fetches.clone());
                async move {
                    use axum::http::StatusCode;
                    fetches.fetch_add(1, Ordering::SeqCst);
                    match mode.load(Ordering::SeqCst) {
                        DOWN => (StatusCode::INTERNAL_SERVER_ERROR, "down".to_owned()),
                        SLOW => {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                            (StatusCode::OK, "{}".to_owned())
                        }
                        HUGE => {
                            let padding = "x".repeat(2 << 20);
                            let keys = published.lock().unwrap().clone();
                            let body = json!({"keys": keys, "padding": padding});
                            (StatusCode::OK, body.to_string())
                        }
                        _ => {
                            let keys = published.lock().unwrap().clone();
                            (StatusCode::OK, json!({"keys": keys}).to_string())
                        }
                    }
                }
            }
        };
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || std::future::ready(metadata.clone())),
            )
            .route("/jwks", axum::routing::get(jwks));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await
                .unwrap();
        });
        Self {
            url,
            keys: published,
            mode,
            fetches,
            stop,
        }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A running MCP server with `oauth`, and its resource URI.
struct Server {
    port: u16,
    resource: String,
    stop: CancellationToken,
}

impl Server {
    /// Serves the echo plugin and `caller`, authenticated by OAuth with the
    /// options `configure` adds for `resource` (`http://127.0.0.1:PORT/mcp`).
    async fn start(configure: impl FnOnce(&mut OAuthOptions)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let mut options = OAuthOptions::new(&resource);
        configure(&mut options);
        let oauth = OAuth::new(options).unwrap();
        let tools = Tools {
            echo: SinglePlugin::new(plugin(ECHO).await),
            caller: Arc::new(Caller(ToolSpec::new(
                "caller",
                "Who called.",
                json!({"type": "object"}),
            ))) as Arc<dyn Tool>,
        };
        let mut http = HttpOptions::default();
        http.authenticator(oauth);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(
            McpServer::new(tools).serve_http(listener, http, async move {
                stopped.cancelled().await;
            }),
        );
        Self {
            port,
            resource,
            stop,
        }
    }

    /// `tools/call caller` with `Authorization: Bearer <token>`: the status,
    /// the `WWW-Authenticate` header and the answer.
    async fn call(&self, token: Option<&str>) -> (u16, String, Value) {
        let bearer = token.map(|token| format!("Bearer {token}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|value| ("authorization", value))
            .into_iter()
            .collect();
        let call = json!({"name": "caller", "arguments": {}});
        let (status, headers, answer) = request_with(self.port, &headers, "tools/call", call).await;
        let challenge = headers
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, challenge, answer)
    }

    /// A GET of `path` with these headers: the status and the body.
    async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let client = reqwest::Client::new();
        let mut request = client.get(format!("http://127.0.0.1:{}{path}", self.port));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// Claims of a good token of `issuer` for `resource`.
fn claims(issuer: &str, resource: &str) -> Value {
    json!({
        "iss": issuer,
        "sub": "ana",
        "aud": resource,
        "exp": now() + 600,
        "iat": now(),
        "nbf": now() - 5,
        "scope": "mcp:tools tools:read",
        "groups": ["staff", "fs-writers"],
    })
}

/// `claims` with `changes` merged in (`null` removes a claim).
fn with(mut claims: Value, changes: Value) -> Value {
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

/// A JWT of `header` and `claims` with `signature` (base64url parts).
fn forge(header: &Value, claims: &Value, signature: &[u8]) -> String {
    let part = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
    format!(
        "{}.{}.{}",
        part(header),
        part(claims),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

#[tokio::test]
async fn tokens_from_a_trusted_issuer_for_this_resource_are_the_only_ones_accepted() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let server = Server::start(|options| {
        options
            .issuer(&issuer.url)
            .require_scopes(["mcp:tools"])
            .scopes_supported(["mcp:tools", "tools:read"])
            .roles_claim("groups");
    })
    .await;
    let good = claims(&issuer.url, &server.resource);
    let metadata_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        server.port
    );

    // The protected resource metadata (RFC 9728), at both paths, no token.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, body) = server.get(path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        let document: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(document["resource"], server.resource.as_str());
        assert_eq!(document["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            document["scopes_supported"],
            json!(["mcp:tools", "tools:read"])
        );
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }

    // No token: 401, pointing at the metadata, naming the scope, no error code.
    let (status, challenge, _) = server.call(None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\"")
    );
    assert_eq!(
        issuer.fetches(),
        0,
        "a request without a token fetches nothing"
    );

    // A good token: the caller is its issuer and subject, with its roles.
    let (status, _, answer) = server.call(Some(&key.sign(&good))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"issuer": issuer.url, "subject": "ana", "roles": ["fs-writers", "staff"]}),
        "{answer}"
    );

    // Every way a token can be wrong: 401 `invalid_token`, saying why.
    let other = Key::new("k1");
    let mut hs256 = Header::new(Algorithm::HS256);
    hs256.kid = Some("k1".into());
    let confused = jsonwebtoken::encode(
        &hs256,
        &good,
        &EncodingKey::from_secret(key.jwk.to_string().as_bytes()).unwrap(),
    )
    .unwrap();
    let unsigned = forge(&json!({"alg": "none", "typ": "JWT"}), &good, b"");
    let relabelled = {
        // A good token's signature under claims it did not sign.
        let token = key.sign(&good);
        let signature = token.rsplit('.').next().unwrap().to_owned();
        let header = json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
        let forged = forge(&header, &with(good.clone(), json!({"sub": "root"})), b"");
        format!("{forged}{signature}")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            key.sign(&with(good.clone(), json!({"exp": now() - 3600}))),
            "expired",
        ),
        (
            "not yet valid",
            key.sign(&with(good.clone(), json!({"nbf": now() + 3600}))),
            "not valid yet",
        ),
        (
            "another resource",
            key.sign(&with(
                good.clone(),
                json!({"aud": format!("http://127.0.0.1:{}/other", server.port)}),
            )),
            "another resource",
        ),
        (
            "an API's audience",
            key.sign(&with(
                good.clone(),
                json!({"aud": "https://api.example.com"}),
            )),
            "another resource",
        ),
        (
            "no audience",
            key.sign(&with(good.clone(), json!({"aud": null}))),
            "required claim",
        ),
        (
            "untrusted issuer",
            key.sign(&with(
                good.clone(),
                json!({"iss": "https://evil.example.com"}),
            )),
            "not trusted",
        ),
        ("another key, same kid", other.sign(&good), "signature"),
        ("unknown kid", key.sign_as("k9", &good), "signing key"),
        ("alg none", unsigned, "not a JWT"),
        ("HS256 with the public key", confused, "algorithm"),
        ("claims changed", relabelled, "signature"),
        (
            "no subject",
            key.sign(&with(good.clone(), json!({"sub": null}))),
            "required claim",
        ),
        ("junk", "not.a.token".to_owned(), "not a JWT"),
        ("huge", "x".repeat(20_000), "too long"),
    ];
    for (what, token, reason) in &cases {
        let (status, challenge, answer) = server.call(Some(token)).await;
        assert_eq!(status, 401, "{what}: {answer}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\"")
                && challenge.contains(reason)
                && challenge.ends_with(&format!(
                    "scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\""
                )),
            "{what}: {challenge}"
        );
    }

    // Valid, but without the scope every request needs: 403, naming it.
    let narrow = key.sign(&with(good.clone(), json!({"scope": "tools:read"})));
    let (status, challenge, _) = server.call(Some(&narrow)).await;
    assert_eq!(status, 403);
    assert_eq!(
        challenge,
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\""
        )
    );

    // The server still serves good tokens, and counted the refusals.
    let token = key.sign(&good);
    let (status, _, _) = server.call(Some(&token)).await;
    assert_eq!(status, 200);
    let (status, metrics) = server.get("/metrics", Some(&token)).await;
    assert_eq!(status, 200);
    let count = |reason: &str| -> u64 {
        let series = format!("toolhost_auth_refusals_total{{reason=\"{reason}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    assert_eq!(count("invalid_token"), cases.len() as u64, "{metrics}");
    assert_eq!(count("insufficient_scope"), 1);
    assert_eq!(count("missing"), 1);
    assert_eq!(server.get("/metrics", None).await.0, 401);
    // Discovery found the JWKS once; unknown kids fetched no more than
    // the refresh interval (10 s) allows.
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn trouble_at_the_jwks_never_stops_the_server_and_cached_keys_keep_working() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let server = Server::start(|options| {
        options
            .issuer_with_jwks(&issuer.url, format!("{}/jwks", issuer.url))
            // Always stale: every call asks for a (background) refresh, at
            // most one a second.
            .jwks_cache(Duration::ZERO)
            .jwks_min_refresh(Duration::from_secs(1))
            .fetch_timeout(Duration::from_millis(500));
    })
    .await;
    let good = claims(&issuer.url, &server.resource);
    let (status, _, answer) = server.call(Some(&key.sign(&good))).await;
    assert_eq!(status, 200, "{answer}");

    for mode in [DOWN, SLOW, HUGE] {
        issuer.set(mode);
        let before = issuer.fetches();
        // Cached keys serve on, without waiting for the refresh they start.
        for _ in 0..3 {
            let (status, _, answer) = server.call(Some(&key.sign(&good))).await;
            assert_eq!(status, 200, "mode {mode}: {answer}");
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
        assert!(
            issuer.fetches() > before,
            "mode {mode}: refreshes were tried"
        );
        // A key the cache lacks cannot be had: refused, and promptly.
        let (status, _, _) = server.call(Some(&key.sign_as("k2", &good))).await;
        assert!(status == 401, "mode {mode}: {status}");
    }

    // A rotation: the issuer publishes a new key; a token naming it makes
    // the server fetch the keys again, and it is accepted.
    issuer.set(NORMAL);
    let rotated = Key::new("k2");
    issuer.keys.lock().unwrap().push(rotated.jwk.clone());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, _, answer) = server.call(Some(&rotated.sign(&good))).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn a_server_that_never_got_the_keys_refuses_with_503_and_stays_up() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    issuer.set(DOWN);
    let server = Server::start(|options| {
        options
            .issuer(&issuer.url)
            .jwks_min_refresh(Duration::from_secs(3600))
            .fetch_timeout(Duration::from_millis(500));
    })
    .await;
    let token = key.sign(&claims(&issuer.url, &server.resource));
    let (status, _, _) = server.call(Some(&token)).await;
    assert_eq!(status, 503, "cannot check tokens now");
    assert_eq!(issuer.fetches(), 1);
    // Many more requests: answered, without asking the issuer again.
    for _ in 0..20 {
        assert_eq!(server.call(Some(&token)).await.0, 503);
    }
    assert_eq!(
        issuer.fetches(),
        1,
        "at most one fetch per refresh interval"
    );
    assert_eq!(server.get("/healthz", None).await.0, 200);

    // Slow and huge answers are cut off the same way.
    for mode in [SLOW, HUGE] {
        let issuer = Issuer::start(&[&key]).await;
        issuer.set(mode);
        let server = Server::start(|options| {
            options
                .issuer_with_jwks(&issuer.url, format!("{}/jwks", issuer.url))
                .fetch_timeout(Duration::from_millis(500));
        })
        .await;
        let token = key.sign(&claims(&issuer.url, &server.resource));
        let (status, _, _) = server.call(Some(&token)).await;
        assert_eq!(status, 503, "mode {mode}");
    }
}

/// Serves `set`, authenticated by `issuer`'s tokens (roles from `groups`).
async fn serve_set(issuer: &Issuer, set: impl toolhost::Toolset + 'static) -> Server {
    serve_observed(issuer, set, None).await
}

/// As [`serve_set`], with `observer` watching every call.
async fn serve_observed(
    issuer: &Issuer,
    set: impl toolhost::Toolset + 'static,
    observer: Option<Arc<dyn toolhost::toolset::CallObserver>>,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let mut options = OAuthOptions::new(&resource);
    options.issuer(&issuer.url).roles_claim("groups");
    let mut http = HttpOptions::default();
    http.authenticator(OAuth::new(options).unwrap());
    let mut server = McpServer::new(set);
    if let Some(observer) = observer {
        server = server.with_observer(observer);
    }
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(server.serve_http(listener, http, async move {
        stopped.cancelled().await;
    }));
    Server {
        port,
        resource,
        stop,
    }
}

impl Server {
    /// `method` with `params` as the holder of `token`: the status and answer.
    async fn ask(&self, token: &str, method: &str, params: Value) -> (u16, Value) {
        let bearer = format!("Bearer {token}");
        let (status, _, answer) =
            request_with(self.port, &[("authorization", &bearer)], method, params).await;
        (status, answer)
    }

    /// The names `tools/list` shows the holder of `token`, and which of
    /// them say they are read-only.
    async fn listed(&self, token: &str) -> (Vec<String>, Vec<String>) {
        let (status, answer) = self.ask(token, "tools/list", json!({})).await;
        assert_eq!(status, 200, "{answer}");
        let tools = answer["result"]["tools"].as_array().unwrap().clone();
        let name = |t: &Value| t["name"].as_str().unwrap().to_owned();
        let mut all: Vec<String> = tools.iter().map(name).collect();
        let mut read_only: Vec<String> = tools
            .iter()
            .filter(|t| t["annotations"]["readOnlyHint"] == json!(true))
            .map(name)
            .collect();
        all.sort();
        read_only.sort();
        (all, read_only)
    }
}

#[tokio::test]
async fn access_rules_give_each_principal_its_own_tools_and_refuse_the_rest() {
    use toolhost::toolset::PluginSet;
    use toolhost_test_plugins::CALC;

    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let config = toolhost::Config::parse(
        r#"
        [[access]]
        name = "readers"
        scopes = ["tools:read"]
        allow = ["*"]
        read_only = true

        [[access]]
        name = "staff"
        roles = ["staff"]
        allow = ["echo.*"]
        confirm_destructive = true

        [[access]]
        name = "admins"
        subjects = ["root", "ops"]
        allow = ["*"]
        "#,
        std::path::Path::new("toolhost.toml"),
    )
    .unwrap();
    let plugins = PluginSet::from_plugins(vec![plugin(CALC).await, plugin(ECHO).await]);
    let set = config.layered(plugins).unwrap();
    let server = serve_set(&issuer, set).await;
    let token = |sub: &str, scope: &str, groups: Value| {
        let base = claims(&issuer.url, &server.resource);
        key.sign(&with(
            base,
            json!({"sub": sub, "scope": scope, "groups": groups}),
        ))
    };
    let root = token("root", "", json!([]));
    let reader = token("rita", "tools:read", json!([]));
    let staff = token("sam", "", json!(["staff"]));
    let nobody = token("nina", "other", json!(["guests"]));

    let (everything, read_only) = server.listed(&root).await;
    assert!(
        !read_only.is_empty() && read_only.len() < everything.len(),
        "{everything:?}"
    );
    // Readers see the read-only tools; staff the echo plugin's (none
    // read-only); someone no rule is for sees nothing.
    assert_eq!(server.listed(&reader).await.0, read_only);
    let (staffs, staff_read_only) = server.listed(&staff).await;
    assert!(
        !staffs.is_empty() && staff_read_only.is_empty(),
        "{staffs:?}"
    );
    assert!(staffs.iter().all(|name| !read_only.contains(name)));
    assert_eq!(server.listed(&nobody).await.0, Vec::<String>::new());

    // A call outside the caller's rights is refused as forbidden, before its
    // arguments are looked at (these are wrong for the tool).
    let echo = json!({"name": "echo", "arguments": {"no such argument": 1}});
    let (_, refused) = server.ask(&reader, "tools/call", echo.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "forbidden", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`echo` is not permitted for `rita`"),
        "{message}"
    );
    // A name no tool has is still unknown, not forbidden.
    let (_, unknown) = server
        .ask(
            &reader,
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        )
        .await;
    assert!(unknown["error"]["data"].is_null(), "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no tool named"),
        "{unknown}"
    );

    // The same tool: root runs it at once; staff must have it approved
    // (this client cannot be asked, so it is not run).
    let echo = json!({"name": "echo", "arguments": {"message": "hi"}});
    let (_, ran) = server.ask(&root, "tools/call", echo.clone()).await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    let (_, asked) = server.ask(&staff, "tools/call", echo).await;
    assert_eq!(asked["result"]["isError"], true, "{asked}");
    assert!(asked.to_string().contains("needs confirmation"), "{asked}");

    // Two callers naming the same invocation get their own.
    let whoami = json!({
        "name": "whoami",
        "arguments": {},
        "_meta": {"dev.toolhost/invocation": "shared-name"},
    });
    let (_, a) = server.ask(&root, "tools/call", whoami.clone()).await;
    let ops = token("ops", "", json!([]));
    let (_, b) = server.ask(&ops, "tools/call", whoami).await;
    let invocation = |v: &Value| v["result"]["structuredContent"]["invocation_id"].clone();
    assert!(
        invocation(&a).is_string() && invocation(&b).is_string(),
        "{a} {b}"
    );
    assert_ne!(invocation(&a), invocation(&b), "{a} {b}");

    // Forbidden calls are counted.
    let (_, metrics) = server.get("/metrics", Some(&root)).await;
    assert!(
        metrics.contains("toolhost_tool_errors_total{tool=\"echo\",kind=\"forbidden\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn every_call_leaves_one_audit_record_saying_who_what_and_how_it_ended() {
    use toolhost::audit::{AuditLog, AuditOptions};
    use toolhost::toolset::PluginSet;

    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let mut options = AuditOptions::default();
    options.file(&file).arguments(true).replica("replica-7");
    let audit = Arc::new(AuditLog::open(&options).unwrap());
    let config = toolhost::Config::parse(
        r#"
        [[access]]
        name = "readers"
        scopes = ["tools:read"]
        allow = ["*"]
        read_only = true

        [[access]]
        name = "admins"
        subjects = ["root"]
        allow = ["*"]
        "#,
        std::path::Path::new("toolhost.toml"),
    )
    .unwrap();
    let set = config
        .layered(PluginSet::from_plugins(vec![plugin(ECHO).await]))
        .unwrap();
    let server = serve_observed(&issuer, set, Some(audit.clone() as _)).await;
    let token = |sub: &str, scope: &str| {
        let base = claims(&issuer.url, &server.resource);
        key.sign(&with(base, json!({"sub": sub, "scope": scope})))
    };
    let (root, reader) = (token("root", ""), token("rita", "tools:read"));
    let echo = |arguments: Value| json!({"name": "echo", "arguments": arguments});
    server
        .ask(&root, "tools/call", echo(json!({"message": "hi"})))
        .await;
    server
        .ask(&reader, "tools/call", echo(json!({"message": "hi"})))
        .await;
    server
        .ask(&root, "tools/call", echo(json!({"message": 7})))
        .await;
    // Listings and unknown names are not calls: no record.
    server.ask(&root, "tools/list", json!({})).await;

    let mut records: Vec<Value> = Vec::new();
    for _ in 0..500 {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        records = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if records.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(records.len(), 3, "{records:#?}");
    let [ran, refused, invalid] = [&records[0], &records[1], &records[2]];
    for record in [ran, refused, invalid] {
        assert_eq!(record["replica"], "replica-7");
        assert_eq!(record["tool"], "echo.echo");
        assert!(record["time"].as_str().unwrap().ends_with('Z'), "{record}");
        assert!(record["call_id"].as_str().unwrap().starts_with("mcp-http-"));
        assert_eq!(record["principal"]["issuer"], issuer.url.as_str());
    }
    assert_eq!(ran["principal"]["subject"], "root");
    assert_eq!(
        (&ran["decision"], &ran["outcome"]),
        (&json!("allowed"), &json!("ok"))
    );
    assert!(ran["fuel"].as_u64().unwrap() > 0 && ran["duration_ms"].as_f64().is_some());
    assert_eq!(ran["arguments"], json!({"message": "hi"}));
    assert_eq!(ran["arguments_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(refused["principal"]["subject"], "rita");
    assert_eq!(
        (&refused["decision"], &refused["outcome"]),
        (&json!("refused"), &json!("forbidden"))
    );
    assert!(refused["arguments"].is_null(), "never read: {refused}");
    assert_eq!(invalid["outcome"], "invalid_arguments");
    assert!(
        invalid["error"].as_str().unwrap().contains("message"),
        "{invalid}"
    );
    assert_eq!(audit.dropped(), 0);
}

/// A tool sees who calls it (contract `@0.3.0`): the token's issuer, subject
/// and scopes, and only the claims its plugin's grants name; never the token.
#[tokio::test]
async fn a_tool_sees_its_caller_and_never_the_token() {
    use toolhost::PluginOptions;
    use toolhost::policy::Grants;

    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let mut grants = Grants::default();
    grants.caller_claim("email").caller_claim("tenant");
    let mut options = PluginOptions::default();
    options.grants(grants);
    let echo = crate::plugin_with(ECHO, &options).await;
    let server = serve_set(&issuer, SinglePlugin::new(echo)).await;
    let token = key.sign(&with(
        claims(&issuer.url, &server.resource),
        json!({"email": "ana@example.com", "secret_flag": true}),
    ));
    let whoami = json!({"name": "whoami", "arguments": {}});
    let (status, answer) = server.ask(&token, "tools/call", whoami).await;
    assert_eq!(status, 200, "{answer}");
    let caller = &answer["result"]["structuredContent"]["caller"];
    assert_eq!(
        *caller,
        json!({
            "issuer": issuer.url,
            "subject": "ana",
            "scopes": ["mcp:tools", "tools:read"],
            // `tenant` is granted but the token has none; `groups` and
            // `secret_flag` are the token's but not granted.
            "claims": {"email": "ana@example.com"},
        }),
        "{answer}"
    );
    let text = answer.to_string();
    for never in [
        &token[..],
        token.split('.').nth(2).unwrap(),
        "secret_flag",
        "fs-writers",
    ] {
        assert!(!text.contains(never), "{never} reached the tool: {text}");
    }
}
