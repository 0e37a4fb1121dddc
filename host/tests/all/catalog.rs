//! The catalog beyond tools: resources, resource templates and prompts served
//! natively next to a real plugin's tools, through every layer, and judged
//! by the same filter rules as tools.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use toolhost::catalog::{
    Body, Kind, PromptArgument, PromptMessage, PromptMessages, PromptSpec, ResourceContents,
    ResourceSpec, ResourceTemplateSpec,
};
use toolhost::toolset::{
    Aliases, BoxFuture, Confirm, Filter, Identity, OnUnknown, Predicate, Prompt, Resource,
    ResourceTemplate, SinglePlugin, ToolAliases, WithMiddleware,
};
use toolhost::{CallError, Config, Context, McpServer, Tool, Toolset, ToolsetExt};
use toolhost_test_plugins::ECHO;

use crate::plugin;

/// A note: a resource whose content is its text.
struct Note {
    spec: ResourceSpec,
    text: String,
}

impl Resource for Note {
    fn spec(&self) -> &ResourceSpec {
        &self.spec
    }

    fn read<'a>(
        &'a self,
        _cx: &'a Context,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, CallError>> {
        Box::pin(async move {
            Ok(vec![
                ResourceContents::text(&self.spec.uri, &self.text).with_mime_type("text/plain"),
            ])
        })
    }
}

fn note(uri: &str, name: &str, text: &str) -> Arc<dyn Resource> {
    let mut spec = ResourceSpec::new(uri, name);
    spec.plugin = Some("notes".into());
    Arc::new(Note {
        spec,
        text: text.into(),
    })
}

/// `notes:///day/{day}`: one note a day, made on demand.
struct Days {
    spec: ResourceTemplateSpec,
}

impl ResourceTemplate for Days {
    fn spec(&self) -> &ResourceTemplateSpec {
        &self.spec
    }

    fn resolve(&self, _cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        let day = uri.strip_prefix("notes:///day/")?;
        (!day.is_empty() && !day.contains('/'))
            .then(|| note(uri, &self.spec.name, &format!("Notes of {day}.")))
    }
}

/// `summarize`: asks the model to summarize a text, in a style.
struct Summarize {
    spec: PromptSpec,
}

impl Prompt for Summarize {
    fn spec(&self) -> &PromptSpec {
        &self.spec
    }

    fn get<'a>(
        &'a self,
        _cx: &'a Context,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<PromptMessages, CallError>> {
        Box::pin(async move {
            let style = arguments.get("style").map_or("plain", String::as_str);
            Ok(PromptMessages::new(vec![PromptMessage::user(format!(
                "Summarize, {style}: {}",
                arguments["text"]
            ))]))
        })
    }
}

/// A real plugin's tools, with notes, a template and a prompt of a "plugin"
/// named `notes`.
struct Notes {
    plugin: SinglePlugin,
    resources: Vec<Arc<dyn Resource>>,
    templates: Vec<Arc<dyn ResourceTemplate>>,
    prompts: Vec<Arc<dyn Prompt>>,
}

impl Notes {
    async fn new() -> Self {
        let mut days = ResourceTemplateSpec::new("notes:///day/{day}", "day");
        days.plugin = Some("notes".into());
        let mut summarize = PromptSpec::new("summarize", "Summarizes a text.");
        summarize.plugin = Some("notes".into());
        summarize.arguments = vec![
            PromptArgument::required("text"),
            PromptArgument::optional("style").described("plain or bullets"),
        ];
        Self {
            plugin: SinglePlugin::new(plugin(ECHO).await),
            resources: vec![
                note("notes:///today", "today", "Buy milk."),
                note("notes:///secret", "secret", "The code is 1234."),
            ],
            templates: vec![Arc::new(Days { spec: days })],
            prompts: vec![Arc::new(Summarize { spec: summarize })],
        }
    }
}

impl Toolset for Notes {
    fn name(&self) -> &str {
        "notes"
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.plugin.tools(cx)
    }

    fn kinds(&self) -> toolhost::catalog::Kinds {
        toolhost::catalog::Kinds::TOOLS
            .with(Kind::Resource)
            .with(Kind::ResourceTemplate)
            .with(Kind::Prompt)
    }

