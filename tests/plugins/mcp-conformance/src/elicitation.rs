//! The tools that ask their user (MCP elicitation), for the suite's
//! `tools-call-elicitation`, `elicitation-sep1034-defaults` and
//! `elicitation-sep1330-enums` scenarios.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_guest::{Answer, Context, Output, Tool, ToolError};

/// `Elicitation completed: action=…, content={…}`, as the SEP scenarios word it.
fn completed(answer: Answer) -> Output {
    let action = answer.action();
    let content = match answer {
        Answer::Accept(content) => Value::Object(content),
        Answer::Decline | Answer::Cancel => json!({}),
    };
    Output::text(format!(
        "Elicitation completed: action={action}, content={content}"
    ))
}

/// What `test_elicitation` asks.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

pub(crate) struct Elicitation;

impl Tool for Elicitation {
    type Args = ElicitationArgs;
    type Output = Output;
    const NAME: &'static str = "test_elicitation";
    const DESCRIPTION: &'static str = "Asks the user for a username and an email address, and returns their answer (conformance fixture).";

    fn call(args: ElicitationArgs, cx: &Context) -> Result<Output, ToolError> {
        // The form of the suite's (0.1.16) `tools-call-elicitation`, whose
        // client answers `username` and `email`: the host checks the answer
        // against this schema.
        let schema = json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        });
        let answer = cx
            .ask(&args.message, &schema)
            .map_err(|err| ToolError::failed(format!("could not ask the user: {err}")))?;
        Ok(Output::text(match answer {
            Answer::Accept(content) => {
                format!("User response: accepted {}", Value::Object(content))
            }
            Answer::Decline => "User response: declined".to_owned(),
            Answer::Cancel => "User response: cancelled".to_owned(),
        }))
    }
}

pub(crate) struct Sep1034Defaults;

impl Tool for Sep1034Defaults {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_elicitation_sep1034_defaults";
    const DESCRIPTION: &'static str =
        "Asks a form whose every field has a default (SEP-1034; conformance fixture).";

    fn call((): (), cx: &Context) -> Result<Output, ToolError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": true},
            },
        });
        Ok(completed(cx.ask(
            "Please review and update the form fields with defaults",
            &schema,
        )?))
    }
}

pub(crate) struct Sep1330Enums;

impl Tool for Sep1330Enums {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_elicitation_sep1330_enums";
    const DESCRIPTION: &'static str =
        "Asks a form with every kind of enum field (SEP-1330; conformance fixture).";

    fn call((): (), cx: &Context) -> Result<Output, ToolError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ],
                    },
                },
            },
        });
        Ok(completed(cx.ask(
            "Please select options from the enum fields",
            &schema,
        )?))
    }
}
