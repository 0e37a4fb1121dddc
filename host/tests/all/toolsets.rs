//! Tools and toolsets: plugin tools and native Rust tools side by side.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::tool::Part;
use toolhost::toolset::{BoxFuture, SinglePlugin, Started};
use toolhost::{
    CallError, Context, PluginSet, Prepared, Tool, ToolOutput, ToolSpec, Toolset, ToolsetExt,
};
use toolhost_test_plugins::{CALC, ECHO};

use crate::{engine, plugin};

/// A tool written natively in Rust.
struct Upper {
    spec: ToolSpec,
}

impl Upper {
    fn new() -> Self {
        Self {
            spec: ToolSpec::new(
                "upper",
                "Upper-cases a text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            ),
        }
    }
}

impl Tool for Upper {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Box::pin(async move {
            let text = arguments.arguments()["text"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            Ok(Started::Output(ToolOutput {
                result: Some(json!({"text": text})),
                parts: Vec::new(),
                call_id: cx.call_id().to_owned(),
                usage: Default::default(),
            }))
        })
    }
}

/// A set mixing a plugin's tools with a native one.
struct Mixed {
    plugin: SinglePlugin,
}

impl Toolset for Mixed {
    fn name(&self) -> &str {
        "mixed"
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.plugin.tools(cx);
        tools.push(Arc::new(Upper::new()));
        tools
    }
}

#[tokio::test]
async fn plugin_and_native_tools_share_one_set() {
    let set = Mixed {
        plugin: SinglePlugin::new(plugin(ECHO).await),
    };
    let cx = Context::new().with_call_id("c-1");
    let names: Vec<String> = set
        .tools(&cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert!(names.contains(&"upper".to_owned()) && names.contains(&"add".to_owned()));
    let out = set
        .invoke(&cx, "upper", json!({"text": "abc"}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"text": "ABC"})));
    let out = set.invoke(&cx, "whoami", json!({})).await.unwrap();
    assert_eq!(out.result.unwrap()["call_id"], "c-1");
    // A native tool streams through the default: its result as one JSON part.
    let mut stream = set
        .stream(&cx, "upper", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        Part::Json(json!({"text": "X"}))
    );
    assert!(stream.next().await.is_none());
    let err = set.invoke(&cx, "nope", json!({})).await.unwrap_err();
    match err {
        CallError::UnknownTool { available, .. } => {
            assert!(available.contains(&"upper".to_owned()))
        }
        other => panic!("expected UnknownTool, got {other:?}"),
    }
}

