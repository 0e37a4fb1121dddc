//! References to components in a registry: `host/repo:tag`,
//! `host/repo@sha256:…`, with or without wassette's `oci://` prefix.

use std::fmt;
use std::str::FromStr;

use crate::oci::Digest;

/// Why a text is not a reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    /// The text is empty (or only `oci://`).
    #[error("an empty reference; expected HOST/REPOSITORY:TAG or HOST/REPOSITORY@sha256:DIGEST")]
    Empty,
    /// The first path segment is not a registry host, so the reference would
    /// silently mean Docker Hub; toolhost never guesses a registry.
    #[error(
        "`{reference}` names no registry: write HOST/REPOSITORY:TAG (like \
         `ghcr.io/acme/echo:1.0` or `localhost:5000/echo:1.0`)"
    )]
    NoRegistry {
        /// The reference as given.
        reference: String,
    },
    /// The registry part is not `host` or `host:port`.
    #[error("`{reference}`: `{registry}` is not a registry host (`host` or `host:port`)")]
    BadRegistry {
        /// The reference as given.
        reference: String,
        /// The registry part.
        registry: String,
    },
    /// The repository path is not lowercase letters, digits and separators.
    #[error(
        "`{reference}`: `{repository}` is not a repository name (lowercase letters, digits, \
         and `.`, `_`, `-` or `/` between them)"
    )]
    BadRepository {
        /// The reference as given.
        reference: String,
        /// The repository part.
        repository: String,
    },
    /// The tag is not 1 to 128 of `A-Za-z0-9_.-`, not starting with `.` or `-`.
    #[error("`{reference}`: `{tag}` is not a tag (1 to 128 of A-Z a-z 0-9 _ . -)")]
    BadTag {
        /// The reference as given.
        reference: String,
        /// The tag part.
        tag: String,
    },
    /// The digest is not `sha256:` and 64 lowercase hex digits.
    #[error("`{reference}`: `{digest}` is not a digest (sha256: and 64 lowercase hex digits)")]
    BadDigest {
        /// The reference as given.
        reference: String,
        /// The digest part.
        digest: String,
    },
}

/// A component in a registry: `registry/repository`, with a tag, a digest
/// or both (the digest is what is pulled; the tag is then only a name).
/// Without either it is the tag `latest`.
///
/// ```
/// use toolhost::oci::Reference;
/// let pinned: Reference = "oci://ghcr.io/acme/echo@sha256:\
///     0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".parse()?;
/// assert_eq!(pinned.registry(), "ghcr.io");
/// assert_eq!(pinned.repository(), "acme/echo");
/// assert_eq!(pinned.name(), "echo");
/// assert!(pinned.digest().is_some());
/// # Ok::<(), toolhost::oci::ReferenceError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// The registry: `host` or `host:port`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path, like `acme/echo`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if the reference has one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest the reference is pinned to, if any.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The last segment of the repository path: the plugin's name.
    pub fn name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }

    /// The same component pinned to `digest` (the tag is dropped):
    /// `registry/repository@digest`.
    pub fn pinned(&self, digest: &Digest) -> Self {
        Self {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest.clone()),
        }
    }

    /// Where cosign keeps the signatures of the digest this reference is
    /// pinned to: the tag `sha256-HEX.sig` in the same repository (for a
    /// reference without a digest, the tag `sha256-.sig`, which names
    /// nothing).
    pub fn signatures(&self) -> Self {
        Self {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: Some(format!(
                "sha256-{}.sig",
                self.digest.as_ref().map(Digest::hex).unwrap_or_default()
            )),
            digest: None,
        }
    }

    /// The registry host without the port (for loopback checks).
    pub fn host(&self) -> &str {
        host_of(&self.registry)
    }

    pub(crate) fn to_client(&self) -> oci_client::Reference {
        match &self.digest {
            Some(digest) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest.to_string(),
            ),
            None => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                self.tag.clone().unwrap_or_else(|| "latest".to_owned()),
            ),
        }
    }
}

