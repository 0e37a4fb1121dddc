//! JSON tools for agents: `json_query`.

use serde_json::Value;
use toolhost_guest::{Context, Tool, ToolError, ToolHints};

pub mod query;

use query::{QueryArgs, QueryResult};

/// `json_query`.
pub struct JsonQuery;

impl Tool for JsonQuery {
    type Args = QueryArgs;
    type Output = QueryResult;
    const NAME: &'static str = "json_query";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: QueryArgs, _cx: &Context) -> Result<QueryResult, ToolError> {
        query::query(args).map_err(|e| ToolError::invalid_arguments(e.0))
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<QueryResult>())
    }
}

toolhost_guest::export_tools! {
    tools: [JsonQuery],
}

#[cfg(test)]
mod tests {
    use toolhost_guest::Declaration;

    use super::*;

    #[test]
    fn declaration() {
        let d = Declaration::of_tool::<JsonQuery>();
        assert!(d.description.contains("JSON pointer"));
        assert_eq!(
            d.input_schema["required"],
            serde_json::json!(["document", "path"])
        );
    }
}
