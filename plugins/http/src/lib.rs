//! HTTP tools for agents: `http_fetch` fetches a URL and returns its status,
//! headers and body (text, or bytes as a file part).
//!
//! Requests go through `wasi:http`: the host sends only those to destinations
//! the operator granted and refuses the rest (`HttpRequestDenied`). Redirects
//! are followed here, in the guest, so every hop is a new request that meets
//! the host's allowlist.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{Context, Output, Part, Tool, ToolError, ToolHints, export_tools};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

/// How many redirects `http_fetch` follows by default.
const DEFAULT_MAX_REDIRECTS: u32 = 5;

/// How the response body is returned.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "lowercase")]
pub enum BodyAs {
    /// Text when the content type is textual (or the bytes are UTF-8), else bytes.
    #[default]
    Auto,
    /// Always text (invalid UTF-8 is replaced).
    Text,
    /// Always bytes, as a file part.
    Bytes,
}

/// A request header. Headers are a list of pairs rather than a map: every model
/// provider's schema dialect takes a list of objects, not all take a map.
#[derive(Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The header's name, e.g. `accept`.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Fetches a URL over HTTP(S) from the hosts this plugin is granted.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The URL: `http://` or `https://`.
    pub url: String,
    /// The method (default GET).
    pub method: Option<String>,
    /// Request headers, in order; a name may repeat.
    #[serde(default)]
    pub headers: Vec<Header>,
    /// A request body (text).
    pub body: Option<String>,
    /// How to return the response body (default auto).
    #[serde(default)]
    pub body_as: BodyAs,
    /// Follow redirects (default true), each as a new request the host checks.
    pub follow_redirects: Option<bool>,
    /// The most redirects to follow (default 5).
    #[schemars(range(max = 20))]
    pub max_redirects: Option<u32>,
}

/// A fetched response.
#[derive(Serialize, JsonSchema)]
pub struct Fetched {
    /// The URL of the final response (after redirects).
    pub url: String,
    /// The status code.
    pub status: u16,
    /// Response headers (repeated ones joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body as text, when returned as text.
    pub body: Option<String>,
    /// The body's size in bytes.
    pub body_bytes: u64,
    /// The URLs redirected through, in order.
    pub redirects: Vec<String>,
}

/// A URL split into what `wasi:http` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: String,
    /// `host[:port]`.
    pub authority: String,
    /// `/path?query` (at least `/`).
    pub path: String,
}

impl Url {
    /// Parses an absolute `http(s)://` URL.
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("`{url}` is not an absolute URL (http:// or https://)"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("`{url}`: only http and https are supported"));
        }
        let rest = rest.split('#').next().unwrap_or("");
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("`{url}` has no host"));
        }
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        Ok(Self {
            scheme,
            authority: authority.to_owned(),
            path,
        })
    }

    /// Resolves a `Location` header against this URL.
    ///
    /// # Errors
    /// A message if it is neither absolute nor an absolute path.
    pub fn join(&self, location: &str) -> Result<Self, String> {
        if location.contains("://") {
            Self::parse(location)
        } else if let Some(rest) = location.strip_prefix("//") {
            Self::parse(&format!("{}://{rest}", self.scheme))
        } else if location.starts_with('/') {
            Ok(Self {
                path: location.to_owned(),
                ..self.clone()
            })
        } else {
            Err(format!("unsupported redirect location `{location}`"))
        }
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority, self.path)
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

fn method(name: &str) -> Method {
    match name.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    }
}

/// Says what an error code means, most of all a refusal by the host's policy.
fn describe(url: &Url, code: &ErrorCode) -> String {
    match code {
        ErrorCode::HttpRequestDenied => format!(
            "the host refused the request to {}://{} (HttpRequestDenied): it is not among this plugin's granted hosts, or the host's secret policy refused it (the host log says which)",
            url.scheme, url.authority
        ),
        ErrorCode::HttpResponseBodySize(limit) => format!(
            "the response from {url} is larger than the host allows ({} bytes)",
            limit.map_or_else(|| "?".to_owned(), |l| l.to_string())
        ),
        other => format!("{url}: {other:?}"),
    }
}

