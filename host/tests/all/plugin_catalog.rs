//! What plugins offer besides tools (contract `@0.4.0`'s `catalog`):
//! resources, templates, prompts and completions of a real plugin (the
//! conformance fixtures, written with the Rust SDK), each served in a fresh
//! instance; the naming rule across plugins; the catalog kept in the cache
//! manifest; and tools that ask their user (`host.ask`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolhost::catalog::{Body, Completion, CompletionRef, Kind, MessageContent, Role};
use toolhost::tool::{Answer, Asker, Part, Replayed};
use toolhost::{
    CallError, Context, Engine, EngineConfig, Plugin, PluginOptions, PluginSet, Toolset, ToolsetExt,
};
use toolhost_test_plugins::{ABI_V0_3, ECHO, HOSTILE, MCP_CONFORMANCE};

use crate::{engine, plugin};

async fn fixtures() -> PluginSet {
    PluginSet::from_plugins(vec![plugin(MCP_CONFORMANCE).await])
}

fn arguments(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn text_of(contents: &[toolhost::catalog::ResourceContents]) -> String {
    match &contents[0].body {
        Body::Text(text) => text.clone(),
        Body::Bytes(_) => panic!("expected text"),
    }
}

#[tokio::test]
async fn a_plugins_resources_and_templates_are_listed_and_read() {
    let set = fixtures().await;
    let cx = Context::new();
    assert!(set.kinds().contains(Kind::Resource));
    let uris: Vec<String> = set
        .resources(&cx)
        .iter()
        .map(|r| r.spec().uri.clone())
        .collect();
    for uri in [
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    ] {
        assert!(uris.contains(&uri.to_owned()), "{uri} in {uris:?}");
    }
    let resource = set.resource(&cx, "test://static-text").unwrap();
    assert_eq!(resource.spec().plugin.as_deref(), Some("mcp_conformance"));

    let text = set.read(&cx, "test://static-text").await.unwrap();
    assert_eq!(text[0].mime_type.as_deref(), Some("text/plain"));
    assert!(text_of(&text).contains("static text resource"));

    let binary = set.read(&cx, "test://static-binary").await.unwrap();
    assert_eq!(binary[0].mime_type.as_deref(), Some("image/png"));
    let Body::Bytes(png) = &binary[0].body else {
        panic!("expected bytes");
    };
    assert!(png.starts_with(b"\x89PNG"), "a PNG");

    let templates: Vec<String> = set
        .resource_templates(&cx)
        .iter()
        .map(|t| t.spec().uri_template.clone())
        .collect();
    assert_eq!(templates, ["test://template/{id}/data"]);
    let data = set.read(&cx, "test://template/123/data").await.unwrap();
    assert_eq!(data[0].uri, "test://template/123/data");
    assert!(text_of(&data).contains("123"), "{}", text_of(&data));

    for unknown in [
        "test://nothing",
        "test://template/1/2/data",
        "test://template//data",
    ] {
        let err = set.read(&cx, unknown).await.unwrap_err();
        assert!(
            matches!(&err, CallError::UnknownResource { uri } if uri == unknown),
            "{unknown}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_plugins_prompts_are_listed_checked_and_filled_in() {
    let set = fixtures().await;
    let cx = Context::new();
    let names: Vec<String> = set
        .prompts(&cx)
        .iter()
        .map(|p| p.spec().name.clone())
        .collect();
    for name in [
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    for prompt in set.prompts(&cx) {
        assert!(
            !prompt.spec().description.is_empty(),
            "{}",
            prompt.spec().name
        );
    }

    let got = set
        .get_prompt(
            &cx,
            "test_prompt_with_arguments",
            arguments(&[("arg1", "testValue1"), ("arg2", "testValue2")]),
        )
        .await
        .unwrap();
    let MessageContent::Part(Part::Text(text)) = &got.messages[0].content else {
        panic!("expected text: {got:?}");
    };
    assert!(
        text.contains("testValue1") && text.contains("testValue2"),
        "{text}"
    );
    assert_eq!(got.messages[0].role, Role::User);

    let err = set
        .get_prompt(
            &cx,
            "test_prompt_with_arguments",
            arguments(&[("arg1", "x")]),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("arg2"), "{err}");

    let embedded = set
        .get_prompt(
            &cx,
            "test_prompt_with_embedded_resource",
            arguments(&[("resourceUri", "test://example-resource")]),
        )
        .await
        .unwrap();
    assert!(embedded.messages.iter().any(|m| matches!(
        &m.content,
        MessageContent::Resource(contents) if contents.uri == "test://example-resource"
    )));

    let image = set
        .get_prompt(&cx, "test_prompt_with_image", BTreeMap::new())
        .await
        .unwrap();
    assert!(image.messages.iter().any(|m| matches!(
        &m.content,
        MessageContent::Part(Part::Blob { mime_type, .. }) if mime_type == "image/png"
    )));

    let err = set
        .get_prompt(&cx, "test_no_such_prompt", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownPrompt { .. }), "{err:?}");
}

#[tokio::test]
async fn completions_come_from_the_plugin_and_none_for_what_it_does_not_offer() {
    let set = fixtures().await;
    let cx = Context::new();
    let none = BTreeMap::new();
    let prompt = CompletionRef::Prompt("test_prompt_with_arguments".into());
    let completion = set
        .complete(&cx, &prompt, "arg1", "pa", &none)
        .await
        .unwrap();
    assert!(!completion.values.is_empty());
    assert!(
        completion.values.iter().all(|v| v.starts_with("pa")),
        "{completion:?}"
    );
    let template = CompletionRef::Template("test://template/{id}/data".into());
    let completion = set.complete(&cx, &template, "id", "", &none).await.unwrap();
    assert!(!completion.values.is_empty(), "{completion:?}");

    for (target, argument) in [
        (CompletionRef::Prompt("test_simple_prompt".into()), "arg1"),
        (CompletionRef::Prompt("nothing".into()), "arg1"),
        (CompletionRef::Template("test://nothing/{id}".into()), "id"),
        (prompt, "no_such_argument"),
    ] {
        let completion = set
            .complete(&cx, &target, argument, "", &none)
            .await
            .unwrap();
        assert_eq!(completion, Completion::default(), "{target:?} {argument}");
    }
}

#[tokio::test]
async fn two_plugins_offering_one_uri_serve_it_from_neither_and_prompts_qualify() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["one.wasm", "two.wasm"] {
        std::fs::copy(MCP_CONFORMANCE, dir.path().join(name)).unwrap();
    }
    let set = PluginSet::load_dir(engine(), dir.path(), &PluginOptions::default())
        .await
        .unwrap();
    let cx = Context::new();
    assert!(
        set.resources(&cx).is_empty(),
        "clashing URIs are served by neither"
    );
    assert!(set.resource_templates(&cx).is_empty());
    let err = set.read(&cx, "test://static-text").await.unwrap_err();
    assert!(matches!(err, CallError::UnknownResource { .. }), "{err:?}");
    let names: Vec<String> = set
        .prompts(&cx)
        .iter()
        .map(|p| p.spec().name.clone())
        .collect();
    assert!(
        names.contains(&"one.test_simple_prompt".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"two.test_simple_prompt".to_owned()),
        "{names:?}"
    );
    let got = set
        .get_prompt(&cx, "two.test_simple_prompt", BTreeMap::new())
        .await
        .unwrap();
    assert!(!got.messages.is_empty());
}

#[tokio::test]
async fn a_plugin_listed_from_its_manifest_keeps_its_catalog() {
    let cache = tempfile::tempdir().unwrap();
    let engine_with_cache = || {
        let mut config = EngineConfig::default();
        config.cache_dir(Some(cache.path().to_owned()));
        Engine::new(&config).unwrap()
    };
    let first = engine_with_cache();
    let cold = Plugin::load(&first, MCP_CONFORMANCE, &PluginOptions::default())
        .await
        .unwrap();
    let second = engine_with_cache();
    let warm = Plugin::load(&second, MCP_CONFORMANCE, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(warm.resources(), cold.resources());
    assert_eq!(warm.prompts(), cold.prompts());
    assert!(Path::new(cache.path()).join("manifests").exists());
    let set = PluginSet::from_plugins(vec![warm]);
    let read = set
        .read(&Context::new(), "test://template/7/data")
        .await
        .unwrap();
    assert!(text_of(&read).contains('7'));
}

#[tokio::test]
async fn plugins_of_older_contracts_and_tools_only_plugins_offer_no_catalog() {
    for path in [ABI_V0_3, ECHO] {
        let plugin = plugin(path).await;
        assert!(plugin.resources().is_empty(), "{path}");
        assert!(plugin.prompts().is_empty(), "{path}");
        let set = PluginSet::from_plugins(vec![plugin]);
        assert!(!set.kinds().contains(Kind::Prompt), "{path}");
        let err = set
            .get_prompt(&Context::new(), "summarize", BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no prompt named `summarize`; no prompts are available"
        );
    }
}

/// An asker that answers every question with `answer`, and keeps them.
fn answering(answer: Answer) -> (Asker, Arc<Mutex<Vec<toolhost::tool::Question>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&asked);
    let asker = Asker::new(move |question| {
        kept.lock().unwrap().push(question);
        let answer = answer.clone();
        Box::pin(async move { Ok(answer) })
    });
    (asker, asked)
}

async fn elicit(cx: &Context) -> Result<String, CallError> {
    let set = fixtures().await;
    let out = set
        .invoke(cx, "test_elicitation", json!({"message": "Your name?"}))
        .await?;
    Ok(out
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(text) => Some(text.clone()),
            _ => None,
        })
        .collect())
}

