//! The WIT documentation a component carries: the `package-docs` custom
//! section wit-component writes (wit-parser's `PackageMetadata`): a version
//! byte, 0 or 1, then JSON, one object per WIT package with the doc comments
//! of its worlds, interfaces, functions and types.
//!
//! The section is looked for at every level of the component (a nested
//! component or core module may hold it). Reading it is bounded and never
//! fails a load: a section too large, of another version or not of this
//! shape is a warning, and the tools keep their fallback descriptions.

use std::collections::HashMap;

use serde::Deserialize;

/// The custom section's name.
pub(super) const SECTION: &str = "package-docs";

/// The largest section read: doc comments of a whole package fit easily.
pub(super) const MAX_SECTION_BYTES: usize = 1 << 20;

/// The doc comments of the packages a component carries.
#[derive(Debug, Default)]
pub(crate) struct Docs {
    packages: Vec<PackageDocs>,
}

/// One package's docs. Keys not read here (`docs`, `stability`, ...) are
/// ignored, so a newer writer's additions do not lose the rest.
#[derive(Debug, Default, Deserialize)]
struct PackageDocs {
    #[serde(default)]
    worlds: HashMap<String, WorldDocs>,
    #[serde(default)]
    interfaces: HashMap<String, InterfaceDocs>,
}

#[derive(Debug, Default, Deserialize)]
struct WorldDocs {
    /// Functions of the world: in format 0 imports and exports, in format 1
    /// imports, and exports whose name no import has.
    #[serde(default)]
    funcs: HashMap<String, FuncDocs>,
    /// Exported functions (format 1).
    #[serde(default)]
    func_exports: HashMap<String, FuncDocs>,
}

#[derive(Debug, Default, Deserialize)]
struct InterfaceDocs {
    #[serde(default)]
    funcs: HashMap<String, FuncDocs>,
    #[serde(default)]
    types: HashMap<String, TypeDoc>,
}

/// A named type's docs: its own, and its fields', cases' or flags' (`items`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TypeDoc {
    #[serde(default)]
    docs: Option<String>,
    #[serde(default)]
    items: HashMap<String, String>,
}

impl TypeDoc {
    /// The type's own doc comment.
    pub(crate) fn own(&self) -> Option<&str> {
        trimmed(self.docs.as_deref())
    }

    /// The doc comment of its field, case or flag `name`.
    pub(crate) fn item(&self, name: &str) -> Option<&str> {
        trimmed(self.items.get(name).map(String::as_str))
    }
}

fn trimmed(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

/// A function's docs: the text alone (format 0), or an object with `docs`
/// (format 1).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FuncDocs {
    Text(Option<String>),
    Object {
        #[serde(default)]
        docs: Option<String>,
    },
}

impl FuncDocs {
    fn text(&self) -> Option<&str> {
        match self {
            Self::Text(docs) | Self::Object { docs } => docs.as_deref(),
        }
    }
}

impl Docs {
    /// Reads every `package-docs` section of a component's bytes; each one
    /// that cannot be read is a warning (text) instead.
    pub(crate) fn read(bytes: &[u8]) -> (Self, Vec<String>) {
        let (mut docs, mut warnings) = (Self::default(), Vec::new());
        for payload in wasmparser::Parser::new(0).parse_all(bytes) {
            // The component compiled, so this is rare; what was read stands.
            let Ok(payload) = payload else { break };
            let wasmparser::Payload::CustomSection(section) = payload else {
                continue;
            };
            if section.name() != SECTION {
                continue;
            }
            match decode(section.data()) {
                Ok(package) => docs.packages.push(package),
                Err(why) => warnings.push(format!("its `{SECTION}` section is ignored: {why}")),
            }
        }
        (docs, warnings)
    }

    /// The doc comment of the function `name` of the exported interface
    /// `interface` (its full name, `ns:pkg/name@version`), or of the world
    /// when `None`. The section names interfaces within their package, so
    /// the interface's own name is matched.
    pub(crate) fn function(&self, interface: Option<&str>, name: &str) -> Option<&str> {
        let text = match interface {
            Some(interface) => {
                let own = own_name(interface);
                self.packages
                    .iter()
                    .filter_map(|p| p.interfaces.get(own))
                    .find_map(|i| i.funcs.get(name).and_then(FuncDocs::text))
            }
            None => self
                .packages
                .iter()
                .flat_map(|p| p.worlds.values())
                .find_map(|w| {
                    w.func_exports
                        .get(name)
                        .or_else(|| w.funcs.get(name))
                        .and_then(FuncDocs::text)
                }),
        };
        trimmed(text)
    }

    /// The docs of the type `name` of the exported interface `interface`
    /// (its full name; matched by its own name, as functions are).
    pub(crate) fn type_doc(&self, interface: &str, name: &str) -> Option<&TypeDoc> {
        let own = own_name(interface);
        self.packages
            .iter()
            .filter_map(|p| p.interfaces.get(own))
            .find_map(|i| i.types.get(name))
    }
}

/// An interface's own name: `shapes` for `example:geometry/shapes@0.1.0`.
pub(super) fn own_name(interface: &str) -> &str {
    let unversioned = interface.split('@').next().unwrap_or(interface);
    unversioned.rsplit(['/', ':']).next().unwrap_or(unversioned)
}

fn decode(data: &[u8]) -> Result<PackageDocs, String> {
    if data.len() > MAX_SECTION_BYTES {
        return Err(format!(
            "it is {} bytes, more than the {MAX_SECTION_BYTES} read",
            data.len()
        ));
    }
    match data.split_first() {
        Some((0 | 1, json)) => {
            serde_json::from_slice(json).map_err(|e| format!("it is not the JSON expected: {e}"))
        }
        Some((version, _)) => Err(format!("format {version} is not known (0 and 1 are)")),
        None => Err("it is empty".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(json: &str) -> Vec<u8> {
        let mut data = vec![1];
        data.extend_from_slice(json.as_bytes());
        data
    }

    #[test]
    fn functions_of_interfaces_and_worlds_in_both_formats() {
        let v1 = section(
            r#"{"worlds": {"w": {"func_exports": {"greet": {"docs": " Says hello.\n"}}}},
                "interfaces": {"shapes": {"docs": "x", "funcs": {"spin": {"docs": "Spins.", "stability": "unknown"}}}}}"#,
        );
        let docs = Docs {
            packages: vec![decode(&v1).unwrap()],
        };
        assert_eq!(docs.function(None, "greet"), Some("Says hello."));
        assert_eq!(
            docs.function(Some("example:geometry/shapes@0.1.0"), "spin"),
            Some("Spins.")
        );
        assert_eq!(docs.function(Some("a:b/other"), "spin"), None);
        let mut v0 = br#"{"worlds": {"w": {"funcs": {"greet": "Hi."}}}}"#.to_vec();
        v0.insert(0, 0);
        let docs = Docs {
            packages: vec![decode(&v0).unwrap()],
        };
        assert_eq!(docs.function(None, "greet"), Some("Hi."));
    }

    #[test]
    fn unreadable_sections_say_why() {
        assert!(decode(b"").unwrap_err().contains("empty"));
        assert!(decode(b"\x07{}").unwrap_err().contains("format 7"));
        assert!(decode(b"\x01{nope").unwrap_err().contains("JSON"));
        let big = vec![1; MAX_SECTION_BYTES + 1];
        assert!(decode(&big).unwrap_err().contains("more than"));
    }
}
