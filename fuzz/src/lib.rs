//! Fuzz targets for zkpipe's parsers that run on stable Rust, as ordinary
//! tests: no cargo-fuzz, no nightly, no sanitizer runtime.
//!
//! Each target in `tests/targets.rs` hands every parser bytes: first each
//! file of `corpus/<target>/` as it is, then mutants of them (bit flips,
//! random bytes, truncation, duplicated or spliced chunks, and large
//! little-endian counts at 4- and 8-byte aligned offsets) until a time
//! budget runs out. A panic fails the test, and so does an input that takes
//! longer than a bound: parsers see hostile files and requests.
//!
//! `cargo test -p zkpipe-fuzz` runs each target for 3 seconds. A longer run:
//!
//! ```text
//! ZKPIPE_FUZZ_SECONDS=600 cargo test -p zkpipe-fuzz --release -- --test-threads=1
//! ```
//!
//! Settings (environment):
//! - `ZKPIPE_FUZZ_SECONDS`: time per target (default: none, the count
//!   below ends the run, so every machine runs the same mutants);
//! - `ZKPIPE_FUZZ_ITERATIONS`: most mutants per target (default unbounded
//!   when `ZKPIPE_FUZZ_SECONDS` is set, 20 000 otherwise);
//! - `ZKPIPE_FUZZ_INPUT_SECONDS`: longest one input may take (default 2);
//! - `ZKPIPE_FUZZ_SEED`: the mutator's seed (default fixed, so a run is
//!   reproducible; set it to explore elsewhere).
//!
//! A failing input is written to `target/fuzz-failures/<target>/<hash>`
//! and its path printed. Once the parser is fixed, copy that file into
//! `corpus/<target>/` so that every later run replays it. An input that
//! runs past four times the bound is saved the same way before the process
//! is aborted, since a hung call cannot be unwound.
//!
//! The seed corpus is small and written by `make_corpus` in
//! `tests/targets.rs` (`cargo test -p zkpipe-fuzz -- --ignored make_corpus`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest input generated: parsers cap their inputs well above this, and
/// larger ones only slow the run.
pub const MAX_INPUT: usize = 1 << 20;

/// How long a target runs.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Time for the mutants, after the corpus.
    pub time: Duration,
    /// Most mutants.
    pub iterations: u64,
    /// Longest one input may take.
    pub per_input: Duration,
    /// The mutator's seed (mixed with the target's name).
    pub seed: u64,
}

impl Budget {
    /// The budget the environment sets (see the crate's documentation).
    pub fn from_env() -> Budget {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let secs =
            var("ZKPIPE_FUZZ_SECONDS").map(|v| v.parse::<f64>().expect("ZKPIPE_FUZZ_SECONDS"));
        let iterations = match var("ZKPIPE_FUZZ_ITERATIONS") {
            Some(v) => v.parse().expect("ZKPIPE_FUZZ_ITERATIONS"),
            None if secs.is_some() => u64::MAX,
            None => 20_000,
        };
        let per_input = var("ZKPIPE_FUZZ_INPUT_SECONDS").map_or(2.0, |v| {
            v.parse::<f64>().expect("ZKPIPE_FUZZ_INPUT_SECONDS")
        });
        Budget {
            // Without a time, the count alone ends a run: every machine runs
            // the same mutants (a slower one takes longer, never fewer).
            time: Duration::from_secs_f64(secs.unwrap_or(600.0)),
            iterations,
            per_input: Duration::from_secs_f64(per_input),
            seed: var("ZKPIPE_FUZZ_SEED").map_or(0x5eed, |v| v.parse().expect("ZKPIPE_FUZZ_SEED")),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Corpus files replayed.
    pub corpus: usize,
    /// Mutants run.
    pub mutants: u64,
    /// The slowest input.
    pub slowest: Duration,
}

/// splitmix64: tiny, fast, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the bias is negligible at these sizes).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Values that break length and count arithmetic: overflow, sign, off by one.
const BIG_U32: [u32; 8] = [
    0xffff_ffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0x0001_0000,
    0,
    1,
    0x100,
];
const BIG_U64: [u64; 7] = [
    u64::MAX,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0,
    1,
];
/// Tokens that text formats (JSON, TOML, decimal scalars) treat specially.
const TOKENS: [&[u8]; 16] = [
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b"\n",
    b"-1",
    b"0",
    b"1e999",
    b"18446744073709551616",
    b"52435875175126190479447740508185965837690552500527637822603658699938581184513",
    b"null",
    b"\\u0000",
];

/// Applies one to four random mutations to `input`, splicing with `other`.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut b, other);
    }
    b.truncate(MAX_INPUT);
    b
}

