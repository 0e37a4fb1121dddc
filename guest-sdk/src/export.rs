//! [`export_tools!`](crate::export_tools) and the runtime behind it: dispatch,
//! conversions to the WIT types, the chunk resource and the panic hook.
//!
//! Everything here is `#[doc(hidden)]` support for the macro; plugin authors
//! never name it.

mod catalog;

use std::cell::RefCell;

use crate::bindings::exports::toolhost::plugin::tools as wit_tools;
use crate::bindings::toolhost::plugin::types as wit;
use crate::output::PartRepr;
use crate::tool::parse_args;
use crate::{
    Chunks, Context, Declaration, IntoOutput, MediaKind, Output, Part, StreamingTool, Tool,
    ToolError,
};

pub use catalog::{complete, describe, get_prompt, read_resource};

/// One exported tool: its name and monomorphized entry points.
#[doc(hidden)]
pub struct Entry {
    name: &'static str,
    declare: fn() -> Declaration,
    invoke: fn(&str, &Context) -> Result<Output, ToolError>,
    stream: fn(&str, &Context) -> Result<Chunks, ToolError>,
}

impl Entry {
    /// The entry of a [`Tool`].
    pub const fn tool<T: Tool>() -> Self {
        Self {
            name: T::NAME,
            declare: Declaration::of_tool::<T>,
            invoke: invoke_tool::<T>,
            stream: stream_tool::<T>,
        }
    }

    /// The entry of a [`StreamingTool`].
    pub const fn streaming<T: StreamingTool>() -> Self {
        Self {
            name: T::NAME,
            declare: Declaration::of_streaming_tool::<T>,
            invoke: invoke_streaming::<T>,
            stream: stream_streaming::<T>,
        }
    }
}

fn invoke_tool<T: Tool>(arguments: &str, cx: &Context) -> Result<Output, ToolError> {
    T::call(parse_args(arguments)?, cx)?.into_output()
}

fn stream_tool<T: Tool>(arguments: &str, cx: &Context) -> Result<Chunks, ToolError> {
    invoke_tool::<T>(arguments, cx)?.into_chunks()
}

fn invoke_streaming<T: StreamingTool>(arguments: &str, cx: &Context) -> Result<Output, ToolError> {
    Output::collect(stream_streaming::<T>(arguments, cx)?)
}

fn stream_streaming<T: StreamingTool>(arguments: &str, cx: &Context) -> Result<Chunks, ToolError> {
    T::stream(parse_args(arguments)?, cx)
}

/// `declarations` of the WIT `tools` interface.
#[doc(hidden)]
pub fn declarations(entries: &[Entry]) -> Vec<wit::Declaration> {
    install_panic_hook();
    entries
        .iter()
        .map(|entry| (entry.declare)().into())
        .collect()
}

/// `invoke` of the WIT `tools` interface.
#[doc(hidden)]
pub fn invoke(entries: &[Entry], call: wit::Call) -> Result<wit::Output, wit::ToolError> {
    install_panic_hook();
    let (entry, cx) = find(entries, &call)?;
    let (json, parts) = (entry.invoke)(&call.arguments, &cx)?.into_checked()?;
    Ok(wit::Output {
        json,
        parts: parts
            .into_iter()
            .map(wit::Part::try_from)
            .collect::<Result<_, _>>()?,
    })
}

/// `invoke-stream` of the WIT `tools` interface.
#[doc(hidden)]
pub fn invoke_stream(
    entries: &[Entry],
    call: wit::Call,
) -> Result<wit_tools::Chunks, wit::ToolError> {
    install_panic_hook();
    let (entry, cx) = find(entries, &call)?;
    let chunks = (entry.stream)(&call.arguments, &cx)?;
    Ok(wit_tools::Chunks::new(ChunkStream(RefCell::new(Some(
        chunks,
    )))))
}

