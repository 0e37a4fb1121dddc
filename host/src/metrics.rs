//! What the MCP server counts, for `GET /metrics`: calls, errors by kind,
//! durations, fuel and peak memory per call, the duration of each MCP
//! request and session, calls in flight, toolset changes, and the engine's
//! guest memory and idle instances. Recorded in one place per call (see
//! [`Metrics::call`]) and per request ([`Metrics::request_ended`]), and
//! encoded in the Prometheus (OpenMetrics) text format by the official
//! `prometheus-client` crate.
//!
//! The same measurements feed the OpenTelemetry export when it is on
//! ([`crate::telemetry`]): `mcp.server.operation.duration` and
//! `mcp.server.session.duration` as the MCP conventions name them, and
//! `toolhost.tool.call.duration`, `.fuel` and `.memory.peak` per call; one
//! clock read per measurement, given to both. With telemetry off the
//! OpenTelemetry side is a cached flag's check.
//!
//! The `tool` label is the tool's name as the toolset lists it; names that
//! resolve to no tool are not recorded (a client chooses them, and each would
//! be a new series).

use std::sync::{Arc, LazyLock};
use std::time::Instant;

use opentelemetry::KeyValue;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::Engine;
use crate::error::CallError;
use crate::tool::{ToolSpec, Usage};
use crate::toolset::{CallObserver, CallWatch, Context, Outcome, ToolsetChange};

/// The `Content-Type` of [`Metrics::encode`]'s text, which Prometheus scrapes.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    tool: String,
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

type Histograms = Family<ToolLabels, Histogram, fn() -> Histogram>;

/// The metrics of one MCP server.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    calls: Family<ToolLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: Histograms,
    fuel: Histograms,
    memory: Histograms,
    in_flight: Gauge,
    changes: Counter,
    load_failures: Counter,
    auth_refusals: Family<RefusalLabels, Counter>,
    stream_resumes: Counter,
    streams_given_up: Counter,
    /// Follows [`crate::telemetry::dropped_spans`] (read when encoding).
    spans_dropped: Counter,
    requests: Family<MethodLabels, Histogram, fn() -> Histogram>,
    sessions: Family<TransportLabels, Histogram, fn() -> Histogram>,
    guest_memory: Gauge,
    guest_memory_peak: Gauge,
    guest_memory_budget: Gauge,
    idle_instances: Gauge,
    invocation_state: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Seconds: 1 ms to about 65 s, doubling.
fn duration_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// Fuel units (≈ wasm instructions): 10 thousand to 10 trillion, ×10.
fn fuel_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1e4, 10.0, 10))
}

/// The MCP conventions' bucket boundaries for request and session
/// durations, in seconds (OpenTelemetry's and Prometheus's alike).
const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

fn request_buckets() -> Histogram {
    Histogram::new(DURATION_BOUNDARIES)
}

