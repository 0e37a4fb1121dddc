//! What a registry's error answer means. oci-client reports the OCI
//! distribution error envelope (`MANIFEST_UNKNOWN`, `NAME_UNKNOWN`, …), a
//! bare HTTP status, or a failed token exchange, each in its own shape; this
//! module reads the few a user meets most into one [`Answer`], so that
//! [`Client`](super::Client) can say what is missing or refused (and what to
//! do) instead of the envelope, keeping the registry's own words for the end
//! of the message.

use oci_client::errors::{OciDistributionError, OciEnvelope, OciErrorCode};

use super::Digest;

/// The most tags a "no tag" error lists (the rest is `…`).
pub const MAX_TAGS_SHOWN: usize = 10;

/// The longest part of the registry's words kept in a message: a registry
/// chooses them, and they reach a terminal or a log.
const MAX_SAID_BYTES: usize = 300;

/// The tags of a repository, as a "no tag" error lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tags {
    /// The first tags the registry listed (at most [`MAX_TAGS_SHOWN`];
    /// only valid tag names).
    pub shown: Vec<String>,
    /// Whether the repository has more.
    pub more: bool,
}

/// What an error answer means, as far as the host acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meaning {
    /// `MANIFEST_UNKNOWN` (or a 404 for a manifest): no such tag or digest.
    ManifestUnknown,
    /// `NAME_UNKNOWN`: no such repository.
    NameUnknown,
    /// `BLOB_UNKNOWN`, `MANIFEST_BLOB_UNKNOWN` (or a 404 for a blob).
    BlobUnknown,
    /// 401, 403, `UNAUTHORIZED`, `DENIED`, or a token the registry would not
    /// hand out: credentials missing or refused.
    Unauthorized,
    /// Anything else (unreachable, a server error, an unknown code).
    Other,
}

/// An error answer, read.
#[derive(Debug)]
pub(super) struct Answer {
    /// What it means.
    pub(super) meaning: Meaning,
    /// The registry's own words: its messages, or the HTTP status; printable,
    /// cut to a few hundred bytes.
    pub(super) said: String,
    /// The blob a blob error is about, when the request's URL names one.
    pub(super) blob: Option<Digest>,
}

/// Reads `error`.
pub(super) fn read(error: &OciDistributionError) -> Answer {
    use OciDistributionError as E;
    let (meaning, said, url) = match error {
        E::RegistryError { envelope, url } => {
            let (meaning, said) = of_envelope(envelope);
            (meaning, said, url.as_str())
        }
        E::ServerError { code, url, message } => {
            match serde_json::from_str::<OciEnvelope>(message) {
                Ok(envelope) => {
                    let (meaning, said) = of_envelope(&envelope);
                    (meaning, said, url.as_str())
                }
                Err(_) => (
                    of_status(*code, url),
                    status_said(*code, message),
                    url.as_str(),
                ),
            }
        }
        E::UnauthorizedError { url } => (Meaning::Unauthorized, status_said(401, ""), url.as_str()),
        E::AuthenticationFailure(reason) => (Meaning::Unauthorized, reason.clone(), ""),
        E::ImageManifestNotFoundError(reason) => (Meaning::ManifestUnknown, reason.clone(), ""),
        _ => (Meaning::Other, String::new(), ""),
    };
    let blob = url
        .rsplit_once("/blobs/")
        .and_then(|(_, digest)| digest.parse().ok());
    Answer {
        meaning,
        said: shown(&said, MAX_SAID_BYTES),
        blob,
    }
}

/// The meaning of an envelope (its first error of a code the host knows)
/// and its messages.
fn of_envelope(envelope: &OciEnvelope) -> (Meaning, String) {
    let meaning = envelope
        .errors
        .iter()
        .map(|error| of_code(&error.code))
        .find(|meaning| *meaning != Meaning::Other)
        .unwrap_or(Meaning::Other);
    let said: Vec<&str> = envelope
        .errors
        .iter()
        .map(|error| error.message.as_str())
        .filter(|message| !message.is_empty())
        .collect();
    (meaning, said.join("; "))
}

fn of_code(code: &OciErrorCode) -> Meaning {
    match code {
        OciErrorCode::ManifestUnknown | OciErrorCode::NotFound => Meaning::ManifestUnknown,
        OciErrorCode::NameUnknown => Meaning::NameUnknown,
        OciErrorCode::BlobUnknown | OciErrorCode::ManifestBlobUnknown => Meaning::BlobUnknown,
        OciErrorCode::Unauthorized | OciErrorCode::Denied => Meaning::Unauthorized,
        _ => Meaning::Other,
    }
}

