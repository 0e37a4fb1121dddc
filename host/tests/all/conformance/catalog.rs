//! The conformance plugin's catalog, through the host: what it declares
//! (resources, templates, prompts), reads, gets and completions, each in a
//! fresh instance as a client's request is. Every language's conformance
//! plugin declares the same catalog (`catalog.rs` in Rust, `catalog.py`,
//! `catalog.js`, `catalog.c`, `catalog.go`), its checks run for each build by `conformance.rs`'s `suite!`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::catalog::{Body, Completion, CompletionRef, MessageContent, ResourceContents, Role};
use toolhost::tool::{MediaKind, Part};
use toolhost::toolset::{Identity, Principal};
use toolhost::{CallError, Context, PluginSet, ToolsetExt};

use super::{Build, PIXEL_PNG};

async fn set(build: Build) -> PluginSet {
    PluginSet::from_plugins(vec![build.load().await])
}

fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn text(uri: &str, mime_type: &str, text: &str) -> ResourceContents {
    ResourceContents::text(uri, text).with_mime_type(mime_type)
}

/// What the plugin declares, as the host lists it.
pub(super) async fn declared(build: Build) {
    let plugin = build.load().await;
    let resources: Vec<_> = plugin.resources().iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        resources,
        [
            "conformance://greeting",
            "conformance://pixel",
            "conformance://bundle",
            "conformance://request",
            "conformance://broken",
        ],
        "{:?}",
        build.language
    );
    let greeting = &plugin.resources()[0];
    assert_eq!(greeting.name, "greeting");
    assert_eq!(greeting.title.as_deref(), Some("A greeting"));
    assert_eq!(greeting.description.as_deref(), Some("Says hello."));
    assert_eq!(greeting.mime_type.as_deref(), Some("text/plain"));
    assert_eq!(greeting.size, Some(12));
    let broken = &plugin.resources()[4];
    assert_eq!(
        (broken.title.as_ref(), broken.mime_type.as_ref()),
        (None, None)
    );
    assert_eq!(broken.size, None);

    let templates: Vec<_> = plugin
        .resource_templates()
        .map(|t| (t.uri_template.as_str(), t.mime_type.as_deref()))
        .collect();
    assert_eq!(
        templates,
        [
            ("conformance://words/{word}", Some("text/plain")),
            ("conformance://files/{+path}", None),
        ]
    );

    let prompts: Vec<_> = plugin.prompts().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(prompts, ["greet", "show", "many", "refuse"]);
    let greet = &plugin.prompts()[0];
    assert_eq!(greet.title.as_deref(), Some("Greeting"));
    assert_eq!(greet.description, "Greets someone, in a style if given.");
    let arguments: Vec<_> = greet
        .arguments
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.title.as_deref(),
                a.description.as_deref(),
                a.required,
            )
        })
        .collect();
    assert_eq!(
        arguments,
        [
            ("name", None, Some("Who to greet."), true),
            ("style", Some("Style"), Some("How to greet."), false),
        ]
    );
    assert!(plugin.prompts()[1].arguments.is_empty());
}

/// Reads: text and bytes with the declared MIME type, several contents, the
/// request's IDs and caller, a failure, templates' variables, unknown URIs.
pub(super) async fn reads(build: Build) {
    let set = set(build).await;
    let cx = Context::new();
    let read = |uri: &'static str| {
        let (set, cx) = (&set, &cx);
        async move {
            set.read(cx, uri)
                .await
                .unwrap_or_else(|e| panic!("{:?} {uri}: {e}", build.language))
        }
    };
    assert_eq!(
        read("conformance://greeting").await,
        [text("conformance://greeting", "text/plain", "Hello there!")]
    );
    assert_eq!(
        read("conformance://pixel").await,
        [
            ResourceContents::bytes("conformance://pixel", PIXEL_PNG.to_vec())
                .with_mime_type("image/png")
        ]
    );
    assert_eq!(
        read("conformance://bundle").await,
        [
            text("conformance://bundle", "text/plain", "the bundle"),
            text(
                "conformance://bundle/part",
                "application/json",
                "{\"part\": 1}"
            ),
        ]
    );
    assert_eq!(
        read("conformance://words/monday").await,
        [text(
            "conformance://words/monday",
            "text/plain",
            "monday at conformance://words/monday"
        )]
    );
    // `{+path}` matches any text; the variable comes percent-decoded.
    assert_eq!(
        read("conformance://files/notes/a%20b.md").await,
        [text(
            "conformance://files/notes/a%20b.md",
            "text/markdown",
            "notes/a b.md"
        )]
    );

    let principal = Principal::new("https://id.example.com", "ana");
    let asked = Context::new()
        .with_call_id("read-1")
        .with_invocation_id("turn-2")
        .with_identity(Identity {
            principal: Some(Arc::new(principal)),
            ..Identity::default()
        });
    let contents = set.read(&asked, "conformance://request").await.unwrap();
    let Body::Text(request) = &contents[0].body else {
        panic!("{:?}: text, not {contents:?}", build.language);
    };
    assert_eq!(
        serde_json::from_str::<Value>(request).unwrap(),
        json!({
            "call_id": "read-1",
            "invocation_id": "turn-2",
            "uri": "conformance://request",
            "caller": "ana",
        })
    );

    let err = set.read(&cx, "conformance://broken").await.unwrap_err();
    assert!(
        matches!(&err, CallError::Failed { .. })
            && err.to_string().contains("the resource is broken"),
        "{err:?}"
    );
    for unknown in ["conformance://nothing", "conformance://words/a/b"] {
        let err = set.read(&cx, unknown).await.unwrap_err();
        assert!(
            matches!(&err, CallError::UnknownResource { uri } if uri == unknown),
            "{unknown}: {err:?}"
        );
    }
}

