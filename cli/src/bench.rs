//! `zkpipe bench …`: ops (msm, ntt, quotient) timed per size, whole
//! proofs per stage, and batches through the scheduler.

use clap::{Subcommand, ValueEnum};
use std::io::Write;
use std::ops::RangeInclusive;
use std::sync::Arc;
use zkpipe_core::Error;
use zkpipe_core::plugin::NttOrder;
use zkpipe_harness::{MsmRequest, NttRequest, ProveBench, Report, Row, Sink, Sizes};

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
    /// Curve: bls12-381 or bn254 (also spelled bn128).
    #[arg(long, default_value = "bls12-381")]
    curve: zkpipe_core::Curve,
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
    /// blst's `MultiPoint::mult` on its own thread pool (BLS12-381).
    Blst,
    /// halo2curves' `msm_best` on the same pool (BN254).
    Halo2curves,
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

impl Common {
    fn sizes(&self) -> Sizes {
        Sizes {
            log_sizes: self.log_size.clone(),
            runs: self.runs,
            device: self.device,
            seed: self.seed,
            curve: self.curve,
        }
    }
}

/// Prints the table as rows complete, or nothing until the JSON.
struct Table {
    json: bool,
}

impl Sink for Table {
    fn header(&mut self, report: &Report) {
        if !self.json {
            println!("{}", report.header());
        }
    }
    fn row(&mut self, row: &Row) {
        if !self.json {
            println!("{}", row.line());
            let _ = std::io::stdout().flush();
        }
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
            let req = ProveBench {
                builtin: circuit.request(),
                runs: *runs,
                synthetic: *synthetic,
                compare: !*no_synthesis_comparison,
                host_spmv: *host_spmv,
            };
            let session = args.session(backend, 0)?;
            let report = zkpipe_harness::prove(&session, &req)?;
            if *json {
                print_json(&report);
            } else {
                report.lines().iter().for_each(|l| println!("{l}"));
            }
            return Ok(());
        }
        BenchOp::Msm {
            common,
            group,
            resident,
            split_devices,
            baseline,
            scalars,
        } => {
            let req = MsmRequest {
                group: match group {
                    Group::G1 => zkpipe_harness::MsmGroup::G1,
                    Group::G2 => zkpipe_harness::MsmGroup::G2,
                },
                resident: *resident,
                split_devices: split_devices.clone(),
                baseline: baseline.map(|b| format!("{b:?}").to_lowercase()),
                bit_scalars: *scalars == Scalars::Bits,
            };
            let be = args.backend(&common.backend)?;
            let mut table = Table { json: common.json };
            (
                common,
                zkpipe_harness::msm(&be, &common.sizes(), &req, &mut table)?,
            )
        }
        BenchOp::Quotient { common, lent } => {
            let be = Arc::new(args.backend(&common.backend)?);
            let mut table = Table { json: common.json };
            let report = zkpipe_harness::quotient(&be, &common.sizes(), *lent, &mut table)?;
            (common, report)
        }
        BenchOp::Ntt {
            common,
            inverse,
            coset,
            order,
            lent,
        } => {
            let req = NttRequest {
                inverse: *inverse,
                coset: *coset,
                order: match order {
                    Order::Nn => NttOrder::NN,
                    Order::Nr => NttOrder::NR,
                    Order::Rn => NttOrder::RN,
                    Order::Rr => NttOrder::RR,
                },
                lent: *lent,
            };
            let be = Arc::new(args.backend(&common.backend)?);
            let mut table = Table { json: common.json };
            let report = zkpipe_harness::ntt(&be, &common.sizes(), req, &mut table)?;
            (common, report)
        }
    };
    if common.json {
        print_json(&report);
    }
    Ok(())
}

fn print_json(report: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(report).expect("report serialises")
    );
}