fn find<'a>(entries: &'a [Entry], call: &wit::Call) -> Result<(&'a Entry, Context), ToolError> {
    let entry = entries
        .iter()
        .find(|entry| entry.name == call.tool)
        .ok_or_else(|| ToolError::UnknownTool(call.tool.clone()))?;
    let cx = Context::new(&*call.call_id, &*call.invocation_id, &*call.tool);
    let cx = match call.caller.clone() {
        Some(caller) => cx.with_caller(caller.into()),
        None => cx,
    };
    Ok((entry, cx))
}

/// The `chunks` resource: a stream being pulled by the host.
#[doc(hidden)]
pub struct ChunkStream(RefCell<Option<Chunks>>);

impl wit_tools::GuestChunks for ChunkStream {
    fn next(&self) -> Result<Option<wit::Part>, wit::ToolError> {
        let mut slot = self.0.borrow_mut();
        let Some(chunks) = slot.as_mut() else {
            return Ok(None);
        };
        let next = chunks.next();
        // After the end or an error the stream is over: drop the iterator early
        // and answer `none` from then on.
        if !matches!(next, Some(Ok(_))) {
            *slot = None;
        }
        match next {
            None => Ok(None),
            Some(chunk) => Ok(Some(wit::Part::try_from(chunk?)?)),
        }
    }
}

/// Sends panic messages (with their location) to the host before the guest traps.
fn install_panic_hook() {
    // Natively (unit tests, `cargo clippy --workspace`) there is no host to tell.
    #[cfg(target_family = "wasm")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                crate::bindings::toolhost::plugin::host::panicked(&info.to_string());
            }));
        });
    }
}

impl From<ToolError> for wit::ToolError {
    fn from(err: ToolError) -> Self {
        match err {
            ToolError::InvalidArguments(m) => Self::InvalidArguments(m),
            ToolError::Failed(m) => Self::Failed(m),
            ToolError::UnknownTool(m) => Self::UnknownTool(m),
        }
    }
}

impl From<MediaKind> for wit::MediaKind {
    fn from(kind: MediaKind) -> Self {
        match kind {
            MediaKind::Image => Self::Image,
            MediaKind::Audio => Self::Audio,
            MediaKind::Video => Self::Video,
            MediaKind::File => Self::File,
        }
    }
}

impl TryFrom<Part> for wit::Part {
    type Error = ToolError;

    fn try_from(part: Part) -> Result<Self, ToolError> {
        Ok(match part.0 {
            PartRepr::Text(text) => Self::Text(text),
            PartRepr::Json(json) => Self::Json(json),
            PartRepr::Blob(blob) => Self::Blob(wit::Blob {
                kind: blob.kind.into(),
                mime_type: blob.mime_type,
                name: blob.name,
                data: blob.data,
            }),
            PartRepr::Unserializable(err) => {
                return Err(ToolError::failed(format!(
                    "a JSON part of the result failed to serialize: {err}"
                )));
            }
        })
    }
}

impl From<Declaration> for wit::Declaration {
    fn from(decl: Declaration) -> Self {
        Self {
            info: wit::ToolInfo {
                name: decl.name,
                description: decl.description,
                long_running: decl.long_running,
                hints: wit::ToolHints {
                    title: decl.hints.title.map(str::to_owned),
                    read_only: decl.hints.read_only,
                    destructive: decl.hints.destructive,
                    idempotent: decl.hints.idempotent,
                    open_world: decl.hints.open_world,
                },
            },
            input_schema: decl.input_schema.to_string(),
            output_schema: decl.output_schema.map(|schema| schema.to_string()),
            streaming: decl.streaming,
        }
    }
}

