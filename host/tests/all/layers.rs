//! Toolset layers over a real plugin: filters, host-enforced confirmation,
//! aliases and unknown tools, alone and stacked.

use serde_json::{Value, json};
use toolhost::catalog::Item;
use toolhost::tool::Part;
use toolhost::toolset::{
    AliasError, Aliases, Confirm, ConfirmationHint, Decision, Filter, Identity, OnUnknown,
    Predicate, SinglePlugin, ToolAliases,
};
use toolhost::{CallError, Context, ToolOutput, Toolset, ToolsetExt};
use toolhost_test_plugins::ECHO;

use crate::plugin;

async fn echo() -> SinglePlugin {
    SinglePlugin::new(plugin(ECHO).await)
}

fn names(set: &impl Toolset, cx: &Context) -> Vec<String> {
    set.tools(cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect()
}

fn approve(arguments: Value) -> Decision {
    Decision::Approve {
        arguments,
        payload: None,
    }
}

fn admin() -> Identity {
    let mut who = Identity::default();
    who.roles.insert("admin".into());
    who
}

/// Reads `key` from the invocation's scratch state through `remember`.
async fn recall(set: &impl Toolset, invocation: &str, key: &str) -> Value {
    let cx = Context::new().with_invocation_id(invocation);
    let out = set
        .invoke(&cx, "remember", json!({"key": key}))
        .await
        .unwrap();
    out.result.unwrap()["value"].clone()
}

#[tokio::test]
async fn a_filtered_plugin_tool_is_absent() {
    let set = Filter::new(
        echo().await,
        Predicate::deny(["fail", "remember"]).and(!Predicate::glob(["long_*", "p?xel"])),
    );
    let cx = Context::new();
    let listed = names(&set, &cx);
    assert!(listed.contains(&"echo".to_owned()), "{listed:?}");
    for hidden in ["fail", "remember", "long_job", "pixel"] {
        assert!(!listed.contains(&hidden.to_owned()), "{hidden} is hidden");
        match set.invoke(&cx, hidden, json!({})).await {
            Err(CallError::UnknownTool { tool, available }) => {
                assert_eq!(tool, hidden);
                assert_eq!(available, listed);
            }
            other => panic!("expected unknown tool for {hidden}, got {other:?}"),
        }
    }
    let out = set
        .invoke(&cx, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
}

#[tokio::test]
async fn a_filter_shows_each_role_its_tools() {
    let set = Filter::new(
        echo().await,
        Predicate::allow(["echo", "add"]).or(Predicate::role("admin")),
    );
    let guest = Context::new();
    assert_eq!(names(&set, &guest), ["echo", "add"]);
    let admin = Context::new().with_identity(admin());
    assert!(names(&set, &admin).len() > 2);
    assert!(
        set.invoke(&guest, "flag", json!({"enabled": true}))
            .await
            .is_err()
    );
    set.invoke(&admin, "flag", json!({"enabled": true}))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_guest_is_not_entered_before_approval() {
    // Writes need approval; reads do not. Invocation state shows whether the
    // guest ran the write.
    let set = Confirm::new(echo().await).provider(|_, spec, args| {
        (spec.name == "remember" && args.get("value").is_some())
            .then(|| ConfirmationHint::new(format!("Store {}?", args["value"])))
    });
    let invocation = "layers-confirm-1";
    let args = json!({"key": "k", "value": "v1"});
    let cx = Context::new()
        .with_call_id("call-write")
        .with_invocation_id(invocation);
    let request = match set.invoke(&cx, "remember", args.clone()).await {
        Err(CallError::ConfirmationRequired(request)) => request,
        other => panic!("expected a confirmation request, got {other:?}"),
    };
    assert_eq!(request.call_id, "call-write");
    assert_eq!(request.tool, "remember");
    assert_eq!(request.arguments, args);
    assert_eq!(request.hint, "Store \"v1\"?");
    assert_eq!(recall(&set, invocation, "k").await, Value::Null);

    // Changed arguments are refused and nothing is written.
    let approved = cx
        .clone()
        .with_decision("call-write", approve(args.clone()));
    let changed = json!({"key": "k", "value": "v2"});
    match set.invoke(&approved, "remember", changed).await {
        Err(CallError::ConfirmationRejected { reason, .. }) => {
            assert!(reason.unwrap().contains("arguments changed"));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(recall(&set, invocation, "k").await, Value::Null);

    // The approved call runs, once.
    let out = set
        .invoke(&approved, "remember", args.clone())
        .await
        .unwrap();
    assert_eq!(out.call_id, "call-write");
    assert_eq!(recall(&set, invocation, "k").await, json!("v1"));
    assert!(matches!(
        set.invoke(&approved, "remember", args).await,
        Err(CallError::ConfirmationRejected { .. })
    ));
    crate::engine().end_invocation(invocation);
}

#[tokio::test]
async fn a_rejected_call_is_its_own_outcome() {
    let set = Confirm::new(echo().await).require("fail");
    let cx = Context::new()
        .with_call_id("call-r")
        .with_decision("call-r", Decision::Reject { reason: None });
    let err = set.invoke(&cx, "fail", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, CallError::ConfirmationRejected { tool, call_id, reason: None }
            if tool == "fail" && call_id == "call-r"),
        "{err:?}"
    );
    assert!(!err.is_caller_error());
    // A decision, not a crash: no call ID in what the model reads.
    assert_eq!(err.to_string(), "`fail` was not run: the call was rejected");
}

#[tokio::test]
async fn a_confirmed_stream_waits_then_streams() {
    let set = Confirm::new(echo().await).require_all();
    let args = json!({"from": 2});
    let cx = Context::new().with_call_id("call-s");
    match set.stream(&cx, "countdown", args.clone()).await {
        Err(CallError::ConfirmationRequired(request)) => {
            assert_eq!(request.hint, "Approve this call of `countdown`?");
        }
        other => panic!("expected a confirmation request, got {other:?}"),
    }
    let cx = cx.with_decision("call-s", approve(args.clone()));
    let mut stream = set.stream(&cx, "countdown", args).await.unwrap();
    let mut text = String::new();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(chunk) => text.push_str(&chunk),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(text, "2\n1\n0\n");
}

#[tokio::test]
async fn aliases_reach_the_plugin_with_canonical_keys() {
    let set = Aliases::new(
        echo().await,
        [
            (
                "add",
                ToolAliases::new()
                    .name("sum")
                    .argument("a", ["x"])
                    .argument("b", ["y"]),
            ),
            (
                "order",
                ToolAliases::new()
                    .name("buy")
                    .argument("quantity", ["qty", "count"]),
            ),
        ],
    )
    .unwrap();
    let cx = Context::new();
    assert!(!names(&set, &cx).contains(&"sum".to_owned()));
    let out = set
        .invoke(&cx, "sum", json!({"x": 2, "y": 40}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 42})));
    // The canonical key wins; the alias is dropped before validation.
    let out = set
        .invoke(
            &cx,
            "buy",
            json!({"item": "tea", "quantity": 2, "qty": 50, "size": "small"}),
        )
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["quantity"], 2);
    // Validation runs on the remapped arguments and names the canonical key.
    match set
        .invoke(
            &cx,
            "buy",
            json!({"item": "tea", "count": 120, "size": "small"}),
        )
        .await
    {
        Err(CallError::InvalidArguments { problems, .. }) => {
            assert!(
                problems.iter().any(|p| p.starts_with("/quantity:")),
                "{problems:?}"
            );
        }
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[tokio::test]
async fn alias_configuration_is_checked_against_the_plugin() {
    let bad = |tool: &'static str, aliases: ToolAliases| async move {
        Aliases::new(echo().await, [(tool, aliases)]).unwrap_err()
    };
    assert!(matches!(
        bad("order", ToolAliases::new().argument("quantity", ["size"])).await,
        AliasError::ArgumentClash { alias, .. } if alias == "size"
    ));
    assert!(matches!(
        bad("add", ToolAliases::new().name("echo")).await,
        AliasError::AliasIsToolName { .. }
    ));
    // A tool the plugin lacks is no configuration error: the alias is stale,
    // and calling it says which tool it points at.
    let set = Aliases::new(
        echo().await,
        [("substract", ToolAliases::new().name("minus"))],
    )
    .unwrap();
    assert_eq!(set.unresolved(&Context::new()), [("minus", "substract")]);
    let err = set
        .invoke(&Context::new(), "minus", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(&err, CallError::AliasUnresolved { problem, .. }
        if matches!(&**problem, CallError::UnknownTool { available, .. }
            if available.contains(&"add".to_owned()))));
    let text = err.to_string();
    assert!(
        text.contains("`minus` is an alias of `substract`") && text.contains("no tool named"),
        "{text}"
    );
}

#[tokio::test]
async fn unknown_tools_go_to_the_handler_or_list_what_exists() {
    let set = OnUnknown::new(echo().await, |cx, name, _| {
        let call_id = cx.call_id().to_owned();
        let hint = format!("no tool `{name}`");
        (name != "strict").then(|| {
            Box::pin(async move {
                Ok(ToolOutput {
                    result: Some(json!({"error": hint})),
                    call_id,
                    ..ToolOutput::default()
                })
            }) as toolhost::toolset::UnknownFuture
        })
    });
    let cx = Context::new();
    let out = set.invoke(&cx, "ech", json!({})).await.unwrap();
    assert_eq!(out.result, Some(json!({"error": "no tool `ech`"})));
    match set.invoke(&cx, "strict", json!({})).await {
        Err(CallError::UnknownTool { available, .. }) => {
            assert!(available.contains(&"countdown".to_owned()));
        }
        other => panic!("expected unknown tool, got {other:?}"),
    }
}

/// `plugin → filter → confirmation → aliases → unknown`: the stack the issue describes.
#[tokio::test]
async fn the_layers_stack() {
    let filtered = Filter::new(echo().await, Predicate::deny(["fail", "pixel"]));
    let confirmed = Confirm::new(filtered).require("order");
    let aliased = Aliases::new(
        confirmed,
        [(
            "order",
            ToolAliases::new().name("buy").argument("quantity", ["qty"]),
        )],
    )
    .unwrap();
    let set = OnUnknown::new(aliased, |_, _, _| None);
    let cx = Context::new().with_call_id("call-buy");

    // Hidden stays hidden through every layer.
    assert!(matches!(
        set.invoke(&cx, "fail", json!({})).await,
        Err(CallError::UnknownTool { .. })
    ));
    // An alias hits the confirmation with canonical name and arguments.
    let args = json!({"item": "tea", "qty": 3, "size": "large"});
    let request = match set.invoke(&cx, "buy", args.clone()).await {
        Err(CallError::ConfirmationRequired(request)) => request,
        other => panic!("expected a confirmation request, got {other:?}"),
    };
    assert_eq!(request.tool, "order");
    assert_eq!(
        request.arguments,
        json!({"item": "tea", "quantity": 3, "size": "large"})
    );
    let cx = cx.with_decision("call-buy", approve(request.arguments.clone()));
    let out = set.invoke(&cx, "buy", args).await.unwrap();
    assert_eq!(out.result.unwrap()["quantity"], 3);
    // Other tools pass untouched.
    let out = set
        .invoke(&cx.for_call("call-add"), "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 2})));
}

/// Echo, and optionally a second copy of it named `echo2` (every name clashes).
async fn echoes(clash: bool) -> toolhost::PluginSet {
    let mut plugins = vec![plugin(ECHO).await];
    if clash {
        let mut options = toolhost::PluginOptions::default();
        options.name("echo2");
        plugins.push(
            toolhost::Plugin::load(crate::engine(), ECHO, &options)
                .await
                .unwrap(),
        );
    }
    toolhost::PluginSet::from_plugins(plugins)
}

fn asks(result: Result<ToolOutput, CallError>, what: &str) -> String {
    match result {
        Err(CallError::ConfirmationRequired(request)) => request.tool,
        other => panic!("{what}: expected a confirmation request, got {other:?}"),
    }
}

#[tokio::test]
async fn a_confirmed_tool_asks_however_it_is_named_or_called() {
    let args = json!({"a": 1, "b": 2});
    // Listed bare (no clash): a rule by bare or qualified name holds for calls
    // by either name and through an alias.
    for rule in ["add", "echo.add"] {
        let set = Aliases::new(
            Confirm::new(echoes(false).await).require(rule),
            [("add", ToolAliases::new().name("plus"))],
        )
        .unwrap();
        for name in ["add", "echo.add", "plus"] {
            let cx = Context::new().with_call_id(format!("{rule}-{name}"));
            let tool = asks(set.invoke(&cx, name, args.clone()).await, name);
            assert_eq!(tool, "add", "rule {rule}, called as {name}");
        }
        let out = set
            .invoke(&Context::new(), "echo", json!({"message": "free"}))
            .await;
        assert!(out.is_ok(), "other tools run freely");
    }
    // Listed qualified (a clash): a bare rule holds for the tool of every
    // plugin, a qualified one for its own plugin's only. An unrelated plugin
    // joining cannot switch a safeguard off.
    let set = Confirm::new(echoes(true).await).require("add");
    for name in ["echo.add", "echo2.add"] {
        let tool = asks(set.invoke(&Context::new(), name, args.clone()).await, name);
        assert_eq!(tool, name);
    }
    let set = Confirm::new(echoes(true).await).require("echo2.add");
    asks(
        set.invoke(&Context::new(), "echo2.add", args.clone()).await,
        "echo2.add",
    );
    set.invoke(&Context::new(), "echo.add", args.clone())
        .await
        .unwrap();
    // Globs, as `[confirm] tools` uses them: `echo.*` covers tools listed bare.
    let needs = Predicate::glob(["echo.*"]);
    let set = Confirm::new(echoes(false).await).provider(move |cx, spec, _| {
        needs
            .test(cx, Item::Tool(spec))
            .then(ConfirmationHint::default)
    });
    asks(
        set.invoke(&Context::new(), "add", args.clone()).await,
        "add",
    );
}

#[tokio::test]
async fn a_filter_rule_matches_a_tool_however_it_is_listed() {
    let cx = Context::new();
    // A bare rule hides the tool of every plugin, listed qualified or not.
    let set = Filter::new(echoes(true).await, Predicate::deny(["add"]));
    let listed = names(&set, &cx);
    assert!(!listed.iter().any(|n| n.ends_with(".add")), "{listed:?}");
    assert!(listed.contains(&"echo.echo".to_owned()), "{listed:?}");
    // A qualified rule hides a tool listed under its bare name, under both names.
    let set = Filter::new(echoes(false).await, Predicate::deny(["echo.add"]));
    assert!(!names(&set, &cx).contains(&"add".to_owned()));
    for name in ["add", "echo.add"] {
        let err = set.invoke(&cx, name, json!({})).await.unwrap_err();
        assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
    }
    // Hidden means absent: with one of two clashing tools hidden, the bare
    // name is unknown (not "ambiguous"), and the hidden one is never named.
    let set = Filter::new(echoes(true).await, Predicate::deny(["echo.add"]));
    match set.invoke(&cx, "add", json!({})).await {
        Err(CallError::UnknownTool { available, .. }) => {
            assert!(available.contains(&"echo2.add".to_owned()));
            assert!(!available.contains(&"echo.add".to_owned()));
        }
        other => panic!("expected an unknown tool, got {other:?}"),
    }
    // With both visible, it is ambiguous.
    let set = Filter::new(echoes(true).await, Predicate::deny(["fail"]));
    let err = set.invoke(&cx, "add", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::AmbiguousTool { .. }), "{err:?}");
}
