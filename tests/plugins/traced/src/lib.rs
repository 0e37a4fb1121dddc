//! Test plugin `traced`: adds spans and events of its own to its call's
//! trace (`toolhost:trace/spans`, through `toolhost_guest::trace`).
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `lookup` | a span `lookup` (`table` = `users`) holding an event `cache miss` (`key` = the key) and a span `parse`; returns the key |
//! | `flood` | `count` events and `count` spans, each with 20 attributes of 2000 bytes and a 300-byte name: past every bound |

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_guest::{Context, Tool, ToolError, export_tools, trace};

/// What to look up.
#[derive(Deserialize, JsonSchema)]
struct LookupArgs {
    /// The key.
    key: String,
}

struct Lookup;

impl Tool for Lookup {
    type Args = LookupArgs;
    type Output = String;
    const NAME: &'static str = "lookup";

    fn call(args: LookupArgs, _cx: &Context) -> Result<String, ToolError> {
        let lookup = trace::span("lookup", &[("table", "users")]);
        trace::event("cache miss", &[("key", &args.key)]);
        {
            let _parse = trace::span("parse", &[]);
        }
        lookup.end();
        Ok(args.key)
    }
}

/// How much to record.
#[derive(Deserialize, JsonSchema)]
struct FloodArgs {
    /// How many events, and how many spans.
    #[schemars(range(max = 100000))]
    count: u32,
}

struct Flood;

impl Tool for Flood {
    type Args = FloodArgs;
    type Output = u32;
    const NAME: &'static str = "flood";

    fn call(args: FloodArgs, _cx: &Context) -> Result<u32, ToolError> {
        let name = "n".repeat(300);
        let value = "v".repeat(2000);
        let keys: Vec<String> = (0..20).map(|n| format!("key{n}")).collect();
        let attributes: Vec<(&str, &str)> =
            keys.iter().map(|k| (k.as_str(), value.as_str())).collect();
        for _ in 0..args.count {
            trace::event(&name, &attributes);
            let _span = trace::span(&name, &attributes);
        }
        Ok(args.count)
    }
}

export_tools! {
    tools: [Lookup, Flood],
}
