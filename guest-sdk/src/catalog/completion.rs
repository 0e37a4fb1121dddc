//! Completions: what a completion handler gets ([`CompletionRequest`]) and
//! returns ([`Completion`]).

use crate::Arguments;

/// The most values a completion serves; the SDK cuts longer lists and says
/// there are more.
pub(crate) const MAX_VALUES: usize = 100;

/// A request for completions of one argument of a prompt, or one variable of
/// a template (MCP `completion/complete`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument's (or variable's) name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Arguments already filled in.
    pub context: Arguments,
}

impl CompletionRequest {
    /// A request to complete `argument` from `value` (the SDK builds it; tests
    /// of completion handlers may too).
    pub fn new(argument: impl Into<String>, value: impl Into<String>, context: Arguments) -> Self {
        Self {
            argument: argument.into(),
            value: value.into(),
            context,
        }
    }
}

/// Suggested values, best first. At most 100 are served: the SDK cuts a
/// longer list and sets [`Completion::has_more`].
///
/// ```
/// use toolhost_guest::Completion;
///
/// let c = Completion::matching(["paris", "park", "rome"], "par");
/// assert_eq!(c.values, ["paris", "park"]);
/// assert_eq!((c.total, c.has_more), (Some(2), false));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Completion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many there are in all, when known.
    pub total: Option<u32>,
    /// Whether there are more than those returned.
    pub has_more: bool,
}

impl Completion {
    /// These values; how many there are in all is not said.
    pub fn new<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Self {
        Self {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: false,
        }
    }

    /// The `candidates` that start with `prefix` (case-sensitive), in order,
    /// with their count as the total; past 100, the first 100 and `has_more`.
    pub fn matching<S: Into<String>>(
        candidates: impl IntoIterator<Item = S>,
        prefix: &str,
    ) -> Self {
        let values: Vec<String> = candidates
            .into_iter()
            .map(Into::into)
            .filter(|candidate| candidate.starts_with(prefix))
            .collect();
        let total = u32::try_from(values.len()).ok();
        Self {
            values,
            total,
            has_more: false,
        }
        .capped()
    }

    /// Sets how many values there are in all.
    pub fn total(mut self, total: u32) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets whether there are more values than those returned.
    pub fn has_more(mut self, has_more: bool) -> Self {
        self.has_more = has_more;
        self
    }

    /// At most [`MAX_VALUES`] values; if it cut any, there are more.
    pub(crate) fn capped(mut self) -> Self {
        if self.values.len() > MAX_VALUES {
            self.values.truncate(MAX_VALUES);
            self.has_more = true;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::{Completion, CompletionRequest, MAX_VALUES};
    use crate::Arguments;

    #[test]
    fn matching_filters_counts_and_caps() {
        let c = Completion::matching((0..250).map(|i| format!("v{i}")), "v1");
        // v1, v10..v19, v100..v199
        assert_eq!(c.total, Some(111));
        assert_eq!(c.values.len(), MAX_VALUES);
        assert!(c.has_more);
        let none = Completion::matching(["a"], "b");
        assert_eq!(
            (none.values.len(), none.total, none.has_more),
            (0, Some(0), false)
        );
    }

    #[test]
    fn setters_and_new() {
        let c = Completion::new(["a", "b"]).total(10).has_more(true);
        assert_eq!(c.values, ["a", "b"]);
        assert_eq!((c.total, c.has_more), (Some(10), true));
        let r = CompletionRequest::new("arg", "v", Arguments::new());
        assert_eq!((r.argument.as_str(), r.value.as_str()), ("arg", "v"));
    }
}
