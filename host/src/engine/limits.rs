//! Per-call budgets (fuel, memory, tables, instances, timeout and output
//! size) and the engine-wide budget of guest memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) use crate::error::Busy;
use crate::error::Exhausted;

/// The budgets every call of a plugin runs under.
///
/// Defaults suit small tools; heavy runtimes (Python, JavaScript) may need more
/// memory and fuel. Set per plugin with [`PluginOptions`](crate::PluginOptions).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// let mut limits = toolhost::engine::Limits::default();
/// limits.fuel(50_000_000).memory_bytes(32 << 20).timeout(Duration::from_secs(2));
/// assert_eq!(limits.fuel, 50_000_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Fuel (roughly, wasm instructions) a call may consume
    /// (`toolhost.toml`: `fuel`).
    pub fuel: u64,
    /// The most linear memory, in bytes, any one memory of a call may grow to
    /// (`memory_mib`).
    pub memory_bytes: u64,
    /// The most elements any one table of a call may grow to (`table_elements`).
    pub table_elements: u64,
    /// The most core instances (and, likewise, memories and tables) one call
    /// may create (`instances`).
    pub instances: u32,
    /// The wall-clock time a call may take, from instantiation to its last
    /// chunk (`timeout_ms`, `--timeout-ms`).
    pub timeout: Duration,
    /// The most bytes a call may return (JSON plus parts, or all chunks of a
    /// stream, each chunk counting 256 bytes more than its size, so a flood of
    /// empty chunks reaches the cap too) (`max_output_bytes`,
    /// `--max-output-bytes`).
    pub max_output_bytes: u64,
    /// The most bytes of stdout and stderr (together) a call may write to the
    /// host's log; the rest is dropped, and counted in the log
    /// (`max_stdio_bytes`).
    pub max_stdio_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 2_000_000_000,
            memory_bytes: 256 << 20,
            table_elements: 100_000,
            instances: 64,
            timeout: Duration::from_secs(10),
            max_output_bytes: 4 << 20,
            max_stdio_bytes: 64 << 10,
        }
    }
}

impl Limits {
    /// Sets [`Limits::fuel`].
    pub fn fuel(&mut self, fuel: u64) -> &mut Self {
        self.fuel = fuel;
        self
    }

    /// Sets [`Limits::memory_bytes`].
    pub fn memory_bytes(&mut self, bytes: u64) -> &mut Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets [`Limits::table_elements`].
    pub fn table_elements(&mut self, elements: u64) -> &mut Self {
        self.table_elements = elements;
        self
    }

    /// Sets [`Limits::instances`].
    pub fn instances(&mut self, instances: u32) -> &mut Self {
        self.instances = instances;
        self
    }

    /// Sets [`Limits::timeout`].
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`Limits::max_output_bytes`].
    pub fn max_output_bytes(&mut self, bytes: u64) -> &mut Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_stdio_bytes`].
    pub fn max_stdio_bytes(&mut self, bytes: u64) -> &mut Self {
        self.max_stdio_bytes = bytes;
        self
    }
}

/// Enforces [`Limits`] inside a store, and the engine-wide [`MemoryBudget`].
/// Growing past a per-call limit traps with a typed [`Exhausted`] error (rather
/// than a failed `memory.grow` the guest might misreport), so the host can
/// name the limit that was hit; growing past the engine's budget waits briefly
/// for other calls to give memory back, then traps with [`Busy`].
pub(crate) struct Limiter {
    /// The largest size a memory was allowed to grow to.
    pub(crate) peak_memory: u64,
    memory_bytes: u64,
    table_elements: u64,
    instances: usize,
    budget: Arc<MemoryBudget>,
    /// Bytes of linear memory this store holds from the engine's budget.
    held: u64,
    /// When the call must be over: a wait for memory never outlasts it.
    pub(crate) deadline: Instant,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits, budget: Arc<MemoryBudget>) -> Self {
        Self {
            peak_memory: 0,
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            instances: usize::try_from(limits.instances).unwrap_or(usize::MAX),
            budget,
            held: 0,
            deadline: Instant::now() + limits.timeout,
        }
    }
}

impl Drop for Limiter {
    fn drop(&mut self) {
        // The store (and with it every memory this limiter let grow) is gone.
        self.budget.release(self.held);
    }
}

#[wasmtime_wasi::async_trait]
impl wasmtime::ResourceLimiterAsync for Limiter {
    async fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.memory_bytes {
            return Err(Exhausted::Memory {
                limit: self.memory_bytes,
            }
            .into());
        }
        let more = (desired as u64).saturating_sub(current as u64);
        self.budget.reserve(more, self.deadline).await?;
        self.held += more;
        self.peak_memory = self.peak_memory.max(desired as u64);
        Ok(true)
    }

    async fn table_growing(
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

/// The engine-wide budget of guest linear memory: every store's memories
/// together (instances kept idle for reuse included). Admission control for
/// memory: a call whose growth would pass it waits up to
/// [`EngineConfig::memory_wait`](crate::EngineConfig::memory_wait) for other
/// calls to give memory back, then fails with [`Busy`].
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: u64,
    wait: Duration,
    used: AtomicU64,
    peak: AtomicU64,
    released: tokio::sync::Notify,
}

impl MemoryBudget {
    pub(crate) fn new(limit: u64, wait: Duration) -> Self {
        Self {
            limit,
            wait,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            released: tokio::sync::Notify::new(),
        }
    }

    /// The bytes held now.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes ever held at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }

    /// The budget.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    fn try_reserve(&self, bytes: u64) -> bool {
        let reserved = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            });
        match reserved {
            Ok(before) => {
                self.peak.fetch_max(before + bytes, Ordering::AcqRel);
                true
            }
            Err(_) => false,
        }
    }

    /// Takes `bytes` from the budget, waiting (up to the configured wait, and
    /// never past `deadline`) for other calls to release enough.
    async fn reserve(&self, bytes: u64, deadline: Instant) -> Result<(), Busy> {
        if bytes == 0 || self.try_reserve(bytes) {
            return Ok(());
        }
        let busy = Busy::Memory { limit: self.limit };
        if bytes > self.limit {
            // Never fits, however long it waits.
            return Err(busy);
        }
        let give_up = tokio::time::Instant::from_std(deadline.min(Instant::now() + self.wait));
        loop {
            // Registered before the check, so a release in between still wakes it.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if self.try_reserve(bytes) {
                return Ok(());
            }
            if tokio::time::timeout_at(give_up, released).await.is_err() {
                return if self.try_reserve(bytes) {
                    Ok(())
                } else {
                    Err(busy)
                };
            }
        }
    }

    fn release(&self, bytes: u64) {
        if bytes > 0 {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            self.released.notify_waiters();
        }
    }
}

/// Half the memory this process may use: the machine's, or its cgroup's limit
/// if lower. 4 GiB where neither can be read.
pub(crate) fn default_memory_budget() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| kib.saturating_mul(1024))
        });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    match (machine, cgroup) {
        (Some(m), Some(c)) => m.min(c) / 2,
        (Some(m), None) => m / 2,
        (None, Some(c)) => c / 2,
        (None, None) => 4 << 30,
    }
}
