//! The [`Tool`] and [`StreamingTool`] traits, and the declarations derived from them.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::ArgsSchema;
use crate::{Chunks, Context, IntoOutput, ToolError};

/// A tool that runs to completion: typed arguments in, a result out.
///
/// The arguments' JSON Schema is derived from [`Tool::Args`]; the doc comment on
/// the `Args` type is the description unless [`Tool::DESCRIPTION`] is set.
///
/// ```
/// use serde::Deserialize;
/// use schemars::JsonSchema;
/// use toolhost_guest::{Context, Tool, ToolError};
///
/// /// Adds two numbers.
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first term.
///     a: i64,
///     /// The second term.
///     b: i64,
/// }
///
/// struct Add;
///
/// impl Tool for Add {
///     type Args = AddArgs;
///     type Output = i64;
///     const NAME: &'static str = "add";
///
///     fn call(args: AddArgs, _cx: &Context) -> Result<i64, ToolError> {
///         args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("overflow"))
///     }
/// }
/// ```
pub trait Tool {
    /// The arguments: usually a struct deriving `Deserialize` and `JsonSchema`.
    /// `Option<T>` and `#[serde(default)]` fields are optional; everything else is
    /// required.
    type Args: DeserializeOwned + JsonSchema;
    /// The result: any `T: Serialize` (sent as JSON), or an [`Output`](crate::Output)
    /// for multimodal parts.
    type Output: IntoOutput;
    /// The tool's name, unique within the plugin: ASCII letters, digits, `_` and
    /// `-`, 1 to 64 characters.
    const NAME: &'static str;
    /// What the tool does, for the model. Empty means: the doc comment of `Args`.
    const DESCRIPTION: &'static str = "";
    /// The tool starts long work and may return a pending status; the host adds a
    /// note for the model.
    const LONG_RUNNING: bool = false;
    /// Hints about the tool's behaviour, which MCP clients see as the tool's
    /// `annotations`: e.g. `ToolHints::NONE.read_only(true)`. None by default.
    const HINTS: ToolHints = ToolHints::NONE;

    /// Runs the tool.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] the model can read; panics are bugs and trap the guest.
    fn call(args: Self::Args, cx: &Context) -> Result<Self::Output, ToolError>;

    /// The JSON Schema of the JSON result, if the tool declares one; the host
    /// checks results against it.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The arguments' JSON Schema exactly as written, in place of the one
    /// derived from [`Tool::Args`] and made portable (see [`schema_for`]):
    /// for a schema the derivation cannot say, or one clients must see as it
    /// is (`$schema`, `$defs` and `$ref`, `additionalProperties`). Its root is
    /// an object schema. The host checks arguments against it, then they are
    /// parsed into `Args`: the two must agree.
    ///
    /// [`schema_for`]: crate::schema_for
    fn input_schema() -> Option<Value> {
        None
    }
}

/// A tool that yields its result as a stream of chunks.
///
/// Called through `invoke`, its chunks are collected into one output.
///
/// ```
/// use serde::Deserialize;
/// use schemars::JsonSchema;
/// use toolhost_guest::{Chunks, Context, Part, StreamingTool, ToolError, chunks};
///
/// /// Counts down to zero, one line per number.
/// #[derive(Deserialize, JsonSchema)]
/// struct CountdownArgs {
///     /// Where to start.
///     from: u32,
/// }
///
/// struct Countdown;
///
/// impl StreamingTool for Countdown {
///     type Args = CountdownArgs;
///     const NAME: &'static str = "countdown";
///
///     fn stream(args: CountdownArgs, _cx: &Context) -> Result<Chunks, ToolError> {
///         Ok(chunks((0..=args.from).rev().map(|i| Part::text(format!("{i}\n")))))
///     }
/// }
/// ```
pub trait StreamingTool {
    /// The arguments; see [`Tool::Args`].
    type Args: DeserializeOwned + JsonSchema;
    /// The tool's name; see [`Tool::NAME`].
    const NAME: &'static str;
    /// What the tool does; empty means: the doc comment of `Args`.
    const DESCRIPTION: &'static str = "";
    /// See [`Tool::LONG_RUNNING`].
    const LONG_RUNNING: bool = false;
    /// See [`Tool::HINTS`].
    const HINTS: ToolHints = ToolHints::NONE;

    /// See [`Tool::input_schema`].
    fn input_schema() -> Option<Value> {
        None
    }

