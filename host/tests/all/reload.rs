//! Hot reload: a `PluginDir` follows its directory. New versions load off to
//! the side and swap in atomically, broken or half-written files never become
//! tools, and calls in flight finish on the version they started with.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolhost::tool::Part;
use toolhost::toolset::{Aliases, LoadState, ToolAliases, ToolsetChange};
use toolhost::{
    CallError, Config, Context, Engine, EngineConfig, PluginDir, PluginOptions, Toolset, ToolsetExt,
};
use toolhost_test_plugins::{CALC, ECHO, SLOW_DECLARE, TEXT};

use crate::engine;

/// How long the watcher gets to notice a change (no timing is asserted: this
/// only bounds a test that would otherwise hang).
const PATIENCE: Duration = Duration::from_secs(20);

const ECHO_TOOLS: &[&str] = &[
    "add",
    "countdown",
    "echo",
    "fail",
    "flag",
    "long_job",
    "order",
    "pixel",
    "remember",
    "slow_job",
    "whoami",
];
const TEXT_TOOLS: &[&str] = &["regex_find", "regex_replace", "split_lines", "word_count"];

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// Replaces `dir/name` atomically: write a temp file, then rename it over.
fn put(dir: &Path, name: &str, bytes: &[u8]) {
    let temp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&temp, bytes).unwrap();
    std::fs::rename(&temp, dir.join(name)).unwrap();
}

/// Copies a built plugin into the directory atomically.
fn put_plugin(dir: &Path, name: &str, plugin: &str) {
    put(dir, name, &std::fs::read(plugin).unwrap());
}

/// The names the set lists, sorted.
pub(crate) fn names(set: &PluginDir) -> Vec<String> {
    let mut names: Vec<String> = set
        .tools(&Context::new())
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    names.sort();
    names
}

/// Polls until `done` holds, failing after [`PATIENCE`].
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = tokio::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Receives events until one satisfies `wanted`, failing after [`PATIENCE`].
async fn event_where(
    events: &mut broadcast::Receiver<ToolsetChange>,
    what: &str,
    wanted: impl Fn(&ToolsetChange) -> bool,
) -> ToolsetChange {
    let wait = async {
        loop {
            let change = events.recv().await.unwrap();
            if wanted(&change) {
                return change;
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for an event: {what}"))
}

async fn call(set: &PluginDir, tool: &str, arguments: Value) -> Result<Value, CallError> {
    let output = set.invoke(&Context::new(), tool, arguments).await?;
    Ok(output.result.unwrap())
}

async fn open(dir: &Path) -> PluginDir {
    PluginDir::open(engine(), dir, PluginOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn reload_now_follows_adds_replacements_and_removals() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a plugin").unwrap();
    let set = open(dir.path()).await;
    assert!(names(&set).is_empty());
    assert!(set.status().is_empty());
    let mut events = set.subscribe();

    // Add.
    put_plugin(dir.path(), "a.wasm", ECHO);
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.added, strings(ECHO_TOOLS));
    assert!(change.removed.is_empty() && change.changed.is_empty() && change.failed.is_empty());
    assert_eq!(events.try_recv().unwrap(), change);
    assert_eq!(names(&set), strings(ECHO_TOOLS));
    assert_eq!(
        call(&set, "add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!({"result": 3})
    );
    let status = set.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].path, dir.path().join("a.wasm"));
    assert_eq!(status[0].plugin, "a");
    match &status[0].state {
        LoadState::Loaded { tools } => {
            let mut tools = tools.clone();
            tools.sort();
            assert_eq!(tools, strings(ECHO_TOOLS));
        }
        other => panic!("expected Loaded, got {other:?}"),
    }

    // Nothing changed: no event.
    let change = set.reload_now().await.unwrap();
    assert!(change.is_empty(), "{change:?}");
    assert!(events.try_recv().is_err());

    // Replace with another plugin.
    put_plugin(dir.path(), "a.wasm", TEXT);
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.added, strings(TEXT_TOOLS));
    assert_eq!(change.removed, strings(ECHO_TOOLS));
    assert_eq!(events.try_recv().unwrap(), change);
    assert_eq!(names(&set), strings(TEXT_TOOLS));
    let counts = call(&set, "word_count", json!({"text": "one two three"}))
        .await
        .unwrap();
    assert_eq!(counts["words"], 3);
    let err = call(&set, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");

    // A second plugin with the same tool names: both are qualified.
    put_plugin(dir.path(), "b.wasm", TEXT);
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.removed, strings(TEXT_TOOLS));
    assert!(change.added.contains(&"a.word_count".to_owned()));
    assert!(change.added.contains(&"b.word_count".to_owned()));
    assert_eq!(change.added.len(), 2 * TEXT_TOOLS.len());
    let counts = call(&set, "b.word_count", json!({"text": "x y"}))
        .await
        .unwrap();
    assert_eq!(counts["words"], 2);

    // Remove: the tools disappear, and bare names come back.
    std::fs::remove_file(dir.path().join("b.wasm")).unwrap();
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.added, strings(TEXT_TOOLS));
    assert_eq!(change.removed.len(), 2 * TEXT_TOOLS.len());
    std::fs::remove_file(dir.path().join("a.wasm")).unwrap();
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.removed, strings(TEXT_TOOLS));
    assert!(names(&set).is_empty());
    assert!(set.status().is_empty());
}

