//! The conformance plugin's catalog in Rust, the same as every language's:
//! resources (text, bytes, several contents, the request's IDs, a failure),
//! templates (`{name}` and `{+name}`), prompts (arguments, roles, an embedded
//! resource, an image, JSON, a description, a refusal) and completions (by
//! prefix, from the context, past the cap). `host/tests/all/conformance/catalog.rs`
//! states what each must do; `tests/plugins/conformance-c/catalog.c` is the C one.

use serde_json::json;
use test_shared::PIXEL_PNG;
use toolhost_guest::{
    Catalog, Completion, CompletionRequest, Contents, Context, Message, Messages, Part, Prompt,
    PromptArgument, Resource, ResourceRead, ResourceTemplate, ToolError,
};

pub(crate) fn catalog() -> Catalog {
    Catalog::new()
        .resource(
            Resource::new("conformance://greeting", "greeting")
                .title("A greeting")
                .description("Says hello.")
                .mime_type("text/plain")
                .size(12),
            // No MIME type: the declared one.
            |_| Ok(Contents::text("Hello there!")),
        )
        .resource(
            Resource::new("conformance://pixel", "pixel")
                .mime_type("image/png")
                .size(PIXEL_PNG.len() as u64),
            |_| Ok(Contents::bytes(PIXEL_PNG)),
        )
        .resource(
            Resource::new("conformance://bundle", "bundle").mime_type("text/plain"),
            // The resource read, then a sub-resource with a type of its own.
            |_| {
                Ok(vec![
                    Contents::text("the bundle"),
                    Contents::text("{\"part\": 1}")
                        .uri("conformance://bundle/part")
                        .mime_type("application/json"),
                ])
            },
        )
        .resource(
            Resource::new("conformance://request", "request").mime_type("application/json"),
            request,
        )
        .resource(Resource::new("conformance://broken", "broken"), |_| {
            Err::<Contents, _>(ToolError::failed("the resource is broken"))
        })
        .template(
            ResourceTemplate::new("conformance://words/{word}", "words")
                .description("A word, and where it was read.")
                .mime_type("text/plain"),
            word,
        )
        .complete_template("conformance://words/{word}", words)
        .template(
            ResourceTemplate::new("conformance://files/{+path}", "files"),
            // A MIME type of its own, where the template declares none.
            |_, read| {
                let path = read.variables.get("path").unwrap_or("?");
                Ok(Contents::text(path).mime_type("text/markdown"))
            },
        )
        .prompt(
            Prompt::new("greet", "Greets someone, in a style if given.")
                .title("Greeting")
                .argument(PromptArgument::required("name").description("Who to greet."))
                .argument(
                    PromptArgument::optional("style")
                        .title("Style")
                        .description("How to greet."),
                ),
            |_, args| {
                let name = args.get("name").unwrap_or("?");
                let mut messages = vec![Message::user(format!("Greet {name}."))];
                if let Some(style) = args.get("style") {
                    messages.push(Message::assistant(format!("In a {style} style.")));
                }
                Ok(Messages::new(messages).description(format!("A greeting for {name}")))
            },
        )
        .complete_prompt("greet", greet_completions)
        .prompt(
            Prompt::new("show", "Shows a resource and an image."),
            |_, _| {
                Ok(vec![
                    Message::user(
                        Contents::text("Hello there!")
                            .uri("conformance://greeting")
                            .mime_type("text/plain"),
                    ),
                    Message::assistant(Part::image("image/png", PIXEL_PNG)),
                    Message::assistant(Part::json(json!({"shown": 2}))),
                ])
            },
        )
        .prompt(
            Prompt::new("many", "Offers more values than a completion serves.")
                .argument(PromptArgument::optional("value")),
            |_, args| {
                let value = args.get("value").unwrap_or("?");
                Ok(vec![Message::user(format!("Pick {value}."))])
            },
        )
        .complete_prompt("many", |_, _| {
            Ok(Completion::new((0..150).map(|i| format!("v{i:03}"))))
        })
        .prompt(Prompt::new("refuse", "Always refuses."), |_, _| {
            Err::<Vec<Message>, _>(ToolError::invalid_arguments("no prompt today"))
        })
}

/// The request's IDs, the URI read and the caller's subject, as JSON.
fn request(cx: &Context) -> Result<Contents, ToolError> {
    let out = json!({
        "call_id": cx.call_id(),
        "invocation_id": cx.invocation_id(),
        "uri": cx.tool(),
        "caller": cx.caller().map(|caller| caller.subject.as_str()),
    });
    Ok(Contents::text(out.to_string()))
}

fn word(_cx: &Context, read: &ResourceRead) -> Result<Contents, ToolError> {
    let word = read.variables.get("word").unwrap_or("?");
    Ok(Contents::text(format!("{word} at {}", read.uri)))
}

fn words(_cx: &Context, request: &CompletionRequest) -> Result<Completion, ToolError> {
    if request.argument != "word" {
        let message = format!("no variable `{}`", request.argument);
        return Err(ToolError::invalid_arguments(message));
    }
    Ok(Completion::matching(
        ["alpha", "beta", "bravo"],
        &request.value,
    ))
}

fn greet_completions(_cx: &Context, request: &CompletionRequest) -> Result<Completion, ToolError> {
    Ok(if request.argument == "style" {
        Completion::matching(["formal", "friendly", "funny"], &request.value)
    } else if request.context.get("style") == Some("formal") {
        Completion::new(["Dr. Ada"])
    } else {
        Completion::new(["Ada"])
    })
}
