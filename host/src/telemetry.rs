//! OpenTelemetry export (`[telemetry]`, feature `telemetry`): the spans of
//! [`crate::spans`] and the MCP server's, and the MCP conventions' metrics,
//! over OTLP (HTTP/protobuf or gRPC) to a collector.
//!
//! Off unless configured: [`Telemetry::start`] gives `None` when neither
//! the options nor the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) name an endpoint, or when
//! `OTEL_SDK_DISABLED=true`. The variables win over the options where both
//! say something (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL`),
//! so an operator can redirect a deployment without editing its file.
//!
//! Spans are exported in batches from a thread of their own: a call never
//! waits for the collector. At most [`TelemetryOptions::queue`] spans wait
//! for export; past that, new ones are dropped and counted
//! ([`dropped_spans`], `toolhost_telemetry_spans_dropped_total`), so a slow
//! or dead collector costs a bounded amount of memory and nothing else.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
    SpanProcessor,
};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::spans::TARGET;

/// The spans that may wait for export by default.
pub const DEFAULT_QUEUE: usize = 2048;

/// Spans dropped because [`TelemetryOptions::queue`] were waiting.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// How many spans were dropped so far because the export queue was full
/// (the collector slow or away).
pub fn dropped_spans() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// OTLP over HTTP, protobuf bodies (`http/protobuf`, port 4318).
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`, port 4317).
    Grpc,
}

impl Transport {
    /// The transport a protocol name means: `http/protobuf` or `grpc`.
    ///
    /// # Errors
    /// [`TelemetryError::Settings`] for any other name.
    pub fn parse(name: &str) -> Result<Self, TelemetryError> {
        match name {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "grpc" => Ok(Self::Grpc),
            other => Err(TelemetryError::Settings {
                reason: format!(
                    "protocol `{}` is not `http/protobuf` or `grpc`",
                    crate::escape_control(other)
                ),
            }),
        }
    }
}

/// What to export, and where (`[telemetry]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetryOptions {
    /// Export even without an endpoint in the environment (a `[telemetry]`
    /// section is there).
    pub enabled: bool,
    /// The collector's base URL: `http://host:4318` for HTTP (the signal's
    /// path, `/v1/traces` or `/v1/metrics`, is added), `http://host:4317`
    /// for gRPC.
    pub endpoint: Option<String>,
    /// The transport; `OTEL_EXPORTER_OTLP_PROTOCOL` wins, else HTTP/protobuf.
    pub transport: Option<Transport>,
    /// `service.name` when `OTEL_SERVICE_NAME` does not say (`toolhost`).
    pub service_name: Option<String>,
    /// `service.instance.id`: the replica's name.
    pub replica: Option<String>,
    /// Whether spans record calls' arguments and results (redacted).
    pub record_content: bool,
    /// Keys to redact besides [`crate::audit::REDACTED_KEYS`].
    pub redact: Vec<String>,
    /// How many spans may wait for export ([`DEFAULT_QUEUE`]).
    pub queue: usize,
}

impl Default for TelemetryOptions {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: None,
            transport: None,
            service_name: None,
            replica: None,
            record_content: false,
            redact: Vec::new(),
            queue: DEFAULT_QUEUE,
        }
    }
}

/// Telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// A setting is wrong.
    #[error("[telemetry]: {reason}")]
    Settings {
        /// Which and why.
        reason: String,
    },
    /// An exporter could not be built (a bad endpoint, say).
    #[error("the OTLP {signal} exporter: {reason}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// What the exporter said.
        reason: String,
    },
}

