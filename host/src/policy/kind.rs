//! A kind of capability as one unit, in the manner of Spin's factors and
//! wasmtime-wasi's `*Ctx`/`*View`: [`Kind`] is everything the host does for
//! one kind (which imports it governs, its keys of a written policy, its part
//! of the summary and of a call's WASI context), and [`KINDS`] the table
//! every use goes through. The kind's grant type, its [`Grants`] setters and
//! any linker additions stay in its module.

use std::path::Path;
use std::sync::Arc;

use wasmtime_wasi::WasiCtxBuilder;

use super::{CallTag, Capability, ErrorAt, Grants, GrantsConfig, env, files, http, sockets};
use crate::error::ConfigError;

/// One kind of capability (files, environment, HTTP, sockets).
pub(super) trait Kind: Sync {
    /// The capabilities this kind grants.
    fn capabilities(&self) -> &'static [Capability];

    /// The capability an import's interface (without `@version`) asks of
    /// this kind, if it is one of this kind's.
    fn of_import(&self, interface: &str) -> Option<Capability>;

    /// Whether `grants` grant `capability` (one of this kind's).
    fn covers(&self, grants: &Grants, capability: Capability) -> bool;

    /// Where the grant that allows `capability` is written, for refusals.
    fn grant_for(&self, capability: Capability) -> &'static str;

    /// Checks this kind's keys of a written policy, without touching the
    /// file system.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key at fault.
    fn check(&self, config: &GrantsConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError>;

    /// Adds this kind's grants from a written (and checked) policy; `base`
    /// is the policy file's directory.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key at fault (a directory that is not
    /// there, a secret file that cannot be read).
    fn resolve(
        &self,
        config: &GrantsConfig,
        base: &Path,
        at: &ErrorAt<'_>,
        grants: &mut Grants,
    ) -> Result<(), ConfigError>;

    /// Its lines of [`Grants::summary`], without any secret value.
    fn summary(&self, grants: &Grants, out: &mut Vec<String>);

    /// Its part of one call's WASI context: exactly what is granted. The
    /// default adds nothing (a kind served by its own interface, as HTTP).
    ///
    /// # Errors
    /// Why the grant cannot be given now (a granted directory that cannot
    /// be opened).
    fn add_to_wasi(
        &self,
        grants: &Grants,
        builder: &mut WasiCtxBuilder,
        call: &Arc<CallTag>,
    ) -> Result<(), String> {
        let _ = (grants, builder, call);
        Ok(())
    }
}

/// Every kind, in the order their keys are checked and their lines summed up.
pub(super) const KINDS: [&dyn Kind; 4] = [&files::Files, &env::Env, &http::Http, &sockets::Sockets];

/// The kind `capability` is one of, if any (clocks, randomness, stdio and
/// the rest are no kind's: always available).
pub(super) fn kind_of(capability: Capability) -> Option<&'static dyn Kind> {
    KINDS
        .into_iter()
        .find(|kind| kind.capabilities().contains(&capability))
}
