//! Pushing and pulling one component over the OCI distribution protocol
//! (`oci-client`), verifying everything that is pulled.

use std::time::Duration;

use futures_util::StreamExt as _;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use sha2::{Digest as _, Sha256};

use crate::oci::answer::{self, MAX_TAGS_SHOWN, Meaning};
use crate::oci::artifact::config_json;
use crate::oci::{
    Auth, DEFAULT_MAX_BYTES, Digest, MANIFEST_MEDIA_TYPE, OciError, Reference,
    WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, check_component, insecure_allowed,
};

/// The largest manifest taken: the OCI distribution spec has registries
/// accept manifests up to 4 MiB; ours are well under 1 KiB.
const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// How a [`Client`] reaches registries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The credentials sent to every registry.
    pub auth: Auth,
    /// Registries (`host:port`) reached over plain HTTP instead of HTTPS
    /// (`--insecure`). Each must be on loopback or in
    /// [`insecure_registries`](Self::insecure_registries).
    pub plain_http: Vec<String>,
    /// Registries besides loopback ones that may be reached over plain HTTP
    /// (`[oci] insecure_registries`).
    pub insecure_registries: Vec<String>,
    /// The largest component [`Client::pull`] takes, in bytes
    /// ([`DEFAULT_MAX_BYTES`], 256 MiB).
    pub max_bytes: u64,
    /// How long connecting may take (10 s).
    pub connect_timeout: Duration,
    /// How long the registry may send nothing during a transfer (60 s).
    pub read_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            auth: Auth::Anonymous,
            plain_http: Vec::new(),
            insecure_registries: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
        }
    }
}

/// What [`Client::push`] pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pushed {
    /// The pushed artifact pinned to its manifest digest: pull this to get
    /// exactly these bytes.
    pub reference: Reference,
    /// The digest of the manifest.
    pub manifest_digest: Digest,
    /// The digest of the component (the layer): the file's SHA-256.
    pub layer_digest: Digest,
}

/// A pulled and verified component.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pulled {
    /// What was pulled, pinned to its manifest digest.
    pub reference: Reference,
    /// The digest of the manifest (equal to the pin, if there was one).
    pub manifest_digest: Digest,
    /// The digest of the component's bytes (checked against the manifest).
    pub layer_digest: Digest,
    /// The component.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Pulled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pulled")
            .field("reference", &self.reference)
            .field("manifest_digest", &self.manifest_digest)
            .field("layer_digest", &self.layer_digest)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// A registry client: pushes components as Wasm OCI artifacts and pulls them
/// back verified (see [the module](crate::oci)). Cheap to share by reference;
/// it keeps registry tokens between calls.
pub struct Client {
    pub(super) inner: oci_client::Client,
    pub(super) auth: Auth,
    max_bytes: u64,
    connect_timeout: Duration,
    read_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("auth", &self.auth)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with `options`.
    ///
    /// # Errors
    ///
    /// [`OciError::InsecureRefused`] when a registry in
    /// [`plain_http`](ClientOptions::plain_http) is neither on loopback nor
    /// listed; [`OciError::Client`] when TLS cannot be set up.
    pub fn new(options: &ClientOptions) -> Result<Self, OciError> {
        if let Some(refused) = options
            .plain_http
            .iter()
            .find(|r| !insecure_allowed(r, &options.insecure_registries))
        {
            return Err(OciError::InsecureRefused {
                registry: refused.clone(),
            });
        }
        // reqwest uses the process's rustls provider; ring is the one the
        // rest of the host (wasmtime-wasi-http) already links. Installing
        // fails only when one is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(options.plain_http.clone()),
            connect_timeout: Some(options.connect_timeout),
            read_timeout: Some(options.read_timeout),
            user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let inner =
            oci_client::Client::try_from(config).map_err(|e| OciError::Client(e.to_string()))?;
        Ok(Self {
            inner,
            auth: options.auth.clone(),
            max_bytes: options.max_bytes,
            connect_timeout: options.connect_timeout,
            read_timeout: options.read_timeout,
        })
    }

    /// How long a small exchange (signatures: a few requests of a few KiB)
    /// may take in all: connecting plus one read timeout.
    pub(super) fn transfer_timeout(&self) -> Duration {
        self.connect_timeout + self.read_timeout
    }

