//! Per-call budgets: fuel, memory, tables, instances, deadline and output size.

use std::time::Duration;

use crate::error::Exhausted;

/// The budgets every call of a plugin runs under.
///
/// Defaults suit small tools; heavy runtimes (Python, JavaScript) may need more
/// memory and fuel. Set per plugin with [`PluginOptions`](crate::PluginOptions).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// let mut limits = toolhost::Limits::default();
/// limits.fuel(50_000_000).memory_bytes(32 << 20).deadline(Duration::from_secs(2));
/// assert_eq!(limits.get_fuel(), 50_000_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    fuel: u64,
    memory_bytes: u64,
    table_elements: u64,
    instances: u32,
    deadline: Duration,
    output_bytes: u64,
    stdio_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 2_000_000_000,
            memory_bytes: 256 << 20,
            table_elements: 100_000,
            instances: 64,
            deadline: Duration::from_secs(10),
            output_bytes: 4 << 20,
            stdio_bytes: 64 << 10,
        }
    }
}

impl Limits {
    /// Fuel (roughly, wasm instructions) a call may consume.
    pub fn fuel(&mut self, fuel: u64) -> &mut Self {
        self.fuel = fuel;
        self
    }

    /// The most linear memory, in bytes, any one memory of a call may grow to.
    pub fn memory_bytes(&mut self, bytes: u64) -> &mut Self {
        self.memory_bytes = bytes;
        self
    }

    /// The most elements any one table of a call may grow to.
    pub fn table_elements(&mut self, elements: u64) -> &mut Self {
        self.table_elements = elements;
        self
    }

    /// The most core instances (and, likewise, memories and tables) one call may create.
    pub fn instances(&mut self, instances: u32) -> &mut Self {
        self.instances = instances;
        self
    }

    /// The wall-clock time a call may take, from instantiation to its last chunk.
    pub fn deadline(&mut self, deadline: Duration) -> &mut Self {
        self.deadline = deadline;
        self
    }

    /// The most bytes a call may return (JSON plus parts, or all chunks of a stream).
    pub fn output_bytes(&mut self, bytes: u64) -> &mut Self {
        self.output_bytes = bytes;
        self
    }

    /// The most bytes of stdout and stderr (together) a call may write to the
    /// host's log; the rest is dropped (and counted in the log).
    pub fn stdio_bytes(&mut self, bytes: u64) -> &mut Self {
        self.stdio_bytes = bytes;
        self
    }

    /// The fuel budget.
    pub fn get_fuel(&self) -> u64 {
        self.fuel
    }

    /// The memory budget in bytes.
    pub fn get_memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// The table-element budget.
    pub fn get_table_elements(&self) -> u64 {
        self.table_elements
    }

    /// The instance budget.
    pub fn get_instances(&self) -> u32 {
        self.instances
    }

    /// The deadline.
    pub fn get_deadline(&self) -> Duration {
        self.deadline
    }

    /// The output budget in bytes.
    pub fn get_output_bytes(&self) -> u64 {
        self.output_bytes
    }

    /// The stdio budget in bytes.
    pub fn get_stdio_bytes(&self) -> u64 {
        self.stdio_bytes
    }
}

/// Enforces [`Limits`] inside a store. Growing past a limit traps with a typed
/// [`Exhausted`] error (rather than a failed `memory.grow` the guest might
/// misreport), so the host can name the limit that was hit.
pub(crate) struct Limiter {
    /// The largest size a memory was allowed to grow to.
    pub(crate) peak_memory: u64,
    memory_bytes: u64,
    table_elements: u64,
    instances: usize,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            peak_memory: 0,
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            instances: usize::try_from(limits.instances).unwrap_or(usize::MAX),
        }
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.memory_bytes {
            return Err(Exhausted::Memory {
                limit: self.memory_bytes,
            }
            .into());
        }
        self.peak_memory = self.peak_memory.max(desired as u64);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.table_elements {
            return Err(Exhausted::TableElements {
                limit: self.table_elements,
            }
            .into());
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.instances
    }

    fn memories(&self) -> usize {
        self.instances
    }
}
