//! Test plugin `echo`: a well-behaved plugin that exercises every feature of the
//! guest SDK. The host's integration tests lean on the exact behaviour below.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `echo` | returns its arguments as an object |
//! | `add` | returns the bare number `a + b` (the host wraps it as `{"result": n}`) |
//! | `order` | checks ranges and enums through the schema; returns the order |
//! | `flag` | returns `{"enabled": bool}` (coercion of `"true"`) |
//! | `countdown` | streams `"n\n"`, …, `"0\n"` |
//! | `pixel` | a text part and a 1×1 PNG image part |
//! | `remember` | invocation state: stores or reads a key |
//! | `whoami` | the call and invocation IDs, and the caller (issuer, subject, scopes, granted claims) when there is one |
//! | `long_job` | long-running; returns `{"status": "pending"}` |
//! | `slow_job` | long-running; sleeps `ms`, then sets invocation state `key` (if given) to `"done"` and returns `{"slept_ms": ms}` |
//! | `fail` | always fails with "this tool always fails" |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use test_shared::{Pixel, Remember};
use toolhost_guest::{
    Caller, Chunks, Context, Part, StreamingTool, Tool, ToolError, chunks, export_tools,
};

/// Echoes its arguments back as a JSON object.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct EchoArgs {
    /// The message to echo.
    message: String,
    /// How often the caller wants it repeated (echoed, not applied).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    repeat: Option<u32>,
    /// Optional structured data, echoed as given.
    nested: Option<Nested>,
}

/// Structured data inside the echo arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Nested {
    /// A label.
    label: String,
    /// Any tags.
    #[serde(default)]
    tags: Vec<String>,
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

/// Adds two integers.
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

    fn call(args: AddArgs, _cx: &Context) -> Result<i64, ToolError> {
        args.a
            .checked_add(args.b)
            .ok_or_else(|| ToolError::invalid_arguments("the sum overflows a 64-bit integer"))
    }
}

/// Places an order.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct OrderArgs {
    /// What to order.
    item: String,
    /// How many, from 1 to 99.
    #[schemars(range(min = 1, max = 99))]
    quantity: u32,
    /// The size.
    size: Size,
}

/// A size.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Medium,
    Large,
}

struct Order;

impl Tool for Order {
    type Args = OrderArgs;
    type Output = OrderArgs;
    const NAME: &'static str = "order";

    fn call(args: OrderArgs, _cx: &Context) -> Result<OrderArgs, ToolError> {
        Ok(args)
    }
}

/// Returns the flag it was given.
#[derive(Deserialize, Serialize, JsonSchema)]
struct FlagArgs {
    /// Whether the flag is set.
    enabled: bool,
}

struct Flag;

impl Tool for Flag {
    type Args = FlagArgs;
    type Output = FlagArgs;
    const NAME: &'static str = "flag";

    fn call(args: FlagArgs, _cx: &Context) -> Result<FlagArgs, ToolError> {
        Ok(args)
    }
}

/// Counts down to zero, one line per number.
#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Where to start, at most 1000.
    #[schemars(range(max = 1000))]
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

/// Tells the caller the IDs of this call.
#[derive(Deserialize, JsonSchema)]
struct WhoamiArgs {}

#[derive(Serialize)]
struct Ids {
    call_id: String,
    invocation_id: String,
    /// Who calls, when the host says (left out for nobody).
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<Caller>,
}

struct Whoami;

impl Tool for Whoami {
    type Args = WhoamiArgs;
    type Output = Ids;
    const NAME: &'static str = "whoami";

    fn call(_args: WhoamiArgs, cx: &Context) -> Result<Ids, ToolError> {
        cx.info("whoami called");
        Ok(Ids {
            call_id: cx.call_id().to_owned(),
            invocation_id: cx.invocation_id().to_owned(),
            caller: cx.caller().cloned(),
        })
    }
}

/// Starts a long job and reports it as pending.
#[derive(Deserialize, JsonSchema)]
struct LongJobArgs;

struct LongJob;

impl Tool for LongJob {
    type Args = LongJobArgs;
    type Output = Value;
    const NAME: &'static str = "long_job";
    const LONG_RUNNING: bool = true;

    fn call(_args: LongJobArgs, _cx: &Context) -> Result<Value, ToolError> {
        Ok(json!({ "status": "pending" }))
    }
}

/// Sleeps, then reports how long.
#[derive(Deserialize, JsonSchema)]
struct SlowJobArgs {
    /// How long to work, in milliseconds (at most a minute).
    #[schemars(range(max = 60_000))]
    ms: u64,
    /// An invocation-state key set to `"done"` once the work is over, so a
    /// test can tell whether a cancelled call got that far.
    key: Option<String>,
}

struct SlowJob;

impl Tool for SlowJob {
    type Args = SlowJobArgs;
    type Output = Value;
    const NAME: &'static str = "slow_job";
    const LONG_RUNNING: bool = true;

    fn call(args: SlowJobArgs, cx: &Context) -> Result<Value, ToolError> {
        // WASI sleeps burn no fuel; the call's deadline still bounds it.
        std::thread::sleep(std::time::Duration::from_millis(args.ms));
        if let Some(key) = &args.key {
            cx.state_set(key, "done");
        }
        Ok(json!({ "slept_ms": args.ms }))
    }
}

/// Always fails.
#[derive(Deserialize, JsonSchema)]
struct FailArgs {}

struct Fail;

impl Tool for Fail {
    type Args = FailArgs;
    type Output = ();
    const NAME: &'static str = "fail";

    fn call(_args: FailArgs, _cx: &Context) -> Result<(), ToolError> {
        Err(ToolError::failed("this tool always fails"))
    }
}

export_tools! {
    tools: [Echo, Add, Order, Flag, Pixel, Remember, Whoami, LongJob, SlowJob, Fail],
    streams: [Countdown],
}