/// The host of `host`, `host:port`, `[v6]` or `[v6]:port`.
pub(crate) fn host_of(registry: &str) -> &str {
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    registry.split(':').next().unwrap_or(registry)
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let reference = text.to_owned();
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        if rest.is_empty() {
            return Err(ReferenceError::Empty);
        }
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => {
                let parsed = digest.parse().map_err(|_| ReferenceError::BadDigest {
                    reference: reference.clone(),
                    digest: digest.to_owned(),
                })?;
                (rest, Some(parsed))
            }
            None => (rest, None),
        };
        let Some((registry, path)) = rest.split_once('/') else {
            return Err(ReferenceError::NoRegistry { reference });
        };
        // Docker's rule: the first segment is a registry if it has a `.` or a
        // `:`, or is `localhost`; otherwise `acme/echo` would mean Docker Hub.
        if !(registry.contains(['.', ':']) || registry == "localhost" || registry.starts_with('['))
        {
            return Err(ReferenceError::NoRegistry { reference });
        }
        if !valid_registry(registry) {
            return Err(ReferenceError::BadRegistry {
                reference,
                registry: registry.to_owned(),
            });
        }
        // A tag follows the last `:` after the last `/`.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (path, None),
        };
        if !valid_repository(repository) {
            return Err(ReferenceError::BadRepository {
                reference,
                repository: repository.to_owned(),
            });
        }
        if let Some(tag) = tag
            && !valid_tag(tag)
        {
            return Err(ReferenceError::BadTag {
                reference,
                tag: tag.to_owned(),
            });
        }
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }
}

fn valid_registry(registry: &str) -> bool {
    let (host, port) = if let Some(rest) = registry.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => ("v6", Some(port)),
            None if after.is_empty() => ("v6", None),
            None => return false,
        }
    } else {
        match registry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        }
    };
    let host_ok = !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    host_ok && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0))
}

/// OCI distribution's `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/…)*`.
fn valid_repository(repository: &str) -> bool {
    !repository.is_empty()
        && repository.len() <= 255
        && repository.split('/').all(|component| {
            let bytes = component.as_bytes();
            let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            !bytes.is_empty()
                && bytes.first().is_some_and(alnum)
                && bytes.last().is_some_and(alnum)
                && bytes
                    .iter()
                    .all(|b| alnum(b) || matches!(b, b'.' | b'_' | b'-'))
                && !component.contains("..")
                && !component.contains("___")
                && !component.contains("._")
                && !component.contains("_.")
                && !component.contains(".-")
                && !component.contains("-.")
                && !component.contains("_-")
                && !component.contains("-_")
        })
}

/// `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn tags_digests_and_the_oci_prefix_parse() {
        let r: Reference = "localhost:5000/tools/echo:1.0".parse().unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("localhost:5000", "tools/echo", Some("1.0"))
        );
        assert_eq!(r.name(), "echo");
        assert_eq!(r.host(), "localhost");
        assert_eq!(r.to_string(), "localhost:5000/tools/echo:1.0");

        let text = format!("oci://ghcr.io/acme/echo@sha256:{HEX}");
        let r: Reference = text.parse().unwrap();
        assert_eq!(r.digest().unwrap().hex(), HEX);
        assert_eq!(r.tag(), None);
        assert_eq!(r.to_string(), format!("ghcr.io/acme/echo@sha256:{HEX}"));

        let r: Reference = format!("127.0.0.1:5000/echo:v2@sha256:{HEX}")
            .parse()
            .unwrap();
        assert_eq!((r.tag(), r.host()), (Some("v2"), "127.0.0.1"));
        assert_eq!(r.pinned(r.digest().unwrap()).tag(), None);

        let r: Reference = "[::1]:5000/echo".parse().unwrap();
        assert_eq!((r.host(), r.tag()), ("::1", None));
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        let err = |text: &str| text.parse::<Reference>().unwrap_err();
        assert_eq!(err(""), ReferenceError::Empty);
        assert_eq!(err("oci://"), ReferenceError::Empty);
        assert!(matches!(
            err("acme/echo:1"),
            ReferenceError::NoRegistry { .. }
        ));
        assert!(matches!(err("echo"), ReferenceError::NoRegistry { .. }));
        assert!(matches!(
            err("host.io:99999/echo"),
            ReferenceError::BadRegistry { .. }
        ));
        assert!(matches!(
            err("host.io/Echo:1"),
            ReferenceError::BadRepository { .. }
        ));
        assert!(matches!(
            err("host.io/echo:-x"),
            ReferenceError::BadTag { .. }
        ));
        assert!(matches!(
            err("host.io/echo@sha256:abc"),
            ReferenceError::BadDigest { .. }
        ));
        assert!(matches!(
            err(&format!("host.io/echo@md5:{HEX}")),
            ReferenceError::BadDigest { .. }
        ));
        assert!(err("acme/echo").to_string().contains("names no registry"));
    }
}
