//! `zkpipe bench batch`: many proof requests through the scheduling engine
//! under one policy — per-proof lines, a summary, a TIMELINE, and the
//! waterfall as JSON and SVG.

use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_core::Error;
use zkpipe_core::fsutil::write_atomically;
use zkpipe_core::groth16::{self, PreparedVerifyingKey};
use zkpipe_core::plugin::BackendConfig;
use zkpipe_core::r1cs::Witness;
use zkpipe_core::sched::groth16::{Groth16Workload, ProofOutput};
use zkpipe_core::sched::{DeviceLock, Engine, JobRequest, Policy, Settings, Span, builtin};

use crate::PluginArgs;
use crate::prove::CircuitArgs;

/// The workload and the policy, shared by `batch` and `compare`.
#[derive(Args, Debug, Clone)]
pub struct BatchArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Backend name (one instance per device).
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Partitions per proof request.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub partitions: u32,
    /// Proof requests to run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Random valid keys instead of a setup (timing only; proofs are not verified).
    #[arg(long)]
    pub synthetic: bool,
    /// Scheduling knob, repeatable: partition_workers, gpu_workers_per_device,
    /// device_lock (partition|op), gpu_threads, b_g2 (device|cpu-inline|cpu-split), dealloc
    /// (inline|async|serialized), throttle, memory_budget, device_memory_budget, order, oom_retries,
    /// oom_fallback.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::parse_key_value)]
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
    /// Built-in policy (serial, pipelined, split, throttle, priority) or the
    /// path of a policy plugin (libzkpipe_policy_*.so).
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
}

/// What one run under one policy measured.
#[derive(Serialize, Debug, Clone)]
pub struct Summary {
    pub policy: String,
    pub settings: String,
    pub total_s: f64,
    pub completed: u32,
    pub failed: u32,
    pub latency_avg_s: f64,
    pub latency_min_s: f64,
    pub latency_max_s: f64,
    pub latency_p95_s: f64,
    pub proofs_per_min: f64,
    pub s_per_proof: f64,
    pub peak_memory_bytes: u64,
    /// Time some device stage ran, per device / (wall time × devices).
    pub device_busy_pct: f64,
    /// Time some device stage ran, summed over devices, per proof request:
    /// what the devices alone need (partitions that overlap on a device
    /// under `device_lock=op` count once).
    pub device_floor_s_per_proof: f64,
    pub oom_retries: u32,
    /// Partitions whose device stages ran on the host after out-of-memory.
    pub oom_fallbacks: u32,
    pub verified: u32,
}

#[derive(Serialize)]
struct Waterfall<'a> {
    summary: &'a Summary,
    spans: &'a [Span],
}

fn knobs(b: &BatchArgs) -> Result<Settings, Error> {
    let mut s = Settings::default();
    if let Some(path) = &b.config {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        s.merge_toml(&text)
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
    }
    Ok(s)
}

/// A built-in policy by name, or a policy plugin by path (anything with a
/// `/` or ending in `.so`), with `--config`, `--set` and `extra` knobs applied.
pub fn resolve_policy(
    b: &BatchArgs,
    name: &str,
    extra: &[(String, String)],
) -> Result<Arc<dyn Policy>, Error> {
    let all: Vec<(String, String)> = b.knobs.iter().chain(extra).cloned().collect();
    if name.contains('/') || name.ends_with(".so") {
        return zkpipe_core::sched::plugin::load_policy(
            std::path::Path::new(name),
            &knobs(b)?,
            &all,
        );
    }
    builtin(name, Some(knobs(b)?), &all)
}