fn mutate_once(rng: &mut Rng, b: &mut Vec<u8>, other: &[u8]) {
    // Empty inputs can only grow.
    let kind = if b.is_empty() { 11 } else { rng.below(13) };
    let len = b.len();
    match kind {
        0 => {
            let i = rng.below(len);
            b[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(len);
            b[i] = rng.next_u64() as u8;
        }
        2 => {
            let i = rng.below(len);
            b[i] = [0, 0xff, 0x7f, 0x80, 1][rng.below(5)];
        }
        3 => b.truncate(rng.below(len)),
        4 | 5 => {
            let width = if kind == 4 { 4 } else { 8 };
            if len >= width {
                let i = rng.below(len / width) * width;
                let v = if width == 4 {
                    BIG_U32[rng.below(BIG_U32.len())].to_le_bytes().to_vec()
                } else {
                    BIG_U64[rng.below(BIG_U64.len())].to_le_bytes().to_vec()
                };
                b[i..i + width].copy_from_slice(&v);
            }
        }
        6 => {
            // A count just past what follows it.
            if len >= 4 {
                let i = rng.below(len / 4) * 4;
                let v = (len - i) as u32 + rng.below(3) as u32;
                b[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        7 => {
            let (start, n) = chunk(rng, len);
            let piece = b[start..start + n].to_vec();
            let at = rng.below(len + 1);
            b.splice(at..at, piece);
        }
        8 => {
            let (start, n) = chunk(rng, len);
            b.drain(start..start + n);
        }
        9 => {
            if !other.is_empty() {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                b.truncate(cut);
                b.extend_from_slice(&other[from..]);
            }
        }
        10 => {
            let (start, n) = chunk(rng, len);
            for x in &mut b[start..start + n] {
                *x = rng.next_u64() as u8;
            }
        }
        11 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            b.splice(at..at, bytes);
        }
        _ => {
            let at = rng.below(len + 1);
            let t = TOKENS[rng.below(TOKENS.len())];
            if rng.below(2) == 0 || at + t.len() > len {
                b.splice(at..at, t.iter().copied());
            } else {
                b[at..at + t.len()].copy_from_slice(t);
            }
        }
    }
}

/// A chunk of a `len`-byte input (`len > 0`), mostly short.
fn chunk(rng: &mut Rng, len: usize) -> (usize, usize) {
    let start = rng.below(len);
    let most = (len - start).min(if rng.below(4) == 0 { len } else { 64 });
    (start, 1 + rng.below(most))
}

/// FNV-1a: names failure files by content, so a repeat overwrites itself.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `target/fuzz-failures/<target>`, found from the test binary's path
/// (`target/<profile>/deps/<name>`), so it follows `CARGO_TARGET_DIR`.
pub fn failure_dir(target: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let root = exe
        .ancestors()
        .nth(3)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf);
    root.join("fuzz-failures").join(target)
}

/// Writes `input` under [`failure_dir`] and returns its path.
pub fn save_failure(target: &str, input: &[u8]) -> PathBuf {
    let dir = failure_dir(target);
    let path = dir.join(format!("{:016x}", hash(input)));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("cannot write {}: {e}", path.display());
    }
    path
}

/// The files of `dir`, sorted by name (so a run is reproducible).
///
/// # Panics
/// When `dir` cannot be read or is empty: a target without seeds only
/// mutates nothing.
pub fn load_corpus(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, b)
        })
        .collect()
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

