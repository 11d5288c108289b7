//! `zkpipe bench msm|ntt`: median wall time per size after a warm-up, with
//! the machine and backend described so numbers can be quoted.

use clap::{Subcommand, ValueEnum};
use serde::Serialize;
use std::io::Write;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};
use zkpipe_core::plugin::{MsmConfig, NttConfig, NttDirection, NttOrder};
use zkpipe_core::{Backend, Error, Fr, G1Affine, G2Affine, sample};

use crate::PluginArgs;

#[derive(Subcommand, Debug)]
pub enum BenchOp {
    /// Multi-scalar multiplication over random bases and scalars.
    Msm {
        #[command(flatten)]
        common: Common,
        /// Curve group.
        #[arg(long, value_enum, default_value = "g1")]
        group: Group,
        /// Upload the bases once and time MSMs on the resident set.
        #[arg(long)]
        resident: bool,
        /// Also time the same MSM through blst's own multi-threaded Pippenger
        /// (no plugin in between) and report the plugin's overhead.
        #[arg(long, value_enum)]
        baseline: Option<Baseline>,
    },
    /// A whole Groth16 proof of a built-in circuit: median time per stage,
    /// and witness-only synthesis + SpMV against synthesis with constraints.
    Prove {
        #[command(flatten)]
        circuit: crate::circuit::CircuitArgs,
        /// Backend name.
        #[arg(long, default_value = "cpu")]
        backend: String,
        /// Timed proofs (after one warm-up).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Random valid keys instead of a setup (for sizes where setup is slow;
        /// timing is honest, proofs do not verify).
        #[arg(long)]
        synthetic: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Many proof requests through the scheduling engine under one policy:
    /// per-proof lines, summary, waterfall (JSON + SVG), TIMELINE lines.
    Batch(crate::batch::BatchCmd),
    /// One workload under several policies or one knob's values: a
    /// side-by-side table (s/proof, latency, peak memory, device busy) and a chart.
    Compare(crate::batch::CompareCmd),
    /// Number-theoretic transform over Fr.
    Ntt {
        #[command(flatten)]
        common: Common,
        /// Inverse transform.
        #[arg(long)]
        inverse: bool,
        /// On the coset 7·⟨ω⟩ (bellperson's shift).
        #[arg(long)]
        coset: bool,
        /// Input/output orders.
        #[arg(long, value_enum, default_value = "nn")]
        order: Order,
    },
    /// Groth16's quotient h from a, b, c (the fused op where the backend has
    /// it, else the prover's seven NTTs on that backend).
    Quotient {
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args, Debug)]
pub struct Common {
    /// Backend name (see `zkpipe backends`).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Sizes as log2: `16` or `10..20` (inclusive).
    #[arg(long, value_name = "A..B", value_parser = parse_log_range)]
    log_size: RangeInclusive<u32>,
    /// Timed runs per size (after one warm-up). Sizes whose warm-up takes
    /// over 5 s use at most 3.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Device index.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    G1,
    G2,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Baseline {
    /// blst's `MultiPoint::mult` on its own thread pool.
    Blst,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Order {
    Nn,
    Nr,
    Rn,
    Rr,
}

fn parse_log_range(s: &str) -> Result<RangeInclusive<u32>, String> {
    let parse = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{t}` is not a number"))
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (parse(a)?, parse(b.trim_start_matches('='))?),
        None => (parse(s)?, parse(s)?),
    };
    if a > b || b > 32 {
        return Err(format!("need A ≤ B ≤ 32, got {a}..{b}"));
    }
    Ok(a..=b)
}

#[derive(Serialize)]
pub(crate) struct Machine {
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

pub(crate) fn machine() -> Machine {
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

#[derive(Serialize)]
struct Row {
    log_size: u32,
    n: usize,
    runs: u32,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_median_ms: Option<f64>,
    /// (backend − baseline) / baseline, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    overhead_pct: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    backend: String,
    backend_version: String,
    device: String,
    op: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<&'static str>,
    rows: Vec<Row>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One contender in a timing: a closure that runs the op once.
type Contender<'a> = &'a mut dyn FnMut() -> Result<(), Error>;

/// Runs every contender once to warm up, then `runs` rounds in which each
/// runs once more, interleaved so that machine drift hits all alike.
/// Returns each contender's sorted run times. Sizes whose warm-up takes
/// over 5 s get at most 3 rounds.
fn measure(runs: u32, contenders: &mut [Contender<'_>]) -> Result<Vec<Vec<Duration>>, Error> {
    let t = Instant::now();
    for f in contenders.iter_mut() {
        f()?;
    }
    let runs = if t.elapsed() > Duration::from_secs(5) {
        runs.min(3)
    } else {
        runs
    };
    let mut times = vec![Vec::with_capacity(runs as usize); contenders.len()];
    for _ in 0..runs {
        for (f, ts) in contenders.iter_mut().zip(&mut times) {
            let t = Instant::now();
            f()?;
            ts.push(t.elapsed());
        }
    }
    times.iter_mut().for_each(|t| t.sort());
    Ok(times)
}

fn row(log_size: u32, times: &[Duration], baseline: Option<&[Duration]>) -> Row {
    let median = |t: &[Duration]| ms(t[t.len() / 2]);
    let baseline_median_ms = baseline.map(median);
    Row {
        log_size,
        n: 1 << log_size,
        runs: times.len() as u32,
        median_ms: median(times),
        min_ms: ms(times[0]),
        max_ms: ms(*times.last().unwrap()),
        baseline_median_ms,
        overhead_pct: baseline_median_ms.map(|b| (median(times) - b) / b * 100.0),
    }
}

/// Prints rows as they complete (big sizes take minutes on a CPU).
struct Printer {
    json: bool,
    header_done: bool,
}

impl Printer {
    fn header(&mut self, r: &Report) {
        if self.json || self.header_done {
            return;
        }
        self.header_done = true;
        println!("{}", r.machine);
        println!(
            "backend: {} {} on {}",
            r.backend, r.backend_version, r.device
        );
        println!(
            "op: {}{}",
            r.op,
            r.baseline
                .map(|b| format!(" (baseline: {b})"))
                .unwrap_or_default()
        );
        print!(
            "{:>5} {:>10} {:>12} {:>12} {:>12} {:>5}",
            "log", "n", "median ms", "min ms", "max ms", "runs"
        );
        if r.baseline.is_some() {
            print!(" {:>12} {:>9}", "baseline ms", "overhead");
        }
        println!();
    }
    fn row(&self, r: &Row) {
        if self.json {
            return;
        }
        print!(
            "{:>5} {:>10} {:>12.3} {:>12.3} {:>12.3} {:>5}",
            r.log_size, r.n, r.median_ms, r.min_ms, r.max_ms, r.runs
        );
        if let (Some(b), Some(o)) = (r.baseline_median_ms, r.overhead_pct) {
            print!(" {b:>12.3} {o:>+8.1}%");
        }
        println!();
        let _ = std::io::stdout().flush();
    }
}

/// Refuses sizes whose inputs cannot fit this machine's memory
/// (`bytes_per_element` for the largest size), before any work.
fn check_size(common: &Common, op: &str, bytes_per_element: u64) -> Result<(), Error> {
    let log = *common.log_size.end();
    zkpipe_core::machine::check_memory(
        &format!("bench {op} at 2^{log}"),
        bytes_per_element.saturating_mul(1u64 << log),
    )
}

fn report_for(
    be: &Backend,
    device: u32,
    op: String,
    baseline: Option<&'static str>,
) -> Result<Report, Error> {
    let info = be.info();
    let dev = be.device_info(device)?;
    Ok(Report {
        machine: machine(),
        backend: be.name().to_string(),
        backend_version: info.version.to_string(),
        device: format!(
            "device {}: {} ({} compute units)",
            dev.id, dev.name, dev.compute_units
        ),
        op,
        baseline,
        rows: vec![],
    })
}

pub fn run(args: &PluginArgs, op: &BenchOp) -> Result<(), Error> {
    let (common, report) = match op {
        BenchOp::Batch(cmd) => return crate::batch::run(args, cmd),
        BenchOp::Compare(cmd) => return crate::batch::compare(args, cmd),
        BenchOp::Prove {
            circuit,
            backend,
            runs,
            synthetic,
            json,
        } => {
            return bench_prove(args, circuit, backend, *runs, *synthetic, *json);
        }
        BenchOp::Msm {
            common,
            group,
            resident,
            baseline,
        } => {
            // Bases (and a resident copy), scalars, Pippenger's buckets.
            let per_point = if *group == Group::G1 {
                3 * 96 + 32
            } else {
                3 * 192 + 32
            };
            check_size(common, "msm", per_point)?;
            let be = args.backend(&common.backend)?;
            let name = format!(
                "msm_{}{}",
                if *group == Group::G1 { "g1" } else { "g2" },
                if *resident { " (resident bases)" } else { "" }
            );
            let mut report = report_for(
                &be,
                common.device,
                name,
                baseline.map(|_| "blst MultiPoint::mult, scalars converted from Fr in parallel"),
            )?;
            let mut p = Printer {
                json: common.json,
                header_done: false,
            };
            p.header(&report);
            match group {
                Group::G1 => {
                    bench_msm::<G1Ops>(&be, common, *resident, baseline.is_some(), &mut report, &p)?
                }
                Group::G2 => {
                    bench_msm::<G2Ops>(&be, common, *resident, baseline.is_some(), &mut report, &p)?
                }
            }
            (common, report)
        }
        BenchOp::Quotient { common } => {
            // a, b, c and their copies.
            check_size(common, "quotient", 6 * 32)?;
            let be = args.backend(&common.backend)?;
            let fused = be
                .capabilities()
                .supports(zkpipe_core::plugin::ops::QUOTIENT);
            let name = if fused {
                "quotient (fused op)"
            } else {
                "quotient (7 NTT calls + host pointwise)"
            };
            let mut report = report_for(&be, common.device, name.into(), None)?;
            let mut p = Printer {
                json: common.json,
                header_done: false,
            };
            p.header(&report);
            let max = 1usize << *common.log_size.end();
            let inputs: Vec<Vec<Fr>> = (0..3)
                .map(|i| sample::scalars(max, common.seed.wrapping_add(i)))
                .collect();
            let g = Fr::from_u64(7);
            for log in common.log_size.clone() {
                let n = 1usize << log;
                let (b, c) = (&inputs[1][..n], &inputs[2][..n]);
                let mut a = inputs[0][..n].to_vec();
                let times = measure(
                    common.runs,
                    &mut [&mut || {
                        a.copy_from_slice(&inputs[0][..n]);
                        if fused {
                            let cfg = zkpipe_core::plugin::QuotientConfig {
                                device: common.device,
                                coset: g,
                                ext: Default::default(),
                            };
                            be.quotient(&mut a, b, c, &cfg)
                        } else {
                            let (mut b, mut c) = (b.to_vec(), c.to_vec());
                            zkpipe_core::groth16::quotient_by_ntts(
                                &be,
                                &mut a,
                                &mut b,
                                &mut c,
                                g,
                                common.device,
                            )
                        }
                    }],
                )?
                .remove(0);
                let r = row(log, &times, None);
                p.row(&r);
                report.rows.push(r);
            }
            (common, report)
        }
        BenchOp::Ntt {
            common,
            inverse,
            coset,
            order,
        } => {
            // Input, the working copy, twiddles.
            check_size(common, "ntt", 3 * 32)?;
            let be = args.backend(&common.backend)?;
            let order = match order {
                Order::Nn => NttOrder::NN,
                Order::Nr => NttOrder::NR,
                Order::Rn => NttOrder::RN,
                Order::Rr => NttOrder::RR,
            };
            let cfg = NttConfig {
                device: common.device,
                direction: if *inverse {
                    NttDirection::Inverse
                } else {
                    NttDirection::Forward
                },
                order,
                coset: coset.then(|| Fr::from_u64(7)).into(),
                ext: Default::default(),
            };
            let name = format!(
                "ntt {}{} {:?}",
                if *inverse { "inverse" } else { "forward" },
                if *coset { " coset" } else { "" },
                order
            );
            let mut report = report_for(&be, common.device, name, None)?;
            let mut p = Printer {
                json: common.json,
                header_done: false,
            };
            p.header(&report);
            let max = *common.log_size.end();
            let input = sample::scalars(1 << max, common.seed);
            for log in common.log_size.clone() {
                let n = 1usize << log;
                // Each run transforms the previous output: as random as the input, no copy timed.
                let mut buf = input[..n].to_vec();
                let times = measure(common.runs, &mut [&mut || be.ntt(&mut buf, &cfg)])?.remove(0);
                let r = row(log, &times, None);
                p.row(&r);
                report.rows.push(r);
            }
            (common, report)
        }
    };
    if common.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    }
    Ok(())
}

/// The group-specific calls of the MSM bench.
trait MsmOps {
    type Aff: Copy + Sync;
    fn points(n: usize, seed: u64) -> Vec<Self::Aff>;
    fn msm(
        be: &Backend,
        bases: zkpipe_core::plugin::BasesRef<'_, Self::Aff>,
        s: &[Fr],
        cfg: &MsmConfig,
    ) -> Result<(), Error>;
    fn upload(
        be: &Backend,
        bases: &[Self::Aff],
        device: u32,
    ) -> Result<zkpipe_core::plugin::BasesHandle, Error>;
    fn blst_direct(bases: &[Self::Aff], scalar_bytes: &[u8]);
}

struct G1Ops;
struct G2Ops;

macro_rules! msm_ops {
    ($t:ident, $aff:ty, $points:path, $msm:ident, $upload:ident) => {
        impl MsmOps for $t {
            type Aff = $aff;
            fn points(n: usize, seed: u64) -> Vec<$aff> {
                $points(n, seed)
            }
            fn msm(
                be: &Backend,
                bases: zkpipe_core::plugin::BasesRef<'_, $aff>,
                s: &[Fr],
                cfg: &MsmConfig,
            ) -> Result<(), Error> {
                be.$msm(bases, s, cfg).map(|_| ())
            }
            fn upload(
                be: &Backend,
                bases: &[$aff],
                device: u32,
            ) -> Result<zkpipe_core::plugin::BasesHandle, Error> {
                be.$upload(bases, device)
            }
            fn blst_direct(bases: &[$aff], scalar_bytes: &[u8]) {
                use blst::MultiPoint;
                let _ = <$aff>::slice_as_blst(bases).mult(scalar_bytes, 255);
            }
        }
    };
}
msm_ops!(G1Ops, G1Affine, sample::g1_points, msm_g1, upload_bases_g1);
msm_ops!(G2Ops, G2Affine, sample::g2_points, msm_g2, upload_bases_g2);

/// Canonical little-endian scalar bytes, as blst's Pippenger reads them.
fn scalar_bytes(scalars: &[Fr]) -> Vec<u8> {
    use rayon::prelude::*;
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_mut(32)
        .zip(scalars)
        .for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

fn bench_msm<G: MsmOps>(
    be: &Backend,
    c: &Common,
    resident: bool,
    baseline: bool,
    report: &mut Report,
    p: &Printer,
) -> Result<(), Error> {
    let max = 1usize << c.log_size.end();
    eprintln!(
        "generating {max} random bases and scalars (seed {}) …",
        c.seed
    );
    let bases = G::points(max, c.seed);
    let scalars = sample::scalars(max, c.seed.wrapping_add(1));
    let cfg = MsmConfig {
        device: c.device,
        ..Default::default()
    };
    let handle = if resident {
        Some(G::upload(be, &bases, c.device)?)
    } else {
        None
    };
    for log in c.log_size.clone() {
        let n = 1usize << log;
        let (b, s) = (&bases[..n], &scalars[..n]);
        let mut run_backend = || match handle {
            Some(h) => G::msm(be, h.into(), s, &cfg),
            None => G::msm(be, b.into(), s, &cfg),
        };
        // The direct call pays the Fr → bytes conversion too, as any caller holding Fr would.
        let mut run_blst = || {
            G::blst_direct(b, &scalar_bytes(s));
            Ok(())
        };
        let mut times = if baseline {
            measure(c.runs, &mut [&mut run_backend, &mut run_blst])?
        } else {
            measure(c.runs, &mut [&mut run_backend])?
        };
        let base_times = (times.len() > 1).then(|| times.remove(1));
        let times = times.remove(0);
        let r = row(log, &times, base_times.as_deref());
        p.row(&r);
        report.rows.push(r);
    }
    if let Some(h) = handle {
        be.drop_bases(h)?;
    }
    Ok(())
}

#[derive(Serialize)]
struct ProveReport {
    machine: Machine,
    backend: String,
    circuit: String,
    size: String,
    constraints: usize,
    public_inputs: usize,
    private_variables: usize,
    domain_log_size: u32,
    synthetic_keys: bool,
    runs: u32,
    /// Median per stage, in pipeline order.
    stages_ms: Vec<(String, f64)>,
    total_ms: f64,
    /// Synthesis that builds constraints (what a prover without a recorded R1CS runs).
    synthesis_with_constraints_ms: f64,
    /// Witness-only synthesis + SpMV over the recorded matrices.
    witness_plus_spmv_ms: f64,
}

fn bench_prove(
    args: &PluginArgs,
    c: &crate::circuit::CircuitArgs,
    backend: &str,
    runs: u32,
    synthetic: bool,
    json: bool,
) -> Result<(), Error> {
    use std::sync::Arc;
    use zkpipe_core::groth16::{ProverBuilder, Stage};
    use zkpipe_core::r1cs::{R1cs, Witness};

    let circuit = c.source()?;
    crate::prove::check_fits(c)?;
    let be = Arc::new(args.backend(backend)?);
    let r1cs = c.r1cs(&circuit)?;
    let keys = crate::prove::keys(c, &circuit, &r1cs, None, synthetic)?;
    let synthetic = keys.synthetic();
    let registry = args.registry();
    let prover = ProverBuilder::new(be.clone())
        .cpu_fallback(&registry)
        .build(Arc::new(keys.params), Arc::new(r1cs.clone()))?;
    if let Some(note) = prover.fallback_note() {
        eprintln!("note: {note}");
    }

    // What recording saves: building constraints on every proof vs witness-only + SpMV.
    let t = Instant::now();
    let _ = R1cs::record(circuit.build(1))?;
    let with_constraints = t.elapsed();
    let t = Instant::now();
    let w = Witness::generate(circuit.build(1))?;
    let _ = r1cs.spmv(&w)?;
    let witness_spmv = t.elapsed();

    let (r, s) = (Fr::from_u64(1), Fr::from_u64(2));
    eprintln!("warm-up proof …");
    prover.prove_circuit(circuit.build(1), r, s)?;
    // A single proof frees its memory on return: no dealloc stage.
    let stages: Vec<Stage> = Stage::ALL
        .into_iter()
        .filter(|s| *s != Stage::Dealloc)
        .collect();
    let mut per_stage: Vec<Vec<Duration>> = vec![Vec::new(); stages.len()];
    let mut totals = Vec::new();
    for i in 0..runs {
        let (_, _, times) = prover.prove_circuit(circuit.build(2 + i as u64), r, s)?;
        for (k, st) in stages.iter().enumerate() {
            per_stage[k].push(times.get(*st));
        }
        totals.push(times.total());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        ms(v[v.len() / 2])
    };
    let report = ProveReport {
        machine: machine(),
        backend: be.name().to_string(),
        circuit: c.circuit.clone(),
        size: c.size().to_string(),
        constraints: r1cs.num_constraints(),
        public_inputs: r1cs.num_inputs - 1,
        private_variables: r1cs.num_aux,
        domain_log_size: zkpipe_core::groth16::domain_log_size(
            r1cs.num_constraints(),
            r1cs.num_inputs,
        ),
        synthetic_keys: synthetic,
        runs,
        stages_ms: stages
            .iter()
            .zip(per_stage.iter_mut())
            .map(|(s, v)| (s.name().to_string(), median(v)))
            .collect(),
        total_ms: median(&mut totals),
        synthesis_with_constraints_ms: ms(with_constraints),
        witness_plus_spmv_ms: ms(witness_spmv),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
        return Ok(());
    }
    println!("{}", report.machine);
    println!(
        "circuit: {} {} — {} constraints, {} public inputs, {} private variables, domain 2^{}{}",
        report.circuit,
        report.size,
        report.constraints,
        report.public_inputs,
        report.private_variables,
        report.domain_log_size,
        if synthetic {
            " — SYNTHETIC KEYS (timing only)"
        } else {
            ""
        }
    );
    println!(
        "backend: {}; median of {} proofs after a warm-up",
        report.backend, runs
    );
    for (name, t) in &report.stages_ms {
        println!("  {name:<9} {t:>10.1} ms");
    }
    println!("  {:<9} {:>10.1} ms", "total", report.total_ms);
    println!(
        "recorded R1CS: witness-only + SpMV {:.1} ms vs synthesis with constraints {:.1} ms ({:.1}× faster)",
        report.witness_plus_spmv_ms,
        report.synthesis_with_constraints_ms,
        report.synthesis_with_constraints_ms / report.witness_plus_spmv_ms
    );
    Ok(())
}
