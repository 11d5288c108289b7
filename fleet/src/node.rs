//! The node loop: register, claim what fits, run it, write the outcome,
//! heartbeat, and keep going through database outages.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{AbortHandle, JoinSet};

use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::types::{ClaimedJob, Lease, NodeInfo};

/// A successful run: the result bytes (e.g. a verified proof) and timings.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutput {
    /// Stored in the job's `result`.
    pub result: Vec<u8>,
    /// Stored in the job's `timings` (any JSON; the daemon's stage times).
    pub timings: serde_json::Value,
}

/// A failed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFailure {
    /// Why; stored in the job's `error`.
    pub message: String,
    /// Whether another attempt (maybe on another node) may succeed.
    pub retryable: bool,
}

/// What a node does with a claimed job. Implemented for closures
/// `Fn(ClaimedJob) -> impl Future<Output = Result<JobOutput, JobFailure>>`.
///
/// The future is dropped (cancelled) if the node loses the lease: the job
/// was cancelled, or the lease expired and was handed to another node.
pub trait JobRunner: Send + Sync + 'static {
    /// Runs one job.
    fn run(
        &self,
        job: ClaimedJob,
    ) -> impl Future<Output = std::result::Result<JobOutput, JobFailure>> + Send;

    /// The keys resident now, reported at each heartbeat for affinity;
    /// `None` keeps those in the [`NodeInfo`] given to [`run_node`].
    fn resident_keys(&self) -> Option<Vec<String>> {
        None
    }
}

impl<F, Fut> JobRunner for F
where
    F: Fn(ClaimedJob) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<JobOutput, JobFailure>> + Send,
{
    fn run(
        &self,
        job: ClaimedJob,
    ) -> impl Future<Output = std::result::Result<JobOutput, JobFailure>> + Send {
        self(job)
    }
}

/// How a node loop behaves.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Jobs run at once.
    pub concurrency: usize,
    /// On shutdown, give held jobs back to the queue (without counting the
    /// attempt) rather than leaving them to lease expiry.
    pub release_on_shutdown: bool,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            concurrency: 1,
            release_on_shutdown: true,
        }
    }
}

struct Held {
    lease: Lease,
    abort: AbortHandle,
}