#[tokio::test]
async fn watcher_follows_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let set = open(dir.path()).await;
    set.watch().unwrap();
    set.watch().unwrap(); // a second call does nothing
    let mut events = set.subscribe();

    put_plugin(dir.path(), "a.wasm", ECHO);
    eventually("echo's tools", || names(&set) == strings(ECHO_TOOLS)).await;
    assert_eq!(
        call(&set, "add", json!({"a": 40, "b": 2})).await.unwrap(),
        json!({"result": 42})
    );
    event_where(&mut events, "echo added", |c| {
        c.added.contains(&"whoami".to_owned())
    })
    .await;

    put_plugin(dir.path(), "a.wasm", CALC);
    eventually("calc's tools", || {
        names(&set) == strings(&["convert_units", "evaluate"])
    })
    .await;
    let change = event_where(&mut events, "echo replaced by calc", |c| {
        c.added.contains(&"evaluate".to_owned())
    })
    .await;
    assert_eq!(change.removed, strings(ECHO_TOOLS));
    let value = call(&set, "evaluate", json!({"expression": "2 * 21"}))
        .await
        .unwrap();
    assert_eq!(value["result"], 42.0);

    std::fs::remove_file(dir.path().join("a.wasm")).unwrap();
    eventually("no tools", || names(&set).is_empty()).await;
    let change = event_where(&mut events, "calc removed", |c| !c.removed.is_empty()).await;
    assert_eq!(change.removed, strings(&["convert_units", "evaluate"]));
    assert!(set.status().is_empty());
}

