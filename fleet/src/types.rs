//! The values that go in and out of the queue.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of a [`Queue`](crate::Queue). `Default` gives production values;
/// tests shorten the durations.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// How long a claim holds a job without a heartbeat. A node is live while
    /// its last heartbeat is younger than this. Nodes renew every third of it.
    pub lease: Duration,
    /// How long a job whose key is resident on a live node waits for such a
    /// node before any capable node may take it.
    pub affinity_wait: Duration,
    /// How long a queued job that no live node can run (kind, key, device
    /// or host memory) waits before it fails with the reason.
    pub unrunnable_wait: Duration,
    /// Payloads up to this size are stored in the job row.
    pub inline_payload_max: u64,
    /// Larger payloads are written here (shared by all nodes), named by their
    /// SHA-256, and the row names the file. `None`: larger payloads are refused.
    /// The folder must exist: it is never created.
    pub payload_dir: Option<PathBuf>,
    /// No payload above this size is accepted, inline or spilled.
    pub max_payload: u64,
    /// Fallback poll while waiting for notifications (they are lost while
    /// the listening connection is down).
    pub poll_interval: Duration,
    /// An idle node woken by a new job waits a random time below this
    /// before claiming, and takes the notifications of that window as one:
    /// with many idle nodes, each does at most one empty claim per window
    /// instead of one per submitted job.
    pub wake_spread: Duration,
    /// Limit for opening a connection.
    pub connect_timeout: Duration,
    /// Attempts a job gets when the submitter does not say.
    pub default_max_attempts: i32,
    /// Longest wait between reconnection attempts.
    pub max_backoff: Duration,
    /// A file holding the database password, used when the URL has none
    /// (see [`read_password_file`](crate::read_password_file) for what it
    /// must be). Without it, a URL without a password takes `$PGPASSWORD`,
    /// as libpq does.
    pub password_file: Option<PathBuf>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            lease: Duration::from_secs(30),
            affinity_wait: Duration::from_secs(5),
            unrunnable_wait: Duration::from_secs(60),
            inline_payload_max: 1 << 20,
            payload_dir: None,
            max_payload: 4 << 30,
            poll_interval: Duration::from_secs(2),
            wake_spread: Duration::from_millis(50),
            connect_timeout: Duration::from_secs(5),
            default_max_attempts: 3,
            max_backoff: Duration::from_secs(5),
            password_file: None,
        }
    }
}

/// A node as it registers: identity, hardware, and what it can run.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    /// Stable id (e.g. the host name): a node restarted with the same id
    /// takes back its identity and releases the jobs its dead incarnation held.
    pub id: String,
    /// The backend it proves on (`cpu`, `cuda`, …).
    pub backend: String,
    /// Its devices, as the daemon describes them (shown by status).
    pub devices: serde_json::Value,
    /// Bytes of memory of its largest device; jobs needing more are not
    /// offered to it.
    pub device_memory: u64,
    /// Bytes of host memory it may use for one job (a daemon's host
    /// budget); jobs needing more are not offered to it. 0: not said (any
    /// job is offered, as to a node of an older build).
    pub host_memory: u64,
    /// Job kinds it runs.
    pub kinds: Vec<String>,
    /// Keys it can load; `None`: any key.
    pub runnable_keys: Option<Vec<String>>,
    /// Keys loaded now (affinity).
    pub resident_keys: Vec<String>,
}

/// A job to submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// Client's idempotency key: submitting the same request again returns
    /// the same job; another request under the same id is refused.
    pub request_id: Option<String>,
    /// What to run (e.g. `groth16`); nodes list the kinds they run.
    pub kind: String,
    /// The circuit/key it needs.
    pub key_id: String,
    /// Higher first.
    pub priority: i16,
    /// Device memory the job needs, bytes (0: any device).
    pub min_device_memory: u64,
    /// Host memory the job needs, bytes (0: unknown, any node).
    pub min_host_memory: u64,
    /// The input (e.g. a witness or a C1 output).
    pub payload: Vec<u8>,
    /// Attempts before it fails; `None`: the queue's default.
    pub max_attempts: Option<i32>,
}

