//! `[telemetry]`: OpenTelemetry export of traces and metrics (see
//! `toolhost::telemetry`, feature `telemetry`).

use serde::Deserialize;

/// `[telemetry]`: spans and metrics over OTLP to a collector. Its presence
/// turns the export on (unless `enabled = false`); the standard
/// `OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` variables win over it.
///
/// ```toml
/// [telemetry]
/// endpoint = "http://127.0.0.1:4318"  # the collector's base URL (gRPC: port 4317)
/// protocol = "http/protobuf"          # or "grpc"
/// service_name = "toolhost"           # `service.name`
/// record_content = false              # arguments and results on spans (redacted)
/// redact = ["ssn"]                    # keys to redact besides password, token, secret, key, ...
/// queue = 2048                        # spans that may wait for export; more are dropped and counted
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// Whether to export (true when the section is there).
    pub enabled: Option<bool>,
    /// The collector's base URL (`http://host:4318` for HTTP, the signal's
    /// path is added; `http://host:4317` for gRPC).
    pub endpoint: Option<String>,
    /// `http/protobuf` (the default) or `grpc`.
    pub protocol: Option<String>,
    /// `service.name` (`toolhost`).
    pub service_name: Option<String>,
    /// Whether spans record calls' arguments and results, redacted.
    #[serde(default)]
    pub record_content: bool,
    /// Keys to redact besides [`REDACTED_KEYS`](crate::audit::REDACTED_KEYS).
    #[serde(default)]
    pub redact: Vec<String>,
    /// How many spans may wait for export before new ones are dropped (2048).
    pub queue: Option<usize>,
}

#[cfg(feature = "telemetry")]
impl TelemetryConfig {
    /// The options this section describes; spans carry `replica` as
    /// `service.instance.id`.
    ///
    /// # Errors
    /// [`TelemetryError::Settings`](crate::telemetry::TelemetryError::Settings)
    /// for an unknown protocol.
    pub fn options(
        &self,
        replica: Option<&str>,
    ) -> Result<crate::telemetry::TelemetryOptions, crate::telemetry::TelemetryError> {
        let mut options = crate::telemetry::TelemetryOptions {
            enabled: self.enabled.unwrap_or(true),
            endpoint: self.endpoint.clone(),
            service_name: self.service_name.clone(),
            replica: replica.map(str::to_owned),
            record_content: self.record_content,
            redact: self.redact.clone(),
            ..Default::default()
        };
        if let Some(protocol) = &self.protocol {
            options.transport = Some(crate::telemetry::Transport::parse(protocol)?);
        }
        if let Some(queue) = self.queue {
            options.queue = queue;
        }
        Ok(options)
    }
}
