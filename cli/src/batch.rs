//! `zkpipe bench batch`: many proof requests through the scheduling engine
//! under one policy — per-proof lines, a summary, a TIMELINE, and the
//! waterfall as JSON and SVG.

use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use zkpipe_core::Error;
use zkpipe_core::fsutil::write_atomically;
use zkpipe_core::sched::batch::Finished;
use zkpipe_core::sched::metrics::{Summary, timeline_lines};
use zkpipe_core::sched::{Policy, Span};
use zkpipe_session::Session;
use zkpipe_session::batch::BatchRequest;
use zkpipe_session::policy;

use crate::circuit::CircuitArgs;
use crate::plugin_args::PluginArgs;

/// The workload and the policy, shared by `batch` and `compare`.
#[derive(Args, Debug, Clone)]
pub struct BatchArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
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
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["policy", "knobs", "config", "synthetic", "backend"])]
    pub daemon: Option<String>,
    /// Bearer token file for a TCP daemon.
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub token_file: Option<PathBuf>,
}

#[derive(Serialize)]
struct Waterfall<'a> {
    summary: &'a Summary,
    spans: &'a [Span],
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
            builtin: self.circuit.request(),
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
        let line = match &f.outcome.result {
            Ok(_) => format!(
                "[{}/{}] COMPLETED — {:.2} s (prove={:.0} ms, queue={:.0} ms)",
                f.done,
                b.count,
                f.latency.as_secs_f64(),
                f.outcome.prove.as_secs_f64() * 1e3,
                f.outcome.queue.as_secs_f64() * 1e3
            ),
            Err(why) => format!("[{}/{}] FAILED — {why}", f.done, b.count),
        };
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