    fn resources(&self, _cx: &Context) -> Vec<Arc<dyn Resource>> {
        self.resources.clone()
    }

    fn resource_templates(&self, _cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        self.templates.clone()
    }

    fn prompts(&self, _cx: &Context) -> Vec<Arc<dyn Prompt>> {
        self.prompts.clone()
    }
}

/// What `set` lists to `cx`, each kind's names (URIs for resources).
fn listing(set: &(impl Toolset + ?Sized), cx: &Context) -> [Vec<String>; 3] {
    [
        set.resources(cx)
            .iter()
            .map(|r| r.spec().uri.clone())
            .collect(),
        set.resource_templates(cx)
            .iter()
            .map(|t| t.spec().uri_template.clone())
            .collect(),
        set.prompts(cx)
            .iter()
            .map(|p| p.spec().name.clone())
            .collect(),
    ]
}

async fn text_at(
    set: &(impl Toolset + ?Sized),
    cx: &Context,
    uri: &str,
) -> Result<String, CallError> {
    let contents = set.read(cx, uri).await?;
    assert_eq!(contents.len(), 1, "{contents:?}");
    assert_eq!(contents[0].uri, uri);
    match &contents[0].body {
        Body::Text(text) => Ok(text.clone()),
        other => panic!("text expected, got {other:?}"),
    }
}

