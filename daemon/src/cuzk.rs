//! The cuzk daemon's gRPC API (`cuzk.v1.ProvingEngine`, what Curio's
//! `lib/cuzk` client calls) on `zkpipe serve`: each request is parsed into
//! a Filecoin job (C1 output, PoSt or SnapDeals vanilla proofs), run by the daemon like
//! any other job (priorities, resident keys, verify before return) and its
//! whole proof checked by filecoin-proofs' verifier before it is returned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};
use zkpipe_core::Error;
use zkpipe_filecoin::commitment::Commitment;
use zkpipe_filecoin::params::ParamSet;
use zkpipe_filecoin::porep::{self, C1, SealIds};
use zkpipe_filecoin::post::{self, PostRequest};
use zkpipe_filecoin::registry::{
    self, post_proof, prover_id_of_miner, seal_proof, update_proof, update_proof_for,
};
use zkpipe_filecoin::shape::sector_size_name;
use zkpipe_filecoin::snap::{self, SnapRequest};
use zkpipe_filecoin::{FilecoinJob, RegisteredPoStProof, RegisteredSealProof};

use crate::cuzk_proto::{self as pb, proving_engine_server::ProvingEngine};
use crate::daemon::{Daemon, FilecoinInputs, JobInputs, NewJob};
use crate::keys::{FILECOIN, KeyId};
use crate::proto::{JobState, Priority};

/// Largest request accepted (Curio's client sends up to 256 MiB: a 64 GiB
/// sector's C1 output is ~100 MB of JSON).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// A submitted request: its job and kind.
struct Submitted {
    job: Arc<dyn FilecoinJob>,
    kind: pb::ProofKind,
}

/// The service.
pub struct CuzkService {
    daemon: Arc<Daemon>,
    jobs: Mutex<HashMap<u64, Submitted>>,
    /// Request id → (request digest, job id).
    requests: Mutex<HashMap<String, ([u8; 32], u64)>>,
    /// Parameter sets by cuzk circuit id (`porep-32g`), as jobs named them.
    circuits: Mutex<HashMap<String, ParamSet>>,
    completed: Mutex<(u64, u64)>,
    /// Requests parsed at once: each holds its message and what it
    /// decodes to (a C1 output is up to hundreds of MB).
    parsing: tokio::sync::Semaphore,
}

/// Requests parsed at once.
const PARSES_AT_ONCE: usize = 2;

impl std::fmt::Debug for CuzkService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuzkService").finish_non_exhaustive()
    }
}

fn invalid(e: Error) -> Status {
    Status::invalid_argument(e.to_string())
}

fn digest(req: &pb::SubmitProofRequest) -> [u8; 32] {
    use prost::Message;
    use sha2::Digest;
    sha2::Sha256::digest(req.encode_to_vec()).into()
}

/// `porep-32g`, `wpost-2k`, `winning-512m`: cuzk's names of parameter sets.
fn circuit_id(prefix: &str, sector_size: u64) -> String {
    let name = sector_size_name(sector_size).to_lowercase();
    let short = name.strip_suffix("ib").unwrap_or(&name).to_string();
    format!("{prefix}-{short}")
}

/// The parameter set a cuzk circuit id names.
fn param_set_of(circuit: &str) -> Result<ParamSet, Error> {
    let (prefix, size) = circuit.split_once('-').ok_or_else(|| {
        Error::InvalidInput(format!(
            "circuit id `{circuit}`: expected porep-, wpost-, winning- or snap- and a size (porep-32g)"
        ))
    })?;
    let size = zkpipe_filecoin::shape::parse_sector_size(size)?;
    match prefix {
        "porep" => {
            let rp = registry::SEAL_PROOFS
                .iter()
                .copied()
                .find(|s| format!("{s:?}").ends_with("V1_1") && u64::from(s.sector_size()) == size)
                .ok_or_else(|| Error::InvalidInput(format!("no PoRep for `{circuit}`")))?;
            porep::param_set(rp)
        }
        "wpost" => post::param_set(registry::post_proof_for(true, size)?),
        "winning" => post::param_set(registry::post_proof_for(false, size)?),
        "snap" => snap::param_set(update_proof_for(size)?),
        _ => Err(Error::InvalidInput(format!(
            "circuit id `{circuit}`: zkpipe serves porep-, wpost-, winning- and snap- parameter sets"
        ))),
    }
}

