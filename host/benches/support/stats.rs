//! Sample statistics shared by the bench binaries, and the process's memory.

#![allow(dead_code, reason = "each bench binary uses part of it")]

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

/// A duration in milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median of a set of samples (the upper one of an even count).
pub(crate) fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// The resident set size of a process, in bytes (`VmRSS` in `/proc/<pid>/status`).
pub(crate) fn rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS in /proc/{pid}/status (Linux only)"))?;
    Ok(kib * 1024)
}

/// CPU time (user + system) a process has used so far, from `/proc/<pid>/stat`
/// (Linux; in clock ticks, 10 ms each on most systems).
pub(crate) fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces): state is field 3,
    // utime and stime are fields 14 and 15.
    let rest = stat
        .rsplit_once(')')
        .ok_or_else(|| anyhow::anyhow!("malformed /proc/{pid}/stat"))?
        .1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("short /proc/{pid}/stat"))?
            .parse()?)
    };
    let ticks = field(11)? + field(12)?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Ok(Duration::from_secs_f64(ticks as f64 / hz as f64))
}
