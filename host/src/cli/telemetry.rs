//! OpenTelemetry for the commands that run calls (`serve`, `call`): on when
//! `[telemetry]` or the `OTEL_EXPORTER_OTLP_*` variables say so (see
//! `toolhost::telemetry`).

use anyhow::Result;
use toolhost::telemetry::{Telemetry, TelemetryOptions};

use super::{Cli, Command};

/// The export for `cli`'s command, if it runs calls and telemetry is on. A
/// configuration file that does not load is left to the command to report.
///
/// # Errors
/// A `[telemetry]` setting or an endpoint that is wrong.
pub(super) fn start(cli: &Cli) -> Result<Option<Telemetry>> {
    if !matches!(cli.command, Command::Serve { .. } | Command::Call { .. }) {
        return Ok(None);
    }
    let Ok(config) = super::config(cli) else {
        return Ok(None);
    };
    let replica = super::serve::replica_name(&config.serve);
    let replica = replica.as_deref();
    let options = match &config.telemetry {
        Some(section) => section.options(replica)?,
        None => {
            let mut options = TelemetryOptions::default();
            options.replica = replica.map(str::to_owned);
            options
        }
    };
    Ok(Telemetry::start(&options)?)
}
