//! Sample statistics shared by the bench binaries.

use std::time::Duration;

/// The median and 99th percentile of a set of samples.
pub(crate) struct Stats {
    pub(crate) median: Duration,
    pub(crate) p99: Duration,
}

/// Sorts the samples and reads off the median and p99.
pub(crate) fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        median: at(0.5),
        p99: at(0.99),
    }
}

/// A duration in microseconds.
pub(crate) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