fn arguments(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn resources_templates_and_prompts_are_listed_read_and_got() {
    let set = Notes::new().await;
    let cx = Context::new();
    assert_eq!(
        listing(&set, &cx),
        [
            vec!["notes:///today".to_owned(), "notes:///secret".to_owned()],
            vec!["notes:///day/{day}".to_owned()],
            vec!["summarize".to_owned()],
        ]
    );
    assert_eq!(
        text_at(&set, &cx, "notes:///today").await.unwrap(),
        "Buy milk."
    );
    // A URI no resource is at, made by the template.
    assert_eq!(
        text_at(&set, &cx, "notes:///day/monday").await.unwrap(),
        "Notes of monday."
    );
    match set.read(&cx, "notes:///day/").await {
        Err(CallError::UnknownResource { uri }) => assert_eq!(uri, "notes:///day/"),
        other => panic!("no resource is there: {other:?}"),
    }

    let got = set
        .get_prompt(&cx, "summarize", arguments(&[("text", "A long text.")]))
        .await
        .unwrap();
    assert_eq!(
        got.messages,
        [PromptMessage::user("Summarize, plain: A long text.")]
    );
    // Its qualified name reaches it too, as for tools.
    let got = set
        .get_prompt(
            &cx,
            "notes.summarize",
            arguments(&[("text", "x"), ("style", "bullets")]),
        )
        .await
        .unwrap();
    assert_eq!(got.messages, [PromptMessage::user("Summarize, bullets: x")]);
    // The host checks the arguments before the prompt sees them.
    match set
        .get_prompt(&cx, "summarize", arguments(&[("tone", "dry")]))
        .await
    {
        Err(CallError::InvalidArguments { tool, problems }) => {
            assert_eq!(tool, "summarize");
            assert_eq!(
                problems,
                [
                    "missing required argument `text`",
                    "no argument named `tone`"
                ]
            );
        }
        other => panic!("the arguments are refused: {other:?}"),
    }
    match set.get_prompt(&cx, "translate", BTreeMap::new()).await {
        Err(CallError::UnknownPrompt { prompt, available }) => {
            assert_eq!(prompt, "translate");
            assert_eq!(available, ["summarize"]);
        }
        other => panic!("no such prompt: {other:?}"),
    }
}

#[tokio::test]
async fn filter_rules_judge_every_kind_of_item() {
    let cx = Context::new();
    // By name: a resource's URI or name, a template's name, a prompt's name.
    let set = Filter::new(
        Notes::new().await,
        Predicate::deny(["notes:///secret", "day", "summarize"]),
    );
    assert_eq!(
        listing(&set, &cx),
        [vec!["notes:///today".to_owned()], vec![], vec![]]
    );
    // Hidden means unknown: the same answer as for a URI nothing is at.
    match set.read(&cx, "notes:///secret").await {
        Err(CallError::UnknownResource { uri }) => assert_eq!(uri, "notes:///secret"),
        other => panic!("the hidden resource is unknown: {other:?}"),
    }
    // What a hidden template makes is hidden with it.
    assert!(matches!(
        set.read(&cx, "notes:///day/monday").await,
        Err(CallError::UnknownResource { .. })
    ));
    match set
        .get_prompt(&cx, "summarize", arguments(&[("text", "x")]))
        .await
    {
        Err(CallError::UnknownPrompt { available, .. }) => assert!(available.is_empty()),
        other => panic!("the hidden prompt is unknown: {other:?}"),
    }
    assert_eq!(
        text_at(&set, &cx, "notes:///today").await.unwrap(),
        "Buy milk."
    );

    // By plugin: `notes.*` hides the plugin's items of every kind, and
    // leaves the echo plugin's tools.
    let set = Filter::new(Notes::new().await, !Predicate::glob(["notes.*"]));
    assert!(listing(&set, &cx).iter().all(Vec::is_empty));
    assert!(set.tools(&cx).iter().any(|t| t.spec().name == "echo"));

    // By kind and role: prompts for everyone, the rest for admins.
    let set = Filter::new(
        Notes::new().await,
        Predicate::kind(Kind::Prompt).or(Predicate::role("admin")),
    );
    assert_eq!(
        listing(&set, &cx),
        [vec![], vec![], vec!["summarize".to_owned()]]
    );
    assert!(set.tools(&cx).is_empty());
    let mut admin = Identity::default();
    admin.roles.insert("admin".into());
    let admin = Context::new().with_identity(admin);
    assert_eq!(listing(&set, &admin)[0].len(), 2);
    assert_eq!(
        text_at(&set, &admin, "notes:///day/friday").await.unwrap(),
        "Notes of friday."
    );
    // The set still says what it may offer: listing is per context.
    assert!(set.kinds().contains(Kind::Resource));
}

#[tokio::test]
async fn the_configuration_filter_hides_resources_and_prompts_too() {
    let config = Config::parse(
        "[filter]\ndeny = [\"notes:///secret\", \"summari*\"]\n",
        Path::new("toolhost.toml"),
    )
    .unwrap();
    let set = config.layered(Notes::new().await).unwrap();
    let cx = Context::new();
    assert_eq!(
        listing(&set, &cx),
        [
            vec!["notes:///today".to_owned()],
            vec!["notes:///day/{day}".to_owned()],
            vec![],
        ]
    );
    assert!(set.read(&cx, "notes:///secret").await.is_err());
    assert!(set.kinds().contains(Kind::Prompt));
}

#[tokio::test]
async fn layers_that_change_tools_pass_the_rest_of_the_catalog_on() {
    let cx = Context::new();
    let whole = listing(&Notes::new().await, &cx);
    let confirmed = Confirm::new(Notes::new().await).require_all();
    let aliased = Aliases::new(
        Notes::new().await,
        [("echo", ToolAliases::new().name("say"))],
    )
    .unwrap();
    let unknown = OnUnknown::new(Notes::new().await, |_, _, _| None);
    let wrapped = WithMiddleware::new(Notes::new().await, Vec::new());
    let shared: Arc<dyn Toolset> = Arc::new(Notes::new().await);
    let boxed: Box<dyn Toolset> = Box::new(Notes::new().await);
    let sets: [(&str, &dyn Toolset); 6] = [
        ("confirm", &confirmed),
        ("aliases", &aliased),
        ("on-unknown", &unknown),
        ("middleware", &wrapped),
        ("arc", &shared),
        ("box", &boxed),
    ];
    for (layer, set) in sets {
        assert_eq!(listing(set, &cx), whole, "{layer}");
        assert!(set.kinds().contains(Kind::ResourceTemplate), "{layer}");
        assert_eq!(
            text_at(set, &cx, "notes:///day/sunday").await.unwrap(),
            "Notes of sunday.",
            "{layer}"
        );
        let got = set
            .get_prompt(&cx, "summarize", arguments(&[("text", "t")]))
            .await
            .unwrap();
        assert_eq!(got.messages.len(), 1, "{layer}");
    }
}

/// A JSON-RPC client of an MCP server served over an in-memory pipe.
struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    next_id: u64,
    serving: tokio::task::JoinHandle<Result<(), toolhost::mcp::McpError>>,
}

