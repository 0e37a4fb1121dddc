//! `[oci]`: pulling plugins from and pushing them to OCI registries
//! (`toolhost pull`, `toolhost push`).

use serde::Deserialize;

/// Registry settings (`[oci]`); unset ones keep their default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OciConfig {
    /// Registries (`host:port` or `host`) that `--insecure` may reach over
    /// plain HTTP besides loopback ones (`localhost`, 127.0.0.0/8, `::1`).
    #[serde(default)]
    pub insecure_registries: Vec<String>,
    /// The largest component a pull takes, in bytes (256 MiB).
    pub max_bytes: Option<u64>,
}
