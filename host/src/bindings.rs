//! Generated bindings of the WIT contract, one module per supported version.

/// `toolhost:plugin@0.1.0`.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "toolhost:plugin/plugin",
        imports: { default: trappable },
        exports: { default: async },
    });
}

/// The interface every plugin of this version exports.
pub(crate) const TOOLS_INTERFACE: &str = "toolhost:plugin/tools@0.1.0";

/// The prefix shared by every version of the tools interface.
pub(crate) const TOOLS_INTERFACE_PREFIX: &str = "toolhost:plugin/tools@";
