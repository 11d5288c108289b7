//! What a PoRep C2 of a sector size would cost on this machine, timed on
//! vanilla proofs of that size's shape whose values are random (see
//! `zkpipe_filecoin::in_shape`). Timing only: nothing it runs can make a
//! proof.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkpipe_core::groth16::{self, StageTimes};
use zkpipe_core::plugin::{DeviceInfo, DeviceKind, ops};
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::sched::metrics::process_peak_rss_bytes;
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Error, Stage, util::machine};
use zkpipe_filecoin::in_shape::{self, CircuitSize, NO_PROOF};
use zkpipe_filecoin::shape::sector_size_name;
use zkpipe_session::{ProverOptions, Session};

/// An in-shape run: the sector size and how to time it.
#[derive(Debug, Clone)]
pub struct InShapeRequest {
    /// Sector size in bytes (one Filecoin registers).
    pub sector_size: u64,
    /// Whole C2s to time, one after another.
    pub proofs: u32,
    /// Partitions in flight: with `session` absent, partitions synthesised
    /// at once; otherwise witnesses held at once, synthesis running that
    /// many minus one ahead of the prover.
    pub in_flight: u32,
    /// Print the memory estimates and stop.
    pub estimate_only: bool,
    /// Host memory to plan for instead of what this machine has available;
    /// `None`: MemAvailable.
    pub memory_limit: Option<u64>,
    /// Seed of the random values.
    pub seed: u64,
    /// The session's device.
    pub device: u32,
    /// SpMV and the satisfaction scan on the host even on a GPU.
    pub host_spmv: bool,
    /// zkpipe's cache folder (the circuit is recorded into `r1cs/`);
    /// `None`: the default.
    pub cache_dir: Option<PathBuf>,
}

