//! The spans of a call: `tracing` spans named and attributed as the
//! OpenTelemetry GenAI conventions say (`execute_tool {gen_ai.tool.name}`),
//! with the steps of a call beneath (argument validation, the approval wait,
//! instance creation, the guest's run, state store round trips).
//!
//! They all have the target [`TARGET`], which the log leaves out: they exist
//! for the OpenTelemetry export ([`crate::telemetry`]). With no subscriber
//! layer interested in that target, creating one is a check of a cached flag,
//! and no field is computed (no cost when telemetry is off). `otel.name`,
//! `otel.kind` and `otel.status_code` are the OpenTelemetry bridge's fields
//! for a span's name, kind and status; the rest are attributes, the
//! conventions' own names plus ours under `toolhost.*`.

use std::sync::OnceLock;

use serde_json::Value;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use crate::error::CallError;
use crate::tool::{ToolSpec, Usage};

/// The target of every span meant for export (not for the log).
pub const TARGET: &str = "toolhost::otel";

/// The most bytes of arguments or result recorded on a span when the
/// operator opts in ([`record_content`]); longer text is cut, marked `…`.
pub const MAX_CONTENT_BYTES: usize = 8 * 1024;

/// The keys whose values are redacted from recorded arguments and results,
/// set once when the operator opts in to recording them.
static CONTENT: OnceLock<Vec<String>> = OnceLock::new();

/// Records the arguments and results of calls on their spans
/// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), with the
/// values of secret-looking keys ([`crate::redact::REDACTED_KEYS`] and
/// `redact`) replaced, at most [`MAX_CONTENT_BYTES`] each. Off unless called
/// (the first call decides).
pub fn record_content(redact: impl IntoIterator<Item = impl Into<String>>) {
    let keys = crate::redact::REDACTED_KEYS
        .iter()
        .map(|k| (*k).to_owned())
        .chain(redact.into_iter().map(|k| k.into().to_lowercase()))
        .collect();
    let _ = CONTENT.set(keys);
}

/// `value` as recorded on a span when the operator opted in: redacted,
/// serialized, cut to [`MAX_CONTENT_BYTES`].
fn content(value: &Value) -> Option<String> {
    let keys = CONTENT.get()?;
    let text = crate::redact::redact_keys(value, keys).to_string();
    Some(cut(text, MAX_CONTENT_BYTES))
}

/// `text` cut to at most `max` bytes on a character boundary, marked `…`:
/// what a span keeps of a long value.
pub(crate) fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The span of one call of `spec`, `call_id` of `invocation`:
/// `execute_tool {name}`.
pub(crate) fn call(spec: &ToolSpec, call_id: &str, invocation: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", spec.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %spec.name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        toolhost.tool.qualified_name = spec.qualified_name.as_deref(),
        toolhost.invocation.id = invocation,
        toolhost.outcome = Empty,
        toolhost.fuel_used = Empty,
        toolhost.memory.peak_bytes = Empty,
        toolhost.output.bytes = Empty,
    )
}

/// Records the call's checked arguments on its span, if the operator opted in.
pub(crate) fn arguments(span: &Span, arguments: &Value) {
    if span.is_disabled() {
        return;
    }
    if let Some(text) = content(arguments) {
        span.record("gen_ai.tool.call.arguments", text);
    }
}

/// Records a whole output on the call's span: its size in bytes (text and
/// blobs as they are, JSON as serialized), and its JSON result if the
/// operator opted in. A stream's parts are its events instead ([`chunk`]).
pub(crate) fn output(span: &Span, output: &crate::tool::ToolOutput) {
    if span.is_disabled() {
        return;
    }
    let json = |value: &Value| {
        let mut counted = Counted(0);
        // Writing to a counter cannot fail.
        let _ = serde_json::to_writer(&mut counted, value);
        counted.0
    };
    let parts: usize = output
        .parts
        .iter()
        .map(|part| match part {
            crate::tool::Part::Text(text) => text.len(),
            crate::tool::Part::Json(value) => json(value),
            crate::tool::Part::Blob { data, .. } => data.len(),
        })
        .sum();
    let bytes = output.result.as_ref().map_or(0, json) + parts;
    span.record("toolhost.output.bytes", int(bytes));
    if let Some(text) = output.result.as_ref().and_then(content) {
        span.record("gen_ai.tool.call.result", text);
    }
}

/// Counts the bytes written to it.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `n` as an OpenTelemetry integer (a signed 64-bit one: the bridge records
/// an unsigned value as text).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// Records how a call ended on its span.
pub(crate) fn succeeded(span: &Span, usage: &Usage) {
    span.record("toolhost.outcome", "succeeded");
    span.record("toolhost.fuel_used", int(usage.fuel));
    span.record("toolhost.memory.peak_bytes", int(usage.peak_memory_bytes));
}

/// Records a failed call on its span: status error, `error.type` the
/// failure's kind ([`CallError::kind`]).
pub(crate) fn failed(span: &Span, failure: &CallError) {
    span.record("toolhost.outcome", "failed");
    error(span, failure.kind(), failure);
}

