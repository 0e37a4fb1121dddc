//! cosign signatures of components (key pairs, no keyless), in cosign's own
//! layout, so `cosign verify --key` accepts toolhost's signatures and toolhost
//! accepts cosign's.
//!
//! cosign keeps the signatures of an artifact `host/repo@sha256:HEX` in the
//! same repository, as the image tagged `sha256-HEX.sig`: one layer per
//! signature, each a "simple signing" JSON payload naming the digest, with the
//! base64 ECDSA signature of the payload in the layer's
//! `dev.cosignproject.cosign/signature` annotation. [`Client::verify_signature`]
//! reads them through the same bounded client as a pull; [`Client::sign`]
//! appends a layer, keeping the signatures already there.
//!
//! Keys are ECDSA P-256 (what `cosign generate-key-pair` makes), in PEM:
//! public keys as SPKI (`cosign.pub`, `openssl pkey -pubout`), private keys as
//! cosign's encrypted files (scrypt, then NaCl secretbox), PKCS#8 or SEC1.
//! Signatures stored as Sigstore bundles through the OCI referrers API are not
//! read. Keyless signing (Fulcio certificates, the Rekor transparency log)
//! needs public services a host behind a firewall cannot reach: not supported.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _};
use p256::pkcs8::{EncodePublicKey as _, LineEnding};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::oci::{Client, Digest, MANIFEST_MEDIA_TYPE, OciError, Reference};

mod key_file;

use key_file::{decrypt, encrypt};