#[tokio::test]
async fn a_broken_new_version_keeps_the_old_one_serving() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "a.wasm", ECHO);
    let set = open(dir.path()).await;
    assert_eq!(names(&set), strings(ECHO_TOOLS));
    let mut events = set.subscribe();

    // A truncated new version.
    let text = std::fs::read(TEXT).unwrap();
    put(dir.path(), "a.wasm", &text[..text.len() / 2]);
    let change = set.reload_now().await.unwrap();
    assert!(change.added.is_empty() && change.removed.is_empty());
    assert_eq!(change.failed.len(), 1);
    assert_eq!(change.failed[0].0, dir.path().join("a.wasm"));
    assert!(change.failed[0].1.contains("a.wasm"), "{change:?}");
    assert_eq!(events.try_recv().unwrap(), change);
    let status = set.status();
    match &status[0].state {
        LoadState::Failed {
            error,
            serving_previous,
        } => {
            assert!(*serving_previous);
            assert!(error.contains("truncated"), "{error}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    // The old version goes on serving.
    assert_eq!(names(&set), strings(ECHO_TOOLS));
    assert_eq!(
        call(&set, "add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!({"result": 3})
    );
    // The same broken bytes are not reported again.
    assert!(set.reload_now().await.unwrap().is_empty());

    // A broken file with no previous version offers nothing.
    put(dir.path(), "b.wasm", b"\0asm\x0d\0\x01\0garbage");
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.failed.len(), 1);
    assert_eq!(names(&set), strings(ECHO_TOOLS));
    let status = set.status();
    assert_eq!(status.len(), 2);
    assert!(matches!(
        status[1].state,
        LoadState::Failed {
            serving_previous: false,
            ..
        }
    ));

    // Fixing the file recovers.
    put_plugin(dir.path(), "a.wasm", TEXT);
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.added, strings(TEXT_TOOLS));
    assert_eq!(change.removed, strings(ECHO_TOOLS));
    assert!(change.failed.is_empty());
    assert!(matches!(set.status()[0].state, LoadState::Loaded { .. }));
    std::fs::remove_file(dir.path().join("b.wasm")).unwrap();
    set.reload_now().await.unwrap();
    assert_eq!(set.status().len(), 1);
}

/// Calls whichever of `tools` the set lists, forever, asserting each call
/// succeeds; returns how many calls it made.
fn probe(set: Arc<PluginDir>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut calls = 0;
        while !stop.load(Ordering::Relaxed) {
            let cx = Context::new();
            for tool in set.tools(&cx) {
                let arguments = match tool.spec().name.as_str() {
                    "whoami" => json!({}),
                    "word_count" => json!({"text": "a b"}),
                    _ => continue,
                };
                let output = crate::run_tool(&*tool, &cx, arguments).await;
                let output = output.unwrap_or_else(|e| panic!("a listed tool failed: {e}"));
                assert!(output.result.is_some());
                calls += 1;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        calls
    })
}

/// Writes `bytes` in place (not atomically) in two halves with a pause between.
async fn write_in_halves(path: &Path, bytes: &[u8], pause: Duration) {
    use tokio::io::AsyncWriteExt;
    let (first, rest) = bytes.split_at(bytes.len() / 2);
    let mut file = tokio::fs::File::create(path).await.unwrap();
    file.write_all(first).await.unwrap();
    file.flush().await.unwrap();
    tokio::time::sleep(pause).await;
    file.write_all(rest).await.unwrap();
    file.flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_file_never_becomes_a_broken_tool() {
    let dir = tempfile::tempdir().unwrap();
    let set = Arc::new(open(dir.path()).await);
    let stop = Arc::new(AtomicBool::new(false));
    let prober = probe(Arc::clone(&set), Arc::clone(&stop));
    let echo = std::fs::read(ECHO).unwrap();
    let text = std::fs::read(TEXT).unwrap();

    // A rescan that starts while the file is half written waits for it to settle.
    let path = dir.path().join("a.wasm");
    let writer = write_in_halves(&path, &echo, Duration::from_millis(30));
    let (change, ()) = tokio::join!(
        async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            set.reload_now().await.unwrap()
        },
        writer
    );
    // On a loaded machine the first rescan may have seen the half and failed
    // (without offering any tool); a rescan after the write completes recovers.
    if !change.failed.is_empty() {
        eprintln!("the first rescan saw a half-written file: {change:?}");
    }
    set.reload_now().await.unwrap();
    assert_eq!(names(&set), strings(ECHO_TOOLS));
    assert!(matches!(set.status()[0].state, LoadState::Loaded { .. }));

    // With the watcher: the same file is rewritten in place with another
    // plugin, pausing in the middle longer than the debounce and settle windows.
    set.watch().unwrap();
    write_in_halves(&path, &text, Duration::from_millis(600)).await;
    eventually("text's tools", || names(&set) == strings(TEXT_TOOLS)).await;
    eventually("a loaded status", || {
        matches!(set.status()[0].state, LoadState::Loaded { .. })
    })
    .await;

    stop.store(true, Ordering::Relaxed);
    let calls = prober.await.unwrap();
    assert!(calls > 0);
}

#[tokio::test]
async fn a_call_in_flight_finishes_on_its_version() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "a.wasm", ECHO);
    let set = open(dir.path()).await;
    let cx = Context::new();
    let countdown = set.find(&cx, "countdown").unwrap();
    let add = set.find(&cx, "add").unwrap();
    let mut stream = crate::stream_tool(&*countdown, &cx, json!({"from": 20}))
        .await
        .unwrap();
    let mut lines = Vec::new();
    for _ in 0..5 {
        match stream.next().await.unwrap().unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }

    put_plugin(dir.path(), "a.wasm", TEXT);
    set.reload_now().await.unwrap();
    assert_eq!(names(&set), strings(TEXT_TOOLS));

    // The stream started on the old version and finishes on it.
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    let expected: Vec<String> = (0..=20).rev().map(|i| format!("{i}\n")).collect();
    assert_eq!(lines, expected);
    // A tool taken before the swap still calls the version it came from.
    let out = crate::run_tool(&*add, &cx, json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
    // A call that starts after the swap sees the new version.
    let err = set
        .invoke(&cx, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
}

/// Outcome counters of the concurrent test.
#[derive(Default)]
struct Tally {
    attempts: AtomicU64,
    echo_ok: AtomicU64,
    echo_unknown: AtomicU64,
    text_ok: AtomicU64,
    text_unknown: AtomicU64,
    calc_ok: AtomicU64,
    calc_unknown: AtomicU64,
    held_ok: AtomicU64,
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// One caller: by name (`echo` from version A, `word_count` from version B,
/// `evaluate` from the plugin added and removed), and through a tool taken
/// from a listing (which must always succeed, even if swapped out meanwhile).
/// Every answer is checked completely; the only accepted failure is
/// `UnknownTool` for a name the test removed.
async fn caller(id: usize, set: Arc<PluginDir>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let cx = Context::new();
        let message = format!("caller {id} call {i}");

        count(&tally.attempts);
        match set.invoke(&cx, "echo", json!({"message": message})).await {
            Ok(out) => {
                let result = out.result.unwrap();
                assert_eq!(result["message"], message.as_str(), "{result}");
                count(&tally.echo_ok);
            }
            Err(CallError::UnknownTool { .. }) => count(&tally.echo_unknown),
            Err(e) => panic!("echo: {e}"),
        }

        count(&tally.attempts);
        match set
            .invoke(&cx, "word_count", json!({"text": "one two three"}))
            .await
        {
            Ok(out) => {
                let result = out.result.unwrap();
                assert_eq!(result["words"], 3, "{result}");
                assert_eq!(result["characters"], 13, "{result}");
                count(&tally.text_ok);
            }
            Err(CallError::UnknownTool { .. }) => count(&tally.text_unknown),
            Err(e) => panic!("word_count: {e}"),
        }

        count(&tally.attempts);
        match set
            .invoke(&cx, "evaluate", json!({"expression": format!("{i} + 1")}))
            .await
        {
            Ok(out) => {
                let result = out.result.unwrap();
                assert_eq!(result["result"], (i + 1) as f64, "{result}");
                count(&tally.calc_ok);
            }
            Err(CallError::UnknownTool { .. }) => count(&tally.calc_unknown),
            Err(e) => panic!("evaluate: {e}"),
        }

        // Take a tool from the listing, then call it: it may be swapped out
        // in between, and must still answer from the version it came from.
        count(&tally.attempts);
        let tools = set.tools(&cx);
        let held = tools
            .iter()
            .find(|t| matches!(t.spec().name.as_str(), "echo" | "word_count"));
        match held {
            Some(tool) if tool.spec().name == "echo" => {
                tokio::task::yield_now().await;
                let out = crate::run_tool(&**tool, &cx, json!({"message": message}))
                    .await
                    .unwrap();
                assert_eq!(out.result.unwrap()["message"], message.as_str());
                count(&tally.held_ok);
            }
            Some(tool) => {
                tokio::task::yield_now().await;
                let out = crate::run_tool(&**tool, &cx, json!({"text": "a b"}))
                    .await
                    .unwrap();
                assert_eq!(out.result.unwrap()["words"], 2);
                count(&tally.held_ok);
            }
            None => panic!("neither version listed: {:?}", names(&set)),
        }
        // Leave the reloads some CPU: the machine may have only two cores.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_while_plugins_are_replaced_added_and_removed() {
    const CALLERS: usize = 8;
    const REPLACEMENTS: usize = 10;

    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "a.wasm", ECHO);
    let set = Arc::new(open(dir.path()).await);
    // The watcher runs too, racing the explicit rescans.
    set.watch().unwrap();
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..CALLERS)
        .map(|id| {
            tokio::spawn(caller(
                id,
                Arc::clone(&set),
                Arc::clone(&tally),
                Arc::clone(&stop),
            ))
        })
        .collect();

    let echo = std::fs::read(ECHO).unwrap();
    let text = std::fs::read(TEXT).unwrap();
    let wait_for_answer = |counter: fn(&Tally) -> &AtomicU64, what: &'static str| {
        let tally = Arc::clone(&tally);
        let before = counter(&tally).load(Ordering::Relaxed);
        async move {
            eventually(what, || counter(&tally).load(Ordering::Relaxed) > before).await;
        }
    };
    for round in 0..REPLACEMENTS {
        let to_text = round % 2 == 0;
        put(dir.path(), "a.wasm", if to_text { &text } else { &echo });
        match round % 4 {
            1 => put_plugin(dir.path(), "c.wasm", CALC),
            3 => std::fs::remove_file(dir.path().join("c.wasm")).unwrap(),
            _ => {}
        }
        let started = std::time::Instant::now();
        set.reload_now().await.unwrap();
        eprintln!("round {round}: rescan took {:?}", started.elapsed());
        let expected = if to_text { TEXT_TOOLS } else { ECHO_TOOLS };
        let listed = names(&set);
        assert!(
            expected.iter().all(|n| listed.contains(&(*n).to_owned())),
            "{listed:?}"
        );
        assert_eq!(
            listed.contains(&"evaluate".to_owned()),
            round % 4 >= 1 && round % 4 < 3
        );
        // Let the callers reach the new version before the next swap.
        if to_text {
            wait_for_answer(|t| &t.text_ok, "an answer from the new text version").await;
        } else {
            wait_for_answer(|t| &t.echo_ok, "an answer from the new echo version").await;
        }
        if round % 4 == 1 {
            wait_for_answer(|t| &t.calc_ok, "an answer from the added calc").await;
        }
    }

    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.await.unwrap(); // a failed assertion in a caller fails here
    }
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    let answered = load(&tally.echo_ok)
        + load(&tally.echo_unknown)
        + load(&tally.text_ok)
        + load(&tally.text_unknown)
        + load(&tally.calc_ok)
        + load(&tally.calc_unknown)
        + load(&tally.held_ok);
    assert_eq!(answered, load(&tally.attempts), "no call is lost");
    assert!(load(&tally.echo_ok) > 0 && load(&tally.text_ok) > 0 && load(&tally.calc_ok) > 0);
    for status in set.status() {
        assert!(
            matches!(status.state, LoadState::Loaded { .. }),
            "{status:?}"
        );
    }
    eprintln!(
        "{} calls: echo {} ok / {} unknown, word_count {} ok / {} unknown, evaluate {} ok / {} unknown, held {} ok",
        load(&tally.attempts),
        load(&tally.echo_ok),
        load(&tally.echo_unknown),
        load(&tally.text_ok),
        load(&tally.text_unknown),
        load(&tally.calc_ok),
        load(&tally.calc_unknown),
        load(&tally.held_ok),
    );
}

