//! Submitting to a fleet's queue from outside a node: a job no live node
//! could hold is refused up front, a result is awaited through database
//! outages, and the fleet's status reads as JSON or text.

use std::time::Duration;

use zkpipe_core::Error;
use zkpipe_fleet::{Queue, WaitEvent};

use crate::daemon::priority_label;
use crate::fleet_jobs;
use crate::proto::{self, Priority};

/// An `await` with no limit waits this long.
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// `timeout_ms` as a wait (0: no limit).
fn wait_limit(timeout_ms: u64) -> Duration {
    if timeout_ms == 0 {
        NO_TIMEOUT
    } else {
        Duration::from_millis(timeout_ms)
    }
}

/// Connects to the queue `config` names.
///
/// # Errors
/// The queue's, as [`fleet_jobs::error`] maps them.
pub async fn connect(config: &crate::config::Config) -> Result<std::sync::Arc<Queue>, Error> {
    let queue = Queue::connect(&config.queue.url, config.queue.queue_config())
        .await
        .map_err(fleet_jobs::error)?;
    Ok(std::sync::Arc::new(queue))
}

/// Waits for job `id` up to `timeout_ms` (0: no limit); its state at the
/// limit if it has not ended. A lost database is told to `report` (once
/// per outage) and waited for up to `max_outage` (`None`: no limit).
///
/// # Errors
/// The queue's, as [`fleet_jobs::error`] maps them.
pub async fn await_result(
    queue: &Queue,
    id: i64,
    timeout_ms: u64,
    max_outage: Option<Duration>,
    report: impl FnMut(WaitEvent<'_>),
) -> Result<proto::JobResult, Error> {
    let waited = queue
        .await_job_with(id, wait_limit(timeout_ms), max_outage, report)
        .await;
    let record = match waited {
        Err(zkpipe_fleet::Error::Timeout(_)) => queue.job(id).await,
        r => r,
    }
    .map_err(fleet_jobs::error)?;
    Ok(fleet_jobs::result_of(&record))
}

/// Where a submitted job may run, beyond what its request says.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Attempts it gets (`None`: the queue's default).
    pub max_attempts: Option<i32>,
    /// Nodes whose largest device has at least this many bytes.
    pub min_device_memory: Option<u64>,
    /// Nodes whose host budget has at least this many bytes (a built-in
    /// circuit asks for at least its own estimate anyway).
    pub min_host_memory: Option<u64>,
}

/// Queues `request` on the queue `config` names, once a payload folder it
/// names exists and some live node could hold the job
/// ([`check_host_memory`]).
///
/// # Errors
/// [`Error::InvalidInput`] for a request the queue cannot take or no node
/// could hold; the queue's errors.
pub async fn submit(
    config: &crate::config::Config,
    request: &proto::SubmitRequest,
    placement: &Placement,
) -> Result<(std::sync::Arc<Queue>, zkpipe_fleet::Submitted), Error> {
    let mut job = fleet_jobs::new_job(request)?;
    job.max_attempts = placement.max_attempts;
    if let Some(m) = placement.min_device_memory {
        job.min_device_memory = m;
    }
    if let Some(m) = placement.min_host_memory {
        job.min_host_memory = job.min_host_memory.max(m);
    }
    // A folder named but missing is a mistake, not one to create.
    if let Some(dir) = config.queue.queue_config().payload_dir {
        zkpipe_fleet::check_payload_dir(&dir).map_err(fleet_jobs::error)?;
    }
    let q = connect(config).await?;
    check_host_memory(&q, &job).await?;
    let submitted = q.submit(&job).await.map_err(fleet_jobs::error)?;
    Ok((q, submitted))
}

