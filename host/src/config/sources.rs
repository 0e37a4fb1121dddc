//! `[[sources]]`: plugins served live from OCI registries (see
//! `toolhost::oci::Sources` and `docs/oci.md`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Config, ConfigError};

/// One `[[sources]]` entry: a plugin pulled from an OCI registry, followed
/// while serving.
///
/// ```toml
/// [[sources]]
/// ref = "ghcr.io/acme/word_count:1"   # HOST/REPOSITORY:TAG, or @sha256:… (an oci:// prefix is fine)
/// digest = "sha256:…"                 # optional pin: a tag pointing elsewhere is refused
/// poll_secs = 60                      # how often the tag is checked (fractions allowed)
/// name = "word_count"                 # the plugin's name (default: the repository's last segment)
/// insecure = false                    # plain HTTP: loopback or [oci] insecure_registries only
/// token_file = "ghcr-token"           # a bearer token (default: $TOOLHOST_REGISTRY_TOKEN, Docker config.json)
/// require_signature = true            # serve only versions signed (cosign) with one of:
/// public_keys = ["keys/release.pub"]  # PEM public keys
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SourceConfig {
    /// The component: `HOST/REPOSITORY:TAG` or `HOST/REPOSITORY@sha256:…`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The manifest digest the reference must resolve to (`sha256:…`).
    pub digest: Option<String>,
    /// Seconds between two checks of the tag (60; fractions allowed). A
    /// reference pinned by digest is fetched once: this is then how often a
    /// failed fetch is retried.
    pub poll_secs: Option<f64>,
    /// The plugin's name (default: the repository's last segment, as
    /// `toolhost pull` names the file); `[plugin.NAME]` configures it.
    pub name: Option<String>,
    /// Plain HTTP instead of HTTPS: only for a registry on loopback or listed
    /// in `[oci] insecure_registries`.
    #[serde(default)]
    pub insecure: bool,
    /// A file holding a bearer token for the registry (relative paths are
    /// relative to the configuration file).
    pub token_file: Option<PathBuf>,
    /// Serve only versions with a cosign signature made with one of
    /// [`public_keys`](Self::public_keys).
    #[serde(default)]
    pub require_signature: bool,
    /// PEM public keys for `require_signature` (relative paths are relative
    /// to the configuration file).
    #[serde(default)]
    pub public_keys: Vec<PathBuf>,
}

/// The default of `poll_secs`.
pub(crate) const DEFAULT_POLL_SECS: f64 = 60.0;

impl Config {
    /// Makes the sources' relative token files relative to `dir` (the
    /// configuration file's directory).
    pub(super) fn resolve_source_paths(&mut self, dir: &Path) {
        for source in &mut self.sources {
            if let Some(file) = &source.token_file
                && file.is_relative()
            {
                source.token_file = Some(dir.join(file));
            }
            for key in &mut source.public_keys {
                if key.is_relative() {
                    *key = dir.join(&*key);
                }
            }
        }
    }

    /// Checks every `[[sources]]` entry (see [`Config::oci_sources`]).
    pub(super) fn check_sources(&self, path: &Path) -> Result<(), ConfigError> {
        #[cfg(feature = "oci")]
        {
            self.oci_sources_at(path).map(drop)
        }
        #[cfg(not(feature = "oci"))]
        {
            if self.sources.is_empty() {
                Ok(())
            } else {
                Err(ConfigError {
                    path: path.to_owned(),
                    key: Some("sources".to_owned()),
                    reason: "this build of toolhost has no OCI support (feature `oci`)".to_owned(),
                })
            }
        }
    }

