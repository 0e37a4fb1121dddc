//! Any component as a toolset (issue 34): the functions a component exports,
//! at its top level or in its exported interfaces, as tools whose schemas come
//! exactly from their WIT types, read by wasmtime's type reflection.
//!
//! `inspect` shows them ([`ExportedTools`]); a plugin file that does not
//! export the toolhost contract but exports functions loads as these tools
//! ([`functions`]), and `call` runs them through wasmtime's dynamic API with
//! the conversions of `value`.
//!
//! # Descriptions
//!
//! A tool's description is its function's WIT doc comment (`///` above the
//! function, in an interface or the world), when the component carries its
//! WIT docs: the `package-docs` custom section that wit-component writes
//! (see `docs`; wasm-tools' embed path, which wit-bindgen with
//! wasm-component-ld, componentize-py and componentize-qjs take, does not
//! keep it yet). Without one, it is "`interface#function`, a function the
//! component exports." The docs of the named types an interface exports
//! (records and their fields, enum, flags and variant cases) describe their
//! schema nodes (see `schema::Named`). An operator's sidecar
//! `NAME.tools.toml` (see `sidecar`) may replace a description, hide a tool,
//! set its hints and mark it long-running.
//!
//! # Names
//!
//! A function `add-numbers` of the interface `example:calc/math@1.0.0` is the
//! tool `math__add_numbers`: the interface's own name (no package, no
//! version), two underscores, the function; kebab-case words joined by `_`.
//! WIT names never hold `_`, so two functions never map to one name unless two
//! interfaces share their own name, and then the second is refused (as are
//! names past 64 characters). A top-level function is its name alone.
//!
//! # Types
//!
//! | WIT | JSON | schema |
//! |---|---|---|
//! | `bool` | `true` | `boolean` |
//! | `u8`…`u64`, `s8`…`s64` | an integer | `integer` with the type's `minimum` and `maximum` |
//! | `f32`, `f64` | a number | `number` (`f32`: its finite range; NaN and infinities have no JSON) |
//! | `char` | a one-code-point string | `string`, length 1 |
//! | `string` | a string | `string` |
//! | `list<u8>` | base64 (RFC 4648 §4, padded) | `string` with the pattern |
//! | `list<T>` | an array | `array` of `T` |
//! | `record` | an object, every field | closed `object`, all required |
//! | `tuple<A, B>` | an array of exactly its length | `minItems` = `maxItems`; `items` exact if all one type, else `anyOf` them (neither dialect takes `prefixItems`; the conversion checks each position) |
//! | `option<T>` | `null` or `T` | `T` made nullable; `option<option<T>>`: `null` or `{"some": …}` |
//! | `enum` | the case's name | `string` `enum` |
//! | `flags` | the set flags' names (one given twice counts once) | `array` of `enum` strings, `maxItems` the flags' count (no `uniqueItems`: Gemini drops it) |
//! | `variant` | a bare case's name, or `{"case": payload}` | `anyOf` of a string `enum` and closed objects |
//! | `result<T, E>` (argument) | `"ok"`/`"err"`, or `{"ok": …}`/`{"err": …}` | as a variant |
//! | `result<T, E>` (result) | `T` is the output; `E` is a tool error | `T`'s, and `E`'s as the error schema |
//! | resources, `future`, `stream`, `error-context` | none | the function is refused |
//!
//! 64-bit integers are exact JSON integers over their whole range, read and
//! written without floating point; a decimal string is taken too (the host
//! coerces it, as for any integer). A number written with a fraction or an
//! exponent counts only when it is an exact integer within ±2^53, since past
//! that a double may not be. Clients that parse JSON numbers as doubles (any
//! JavaScript one) round results past ±2^53.
//!
//! An output is MCP structured content, an object: a record's JSON is one;
//! any other type's is sent as `{"result": value}` (decided by the type, not
//! the value).

mod call;
pub(super) mod docs;
mod schema;
pub(super) mod sidecar;
#[cfg(test)]
mod tests;
mod value;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};

use super::LoadedTool;
use super::abi::{self, Declaration};
use super::declarations::check_declarations;
use crate::engine::LoadLimits;
use crate::error::LoadError;
use crate::tool::is_valid_tool_name;
use docs::Docs;
use sidecar::Sidecar;

/// What a component's exported functions would be as tools: the tools, in
/// export order, and the functions that cannot be one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExportedTools {
    /// The functions that make tools.
    pub tools: Vec<ExportedTool>,
    /// The functions that do not, each with the reason.
    #[serde(serialize_with = "as_text")]
    pub refused: Vec<Refusal>,
}