/// The media type of a cosign signature layer (its simple signing payload).
pub const SIGNATURE_LAYER_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The layer annotation holding a cosign signature (base64).
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The config media type of a new signature image (an empty OCI image
/// config).
const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// The largest signature manifest read.
const MAX_SIGNATURE_MANIFEST_BYTES: usize = 1 << 20;

/// The most signature layers read (later ones are ignored).
const MAX_SIGNATURES: usize = 64;

/// The largest simple signing payload read (cosign's are under 1 KiB).
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// The PEM label of cosign's encrypted private keys (older cosign wrote
/// `ENCRYPTED COSIGN PRIVATE KEY`, also read).
const ENCRYPTED_KEY_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";

/// The public keys a component must be signed with (one is enough): ECDSA
/// P-256 keys in PEM, as `cosign generate-key-pair`, `toolhost keygen` or
/// `openssl pkey -pubout` write them.
pub struct PublicKeys {
    keys: Vec<(PathBuf, VerifyingKey)>,
    fingerprint: Digest,
}

impl std::fmt::Debug for PublicKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKeys")
            .field("files", &self.files().collect::<Vec<_>>())
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

impl PublicKeys {
    /// Reads the PEM public keys in `files`.
    ///
    /// # Errors
    /// [`OciError::Key`] when a file cannot be read or holds no ECDSA P-256
    /// public key, or when `files` is empty.
    pub fn read(files: &[PathBuf]) -> Result<Self, OciError> {
        if files.is_empty() {
            return Err(OciError::Key {
                path: PathBuf::new(),
                reason: "no public key given".to_owned(),
            });
        }
        let mut keys = Vec::with_capacity(files.len());
        let mut ders = Vec::with_capacity(files.len());
        for path in files {
            let failed = |reason: String| OciError::Key {
                path: path.clone(),
                reason,
            };
            let pem = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
            let key = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|e| {
                failed(format!(
                    "not an ECDSA P-256 public key in PEM (cosign's kind): {e}"
                ))
            })?;
            let der = key.to_public_key_der().map_err(|e| failed(e.to_string()))?;
            ders.push(crate::hex::hex(der.as_bytes()));
            keys.push((path.clone(), key));
        }
        ders.sort();
        Ok(Self {
            keys,
            fingerprint: Digest::of(ders.join("\n").as_bytes()),
        })
    }

    /// A digest of the keys (whatever their files' layout): what a record of
    /// a verification names, so that a record made with other keys is not
    /// taken for one made with these.
    pub fn fingerprint(&self) -> &Digest {
        &self.fingerprint
    }

    /// The key files, as given.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.keys.iter().map(|(path, _)| path.as_path())
    }

    /// The first key whose signature `signature` of `payload` is.
    fn signer_of(&self, payload: &[u8], signature: &Signature) -> Option<&Path> {
        self.keys
            .iter()
            .find(|(_, key)| key.verify(payload, signature).is_ok())
            .map(|(path, _)| path.as_path())
    }

    fn listed(&self) -> String {
        self.files()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A private key to sign with (ECDSA P-256): a PEM file as `cosign
/// generate-key-pair` or `toolhost keygen` write it (encrypted with a
/// password, perhaps empty), or unencrypted PKCS#8 or SEC1 (`openssl`).
pub struct SigningKey {
    key: p256::ecdsa::SigningKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

impl SigningKey {
    /// Reads the private key in `path`, decrypting it with `password` if it
    /// is encrypted.
    ///
    /// # Errors
    /// [`OciError::Key`] when it cannot be read or decrypted, or is not an
    /// ECDSA P-256 key.
    pub fn read(path: &Path, password: &[u8]) -> Result<Self, OciError> {
        let failed = |reason: String| OciError::Key {
            path: path.to_owned(),
            reason,
        };
        let pem = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?);
        let (label, der) = pem_rfc7468::decode_vec(pem.trim().as_bytes())
            .map_err(|e| failed(format!("not a PEM file: {e}")))?;
        let der = Zeroizing::new(der);
        let key = match label {
            ENCRYPTED_KEY_LABEL | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let pkcs8 = decrypt(&der, password).map_err(|reason| {
                    failed(if password.is_empty() {
                        format!(
                            "cannot decrypt it without a password (set $COSIGN_PASSWORD): {reason}"
                        )
                    } else {
                        format!("cannot decrypt it (a wrong password?): {reason}")
                    })
                })?;
                p256::ecdsa::SigningKey::from_pkcs8_der(&pkcs8)
                    .map_err(|e| failed(format!("not an ECDSA P-256 key: {e}")))?
            }
            "PRIVATE KEY" => p256::ecdsa::SigningKey::from_pkcs8_der(&der)
                .map_err(|e| failed(format!("not an ECDSA P-256 key: {e}")))?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(&der)
                .map(p256::ecdsa::SigningKey::from)
                .map_err(|e| failed(format!("not an ECDSA P-256 key: {e}")))?,
            other => {
                return Err(failed(format!(
                    "a PEM `{}`, not a private key",
                    crate::escape_control(other)
                )));
            }
        };
        Ok(Self { key })
    }
}

/// A new ECDSA P-256 key pair as `cosign generate-key-pair` makes it: the
/// private key encrypted with `password` (cosign's format, which cosign
/// reads; the password may be empty), and the public key, both PEM.
///
/// # Errors
/// [`OciError::Key`] when the key cannot be encoded or encrypted.
pub fn generate_key_pair(password: &[u8]) -> Result<(Zeroizing<String>, String), OciError> {
    let failed = |reason: String| OciError::Key {
        path: PathBuf::new(),
        reason: format!("cannot generate a key pair: {reason}"),
    };
    let key = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
    let pkcs8 = key.to_pkcs8_der().map_err(|e| failed(e.to_string()))?;
    let encrypted = encrypt(pkcs8.as_bytes(), password).map_err(failed)?;
    let private = pem_rfc7468::encode_string(ENCRYPTED_KEY_LABEL, LineEnding::LF, &encrypted)
        .map_err(|e| failed(e.to_string()))?;
    let public = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| failed(e.to_string()))?;
    Ok((Zeroizing::new(private), public))
}

/// cosign's "simple signing" payload: what a signature signs.
#[derive(Serialize, Deserialize)]
struct SimpleSigning {
    critical: Critical,
    optional: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The `type` of a cosign image signature payload.
const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// What [`Client::verify_signature`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// The key file whose signature verified.
    pub key: PathBuf,
    /// How many signatures of this digest there are in all.
    pub signatures: usize,
}

