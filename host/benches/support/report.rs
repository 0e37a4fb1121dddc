//! One printed line of round-trip figures, shared by the MCP benches.

use crate::stats::{Stats, us};

/// `label`, then the median and p99 of `samples`, each with its ratio to
/// `baseline`'s; the label padded to `width` so the columns line up.
pub(crate) fn line(label: &str, width: usize, samples: &Stats, baseline: &Stats) {
    println!(
        "  {label:<width$} median {:>7.1} µs ({:>5.2}×)   p99 {:>8.1} µs ({:>5.2}×)",
        us(samples.median),
        us(samples.median) / us(baseline.median),
        us(samples.p99),
        us(samples.p99) / us(baseline.p99),
    );
}