    /// The error of an exchange that took longer than
    /// [`transfer_timeout`](Self::transfer_timeout).
    pub(super) fn timed_out(&self, action: &'static str, reference: &Reference) -> OciError {
        OciError::Registry {
            action,
            reference: reference.to_string(),
            message: format!(
                "no answer within {} s",
                self.transfer_timeout().as_secs_f64()
            ),
        }
    }

    /// Pushes `component` to `reference` (which needs a tag, or is pushed
    /// as `latest`) as a Wasm OCI artifact.
    ///
    /// # Errors
    ///
    /// [`OciError::NotComponent`] before anything is sent when `component`
    /// is not a WebAssembly component; [`OciError::NotWasmArtifact`] for a
    /// reference pinned to a digest (a push names a tag);
    /// [`OciError::NoCredentials`] or [`OciError::CredentialsRefused`] when
    /// the registry wants other credentials; [`OciError::Registry`] when it
    /// cannot be reached or refuses otherwise.
    pub async fn push(&self, reference: &Reference, component: &[u8]) -> Result<Pushed, OciError> {
        let names = check_component(component).map_err(|source| OciError::NotComponent {
            what: "what would be pushed".to_owned(),
            source,
        })?;
        if reference.digest().is_some() {
            return Err(OciError::NotWasmArtifact {
                reference: reference.to_string(),
                reason: "a push needs a tag, not a digest (the digest is the result)".to_owned(),
            });
        }
        let layer_digest = Digest::of(component);
        let config = config_json(&names, &layer_digest);
        let config_digest = Digest::of(&config);
        let descriptor = |media_type: &str, digest: &Digest, size: usize| OciDescriptor {
            media_type: media_type.to_owned(),
            digest: digest.to_string(),
            size: i64::try_from(size).unwrap_or(i64::MAX),
            ..OciDescriptor::default()
        };
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
            config: descriptor(WASM_CONFIG_MEDIA_TYPE, &config_digest, config.len()),
            layers: vec![descriptor(
                WASM_LAYER_MEDIA_TYPE,
                &layer_digest,
                component.len(),
            )],
            ..OciImageManifest::default()
        };
        let manifest = serde_json::to_vec(&manifest).expect("a manifest is plain data");
        let manifest_digest = Digest::of(&manifest);