/// Bytes of linear memory: 64 KiB (one wasm page) to 4 GiB, ×4.
fn memory_buckets() -> Histogram {
    Histogram::new(exponential_buckets(65_536.0, 4.0, 9))
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("toolhost");
        let calls = Family::<ToolLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls that ended (succeeded, failed or were cancelled), by tool",
            calls.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "tool_errors",
            "Tool calls that failed or were cancelled, by tool and kind",
            errors.clone(),
        );
        let duration: Histograms = Family::new_with_constructor(duration_buckets);
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls took, by tool (a streaming call: to its last chunk)",
            duration.clone(),
        );
        let fuel: Histograms = Family::new_with_constructor(fuel_buckets);
        registry.register(
            "tool_call_fuel",
            "Fuel (about one unit per wasm instruction) a successful call used, by tool",
            fuel.clone(),
        );
        let memory: Histograms = Family::new_with_constructor(memory_buckets);
        registry.register(
            "tool_call_peak_memory_bytes",
            "The largest linear memory a successful call reached, by tool",
            memory.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "tool_calls_in_flight",
            "Tool calls running now (what a stop drains)",
            in_flight.clone(),
        );
        let changes = Counter::default();
        registry.register(
            "toolset_changes",
            "Changes to the served tools: plugins loaded, reloaded or removed",
            changes.clone(),
        );
        let load_failures = Counter::default();
        registry.register(
            "plugin_load_failures",
            "Plugin files whose new version failed to load",
            load_failures.clone(),
        );
        let auth_refusals = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "auth_refusals",
            "HTTP requests refused by authentication, by reason (missing, invalid_token, insufficient_scope, unavailable)",
            auth_refusals.clone(),
        );
        let stream_resumes = Counter::default();
        registry.register(
            "http_stream_resumes",
            "Request streams of MCP sessions a client resumed (GET with Last-Event-ID)",
            stream_resumes.clone(),
        );
        let streams_given_up = Counter::default();
        registry.register(
            "http_streams_given_up",
            "Dropped request streams nobody resumed in time (a call still running on one is cancelled)",
            streams_given_up.clone(),
        );
        let spans_dropped = Counter::default();
        registry.register(
            "telemetry_spans_dropped",
            "Spans dropped because the OpenTelemetry export queue was full (the collector slow or away)",
            spans_dropped.clone(),
        );
        let requests = Family::<MethodLabels, _, _>::new_with_constructor(
            request_buckets as fn() -> Histogram,
        );
        registry.register(
            "mcp_request_duration_seconds",
            "How long MCP requests took, as the server saw them, by JSON-RPC method",
            requests.clone(),
        );
        let sessions = Family::<TransportLabels, _, _>::new_with_constructor(
            request_buckets as fn() -> Histogram,
        );
        registry.register(
            "mcp_session_duration_seconds",
            "How long MCP sessions (2025-11-25, initialized) lasted, by transport",
            sessions.clone(),
        );
        let guest_memory = Gauge::default();
        registry.register(
            "guest_memory_bytes",
            "Guest linear memory held now (running calls and idle instances)",
            guest_memory.clone(),
        );
        let guest_memory_peak = Gauge::default();
        registry.register(
            "guest_memory_peak_bytes",
            "The most guest linear memory held at once since the start",
            guest_memory_peak.clone(),
        );
        let guest_memory_budget = Gauge::default();
        registry.register(
            "guest_memory_budget_bytes",
            "The guest memory budget of all calls together ([engine] max_guest_memory_mib)",
            guest_memory_budget.clone(),
        );
        let idle_instances = Gauge::default();
        registry.register(
            "idle_instances",
            "Instances waiting idle for their invocation's next call",
            idle_instances.clone(),
        );
        let invocation_state = Gauge::default();
        registry.register(
            "invocation_state_bytes",
            "Scratch state all invocations hold now",
            invocation_state.clone(),
        );
        Self {
            registry,
            calls,
            errors,
            duration,
            fuel,
            memory,
            in_flight,
            changes,
            load_failures,
            auth_refusals,
            stream_resumes,
            streams_given_up,
            spans_dropped,
            requests,
            sessions,
            guest_memory,
            guest_memory_peak,
            guest_memory_budget,
            idle_instances,
            invocation_state,
        }
    }

    /// Starts recording one call of `tool`: end it with [`Call::succeeded`]
    /// or [`Call::failed`]; dropped before either, it counts as cancelled.
    pub(crate) fn call(self: &Arc<Self>, tool: &str) -> Call {
        Call {
            metrics: Arc::clone(self),
            tool: tool.to_owned(),
            start: Instant::now(),
            ended: false,
        }
    }

    /// Counts a change of the served toolset.
    pub(crate) fn changed(&self, change: &ToolsetChange) {
        if !(change.added.is_empty() && change.removed.is_empty() && change.changed.is_empty()) {
            self.changes.inc();
        }
        self.load_failures.inc_by(change.failed.len() as u64);
    }

    /// Counts one request refused by authentication.
    pub(crate) fn auth_refused(&self, reason: &'static str) {
        self.auth_refusals
            .get_or_create(&RefusalLabels { reason })
            .inc();
    }

    /// Counts a request stream a client resumed.
    pub(crate) fn stream_resumed(&self) {
        self.stream_resumes.inc();
    }

    /// Counts a request stream given up unread.
    pub(crate) fn stream_given_up(&self) {
        self.streams_given_up.inc();
    }

    /// Records an MCP request of `method` that took `seconds`; `exported`,
    /// the request's OpenTelemetry attributes when telemetry traces it.
    pub(crate) fn request_ended(
        &self,
        method: &'static str,
        seconds: f64,
        exported: Option<&[KeyValue]>,
    ) {
        self.requests
            .get_or_create(&MethodLabels { method })
            .observe(seconds);
        if let Some(attributes) = exported {
            EXPORTED.operation.record(seconds, attributes);
        }
    }

    /// Records a 2025-11-25 session over `transport` (`stdio` or `http`)
    /// that lasted `seconds`.
    pub(crate) fn session_ended(&self, transport: &'static str, seconds: f64) {
        self.sessions
            .get_or_create(&TransportLabels { transport })
            .observe(seconds);
        if exporting() {
            let attributes = [KeyValue::new(
                "network.transport",
                network_transport(transport),
            )];
            EXPORTED.session.record(seconds, &attributes);
        }
    }

    /// Counts changes missed (a lagging receiver).
    pub(crate) fn missed_changes(&self, n: u64) {
        self.changes.inc_by(n);
    }

    /// The metrics as text, with the gauges read now: calls `in_flight` and,
    /// when given, the engine's memory and idle instances.
    pub(crate) fn encode(&self, in_flight: usize, engine: Option<&Engine>) -> String {
        self.in_flight.set(gauge(in_flight as u64));
        if let Some(engine) = engine {
            let memory = engine.guest_memory();
            self.guest_memory.set(gauge(memory.in_use));
            self.guest_memory_peak.set(gauge(memory.peak));
            self.guest_memory_budget.set(gauge(memory.budget));
            self.idle_instances
                .set(gauge(engine.idle_instances() as u64));
            self.invocation_state
                .set(gauge(engine.invocation_state_bytes() as u64));
        }
        #[cfg(feature = "telemetry")]
        {
            let dropped = crate::telemetry::dropped_spans();
            let counted = self.spans_dropped.get();
            if dropped > counted {
                self.spans_dropped.inc_by(dropped - counted);
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    fn record(&self, tool: String, start: Instant, outcome: Result<&Usage, &'static str>) {
        let seconds = start.elapsed().as_secs_f64();
        if exporting() {
            EXPORTED.call(&tool, seconds, outcome);
        }
        let labels = ToolLabels { tool };
        self.calls.get_or_create(&labels).inc();
        self.duration.get_or_create(&labels).observe(seconds);
        match outcome {
            Ok(usage) => {
                self.fuel.get_or_create(&labels).observe(usage.fuel as f64);
                self.memory
                    .get_or_create(&labels)
                    .observe(usage.peak_memory_bytes as f64);
            }
            Err(kind) => {
                let labels = ErrorLabels {
                    tool: labels.tool,
                    kind,
                };
                self.errors.get_or_create(&labels).inc();
            }
        }
    }
}

/// Whether the OpenTelemetry export is on (its layer wants the spans'
/// target): a cached flag's check.
fn exporting() -> bool {
    tracing::enabled!(target: crate::spans::TARGET, tracing::Level::INFO)
}

/// `network.transport` for a transport name: `pipe` (stdio) or `tcp`.
pub(crate) fn network_transport(transport: &str) -> &'static str {
    if transport == "stdio" { "pipe" } else { "tcp" }
}

/// The OpenTelemetry instruments, made on first use (after the export set
/// its meter provider up).
static EXPORTED: LazyLock<Exported> = LazyLock::new(Exported::new);

/// The OpenTelemetry side of the measurements.
struct Exported {
    operation: opentelemetry::metrics::Histogram<f64>,
    session: opentelemetry::metrics::Histogram<f64>,
    call_duration: opentelemetry::metrics::Histogram<f64>,
    call_fuel: opentelemetry::metrics::Histogram<u64>,
    call_memory: opentelemetry::metrics::Histogram<u64>,
}

impl Exported {
    fn new() -> Self {
        let meter = opentelemetry::global::meter("toolhost");
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BOUNDARIES.to_vec())
                .build()
        };
        Self {
            operation: seconds(
                "mcp.server.operation.duration",
                "The duration of an MCP request as the server saw it",
            ),
            session: seconds(
                "mcp.server.session.duration",
                "The duration of an MCP session as the server saw it",
            ),
            call_duration: seconds(
                "toolhost.tool.call.duration",
                "The duration of a tool call, from its start to its result",
            ),
            call_fuel: meter
                .u64_histogram("toolhost.tool.call.fuel")
                .with_unit("{instruction}")
                .with_description("The fuel a successful tool call used")
                .build(),
            call_memory: meter
                .u64_histogram("toolhost.tool.call.memory.peak")
                .with_unit("By")
                .with_description("The most guest memory a successful tool call held")
                .build(),
        }
    }

    /// One call of `tool`, as Prometheus records it too.
    fn call(&self, tool: &str, seconds: f64, outcome: Result<&Usage, &'static str>) {
        let name = KeyValue::new("gen_ai.tool.name", tool.to_owned());
        match outcome {
            Ok(usage) => {
                let attributes = [name];
                self.call_duration.record(seconds, &attributes);
                self.call_fuel.record(usage.fuel, &attributes);
                self.call_memory
                    .record(usage.peak_memory_bytes, &attributes);
            }
            Err(kind) => {
                let attributes = [name, KeyValue::new("error.type", kind)];
                self.call_duration.record(seconds, &attributes);
            }
        }
    }
}

