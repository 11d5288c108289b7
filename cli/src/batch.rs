//! `zkpipe bench batch`: many proof requests through the scheduling engine
//! under one policy — per-proof lines, a summary, a TIMELINE, and the
//! waterfall as JSON and SVG.

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use zkpipe_core::Error;
use zkpipe_core::sched::batch::Finished;
use zkpipe_core::sched::metrics::{Summary, timeline_lines};
use zkpipe_core::sched::{Policy, Span};
use zkpipe_session::Session;
use zkpipe_session::batch::{BatchCircuit, BatchRequest};
use zkpipe_session::policy;

use crate::circuit::CircuitArgs;
use crate::plugin_args::PluginArgs;

/// The workload and the policy, shared by `batch` and `compare`.
#[derive(Args, Debug, Clone)]
pub struct BatchArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// A snarkjs BN254 zkey to prove instead of a built-in circuit; every
    /// partition proves the --wtns witness, blinded afresh.
    #[arg(long, value_name = "FILE", requires = "wtns", conflicts_with_all = ["circuit", "size", "synthetic"])]
    pub zkey: Option<PathBuf>,
    /// The witness (.wtns) of --zkey's circuit.
    #[arg(long, value_name = "FILE", requires = "zkey")]
    pub wtns: Option<PathBuf>,
    #[command(flatten)]
    pub plugins: PluginArgs,
    /// Backend name (one instance per device).
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Partitions per proof request.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=crate::prove::MAX_PARTITIONS as i64))]
    pub partitions: u32,
    /// Proof requests to run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub count: u32,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,
    /// Random valid keys instead of a setup (timing only; proofs are not verified).
    #[arg(long)]
    pub synthetic: bool,
    /// Scheduling knob, repeatable: partition_workers, spmv_workers,
    /// spmv_threads, lookahead, synthesis_nice, gpu_workers_per_device,
    /// device_lock (partition|op), gpu_threads, b_g2 (device|cpu-inline|cpu-split), dealloc
    /// (inline|async|serialized), throttle, memory_budget, device_memory_budget, order, oom_retries,
    /// oom_fallback.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::plugin_args::parse_key_value)]
    pub knobs: Vec<(String, String)>,
    /// TOML file of knobs (applied before --set).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Verify every proof (default: a sample — the first partition of each request).
    #[arg(long)]
    pub verify: bool,
}

#[derive(Args, Debug)]
pub struct BatchCmd {
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Built-in policy (adaptive, serial, pipelined, split, throttle,
    /// priority) or the path of a policy plugin (libzkpipe_policy_*.so).
    #[arg(long, default_value = "pipelined")]
    pub policy: String,
    /// Folder for waterfall.json and waterfall.svg.
    #[arg(long, value_name = "DIR", default_value = "zkpipe-batch")]
    pub out_dir: PathBuf,
    /// Print the TIMELINE CSV lines.
    #[arg(long)]
    pub timeline: bool,
    /// Summary as JSON on stdout (per-proof lines go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Run the batch through a running daemon (`zkpipe serve`) at this
    /// address instead of in this process; its config sets backend,
    /// policy and knobs.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["policy", "knobs", "config", "synthetic", "backend", "zkey"])]
    pub daemon: Option<String>,
    /// Bearer token file for a TCP daemon.
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub token_file: Option<PathBuf>,
}

/// A built-in policy by name, or a policy plugin by path, with `--config`,
/// `--set` and `extra` knobs applied.
pub fn resolve_policy(
    b: &BatchArgs,
    name: &str,
    extra: &[(String, String)],
) -> Result<Arc<dyn Policy>, Error> {
    let all: Vec<(String, String)> = b.knobs.iter().chain(extra).cloned().collect();
    policy::resolve(name, policy::settings_from(b.config.as_deref())?, &all)
}

impl BatchArgs {
    fn request(&self) -> BatchRequest {
        BatchRequest {
            circuit: match (&self.zkey, &self.wtns) {
                (Some(zkey), Some(wtns)) => BatchCircuit::Bn254Zkey {
                    zkey: zkey.clone(),
                    wtns: wtns.clone(),
                },
                _ => BatchCircuit::Builtin(self.circuit.request()),
            },
            partitions: self.partitions,
            count: self.count,
            concurrency: self.concurrency,
            synthetic: self.synthetic,
            verify_all: self.verify,
        }
    }
}

/// Runs the batch under `policy`: per-proof lines (stdout, or stderr
/// when `quiet`), a bar on a terminal; returns the summary and timeline.
pub fn run_batch(
    session: &Session,
    b: &BatchArgs,
    policy: Arc<dyn Policy>,
    quiet: bool,
) -> Result<(Summary, Vec<Span>), Error> {
    // Drawn on stderr, only when it is a terminal.
    let bar = indicatif::ProgressBar::new(b.count as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} proofs  {elapsed_precise} (ETA {eta})",
        )
        .expect("valid template"),
    );
    let out = session.batch(&b.request(), policy, &mut |f: &Finished<'_>| {
        let line = zkpipe_harness::proof_line(f, b.count);
        // The bar, on a terminal only, redraws below the lines.
        bar.suspend(|| {
            if quiet {
                eprintln!("{line}")
            } else {
                println!("{line}")
            }
        });
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    Ok(out)
}

