//! Conversions between the host's types and MCP's: tool names, tool
//! listings, results and content, resource contents, errors.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, MetaObject, ResourceContents, Tool as McpTool,
    ToolAnnotations,
};
use serde_json::{Value, json};

use crate::catalog::{self, Body};
use crate::error::CallError;
use crate::tool::{
    MAX_TOOL_NAME, MediaKind, Part, ToolHints, ToolOutput, ToolSpec, is_valid_tool_name,
};

/// A finished call's output as an MCP result: its JSON result as
/// `structuredContent` and, with `result_text` (as the specification asks of
/// a tool returning structured content, for clients that read only
/// `content`), as text too; then its parts.
pub(super) fn output_result(output: ToolOutput, result_text: bool) -> CallToolResult {
    let mut blocks = Vec::with_capacity(output.parts.len() + 1);
    if result_text && let Some(result) = &output.result {
        blocks.push(ContentBlock::text(result.to_string()));
    }
    for (i, part) in output.parts.into_iter().enumerate() {
        blocks.push(content(part, &output.call_id, i));
    }
    let mut result = CallToolResult::success(blocks);
    result.structured_content = output.result;
    result
}

/// A streamed call's gathered output ([`Collector`](crate::tool::Collector)): text
/// alone goes out as text (with `{"result": text}` as `structuredContent`),
/// anything else as [`output_result`] does.
pub(super) fn stream_result(output: ToolOutput, result_text: bool) -> CallToolResult {
    let text = match (&output.result, output.parts.is_empty()) {
        (Some(Value::Object(result)), true) if result.len() == 1 => {
            result.get("result").and_then(Value::as_str)
        }
        _ => None,
    };
    match text {
        Some(text) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = output.result;
            result
        }
        None => output_result(output, result_text),
    }
}

/// One part as MCP content: text, an image, audio, or an embedded resource
/// named `toolhost://CALL_ID/FILE`.
pub(super) fn content(part: Part, call_id: &str, index: usize) -> ContentBlock {
    let base64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    match part {
        Part::Text(text) => ContentBlock::text(text),
        Part::Json(value) => ContentBlock::text(value.to_string()),
        Part::Blob {
            kind: MediaKind::Image,
            mime_type,
            data,
            ..
        } => ContentBlock::image(base64(&data), mime_type),
        Part::Blob {
            kind: MediaKind::Audio,
            mime_type,
            data,
            ..
        } => ContentBlock::audio(base64(&data), mime_type),
        Part::Blob {
            mime_type,
            name,
            data,
            ..
        } => {
            let file = name.unwrap_or_else(|| format!("part-{}", index + 1));
            let uri = format!("toolhost://{call_id}/{}", uri_segment(&file));
            ContentBlock::resource(
                ResourceContents::blob(base64(&data), uri).with_mime_type(mime_type),
            )
        }
    }
}

/// A resource's content as MCP's (text, or bytes in base64).
pub(super) fn resource_contents(contents: catalog::ResourceContents) -> ResourceContents {
    let catalog::ResourceContents {
        uri,
        mime_type,
        body,
        ..
    } = contents;
    match body {
        Body::Text(text) => ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta: None,
        },
        Body::Bytes(bytes) => ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            meta: None,
        },
    }
}

/// Why a read or get failed, as a JSON-RPC error: a URI no resource the
/// caller may read is at is "resource not found" (-32002, with the URI); an
/// unknown prompt or bad arguments are invalid params; anything else the
/// server's failure.
pub(super) fn catalog_error(err: CallError) -> ErrorData {
    match err {
        CallError::UnknownResource { uri } => ErrorData::resource_not_found(
            CallError::UnknownResource { uri: uri.clone() }.to_string(),
            Some(json!({ "uri": uri })),
        ),
        err if err.is_caller_error() => ErrorData::invalid_params(err.to_string(), None),
        err => ErrorData::internal_error(err.to_string(), None),
    }
}

/// What may not appear in a URI path segment: everything but RFC 3986's
/// unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes what may not appear in a URI path segment.
fn uri_segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// The names in an unresolved-name error as MCP lists them (`echo_add` for
/// `echo.add`); names it does not list stay as they are.
pub(super) fn mcp_error_names(mut err: CallError, as_mcp: &HashMap<&str, &str>) -> CallError {
    if let CallError::UnknownTool {
        available: names, ..
    }
    | CallError::AmbiguousTool {
        candidates: names, ..
    } = err.unresolved_mut()
    {
        for name in names {
            if let Some(mcp) = as_mcp.get(name.as_str()) {
                *name = (*mcp).to_owned();
            }
        }
    }
    err
}