/// Times `req` on `session`'s backend, or the witnesses alone without a
/// session. Progress and per-partition lines go to `progress`; the
/// result lines are returned.
///
/// # Errors
/// [`Error::InvalidInput`] for a size Filecoin does not register and for a
/// run this machine's memory (or `memory_limit`) or its device's cannot
/// hold, with the estimates; the backend's errors.
pub fn in_shape(
    session: Option<&Session>,
    req: &InShapeRequest,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    let a = req;
    let size = a.sector_size;
    let rp = zkpipe_filecoin::registry::seal_proof_for(size)?;
    let name = sector_size_name(size);
    let t = Instant::now();
    let circuit = in_shape::circuit_size(rp)?;
    let c = &circuit.counts;
    progress.note(&format!(
        "{rp:?} ({name}): {} partition(s) of {} challenges; one partition: {} constraints \
         (domain 2^{}), {} inputs, {} aux, {} matrix entries (counted in {:.1?})",
        circuit.partitions,
        circuit.challenges,
        c.constraints,
        circuit.domain_log(),
        c.inputs,
        c.aux,
        c.nonzeros,
        t.elapsed()
    ));
    let in_flight = (a.in_flight as usize).min(circuit.partitions * a.proofs as usize);
    let limit = a.memory_limit.or_else(machine::available_memory_bytes);
    let mode = if session.is_none() {
        "witness synthesis"
    } else {
        "a C2"
    };
    let what = format!("in-shape {name} {mode}, {in_flight} partition(s) in flight");
    let mut host = vec![Part {
        what: "witness synthesis",
        bytes: in_flight as u64 * circuit.synthesis_bytes(),
    }];
    if let Some(session) = session {
        let backend = session.backend();
        let device = backend.device_info(a.device)?;
        let device_parts = full_estimate(
            &circuit,
            backend,
            &device,
            a.host_spmv,
            in_flight,
            &mut host,
        );
        if device.kind == DeviceKind::Gpu {
            let need = total(&device_parts);
            progress.note(&format!(
                "device estimate: {} ({})",
                gib(need),
                list(&device_parts)
            ));
            if need > device.memory_bytes {
                return Err(Error::InvalidInput(format!(
                    "{what} needs about {} of device memory ({}); device {} of `{}` has {}",
                    gib(need),
                    list(&device_parts),
                    a.device,
                    backend.name(),
                    gib(device.memory_bytes)
                )));
            }
        } else {
            // The backend's device is host memory.
            host.extend(device_parts);
        }
    }
    let need = total(&host);
    progress.note(&format!("host estimate: {} ({})", gib(need), list(&host)));
    match limit {
        Some(have) if need > have => {
            return Err(Error::InvalidInput(format!(
                "{what} needs about {} of host memory ({}); {} {}{}",
                gib(need),
                list(&host),
                if a.memory_limit.is_some() {
                    "--memory-limit is"
                } else {
                    "this machine has"
                },
                gib(have),
                if a.memory_limit.is_some() {
                    ""
                } else {
                    " available"
                },
            )));
        }
        _ => {}
    }
    if a.estimate_only {
        return Ok(vec![format!("{NO_PROOF} (estimates only)")]);
    }
    let t = Instant::now();
    let job = in_shape::job(rp, a.seed)?;
    progress.note(&format!(
        "random vanilla proofs drawn in {:.1?}",
        t.elapsed()
    ));
    match session {
        None => witness_only(&*job, a.proofs as usize, in_flight, progress),
        Some(session) => {
            let cache = R1csCache::new(
                a.cache_dir
                    .clone()
                    .unwrap_or_else(zkpipe_core::util::cache::default_dir)
                    .join("r1cs"),
            );
            let t = Instant::now();
            let r1cs = job.param_set().r1cs(&cache, progress)?;
            progress.note(&format!("R1CS ready in {:.1?}", t.elapsed()));
            let recorded = (
                r1cs.num_constraints() as u64,
                r1cs.num_inputs as u64,
                r1cs.num_aux as u64,
            );
            if recorded != (c.constraints, c.inputs, c.aux) {
                return Err(Error::Failed(format!(
                    "the recorded circuit has (constraints, inputs, aux) {recorded:?}, the \
                     count said {:?}: the estimates are off",
                    (c.constraints, c.inputs, c.aux)
                )));
            }
            let t = Instant::now();
            let params = groth16::synthetic_parameters(&r1cs, a.seed);
            progress.note(&format!(
                "synthetic key (random points) made in {:.1?}",
                t.elapsed()
            ));
            let prover = session.prover(
                Arc::new(params),
                Arc::new(r1cs),
                ProverOptions {
                    host_spmv: a.host_spmv,
                    ..ProverOptions::default()
                },
            )?;
            let t = Instant::now();
            prover.warm_up()?;
            progress.note(&format!("device warmed up in {:.1?}", t.elapsed()));
            full(&*job, &prover, a.proofs as usize, in_flight, progress)
        }
    }
}

/// Bytes as GiB, one decimal.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// One part of a memory estimate.
struct Part {
    what: &'static str,
    bytes: u64,
}

fn total(parts: &[Part]) -> u64 {
    parts.iter().map(|p| p.bytes).sum()
}