/// The running export: keep it for the life of the process; dropping it
/// flushes what waits (for a few seconds at most) and stops.
pub struct Telemetry {
    tracer: SdkTracerProvider,
    /// `None` when only a traces endpoint was given (see [`exports_metrics`]).
    meter: Option<SdkMeterProvider>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// Whether the variable `name` is set to something.
fn set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// Whether metrics are exported: unless the only endpoint given is a traces
/// one (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` alone, as for a traces-only
/// backend such as Langfuse), where they would go to the default collector
/// address and fail there every interval. `in_options`: `[telemetry]`
/// names an endpoint; `set`: whether a variable is set.
fn exports_metrics(in_options: bool, set: impl Fn(&str) -> bool) -> bool {
    in_options
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        || !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// Whether the environment asks for (or forbids) an export.
fn environment_says() -> Option<bool> {
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Some(false);
    }
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .then_some(true)
}

/// Builds the OTLP exporter `$kind` (`SpanExporter`, `MetricExporter`) over
/// `$transport`, to `$endpoint` when it is `Some` (else the variables' or
/// the default), its error a [`TelemetryError::Exporter`] of `$signal`.
macro_rules! exporter {
    ($kind:ident, $signal:literal, $transport:expr, $endpoint:expr) => {{
        let endpoint: Option<String> = $endpoint;
        let built = match $transport {
            Transport::HttpProtobuf => {
                let builder = opentelemetry_otlp::$kind::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary);
                match endpoint {
                    Some(endpoint) => builder.with_endpoint(endpoint),
                    None => builder,
                }
                .build()
            }
            Transport::Grpc => {
                let builder = opentelemetry_otlp::$kind::builder()
                    .with_tonic()
                    .with_protocol(Protocol::Grpc);
                match endpoint {
                    Some(endpoint) => builder.with_endpoint(endpoint),
                    None => builder,
                }
                .build()
            }
        };
        built.map_err(|e| TelemetryError::Exporter {
            signal: $signal,
            reason: e.to_string(),
        })
    }};
}

impl Telemetry {
    /// Starts the export `options` describe, or `None` when it is off (see
    /// the module). Sets the process-wide propagator (W3C trace context and
    /// baggage) and meter provider. Call it inside a tokio runtime (the gRPC
    /// client needs one).
    ///
    /// # Errors
    /// [`TelemetryError`] for a bad setting or endpoint.
    pub fn start(options: &TelemetryOptions) -> Result<Option<Self>, TelemetryError> {
        match environment_says() {
            Some(false) => return Ok(None),
            None if !options.enabled && options.endpoint.is_none() => return Ok(None),
            _ => {}
        }
        let transport = match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Ok(name) if !name.trim().is_empty() => Transport::parse(name.trim())?,
            _ => options.transport.unwrap_or(Transport::HttpProtobuf),
        };
        let endpoint = |path: &str| {
            // The variables win; an endpoint from the options is a base URL.
            let from_env = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(path_variable(path));
            match (&options.endpoint, from_env, transport) {
                (Some(base), false, Transport::HttpProtobuf) => {
                    Some(format!("{}{path}", base.trim_end_matches('/')))
                }
                (Some(base), false, Transport::Grpc) => Some(base.clone()),
                _ => None,
            }
        };
        let resource = resource(options);
        // An `https` endpoint's TLS, over the crypto the rest of the host uses.
        let _ = rustls::crypto::ring::default_provider().install_default();

        let spans = exporter!(SpanExporter, "traces", transport, endpoint("/v1/traces"))?;
        let waiting = Arc::new(AtomicUsize::new(0));
        let queue = options.queue.max(1);
        let batch = BatchSpanProcessor::builder(Counted {
            inner: spans,
            waiting: Arc::clone(&waiting),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                // Never full before our own bound is reached.
                .with_max_queue_size(queue.saturating_add(1))
                .build(),
        )
        .build();
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(Bounded {
                inner: batch,
                waiting,
                limit: queue,
            })
            .with_resource(resource.clone())
            .build();

        let meter = if exports_metrics(options.endpoint.is_some(), set) {
            let metrics = exporter!(
                MetricExporter,
                "metrics",
                transport,
                endpoint("/v1/metrics")
            )?;
            let meter = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(metrics).build())
                .with_resource(resource)
                .build();
            opentelemetry::global::set_meter_provider(meter.clone());
            Some(meter)
        } else {
            None
        };

