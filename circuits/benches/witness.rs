//! Witness-only synthesis of the built-in `sha256` circuit, in ns per
//! constraint (criterion's throughput is constraints per second).
//!
//! `one-thread` is `Witness::generate` on the calling thread; `source` is
//! `CircuitSource::witness`, what provers call, on the global rayon pool.
//!
//! - `ZKPIPE_BENCH_BLOCKS=20,50` selects block counts (default 20);
//! - `ZKPIPE_WITNESS_ONCE=1` synthesizes the first size once and exits (for
//!   `valgrind --tool=callgrind`, whose instruction counts repeat exactly;
//!   `ZKPIPE_WITNESS_ONCE=source` runs `source` instead);
//! - under `cargo test --benches` it is a smoke pass on one block.

use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use zkpipe_circuits::BuiltinCircuit;
use zkpipe_core::r1cs::Witness;
use zkpipe_core::r1cs::circuit::CircuitSource;

fn quick() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

fn blocks() -> Vec<usize> {
    if quick() {
        return vec![1];
    }
    std::env::var("ZKPIPE_BENCH_BLOCKS")
        .unwrap_or_else(|_| "20".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("ZKPIPE_BENCH_BLOCKS: comma-separated counts")
        })
        .collect()
}

fn main() {
    let sizes = blocks();
    if let Some(once) = std::env::var_os("ZKPIPE_WITNESS_ONCE") {
        let c = BuiltinCircuit::new("sha256", &sizes[0].to_string()).expect("size");
        let w = if once == "source" {
            c.witness(1)
        } else {
            Witness::generate(c.build(1))
        }
        .expect("witness");
        println!("{} aux", w.aux.len());
        return;
    }
    let mut crit = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(if quick() { 1 } else { 10 }));
    let mut g = crit.benchmark_group("witness/sha256");
    for n in sizes {
        let c = BuiltinCircuit::new("sha256", &n.to_string()).expect("size");
        let constraints = c.record().expect("record").num_constraints();
        g.throughput(Throughput::Elements(constraints as u64));
        g.bench_with_input(BenchmarkId::new("one-thread", n), &c, |b, c| {
            b.iter(|| black_box(Witness::generate(c.build(1)).expect("witness")))
        });
        // What provers call: on the global pool (all cores unless
        // RAYON_NUM_THREADS says otherwise).
        g.bench_with_input(BenchmarkId::new("source", n), &c, |b, c| {
            b.iter(|| black_box(c.witness(1).expect("witness")))
        });
    }
    g.finish();
    crit.final_summary();
}
