//! A damaged cache directory never takes the host down nor changes what it
//! serves: `toolhost serve` restarted on a cache whose files were damaged
//! (a random block, cut short, zeroed, swapped between two plugins, replaced
//! by another plugin's valid file) answers as it did, over stdio and HTTP,
//! with one warning per damaged file it read; and the start after that is
//! warm again (nothing compiled or written).

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_test_plugins::{BAD_SCHEMA, ECHO, OTHER_WORLD, RAW};

/// The directories of the cache that hold files the host reads back.
const KINDS: [&str; 3] = ["compiled", "manifests", "failures"];

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

/// `toolhost serve` on a plugins directory and a cache directory.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<Receiver<String>>,
    stderr: Receiver<String>,
    log: Vec<String>,
    port: Option<u16>,
    next_id: u64,
}

fn follow(read: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(read).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Server {
    fn start(plugins: &Path, cache: &Path, transport: Transport) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .arg("--plugins")
            .arg(plugins)
            .arg("--cache-dir")
            .arg(cache)
            .args(["serve", "--no-watch"])
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Transport::Http = transport {
            command.args(["--http", "127.0.0.1:0"]);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = Some(follow(child.stdout.take().unwrap()));
        let stderr = follow(child.stderr.take().unwrap());
        let mut server = Self {
            child,
            stdin,
            stdout,
            stderr,
            log: Vec::new(),
            port: None,
            next_id: 1,
        };
        match transport {
            Transport::Http => {
                let line = server.wait_for("serving MCP at http://127.0.0.1:");
                let port = line
                    .split_once("127.0.0.1:")
                    .and_then(|(_, rest)| rest.split('/').next())
                    .and_then(|port| port.parse().ok())
                    .unwrap_or_else(|| panic!("a port in {line:?}"));
                server.port = Some(port);
            }
            Transport::Stdio => {
                let init = json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "cache-test", "version": "0"},
                });
                server.request("initialize", init);
                server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            }
        }
        server
    }

    /// Waits for a log line that contains `needle` (hang guard: two minutes).
    fn wait_for(&mut self, needle: &str) -> String {
        let give_up = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(line) = self.log.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            let left = give_up.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(_) => panic!("no log line with {needle:?}: {:#?}", self.log),
            }
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// One request's result (or error), over the server's transport.
    fn request(&mut self, method: &str, params: Value) -> Value {
        if let Some(port) = self.port {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let (status, answer) =
                runtime.block_on(crate::auth::request(port, None, method, params));
            assert_eq!(status, 200, "{answer}");
            return answer;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let lines = self.stdout.as_ref().unwrap();
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(120))
                .expect("the server answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// What the server serves: its tools, and the answers of one call of
    /// each plugin that loads.
    fn answers(&mut self) -> Value {
        let listed = self.request("tools/list", json!({}));
        let mut tools: Vec<String> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a listing: {listed}"))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        tools.sort();
        let add = self.request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        );
        let bare = self.request(
            "tools/call",
            json!({"name": "bare_string", "arguments": {}}),
        );
        json!({"tools": tools, "add": add["result"], "bare_string": bare["result"]})
    }

    /// Stops the server and returns its whole log.
    fn stop(mut self) -> Vec<String> {
        drop(self.stdin.take());
        if self.port.is_some() {
            let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let _ = self.child.wait();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(10)) {
            self.log.push(line);
        }
        std::mem::take(&mut self.log)
    }
}

