//! The watcher: `notify` events, debounced, trigger rescans.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::scan::{is_wasm, plugin_of_sidecar};
use super::{Shared, WatchError};

/// Quiet time after the last event before a rescan starts.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// A rescan starts at the latest this long after the first event, even if
/// events keep coming (a file being written for a long time is then
/// waited for by the settle check instead).
const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

/// A running watcher. Dropping it ends the task, and the OS watch with it.
pub(super) struct Watch {
    _stop: oneshot::Sender<()>,
}

/// The OS watch of the directory and of its parent.
struct Os {
    watcher: notify::RecommendedWatcher,
    /// The directory, absolute (the paths of events are under it).
    dir: PathBuf,
}

impl Os {
    /// Watches the directory again: it may be another one now (created
    /// again, or a symlink pointed elsewhere). A directory that is gone
    /// is watched again when its parent sees it come back.
    fn rewatch(&mut self) {
        let _ = self.watcher.unwatch(&self.dir);
        if let Err(error) = self.watcher.watch(&self.dir, RecursiveMode::NonRecursive) {
            tracing::debug!(dir = %self.dir.display(), %error, "the plugins directory cannot be watched now");
        }
    }
}

impl Watch {
    pub(super) fn start(shared: &Arc<Shared>) -> Result<Self, WatchError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| WatchError::NoRuntime)?;
        let dir = std::path::absolute(&shared.dir).map_err(|e| WatchError::Watch {
            dir: shared.dir.clone(),
            error: Box::new(e),
        })?;
        let (events, receiver) = mpsc::unbounded_channel();
        let relevant = dir.clone();
        let mut watcher = notify::recommended_watcher(move |event| {
            // Of the parent's events, only those about the directory matter.
            if let Ok(notify::Event { paths, .. }) = &event
                && !paths.is_empty()
                && !paths
                    .iter()
                    .any(|p| p == &relevant || p.parent() == Some(&relevant))
            {
                return;
            }
            // The task is gone once the PluginDir is dropped: nothing to tell.
            let _ = events.send(event);
        })
        .map_err(|e| watch_error(shared, e))?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(shared, e))?;
        if let Some(parent) = dir.parent()
            && let Err(error) = watcher.watch(parent, RecursiveMode::NonRecursive)
        {
            tracing::warn!(
                parent = %parent.display(), %error,
                "cannot watch the parent of the plugins directory: a directory deleted and created again, or a symlink pointed elsewhere, will not be followed"
            );
        }
        let (stop, stopped) = oneshot::channel();
        runtime.spawn(run(
            Arc::downgrade(shared),
            Os { watcher, dir },
            receiver,
            stopped,
        ));
        Ok(Self { _stop: stop })
    }
}

fn watch_error(shared: &Shared, error: notify::Error) -> WatchError {
    WatchError::Watch {
        dir: shared.dir.clone(),
        error: Box::new(error),
    }
}

/// What a batch of events asks for.
#[derive(Default)]
struct Pending {
    rescan: bool,
    /// Files seen written: re-read even if their metadata looks unchanged.
    force: HashSet<PathBuf>,
}

impl Pending {
    /// Adds an event; true if it is about the directory itself (moved,
    /// deleted, created, a symlink to it replaced).
    /// `dir` is the directory, absolute; `named` as the set names it
    /// (the paths of its files are under it).
    fn add(&mut self, dir: &Path, named: &Path, event: notify::Result<notify::Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "watching the plugins directory");
                self.rescan = true;
                return true;
            }
        };
        if event.need_rescan() {
            self.rescan = true;
        }
        let written = match event.kind {
            // Our own reads open and close files: those must not trigger rescans.
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => return false,
            EventKind::Create(_) | EventKind::Remove(_) => true,
            EventKind::Modify(notify::event::ModifyKind::Metadata(_)) => false,
            EventKind::Modify(_) | EventKind::Any | EventKind::Other => true,
        };
        let mut itself = event.need_rescan();
        if event.paths.is_empty() {
            self.rescan = true;
            itself = true;
        }
        for path in event.paths {
            if path == dir {
                // The directory itself moved, went away or came back.
                self.rescan = true;
                itself = true;
                continue;
            }
            let (Some(name), true) = (path.file_name(), path.parent() == Some(dir)) else {
                continue;
            };
            let path = named.join(name);
            // A sidecar (policy or tools) stands for its plugin file.
            let path = plugin_of_sidecar(&path).unwrap_or(path);
            if is_wasm(&path) {
                self.rescan = true;
                if written {
                    self.force.insert(path);
                }
            }
        }
        itself
    }
}

async fn run(
    shared: Weak<Shared>,
    mut os: Os,
    mut events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    mut stop: oneshot::Receiver<()>,
) {
    let dir = os.dir.clone();
    let Some(named) = shared.upgrade().map(|shared| shared.dir.clone()) else {
        return;
    };
    // Catch up with whatever changed between `open` and `watch`.
    let mut pending = Pending {
        rescan: true,
        force: HashSet::new(),
    };
    loop {
        while !pending.rescan {
            tokio::select! {
                _ = &mut stop => return,
                event = events.recv() => match event {
                    Some(event) => if pending.add(&dir, &named, event) {
                        os.rewatch();
                    },
                    None => return,
                },
            }
        }
        let deadline = Instant::now() + MAX_DEBOUNCE;
        loop {
            let quiet = tokio::time::sleep_until((Instant::now() + DEBOUNCE).min(deadline));
            tokio::select! {
                _ = &mut stop => return,
                () = quiet => break,
                event = events.recv() => match event {
                    Some(event) => if pending.add(&dir, &named, event) {
                        os.rewatch();
                    },
                    None => return,
                },
            }
        }
        // Held only while rescanning: the task must not keep the set alive.
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let batch = std::mem::take(&mut pending);
        if let Err(error) = strong.rescan(&batch.force).await {
            tracing::warn!(%error, "rescanning the plugins directory");
        }
    }
}