#[tokio::test]
async fn dropping_the_dir_ends_the_watcher() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "a.wasm", ECHO);
    let set = open(dir.path()).await;
    set.watch().unwrap();
    let mut events = set.subscribe();
    // Let the watcher's catch-up rescan run.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(set);
    // The watcher holds no strong reference: the set (and its event sender) is gone.
    let closed = tokio::time::timeout(PATIENCE, async {
        loop {
            match events.recv().await {
                Err(broadcast::error::RecvError::Closed) => return,
                _ => continue,
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the set outlived its PluginDir");
    // And its task ends.
    let metrics = tokio::runtime::Handle::current().metrics();
    eventually("the watcher task to end", || metrics.num_alive_tasks() == 0).await;
    // Changes after the drop are harmless.
    put_plugin(dir.path(), "b.wasm", TEXT);
    std::fs::remove_file(dir.path().join("a.wasm")).unwrap();
}

#[tokio::test]
async fn open_configured_gives_each_plugin_its_own_options_on_load_and_reload() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "echo.wasm", ECHO);
    put_plugin(dir.path(), "tight.wasm", ECHO);
    let set = PluginDir::open_configured(engine(), dir.path(), |name: &str| {
        let mut options = PluginOptions::default();
        if name.starts_with("tight") {
            options.limits.max_output_bytes(8);
        }
        options
    })
    .await
    .unwrap();
    let arguments = json!({"message": "longer than eight bytes"});
    let echoed = call(&set, "echo.echo", arguments.clone()).await.unwrap();
    assert_eq!(echoed["message"], "longer than eight bytes");
    let capped = |err: CallError| {
        assert!(
            matches!(
                &err,
                CallError::Exhausted {
                    budget: toolhost::error::Exhausted::Output { limit: 8 },
                    ..
                }
            ),
            "{err}"
        );
    };
    capped(
        call(&set, "tight.echo", arguments.clone())
            .await
            .unwrap_err(),
    );
    // A file added later gets its options too.
    put_plugin(dir.path(), "tight2.wasm", ECHO);
    set.reload_now().await.unwrap();
    capped(call(&set, "tight2.echo", arguments).await.unwrap_err());
}

#[tokio::test]
async fn a_slow_plugin_does_not_delay_the_others() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "echo.wasm", ECHO);
    // Its `declarations` sleeps for an hour; the load deadline is longer.
    put_plugin(dir.path(), "slow.wasm", SLOW_DECLARE);
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .load_timeout(Duration::from_secs(7200));
    let engine = Engine::new(&config).unwrap();
    let set = PluginDir::start(&engine, dir.path(), PluginOptions::default())
        .await
        .unwrap();
    eventually("echo's tools", || names(&set) == strings(ECHO_TOOLS)).await;
    assert_eq!(
        call(&set, "add", json!({"a": 40, "b": 2})).await.unwrap(),
        json!({"result": 42})
    );
    let mut echo_tools = strings(ECHO_TOOLS);
    let states: Vec<(String, LoadState)> = set
        .status()
        .into_iter()
        .map(|status| match status.state {
            LoadState::Loaded { mut tools } => {
                tools.sort();
                (status.plugin, LoadState::Loaded { tools })
            }
            state => (status.plugin, state),
        })
        .collect();
    echo_tools.sort();
    assert_eq!(
        states,
        [
            ("echo".to_owned(), LoadState::Loaded { tools: echo_tools }),
            ("slow".to_owned(), LoadState::Loading),
        ],
        "echo serves while slow is still loading"
    );
    // Dropping the set stops the slow load.
    drop(set);
}