/// Records a call that paused for a human's approval.
pub(crate) fn paused(span: &Span) {
    span.record("toolhost.outcome", "paused");
}

/// Records a streamed part as an event of the call's span: its kind and size
/// (never its content).
pub(crate) fn chunk(span: &Span, part: &crate::tool::Part) {
    let (kind, bytes) = match part {
        crate::tool::Part::Text(text) => ("text", int(text.len())),
        crate::tool::Part::Json(_) => ("json", 0),
        crate::tool::Part::Blob { data, .. } => ("blob", int(data.len())),
    };
    span.in_scope(|| {
        // `event!`: `info!` cannot take dotted field names after a target.
        tracing::event!(
            target: TARGET,
            tracing::Level::INFO,
            toolhost.chunk.kind = kind,
            toolhost.chunk.bytes = bytes,
            "chunk"
        );
    });
}

/// The span of the access rules' decision on a call of `tool` (who may call
/// what); [`access_decided`] records it.
pub(crate) fn access(tool: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "access",
        otel.name = "toolhost.access",
        gen_ai.tool.name = tool,
        toolhost.access.decision = Empty,
    )
}

/// Records the access rules' decision: `granted` or `forbidden`.
pub(crate) fn access_decided(span: &Span, granted: bool) {
    let decision = if granted { "granted" } else { "forbidden" };
    span.record("toolhost.access.decision", decision);
}

/// The span of the arguments' check (aliases, hooks, coercion, the schema).
pub(crate) fn validate() -> Span {
    tracing::info_span!(
        target: TARGET,
        "validate",
        otel.name = "toolhost.validate",
        error.type = Empty,
    )
}

/// The span of the wait for a human's approval; [`approval_answered`]
/// records how it was answered.
pub(crate) fn approval() -> Span {
    tracing::info_span!(
        target: TARGET,
        "approval",
        otel.name = "toolhost.approval",
        toolhost.approval.answer = Empty,
    )
}

/// Records the answer to an approval: `approved`, `rejected`, `deferred`
/// (nobody could decide now: the call pauses) or `unavailable`.
pub(crate) fn approval_answered(span: &Span, answer: &'static str) {
    span.record("toolhost.approval.answer", answer);
}

/// The span of a fresh instance's creation for `tool` of `plugin` (the
/// code's compilation too, when its first call waits for it); [`tier`]
/// records which compiler's code it runs.
pub(crate) fn instantiate(tool: &str, plugin: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "instantiate",
        otel.name = "toolhost.instantiate",
        gen_ai.tool.name = tool,
        toolhost.plugin = plugin,
        toolhost.tier = Empty,
    )
}

/// Records the tier of the code an instance runs: `baseline` or `optimized`.
pub(crate) fn tier(span: &Span, tier: &'static str) {
    span.record("toolhost.tier", tier);
}

/// The span of the guest's run of `tool` (for a stream: until its first
/// answer); the guest's own spans and events go beneath
/// ([`crate::plugin::guest_spans`]), and what it had dropped is counted here.
pub(crate) fn guest(tool: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "guest",
        otel.name = "toolhost.guest",
        gen_ai.tool.name = tool,
        toolhost.guest.dropped = Empty,
    )
}

/// The span of one state store round trip (`operation`: `get`, `set`,
/// `claim`…), in Redis.
pub(crate) fn store(operation: &'static str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "state",
        otel.name = %format_args!("toolhost.state {operation}"),
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// The span of an OCI registry operation (`pull`, `verify`) on `reference`.
pub(crate) fn oci(operation: &'static str, reference: &dyn std::fmt::Display) -> Span {
    tracing::info_span!(
        target: TARGET,
        "oci",
        otel.name = %format_args!("toolhost.oci.{operation}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        toolhost.oci.reference = %reference,
        error.type = Empty,
    )
}

/// Records on `span` that its operation failed: status error, `error.type`
/// `kind`, the error's text as the status description.
fn error(span: &Span, kind: &str, error: &dyn std::fmt::Display) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", error.to_string());
}

/// Runs `work` in `span`, and records its error if it fails, of the kind
/// `kind` says (an OCI operation, a state store round trip).
pub(crate) async fn within<T, E: std::fmt::Display>(
    span: Span,
    work: impl Future<Output = Result<T, E>>,
    kind: impl FnOnce(&E) -> &'static str,
) -> Result<T, E> {
    let result = work.instrument(span.clone()).await;
    if let Err(failure) = &result {
        error(&span, kind(failure), failure);
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_is_off_until_opted_in_then_redacted_and_cut() {
        record_content(["Card"]);
        let text = content(&json!({"card": "4111", "password": "p", "n": 1})).unwrap();
        assert!(!text.contains("4111") && !text.contains("\"p\""), "{text}");
        assert!(text.contains("\"n\":1"), "{text}");
        let long = content(&json!("é".repeat(MAX_CONTENT_BYTES))).unwrap();
        assert!(long.ends_with('…'));
        assert!(long.len() <= MAX_CONTENT_BYTES + '…'.len_utf8());
    }
}