    /// The `[[sources]]` entries, checked: each reference parses, a `digest`
    /// pin is a digest (and the reference's own, if it has one), `poll_secs`
    /// is a positive number, names are plugin names and unique, and
    /// `insecure` names a registry on loopback or in `[oci]
    /// insecure_registries`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the entry's key (`sources[0].ref`, …).
    #[cfg(feature = "oci")]
    pub fn oci_sources(&self) -> Result<Vec<crate::oci::Source>, ConfigError> {
        let path = self
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("toolhost.toml"));
        self.oci_sources_at(&path)
    }

    #[cfg(feature = "oci")]
    fn oci_sources_at(&self, path: &Path) -> Result<Vec<crate::oci::Source>, ConfigError> {
        use crate::oci::{Digest, Reference, Source, insecure_allowed};
        let mut sources: Vec<Source> = Vec::with_capacity(self.sources.len());
        for (index, entry) in self.sources.iter().enumerate() {
            let error = |key: &str, reason: String| ConfigError {
                path: path.to_owned(),
                key: Some(format!("sources[{index}].{key}")),
                reason,
            };
            let reference: Reference = entry
                .reference
                .parse()
                .map_err(|e: crate::oci::ReferenceError| error("ref", e.to_string()))?;
            let mut source = Source::new(reference.clone());
            if let Some(pin) = &entry.digest {
                let pin: Digest = pin
                    .parse()
                    .map_err(|e: crate::oci::BadDigest| error("digest", e.to_string()))?;
                if let Some(own) = reference.digest()
                    && *own != pin
                {
                    return Err(error(
                        "digest",
                        format!("`ref` is pinned to {own}, `digest` to {pin}: give one"),
                    ));
                }
                source.pin = Some(pin);
            }
            let secs = entry.poll_secs.unwrap_or(DEFAULT_POLL_SECS);
            source.poll = std::time::Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|poll| !poll.is_zero())
                .ok_or_else(|| {
                    error(
                        "poll_secs",
                        format!("must be a positive number of seconds, not {secs}"),
                    )
                })?;
            if let Some(name) = &entry.name {
                source.name.clone_from(name);
            }
            let name_key = if entry.name.is_some() { "name" } else { "ref" };
            if !valid_name(&source.name) {
                return Err(error(
                    name_key,
                    format!(
                        "`{}` is not a plugin name (letters, digits, `_`, `-` and `.`, not \
                         starting with `.`)",
                        crate::escape_control(&source.name)
                    ),
                ));
            }
            if let Some(other) = sources.iter().position(|s| s.name == source.name) {
                return Err(error(
                    name_key,
                    format!(
                        "`{}` is already the name of sources[{other}]: give one of them a \
                         `name`",
                        source.name
                    ),
                ));
            }
            if entry.insecure
                && !insecure_allowed(reference.registry(), &self.oci.insecure_registries)
            {
                return Err(error(
                    "insecure",
                    format!(
                        "plain HTTP to `{}` is refused: only loopback registries (127.0.0.0/8, \
                         ::1, localhost) and those listed in `[oci] insecure_registries` may be \
                         reached without TLS",
                        reference.registry()
                    ),
                ));
            }
            match (entry.require_signature, entry.public_keys.is_empty()) {
                (true, true) => {
                    return Err(error(
                        "public_keys",
                        "`require_signature = true` needs the public key(s) to check \
                         signatures with: `public_keys = [\"FILE.pub\"]`"
                            .to_owned(),
                    ));
                }
                (false, false) => {
                    return Err(error(
                        "require_signature",
                        "`public_keys` is set but `require_signature` is not: set \
                         `require_signature = true` to serve only signed versions"
                            .to_owned(),
                    ));
                }
                _ => source.public_keys.clone_from(&entry.public_keys),
            }
            source.insecure = entry.insecure;
            source.token_file.clone_from(&entry.token_file);
            sources.push(source);
        }
        Ok(sources)
    }
}

// Here rather than in `oci`: the configuration builds what it configures,
// and `oci` need not know `Config`.
#[cfg(feature = "oci")]
impl crate::oci::Sources {
    /// The `[[sources]]` of `config`, reached as its `[oci]` section says.
    ///
    /// # Errors
    /// As [`Sources::new`](crate::oci::Sources::new), and
    /// [`SourceError::Config`](crate::oci::SourceError::Config) for invalid entries.
    pub fn from_config(
        config: &Config,
        cache_dir: Option<&Path>,
    ) -> Result<Self, crate::oci::SourceError> {
        Self::new(
            config.oci_sources()?,
            &config.oci_client_options(),
            cache_dir,
        )
    }
}