pub fn run(args: &PluginArgs, cmd: &BatchCmd) -> Result<(), Error> {
    let (summary, spans) = match &cmd.daemon {
        Some(addr) => {
            crate::batch_daemon::run_batch(addr, cmd.token_file.as_deref(), &cmd.batch, cmd.json)?
        }
        None => {
            let p = resolve_policy(&cmd.batch, &cmd.policy, &[])?;
            if cmd.batch.synthetic {
                eprintln!("warning: SYNTHETIC keys: timing only, proofs are not verified");
            }
            let session = args.session(&cmd.batch.backend, 0)?;
            run_batch(&session, &cmd.batch, p, cmd.json)?
        }
    };
    zkpipe_harness::write_waterfall(&cmd.out_dir, &summary, &spans)?;
    if cmd.timeline {
        for line in timeline_lines(&spans) {
            println!("{line}");
        }
    }
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap());
    } else {
        println!("{}", zkpipe_harness::machine());
        zkpipe_harness::summary_lines(&summary)
            .iter()
            .for_each(|l| println!("{l}"));
        println!(
            "  waterfall: {}/waterfall.json, {}/waterfall.svg",
            cmd.out_dir.display(),
            cmd.out_dir.display()
        );
    }
    if summary.failed > 0 {
        return Err(Error::Failed(format!(
            "{} proof requests failed",
            summary.failed
        )));
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct CompareCmd {
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Policies to compare, repeatable (built-in name or a policy plugin's path).
    #[arg(long = "policy", default_value = "pipelined")]
    pub policies: Vec<String>,
    /// One knob swept over values, e.g. `gpu_workers_per_device=1,2,3,4`.
    #[arg(long, value_name = "KEY=V1,V2,…", value_parser = crate::plugin_args::parse_key_value)]
    pub sweep: Option<(String, String)>,
    /// Folder for compare.json and compare.svg.
    #[arg(long, value_name = "DIR", default_value = "zkpipe-compare")]
    pub out_dir: PathBuf,
    /// Results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the same workload under every policy × sweep value; prints a table
/// and writes `compare.json` and a chart. Every policy and value is checked
/// before the first run; if a later run fails, the rows that finished are
/// still written and printed.
pub fn compare(args: &PluginArgs, cmd: &CompareCmd) -> Result<(), Error> {
    let mut runs: Vec<(String, Arc<dyn Policy>)> = Vec::new();
    for s in zkpipe_harness::compare_settings(&cmd.policies, cmd.sweep.as_ref())? {
        let policy = resolve_policy(&cmd.batch, &s.policy, &s.knobs)
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", s.label)))?;
        runs.push((s.label, policy));
    }
    let session = args.session(&cmd.batch.backend, 0)?;
    let mut rows = Vec::new();
    let mut failure = None;
    for (i, (label, policy)) in runs.iter().enumerate() {
        eprintln!("[{}/{}] {label} …", i + 1, runs.len());
        match run_batch(&session, &cmd.batch, policy.clone(), true) {
            Ok((summary, _)) => rows.push((label.clone(), summary)),
            Err(e) => {
                eprintln!("[{}/{}] {label}: FAILED — {e}", i + 1, runs.len());
                failure = Some(format!("{label}: {e}"));
                break;
            }
        }
    }
    write_compare(cmd, &rows)?;
    match failure {
        Some(why) => Err(Error::Failed(format!(
            "compare stopped after {} of {} runs ({why}); the finished rows are in {}",
            rows.len(),
            runs.len(),
            cmd.out_dir.join("compare.json").display()
        ))),
        None => Ok(()),
    }
}

fn write_compare(cmd: &CompareCmd, rows: &[(String, Summary)]) -> Result<(), Error> {
    let json = zkpipe_harness::write_compare(&cmd.out_dir, rows)?;
    if cmd.json {
        println!("{json}");
        return Ok(());
    }
    let b = &cmd.batch;
    println!("{}", zkpipe_harness::machine());
    let circuit = match &b.zkey {
        Some(zkey) => format!("{} (BN254)", zkey.display()),
        None => format!("{} {}", b.circuit.circuit, b.circuit.request().size()),
    };
    println!(
        "{circuit} — {} requests × {} partitions, {} in flight, backend {}",
        b.count, b.partitions, b.concurrency, b.backend
    );
    zkpipe_harness::compare_lines(rows)
        .iter()
        .for_each(|l| println!("{l}"));
    println!("chart: {}/compare.svg", cmd.out_dir.display());
    Ok(())
}
