//! The WIT `catalog` interface over a [`Catalog`]: conversions both ways and
//! the entry points [`export_tools!`](crate::export_tools) calls.

use super::install_panic_hook;
use crate::bindings::toolhost::plugin::types as wit;
use crate::catalog::Target;
use crate::{
    Arguments, Body, Catalog, CompletionRequest, Contents, Context, Message, MessageContent,
    Messages, ResourceRead, Role, ToolError,
};

/// `describe` of the WIT `catalog` interface.
#[doc(hidden)]
pub fn describe(catalog: fn() -> Catalog) -> wit::Catalog {
    install_panic_hook();
    let catalog = catalog();
    wit::Catalog {
        resources: catalog
            .resources()
            .map(|r| wit::ResourceInfo {
                uri: r.uri.clone(),
                name: r.name.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
                size: r.size,
            })
            .collect(),
        templates: catalog
            .templates()
            .map(|t| wit::ResourceTemplateInfo {
                uri_template: t.uri_template.clone(),
                name: t.name.clone(),
                title: t.title.clone(),
                description: t.description.clone(),
                mime_type: t.mime_type.clone(),
            })
            .collect(),
        prompts: catalog
            .prompts()
            .map(|p| wit::PromptInfo {
                name: p.name.clone(),
                title: p.title.clone(),
                description: p.description.clone(),
                arguments: p
                    .arguments
                    .iter()
                    .map(|a| wit::PromptArgument {
                        name: a.name.clone(),
                        title: a.title.clone(),
                        description: a.description.clone(),
                        required: a.required,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// `read-resource` of the WIT `catalog` interface.
#[doc(hidden)]
pub fn read_resource(
    catalog: fn() -> Catalog,
    read: wit::Read,
) -> Result<Vec<wit::ResourceContents>, wit::ToolError> {
    install_panic_hook();
    let cx = context(read.request, &read.uri);
    let request = ResourceRead::new(read.uri, arguments(read.variables));
    let contents = catalog().read(&cx, read.template.as_deref(), &request)?;
    Ok(contents.into_iter().map(resource_contents).collect())
}

/// `get-prompt` of the WIT `catalog` interface.
#[doc(hidden)]
pub fn get_prompt(
    catalog: fn() -> Catalog,
    get: wit::Get,
) -> Result<wit::PromptMessages, wit::ToolError> {
    install_panic_hook();
    let cx = context(get.request, &get.name);
    let messages = catalog().get(&cx, &get.name, &arguments(get.arguments))?;
    Ok(prompt_messages(messages)?)
}

/// `complete` of the WIT `catalog` interface.
#[doc(hidden)]
pub fn complete(
    catalog: fn() -> Catalog,
    complete: wit::CompletionRequest,
) -> Result<wit::Completion, wit::ToolError> {
    install_panic_hook();
    let target = match complete.target {
        wit::CompletionTarget::Prompt(name) => Target::Prompt(name),
        wit::CompletionTarget::Template(template) => Target::Template(template),
    };
    let (Target::Prompt(name) | Target::Template(name)) = &target;
    let cx = context(complete.request, name);
    let request = CompletionRequest::new(
        complete.argument,
        complete.value,
        arguments(complete.context),
    );
    let completion = catalog().complete(&cx, &target, &request)?.capped();
    Ok(wit::Completion {
        values: completion.values,
        total: completion.total,
        has_more: completion.has_more,
    })
}

/// The context of a catalog request: its IDs and caller; `target` is what
/// [`Context::tool`] names.
fn context(request: wit::Request, target: &str) -> Context {
    let cx = Context::new(request.call_id, request.invocation_id, target);
    match request.caller {
        Some(caller) => cx.with_caller(caller.into()),
        None => cx,
    }
}

fn arguments(pairs: Vec<(String, String)>) -> Arguments {
    pairs.into_iter().collect()
}

/// Contents of a read, whose URI the catalog has filled in.
fn resource_contents(contents: Contents) -> wit::ResourceContents {
    wit::ResourceContents {
        uri: contents.uri.unwrap_or_default(),
        mime_type: contents.mime_type,
        body: body(contents.body),
    }
}

fn body(body: Body) -> wit::Body {
    match body {
        Body::Text(text) => wit::Body::Text(text),
        Body::Bytes(bytes) => wit::Body::Bytes(bytes),
    }
}

fn prompt_messages(messages: Messages) -> Result<wit::PromptMessages, ToolError> {
    Ok(wit::PromptMessages {
        description: messages.description,
        messages: messages
            .messages
            .into_iter()
            .map(prompt_message)
            .collect::<Result<_, _>>()?,
    })
}

fn prompt_message(message: Message) -> Result<wit::PromptMessage, ToolError> {
    let content = match message.content {
        MessageContent::Part(part) => wit::MessageContent::Part(part.try_into()?),
        MessageContent::Resource(contents) => {
            let Some(uri) = contents.uri else {
                return Err(ToolError::failed(
                    "a prompt message embeds a resource without a URI (set it with `Contents::uri`)",
                ));
            };
            wit::MessageContent::Resource(wit::ResourceContents {
                uri,
                mime_type: contents.mime_type,
                body: body(contents.body),
            })
        }
    };
    Ok(wit::PromptMessage {
        role: match message.role {
            Role::User => wit::Role::User,
            Role::Assistant => wit::Role::Assistant,
        },
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::{complete, describe, get_prompt, read_resource};
    use crate::bindings::toolhost::plugin::types as wit;
    use crate::{
        Catalog, Completion, Contents, Message, Messages, Part, Prompt, PromptArgument, Resource,
        ResourceTemplate,
    };

    const PNG: [u8; 3] = [0x89, b'P', b'N'];

    fn catalog() -> Catalog {
        Catalog::new()
            .resource(
                Resource::new("test://text", "text")
                    .title("Text")
                    .description("Some text")
                    .mime_type("text/plain")
                    .size(5),
                |_| Ok(Contents::text("hello")),
            )
            .resource(
                Resource::new("test://who", "who").mime_type("text/plain"),
                // What a handler sees of its request.
                |cx| {
                    let caller = cx.caller().map_or("nobody", |c| c.subject.as_str());
                    Ok(Contents::text(format!(
                        "{} {} {} {caller}",
                        cx.call_id(),
                        cx.invocation_id(),
                        cx.tool()
                    )))
                },
            )
            .resource(Resource::new("test://png", "png"), |_| {
                Ok(Contents::bytes(PNG).mime_type("image/png"))
            })
            .template(
                ResourceTemplate::new("test://items/{id}/{+rest}", "items")
                    .mime_type("application/json"),
                |_, read| {
                    let id = read.variables.require("id")?;
                    let rest = read.variables.get("rest").unwrap_or("-");
                    Ok(Contents::text(format!("{} {id} {rest}", read.uri)))
                },
            )
            .prompt(
                Prompt::new("greet", "Greets someone.")
                    .title("Greeting")
                    .argument(PromptArgument::required("name").description("Who"))
                    .argument(PromptArgument::optional("tone")),
                |_, args| {
                    Ok(Messages::new([
                        Message::user(format!("Greet {}.", args.require("name")?)),
                        Message::assistant(Part::image("image/png", PNG)),
                        Message::user(Contents::text("doc").uri("test://text")),
                    ])
                    .description("A greeting"))
                },
            )
            .prompt(
                Prompt::new("broken", "Embeds a resource without a URI."),
                |_, _| Ok(vec![Message::user(Contents::text("lost"))]),
            )
            .complete_prompt("greet", |cx, request| {
                let names = match request.argument.as_str() {
                    "name" => vec!["ada", "alan", "grace"],
                    _ => vec![cx.tool()],
                };
                Ok(Completion::matching(names, &request.value))
            })
            .complete_template("test://items/{id}/{+rest}", |_, request| {
                let context = request.context.get("rest").unwrap_or("");
                Ok(Completion::new((0..150).map(|i| format!("{context}{i}"))).total(150))
            })
    }

    fn request() -> wit::Request {
        wit::Request {
            call_id: "call-1".into(),
            invocation_id: "inv-1".into(),
            caller: None,
        }
    }

    fn read(uri: &str, template: Option<&str>, variables: &[(&str, &str)]) -> wit::Read {
        wit::Read {
            request: request(),
            uri: uri.into(),
            template: template.map(Into::into),
            variables: pairs(variables),
        }
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn text(contents: &[wit::ResourceContents]) -> &str {
        match contents {
            [
                wit::ResourceContents {
                    body: wit::Body::Text(text),
                    ..
                },
            ] => text,
            other => panic!("not one text: {other:?}"),
        }
    }

    #[test]
    fn describe_lists_everything_declared() {
        let described = describe(catalog);
        let uris: Vec<_> = described.resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["test://text", "test://who", "test://png"]);
        let text = &described.resources[0];
        assert_eq!(
            (
                text.name.as_str(),
                text.title.as_deref(),
                text.description.as_deref()
            ),
            ("text", Some("Text"), Some("Some text"))
        );
        assert_eq!(
            (text.mime_type.as_deref(), text.size),
            (Some("text/plain"), Some(5))
        );
        let [template] = described.templates.as_slice() else {
            panic!("one template: {:?}", described.templates);
        };
        assert_eq!(template.uri_template, "test://items/{id}/{+rest}");
        assert_eq!(template.mime_type.as_deref(), Some("application/json"));
        let greet = &described.prompts[0];
        assert_eq!(
            (
                greet.name.as_str(),
                greet.title.as_deref(),
                greet.description.as_str()
            ),
            ("greet", Some("Greeting"), "Greets someone.")
        );
        let args: Vec<_> = greet
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.description.as_deref(), a.required))
            .collect();
        assert_eq!(args, [("name", Some("Who"), true), ("tone", None, false)]);

        let empty = describe(Catalog::new);
        assert!(
            empty.resources.is_empty() && empty.templates.is_empty() && empty.prompts.is_empty()
        );
    }

    #[test]
    fn reads_dispatch_by_uri_and_fill_in_uri_and_mime_type() {
        let contents = read_resource(catalog, read("test://text", None, &[])).expect("reads");
        assert_eq!(text(&contents), "hello");
        assert_eq!(contents[0].uri, "test://text");
        assert_eq!(contents[0].mime_type.as_deref(), Some("text/plain"));

        let contents = read_resource(catalog, read("test://png", None, &[])).expect("reads");
        assert!(matches!(
            contents.as_slice(),
            [wit::ResourceContents { body: wit::Body::Bytes(b), mime_type: Some(m), .. }]
                if b == &PNG && m == "image/png"
        ));
    }

    #[test]
    fn handlers_see_the_request_ids_and_caller() {
        let contents = read_resource(catalog, read("test://who", None, &[])).expect("reads");
        assert_eq!(text(&contents), "call-1 inv-1 test://who nobody");
        let mut with_caller = read("test://who", None, &[]);
        with_caller.request.caller = Some(wit::Caller {
            issuer: "https://issuer".into(),
            subject: "ada".into(),
            scopes: vec![],
            claims: "{}".into(),
        });
        let contents = read_resource(catalog, with_caller).expect("reads");
        assert_eq!(text(&contents), "call-1 inv-1 test://who ada");
    }

    #[test]
    fn template_reads_get_the_uri_and_variables() {
        let template = Some("test://items/{id}/{+rest}");
        let uri = "test://items/7/a/b";
        let contents = read_resource(
            catalog,
            read(uri, template, &[("id", "7"), ("rest", "a/b")]),
        );
        let contents = contents.expect("reads");
        assert_eq!(text(&contents), "test://items/7/a/b 7 a/b");
        assert_eq!(contents[0].uri, uri);
        assert_eq!(contents[0].mime_type.as_deref(), Some("application/json"));
        // A variable the handler requires but the host did not pass.
        assert!(matches!(
            read_resource(catalog, read(uri, template, &[])),
            Err(wit::ToolError::InvalidArguments(m)) if m.contains("id")
        ));
    }

    #[test]
    fn unknown_uris_and_prompts_are_unknown_tools() {
        assert!(matches!(
            read_resource(catalog, read("test://nope", None, &[])),
            Err(wit::ToolError::UnknownTool(uri)) if uri == "test://nope"
        ));
        assert!(matches!(
            read_resource(catalog, read("test://x", Some("test://{nope}"), &[])),
            Err(wit::ToolError::UnknownTool(uri)) if uri == "test://x"
        ));
        let get = wit::Get {
            request: request(),
            name: "nope".into(),
            arguments: vec![],
        };
        assert!(matches!(
            get_prompt(catalog, get),
            Err(wit::ToolError::UnknownTool(name)) if name == "nope"
        ));
        let request = completion(wit::CompletionTarget::Prompt("nope".into()), "a", "", &[]);
        assert!(matches!(
            complete(catalog, request),
            Err(wit::ToolError::UnknownTool(name)) if name == "nope"
        ));
    }

    #[test]
    fn prompts_convert_every_kind_of_message() {
        let get = wit::Get {
            request: request(),
            name: "greet".into(),
            arguments: pairs(&[("name", "Ada")]),
        };
        let got = get_prompt(catalog, get).expect("fills in");
        assert_eq!(got.description.as_deref(), Some("A greeting"));
        let [first, second, third] = got.messages.as_slice() else {
            panic!("three messages: {:?}", got.messages);
        };
        assert!(matches!(
            (first.role, &first.content),
            (wit::Role::User, wit::MessageContent::Part(wit::Part::Text(t))) if t == "Greet Ada."
        ));
        assert!(matches!(
            (second.role, &second.content),
            (wit::Role::Assistant, wit::MessageContent::Part(wit::Part::Blob(b)))
                if b.mime_type == "image/png" && b.data == PNG
        ));
        assert!(matches!(
            &third.content,
            wit::MessageContent::Resource(wit::ResourceContents { uri, body: wit::Body::Text(t), .. })
                if uri == "test://text" && t == "doc"
        ));
        let broken = wit::Get {
            request: request(),
            name: "broken".into(),
            arguments: vec![],
        };
        assert!(matches!(
            get_prompt(catalog, broken),
            Err(wit::ToolError::Failed(m)) if m.contains("without a URI")
        ));
    }

    fn completion(
        target: wit::CompletionTarget,
        argument: &str,
        value: &str,
        context: &[(&str, &str)],
    ) -> wit::CompletionRequest {
        wit::CompletionRequest {
            request: request(),
            target,
            argument: argument.into(),
            value: value.into(),
            context: pairs(context),
        }
    }

    #[test]
    fn completions_dispatch_by_target_and_are_capped() {
        let prompt = || wit::CompletionTarget::Prompt("greet".into());
        let names = complete(catalog, completion(prompt(), "name", "a", &[])).expect("completes");
        assert_eq!(names.values, ["ada", "alan"]);
        assert_eq!((names.total, names.has_more), (Some(2), false));
        let other = complete(catalog, completion(prompt(), "tone", "", &[])).expect("completes");
        assert_eq!(other.values, ["greet"]);

        let template = wit::CompletionTarget::Template("test://items/{id}/{+rest}".into());
        let ids = complete(catalog, completion(template, "id", "", &[("rest", "r")]));
        let ids = ids.expect("completes");
        assert_eq!(ids.values.len(), 100);
        assert_eq!(ids.values[0], "r0");
        assert_eq!((ids.total, ids.has_more), (Some(150), true));
    }
}