/// Runs a node until `shutdown` resolves: migrates the schema, registers
/// (releasing jobs a previous run with the same id held), then claims jobs
/// that fit, runs them with `runner`, writes each outcome under its lease,
/// heartbeats (renewing leases and dropping jobs whose lease was lost), and
/// runs the queue's housekeeping. It sleeps on `LISTEN` between jobs, with
/// a fallback poll. Database errors are logged and retried with backoff.
///
/// # Errors
///
/// Only errors retrying cannot fix, at start: a bad [`NodeInfo`]
/// ([`Error::InvalidInput`]) or a database schema newer than this build.
pub async fn run_node<R: JobRunner>(
    queue: Arc<Queue>,
    mut node: NodeInfo,
    runner: Arc<R>,
    options: NodeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let mut shutdown = std::pin::pin!(shutdown);
    let config = queue.config().clone();
    let concurrency = options.concurrency.max(1);
    let mut backoff = Backoff::new(Duration::from_millis(50), config.max_backoff);

    loop {
        let started = async {
            queue.migrate().await?;
            queue.register(&node).await
        };
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            r = started => match r {
                Ok(_) => break,
                Err(e) if e.is_transient() => {
                    tracing::warn!(node = %node.id, "cannot join the queue yet: {e}");
                }
                Err(e) => return Err(e),
            },
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
    backoff.reset();
    tracing::info!(node = %node.id, "joined the queue");

    let mut queued = queue.subscribe_queued();
    let mut jobs: JoinSet<i64> = JoinSet::new();
    let mut held: HashMap<i64, Held> = HashMap::new();
    let mut heartbeat = tokio::time::interval(config.lease / 3);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut want_claim = true;
    let mut wake_at: Option<tokio::time::Instant> = None;
    let mut spread = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));

    loop {
        while want_claim && held.len() < concurrency {
            match queue.claim(&node).await {
                Ok(Some(job)) => {
                    backoff.reset();
                    let lease = job.lease();
                    let abort = jobs.spawn(run_one(
                        Arc::clone(&queue),
                        node.id.clone(),
                        Arc::clone(&runner),
                        job,
                    ));
                    held.insert(lease.job_id, Held { lease, abort });
                }
                Ok(None) => want_claim = false,
                Err(e) => {
                    tracing::warn!(node = %node.id, "claim failed: {e}");
                    if !e.is_transient() {
                        break;
                    }
                    tokio::select! {
                        () = &mut shutdown => return finish(&queue, &node, held, jobs, &options).await,
                        () = tokio::time::sleep(backoff.next_delay()) => {}
                    }
                }
            }
        }

        tokio::select! {
            () = &mut shutdown => return finish(&queue, &node, held, jobs, &options).await,
            r = queued.changed(), if wake_at.is_none() => {
                if r.is_err() {
                    // The listener is gone; the poll below still wakes us.
                    tokio::time::sleep(config.poll_interval).await;
                }
                wake_at = Some(tokio::time::Instant::now() + spread.spread(config.wake_spread));
            }
            () = sleep_until_some(wake_at) => {
                wake_at = None;
                want_claim = true;
            }
            Some(done) = jobs.join_next() => {
                if let Ok(id) = done {
                    held.remove(&id);
                }
                held.retain(|_, h| !h.abort.is_finished());
                want_claim = true;
            }
            _ = heartbeat.tick() => {
                if let Some(keys) = runner.resident_keys() {
                    node.resident_keys = keys;
                }
                let leases: Vec<Lease> = held.values().map(|h| h.lease).collect();
                match queue.heartbeat(&node, &leases).await {
                    Ok(renewed) => {
                        held.retain(|id, h| {
                            // A job that just ended is not renewed: no loss.
                            let keep = renewed.contains(id) && !h.abort.is_finished();
                            if !keep && !h.abort.is_finished() {
                                tracing::warn!(node = %node.id, job = id, "lease lost; stopping the job");
                                h.abort.abort();
                            }
                            keep
                        });
                        if let Err(e) = queue.maintain().await {
                            tracing::warn!(node = %node.id, "maintenance failed: {e}");
                        }
                    }
                    Err(e) => tracing::warn!(node = %node.id, "heartbeat failed: {e}"),
                }
                want_claim = true;
            }
            () = tokio::time::sleep(config.poll_interval) => want_claim = true,
        }
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Runs one job and writes its outcome, retrying the write through outages
/// until it lands or the lease is gone.
async fn run_one<R: JobRunner>(
    queue: Arc<Queue>,
    node_id: String,
    runner: Arc<R>,
    job: ClaimedJob,
) -> i64 {
    let lease = job.lease();
    let outcome = runner.run(job).await;
    let mut backoff = Backoff::new(Duration::from_millis(50), queue.config().max_backoff);
    loop {
        let written = match &outcome {
            Ok(out) => {
                queue
                    .complete(&node_id, lease, &out.result, &out.timings)
                    .await
            }
            Err(f) => queue
                .fail(&node_id, lease, &f.message, f.retryable)
                .await
                .map(|_| ()),
        };
        match written {
            Ok(()) => break,
            Err(e) if e.is_transient() => {
                tracing::warn!(node = %node_id, job = lease.job_id, "writing the outcome failed, retrying: {e}");
                tokio::time::sleep(backoff.next_delay()).await;
            }
            Err(Error::LeaseLost { .. }) => {
                tracing::warn!(node = %node_id, job = lease.job_id, "lease lost before the outcome was written; discarded");
                break;
            }
            Err(e) => {
                tracing::error!(node = %node_id, job = lease.job_id, "cannot write the outcome: {e}");
                break;
            }
        }
    }
    lease.job_id
}

/// Stops running jobs and, if asked, gives their leases back.
async fn finish(
    queue: &Queue,
    node: &NodeInfo,
    held: HashMap<i64, Held>,
    mut jobs: JoinSet<i64>,
    options: &NodeOptions,
) -> Result<()> {
    jobs.abort_all();
    while jobs.join_next().await.is_some() {}
    if options.release_on_shutdown {
        for h in held.values() {
            if let Err(e) = queue.release(&node.id, h.lease).await {
                tracing::debug!(node = %node.id, job = h.lease.job_id, "not released: {e}");
            }
        }
    }
    tracing::info!(node = %node.id, "left the queue");
    Ok(())
}