    /// Starts the stream. The returned iterator runs lazily, as the host pulls.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] if the stream cannot start; an `Err` item ends the stream.
    fn stream(args: Self::Args, cx: &Context) -> Result<Chunks, ToolError>;
}

/// How a tool is called, derived from its types: what the host receives.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The tool's name.
    pub name: String,
    /// The description for the model.
    pub description: String,
    /// Whether the tool is long-running.
    pub long_running: bool,
    /// The JSON Schema (draft 2020-12) of the arguments; its root is an object.
    pub input_schema: Value,
    /// The JSON Schema of the JSON result, if declared.
    pub output_schema: Option<Value>,
    /// Whether the tool streams.
    pub streaming: bool,
    /// Hints about the tool's behaviour.
    pub hints: ToolHints,
}

/// Hints about a tool's behaviour (`toolhost:plugin` `tool-hints`, since 0.2.0),
/// which MCP clients see as the tool's `annotations`. Every hint is optional
/// (`None`: not said); the host enforces none of them. Built in a `const`:
///
/// ```
/// use toolhost_guest::ToolHints;
///
/// const HINTS: ToolHints = ToolHints::NONE
///     .title("Word count")
///     .read_only(true)
///     .idempotent(true)
///     .open_world(false);
/// assert_eq!(HINTS.read_only, Some(true));
/// assert_eq!(HINTS.destructive, None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolHints {
    /// A short human-readable name (MCP `title`).
    pub title: Option<&'static str>,
    /// The tool changes nothing in its environment (MCP `readOnlyHint`).
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite (MCP `destructiveHint`; meaningful
    /// when it is not read-only).
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect (MCP
    /// `idempotentHint`).
    pub idempotent: Option<bool>,
    /// The tool reaches systems outside the host, e.g. the web (MCP
    /// `openWorldHint`).
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// No hints.
    pub const NONE: Self = Self {
        title: None,
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    /// Sets the title.
    #[must_use]
    pub const fn title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// Sets the read-only hint.
    #[must_use]
    pub const fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Sets the destructive hint.
    #[must_use]
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Sets the idempotent hint.
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Sets the open-world hint.
    #[must_use]
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }
}

impl Declaration {
    /// The declaration of a [`Tool`].
    pub fn of_tool<T: Tool>() -> Self {
        let (input_schema, doc) = ArgsSchema::of::<T::Args>().into_parts();
        Self {
            name: T::NAME.to_owned(),
            description: pick_description(T::DESCRIPTION, doc),
            long_running: T::LONG_RUNNING,
            input_schema: T::input_schema().unwrap_or(input_schema),
            output_schema: T::output_schema(),
            streaming: false,
            hints: T::HINTS,
        }
    }

    /// The declaration of a [`StreamingTool`].
    pub fn of_streaming_tool<T: StreamingTool>() -> Self {
        let (input_schema, doc) = ArgsSchema::of::<T::Args>().into_parts();
        Self {
            name: T::NAME.to_owned(),
            description: pick_description(T::DESCRIPTION, doc),
            long_running: T::LONG_RUNNING,
            input_schema: T::input_schema().unwrap_or(input_schema),
            output_schema: None,
            streaming: true,
            hints: T::HINTS,
        }
    }
}

fn pick_description(explicit: &str, doc: Option<String>) -> String {
    if explicit.is_empty() {
        doc.unwrap_or_default()
    } else {
        explicit.to_owned()
    }
}

/// Parses the JSON arguments; `()`-like argument types accept any object, and a
/// `null` for a property that is not required is taken as absent.
///
/// # Errors
///
/// [`ToolError::InvalidArguments`] with serde's message.
pub(crate) fn parse_args<A: DeserializeOwned + JsonSchema>(
    arguments: &str,
) -> Result<A, ToolError> {
    serde_json::from_str(arguments).or_else(|err| {
        // Only on failure: generating the schema costs more than parsing.
        let schema = ArgsSchema::of::<A>();
        if schema.is_unit() {
            return serde_json::from_value(Value::Null).map_err(ToolError::invalid_arguments);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(arguments) else {
            return Err(ToolError::invalid_arguments(err));
        };
        if schema.drop_null_optionals(&mut value) {
            serde_json::from_value(value).map_err(ToolError::invalid_arguments)
        } else {
            Err(ToolError::invalid_arguments(err))
        }
    })
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{Declaration, ToolHints, parse_args};
    use crate::{Chunks, Context, Part, StreamingTool, Tool, ToolError, chunks};

    /// Places an order.
    ///
    /// Second paragraph.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[expect(dead_code, reason = "only the schema and parsing are tested")]
    struct OrderArgs {
        /// What to order.
        item: String,
        /// How many.
        #[schemars(range(min = 1, max = 99))]
        quantity: u32,
        /// The size.
        size: Size,
        /// A note for the kitchen.
        note: Option<String>,
        /// Gift wrapping.
        #[serde(default)]
        wrapped: bool,
        /// Where to deliver.
        address: Option<Address>,
    }

    /// A size.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Size {
        /// Fits a hand.
        Small,
        /// Fits a bag.
        Medium,
        Large,
    }

    /// A postal address.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[expect(dead_code, reason = "only the schema is tested")]
    struct Address {
        /// The street.
        street: String,
    }

    struct Order;

    impl Tool for Order {
        type Args = OrderArgs;
        type Output = ();
        const NAME: &'static str = "order";

        fn call(_args: OrderArgs, _cx: &Context) -> Result<(), ToolError> {
            Ok(())
        }
    }

    fn order_schema() -> Value {
        Declaration::of_tool::<Order>().input_schema
    }

    #[test]
    fn root_is_a_plain_object_schema() {
        let schema = order_schema();
        assert_eq!(schema["type"], "object");
        for key in ["$schema", "title", "description"] {
            assert!(schema.get(key).is_none(), "root `{key}` kept: {schema:#}");
        }
    }

    #[test]
    fn required_is_exact() {
        let schema = order_schema();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required is a list")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["item", "quantity", "size"]);
        let properties = schema["properties"].as_object().expect("properties");
        assert_eq!(properties.len(), 6);
    }

    #[test]
    fn field_docs_ranges_and_enums_reach_the_schema() {
        let schema = order_schema();
        let quantity = &schema["properties"]["quantity"];
        assert_eq!(quantity["description"], "How many.");
        assert_eq!(quantity["minimum"], 1);
        assert_eq!(quantity["maximum"], 99);
        assert_eq!(
            schema["properties"]["item"]["description"],
            "What to order."
        );

        // The enum is inline: no `$ref`, no `$defs`.
        let size = &schema["properties"]["size"];
        assert!(schema.get("$defs").is_none(), "{schema:#}");
        // Documented variants: schemars writes `oneOf` of `const`s; the SDK folds it.
        let mut values: Vec<&str> = size["enum"]
            .as_array()
            .expect("an enum")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        assert_eq!(values, ["large", "medium", "small"], "{schema:#}");
        assert_eq!(size["type"], "string");
        assert!(size.get("oneOf").is_none(), "{schema:#}");
        // The field's doc first, then the type's with its variants.
        assert_eq!(
            size["description"],
            "The size.\n\nA size.\n\n- `small`: Fits a hand.\n- `medium`: Fits a bag."
        );
        let address = &schema["properties"]["address"]["anyOf"][0];
        assert_eq!(
            address["properties"]["street"]["type"], "string",
            "{schema:#}"
        );
    }

    #[test]
    fn description_comes_from_the_args_doc_comment() {
        let decl = Declaration::of_tool::<Order>();
        assert_eq!(decl.name, "order");
        assert!(decl.description.starts_with("Places an order."), "{decl:?}");
        assert!(decl.description.contains("Second paragraph."), "{decl:?}");
        assert!(!decl.long_running && !decl.streaming);
        assert_eq!(decl.output_schema, None);
        assert_eq!(decl.hints, ToolHints::NONE);
    }

    struct Explicit;

    impl Tool for Explicit {
        type Args = ();
        type Output = ();
        const NAME: &'static str = "explicit";
        const DESCRIPTION: &'static str = "Says what it does.";
        const LONG_RUNNING: bool = true;
        const HINTS: ToolHints = ToolHints::NONE.title("Explicit").destructive(false);

        fn call((): (), _cx: &Context) -> Result<(), ToolError> {
            Ok(())
        }

        fn output_schema() -> Option<Value> {
            Some(json!({"type": "object"}))
        }
    }

    /// Nothing to say.
    #[derive(Deserialize, JsonSchema)]
    struct UnitArgs;

    struct Stream;

    impl StreamingTool for Stream {
        type Args = UnitArgs;
        const NAME: &'static str = "stream";

        fn stream(_args: UnitArgs, _cx: &Context) -> Result<Chunks, ToolError> {
            Ok(chunks([Part::text("a")]))
        }
    }

    #[test]
    fn explicit_description_flags_and_output_schema() {
        let decl = Declaration::of_tool::<Explicit>();
        assert_eq!(decl.description, "Says what it does.");
        assert!(decl.long_running);
        assert_eq!(decl.output_schema, Some(json!({"type": "object"})));
        assert_eq!(decl.hints.title, Some("Explicit"));
        assert_eq!(decl.hints.destructive, Some(false));
        assert_eq!(decl.hints.read_only, None);
        let decl = Declaration::of_streaming_tool::<Stream>();
        assert!(decl.streaming);
        assert_eq!(decl.description, "Nothing to say.");
    }

    struct Exact;

    impl Tool for Exact {
        type Args = Value;
        type Output = ();
        const NAME: &'static str = "exact";
        const DESCRIPTION: &'static str = "Takes a schema as written.";

        fn call(_args: Value, _cx: &Context) -> Result<(), ToolError> {
            Ok(())
        }

        fn input_schema() -> Option<Value> {
            Some(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"at": {"$ref": "#/$defs/place"}},
                "$defs": {"place": {"type": "string"}},
                "additionalProperties": false
            }))
        }
    }

    #[test]
    fn a_schema_written_by_hand_is_declared_as_written() {
        let decl = Declaration::of_tool::<Exact>();
        assert_eq!(Some(decl.input_schema), Exact::input_schema());
    }

    #[test]
    fn unit_args_are_an_empty_object() {
        let expected = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert_eq!(Declaration::of_tool::<Explicit>().input_schema, expected);
        assert_eq!(
            Declaration::of_streaming_tool::<Stream>().input_schema,
            expected
        );
        parse_args::<()>("{}").expect("() accepts {}");
        parse_args::<UnitArgs>("{}").expect("a unit struct accepts {}");
    }

    #[test]
    fn bad_arguments_are_invalid_arguments_with_serdes_message() {
        let err = parse_args::<OrderArgs>(r#"{"item": "tea"}"#).expect_err("missing fields");
        match err {
            ToolError::InvalidArguments(message) => {
                assert!(message.contains("missing field `quantity`"), "{message}");
            }
            other => panic!("not invalid-arguments: {other:?}"),
        }
        let args = parse_args::<OrderArgs>(r#"{"item": "tea", "quantity": 2, "size": "large"}"#)
            .expect("valid arguments");
        assert_eq!(args.quantity, 2);
    }

    /// Numbers of every width, and strings with standard formats.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the schema and parsing are tested")]
    struct Measures {
        small: u8,
        count: u64,
        offset: i32,
        ratio: f64,
        weight: f32,
        size: usize,
        #[schemars(email)]
        contact: String,
        #[schemars(url)]
        home: String,
        #[schemars(extend("format" = "date-time"))]
        when: String,
        inner: Inner,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[expect(dead_code, reason = "only the schema is tested")]
    struct Inner {
        index: u32,
        delta: Option<i64>,
    }

    /// Every `format` in a schema, by JSON pointer.
    fn formats(value: &Value, at: &str, found: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if let ("format", Value::String(format)) = (key.as_str(), child) {
                        found.push((at.to_owned(), format.clone()));
                    }
                    formats(child, &format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    formats(child, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn only_standard_formats_are_declared() {
        let schema = crate::schema::ArgsSchema::of::<Measures>().into_parts().0;
        let mut found = Vec::new();
        formats(&schema, "", &mut found);
        found.sort();
        let expected = [
            ("/properties/contact", "email"),
            ("/properties/home", "uri"),
            ("/properties/when", "date-time"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(at, format)| ((*at).to_owned(), (*format).to_owned()))
            .collect();
        assert_eq!(found, expected, "{schema:#}");
        // Unsigned integers still say they cannot be negative, nested ones too.
        for at in ["/properties/small", "/properties/count", "/properties/size"] {
            assert_eq!(
                schema.pointer(at).unwrap()["minimum"],
                0,
                "{at}: {schema:#}"
            );
        }
        assert_eq!(
            schema["properties"]["inner"]["properties"]["index"]["minimum"],
            0
        );
        assert_eq!(schema["additionalProperties"], false, "deny_unknown_fields");
        // Output schemas too.
        let mut found = Vec::new();
        formats(&crate::schema_for::<Inner>(), "", &mut found);
        assert_eq!(found, [], "{:#}", crate::schema_for::<Inner>());
    }

    #[test]
    fn deny_unknown_fields_refuses_a_misspelt_key() {
        let err = parse_args::<Measures>(r#"{"seperator": "_"}"#).expect_err("unknown key");
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown field `seperator`")),
            "{err:?}"
        );
    }
}