impl Client {
    /// Serves `set` and initializes a 2025-11-25 session; the server's
    /// capabilities.
    async fn start(set: impl Toolset + 'static) -> (Self, Value) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(McpServer::new(set).serve_io(server_read, server_write));
        let (read, write) = tokio::io::split(client);
        let mut client = Self {
            write,
            lines: BufReader::new(read).lines(),
            next_id: 0,
            serving,
        };
        let answer = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}),
            )
            .await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        let capabilities = answer["result"]["capabilities"].clone();
        (client, capabilities)
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// The whole answer (`result` or `error`) to one request.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let line = self.lines.next_line().await.unwrap().expect("an answer");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == id {
                    break message;
                }
            }
        })
        .await
        .expect("the request is answered")
    }

    async fn stop(mut self) {
        self.write.shutdown().await.unwrap();
        drop(self.write);
        drop(self.lines);
        tokio::time::timeout(Duration::from_secs(30), self.serving)
            .await
            .expect("the session ends at the end of input")
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn an_mcp_server_serves_the_catalog_it_is_given() {
    let set = Filter::new(Notes::new().await, Predicate::deny(["notes:///secret"]));
    let (mut client, capabilities) = Client::start(set).await;
    assert!(capabilities["resources"].is_object(), "{capabilities}");
    assert!(capabilities["prompts"].is_object(), "{capabilities}");
    assert!(capabilities["tools"].is_object(), "{capabilities}");

    let listed = client.request("resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"],
        json!([{"uri": "notes:///today", "name": "today"}]),
        "{listed}"
    );
    let templates = client.request("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{"uriTemplate": "notes:///day/{day}", "name": "day"}]),
        "{templates}"
    );
    let read = client
        .request("resources/read", json!({"uri": "notes:///day/tuesday"}))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "notes:///day/tuesday", "mimeType": "text/plain",
            "text": "Notes of tuesday."}]),
        "{read}"
    );
    // Hidden is not found, with the URI, as the specification's -32002.
    let hidden = client
        .request("resources/read", json!({"uri": "notes:///secret"}))
        .await;
    assert_eq!(hidden["error"]["code"], -32002, "{hidden}");
    assert_eq!(
        hidden["error"]["data"]["uri"], "notes:///secret",
        "{hidden}"
    );

    let prompts = client.request("prompts/list", json!({})).await;
    assert_eq!(
        prompts["result"]["prompts"],
        json!([{"name": "summarize", "description": "Summarizes a text.", "arguments": [
            {"name": "text", "required": true},
            {"name": "style", "description": "plain or bullets", "required": false},
        ]}]),
        "{prompts}"
    );
    let got = client
        .request(
            "prompts/get",
            json!({"name": "summarize", "arguments": {"text": "Long.", "style": "bullets"}}),
        )
        .await;
    assert_eq!(
        got["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Summarize, bullets: Long."}}]),
        "{got}"
    );
    for (params, says) in [
        (
            json!({"name": "summarize", "arguments": {}}),
            "missing required argument `text`",
        ),
        (
            json!({"name": "summarize", "arguments": {"text": 1}}),
            "is not a string",
        ),
        (json!({"name": "translate"}), "no prompt named `translate`"),
    ] {
        let refused = client.request("prompts/get", params).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{refused}");
    }
    client.stop().await;
}

#[tokio::test]
async fn a_server_of_tools_alone_serves_no_resources_or_prompts() {
    let (mut client, capabilities) = Client::start(SinglePlugin::new(plugin(ECHO).await)).await;
    assert!(capabilities.get("resources").is_none(), "{capabilities}");
    assert!(capabilities.get("prompts").is_none(), "{capabilities}");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let answer = client.request(method, json!({})).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    let answer = client
        .request("resources/read", json!({"uri": "notes:///today"}))
        .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer = client
        .request("prompts/get", json!({"name": "summarize"}))
        .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    client.stop().await;
}
