//! A guest's stream of chunks, the source behind a streaming tool's
//! [`ToolStream`](crate::tool::ToolStream).

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::Plugin;
use super::abi::Exports;
use super::call::timeout;
use super::state::PluginState;
use crate::error::{CallError, Exhausted};
use crate::tool::{NextPart, Part, PartSource, Usage};

/// What each chunk of a stream counts toward the output cap beyond its bytes.
pub(crate) const CHUNK_OVERHEAD_BYTES: usize = 256;

/// A streaming call in progress: its instance, and the guest's chunks.
pub(super) struct GuestStream {
    pub(super) plugin: Plugin,
    pub(super) tool: String,
    pub(super) store: Store<PluginState>,
    pub(super) exports: Exports,
    pub(super) handle: ResourceAny,
    /// The chunks pulled so far, and the bytes they held (what counts
    /// toward the output cap).
    pub(super) chunks: u64,
    pub(super) data: u64,
    pub(super) done: bool,
}

impl PartSource for GuestStream {
    fn next(&mut self) -> NextPart<'_> {
        Box::pin(self.next_part())
    }

    fn usage(&self) -> Usage {
        self.plugin.usage(&self.store)
    }
}

impl GuestStream {
    async fn next_part(&mut self) -> Option<Result<Part, CallError>> {
        if self.done {
            return None;
        }
        let result = self.pull().await;
        if !matches!(result, Some(Ok(_))) {
            self.done = true;
        }
        result
    }

    async fn pull(&mut self) -> Option<Result<Part, CallError>> {
        let plugin = &self.plugin;
        let tool = self.tool.as_str();
        let deadline = self.store.data().deadline.clone();
        let next = timeout(deadline, self.exports.next(&mut self.store, self.handle)).await;
        let chunk = match plugin.settle(&mut self.store, tool, next) {
            Err(e) => return Some(Err(e)),
            Ok(Err(e)) => {
                let call_id = &self.store.data().call.call_id;
                return Some(Err(plugin.tool_error(tool, call_id, e)));
            }
            Ok(Ok(None)) => return None,
            Ok(Ok(Some(chunk))) => chunk,
        };
        // Every chunk costs the host (a message, a progress notification)
        // even when empty: each counts a fixed overhead toward the output cap.
        self.chunks += 1;
        self.data += chunk.size() as u64;
        let counted = self.data + self.chunks * CHUNK_OVERHEAD_BYTES as u64;
        let limit = plugin.inner.limits.max_output_bytes;
        if counted > limit {
            return Some(Err(CallError::Exhausted {
                plugin: plugin.inner.name.to_string(),
                tool: tool.to_owned(),
                budget: Exhausted::StreamOutput {
                    limit,
                    chunks: self.chunks,
                    data: self.data,
                    per_chunk: CHUNK_OVERHEAD_BYTES as u64,
                },
            }));
        }
        let call_id = &self.store.data().call.call_id;
        Some(plugin.convert_part(tool, call_id, chunk))
    }
}
