//! Tests of the alias layer.

use serde_json::json;

use super::*;
use crate::toolset::filter::tests::{Native, Probe};
use crate::toolset::{Confirm, Decision, Filter, Predicate, ToolsetExt};

fn math() -> Native {
    Native(vec![
        Probe::new("add", &["a", "b"]) as Arc<dyn Tool>,
        Probe::new("search", &["query", "limit"]) as Arc<dyn Tool>,
        Probe::new("delete", &["id"]) as Arc<dyn Tool>,
    ])
}

fn search_aliases() -> ToolAliases {
    ToolAliases::new()
        .name("web_search")
        .name("lookup")
        .argument("query", ["q", "keyword"])
        .argument("limit", ["count"])
}

async fn arguments(set: &impl Toolset, name: &str, args: Value) -> Value {
    let out = set.invoke(&Context::new(), name, args).await.unwrap();
    out.result.unwrap()["arguments"].clone()
}

#[tokio::test]
async fn name_aliases_resolve_but_are_not_listed() {
    let set = Aliases::new(math(), [("search", search_aliases())]).unwrap();
    let cx = Context::new();
    let listed: Vec<String> = set
        .tools(&cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(listed, ["add", "search", "delete"]);
    for name in ["search", "web_search", "lookup"] {
        let tool = set.find(&cx, name).unwrap();
        assert_eq!(
            tool.spec().name,
            "search",
            "{name} resolves to the canonical tool"
        );
    }
    assert_eq!(set.canonical("lookup"), Some("search"));
    assert_eq!(set.canonical("search"), None);
    match set.find(&cx, "find") {
        Err(CallError::UnknownTool { available, .. }) => {
            assert_eq!(available, ["add", "search", "delete"]);
        }
        other => panic!("expected unknown tool, got {other:?}"),
    }
}

#[tokio::test]
async fn argument_aliases_follow_eino_rules() {
    let set = Aliases::new(math(), [("search", search_aliases())]).unwrap();
    // Remapped.
    assert_eq!(
        arguments(&set, "lookup", json!({"q": "rust", "count": 3})).await,
        json!({"query": "rust", "limit": 3})
    );
    // The canonical key wins; the alias is dropped.
    assert_eq!(
        arguments(&set, "search", json!({"query": "a", "q": "b"})).await,
        json!({"query": "a"})
    );
    // Two aliases of one key: the first configured wins, both go.
    assert_eq!(
        arguments(&set, "search", json!({"keyword": "k", "q": "q"})).await,
        json!({"query": "q"})
    );
    // Unknown keys and nested keys are left alone.
    assert_eq!(
        arguments(&set, "search", json!({"query": "a", "x": {"q": 1}})).await,
        json!({"query": "a", "x": {"q": 1}})
    );
    // Arguments that are not an object pass unchanged, to the schema check.
    assert!(matches!(
        set.invoke(&Context::new(), "search", json!("q")).await,
        Err(CallError::InvalidArguments { .. })
    ));
    // Tools without argument aliases are untouched.
    assert_eq!(
        arguments(&set, "add", json!({"q": 1})).await,
        json!({"q": 1})
    );
}

#[tokio::test]
async fn argument_aliases_apply_to_streams() {
    let set = Aliases::new(math(), [("search", search_aliases())]).unwrap();
    let mut stream = set
        .stream(&Context::new(), "web_search", json!({"keyword": "k"}))
        .await
        .unwrap();
    match stream.next().await {
        Some(Ok(crate::tool::Part::Json(v))) => {
            assert_eq!(v["arguments"], json!({"query": "k"}))
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn configuration_is_validated() {
    let check = |tool: &str, aliases: ToolAliases| Aliases::new(math(), [(tool, aliases)]);
    let err = |tool: &str, aliases: ToolAliases| check(tool, aliases).unwrap_err();
    assert_eq!(
        err("search", ToolAliases::new().name("")),
        AliasError::EmptyAlias {
            tool: "search".into()
        }
    );
    assert_eq!(
        err("search", ToolAliases::new().argument("query", [""])),
        AliasError::EmptyAlias {
            tool: "search".into()
        }
    );
    assert_eq!(
        err("search", ToolAliases::new().argument("", ["q"])),
        AliasError::EmptyKey {
            tool: "search".into()
        }
    );
    assert!(matches!(
        err("search", ToolAliases::new().argument("a.b", ["q"])),
        AliasError::NestedKey { .. }
    ));
    // A missing tool is no error: its alias waits for it.
    let stale = check("nope", ToolAliases::new().name("x").argument("k", ["q"])).unwrap();
    assert_eq!(stale.unresolved(&Context::new()), [("x", "nope")]);
    assert_eq!(
        err("search", ToolAliases::new().name("add")),
        AliasError::AliasIsToolName {
            alias: "add".into(),
            tool: "search".into()
        }
    );
    assert_eq!(
        err("search", ToolAliases::new().name("search")),
        AliasError::AliasIsToolName {
            alias: "search".into(),
            tool: "search".into()
        }
    );
    assert_eq!(
        err("search", ToolAliases::new().argument("query", ["limit"])),
        AliasError::ArgumentClash {
            tool: "search".into(),
            alias: "limit".into()
        }
    );
    assert!(matches!(
        err(
            "search",
            ToolAliases::new()
                .argument("query", ["q"])
                .argument("extra", ["query2"])
                .argument("other", ["extra"])
        ),
        AliasError::ArgumentClash { alias, .. } if alias == "extra"
    ));
    assert_eq!(
        err(
            "search",
            ToolAliases::new()
                .argument("query", ["q"])
                .argument("limit", ["q"])
        ),
        AliasError::AmbiguousArgument {
            tool: "search".into(),
            alias: "q".into(),
            first: "limit".into(),
            second: "query".into(),
        }
    );
    let two = Aliases::new(
        math(),
        [
            ("add", ToolAliases::new().name("do")),
            ("delete", ToolAliases::new().name("do")),
        ],
    );
    assert_eq!(
        two.unwrap_err(),
        AliasError::AmbiguousAlias {
            alias: "do".into(),
            first: "add".into(),
            second: "delete".into(),
        }
    );
    // Repeating the same mapping, or splitting one tool's entry, is fine.
    let ok = Aliases::new(
        math(),
        [
            ("add", ToolAliases::new().name("plus").name("plus")),
            ("add", ToolAliases::new().argument("a", ["x", "x"])),
        ],
    );
    assert!(ok.is_ok());
    assert!(
        err("search", ToolAliases::new().name(""))
            .to_string()
            .contains("`search`")
    );
}

#[test]
fn aliases_follow_what_each_context_sees() {
    // Outside a filter, an alias of a hidden tool does not resolve.
    let filtered = Filter::new(math(), Predicate::deny(["delete"]));
    // An empty context cannot see `delete`: the alias is stale, not an error,
    // and a call of it says which tool it points at.
    let set = Aliases::new(filtered, [("delete", ToolAliases::new().name("rm"))]).unwrap();
    assert_eq!(set.unresolved(&Context::new()), [("rm", "delete")]);
    match set.find(&Context::new(), "rm") {
        Err(CallError::AliasUnresolved {
            alias,
            tool,
            problem,
        }) => {
            assert_eq!((alias.as_str(), tool.as_str()), ("rm", "delete"));
            // Hidden means absent: the problem is an unknown name.
            assert!(matches!(*problem, CallError::UnknownTool { .. }));
        }
        other => panic!("expected an unresolved alias, got {other:?}"),
    }
    let admin_only = Filter::new(
        math(),
        Predicate::deny(["delete"]).or(Predicate::role("admin")),
    );
    let set = Aliases::new(admin_only, [("add", ToolAliases::new().name("plus"))]).unwrap();
    assert!(set.find(&Context::new(), "plus").is_ok());
    // Inside a filter, a hidden canonical name hides its aliases.
    let inner = Aliases::new(math(), [("delete", ToolAliases::new().name("rm"))]).unwrap();
    let set = Filter::new(inner, Predicate::deny(["delete"]));
    assert!(set.find(&Context::new(), "rm").is_err());
    assert!(set.find(&Context::new(), "delete").is_err());
}

#[tokio::test]
async fn confirmation_under_aliases_sees_canonical_names_and_arguments() {
    let delete = Probe::new("delete", &["id"]);
    let inner = Confirm::new(Native(vec![delete.clone() as Arc<dyn Tool>])).require("delete");
    let set = Aliases::new(
        inner,
        [(
            "delete",
            ToolAliases::new().name("rm").argument("id", ["order_id"]),
        )],
    )
    .unwrap();
    let cx = Context::new().with_call_id("c1");
    let req = match set.invoke(&cx, "rm", json!({"order_id": 3})).await {
        Err(CallError::ConfirmationRequired(req)) => req,
        other => panic!("expected a request, got {other:?}"),
    };
    assert_eq!(req.tool, "delete");
    assert_eq!(req.arguments, json!({"id": 3}));
    // The model may resume with the alias spelling; it remaps to what was approved.
    let cx = cx.with_decision(
        "c1",
        Decision::Approve {
            arguments: req.arguments.clone(),
            payload: None,
        },
    );
    set.invoke(&cx, "rm", json!({"order_id": 3})).await.unwrap();
    assert_eq!(delete.runs(), 1);
}

#[test]
fn aliases_deserialize_from_configuration() {
    let parsed: ToolAliases = serde_json::from_value(json!({
        "names": ["web_search"],
        "arguments": {"query": ["q"]}
    }))
    .unwrap();
    assert_eq!(
        parsed,
        ToolAliases::new()
            .name("web_search")
            .argument("query", ["q"])
    );
    assert!(serde_json::from_value::<ToolAliases>(json!({"nmes": []})).is_err());
}
