//! Test plugin `other-world`: a component of a world other than
//! `toolhost:plugin/plugin` whose exported functions cannot be tools (they
//! make and use a resource), which the host must refuse as "not a toolhost
//! plugin". (A component whose functions can be tools loads as a toolset:
//! see `any-component`.)

mod bindings {
    wit_bindgen::generate!({
        inline: "package other:thing@1.0.0;
                 interface greeter { resource hello { constructor(); greet: func() -> string; } }
                 world thing { export greeter; }",
    });
}

use bindings::exports::other::thing::greeter::{Guest, GuestHello};

struct Thing;

impl Guest for Thing {
    type Hello = Hello;
}

struct Hello;

impl GuestHello for Hello {
    fn new() -> Self {
        Self
    }

    fn greet(&self) -> String {
        "hello from another world".to_owned()
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::Thing;
    super::bindings::export!(Thing with_types_in super::bindings);
}
