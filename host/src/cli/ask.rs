//! A running tool's questions (`host.ask`) on the terminal: who asks and
//! what, each field of the form (choices, defaults, numbers, yes/no), then
//! accept, decline or cancel. Without a terminal `toolhost call` gives its
//! tools no asker, and a tool that asks hears that nobody can be asked.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Number, Value, json};
use toolhost::escape_control;
use toolhost::schema::Schema;
use toolhost::tool::{Answer, AskError, Asker, Question};

/// An asker that asks on the terminal (stdin, when it is one; the
/// questions go to stderr), or `None` when stdin is not a terminal.
pub(super) fn terminal() -> Option<Asker> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    // One question on the terminal at a time, even if a tool that stopped
    // waiting (its deadline) asks again while the last one is on screen.
    let turn = Arc::new(Mutex::new(()));
    Some(Asker::new(move |question| {
        let turn = Arc::clone(&turn);
        let (answer, answered) = tokio::sync::oneshot::channel();
        // A thread of its own rather than `spawn_blocking`: a read blocked on
        // a terminal nobody answers must not keep the process from exiting
        // once the call has ended without the answer.
        let started = std::thread::Builder::new()
            .name("toolhost-ask".into())
            .spawn(move || {
                let _turn = turn.lock().unwrap_or_else(PoisonError::into_inner);
                if answer.is_closed() {
                    return;
                }
                let asked = ask_on(
                    &question,
                    &mut std::io::stdin().lock(),
                    &mut std::io::stderr(),
                );
                let _ = answer.send(asked);
            })
            .map(drop)
            .map_err(|e| e.to_string());
        Box::pin(async move {
            if let Err(why) = started {
                return Err(AskError::Unavailable(format!(
                    "cannot ask on the terminal: {why}"
                )));
            }
            match answered.await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(err)) => Err(AskError::Unavailable(format!(
                    "the terminal could not be read: {err}"
                ))),
                Err(_) => Err(AskError::Unavailable("the terminal was not asked".into())),
            }
        })
    }))
}

/// Asks `question` on `output`, reading the answers from `input` one line
/// each: every field of the form in turn (an invalid answer is explained
/// and asked again), then whether to send the answer. The end of input
/// cancels.
fn ask_on(
    question: &Question,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<Answer> {
    writeln!(
        output,
        "\ntoolhost: `{}` asks: {}",
        escape_control(&question.asked_by),
        escape_control(&question.message)
    )?;
    let fields = fields(&question.schema);
    if !fields.is_empty() {
        writeln!(
            output,
            "(Enter takes the default or leaves an optional field out; Ctrl-D cancels.)"
        )?;
    }
    let mut content = Map::new();
    for field in &fields {
        field.introduce(output)?;
        loop {
            write!(output, "  {}: ", field.hint())?;
            output.flush()?;
            let Some(line) = read_line(input)? else {
                writeln!(output)?;
                return Ok(Answer::Cancel);
            };
            match field.parse(&line) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(why) => writeln!(output, "  {}", escape_control(&why))?,
            }
        }
    }
    loop {
        write!(output, "Send this answer? [A]ccept, [d]ecline, [c]ancel: ")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            writeln!(output)?;
            return Ok(Answer::Cancel);
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "" | "a" | "accept" | "y" | "yes" => return Ok(Answer::Accept(content)),
            "d" | "decline" | "n" | "no" => return Ok(Answer::Decline),
            "c" | "cancel" => return Ok(Answer::Cancel),
            _ => writeln!(output, "  a, d or c")?,
        }
    }
}

/// One line of `input` without its line ending; `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let end = line.trim_end_matches(['\n', '\r']).len();
    line.truncate(end);
    Ok(Some(line))
}

/// What a field takes.
#[derive(Debug)]
enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these (a string `enum`, or `oneOf` of `const`s).
    One(Vec<Choice>),
    /// Any of these (an array of enumerated strings).
    Many(Vec<Choice>),
}