impl NewJob {
    /// A job of `kind` for `key_id` with default priority and attempts.
    #[must_use]
    pub fn new(kind: impl Into<String>, key_id: impl Into<String>, payload: Vec<u8>) -> Self {
        NewJob {
            request_id: None,
            kind: kind.into(),
            key_id: key_id.into(),
            priority: 0,
            min_device_memory: 0,
            min_host_memory: 0,
            payload,
            max_attempts: None,
        }
    }
}

/// What [`Queue::submit`](crate::Queue::submit) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// The job.
    pub id: i64,
    /// `false` when the request id named an existing identical job.
    pub created: bool,
}

/// Where a job's payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// In the row.
    Inline(Vec<u8>),
    /// In a shared file of this length.
    File {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
    },
}

/// A claim: the pair that identifies this node's hold on a job. Results are
/// accepted only with the lease of the job's current attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The job.
    pub job_id: i64,
    /// Which claim of it (1 for the first).
    pub attempt: i32,
}

/// A job a node claimed.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    /// The job.
    pub id: i64,
    /// Its kind.
    pub kind: String,
    /// Its key.
    pub key_id: String,
    /// Its priority.
    pub priority: i16,
    /// This claim's number (1 for the first).
    pub attempt: i32,
    /// Attempts it gets.
    pub max_attempts: i32,
    /// Device memory it asked for.
    pub min_device_memory: u64,
    /// Host memory it asked for.
    pub min_host_memory: u64,
    /// Its input, or where it is.
    pub payload: Payload,
    /// SHA-256 of the payload.
    pub payload_digest: Vec<u8>,
}

impl ClaimedJob {
    /// The lease to complete or fail it with.
    #[must_use]
    pub fn lease(&self) -> Lease {
        Lease {
            job_id: self.id,
            attempt: self.attempt,
        }
    }
}

/// A job's life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting for a node.
    Queued,
    /// Leased by a node.
    Running,
    /// Ended with a result.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Ended by a cancel.
    Cancelled,
}

impl JobState {
    /// The state's name in the database.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Parses a database state name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }

    /// Whether the job has ended (it will not change again).
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The job.
    pub id: i64,
    /// The client's request id.
    pub request_id: Option<String>,
    /// Its kind.
    pub kind: String,
    /// Its key.
    pub key_id: String,
    /// Its priority.
    pub priority: i16,
    /// Where it is in its life.
    pub state: JobState,
    /// Claims so far.
    pub attempts: i32,
    /// Claims it gets.
    pub max_attempts: i32,
    /// The node holding it while running.
    pub lease_owner: Option<String>,
    /// The result, once succeeded.
    pub result: Option<Vec<u8>>,
    /// The node's timings, once succeeded.
    pub timings: Option<serde_json::Value>,
    /// Why it failed or was cancelled (or the last retryable failure).
    pub error: Option<String>,
}

/// What [`Queue::fail`](crate::Queue::fail) did with the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back in the queue for another attempt.
    Requeued,
    /// Failed for good.
    Failed,
}

/// What one [`Queue::maintain`](crate::Queue::maintain) pass changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Expired leases whose jobs went back to the queue.
    pub requeued: u64,
    /// Expired leases whose jobs had no attempts left.
    pub expired_failed: u64,
    /// Queued jobs no live node can run, failed after the wait.
    pub unrunnable_failed: u64,
}

/// One node in [`Status`].
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStatus {
    /// Its id.
    pub id: String,
    /// Its backend.
    pub backend: String,
    /// Its devices.
    pub devices: serde_json::Value,
    /// Its largest device's memory.
    pub device_memory: u64,
    /// Its host memory budget (0: not said).
    pub host_memory: u64,
    /// Kinds it runs.
    pub kinds: Vec<String>,
    /// Keys loaded.
    pub resident_keys: Vec<String>,
    /// Time since its last heartbeat.
    pub heartbeat_age: Duration,
    /// Whether that is within the lease.
    pub live: bool,
    /// Jobs it holds now.
    pub running: i64,
}

/// The fleet at a glance.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Every registered node, live or not.
    pub nodes: Vec<NodeStatus>,
    /// Queued jobs per priority, highest first.
    pub queued_by_priority: Vec<(i16, i64)>,
    /// Jobs leased now.
    pub running: i64,
    /// Jobs that succeeded in the last minute.
    pub succeeded_last_minute: i64,
    /// Jobs that failed in the last minute.
    pub failed_last_minute: i64,
}
