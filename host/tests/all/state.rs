//! Shared state in a real `redis-server`: two engines ("replicas") sharing one
//! Redis see each other's invocation state, keep one byte budget, expire it,
//! refuse each other's used approvals, and ride out Redis stopping and
//! coming back. `cargo xtask test` installs `redis-server`; without it these
//! tests fail, they do not skip. Tasks in the store: [`tasks`]; sessions:
//! [`sessions`]; the first calls
//! after Redis comes back: [`recovery`]; approvals while Redis answers late:
//! [`slow`].

mod bus;
mod recovery;
mod sessions;
mod slow;
mod tasks;

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::state::{MAX_INVOCATION_BYTES, StateError, StateOptions};
use toolhost::toolset::{Confirm, Decision, SinglePlugin};
use toolhost::{
    CallError, Config, Context, Engine, EngineConfig, Plugin, PluginOptions, ToolOutput, ToolsetExt,
};
use toolhost_test_plugins::ECHO;

/// A `redis-server` of this test alone, on a free loopback port, in a
/// scratch directory, persisting nothing; killed when dropped (also when the
/// test fails).
struct Redis {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Redis {
    fn start() -> Self {
        let mut redis = Self {
            port: 0,
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        // A free port may be taken by another process before redis-server
        // binds it (it then exits): try another.
        for _ in 0..10 {
            redis.port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            if redis.spawn() {
                return redis;
            }
        }
        panic!("redis-server could not bind a free loopback port in 10 tries");
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server again on the same port, and waits until it answers.
    fn restart(&mut self) {
        assert!(
            self.spawn(),
            "redis-server could not bind port {} again (another process took it)",
            self.port
        );
    }

    /// Starts the server on `self.port` and waits until it answers; false if
    /// it ended first (the port was taken). The answer must come from this
    /// server: its `INFO` names the process.
    fn spawn(&mut self) -> bool {
        assert!(self.child.is_none(), "already running");
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            // `DEBUG SLEEP` makes a slow Redis on demand.
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run redis-server ({e}); these tests need it: `cargo xtask test` \
                     installs it (Debian: apt-get install redis-server)"
                )
            });
        let start = Instant::now();
        while self.process_id() != Some(child.id()) {
            if child.try_wait().ok().flatten().is_some() {
                return false;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not answer on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
        true
    }

    /// The process ID of the server answering on the port (`INFO server`).
    fn process_id(&self) -> Option<u32> {
        self.info("server", "process_id")
    }

    /// How many clients are connected now, this query's included (`INFO clients`).
    fn connected_clients(&self) -> Option<u32> {
        self.info("clients", "connected_clients")
    }

    /// The number `key` of `INFO section`, from a connection of its own.
    fn info(&self, section: &str, key: &str) -> Option<u32> {
        use std::io::BufRead as _;
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        stream
            .write_all(format!("INFO {section}\r\n").as_bytes())
            .ok()?;
        // A bulk string: `$LEN`, then `LEN` bytes of `key:value` lines.
        let mut reader = std::io::BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut body = vec![0; len];
        reader.read_exact(&mut body).ok()?;
        let prefix = format!("{key}:");
        String::from_utf8_lossy(&body)
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()).map(str::to_owned))
            .and_then(|value| value.trim().parse().ok())
    }

