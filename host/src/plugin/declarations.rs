//! What a plugin declares, checked: sizes against the load limits, tool
//! names, and schemas compiled.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::LoadedTool;
use super::abi::Declaration;
use crate::engine::LoadLimits;
use crate::error::LoadError;
use crate::schema::Schema;
use crate::tool::{ToolSpec, is_valid_tool_name};

/// Holds declarations to the load limits, before any schema is parsed.
fn check_sizes(
    path: &Path,
    declarations: &[Declaration],
    limits: &LoadLimits,
) -> Result<(), LoadError> {
    if declarations.len() > limits.max_tools {
        return Err(LoadError::TooManyTools {
            path: path.to_owned(),
            count: declarations.len(),
            limit: limits.max_tools,
        });
    }
    let mut total = 0usize;
    for declaration in declarations {
        let schemas = [
            ("input", Some(&declaration.input_schema)),
            ("output", declaration.output_schema.as_ref()),
        ];
        for (which, schema) in schemas {
            let bytes = schema.map_or(0, String::len);
            if bytes > limits.max_schema_bytes {
                return Err(LoadError::SchemaTooLarge {
                    path: path.to_owned(),
                    // Cut: the name is not checked yet.
                    tool: declaration.name.chars().take(64).collect(),
                    which,
                    bytes,
                    limit: limits.max_schema_bytes,
                });
            }
            total = total.saturating_add(bytes);
        }
        total = total
            .saturating_add(declaration.name.len())
            .saturating_add(declaration.description.len());
    }
    if total > limits.max_declaration_bytes {
        return Err(LoadError::DeclarationsTooLarge {
            path: path.to_owned(),
            bytes: total,
            limit: limits.max_declaration_bytes,
        });
    }
    Ok(())
}

/// How the tools listed differ from those declared, if they do.
pub(super) fn differences(listed: &[LoadedTool], declared: &[LoadedTool]) -> Option<String> {
    for tool in listed {
        match declared.iter().find(|d| d.spec.name == tool.spec.name) {
            None => {
                return Some(format!(
                    "it lists `{}`, which the component does not declare",
                    tool.spec.name
                ));
            }
            Some(d) if d.spec != tool.spec => {
                return Some(format!(
                    "it lists `{}` otherwise than the component declares it",
                    tool.spec.name
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = declared
        .iter()
        .find(|d| !listed.iter().any(|t| t.spec.name == d.spec.name))
    {
        return Some(format!(
            "it does not list `{}`, which the component declares",
            missing.spec.name
        ));
    }
    let order = |tools: &[LoadedTool]| {
        tools
            .iter()
            .map(|t| t.spec.name.clone())
            .collect::<Vec<_>>()
    };
    (order(listed) != order(declared)).then(|| "it lists the tools in another order".to_owned())
}

pub(super) fn check_declarations(
    path: &Path,
    declarations: &[Declaration],
    limits: &LoadLimits,
) -> Result<Vec<LoadedTool>, LoadError> {
    check_sizes(path, declarations, limits)?;
    let mut seen = HashSet::new();
    let mut tools = Vec::with_capacity(declarations.len());
    for declaration in declarations {
        let name = declaration.name.clone();
        let invalid = |reason: String| LoadError::InvalidTool {
            path: path.to_owned(),
            tool: name.clone(),
            reason,
        };
        if !is_valid_tool_name(&name) {
            return Err(invalid(
                "a tool name must be 1 to 64 ASCII letters, digits, `_` or `-`".into(),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(invalid("declared twice".into()));
        }
        let input = Schema::input(&declaration.input_schema)
            .map_err(|e| invalid(format!("input schema: {e}")))?;
        let output = declaration
            .output_schema
            .as_deref()
            .map(Schema::output)
            .transpose()
            .map_err(|e| invalid(format!("output schema: {e}")))?;
        let input = Arc::new(input);
        let mut spec = ToolSpec::new(
            name.clone(),
            declaration.description.clone(),
            input.raw().clone(),
        )
        .with_compiled_input(Arc::clone(&input));
        spec.long_running = declaration.long_running;
        spec.streaming = declaration.streaming;
        spec.hints = declaration.hints.clone();
        spec.output_schema = output.as_ref().map(|s| s.raw().clone());
        tools.push(LoadedTool {
            spec,
            input,
            output,
            function: None,
        });
    }
    Ok(tools)
}