fn gauge(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The metrics as the observer of every call the driver runs (added to the
/// context of each MCP call, so stdio, HTTP and tasks count alike).
pub(crate) struct Observer(pub(crate) Arc<Metrics>);

impl CallObserver for Observer {
    fn begin(&self, _cx: &Context, spec: &ToolSpec) -> Box<dyn CallWatch> {
        Box::new(self.0.call(&spec.name))
    }
}

/// One call being recorded (see [`Metrics::call`]).
#[derive(Debug)]
pub(crate) struct Call {
    metrics: Arc<Metrics>,
    tool: String,
    start: Instant,
    ended: bool,
}

impl Call {
    /// The call succeeded at this cost.
    pub(crate) fn succeeded(mut self, usage: &Usage) {
        self.end(Ok(usage));
    }

    /// The call failed.
    pub(crate) fn failed(mut self, error: &CallError) {
        self.end(Err(error.kind()));
    }

    /// The call paused for an approval and ends here; its resumption is
    /// recorded as a call of its own.
    pub(crate) fn asked(mut self) {
        self.ended = true;
    }

    fn end(&mut self, outcome: Result<&Usage, &'static str>) {
        self.ended = true;
        let tool = std::mem::take(&mut self.tool);
        self.metrics.record(tool, self.start, outcome);
    }
}

impl CallWatch for Call {
    fn ended(self: Box<Self>, outcome: Outcome<'_>) {
        match outcome {
            Outcome::Succeeded(usage) => self.succeeded(usage),
            Outcome::Failed(error) => self.failed(error),
            Outcome::Paused(_) => self.asked(),
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.ended {
            self.end(Err("cancelled"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_errors_and_cancellations_are_counted_by_tool_and_kind() {
        let metrics = Arc::new(Metrics::new());
        metrics.call("echo").succeeded(&Usage {
            fuel: 50_000,
            peak_memory_bytes: 1 << 20,
            wrote_state: false,
        });
        metrics.call("echo").failed(&CallError::InvalidArguments {
            tool: "echo".into(),
            problems: vec!["missing `message`".into()],
        });
        drop(metrics.call("spin"));
        metrics.request_ended("tools/call", 0.03, None);
        metrics.request_ended("tools/call", 7.0, None);
        metrics.session_ended("http", 90.0);
        let text = metrics.encode(2, None);
        for line in [
            "toolhost_tool_calls_total{tool=\"echo\"} 2",
            "toolhost_tool_calls_total{tool=\"spin\"} 1",
            "toolhost_tool_errors_total{tool=\"echo\",kind=\"invalid_arguments\"} 1",
            "toolhost_tool_errors_total{tool=\"spin\",kind=\"cancelled\"} 1",
            "toolhost_tool_call_duration_seconds_count{tool=\"echo\"} 2",
            "toolhost_tool_call_fuel_count{tool=\"echo\"} 1",
            "toolhost_tool_call_fuel_sum{tool=\"echo\"} 50000.0",
            "toolhost_tool_call_peak_memory_bytes_count{tool=\"echo\"} 1",
            "toolhost_tool_calls_in_flight 2",
            "toolhost_mcp_request_duration_seconds_count{method=\"tools/call\"} 2",
            "toolhost_mcp_request_duration_seconds_bucket{le=\"0.05\",method=\"tools/call\"} 1",
            "toolhost_mcp_request_duration_seconds_bucket{le=\"10.0\",method=\"tools/call\"} 2",
            "toolhost_mcp_session_duration_seconds_count{transport=\"http\"} 1",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
    }
}
