//! A daemon as a fleet node: it registers its backend, devices and
//! resident keys, claims `zkpipe.v1` jobs from the shared queue and runs
//! each through its own path (the same validation, key cache, engine and
//! verify-before-return as a gRPC job), then writes the verified result and
//! its timings back under the job's lease.

use std::future::Future;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;
use zkpipe_core::Error;
use zkpipe_fleet::{ClaimedJob, JobFailure, JobOutput, JobRunner, NodeInfo, NodeOptions, Queue};

use crate::daemon::{Daemon, Refusal, state_label};
use crate::fleet_jobs;
use crate::proto::JobState;
use crate::validate;

/// Runs fleet jobs on a daemon.
#[derive(Debug)]
pub struct NodeRunner {
    daemon: Arc<Daemon>,
    node_id: String,
}

/// Cancels the daemon's job if the fleet drops the run (lease lost, shutdown).
struct CancelOnDrop {
    daemon: Arc<Daemon>,
    id: Option<u64>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.daemon
                .cancel(id, "cancelled: the node lost the fleet job's lease");
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn failure(message: impl Into<String>, retryable: bool) -> JobFailure {
    JobFailure {
        message: message.into(),
        retryable,
    }
}

impl NodeRunner {
    /// A runner on `daemon`, naming `node_id` in the timings it writes.
    pub fn new(daemon: Arc<Daemon>, node_id: String) -> Self {
        NodeRunner { daemon, node_id }
    }

    async fn prove(&self, job: ClaimedJob) -> Result<JobOutput, JobFailure> {
        let started_ms = unix_ms();
        // A shared payload folder missing on this node: another may have it.
        let payload = job
            .payload_bytes()
            .await
            .map_err(|e| failure(e.to_string(), true))?;
        let req = fleet_jobs::request_of(&payload).map_err(|e| failure(e.to_string(), false))?;
        let mut spec = validate::new_job(&req).map_err(|e| failure(e, false))?;
        if spec.key.to_string() != job.key_id {
            return Err(failure(
                format!(
                    "the job names key {:?} but its request is for key {}",
                    job.key_id, spec.key
                ),
                false,
            ));
        }
        // The fleet keeps the request id; locally each attempt is new.
        spec.request_id.clear();
        let reply = self.daemon.submit(spec).map_err(|r| match r {
            // Another node may have the memory this one lacks.
            Refusal::Busy(m) | Refusal::Conflict(m) | Refusal::TooLarge(m) => failure(m, true),
            Refusal::Draining => failure("the node is shutting down", true),
        })?;
        let mut guard = CancelOnDrop {
            daemon: self.daemon.clone(),
            id: Some(reply.job_id),
        };
        let result = self.daemon.await_job(reply.job_id, None).await;
        guard.id = None;
        let result = result.ok_or_else(|| failure("the node lost the job's result", true))?;
        let state = JobState::try_from(result.state).unwrap_or(JobState::Unspecified);
        if state != JobState::Succeeded {
            // Key loads, devices and budgets are the node's: another node
            // may succeed (the queue bounds the attempts); inputs that do
            // not fit their key fail everywhere.
            return Err(failure(
                format!(
                    "{} on node {}: {}",
                    state_label(state),
                    self.node_id,
                    result.error
                ),
                !result.inputs_at_fault,
            ));
        }
        let timings = serde_json::json!({
            "node": self.node_id,
            "attempt": job.attempt,
            "started_unix_ms": started_ms,
            "finished_unix_ms": unix_ms(),
            "queue_s": result.queue_s,
            "prove_s": result.prove_s,
            "verify_s": result.verify_s,
            "verified": result.verified,
        });
        Ok(JobOutput {
            result: result.encode_to_vec(),
            timings,
        })
    }
}

impl JobRunner for NodeRunner {
    fn run(&self, job: ClaimedJob) -> impl Future<Output = Result<JobOutput, JobFailure>> + Send {
        self.prove(job)
    }

    fn resident_keys(&self) -> Option<Vec<String>> {
        Some(
            self.daemon
                .resident_keys()
                .iter()
                .map(ToString::to_string)
                .collect(),
        )
    }
}

/// The node as it registers: the daemon's backend, devices (index, name,
/// memory), its largest device's memory, its host budget, and the keys
/// loaded now. It runs `zkpipe.v1` jobs of any key (built-in keys are set
/// up on first use).
pub fn node_info(daemon: &Daemon, node_id: String) -> NodeInfo {
    let status = daemon.status();
    let devices = status
        .devices
        .iter()
        .map(|d| {
            serde_json::json!({
                "index": d.index,
                "name": d.name,
                "memory_bytes": d.memory_bytes,
            })
        })
        .collect();
    NodeInfo {
        id: node_id,
        backend: status.backend,
        devices: serde_json::Value::Array(devices),
        device_memory: status
            .devices
            .iter()
            .map(|d| d.memory_bytes)
            .max()
            .unwrap_or(0),
        // What the key cache admits jobs against: a job estimated above it
        // would be refused here, so it is not offered.
        host_memory: status.host_budget_bytes,
        kinds: vec![fleet_jobs::KIND.to_string()],
        runnable_keys: None,
        resident_keys: daemon
            .resident_keys()
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}

/// Runs the node loop on `daemon` until `shutdown` resolves, then gives
/// back the leases of the jobs it still held.
///
/// # Errors
/// Only what retrying cannot fix, at start: a bad node id, or a queue
/// schema newer than this build. Database outages are ridden out.
pub async fn run(
    daemon: Arc<Daemon>,
    queue: Arc<Queue>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let q = &daemon.config().queue;
    let node_id = q.node_id();
    let options = NodeOptions {
        concurrency: q.concurrency,
        release_on_shutdown: true,
    };
    let node = node_info(&daemon, node_id.clone());
    tracing::info!(node = %node_id, "joining the fleet");
    let runner = Arc::new(NodeRunner::new(daemon, node_id));
    zkpipe_fleet::run_node(queue, node, runner, options, shutdown)
        .await
        .map_err(fleet_jobs::error)
}
