//! How an [`Engine`](super::Engine) is set up: [`EngineConfig`] and the
//! choices it holds (the compilation tiers, the load limits).

use std::path::PathBuf;
use std::time::Duration;

use crate::state::StateOptions;

/// How the process-wide [`Engine`](super::Engine) is set up.
///
/// # Examples
/// ```no_run
/// let mut config = toolhost::EngineConfig::default();
/// config.cache_dir(Some("/var/cache/toolhost".into()));
/// let engine = toolhost::Engine::new(&config)?;
/// # Ok::<(), toolhost::engine::EngineError>(())
/// ```
///
/// Plain data: set the fields, or chain the setters of the same names, whose
/// docs say what each means.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// See [`EngineConfig::cache_dir()`].
    pub cache_dir: Option<PathBuf>,
    /// See [`EngineConfig::pooling()`].
    pub pooling: bool,
    /// See [`EngineConfig::epoch_tick()`].
    pub epoch_tick: Duration,
    /// See [`EngineConfig::max_wasm_stack()`].
    pub max_wasm_stack: usize,
    /// See [`EngineConfig::max_concurrent_instances()`]; `None` sizes the
    /// pool from the guest memory budget.
    pub max_concurrent_instances: Option<u32>,
    /// See [`EngineConfig::keep_resident()`].
    pub keep_resident: usize,
    /// See [`EngineConfig::max_idle_instances()`].
    pub max_idle_instances: usize,
    /// See [`EngineConfig::max_guest_memory()`].
    pub max_guest_memory: Option<u64>,
    /// See [`EngineConfig::memory_wait()`].
    pub memory_wait: Duration,
    /// What loading a plugin may take (`[load]` in `toolhost.toml`).
    pub load: LoadLimits,
    /// See [`EngineConfig::state()`].
    pub state: StateOptions,
    /// See [`EngineConfig::compilation()`].
    pub compilation: Compilation,
}

/// How plugins are compiled to native code (`[engine] compilation` in
/// `toolhost.toml`). See [`EngineConfig::compilation()`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Compilation {
    /// Baseline code first, so a plugin whose optimized code is not cached
    /// answers at once; optimized code compiled in the background, one plugin
    /// at a time, and used by every call that starts once it is ready (the
    /// default). Both are kept in the cache directory.
    #[default]
    Tiered,
    /// Optimized code only (Cranelift): the fastest calls, but a plugin whose
    /// code is not cached waits for it (seconds for a Python or JavaScript
    /// runtime).
    Optimized,
    /// Baseline code (Winch), unless the cache already holds the optimized
    /// code: the fastest load and slower calls, with nothing compiled in the
    /// background; for short-lived processes.
    Baseline,
}

impl Compilation {
    /// The name used in `toolhost.toml` (`tiered`, `optimized`, `baseline`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tiered => "tiered",
            Self::Optimized => "optimized",
            Self::Baseline => "baseline",
        }
    }
}

/// Which compiler's code runs a plugin's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tier {
    /// Winch, wasmtime's baseline compiler: compiles about ten times faster,
    /// runs slower.
    Baseline,
    /// Cranelift, wasmtime's optimizing compiler.
    Optimized,
}

impl Tier {
    /// Its name: `baseline` or `optimized`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Optimized => "optimized",
        }
    }
}

/// What loading a plugin may take: the time its guest code may run at load
/// (instantiating it and reading its declarations) and the size of what it
/// declares. Checked before any schema is compiled, for declarations read from
/// the guest and from a cache manifest alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LoadLimits {
    /// See [`EngineConfig::load_timeout`] (`timeout_ms`).
    pub timeout: Duration,
    /// See [`EngineConfig::max_tools`] (`max_tools`).
    pub max_tools: usize,
    /// See [`EngineConfig::max_schema_bytes`] (`max_schema_bytes`).
    pub max_schema_bytes: usize,
    /// See [`EngineConfig::max_declaration_bytes`] (`max_declaration_bytes`).
    pub max_declaration_bytes: usize,
}

