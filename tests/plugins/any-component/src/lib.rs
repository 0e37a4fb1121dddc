//! Test plugin `any-component`: a component of a WIT world of its own
//! (`wit/geometry.wit`), built with plain `wit-bindgen` and no toolhost SDK.
//! The host loads it as a toolset of its exported functions (issue 34).

mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "geometry" });
}

use bindings::exports::example::geometry::kinds::{self, Sample, Shape};
use bindings::exports::example::geometry::shapes::{self, DivisionError, Point};

struct Geometry;

impl bindings::Guest for Geometry {
    fn greet(name: String) -> String {
        format!("hello, {name}")
    }
}

impl shapes::Guest for Geometry {
    fn translate(p: Point, dx: i8, dy: i8) -> Point {
        Point {
            x: p.x.saturating_add(i32::from(dx)),
            y: p.y.saturating_add(i32::from(dy)),
        }
    }

    fn divide(a: u32, b: u32) -> Result<u32, DivisionError> {
        a.checked_div(b).ok_or_else(|| DivisionError {
            dividend: a,
            reason: "division by zero".to_owned(),
        })
    }

    fn spin(rounds: u64) -> u64 {
        let mut count = 0u64;
        for _ in 0..rounds {
            count = std::hint::black_box(count.wrapping_add(1));
        }
        count
    }
}

impl kinds::Guest for Geometry {
    fn echo(s: Sample) -> Sample {
        s
    }

    fn name_shape(shape: Option<Shape>) -> String {
        match shape {
            None => "none".to_owned(),
            Some(Shape::Dot) => "a dot".to_owned(),
            Some(Shape::Circle(r)) => format!("a circle of radius {r}"),
            Some(Shape::Rect((w, h))) => format!("a {w} by {h} rectangle"),
        }
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::Geometry;
    super::bindings::export!(Geometry with_types_in super::bindings);
}