/// Exports tools (the `toolhost:plugin/tools` interface) and a [`Catalog`]
/// of resources, templates and prompts (the `catalog` interface) as this
/// component's `toolhost:plugin/catalog-plugin` world.
///
/// Call it once per plugin crate, at the top level:
///
/// ```ignore
/// toolhost_guest::export_tools! {
///     tools: [WordCount, Add],   // types implementing `Tool`
///     streams: [Countdown],      // types implementing `StreamingTool` (optional)
///     catalog: catalog,          // a `fn() -> Catalog` (optional: an empty catalog)
/// }
/// ```
///
/// `export_tools!(WordCount, Add)` is short for `export_tools! { tools: [WordCount, Add] }`,
/// and `export_tools!(WordCount, Add; catalog: catalog)` for the same with a
/// catalog. A plugin that offers only a catalog writes
/// `export_tools! { catalog: catalog }`.
///
/// [`Catalog`]: crate::Catalog
#[macro_export]
macro_rules! export_tools {
    (@catalog) => { $crate::Catalog::new };
    (@catalog $catalog:path) => { $catalog };
    (
        tools: [$($tool:ty),* $(,)?]
        $(, streams: [$($stream:ty),* $(,)?])?
        $(, catalog: $catalog:path)?
        $(,)?
    ) => {
        const _: () = {
            struct __ToolhostPlugin;

            impl __ToolhostPlugin {
                const ENTRIES: &'static [$crate::__private::Entry] = &[
                    $($crate::__private::Entry::tool::<$tool>(),)*
                    $($($crate::__private::Entry::streaming::<$stream>(),)*)?
                ];
                const CATALOG: fn() -> $crate::Catalog = $crate::export_tools!(@catalog $($catalog)?);
            }

            impl $crate::bindings::exports::toolhost::plugin::tools::Guest for __ToolhostPlugin {
                type Chunks = $crate::__private::ChunkStream;

                fn declarations() -> $crate::__private::Vec<
                    $crate::bindings::toolhost::plugin::types::Declaration,
                > {
                    $crate::__private::declarations(Self::ENTRIES)
                }

                fn invoke(
                    call: $crate::bindings::toolhost::plugin::types::Call,
                ) -> $crate::__private::Result<
                    $crate::bindings::toolhost::plugin::types::Output,
                    $crate::bindings::toolhost::plugin::types::ToolError,
                > {
                    $crate::__private::invoke(Self::ENTRIES, call)
                }

                fn invoke_stream(
                    call: $crate::bindings::toolhost::plugin::types::Call,
                ) -> $crate::__private::Result<
                    $crate::bindings::exports::toolhost::plugin::tools::Chunks,
                    $crate::bindings::toolhost::plugin::types::ToolError,
                > {
                    $crate::__private::invoke_stream(Self::ENTRIES, call)
                }
            }

            impl $crate::bindings::exports::toolhost::plugin::catalog::Guest for __ToolhostPlugin {
                fn describe() -> $crate::bindings::toolhost::plugin::types::Catalog {
                    $crate::__private::describe(Self::CATALOG)
                }

                fn read_resource(
                    read: $crate::bindings::toolhost::plugin::types::Read,
                ) -> $crate::__private::Result<
                    $crate::__private::Vec<$crate::bindings::toolhost::plugin::types::ResourceContents>,
                    $crate::bindings::toolhost::plugin::types::ToolError,
                > {
                    $crate::__private::read_resource(Self::CATALOG, read)
                }

                fn get_prompt(
                    get: $crate::bindings::toolhost::plugin::types::Get,
                ) -> $crate::__private::Result<
                    $crate::bindings::toolhost::plugin::types::PromptMessages,
                    $crate::bindings::toolhost::plugin::types::ToolError,
                > {
                    $crate::__private::get_prompt(Self::CATALOG, get)
                }

                fn complete(
                    complete: $crate::bindings::toolhost::plugin::types::CompletionRequest,
                ) -> $crate::__private::Result<
                    $crate::bindings::toolhost::plugin::types::Completion,
                    $crate::bindings::toolhost::plugin::types::ToolError,
                > {
                    $crate::__private::complete(Self::CATALOG, complete)
                }
            }

            // Native builds (unit tests, clippy) skip the export itself: a native
            // `cdylib` cannot carry the component-model export names (the linker
            // rejects the `:` in them).
            #[cfg(target_family = "wasm")]
            $crate::bindings::__export_world!(__ToolhostPlugin with_types_in $crate::bindings);
        };

        /// The declarations this plugin exports (native builds only, where the
        /// component export is skipped: it keeps the tools reachable for tests).
        #[cfg(not(target_family = "wasm"))]
        #[doc(hidden)]
        pub fn __toolhost_declarations(
        ) -> $crate::__private::Vec<$crate::bindings::toolhost::plugin::types::Declaration> {
            $crate::__private::declarations(&[
                $($crate::__private::Entry::tool::<$tool>(),)*
                $($($crate::__private::Entry::streaming::<$stream>(),)*)?
            ])
        }

        /// The catalog this plugin exports (native builds only, like
        /// `__toolhost_declarations`).
        #[cfg(not(target_family = "wasm"))]
        #[doc(hidden)]
        pub fn __toolhost_catalog() -> $crate::bindings::toolhost::plugin::types::Catalog {
            $crate::__private::describe($crate::export_tools!(@catalog $($catalog)?))
        }
    };
    (streams: [$($stream:ty),* $(,)?] $(, catalog: $catalog:path)? $(,)?) => {
        $crate::export_tools! { tools: [], streams: [$($stream),*] $(, catalog: $catalog)? }
    };
    (catalog: $catalog:path $(,)?) => {
        $crate::export_tools! { tools: [], catalog: $catalog }
    };
    ($($tool:ty),+ ; catalog: $catalog:path $(,)?) => {
        $crate::export_tools! { tools: [$($tool),+], catalog: $catalog }
    };
    ($($tool:ty),+ $(,)?) => {
        $crate::export_tools! { tools: [$($tool),+] }
    };
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{Entry, declarations, invoke};
    use crate::bindings::toolhost::plugin::types as wit;
    use crate::{Chunks, Context, Output, Part, StreamingTool, Tool, ToolError, chunks};

    /// Adds two integers.
    #[derive(Deserialize, JsonSchema)]
    struct AddArgs {
        a: i64,
        b: i64,
    }

    struct Add;

    impl Tool for Add {
        type Args = AddArgs;
        type Output = i64;
        const NAME: &'static str = "add";

        fn call(args: AddArgs, _cx: &Context) -> Result<i64, ToolError> {
            Ok(args.a + args.b)
        }
    }

    struct Ids;

    impl Tool for Ids {
        type Args = ();
        type Output = Output;
        const NAME: &'static str = "ids";

        fn call((): (), cx: &Context) -> Result<Output, ToolError> {
            Ok(
                Output::json(json!([cx.call_id(), cx.invocation_id(), cx.tool()]))
                    .with_part(Part::image("image/png", [7_u8])),
            )
        }
    }

    /// Counts down.
    #[derive(Deserialize, JsonSchema)]
    struct CountdownArgs {
        from: u32,
    }

    struct Countdown;

    impl StreamingTool for Countdown {
        type Args = CountdownArgs;
        const NAME: &'static str = "countdown";

        fn stream(args: CountdownArgs, _cx: &Context) -> Result<Chunks, ToolError> {
            Ok(chunks(
                (0..=args.from).rev().map(|i| Part::text(format!("{i}\n"))),
            ))
        }
    }

    const ENTRIES: &[Entry] = &[
        Entry::tool::<Add>(),
        Entry::tool::<Ids>(),
        Entry::streaming::<Countdown>(),
    ];

    fn call(tool: &str, arguments: &str) -> wit::Call {
        wit::Call {
            call_id: "call-1".into(),
            invocation_id: "inv-1".into(),
            tool: tool.into(),
            arguments: arguments.into(),
            caller: None,
        }
    }

    #[test]
    fn declarations_cross_as_json_text() {
        let decls = declarations(ENTRIES);
        let names: Vec<&str> = decls.iter().map(|d| d.info.name.as_str()).collect();
        assert_eq!(names, ["add", "ids", "countdown"]);
        assert_eq!(decls[0].info.description, "Adds two integers.");
        let schema: Value = serde_json::from_str(&decls[0].input_schema).expect("JSON");
        assert_eq!(schema["required"], json!(["a", "b"]));
        assert!(decls[2].streaming && !decls[0].streaming);
    }

    #[test]
    fn invoke_dispatches_by_name() {
        let out = invoke(ENTRIES, call("add", r#"{"a": 2, "b": 3}"#)).expect("adds");
        assert_eq!(out.json.as_deref(), Some("5"));
        assert!(out.parts.is_empty());

        let out = invoke(ENTRIES, call("ids", "{}")).expect("ids");
        assert_eq!(out.json.as_deref(), Some(r#"["call-1","inv-1","ids"]"#));
        assert!(matches!(
            out.parts.as_slice(),
            [wit::Part::Blob(wit::Blob { kind: wit::MediaKind::Image, data, .. })] if data == &[7]
        ));
    }

    #[test]
    fn invoke_collects_a_stream() {
        let out = invoke(ENTRIES, call("countdown", r#"{"from": 2}"#)).expect("counts");
        assert_eq!(out.json.as_deref(), Some(r#""2\n1\n0\n""#));
        assert!(matches!(out.parts.as_slice(), [wit::Part::Text(t)] if t == "2\n1\n0\n"));
    }

    fn catalog() -> crate::Catalog {
        crate::Catalog::new().resource(crate::Resource::new("test://a", "a"), |_| {
            Ok(crate::Contents::text("a"))
        })
    }

    // Every form of the macro expands (natively; the export itself is wasm-only).
    #[allow(
        unreachable_pub,
        reason = "the macro's native-only helper is `pub`, for a plugin crate's root"
    )]
    mod forms {
        use super::{Add, Countdown, Ids, catalog};

        pub(super) mod short {
            crate::export_tools!(super::Add, super::Ids,);
        }
        pub(super) mod short_with_catalog {
            crate::export_tools!(super::Add; catalog: super::catalog);
        }
        pub(super) mod long {
            crate::export_tools! {
                tools: [super::Add],
                streams: [super::Countdown],
                catalog: super::catalog,
            }
        }
        pub(super) mod streams_with_catalog {
            crate::export_tools! { streams: [super::Countdown], catalog: super::catalog }
        }
        pub(super) mod catalog_only {
            crate::export_tools! { catalog: super::catalog }
        }
    }

    #[test]
    fn every_macro_form_exports_its_tools() {
        let names = |decls: Vec<wit::Declaration>| -> Vec<String> {
            decls.into_iter().map(|d| d.info.name).collect()
        };
        assert_eq!(
            names(forms::short::__toolhost_declarations()),
            ["add", "ids"]
        );
        assert_eq!(
            names(forms::short_with_catalog::__toolhost_declarations()),
            ["add"]
        );
        assert_eq!(
            names(forms::long::__toolhost_declarations()),
            ["add", "countdown"]
        );
        assert_eq!(
            names(forms::streams_with_catalog::__toolhost_declarations()),
            ["countdown"]
        );
        assert!(forms::catalog_only::__toolhost_declarations().is_empty());
        let uris = |catalog: wit::Catalog| -> Vec<String> {
            catalog.resources.into_iter().map(|r| r.uri).collect()
        };
        assert!(uris(forms::short::__toolhost_catalog()).is_empty());
        assert_eq!(
            uris(forms::short_with_catalog::__toolhost_catalog()),
            ["test://a"]
        );
        assert_eq!(
            uris(forms::catalog_only::__toolhost_catalog()),
            ["test://a"]
        );
    }

    #[test]
    fn unknown_tools_and_bad_arguments_are_tool_errors() {
        assert!(matches!(
            invoke(ENTRIES, call("nope", "{}")),
            Err(wit::ToolError::UnknownTool(name)) if name == "nope"
        ));
        assert!(matches!(
            invoke(ENTRIES, call("add", r#"{"a": "x"}"#)),
            Err(wit::ToolError::InvalidArguments(message)) if message.contains("invalid type")
        ));
    }
}