impl Default for LoadLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            max_tools: 256,
            max_schema_bytes: 256 << 10,
            max_declaration_bytes: 4 << 20,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            cache_dir: default_cache_dir(),
            pooling: true,
            epoch_tick: Duration::from_millis(10),
            max_wasm_stack: 1 << 20,
            max_concurrent_instances: None,
            keep_resident: 1 << 20,
            max_idle_instances: 16,
            max_guest_memory: None,
            memory_wait: Duration::from_secs(1),
            load: LoadLimits::default(),
            state: StateOptions::default(),
            compilation: Compilation::default(),
        }
    }
}

/// The cache directory that follows the OS conventions (`$XDG_CACHE_HOME/toolhost`,
/// `~/.cache/toolhost`, `~/Library/Caches/toolhost`, ...), overridable with the
/// `TOOLHOST_CACHE_DIR` environment variable.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    dirs::cache_dir().map(|dir| dir.join("toolhost"))
}

impl EngineConfig {
    /// Where compiled code is cached (keyed by the component's content hash, the
    /// wasmtime version and this configuration), in `compiled/`, with each
    /// loaded plugin's manifest in `manifests/` and the plugins that failed
    /// to load in `failures/`. `None` disables all three.
    ///
    /// Every file there is sealed with a digest of its name and content,
    /// checked before it is used: a damaged one (a bad block, a cut or
    /// zeroed file, another entry's file under its name) is a warning and is
    /// replaced, compiled or loaded again. Beyond accidents, trust the
    /// directory like the `toolhost` binary itself: the compiled code in it
    /// runs natively in this process, so only the user running the host may
    /// be able to write to it. Manifests are a shortcut, not a source of
    /// truth: they are held to the load limits when read, and reconciled
    /// with the component once its code loads.
    pub fn cache_dir(&mut self, dir: Option<PathBuf>) -> &mut Self {
        self.cache_dir = dir;
        self
    }

    /// Use the pooling instance allocator (the default): instantiation reuses
    /// pre-reserved memory slots, which makes a fresh instance per call cheap.
    pub fn pooling(&mut self, enable: bool) -> &mut Self {
        self.pooling = enable;
        self
    }

    /// How often the epoch advances; deadlines are checked at this granularity.
    pub fn epoch_tick(&mut self, tick: Duration) -> &mut Self {
        self.epoch_tick = tick;
        self
    }

    /// The most stack, in bytes, wasm code may use before it traps with a stack overflow.
    pub fn max_wasm_stack(&mut self, bytes: usize) -> &mut Self {
        self.max_wasm_stack = bytes;
        self
    }

    /// How many component instances may be alive at once (the pooling
    /// allocator's size); past it a call fails with the retryable
    /// [`CallError::Busy`](crate::CallError::Busy). Unset, the pool is sized
    /// from the guest memory budget ([`max_guest_memory`](Self::max_guest_memory())):
    /// a slot keeps up to [`keep_resident`](Self::keep_resident()) of its memory,
    /// table and stack resident once used, outside the budget, so the pool gets
    /// as many slots as keep at most a quarter of the budget resident: 1000 (the
    /// most) from a 12 GiB budget on, 42 for the 512 MiB budget of a 1 GiB
    /// container. [`Engine::max_concurrent_instances`](super::Engine::max_concurrent_instances) tells the size in use.
    pub fn max_concurrent_instances(&mut self, n: u32) -> &mut Self {
        self.max_concurrent_instances = Some(n);
        self
    }

    /// How many bytes of each pooled linear memory, table and async stack stay
    /// resident between calls (default 1 MiB; it sizes the pool, see
    /// [`max_concurrent_instances`](Self::max_concurrent_instances())). A slot's next call then finds
    /// that much reset in place instead of faulting fresh pages in from the
    /// kernel: fast small calls for a little resident memory per slot used. On
    /// Linux 6.7+ only the pages a call dirtied are reset (`PAGEMAP_SCAN`);
    /// elsewhere the whole region is `memset`. Isolation is the same either way: no call
    /// sees another's bytes. 0 returns every page to the kernel after each call.
    pub fn keep_resident(&mut self, bytes: usize) -> &mut Self {
        self.keep_resident = bytes;
        self
    }