#[tokio::test]
async fn the_watcher_follows_a_directory_deleted_and_created_again() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("plugins");
    std::fs::create_dir(&dir).unwrap();
    put_plugin(&dir, "a.wasm", ECHO);
    let set = open(&dir).await;
    set.watch().unwrap();
    let mut events = set.subscribe();

    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    put_plugin(&dir, "b.wasm", TEXT);
    event_where(&mut events, "text added in the new directory", |c| {
        c.added.contains(&"word_count".to_owned())
    })
    .await;
    eventually("text's tools only", || names(&set) == strings(TEXT_TOOLS)).await;

    // And the new directory is followed from now on.
    put_plugin(&dir, "c.wasm", CALC);
    event_where(&mut events, "calc added", |c| {
        c.added.contains(&"evaluate".to_owned())
    })
    .await;
    let value = call(&set, "evaluate", json!({"expression": "2 * 21"}))
        .await
        .unwrap();
    assert_eq!(value["result"], 42.0);
}

#[cfg(unix)]
#[tokio::test]
async fn the_watcher_follows_a_symlink_pointed_elsewhere() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    put_plugin(&a, "echo.wasm", ECHO);
    put_plugin(&b, "text.wasm", TEXT);
    let link = root.path().join("plugins");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let set = open(&link).await;
    set.watch().unwrap();
    let mut events = set.subscribe();

    // Re-pointed atomically, as a deployment does: a new link renamed over the old.
    let next = root.path().join("plugins.next");
    std::os::unix::fs::symlink(&b, &next).unwrap();
    std::fs::rename(&next, &link).unwrap();
    let change = event_where(&mut events, "text added", |c| {
        c.added.contains(&"word_count".to_owned())
    })
    .await;
    assert_eq!(change.removed, strings(ECHO_TOOLS));
    assert_eq!(names(&set), strings(TEXT_TOOLS));

    // The directory the link points to now is the one followed.
    put_plugin(&b, "calc.wasm", CALC);
    event_where(&mut events, "calc added", |c| {
        c.added.contains(&"evaluate".to_owned())
    })
    .await;
    assert!(
        set.status().iter().all(|s| s.path.starts_with(&link)),
        "{:?}",
        set.status()
    );
}