        let target = reference.to_client();
        let auth = self.auth.to_client();
        let action = "pushing to";
        self.inner
            .store_auth_if_needed(target.resolve_registry(), &auth)
            .await;
        let pushed = self
            .inner
            .push_blob(&target, component.to_vec(), &layer_digest.to_string())
            .await;
        self.answered(action, reference, pushed).await?;
        let pushed = self
            .inner
            .push_blob(&target, config, &config_digest.to_string())
            .await;
        self.answered(action, reference, pushed).await?;
        let pushed = self
            .inner
            .push_manifest_raw(
                &target,
                manifest,
                http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
            )
            .await;
        self.answered(action, reference, pushed).await?;
        Ok(Pushed {
            reference: reference.pinned(&manifest_digest),
            manifest_digest,
            layer_digest,
        })
    }

    /// The digest of the manifest `reference` names now (what its tag points
    /// to), asked with a `HEAD` request: cheap enough to poll, and not counted
    /// as a pull by registries that limit pulls. Nothing is trusted from the
    /// answer but the digest, and [`Client::pull`] of the reference pinned to
    /// it verifies what it names.
    ///
    /// # Errors
    ///
    /// [`OciError::NoTag`], [`OciError::NoManifest`],
    /// [`OciError::NoRepository`], [`OciError::NoCredentials`],
    /// [`OciError::CredentialsRefused`], [`OciError::Registry`] (unreachable,
    /// any other error), [`OciError::DigestMismatch`] when `reference` is pinned to another
    /// digest, [`OciError::NotWasmArtifact`] when the digest is not SHA-256.
    pub async fn resolve(&self, reference: &Reference) -> Result<Digest, OciError> {
        let digest = self
            .inner
            .fetch_manifest_digest(&reference.to_client(), &self.auth.to_client())
            .await;
        let digest = self.answered("resolving", reference, digest).await?;
        let digest: Digest = digest.parse().map_err(|_| OciError::NotWasmArtifact {
            reference: reference.to_string(),
            reason: format!(
                "its manifest digest `{}` is not sha256",
                crate::escape_control(&digest)
            ),
        })?;
        if let Some(pin) = reference.digest()
            && *pin != digest
        {
            return Err(OciError::DigestMismatch {
                what: "the manifest",
                reference: reference.to_string(),
                expected: pin.to_string(),
                actual: digest.to_string(),
            });
        }
        Ok(digest)
    }

    /// Pulls the component at `reference` and verifies it (see [the
    /// module](crate::oci)); `progress` is told the bytes received so far
    /// and the component's size as the layer arrives.
    ///
    /// # Errors
    ///
    /// What [`Client::resolve`] returns, [`OciError::NoBlob`],
    /// [`OciError::DigestMismatch`], [`OciError::NotWasmArtifact`],
    /// [`OciError::TooLarge`], [`OciError::NotComponent`].
    pub async fn pull(
        &self,
        reference: &Reference,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<Pulled, OciError> {
        let span = crate::spans::oci("pull", reference);
        crate::spans::within(span, self.pull_now(reference, progress), |_| "oci").await
    }

    async fn pull_now(
        &self,
        reference: &Reference,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<Pulled, OciError> {
        let source = reference.to_client();
        let auth = self.auth.to_client();
        let action = "pulling";
        let manifest = self
            .inner
            .pull_manifest_raw(&source, &auth, &[MANIFEST_MEDIA_TYPE])
            .await;
        let (raw, _) = self.answered(action, reference, manifest).await?;
        // oci-client checks the pin too; checked here as well, so the check
        // does not depend on a library's version.
        let manifest_digest = Digest::of(&raw);
        if let Some(pin) = reference.digest()
            && *pin != manifest_digest
        {
            return Err(OciError::DigestMismatch {
                what: "the manifest",
                reference: reference.to_string(),
                expected: pin.to_string(),
                actual: manifest_digest.to_string(),
            });
        }
        let not_artifact = |reason: String| OciError::NotWasmArtifact {
            reference: reference.to_string(),
            reason,
        };
        if raw.len() > MAX_MANIFEST_BYTES {
            return Err(not_artifact(format!(
                "its manifest is {} bytes (at most {MAX_MANIFEST_BYTES})",
                raw.len()
            )));
        }
        let manifest: OciImageManifest = serde_json::from_slice(&raw)
            .map_err(|e| not_artifact(format!("its manifest does not parse: {e}")))?;
        let layer = wasm_layer(&manifest).map_err(not_artifact)?;
        let layer_digest: Digest = layer.digest.parse().map_err(|_| {
            not_artifact(format!(
                "its layer digest `{}` is not sha256",
                crate::escape_control(&layer.digest)
            ))
        })?;
        let size = u64::try_from(layer.size)
            .map_err(|_| not_artifact(format!("its layer has a negative size {}", layer.size)))?;
        let too_large = |size: u64| OciError::TooLarge {
            reference: reference.to_string(),
            size,
            max: self.max_bytes,
        };
        if size > self.max_bytes {
            return Err(too_large(size));
        }

        let stream = self.inner.pull_blob_stream(&source, layer).await;
        let mut stream = self.answered(action, reference, stream).await?;
        if let Some(length) = stream.content_length
            && length > size
        {
            return Err(too_large(length.max(size)));
        }
        // At most `size` bytes, which is at most `max_bytes`: reading stops
        // at the first byte past what the manifest declared.
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut hasher = Sha256::new();
        progress(0, size);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| layer_error(reference, &e))?;
            let received = bytes.len() as u64 + chunk.len() as u64;
            if received > size {
                return Err(not_artifact(format!(
                    "its layer is longer than the {size} bytes its manifest declares"
                )));
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
            progress(received, size);
        }
        let actual = Digest::from_hasher(hasher);
        if actual != layer_digest {
            return Err(OciError::DigestMismatch {
                what: "the layer",
                reference: reference.to_string(),
                expected: layer_digest.to_string(),
                actual: actual.to_string(),
            });
        }
        check_component(&bytes).map_err(|source| OciError::NotComponent {
            what: format!("{reference}"),
            source,
        })?;
        Ok(Pulled {
            reference: reference.pinned(&manifest_digest),
            manifest_digest,
            layer_digest,
            bytes,
        })
    }
}

