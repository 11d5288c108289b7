//! Criterion benches for every backend op, per loaded backend.
//!
//! - `ZKPIPE_BENCH_BACKENDS=cpu,cuda` selects backends (default: all loaded);
//! - `ZKPIPE_BENCH_LOG_SIZES=10,12,14` or `10..16` selects sizes (default 10,12,14,16);
//! - `ZKPIPE_BENCH_QUICK=1`, or running under `cargo test --benches`, is a smoke
//!   pass on small sizes.
//!
//! MSM groups also time blst's own multi-threaded Pippenger (`blst-direct`)
//! on the same inputs: the plugin's overhead is the gap between the two.

use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::plugin::{BackendConfig, MsmConfig, NttConfig, QuotientConfig, ops};
use zkpipe::{Backend, util::sample};

/// Smoke mode: asked for, or run by `cargo test` (criterion's test mode, no `--bench`).
fn quick() -> bool {
    std::env::var_os("ZKPIPE_BENCH_QUICK").is_some() || !std::env::args().any(|a| a == "--bench")
}

fn log_sizes() -> Vec<u32> {
    if quick() {
        return vec![6, 8];
    }
    let spec = std::env::var("ZKPIPE_BENCH_LOG_SIZES").unwrap_or_else(|_| "10,12,14,16".into());
    if let Some((a, b)) = spec.split_once("..") {
        let (a, b): (u32, u32) = (
            a.trim().parse().expect("log size"),
            b.trim().parse().expect("log size"),
        );
        return (a..=b).collect();
    }
    spec.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("ZKPIPE_BENCH_LOG_SIZES: comma-separated numbers")
        })
        .collect()
}

fn backends() -> Vec<Backend> {
    let reg = Registry::load(&SearchPath::standard(None));
    for f in &reg.failures {
        eprintln!("skipped {}: {}", f.path.display(), f.reason);
    }
    let wanted: Option<Vec<String>> = std::env::var("ZKPIPE_BENCH_BACKENDS")
        .ok()
        .map(|s| s.split(',').map(|t| t.trim().to_string()).collect());
    let names: Vec<String> = match wanted {
        Some(w) => w,
        None => reg.plugins.iter().map(|p| p.name.clone()).collect(),
    };
    names
        .iter()
        .filter_map(|n| match reg.create(n, &BackendConfig::default()) {
            Ok(b) if !b.info().devices.is_empty() => Some(b),
            Ok(_) => {
                eprintln!("skipping {n}: no devices");
                None
            }
            Err(e) => panic!("{e}"),
        })
        .collect()
}

macro_rules! msm_bench {
    ($fn:ident, $group:literal, $points:path, $aff:ty, $msm:ident, $op:expr) => {
        fn $fn(c: &mut Criterion, backends: &[Backend], logs: &[u32]) {
            let max = 1usize << logs.iter().max().unwrap();
            let bases = $points(max, 1);
            let scalars = sample::scalars(max, 2);
            let mut g = c.benchmark_group($group);
            for &log in logs {
                let n = 1usize << log;
                g.throughput(Throughput::Elements(n as u64));
                let (b, s) = (&bases[..n], &scalars[..n]);
                // Backends without the op (e.g. wgpu's G2) are skipped.
                for be in backends.iter().filter(|be| be.capabilities().supports($op)) {
                    g.bench_with_input(
                        BenchmarkId::new(be.name(), format!("2^{log}")),
                        &n,
                        |bench, _| {
                            bench.iter(|| black_box(be.$msm(b, s, &MsmConfig::default()).unwrap()))
                        },
                    );
                }
                g.bench_with_input(
                    BenchmarkId::new("blst-direct", format!("2^{log}")),
                    &n,
                    |bench, _| {
                        use blst::MultiPoint;
                        bench.iter(|| {
                            let bytes: Vec<u8> = s.iter().flat_map(|k| k.to_bytes_le()).collect();
                            black_box(<$aff>::slice_as_blst(b).mult(&bytes, 255))
                        })
                    },
                );
            }
            g.finish();
        }
    };
}
msm_bench!(
    bench_msm_g1,
    "msm_g1",
    sample::g1_points,
    zkpipe::G1Affine,
    msm_g1,
    ops::MSM_G1
);
msm_bench!(
    bench_msm_g2,
    "msm_g2",
    sample::g2_points,
    zkpipe::G2Affine,
    msm_g2,
    ops::MSM_G2
);

fn bench_ntt(c: &mut Criterion, backends: &[Backend], logs: &[u32]) {
    let input = sample::scalars(1 << logs.iter().max().unwrap(), 3);
    let mut g = c.benchmark_group("ntt");
    for &log in logs {
        let n = 1usize << log;
        g.throughput(Throughput::Elements(n as u64));
        for be in backends
            .iter()
            .filter(|be| be.capabilities().supports(ops::NTT))
        {
            let mut buf = input[..n].to_vec();
            g.bench_with_input(
                BenchmarkId::new(be.name(), format!("2^{log}")),
                &n,
                |bench, _| {
                    // Transforming the previous output is as random as the input: no reset needed.
                    bench.iter(|| be.ntt(black_box(&mut buf), &NttConfig::default()).unwrap())
                },
            );
        }
    }
    g.finish();
}

/// The fused quotient, on the backends that have it.
fn bench_quotient(c: &mut Criterion, backends: &[Backend], logs: &[u32]) {
    let max = 1 << logs.iter().max().unwrap();
    let (a, b, cc) = (
        sample::scalars(max, 4),
        sample::scalars(max, 5),
        sample::scalars(max, 6),
    );
    let cfg = QuotientConfig {
        device: 0,
        coset: zkpipe::Fr::from_u64(7),
        ext: Default::default(),
    };
    let mut g = c.benchmark_group("quotient");
    for &log in logs {
        let n = 1usize << log;
        g.throughput(Throughput::Elements(n as u64));
        for be in backends
            .iter()
            .filter(|be| be.capabilities().supports(ops::QUOTIENT))
        {
            let mut buf = a[..n].to_vec();
            g.bench_with_input(
                BenchmarkId::new(be.name(), format!("2^{log}")),
                &n,
                |bench, _| {
                    // The output is as random as the input: no reset needed.
                    bench.iter(|| {
                        be.quotient(black_box(&mut buf), &b[..n], &cc[..n], &cfg)
                            .unwrap()
                    })
                },
            );
        }
    }
    g.finish();
}

fn main() {
    let backends = backends();
    let logs = log_sizes();
    let mut c = Criterion::default().configure_from_args().sample_size(10);
    if quick() {
        c = c
            .warm_up_time(Duration::from_millis(100))
            .measurement_time(Duration::from_millis(300));
    }
    bench_msm_g1(&mut c, &backends, &logs);
    bench_msm_g2(&mut c, &backends, &logs);
    bench_ntt(&mut c, &backends, &logs);
    bench_quotient(&mut c, &backends, &logs);
    c.final_summary();
}
