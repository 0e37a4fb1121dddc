//! cosign's encrypted private key file: scrypt (N = 2^15, r = 8, p = 1)
//! derives a key from the password and a random salt; NaCl secretbox
//! (XSalsa20-Poly1305) seals the PKCS#8 key with it; the JSON of both is the
//! PEM's content.

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// cosign's encrypted key file: scrypt (N = 2^15, r = 8, p = 1) derives a
/// key from the password and a random salt; NaCl secretbox (XSalsa20-Poly1305)
/// seals the PKCS#8 key with it.
#[derive(Serialize, Deserialize)]
struct EncryptedKey {
    kdf: Kdf,
    cipher: Cipher,
    #[serde(with = "base64_bytes")]
    ciphertext: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    #[serde(with = "base64_bytes")]
    salt: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u32,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
struct Cipher {
    name: String,
    #[serde(with = "base64_bytes")]
    nonce: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// The scrypt key of `password` and `salt` (cosign's parameters: r = 8,
/// p = 1, N = 2^15 or 2^16).
fn box_key(
    password: &[u8],
    params: &KdfParams,
    salt: &[u8],
) -> Result<Zeroizing<[u8; 32]>, String> {
    let log_n = match (params.n, params.r, params.p) {
        (32768, 8, 1) => 15,
        (65536, 8, 1) => 16,
        (n, r, p) => return Err(format!("unexpected scrypt parameters N={n} r={r} p={p}")),
    };
    let scrypt_params =
        scrypt::Params::new(log_n, params.r, params.p, 32).map_err(|e| e.to_string())?;
    let mut key = Zeroizing::new([0; 32]);
    scrypt::scrypt(password, salt, &scrypt_params, key.as_mut()).map_err(|e| e.to_string())?;
    Ok(key)
}

pub(super) fn encrypt(plaintext: &[u8], password: &[u8]) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    use rand_core::RngCore as _;
    let (mut salt, mut nonce) = (vec![0; 32], vec![0; 24]);
    rand_core::OsRng.fill_bytes(&mut salt);
    rand_core::OsRng.fill_bytes(&mut nonce);
    let params = KdfParams {
        n: 32768,
        r: 8,
        p: 1,
    };
    let key = box_key(password, &params, &salt)?;
    let ciphertext = crypto_secretbox::XSalsa20Poly1305::new(key.as_ref().into())
        .encrypt(nonce.as_slice().into(), plaintext)
        .map_err(|e| e.to_string())?;
    let file = EncryptedKey {
        kdf: Kdf {
            name: "scrypt".to_owned(),
            params,
            salt,
        },
        cipher: Cipher {
            name: "nacl/secretbox".to_owned(),
            nonce,
        },
        ciphertext,
    };
    serde_json::to_vec(&file).map_err(|e| e.to_string())
}

pub(super) fn decrypt(file: &[u8], password: &[u8]) -> Result<Zeroizing<Vec<u8>>, String> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    let file: EncryptedKey =
        serde_json::from_slice(file).map_err(|e| format!("not cosign's format: {e}"))?;
    if file.kdf.name != "scrypt" || file.cipher.name != "nacl/secretbox" {
        return Err(format!(
            "unknown key derivation `{}` or cipher `{}`",
            crate::escape_control(&file.kdf.name),
            crate::escape_control(&file.cipher.name)
        ));
    }
    if file.cipher.nonce.len() != 24 {
        return Err("a nonce that is not 24 bytes".to_owned());
    }
    let key = box_key(password, &file.kdf.params, &file.kdf.salt)?;
    crypto_secretbox::XSalsa20Poly1305::new(key.as_ref().into())
        .decrypt(
            file.cipher.nonce.as_slice().into(),
            file.ciphertext.as_slice(),
        )
        .map(Zeroizing::new)
        .map_err(|_| "the password does not open it".to_owned())
}