/// The meaning of a status without an envelope (a `HEAD` has no body).
fn of_status(code: u16, url: &str) -> Meaning {
    match code {
        401 | 403 => Meaning::Unauthorized,
        404 if url.contains("/manifests/") => Meaning::ManifestUnknown,
        404 if url.contains("/blobs/") => Meaning::BlobUnknown,
        _ => Meaning::Other,
    }
}

fn status_said(code: u16, body: &str) -> String {
    let reason = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|status| status.canonical_reason())
        .unwrap_or("");
    let body = body.trim();
    if body.is_empty() {
        format!("HTTP {code} {reason}").trim_end().to_owned()
    } else {
        format!("HTTP {code} {reason}: {body}")
    }
}

/// `text` on one printable line, cut to `max` bytes.
fn shown(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::error::cut(crate::escape_control(&line).into_owned(), max)
}

/// The tags to show of a repository's tag list: valid tag names only (the
/// OCI grammar, so a registry cannot put text of its choice in a message),
/// at most [`MAX_TAGS_SHOWN`] (sorted: a registry need not list them in
/// order), and whether there were more.
pub(super) fn tags_shown(tags: &[String]) -> Tags {
    let mut valid = tags.iter().filter(|tag| is_tag(tag));
    let mut shown: Vec<String> = valid.by_ref().take(MAX_TAGS_SHOWN).cloned().collect();
    shown.sort();
    Tags {
        shown,
        more: valid.next().is_some(),
    }
}

/// Whether `tag` is an OCI tag: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let mut bytes = tag.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && tag.len() <= 128
        && bytes.all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(code: &str, message: &str) -> OciDistributionError {
        OciDistributionError::RegistryError {
            envelope: serde_json::from_value(serde_json::json!({
                "errors": [{"code": code, "message": message}]
            }))
            .unwrap(),
            url: "http://r/v2/a/b/manifests/1".into(),
        }
    }

    #[test]
    fn codes_and_statuses_are_read() {
        let cases = [
            (
                envelope("MANIFEST_UNKNOWN", "manifest unknown"),
                Meaning::ManifestUnknown,
            ),
            (envelope("NAME_UNKNOWN", "no repo"), Meaning::NameUnknown),
            (envelope("BLOB_UNKNOWN", "blob"), Meaning::BlobUnknown),
            (envelope("DENIED", "denied"), Meaning::Unauthorized),
            (envelope("UNAUTHORIZED", "auth"), Meaning::Unauthorized),
            (envelope("TOOMANYREQUESTS", "slow down"), Meaning::Other),
            (
                OciDistributionError::ServerError {
                    code: 403,
                    url: "http://r/v2/a/manifests/1".into(),
                    message: String::new(),
                },
                Meaning::Unauthorized,
            ),
            (
                OciDistributionError::ServerError {
                    code: 404,
                    url: "http://r/v2/a/manifests/1".into(),
                    message: String::new(),
                },
                Meaning::ManifestUnknown,
            ),
            (
                OciDistributionError::ServerError {
                    code: 500,
                    url: "http://r/v2/a/manifests/1".into(),
                    message: "oops".into(),
                },
                Meaning::Other,
            ),
        ];
        for (error, meaning) in cases {
            assert_eq!(read(&error).meaning, meaning, "{error}");
        }
        assert_eq!(
            read(&envelope("DENIED", "no\nway\u{1b}")).said,
            "no way\\u{1b}"
        );
        let answer = read(&OciDistributionError::ServerError {
            code: 401,
            url: "http://r/v2/a/blobs/uploads/".into(),
            message: r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#
                .into(),
        });
        assert_eq!(answer.meaning, Meaning::Unauthorized);
        assert_eq!(answer.said, "authentication required");
    }

    #[test]
    fn the_blob_is_named_from_the_url() {
        let hex = "0".repeat(64);
        let error = OciDistributionError::RegistryError {
            envelope: serde_json::from_value(serde_json::json!({
                "errors": [{"code": "BLOB_UNKNOWN", "message": "blob unknown to registry"}]
            }))
            .unwrap(),
            url: format!("http://r/v2/a/blobs/sha256:{hex}"),
        };
        let answer = read(&error);
        assert_eq!(answer.blob.unwrap().hex(), hex);
    }

    #[test]
    fn tags_are_bounded_and_only_valid_names_shown() {
        let tags: Vec<String> = (0..12).map(|i| format!("1.{i}")).collect();
        let shown = tags_shown(&tags);
        assert_eq!(shown.shown.len(), MAX_TAGS_SHOWN);
        assert!(shown.more);
        let odd = [
            "1.0".to_owned(),
            "bad tag\u{1b}[2J".to_owned(),
            ".x".to_owned(),
        ];
        let shown = tags_shown(&odd);
        assert_eq!((shown.shown, shown.more), (vec!["1.0".to_owned()], false));
        assert!(tags_shown(&[]).shown.is_empty());
    }
}
