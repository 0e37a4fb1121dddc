//! `[[sources]]` in the CLI: plugins from OCI registries, resolved once by
//! the commands that load once and followed by `serve` (see `docs/oci.md`).

use anyhow::Result;
use serde_json::{Value, json};
use toolhost::oci::{SourceStatus, Sources};
use toolhost::{Config, Engine};

/// The configuration's sources, kept beside the compiled code; `None` when
/// it has none.
pub(super) fn open(config: &Config, engine: &Engine) -> Result<Option<Sources>> {
    if config.sources.is_empty() {
        return Ok(None);
    }
    let cache = engine.config().cache_dir.as_deref();
    Ok(Some(Sources::from_config(config, cache)?))
}

/// Warns about each source whose check, pull or load failed (the commands
/// that load once report failures themselves, not in the log); returns how
/// many did.
pub(super) fn warn_failed(sources: &Sources) -> usize {
    let mut failed = 0;
    for status in sources.status() {
        if let Some(error) = &status.error {
            failed += 1;
            eprintln!(
                "warning: {}",
                toolhost::escape_control(&format!(
                    "source `{}` ({}): {error}",
                    status.name, status.reference
                ))
            );
        }
    }
    failed
}

/// A source's part of a `status --json` row.
pub(super) fn json(status: &SourceStatus) -> Value {
    json!({
        "ref": status.reference.to_string(),
        "pin": status.pin.as_ref().map(ToString::to_string),
        "digest": status.digest.as_ref().map(ToString::to_string),
        "error": status.error,
    })
}

/// A source's line under its row in the `status` table.
pub(super) fn line(status: &SourceStatus) -> String {
    let serving = match &status.digest {
        Some(digest) => digest.to_string(),
        None => "nothing served".to_owned(),
    };
    let mut line = format!("from {} ({serving})", status.reference);
    if let Some(error) = &status.error {
        line.push_str("; ");
        line.push_str(error);
    }
    line
}
