//! The engine's loader threads: where plugins are hashed and compiled (or
//! read back from the compiled-code cache), off the async runtime.
//!
//! A few long-lived threads rather than the runtime's blocking pool: loading
//! allocates large, short-lived buffers (a component's bytes, decompressed
//! code), and the C allocator keeps much of what a thread frees in that
//! thread's arena. Fifty loads spread over fifty pool threads left tens of MiB
//! resident in an idle server; a handful of loader threads reuse theirs.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads that run blocking load work, first come first served.
pub(crate) struct Loader {
    jobs: Mutex<Sender<Job>>,
}

/// The loader is gone (its engine is shutting down) or the job panicked.
#[derive(Debug)]
pub(crate) struct LoaderFailed;

impl Loader {
    /// Starts `threads` loader threads; they end when the loader is dropped.
    pub(crate) fn new(threads: usize) -> std::io::Result<Self> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads.max(1) {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name(format!("toolhost-load-{i}"))
                .spawn(move || work(&queue))?;
        }
        Ok(Self {
            jobs: Mutex::new(jobs),
        })
    }

    /// Runs `job` on a loader thread and waits for its result.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LoaderFailed> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(job());
        });
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job)
            .map_err(|_| LoaderFailed)?;
        // A job that panics drops `done` unsent.
        result.await.map_err(|_| LoaderFailed)
    }
}

fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        // Holding the lock while waiting is the point: one idle thread waits
        // on the queue, the others wait for the lock.
        let Ok(job) = queue.lock().unwrap_or_else(PoisonError::into_inner).recv() else {
            return;
        };
        // A panicking job (a bug in a dependency) fails its own load only.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    #[tokio::test]
    async fn a_panicking_job_fails_alone_and_the_threads_keep_serving() {
        let loader = Loader::new(1).unwrap();
        assert_eq!(loader.run(|| 2 + 2).await.unwrap(), 4);
        let panicked = loader
            .run(|| -> u32 { panic!("a bug in a dependency") })
            .await;
        assert!(panicked.is_err());
        // The one thread survived the panic.
        assert_eq!(loader.run(|| "still here").await.unwrap(), "still here");
    }

    #[tokio::test]
    async fn jobs_run_on_the_loader_threads() {
        let loader = Loader::new(2).unwrap();
        let name = loader
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert!(
            name.as_deref()
                .is_some_and(|n| n.starts_with("toolhost-load-")),
            "{name:?}"
        );
    }
}