/// The input being run, for the watchdog.
struct Current {
    input: Vec<u8>,
    since: Instant,
}

/// Aborts the process when one input runs far past the bound: a hang
/// cannot be caught, but its input can be saved first.
fn watchdog(
    target: String,
    bound: Duration,
    current: Arc<Mutex<Option<Current>>>,
    done: Arc<AtomicBool>,
) {
    let limit = bound * 4;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        let guard = current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_ref()
            && c.since.elapsed() > limit
        {
            let path = save_failure(&target, &c.input);
            eprintln!(
                "fuzz {target}: an input has run for over {limit:?} (hang?); saved to {}; aborting",
                path.display()
            );
            std::process::abort();
        }
    }
}

/// Runs `f` on every file of `corpus`, then on mutants of them until
/// `budget` is spent.
///
/// # Panics
/// On the first input that panics in `f` or takes longer than
/// `budget.per_input`, after saving it with [`save_failure`]; the message
/// names the file and the panic.
pub fn run(target: &str, corpus: &Path, f: impl Fn(&[u8]), budget: &Budget) -> Stats {
    let seeds = load_corpus(corpus);
    let current = Arc::new(Mutex::new(None::<Current>));
    let done = Arc::new(AtomicBool::new(false));
    let dog = {
        let (t, c, d, b) = (
            target.to_string(),
            current.clone(),
            done.clone(),
            budget.per_input,
        );
        std::thread::spawn(move || watchdog(t, b, c, d))
    };
    let slowest = std::cell::Cell::new(Duration::ZERO);
    let one = |input: &[u8], origin: &str| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Current {
            input: input.to_vec(),
            since: Instant::now(),
        });
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| f(input)));
        let took = start.elapsed();
        *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        slowest.set(slowest.get().max(took));
        let why = match outcome {
            Err(p) => format!("panicked: {}", panic_message(&*p)),
            Ok(()) if took > budget.per_input => {
                format!("took {took:?}, over the {:?} bound", budget.per_input)
            }
            Ok(()) => return,
        };
        done.store(true, Ordering::Relaxed);
        let path = save_failure(target, input);
        panic!(
            "fuzz {target}: {origin} {why}\n  input ({} bytes) saved to {}",
            input.len(),
            path.display()
        );
    };
    for (path, bytes) in &seeds {
        one(bytes, &format!("corpus file {}", path.display()));
    }
    let mut rng = Rng::new(budget.seed ^ hash(target.as_bytes()));
    let start = Instant::now();
    let mut mutants = 0;
    while mutants < budget.iterations && start.elapsed() < budget.time {
        let base = &seeds[rng.below(seeds.len())].1;
        let other = &seeds[rng.below(seeds.len())].1;
        let input = mutate(&mut rng, base, other);
        mutants += 1;
        one(&input, &format!("mutant {mutants}"));
    }
    done.store(true, Ordering::Relaxed);
    let _ = dog.join();
    let stats = Stats {
        corpus: seeds.len(),
        mutants,
        slowest: slowest.get(),
    };
    eprintln!(
        "fuzz {target}: {} corpus files, {} mutants, slowest input {:?}",
        stats.corpus, stats.mutants, stats.slowest
    );
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_reproducible_and_bounded() {
        let seed = vec![7u8; 100];
        let a: Vec<Vec<u8>> = {
            let mut r = Rng::new(1);
            (0..500).map(|_| mutate(&mut r, &seed, b"other")).collect()
        };
        let mut r = Rng::new(1);
        for x in &a {
            assert_eq!(*x, mutate(&mut r, &seed, b"other"));
            assert!(x.len() <= MAX_INPUT);
        }
        assert!(a.iter().any(|x| *x != seed));
        // The empty input grows instead of panicking on an empty range.
        let _ = mutate(&mut r, &[], &[]);
    }
}
