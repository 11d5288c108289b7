//! A job's run: submission, key load, the engine, verification and the
//! recorded result; waiting for a job and cancelling it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use zkpipe_core::Error;
use zkpipe_core::sched::JobRequest;
use zkpipe_core::sched::groth16_workload::ProofOutput;

use super::table::{Job, queue_position};
use super::{CircomWitnesses, Daemon, JobInputs, NewJob, Refusal, priority_label, state_label};
use crate::keys::{KeyCircuit, LoadedKey, Proving};
use crate::proto::{self, JobState};
use crate::source::{Spec, SpecInputs};
use crate::verify;

/// BN254 assignments checked against their key and circuit: one value per
/// signal, the one first, every constraint satisfied.
///
/// # Errors
/// [`Error::InvalidInput`] naming the witness and what fails.
fn bn254_witnesses(
    key: &LoadedKey,
    circuit: &zkpipe_circom::CircomR1cs<zkpipe_core::bn254::Fr>,
    values: Vec<Vec<zkpipe_core::bn254::Fr>>,
) -> Result<SpecInputs, Error> {
    let Proving::Bn254 { key: pk, .. } = &key.proving else {
        return Err(Error::Failed(format!("key {} is not a BN254 key", key.id)));
    };
    let mut out = Vec::with_capacity(values.len());
    for (i, w) in values.into_iter().enumerate() {
        let fails =
            |why: String| Error::InvalidInput(format!("witness {i} and key {}: {why}", key.id));
        pk.check_witness(&w).map_err(|e| fails(e.to_string()))?;
        if let Some(row) = circuit
            .r1cs
            .first_failing_row(&w)
            .map_err(|e| fails(e.to_string()))?
        {
            return Err(fails(format!("constraint {row} fails")));
        }
        out.push(Arc::new(w));
    }
    Ok(SpecInputs::Bn254(out))
}

impl Daemon {
    /// Queues a job; it runs once its key is loaded.
    ///
    /// # Errors
    /// A [`Refusal`] saying why it was not queued.
    pub fn submit(self: &Arc<Self>, job: NewJob) -> Result<proto::SubmitReply, Refusal> {
        if self.draining.load(Ordering::Relaxed) {
            return Err(Refusal::Draining);
        }
        self.keys.admit(&job.key).map_err(Refusal::TooLarge)?;
        let mut table = self.table.lock().unwrap();
        if !job.request_id.is_empty()
            && let Some(&id) = table.by_request.get(&job.request_id)
        {
            let first = &table.jobs[&id];
            if first.spec != job {
                return Err(Refusal::Conflict(format!(
                    "request id `{}` was used for job {id}, with another request",
                    job.request_id
                )));
            }
            let position = queue_position(&table, id);
            return Ok(proto::SubmitReply {
                job_id: id,
                queue_position: position,
                duplicate: true,
            });
        }
        let active = table.jobs.values().filter(|j| j.ended.is_none()).count();
        if active >= self.config.daemon.max_jobs {
            return Err(Refusal::Busy(format!(
                "{active} jobs are queued or running, the limit (daemon.max_jobs)"
            )));
        }
        let id = table.next_id;
        table.next_id += 1;
        if !job.request_id.is_empty() {
            table.by_request.insert(job.request_id.clone(), id);
        }
        let (done, _) = watch::channel(false);
        self.metrics
            .submitted
            .with_label_values(&[priority_label(job.priority), job.curve().name()])
            .inc();
        table.jobs.insert(
            id,
            Job {
                spec: job,
                submitted: Instant::now(),
                engine_id: None,
                state: JobState::Queued,
                result: None,
                ended: None,
                done,
                stage_s: Default::default(),
                device_s: 0.0,
            },
        );
        let position = queue_position(&table, id);
        drop(table);
        let me = self.clone();
        let span = tracing::info_span!("job", id);
        tokio::spawn(tracing::Instrument::instrument(me.run(id), span));
        Ok(proto::SubmitReply {
            job_id: id,
            queue_position: position,
            duplicate: false,
        })
    }