/// Parses a request into a Filecoin job (off the async threads: a C1 output
/// is tens of MB of JSON).
fn parse(req: &pb::SubmitProofRequest) -> Result<(Arc<dyn FilecoinJob>, String), Error> {
    let kind = pb::ProofKind::try_from(req.proof_kind).unwrap_or(pb::ProofKind::Unspecified);
    let prover_id = prover_id_of_miner(req.miner_id);
    let check_size = |size: u64| {
        if req.sector_size != 0 && req.sector_size != size {
            return Err(Error::InvalidInput(format!(
                "sector_size {} does not match the proof type's {size}",
                req.sector_size
            )));
        }
        Ok(())
    };
    match kind {
        pb::ProofKind::PorepSealCommit => {
            let c1 = C1::parse(&req.vanilla_proof)
                .map_err(|e| Error::InvalidInput(format!("vanilla_proof: {e}")))?;
            let rp: RegisteredSealProof = seal_proof(req.registered_proof)?;
            if rp != c1.registered_proof() {
                return Err(Error::InvalidInput(format!(
                    "registered_proof {} is {rp:?}, the C1 output is for {:?}",
                    req.registered_proof,
                    c1.registered_proof()
                )));
            }
            check_size(u64::from(rp.sector_size()))?;
            if let Some(n) = c1.sector_num
                && n != req.sector_number
            {
                return Err(Error::InvalidInput(format!(
                    "the C1 envelope is for sector {n}, sector_number is {}",
                    req.sector_number
                )));
            }
            let ids = SealIds {
                prover_id,
                sector_id: req.sector_number,
            };
            let id = circuit_id("porep", u64::from(rp.sector_size()));
            Ok((porep::job(&c1, ids)?, id))
        }
        pb::ProofKind::WindowPostPartition | pb::ProofKind::WinningPost => {
            let window = kind == pb::ProofKind::WindowPostPartition;
            let registered: RegisteredPoStProof = post_proof(req.registered_proof)?;
            let is_window = registered.typ() == zkpipe_filecoin::PoStType::Window;
            if is_window != window {
                return Err(Error::InvalidInput(format!(
                    "registered_proof {} is {registered:?}, not a {} PoSt",
                    req.registered_proof,
                    if window { "window" } else { "winning" }
                )));
            }
            check_size(u64::from(registered.sector_size()))?;
            let randomness: [u8; 32] = req.randomness.as_slice().try_into().map_err(|_| {
                Error::InvalidInput(format!(
                    "randomness is {} bytes, not 32",
                    req.randomness.len()
                ))
            })?;
            let r = PostRequest {
                registered,
                randomness,
                prover_id,
                vanilla: req.vanilla_proofs.clone(),
                partition: window.then_some(req.partition_index as usize),
            };
            let prefix = if window { "wpost" } else { "winning" };
            let id = circuit_id(prefix, u64::from(registered.sector_size()));
            Ok((post::job(&r)?, id))
        }
        pb::ProofKind::SnapDealsUpdate => {
            let registered = update_proof(req.registered_proof)?;
            check_size(u64::from(registered.sector_size()))?;
            // Curio sends 32 raw bytes; a CID's bytes are taken too.
            let r = SnapRequest {
                registered,
                comm_r_old: Commitment::Sealed.parse("comm_r_old", &req.comm_r_old)?,
                comm_r_new: Commitment::Sealed.parse("comm_r_new", &req.comm_r_new)?,
                comm_d_new: Commitment::Unsealed.parse("comm_d_new", &req.comm_d_new)?,
                vanilla: req.vanilla_proofs.clone(),
            };
            let id = circuit_id("snap", u64::from(registered.sector_size()));
            Ok((snap::job(&r)?, id))
        }
        pb::ProofKind::Unspecified => Err(Error::InvalidInput(
            "proof_kind is unset: POREP_SEAL_COMMIT, WINDOW_POST_PARTITION, WINNING_POST or \
             SNAP_DEALS_UPDATE"
                .into(),
        )),
    }
}

fn priority(p: i32) -> Priority {
    // cuzk's priorities have zkpipe's numbers; unset is NORMAL.
    match pb::Priority::try_from(p).unwrap_or(pb::Priority::Unspecified) {
        pb::Priority::Low => Priority::Low,
        pb::Priority::High => Priority::High,
        pb::Priority::Critical => Priority::Critical,
        pb::Priority::Normal | pb::Priority::Unspecified => Priority::Normal,
    }
}

fn job_id(s: &str) -> Result<u64, Status> {
    s.parse()
        .map_err(|_| Status::not_found(format!("no job `{s}`")))
}

