//! Tests of the confirmation layer.

use serde_json::json;

use super::*;
use crate::tool::{Part, ToolOutput};
use crate::toolset::ToolsetExt;
use crate::toolset::filter::tests::{Native, Probe};

fn approve(arguments: Value) -> Decision {
    Decision::Approve {
        arguments,
        payload: None,
    }
}

fn request(result: Result<ToolOutput, CallError>) -> ConfirmationRequest {
    match result {
        Err(CallError::ConfirmationRequired(request)) => *request,
        other => panic!("expected a confirmation request, got {other:?}"),
    }
}

fn rejection(result: Result<ToolOutput, CallError>) -> Option<String> {
    match result {
        Err(CallError::ConfirmationRejected { reason, .. }) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

fn setup() -> (Arc<Probe>, Arc<Probe>, Native) {
    let delete = Probe::new("delete", &[]);
    let read = Probe::new("read", &[]);
    let set = Native(vec![
        delete.clone() as Arc<dyn Tool>,
        read.clone() as Arc<dyn Tool>,
    ]);
    (delete, read, set)
}

#[tokio::test]
async fn static_rule_asks_then_runs_once_approved() {
    let (delete, read, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let args = json!({"id": 7});
    let cx = Context::new().with_call_id("c1");
    let req = request(set.invoke(&cx, "delete", args.clone()).await);
    assert_eq!(req.call_id, "c1");
    assert_eq!(req.tool, "delete");
    assert_eq!(req.arguments, args);
    assert_eq!(req.hint, "Approve this call of `delete`?");
    assert_eq!(req.payload, None);
    assert_eq!(delete.runs(), 0, "the tool is not entered before approval");
    // Other tools run freely.
    set.invoke(&cx, "read", json!({})).await.unwrap();
    assert_eq!(read.runs(), 1);

    let cx = cx.with_decision("c1", approve(req.arguments));
    let out = set.invoke(&cx, "delete", args.clone()).await.unwrap();
    assert_eq!(out.result.unwrap()["arguments"], args);
    assert_eq!(delete.runs(), 1);
}

#[test]
fn gated_tools_are_marked_in_the_listing_and_others_are_not() {
    let (_, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new();
    let marked = |name: &str| set.find(&cx, name).unwrap().spec().confirm;
    assert!(marked("delete"));
    assert!(!marked("read"));
    let listed: Vec<(String, bool)> = set
        .tools(&cx)
        .iter()
        .map(|t| (t.spec().name.clone(), t.spec().confirm))
        .collect();
    assert_eq!(
        listed,
        [("delete".to_owned(), true), ("read".to_owned(), false)]
    );
    // The mark is the layer's: the wrapped tool's own spec is unchanged.
    assert!(!set.inner().find(&cx, "delete").unwrap().spec().confirm);
    // A set-wide rule or a provider may gate any tool: all are marked.
    let (_, _, inner) = setup();
    let set = Confirm::new(inner).provider(|_, _, _| None);
    assert!(set.tools(&cx).iter().all(|t| t.spec().confirm));
}

#[test]
fn a_gated_tool_shares_one_marked_spec_until_it_is_replaced() {
    let (_, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new();
    let first = set.find(&cx, "delete").unwrap();
    let again = set.find(&cx, "delete").unwrap();
    // Each lookup used to copy the spec (schemas included); now they share it.
    assert!(std::ptr::eq(first.spec(), again.spec()));
    assert!(std::ptr::eq(first.spec(), set.tools(&cx)[0].spec()));

    // A new tool at the same name (a reload) gets its own, from its own spec.
    let replaced = Confirm {
        inner: Native(vec![Probe::with_schema(
            "delete",
            json!({"type": "object", "required": ["id"]}),
        ) as Arc<dyn Tool>]),
        rules: Arc::clone(&set.rules),
        decided: set.decided.clone(),
        marked: Arc::clone(&set.marked),
    };
    let fresh = replaced.find(&cx, "delete").unwrap();
    assert!(fresh.spec().confirm);
    assert_eq!(fresh.spec().input_schema["required"], json!(["id"]));
    assert_eq!(first.spec().input_schema.get("required"), None);

    // Specs of dropped tools are swept out as new ones come.
    drop((first, again, fresh, replaced));
    for _ in 0..200 {
        let one = Confirm {
            inner: Native(vec![Probe::new("delete", &[]) as Arc<dyn Tool>]),
            rules: Arc::clone(&set.rules),
            decided: set.decided.clone(),
            marked: Arc::clone(&set.marked),
        };
        assert!(one.find(&cx, "delete").unwrap().spec().confirm);
    }
    let kept = set
        .marked
        .by_tool
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .specs
        .len();
    assert!(kept <= 64, "{kept} specs kept for 2 live tools");
}

#[tokio::test]
async fn rules_by_predicate_gate_and_mark_only_what_they_choose() {
    let (delete, read, inner) = setup();
    let set = Confirm::new(inner)
        .require_matching(Predicate::glob(["del*"]), ConfirmationHint::new("Sure?"));
    let cx = Context::new();
    let marked: Vec<bool> = set.tools(&cx).iter().map(|t| t.spec().confirm).collect();
    assert_eq!(marked, [true, false]);
    assert_eq!(
        request(set.invoke(&cx, "delete", json!({})).await).hint,
        "Sure?"
    );
    set.invoke(&cx, "read", json!({})).await.unwrap();
    assert_eq!((delete.runs(), read.runs()), (0, 1));
}

#[tokio::test]
async fn approvals_are_single_use() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let args = json!({"id": 7});
    let cx = Context::new()
        .with_call_id("c1")
        .with_decision("c1", approve(args.clone()));
    set.invoke(&cx, "delete", args.clone()).await.unwrap();
    let reason = rejection(set.invoke(&cx, "delete", args.clone()).await).unwrap();
    assert!(reason.contains("already decided"), "{reason}");
    // Without the decision, the spent call ID is refused too.
    let bare = Context::new().with_call_id("c1");
    rejection(set.invoke(&bare, "delete", args.clone()).await);
    // A clone of the layer shares what was decided.
    let clone = set.clone();
    rejection(clone.invoke(&cx, "delete", args).await);
    assert_eq!(delete.runs(), 1);
}

#[tokio::test]
async fn decided_call_ids_are_bounded_oldest_first() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete").remember_decisions(2);
    let args = json!({"id": 7});
    let approved = |id: &str| {
        Context::new()
            .with_call_id(id)
            .with_decision(id, approve(args.clone()))
    };
    for id in ["c1", "c2", "c3"] {
        set.invoke(&approved(id), "delete", args.clone())
            .await
            .unwrap();
    }
    assert_eq!(delete.runs(), 3);
    // The two most recent are remembered and refused on replay.
    for id in ["c2", "c3"] {
        let reason = rejection(set.invoke(&approved(id), "delete", args.clone()).await);
        assert!(reason.unwrap().contains("already decided"));
    }
    // The oldest was forgotten: the bound is what the docs promise.
    set.invoke(&approved("c1"), "delete", args.clone())
        .await
        .unwrap();
    assert_eq!(delete.runs(), 4);
    // Remembering it again pushed out the next oldest.
    for (id, remembered) in [("c1", true), ("c2", false), ("c3", true)] {
        let claimed = set.decided.is_claimed(&super::nonce(id)).await.unwrap();
        assert_eq!(claimed, remembered, "{id}");
    }
}

#[tokio::test]
async fn changed_arguments_are_refused_and_the_approval_kept() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new()
        .with_call_id("c1")
        .with_decision("c1", approve(json!({"id": 7})));
    let reason = rejection(set.invoke(&cx, "delete", json!({"id": 8})).await).unwrap();
    assert!(
        reason.contains("arguments changed since approval"),
        "{reason}"
    );
    // A subtly different value (number type) is also a change.
    rejection(set.invoke(&cx, "delete", json!({"id": 7.0})).await);
    assert_eq!(delete.runs(), 0);
    // The approval was not used up by the refusals.
    set.invoke(&cx, "delete", json!({"id": 7})).await.unwrap();
    assert_eq!(delete.runs(), 1);
}

#[tokio::test]
async fn rejection_is_its_own_outcome_and_final() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new().with_call_id("c1").with_decision(
        "c1",
        Decision::Reject {
            reason: Some("not today".into()),
        },
    );
    let err = set.invoke(&cx, "delete", json!({})).await.unwrap_err();
    assert_eq!(err.to_string(), "`delete` was not run: not today");
    // A later approval for the same call ID does not revive it.
    let cx = Context::new()
        .with_call_id("c1")
        .with_decision("c1", approve(json!({})));
    rejection(set.invoke(&cx, "delete", json!({})).await);
    assert_eq!(delete.runs(), 0);
}

#[tokio::test]
async fn a_decision_for_another_call_does_not_count() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new()
        .with_call_id("c2")
        .with_decision("c1", approve(json!({})));
    request(set.invoke(&cx, "delete", json!({})).await);
    assert_eq!(delete.runs(), 0);
}

