//! The log on stderr: one plain voice for the commands that run once
//! (`warning: …`, as the CLI's own `warning:` and `error:` lines), tracing's
//! timestamped lines for `serve` (a server's log) and whenever `TOOLHOST_LOG`
//! asks for a log; a client's mistake is not a server warning.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

use toolhost::telemetry::Telemetry;

use super::Command;

/// Installs the log for `command` ([`subscriber`]).
pub(super) fn init(command: &Command, telemetry: Option<&Telemetry>) {
    subscriber(command, telemetry).init();
}

/// The log for `command`: `TOOLHOST_LOG`'s filter, else [`default_filter`];
/// plain lines for a one-shot command unless `TOOLHOST_LOG` is set (whoever
/// sets it wants a log, with targets to write its directives from); and the
/// telemetry's layer, when there is one.
///
/// Without telemetry there is no layer in its place: an absent (`None`)
/// layer counts as one that wants every span, so each call's spans (meant for
/// export only) were built, entered on every poll and closed for nobody, a
/// tenth of a trivial call's CPU over stdio.
fn subscriber(
    command: &Command,
    telemetry: Option<&Telemetry>,
) -> Box<dyn Subscriber + Send + Sync> {
    use std::io::IsTerminal as _;
    let asked = std::env::var_os("TOOLHOST_LOG").is_some();
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter(command)));
    // The spans meant for export are no log lines.
    if let Ok(directive) = NOT_LOGGED.parse() {
        filter = filter.add_directive(directive);
    }
    let plain = !asked && !matches!(command, Command::Serve { .. });
    let layer = tracing_subscriber::fmt::layer()
        .fmt_fields(log_fields())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let layer: Box<dyn Layer<_> + Send + Sync> = if plain {
        Box::new(layer.event_format(Plain))
    } else {
        Box::new(layer)
    };
    let log = tracing_subscriber::registry()
        .with(ClientMistakes.with_filter(
            tracing_subscriber::filter::Targets::new().with_target("rmcp::service", Level::WARN),
        ))
        .with(layer.with_filter(filter));
    match telemetry {
        Some(telemetry) => Box::new(log.with(telemetry.layer())),
        None => Box::new(log),
    }
}

/// The directive that keeps the exported spans ([`toolhost::spans::TARGET`]) out of the log.
const NOT_LOGGED: &str = "toolhost::otel=off";

/// The log filter when `TOOLHOST_LOG` is not set: warnings; `serve` also
/// logs each plugin's load, reload and removal, and one-shot commands leave
/// load failures to their own output (one report per failure, not two).
///
/// A tool several plugins offer is warned about where the names are the
/// point: `serve`, `list` and `status`. The commands that name one tool
/// (call, describe, read, prompt) say nothing of it: a qualified name
/// (`a.echo`) works, and the bare one fails with the qualified names to use.
/// That warning's target is `toolhost::clash` (the library's `log::CLASH_TARGET`).
fn default_filter(command: &Command) -> &'static str {
    match command {
        Command::Serve { .. } => "warn,toolhost::load=info,toolhost::serve=info",
        Command::List { .. } | Command::Status { .. } => "warn,toolhost::load=off",
        _ => "warn,toolhost::load=off,toolhost::clash=off",
    }
}

/// Log fields as tracing's default formatter writes them (`message`, then
/// `name=value`), with control characters escaped: text a plugin or a client
/// chose (an error message, a tool name, a trap's backtrace) stays on its own
/// log line and cannot forge another or drive the terminal.
fn log_fields() -> impl for<'w> FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt as _;
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let value = format!("{value:?}");
        let text = toolhost::escape_control(&value);
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{field}={text}")
        }
    })
    .delimited(" ")
}

/// An event as one plain line, `warning: MESSAGE name=value…`: the level as
/// a word, no timestamp, target or spans.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(
        &self,
        cx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "{}: ", level_word(*event.metadata().level()))?;
        cx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

