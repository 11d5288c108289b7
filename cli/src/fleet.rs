//! `zkpipe fleet`: submit jobs to a fleet's queue, wait for them, and see
//! the fleet, straight through PostgreSQL (no node needed).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use zkpipe_core::Error;
use zkpipe_daemon::config::{Config, parse_bytes};
use zkpipe_daemon::daemon::priority_label;
use zkpipe_daemon::fleet_jobs;
use zkpipe_daemon::proto::{JobState, Priority};
use zkpipe_fleet::{Queue, WaitEvent};

use crate::client::{JobArgs, report, save};

#[derive(Args, Debug)]
pub struct FleetArgs {
    #[command(subcommand)]
    op: FleetOp,
}

/// Where the queue is.
#[derive(Args, Debug)]
struct QueueArgs {
    /// The queue: postgres://user@host[:port]/database (queue.url). A
    /// password here is visible to other users (ps): prefer
    /// --queue-password-file or PGPASSWORD.
    #[arg(long, value_name = "URL")]
    queue: Option<String>,
    /// The database password, alone on one line of a file only its owner
    /// may read (queue.password_file); else PGPASSWORD is used.
    #[arg(long, value_name = "FILE")]
    queue_password_file: Option<String>,
    /// A node's configuration file, for its `[queue]` section (lease,
    /// payload folder and limits; --queue wins over its url).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Folder shared with the nodes for payloads too large for a row
    /// (queue.payload_dir).
    #[arg(long, value_name = "DIR")]
    payload_dir: Option<String>,
}

