//! `toolhost:plugin@0.2.0` (`wit/v0.2.0`, frozen): the only module that names
//! its generated bindings. It links the version's host imports and converts
//! its types to and from the host's (the shared part: `contract_version!` in
//! `abi.rs`). Over `@0.1.0` it adds the tools' hints.

contract_version!("../wit/v0.2.0", "toolhost:plugin/tools@0.2.0");

hinted_declaration!();
