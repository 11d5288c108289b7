//! `zkpipe bench …`: ops (msm, ntt, quotient) timed per size, whole
//! proofs per stage, and batches through the scheduler.

mod msm;
mod prove;
mod report;

use crate::host::{Machine, machine};
use msm::{G1Ops, G2Ops, bench_msm};
use prove::bench_prove;
use report::{Printer, Report, measure, ms, report_for, row};

use clap::{Subcommand, ValueEnum};
use serde::Serialize;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_core::host_buffer::BufferPool;
use zkpipe_core::plugin::{MsmConfig, NttConfig, NttDirection, NttOrder, ops};
use zkpipe_core::{Backend, Error, Fr, G1Affine, G2Affine, sample};

use crate::plugin_args::PluginArgs;

#[derive(Subcommand, Debug)]
pub enum BenchOp {
    /// Multi-scalar multiplication over random bases and scalars.
    Msm {
        #[command(flatten)]
        common: Common,
        /// Curve group.
        #[arg(long, value_enum, default_value = "g1")]
        group: Group,
        /// Upload each size's bases once and time MSMs on the resident set.
        #[arg(long)]
        resident: bool,
        /// Cut each MSM over these devices of the backend (e.g. `0,1`): one
        /// contiguous piece of the points per device, the sums added on the
        /// host. Replaces `--device`.
        #[arg(long, value_name = "LIST", value_delimiter = ',', num_args = 1..)]
        split_devices: Vec<u32>,
        /// Also time the same MSM through blst's own multi-threaded Pippenger
        /// (no plugin in between) and report the plugin's overhead.
        #[arg(long, value_enum)]
        baseline: Option<Baseline>,
        /// Scalars: uniformly random, or random bits (0 or 1: a SHA-256
        /// or PoRep witness's shape).
        #[arg(long, value_enum, default_value = "random")]
        scalars: Scalars,
    },
    /// A whole Groth16 proof of a built-in circuit: median time per stage,
    /// and witness-only synthesis + SpMV against synthesis with constraints.
    Prove {
        #[command(flatten)]
        circuit: crate::circuit::CircuitArgs,
        #[command(flatten)]
        plugins: PluginArgs,
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
        /// Skip timing a synthesis with constraints against witness-only +
        /// SpMV (at PoRep sizes it costs a second recording, minutes).
        #[arg(long)]
        no_synthesis_comparison: bool,
        /// SpMV on the host even where the backend runs it with the
        /// quotient from the witness (op `spmv`), for comparison.
        #[arg(long)]
        host_spmv: bool,
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
        /// Values in host memory the backend lends (page-locked for a GPU,
        /// as the prover's evaluation vectors are) instead of the heap.
        #[arg(long)]
        lent: bool,
    },
    /// Groth16's quotient h from a, b, c (the fused op where the backend has
    /// it, else the prover's seven NTTs on that backend).
    Quotient {
        #[command(flatten)]
        common: Common,
        /// a, b, c in host memory the backend lends (as in a proof) instead
        /// of the heap.
        #[arg(long)]
        lent: bool,
    },
}

