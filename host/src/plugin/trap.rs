//! Classifying what stopped a guest: traps, panics and exhausted budgets,
//! into the [`CallError`] that says what happened.

use wasmtime::{Store, Trap, WasmBacktrace};

use super::Plugin;
use super::state::PluginState;
use crate::engine::limits::Busy;
use crate::error::{CallError, Exhausted, StateError};
use crate::tool::AskError;

impl Plugin {
    /// The outcome of a guest call that ran under [`timeout`]: its value, or the
    /// typed error for a trap, an exhausted budget, or the deadline.
    pub(super) fn settle<T>(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        result: Result<wasmtime::Result<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, CallError> {
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.classify(store, tool, err)),
            Err(_elapsed) => Err(CallError::Exhausted {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                budget: Exhausted::Deadline {
                    limit: self.inner.limits.timeout,
                },
            }),
        }
    }

    /// Turns a wasmtime error into the typed error that says what happened.
    fn classify(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        err: wasmtime::Error,
    ) -> CallError {
        let plugin = self.inner.name.to_string();
        let tool = tool.to_owned();
        let limits = &self.inner.limits;
        let exhausted = |budget| CallError::Exhausted {
            plugin: plugin.clone(),
            tool: tool.clone(),
            budget,
        };
        if let Some(&budget) = err.downcast_ref::<Exhausted>() {
            return exhausted(budget);
        }
        // An asker stopped the call at a question (`PluginState::host_ask`).
        let err = match err.downcast::<AskError>() {
            Ok(AskError::InputRequired(input)) => return CallError::InputRequired { tool, input },
            Ok(AskError::Refused(reason)) => return CallError::AnswerRefused { tool, reason },
            Ok(other) => wasmtime::Error::new(other),
            Err(err) => err,
        };
        if let Some(&reason) = err.downcast_ref::<Busy>() {
            return CallError::Busy {
                plugin,
                tool,
                reason,
            };
        }
        if let Some(state) = err.downcast_ref::<StateError>() {
            return match state {
                StateError::Busy { limit } => CallError::Busy {
                    plugin,
                    tool,
                    reason: Busy::State { limit: *limit },
                },
                StateError::Bytes { .. } | StateError::Keys { .. } => CallError::Failed {
                    plugin,
                    tool,
                    message: state.to_string(),
                },
                _ => {
                    tracing::warn!(plugin = %plugin, tool = %tool, error = %state, "the state store failed; the guest was stopped");
                    CallError::State {
                        tool,
                        reason: state.clone(),
                    }
                }
            };
        }
        let trap = err.downcast_ref::<Trap>().copied();
        match trap {
            Some(Trap::OutOfFuel) => {
                return exhausted(Exhausted::Fuel { limit: limits.fuel });
            }
            Some(Trap::StackOverflow) => {
                return exhausted(Exhausted::Stack {
                    limit: self.inner.engine.max_wasm_stack() as u64,
                });
            }
            Some(Trap::MemoryOutOfBounds) if shadow_stack_overflow(&err) => {
                return exhausted(Exhausted::Stack {
                    limit: self.inner.engine.max_wasm_stack() as u64,
                });
            }
            _ => {}
        }
        // wasmtime reports the limiter's instance, memory and table counts only
        // as text ("resource limit exceeded: instance count too high at 9").
        if trap.is_none() && format!("{err:#}").contains("count too high") {
            return exhausted(Exhausted::Instances {
                limit: limits.instances,
            });
        }
        if err
            .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return CallError::Busy {
                plugin,
                tool,
                reason: Busy::Instances,
            };
        }
        if let Some(message) = store.data_mut().panic_message.take() {
            return CallError::Panicked {
                plugin,
                tool,
                message,
            };
        }
        let summary = match trap {
            Some(trap) => trap.to_string(),
            None => err.to_string(),
        };
        if trap.is_none() {
            // Not a trap: instantiation failed for a host reason (e.g. the pool is full).
            tracing::warn!(plugin = %plugin, tool = %tool, error = ?err, "call could not run");
        }
        CallError::Trapped {
            plugin,
            tool,
            trap: summary,
            source: err,
        }
    }
}

/// Languages that keep their stack in linear memory (Rust, C: "stack first",
/// growing down towards address 0) overflow it by wrapping below zero. That is
/// a stack overflow, not a wild pointer. wasmtime reports it as an
/// out-of-bounds access: at a fault address just under 4 GiB when a plain load
/// or store hit the guard region, or with no address when a bulk-memory
/// instruction (`memory.fill`, `memory.copy`) refused it; then the backtrace,
/// full and made of one to three recursing functions, tells.
fn shadow_stack_overflow(err: &wasmtime::Error) -> bool {
    wrapped_stack_address(err) || runaway_recursion(err)
}

/// The backtrace is at least 16 frames deep (wasmtime keeps 20 by default)
/// and holds at most 3 distinct functions: a recursion that ran away.
fn runaway_recursion(err: &wasmtime::Error) -> bool {
    const MIN_FRAMES: usize = 16;
    let Some(backtrace) = err.downcast_ref::<WasmBacktrace>() else {
        return false;
    };
    let frames = backtrace.frames();
    if frames.len() < MIN_FRAMES {
        return false;
    }
    let mut functions: Vec<u32> = frames.iter().map(|frame| frame.func_index()).collect();
    functions.sort_unstable();
    functions.dedup();
    functions.len() <= 3
}

/// The fault address lies in the top 1 MiB below 4 GiB.
fn wrapped_stack_address(err: &wasmtime::Error) -> bool {
    const PREFIX: &str = "memory fault at wasm address 0x";
    let text = format!("{err:#}");
    let Some(start) = text.find(PREFIX) else {
        return false;
    };
    let hex: String = text[start + PREFIX.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&hex, 16).is_ok_and(|address| {
        (u64::from(u32::MAX) - (1 << 20)..=u64::from(u32::MAX)).contains(&address)
    })
}