    /// How many instances may wait, idle, for their invocation's next call
    /// (default 16), for plugins loaded with
    /// `Reuse::PerInvocation`. Each holds a slot
    /// of [`max_concurrent_instances`](Self::max_concurrent_instances()) and its
    /// memory; the least recently used goes first.
    pub fn max_idle_instances(&mut self, n: usize) -> &mut Self {
        self.max_idle_instances = n;
        self
    }

    /// The most linear memory, in bytes, all calls together may hold (idle
    /// instances kept for reuse included). `None` (the default) takes half of
    /// the machine's memory, or of the process's cgroup limit if lower. A call
    /// whose memory would grow past it waits up to
    /// [`memory_wait`](Self::memory_wait()) for other calls to release memory,
    /// then fails with the retryable [`CallError::Busy`](crate::CallError::Busy).
    pub fn max_guest_memory(&mut self, bytes: Option<u64>) -> &mut Self {
        self.max_guest_memory = bytes;
        self
    }

    /// How long a call waits for guest memory when the engine's budget
    /// ([`max_guest_memory`](Self::max_guest_memory())) is in use (default 1 s;
    /// never past the call's own deadline).
    pub fn memory_wait(&mut self, wait: Duration) -> &mut Self {
        self.memory_wait = wait;
        self
    }

    /// How long a plugin's guest code may run while it loads: instantiating
    /// it and reading its declarations (default 5 s; compiling is not
    /// counted). Past it the plugin fails to load with
    /// [`LoadError::Timeout`](crate::LoadError::Timeout), without delaying the
    /// other plugins; with a cache directory the failure is remembered, so a
    /// restart does not wait again. Calls have their own deadline
    /// ([`Limits::timeout`](crate::engine::Limits::timeout)).
    pub fn load_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.load.timeout = timeout;
        self
    }

    /// The most tools one plugin may declare (default 256).
    pub fn max_tools(&mut self, n: usize) -> &mut Self {
        self.load.max_tools = n;
        self
    }

    /// The largest input or output schema one tool may declare, in bytes of
    /// JSON text (default 256 KiB).
    pub fn max_schema_bytes(&mut self, bytes: usize) -> &mut Self {
        self.load.max_schema_bytes = bytes;
        self
    }

    /// The most bytes one plugin's declarations may take together: names,
    /// descriptions and schemas (default 4 MiB).
    pub fn max_declaration_bytes(&mut self, bytes: usize) -> &mut Self {
        self.load.max_declaration_bytes = bytes;
        self
    }

    /// Where invocation state lives (`[state]` in `toolhost.toml`): in this
    /// process (the default), or in Redis when [`StateOptions::url`] names a
    /// server, shared by every engine (replica) that names the same one. See
    /// [`crate::state`].
    pub fn state(&mut self, options: StateOptions) -> &mut Self {
        self.state = options;
        self
    }

    /// How plugins are compiled (default [`Compilation::Tiered`]): baseline
    /// code first and optimized code in the background, or one of the two
    /// only. Where the baseline compiler cannot compile a plugin (a WebAssembly
    /// feature Winch lacks, such as exceptions or tail calls, or a platform it
    /// does not support) the plugin gets optimized code, as with
    /// [`Compilation::Optimized`]. Instances of baseline code are allocated on
    /// demand, not from the pool, and count toward
    /// [`max_concurrent_instances`](Self::max_concurrent_instances()) on their own.
    pub fn compilation(&mut self, compilation: Compilation) -> &mut Self {
        self.compilation = compilation;
        self
    }

    pub(crate) fn load_limits(&self) -> &LoadLimits {
        &self.load
    }
}