fn send(
    method_name: &str,
    url: &Url,
    headers: &[Header],
    body: Option<&str>,
) -> Result<Response, String> {
    let fields = Fields::new();
    for Header { name, value } in headers {
        fields
            .append(name, value.as_bytes())
            .map_err(|e| format!("header `{name}`: {e:?}"))?;
    }
    let request = OutgoingRequest::new(fields);
    request
        .set_method(&method(method_name))
        .map_err(|()| format!("invalid method `{method_name}`"))?;
    let scheme = if url.scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "invalid scheme".to_owned())?;
    request
        .set_authority(Some(&url.authority))
        .map_err(|()| format!("invalid host `{}`", url.authority))?;
    request
        .set_path_with_query(Some(&url.path))
        .map_err(|()| format!("invalid path `{}`", url.path))?;
    let outgoing = request
        .body()
        .map_err(|()| "the request body was taken".to_owned())?;
    if let Some(body) = body {
        let stream = outgoing
            .write()
            .map_err(|()| "cannot write the request body".to_owned())?;
        for chunk in body.as_bytes().chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("writing the request body: {e:?}"))?;
        }
        drop(stream);
    }
    let pending = outgoing_handler::handle(request, None).map_err(|e| describe(url, &e))?;
    OutgoingBody::finish(outgoing, None).map_err(|e| describe(url, &e))?;
    let response = loop {
        match pending.get() {
            Some(result) => break result,
            None => pending.subscribe().block(),
        }
    };
    drop(pending);
    let response = response
        .map_err(|()| "the response was already taken".to_owned())?
        .map_err(|e| describe(url, &e))?;
    let status = response.status();
    let headers = response.headers().entries();
    let incoming = response
        .consume()
        .map_err(|()| "the response body was taken".to_owned())?;
    let stream = incoming
        .stream()
        .map_err(|()| "the response body stream was taken".to_owned())?;
    let mut bytes = Vec::new();
    let outcome = loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break Ok(()),
            Err(StreamError::LastOperationFailed(err)) => {
                break Err(match wasip2::http::types::http_error_code(&err) {
                    Some(code) => describe(url, &code),
                    None => format!("{url}: reading the body failed: {}", err.to_debug_string()),
                });
            }
        }
    };
    // Child resources go before their parents.
    drop(stream);
    let _trailers = IncomingBody::finish(incoming);
    drop(response);
    outcome?;
    Ok(Response {
        status,
        headers,
        body: bytes,
    })
}

fn header<'a>(headers: &'a [(String, Vec<u8>)], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice())
}

fn is_textual(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.contains("json")
        || ct.contains("xml")
        || ct.contains("javascript")
        || ct.contains("x-www-form-urlencoded")
}

/// `http_fetch`.
pub struct Fetch;

impl Tool for Fetch {
    type Args = FetchArgs;
    type Output = Output;
    const NAME: &'static str = "http_fetch";
    const HINTS: ToolHints = ToolHints::NONE.open_world(true);

    fn call(args: FetchArgs, cx: &Context) -> Result<Output, ToolError> {
        let mut url = Url::parse(&args.url).map_err(ToolError::invalid_arguments)?;
        let mut method_name = args.method.clone().unwrap_or_else(|| "GET".to_owned());
        let mut body = args.body.clone();
        let follow = args.follow_redirects.unwrap_or(true);
        let max = args.max_redirects.unwrap_or(DEFAULT_MAX_REDIRECTS);
        let mut redirects = Vec::new();
        let response = loop {
            let response = send(&method_name, &url, &args.headers, body.as_deref())
                .map_err(ToolError::failed)?;
            let location = header(&response.headers, "location");
            let redirect = matches!(response.status, 301 | 302 | 303 | 307 | 308);
            match location {
                Some(location) if follow && redirect => {
                    if redirects.len() as u32 >= max {
                        return Err(ToolError::failed(format!(
                            "more than {max} redirects (last: {url})"
                        )));
                    }
                    let location = String::from_utf8_lossy(location).into_owned();
                    let next = url.join(&location).map_err(ToolError::failed)?;
                    cx.debug(&format!("redirect {} → {next}", response.status));
                    if response.status == 303
                        || (response.status != 307
                            && response.status != 308
                            && method_name != "GET")
                    {
                        method_name = "GET".to_owned();
                        body = None;
                    }
                    redirects.push(url.to_string());
                    url = next;
                }
                _ => break response,
            }
        };
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &response.headers {
            let value = String::from_utf8_lossy(value);
            headers
                .entry(name.to_ascii_lowercase())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert_with(|| value.into_owned());
        }
        let content_type = headers
            .get("content-type")
            .cloned()
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let as_text = match args.body_as {
            BodyAs::Text => true,
            BodyAs::Bytes => false,
            BodyAs::Auto => {
                is_textual(&content_type) || std::str::from_utf8(&response.body).is_ok()
            }
        };
        let mut fetched = Fetched {
            url: url.to_string(),
            status: response.status,
            headers,
            body: None,
            body_bytes: response.body.len() as u64,
            redirects,
        };
        if as_text {
            fetched.body = Some(String::from_utf8_lossy(&response.body).into_owned());
            return Ok(Output::json(fetched));
        }
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        Ok(Output::json(fetched).with_part(Part::file(mime, None, response.body)))
    }
}

export_tools!(Fetch);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_join() {
        let url = Url::parse("HTTP://127.0.0.1:8080/a/b?c=1#frag").unwrap();
        assert_eq!(url.scheme, "http");
        assert_eq!(url.authority, "127.0.0.1:8080");
        assert_eq!(url.path, "/a/b?c=1");
        assert_eq!(Url::parse("https://x.com").unwrap().path, "/");
        assert_eq!(Url::parse("https://x.com?q").unwrap().path, "/?q");
        assert!(Url::parse("ftp://x.com").is_err());
        assert!(Url::parse("x.com").is_err());
        assert_eq!(
            url.join("/z").unwrap().to_string(),
            "http://127.0.0.1:8080/z"
        );
        assert_eq!(
            url.join("//other:1/p").unwrap().to_string(),
            "http://other:1/p"
        );
        assert_eq!(url.join("https://e.com/").unwrap().authority, "e.com");
    }
}