#[tokio::test]
async fn dynamic_provider_sees_the_arguments() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).provider(|cx, spec, args| {
        let big = args["amount"].as_i64().unwrap_or(0) > 100;
        let trusted = cx.identity().roles.contains("trusted");
        (spec.name == "delete" && big && !trusted).then(|| {
            ConfirmationHint::new(format!("Delete {}?", args["amount"]))
                .with_payload(json!({"severity": "high"}))
        })
    });
    let cx = Context::new();
    set.invoke(&cx, "delete", json!({"amount": 5}))
        .await
        .unwrap();
    let req = request(set.invoke(&cx, "delete", json!({"amount": 500})).await);
    assert_eq!(req.hint, "Delete 500?");
    assert_eq!(req.payload, Some(json!({"severity": "high"})));
    let mut who = crate::toolset::Identity::default();
    who.roles.insert("trusted".into());
    let trusted = Context::new().with_identity(who);
    set.invoke(&trusted, "delete", json!({"amount": 500}))
        .await
        .unwrap();
    assert_eq!(delete.runs(), 2);
}

#[tokio::test]
async fn set_wide_rule_guards_every_tool_and_rules_add_up() {
    let (delete, read, inner) = setup();
    let set = Confirm::new(inner)
        .require_all_with(ConfirmationHint::new("Everything needs a yes"))
        .provider(|_, _, _| None);
    let cx = Context::new();
    let req = request(set.invoke(&cx, "read", json!({})).await);
    assert_eq!(req.hint, "Everything needs a yes");
    request(set.invoke(&cx, "delete", json!({})).await);
    assert_eq!(delete.runs() + read.runs(), 0);
    // Listing is unchanged: confirmation hides nothing.
    assert_eq!(set.tools(&cx).len(), 2);
}