/// What [`Client::sign`] pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Signed {
    /// The component signed, pinned to its digest.
    pub reference: Reference,
    /// Where its signatures are (`host/repo:sha256-HEX.sig`).
    pub signatures_at: Reference,
    /// How many signatures it has now, this one included.
    pub signatures: usize,
}

impl Client {
    /// Checks that the component `reference` names (pinned to a digest) has
    /// a cosign signature made with one of `keys`, reading the signatures
    /// kept beside it in the registry (at most 64, each payload at most
    /// 64 KiB, each checked against its digest).
    ///
    /// # Errors
    /// [`OciError::Registry`] when the registry cannot be reached (or takes
    /// longer than the client's connect plus read timeout);
    /// [`OciError::Unsigned`] when there is no signature of this digest;
    /// [`OciError::BadSignature`] when there are some, none made with `keys`;
    /// [`OciError::NotWasmArtifact`] when `reference` has no digest or the
    /// signature image is malformed.
    pub async fn verify_signature(
        &self,
        reference: &Reference,
        keys: &PublicKeys,
    ) -> Result<Verified, OciError> {
        let span = crate::spans::oci("verify", reference);
        crate::spans::within(span, self.verify_now(reference, keys), |_| "oci").await
    }

    async fn verify_now(
        &self,
        reference: &Reference,
        keys: &PublicKeys,
    ) -> Result<Verified, OciError> {
        let digest = reference
            .digest()
            .ok_or_else(|| OciError::NotWasmArtifact {
                reference: reference.to_string(),
                reason: "a signature is checked for a digest, not a tag".to_owned(),
            })?;
        let action = "reading the signatures of";
        let Some(manifest) =
            tokio::time::timeout(self.transfer_timeout(), self.signature_manifest(reference))
                .await
                .map_err(|_| self.timed_out(action, reference))??
        else {
            return Err(OciError::Unsigned {
                reference: reference.to_string(),
            });
        };
        let at = reference.signatures().to_client();
        let mut signatures = 0;
        for layer in manifest
            .layers
            .iter()
            .filter(|layer| layer.media_type == SIGNATURE_LAYER_MEDIA_TYPE)
            .take(MAX_SIGNATURES)
        {
            let Some(signature) = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
                .and_then(|der| Signature::from_der(&der).ok())
            else {
                continue;
            };
            let payload = tokio::time::timeout(
                self.transfer_timeout(),
                self.small_blob(&at, layer, MAX_PAYLOAD_BYTES),
            )
            .await
            .map_err(|_| self.timed_out(action, reference))?
            .map_err(|e| OciError::registry(action, reference, &e))?;
            // Only a payload naming this very digest counts.
            let Some(payload) = payload else { continue };
            let names_digest = serde_json::from_slice::<SimpleSigning>(&payload)
                .is_ok_and(|p| p.critical.image.docker_manifest_digest == digest.to_string());
            if !names_digest {
                continue;
            }
            signatures += 1;
            if let Some(key) = keys.signer_of(&payload, &signature) {
                return Ok(Verified {
                    key: key.to_owned(),
                    signatures,
                });
            }
        }
        if signatures == 0 {
            return Err(OciError::Unsigned {
                reference: reference.to_string(),
            });
        }
        Err(OciError::BadSignature {
            reference: reference.to_string(),
            signatures,
            keys: keys.listed(),
        })
    }

    /// Signs the component `reference` names (its tag is resolved to a
    /// digest first) with `key`, and pushes the signature where cosign keeps
    /// it, after the signatures already there.
    ///
    /// # Errors
    /// [`OciError::Registry`] when the registry cannot be reached or refuses;
    /// [`OciError::NotWasmArtifact`] when the signature image there is
    /// malformed.
    pub async fn sign(&self, reference: &Reference, key: &SigningKey) -> Result<Signed, OciError> {
        let digest = self.resolve(reference).await?;
        let pinned = reference.pinned(&digest);
        let payload = SimpleSigning {
            critical: Critical {
                identity: Identity {
                    docker_reference: format!("{}/{}", pinned.registry(), pinned.repository()),
                },
                image: Image {
                    docker_manifest_digest: digest.to_string(),
                },
                kind: SIMPLE_SIGNING_TYPE.to_owned(),
            },
            optional: None,
        };
        let payload = serde_json::to_vec(&payload).expect("a payload is plain data");
        let signature: Signature = key.key.sign(&payload);
        let signature =
            base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());