/// Refuses a job that needs more host memory than any live node of its
/// kind has, rather than queue it for nodes that would each refuse it.
/// With no node live it is queued: a node may join later (and the queue
/// fails it with the reason after `unrunnable_wait_ms` if none can run it).
/// A node that does not say its host memory counts as large enough.
///
/// # Errors
/// [`Error::InvalidInput`] with the estimate and the largest live node's
/// budget; queue errors.
pub async fn check_host_memory(q: &Queue, job: &zkpipe_fleet::NewJob) -> Result<(), Error> {
    let need = job.min_host_memory;
    if need == 0 {
        return Ok(());
    }
    let status = q.status().await.map_err(fleet_jobs::error)?;
    let live: Vec<u64> = status
        .nodes
        .iter()
        .filter(|n| n.live && n.kinds.contains(&job.kind))
        .map(|n| n.host_memory)
        .collect();
    if live.is_empty() || live.iter().any(|&m| m == 0 || m >= need) {
        return Ok(());
    }
    let largest = live.iter().copied().max().unwrap_or(0);
    Err(Error::InvalidInput(format!(
        "key {} needs about {} MiB ({need} bytes) of host memory; the largest host budget of \
         the {} live node(s) is {} MiB ({largest} bytes): no node would take the job",
        job.key_id,
        need >> 20,
        live.len(),
        largest >> 20
    )))
}

/// A queue priority's name (`critical`, …), or its number.
fn priority_name(p: i16) -> String {
    match Priority::try_from(i32::from(p)) {
        Ok(Priority::Unspecified) | Err(_) => p.to_string(),
        Ok(p) => priority_label(p).to_string(),
    }
}

/// The fleet's status as JSON: nodes, queues, the last minute's jobs.
pub fn status_json(s: &zkpipe_fleet::Status) -> serde_json::Value {
    let nodes: Vec<_> = s
        .nodes
        .iter()
        .map(|n| {
            serde_json::json!({
                "id": n.id,
                "backend": n.backend,
                "devices": n.devices,
                "device_memory": n.device_memory,
                "host_memory": n.host_memory,
                "kinds": n.kinds,
                "resident_keys": n.resident_keys,
                "heartbeat_age_s": n.heartbeat_age.as_secs_f64(),
                "live": n.live,
                "running": n.running,
            })
        })
        .collect();
    let queued: Vec<_> = s
        .queued_by_priority
        .iter()
        .map(|(p, n)| serde_json::json!({"priority": priority_name(*p), "queued": n}))
        .collect();
    serde_json::json!({
        "nodes": nodes,
        "queued": queued,
        "running": s.running,
        "succeeded_last_minute": s.succeeded_last_minute,
        "failed_last_minute": s.failed_last_minute,
        "jobs_per_s": s.succeeded_last_minute as f64 / 60.0,
    })
}

/// The fleet's status as lines of text.
pub fn status_lines(s: &zkpipe_fleet::Status) -> Vec<String> {
    let mut out = Vec::new();
    let live = s.nodes.iter().filter(|n| n.live).count();
    let queued: i64 = s.queued_by_priority.iter().map(|(_, n)| n).sum();
    out.push(format!(
        "fleet: {live} of {} node(s) live, {queued} queued, {} running; last minute: {} succeeded ({:.2} jobs/s), {} failed",
        s.nodes.len(),
        s.running,
        s.succeeded_last_minute,
        s.succeeded_last_minute as f64 / 60.0,
        s.failed_last_minute
    ));
    for n in &s.nodes {
        let devices: Vec<String> = n
            .devices
            .as_array()
            .map(|ds| {
                ds.iter()
                    .map(|d| {
                        format!(
                            "{} {} ({} MiB)",
                            d["index"],
                            d["name"].as_str().unwrap_or("?"),
                            d["memory_bytes"].as_u64().unwrap_or(0) >> 20
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(format!(
            "node {}: {}, {}, heartbeat {:.1} s ago, {} job(s) running; host budget: {}; \
             devices: {}; keys: {}",
            n.id,
            n.backend,
            if n.live { "live" } else { "GONE" },
            n.heartbeat_age.as_secs_f64(),
            n.running,
            if n.host_memory == 0 {
                "-".to_string()
            } else {
                format!("{} MiB", n.host_memory >> 20)
            },
            if devices.is_empty() {
                "-".to_string()
            } else {
                devices.join(", ")
            },
            if n.resident_keys.is_empty() {
                "-".to_string()
            } else {
                n.resident_keys.join(", ")
            }
        ));
    }
    for (p, n) in &s.queued_by_priority {
        out.push(format!("queue {}: {n} queued", priority_name(*p)));
    }
    out
}