/// One exported function as a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExportedTool {
    /// The tool's name (see the module docs).
    pub name: String,
    /// The function it calls: `interface#function`, or `function` at the top level.
    pub export: String,
    /// The function's doc comment, or the fallback (see the module docs).
    pub description: String,
    /// The arguments: a closed object, one property per parameter.
    pub input_schema: Value,
    /// The structured content of a call's output; `None` when the function
    /// returns nothing (or a `result` without an `ok` payload).
    pub output_schema: Option<Value>,
    /// The content of a tool error: the `err` payload of a function that
    /// returns a `result`, when it has one.
    pub error_schema: Option<Value>,
}

/// Why an exported function cannot be a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A parameter's type, or part of it, has no JSON form.
    #[error("`{function}`: the argument at `{path}` is {what}, which a tool argument cannot be")]
    Argument {
        /// The function (`interface#function`).
        function: String,
        /// Where in the arguments: a JSON pointer, `*` for any list item.
        path: String,
        /// The type, as words.
        what: String,
    },
    /// Its result's type, or part of it, has no JSON form.
    #[error("`{function}`: its result{} is {what}, which a tool result cannot be", at(.path))]
    Result {
        /// The function (`interface#function`).
        function: String,
        /// Where in the result: a JSON pointer, empty for the whole.
        path: String,
        /// The type, as words.
        what: String,
    },
    /// A resource's constructor, method or static function: tools have no
    /// resources to call them on.
    #[error("`{function}` belongs to a resource, which tools do not have")]
    ResourceFunction {
        /// The function (`interface#[method]resource.name`, ...).
        function: String,
    },
    /// A build-time entry point a toolchain adds to every component it
    /// makes (componentize-qjs and componentize-py), not one of the component's own
    /// functions. Left out without a warning.
    #[error(
        "`{function}` is {toolchain}'s build-time entry point, not a function of the component's own"
    )]
    Toolchain {
        /// The function (`interface#function`).
        function: String,
        /// The toolchain that adds it.
        toolchain: &'static str,
    },
    /// Its name does not map to a valid tool name.
    #[error(
        "`{function}`: its tool name `{tool}` is not 1 to 64 ASCII letters, digits, `_` or `-`"
    )]
    Name {
        /// The function (`interface#function`).
        function: String,
        /// The name it maps to.
        tool: String,
    },
    /// An earlier function maps to the same tool name (two interfaces of one
    /// name, from different packages).
    #[error("`{function}`: its tool name `{tool}` is already `{other}`'s")]
    Clash {
        /// The function (`interface#function`).
        function: String,
        /// The name both map to.
        tool: String,
        /// The function that has it.
        other: String,
    },
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{path}`")
    }
}

fn as_text<S: serde::Serializer>(refused: &[Refusal], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(refused.iter().map(ToString::to_string))
}

/// A function's parameters and result, as wasmtime reflects them.
#[derive(Debug)]
pub(super) struct Signature {
    pub(super) params: Vec<(String, Type)>,
    pub(super) result: Option<Type>,
}

impl Signature {
    fn of(function: &str, func: &ComponentFunc) -> Result<Self, Refusal> {
        let mut results = func.results();
        let result = results.next();
        if results.next().is_some() {
            return Err(Refusal::Result {
                function: function.to_owned(),
                path: String::new(),
                what: "more than one value".to_owned(),
            });
        }
        Ok(Self {
            params: func
                .params()
                .map(|(name, ty)| (name.to_owned(), ty))
                .collect(),
            result,
        })
    }

    /// The tool's schemas: input, output, error.
    fn schemas(
        &self,
        function: &str,
        named: &schema::Named<'_>,
    ) -> Result<(Value, Option<Value>, Option<Value>), Refusal> {
        let input = schema::input(&self.params, named).map_err(|e| Refusal::Argument {
            function: function.to_owned(),
            path: e.path,
            what: e.what.to_owned(),
        })?;
        let refused = |e: schema::Unsupported| Refusal::Result {
            function: function.to_owned(),
            path: e.path,
            what: e.what.to_owned(),
        };
        let (output, error) = match &self.result {
            None => (None, None),
            Some(Type::Result(result)) => (
                result
                    .ok()
                    .map(|ok| schema::output(&ok, "/ok", named))
                    .transpose()
                    .map_err(refused)?,
                result
                    .err()
                    .map(|err| schema::of(&err, "/err", 0, named))
                    .transpose()
                    .map_err(refused)?,
            ),
            Some(ty) => (Some(schema::output(ty, "", named).map_err(refused)?), None),
        };
        Ok((input, output, error))
    }
}

/// A function a component exports: the interface it is in (`None` at the
/// top level), its name and its type.
pub(super) struct Export {
    pub(super) interface: Option<String>,
    pub(super) name: String,
    pub(super) func: ComponentFunc,
}

impl Export {
    /// `interface#function`, or the function's name at the top level.
    fn qualified(&self) -> String {
        match &self.interface {
            Some(interface) => format!("{interface}#{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The tool name (see the module docs).
    fn tool_name(&self) -> String {
        let words = |name: &str| name.replace('-', "_");
        match &self.interface {
            Some(interface) => {
                format!(
                    "{}__{}",
                    words(docs::own_name(interface)),
                    words(&self.name)
                )
            }
            None => words(&self.name),
        }
    }
}

/// The functions a component exports, at its top level and in its exported
/// interfaces, in export order.
pub(super) fn exports(component: &Component) -> Vec<Export> {
    let (engine, ty) = (component.engine(), component.component_type());
    let mut found = Vec::new();
    for (name, item) in ty.exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(func) => found.push(Export {
                interface: None,
                name: name.to_owned(),
                func,
            }),
            ComponentItem::ComponentInstance(instance) => {
                for (function, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(func) = item.ty {
                        found.push(Export {
                            interface: Some(name.to_owned()),
                            name: function.to_owned(),
                            func,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// The types the component's interfaces export that have WIT docs, with them.
fn named_types<'d>(component: &Component, docs: &'d Docs) -> schema::Named<'d> {
    let (engine, ty) = (component.engine(), component.component_type());
    let mut types = Vec::new();
    for (interface, item) in ty.exports(engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        for (name, item) in instance.exports(engine) {
            if let ComponentItem::Type(ty) = item.ty
                && let Some(doc) = docs.type_doc(interface, name)
            {
                types.push((ty, doc));
            }
        }
    }
    schema::Named::new(types)
}

/// What the component's exported functions would be as tools, described by
/// the WIT docs it carries.
pub(crate) fn exported_tools(component: &Component, docs: &Docs) -> ExportedTools {
    let (functions, refused) = functions(component, docs);
    ExportedTools {
        tools: functions.into_iter().map(|f| f.tool).collect(),
        refused,
    }
}

/// An exported function that makes a tool: the tool, and what a call needs
/// to find and call the function.
#[derive(Debug)]
pub(super) struct Function {
    /// The tool it makes.
    pub(super) tool: ExportedTool,
    /// The exported interface it is in; `None` at the top level.
    pub(super) interface: Option<String>,
    /// Its name in there.
    pub(super) name: String,
    /// Its parameters and result.
    pub(super) signature: Signature,
}

/// The component's exported functions that make tools, in export order, and
/// those that do not.
pub(super) fn functions(component: &Component, docs: &Docs) -> (Vec<Function>, Vec<Refusal>) {
    let (mut found, mut refused) = (Vec::new(), Vec::new());
    let mut named: HashMap<String, String> = HashMap::new();
    let types = named_types(component, docs);
    for export in exports(component) {
        match tool(&export, &named, (docs, &types)) {
            Ok((tool, signature)) => {
                named.insert(tool.name.clone(), tool.export.clone());
                found.push(Function {
                    tool,
                    interface: export.interface,
                    name: export.name,
                    signature,
                });
            }
            Err(refusal) => refused.push(refusal),
        }
    }
    (found, refused)
}

/// Exports that toolchains add to every component they build, for their own
/// use at build time (snapshotting the initialised runtime): the interface
/// (`None` at the top level), the function, its parameters' names, and the
/// toolchain. Matched on all three, so a function of the user's own WIT that
/// happens to be called `init` stays a tool.
const TOOLCHAIN_EXPORTS: &[(Option<&str>, &str, &[&str], &str)] = &[
    (
        Some("exports"),
        "init",
        &["app-name", "symbols", "stub-wasi"],
        "componentize-py",
    ),
    (
        None,
        "init",
        &["shim", "script", "entry-path", "disable-gc"],
        "componentize-qjs",
    ),
];

/// The toolchain whose build-time entry point `export` is, if it is one.
fn toolchain_export(export: &Export) -> Option<&'static str> {
    TOOLCHAIN_EXPORTS
        .iter()
        .find(|(interface, name, params, _)| {
            *interface == export.interface.as_deref()
                && *name == export.name
                && export
                    .func
                    .params()
                    .map(|(p, _)| p)
                    .eq(params.iter().copied())
        })
        .map(|(_, _, _, toolchain)| *toolchain)
}

fn tool(
    export: &Export,
    named: &HashMap<String, String>,
    (docs, types): (&Docs, &schema::Named<'_>),
) -> Result<(ExportedTool, Signature), Refusal> {
    let function = export.qualified();
    if let Some(toolchain) = toolchain_export(export) {
        return Err(Refusal::Toolchain {
            function,
            toolchain,
        });
    }
    // `[constructor]r`, `[method]r.f`, `[static]r.f`.
    if export.name.starts_with('[') {
        return Err(Refusal::ResourceFunction { function });
    }
    let name = export.tool_name();
    if !is_valid_tool_name(&name) {
        return Err(Refusal::Name {
            function,
            tool: name,
        });
    }
    if let Some(other) = named.get(&name) {
        return Err(Refusal::Clash {
            function,
            tool: name,
            other: other.clone(),
        });
    }
    let signature = Signature::of(&function, &export.func)?;
    let (input_schema, output_schema, error_schema) = signature.schemas(&function, types)?;
    let description = match docs.function(export.interface.as_deref(), &export.name) {
        Some(text) => text.to_owned(),
        None => format!("`{function}`, a function the component exports."),
    };
    let tool = ExportedTool {
        name,
        export: function,
        description,
        input_schema,
        output_schema,
        error_schema,
    };
    Ok((tool, signature))
}

/// The tools of a component that does not export the toolhost contract:
/// its exported functions, described by its WIT docs and then its sidecar,
/// through the same checks and load limits as a plugin's declarations. The
/// functions that cannot be a tool are left out, each with a warning naming
/// it; so are those the sidecar hides.
///
/// # Errors
/// [`LoadError::WrongWorld`] if no exported function makes a tool (or it
/// exports none); [`LoadError::Sidecar`] if the sidecar names a tool the
/// component does not have; else as the declarations of a plugin (too many
/// tools, a schema too large).
pub(super) fn loaded_tools(
    path: &Path,
    plugin: &str,
    component: &Component,
    limits: &LoadLimits,
    (docs, sidecar): (&Docs, Option<&Sidecar>),
) -> Result<Vec<LoadedTool>, LoadError> {
    let (mut functions, refused) = functions(component, docs);
    for refusal in &refused {
        if matches!(refusal, Refusal::Toolchain { .. }) {
            tracing::debug!(
                target: crate::log::LOAD_TARGET, %plugin, reason = %refusal,
                "{plugin}: an exported function left out: {refusal}"
            );
        } else {
            tracing::warn!(
                target: crate::log::LOAD_TARGET, %plugin, reason = %refusal,
                "{plugin}: an exported function left out: {refusal}"
            );
        }
    }
    if functions.is_empty() {
        let exports = component
            .component_type()
            .exports(component.engine())
            .map(|(name, _)| name.to_owned())
            .collect::<Vec<_>>();
        let why = if refused.is_empty() {
            "no function".to_owned()
        } else {
            let refused: Vec<String> = refused.iter().map(ToString::to_string).collect();
            format!("no function that can be a tool: {}", refused.join("; "))
        };
        return Err(LoadError::WrongWorld {
            path: path.to_owned(),
            expected: abi::CURRENT.tools_interface().to_owned(),
            found: if exports.is_empty() {
                "nothing".to_owned()
            } else {
                format!("{}, with {why}", exports.join(", "))
            },
        });
    }
    if let Some(sidecar) = sidecar {
        sidecar
            .check_names(functions.iter().map(|f| f.tool.name.as_str()))
            .map_err(|error| LoadError::Sidecar {
                path: path.to_owned(),
                error,
            })?;
        functions.retain(|f| !sidecar.tool(&f.tool.name).is_some_and(|s| s.hide));
    }
    let declarations: Vec<Declaration> = functions
        .iter()
        .map(|function| declaration(&function.tool, sidecar))
        .collect();
    let mut tools = check_declarations(path, &declarations, limits)?;
    for (tool, function) in tools.iter_mut().zip(functions) {
        tool.function = Some(Arc::new(function));
    }
    Ok(tools)
}

/// The declaration of a function's tool, with what the sidecar says of it.
fn declaration(tool: &ExportedTool, sidecar: Option<&Sidecar>) -> Declaration {
    let mut declaration = Declaration {
        name: tool.name.clone(),
        description: tool.description.clone(),
        long_running: false,
        streaming: false,
        input_schema: tool.input_schema.to_string(),
        output_schema: tool.output_schema.as_ref().map(Value::to_string),
        hints: Default::default(),
    };
    if let Some(settings) = sidecar.and_then(|s| s.tool(&tool.name)) {
        if let Some(description) = &settings.description {
            description.clone_into(&mut declaration.description);
        }
        declaration.long_running = settings.long_running.unwrap_or(false);
        declaration.hints = settings.hints.clone();
    }
    declaration
}
