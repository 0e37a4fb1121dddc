//! Signatures and keys cosign made, and round trips of toolhost's own.

use super::*;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cosign")
        .join(name)
}

/// A signature cosign made (from sigstore-rs's tests): the payload
/// toolhost writes for the same image is cosign's byte for byte, and the
/// signature verifies with cosign's public key.
#[test]
fn a_signature_cosign_made_verifies_over_the_payload_toolhost_writes() {
    let public = "-----BEGIN PUBLIC KEY-----\n\
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAENptdY/l3nB0yqkXLBWkZWQwo6+cu\n\
        OSWS1X9vPavpiQOoTTGC0xX57OojUadxF1cdQmrsiReWg2Wn4FneJfa8xw==\n\
        -----END PUBLIC KEY-----\n";
    let signature = "MEUCIQD6q/COgzOyW0YH1Dk+CCYSt4uAhm3FDHUwvPI55zwnlwIgE0ZK58ZOWpZw8YVm\
        BapJhBqCfdPekIknimuO0xH8Jh8=";
    let digest = "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b";
    let payload = serde_json::to_vec(&SimpleSigning {
        critical: Critical {
            identity: Identity {
                docker_reference: "registry-testing.svc.lan/busybox".to_owned(),
            },
            image: Image {
                docker_manifest_digest: digest.to_owned(),
            },
            kind: SIMPLE_SIGNING_TYPE.to_owned(),
        },
        optional: None,
    })
    .unwrap();
    assert_eq!(
        String::from_utf8(payload.clone()).unwrap(),
        format!(
            "{{\"critical\":{{\"identity\":{{\"docker-reference\":\
             \"registry-testing.svc.lan/busybox\"}},\"image\":{{\"docker-manifest-digest\":\
             \"{digest}\"}},\"type\":\"cosign container image signature\"}},\"optional\":null}}"
        )
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cosign.pub");
    std::fs::write(&file, public).unwrap();
    let keys = PublicKeys::read(std::slice::from_ref(&file)).unwrap();
    let signature = Signature::from_der(
        &base64::engine::general_purpose::STANDARD
            .decode(signature)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(keys.signer_of(&payload, &signature), Some(file.as_path()));
    let mut tampered = payload.clone();
    tampered[20] ^= 1;
    assert_eq!(keys.signer_of(&tampered, &signature), None);
}

#[test]
fn keys_cosign_made_open_with_their_password() {
    // `cosign generate-key-pair` with an empty password.
    SigningKey::read(&data("cosign-generated-empty-password.key"), b"").unwrap();
    let err = SigningKey::read(&data("cosign-generated-empty-password.key"), b"x").unwrap_err();
    assert!(err.to_string().contains("a wrong password?"), "{err}");
    // An older cosign label, and an unencrypted PKCS#8 key.
    let encrypted = SigningKey::read(&data("password.key"), b"password").unwrap();
    let err = SigningKey::read(&data("password.key"), b"").unwrap_err();
    assert!(err.to_string().contains("COSIGN_PASSWORD"), "{err}");
    let plain = SigningKey::read(&data("pkcs8.key"), b"").unwrap();
    assert_ne!(encrypted.key.verifying_key(), plain.key.verifying_key());
    let err = SigningKey::read(&data("README.md"), b"").unwrap_err();
    assert!(err.to_string().contains("not a PEM file"), "{err}");
}

#[test]
fn generated_keys_round_trip_through_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = generate_key_pair(b"pw").unwrap();
    assert!(private.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    let (key_file, pub_file) = (dir.path().join("a.key"), dir.path().join("a.pub"));
    std::fs::write(&key_file, private.as_bytes()).unwrap();
    std::fs::write(&pub_file, public).unwrap();
    let key = SigningKey::read(&key_file, b"pw").unwrap();
    assert!(SigningKey::read(&key_file, b"other").is_err());
    let keys = PublicKeys::read(&[pub_file]).unwrap();
    let signature: Signature = key.key.sign(b"payload");
    assert!(keys.signer_of(b"payload", &signature).is_some());
    // Another key pair's public key does not verify it.
    let (_, other) = generate_key_pair(b"").unwrap();
    let other_file = dir.path().join("b.pub");
    std::fs::write(&other_file, other).unwrap();
    let other = PublicKeys::read(&[other_file]).unwrap();
    assert!(other.signer_of(b"payload", &signature).is_none());
    assert_ne!(other.fingerprint(), keys.fingerprint());
    // Not keys.
    let junk = dir.path().join("junk.pub");
    std::fs::write(&junk, "hello").unwrap();
    let err = PublicKeys::read(&[junk]).unwrap_err();
    assert!(
        err.to_string().contains("not an ECDSA P-256 public key"),
        "{err}"
    );
}
