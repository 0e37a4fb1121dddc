//! How a plugin is loaded: its name, limits, grants and instance reuse.

use std::path::Path;

use crate::engine::limits::Limits;
use crate::error::LoadError;
use crate::policy::Grants;

/// How a plugin is loaded: its name, the limits its calls run under and what
/// they may reach.
///
/// Plain data: set the fields, or chain the setters of the same names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PluginOptions {
    /// The plugin's name; by default the file name without `.wasm`.
    pub name: Option<String>,
    /// The limits every call of this plugin runs under.
    pub limits: Limits,
    /// What the plugin's calls may reach. Given here, they win over the
    /// plugin's sidecar policy file, which is then ignored (with a warning).
    pub grants: Option<Grants>,
    /// Whether a plugin without `grants` reads them from its sidecar
    /// `NAME.policy.toml` next to `NAME.wasm`, and a component toolset its
    /// descriptions, hints and hidden tools from `NAME.tools.toml` (default:
    /// yes). Without either policy, nothing is granted.
    pub sidecar_policy: bool,
    /// Whether calls share instances ([`Reuse`]; default: never).
    pub reuse: Reuse,
}

/// Whether each call gets a fresh instance, or the calls of one invocation share one.
/// In `toolhost.toml`: `reuse = "never"` or `reuse = "per-invocation"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reuse {
    /// A fresh instance for every call (the default): nothing one call leaves
    /// in the guest's memory reaches another call.
    #[default]
    Never,
    /// The calls of one invocation (one invocation ID) share an instance, one
    /// call at a time; different invocations never share one. For runtimes
    /// whose start-up dominates a call (Python, JavaScript). Each call still
    /// gets its own fuel, deadline and output cap. A streaming call always gets
    /// a fresh instance. An instance is dropped when a call traps or runs out
    /// of a budget, when its invocation ends
    /// ([`Engine::end_invocation`](crate::Engine::end_invocation)), or when the engine's set of idle instances
    /// is full ([`EngineConfig::max_idle_instances`](crate::EngineConfig::max_idle_instances)).
    PerInvocation,
}

impl Default for PluginOptions {
    fn default() -> Self {
        Self {
            name: None,
            limits: Limits::default(),
            grants: None,
            sidecar_policy: true,
            reuse: Reuse::Never,
        }
    }
}

impl PluginOptions {
    /// Sets [`PluginOptions::name`].
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`PluginOptions::limits`].
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Sets [`PluginOptions::grants`].
    pub fn grants(&mut self, grants: Grants) -> &mut Self {
        self.grants = Some(grants);
        self
    }

    /// Sets [`PluginOptions::sidecar_policy`].
    pub fn sidecar_policy(&mut self, read: bool) -> &mut Self {
        self.sidecar_policy = read;
        self
    }

    /// Sets [`PluginOptions::reuse`].
    pub fn reuse(&mut self, reuse: Reuse) -> &mut Self {
        self.reuse = reuse;
        self
    }

    /// The grants a plugin file gets: those given here, else its sidecar's,
    /// else none.
    pub(super) fn effective_grants(&self, path: &Path) -> Result<Grants, LoadError> {
        let sidecar = crate::policy::sidecar_path(path);
        match &self.grants {
            Some(grants) => {
                if self.sidecar_policy && sidecar.is_file() {
                    tracing::warn!(
                        plugin = %path.display(), sidecar = %sidecar.display(),
                        "the configuration grants this plugin; its sidecar policy is ignored"
                    );
                }
                Ok(grants.clone())
            }
            None if self.sidecar_policy => crate::policy::load_sidecar(path)
                .map(Option::unwrap_or_default)
                .map_err(|error| LoadError::Policy {
                    path: path.to_owned(),
                    error,
                }),
            None => Ok(Grants::default()),
        }
    }
}
