//! TEST-ONLY PREVIEW of `toolhost:plugin@0.2.0` (`tests/wit/preview-0.2.0`),
//! compiled only with the `abi-preview` feature that the host's own tests
//! enable: it proves that plugins of two contract versions load side by side.
//! Not a published contract; the real `@0.2.0` replaces this module.
//!
//! Like `v0_1.rs`, the only module that names this version's generated
//! bindings. Its one difference: a tool's optional `title`, which the host
//! puts before the description.

use wasmtime::Store;
use wasmtime::component::{
    Component, ComponentExportIndex, HasSelf, Instance, InstancePre, Linker, ResourceAny, TypedFunc,
};

use super::{Call, Declaration, RawOutput, RawPart, ToolError};
use crate::plugin::state::PluginState;
use crate::tool::MediaKind;
use bindings::exports::toolhost::plugin::tools as wit;
use bindings::toolhost::plugin::{host, types};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../tests/wit/preview-0.2.0",
        world: "toolhost:plugin/plugin",
        // The state imports await the state store (Redis, maybe); a store
        // that fails traps the guest with a typed error.
        imports: {
            "toolhost:plugin/host.state-get": async | trappable,
            "toolhost:plugin/host.state-set": async | trappable,
            "toolhost:plugin/host.state-delete": async | trappable,
            default: trappable,
        },
        exports: { default: async },
    });
}

/// The interface every plugin of this version exports.
pub(crate) const TOOLS_INTERFACE: &str = "toolhost:plugin/tools@0.2.0";

/// Adds this version's host imports to the linker.
pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    bindings::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}

/// Where a component's exports are.
#[derive(Clone)]
pub(crate) struct ExportIndices {
    all: bindings::PluginIndices,
    /// `invoke`, the one export a plain call needs: looked up and type-checked
    /// alone per call, not with every other export.
    invoke: ComponentExportIndex,
}

/// The typed `invoke` export of an instance.
pub(crate) type Invoke = TypedFunc<(wit::Call,), (Result<wit::Output, wit::ToolError>,)>;

/// Every typed export of an instance.
pub(crate) type Exports = bindings::Plugin;

impl ExportIndices {
    pub(crate) fn new(
        pre: &InstancePre<PluginState>,
        component: &Component,
    ) -> wasmtime::Result<Self> {
        let all = bindings::PluginIndices::new(pre)?;
        let invoke = component
            .get_export_index(None, TOOLS_INTERFACE)
            .and_then(|tools| component.get_export_index(Some(&tools), "invoke"))
            .ok_or_else(|| wasmtime::format_err!("no `invoke` export"))?;
        Ok(Self { all, invoke })
    }

    pub(crate) fn invoke(
        &self,
        store: &mut Store<PluginState>,
        instance: &Instance,
    ) -> wasmtime::Result<Invoke> {
        instance.get_typed_func(store, self.invoke)
    }

    pub(crate) fn exports(
        &self,
        store: &mut Store<PluginState>,
        instance: &Instance,
    ) -> wasmtime::Result<Exports> {
        self.all.load(store, instance)
    }
}

pub(crate) async fn invoke(
    invoke: &Invoke,
    store: &mut Store<PluginState>,
    call: Call,
) -> wasmtime::Result<Result<RawOutput, ToolError>> {
    let (result,) = invoke.call_async(store, (wit_call(call),)).await?;
    Ok(result.map(output).map_err(tool_error))
}

pub(crate) async fn declarations(
    exports: &Exports,
    store: &mut Store<PluginState>,
) -> wasmtime::Result<Vec<Declaration>> {
    let declared = exports
        .toolhost_plugin_tools()
        .call_declarations(store)
        .await?;
    Ok(declared.into_iter().map(declaration).collect())
}

pub(crate) async fn invoke_stream(
    exports: &Exports,
    store: &mut Store<PluginState>,
    call: Call,
) -> wasmtime::Result<Result<ResourceAny, ToolError>> {
    let result = exports
        .toolhost_plugin_tools()
        .call_invoke_stream(store, &wit_call(call))
        .await?;
    Ok(result.map_err(tool_error))
}

pub(crate) async fn next(
    exports: &Exports,
    store: &mut Store<PluginState>,
    chunks: ResourceAny,
) -> wasmtime::Result<Result<Option<RawPart>, ToolError>> {
    let result = exports
        .toolhost_plugin_tools()
        .chunks()
        .call_next(store, chunks)
        .await?;
    Ok(result.map(|chunk| chunk.map(part)).map_err(tool_error))
}

fn declaration(declared: wit::Declaration) -> Declaration {
    Declaration {
        name: declared.info.name,
        description: match declared.info.title {
            Some(title) if !title.is_empty() => {
                format!("{title}\n\n{}", declared.info.description)
            }
            _ => declared.info.description,
        },
        long_running: declared.info.long_running,
        streaming: declared.streaming,
        input_schema: declared.input_schema,
        output_schema: declared.output_schema,
    }
}

fn wit_call(call: Call) -> wit::Call {
    wit::Call {
        call_id: call.call_id,
        invocation_id: call.invocation_id,
        tool: call.tool,
        arguments: call.arguments,
    }
}

fn output(output: wit::Output) -> RawOutput {
    RawOutput {
        json: output.json,
        parts: output.parts.into_iter().map(part).collect(),
    }
}

fn part(part: wit::Part) -> RawPart {
    match part {
        wit::Part::Text(text) => RawPart::Text(text),
        wit::Part::Json(text) => RawPart::Json(text),
        wit::Part::Blob(blob) => RawPart::Blob {
            kind: match blob.kind {
                types::MediaKind::Image => MediaKind::Image,
                types::MediaKind::Audio => MediaKind::Audio,
                types::MediaKind::Video => MediaKind::Video,
                types::MediaKind::File => MediaKind::File,
            },
            mime_type: blob.mime_type,
            name: blob.name,
            data: blob.data,
        },
    }
}

fn tool_error(error: wit::ToolError) -> ToolError {
    match error {
        wit::ToolError::InvalidArguments(message) => ToolError::InvalidArguments(message),
        wit::ToolError::Failed(message) => ToolError::Failed(message),
        wit::ToolError::UnknownTool(message) => ToolError::UnknownTool(message),
    }
}

impl types::Host for PluginState {}

impl host::Host for PluginState {
    fn log(&mut self, level: host::Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            host::Level::Trace => tracing::Level::TRACE,
            host::Level::Debug => tracing::Level::DEBUG,
            host::Level::Info => tracing::Level::INFO,
            host::Level::Warn => tracing::Level::WARN,
            host::Level::Error => tracing::Level::ERROR,
        };
        self.host_log(level, &message);
        Ok(())
    }

    fn panicked(&mut self, message: String) -> wasmtime::Result<()> {
        self.host_panicked(message);
        Ok(())
    }

    async fn state_get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        self.host_state_get(&key).await
    }

    async fn state_set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.host_state_set(&key, &value).await
    }

    async fn state_delete(&mut self, key: String) -> wasmtime::Result<()> {
        self.host_state_delete(&key).await
    }
}
