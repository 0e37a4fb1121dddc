//! The caller, visible to the tool (contract `@0.3.0`): from the principal
//! of a call's context, through every toolset, to the guest, with only the
//! claims the plugin's grants name; nothing for an anonymous caller, and
//! nothing new for plugins of older contracts.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::policy::Grants;
use toolhost::tool::{Caller, ToolCall};
use toolhost::toolset::{Identity, Principal};
use toolhost::{Context, PluginOptions, PluginSet, ToolsetExt};
use toolhost_test_plugins::{ABI_V0_1, ABI_V0_2, ABI_V0_3, ECHO};

use crate::{engine, plugin, plugin_with};

/// A context whose caller is `principal`.
fn called_by(principal: Principal) -> Context {
    let identity = Identity {
        principal: Some(Arc::new(principal)),
        ..Identity::default()
    };
    Context::new().with_identity(identity)
}

fn ana() -> Principal {
    let mut ana = Principal::new("https://id.example.com/realms/acme", "ana")
        .with_scopes(["tools:read", "mcp:tools"])
        .with_roles(["staff"]);
    ana.claims.insert("email".into(), json!("ana@example.com"));
    ana.claims.insert("groups".into(), json!(["staff"]));
    ana.claims.insert("salary".into(), json!(1));
    ana
}

fn echo_granting(claims: &[&str]) -> PluginOptions {
    let mut grants = Grants::default();
    for claim in claims {
        grants.caller_claim(*claim);
    }
    let mut options = PluginOptions::default();
    options.grants(grants);
    options
}

#[tokio::test]
async fn a_tool_sees_its_caller_with_only_the_granted_claims() {
    let echo = plugin_with(ECHO, &echo_granting(&["email", "groups"])).await;
    let set = PluginSet::from_plugins(vec![echo]);
    let out = set
        .invoke(&called_by(ana()), "whoami", json!({}))
        .await
        .unwrap();
    let result = out.result.unwrap();
    assert_eq!(
        result["caller"],
        json!({
            "issuer": "https://id.example.com/realms/acme",
            "subject": "ana",
            "scopes": ["mcp:tools", "tools:read"],
            "claims": {"email": "ana@example.com", "groups": ["staff"]},
        }),
        "{result}"
    );
    // Granted nothing: the caller without claims.
    let out = plugin(ECHO)
        .await
        .invoke(
            ToolCall::new("whoami", json!({}))
                .with_caller(Caller::new("i", "s").with_claim("email", "x@y.z")),
        )
        .await
        .unwrap();
    assert_eq!(
        out.result.unwrap()["caller"],
        json!({"issuer": "i", "subject": "s", "scopes": [], "claims": {}})
    );
}

#[tokio::test]
async fn nobody_is_told_for_an_anonymous_caller_or_none() {
    let set = PluginSet::from_plugins(vec![plugin(ECHO).await]);
    for cx in [Context::new(), called_by(Principal::anonymous())] {
        let out = set.invoke(&cx, "whoami", json!({})).await.unwrap();
        let result = out.result.unwrap();
        assert!(result.get("caller").is_none(), "{result}");
        assert!(result["call_id"].is_string(), "{result}");
    }
}

#[tokio::test]
async fn plugins_of_older_contracts_run_for_a_known_caller_and_see_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ABI_V0_1, dir.path().join("v1.wasm")).unwrap();
    std::fs::copy(ABI_V0_2, dir.path().join("v2.wasm")).unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    let set = PluginSet::load_dir(engine(), dir.path(), &echo_granting(&["email"]))
        .await
        .unwrap();
    assert!(set.failures().is_empty(), "{:?}", set.failures());
    let cx = called_by(ana());
    let out = set
        .invoke(&cx, "shout", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"text": "HI"})));
    let out = set
        .invoke(
            &cx.clone().with_call_id("c-2"),
            "whisper",
            json!({"text": "HI"}),
        )
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"text": "hi", "call_id": "c-2"})));
    let out = set.invoke(&cx, "whoami", json!({})).await.unwrap();
    let result: Value = out.result.unwrap();
    assert_eq!(
        result["caller"]["claims"],
        json!({"email": "ana@example.com"})
    );
}

#[tokio::test]
async fn a_0_3_plugin_still_sees_its_caller_beside_0_4_plugins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ABI_V0_3, dir.path().join("v3.wasm")).unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    let set = PluginSet::load_dir(engine(), dir.path(), &echo_granting(&["email"]))
        .await
        .unwrap();
    assert!(set.failures().is_empty(), "{:?}", set.failures());
    let out = set
        .invoke(&called_by(ana()).with_call_id("c-3"), "whoami3", json!({}))
        .await
        .unwrap();
    let result: Value = out.result.unwrap();
    assert_eq!(result["call_id"], "c-3");
    assert_eq!(result["caller"]["subject"], "ana");
    assert_eq!(
        result["caller"]["claims"],
        json!({"email": "ana@example.com"})
    );
    let out = set
        .invoke(&Context::new(), "whoami3", json!({}))
        .await
        .unwrap();
    assert!(out.result.unwrap().get("caller").is_none());
}
