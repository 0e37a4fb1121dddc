//! Calculator tools for agents: `evaluate` (arithmetic expressions) and
//! `convert_units` (length, mass, time, temperature, data size).

use serde_json::Value;
use toolhost_guest::{Context, Tool, ToolError, ToolHints};

pub mod expr;
pub mod units;

use expr::{EvaluateArgs, Evaluation};
use units::{ConvertArgs, Converted};

/// `evaluate`.
pub struct Evaluate;

impl Tool for Evaluate {
    type Args = EvaluateArgs;
    type Output = Evaluation;
    const NAME: &'static str = "evaluate";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: EvaluateArgs, _cx: &Context) -> Result<Evaluation, ToolError> {
        expr::evaluate(&args.expression).map_err(ToolError::invalid_arguments)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Evaluation>())
    }
}

/// `convert_units`.
pub struct ConvertUnits;

impl Tool for ConvertUnits {
    type Args = ConvertArgs;
    type Output = Converted;
    const NAME: &'static str = "convert_units";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: ConvertArgs, _cx: &Context) -> Result<Converted, ToolError> {
        units::convert(&args).map_err(|e| ToolError::invalid_arguments(e.0))
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Converted>())
    }
}

toolhost_guest::export_tools! {
    tools: [Evaluate, ConvertUnits],
}

#[cfg(test)]
mod tests {
    use toolhost_guest::Declaration;

    use super::*;

    #[test]
    fn declarations() {
        let eval = Declaration::of_tool::<Evaluate>();
        assert!(eval.description.contains("sqrt"), "{}", eval.description);
        assert_eq!(
            eval.input_schema["required"],
            serde_json::json!(["expression"])
        );
        let conv = Declaration::of_tool::<ConvertUnits>();
        assert!(conv.description.contains("temperature"));
        let schema = conv.input_schema.to_string();
        for unit in ["\"km\"", "\"mi\"", "\"celsius\"", "\"GiB\"", "\"yr\""] {
            assert!(schema.contains(unit), "{unit} missing from {schema}");
        }
        assert!(conv.output_schema.is_some());
    }

    #[test]
    fn errors_are_invalid_arguments_with_positions() {
        let cx = Context::new("c", "i", "evaluate");
        let err = Evaluate::call(
            EvaluateArgs {
                expression: "1 / (2 - 2)".into(),
            },
            &cx,
        )
        .unwrap_err();
        assert_eq!(
            err,
            ToolError::InvalidArguments("at column 3: division by zero".into())
        );
    }
}
