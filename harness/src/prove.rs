//! A whole proof of a built-in circuit: median time per stage, memory
//! around the proofs, and what a recorded R1CS saves.

use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_core::groth16::Stage;
use zkpipe_core::r1cs::{R1cs, Witness};
use zkpipe_core::sched::metrics;
use zkpipe_core::{Error, Fr};
use zkpipe_session::builtin::BuiltinRequest;
use zkpipe_session::{ProverOptions, Session};

use crate::machine::{Machine, machine};
use crate::report::ms;

/// What a whole-proof bench measured.
#[derive(Serialize, Debug)]
pub struct ProveReport {
    pub machine: Machine,
    pub backend: String,
    pub circuit: String,
    pub size: String,
    pub constraints: usize,
    pub public_inputs: usize,
    pub private_variables: usize,
    pub domain_log_size: u32,
    pub synthetic_keys: bool,
    /// Whether SpMV ran in the backend with the quotient (then the `spmv`
    /// stage is that one call and `quotient` is empty).
    pub device_spmv: bool,
    pub runs: u32,
    /// Median per stage, in pipeline order.
    pub stages_ms: Vec<(String, f64)>,
    pub total_ms: f64,
    /// Synthesis that builds constraints (what a prover without a recorded
    /// R1CS runs); null with `--no-synthesis-comparison`.
    pub synthesis_with_constraints_ms: Option<f64>,
    /// Witness-only synthesis + SpMV over the recorded matrices (null likewise).
    pub witness_plus_spmv_ms: Option<f64>,
    /// Resident memory before the timed proofs: keys, matrices and what
    /// the prover keeps (0 where unknown).
    pub resident_before_proofs_bytes: u64,
    /// Peak resident memory during the timed proofs (since the start where
    /// the peak cannot be reset; 0 where unknown).
    pub peak_during_proofs_bytes: u64,
    /// Whether that peak counts from the proofs' start.
    pub peak_reset: bool,
    /// Peak resident memory from the start to the timed proofs: recording,
    /// keys and the warm-up proof, whose first-use work (a GPU backend's
    /// tables) can take more than a later proof (0 where unknown).
    pub peak_before_proofs_bytes: u64,
    /// Of the resident memory, the evaluation buffers the backend lent
    /// (page-locked for a GPU) that the prover keeps for the next proof:
    /// a proof in flight uses them besides its own memory.
    pub lent_buffers_bytes: u64,
}

/// A whole-proof bench: the circuit and what to time besides it.
#[derive(Debug, Clone)]
pub struct ProveBench {
    /// The built-in circuit and its size.
    pub builtin: BuiltinRequest,
    /// Timed proofs, after one warm-up.
    pub runs: u32,
    /// Random valid keys instead of a setup (timing is honest; proofs do
    /// not verify).
    pub synthetic: bool,
    /// Also time a synthesis with constraints against witness-only + SpMV.
    pub compare: bool,
    /// Keep SpMV on the host where the backend could run it.
    pub host_spmv: bool,
}

/// Proves `req`'s circuit on `session`'s backend: one warm-up, then
/// `runs` timed proofs.
///
/// # Errors
/// A circuit that does not fit memory, or the session's.
pub fn prove(session: &Session, req: &ProveBench) -> Result<ProveReport, Error> {
    let ProveBench {
        runs,
        synthetic,
        compare,
        host_spmv,
        ..
    } = *req;
    let c = &req.builtin;
    let circuit = c.source()?;
    c.check_fits()?;
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
    session.progress().note("warm-up proof …");
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
        session
            .progress()
            .note(&format!("note: evaluation vectors on the heap: {why}"));
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
    Ok(report)
}

impl ProveReport {
    /// The report as lines of text: the circuit, a line per stage, memory
    /// and what recording saves.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.machine.to_string()];
        out.push(format!(
            "circuit: {} {} — {} constraints, {} public inputs, {} private variables, domain 2^{}{}",
            self.circuit,
            self.size,
            self.constraints,
            self.public_inputs,
            self.private_variables,
            self.domain_log_size,
            if self.synthetic_keys {
                " — SYNTHETIC KEYS (timing only)"
            } else {
                ""
            }
        ));
        out.push(format!(
            "backend: {}; median of {} proofs after a warm-up{}",
            self.backend,
            self.runs,
            if self.device_spmv {
                "; SpMV + quotient in one backend call (the spmv line)"
            } else {
                ""
            }
        ));
        for (name, t) in &self.stages_ms {
            out.push(format!("  {name:<9} {t:>10.1} ms"));
        }
        out.push(format!("  {:<9} {:>10.1} ms", "total", self.total_ms));
        let (before, peak) = (
            self.resident_before_proofs_bytes,
            self.peak_during_proofs_bytes,
        );
        if before > 0 && peak > 0 && self.peak_reset {
            let lent = match self.lent_buffers_bytes {
                0 => String::new(),
                b => format!(
                    "; {} of it the lent evaluation buffers kept for the next proof",
                    gib(b)
                ),
            };
            out.push(format!(
                "memory: {} resident before the proofs (keys, matrices{lent}); peak during the proofs {}, \
                 {} of it for a proof in flight",
                gib(before),
                gib(peak),
                gib(peak.saturating_sub(before))
            ));
            if self.peak_before_proofs_bytes > peak {
                out.push(format!(
                    "memory: peak before the timed proofs {} (recording, keys, the warm-up proof's first-use work)",
                    gib(self.peak_before_proofs_bytes)
                ));
            }
        } else if peak > 0 {
            out.push(format!(
                "memory: peak resident {} since the start",
                gib(peak)
            ));
        }
        if let (Some(with), Some(without)) = (
            self.synthesis_with_constraints_ms,
            self.witness_plus_spmv_ms,
        ) {
            out.push(format!(
                "recorded R1CS: witness-only + SpMV {without:.1} ms vs synthesis with constraints {with:.1} ms ({:.1}× faster)",
                with / without
            ));
        }
        out
    }
}

/// Bytes as GiB from 1 GiB up, else MiB.
fn gib(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    }
}
