//! Test plugin `hostile`: every tool but `ok` misbehaves in one way, so the host
//! can show that one bad call costs only that call.
//!
//! | tool | misbehaviour | the host should report |
//! | --- | --- | --- |
//! | `ok` | none: returns `{"ok": true}` | success |
//! | `spin` | loops forever, burning CPU | fuel or deadline exhausted |
//! | `busy_wait` | loops forever reading the WASI monotonic clock | fuel or deadline exhausted |
//! | `sleep_forever` | blocks in WASI sleep, burning no fuel | deadline exhausted |
//! | `hog` | allocates 1 MiB blocks forever and keeps them | memory limit |
//! | `recurse` | unbounded non-tail recursion | stack overflow trap |
//! | `panic` | panics with "the hostile plugin panicked on purpose" | trap with that message |
//! | `huge` | returns a string of `bytes` `x` characters | output limit (for large `bytes`) |
//! | `snoop` | looks for what an earlier call left in its statics and heap, then leaves marks | nothing found: every call starts from a clean instance |
//! | `pester` | asks its user ten questions in one call | eight asked, then "too many questions" |
//! | `interview` | long-running; counts its runs in invocation state before it asks anything, then asks a name and whether to greet it | a re-run (MCP 2026-07-28) counts again: `runs` says how often it ran |
//! | `shifty` | asks a question whose words differ on every run | a re-run that replays the answer refuses it: another question |

use std::hint::black_box;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_guest::{
    Catalog, Completion, Contents, Context, Message, Prompt, PromptArgument, Resource, Tool,
    ToolError, export_tools,
};

struct Behaved;

impl Tool for Behaved {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "ok";
    const DESCRIPTION: &'static str = "Behaves: returns {\"ok\": true}.";

    fn call((): (), _cx: &Context) -> Result<Value, ToolError> {
        Ok(json!({ "ok": true }))
    }
}

struct Spin;

impl Tool for Spin {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "spin";
    const DESCRIPTION: &'static str = "Loops forever.";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        let mut counter: u64 = 0;
        loop {
            // `black_box` keeps the optimizer from proving the loop side-effect free.
            counter = black_box(counter.wrapping_add(1));
        }
    }
}

struct BusyWait;

impl Tool for BusyWait {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "busy_wait";
    const DESCRIPTION: &'static str = "Loops forever, reading the clock.";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        let start = Instant::now();
        loop {
            black_box(start.elapsed());
        }
    }
}

struct SleepForever;

impl Tool for SleepForever {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "sleep_forever";
    const DESCRIPTION: &'static str = "Sleeps forever in WASI, burning no fuel.";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

struct Hog;

impl Tool for Hog {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "hog";
    const DESCRIPTION: &'static str = "Allocates memory until something gives.";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        const MIB: usize = 1 << 20;
        let mut kept: Vec<Vec<u8>> = Vec::new();
        loop {
            // Zeroed blocks come straight from `memory.grow` (no memset), so the
            // memory limit is hit long before the fuel runs out.
            kept.push(black_box(vec![0_u8; MIB]));
            black_box(&kept);
        }
    }
}

/// Recurses without end; every frame keeps a buffer alive across the call.
fn descend(depth: u64) -> u64 {
    let frame = black_box([depth; 32]);
    // The (never true) exit keeps rustc's `unconditional_recursion` lint quiet.
    if black_box(depth) == u64::MAX {
        return 0;
    }
    descend(depth + 1).wrapping_add(frame.iter().sum::<u64>())
}

struct Recurse;

impl Tool for Recurse {
    type Args = ();
    type Output = u64;
    const NAME: &'static str = "recurse";
    const DESCRIPTION: &'static str = "Recurses until the stack overflows.";

    fn call((): (), _cx: &Context) -> Result<u64, ToolError> {
        Ok(descend(0))
    }
}

struct Panic;

impl Tool for Panic {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "panic";
    const DESCRIPTION: &'static str = "Panics.";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        panic!("the hostile plugin panicked on purpose")
    }
}

/// Returns a string of `bytes` `x` characters.
#[derive(Deserialize, JsonSchema)]
struct HugeArgs {
    /// How many bytes the result string has.
    bytes: u64,
}

struct Huge;

impl Tool for Huge {
    type Args = HugeArgs;
    type Output = String;
    const NAME: &'static str = "huge";

    fn call(args: HugeArgs, _cx: &Context) -> Result<String, ToolError> {
        let bytes = usize::try_from(args.bytes)
            .map_err(|_| ToolError::invalid_arguments("`bytes` does not fit in memory"))?;
        Ok("x".repeat(bytes))
    }
}

