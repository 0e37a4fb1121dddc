//! One source: a component in a registry, served as a plugin.

use std::path::PathBuf;
use std::time::Duration;

use super::DEFAULT_POLL;
use crate::oci::{Digest, Reference};

/// One source: a component in a registry, served as a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Source {
    /// The component (`host/repo:tag`, or pinned `host/repo@sha256:…`).
    pub reference: Reference,
    /// The manifest digest it must resolve to. A tag pointing elsewhere is
    /// refused (the pinned version, if serving, keeps serving).
    pub pin: Option<Digest>,
    /// How often a tag is checked; for a reference pinned by digest, how
    /// often a failed fetch is retried ([`DEFAULT_POLL`]).
    pub poll: Duration,
    /// The plugin's name (by default the repository's last segment).
    pub name: String,
    /// Reach the registry over plain HTTP (loopback, or a registry listed in
    /// [`ClientOptions::insecure_registries`](crate::oci::ClientOptions::insecure_registries)).
    pub insecure: bool,
    /// A file holding a bearer token; else `$TOOLHOST_REGISTRY_TOKEN`, else
    /// the Docker `config.json`, else anonymous (as `toolhost pull`).
    pub token_file: Option<PathBuf>,
    /// Public keys (PEM files) one of which must have signed a version
    /// (cosign's layout, in the same registry) before it is served; empty:
    /// no signature is required.
    pub public_keys: Vec<PathBuf>,
}

impl Source {
    /// A source of `reference`, named after its repository's last segment,
    /// pinned to its digest if it has one, checked every [`DEFAULT_POLL`].
    pub fn new(reference: Reference) -> Self {
        Self {
            name: reference.name().to_owned(),
            pin: reference.digest().cloned(),
            reference,
            poll: DEFAULT_POLL,
            insecure: false,
            token_file: None,
            public_keys: Vec::new(),
        }
    }

    /// The path the plugin is listed under in a [`PluginDir`](crate::PluginDir)
    /// (`oci://REFERENCE/NAME.wasm`): what its status and its load errors name.
    pub fn label(&self) -> PathBuf {
        PathBuf::from(format!("oci://{}/{}.wasm", self.reference, self.name))
    }

    /// Whether the reference is a tag (followed), not a digest (fetched once).
    pub(super) fn tagged(&self) -> bool {
        self.reference.digest().is_none()
    }
}