impl CuzkService {
    /// The service of `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        CuzkService {
            daemon,
            jobs: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            circuits: Mutex::new(HashMap::new()),
            completed: Mutex::new((0, 0)),
            parsing: tokio::sync::Semaphore::new(PARSES_AT_ONCE),
        }
    }

    fn key_of(&self, circuit: &str, set: &ParamSet) -> KeyId {
        self.circuits
            .lock()
            .unwrap()
            .insert(circuit.to_string(), set.clone());
        self.daemon.register_filecoin(set)
    }

    /// Forgets the jobs the daemon has forgotten (ended past their time to
    /// live), so a long-running service holds no request forever.
    fn prune(&self) {
        let known = |id: &u64| self.daemon.result(*id).is_some();
        self.jobs.lock().unwrap().retain(|id, _| known(id));
        self.requests.lock().unwrap().retain(|_, (_, id)| known(id));
    }

    async fn submit(&self, req: pb::SubmitProofRequest) -> Result<pb::SubmitProofResponse, Status> {
        self.prune();
        if req.request_id.len() > 256 {
            return Err(Status::invalid_argument("request_id is at most 256 bytes"));
        }
        let d = digest(&req);
        if !req.request_id.is_empty() {
            let known = self.requests.lock().unwrap().get(&req.request_id).copied();
            if let Some((seen, id)) = known {
                let state = self.daemon.result(id).map(|r| r.state());
                let retry = matches!(state, None | Some(JobState::Failed | JobState::Cancelled));
                if seen != d && !retry {
                    return Err(Status::already_exists(format!(
                        "request id `{}` names job {id}, a different request",
                        req.request_id
                    )));
                }
                if !retry {
                    return Ok(pb::SubmitProofResponse {
                        job_id: id.to_string(),
                        queue_position: 0,
                        assigned_gpu: String::new(),
                    });
                }
            }
        }
        let kind = pb::ProofKind::try_from(req.proof_kind).unwrap_or(pb::ProofKind::Unspecified);
        let request_id = req.request_id.clone();
        let request_priority = req.priority;
        let permit = self
            .parsing
            .acquire()
            .await
            .map_err(|e| Status::internal(format!("parse queue: {e}")))?;
        let parsed = tokio::task::spawn_blocking(move || parse(&req))
            .await
            .map_err(|e| Status::internal(format!("parse task: {e}")))?;
        drop(permit);
        let (job, circuit) = parsed.map_err(|e| match e {
            Error::InvalidInput(_) => invalid(e),
            other => Status::internal(other.to_string()),
        })?;
        let key = self.key_of(&circuit, job.param_set());
        let reply = self
            .daemon
            .submit(NewJob {
                request_id: String::new(),
                key,
                priority: priority_of(kind, request_priority),
                partitions: job.partitions() as u32,
                inputs: JobInputs::Filecoin(FilecoinInputs(job.clone())),
            })
            .map_err(Status::from)?;
        if !request_id.is_empty() {
            self.requests
                .lock()
                .unwrap()
                .insert(request_id.clone(), (d, reply.job_id));
        }
        self.jobs
            .lock()
            .unwrap()
            .insert(reply.job_id, Submitted { job, kind });
        Ok(pb::SubmitProofResponse {
            job_id: reply.job_id.to_string(),
            queue_position: reply.queue_position,
            assigned_gpu: String::new(),
        })
    }

    async fn await_result(
        &self,
        id: u64,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        use pb::await_proof_response::Status as S;
        let result = self
            .daemon
            .await_job(id, timeout)
            .await
            .ok_or_else(|| Status::not_found(format!("no job {id}")))?;
        let ms = |s: f64| (s * 1e3).round() as u64;
        let mut out = pb::AwaitProofResponse {
            job_id: id.to_string(),
            queue_wait_ms: ms(result.queue_s),
            // Work time summed over partitions, as the daemon's stages count it.
            synthesis_ms: ms(stage_s(&result, zkpipe_core::stage::Stage::Witness)),
            gpu_compute_ms: ms(result.device_s),
            total_ms: ms(result.queue_s + result.prove_s + result.verify_s),
            ..Default::default()
        };
        match result.state() {
            JobState::Succeeded => {
                let proof: Vec<u8> = result.proofs.iter().flat_map(|p| p.proof.clone()).collect();
                let job = self.jobs.lock().unwrap().get(&id).map(|s| s.job.clone());
                let job =
                    job.ok_or_else(|| Status::not_found(format!("job {id} is not a cuzk job")))?;
                let bytes = proof.clone();
                let checked = tokio::task::spawn_blocking(move || job.check(&bytes))
                    .await
                    .unwrap_or_else(|e| Err(Error::Failed(format!("check task: {e}"))));
                match checked {
                    Ok(()) => {
                        out.status = S::Completed as i32;
                        out.proof = proof;
                        self.completed.lock().unwrap().0 += 1;
                    }
                    Err(e) => {
                        out.status = S::Failed as i32;
                        out.error_message = e.to_string();
                        self.completed.lock().unwrap().1 += 1;
                    }
                }
            }
            JobState::Failed => {
                out.status = S::Failed as i32;
                out.error_message = result.error;
                self.completed.lock().unwrap().1 += 1;
            }
            JobState::Cancelled => {
                out.status = S::Cancelled as i32;
                out.error_message = result.error;
            }
            _ => out.status = S::Timeout as i32,
        }
        Ok(out)
    }
}