impl Client {
    /// `result`, its error said as what the registry's answer means when it
    /// is one the host knows ([`answer`]): a missing tag (with the tags
    /// there are), manifest, repository or blob, credentials missing or
    /// refused; any other error as it is.
    async fn answered<T>(
        &self,
        action: &'static str,
        reference: &Reference,
        result: Result<T, OciDistributionError>,
    ) -> Result<T, OciError> {
        let error = match result {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let answer = answer::read(&error);
        let said = answer.said;
        let pulling = !action.starts_with("push");
        Err(match answer.meaning {
            Meaning::ManifestUnknown if pulling => match reference.digest() {
                Some(digest) => OciError::NoManifest {
                    action,
                    reference: reference.to_string(),
                    repository: reference.repository().to_owned(),
                    digest: digest.to_string(),
                    said,
                },
                None => self.no_tag(action, reference, said).await,
            },
            Meaning::NameUnknown => OciError::NoRepository {
                action,
                reference: reference.to_string(),
                registry: reference.registry().to_owned(),
                repository: reference.repository().to_owned(),
                said,
            },
            Meaning::BlobUnknown => OciError::NoBlob {
                action,
                reference: reference.to_string(),
                blob: answer.blob,
                said,
            },
            Meaning::Unauthorized if self.auth == Auth::Anonymous => OciError::NoCredentials {
                action,
                reference: reference.to_string(),
                registry: reference.registry().to_owned(),
                said,
            },
            Meaning::Unauthorized => OciError::CredentialsRefused {
                action,
                reference: reference.to_string(),
                registry: reference.registry().to_owned(),
                repository: reference.repository().to_owned(),
                said,
            },
            Meaning::ManifestUnknown | Meaning::Other => {
                OciError::registry(action, reference, &error)
            }
        })
    }

    /// The tag of `reference` is not in its repository: say which tags are
    /// (the first [`MAX_TAGS_SHOWN`]), or that the repository is not there
    /// either. Listing is a courtesy: if it fails, the error says so alone.
    async fn no_tag(&self, action: &'static str, reference: &Reference, said: String) -> OciError {
        let listing = tokio::time::timeout(
            self.transfer_timeout(),
            self.inner.list_tags(
                &reference.to_client(),
                &self.auth.to_client(),
                Some(MAX_TAGS_SHOWN + 1),
                None,
            ),
        )
        .await;
        let tags = match listing {
            Ok(Ok(response)) => Some(Box::new(answer::tags_shown(&response.tags))),
            Ok(Err(error)) => {
                let listed = answer::read(&error);
                if listed.meaning == Meaning::NameUnknown {
                    return OciError::NoRepository {
                        action,
                        reference: reference.to_string(),
                        registry: reference.registry().to_owned(),
                        repository: reference.repository().to_owned(),
                        said: listed.said,
                    };
                }
                None
            }
            Err(_elapsed) => None,
        };
        OciError::NoTag {
            action,
            reference: reference.to_string(),
            repository: reference.repository().to_owned(),
            tag: reference.tag().unwrap_or("latest").to_owned(),
            tags,
            said,
        }
    }
}

/// The error of a chunk of a layer: oci-client checks the layer's digest
/// as the last chunk arrives, and says it through the stream's I/O error; a
/// mismatch is the registry's bytes being wrong (refused), not the registry
/// being unreachable.
fn layer_error(reference: &Reference, error: &std::io::Error) -> OciError {
    use oci_client::errors::DigestError;
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<DigestError>())
    {
        Some(DigestError::VerificationError { expected, actual }) => OciError::DigestMismatch {
            what: "the layer",
            reference: reference.to_string(),
            expected: expected.clone(),
            actual: actual.clone(),
        },
        _ => OciError::registry("pulling", reference, error),
    }
}

/// The one `application/wasm` layer of a Wasm artifact's manifest.
fn wasm_layer(manifest: &OciImageManifest) -> Result<&OciDescriptor, String> {
    let shown = |text: &str| crate::escape_control(text).into_owned();
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        return Err(format!("its manifest is a `{}`", shown(media_type)));
    }
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "its config is `{}`, not `{WASM_CONFIG_MEDIA_TYPE}`",
            shown(&manifest.config.media_type)
        ));
    }
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == WASM_LAYER_MEDIA_TYPE => Ok(layer),
        [layer] => Err(format!(
            "its layer is `{}`, not `{WASM_LAYER_MEDIA_TYPE}`",
            shown(&layer.media_type)
        )),
        layers => Err(format!(
            "it has {} layers, not exactly one `{WASM_LAYER_MEDIA_TYPE}`",
            layers.len()
        )),
    }
}