/// A failed call as MCP sees it: a name that reaches no tool is a protocol
/// error; all else is a tool result with `isError`, whose text a model can act on.
pub(super) fn error_result(err: CallError) -> Result<CallToolResult, ErrorData> {
    match &err {
        err if err.is_unresolved_name() => Err(ErrorData::invalid_params(err.to_string(), None)),
        CallError::Forbidden { .. } => Err(ErrorData::invalid_params(
            err.to_string(),
            Some(json!({"reason": "forbidden"})),
        )),
        CallError::Trapped { source, .. } => {
            tracing::warn!(error = ?source, "{err}");
            Ok(CallToolResult::error(vec![ContentBlock::text(
                err.to_string(),
            )]))
        }
        _ => {
            tracing::info!("{err}");
            Ok(CallToolResult::error(vec![ContentBlock::text(
                err.to_string(),
            )]))
        }
    }
}

/// MCP names for tool names, in order: see the module docs.
pub(super) fn mcp_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let names: Vec<&str> = names.collect();
    let fits = is_valid_tool_name;
    let mut taken: HashSet<String> = names
        .iter()
        .filter(|n| fits(n))
        .map(|n| (*n).to_owned())
        .collect();
    names
        .iter()
        .map(|name| {
            if fits(name) {
                return (*name).to_owned();
            }
            let mut base: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if base.is_empty() {
                base.push_str("tool");
            }
            // Too long: keep the end, where the tool's own name is (`plugin.tool`).
            let tail = |keep: usize| base[base.len().saturating_sub(keep)..].to_owned();
            let mut candidate = tail(MAX_TOOL_NAME);
            let mut n = 1;
            while taken.contains(&candidate) {
                n += 1;
                let suffix = format!("_{n}");
                candidate = format!(
                    "{}{suffix}",
                    tail(MAX_TOOL_NAME.saturating_sub(suffix.len()))
                );
            }
            taken.insert(candidate.clone());
            candidate
        })
        .collect()
}

/// A JSON Schema as an MCP `outputSchema`, whose root must be an object: a
/// schema of another type describes `result` in `{"result": …}`, the way the
/// host wraps such results.
pub(super) fn object_schema(schema: &Value) -> JsonObject {
    let Value::Object(map) = schema else {
        return JsonObject::new();
    };
    if map.get("type").and_then(Value::as_str) == Some("object") {
        return map.clone();
    }
    let mut inner = map.clone();
    let mut root = JsonObject::new();
    // References are resolved from the root, so definitions move up with them.
    for key in ["$schema", "$defs", "definitions"] {
        if let Some(value) = inner.remove(key) {
            root.insert(key.to_owned(), value);
        }
    }
    root.insert("type".to_owned(), json!("object"));
    root.insert("properties".to_owned(), json!({ "result": inner }));
    root.insert("required".to_owned(), json!(["result"]));
    root
}

/// The `_meta` key that marks a tool whose calls may need a human's approval
/// ([`ToolSpec::confirm`]), so a framework can route it to its own approval
/// step. Documented in `docs/mcp.md`.
pub(super) const CONFIRM_META: &str = "dev.toolhost/confirm";

/// A tool as `tools/list` shows it under its MCP name. The plugin's hints
/// ([`ToolSpec::hints`]) become `annotations` (and its title the tool's
/// `title`). A tool the confirmation layer gates carries `_meta`
/// [`CONFIRM_META`]` = true` and `annotations.destructiveHint`: the plugin's
/// own value if it gave one, else `true` unless the plugin marked it
/// read-only (`readOnlyHint: true` wins). A tool with neither hints nor the
/// mark carries no `annotations` and no `_meta`.
pub(super) fn mcp_tool(name: String, spec: &ToolSpec) -> McpTool {
    let input = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), json!("object"));
            map
        }
    };
    let mut tool = McpTool::new(name.clone(), spec.model_description(), Arc::new(input));
    tool.output_schema = spec
        .output_schema
        .as_ref()
        .map(|schema| Arc::new(object_schema(schema)));
    if let Some(title) = &spec.hints.title {
        tool.title = Some(title.clone());
    } else if name != spec.name {
        tool.title = Some(spec.name.clone());
    }
    tool.annotations = annotations(&spec.hints);
    if spec.confirm {
        let mut meta = MetaObject::new();
        meta.0.insert(CONFIRM_META.to_owned(), Value::Bool(true));
        tool.meta = Some(meta);
        // An operator who gates a tool treats it as one that may destroy,
        // unless the plugin said otherwise itself, or said it is read-only:
        // MCP gives `destructiveHint` a meaning only when `readOnlyHint` is
        // false, so a read-only tool never gets both (docs/mcp.md).
        if spec.hints.read_only != Some(true) {
            let annotations = tool.annotations.get_or_insert_with(ToolAnnotations::new);
            annotations.destructive_hint.get_or_insert(true);
        }
    }
    tool
}