    /// Keeps the server busy (unresponsive) for `time`, from a thread;
    /// joining it waits until the server answers again.
    fn stall(&self, time: Duration) -> std::thread::JoinHandle<()> {
        let port = self.port;
        std::thread::spawn(move || {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let command = format!("DEBUG SLEEP {}\r\n", time.as_secs_f64());
            stream.write_all(command.as_bytes()).unwrap();
            let mut answer = [0; 5];
            stream.read_exact(&mut answer).unwrap();
            assert_eq!(&answer, b"+OK\r\n");
        })
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A server started on a port another server holds ends, and is not taken
/// for the one answering there (the race of choosing a free port first).
#[test]
fn a_redis_on_a_taken_port_is_not_mistaken_for_the_one_there() {
    let first = Redis::start();
    let mut second = Redis {
        port: first.port,
        dir: tempfile::tempdir().unwrap(),
        child: None,
    };
    assert!(
        !second.spawn(),
        "the first server's answer was taken for the second's"
    );
    assert!(first.process_id().is_some());
}

/// One replica: an engine whose state is in `redis` under `prefix`, with
/// `echo` loaded.
struct Replica {
    engine: Engine,
    echo: Plugin,
}

async fn replica(redis: &Redis, prefix: &str, ttl: Duration) -> Replica {
    // Generous: on a loaded 2-core CI machine a Redis round trip can stall
    // for hundreds of ms; only the slow-Redis test wants a short timeout.
    replica_with(redis, prefix, ttl, Duration::from_secs(5)).await
}

async fn replica_with(redis: &Redis, prefix: &str, ttl: Duration, timeout: Duration) -> Replica {
    replica_at(redis.url(), prefix, ttl, timeout).await
}

/// A replica of the Redis at `url` (one behind a proxy).
async fn replica_at(url: String, prefix: &str, ttl: Duration, timeout: Duration) -> Replica {
    let mut state = StateOptions::default();
    state
        .url(Some(url))
        .prefix(prefix)
        .ttl(ttl)
        .timeout(timeout);
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .max_concurrent_instances(32)
        .state(state);
    let engine = Engine::new(&config).unwrap();
    let echo = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    Replica { engine, echo }
}

async fn replicas(redis: &Redis, prefix: &str, ttl: Duration) -> (Replica, Replica) {
    (
        replica(redis, prefix, ttl).await,
        replica(redis, prefix, ttl).await,
    )
}

const HOUR: Duration = Duration::from_secs(3600);

async fn call(
    replica: &Replica,
    cx: &Context,
    tool: &str,
    arguments: Value,
) -> Result<ToolOutput, CallError> {
    SinglePlugin::new(replica.echo.clone())
        .invoke(cx, tool, arguments)
        .await
}

async fn remember(replica: &Replica, invocation: &str, key: &str, value: &str) {
    let cx = Context::new().with_invocation_id(invocation);
    call(
        replica,
        &cx,
        "remember",
        json!({"key": key, "value": value}),
    )
    .await
    .unwrap();
}

async fn recall(replica: &Replica, invocation: &str, key: &str) -> Value {
    let cx = Context::new().with_invocation_id(invocation);
    let out = call(replica, &cx, "remember", json!({"key": key}))
        .await
        .unwrap();
    out.result.unwrap()["value"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_redis_share_invocation_state() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis, "share:", HOUR).await;
    assert!(a.engine.state().is_shared());
    remember(&a, "inv-1", "city", "Lima").await;
    assert_eq!(recall(&b, "inv-1", "city").await, "Lima");
    // B overwrites, A reads; another invocation sees nothing.
    remember(&b, "inv-1", "city", "Quito").await;
    assert_eq!(recall(&a, "inv-1", "city").await, "Quito");
    assert_eq!(recall(&a, "inv-2", "city").await, Value::Null);
    let held = b.engine.invocation_state("inv-1").await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held["city"], "Quito");
    // State in Redis is not counted as this process's memory.
    assert_eq!(a.engine.invocation_state_bytes(), 0);
    // Ending the invocation on one replica ends it for all.
    a.engine.state().end_invocation("inv-1").await.unwrap();
    assert_eq!(recall(&b, "inv-1", "city").await, Value::Null);
    // The sync end (a session's end) deletes in the background.
    remember(&a, "inv-3", "k", "v").await;
    b.engine.end_invocation("inv-3");
    let start = Instant::now();
    while !a.engine.invocation_state("inv-3").await.unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(5), "never ended");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_byte_budget_holds_across_replicas_under_concurrent_writes() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis, "budget:", HOUR).await;
    let (a, b) = (Arc::new(a), Arc::new(b));
    // 24 writers, 12 per replica, each a distinct 300 kB key: 7.2 MB asked
    // for, 4 MiB allowed.
    let value = "v".repeat(300_000);
    let mut writers = Vec::new();
    for i in 0..24 {
        let replica = Arc::clone(if i % 2 == 0 { &a } else { &b });
        let value = value.clone();
        writers.push(tokio::spawn(async move {
            let cx = Context::new().with_invocation_id("big");
            let key = format!("key-{i:02}");
            call(
                &replica,
                &cx,
                "remember",
                json!({"key": key, "value": value}),
            )
            .await
        }));
    }
    let (mut stored, mut refused) = (0, 0);
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => stored += 1,
            Err(CallError::Failed { message, .. }) => {
                assert!(
                    message.contains(&format!("limited to {MAX_INVOCATION_BYTES} bytes")),
                    "{message}"
                );
                refused += 1;
            }
            Err(other) => panic!("unexpected: {other:?}"),
        }
    }
    let each = "key-00".len() + value.len() + toolhost::state::ENTRY_OVERHEAD;
    assert_eq!(
        stored,
        MAX_INVOCATION_BYTES / each,
        "as many as fit, no more"
    );
    assert_eq!(stored + refused, 24);
    let held = a.engine.invocation_state("big").await.unwrap();
    assert_eq!(held.len(), stored);
    // Freeing a key makes room again, on either replica.
    let cx = Context::new().with_invocation_id("big");
    let spare = held.keys().next().unwrap().clone();
    let err = call(&b, &cx, "remember", json!({"key": "more", "value": value}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
    remember(&a, "big", &spare, "").await;
    remember(&b, "big", "more", &value).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_and_used_approvals_expire_after_the_ttl() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis, "ttl:", Duration::from_secs(2)).await;
    remember(&a, "short", "k", "v").await;
    assert!(a.engine.state().claim_once("nonce").await.unwrap());
    assert!(!b.engine.state().claim_once("nonce").await.unwrap());
    // Each write refreshes the TTL of the whole invocation.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    remember(&b, "short", "k2", "v").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(recall(&a, "short", "k").await, "v");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(recall(&a, "short", "k").await, Value::Null);
    assert!(b.engine.invocation_state("short").await.unwrap().is_empty());
    assert!(b.engine.state().claim_once("nonce").await.unwrap());
}

