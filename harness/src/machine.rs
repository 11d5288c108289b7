//! The machine a benchmark ran on, described so its numbers can be quoted.

use serde::Serialize;

/// The CPU, threads, memory and OS, as a report's first line names them.
#[derive(Serialize, Debug, Clone)]
pub struct Machine {
    cpu: String,
    threads: usize,
    memory_gib: f64,
    os: String,
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "machine: {} ({} threads, {} GiB RAM, {})",
            self.cpu, self.threads, self.memory_gib, self.os
        )
    }
}

/// This machine, read from `/proc` where it exists.
pub fn machine() -> Machine {
    let read = |p| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(
            || std::env::consts::ARCH.to_string(),
            |m| m.trim().to_string(),
        );
    let mem_kib: f64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0);
    Machine {
        cpu,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_gib: (mem_kib / (1 << 20) as f64 * 10.0).round() / 10.0,
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    }
}
