//! `toolhost:plugin@0.3.0` (`wit/v0.3.0`, frozen): the only
//! module that names its generated bindings. It links the version's host
//! imports and converts its types to and from the host's (the shared part:
//! `contract_version!` in `abi.rs`). Over `@0.2.0` it tells a tool who calls.

contract_version!("../wit/v0.3.0", "toolhost:plugin/tools@0.3.0", caller);

hinted_declaration!();