fn approve(arguments: Value) -> Decision {
    Decision::Approve {
        arguments,
        payload: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_used_on_one_replica_is_refused_on_another() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis, "confirm:", HOUR).await;
    // One layer given the engine's store, the other from `toolhost.toml`.
    let on_a = Confirm::new(SinglePlugin::new(a.echo.clone()))
        .require("remember")
        .with_store(a.engine.state().clone());
    let text = format!(
        "[state]\nurl = \"{}\"\nprefix = \"confirm:\"\n[confirm]\ntools = [\"remember\"]\n",
        redis.url()
    );
    let config = Config::parse(&text, std::path::Path::new("toolhost.toml")).unwrap();
    let on_b = config.layered(SinglePlugin::new(b.echo.clone())).unwrap();
    let args = json!({"key": "k", "value": "v"});
    let cx = Context::new()
        .with_call_id("call-1")
        .with_invocation_id("approvals");
    match on_b.invoke(&cx, "remember", args.clone()).await {
        Err(CallError::ConfirmationRequired(request)) => assert_eq!(request.call_id, "call-1"),
        other => panic!("asks first: {other:?}"),
    }
    let approved = cx.clone().with_decision("call-1", approve(args.clone()));
    on_a.invoke(&approved, "remember", args.clone())
        .await
        .unwrap();
    refused_as_used(on_b.invoke(&approved, "remember", args.clone()).await);
    refused_as_used(on_a.invoke(&approved, "remember", args.clone()).await);
    // Racing the same approval on both replicas runs it once.
    let approved = cx
        .clone()
        .with_call_id("call-2")
        .with_decision("call-2", approve(args.clone()));
    let (x, y) = tokio::join!(
        on_a.invoke(&approved, "remember", args.clone()),
        on_b.invoke(&approved, "remember", args.clone()),
    );
    assert_eq!(
        [x.is_ok(), y.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{x:?} {y:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_set_keeps_approvals_on_the_engines_redis_client() {
    let redis = Redis::start();
    let a = replica(&redis, "one:", HOUR).await;
    let text = format!(
        "[state]\nurl = \"{}\"\nprefix = \"one:\"\n[confirm]\ntools = [\"remember\"]\n",
        redis.url()
    );
    let config = Config::parse(&text, std::path::Path::new("toolhost.toml")).unwrap();
    let set = config
        .layered_with_state(SinglePlugin::new(a.echo.clone()), a.engine.state())
        .unwrap();
    let args = json!({"key": "k", "value": "v"});
    let cx = Context::new()
        .with_call_id("call-1")
        .with_invocation_id("one");
    let approved = cx.clone().with_decision("call-1", approve(args.clone()));
    // The approval is claimed and the state written, both in Redis.
    set.invoke(&approved, "remember", args.clone())
        .await
        .unwrap();
    refused_as_used(set.invoke(&approved, "remember", args.clone()).await);
    assert_eq!(recall(&a, "one", "k").await, "v");
    // The engine's connection and this query's: the layer made no client of
    // its own (`Config::layered` does, for an embedder without an engine).
    assert_eq!(redis.connected_clients(), Some(2));
}

fn refused_as_used(result: Result<ToolOutput, CallError>) {
    match result {
        Err(CallError::ConfirmationRejected {
            reason: Some(reason),
            ..
        }) => assert!(reason.contains("already decided"), "{reason}"),
        other => panic!("a replay is refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_stops_only_calls_that_need_it_and_its_return_heals() {
    let mut redis = Redis::start();
    let a = Arc::new(replica_with(&redis, "down:", HOUR, Duration::from_millis(500)).await);
    let confirmed = Confirm::new(SinglePlugin::new(a.echo.clone()))
        .require("add")
        .with_store(a.engine.state().clone());
    remember(&a, "inv", "k", "before").await;
    // Load: calls that touch state keep coming while Redis goes away and back.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (a, stop) = (Arc::clone(&a), Arc::clone(&stop));
        tokio::spawn(async move {
            let (mut ok, mut failed) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let cx = Context::new().with_invocation_id("load");
                match call(&a, &cx, "remember", json!({"key": "n", "value": "x"})).await {
                    Ok(_) => ok += 1,
                    Err(CallError::State { .. }) => failed += 1,
                    Err(other) => panic!("only the typed state error may happen: {other:?}"),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (ok, failed)
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    redis.stop();

    let cx = Context::new().with_invocation_id("inv");
    let started = Instant::now();
    let err = call(&a, &cx, "remember", json!({"key": "k"}))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the timeout"
    );
    match &err {
        CallError::State { tool, reason } => {
            assert_eq!(tool, "remember");
            assert!(reason.is_unavailable(), "{reason:?}");
        }
        other => panic!("a typed state error, not a silent none: {other:?}"),
    }
    assert!(err.is_retryable());
    // A call that needs no state works.
    let out = call(&a, &cx, "add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(out.result.unwrap()["result"], 5);
    // An approved call does not run when its approval cannot be recorded.
    let approved = cx
        .clone()
        .with_call_id("down-1")
        .with_decision("down-1", approve(json!({"a": 1, "b": 1})));
    match confirmed
        .invoke(&approved, "add", json!({"a": 1, "b": 1}))
        .await
    {
        Err(CallError::State { .. }) => {}
        other => panic!("refused with the state error: {other:?}"),
    }
    assert!(matches!(
        a.engine.state().ping().await,
        Err(StateError::Unavailable { .. } | StateError::Timeout { .. })
    ));

    // Back on the same port: the same engine reconnects by itself.
    redis.restart();
    let started = Instant::now();
    loop {
        let cx = Context::new().with_invocation_id("inv");
        match call(&a, &cx, "remember", json!({"key": "k", "value": "after"})).await {
            Ok(_) => break,
            Err(CallError::State { .. }) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("calls work again after a restart: {other:?}"),
        }
    }
    assert_eq!(recall(&a, "inv", "k").await, "after");
    a.engine.state().ping().await.unwrap();
    confirmed
        .invoke(&approved, "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = load.await.unwrap();
    assert!(
        ok > 0 && failed > 0,
        "the load saw both: {ok} ok, {failed} failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_redis_times_out_only_the_calls_that_need_it() {
    let redis = Redis::start();
    let a = replica_with(&redis, "slow:", HOUR, Duration::from_millis(500)).await;
    remember(&a, "inv", "k", "v").await;
    let stalled = redis.stall(Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cx = Context::new().with_invocation_id("inv");
    let err = call(&a, &cx, "remember", json!({"key": "k"}))
        .await
        .unwrap_err();
    match &err {
        CallError::State {
            reason: StateError::Timeout { limit },
            ..
        } => assert_eq!(*limit, Duration::from_millis(500)),
        other => panic!("a typed timeout: {other:?}"),
    }
    // The call gave up while Redis still stalled, not after.
    assert!(!stalled.is_finished(), "the call waited out the stall");
    let out = call(&a, &cx, "add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(out.result.unwrap()["result"], 5);
    tokio::task::spawn_blocking(move || stalled.join().unwrap())
        .await
        .unwrap();
    // Answering again, it serves the same connection's next calls.
    let started = Instant::now();
    loop {
        match call(&a, &cx, "remember", json!({"key": "k"})).await {
            Ok(out) => {
                assert_eq!(out.result.unwrap()["value"], "v");
                break;
            }
            Err(CallError::State { .. }) if started.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("calls work again: {other:?}"),
        }
    }
}

#[tokio::test]
async fn without_a_url_state_stays_in_process_and_idle_invocations_expire() {
    let mut state = StateOptions::default();
    state.ttl(Duration::from_millis(300));
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .max_concurrent_instances(8)
        .state(state);
    let engine = Engine::new(&config).unwrap();
    assert!(!engine.state().is_shared());
    engine.state().ping().await.unwrap();
    let echo = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let local = Replica { engine, echo };
    remember(&local, "idle", "k", "v").await;
    assert!(local.engine.invocation_state_bytes() > 0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(recall(&local, "idle", "k").await, Value::Null);
    // A new invocation sweeps out what idled past the TTL.
    remember(&local, "next", "k", "v").await;
    assert_eq!(
        local.engine.invocation_state_bytes(),
        1 + 1 + toolhost::state::ENTRY_OVERHEAD
    );
}

/// A call's usage says whether it set state: the MCP server deletes a call's
/// own invocation state only then (no Redis round trip per stateless call).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_says_whether_a_call_set_state() {
    let redis = Redis::start();
    let replica = replica(&redis, "usage:", HOUR).await;
    let cx = Context::new().with_invocation_id("usage-1");
    let wrote = async |tool: &str, arguments: Value| {
        call(&replica, &cx, tool, arguments)
            .await
            .unwrap()
            .usage
            .wrote_state
    };
    assert!(!wrote("add", json!({"a": 1, "b": 2})).await);
    assert!(wrote("remember", json!({"key": "k", "value": "v"})).await);
    // A read sets nothing.
    assert!(!wrote("remember", json!({"key": "k"})).await);
}

/// The driver's `OwnInvocations` observer (which the MCP server adds to every
/// call) ends a call's invocation when the call is its own: its state goes
/// when it ends, and a named invocation's stays for its next call.
#[tokio::test]
async fn a_call_that_is_its_own_invocation_frees_its_state_when_it_ends() {
    let mut config = EngineConfig::default();
    config.cache_dir(None).max_concurrent_instances(8);
    let engine = Engine::new(&config).unwrap();
    let echo = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let set = SinglePlugin::new(echo);
    let ends = Arc::new(toolhost::toolset::OwnInvocations::new(&engine));
    let remember = json!({"key": "k", "value": "v"});
    let own = Context::new().with_observer(ends.clone());
    assert_eq!(own.invocation_id(), own.call_id());
    set.invoke(&own, "remember", remember.clone())
        .await
        .unwrap();
    assert_eq!(engine.invocation_state_bytes(), 0, "its own: freed");
    let named = Context::new()
        .with_invocation_id("turn-1")
        .with_observer(ends);
    set.invoke(&named, "remember", remember.clone())
        .await
        .unwrap();
    assert!(
        engine.invocation_state_bytes() > 0,
        "a named invocation's stays"
    );
    // Without the observer, nothing ends it (the embedder's to end).
    engine.end_invocation("turn-1");
    assert_eq!(engine.invocation_state_bytes(), 0);
    let unwatched = Context::new();
    set.invoke(&unwatched, "remember", remember).await.unwrap();
    assert!(engine.invocation_state_bytes() > 0);
}