#[tokio::test]
async fn a_plugin_set_lists_clashing_tools_qualified() {
    let echo = plugin(ECHO).await;
    let calc = plugin(CALC).await;
    let renamed = toolhost::Plugin::load(
        engine(),
        ECHO,
        toolhost::PluginOptions::default().name("echo2"),
    )
    .await
    .unwrap();
    let set = PluginSet::from_plugins(vec![echo, calc, renamed]);
    let cx = Context::new();
    let names: Vec<String> = set
        .tools(&cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert!(names.contains(&"evaluate".to_owned()), "{names:?}");
    assert!(names.contains(&"echo.add".to_owned()), "{names:?}");
    assert!(names.contains(&"echo2.add".to_owned()), "{names:?}");
    assert!(!names.contains(&"add".to_owned()), "{names:?}");
    let out = set
        .invoke(&cx, "echo2.add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 4})));
}

fn batch(calls: &[(&str, &str, Value)]) -> Vec<toolhost::toolset::BatchCall> {
    calls
        .iter()
        .map(|(id, tool, args)| toolhost::toolset::BatchCall {
            call_id: (*id).to_owned(),
            tool: (*tool).to_owned(),
            arguments: args.clone(),
        })
        .collect()
}

#[tokio::test]
async fn a_batch_runs_in_parallel_and_answers_in_call_order() {
    let executor = toolhost::toolset::Executor::new(SinglePlugin::new(plugin(ECHO).await));
    let calls = batch(&[
        ("c1", "add", json!({"a": 1, "b": 1})),
        ("c2", "whoami", json!({})),
        ("c3", "nope", json!({})),
        ("c4", "add", json!({"a": 2, "b": 2})),
    ]);
    let cx = Context::new().with_invocation_id("turn-9");
    let outcomes = executor.run(&cx, calls).await;
    let ids: Vec<&str> = outcomes.iter().map(|o| o.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    assert_eq!(
        outcomes[0].result.as_ref().unwrap().result,
        Some(json!({"result": 2}))
    );
    let who = outcomes[1].result.as_ref().unwrap().result.clone().unwrap();
    assert_eq!(who, json!({"call_id": "c2", "invocation_id": "turn-9"}));
    assert!(matches!(
        outcomes[2].result,
        Err(CallError::UnknownTool { .. })
    ));
    assert_eq!(outcomes[3].result.as_ref().unwrap().call_id, "c4");
}

#[tokio::test]
async fn a_sequential_batch_runs_in_order() {
    let mut executor = toolhost::toolset::Executor::new(SinglePlugin::new(plugin(ECHO).await));
    executor.sequential(true);
    // The second call reads what the first stored: only true if they run in order.
    let calls = batch(&[
        ("s1", "remember", json!({"key": "k", "value": "v1"})),
        ("s2", "remember", json!({"key": "k"})),
    ]);
    let cx = Context::new().with_invocation_id("seq-inv");
    let outcomes = executor.run(&cx, calls).await;
    assert_eq!(
        outcomes[1].result.as_ref().unwrap().result,
        Some(json!({"value": "v1"}))
    );
    engine().end_invocation("seq-inv");
}

#[tokio::test]
async fn middleware_rewrites_arguments_and_measures_calls() {
    let metrics = toolhost::toolset::Metrics::new();
    let hook = toolhost::toolset::ArgumentsHook::new(|_cx, spec, mut args| {
        if spec.name == "add" {
            args["b"] = json!(100);
        }
        if args.get("forbidden").is_some() {
            return Err(CallError::InvalidArguments {
                tool: spec.name.clone(),
                problems: vec!["`forbidden` is not allowed".into()],
            });
        }
        Ok(args)
    });
    let set = toolhost::toolset::WithMiddleware::new(
        SinglePlugin::new(plugin(ECHO).await),
        vec![
            Arc::new(toolhost::toolset::Logging),
            Arc::new(metrics.clone()),
            Arc::new(hook),
        ],
    );
    let cx = Context::new();
    let out = set
        .invoke(&cx, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 101})));
    assert!(out.usage.fuel > 0);
    assert!(out.usage.peak_memory_bytes > 0);
    let err = set
        .invoke(&cx, "echo", json!({"message": "x", "forbidden": true}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
    let figures = metrics.snapshot();
    assert_eq!(figures["add"].calls, 1);
    assert_eq!(figures["add"].errors, 0);
    assert_eq!(figures["add"].total_fuel, out.usage.fuel);
    assert_eq!(figures["echo"].errors, 1);
}

/// `echo` loaded again under another plugin name: every tool name clashes.
async fn echo_named(name: &str) -> toolhost::Plugin {
    toolhost::Plugin::load(
        engine(),
        ECHO,
        toolhost::PluginOptions::default().name(name),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_qualified_name_reaches_a_tool_listed_under_its_bare_name() {
    let tools = PluginSet::from_plugins(vec![plugin(ECHO).await, plugin(CALC).await]);
    let cx = Context::new();
    let names: Vec<String> = tools
        .tools(&cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    // Listed once, under the bare name: no clash.
    assert!(names.contains(&"evaluate".to_owned()), "{names:?}");
    assert!(!names.contains(&"calc.evaluate".to_owned()), "{names:?}");
    for name in ["evaluate", "calc.evaluate"] {
        let tool = tools.find(&cx, name).unwrap();
        assert_eq!(tool.spec().name, "evaluate", "{name} is the listed tool");
        assert_eq!(tool.spec().qualified_name.as_deref(), Some("calc.evaluate"));
        let out = tools
            .invoke(&cx, name, json!({"expression": "1+2"}))
            .await
            .unwrap();
        assert_eq!(out.result.unwrap()["result"], 3.0, "{name}");
    }
    // The plugin set's own resolution and a single plugin resolve it too.
    let (owner, spec) = tools.resolve("calc.evaluate").unwrap();
    assert_eq!((owner.name(), spec.name.as_str()), ("calc", "evaluate"));
    let single = SinglePlugin::new(plugin(ECHO).await);
    let out = single
        .invoke(&cx, "echo.add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
    // A qualified name of another plugin, or of a tool the plugin lacks, is unknown.
    for name in ["calc.add", "nope.add"] {
        let err = tools.invoke(&cx, name, json!({})).await.unwrap_err();
        assert!(
            matches!(err, CallError::UnknownTool { .. }),
            "{name}: {err:?}"
        );
    }
}

#[tokio::test]
async fn an_ambiguous_bare_name_says_so_and_lists_the_candidates() {
    let tools = PluginSet::from_plugins(vec![
        plugin(ECHO).await,
        plugin(CALC).await,
        echo_named("echo2").await,
    ]);
    let cx = Context::new();
    let err = tools
        .invoke(&cx, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    match &err {
        CallError::AmbiguousTool { tool, candidates } => {
            assert_eq!(tool, "add");
            assert_eq!(candidates, &["echo.add", "echo2.add"]);
        }
        other => panic!("expected an ambiguous name, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("ambiguous") && text.contains("echo.add, echo2.add"),
        "{text}"
    );
    assert!(err.is_caller_error() && err.is_unresolved_name());
    // The plugin set's own resolution agrees.
    assert!(matches!(
        tools.resolve("add"),
        Err(CallError::AmbiguousTool { .. })
    ));
    // The qualified names work, and so does an unrelated bare name.
    let out = tools
        .invoke(&cx, "echo2.add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 4})));
    tools
        .invoke(&cx, "evaluate", json!({"expression": "1"}))
        .await
        .unwrap();
    // A name no plugin offers is still just unknown.
    let err = tools.invoke(&cx, "nope", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
}
