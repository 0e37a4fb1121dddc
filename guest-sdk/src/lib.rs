//! Write toolhost tools in Rust: a function over a typed argument struct, no
//! JSON Schema, no WIT plumbing, no `unsafe`.
//!
//! A plugin is a `cdylib` crate built for `wasm32-wasip2`. Each tool is a type
//! implementing [`Tool`] (runs to completion) or [`StreamingTool`] (yields
//! chunks); [`export_tools!`] exports them as the `toolhost:plugin/tools`
//! interface, with a [`Catalog`] of resources and prompts as its `catalog`
//! interface: the `catalog-plugin` world of `toolhost:plugin@0.4.0`.
//!
//! # Concepts
//!
//! - **Declaration.** The arguments' JSON Schema (draft 2020-12) is derived from
//!   [`Tool::Args`] with [`schemars`]: `Option<T>` and `#[serde(default)]` fields
//!   are optional (and nullable: `null` means absent, so OpenAI's strict mode and
//!   Gemini can say "none"), doc comments become descriptions, enums and
//!   `#[schemars(range(min = 1, max = 99))]` reach the schema. The doc comment of
//!   the `Args` type is the tool's description unless [`Tool::DESCRIPTION`] is set.
//!   The schema is written in the shape every model provider takes: types inline,
//!   no `$ref` but for recursive types.
//!   The host checks every call against the schema before the tool runs.
//! - **Results.** Return any `T: Serialize` (the host wraps a non-object as
//!   `{"result": …}`), or an [`Output`] with multimodal [`Part`]s: text, JSON,
//!   images, audio, video, files.
//! - **Errors.** Return a [`ToolError`] for failures the model can act on. A panic
//!   is a bug: the SDK reports its message and location to the host and the guest
//!   traps; the host and other calls go on.
//! - **Context.** [`Context`] gives the call and invocation IDs, the invocation's
//!   scratch state (shared by the calls of one agent invocation), the host log,
//!   and who calls ([`Context::caller`]: issuer, subject, scopes and the token
//!   claims the operator grants, never the credentials; `None` when nobody
//!   authenticated the caller). Every call runs in a fresh instance, so static
//!   variables do not survive it.
//! - **Streams.** A [`StreamingTool`] returns lazily computed [`Chunks`] (see
//!   [`chunks`]). Called with `invoke`, its chunks are collected into one output;
//!   a [`Tool`] called with `invoke-stream` yields its output as chunks.
//! - **Catalog.** Besides tools, a plugin may offer MCP's other server
//!   features: [`Resource`]s at fixed URIs, [`ResourceTemplate`]s (RFC 6570),
//!   [`Prompt`]s, and completions of their arguments. It declares them in a
//!   `fn() -> Catalog`, each with its handler, and names the function in
//!   [`export_tools!`] (`catalog: my_catalog`); without one the catalog is
//!   empty. Handlers get a [`Context`] too (IDs, caller, state, log).
//! - **Asking.** A tool may ask its user a question in the middle of a call
//!   ([`Context::ask`], MCP elicitation) and tell the host that a resource it
//!   offers changed ([`Context::resource_updated`]).
//! - **Tracing.** A tool may add its own spans and events to its call's
//!   trace ([`trace::span`], [`trace::event`]); they appear beneath toolhost's
//!   span of the call when the operator exports telemetry.
//!
//! # Example
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use toolhost_guest::{
//!     Chunks, Context, Output, Part, StreamingTool, Tool, ToolError, chunks, export_tools,
//! };
//!
//! /// Counts the words of a text.
//! #[derive(Deserialize, JsonSchema)]
//! struct CountArgs {
//!     /// The text to count.
//!     text: String,
//!     /// Only count words at least this long.
//!     min_len: Option<u32>,
//! }
//!
//! struct WordCount;
//!
//! impl Tool for WordCount {
//!     type Args = CountArgs;
//!     type Output = usize;
//!     const NAME: &'static str = "word_count";
//!
//!     fn call(args: CountArgs, cx: &Context) -> Result<usize, ToolError> {
//!         cx.debug("counting");
//!         let min = args.min_len.unwrap_or(0) as usize;
//!         Ok(args.text.split_whitespace().filter(|w| w.chars().count() >= min).count())
//!     }
//! }
//!
//! /// Describes a text, with a picture.
//! #[derive(Deserialize, JsonSchema)]
//! struct DescribeArgs {
//!     /// What to describe.
//!     text: String,
//! }
//!
//! #[derive(Serialize)]
//! struct Summary {
//!     chars: usize,
//! }
//!
//! struct Describe;
//!
//! impl Tool for Describe {
//!     type Args = DescribeArgs;
//!     type Output = Output;
//!     const NAME: &'static str = "describe";
//!     const DESCRIPTION: &'static str = "Describes a text; returns a summary and an image.";
//!
//!     fn call(args: DescribeArgs, _cx: &Context) -> Result<Output, ToolError> {
//!         if args.text.is_empty() {
//!             return Err(ToolError::invalid_arguments("`text` must not be empty"));
//!         }
//!         Ok(Output::json(Summary { chars: args.text.chars().count() })
//!             .with_part(Part::text(format!("about {}", args.text)))
//!             .with_part(Part::image("image/png", vec![/* PNG bytes */])))
//!     }
//! }
//!
//! /// Counts down to zero, one line per number.
//! #[derive(Deserialize, JsonSchema)]
//! struct CountdownArgs {
//!     /// Where to start.
//!     #[schemars(range(max = 1000))]
//!     from: u32,
//! }
//!
//! struct Countdown;
//!
//! impl StreamingTool for Countdown {
//!     type Args = CountdownArgs;
//!     const NAME: &'static str = "countdown";
//!
//!     fn stream(args: CountdownArgs, _cx: &Context) -> Result<Chunks, ToolError> {
//!         Ok(chunks((0..=args.from).rev().map(|i| Part::text(format!("{i}\n")))))
//!     }
//! }
//!
//! export_tools! {
//!     tools: [WordCount, Describe],
//!     streams: [Countdown],
//! }
//! # fn main() {}
//! ```
//!
//! The plugin's `Cargo.toml`:
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! toolhost-guest = { path = "../../guest-sdk" }
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1.2"
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component to drop into the host's
//! plugins directory. (Instead of depending on `serde` and `schemars` yourself you
//! may use the re-exports [`serde`], [`schemars`] and [`serde_json`], adding
//! `#[serde(crate = "toolhost_guest::serde")]` and
//! `#[schemars(crate = "toolhost_guest::schemars")]` to the derives.)

#![deny(missing_docs)]

mod ask;
mod catalog;
mod context;
mod error;
mod export;
mod output;
mod schema;
mod tool;
pub mod trace;

pub use ask::{Answer, AskError};
pub use catalog::{
    Arguments, Body, Catalog, Completion, CompletionRequest, Contents, IntoContents, IntoMessages,
    Message, MessageContent, Messages, Prompt, PromptArgument, Resource, ResourceRead,
    ResourceTemplate, Role,
};
pub use context::{Caller, Context, Level};
pub use error::ToolError;
pub use output::{Blob, Chunks, IntoChunk, IntoOutput, MediaKind, Output, Part, chunks};
pub use schema::schema_for;
pub use tool::{Declaration, StreamingTool, Tool, ToolHints};

pub use schemars;
pub use serde;
pub use serde_json;

/// The WIT bindings of the `toolhost:plugin/catalog-plugin` world. Not a stable API:
/// [`export_tools!`] and [`Context`] are the ways in.
#[doc(hidden)]
#[allow(
    missing_docs,
    reason = "generated by wit-bindgen; the WIT docs come along"
)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "toolhost:plugin/catalog-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_world",
        default_bindings_module: "toolhost_guest::bindings",
        generate_all,
    });
}

/// Support for [`export_tools!`]; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::export::{
        ChunkStream, Entry, complete, declarations, describe, get_prompt, invoke, invoke_stream,
        read_resource,
    };
    pub use std::result::Result;
    pub use std::vec::Vec;
}
