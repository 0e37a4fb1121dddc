//! The MCP server's span per request and its duration metric, per the
//! OpenTelemetry MCP conventions: a server span `{mcp.method.name}
//! {target}` (the tool or prompt name), its parent the trace context of the
//! request's `params._meta` (`traceparent`, `tracestate`, `baggage`), else
//! of its HTTP request's headers (then a link when both are there), else a
//! new trace. Its duration goes to [`Metrics::request_ended`], which
//! records it for Prometheus and, as `mcp.server.operation.duration`, for
//! OpenTelemetry.
//!
//! The call's own spans ([`crate::spans`]) nest beneath. With telemetry off
//! the span is disabled and nothing here costs more than that check and the
//! request's clock reads.

use std::collections::HashMap;
use std::fmt;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt as _;
use rmcp::RoleServer;
use rmcp::model::{ErrorData, MetaObject};
use rmcp::service::RequestContext;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::metrics::{Metrics, network_transport};
use crate::spans::TARGET;

/// What a request names: the low-cardinality target of its span's name.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target<'a> {
    /// No target: the span is named after the method.
    None,
    /// `tools/call`: the tool.
    Tool(&'a str),
    /// `prompts/get`: the prompt.
    Prompt(&'a str),
    /// `resources/read`: the resource (an attribute, not in the name).
    Resource(&'a str),
}

/// `{method} {target}`, computed only when the span is enabled.
struct SpanName<'a>(&'static str, Target<'a>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Target::Tool(name) | Target::Prompt(name) => write!(f, "{} {name}", self.0),
            Target::None | Target::Resource(_) => f.write_str(self.0),
        }
    }
}

/// One request being traced: its span, and what its duration is recorded
/// with and in.
pub(super) struct Traced<'a> {
    span: Span,
    method: &'static str,
    started: Instant,
    attributes: Vec<KeyValue>,
    metrics: &'a Metrics,
}

/// Begins tracing a request of `method` on `session` (its ID) over
/// `transport` (`stdio` or `http`); its duration is recorded in `metrics`.
pub(super) fn request<'a>(
    context: &RequestContext<RoleServer>,
    (method, target): (&'static str, Target<'_>),
    session: &str,
    transport: &'static str,
    metrics: &'a Metrics,
) -> Traced<'a> {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.server",
        otel.name = %SpanName(method, target),
        otel.kind = "server",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = method,
        mcp.protocol.version = Empty,
        mcp.session.id = Empty,
        mcp.resource.uri = Empty,
        jsonrpc.request.id = %context.id,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        network.transport = network_transport(transport),
        network.protocol.name = Empty,
        error.type = Empty,
    );
    let mut traced = Traced {
        span,
        method,
        started: Instant::now(),
        attributes: Vec::new(),
        metrics,
    };
    if traced.span.is_disabled() {
        return traced;
    }
    let span = &traced.span;
    let version = context.protocol_version().map(|v| v.as_str().to_owned());
    if let Some(version) = &version {
        span.record("mcp.protocol.version", version.as_str());
    }
    // A 2026-07-28 request has no session; its `session` is the request's own.
    if version.as_deref() < Some(rmcp::model::ProtocolVersion::V_2026_07_28.as_str()) {
        span.record("mcp.session.id", session);
    }
    match target {
        Target::Tool(name) => {
            span.record("gen_ai.tool.name", name);
            span.record("gen_ai.operation.name", "execute_tool");
        }
        Target::Prompt(name) => {
            span.record("gen_ai.prompt.name", name);
        }
        Target::Resource(uri) => {
            span.record("mcp.resource.uri", uri);
        }
        Target::None => {}
    }
    let headers = super::transport::http_headers(context);
    if headers.is_some() {
        span.record("network.protocol.name", "http");
    }
    join(span, &context.meta, headers);
    traced.attributes = [
        Some(KeyValue::new("mcp.method.name", method)),
        Some(KeyValue::new(
            "network.transport",
            network_transport(transport),
        )),
        version.map(|v| KeyValue::new("mcp.protocol.version", v)),
        match target {
            Target::Tool(name) => Some(KeyValue::new("gen_ai.tool.name", name.to_owned())),
            Target::Prompt(name) => Some(KeyValue::new("gen_ai.prompt.name", name.to_owned())),
            Target::None | Target::Resource(_) => None,
        },
    ]
    .into_iter()
    .flatten()
    .collect();
    traced
}

