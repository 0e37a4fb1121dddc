//! The macros that write a version module's body (`abi/v0_1.rs`, ...).

/// The body of a version module (`abi/v0_1.rs`, ...): its bindings, linking,
/// export lookup and every conversion but `declaration`, which the module
/// writes itself (where versions differ). Versions' generated types are
/// distinct Rust types even where their WIT is the same, hence a macro over
/// the module body, not a generic function.
///
/// `$wit` is the WIT directory (relative to `host/`), `$tools` the tools
/// interface its plugins export. A version whose `call` carries the caller
/// (`@0.3.0` on) says `caller` last.
macro_rules! contract_version {
    ($wit:tt, $tools:tt) => {
        contract_version!(@body $wit, $tools, "toolhost:plugin/plugin", Plugin, {}, {});
        contract_version!(@call);
    };
    ($wit:tt, $tools:tt, caller) => {
        contract_version!(@body $wit, $tools, "toolhost:plugin/plugin", Plugin, {}, {});
        contract_version!(@call caller);
    };
    // A version with more host imports (`imports`: their bindgen settings,
    // `host`: their `host::Host` methods) and a world of its own.
    ($wit:tt, $tools:tt, caller, world $world:tt $World:ident,
        imports { $($imports:tt)* }, host { $($host:tt)* }) => {
        contract_version!(@body $wit, $tools, $world, $World, { $($imports)* }, { $($host)* });
        contract_version!(@call caller);
    };
    (@call) => {
        fn wit_call(call: Call) -> wit::Call {
            wit::Call {
                call_id: call.call_id,
                invocation_id: call.invocation_id,
                tool: call.tool,
                arguments: call.arguments,
            }
        }
    };
    (@call caller) => {
        fn wit_call(call: Call) -> wit::Call {
            wit::Call {
                call_id: call.call_id,
                invocation_id: call.invocation_id,
                tool: call.tool,
                arguments: call.arguments,
                caller: call.caller.map(wit_caller),
            }
        }

        fn wit_caller(caller: super::Caller) -> types::Caller {
            types::Caller {
                issuer: caller.issuer,
                subject: caller.subject,
                scopes: caller.scopes,
                claims: caller.claims,
            }
        }
    };
    (@body $wit:tt, $tools:tt, $world:tt, $World:ident, { $($imports:tt)* }, { $($host:tt)* }) => {
        use wasmtime::Store;
        use wasmtime::component::{
            Component, ComponentExportIndex, HasSelf, Instance, InstancePre, Linker, ResourceAny,
            TypedFunc,
        };

        use super::{Call, Declaration, RawOutput, RawPart, ToolError};
        use crate::plugin::state::PluginState;
        use crate::tool::{MediaKind, ToolHints};
        use bindings::exports::toolhost::plugin::tools as wit;
        use bindings::toolhost::plugin::{host, types};

        mod bindings {
            wasmtime::component::bindgen!({
                path: $wit,
                world: $world,
                // The state imports await the state store (Redis, maybe); a store
                // that fails traps the guest with a typed error.
                imports: {
                    "toolhost:plugin/host.state-get": async | trappable,
                    "toolhost:plugin/host.state-set": async | trappable,
                    "toolhost:plugin/host.state-delete": async | trappable,
                    $($imports)*
                    default: trappable,
                },
                exports: { default: async },
            });
        }

        /// The interface every plugin of this version exports.
        pub(crate) const TOOLS_INTERFACE: &str = $tools;

        /// The contract's WIT text (what cached declarations were read through).
        pub(crate) const WIT: &str =
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $wit, "/plugin.wit"));

        /// Adds this version's host imports to the linker.
        pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
            bindings::$World::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
        }

        /// Where a component's exports are.
        #[derive(Clone)]
        pub(crate) struct ExportIndices {
            all: wit::GuestIndices,
            /// `invoke`, the one export a plain call needs: looked up and type-checked
            /// alone per call, not with every other export.
            invoke: ComponentExportIndex,
        }

        /// The typed `invoke` export of an instance.
        pub(crate) type Invoke = TypedFunc<(wit::Call,), (Result<wit::Output, wit::ToolError>,)>;

        /// Every typed export of an instance.
        pub(crate) type Exports = wit::Guest;

        impl ExportIndices {
            pub(crate) fn new(
                pre: &InstancePre<PluginState>,
                component: &Component,
            ) -> wasmtime::Result<Self> {
                let all = wit::GuestIndices::new(pre)?;
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
            let declared = exports.call_declarations(store).await?;
            Ok(declared.into_iter().map(declaration).collect())
        }

        pub(crate) async fn invoke_stream(
            exports: &Exports,
            store: &mut Store<PluginState>,
            call: Call,
        ) -> wasmtime::Result<Result<ResourceAny, ToolError>> {
            let result = exports
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
                .chunks()
                .call_next(store, chunks)
                .await?;
            Ok(result.map(|chunk| chunk.map(part)).map_err(tool_error))
        }

        fn output(output: wit::Output) -> RawOutput {
            RawOutput {
                json: output.json,
                parts: output.parts.into_iter().map(part).collect(),
            }
        }

        fn part(part: types::Part) -> RawPart {
            match part {
                types::Part::Text(text) => RawPart::Text(text),
                types::Part::Json(text) => RawPart::Json(text),
                types::Part::Blob(blob) => RawPart::Blob {
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
                    host::Level::Trace => crate::tool::LogLevel::Trace,
                    host::Level::Debug => crate::tool::LogLevel::Debug,
                    host::Level::Info => crate::tool::LogLevel::Info,
                    host::Level::Warn => crate::tool::LogLevel::Warn,
                    host::Level::Error => crate::tool::LogLevel::Error,
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

            $($host)*
        }
    };
}

/// The declaration conversion of a version whose tools declare hints
/// (`@0.2.0` on).
macro_rules! hinted_declaration {
    () => {
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
    };
}