/// Counts calls in a static: a reused instance would count up.
static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct Snoop;

impl Tool for Snoop {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "snoop";
    const DESCRIPTION: &'static str =
        "Reports what earlier calls left behind (a static counter, heap bytes), then leaves marks.";

    fn call((): (), _cx: &Context) -> Result<Value, ToolError> {
        let earlier_calls = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Fresh heap pages must read as zero: the allocator relies on it for
        // `vec![0; n]`, so marks left by an earlier call would show up here.
        let mut heap = vec![0_u8; 512 << 10];
        let dirty_heap_bytes = heap.iter().filter(|&&b| b != 0).count();
        heap.fill(0xAB);
        black_box(&heap);
        Ok(json!({ "earlier_calls": earlier_calls, "dirty_heap_bytes": dirty_heap_bytes }))
    }
}

/// Asks its user ten questions, one after another, whatever the answers.
struct Pester;

impl Tool for Pester {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "pester";
    const DESCRIPTION: &'static str = "Asks its user ten questions in one call.";

    fn call((): (), cx: &Context) -> Result<Value, ToolError> {
        let form = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        let mut answered = 0;
        let mut last_error = Value::Null;
        for i in 0..10 {
            match cx.ask(&format!("Question {i}?"), &form) {
                Ok(_) => answered += 1,
                Err(err) => last_error = Value::String(err.to_string()),
            }
        }
        Ok(json!({ "answered": answered, "last_error": last_error }))
    }
}

/// Counts its runs, then asks two questions: the second depends on the
/// first answer. A host that asks by re-running the call (MCP 2026-07-28)
/// runs what comes before a question again: `runs` shows it.
struct Interview;

impl Tool for Interview {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "interview";
    const DESCRIPTION: &'static str =
        "Asks its user's name, then whether to greet them; counts its runs in invocation state.";
    const LONG_RUNNING: bool = true;

    fn call((): (), cx: &Context) -> Result<Value, ToolError> {
        let runs = cx
            .state_get("interview_runs")
            .and_then(|runs| runs.parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        cx.state_set("interview_runs", &runs.to_string());
        let name_form = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Your name"}},
            "required": ["name"],
        });
        let first = cx.ask("What is your name?", &name_form)?;
        let Some(name) = first.content().and_then(|c| c.get("name")).cloned() else {
            return Ok(json!({ "runs": runs, "actions": [first.action()] }));
        };
        let greet_form = json!({
            "type": "object",
            "properties": {"greet": {"type": "boolean", "description": "Greet them"}},
            "required": ["greet"],
        });
        let shown = name.as_str().unwrap_or_default();
        let second = cx.ask(&format!("Greet {shown}?"), &greet_form)?;
        let greet = second.content().and_then(|c| c.get("greet")).cloned();
        Ok(json!({
            "runs": runs,
            "name": name,
            "greet": greet,
            "actions": [first.action(), second.action()],
        }))
    }
}

/// Asks a question whose words differ on every run (they hold the time).
struct Shifty;

impl Tool for Shifty {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "shifty";
    const DESCRIPTION: &'static str = "Asks a question whose words differ on every run.";

    fn call((): (), cx: &Context) -> Result<Value, ToolError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let form = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        let answer = cx.ask(&format!("Is it {now} ns past the epoch?"), &form)?;
        Ok(json!({ "action": answer.action() }))
    }
}

/// Eight MiB of text.
fn eight_mib() -> String {
    "x".repeat(8 << 20)
}

/// What a hostile plugin offers besides tools: content past the output cap,
/// a read that never ends, a thousand completions, and updates of URIs it
/// does not offer (through `snoop`'s neighbours: see the host's tests).
fn catalog() -> Catalog {
    Catalog::new()
        .resource(Resource::new("hostile://huge", "huge"), |_cx| {
            Ok(Contents::text(eight_mib()))
        })
        .resource(
            Resource::new("hostile://spin", "spin"),
            |_cx| -> Result<Contents, ToolError> {
                loop {
                    black_box(());
                }
            },
        )
        .prompt(
            Prompt::new("huge_prompt", "Eight MiB of message.")
                .argument(PromptArgument::optional("topic")),
            |_cx, _args| Ok(vec![Message::user(eight_mib())]),
        )
        .complete_prompt("huge_prompt", |_cx, _request| {
            Ok(Completion::new((0..1000).map(|i| format!("topic-{i}"))))
        })
}

export_tools! {
    tools: [
        Behaved, Spin, BusyWait, SleepForever, Hog, Recurse, Panic, Huge, Snoop, Pester, Interview,
        Shifty,
    ],
    catalog: catalog,
}