#[tokio::test]
async fn an_unrelated_plugin_never_breaks_a_name() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "calc.wasm", CALC);
    let set = open(dir.path()).await;
    let evaluate = json!({"expression": "1+2"});
    for name in ["evaluate", "calc.evaluate"] {
        let out = call(&set, name, evaluate.clone()).await.unwrap();
        assert_eq!(out["result"], 3.0, "{name}");
    }

    // A plugin whose tools clash with none: every name keeps working.
    put_plugin(dir.path(), "text.wasm", TEXT);
    set.reload_now().await.unwrap();
    for name in ["evaluate", "calc.evaluate"] {
        call(&set, name, evaluate.clone()).await.unwrap();
    }
    for name in ["word_count", "text.word_count"] {
        let out = call(&set, name, json!({"text": "a b"})).await.unwrap();
        assert_eq!(out["words"], 2, "{name}");
    }

    // One that clashes: the bare name becomes ambiguous and says so; the
    // qualified names, and the names it does not clash with, keep working.
    put_plugin(dir.path(), "text2.wasm", TEXT);
    set.reload_now().await.unwrap();
    let err = call(&set, "word_count", json!({"text": "a"}))
        .await
        .unwrap_err();
    match &err {
        CallError::AmbiguousTool { candidates, .. } => {
            assert_eq!(candidates, &["text.word_count", "text2.word_count"]);
        }
        other => panic!("expected an ambiguous name, got {other:?}"),
    }
    for name in ["text.word_count", "text2.word_count"] {
        call(&set, name, json!({"text": "a"})).await.unwrap();
    }
    for name in ["evaluate", "calc.evaluate"] {
        call(&set, name, evaluate.clone()).await.unwrap();
    }

    // The clash goes away: the bare name is back.
    std::fs::remove_file(dir.path().join("text2.wasm")).unwrap();
    set.reload_now().await.unwrap();
    call(&set, "word_count", json!({"text": "a"}))
        .await
        .unwrap();
}

