//! Test plugin `typed-geometry`: `tests/plugins/any-component`'s
//! `shapes#translate` written as a toolhost SDK tool, with the same argument
//! shape (`{"p": {"x", "y"}, "dx", "dy"}`, the same integer ranges), the same
//! work and the same result, including an output schema the host checks
//! results against as it does a component function's. The typed side of
//! `host/benches/dynamic.rs`: a dynamic call against a typed call of the same
//! function.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `translate` | `{"x": p.x + dx, "y": p.y + dy}`, saturating, as any-component's |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_guest::{Context, Tool, ToolError, export_tools};

/// A point (WIT: `record point { x: s32, y: s32 }`).
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Point {
    /// The horizontal coordinate.
    x: i32,
    /// The vertical coordinate.
    y: i32,
}

/// Moves a point by a small step.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TranslateArgs {
    /// The point to move.
    p: Point,
    /// The horizontal step (WIT `s8`).
    dx: i8,
    /// The vertical step (WIT `s8`).
    dy: i8,
}

struct Translate;

impl Tool for Translate {
    type Args = TranslateArgs;
    type Output = Point;
    const NAME: &'static str = "translate";

    fn call(args: TranslateArgs, _cx: &Context) -> Result<Point, ToolError> {
        Ok(Point {
            x: args.p.x.saturating_add(i32::from(args.dx)),
            y: args.p.y.saturating_add(i32::from(args.dy)),
        })
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Point>())
    }
}

export_tools!(Translate);