/// WinningPoSt must finish within its epoch: it runs CRITICAL whatever the
/// request says; the others keep theirs.
fn priority_of(kind: pb::ProofKind, requested: i32) -> Priority {
    match kind {
        pb::ProofKind::WinningPost => Priority::Critical,
        _ => priority(requested),
    }
}

#[tonic::async_trait]
impl ProvingEngine for Arc<CuzkService> {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        Ok(Response::new(self.submit(request.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let id = job_id(&r.job_id)?;
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(self.await_result(id, timeout).await?))
    }

    async fn prove(
        &self,
        request: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("submit is unset"))?;
        let reply = self.submit(submit).await?;
        let id = job_id(&reply.job_id)?;
        let result = self.await_result(id, None).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let id = job_id(&request.into_inner().job_id)?;
        let before = self
            .daemon
            .result(id)
            .ok_or_else(|| Status::not_found(format!("no job {id}")))?;
        self.daemon.cancel(id, "cancelled by the client");
        Ok(Response::new(pb::CancelProofResponse {
            was_running: before.state() == JobState::Running,
        }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let status = self.daemon.status();
        let gpus = status
            .devices
            .iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.index,
                name: d.name.clone(),
                vram_total_bytes: d.memory_bytes,
                ..Default::default()
            })
            .collect();
        let circuits = self.circuits.lock().unwrap().clone();
        let loaded_srs = status
            .keys
            .iter()
            .filter_map(|k| {
                let key = k.key.as_ref()?;
                (key.circuit == FILECOIN).then_some(())?;
                let name = circuits
                    .iter()
                    .find(|(_, set)| set.id == key.size)
                    .map_or_else(|| key.size.clone(), |(n, _)| n.clone());
                Some(pb::SrsStatus {
                    circuit_id: name,
                    tier: pb::srs_status::Tier::Hot as i32,
                    size_bytes: k.host_bytes,
                    ref_count: k.refcount,
                })
            })
            .collect();
        let mut queues: HashMap<&'static str, (u32, u32)> = HashMap::new();
        let jobs: Vec<(u64, pb::ProofKind)> = self
            .jobs
            .lock()
            .unwrap()
            .iter()
            .map(|(id, s)| (*id, s.kind))
            .collect();
        for (id, kind) in jobs {
            let Some(r) = self.daemon.result(id) else {
                continue;
            };
            let q = queues.entry(kind.as_str_name()).or_default();
            match r.state() {
                JobState::Queued => q.0 += 1,
                JobState::Running => q.1 += 1,
                _ => {}
            }
        }
        let (done, failed) = *self.completed.lock().unwrap();
        Ok(Response::new(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues: queues
                .into_iter()
                .map(|(k, (pending, in_progress))| pb::QueueStatus {
                    proof_kind: k.to_string(),
                    pending,
                    in_progress,
                })
                .collect(),
            total_proofs_completed: done,
            total_proofs_failed: failed,
            uptime_seconds: status.uptime_s as u64,
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.daemon.metrics_text(),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let set = tokio::task::spawn_blocking({
            let c = circuit.clone();
            move || param_set_of(&c)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(invalid)?;
        let key = self.key_of(&circuit, &set);
        let already = self.daemon.resident_keys().contains(&key);
        let t = Instant::now();
        for (_, r) in self.daemon.preload(vec![key]).await {
            r.map_err(|e| Status::failed_precondition(e.to_string()))?;
        }
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded: already,
            load_time_ms: t.elapsed().as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let set = self.circuits.lock().unwrap().get(&circuit).cloned();
        let Some(set) = set else {
            return Ok(Response::new(pb::EvictSrsResponse::default()));
        };
        let key = self.daemon.register_filecoin(&set);
        let bytes = self
            .daemon
            .status()
            .keys
            .iter()
            .filter(|k| k.key.as_ref().is_some_and(|id| id.size == key.size))
            .map(|k| k.host_bytes)
            .sum();
        let mut was_loaded = false;
        for (_, r) in self.daemon.evict(vec![key]) {
            match r {
                Ok(()) => was_loaded = true,
                Err(Error::InvalidInput(m)) if m.ends_with("is not loaded") => {}
                Err(e) => return Err(Status::failed_precondition(e.to_string())),
            }
        }
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded,
            freed_bytes: if was_loaded { bytes } else { 0 },
        }))
    }
}

/// A job's seconds in `stage`, summed over its partitions.
fn stage_s(r: &crate::proto::JobResult, stage: zkpipe_core::stage::Stage) -> f64 {
    let name = stage.name();
    r.stages
        .iter()
        .filter(|s| s.stage == name)
        .map(|s| s.seconds)
        .sum()
}