        opentelemetry::global::set_text_map_propagator(
            opentelemetry::propagation::TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ]),
        );
        if options.record_content {
            crate::spans::record_content(options.redact.iter().cloned());
        }
        Ok(Some(Self { tracer, meter }))
    }

    /// The `tracing` layer that turns [`crate::spans`]' spans (target
    /// [`TARGET`]) into OpenTelemetry spans; other spans and events are not
    /// exported.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer("toolhost"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE))
    }

    /// Exports what waits and stops (as dropping it does).
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let limit = Duration::from_secs(3);
        if let Err(error) = self.tracer.shutdown_with_timeout(limit) {
            tracing::debug!(%error, "telemetry: spans not all exported at exit");
        }
        if let Some(meter) = &self.meter
            && let Err(error) = meter.shutdown_with_timeout(limit)
        {
            tracing::debug!(%error, "telemetry: metrics not all exported at exit");
        }
        let dropped = dropped_spans();
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "telemetry: spans were dropped while the collector was slow or away"
            );
        }
    }
}

/// A span named `name` (target [`TARGET`]) whose parent is the trace
/// context in the process's environment (`TRACEPARENT`, `TRACESTATE`,
/// `BAGGAGE`, the OpenTelemetry environment carrier), else a new trace's
/// root: how `toolhost call` joins the trace of the agent that ran it.
pub fn span_from_environment(name: &str) -> tracing::Span {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let span = tracing::info_span!(target: TARGET, "toolhost", otel.name = name);
    if span.is_disabled() {
        return span;
    }
    let environment = Environment::read();
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&environment));
    if opentelemetry::trace::TraceContextExt::span(&parent)
        .span_context()
        .is_valid()
    {
        let _ = span.set_parent(parent);
    }
    span
}

/// The trace context variables of the process's environment, as a carrier
/// (`traceparent` is `TRACEPARENT`).
struct Environment(Vec<(&'static str, String)>);

impl Environment {
    fn read() -> Self {
        Self(
            ["traceparent", "tracestate", "baggage"]
                .into_iter()
                .filter_map(|key| Some((key, std::env::var(key.to_ascii_uppercase()).ok()?)))
                .collect(),
        )
    }
}

impl opentelemetry::propagation::Extractor for Environment {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| *name).collect()
    }
}

/// The signal's own endpoint variable, which takes the URL as it is.
fn path_variable(path: &str) -> &'static str {
    if path.ends_with("metrics") {
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
    } else {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    }
}

/// The process's resource: the variables' (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), else the options', then `toolhost`'s.
fn resource(options: &TelemetryOptions) -> Resource {
    let named = set("OTEL_SERVICE_NAME")
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let mut builder = Resource::builder();
    if !named {
        builder = builder.with_service_name(
            options
                .service_name
                .clone()
                .unwrap_or_else(|| "toolhost".to_owned()),
        );
    }
    let mut attributes = vec![KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))];
    if let Some(replica) = &options.replica {
        attributes.push(KeyValue::new("service.instance.id", replica.clone()));
    }
    builder.with_attributes(attributes).build()
}

/// The batch processor behind a bound of our own: at most `limit` spans
/// wait (queued, or in the export under way); past it a span is dropped
/// and counted. The batch queue is larger, so it never drops one itself
/// (its own drops are counted nowhere we can read).
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    waiting: Arc<AtomicUsize>,
    limit: usize,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, telling [`Bounded`] when spans stop waiting (exported or
/// not).
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    waiting: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len();
        let result = self.inner.export(batch).await;
        self.waiting.fetch_sub(count, Ordering::AcqRel);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traces_only_endpoint_exports_no_metrics() {
        let with = |names: &'static [&'static str]| move |name: &str| names.contains(&name);
        assert!(!exports_metrics(
            false,
            with(&["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
        ));
        assert!(exports_metrics(
            true,
            with(&["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
        ));
        assert!(exports_metrics(
            false,
            with(&["OTEL_EXPORTER_OTLP_ENDPOINT"])
        ));
        assert!(exports_metrics(
            false,
            with(&[
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
            ])
        ));
        // `[telemetry]` with no endpoint anywhere: the default collector, both.
        assert!(exports_metrics(false, with(&[])));
    }

    #[test]
    fn transports_are_named_as_the_variables_name_them() {
        assert_eq!(
            Transport::parse("http/protobuf").unwrap(),
            Transport::HttpProtobuf
        );
        assert_eq!(Transport::parse("grpc").unwrap(), Transport::Grpc);
        let err = Transport::parse("http/json").unwrap_err().to_string();
        assert!(err.contains("`http/json`"), "{err}");
    }
}