#[tokio::test]
async fn a_tool_asks_its_user_and_gets_the_answer() {
    let mut content = Map::new();
    content.insert("username".into(), Value::String("Ada".into()));
    content.insert("email".into(), Value::String("ada@example.com".into()));
    let (asker, asked) = answering(Answer::Accept(content));
    let text = elicit(&Context::new().with_asker(asker)).await.unwrap();
    assert!(text.contains("Ada"), "{text}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Your name?");
    assert_eq!(asked[0].asked_by, "mcp_conformance.test_elicitation");
    assert_eq!(asked[0].schema["type"], "object");

    let (asker, _) = answering(Answer::Decline);
    let text = elicit(&Context::new().with_asker(asker)).await.unwrap();
    assert!(text.contains("decline"), "{text}");
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_or_no_one_to_ask_reaches_the_tool() {
    // `username` must be a string, `email` is required.
    let mut content = Map::new();
    content.insert("username".into(), json!(42));
    let (asker, _) = answering(Answer::Accept(content));
    let err = elicit(&Context::new().with_asker(asker)).await.unwrap_err();
    assert!(err.to_string().contains("does not fit the form"), "{err}");

    let err = elicit(&Context::new()).await.unwrap_err();
    assert!(err.to_string().contains("nobody can be asked"), "{err}");
}

#[tokio::test]
async fn a_plugin_says_its_resources_changed_within_bounds() {
    let engine = Engine::new(&{
        let mut config = EngineConfig::default();
        config.cache_dir(None);
        config
    })
    .unwrap();
    let plugin = Plugin::load(&engine, MCP_CONFORMANCE, &PluginOptions::default())
        .await
        .unwrap();
    let set = PluginSet::from_plugins(vec![plugin]);
    let mut updates = engine.resource_updates();
    // Offered (listed, made by its template), not offered, and then more
    // than a call may send.
    let mut uris = vec![
        "test://watched-resource".to_owned(),
        "test://template/9/data".to_owned(),
        "test://not-offered".to_owned(),
    ];
    uris.extend((0..100).map(|_| "test://static-text".to_owned()));
    set.invoke(&Context::new(), "touch_resources", json!({ "uris": uris }))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        assert_eq!(&*update.plugin, "mcp_conformance");
        seen.push(update.uri);
    }
    assert_eq!(
        seen[..2],
        ["test://watched-resource", "test://template/9/data"]
    );
    assert!(!seen.contains(&"test://not-offered".to_owned()));
    assert_eq!(seen.len(), 64, "at most 64 updates a call");
}

