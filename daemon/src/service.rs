//! The gRPC face of the [`Daemon`]: each call validated, then mapped to
//! the daemon's operations and its refusals to gRPC status codes. On a
//! fleet node (`[queue] url`), Submit, Await, Prove and Cancel go through
//! the fleet's queue instead: any node may prove the job, and job ids are
//! the queue's.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::daemon::{Daemon, Refusal};
use crate::proto::{self, prover_server::Prover};
use crate::validate;

/// The service.
#[derive(Debug, Clone)]
pub struct Service {
    daemon: Arc<Daemon>,
    fleet: Option<Arc<zkpipe_fleet::Queue>>,
}

/// An `Await` with no timeout waits this long at most.
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

fn fleet_status(e: zkpipe_fleet::Error) -> Status {
    use zkpipe_fleet::Error as F;
    let msg = format!("queue: {e}");
    match e {
        F::NotFound(_) => Status::not_found(msg),
        F::InvalidInput(_) | F::PayloadTooLarge { .. } => Status::invalid_argument(msg),
        F::RequestIdConflict { .. } => Status::already_exists(msg),
        e if e.is_transient() => Status::unavailable(msg),
        _ => Status::internal(msg),
    }
}

fn fleet_id(id: u64) -> Result<i64, Status> {
    i64::try_from(id).map_err(|_| Status::not_found(format!("no job {id}")))
}

impl Service {
    /// The service of `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Service {
            daemon,
            fleet: None,
        }
    }

    /// The service of a fleet node: jobs go to `queue`.
    pub fn with_fleet(daemon: Arc<Daemon>, queue: Arc<zkpipe_fleet::Queue>) -> Self {
        Service {
            daemon,
            fleet: Some(queue),
        }
    }

    async fn submit_to_fleet(
        queue: &zkpipe_fleet::Queue,
        req: &proto::SubmitRequest,
    ) -> Result<proto::SubmitReply, Status> {
        let job = crate::fleet_jobs::new_job(req).map_err(|e| match e {
            zkpipe_core::Error::InvalidInput(m) => Status::invalid_argument(m),
            e => Status::internal(e.to_string()),
        })?;
        let submitted = queue.submit(&job).await.map_err(fleet_status)?;
        Ok(proto::SubmitReply {
            job_id: submitted.id as u64,
            queue_position: 0,
            duplicate: !submitted.created,
        })
    }

    /// A fleet job's result once it ends, or its state after `timeout`.
    async fn await_fleet(
        queue: &zkpipe_fleet::Queue,
        id: u64,
        timeout: Option<Duration>,
    ) -> Result<proto::JobResult, Status> {
        let id = fleet_id(id)?;
        let record = match queue.await_job(id, timeout.unwrap_or(NO_TIMEOUT)).await {
            Err(zkpipe_fleet::Error::Timeout(_)) => queue.job(id).await,
            r => r,
        }
        .map_err(fleet_status)?;
        Ok(crate::fleet_jobs::result_of(&record))
    }

    fn submit_job(&self, req: &proto::SubmitRequest) -> Result<proto::SubmitReply, Status> {
        let job = validate::new_job(req).map_err(Status::invalid_argument)?;
        self.daemon.submit(job).map_err(Status::from)
    }
}

impl From<Refusal> for Status {
    fn from(r: Refusal) -> Status {
        match r {
            Refusal::Conflict(m) => Status::already_exists(m),
            Refusal::Busy(m) | Refusal::TooLarge(m) => Status::resource_exhausted(m),
            Refusal::Draining => Status::unavailable("the daemon is shutting down"),
        }
    }
}

fn not_found(id: u64) -> Status {
    Status::not_found(format!(
        "no job {id} (unknown, or ended longer ago than daemon.result_ttl_s)"
    ))
}