/// Runs the batch under `policy`; `progress` prints per-proof lines.
pub fn run_batch(
    args: &PluginArgs,
    b: &BatchArgs,
    policy: Arc<dyn Policy>,
    quiet: bool,
) -> Result<(Summary, Vec<Span>), Error> {
    let c = &b.circuit;
    let r1cs = Arc::new(c.r1cs()?);
    let dir = crate::prove::cached_keys(c, b.synthetic)?;
    let (params, synthetic) = crate::prove::load_keys(c, &dir)?;
    let params = Arc::new(params);
    let settings = policy.settings().clone();

    let registry = args.registry();
    let plugin = registry.get(&b.backend).ok_or_else(|| {
        registry
            .create(&b.backend, &BackendConfig::default())
            .unwrap_err()
    })?;
    let device_backend = Arc::new(plugin.create(&args.config())?);
    let devices = device_backend.info().devices.len().max(1);
    let mut provers = Vec::with_capacity(devices);
    for _ in 0..devices {
        // One backend instance per device index would pass the index; the CPU has one.
        let mut prover =
            crate::prove::prover_for(args, device_backend.clone(), params.clone(), r1cs.clone())?;
        // A partition's MSMs side by side only where partitions do not share
        // the device, and where five MSMs' scratch fits the device budget.
        prover.allow_msms_side_by_side(settings.device_lock == DeviceLock::Partition);
        let budget = settings.device_memory_budget;
        if budget > 0 && prover.partition_device_bytes() > budget {
            prover.allow_msms_side_by_side(false);
        }
        provers.push(prover);
    }
    let cpu_cfg = BackendConfig {
        threads: Some(settings.gpu_threads as u32).into(),
        ext: Default::default(),
    };
    let cpu = Arc::new(registry.create("cpu", &cpu_cfg)?);
    let circuit = c.clone();
    let witness = Arc::new(move |seed: u64, p: u32| {
        Witness::generate(circuit.build(seed.wrapping_mul(1000) + p as u64)?)
    });
    let engine = Engine::new(Groth16Workload::new(provers, cpu, witness), policy.clone())?;

    let pvk = PreparedVerifyingKey::new(&params.vk);
    // Drawn on stderr, only when it is a terminal.
    let bar = indicatif::ProgressBar::new(b.count as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} proofs  {elapsed_precise}")
            .unwrap(),
    );
    let t0 = Instant::now();
    let mut in_flight = std::collections::VecDeque::new();
    let mut submitted_at = std::collections::HashMap::new();
    let mut next = 0u32;
    let (mut latencies, mut failed, mut verified, mut oom) = (Vec::new(), 0u32, 0u32, 0u32);
    let (mut done, mut oom_fallbacks) = (0u32, 0u32);
    while done < b.count {
        while next < b.count && in_flight.len() < b.concurrency as usize {
            let h = engine.submit(JobRequest {
                partitions: b.partitions,
                priority: 0,
                seed: next as u64 + 1,
            });
            submitted_at.insert(h.id, Instant::now());
            in_flight.push_back(h);
            next += 1;
        }
        // Take whichever request finishes first.
        let outcome = 'found: loop {
            for i in 0..in_flight.len() {
                if let Some(o) = in_flight[i].try_wait() {
                    in_flight.remove(i);
                    break 'found o;
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        done += 1;
        let latency = submitted_at[&outcome.job].elapsed();
        oom += outcome.oom_retries;
        oom_fallbacks += outcome.oom_fallbacks;
        let line = match &outcome.result {
            Ok(proofs) => {
                latencies.push(latency);
                if !synthetic {
                    verified += verify(&pvk, proofs, b.verify)?;
                }
                format!(
                    "[{done}/{}] COMPLETED — {:.2} s (prove={:.0} ms, queue={:.0} ms)",
                    b.count,
                    latency.as_secs_f64(),
                    outcome.prove.as_secs_f64() * 1e3,
                    outcome.queue.as_secs_f64() * 1e3
                )
            }
            Err(why) => {
                failed += 1;
                format!("[{done}/{}] FAILED — {why}", b.count)
            }
        };
        // Per-proof lines go to stdout (stderr when stdout carries JSON);
        // the bar, on a terminal only, redraws below them.
        let print = |l: &str| {
            if quiet {
                eprintln!("{l}")
            } else {
                println!("{l}")
            }
        };
        bar.suspend(|| print(&line));
        bar.inc(1);
    }
    let total = t0.elapsed();
    bar.finish_and_clear();
    drop(in_flight);
    let peak = engine.peak_bytes();
    let spans = settle_timeline(&engine, b);
    drop(engine);
    Ok((
        summarize(
            policy.as_ref(),
            &settings,
            total,
            &latencies,
            failed,
            peak,
            &spans,
            devices,
            (oom, oom_fallbacks),
            verified,
            b,
        ),
        spans,
    ))
}

/// Async deallocs may land just after the last proof: wait briefly for them.
fn settle_timeline<W: zkpipe_core::sched::Workload>(
    engine: &Engine<W>,
    b: &BatchArgs,
) -> Vec<Span> {
    let want = (b.count * b.partitions) as usize;
    for _ in 0..500 {
        let tl = engine.timeline();
        if tl.iter().filter(|s| s.stage == "dealloc").count() >= want {
            return tl;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    engine.timeline()
}

fn verify(pvk: &PreparedVerifyingKey, proofs: &[ProofOutput], all: bool) -> Result<u32, Error> {
    let mut n = 0;
    for p in proofs.iter().take(if all { proofs.len() } else { 1 }) {
        if !groth16::verify(pvk, &p.proof, &p.public_inputs)? {
            return Err(Error::InvalidInput(
                "a proof from the batch failed to verify".into(),
            ));
        }
        n += 1;
    }
    Ok(n)
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    policy: &dyn Policy,
    settings: &Settings,
    total: Duration,
    latencies: &[Duration],
    failed: u32,
    peak: u64,
    spans: &[Span],
    devices: usize,
    (oom, oom_fallbacks): (u32, u32),
    verified: u32,
    b: &BatchArgs,
) -> Summary {
    let mut l: Vec<f64> = latencies.iter().map(Duration::as_secs_f64).collect();
    l.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        if l.is_empty() {
            0.0
        } else {
            l[((l.len() - 1) as f64 * q).round() as usize]
        }
    };
    let completed = l.len() as u32;
    let device_time = device_busy_s(spans);
    Summary {
        policy: policy.name().to_string(),
        settings: settings.describe(),
        total_s: total.as_secs_f64(),
        completed,
        failed,
        latency_avg_s: if l.is_empty() {
            0.0
        } else {
            l.iter().sum::<f64>() / l.len() as f64
        },
        latency_min_s: pct(0.0),
        latency_max_s: pct(1.0),
        latency_p95_s: pct(0.95),
        proofs_per_min: completed as f64 / total.as_secs_f64() * 60.0,
        s_per_proof: if completed == 0 {
            0.0
        } else {
            total.as_secs_f64() / completed as f64
        },
        peak_memory_bytes: peak,
        device_busy_pct: device_time / (total.as_secs_f64() * devices as f64) * 100.0,
        device_floor_s_per_proof: device_time / (b.count as f64).max(1.0),
        oom_retries: oom,
        oom_fallbacks,
        verified,
    }
}

/// Seconds during which each device ran at least one device stage, summed
/// over devices (the union of each device's spans).
fn device_busy_s(spans: &[Span]) -> f64 {
    let mut by_device: std::collections::BTreeMap<usize, Vec<(f64, f64)>> = Default::default();
    for s in spans {
        if let Some(d) = s.device {
            by_device.entry(d).or_default().push((s.start_ms, s.end_ms));
        }
    }
    let mut ms = 0.0;
    for mut v in by_device.into_values() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut lo, mut hi) = v[0];
        for &(a, b) in &v[1..] {
            if a > hi {
                ms += hi - lo;
                lo = a;
            }
            hi = hi.max(b);
        }
        ms += hi - lo;
    }
    ms / 1e3
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
        "  peak memory {:.1} MiB, out-of-memory retries {}, host fallbacks {}",
        s.peak_memory_bytes as f64 / (1 << 20) as f64,
        s.oom_retries,
        s.oom_fallbacks
    );
}