/// The MCP annotations of a tool's hints; `None` when it has none.
fn annotations(hints: &ToolHints) -> Option<ToolAnnotations> {
    if hints.is_empty() {
        return None;
    }
    // `ToolAnnotations` is non-exhaustive: built empty, then filled in.
    let mut annotations = ToolAnnotations::new();
    // Also here for clients of protocol versions before `Tool.title`.
    annotations.title.clone_from(&hints.title);
    annotations.read_only_hint = hints.read_only;
    annotations.destructive_hint = hints.destructive;
    annotations.idempotent_hint = hints.idempotent;
    annotations.open_world_hint = hints.open_world;
    Some(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_stay_and_others_map_without_clashes() {
        let names = mcp_names(
            [
                "echo",
                "echo.echo",
                "echo_echo",
                "text.echo",
                "naïve tool",
                "",
            ]
            .into_iter(),
        );
        assert_eq!(
            names,
            [
                "echo",
                "echo_echo_2",
                "echo_echo",
                "text_echo",
                "na_ve_tool",
                "tool"
            ]
        );
        let long = "x".repeat(70) + ".word_count";
        let mapped = mcp_names([long.as_str(), long.as_str()].into_iter());
        assert_eq!(mapped[0].len(), MAX_TOOL_NAME);
        assert!(mapped[0].ends_with("x_word_count"), "{}", mapped[0]);
        assert_ne!(mapped[0], mapped[1]);
        assert!(mapped[1].len() <= MAX_TOOL_NAME && mapped[1].ends_with("_2"));
    }

    #[test]
    fn gated_tools_are_marked_and_others_list_as_before() {
        let mut spec = ToolSpec::new("delete", "Deletes.", json!({"type": "object"}));
        let plain = serde_json::to_value(mcp_tool("delete".into(), &spec)).unwrap();
        assert!(plain.get("_meta").is_none() && plain.get("annotations").is_none());
        spec.confirm = true;
        let marked = serde_json::to_value(mcp_tool("delete".into(), &spec)).unwrap();
        assert_eq!(marked["_meta"], json!({"dev.toolhost/confirm": true}));
        assert_eq!(marked["annotations"], json!({"destructiveHint": true}));
        let mut without_mark = marked.clone();
        let object = without_mark.as_object_mut().unwrap();
        object.remove("_meta");
        object.remove("annotations");
        assert_eq!(without_mark, plain);
    }

    #[test]
    fn hints_become_annotations_and_the_plugins_destructive_hint_wins() {
        let mut spec = ToolSpec::new("read", "Reads.", json!({"type": "object"}));
        spec.hints.title = Some("Read a file".into());
        spec.hints.read_only = Some(true);
        spec.hints.destructive = Some(false);
        spec.hints.open_world = Some(false);
        let listed = serde_json::to_value(mcp_tool("fs_read".into(), &spec)).unwrap();
        assert_eq!(listed["title"], "Read a file");
        assert_eq!(
            listed["annotations"],
            json!({"title": "Read a file", "readOnlyHint": true,
                "destructiveHint": false, "openWorldHint": false})
        );
        assert!(listed.get("_meta").is_none());
        spec.confirm = true;
        let marked = serde_json::to_value(mcp_tool("fs_read".into(), &spec)).unwrap();
        assert_eq!(marked["_meta"], json!({"dev.toolhost/confirm": true}));
        assert_eq!(marked["annotations"]["destructiveHint"], false);
    }

    #[test]
    fn a_gated_read_only_tool_is_not_also_called_destructive() {
        let mut spec = ToolSpec::new("look", "Looks.", json!({"type": "object"}));
        spec.hints.read_only = Some(true);
        spec.confirm = true;
        let marked = serde_json::to_value(mcp_tool("look".into(), &spec)).unwrap();
        assert_eq!(marked["_meta"], json!({"dev.toolhost/confirm": true}));
        assert_eq!(marked["annotations"], json!({"readOnlyHint": true}));
    }

    #[test]
    fn output_schemas_get_an_object_root_with_definitions_kept_at_the_root() {
        let object = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert_eq!(Value::Object(object_schema(&object)), object);
        let integer =
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"});
        assert_eq!(
            Value::Object(object_schema(&integer)),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            })
        );
        let array = json!({"type": "array", "items": {"$ref": "#/$defs/X"}, "$defs": {"X": {"type": "string"}}});
        let wrapped = Value::Object(object_schema(&array));
        assert_eq!(wrapped["$defs"]["X"]["type"], "string");
        assert_eq!(
            wrapped["properties"]["result"]["items"]["$ref"],
            "#/$defs/X"
        );
    }

    #[test]
    fn blobs_become_images_audio_or_resources() {
        let image = content(
            Part::Blob {
                kind: MediaKind::Image,
                mime_type: "image/png".into(),
                name: None,
                data: vec![1, 2, 3],
            },
            "c1",
            0,
        );
        assert!(
            matches!(&image, ContentBlock::Image(i) if i.data == "AQID" && i.mime_type == "image/png")
        );
        let file = content(
            Part::Blob {
                kind: MediaKind::File,
                mime_type: "application/pdf".into(),
                name: Some("my report.pdf".into()),
                data: vec![0],
            },
            "c1",
            0,
        );
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["resource"]["uri"], "toolhost://c1/my%20report.pdf");
        assert_eq!(json["resource"]["mimeType"], "application/pdf");
    }
}