#[tokio::test]
async fn the_time_a_user_takes_to_answer_is_not_the_calls() {
    // A call may run 300 ms; its user takes longer than that to answer.
    let mut limits = toolhost::engine::Limits::default();
    limits.timeout(std::time::Duration::from_millis(300));
    let mut options = PluginOptions::default();
    options.limits(limits);
    let plugin = Plugin::load(engine(), MCP_CONFORMANCE, &options)
        .await
        .unwrap();
    let set = PluginSet::from_plugins(vec![plugin]);
    let asker = Asker::new(|_question| {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(900)).await;
            let mut content = Map::new();
            content.insert("username".into(), json!("Ada"));
            content.insert("email".into(), json!("ada@example.com"));
            Ok(Answer::Accept(content))
        })
    });
    let out = set
        .invoke(
            &Context::new().with_asker(asker),
            "test_elicitation",
            json!({"message": "Who?"}),
        )
        .await
        .unwrap();
    assert!(
        format!("{:?}", out.parts).contains("Ada"),
        "{:?}",
        out.parts
    );
}

#[tokio::test]
async fn a_hostile_catalog_hits_the_same_bounds_as_a_tool() {
    let mut limits = toolhost::engine::Limits::default();
    limits.timeout(std::time::Duration::from_millis(500));
    let mut options = PluginOptions::default();
    options.limits(limits);
    let plugin = Plugin::load(engine(), HOSTILE, &options).await.unwrap();
    let set = PluginSet::from_plugins(vec![plugin]);
    let cx = Context::new();
    let exhausted = |err: &CallError| matches!(err, CallError::Exhausted { .. });

    // Content past the output cap (4 MiB), a read that never ends.
    for uri in ["hostile://huge", "hostile://spin"] {
        let err = set.read(&cx, uri).await.unwrap_err();
        assert!(exhausted(&err), "{uri}: {err:?}");
    }
    let err = set
        .get_prompt(&cx, "huge_prompt", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(exhausted(&err), "{err:?}");
    // A thousand completions: a hundred are served, and there are more.
    let target = CompletionRef::Prompt("huge_prompt".into());
    let completion = set
        .complete(&cx, &target, "topic", "", &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(completion.values.len(), Completion::MAX_VALUES);
    assert!(completion.has_more);

    // Ten questions in one call: eight are put to the user.
    let (asker, asked) = answering(Answer::Decline);
    let out = set
        .invoke(&Context::new().with_asker(asker), "pester", json!({}))
        .await
        .unwrap();
    let result = out.result.unwrap();
    assert_eq!(result["answered"], 8, "{result}");
    assert!(
        result["last_error"]
            .as_str()
            .unwrap()
            .contains("8 questions"),
        "{result}"
    );
    assert_eq!(asked.lock().unwrap().len(), 8);
}

#[tokio::test]
async fn a_call_asked_by_re_running_stops_at_each_new_question_and_replays_the_answers() {
    let set = PluginSet::from_plugins(vec![plugin(HOSTILE).await]);
    // One invocation for every run, so `interview`'s count of its runs shows
    // each re-run.
    let set = &set;
    let run = |answers: Vec<Replayed>| async move {
        let cx = Context::new()
            .with_invocation_id("re-run-interview")
            .with_asker(Asker::replay(answers));
        set.invoke(&cx, "interview", json!({})).await
    };
    let stopped = |result: Result<toolhost::ToolOutput, CallError>| match result {
        Err(CallError::InputRequired { tool, input }) => {
            assert_eq!(tool, "interview");
            *input
        }
        other => panic!("the call must stop at its question: {other:?}"),
    };
    let first = stopped(run(Vec::new()).await);
    assert_eq!(first.question.message, "What is your name?");
    assert_eq!(first.question.asked_by, "hostile.interview");
    assert!(first.answers.is_empty());

    let mut name = Map::new();
    name.insert("name".into(), json!("Ada"));
    let mut answers = vec![Replayed::new(first.question.digest(), Answer::Accept(name))];
    let second = stopped(run(answers.clone()).await);
    assert_eq!(second.question.message, "Greet Ada?");
    assert_eq!(second.answers, answers);

    answers.push(Replayed::new(second.question.digest(), Answer::Decline));
    let out = run(answers.clone()).await.unwrap();
    assert_eq!(
        out.result.unwrap(),
        json!({"runs": 3, "name": "Ada", "greet": null, "actions": ["accept", "decline"]})
    );

    // An answer to another question stops the call with a refusal; the tool
    // hears neither that nor the pause.
    answers.swap(0, 1);
    let err = run(answers).await.unwrap_err();
    assert!(
        matches!(&err, CallError::AnswerRefused { reason, .. } if reason.contains("question 1 is not the one")),
        "{err:?}"
    );
    assert_eq!(err.kind(), "answer_refused");
}
