//! Test plugin `conformance`: the tool set every guest language implements, in
//! Rust. The same suite (`host/tests/all/conformance.rs`) runs against each
//! language's build; `tests/plugins/conformance-py/app.py` is the Python one.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `echo` | returns `{"message", "nested"}`: nested objects, defaults filled in |
//! | `greet` | optional arguments with defaults: `"{greeting}, {name}!"` × `times` |
//! | `add` | returns the bare number `a + b` (the host wraps it) |
//! | `order` | an enum argument; returns the size in ml |
//! | `fail` | fails with `message` (as invalid arguments if `invalid`) |
//! | `countdown` | streams `"n\n"`, …, `"0\n"`: `start + 1` chunks |
//! | `pixel` | a text part and a 1×1 PNG image part |
//! | `remember` | invocation state: stores or reads a key |
//! | `whoami` | the call and invocation IDs, and `caller` (issuer, subject, scopes, claims) when there is one |
//! | `crash` | a bug when `divisor` is 0 (languages differ: see the suite) |
//!
//! Its catalog (resources, templates, prompts, completions) is in `catalog.rs`,
//! checked by `host/tests/all/conformance/catalog.rs`.

mod catalog;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use test_shared::{Pixel, Remember};
use toolhost_guest::{
    Chunks, Context, Part, StreamingTool, Tool, ToolError, ToolHints, chunks, export_tools,
};

/// Echoes its arguments back as a JSON object.
#[derive(Deserialize, Serialize, JsonSchema)]
struct EchoArgs {
    /// The message to echo.
    message: String,
    /// Optional structured data, echoed as given.
    nested: Option<Nested>,
}

/// Structured data inside the echo arguments.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Nested {
    /// A label.
    label: String,
    /// Any tags.
    #[serde(default)]
    tags: Vec<String>,
    /// A deeper level.
    inner: Option<Inner>,
}

/// The innermost level.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Inner {
    /// How deep this is.
    depth: i64,
}

struct Echo;

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = EchoArgs;
    const NAME: &'static str = "echo";

    fn call(args: EchoArgs, _cx: &Context) -> Result<EchoArgs, ToolError> {
        Ok(args)
    }
}

/// Greets someone, optionally several times.
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
    /// The word of greeting.
    #[serde(default = "hello")]
    greeting: String,
    /// How many greetings, from 1 to 5.
    #[serde(default = "one")]
    times: i64,
}

fn hello() -> String {
    "Hello".to_owned()
}

fn one() -> i64 {
    1
}

struct Greet;

impl Tool for Greet {
    type Args = GreetArgs;
    type Output = Value;
    const NAME: &'static str = "greet";

    fn call(args: GreetArgs, _cx: &Context) -> Result<Value, ToolError> {
        let times = usize::try_from(args.times)
            .ok()
            .filter(|n| (1..=5).contains(n))
            .ok_or_else(|| ToolError::invalid_arguments("`times` must be from 1 to 5"))?;
        let one = format!("{}, {}!", args.greeting, args.name);
        Ok(json!({ "text": vec![one; times].join(" ") }))
    }
}

/// Adds two integers; the host wraps the bare number as {"result": n}.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

struct Add;

impl Tool for Add {
    type Args = AddArgs;
    type Output = i64;
    const NAME: &'static str = "add";
    const HINTS: ToolHints = ToolHints::NONE
        .title("Add")
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: AddArgs, _cx: &Context) -> Result<i64, ToolError> {
        args.a
            .checked_add(args.b)
            .ok_or_else(|| ToolError::invalid_arguments("the sum overflows a 64-bit integer"))
    }
}

/// Orders a drink in one of three sizes.
#[derive(Deserialize, JsonSchema)]
struct OrderArgs {
    /// What to order.
    item: String,
    /// The size.
    size: Size,
}

/// A size.
#[derive(Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Medium,
    Large,
}

struct Order;

impl Tool for Order {
    type Args = OrderArgs;
    type Output = Value;
    const NAME: &'static str = "order";

    fn call(args: OrderArgs, _cx: &Context) -> Result<Value, ToolError> {
        let ml = match args.size {
            Size::Small => 250,
            Size::Medium => 350,
            Size::Large => 500,
        };
        Ok(json!({ "item": args.item, "size": args.size, "ml": ml }))
    }
}

/// Always fails with the given message.
#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// The failure message.
    message: String,
    /// Report invalid arguments instead of a failure.
    #[serde(default)]
    invalid: bool,
}

struct Fail;

impl Tool for Fail {
    type Args = FailArgs;
    type Output = ();
    const NAME: &'static str = "fail";

    fn call(args: FailArgs, _cx: &Context) -> Result<(), ToolError> {
        Err(if args.invalid {
            ToolError::invalid_arguments(args.message)
        } else {
            ToolError::failed(args.message)
        })
    }
}

/// Counts down to zero, one line per number, as a stream.
#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Where to start.
    start: u32,
}

struct Countdown;

impl StreamingTool for Countdown {
    type Args = CountdownArgs;
    const NAME: &'static str = "countdown";

    fn stream(args: CountdownArgs, _cx: &Context) -> Result<Chunks, ToolError> {
        Ok(chunks(
            (0..=args.start).rev().map(|i| Part::text(format!("{i}\n"))),
        ))
    }
}

struct Whoami;

impl Tool for Whoami {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "whoami";
    const DESCRIPTION: &'static str = "Tells the caller the IDs of this call.";

    fn call((): (), cx: &Context) -> Result<Value, ToolError> {
        cx.info("whoami called");
        let mut ids = json!({ "call_id": cx.call_id(), "invocation_id": cx.invocation_id() });
        if let Some(caller) = cx.caller() {
            ids["caller"] = json!(caller);
        }
        Ok(ids)
    }
}

/// Divides one by the divisor: a bug when it is zero.
#[derive(Deserialize, JsonSchema)]
struct CrashArgs {
    /// The divisor.
    #[serde(default)]
    divisor: i64,
}

struct Crash;

impl Tool for Crash {
    type Args = CrashArgs;
    type Output = f64;
    const NAME: &'static str = "crash";

    fn call(args: CrashArgs, _cx: &Context) -> Result<f64, ToolError> {
        // A bug on purpose: Rust panics (the guest traps and the host reports
        // the panic); the Python SDK reports the exception as a failure.
        assert!(args.divisor != 0, "division by zero");
        #[expect(clippy::cast_precision_loss, reason = "a test value")]
        Ok(1.0 / args.divisor as f64)
    }
}

export_tools! {
    tools: [Echo, Greet, Add, Order, Fail, Pixel, Remember, Whoami, Crash],
    streams: [Countdown],
    catalog: catalog::catalog,
}