        let signatures_at = pinned.signatures();
        let target = signatures_at.to_client();
        let failed = |e: oci_client::errors::OciDistributionError| {
            OciError::registry("pushing a signature to", &signatures_at, &e)
        };
        let mut manifest = match self.signature_manifest(&pinned).await? {
            Some(manifest) => manifest,
            None => {
                let config = b"{}".to_vec();
                let config_digest = Digest::of(&config);
                self.inner
                    .push_blob(&target, config, &config_digest.to_string())
                    .await
                    .map_err(failed)?;
                OciImageManifest {
                    schema_version: 2,
                    media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
                    config: descriptor(SIGNATURE_CONFIG_MEDIA_TYPE, &config_digest, 2),
                    ..OciImageManifest::default()
                }
            }
        };
        let payload_digest = Digest::of(&payload);
        let mut layer = descriptor(SIGNATURE_LAYER_MEDIA_TYPE, &payload_digest, payload.len());
        layer.annotations = Some([(SIGNATURE_ANNOTATION.to_owned(), signature)].into());
        self.inner
            .push_blob(&target, payload, &payload_digest.to_string())
            .await
            .map_err(failed)?;
        manifest.layers.push(layer);
        let signatures = manifest.layers.len();
        let manifest = serde_json::to_vec(&manifest).expect("a manifest is plain data");
        self.inner
            .push_manifest_raw(
                &target,
                manifest,
                http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(failed)?;
        Ok(Signed {
            reference: pinned,
            signatures_at,
            signatures,
        })
    }

    /// The manifest of the signature image of the digest `reference` is
    /// pinned to; `None` when there is none.
    async fn signature_manifest(
        &self,
        reference: &Reference,
    ) -> Result<Option<OciImageManifest>, OciError> {
        let at = reference.signatures();
        let malformed = |reason: String| OciError::NotWasmArtifact {
            reference: at.to_string(),
            reason,
        };
        match self
            .inner
            .pull_manifest_raw(
                &at.to_client(),
                &self.auth.to_client(),
                &[MANIFEST_MEDIA_TYPE],
            )
            .await
        {
            Ok((raw, _)) if raw.len() > MAX_SIGNATURE_MANIFEST_BYTES => Err(malformed(format!(
                "its signature manifest is {} bytes (at most {MAX_SIGNATURE_MANIFEST_BYTES})",
                raw.len()
            ))),
            Ok((raw, _)) => serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|e| malformed(format!("its signature manifest does not parse: {e}"))),
            Err(error) if not_found(&error) => Ok(None),
            Err(error) => Err(OciError::registry(
                "reading the signatures of",
                reference,
                &error,
            )),
        }
    }

    /// The blob `layer` describes, if it is at most `max` bytes and hashes
    /// to its digest (`None` otherwise).
    async fn small_blob(
        &self,
        at: &oci_client::Reference,
        layer: &OciDescriptor,
        max: u64,
    ) -> Result<Option<Vec<u8>>, oci_client::errors::OciDistributionError> {
        use futures_util::StreamExt as _;
        let Ok(expected) = layer.digest.parse::<Digest>() else {
            return Ok(None);
        };
        if u64::try_from(layer.size).map_or(true, |size| size > max) {
            return Ok(None);
        }
        let mut stream = self.inner.pull_blob_stream(at, layer).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            bytes.extend_from_slice(&chunk?);
            if bytes.len() as u64 > max {
                return Ok(None);
            }
        }
        Ok((Digest::of(&bytes) == expected).then_some(bytes))
    }
}

fn descriptor(media_type: &str, digest: &Digest, size: usize) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_string(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    }
}

/// Whether the registry said the manifest does not exist.
fn not_found(error: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError, OciErrorCode};
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NotFound
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
