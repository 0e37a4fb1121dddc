//! `toolhost:plugin@0.2.0` (`wit/plugin.wit`), the current contract: the only
//! module that names its generated bindings. It links the version's host
//! imports and converts its types to and from the host's (the shared part:
//! `contract_version!` in `abi.rs`). Over `@0.1.0` it adds the tools' hints.

contract_version!("../wit", "toolhost:plugin/tools@0.2.0");

fn declaration(declared: wit::Declaration) -> Declaration {
    let hints = declared.info.hints;
    let hints = ToolHints {
        // A blank title is no title.
        title: hints.title.filter(|title| !title.trim().is_empty()),
        read_only: hints.read_only,
        destructive: hints.destructive,
        idempotent: hints.idempotent,
        open_world: hints.open_world,
    };
    Declaration {
        name: declared.info.name,
        description: declared.info.description,
        long_running: declared.info.long_running,
        streaming: declared.streaming,
        input_schema: declared.input_schema,
        output_schema: declared.output_schema,
        hints,
    }
}