pub fn run(args: &PluginArgs, cmd: &BatchCmd) -> Result<(), Error> {
    let p = resolve_policy(&cmd.batch, &cmd.policy, &[])?;
    if cmd.batch.synthetic {
        eprintln!("warning: SYNTHETIC keys: timing only, proofs are not verified");
    }
    let (summary, spans) = run_batch(args, &cmd.batch, p, cmd.json)?;
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
    crate::waterfall::draw(
        &cmd.out_dir.join("waterfall.svg"),
        &spans,
        &format!("{} — {}", summary.policy, summary.settings),
    )?;
    if cmd.timeline {
        for line in timeline_lines(&spans) {
            println!("{line}");
        }
    }
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap());
    } else {
        println!("{}", crate::bench::machine());
        print_summary(&summary);
        println!(
            "  waterfall: {}/waterfall.json, {}/waterfall.svg",
            cmd.out_dir.display(),
            cmd.out_dir.display()
        );
    }
    if summary.failed > 0 {
        return Err(Error::InvalidInput(format!(
            "{} proof requests failed",
            summary.failed
        )));
    }
    Ok(())
}

/// `TIMELINE,<offset_ms>,<event>,<job>,<detail>` lines, in time order.
pub fn timeline_lines(spans: &[Span]) -> Vec<String> {
    let mut events: Vec<(f64, String)> = Vec::with_capacity(2 * spans.len());
    for s in spans {
        let detail = format!("p{} {}", s.partition, s.lane);
        events.push((s.start_ms, format!("{}_start,{},{detail}", s.stage, s.job)));
        events.push((s.end_ms, format!("{}_end,{},{detail}", s.stage, s.job)));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    events
        .into_iter()
        .map(|(t, e)| format!("TIMELINE,{t:.3},{e}"))
        .collect()
}

#[derive(Args, Debug)]
pub struct CompareCmd {
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Policies to compare, repeatable (built-in name or a policy plugin's path).
    #[arg(long = "policy", default_value = "pipelined")]
    pub policies: Vec<String>,
    /// One knob swept over values, e.g. `gpu_workers_per_device=1,2,3,4`.
    #[arg(long, value_name = "KEY=V1,V2,…", value_parser = crate::parse_key_value)]
    pub sweep: Option<(String, String)>,
    /// Folder for compare.json and compare.svg.
    #[arg(long, value_name = "DIR", default_value = "zkpipe-compare")]
    pub out_dir: PathBuf,
    /// Results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the same workload under every policy × sweep value; prints a table
/// and writes `compare.json` and a chart.
pub fn compare(args: &PluginArgs, cmd: &CompareCmd) -> Result<(), Error> {
    let mut settings: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for name in &cmd.policies {
        match &cmd.sweep {
            None => settings.push((name.clone(), vec![])),
            Some((key, values)) => {
                for v in values.split(',').filter(|v| !v.is_empty()) {
                    settings.push((name.clone(), vec![(key.clone(), v.to_string())]));
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (i, (name, extra)) in settings.iter().enumerate() {
        let p = resolve_policy(&cmd.batch, name, extra)?;
        let label = std::iter::once(name.clone())
            .chain(extra.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!("[{}/{}] {label} …", i + 1, settings.len());
        let (summary, _) = run_batch(args, &cmd.batch, p, true)?;
        rows.push((label, summary));
    }
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
    .unwrap();
    write_atomically(&cmd.out_dir.join("compare.json"), json.as_bytes())?;
    crate::waterfall::draw_compare(&cmd.out_dir.join("compare.svg"), &rows)?;
    if cmd.json {
        println!("{json}");
        return Ok(());
    }
    let b = &cmd.batch;
    println!("{}", crate::bench::machine());
    println!(
        "{} {} — {} requests × {} partitions, {} in flight, backend {}",
        b.circuit.circuit,
        b.circuit.size(),
        b.count,
        b.partitions,
        b.concurrency,
        b.backend
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>6}",
        "setting", "s/proof", "floor s", "lat avg", "lat p95", "peak MiB", "busy %", "failed"
    );
    for (label, s) in &rows {
        println!(
            "{label:<40} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.1} {:>7.0} {:>6}",
            s.s_per_proof,
            s.device_floor_s_per_proof,
            s.latency_avg_s,
            s.latency_p95_s,
            s.peak_memory_bytes as f64 / (1 << 20) as f64,
            s.device_busy_pct,
            s.failed
        );
    }
    println!("chart: {}/compare.svg", cmd.out_dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(device: Option<usize>, start_ms: f64, end_ms: f64) -> Span {
        Span {
            job: 0,
            partition: 0,
            stage: "msm",
            lane: "dev0-w0".into(),
            device,
            start_ms,
            end_ms,
        }
    }

    #[test]
    fn device_time_counts_overlapping_stages_once_per_device() {
        let spans = [
            span(Some(0), 0.0, 100.0),
            span(Some(0), 50.0, 150.0), // overlaps the first: +50
            span(Some(0), 200.0, 250.0),
            span(Some(1), 0.0, 100.0), // another device counts apart
            span(None, 0.0, 1000.0),   // host stages do not count
        ];
        assert!((device_busy_s(&spans) - 0.3).abs() < 1e-12);
        assert_eq!(device_busy_s(&[]), 0.0);
    }
}
