//! `bench prove`: a whole proof, median time per stage.

use super::*;

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
    /// Whether SpMV ran in the backend with the quotient (then the `spmv`
    /// stage is that one call and `quotient` is empty).
    device_spmv: bool,
    runs: u32,
    /// Median per stage, in pipeline order.
    stages_ms: Vec<(String, f64)>,
    total_ms: f64,
    /// Synthesis that builds constraints (what a prover without a recorded
    /// R1CS runs); null with `--no-synthesis-comparison`.
    synthesis_with_constraints_ms: Option<f64>,
    /// Witness-only synthesis + SpMV over the recorded matrices (null likewise).
    witness_plus_spmv_ms: Option<f64>,
    /// Resident memory before the timed proofs: keys, matrices and what
    /// the prover keeps (0 where unknown).
    resident_before_proofs_bytes: u64,
    /// Peak resident memory during the timed proofs (since the start where
    /// the peak cannot be reset; 0 where unknown).
    peak_during_proofs_bytes: u64,
    /// Whether that peak counts from the proofs' start.
    peak_reset: bool,
    /// Peak resident memory from the start to the timed proofs: recording,
    /// keys and the warm-up proof, whose first-use work (a GPU backend's
    /// tables) can take more than a later proof (0 where unknown).
    peak_before_proofs_bytes: u64,
    /// Of the resident memory, the evaluation buffers the backend lent
    /// (page-locked for a GPU) that the prover keeps for the next proof:
    /// a proof in flight uses them besides its own memory.
    lent_buffers_bytes: u64,
}

/// What `bench prove` was asked for besides the circuit and the backend.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    /// Timed proofs.
    pub runs: u32,
    /// Synthetic keys.
    pub synthetic: bool,
    /// Time synthesis with constraints against witness-only + SpMV.
    pub compare: bool,
    /// Keep SpMV on the host where the backend could run it.
    pub host_spmv: bool,
    /// JSON output.
    pub json: bool,
}

pub(super) fn bench_prove(
    args: &PluginArgs,
    c: &crate::circuit::CircuitArgs,
    backend: &str,
    opts: Options,
) -> Result<(), Error> {
    let Options {
        runs,
        synthetic,
        compare,
        host_spmv,
        json,
    } = opts;
    use std::sync::Arc;
    use zkpipe_core::groth16::Stage;
    use zkpipe_core::r1cs::{R1cs, Witness};
    use zkpipe_core::sched::metrics;
    use zkpipe_session::ProverOptions;

    let c = c.request();
    let circuit = c.source()?;
    c.check_fits()?;
    let session = args.session(backend, 0)?;
    let r1cs = Arc::new(c.r1cs(&circuit, session.progress())?);

    // What recording saves: building constraints on every proof vs
    // witness-only + SpMV. Timed before the keys exist, so that the second
    // recording's matrices never sit beside them (at 2^27 both are tens of GB).
    let comparison = if compare {
        let t = Instant::now();
        drop(R1cs::record(circuit.build(1))?);
        let with_constraints = t.elapsed();
        let t = Instant::now();
        let w = Witness::generate(circuit.build(1))?;
        drop(r1cs.spmv(&w)?);
        Some((with_constraints, t.elapsed()))
    } else {
        None
    };

    let keys = c.keys(&circuit, &r1cs, None, synthetic, session.progress())?;
    let synthetic = keys.synthetic();
    let prover = session.prover(
        Arc::new(keys.params),
        r1cs.clone(),
        ProverOptions {
            host_spmv,
            ..ProverOptions::default()
        },
    )?;

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
    // One proof's own memory: the peak from here on, less what is resident now.
    if let Some(why) = prover.buffers().refusal() {
        eprintln!("note: evaluation vectors on the heap: {why}");
    }
    let lent_buffers = prover.buffers().idle().1;
    let (resident, peak_before) = metrics::process_rss_and_peak_bytes();
    let peak_reset = metrics::reset_peak_rss();
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
        backend: session.backend().name().to_string(),
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
        device_spmv: prover.device_spmv(),
        runs,
        stages_ms: stages
            .iter()
            .zip(per_stage.iter_mut())
            .map(|(s, v)| (s.name().to_string(), median(v)))
            .collect(),
        total_ms: median(&mut totals),
        synthesis_with_constraints_ms: comparison.map(|(w, _)| ms(w)),
        witness_plus_spmv_ms: comparison.map(|(_, s)| ms(s)),
        resident_before_proofs_bytes: resident,
        peak_during_proofs_bytes: metrics::process_peak_rss_bytes(),
        peak_reset,
        peak_before_proofs_bytes: peak_before,
        lent_buffers_bytes: lent_buffers,
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
        "backend: {}; median of {} proofs after a warm-up{}",
        report.backend,
        runs,
        if report.device_spmv {
            "; SpMV + quotient in one backend call (the spmv line)"
        } else {
            ""
        }
    );
    for (name, t) in &report.stages_ms {
        println!("  {name:<9} {t:>10.1} ms");
    }
    println!("  {:<9} {:>10.1} ms", "total", report.total_ms);
    let gib = |b: u64| {
        if b >= 1 << 30 {
            format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
        } else {
            format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
        }
    };
    let (before, peak) = (
        report.resident_before_proofs_bytes,
        report.peak_during_proofs_bytes,
    );
    if before > 0 && peak > 0 && peak_reset {
        let lent = match report.lent_buffers_bytes {
            0 => String::new(),
            b => format!(
                "; {} of it the lent evaluation buffers kept for the next proof",
                gib(b)
            ),
        };
        println!(
            "memory: {} resident before the proofs (keys, matrices{lent}); peak during the proofs {}, \
             {} of it for a proof in flight",
            gib(before),
            gib(peak),
            gib(peak.saturating_sub(before))
        );
        if report.peak_before_proofs_bytes > peak {
            println!(
                "memory: peak before the timed proofs {} (recording, keys, the warm-up proof's first-use work)",
                gib(report.peak_before_proofs_bytes)
            );
        }
    } else if peak > 0 {
        println!("memory: peak resident {} since the start", gib(peak));
    }
    if let (Some(with), Some(without)) = (
        report.synthesis_with_constraints_ms,
        report.witness_plus_spmv_ms,
    ) {
        println!(
            "recorded R1CS: witness-only + SpMV {without:.1} ms vs synthesis with constraints {with:.1} ms ({:.1}× faster)",
            with / without
        );
    }
    Ok(())
}
