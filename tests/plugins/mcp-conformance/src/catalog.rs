//! The resources, resource template, prompts and completions the conformance
//! suite's `resources-*`, `prompts-*` and `completion-complete` scenarios read.

use serde_json::json;
use test_shared::PIXEL_PNG;
use toolhost_guest::{
    Catalog, Completion, Contents, Message, Part, Prompt, PromptArgument, Resource,
    ResourceTemplate,
};

/// The template `resources-templates-read` reads as `test://template/123/data`.
const TEMPLATE: &str = "test://template/{id}/data";

/// What the plugin offers besides tools.
pub(crate) fn catalog() -> Catalog {
    Catalog::new()
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource (conformance fixture).")
                .mime_type("text/plain"),
            |_| {
                Ok(Contents::text(
                    "This is the content of the static text resource.",
                ))
            },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource: a 1x1 PNG (conformance fixture).")
                .mime_type("image/png")
                .size(PIXEL_PNG.len() as u64),
            |_| Ok(Contents::bytes(PIXEL_PNG)),
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource")
                .description("A resource clients subscribe to (conformance fixture).")
                .mime_type("text/plain"),
            |_| Ok(Contents::text("This is a watched resource.")),
        )
        .template(
            ResourceTemplate::new(TEMPLATE, "template-data")
                .description("JSON data for an ID (conformance fixture).")
                .mime_type("application/json"),
            |_, read| {
                let id = read.variables.require("id")?;
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(Contents::text(data.to_string()))
            },
        )
        .prompt(
            Prompt::new(
                "test_simple_prompt",
                "A simple prompt without arguments (conformance fixture).",
            ),
            |_, _| Ok(vec![Message::user("This is a simple prompt for testing.")]),
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with two required arguments (conformance fixture).",
            )
            .argument(PromptArgument::required("arg1").description("First test argument"))
            .argument(PromptArgument::required("arg2").description("Second test argument")),
            |_, args| {
                let (arg1, arg2) = (args.require("arg1")?, args.require("arg2")?);
                Ok(vec![Message::user(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                ))])
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource (conformance fixture).",
            )
            .argument(
                PromptArgument::required("resourceUri").description("URI of the resource to embed"),
            ),
            |_, args| {
                let uri = args.require("resourceUri")?;
                Ok(vec![
                    Message::user(
                        Contents::text("Embedded resource content for testing.")
                            .uri(uri)
                            .mime_type("text/plain"),
                    ),
                    Message::user("Please process the embedded resource above."),
                ])
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_image",
                "A prompt with an image (conformance fixture).",
            ),
            |_, _| {
                Ok(vec![
                    Message::user(Part::image("image/png", PIXEL_PNG)),
                    Message::user("Please analyze the image above."),
                ])
            },
        )
        .complete_prompt("test_prompt_with_arguments", |_, request| {
            Ok(match request.argument.as_str() {
                "arg1" | "arg2" => Completion::matching(["paris", "park", "party"], &request.value),
                _ => Completion::default(),
            })
        })
        .complete_template(TEMPLATE, |_, request| {
            Ok(match request.argument.as_str() {
                "id" => Completion::matching(["1", "2", "3"], &request.value),
                _ => Completion::default(),
            })
        })
}