impl Drop for Server {
    /// A test that fails midway leaves no server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cache's files, by path: inode and length.
fn snapshot(cache: &Path) -> BTreeMap<PathBuf, (u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let mut files = BTreeMap::new();
    for kind in KINDS {
        let Ok(listing) = std::fs::read_dir(cache.join(kind)) else {
            continue;
        };
        for entry in listing {
            let entry = entry.unwrap();
            // Temporary files of a write in progress start with a dot.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let meta = entry.metadata().unwrap();
            files.insert(entry.path(), (meta.ino(), meta.len()));
        }
    }
    files
}

/// Waits until the cache holds files of exactly these names (the background
/// optimization writes the last of them). Hang guard: two minutes.
fn settled(server: &mut Server, cache: &Path, names: &[PathBuf]) {
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        let now: Vec<PathBuf> = snapshot(cache).into_keys().collect();
        if now == names {
            return;
        }
        if Instant::now() >= give_up {
            while let Ok(line) = server.stderr.try_recv() {
                server.log.push(line);
            }
            panic!(
                "the cache never settled: {now:#?}, not {names:#?}; the server's log: {:#?}",
                server.log
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One start: its answers, then the cache settled, then stopped.
fn start(
    plugins: &Path,
    cache: &Path,
    transport: Transport,
    names: &[PathBuf],
) -> (Value, Vec<String>) {
    let mut server = Server::start(plugins, cache, transport);
    let answers = server.answers();
    settled(&mut server, cache, names);
    (answers, server.stop())
}

/// 4 KiB of noise (a fixed sequence: a failure can be replayed).
fn noise(seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..4096)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    /// 4 KiB of noise written into the middle.
    RandomBlock,
    /// Cut to half its length.
    Truncated,
    /// Its bytes zeroed.
    Zeroed,
    /// Swapped with the same kind of file of the other plugin.
    Swapped,
    /// Replaced by the same kind of file of the other plugin (valid, intact).
    Replaced,
}

/// Damages `pairs` (a file of one plugin, the same kind of file of another)
/// and returns the files that are damaged now.
fn damage(how: Damage, pairs: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut damaged = Vec::new();
    for (n, (one, other)) in pairs.iter().enumerate() {
        match how {
            Damage::RandomBlock | Damage::Truncated | Damage::Zeroed => {
                for file in [one, other] {
                    let mut bytes = std::fs::read(file).unwrap();
                    let middle = bytes.len() / 2;
                    match how {
                        Damage::RandomBlock => {
                            let block = noise(n as u64 + middle as u64);
                            bytes.resize(bytes.len().max(middle + block.len()), 0);
                            bytes[middle..middle + block.len()].copy_from_slice(&block);
                        }
                        Damage::Truncated => bytes.truncate(middle),
                        _ => bytes.fill(0),
                    }
                    std::fs::write(file, bytes).unwrap();
                    damaged.push(file.clone());
                }
            }
            Damage::Swapped => {
                let (a, b) = (std::fs::read(one).unwrap(), std::fs::read(other).unwrap());
                std::fs::write(one, b).unwrap();
                std::fs::write(other, a).unwrap();
                damaged.extend([one.clone(), other.clone()]);
            }
            Damage::Replaced => {
                std::fs::copy(other, one).unwrap();
                damaged.push(one.clone());
            }
        }
    }
    damaged
}

/// The warnings about damaged cache files in a log.
fn damage_warnings(log: &[String]) -> Vec<&String> {
    log.iter()
        .filter(|line| line.contains(" WARN ") && line.contains("in the cache ("))
        .collect()
}

fn damaged_caches_are_served_as_intact_ones(transport: Transport) {
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (plugins, cache) = (plugins.path(), cache.path());
    // Two plugins that load (a manifest and optimized code each) and two
    // that fail for reasons of their own (a failure record and baseline code
    // each), added one of each at a time so each file's plugin is known.
    std::fs::copy(ECHO, plugins.join("echo.wasm")).unwrap();
    std::fs::copy(BAD_SCHEMA, plugins.join("bad_schema.wasm")).unwrap();
    let mut server = Server::start(plugins, cache, transport);
    server.wait_for("optimized code ready");
    let first: Vec<PathBuf> = snapshot(cache).into_keys().collect();
    server.stop();
    assert_eq!(first.len(), 4, "{first:#?}");
    std::fs::copy(RAW, plugins.join("raw.wasm")).unwrap();
    std::fs::copy(OTHER_WORLD, plugins.join("other_world.wasm")).unwrap();
    let mut server = Server::start(plugins, cache, transport);
    server.wait_for("optimized code ready");
    let names: Vec<PathBuf> = snapshot(cache).into_keys().collect();
    server.stop();
    assert_eq!(names.len(), 8, "{names:#?}");
    let second: Vec<&PathBuf> = names.iter().filter(|n| !first.contains(n)).collect();
    // Pairs of the same kind: echo's and raw's, bad_schema's and other_world's.
    let kind = |file: &Path| file.parent().unwrap().to_owned();
    let mut pairs: Vec<(PathBuf, PathBuf)> = Vec::new();
    for one in &first {
        let other = second
            .iter()
            .find(|o| kind(o) == kind(one) && !pairs.iter().any(|(_, p)| p == **o))
            .unwrap_or_else(|| panic!("a file of the same kind as {one:?}: {second:#?}"));
        pairs.push((one.clone(), (*other).clone()));
    }
    let (truth, _) = start(plugins, cache, transport, &names);
    assert_eq!(
        truth["add"]["structuredContent"],
        json!({"result": 5}),
        "{truth}"
    );
    assert!(
        truth["bare_string"]["content"]
            .to_string()
            .contains("hello"),
        "{truth}"
    );

    for how in [
        Damage::RandomBlock,
        Damage::Truncated,
        Damage::Zeroed,
        Damage::Swapped,
        Damage::Replaced,
    ] {
        let damaged = damage(how, &pairs);
        // Served as before, each damaged file warned about once, and the
        // cache repaired (the same files again).
        let (answers, log) = start(plugins, cache, transport, &names);
        assert_eq!(answers, truth, "{how:?}: {log:#?}");
        let warnings = damage_warnings(&log);
        for file in &damaged {
            let about: Vec<_> = warnings
                .iter()
                .filter(|w| w.contains(&*file.to_string_lossy()))
                .collect();
            assert_eq!(about.len(), 1, "{how:?}: {file:?}: {warnings:#?}");
        }
        assert_eq!(warnings.len(), damaged.len(), "{how:?}: {warnings:#?}");
        // The next start is warm: nothing compiled, nothing written, no warning.
        let before = snapshot(cache);
        let (answers, log) = start(plugins, cache, transport, &names);
        assert_eq!(answers, truth, "{how:?}: {log:#?}");
        assert!(damage_warnings(&log).is_empty(), "{how:?}: {log:#?}");
        assert!(
            !log.iter()
                .any(|l| l.contains("compiling") || l.contains("optimized code ready")),
            "{how:?}: {log:#?}"
        );
        assert_eq!(
            snapshot(cache),
            before,
            "{how:?}: the warm start rewrote the cache"
        );
    }
}

#[test]
fn a_damaged_cache_is_served_as_an_intact_one_over_stdio() {
    damaged_caches_are_served_as_intact_ones(Transport::Stdio);
}

#[test]
fn a_damaged_cache_is_served_as_an_intact_one_over_http() {
    damaged_caches_are_served_as_intact_ones(Transport::Http);
}
