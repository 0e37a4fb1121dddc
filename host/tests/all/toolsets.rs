//! Tools and toolsets: plugin tools and native Rust tools side by side.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::{
    BoxFuture, CallError, Context, Part, PluginSet, SinglePlugin, StaticPlugins, Tool, ToolOutput,
    ToolSpec, Toolset, ToolsetExt,
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
            spec: ToolSpec {
                name: "upper".into(),
                description: "Upper-cases a text.".into(),
                long_running: false,
                streaming: false,
                input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
                output_schema: None,
            },
        }
    }
}

impl Tool for Upper {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        Box::pin(async move {
            let text = arguments["text"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            Ok(ToolOutput {
                result: Some(json!({"text": text})),
                parts: Vec::new(),
                call_id: cx.call_id().to_owned(),
            })
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
    let set = StaticPlugins::new("all", &PluginSet::from_plugins(vec![echo, calc, renamed]));
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
