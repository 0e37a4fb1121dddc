//! Outgoing HTTP(S) through `wasi:http`, checked against the plugin's host
//! allowlist before any connection is made, with a response size cap and a
//! request timeout.
//!
//! The host never follows redirects: a guest that follows one makes a new
//! request, which meets the allowlist like any other.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::{CallTag, Grants, default_port};

/// The `wasi:http` hooks of one call.
pub(crate) struct HttpHooks {
    pub(crate) call: Arc<CallTag>,
    pub(crate) grants: Arc<Grants>,
}

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl HttpHooks {
    /// Whether the request's destination is granted. A user part in the
    /// authority (`allowed.com@elsewhere`) is refused outright.
    fn allowed(&self, uri: &http::Uri) -> bool {
        let (Some(scheme), Some(host), Some(authority)) =
            (uri.scheme_str(), uri.host(), uri.authority())
        else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        let port = uri.port_u16().unwrap_or_else(|| default_port(scheme));
        self.grants
            .http_hosts()
            .iter()
            .any(|pattern| pattern.allows(scheme, host, port))
    }
}

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let destination = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("?"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let call = &self.call;
        if !self.allowed(uri) {
            // Only scheme and authority are logged: a query may hold a key.
            super::refusals::log(
                call,
                super::Capability::Http,
                "wasi:http/outgoing-handler",
                &format!("an HTTP request to {destination}"),
            );
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        tracing::debug!(
            target: "toolhost::policy",
            plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
            %destination, method = %request.method(), "HTTP request"
        );
        let limit = self.grants.get_max_response_bytes();
        let timeout = self.grants.get_request_timeout();
        let shorter =
            |asked: Option<std::time::Duration>| Some(asked.map_or(timeout, |a| a.min(timeout)));
        let options = options.unwrap_or_default();
        let options = RequestOptions {
            connect_timeout: shorter(options.connect_timeout),
            first_byte_timeout: shorter(options.first_byte_timeout),
            between_bytes_timeout: shorter(options.between_bytes_timeout),
        };
        Box::new(async move {
            let sent = tokio::time::timeout(
                timeout,
                wasmtime_wasi_http::default_send_request(request, Some(options)),
            )
            .await;
            let (response, io) = match sent {
                Ok(result) => result?,
                Err(_elapsed) => return Err(Error::HttpResponseTimeout),
            };
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|len| len > limit) {
                return Err(Error::HttpResponseBodySize(declared));
            }
            let response = response.map(|body| {
                UnsyncBoxBody::new(Capped {
                    inner: UnsyncBoxBody::new(body),
                    left: limit,
                    limit,
                })
            });
            Ok((
                response,
                Box::new(io) as Box<dyn Future<Output = Result<(), Error>> + Send>,
            ))
        })
    }
}

/// A response body that fails once more than `limit` bytes have come.
struct Capped {
    inner: WasiBody,
    left: u64,
    limit: u64,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            let len = data.len() as u64;
            if len > self.left {
                self.left = 0;
                return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(self.limit)))));
            }
            self.left -= len;
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