/// Whether `name` can name a plugin (and a file `NAME.wasm`).
#[cfg(feature = "oci")]
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(all(test, feature = "oci"))]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("toolhost.toml"))
    }

    const PIN: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn sources_parse_with_their_defaults() {
        let config = parse(&format!(
            "[[sources]]\nref = \"oci://localhost:5000/tools/echo:1\"\n\
             [[sources]]\nref = \"ghcr.io/acme/text:2\"\ndigest = \"{PIN}\"\npoll_secs = 0.25\n\
             name = \"words\"\nrequire_signature = true\npublic_keys = [\"keys/a.pub\", \"/etc/b.pub\"]\n"
        ))
        .unwrap();
        let sources = config.oci_sources().unwrap();
        assert_eq!(sources[0].name, "echo");
        assert_eq!(sources[0].poll, Duration::from_secs(60));
        assert_eq!(sources[0].pin, None);
        assert!(!sources[0].insecure);
        assert!(sources[0].public_keys.is_empty());
        assert_eq!(sources[1].name, "words");
        assert_eq!(sources[1].poll, Duration::from_millis(250));
        assert_eq!(sources[1].pin.as_ref().unwrap().to_string(), PIN);
        // Key files are relative to the configuration file.
        assert_eq!(
            sources[1].public_keys,
            [PathBuf::from("keys/a.pub"), PathBuf::from("/etc/b.pub")]
        );
        // A reference pinned by itself is pinned.
        let config = parse(&format!("[[sources]]\nref = \"ghcr.io/acme/text@{PIN}\"\n")).unwrap();
        assert_eq!(
            config.oci_sources().unwrap()[0]
                .pin
                .as_ref()
                .unwrap()
                .to_string(),
            PIN
        );
    }

    #[test]
    fn bad_sources_are_config_errors_naming_the_key() {
        for (text, key, needle) in [
            (
                "ref = \"acme/echo:1\"",
                "sources[0].ref",
                "names no registry",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\ndigest = \"sha256:12\"",
                "sources[0].digest",
                "not a digest",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\npoll_secs = 0",
                "sources[0].poll_secs",
                "positive",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\npoll_secs = -1.5",
                "sources[0].poll_secs",
                "positive",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\nname = \"a/b\"",
                "sources[0].name",
                "not a plugin name",
            ),
            (
                "ref = \"registry.internal:5000/echo:1\"\ninsecure = true",
                "sources[0].insecure",
                "insecure_registries",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\nrequire_signature = true",
                "sources[0].public_keys",
                "needs the public key",
            ),
            (
                "ref = \"ghcr.io/acme/echo:1\"\npublic_keys = [\"a.pub\"]",
                "sources[0].require_signature",
                "require_signature = true",
            ),
        ] {
            let err = parse(&format!("[[sources]]\n{text}\n")).unwrap_err();
            assert_eq!(err.key.as_deref(), Some(key), "{text}: {err}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
        let other = PIN.replace('0', "f");
        let err = parse(&format!(
            "[[sources]]\nref = \"ghcr.io/acme/echo@{PIN}\"\ndigest = \"{other}\"\n"
        ))
        .unwrap_err();
        assert_eq!(err.key.as_deref(), Some("sources[0].digest"));
        let err = parse(
            "[[sources]]\nref = \"ghcr.io/a/echo:1\"\n[[sources]]\nref = \"ghcr.io/b/echo:2\"\n",
        )
        .unwrap_err();
        assert_eq!(err.key.as_deref(), Some("sources[1].ref"));
        assert!(err.to_string().contains("sources[0]"), "{err}");
        let err = parse("[[sources]]\nref = \"ghcr.io/a/echo:1\"\npoll = 3\n").unwrap_err();
        assert!(err.to_string().contains("poll"), "{err}");
        // A listed registry may be reached over plain HTTP.
        parse(
            "[oci]\ninsecure_registries = [\"registry.internal:5000\"]\n\
             [[sources]]\nref = \"registry.internal:5000/echo:1\"\ninsecure = true\n",
        )
        .unwrap();
    }
}