/// One value of an enumerated field, with its title if it has one.
#[derive(Debug)]
struct Choice {
    value: String,
    title: Option<String>,
}

/// One field of a form.
struct Field {
    name: String,
    property: Map<String, Value>,
    required: bool,
    kind: Kind,
    /// The field's own schema, to check an answer as soon as it is typed
    /// (the host checks the whole answer again).
    schema: Option<Schema>,
}

/// The fields of a (checked, flat) form, in the order the form gives them.
fn fields(form: &Map<String, Value>) -> Vec<Field> {
    let required: Vec<&str> = form
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = form.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let property = property.as_object().cloned().unwrap_or_default();
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("number") => Kind::Number,
                Some("integer") => Kind::Integer,
                Some("boolean") => Kind::Boolean,
                Some("array") => Kind::Many(
                    property
                        .get("items")
                        .and_then(Value::as_object)
                        .map(choices)
                        .unwrap_or_default(),
                ),
                _ => match choices(&property) {
                    choices if choices.is_empty() => Kind::Text,
                    choices => Kind::One(choices),
                },
            };
            let schema = Schema::input_value(json!({
                "type": "object",
                "properties": {name.clone(): Value::Object(property.clone())},
            }))
            .ok();
            Field {
                name: name.clone(),
                required: required.contains(&name.as_str()),
                property,
                kind,
                schema,
            }
        })
        .collect()
}

/// The values a schema enumerates: `enum` (titled by a legacy `enumNames`
/// when it has one per value), or `oneOf`/`anyOf` of `const` and `title`.
fn choices(schema: &Map<String, Value>) -> Vec<Choice> {
    let strings = |key: &str| -> Vec<String> {
        schema
            .get(key)
            .and_then(Value::as_array)
            .map(|values| {
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let values = strings("enum");
    if !values.is_empty() {
        let titles = strings("enumNames");
        let titled = titles.len() == values.len();
        return values
            .into_iter()
            .enumerate()
            .map(|(i, value)| Choice {
                value,
                title: titled.then(|| titles[i].clone()),
            })
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| {
            Some(Choice {
                value: option.get("const")?.as_str()?.to_owned(),
                title: option
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            })
        })
        .collect()
}

impl Field {
    /// The field's name, title, description and choices.
    fn introduce(&self, output: &mut impl Write) -> std::io::Result<()> {
        let text = |key: &str| self.property.get(key).and_then(Value::as_str);
        let mut line = escape_control(&self.name).into_owned();
        if let Some(title) = text("title") {
            line.push_str(&format!(" ({})", escape_control(title)));
        }
        if let Some(description) = text("description") {
            line.push_str(&format!(": {}", escape_control(description)));
        }
        if self.required {
            line.push_str(" [required]");
        }
        writeln!(output, "{line}")?;
        if let Kind::One(choices) | Kind::Many(choices) = &self.kind {
            for (i, choice) in choices.iter().enumerate() {
                match &choice.title {
                    Some(title) => writeln!(
                        output,
                        "  {}) {} ({})",
                        i + 1,
                        escape_control(title),
                        escape_control(&choice.value)
                    )?,
                    None => writeln!(output, "  {}) {}", i + 1, escape_control(&choice.value))?,
                }
            }
        }
        Ok(())
    }

    /// What to type, and the default if there is one.
    fn hint(&self) -> String {
        let what = match &self.kind {
            Kind::Text => match self.property.get("format").and_then(Value::as_str) {
                Some(format) => format!("text ({})", escape_control(format)),
                None => "text".to_owned(),
            },
            Kind::Number => "a number".to_owned(),
            Kind::Integer => "a whole number".to_owned(),
            Kind::Boolean => "yes or no".to_owned(),
            Kind::One(_) => "one number or value".to_owned(),
            Kind::Many(_) => "numbers or values, comma-separated".to_owned(),
        };
        match self.property.get("default") {
            Some(Value::String(default)) => format!("{what} [{}]", escape_control(default)),
            Some(Value::Bool(default)) => {
                format!("{what} [{}]", if *default { "yes" } else { "no" })
            }
            Some(default) => format!("{what} [{}]", escape_control(&default.to_string())),
            None => what,
        }
    }

    /// The value a typed line gives the field: `None` leaves it out (an
    /// optional field left empty); an error says what is wrong.
    fn parse(&self, line: &str) -> Result<Option<Value>, String> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return match (self.property.get("default"), &self.kind) {
                (Some(default), _) => Ok(Some(default.clone())),
                // An empty choice is an answer: none of them.
                (None, Kind::Many(_)) if self.required => Ok(Some(json!([]))),
                (None, _) if self.required => Err("this field is required".into()),
                (None, _) => Ok(None),
            };
        }
        let value = match &self.kind {
            Kind::Text => Value::String(line.to_owned()),
            Kind::Integer => trimmed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{trimmed}` is not a whole number"))?,
            Kind::Number => match trimmed.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => trimmed
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{trimmed}` is not a number"))?,
            },
            Kind::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Value::Bool(true),
                "n" | "no" | "false" | "0" => Value::Bool(false),
                _ => return Err(format!("`{trimmed}`: yes or no")),
            },
            Kind::One(choices) => Value::String(choose(choices, trimmed)?),
            Kind::Many(choices) => {
                let mut chosen: Vec<Value> = Vec::new();
                for word in trimmed.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                    let value = Value::String(choose(choices, word)?);
                    if !chosen.contains(&value) {
                        chosen.push(value);
                    }
                }
                Value::Array(chosen)
            }
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// The field's own constraints (length, range, pattern...), checked now
    /// so the user can answer again.
    fn check(&self, value: &Value) -> Result<(), String> {
        let Some(schema) = &self.schema else {
            return Ok(());
        };
        let problems = schema.problems(&json!({ self.name.clone(): value }));
        if problems.is_empty() {
            return Ok(());
        }
        let prefix = format!("/{}: ", self.name);
        Err(problems
            .iter()
            .map(|p| p.strip_prefix(&prefix).unwrap_or(p))
            .collect::<Vec<_>>()
            .join("; "))
    }
}

