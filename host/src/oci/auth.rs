//! Registry credentials: none, basic (a Docker `config.json`), or a bearer
//! token. Secrets never print (`Debug` redacts them).

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

use crate::oci::OciError;

/// How to authenticate to a registry.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// No credentials (the registry may still hand out an anonymous token).
    #[default]
    Anonymous,
    /// HTTP basic credentials (exchanged for a token where the registry
    /// asks for one).
    Basic {
        /// The user name.
        username: String,
        /// The password or access token.
        password: String,
    },
    /// A bearer token, sent as is.
    Bearer(String),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Self::Bearer(_) => f.debug_tuple("Bearer").field(&"<redacted>").finish(),
        }
    }
}

impl Auth {
    pub(crate) fn to_client(&self) -> oci_client::secrets::RegistryAuth {
        use oci_client::secrets::RegistryAuth;
        match self {
            Self::Anonymous => RegistryAuth::Anonymous,
            Self::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Self::Bearer(token) => RegistryAuth::Bearer(token.clone()),
        }
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
}

/// The Docker credentials file: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`.
fn docker_config_path() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir).join("config.json")),
        _ => dirs::home_dir().map(|home| home.join(".docker/config.json")),
    }
}

/// Basic credentials for `registry` (`host` or `host:port`) from the Docker
/// credentials file (`$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`): its `auths.<registry>.auth`, base64 of
/// `user:password`. `None` when there is no file or no entry; credential
/// helpers (`credsStore`) are not run.
///
/// # Errors
///
/// [`OciError::DockerConfig`] when the file exists but is not JSON, or the
/// registry's entry is not base64 of `user:password`.
pub fn docker_config_auth(registry: &str) -> Result<Option<Auth>, OciError> {
    match docker_config_path() {
        Some(path) => auth_from_file(&path, registry),
        None => Ok(None),
    }
}

/// The credentials for `registry`, in the order `pull`, `push` and
/// `[[sources]]` share: a bearer token read from `token_file`, else
/// `$TOOLHOST_REGISTRY_TOKEN`, else basic auth from the Docker `config.json`
/// ([`docker_config_auth`]), else anonymous.
///
/// # Errors
///
/// [`OciError::TokenFile`] when `token_file` cannot be read or holds no
/// token; [`OciError::DockerConfig`] as [`docker_config_auth`].
pub fn registry_auth(token_file: Option<&Path>, registry: &str) -> Result<Auth, OciError> {
    if let Some(path) = token_file {
        let failed = |reason: String| OciError::TokenFile {
            path: path.to_owned(),
            reason,
        };
        let token = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(failed("empty".to_owned()));
        }
        return Ok(Auth::Bearer(token.to_owned()));
    }
    if let Ok(token) = std::env::var("TOOLHOST_REGISTRY_TOKEN")
        && !token.trim().is_empty()
    {
        return Ok(Auth::Bearer(token.trim().to_owned()));
    }
    Ok(docker_config_auth(registry)?.unwrap_or_default())
}

fn auth_from_file(path: &Path, registry: &str) -> Result<Option<Auth>, OciError> {
    let error = |reason: String| OciError::DockerConfig {
        path: path.to_owned(),
        reason,
    };
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(e.to_string())),
    };
    let config: DockerConfig = serde_json::from_slice(&text).map_err(|e| error(e.to_string()))?;
    let Some(encoded) = config
        .auths
        .iter()
        .find(|(key, _)| same_registry(key, registry))
        .and_then(|(_, entry)| entry.auth.as_deref())
    else {
        return Ok(None);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| error(format!("auths.\"{registry}\".auth is not base64 text")))?;
    let (username, password) = decoded.split_once(':').ok_or_else(|| {
        error(format!(
            "auths.\"{registry}\".auth is not base64 of user:password"
        ))
    })?;
    Ok(Some(Auth::Basic {
        username: username.to_owned(),
        password: password.to_owned(),
    }))
}

/// Whether a key of `auths` names `registry`: `host:port`, or with a scheme
/// and a path (`https://index.docker.io/v1/`, as `docker login` writes).
fn same_registry(key: &str, registry: &str) -> bool {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let key = key.split('/').next().unwrap_or(key);
    let hub = |r: &str| matches!(r, "docker.io" | "index.docker.io" | "registry-1.docker.io");
    key.eq_ignore_ascii_case(registry) || (hub(key) && hub(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_come_from_the_docker_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        // "user:pa:ss"
        std::fs::write(
            &path,
            r#"{"auths": {"https://registry.example.com:5000/v1/": {"auth": "dXNlcjpwYTpzcw=="},
                          "other.io": {}}}"#,
        )
        .unwrap();
        let auth = auth_from_file(&path, "registry.example.com:5000").unwrap();
        assert_eq!(
            auth,
            Some(Auth::Basic {
                username: "user".to_owned(),
                password: "pa:ss".to_owned()
            })
        );
        assert!(!format!("{auth:?}").contains("pa:ss"));
        assert_eq!(auth_from_file(&path, "other.io").unwrap(), None);
        assert_eq!(auth_from_file(&path, "registry.example.com").unwrap(), None);
        assert_eq!(
            auth_from_file(&dir.path().join("none"), "x.io").unwrap(),
            None
        );
        std::fs::write(&path, r#"{"auths": {"x.io": {"auth": "bm9jb2xvbg=="}}}"#).unwrap();
        let err = auth_from_file(&path, "x.io").unwrap_err().to_string();
        assert!(err.contains("user:password"), "{err}");
    }
}