#[derive(clap::Args, Debug)]
pub struct Common {
    #[command(flatten)]
    plugins: PluginArgs,
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

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalars {
    Random,
    Bits,
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

/// Refuses sizes whose inputs cannot fit this machine's memory
/// (`bytes_per_element` for the largest size), before any work.
fn check_size(common: &Common, op: &str, bytes_per_element: u64) -> Result<(), Error> {
    let log = *common.log_size.end();
    zkpipe_core::machine::check_memory(
        &format!("bench {op} at 2^{log}"),
        bytes_per_element.saturating_mul(1u64 << log),
    )
}

impl BenchOp {
    /// The plugin flags given after the command.
    fn plugins(&self) -> &PluginArgs {
        match self {
            BenchOp::Msm { common, .. }
            | BenchOp::Ntt { common, .. }
            | BenchOp::Quotient { common, .. } => &common.plugins,
            BenchOp::Prove { plugins, .. } => plugins,
            BenchOp::Batch(cmd) => &cmd.batch.plugins,
            BenchOp::Compare(cmd) => &cmd.batch.plugins,
        }
    }
}

/// Where a bench's vectors live: memory `be` lends (`--lent`), else the heap.
///
/// # Errors
/// [`Error::InvalidInput`] when `--lent` is asked of a backend that lends none.
fn buffer_pool(be: &Arc<Backend>, lent: bool) -> Result<Arc<BufferPool>, Error> {
    if !lent {
        return Ok(BufferPool::heap());
    }
    if !be.capabilities().supports(ops::HOST_MEMORY) {
        return Err(Error::InvalidInput(format!(
            "--lent: backend `{}` lends no host memory (no `{}` op)",
            be.name(),
            ops::HOST_MEMORY
        )));
    }
    Ok(BufferPool::new(be))
}

fn memory_note(lent: bool) -> &'static str {
    if lent {
        ", values in lent host memory"
    } else {
        ""
    }
}

pub fn run(args: &PluginArgs, op: &BenchOp) -> Result<(), Error> {
    let args = &args.with(op.plugins());
    let (common, report) = match op {
        BenchOp::Batch(cmd) => return crate::batch::run(args, cmd),
        BenchOp::Compare(cmd) => return crate::batch::compare(args, cmd),
        BenchOp::Prove {
            circuit,
            backend,
            runs,
            synthetic,
            no_synthesis_comparison,
            host_spmv,
            json,
            ..
        } => {
            let compare = !*no_synthesis_comparison;
            let opts = prove::Options {
                runs: *runs,
                synthetic: *synthetic,
                compare,
                host_spmv: *host_spmv,
                json: *json,
            };
            return bench_prove(args, circuit, backend, opts);
        }
        BenchOp::Msm {
            common,
            group,
            resident,
            split_devices,
            baseline,
            scalars,
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
                "msm_{}{}{}{}",
                if *group == Group::G1 { "g1" } else { "g2" },
                if *resident { " (resident bases)" } else { "" },
                if *scalars == Scalars::Bits {
                    " (bit scalars)"
                } else {
                    ""
                },
                if split_devices.is_empty() {
                    String::new()
                } else {
                    format!(" (split over devices {split_devices:?})")
                }
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
                Group::G1 => bench_msm::<G1Ops>(
                    &be,
                    common,
                    *resident,
                    split_devices,
                    baseline.is_some(),
                    *scalars,
                    &mut report,
                    &p,
                )?,
                Group::G2 => bench_msm::<G2Ops>(
                    &be,
                    common,
                    *resident,
                    split_devices,
                    baseline.is_some(),
                    *scalars,
                    &mut report,
                    &p,
                )?,
            }
            (common, report)
        }
        BenchOp::Quotient { common, lent } => {
            // a, b, c and their copies.
            check_size(common, "quotient", 6 * 32)?;
            let be = Arc::new(args.backend(&common.backend)?);
            let fused = be
                .capabilities()
                .supports(zkpipe_core::plugin::ops::QUOTIENT);
            let name = if fused {
                "quotient (fused op)"
            } else {
                "quotient (7 NTT calls + host pointwise)"
            };
            let pool = buffer_pool(&be, *lent)?;
            let name = format!("{name}{}", memory_note(*lent));
            let mut report = report_for(&be, common.device, name, None)?;
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
                let [mut a, b, c] = [0, 1, 2].map(|i| {
                    let mut v = pool.take(n);
                    v.copy_from_slice(&inputs[i][..n]);
                    v
                });
                let (b, c) = (&b[..], &c[..]);
                let times = measure(
                    common.runs,
                    // Each run takes the previous run's h as its a (as
                    // random as the input; no host copy in the timing).
                    &mut [&mut || {
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
            lent,
        } => {
            // Input, the working copy, twiddles.
            check_size(common, "ntt", 3 * 32)?;
            let be = Arc::new(args.backend(&common.backend)?);
            let pool = buffer_pool(&be, *lent)?;
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
                "ntt {}{} {:?}{}",
                if *inverse { "inverse" } else { "forward" },
                if *coset { " coset" } else { "" },
                order,
                memory_note(*lent)
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
                let mut buf = pool.take(n);
                buf.copy_from_slice(&input[..n]);
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
