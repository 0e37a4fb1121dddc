//! RFC 6570 URI templates, as resource templates use them: which URIs a
//! template makes, and the variables a URI gives it.

use percent_encoding::percent_decode_str;
use regex::Regex;

/// The longest URI template accepted.
const MAX_TEMPLATE_BYTES: usize = 1024;

/// The most variables one template may have.
const MAX_VARIABLES: usize = 16;

/// A URI template of RFC 6570 levels 1 and 2: literal text, `{name}` (one
/// value of unreserved or percent-encoded characters, so no `/`, `?` or
/// `#`) and `{+name}` (any text, reserved characters included). Matching is
/// linear in the URI's length.
///
/// # Examples
/// ```
/// use toolhost::catalog::UriTemplate;
/// let template = UriTemplate::parse("notes://{day}/{+path}").unwrap();
/// let variables = template.matches("notes://mon%20day/a/b.md").unwrap();
/// assert_eq!(variables, [("day".to_owned(), "mon day".to_owned()), ("path".to_owned(), "a/b.md".to_owned())]);
/// assert!(template.matches("other://x/y").is_none());
/// ```
#[derive(Debug, Clone)]
pub struct UriTemplate {
    template: String,
    names: Vec<String>,
    pattern: Regex,
}

/// Why a URI template is not one [`UriTemplate`] accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

impl UriTemplate {
    /// Parses `template`.
    ///
    /// # Errors
    /// [`TemplateError`] for an empty or too long template, an unclosed or
    /// empty expression, an operator other than `+` (levels 3 and 4:
    /// `{?q}`, `{/p}`, `{x,y}`, ...), a repeated variable, two expressions
    /// with nothing between them, or more than 16 variables.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let fail = |reason: String| Err(TemplateError(reason));
        if template.is_empty() {
            return fail("the URI template is empty".into());
        }
        if template.len() > MAX_TEMPLATE_BYTES {
            return fail(format!(
                "the URI template is longer than {MAX_TEMPLATE_BYTES} bytes"
            ));
        }
        let mut pattern = String::from("^");
        let mut names: Vec<String> = Vec::new();
        let mut rest = template;
        let mut after_expression = false;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                pattern.push_str(&literal(rest)?);
                break;
            };
            if open > 0 {
                pattern.push_str(&literal(&rest[..open])?);
            } else if after_expression {
                return fail(format!(
                    "`{template}`: two expressions with nothing between them cannot be told apart"
                ));
            }
            let Some(close) = rest[open..].find('}') else {
                return fail(format!("`{template}`: an expression is not closed"));
            };
            let expression = &rest[open + 1..open + close];
            let (reserved, name) = match expression.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expression),
            };
            if name.is_empty() {
                return fail(format!("`{template}`: an expression has no variable"));
            }
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return fail(format!(
                    "`{template}`: `{{{expression}}}` is not supported (only `{{name}}` and `{{+name}}`, RFC 6570 levels 1 and 2)"
                ));
            }
            if names.iter().any(|n| n == name) {
                return fail(format!("`{template}`: variable `{name}` appears twice"));
            }
            names.push(name.to_owned());
            if names.len() > MAX_VARIABLES {
                return fail(format!("`{template}`: more than {MAX_VARIABLES} variables"));
            }
            pattern.push_str(if reserved {
                "(.+)"
            } else {
                "((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)"
            });
            after_expression = true;
            rest = &rest[open + close + 1..];
        }
        pattern.push('$');
        let pattern =
            Regex::new(&pattern).map_err(|e| TemplateError(format!("`{template}`: {e}")))?;
        Ok(Self {
            template: template.to_owned(),
            names,
            pattern,
        })
    }

    /// The template, as written.
    pub fn as_str(&self) -> &str {
        &self.template
    }

    /// Its variables' names, in order.
    pub fn variables(&self) -> &[String] {
        &self.names
    }

    /// Whether `uri` is one of this template's, with its variables'
    /// values (percent-decoded) if so.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let captures = self.pattern.captures(uri)?;
        self.names
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let value = captures.get(index + 1)?.as_str();
                let value = percent_decode_str(value).decode_utf8().ok()?;
                Some((name.clone(), value.into_owned()))
            })
            .collect()
    }
}

/// Literal template text as a pattern; a stray `}` is refused.
fn literal(text: &str) -> Result<String, TemplateError> {
    if text.contains('}') {
        return Err(TemplateError(format!(
            "`{text}`: a `}}` closes no expression"
        )));
    }
    Ok(regex::escape(text))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    #[test]
    fn simple_variables_stop_at_reserved_characters() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            template.matches("test://template/123/data").unwrap(),
            [("id".to_owned(), "123".to_owned())]
        );
        assert!(template.matches("test://template/1/2/data").is_none());
        assert!(template.matches("test://template//data").is_none());
        assert!(template.matches("test://template/123/data/more").is_none());
        assert_eq!(template.variables(), ["id"]);
    }

    #[test]
    fn reserved_variables_take_any_text() {
        let template = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            template.matches("file:///a/b%2Fc.txt").unwrap(),
            [("path".to_owned(), "a/b/c.txt".to_owned())]
        );
    }

    #[test]
    fn what_is_not_supported_says_so() {
        for (template, expected) in [
            ("", "empty"),
            ("x://{?q}", "not supported"),
            ("x://{a,b}", "not supported"),
            ("x://{a}{b}", "nothing between"),
            ("x://{a}/{a}", "twice"),
            ("x://{a", "not closed"),
            ("x://{}", "no variable"),
            ("x://a}", "closes no expression"),
        ] {
            let err = UriTemplate::parse(template).unwrap_err().to_string();
            assert!(err.contains(expected), "{template}: {err}");
        }
        let long = format!("x://{}", "a".repeat(MAX_TEMPLATE_BYTES));
        assert!(UriTemplate::parse(&long).is_err());
    }

    #[test]
    fn literal_text_is_not_a_pattern() {
        let template = UriTemplate::parse("x://a.b/{id}").unwrap();
        assert!(template.matches("x://aXb/1").is_none());
        assert!(template.matches("x://a.b/1").is_some());
    }
}