/// The names of `config` that match nothing in `set` now.
fn unmatched(config: &Config, set: &PluginDir) -> Vec<String> {
    let files: Vec<String> = set.status().into_iter().map(|s| s.plugin).collect();
    let tools = set.tools(&Context::new());
    let specs: Vec<&toolhost::ToolSpec> = tools.iter().map(|t| t.spec()).collect();
    config
        .unmatched_names(files.iter().map(String::as_str), &specs)
        .iter()
        .map(|name| format!("{} {}", name.place(), name.name))
        .collect()
}

#[tokio::test]
async fn a_stale_alias_waits_for_its_tool_and_comes_back_on_reload() {
    let dir = tempfile::tempdir().unwrap();
    put_plugin(dir.path(), "calc.wasm", CALC);
    put_plugin(dir.path(), "text.wasm", TEXT);
    let set = Arc::new(open(dir.path()).await);
    let config = Config::parse(
        r#"
[confirm]
tools = ["text.word_count"]
[aliases.tools]
wc = "word_count"
[plugin.text.limits]
fuel = 100_000_000
"#,
        Path::new("toolhost.toml"),
    )
    .unwrap();
    let aliases = Aliases::new(
        Arc::clone(&set),
        [("word_count", ToolAliases::new().name("wc"))],
    )
    .unwrap();
    let cx = Context::new();
    let counted = aliases
        .invoke(&cx, "wc", json!({"text": "a b c"}))
        .await
        .unwrap();
    assert_eq!(counted.result.unwrap()["words"], 3);
    assert!(unmatched(&config, &set).is_empty());

    // Its tool goes: the alias is not listed, a call of it says what it
    // points at, and the configuration check names it (and the others).
    std::fs::remove_file(dir.path().join("text.wasm")).unwrap();
    set.reload_now().await.unwrap();
    assert!(
        !aliases
            .tools(&cx)
            .iter()
            .any(|t| t.spec().name == "wc" || t.spec().name == "word_count")
    );
    match aliases.invoke(&cx, "wc", json!({"text": "a"})).await {
        Err(CallError::AliasUnresolved { alias, tool, .. }) => {
            assert_eq!((alias.as_str(), tool.as_str()), ("wc", "word_count"));
        }
        other => panic!("expected an unresolved alias, got {other:?}"),
    }
    assert_eq!(aliases.unresolved(&cx), [("wc", "word_count")]);
    assert_eq!(
        unmatched(&config, &set),
        [
            "[confirm] tools text.word_count",
            "[aliases.tools] wc word_count",
            "[plugin.text] text",
        ]
    );
    // Other tools are unaffected.
    aliases
        .invoke(&cx, "evaluate", json!({"expression": "1"}))
        .await
        .unwrap();

    // It comes back: so does the alias.
    put_plugin(dir.path(), "text.wasm", TEXT);
    set.reload_now().await.unwrap();
    let counted = aliases
        .invoke(&cx, "wc", json!({"text": "a b"}))
        .await
        .unwrap();
    assert_eq!(counted.result.unwrap()["words"], 2);
    assert!(aliases.unresolved(&cx).is_empty());
    assert!(unmatched(&config, &set).is_empty());
}