fn level_word(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// rmcp warns about every request its handler answered with an error
/// (`rmcp::service`, "response error", with the request's `id` and the
/// `error`): an unknown tool, bad arguments, a resource that is not there.
/// Those are the client's mistakes, answered to the client; the server's log
/// keeps them at debug (target `toolhost::mcp`). Internal errors (-32603),
/// the server's own failures, stay warnings.
struct ClientMistakes;

impl<S: Subscriber> Layer<S> for ClientMistakes {
    fn event_enabled(&self, event: &Event<'_>, _cx: Context<'_, S>) -> bool {
        if !is_response_error(event.metadata()) {
            return true;
        }
        let mut seen = ResponseError::default();
        event.record(&mut seen);
        if seen.is_stopping() {
            // A stop's refusals and cut calls: its drain log lines count them.
            tracing::debug!(
                target: "toolhost::mcp",
                id = %seen.id,
                error = %seen.error,
                "a call was refused or cut short by the stop"
            );
            return false;
        }
        if !seen.is_client_mistake() {
            return true;
        }
        tracing::debug!(
            target: "toolhost::mcp",
            id = %seen.id,
            error = %seen.error,
            "a client's request failed"
        );
        false
    }
}

/// Whether `metadata` is rmcp's "response error" event: a warning of
/// `rmcp::service` with the fields `id` and `error` (its other warnings
/// carry other fields).
fn is_response_error(metadata: &Metadata<'_>) -> bool {
    let fields = metadata.fields();
    metadata.target() == "rmcp::service"
        && *metadata.level() == Level::WARN
        && fields.field("id").is_some()
        && fields.field("error").is_some()
        && fields.len() == 3
}

/// The fields of rmcp's "response error" event, as text.
#[derive(Default)]
struct ResponseError {
    id: String,
    error: String,
}

impl ResponseError {
    /// Whether the error is one the client caused: any JSON-RPC error but
    /// an internal error (rmcp's `ErrorData` debug text names its code).
    fn is_client_mistake(&self) -> bool {
        self.error.contains("ErrorCode(") && !self.error.contains("ErrorCode(-32603)")
    }

    /// Whether the error is a stop's: a call refused while draining or cut
    /// at its deadline (their `data` names [`toolhost::mcp::STOPPING`]).
    fn is_stopping(&self) -> bool {
        self.error
            .contains(&format!("String(\"{}\")", toolhost::mcp::STOPPING))
    }
}

impl Visit for ResponseError {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "id" => self.id = format!("{value:?}"),
            "error" => self.error = format!("{value:?}"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_stay_warnings_and_the_rest_are_the_clients() {
        let error = |code: i32| ResponseError {
            id: "1".into(),
            error: format!("ErrorData {{ code: ErrorCode({code}), message: \"x\", data: None }}"),
        };
        assert!(error(-32602).is_client_mistake());
        assert!(error(-32002).is_client_mistake());
        assert!(!error(-32603).is_client_mistake());
        assert!(!ResponseError::default().is_client_mistake());
    }

    #[test]
    fn a_stops_refusals_and_cut_calls_are_no_warnings() {
        let error = |data: Option<serde_json::Value>| ResponseError {
            id: "1".into(),
            error: format!(
                "ErrorData {{ code: ErrorCode(-32603), message: \"x\", data: {data:?} }}"
            ),
        };
        let stopping = serde_json::json!({"reason": toolhost::mcp::STOPPING, "may_have_run": true});
        assert!(error(Some(stopping)).is_stopping());
        assert!(!error(None).is_stopping());
        assert!(!error(Some(serde_json::json!({"reason": "other"}))).is_stopping());
    }

    #[test]
    fn without_telemetry_a_call_builds_no_span() {
        use clap::Parser as _;
        let cli = super::super::Cli::try_parse_from(["toolhost", "serve"]).unwrap();
        tracing::subscriber::with_default(subscriber(&cli.command, None), || {
            let exported = tracing::info_span!(target: "toolhost::otel", "tools/call");
            assert!(exported.is_disabled(), "a span for export only was built");
            let logged = tracing::warn_span!(target: "toolhost::mcp", "session");
            assert!(!logged.is_disabled(), "a span the log wants was not built");
        });
    }

    #[test]
    fn one_shot_commands_leave_clashes_to_list_and_status() {
        use clap::Parser as _;
        let filter = |args: &[&str]| {
            let cli = super::super::Cli::try_parse_from(args).unwrap();
            default_filter(&cli.command)
        };
        let quiet = "toolhost::clash=off";
        assert!(!filter(&["toolhost", "list"]).contains(quiet));
        assert!(!filter(&["toolhost", "status"]).contains(quiet));
        assert!(!filter(&["toolhost", "serve"]).contains(quiet));
        assert!(filter(&["toolhost", "call", "a.echo", "{}"]).contains(quiet));
        assert!(filter(&["toolhost", "describe", "a.echo"]).contains(quiet));
    }
}