#[derive(Subcommand, Debug)]
enum FleetOp {
    /// Queue a job for any node; print its id (with --wait: wait for its
    /// verified proofs and save them as `zkpipe client prove` does).
    Submit(Box<SubmitArgs>),
    /// Wait for a job; print its state (exit 1 if it failed or was cancelled).
    Await {
        #[command(flatten)]
        queue: QueueArgs,
        job_id: i64,
        /// Give up after this long (0: no limit); prints the state then.
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Give up (exit 1) after this long without the database; shorter
        /// outages are ridden out (0: no limit).
        #[arg(long, default_value_t = DEFAULT_MAX_OUTAGE_MS)]
        max_outage_ms: u64,
    },
    /// Cancel a queued or running job.
    Cancel {
        #[command(flatten)]
        queue: QueueArgs,
        job_id: i64,
    },
    /// Nodes (devices, heartbeat age, jobs), queue depth per priority,
    /// throughput over the last minute.
    Status {
        #[command(flatten)]
        queue: QueueArgs,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

/// `zkpipe fleet submit`.
#[derive(Args, Debug)]
struct SubmitArgs {
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    job: JobArgs,
    /// Attempts the job gets (default: queue.max_attempts).
    #[arg(long)]
    max_attempts: Option<i32>,
    /// Only nodes whose largest device has this much memory may run it
    /// (e.g. 24GiB).
    #[arg(long, value_name = "SIZE")]
    min_device_memory: Option<String>,
    /// Only nodes whose host budget (memory.host_budget) has this much may
    /// run it (e.g. 64GiB). A built-in circuit asks for at least the
    /// estimate its nodes admit jobs by, without this flag too.
    #[arg(long, value_name = "SIZE")]
    min_host_memory: Option<String>,
    /// Wait for the job to end and save its proofs.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this long (0: no limit).
    #[arg(long, default_value_t = 0)]
    timeout_ms: u64,
    /// With --wait: give up (exit 1) after this long without the database
    /// (0: no limit).
    #[arg(long, default_value_t = DEFAULT_MAX_OUTAGE_MS)]
    max_outage_ms: u64,
    /// With --wait: proofs, 192 bytes per partition (`-`: stdout).
    #[arg(long, value_name = "FILE", requires = "wait")]
    out: Option<PathBuf>,
    /// With --wait: public inputs as JSON (`-`: stdout).
    #[arg(long, value_name = "FILE", requires = "wait")]
    public_out: Option<PathBuf>,
}

/// An `await` with no limit waits this long.
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a wait goes on without the database by default: long enough
/// for a restart or a failover, short enough that a script learns of a
/// database that is gone.
const DEFAULT_MAX_OUTAGE_MS: u64 = 60_000;

/// Warns on stderr when a URL given on the command line holds a password:
/// every user of the machine can read command lines.
pub(crate) fn warn_if_password_in(flag: &str, url: &str) {
    if zkpipe_fleet::redact_url(url) != url {
        eprintln!(
            "warning: the {flag} URL holds a password, which other users of this machine can \
             see (ps); give it with --queue-password-file FILE or PGPASSWORD instead"
        );
    }
}

impl QueueArgs {
    /// The config file's settings with the flags on top.
    fn config(&self) -> Result<Config, Error> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        if let Some(url) = &self.queue {
            warn_if_password_in("--queue", url);
            config.set(&format!("queue.url={url}"))?;
        }
        if let Some(file) = &self.queue_password_file {
            config.set(&format!("queue.password_file={file}"))?;
        }
        if let Some(dir) = &self.payload_dir {
            config.set(&format!("queue.payload_dir={dir}"))?;
        }
        if !config.queue.enabled() {
            return Err(Error::InvalidInput(
                "no queue: give --queue postgres://… (or --config with a [queue] url)".into(),
            ));
        }
        Ok(config)
    }

    /// Connects to the queue the flags and config name.
    async fn connect(&self) -> Result<Arc<Queue>, Error> {
        connect(&self.config()?).await
    }
}

async fn connect(config: &Config) -> Result<Arc<Queue>, Error> {
    let queue = Queue::connect(&config.queue.url, config.queue.queue_config())
        .await
        .map_err(fleet_jobs::error)?;
    Ok(Arc::new(queue))
}

/// `timeout_ms` as a wait (0: no limit).
fn wait_limit(timeout_ms: u64) -> Duration {
    if timeout_ms == 0 {
        NO_TIMEOUT
    } else {
        Duration::from_millis(timeout_ms)
    }
}

/// Waits for a job; its state at the limit if it has not ended. A lost
/// database is reported on stderr (once per outage) and waited for up to
/// `max_outage_ms` (0: no limit).
async fn await_result(
    queue: &Queue,
    id: i64,
    timeout_ms: u64,
    max_outage_ms: u64,
) -> Result<zkpipe_daemon::proto::JobResult, Error> {
    let max_outage = (max_outage_ms > 0).then(|| Duration::from_millis(max_outage_ms));
    let report = |event: WaitEvent<'_>| match event {
        WaitEvent::Lost(e) => eprintln!(
            "zkpipe: lost the queue database ({e}); retrying{}",
            max_outage.map_or(String::new(), |m| format!(
                " for up to {:.1} s",
                m.as_secs_f64()
            ))
        ),
        WaitEvent::Restored { after } => eprintln!(
            "zkpipe: the queue database is back after {:.1} s",
            after.as_secs_f64()
        ),
    };
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

/// Refuses a job that needs more host memory than any live node of its
/// kind has, rather than queue it for nodes that would each refuse it.
/// With no node live it is queued: a node may join later (and the queue
/// fails it with the reason after `unrunnable_wait_ms` if none can run it).
/// A node that does not say its host memory counts as large enough.
///
/// # Errors
/// [`Error::InvalidInput`] with the estimate and the largest live node's
/// budget; queue errors.
async fn check_host_memory(q: &Queue, job: &zkpipe_fleet::NewJob) -> Result<(), Error> {
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

pub fn run(args: &FleetArgs) -> Result<(), Error> {
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| Error::Failed(format!("starting the async runtime: {e}")))?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: &FleetArgs) -> Result<(), Error> {
    match &args.op {
        FleetOp::Submit(submit) => {
            let SubmitArgs {
                queue,
                job,
                max_attempts,
                min_device_memory,
                min_host_memory,
                wait,
                timeout_ms,
                max_outage_ms,
                out,
                public_out,
            } = submit.as_ref();
            // Everything the caller can get wrong is checked before the queue.
            let outputs = if *wait {
                Some(job.outputs(out.as_deref(), public_out.as_deref())?)
            } else {
                None
            };
            let mut new = fleet_jobs::new_job(&job.request()?)?;
            new.max_attempts = *max_attempts;
            if let Some(m) = min_device_memory {
                new.min_device_memory = parse_bytes("--min-device-memory", m)?;
            }
            if let Some(m) = min_host_memory {
                let asked = parse_bytes("--min-host-memory", m)?;
                new.min_host_memory = new.min_host_memory.max(asked);
            }
            let config = queue.config()?;
            // A folder named but missing is a mistake, not one to create.
            if let Some(dir) = config.queue.queue_config().payload_dir {
                zkpipe_fleet::check_payload_dir(&dir).map_err(fleet_jobs::error)?;
            }
            let q = connect(&config).await?;
            check_host_memory(&q, &new).await?;
            let submitted = q.submit(&new).await.map_err(fleet_jobs::error)?;
            println!(
                "job {} queued{}",
                submitted.id,
                if submitted.created {
                    ""
                } else {
                    " (duplicate request id: the first job)"
                }
            );
            let Some((proof_out, public_out)) = outputs else {
                return Ok(());
            };
            let r = await_result(&q, submitted.id, *timeout_ms, *max_outage_ms).await?;
            if JobState::try_from(r.state) != Ok(JobState::Succeeded) {
                return report(&r);
            }
            save(&r, &proof_out, &public_out, job.is_circom())
        }
        FleetOp::Await {
            queue,
            job_id,
            timeout_ms,
            max_outage_ms,
        } => {
            let q = queue.connect().await?;
            report(&await_result(&q, *job_id, *timeout_ms, *max_outage_ms).await?)
        }
        FleetOp::Cancel { queue, job_id } => {
            let q = queue.connect().await?;
            let cancelled = q
                .cancel(*job_id, "cancelled by the client")
                .await
                .map_err(fleet_jobs::error)?;
            println!(
                "job {job_id}: {}",
                if cancelled {
                    "cancelled"
                } else {
                    "had already ended"
                }
            );
            Ok(())
        }
        FleetOp::Status { queue, json } => {
            let q = queue.connect().await?;
            let s = q.status().await.map_err(fleet_jobs::error)?;
            if *json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status_json(&s)).expect("JSON values serialise")
                );
            } else {
                print_status(&s);
            }
            Ok(())
        }
    }
}

/// A queue priority's name (`critical`, …), or its number.
fn priority_name(p: i16) -> String {
    match Priority::try_from(i32::from(p)) {
        Ok(Priority::Unspecified) | Err(_) => p.to_string(),
        Ok(p) => priority_label(p).to_string(),
    }
}

fn status_json(s: &zkpipe_fleet::Status) -> serde_json::Value {
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

fn print_status(s: &zkpipe_fleet::Status) {
    let live = s.nodes.iter().filter(|n| n.live).count();
    let queued: i64 = s.queued_by_priority.iter().map(|(_, n)| n).sum();
    println!(
        "fleet: {live} of {} node(s) live, {queued} queued, {} running; last minute: {} succeeded ({:.2} jobs/s), {} failed",
        s.nodes.len(),
        s.running,
        s.succeeded_last_minute,
        s.succeeded_last_minute as f64 / 60.0,
        s.failed_last_minute
    );
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
        println!(
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
        );
    }
    for (p, n) in &s.queued_by_priority {
        println!("queue {}: {n} queued", priority_name(*p));
    }
}
