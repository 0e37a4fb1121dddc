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

#[cfg(feature = "oci")]
impl super::Config {
    /// The registry client options `[oci]` asks for (its insecure registries
    /// and size limit), with no credentials: what `pull`, `push` and
    /// `[[sources]]` start from.
    pub fn oci_client_options(&self) -> crate::oci::ClientOptions {
        let mut options = crate::oci::ClientOptions::default();
        options
            .insecure_registries
            .clone_from(&self.oci.insecure_registries);
        if let Some(max) = self.oci.max_bytes {
            options.max_bytes = max;
        }
        options
    }
}
