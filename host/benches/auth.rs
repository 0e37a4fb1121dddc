//! What authorization costs per call, in one run, as ratios to the shared
//! static token:
//!
//! - the check alone: `Authenticator::authenticate` of a static token, and of
//!   an OAuth JWT (ES256, keys cached from the issuer's JWKS): a token
//!   verified before (what every request after a client's first costs), and
//!   a token's first use (the signature, claims and scope checks);
//! - a whole MCP `tools/call` over HTTP (2026-07-28, one kept-alive
//!   connection, the echo plugin's `add`) against three in-process servers
//!   with the configuration's layers: the static token; OAuth; OAuth with
//!   three `[[access]]` rules (the policy checks of the lookup, and the
//!   listing they filter). Interleaved, so drift in machine load hits all.
//!
//! ES256 is the costlier common signature to verify (RS256, Keycloak's and
//! Entra ID's default, verifies faster).
//!
//! Run: `cargo xtask bench auth` (or `cargo bench -p toolhost --bench auth`;
//! `BENCH_ITERS` sets the count).

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolhost::mcp::{Authenticator, HttpOptions, OAuth, OAuthOptions, StaticToken};
use toolhost::toolset::SinglePlugin;
use toolhost::{Config, Engine, EngineConfig, McpServer, Plugin, PluginOptions};

#[path = "support/report.rs"]
mod report;
#[path = "support/stats.rs"]
mod stats;
use stats::{Stats, stats};

/// An ES256 key: the signer, and its JWKS.
struct Key {
    encoding: EncodingKey,
    jwks: String,
}

impl Key {
    fn new() -> Result<Self> {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let secret = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let pem = secret.to_pkcs8_pem(Default::default())?;
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes())?;
        let point = secret.public_key().to_encoded_point(false);
        let coordinate = |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c));
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256", "use": "sig",
            "x": coordinate(point.x()), "y": coordinate(point.y()),
        });
        Ok(Self {
            encoding,
            jwks: json!({ "keys": [jwk] }).to_string(),
        })
    }

    fn token(&self, issuer: &str, resource: &str) -> Result<String> {
        self.token_numbered(issuer, resource, 0)
    }

    /// A token of its own (`jti`), so it is verified, not found verified.
    fn token_numbered(&self, issuer: &str, resource: &str, n: usize) -> Result<String> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
        let claims = json!({
            "iss": issuer, "sub": "bench", "aud": resource, "jti": n,
            "iat": now.as_secs(), "exp": now.as_secs() + 3600,
            "scope": "mcp:tools tools:read", "groups": ["staff"],
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("bench".into());
        Ok(jsonwebtoken::encode(&header, &claims, &self.encoding)?)
    }
}

/// The issuer's JWKS on loopback; its URL.
async fn issuer(jwks: String) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || std::future::ready(jwks.clone())),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The OAuth options every OAuth server here uses.
fn oauth(resource: &str, issuer: &str) -> Result<OAuth> {
    let mut options = OAuthOptions::new(resource);
    options
        .issuer_with_jwks(issuer, format!("{issuer}/jwks"))
        .require_scopes(["mcp:tools"])
        .roles_claim("groups");
    Ok(OAuth::new(options)?)
}

const RULES: &str = r#"
[[access]]
name = "readers"
scopes = ["tools:read"]
allow = ["*"]
read_only = true

[[access]]
name = "staff"
roles = ["staff"]
allow = ["echo.*", "add"]

[[access]]
name = "admins"
subjects = ["root"]
allow = ["*"]
"#;

/// A server of the echo plugin under `config`'s layers; its port.
async fn serve(
    plugin: &Plugin,
    config: &str,
    authenticator: impl FnOnce(&str) -> Result<Box<dyn FnOnce(&mut HttpOptions)>>,
    stop: &CancellationToken,
) -> Result<(u16, String)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = Config::parse(config, std::path::Path::new("toolhost.toml"))?;
    let set = config.layered(SinglePlugin::new(plugin.clone()))?;
    let mut options = HttpOptions::default();
    authenticator(&resource)?(&mut options);
    let stopped = stop.clone();
    tokio::spawn(
        McpServer::new(set).serve_http(listener, options, async move {
            stopped.cancelled().await;
        }),
    );
    Ok((port, resource))
}

