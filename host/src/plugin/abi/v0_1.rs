//! `toolhost:plugin@0.1.0` (`wit/v0.1.0`, frozen): the only module that names
//! its generated bindings. It links the version's host imports and converts
//! its types to and from the host's (the shared part: `contract_version!` in
//! `abi.rs`). Its tools declare no hints.

contract_version!("../wit/v0.1.0", "toolhost:plugin/tools@0.1.0");

fn declaration(declared: wit::Declaration) -> Declaration {
    Declaration {
        name: declared.info.name,
        description: declared.info.description,
        long_running: declared.info.long_running,
        streaming: declared.streaming,
        input_schema: declared.input_schema,
        output_schema: declared.output_schema,
        hints: ToolHints::default(),
    }
}