fn outcomes(
    results: Vec<(crate::keys::KeyId, Result<(), zkpipe_core::Error>)>,
) -> proto::KeysReply {
    proto::KeysReply {
        keys: results
            .into_iter()
            .map(|(id, r)| proto::KeyOutcome {
                key: Some(proto::KeyId {
                    circuit: id.circuit,
                    size: id.size,
                }),
                done: r.is_ok(),
                error: r.err().map_or(String::new(), |e| e.to_string()),
            })
            .collect(),
    }
}

#[tonic::async_trait]
impl Prover for Service {
    async fn submit(
        &self,
        request: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::SubmitReply>, Status> {
        if let Some(queue) = &self.fleet {
            return Self::submit_to_fleet(queue, request.get_ref())
                .await
                .map(Response::new);
        }
        self.submit_job(request.get_ref()).map(Response::new)
    }

    async fn r#await(
        &self,
        request: Request<proto::AwaitRequest>,
    ) -> Result<Response<proto::JobResult>, Status> {
        let req = request.get_ref();
        let timeout = validate::timeout(req.timeout_ms).map_err(Status::invalid_argument)?;
        if let Some(queue) = &self.fleet {
            return Self::await_fleet(queue, req.job_id, timeout)
                .await
                .map(Response::new);
        }
        self.daemon
            .await_job(req.job_id, timeout)
            .await
            .map(Response::new)
            .ok_or_else(|| not_found(req.job_id))
    }

    async fn prove(
        &self,
        request: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::JobResult>, Status> {
        if let Some(queue) = &self.fleet {
            let reply = Self::submit_to_fleet(queue, request.get_ref()).await?;
            return Self::await_fleet(queue, reply.job_id, None)
                .await
                .map(Response::new);
        }
        let reply = self.submit_job(request.get_ref())?;
        self.daemon
            .await_job(reply.job_id, None)
            .await
            .map(Response::new)
            .ok_or_else(|| not_found(reply.job_id))
    }

    async fn cancel(
        &self,
        request: Request<proto::CancelRequest>,
    ) -> Result<Response<proto::CancelReply>, Status> {
        let id = request.get_ref().job_id;
        if let Some(queue) = &self.fleet {
            let fid = fleet_id(id)?;
            queue
                .cancel(fid, "cancelled by the client")
                .await
                .map_err(fleet_status)?;
            let record = queue.job(fid).await.map_err(fleet_status)?;
            return Ok(Response::new(proto::CancelReply {
                state: crate::fleet_jobs::result_of(&record).state,
            }));
        }
        let state = self
            .daemon
            .cancel(id, "cancelled by the client")
            .ok_or_else(|| not_found(id))?;
        Ok(Response::new(proto::CancelReply {
            state: state as i32,
        }))
    }

    async fn status(
        &self,
        _request: Request<proto::StatusRequest>,
    ) -> Result<Response<proto::StatusReply>, Status> {
        Ok(Response::new(self.daemon.status()))
    }

    async fn metrics(
        &self,
        _request: Request<proto::MetricsRequest>,
    ) -> Result<Response<proto::MetricsReply>, Status> {
        Ok(Response::new(proto::MetricsReply {
            text: self.daemon.metrics_text(),
        }))
    }

    async fn preload_keys(
        &self,
        request: Request<proto::KeysRequest>,
    ) -> Result<Response<proto::KeysReply>, Status> {
        let ids = validate::keys(request.get_ref()).map_err(Status::invalid_argument)?;
        Ok(Response::new(outcomes(self.daemon.preload(ids).await)))
    }

    async fn evict_keys(
        &self,
        request: Request<proto::KeysRequest>,
    ) -> Result<Response<proto::KeysReply>, Status> {
        let ids = validate::keys(request.get_ref()).map_err(Status::invalid_argument)?;
        Ok(Response::new(outcomes(self.daemon.evict(ids))))
    }

    async fn timeline(
        &self,
        request: Request<proto::TimelineRequest>,
    ) -> Result<Response<proto::TimelineReply>, Status> {
        Ok(Response::new(
            self.daemon.timeline(request.get_ref().from_seq),
        ))
    }
}