/// The choice `word` picks: its number (from 1), its value, or its title.
fn choose(choices: &[Choice], word: &str) -> Result<String, String> {
    if let Ok(n) = word.parse::<usize>()
        && let Some(choice) = n.checked_sub(1).and_then(|i| choices.get(i))
    {
        return Ok(choice.value.clone());
    }
    choices
        .iter()
        .find(|c| c.value == word)
        .or_else(|| {
            choices.iter().find(|c| {
                c.title
                    .as_deref()
                    .is_some_and(|title| title.eq_ignore_ascii_case(word))
            })
        })
        .map(|c| c.value.clone())
        .ok_or_else(|| {
            format!(
                "`{word}` is not one of the choices: type 1 to {}, or a value",
                choices.len()
            )
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    /// Asks `schema` with `typed` as the user's input: the answer, and the screen.
    fn ask(schema: Value, typed: &str) -> (Answer, String) {
        let question =
            Question::check("conformance.ask", "Who?".into(), &schema.to_string()).unwrap();
        let mut screen = Vec::new();
        let answer = ask_on(&question, &mut typed.as_bytes(), &mut screen).unwrap();
        (answer, String::from_utf8(screen).unwrap())
    }

    fn accepted(answer: Answer) -> Value {
        match answer {
            Answer::Accept(content) => Value::Object(content),
            other => panic!("not accepted: {other:?}"),
        }
    }

    #[test]
    fn each_field_is_asked_then_the_answer_is_sent() {
        let form = json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "format": "email"},
            },
            "required": ["username", "email"],
        });
        // Fields in the form's order (JSON objects here are sorted by key).
        let (answer, screen) = ask(form, "ada@example.com\nada\n\n");
        assert_eq!(
            accepted(answer),
            json!({"username": "ada", "email": "ada@example.com"})
        );
        assert!(screen.contains("`conformance.ask` asks: Who?"), "{screen}");
        assert!(
            screen.contains("username: User's response [required]"),
            "{screen}"
        );
        assert!(screen.contains("text (email): "), "{screen}");
        assert!(screen.contains("Send this answer?"), "{screen}");
    }

    #[test]
    fn enter_takes_defaults_and_wrong_answers_are_asked_again() {
        let form = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30, "minimum": 0},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
            },
        });
        let (answer, _) = ask(form.clone(), "\n\n\n\n\n\n");
        assert_eq!(
            accepted(answer),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        // age, name, score, status, verified; then accept.
        let typed = "old\n-1\n41\nAda\n1e400\n7.5\n3\ninactive\nmaybe\nno\na\n";
        let (answer, screen) = ask(form, typed);
        assert_eq!(
            accepted(answer),
            json!({"name": "Ada", "age": 41, "score": 7.5, "status": "inactive", "verified": false})
        );
        for said in [
            "`old` is not a whole number",
            "-1 is less than the minimum of 0",
            "`1e400` is not a number",
            "`3` is not one of the choices",
            "`maybe`: yes or no",
            "a whole number [30]: ",
            "yes or no [yes]: ",
        ] {
            assert!(screen.contains(said), "{said}: {screen}");
        }
    }

    #[test]
    fn choices_are_numbered_and_titled() {
        let form = json!({
            "type": "object",
            "properties": {
                "legacy": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["One", "Two"]},
                "multi": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First"},
                    {"const": "value2", "title": "Second"},
                    {"const": "value3", "title": "Third"},
                ]}},
                "single": {"type": "string", "oneOf": [
                    {"const": "v1", "title": "First"},
                    {"const": "v2", "title": "Second"},
                ]},
            },
            "required": ["multi"],
        });
        let (answer, screen) = ask(form.clone(), "two\n3, first,3\nv1\n\n");
        assert_eq!(
            accepted(answer),
            json!({"legacy": "opt2", "multi": ["value3", "value1"], "single": "v1"})
        );
        assert!(screen.contains("  1) First (value1)"), "{screen}");
        assert!(screen.contains("  2) Two (opt2)"), "{screen}");
        // Optional fields left empty are left out; an empty required choice is none.
        let (answer, _) = ask(form, "\n\n\n\n");
        assert_eq!(accepted(answer), json!({"multi": []}));
    }

    #[test]
    fn a_required_field_is_asked_until_answered() {
        let form = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 2}},
            "required": ["name"],
        });
        let (answer, screen) = ask(form, "\nA\nAda\n\n");
        assert_eq!(accepted(answer), json!({"name": "Ada"}));
        assert!(screen.contains("this field is required"), "{screen}");
        assert!(
            screen.contains("\"A\" is shorter than 2 characters"),
            "{screen}"
        );
    }

    #[test]
    fn the_user_may_decline_or_cancel() {
        let form = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        assert_eq!(ask(form.clone(), "Ada\nd\n").0, Answer::Decline);
        assert_eq!(ask(form.clone(), "Ada\nwhat\ncancel\n").0, Answer::Cancel);
        // The end of input (Ctrl-D) cancels, mid-form or at the end.
        assert_eq!(ask(form.clone(), "").0, Answer::Cancel);
        assert_eq!(ask(form, "Ada\n").0, Answer::Cancel);
    }

    #[test]
    fn plugin_text_cannot_drive_the_terminal() {
        let form = json!({"type": "object", "properties": {
            "a\u{1b}[2J": {"type": "string", "description": "x\ry"},
        }});
        let question =
            Question::check("p.t", "Hi\u{1b}]0;pwned\u{7}".into(), &form.to_string()).unwrap();
        let mut screen = Vec::new();
        ask_on(&question, &mut "\n\n".as_bytes(), &mut screen).unwrap();
        let screen = String::from_utf8(screen).unwrap();
        assert!(
            !screen.contains('\u{1b}') && !screen.contains('\r'),
            "{screen}"
        );
        assert!(screen.contains("Hi\\u{1b}]0;pwned\\u{7}"), "{screen}");
    }
}