fn list(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| format!("{} {}", p.what, gib(p.bytes)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The host parts of a full run (added to `host`) and its device parts:
/// the recorded R1CS, the key, and per partition in flight the prover's
/// vectors; on the device the key's bases, the matrices where SpMV runs
/// there, and the larger stage's scratch.
fn full_estimate(
    circuit: &CircuitSize,
    backend: &zkpipe_core::Backend,
    device: &DeviceInfo,
    host_spmv: bool,
    in_flight: usize,
    host: &mut Vec<Part>,
) -> Vec<Part> {
    let n = 1u64 << circuit.domain_log();
    let caps = backend.capabilities();
    let (on_gpu, device_memory) = (device.kind == DeviceKind::Gpu, device.memory_bytes);
    let log_n = circuit.domain_log();
    let c = &circuit.counts;
    let vars = c.inputs + c.aux;
    // Where the prover puts SpMV (see `ProverBuilder::device_spmv`).
    let device_spmv = on_gpu && !host_spmv && caps.supports_size(ops::SPMV, log_n);
    host.push(Part {
        what: "recorded R1CS",
        bytes: circuit.r1cs_bytes(),
    });
    host.push(Part {
        what: "synthetic key",
        bytes: circuit.key_bytes(),
    });
    // A·w, B·w, C·w and h (only h where SpMV runs on the device), and the
    // MSMs' gathered scalars.
    let vectors = if device_spmv { 1 } else { 4 };
    host.push(Part {
        what: "prover's vectors",
        bytes: in_flight as u64 * 32 * (vars + vectors * n),
    });
    let mut device = Vec::new();
    if caps.supports(ops::RESIDENT_BASES) {
        device.push(Part {
            what: "key's bases",
            bytes: circuit.key_bytes(),
        });
    }
    if device_spmv {
        device.push(Part {
            what: "matrices",
            bytes: circuit.r1cs_bytes(),
        });
    }
    // As `Prover::partition_device_bytes`: the larger of the quotient's
    // and the MSM stage's, five MSMs side by side on a GPU with room for
    // eight.
    let m = n.max(vars);
    let quotient = if device_spmv {
        caps.scratch_bytes(ops::SPMV, n)
    } else {
        caps.scratch_bytes(ops::QUOTIENT, n)
            .max(caps.scratch_bytes(ops::NTT, n))
    };
    let (g1, g2) = (
        caps.scratch_bytes(ops::MSM_G1, m),
        caps.scratch_bytes(ops::MSM_G2, m),
    );
    let msm = if on_gpu && device_memory >= 8 * g1 {
        4 * g1 + g2
    } else {
        g1.max(g2)
    };
    device.push(Part {
        what: "stage scratch",
        bytes: quotient.max(msm),
    });
    device
}

/// Median of `v` (0 when empty).
fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn witness_only(
    job: &dyn zkpipe_filecoin::FilecoinJob,
    proofs: usize,
    in_flight: usize,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    let parts = job.partitions();
    let total_parts = parts * proofs;
    let next = AtomicUsize::new(0);
    let times = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..in_flight)
            .map(|_| {
                s.spawn(|| -> Result<(), Error> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total_parts {
                            return Ok(());
                        }
                        let t = Instant::now();
                        let w = job.witness(i % parts)?;
                        let d = t.elapsed();
                        drop(w);
                        progress.note(&format!(
                            "proof {} partition {}: witness {}",
                            i / parts + 1,
                            i % parts,
                            secs(d)
                        ));
                        times.lock().unwrap().push(d);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("synthesis does not panic: it is caught"))
    })?;
    let wall = t0.elapsed();
    let times = times.into_inner().unwrap();
    let (min, max) = (
        times.iter().min().copied().unwrap_or_default(),
        times.iter().max().copied().unwrap_or_default(),
    );
    let mut lines = vec![format!(
        "witness per partition: median {}, min {}, max {} ({} partition(s), {in_flight} in flight)",
        secs(median(times.clone())),
        secs(min),
        secs(max),
        times.len()
    )];
    lines.extend(summary(wall, proofs));
    Ok(lines)
}

fn full(
    job: &dyn zkpipe_filecoin::FilecoinJob,
    prover: &groth16::Prover,
    proofs: usize,
    in_flight: usize,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    let parts = job.partitions();
    let total_parts = parts * proofs;
    let mut all: Vec<StageTimes> = Vec::with_capacity(total_parts);
    // When each proof's last partition was proved, from the start.
    let mut ended: Vec<Duration> = Vec::with_capacity(proofs);
    let t0 = Instant::now();
    let mut prove = |i: usize, w: zkpipe_core::r1cs::Witness, synth: Duration| {
        let mut st = in_shape::time_partition(prover, &w)?;
        st.stages.insert(0, (Stage::Witness, synth));
        st.wall += synth;
        progress.note(&format!(
            "proof {} partition {}: {}",
            i / parts + 1,
            i % parts,
            st.summary()
        ));
        all.push(st);
        if i % parts == parts - 1 {
            let at = t0.elapsed();
            progress.note(&format!("proof {} ended at {}", i / parts + 1, secs(at)));
            ended.push(at);
        }
        Ok::<(), Error>(())
    };
    if in_flight <= 1 {
        for i in 0..total_parts {
            let t = Instant::now();
            let w = job.witness(i % parts)?;
            prove(i, w, t.elapsed())?;
        }
    } else {
        // Synthesis runs ahead: one witness in the prover, one being made,
        // the rest waiting in the channel.
        let (tx, rx) = std::sync::mpsc::sync_channel(in_flight - 2);
        std::thread::scope(|s| {
            let producer = s.spawn(move || {
                for i in 0..total_parts {
                    let t = Instant::now();
                    let w = job.witness(i % parts);
                    let failed = w.is_err();
                    if tx.send((i, w, t.elapsed())).is_err() || failed {
                        return;
                    }
                }
            });
            let r = rx.iter().try_for_each(|(i, w, synth)| prove(i, w?, synth));
            // A failed prover drops the receiver: the producer stops.
            drop(rx);
            producer
                .join()
                .expect("synthesis does not panic: it is caught");
            r
        })?;
    }
    let wall = t0.elapsed();
    let stage = |s: Stage| median(all.iter().map(|t| t.get(s)).collect());
    let stages: Vec<String> = [
        Stage::Witness,
        Stage::Spmv,
        Stage::Quotient,
        Stage::Msm,
        Stage::MsmG2,
    ]
    .into_iter()
    .filter(|&s| all.iter().any(|t| !t.get(s).is_zero()))
    .map(|s| format!("{} {}", s.name(), secs(stage(s))))
    .collect();
    let mut lines = vec![format!(
        "per partition, median: {} (total {}; {} partition(s), {in_flight} in flight)",
        stages.join(", "),
        secs(median(all.iter().map(StageTimes::total).collect())),
        all.len()
    )];
    lines.extend(proof_times(&ended));
    lines.extend(summary(wall, proofs));
    Ok(lines)
}

/// The first proof's time end to end (the pipeline empty when it began)
/// and, with more proofs, the rate after it (the pipeline full).
fn proof_times(ended: &[Duration]) -> Vec<String> {
    let Some(&first) = ended.first() else {
        return Vec::new();
    };
    let mut lines = vec![format!("first proof end to end: {}", secs(first))];
    if let Some(&last) = ended.last().filter(|_| ended.len() > 1) {
        lines.push(format!(
            "after it: {:.2} s/proof ({} proof(s) in {})",
            (last - first).as_secs_f64() / (ended.len() - 1) as f64,
            ended.len() - 1,
            secs(last - first)
        ));
    }
    lines
}

/// The closing lines: seconds per proof, the peak, and that no proof was made.
fn summary(wall: Duration, proofs: usize) -> [String; 2] {
    [
        format!(
            "{:.2} s/proof ({proofs} proof(s) in {:.2?}); peak RSS {}",
            wall.as_secs_f64() / proofs as f64,
            wall,
            gib(process_peak_rss_bytes())
        ),
        NO_PROOF.to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_times_split_the_first_proof_from_the_rate_after_it() {
        assert!(proof_times(&[]).is_empty());
        let one = proof_times(&[Duration::from_secs(50)]);
        assert_eq!(one, ["first proof end to end: 50.000 s"]);
        let three = proof_times(&[50, 90, 130].map(Duration::from_secs));
        assert_eq!(
            three,
            [
                "first proof end to end: 50.000 s",
                "after it: 40.00 s/proof (2 proof(s) in 80.000 s)"
            ]
        );
    }
}
