//! What this machine has, so that a request too large for it is refused
//! before any work starts, with the estimate and the limit.

use crate::Error;

/// Most threads per core a `--threads` setting may ask for.
pub const THREADS_PER_CORE: usize = 8;

/// Host bytes a Groth16 proof holds per constraint at its peak (keys in
/// memory, recorded matrices, witness, evaluation vectors), from the
/// largest built-in proofs measured (docs/benchmarks.md, "PoRep proxy"),
/// rounded up.
pub const PROVE_BYTES_PER_CONSTRAINT: u64 = 800;

/// Hands the heap's free pages back to the system. Decoding a large file
/// on many threads leaves freed buffers in glibc's per-thread arenas,
/// which it keeps; after a cache load that is gigabytes at PoRep sizes.
pub fn return_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory no allocation owns.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Cores (logical CPUs) this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Memory available for new work (`MemAvailable`), or `None` where unknown.
pub fn available_memory_bytes() -> Option<u64> {
    meminfo_bytes("MemAvailable:")
}

/// The machine's memory (`MemTotal`), or `None` where unknown.
pub fn total_memory_bytes() -> Option<u64> {
    meminfo_bytes("MemTotal:")
}

/// A `kB` field of `/proc/meminfo` in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuses a thread count of 0 or over [`THREADS_PER_CORE`] per core.
///
/// # Errors
/// [`Error::InvalidInput`] with the limit.
pub fn check_threads(threads: u32) -> Result<(), Error> {
    let limit = cores() * THREADS_PER_CORE;
    if threads == 0 || threads as usize > limit {
        return Err(Error::InvalidInput(format!(
            "--threads {threads}: expected 1 to {limit} ({THREADS_PER_CORE} per core on this machine's {} cores)",
            cores()
        )));
    }
    Ok(())
}

/// Refuses work estimated to need more memory than is available.
///
/// # Errors
/// [`Error::InvalidInput`] naming `what`, the estimate and the limit.
pub fn check_memory(what: &str, need_bytes: u64) -> Result<(), Error> {
    match available_memory_bytes() {
        Some(have) if need_bytes > have => Err(Error::InvalidInput(format!(
            "{what} needs about {} of memory; this machine has {} available",
            gib(need_bytes),
            gib(have)
        ))),
        _ => Ok(()),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_requests_are_refused_with_the_limit() {
        assert!(check_threads(0).is_err());
        assert!(check_threads(1).is_ok());
        let e = check_threads(u32::MAX).unwrap_err().to_string();
        assert!(e.contains("per core"), "{e}");
        if available_memory_bytes().is_some() {
            let e = check_memory("a proof", u64::MAX).unwrap_err().to_string();
            assert!(e.contains("available"), "{e}");
        }
        assert!(check_memory("a proof", 1).is_ok());
    }
}