#[tokio::test]
async fn streams_are_gated_too() {
    let (delete, _, inner) = setup();
    let set = Confirm::new(inner).require("delete");
    let cx = Context::new().with_call_id("s1");
    match set.stream(&cx, "delete", json!({"id": 1})).await {
        Err(CallError::ConfirmationRequired(req)) => assert_eq!(req.call_id, "s1"),
        other => panic!("expected a confirmation request, got {other:?}"),
    }
    assert_eq!(delete.runs(), 0);
    let cx = cx.with_decision("s1", approve(json!({"id": 1})));
    let mut stream = set.stream(&cx, "delete", json!({"id": 1})).await.unwrap();
    match stream.next().await {
        Some(Ok(Part::Json(value))) => assert_eq!(value["tool"], "delete"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(delete.runs(), 1);
    assert!(set.stream(&cx, "delete", json!({"id": 1})).await.is_err());
    assert_eq!(delete.runs(), 1);
}

#[tokio::test]
async fn concurrent_replays_run_once() {
    let (delete, _, inner) = setup();
    let set = Arc::new(Confirm::new(inner).require("delete"));
    let cx = Context::new()
        .with_call_id("c1")
        .with_decision("c1", approve(json!({})));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let set = Arc::clone(&set);
            let cx = cx.clone();
            tokio::spawn(async move { set.invoke(&cx, "delete", json!({})).await.is_ok() })
        })
        .collect();
    let mut ran = 0;
    for task in tasks {
        ran += usize::from(task.await.unwrap());
    }
    assert_eq!(ran, 1);
    assert_eq!(delete.runs(), 1);
}

#[test]
fn the_request_serializes_for_a_ui() {
    let req = ConfirmationRequest {
        call_id: "c1".into(),
        tool: "delete".into(),
        arguments: json!({"id": 1}),
        hint: "ok?".into(),
        payload: None,
    };
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"call_id": "c1", "tool": "delete", "arguments": {"id": 1}, "hint": "ok?"})
    );
}
