//! zkpipe's jobs in the fleet queue: a job's payload is the client's
//! `SubmitRequest` (protobuf, as gRPC sends it), its key the daemon's key
//! name, its priority the request's; its result is the node's `JobResult`
//! (protobuf), its timings JSON. Submitters (a node's gRPC service,
//! `zkpipe fleet submit`) and nodes agree through these functions only.

use prost::Message;
use zkpipe_core::Error;

use crate::keys;
use crate::proto::{self, JobState};
use crate::validate;

/// The job kind zkpipe nodes run.
pub const KIND: &str = "zkpipe.v1";

/// A request checked as a daemon checks it, as a fleet job. The request id
/// becomes the fleet's idempotency id ("": none). A built-in key's job asks
/// for the host memory a daemon would admit it with
/// ([`keys::host_estimate`]), so only nodes whose host budget holds it
/// claim it.
///
/// # Errors
/// [`Error::InvalidInput`] naming the bad field.
pub fn new_job(req: &proto::SubmitRequest) -> Result<zkpipe_fleet::NewJob, Error> {
    let job = validate::new_job(req).map_err(Error::InvalidInput)?;
    let mut fleet = zkpipe_fleet::NewJob::new(KIND, job.key.to_string(), req.encode_to_vec());
    fleet.min_host_memory = keys::host_estimate(&job.key).map_or(0, |e| e.bytes);
    fleet.priority = job.priority as i16;
    fleet.request_id = (!req.request_id.is_empty()).then(|| req.request_id.clone());
    Ok(fleet)
}

/// The request a job carries.
///
/// # Errors
/// [`Error::InvalidInput`] when the payload is not a `SubmitRequest`.
pub fn request_of(payload: &[u8]) -> Result<proto::SubmitRequest, Error> {
    proto::SubmitRequest::decode(payload).map_err(|e| {
        Error::InvalidInput(format!("job payload is not a zkpipe.v1 SubmitRequest: {e}"))
    })
}

/// A fleet job as the gRPC API reports jobs.
pub fn result_of(job: &zkpipe_fleet::JobRecord) -> proto::JobResult {
    use zkpipe_fleet::JobState as Q;
    let id = u64::try_from(job.id).unwrap_or(0);
    let stored = job
        .result
        .as_deref()
        .filter(|_| job.state == Q::Succeeded)
        .map(proto::JobResult::decode);
    match stored {
        Some(Ok(mut r)) => {
            r.job_id = id;
            r
        }
        Some(Err(e)) => proto::JobResult {
            job_id: id,
            state: JobState::Failed as i32,
            error: format!("the stored result does not decode: {e}"),
            ..Default::default()
        },
        None => proto::JobResult {
            job_id: id,
            state: match job.state {
                Q::Queued => JobState::Queued,
                Q::Running => JobState::Running,
                Q::Succeeded => JobState::Succeeded,
                Q::Failed => JobState::Failed,
                Q::Cancelled => JobState::Cancelled,
            } as i32,
            error: job.error.clone().unwrap_or_default(),
            ..Default::default()
        },
    }
}

/// A queue error as the daemon's: the caller's fault (bad input, an unknown
/// job, a request id reused) or not.
pub fn error(e: zkpipe_fleet::Error) -> Error {
    use zkpipe_fleet::Error as F;
    match e {
        F::InvalidUrl(_)
        | F::InvalidInput(_)
        | F::RequestIdConflict { .. }
        | F::PayloadTooLarge { .. }
        | F::NotFound(_) => Error::InvalidInput(format!("queue: {e}")),
        e => Error::Failed(format!("queue: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_bad_ones_are_refused() {
        let mut req = proto::SubmitRequest {
            request_id: "r1".into(),
            key: Some(proto::KeyId {
                circuit: "squaring-chain".into(),
                size: "64".into(),
            }),
            priority: proto::Priority::Critical as i32,
            partitions: 2,
            inputs: Some(proto::submit_request::Inputs::Builtin(
                proto::BuiltinInputs { seed: 3 },
            )),
        };
        let job = new_job(&req).unwrap();
        assert_eq!(
            (job.kind.as_str(), job.key_id.as_str(), job.priority),
            (KIND, "squaring-chain 64", 4)
        );
        assert_eq!(job.request_id.as_deref(), Some("r1"));
        // 64 squarings, 800 bytes each: what the daemon would admit it by.
        assert_eq!(job.min_host_memory, 64 * 800);
        assert_eq!(request_of(&job.payload).unwrap(), req);
        assert!(request_of(b"\xff\xff\xff").is_err());
        req.partitions = 1000;
        assert!(matches!(new_job(&req), Err(Error::InvalidInput(_))));
    }
}