/// A kept-alive HTTP/1.1 connection to one server, calling `add`.
struct Client {
    port: u16,
    bearer: String,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(port: u16, token: &str) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Self {
            port,
            bearer: format!("Bearer {token}"),
            sender,
        })
    }

    async fn call(&mut self) -> Result<Duration> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "add", "arguments": {"a": 1, "b": 2},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        });
        let request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "add")
            .header("authorization", &self.bearer)
            .body(Full::new(Bytes::from(body.to_string())))?;
        let start = Instant::now();
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let took = start.elapsed();
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() || !text.contains("\"structuredContent\":{\"result\":3}") {
            bail!("unexpected answer ({status}): {text}");
        }
        Ok(took)
    }
}

/// The time of one `authenticate` of `token`, `n` times.
async fn checks(authenticator: &dyn Authenticator, token: &str, n: usize) -> Result<Stats> {
    let tokens = vec![token.to_owned(); n];
    each_check(authenticator, &tokens).await
}

/// The time of one `authenticate` of each of `tokens`.
async fn each_check(authenticator: &dyn Authenticator, tokens: &[String]) -> Result<Stats> {
    let mut samples = Vec::with_capacity(tokens.len());
    for token in tokens {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse()?,
        );
        let start = Instant::now();
        let principal = authenticator.authenticate(&headers).await;
        samples.push(start.elapsed());
        principal.map_err(|err| anyhow::anyhow!("refused: {err}"))?;
    }
    Ok(stats(samples))
}

#[tokio::main]
async fn main() -> Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let key = Key::new()?;
    let issuer = issuer(key.jwks.clone()).await?;

    // The check alone.
    let static_token = StaticToken::new("a-shared-secret-of-32-characters");
    let resource = "http://127.0.0.1:1/mcp";
    let jwt = key.token(&issuer, resource)?;
    let oauth_only = oauth(resource, &issuer)?;
    // Warm: the first check fetches the keys.
    checks(&oauth_only, &jwt, 1)
        .await
        .context("warming the JWKS cache")?;
    println!(
        "authorization, the check alone ({} checks each):",
        iters * 5
    );
    let fresh: Vec<String> = (1..=iters)
        .map(|n| key.token_numbered(&issuer, resource, n))
        .collect::<Result<_>>()?;
    let base = checks(&static_token, "a-shared-secret-of-32-characters", iters * 5).await?;
    let jwt_check = checks(&oauth_only, &jwt, iters * 5).await?;
    let first = each_check(&oauth_only, &fresh).await?;
    report::line("static token", 28, &base, &base);
    report::line("OAuth JWT, verified before", 28, &jwt_check, &base);
    report::line("OAuth JWT, first use (ES256)", 28, &first, &base);

    // Whole calls.
    let engine = Engine::new(&EngineConfig::default())?;
    let plugin = Plugin::load(
        &engine,
        toolhost_test_plugins::ECHO,
        &PluginOptions::default(),
    )
    .await?;
    let stop = CancellationToken::new();
    let (static_port, _) = serve(
        &plugin,
        "",
        |_| {
            Ok(Box::new(|o: &mut HttpOptions| {
                o.bearer_token("a-shared-secret-of-32-characters");
            }))
        },
        &stop,
    )
    .await?;
    let oauth_server = |config: &'static str| {
        let issuer = issuer.clone();
        let plugin = plugin.clone();
        let stop = stop.clone();
        async move {
            serve(
                &plugin,
                config,
                move |resource| {
                    let oauth = oauth(resource, &issuer)?;
                    Ok(Box::new(move |o: &mut HttpOptions| {
                        o.authenticator(oauth);
                    }))
                },
                &stop,
            )
            .await
        }
    };
    let (oauth_port, oauth_resource) = oauth_server("").await?;
    let (rules_port, rules_resource) = oauth_server(RULES).await?;
    let mut clients = [
        Client::connect(static_port, "a-shared-secret-of-32-characters").await?,
        Client::connect(oauth_port, &key.token(&issuer, &oauth_resource)?).await?,
        Client::connect(rules_port, &key.token(&issuer, &rules_resource)?).await?,
    ];
    for client in &mut clients {
        for _ in 0..50 {
            client.call().await?;
        }
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..iters {
        for (client, samples) in clients.iter_mut().zip(&mut samples) {
            samples.push(client.call().await?);
        }
    }
    let [base, jwt, rules] = samples.map(stats);
    println!("a tools/call over HTTP ({iters} each, interleaved):");
    report::line("static token", 28, &base, &base);
    report::line("OAuth JWT", 28, &jwt, &base);
    report::line("OAuth JWT + 3 [[access]]", 28, &rules, &base);
    stop.cancel();
    Ok(())
}
