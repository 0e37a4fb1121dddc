//! The audit trail: one structured record per call, as JSON lines, to a
//! size-bounded file and/or the log (target `toolhost::audit`).
//!
//! An [`AuditLog`] is a [`CallObserver`]: it sees every call the call driver
//! runs, from any front end. A record says when, on which replica, who
//! (the principal), what (the tool's qualified name, call and invocation
//! IDs, a SHA-256 digest of the checked arguments; the arguments themselves
//! only when the operator opts in, with secret-looking keys redacted),
//! the decision (allowed, or refused by an access rule), the approval the
//! call ran under, how it ended and what it cost (time, fuel, memory).
//!
//! Writing never holds up a call: records go through a bounded queue to a
//! writer thread; when the queue is full a record is dropped and counted
//! ([`AuditLog::dropped`]; the file gets a `{"dropped": N}` record once the
//! writer catches up, and the log a warning at most once a second).

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::error::CallError;
use crate::hex::hex;
use crate::tool::ToolSpec;
use crate::toolset::{CallObserver, CallWatch, Context, Decision, Outcome};

pub use crate::redact::REDACTED_KEYS;

/// Where audit records go and what they hold.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    file: Option<PathBuf>,
    max_file_bytes: u64,
    to_log: bool,
    arguments: bool,
    redact: Vec<String>,
    queue: usize,
    replica: Option<String>,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            file: None,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            to_log: false,
            arguments: false,
            redact: REDACTED_KEYS.iter().map(|k| (*k).to_owned()).collect(),
            queue: Self::DEFAULT_QUEUE,
            replica: None,
        }
    }
}

impl AuditOptions {
    /// The default of [`AuditOptions::max_file_bytes`]: 64 MiB.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;
    /// The default of [`AuditOptions::queue`].
    pub const DEFAULT_QUEUE: usize = 10_000;

    /// Appends records to `path` (JSON lines). Past
    /// [`AuditOptions::max_file_bytes`] it is renamed to `PATH.1` (replacing
    /// the one before) and a new file begun: at most twice the bound on disk.
    pub fn file(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.file = Some(path.into());
        self
    }

    /// The size at which the file is rotated (at least 4 KiB).
    pub fn max_file_bytes(&mut self, bytes: u64) -> &mut Self {
        self.max_file_bytes = bytes.max(4096);
        self
    }

    /// Also writes each record to the log (target `toolhost::audit`, info).
    pub fn to_log(&mut self, on: bool) -> &mut Self {
        self.to_log = on;
        self
    }

    /// Records the arguments themselves, beside their digest, with the
    /// values of secret-looking keys redacted (off by default).
    pub fn arguments(&mut self, on: bool) -> &mut Self {
        self.arguments = on;
        self
    }

    /// Redacts these keys too (besides [`REDACTED_KEYS`]).
    pub fn redact(&mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> &mut Self {
        self.redact.extend(keys.into_iter().map(Into::into));
        self
    }

    /// How many records may wait for the writer (at least 1); past it, new
    /// ones are dropped and counted.
    pub fn queue(&mut self, records: usize) -> &mut Self {
        self.queue = records.max(1);
        self
    }

    /// The replica name every record carries.
    pub fn replica(&mut self, name: impl Into<String>) -> &mut Self {
        self.replica = Some(name.into());
        self
    }
}

/// Why an audit log could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The file cannot be opened for appending.
    #[error("cannot open the audit file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Neither a file nor the log was chosen.
    #[error("the audit log needs a file or the log as its sink")]
    NoSink,
}

/// The audit trail ([`CallObserver`]): add it to the contexts of the calls
/// to audit ([`Context::with_observer`], or
/// [`McpServer::with_observer`](crate::McpServer::with_observer)).
pub struct AuditLog {
    sender: SyncSender<String>,
    dropped: Arc<AtomicU64>,
    arguments: bool,
    redact: Vec<String>,
    replica: Option<String>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens the sinks and starts the writer thread (it ends when the log
    /// is dropped, after writing what is queued).
    ///
    /// # Errors
    /// [`AuditError`]: the file cannot be opened, or no sink was chosen.
    pub fn open(options: &AuditOptions) -> Result<Self, AuditError> {
        let (log, writer, receiver) = Self::unstarted(options)?;
        std::thread::Builder::new()
            .name("toolhost-audit".into())
            .spawn(move || writer.run(&receiver))
            .map_err(|source| AuditError::File {
                path: options.file.clone().unwrap_or_default(),
                source,
            })?;
        Ok(log)
    }

    /// The log, and the writer that will drain its queue (not yet running).
    fn unstarted(options: &AuditOptions) -> Result<(Self, Writer, Receiver<String>), AuditError> {
        if options.file.is_none() && !options.to_log {
            return Err(AuditError::NoSink);
        }
        let file = match &options.file {
            Some(path) => Some(Sink::open(path, options.max_file_bytes)?),
            None => None,
        };
        let (sender, receiver) = std::sync::mpsc::sync_channel(options.queue);
        let dropped = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            file,
            to_log: options.to_log,
            dropped: Arc::clone(&dropped),
            reported: 0,
            warned: None,
        };
        let log = Self {
            sender,
            dropped,
            arguments: options.arguments,
            redact: options.redact.iter().map(|k| k.to_lowercase()).collect(),
            replica: options.replica.clone(),
        };
        Ok((log, writer, receiver))
    }