/// Makes the request's trace context the span's parent: `_meta`'s, else the
/// HTTP request's; the HTTP one is a link when both are there.
fn join(span: &Span, meta: &MetaObject, headers: Option<&axum::http::HeaderMap>) {
    let extract = |carrier: &dyn Extractor| {
        let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(carrier));
        cx.span().span_context().is_valid().then_some(cx)
    };
    let from_meta = extract(&Meta(meta));
    let from_http = headers.and_then(|headers| extract(&Headers(headers)));
    match (from_meta, from_http) {
        (Some(parent), http) => {
            let _ = span.set_parent(parent);
            if let Some(http) = http {
                span.add_link(http.span().span_context().clone());
            }
        }
        (None, Some(parent)) => {
            let _ = span.set_parent(parent);
        }
        (None, None) => {}
    }
}

impl Traced<'_> {
    /// Runs the request's `work` in its span, and ends the request with its
    /// result (see [`Traced::finish`]).
    pub(super) async fn run<T>(
        self,
        work: impl Future<Output = Result<T, ErrorData>>,
        tool_error: impl FnOnce(&T) -> bool,
    ) -> Result<T, ErrorData> {
        let result = work.instrument(self.span.clone()).await;
        self.finish(result, tool_error)
    }

    /// Ends the request with its `result`, which it gives back: failed with
    /// a JSON-RPC error, or a tool's error (`tool_error` says whether the
    /// answer is one: a result with `isError`), or succeeded. Its duration is
    /// recorded, with its attributes when it is traced.
    fn finish<T>(
        mut self,
        result: Result<T, ErrorData>,
        tool_error: impl FnOnce(&T) -> bool,
    ) -> Result<T, ErrorData> {
        let seconds = self.started.elapsed().as_secs_f64();
        let traced = !self.span.is_disabled();
        if traced {
            match &result {
                Ok(answer) => {
                    let failed = tool_error(answer);
                    self.failed(None, failed);
                }
                Err(error) => self.failed(Some(error), false),
            }
        }
        let exported = traced.then_some(self.attributes.as_slice());
        self.metrics.request_ended(self.method, seconds, exported);
        result
    }

    /// Records on a traced request's span and attributes how it failed, if
    /// it did.
    fn failed(&mut self, error: Option<&ErrorData>, tool_error: bool) {
        let kind = match error {
            Some(error) => error.code.0.to_string(),
            None if tool_error => "tool_error".to_owned(),
            None => return,
        };
        self.span.record("error.type", kind.as_str());
        self.span.record("otel.status_code", "error");
        if let Some(error) = error {
            self.span
                .record("otel.status_description", error.message.as_ref());
        }
        self.attributes.push(KeyValue::new("error.type", kind));
    }
}

/// The current span's trace context as a W3C `traceparent`, when telemetry
/// records it: what a sealed approval or question state keeps of the request
/// that asked, so the retry that answers it (maybe on another replica, in
/// another trace) links back to it.
pub(super) fn traceparent() -> Option<String> {
    let span = Span::current();
    if span.is_disabled() {
        return None;
    }
    let mut carrier = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&span.context(), &mut carrier);
    });
    carrier.remove("traceparent")
}

/// Links the current span (a retry's request) to the request whose
/// `traceparent` a sealed state kept: the approval or question it answers.
pub(super) fn link_to_asker(traceparent: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
    let asked = cx.span().span_context().clone();
    if asked.is_valid() {
        span.add_link(asked);
    }
}

/// `_meta`'s trace context keys.
struct Meta<'a>(&'a MetaObject);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0.get_traceparent(),
            "tracestate" => self.0.get_tracestate(),
            "baggage" => self.0.get_baggage(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        ["traceparent", "tracestate", "baggage"]
            .into_iter()
            .filter(|key| self.get(key).is_some())
            .collect()
    }
}

/// An HTTP request's headers.
struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}
