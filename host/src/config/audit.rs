//! `[audit]`: the audit trail of `toolhost serve` (see [`crate::audit`]).

use std::path::PathBuf;

use serde::Deserialize;

use crate::audit::AuditOptions;

/// `[audit]`: one JSON record per call, to a file and/or the log.
///
/// ```toml
/// [audit]
/// file = "audit.jsonl"     # relative to this file; rotated to audit.jsonl.1
/// max_file_mib = 64
/// log = false              # also to the log (target toolhost::audit)
/// arguments = false        # the arguments themselves (redacted), not just their digest
/// redact = ["ssn"]         # keys to redact besides password, token, secret, key, ...
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AuditConfig {
    /// The file records are appended to (JSON lines).
    pub file: Option<PathBuf>,
    /// The size, in MiB, at which the file is rotated to `FILE.1` (64).
    pub max_file_mib: Option<u64>,
    /// Whether records also go to the log (target `toolhost::audit`).
    #[serde(default)]
    pub log: bool,
    /// Whether records hold the (redacted) arguments, not only their digest.
    #[serde(default)]
    pub arguments: bool,
    /// Keys to redact besides [`REDACTED_KEYS`](crate::audit::REDACTED_KEYS).
    #[serde(default)]
    pub redact: Vec<String>,
    /// How many records may wait for the writer before new ones are dropped
    /// and counted (10 000).
    pub queue: Option<usize>,
}

impl AuditConfig {
    /// The options this section describes; records carry `replica`.
    pub fn options(&self, replica: Option<&str>) -> AuditOptions {
        let mut options = AuditOptions::default();
        if let Some(file) = &self.file {
            options.file(file.clone());
        }
        if let Some(mib) = self.max_file_mib {
            options.max_file_bytes(mib.saturating_mul(1 << 20));
        }
        if let Some(queue) = self.queue {
            options.queue(queue);
        }
        if let Some(replica) = replica {
            options.replica(replica);
        }
        options
            .to_log(self.log)
            .arguments(self.arguments)
            .redact(self.redact.iter().cloned());
        options
    }
}