    /// A job from key load to verified result.
    async fn run(self: Arc<Self>, id: u64) {
        let Some(job) = self.spec_of(id) else { return };
        let key = match self.acquire_key(job.key.clone()).await {
            Ok(key) => key,
            Err(e) => {
                tracing::warn!(error = %e, "key load failed");
                self.finish(
                    id,
                    JobState::Failed,
                    vec![],
                    format!("loading key {}: {e}", job.key),
                    false,
                );
                return;
            }
        };
        let inputs = match self.spec_inputs(&key, &job.inputs).await {
            Ok(inputs) => inputs,
            Err(e) => {
                self.keys.release(&job.key);
                let at_fault = matches!(e, Error::InvalidInput(_));
                self.finish_with(id, JobState::Failed, vec![], e.to_string(), false, at_fault);
                return;
            }
        };
        let spec = Arc::new(Spec {
            key: key.clone(),
            inputs,
        });
        self.specs.insert(id, spec.clone());
        let handle = {
            // Cancelled while its key loaded: it never reaches the engine.
            if self.ended(id) {
                self.specs.remove(id);
                self.keys.release(&job.key);
                return;
            }
            // The table is held from the submission until the engine id is
            // recorded: `tick` maps the engine's spans to jobs through it,
            // and a fast first stage's span taken in between was lost.
            let mut table = self.table.lock().unwrap();
            let handle = self.engine.submit(JobRequest {
                partitions: job.partitions,
                priority: job.priority as i32,
                seed: id,
            });
            if let Some(j) = table.jobs.get_mut(&id) {
                j.engine_id = Some(handle.id);
            }
            handle
        };
        // A cancel between the check above and recording the engine id.
        if self.ended(id) {
            self.engine.cancel(handle.id, "cancelled by the client");
        }
        let outcome = tokio::task::spawn_blocking(move || handle.wait()).await;
        self.specs.remove(id);
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                self.keys.release(&job.key);
                self.finish(
                    id,
                    JobState::Failed,
                    vec![],
                    format!("engine wait: {e}"),
                    false,
                );
                return;
            }
        };
        let mut verify_s = 0.0;
        let (state, proofs, error, recomputed) = match outcome.result {
            Ok(proofs) => {
                let me = self.clone();
                let t = Instant::now();
                let checked = tokio::task::spawn_blocking(move || me.check(&spec, proofs))
                    .await
                    .unwrap_or_else(|e| Err(Error::Failed(format!("verify task: {e}"))));
                verify_s = t.elapsed().as_secs_f64();
                match checked {
                    Ok((proofs, recomputed)) => {
                        (JobState::Succeeded, proofs, String::new(), recomputed)
                    }
                    Err(e) => (JobState::Failed, vec![], e.to_string(), false),
                }
            }
            Err(why) if self.ended(id) => (JobState::Cancelled, vec![], why, false),
            Err(why) => (JobState::Failed, vec![], why, false),
        };
        self.keys.release(&job.key);
        let (queue_s, prove_s) = (outcome.queue.as_secs_f64(), outcome.prove.as_secs_f64());
        // The job's stage spans first, so its stage lines precede "job ended".
        self.tick();
        self.finish(id, state, proofs, error, recomputed);
        if let Some(j) = self.table.lock().unwrap().jobs.get_mut(&id)
            && let Some(r) = j.result.as_mut()
        {
            r.queue_s = queue_s;
            r.prove_s = prove_s;
            r.verify_s = verify_s;
        }
    }

    /// The job's inputs as the engine takes them: circom assignments split
    /// into witnesses and checked against every constraint (on a blocking
    /// thread: a large circuit takes a while).
    async fn spec_inputs(
        &self,
        key: &Arc<LoadedKey>,
        inputs: &JobInputs,
    ) -> Result<SpecInputs, Error> {
        let values = match inputs {
            JobInputs::Seed(seed) => return Ok(SpecInputs::Seed(*seed)),
            JobInputs::Filecoin(f) => return Ok(SpecInputs::Filecoin(f.0.clone())),
            JobInputs::Circom(values) => values.clone(),
        };
        let key_name = format!("key {}", key.id);
        let (circuit, values) = match (&key.circuit, &*values) {
            (KeyCircuit::Circom(c), CircomWitnesses::Bls12_381(v)) => (c.clone(), v.clone()),
            (KeyCircuit::CircomBn254(c), CircomWitnesses::Bn254(w)) => {
                let (c, w, key) = (c.clone(), w.clone(), key.clone());
                return tokio::task::spawn_blocking(move || bn254_witnesses(&key, &c, w))
                    .await
                    .unwrap_or_else(|e| Err(Error::Failed(format!("witness check task: {e}"))));
            }
            (KeyCircuit::Circom(_) | KeyCircuit::CircomBn254(_), w) => {
                return Err(Error::WrongCurve {
                    what: "the job's witness".into(),
                    found: w.curve(),
                    expected: key.curve(),
                });
            }
            _ => {
                return Err(Error::InvalidInput(format!(
                    "key {} is a built-in circuit: it takes a seed, not witnesses",
                    key.id
                )));
            }
        };
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                let name = format!("witness {i}");
                let w = zkpipe_circom::witness_for(v.clone(), &circuit, &name, &key_name)?;
                if let Some(row) = circuit.r1cs.first_unsatisfied(&w)? {
                    return Err(Error::InvalidInput(format!(
                        "{name} does not satisfy {key_name}: constraint {row} fails"
                    )));
                }
                out.push(w);
            }
            Ok(SpecInputs::Witnesses(out))
        })
        .await
        .unwrap_or_else(|e| Err(Error::Failed(format!("witness check task: {e}"))))
    }

    /// Verifies every proof (unless turned off); a failing partition is
    /// proved again on the CPU reference and its device flagged.
    fn check(
        &self,
        spec: &Spec,
        mut proofs: Vec<ProofOutput>,
    ) -> Result<(Vec<ProofOutput>, bool), Error> {
        if !self.config.daemon.verify_before_return {
            return Ok((proofs, false));
        }
        let bad = verify::failing(spec, &proofs)?;
        if bad.is_empty() {
            return Ok((proofs, false));
        }
        for b in &bad {
            let label = b.device.map_or("host".to_string(), |d| d.to_string());
            self.metrics
                .verify_failures
                .with_label_values(&[&label])
                .inc();
            if let Some(d) = b.device {
                if let Some(h) = self.health.lock().unwrap().get_mut(d) {
                    h.verify_failures += 1;
                }
                self.metrics
                    .device_flagged
                    .with_label_values(&[&label])
                    .set(1);
            }
            tracing::error!(
                partition = b.partition,
                device = %label,
                "a proof from the device failed verification; proving it again on the CPU reference"
            );
        }
        verify::recompute(spec, &self.cpu_reference, &bad, &mut proofs, &self.specs)?;
        Ok((proofs, true))
    }

    fn spec_of(&self, id: u64) -> Option<NewJob> {
        self.table
            .lock()
            .unwrap()
            .jobs
            .get(&id)
            .map(|j| j.spec.clone())
    }

    fn ended(&self, id: u64) -> bool {
        self.table
            .lock()
            .unwrap()
            .jobs
            .get(&id)
            .is_none_or(|j| j.ended.is_some())
    }

    /// Records how a job ended (once: a later call is ignored) and wakes its waiters.
    fn finish(
        &self,
        id: u64,
        state: JobState,
        proofs: Vec<ProofOutput>,
        error: String,
        recomputed: bool,
    ) {
        self.finish_with(id, state, proofs, error, recomputed, false);
    }

    /// [`Daemon::finish`], saying whether the job's inputs are at fault.
    fn finish_with(
        &self,
        id: u64,
        state: JobState,
        proofs: Vec<ProofOutput>,
        error: String,
        recomputed: bool,
        inputs_at_fault: bool,
    ) {
        let mut table = self.table.lock().unwrap();
        let Some(job) = table.jobs.get_mut(&id) else {
            return;
        };
        if job.ended.is_some() {
            return;
        }
        let now = Instant::now();
        job.ended = Some(now);
        job.state = state;
        let (priority, curve) = (priority_label(job.spec.priority), job.spec.curve().name());
        self.metrics
            .ended
            .with_label_values(&[state_label(state), priority, curve])
            .inc();
        if state == JobState::Succeeded {
            self.metrics
                .latency
                .with_label_values(&[priority, curve])
                .observe(now.duration_since(job.submitted).as_secs_f64());
        }
        job.result = Some(proto::JobResult {
            job_id: id,
            state: state as i32,
            proofs: proofs
                .iter()
                .map(|p| {
                    let (proof, public_inputs) = p.proof.encoded();
                    proto::PartitionProof {
                        proof,
                        public_inputs,
                    }
                })
                .collect(),
            curve: proofs.first().map_or("", |p| p.proof.curve().name()).into(),
            error,
            verified: state == JobState::Succeeded && self.config.daemon.verify_before_return,
            recomputed_on_cpu: recomputed,
            inputs_at_fault,
            stages: zkpipe_core::stage::Stage::ALL
                .iter()
                .zip(job.stage_s)
                .filter(|(_, s)| *s > 0.0)
                .map(|(stage, seconds)| proto::StageTime {
                    stage: stage.name().to_string(),
                    seconds,
                })
                .collect(),
            device_s: job.device_s,
            ..Default::default()
        });
        tracing::info!(
            job = id,
            state = state_label(state),
            latency_s = now.duration_since(job.submitted).as_secs_f64(),
            request_id = (!job.spec.request_id.is_empty()).then_some(job.spec.request_id.as_str()),
            "job ended"
        );
        // Stored even with no one waiting yet (`send` would drop it then).
        job.done.send_replace(true);
    }

    /// Waits up to `timeout` (`None`: no limit) for job `id` to end.
    ///
    /// # Errors
    /// `None` for an unknown (or expired) job.
    pub async fn await_job(&self, id: u64, timeout: Option<Duration>) -> Option<proto::JobResult> {
        let mut rx = self.table.lock().unwrap().jobs.get(&id)?.done.subscribe();
        let wait = rx.wait_for(|done| *done);
        match timeout {
            Some(t) => {
                let _ = tokio::time::timeout(t, wait).await;
            }
            None => {
                let _ = wait.await;
            }
        }
        self.result(id)
    }

    /// The job's result if it ended, else its state.
    pub fn result(&self, id: u64) -> Option<proto::JobResult> {
        let table = self.table.lock().unwrap();
        let job = table.jobs.get(&id)?;
        if let Some(r) = &job.result {
            return Some(r.clone());
        }
        let running = job
            .engine_id
            .is_some_and(|e| self.engine.jobs().iter().any(|v| v.id == e && v.started));
        Some(proto::JobResult {
            job_id: id,
            state: if running {
                JobState::Running
            } else {
                JobState::Queued
            } as i32,
            ..Default::default()
        })
    }

    /// Cancels a job: queued, it is removed; running, it stops at the
    /// next stage boundary. Returns its state after the call.
    pub fn cancel(&self, id: u64, why: &str) -> Option<JobState> {
        let engine_id = {
            let table = self.table.lock().unwrap();
            let job = table.jobs.get(&id)?;
            if job.ended.is_some() {
                return Some(job.state);
            }
            job.engine_id
        };
        match engine_id {
            // Its outcome comes back failed; `run` records it as cancelled.
            Some(e) => {
                self.mark_cancelled(id, why);
                self.engine.cancel(e, why);
            }
            // Still loading its key: ended now; `run` sees it and stops.
            None => self.finish(id, JobState::Cancelled, vec![], why.to_string(), false),
        }
        Some(JobState::Cancelled)
    }

    /// Ends a job as cancelled now; the engine's outcome is then ignored.
    fn mark_cancelled(&self, id: u64, why: &str) {
        self.finish(id, JobState::Cancelled, vec![], why.to_string(), false);
    }
}
