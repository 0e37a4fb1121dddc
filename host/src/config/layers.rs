//! What `toolhost.toml` means for a set of plugins: each plugin's options, and
//! the layers over the set (filter, confirmation, aliases). The CLI, the MCP
//! server and an embedder get the same meaning from here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Config, ConfigError};
use crate::plugin::PluginOptions;
use crate::policy::Grants;
use crate::state::StateStore;
use crate::toolset::{
    Access, Aliases, Confirm, ConfirmationHint, Filter, Predicate, ToolAliases, Toolset,
};

/// A set of plugins with the layers of a configuration over it, inner to
/// outer: plugins → filter → access → confirmation → aliases (see
/// [`Config::layered`]).
pub type Layered<T> = Aliases<Confirm<Access<Filter<T>>>>;

/// The hint of `[confirm]` when it gives none.
const DEFAULT_HINT: &str = "This tool needs a human's approval for each call.";

impl Config {
    /// The file this configuration names in errors.
    fn path(&self) -> PathBuf {
        self.source
            .clone()
            .unwrap_or_else(|| PathBuf::from("toolhost.toml"))
    }

    /// A plugin's options as this configuration sets them: its limits
    /// ([`Config::limits_for`]), its instance reuse, and its
    /// `[plugin.NAME.grants]` when it has them (they win over a sidecar
    /// policy). Command-line flags go on top of these.
    pub fn plugin_options(&self, plugin: &str) -> PluginOptions {
        let mut options = PluginOptions::default();
        options
            .limits(self.limits_for(plugin))
            .reuse(self.reuse_for(plugin));
        match self.grants_for(plugin) {
            Ok(Some(grants)) => {
                options.grants(grants);
            }
            Ok(None) => {}
            Err(error) => {
                // Checked when the configuration was loaded; if it broke since
                // (a granted directory removed), grant nothing rather than guess.
                tracing::error!(plugin, %error, "invalid grants; the plugin gets none");
                options.grants(Grants::default());
            }
        }
        options
    }

    /// `plugins` as the model sees them under this configuration, in the
    /// documented order (inner to outer): `[filter]` hides tools,
    /// `[[access]]` grants each caller what its rules say (everything when
    /// there are none), `[confirm]` (and a rule's `confirm`) makes calls wait
    /// for a human's approval, `[aliases]` adds names for tools and their
    /// argument keys.
    ///
    /// With `[state] url`, decided approvals are kept in Redis
    /// ([`Confirm::with_store`]), so an approval is used once across every
    /// replica sharing it. This makes a store (a Redis client) of its own;
    /// [`Config::layered_with_state`] shares the engine's.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the `[aliases]` key at fault (an alias that
    /// clashes with another, or with a tool's own name), or `state.url` if
    /// `$TOOLHOST_STATE_URL` is not a Redis URL.
    pub fn layered<T: Toolset>(&self, plugins: T) -> Result<Layered<T>, ConfigError> {
        let options = self.state.options();
        let shared = match options.url {
            Some(_) => Some(StateStore::new(&options).map_err(|e| ConfigError {
                path: self.path(),
                key: Some("state.url".to_owned()),
                reason: e.to_string(),
            })?),
            None => None,
        };
        self.layers(plugins, shared)
    }

    /// As [`Config::layered`], keeping decided approvals in `state` when it
    /// is shared ([`StateStore::is_shared`]: the engine's store of this
    /// configuration's `[state]`, [`Engine::state`](crate::Engine::state)),
    /// so one process holds one Redis client. An in-process `state` is not
    /// used: each `Confirm` layer remembers its own decisions, as without
    /// `[state] url`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the `[aliases]` key at fault.
    pub fn layered_with_state<T: Toolset>(
        &self,
        plugins: T,
        state: &StateStore,
    ) -> Result<Layered<T>, ConfigError> {
        self.layers(plugins, state.is_shared().then(|| state.clone()))
    }

    /// The layers, used approvals in `shared` (Redis) when given.
    fn layers<T: Toolset>(
        &self,
        plugins: T,
        shared: Option<StateStore>,
    ) -> Result<Layered<T>, ConfigError> {
        let filter = &self.filter;
        let mut visible = Predicate::new(|_, _| true);
        if !filter.allow.is_empty() {
            visible = visible.and(Predicate::glob(filter.allow.clone()));
        }
        if !filter.deny.is_empty() {
            visible = visible.and(!Predicate::glob(filter.deny.clone()));
        }
        let filtered = Filter::new(plugins, visible);
        let granted = if self.access.is_empty() {
            Access::new(
                filtered,
                [crate::toolset::AccessRule::new(
                    "everyone",
                    Predicate::new(|_, _| true),
                )],
            )
        } else {
            Access::new(filtered, self.access.iter().map(|rule| rule.rule()))
        };
        let hint = self
            .confirm
            .hint
            .clone()
            .unwrap_or_else(|| DEFAULT_HINT.to_owned());
        let mut confirmed = Confirm::new(granted);
        if let Some(store) = shared {
            // Used approvals in Redis: refused on every replica that shares it.
            confirmed = confirmed.with_store(store);
        }
        if self.confirm.all {
            confirmed = confirmed.require_all_with(ConfirmationHint::new(hint.clone()));
        }
        if !self.confirm.tools.is_empty() {
            // A rule by name, not a provider: the tools it does not choose
            // are listed without the confirmation mark.
            let needs = Predicate::glob(self.confirm.tools.clone());
            confirmed = confirmed.require_matching(needs, ConfirmationHint::new(hint));
        }
        let per_caller: Vec<Predicate> = self
            .access
            .iter()
            .filter_map(|rule| rule.confirmation())
            .collect();
        if !per_caller.is_empty() {
            let hint = self
                .confirm
                .hint
                .clone()
                .unwrap_or_else(|| DEFAULT_HINT.to_owned());
            confirmed =
                confirmed.require_matching(Predicate::any(per_caller), ConfirmationHint::new(hint));
        }
        let mut aliases: BTreeMap<String, ToolAliases> = BTreeMap::new();
        for (alias, tool) in &self.aliases.tools {
            let entry = aliases.entry(tool.clone()).or_default();
            *entry = std::mem::take(entry).name(alias.clone());
        }
        for (tool, keys) in &self.aliases.arguments {
            let entry = aliases.entry(tool.clone()).or_default();
            for (alias, canonical) in keys {
                *entry = std::mem::take(entry).argument(canonical.clone(), [alias.clone()]);
            }
        }
        Aliases::new(confirmed, aliases).map_err(|e| ConfigError {
            path: self.path(),
            key: Some("aliases".to_owned()),
            reason: e.to_string(),
        })
    }
}
