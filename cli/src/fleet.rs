//! `zkpipe fleet`: submit jobs to a fleet's queue, wait for them, and see
//! the fleet, straight through PostgreSQL (no node needed).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use zkpipe_core::Error;
use zkpipe_daemon::config::{Config, parse_bytes};
use zkpipe_daemon::proto::JobState;
use zkpipe_daemon::{fleet_jobs, fleet_submit};
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
    /// The queue: postgres://user@host:port/database, the port optional (queue.url). A
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
    /// With --wait: where the proofs go (`-`: stdout), as `client prove`
    /// writes them.
    #[arg(long, value_name = "FILE", requires = "wait", alias = "out")]
    proof: Option<PathBuf>,
    /// With --wait: where the public inputs go, as JSON (`-`: stdout).
    #[arg(long, value_name = "FILE", requires = "wait", alias = "public-out")]
    public: Option<PathBuf>,
}

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
        fleet_submit::connect(&self.config()?).await
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
    fleet_submit::await_result(queue, id, timeout_ms, max_outage, report).await
}

pub fn run(args: &FleetArgs) -> Result<(), Error> {
    zkpipe_daemon::client::block_on(run_async(args))
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
                proof,
                public,
            } = submit.as_ref();
            // Everything the caller can get wrong is checked before the queue.
            let outputs = if *wait {
                Some(job.outputs(proof.as_deref(), public.as_deref())?)
            } else {
                None
            };
            let bytes = |flag, m: &Option<String>| m.as_deref().map(|m| parse_bytes(flag, m));
            let placement = fleet_submit::Placement {
                max_attempts: *max_attempts,
                min_device_memory: bytes("--min-device-memory", min_device_memory).transpose()?,
                min_host_memory: bytes("--min-host-memory", min_host_memory).transpose()?,
            };
            let (q, submitted) =
                fleet_submit::submit(&queue.config()?, &job.request()?, &placement).await?;
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
                    serde_json::to_string_pretty(&fleet_submit::status_json(&s))
                        .expect("JSON values serialise")
                );
            } else {
                fleet_submit::status_lines(&s)
                    .iter()
                    .for_each(|l| println!("{l}"));
            }
            Ok(())
        }
    }
}