/// Gets: arguments, roles and a description; an embedded resource, an
/// image and JSON; a prompt's own refusal; unknown prompts.
pub(super) async fn prompts(build: Build) {
    let set = set(build).await;
    let cx = Context::new();
    let greet = set
        .get_prompt(&cx, "greet", pairs(&[("name", "Ada"), ("style", "formal")]))
        .await
        .unwrap();
    assert_eq!(greet.description.as_deref(), Some("A greeting for Ada"));
    let said: Vec<_> = greet
        .messages
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect();
    assert_eq!(
        said,
        [
            (
                Role::User,
                MessageContent::Part(Part::Text("Greet Ada.".into()))
            ),
            (
                Role::Assistant,
                MessageContent::Part(Part::Text("In a formal style.".into()))
            ),
        ]
    );
    let plain = set
        .get_prompt(&cx, "greet", pairs(&[("name", "Bo")]))
        .await
        .unwrap();
    assert_eq!(plain.messages.len(), 1, "{plain:?}");

    let show = set.get_prompt(&cx, "show", BTreeMap::new()).await.unwrap();
    assert_eq!(show.description, None);
    let said: Vec<_> = show
        .messages
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect();
    assert_eq!(
        said,
        [
            (
                Role::User,
                MessageContent::Resource(text(
                    "conformance://greeting",
                    "text/plain",
                    "Hello there!"
                ))
            ),
            (
                Role::Assistant,
                MessageContent::Part(Part::Blob {
                    kind: MediaKind::Image,
                    mime_type: "image/png".into(),
                    name: None,
                    data: PIXEL_PNG.to_vec(),
                })
            ),
            (
                Role::Assistant,
                MessageContent::Part(Part::Json(json!({"shown": 2})))
            ),
        ]
    );

    let err = set
        .get_prompt(&cx, "refuse", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidArguments { .. })
            && err.to_string().contains("no prompt today"),
        "{err:?}"
    );
    let err = set
        .get_prompt(&cx, "greet", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("name"), "{err}");
    let err = set
        .get_prompt(&cx, "nothing", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownPrompt { .. }), "{err:?}");
}

/// Completions: by prefix with a total, from the context, cut at 100 with
/// more said, and none where the plugin offers none.
pub(super) async fn completions(build: Build) {
    let set = set(build).await;
    let cx = Context::new();
    let none = BTreeMap::new();
    let complete = |target: CompletionRef, argument: &'static str, value: &'static str| {
        let (set, cx, none) = (&set, &cx, &none);
        async move {
            set.complete(cx, &target, argument, value, none)
                .await
                .unwrap_or_else(|e| panic!("{:?} {target:?}: {e}", build.language))
        }
    };
    let words = CompletionRef::Template("conformance://words/{word}".into());
    let words = complete(words, "word", "b").await;
    assert_eq!(words.values, ["beta", "bravo"]);
    assert_eq!((words.total, words.has_more), (Some(2), false));
    let greet = || CompletionRef::Prompt("greet".into());
    assert_eq!(
        complete(greet(), "style", "f").await.values,
        ["formal", "friendly", "funny"]
    );
    let formal = set
        .complete(&cx, &greet(), "name", "", &pairs(&[("style", "formal")]))
        .await
        .unwrap();
    assert_eq!(formal.values, ["Dr. Ada"]);
    assert_eq!(complete(greet(), "name", "").await.values, ["Ada"]);

    let many = complete(CompletionRef::Prompt("many".into()), "value", "").await;
    assert_eq!(many.values.len(), 100);
    assert_eq!(
        (many.values[0].as_str(), many.values[99].as_str()),
        ("v000", "v099")
    );
    assert_eq!((many.total, many.has_more), (None, true));

    for (target, argument) in [
        (CompletionRef::Prompt("show".into()), "anything"),
        (
            CompletionRef::Template("conformance://files/{+path}".into()),
            "path",
        ),
    ] {
        assert_eq!(complete(target, argument, "").await, Completion::default());
    }
}
