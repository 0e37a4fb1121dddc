//! The `summarize` prompt: a user message asking the model to summarize a
//! text in a style (bullet points, a paragraph, a one-line TL;DR), with
//! completions of the style.

use toolhost_guest::{
    Arguments, Catalog, Completion, CompletionRequest, Message, Messages, Prompt, PromptArgument,
    ToolError,
};

/// The prompt's name.
pub const PROMPT: &str = "summarize";

/// The styles `style` takes, and what each asks of the model. The first is
/// the default.
pub const STYLES: [(&str, &str); 3] = [
    (
        "paragraph",
        "Summarize the text below in one short paragraph.",
    ),
    (
        "bullet",
        "Summarize the text below as a few bullet points, one key point each, the most \
         important first.",
    ),
    (
        "tldr",
        "Summarize the text below in one sentence (a TL;DR).",
    ),
];

/// What the plugin offers besides tools.
pub fn catalog() -> Catalog {
    Catalog::new()
        .prompt(
            Prompt::new(
                PROMPT,
                "Asks the model to summarize a text: as a paragraph, bullet points or a one-line TL;DR.",
            )
            .title("Summarize a text")
            .argument(PromptArgument::required("text").description("The text to summarize"))
            .argument(
                PromptArgument::optional("style")
                    .description("paragraph (the default), bullet or tldr"),
            ),
            |_cx, args| summarize(args),
        )
        .complete_prompt(PROMPT, |_cx, request| Ok(complete(request)))
}

/// Fills in the prompt.
///
/// # Errors
///
/// [`ToolError::InvalidArguments`] for a missing `text` or an unknown `style`.
pub fn summarize(args: &Arguments) -> Result<Messages, ToolError> {
    let text = args.require("text")?;
    let style = args.get("style").map_or("", str::trim);
    let (style, ask) = if style.is_empty() {
        STYLES[0]
    } else {
        *STYLES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(style))
            .ok_or_else(|| {
                let names: Vec<&str> = STYLES.iter().map(|(name, _)| *name).collect();
                ToolError::invalid_arguments(format!(
                    "`style` is `{style}`; use one of: {}",
                    names.join(", ")
                ))
            })?
    };
    // The text is set apart, so that what it says reads as material to
    // summarize, not as instructions.
    let message = format!(
        "{ask} Keep to what the text says; add nothing of your own.\n\n<text>\n{text}\n</text>"
    );
    Ok(Messages::new([Message::user(message)]).description(format!("Summarize a text ({style})")))
}

/// Suggests styles for `style` (by prefix, ignoring case); nothing for `text`.
pub fn complete(request: &CompletionRequest) -> Completion {
    match request.argument.as_str() {
        "style" => Completion::matching(
            STYLES.iter().map(|(name, _)| *name),
            &request.value.to_ascii_lowercase(),
        ),
        _ => Completion::default(),
    }
}

#[cfg(test)]
mod tests {
    use toolhost_guest::{MessageContent, Role};

    use super::*;

    fn args(pairs: &[(&str, &str)]) -> Arguments {
        pairs.iter().copied().collect()
    }

    fn text_of(messages: &Messages) -> &str {
        match messages.messages.as_slice() {
            [message] => {
                assert_eq!(message.role, Role::User);
                match &message.content {
                    MessageContent::Part(part) => part.as_text().expect("a text part"),
                    other => panic!("a text message: {other:?}"),
                }
            }
            other => panic!("one message: {other:?}"),
        }
    }

    #[test]
    fn asks_for_the_style_with_the_text_set_apart() {
        let got = summarize(&args(&[("text", "Rust is fast."), ("style", "Bullet")])).unwrap();
        let text = text_of(&got);
        assert!(
            text.starts_with("Summarize the text below as a few bullet points"),
            "{text}"
        );
        assert!(text.ends_with("<text>\nRust is fast.\n</text>"), "{text}");
        assert_eq!(
            got.description.as_deref(),
            Some("Summarize a text (bullet)")
        );
        let default = summarize(&args(&[("text", "x")])).unwrap();
        assert!(text_of(&default).contains("one short paragraph"));
        let tldr = summarize(&args(&[("text", "x"), ("style", " tldr ")])).unwrap();
        assert!(text_of(&tldr).contains("one sentence"));
    }

    #[test]
    fn refuses_an_unknown_style_naming_the_known_ones() {
        let err = summarize(&args(&[("text", "x"), ("style", "haiku")])).unwrap_err();
        assert_eq!(
            err,
            ToolError::InvalidArguments(
                "`style` is `haiku`; use one of: paragraph, bullet, tldr".into()
            )
        );
        assert!(summarize(&args(&[("style", "tldr")])).is_err());
    }

    #[test]
    fn completes_the_style_only() {
        let request =
            |argument: &str, value: &str| CompletionRequest::new(argument, value, Arguments::new());
        assert_eq!(
            complete(&request("style", "")).values,
            ["paragraph", "bullet", "tldr"]
        );
        assert_eq!(complete(&request("style", "B")).values, ["bullet"]);
        assert_eq!(
            complete(&request("style", "x")).values,
            Vec::<String>::new()
        );
        assert_eq!(complete(&request("text", "")), Completion::default());
    }

    #[test]
    fn the_catalog_declares_the_prompt() {
        let catalog = catalog();
        let [prompt] = catalog.prompts().collect::<Vec<_>>()[..] else {
            panic!("one prompt");
        };
        assert_eq!(prompt.name, PROMPT);
        let arguments: Vec<_> = prompt
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect();
        assert_eq!(arguments, [("text", true), ("style", false)]);
    }
}
