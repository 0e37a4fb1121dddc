//! Calling an exported function as a tool: the arguments checked against the
//! tool's schema and converted to [`Val`]s before any guest code runs, then a
//! fresh instance under the plugin's limits and grants (the same as a
//! plugin's tool call: `Plugin::instantiate`), the function called through
//! wasmtime's dynamic API, and its result converted back to JSON.

use serde_json::Value;
use tracing::Instrument as _;
use wasmtime::AsContextMut;
use wasmtime::component::{Func, Instance, Val};

use super::Function;
use super::value::{self, Returned};
use crate::error::CallError;
use crate::plugin::call::{Check, Via, timeout};
use crate::plugin::state::PluginState;
use crate::plugin::{LoadedTool, Plugin};
use crate::tool::{ToolCall, ToolOutput};

impl Plugin {
    /// Runs `tool`, which calls the exported `function`, in a fresh instance.
    /// An `err` the function returns is [`CallError::Failed`] with its JSON
    /// as the message.
    pub(in crate::plugin) async fn call_function(
        &self,
        tool: &LoadedTool,
        function: &Function,
        mut call: ToolCall,
        check: Check,
    ) -> Result<ToolOutput, CallError> {
        let name = tool.spec.name.as_str();
        let arguments = Self::checked(tool, std::mem::take(&mut call.arguments), check)?;
        let params = &function.signature.params;
        let arguments =
            value::arguments(params, &arguments).map_err(|e| CallError::InvalidArguments {
                tool: name.to_owned(),
                problems: vec![e.to_string()],
            })?;
        let (mut store, instance, _code) = self
            .instantiate(name, &call.call_id, &call.invocation_id, Via::of(&call))
            .await?;
        let func = self.func(&mut store, &instance, name, function)?;
        let mut results = vec![Val::Bool(false); usize::from(function.signature.result.is_some())];
        let deadline = store.data().deadline.clone();
        let guest = crate::spans::guest(name);
        let called = timeout(
            deadline,
            func.call_async(&mut store, &arguments, &mut results),
        )
        .instrument(guest.clone())
        .await;
        store.data().guest_spans.close(guest);
        self.settle(&mut store, name, called)?;
        let usage = self.usage(&store);
        let returned = value::returned(function.signature.result.as_ref(), results.first())
            .map_err(|e| self.invalid_output(name, format!("its result: {e}")))?;
        let call_id = call.call_id;
        match returned {
            Returned::Ok(result) => {
                let result = result
                    .map(|value| self.checked_result(tool, &call_id, value))
                    .transpose()?;
                Ok(ToolOutput {
                    result,
                    parts: Vec::new(),
                    call_id,
                    usage,
                })
            }
            Returned::Err(content) => {
                let mut message = match content {
                    Some(content) => content.to_string(),
                    None => "the function returned `err`".to_owned(),
                };
                if self.inner.grants.mask_text(&mut message) {
                    self.warn_leak(name, &call_id, "its error");
                }
                Err(CallError::Failed {
                    plugin: self.inner.name.to_string(),
                    tool: name.to_owned(),
                    message: crate::error::cut(message, crate::error::MAX_ERROR_MESSAGE_BYTES),
                })
            }
        }
    }

    /// The exported function in this instance, found by its name (the code
    /// of another tier has other export indices).
    fn func(
        &self,
        mut store: impl AsContextMut<Data = PluginState>,
        instance: &Instance,
        tool: &str,
        function: &Function,
    ) -> Result<Func, CallError> {
        let missing = || CallError::Host {
            tool: tool.to_owned(),
            reason: format!("the component has no export `{}`", function.tool.export),
        };
        let parent = match &function.interface {
            Some(interface) => Some(
                instance
                    .get_export_index(&mut store, None, interface)
                    .ok_or_else(missing)?,
            ),
            None => None,
        };
        let index = instance
            .get_export_index(&mut store, parent.as_ref(), &function.name)
            .ok_or_else(missing)?;
        instance.get_func(&mut store, index).ok_or_else(missing)
    }

    /// A result held to the output cap and its output schema, with any
    /// configured secret's value masked.
    fn checked_result(
        &self,
        tool: &LoadedTool,
        call_id: &str,
        mut value: Value,
    ) -> Result<Value, CallError> {
        let name = tool.spec.name.as_str();
        self.check_output_size(name, value.to_string().len() as u64)?;
        self.check_result(tool, &value)?;
        if self.inner.grants.mask_value(&mut value) {
            self.warn_leak(name, call_id, "its result");
        }
        Ok(value)
    }
}
