//! Components made from WIT text, with no toolhost SDK (issue 34): a dummy
//! core module, as `wasm-tools component embed --dummy` and `component new`
//! make it, and the WIT docs wit-component writes (the `package-docs`
//! custom section) added to any component.
//!
//! ```
//! let wit = "package a:b;\nworld w {\n  /// Says hello.\n  export greet: func(name: string) -> string;\n}";
//! let component = toolhost_test_plugins::wit::component(&[], wit, None);
//! assert_eq!(&component[..8], b"\0asm\x0d\0\x01\0");
//! let documented = toolhost_test_plugins::wit::with_docs(&component, wit);
//! assert!(documented.len() > component.len());
//! ```

use wit_parser::{LiftLowerAbi, ManglingAndAbi, PackageMetadata, Resolve};

/// The component of the world `world` in `wit` (its only world when
/// `None`), after the packages in `deps`.
///
/// # Panics
/// If the WIT does not parse or the component does not encode: a test's
/// own text is wrong.
pub fn component(deps: &[&str], wit: &str, world: Option<&str>) -> Vec<u8> {
    let (resolve, package) = resolve(deps, wit);
    let world = resolve
        .select_world(&[package], world)
        .expect("the world is in the WIT");
    let mut module =
        wit_component::dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("the world's metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the dummy module is one")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

/// The `package-docs` section of the package in `wit`, as wit-component
/// writes it when it encodes a WIT package: a version byte, then JSON.
///
/// # Panics
/// If the WIT does not parse.
pub fn package_docs(wit: &str) -> Vec<u8> {
    let (resolve, package) = resolve(&[], wit);
    PackageMetadata::extract(&resolve, package)
        .encode()
        .expect("docs encode as JSON")
}

/// `component` with the WIT docs of the package in `wit` appended, as a
/// top-level `package-docs` custom section. (wit-bindgen and
/// wasm-component-ld do not keep WIT docs yet: wasm-tools PR #2532.)
pub fn with_docs(component: &[u8], wit: &str) -> Vec<u8> {
    with_custom_section(component, PackageMetadata::SECTION_NAME, &package_docs(wit))
}

/// `wasm` (a component or module) with a custom section appended.
pub fn with_custom_section(wasm: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = leb128(name.len());
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut out = wasm.to_vec();
    out.push(0);
    out.extend(leb128(body.len()));
    out.extend(body);
    out
}

fn resolve(deps: &[&str], wit: &str) -> (Resolve, wit_parser::PackageId) {
    let mut resolve = Resolve::default();
    for (i, dep) in deps.iter().enumerate() {
        resolve
            .push_str(format!("dep{i}.wit"), dep)
            .expect("the dependency's WIT parses");
    }
    let package = resolve.push_str("main.wit", wit).expect("the WIT parses");
    (resolve, package)
}

fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}