    /// Records dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// `arguments` with the values of secret-looking keys redacted, at any depth.
    fn redacted(&self, arguments: &Value) -> Value {
        crate::redact::redact_keys(arguments, &self.redact)
    }
}

impl CallObserver for AuditLog {
    fn begin(&self, cx: &Context, spec: &ToolSpec) -> Box<dyn CallWatch> {
        self.begin_call(cx, spec, None)
    }

    fn begin_call(
        &self,
        cx: &Context,
        spec: &ToolSpec,
        arguments: Option<&Value>,
    ) -> Box<dyn CallWatch> {
        let mut record = Map::new();
        record.insert("time".into(), json!(rfc3339(SystemTime::now())));
        if let Some(replica) = &self.replica {
            record.insert("replica".into(), json!(replica));
        }
        let principal = cx.identity().principal.as_deref();
        record.insert(
            "principal".into(),
            match principal {
                Some(p) if !p.is_anonymous() => json!({"issuer": p.issuer, "subject": p.subject}),
                _ => Value::Null,
            },
        );
        let tool = spec.qualified_name.as_deref().unwrap_or(&spec.name);
        record.insert("tool".into(), json!(tool));
        record.insert("call_id".into(), json!(cx.call_id()));
        record.insert("invocation_id".into(), json!(cx.invocation_id()));
        if let Some(arguments) = arguments {
            let digest = hex(&Sha256::digest(arguments.to_string().as_bytes()));
            record.insert("arguments_sha256".into(), json!(digest));
            if self.arguments {
                record.insert("arguments".into(), self.redacted(arguments));
            }
        }
        if let Some(decision) = cx.decision(cx.call_id()) {
            let by = principal.filter(|p| !p.is_anonymous()).map(|p| p.key());
            let answer = match decision {
                Decision::Approve { .. } => "approved",
                Decision::Reject { .. } => "rejected",
            };
            record.insert("approval".into(), json!({"decision": answer, "by": by}));
        }
        Box::new(Watch {
            log: AuditSender {
                sender: self.sender.clone(),
                dropped: Arc::clone(&self.dropped),
            },
            record,
            start: Instant::now(),
            ended: false,
        })
    }
}

/// What a watch needs to send its record.
struct AuditSender {
    sender: SyncSender<String>,
    dropped: Arc<AtomicU64>,
}

/// One call's record, sent when the call ends (or is dropped: cancelled).
struct Watch {
    log: AuditSender,
    record: Map<String, Value>,
    start: Instant,
    ended: bool,
}