pub fn print_summary(s: &Summary) {
    println!("policy {} ({})", s.policy, s.settings);
    println!(
        "  total {:.2} s — completed {}, failed {}, verified {}",
        s.total_s, s.completed, s.failed, s.verified
    );
    println!(
        "  latency avg {:.2} s, min {:.2} s, max {:.2} s, p95 {:.2} s",
        s.latency_avg_s, s.latency_min_s, s.latency_max_s, s.latency_p95_s
    );
    println!(
        "  throughput {:.2} proofs/min, {:.2} s/proof (device floor {:.2} s/proof, device busy {:.0} %)",
        s.proofs_per_min, s.s_per_proof, s.device_floor_s_per_proof, s.device_busy_pct
    );
    println!(
        "  memory: process peak RSS {:.1} MiB; scheduler's admitted peak (its estimate of partitions in flight) {:.1} MiB",
        s.process_peak_rss_bytes as f64 / (1 << 20) as f64,
        s.admitted_peak_bytes as f64 / (1 << 20) as f64,
    );
    if !s.bound.is_empty() {
        println!(
            "  floors: device {:.2} s/proof, host {:.2} s/proof (from one partition alone): bound by the {}; {:.2}× the floor",
            s.device_floor_alone_s_per_proof,
            s.host_floor_s_per_proof,
            s.bound,
            s.s_per_proof_over_floor
        );
        let stages: Vec<String> = s
            .stages
            .iter()
            .map(|l| {
                format!(
                    "{}{} {:.3}→{:.3} s ({:.2}×, max {:.3})",
                    l.stage,
                    if l.on_device { "@dev" } else { "" },
                    l.alone_s,
                    l.median_s,
                    l.inflation,
                    l.max_s
                )
            })
            .collect();
        println!("  stages alone → median under load: {}", stages.join(", "));
    }
    if !s.limit_changes.is_empty() {
        let moves: Vec<String> = s
            .limit_changes
            .iter()
            .map(|c| {
                format!(
                    "{:.1} s: synthesis {} spmv {} lookahead {}",
                    c.at_s, c.limits.synthesis, c.limits.spmv, c.limits.lookahead
                )
            })
            .collect();
        println!("  limits moved: {}", moves.join("; "));
    }
    println!(
        "  device busy per device: {}; out-of-memory retries {}, host fallbacks {}",
        s.device_busy_s
            .iter()
            .enumerate()
            .map(|(d, b)| format!("dev{d} {b:.2} s"))
            .collect::<Vec<_>>()
            .join(", "),
        s.oom_retries,
        s.oom_fallbacks
    );
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
    std::fs::create_dir_all(&cmd.out_dir).map_err(|source| Error::Io {
        path: cmd.out_dir.clone(),
        source,
    })?;
    let json = serde_json::to_string_pretty(&Waterfall {
        summary: &summary,
        spans: &spans,
    })
    .unwrap();
    write_atomically(&cmd.out_dir.join("waterfall.json"), json.as_bytes())?;
    let bound = match summary.bound.as_str() {
        "" => String::new(),
        b => format!(
            " — bound by the {b}: {:.2} s/proof, {:.2}× its floor (device {:.2}, host {:.2})",
            summary.s_per_proof,
            summary.s_per_proof_over_floor,
            summary.device_floor_alone_s_per_proof,
            summary.host_floor_s_per_proof
        ),
    };
    zkpipe_charts::draw(
        &cmd.out_dir.join("waterfall.svg"),
        &spans,
        &format!("{} — {}{bound}", summary.policy, summary.settings),
    )?;
    if cmd.timeline {
        for line in timeline_lines(&spans) {
            println!("{line}");
        }
    }
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap());
    } else {
        println!("{}", zkpipe_harness::machine());
        print_summary(&summary);
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
    for name in &cmd.policies {
        let values: Vec<Vec<(String, String)>> = match &cmd.sweep {
            None => vec![vec![]],
            Some((key, values)) => {
                let v: Vec<_> = values
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(|v| vec![(key.clone(), v.to_string())])
                    .collect();
                if v.is_empty() {
                    return Err(Error::InvalidInput(format!(
                        "--sweep {key}= lists no values"
                    )));
                }
                v
            }
        };
        for extra in values {
            let label = std::iter::once(name.clone())
                .chain(extra.iter().map(|(k, v)| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(" ");
            let policy = resolve_policy(&cmd.batch, name, &extra)
                .map_err(|e| Error::InvalidInput(format!("{label}: {e}")))?;
            runs.push((label, policy));
        }
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
    std::fs::create_dir_all(&cmd.out_dir).map_err(|source| Error::Io {
        path: cmd.out_dir.clone(),
        source,
    })?;
    let json = serde_json::to_string_pretty(
        &rows
            .iter()
            .map(|(l, s)| serde_json::json!({"setting": l, "summary": s}))
            .collect::<Vec<_>>(),
    )
    .expect("summaries serialise");
    write_atomically(&cmd.out_dir.join("compare.json"), json.as_bytes())?;
    zkpipe_charts::draw_compare(&cmd.out_dir.join("compare.svg"), rows)?;
    if cmd.json {
        println!("{json}");
        return Ok(());
    }
    let b = &cmd.batch;
    println!("{}", zkpipe_harness::machine());
    println!(
        "{} {} — {} requests × {} partitions, {} in flight, backend {}",
        b.circuit.circuit,
        b.circuit.request().size(),
        b.count,
        b.partitions,
        b.concurrency,
        b.backend
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>6}",
        "setting", "s/proof", "floor s", "lat avg", "lat p95", "RSS MiB", "busy %", "failed"
    );
    for (label, s) in rows {
        println!(
            "{label:<40} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.1} {:>7.0} {:>6}",
            s.s_per_proof,
            s.device_floor_s_per_proof,
            s.latency_avg_s,
            s.latency_p95_s,
            s.process_peak_rss_bytes as f64 / (1 << 20) as f64,
            s.device_busy_pct,
            s.failed
        );
    }
    println!("chart: {}/compare.svg", cmd.out_dir.display());
    Ok(())
}
