//! Test plugin `other-world`: a component of a world other than
//! `toolhost:plugin/plugin`, which the host must refuse as "not a toolhost plugin".

mod bindings {
    wit_bindgen::generate!({
        inline: "package other:thing@1.0.0; world thing { export hello: func() -> string; }",
    });
}

struct Thing;

impl bindings::Guest for Thing {
    fn hello() -> String {
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
