//! The gRPC face of the [`Daemon`]: each call validated, then mapped to
//! the daemon's operations and its refusals to gRPC status codes.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::daemon::{Daemon, Refusal};
use crate::proto::{self, prover_server::Prover};
use crate::validate;

/// The service.
#[derive(Debug, Clone)]
pub struct Service {
    daemon: Arc<Daemon>,
}

impl Service {
    /// The service of `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Service { daemon }
    }

    fn submit_job(&self, req: &proto::SubmitRequest) -> Result<proto::SubmitReply, Status> {
        let job = validate::new_job(req).map_err(Status::invalid_argument)?;
        self.daemon.submit(job).map_err(|r| match r {
            Refusal::Conflict(m) => Status::already_exists(m),
            Refusal::Busy(m) => Status::resource_exhausted(m),
            Refusal::Draining => Status::unavailable("the daemon is shutting down"),
        })
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
        self.submit_job(request.get_ref()).map(Response::new)
    }

    async fn r#await(
        &self,
        request: Request<proto::AwaitRequest>,
    ) -> Result<Response<proto::JobResult>, Status> {
        let req = request.get_ref();
        let timeout = validate::timeout(req.timeout_ms).map_err(Status::invalid_argument)?;
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