impl Watch {
    fn send(&mut self, decision: &str, outcome: &str) {
        self.ended = true;
        let mut record = std::mem::take(&mut self.record);
        record.insert("decision".into(), json!(decision));
        record.insert("outcome".into(), json!(outcome));
        let ms = self.start.elapsed().as_secs_f64() * 1000.0;
        record.insert("duration_ms".into(), json!((ms * 1000.0).round() / 1000.0));
        let line = Value::Object(record).to_string();
        if let Err(TrySendError::Full(_)) = self.log.sender.try_send(line) {
            self.log.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl CallWatch for Watch {
    fn ended(mut self: Box<Self>, outcome: Outcome<'_>) {
        match outcome {
            Outcome::Succeeded(usage) => {
                self.record.insert("fuel".into(), json!(usage.fuel));
                self.record
                    .insert("peak_memory_bytes".into(), json!(usage.peak_memory_bytes));
                self.send("allowed", "ok");
            }
            Outcome::Paused(_) => self.send("allowed", "approval_asked"),
            Outcome::Failed(error @ CallError::Forbidden { .. }) => {
                self.record.insert("error".into(), json!(error.to_string()));
                self.send("refused", "forbidden");
            }
            Outcome::Failed(error) => {
                self.record.insert("error".into(), json!(error.to_string()));
                self.send("allowed", error.kind());
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.ended {
            self.send("allowed", "cancelled");
        }
    }
}

impl AuditLog {
    /// Sends a record made outside a watch (tests).
    #[cfg(test)]
    fn record(&self, record: &Value) {
        let _ = self.sender.try_send(record.to_string());
    }
}

/// The file sink: appends, rotates at its bound.
struct Sink {
    path: PathBuf,
    out: BufWriter<File>,
    size: u64,
    max: u64,
}

impl Sink {
    fn open(path: &Path, max: u64) -> Result<Self, AuditError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| AuditError::File {
                path: path.to_owned(),
                source,
            })?;
        let size = file.metadata().map_or(0, |m| m.len());
        Ok(Self {
            path: path.to_owned(),
            out: BufWriter::new(file),
            size,
            max,
        })
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.size > 0 && self.size + len > self.max {
            self.out.flush()?;
            let mut rotated = self.path.clone().into_os_string();
            rotated.push(".1");
            std::fs::rename(&self.path, &rotated)?;
            let fresh = Self::open(&self.path, self.max).map_err(|e| match e {
                AuditError::File { source, .. } => source,
                AuditError::NoSink => std::io::Error::other("no sink"),
            })?;
            *self = fresh;
        }
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.size += len;
        Ok(())
    }
}

/// The writer thread: writes what comes, flushes when the queue is empty.
struct Writer {
    file: Option<Sink>,
    to_log: bool,
    dropped: Arc<AtomicU64>,
    reported: u64,
    /// When the last warning about dropped records was logged.
    warned: Option<Instant>,
}

impl Writer {
    fn run(mut self, receiver: &Receiver<String>) {
        while let Ok(line) = receiver.recv() {
            self.write(&line);
            while let Ok(line) = receiver.try_recv() {
                self.write(&line);
            }
            let dropped = self.dropped.load(Ordering::Relaxed);
            if dropped > self.reported {
                let record = json!({
                    "time": rfc3339(SystemTime::now()),
                    "dropped": dropped - self.reported,
                })
                .to_string();
                if self.warned.is_none_or(|at| at.elapsed().as_secs() >= 1) {
                    self.warned = Some(Instant::now());
                    tracing::warn!(
                        target: "toolhost::audit",
                        dropped,
                        "the audit queue was full (its sink is slow): records were dropped and counted"
                    );
                }
                self.reported = dropped;
                self.write(&record);
            }
            if let Some(file) = &mut self.file
                && let Err(error) = file.out.flush()
            {
                tracing::error!(target: "toolhost::audit", %error, "cannot write the audit file");
            }
        }
    }

    fn write(&mut self, line: &str) {
        if self.to_log {
            tracing::info!(target: "toolhost::audit", "{line}");
        }
        if let Some(file) = &mut self.file
            && let Err(error) = file.write(line)
        {
            tracing::error!(target: "toolhost::audit", %error, "cannot write the audit file");
        }
    }
}

/// `time` as RFC 3339 UTC with milliseconds (`2026-12-04T21:55:00.123Z`).
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    crate::time::rfc3339(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_420_100_123);
        assert_eq!(rfc3339(t), "2026-12-04T21:35:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn secret_looking_keys_are_redacted_at_any_depth() {
        let mut options = AuditOptions::default();
        options.to_log(true).redact(["ssn"]);
        let log = AuditLog::open(&options).unwrap();
        let args = json!({
            "path": "/tmp/x",
            "api_key": "k",
            "nested": {"Password": "p", "list": [{"X-Auth-Token": "t", "ok": 1}]},
            "user_ssn": "123",
        });
        assert_eq!(
            log.redacted(&args),
            json!({
                "path": "/tmp/x",
                "api_key": "<redacted>",
                "nested": {"Password": "<redacted>", "list": [{"X-Auth-Token": "<redacted>", "ok": 1}]},
                "user_ssn": "<redacted>",
            })
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_the_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut options = AuditOptions::default();
        options.file(&path).queue(3);
        // The writer is not running: a sink that does not keep up at all.
        let (log, writer, receiver) = AuditLog::unstarted(&options).unwrap();
        let cx = Context::new().with_call_id("c1");
        let spec = ToolSpec::new("echo", "Echoes.", json!({"type": "object"}));
        for _ in 0..10 {
            let watch = log.begin_call(&cx, &spec, Some(&json!({"a": 1})));
            watch.ended(Outcome::Succeeded(&crate::tool::Usage::default()));
        }
        assert_eq!(log.dropped(), 7);
        drop(log);
        writer.run(&receiver);
        let text = std::fs::read_to_string(&path).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), 4, "{text}");
        assert_eq!(records[0]["outcome"], "ok");
        assert_eq!(records[0]["decision"], "allowed");
        assert!(records[0]["arguments_sha256"].is_string() && records[0]["arguments"].is_null());
        assert_eq!(records[0]["tool"], "echo");
        assert_eq!(records[3]["dropped"], 7);
    }

    #[test]
    fn the_file_rotates_at_its_bound_and_keeps_one_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut options = AuditOptions::default();
        options.file(&path).max_file_bytes(4096);
        let log = AuditLog::open(&options).unwrap();
        for n in 0..200 {
            log.record(&json!({"n": n, "pad": "x".repeat(50)}));
        }
        drop(log);
        // The writer ends once the queue is drained and the log dropped.
        let old = dir.path().join("audit.jsonl.1");
        for _ in 0..200 {
            let done = std::fs::read_to_string(&path).is_ok_and(|text| text.contains("\"n\":199"));
            if done {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let current = std::fs::read_to_string(&path).unwrap();
        let previous = std::fs::read_to_string(&old).unwrap();
        assert!(current.len() <= 4096 && previous.len() <= 4096);
        assert!(current.contains("\"n\":199"), "{current}");
        for line in current.lines().chain(previous.lines()) {
            let _: Value = serde_json::from_str(line).unwrap();
        }
        assert!(AuditLog::open(&AuditOptions::default()).is_err(), "no sink");
    }
}
