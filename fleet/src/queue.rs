//! [`Queue`]: one node's (or client's) handle on the shared job table.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, MutexGuard, broadcast, oneshot, watch};
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, Row, Statement};

use crate::backoff::Backoff;
use crate::error::{Error, Result, describe};
use crate::payload;
use crate::schema;
use crate::secret::{self, redact_url as redact};
use crate::tls::{self, SslMode, Tls};
use crate::types::{
    ClaimedJob, FailOutcome, JobRecord, JobState, Lease, Maintenance, NewJob, NodeInfo, NodeStatus,
    Payload, QueueConfig, Status, Submitted,
};

/// Longest text accepted for ids, kinds and keys.
const MAX_NAME_LEN: usize = 256;
/// Longest error message stored.
const MAX_ERROR_LEN: usize = 8192;
/// Most attempts a job may ask for.
const MAX_ATTEMPTS: i32 = 20;

type Params<'a> = [&'a (dyn ToSql + Sync)];

/// A handle on the fleet's queue in PostgreSQL.
///
/// One `Queue` holds one connection for queries (calls take turns on it)
/// and, once something waits for notifications, a second one that
/// `LISTEN`s. A lost connection is reopened by the next call; a call that
/// finds the database away returns [`Error::Unavailable`] and never panics.
/// Share it between tasks with an `Arc`.
#[derive(Debug)]
pub struct Queue {
    pg: tokio_postgres::Config,
    tls: Tls,
    config: QueueConfig,
    conn: Mutex<Option<Conn>>,
    events: Arc<Events>,
    listener: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    statements: Arc<AtomicU64>,
}

/// What [`Queue::await_job_with`] reports while it waits.
#[derive(Debug)]
pub enum WaitEvent<'a> {
    /// The database stopped answering (the error it gave); the wait goes
    /// on. Reported once per outage.
    Lost(&'a Error),
    /// It answers again, after this long without it.
    Restored {
        /// How long it was away.
        after: Duration,
    },
}

#[derive(Debug)]
struct Events {
    /// Bumped when a job becomes claimable (or notifications may have been
    /// missed).
    queued: watch::Sender<u64>,
    /// A job id that ended; -1: notifications may have been missed.
    done: broadcast::Sender<i64>,
}

impl Events {
    fn missed(&self) {
        self.queued.send_modify(|n| *n = n.wrapping_add(1));
        let _ = self.done.send(-1);
    }
}

struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    broken: bool,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("prepared", &self.statements.len())
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

/// A locked, open connection.
struct Session<'a> {
    guard: MutexGuard<'a, Option<Conn>>,
    counter: &'a AtomicU64,
}

impl Session<'_> {
    /// Runs a cached prepared statement; a connection-level failure marks
    /// the connection for reopening.
    async fn query(&mut self, sql: &'static str, params: &Params<'_>) -> Result<Vec<Row>> {
        let Some(conn) = self.guard.as_mut() else {
            return Err(Error::Unavailable("not connected".into()));
        };
        let result = async {
            let stmt = match conn.statements.get(sql) {
                Some(s) => s.clone(),
                None => {
                    self.counter.fetch_add(1, Ordering::Relaxed);
                    let s = conn.client.prepare(sql).await.map_err(Error::from_pg)?;
                    conn.statements.insert(sql, s.clone());
                    s
                }
            };
            self.counter.fetch_add(1, Ordering::Relaxed);
            conn.client
                .query(&stmt, params)
                .await
                .map_err(Error::from_pg)
        }
        .await;
        if let Err(e) = &result
            && e.breaks_connection()
        {
            conn.broken = true;
        }
        result
    }

    async fn query_opt(&mut self, sql: &'static str, params: &Params<'_>) -> Result<Option<Row>> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }
}

fn get<'r, T: tokio_postgres::types::FromSql<'r>>(row: &'r Row, idx: usize) -> Result<T> {
    row.try_get(idx).map_err(Error::from_pg)
}

fn to_i64(what: &str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::InvalidInput(format!("{what} {v} is too large")))
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Refuses empty, over-long or NUL-containing names (PostgreSQL text cannot
/// hold NUL).
fn check_name(what: &str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::InvalidInput(format!("{what} is empty")));
    }
    if s.len() > MAX_NAME_LEN {
        return Err(Error::InvalidInput(format!(
            "{what} is {} bytes long; the limit is {MAX_NAME_LEN}",
            s.len()
        )));
    }
    if s.contains('\0') || s.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "{what} {s:?} contains control characters"
        )));
    }
    Ok(())
}

/// An error message fit for a text column: no NUL, bounded length.
fn clean_message(s: &str) -> String {
    let mut out: String = s.chars().filter(|&c| c != '\0').collect();
    if out.len() > MAX_ERROR_LEN {
        let mut cut = MAX_ERROR_LEN;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

fn check_node(node: &NodeInfo) -> Result<()> {
    check_name("node id", &node.id)?;
    check_name("backend", &node.backend)?;
    for k in &node.kinds {
        check_name("job kind", k)?;
    }
    for k in node
        .runnable_keys
        .iter()
        .flatten()
        .chain(&node.resident_keys)
    {
        check_name("key id", k)?;
    }
    to_i64("device memory", node.device_memory)?;
    to_i64("host memory", node.host_memory)?;
    Ok(())
}

/// Sets a leased job back to queued, or to failed when it has no attempts
/// left. `$R` in the callers' SQL is the reason.
macro_rules! release_set {
    ($reason:literal) => {
        concat!(
            "state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END, ",
            "error = CASE WHEN attempts >= max_attempts THEN format('",
            $reason,
            " on attempt %s of %s (node %s)', attempts, max_attempts, lease_owner) ",
            "ELSE format('",
            $reason,
            " (node %s)', lease_owner) END, ",
            "finished = CASE WHEN attempts >= max_attempts THEN now() END, ",
            "not_before = now(), lease_owner = NULL, lease_expires = NULL"
        )
    };
}

const SQL_SUBMIT: &str = "
INSERT INTO jobs (request_id, request_digest, kind, key_id, priority, min_device_memory,
                  payload, payload_path, payload_len, payload_digest, max_attempts,
                  affinity_until, min_host_memory)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + $12::float8 * interval '1 second',
        $13)
ON CONFLICT (request_id) DO NOTHING
RETURNING id";

const SQL_BY_REQUEST: &str = "SELECT id, request_digest FROM jobs WHERE request_id = $1";

const SQL_REGISTER: &str = "
INSERT INTO nodes (id, backend, devices, device_memory, kinds, runnable_keys, resident_keys,
                   host_memory, heartbeat, started)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now())
ON CONFLICT (id) DO UPDATE SET backend = EXCLUDED.backend, devices = EXCLUDED.devices,
    device_memory = EXCLUDED.device_memory, host_memory = EXCLUDED.host_memory,
    kinds = EXCLUDED.kinds,
    runnable_keys = EXCLUDED.runnable_keys, resident_keys = EXCLUDED.resident_keys,
    heartbeat = now(), started = now()";

const SQL_RELEASE_ORPHANS: &str = concat!(
    "UPDATE jobs SET ",
    release_set!("node restarted while holding it"),
    " WHERE state = 'running' AND lease_owner = $1 RETURNING id"
);

const SQL_HEARTBEAT: &str = "
WITH n AS (
    INSERT INTO nodes (id, backend, devices, device_memory, kinds, runnable_keys, resident_keys,
                       host_memory, heartbeat, started)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $11, now(), now())
    ON CONFLICT (id) DO UPDATE SET resident_keys = EXCLUDED.resident_keys,
        host_memory = EXCLUDED.host_memory, heartbeat = now()
    RETURNING id
)
UPDATE jobs SET lease_expires = now() + $10::float8 * interval '1 second'
FROM unnest($8::int8[], $9::int4[]) AS l(id, attempt)
WHERE jobs.id = l.id AND jobs.attempts = l.attempt AND jobs.state = 'running'
  AND jobs.lease_owner = (SELECT id FROM n)
RETURNING jobs.id";

const SQL_CLAIM: &str = "
WITH c AS (
    SELECT j.id FROM jobs j
    WHERE j.state = 'queued' AND j.not_before <= now()
      AND j.kind = ANY($2::text[])
      AND ($3::text[] IS NULL OR j.key_id = ANY($3::text[]))
      AND j.min_device_memory <= $4::int8
      AND ($7::int8 = 0 OR j.min_host_memory <= $7::int8)
      AND (j.affinity_until <= now()
           OR j.key_id = ANY($5::text[])
           OR NOT EXISTS (SELECT 1 FROM nodes o
                          WHERE o.heartbeat > now() - $6::float8 * interval '1 second'
                            AND j.key_id = ANY(o.resident_keys)))
    ORDER BY j.priority DESC, j.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_owner = $1,
    lease_expires = now() + $6::float8 * interval '1 second', started = now()
FROM c WHERE jobs.id = c.id
RETURNING jobs.id, jobs.kind, jobs.key_id, jobs.priority, jobs.attempts, jobs.max_attempts,
          jobs.min_device_memory, jobs.payload, jobs.payload_path, jobs.payload_len,
          jobs.payload_digest, jobs.min_host_memory";

const SQL_COMPLETE: &str = "
UPDATE jobs SET state = 'succeeded', result = $4, timings = $5, error = NULL, finished = now(),
    lease_owner = NULL, lease_expires = NULL
WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3
RETURNING id";

const SQL_FAIL: &str = "
UPDATE jobs SET
    state = CASE WHEN $4 AND attempts < max_attempts THEN 'queued' ELSE 'failed' END,
    error = $5,
    finished = CASE WHEN $4 AND attempts < max_attempts THEN NULL ELSE now() END,
    not_before = now(), lease_owner = NULL, lease_expires = NULL
WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3
RETURNING state";

const SQL_RELEASE: &str = "
UPDATE jobs SET state = 'queued', attempts = attempts - 1, not_before = now(),
    lease_owner = NULL, lease_expires = NULL
WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3
RETURNING id";

const SQL_EXPIRE: &str = concat!(
    "UPDATE jobs SET ",
    release_set!("lease expired"),
    " WHERE state = 'running' AND lease_expires < now() RETURNING state"
);

// The reasons are checked in the claim's order: kind, key, device memory,
// then host memory among the nodes with the device memory.
const SQL_UNRUNNABLE: &str = "
WITH live AS (
    SELECT kinds, runnable_keys, device_memory, host_memory FROM nodes
    WHERE heartbeat > now() - $1::float8 * interval '1 second'
)
UPDATE jobs j SET state = 'failed', finished = now(), error = CASE
    WHEN NOT EXISTS (SELECT 1 FROM live WHERE j.kind = ANY(live.kinds))
        THEN format('no live node runs jobs of kind %L', j.kind)
    WHEN NOT EXISTS (SELECT 1 FROM live WHERE j.kind = ANY(live.kinds)
                     AND (live.runnable_keys IS NULL OR j.key_id = ANY(live.runnable_keys)))
        THEN format('no live node of kind %L can load key %L', j.kind, j.key_id)
    WHEN NOT EXISTS (SELECT 1 FROM live WHERE j.kind = ANY(live.kinds)
                     AND (live.runnable_keys IS NULL OR j.key_id = ANY(live.runnable_keys))
                     AND j.min_device_memory <= live.device_memory)
        THEN format('needs %s bytes of device memory; the largest device of a live node that '
                    'can load key %L has %s', j.min_device_memory, j.key_id,
                    (SELECT max(device_memory) FROM live WHERE j.kind = ANY(live.kinds)
                     AND (live.runnable_keys IS NULL OR j.key_id = ANY(live.runnable_keys))))
    ELSE format('needs %s bytes of host memory; the largest host budget of a live node that '
                'can load key %L is %s', j.min_host_memory, j.key_id,
                (SELECT max(host_memory) FROM live WHERE j.kind = ANY(live.kinds)
                 AND (live.runnable_keys IS NULL OR j.key_id = ANY(live.runnable_keys))
                 AND j.min_device_memory <= live.device_memory))
    END
WHERE j.state = 'queued' AND j.not_before < now() - $1::float8 * interval '1 second'
  AND NOT EXISTS (SELECT 1 FROM live WHERE j.kind = ANY(live.kinds)
                  AND (live.runnable_keys IS NULL OR j.key_id = ANY(live.runnable_keys))
                  AND j.min_device_memory <= live.device_memory
                  AND (live.host_memory = 0 OR j.min_host_memory <= live.host_memory))
RETURNING j.id";

const SQL_CANCEL: &str = "
UPDATE jobs SET state = 'cancelled', error = $2, finished = now(),
    lease_owner = NULL, lease_expires = NULL
WHERE id = $1 AND state IN ('queued', 'running')
RETURNING id";

const SQL_JOB: &str = "
SELECT id, request_id, kind, key_id, priority, state, attempts, max_attempts, lease_owner,
       result, timings, error
FROM jobs WHERE id = $1";

const SQL_STATUS_NODES: &str = "
SELECT n.id, n.backend, n.devices, n.device_memory, n.kinds, n.resident_keys,
       greatest(extract(epoch FROM now() - n.heartbeat)::float8, 0),
       (SELECT count(*) FROM jobs j WHERE j.state = 'running' AND j.lease_owner = n.id),
       n.host_memory
FROM nodes n ORDER BY n.id";

const SQL_STATUS_DEPTH: &str = "
SELECT priority, count(*) FROM jobs WHERE state = 'queued'
GROUP BY priority ORDER BY priority DESC";

const SQL_STATUS_COUNTS: &str = "
SELECT (SELECT count(*) FROM jobs WHERE state = 'running'),
       (SELECT count(*) FROM jobs WHERE finished > now() - interval '1 minute'
                                    AND state = 'succeeded'),
       (SELECT count(*) FROM jobs WHERE finished > now() - interval '1 minute'
                                    AND state = 'failed')";

impl Queue {
    /// Checks the URL and opens the query connection.
    ///
    /// `url` is `postgres://user[:password]@host[:port]/database[?options]`
    /// (or `postgresql://`). TLS follows libpq's `sslmode` (`disable`,
    /// `prefer` (the default), `require`, `verify-ca`, `verify-full`) with
    /// `sslrootcert`, `sslcert` and `sslkey` naming PEM files; see
    /// `docs/fleet.md`. A URL without a password takes it from
    /// `config.password_file`, else from `$PGPASSWORD`. Messages show the
    /// URL through [`redact_url`](crate::redact_url).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] for a URL tokio-postgres does not accept, of
    /// another scheme, or with bad TLS parameters; [`Error::InvalidInput`]
    /// for bad settings, a password file that cannot be used, a password
    /// both in the URL and in a file, or a certificate or key file that
    /// cannot be used; [`Error::Unavailable`] when the database cannot be
    /// reached within `config.connect_timeout`, does not offer the TLS the
    /// mode requires, or shows a certificate the mode refuses (the message
    /// names the problem); [`Error::Database`] when it refuses the
    /// connection (a wrong password: the server's message says so).
    pub async fn connect(url: &str, config: QueueConfig) -> Result<Self> {
        let queue = Self::new(url, config)?;
        drop(queue.session().await?);
        Ok(queue)
    }

    /// Like [`Queue::connect`] but does not connect until the first call;
    /// for a node that must start while the database is away.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] and [`Error::InvalidInput`] as for `connect`
    /// (certificate and key files are read here).
    pub fn new(url: &str, config: QueueConfig) -> Result<Self> {
        let env = std::env::var_os("PGPASSWORD");
        Self::with_env_password(
            url,
            config,
            env.as_deref().map(std::os::unix::ffi::OsStrExt::as_bytes),
        )
    }

    /// [`Queue::new`] with `$PGPASSWORD` given, for tests.
    fn with_env_password(url: &str, config: QueueConfig, env: Option<&[u8]>) -> Result<Self> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::InvalidUrl(format!(
                "{:?} is not a postgres:// or postgresql:// URL",
                redact(url)
            )));
        }
        let (rest, tls_params) = tls::split_url(url)?;
        let mut pg: tokio_postgres::Config = rest
            .parse()
            .map_err(|e| Error::InvalidUrl(format!("{:?}: {}", redact(url), describe(&e))))?;
        if pg.get_hosts().is_empty() {
            return Err(Error::InvalidUrl(format!(
                "{:?} names no host",
                redact(url)
            )));
        }
        check_config(&config)?;
        pg.ssl_mode(match tls_params.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        let tls = Tls::new(&tls_params)?;
        let url_has_password = pg.get_password().is_some_and(|p| !p.is_empty());
        if let Some(password) =
            secret::password_for(url_has_password, config.password_file.as_deref(), env)?
        {
            pg.password(password);
        }
        pg.connect_timeout(config.connect_timeout);
        pg.keepalives(true);
        pg.keepalives_idle(Duration::from_secs(10));
        if pg.get_application_name().is_none() {
            pg.application_name("zkpipe-fleet");
        }
        let (queued, _) = watch::channel(0);
        let (done, _) = broadcast::channel(1024);
        Ok(Queue {
            pg,
            tls,
            config,
            conn: Mutex::new(None),
            events: Arc::new(Events { queued, done }),
            listener: std::sync::Mutex::new(None),
            statements: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The settings it was made with.
    #[must_use]
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Statements sent to the database so far by this handle (prepares
    /// included, `LISTEN` excluded): for measuring load per job.
    #[must_use]
    pub fn statements_sent(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    async fn open(&self) -> Result<Conn> {
        let (client, connection) = self
            .pg
            .connect(self.tls.clone())
            .await
            .map_err(Error::from_pg)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("queue connection ended: {e}");
            }
        });
        Ok(Conn {
            client,
            statements: HashMap::new(),
            broken: false,
        })
    }

    /// Locks the query connection, opening it first if it is missing or broken.
    async fn session(&self) -> Result<Session<'_>> {
        let mut guard = self.conn.lock().await;
        let healthy = matches!(&*guard, Some(c) if !c.broken && !c.client.is_closed());
        if !healthy {
            *guard = None;
            *guard = Some(self.open().await?);
        }
        Ok(Session {
            guard,
            counter: &self.statements,
        })
    }

    /// Creates or upgrades the schema (see [`schema`](crate::schema)).
    /// Returns the versions applied. Safe to call from many nodes at once.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] if the database is newer than this build; database
    /// errors otherwise (nothing is half-applied).
    pub async fn migrate(&self) -> Result<Vec<i32>> {
        let mut s = self.session().await?;
        let Some(conn) = s.guard.as_mut() else {
            return Err(Error::Unavailable("not connected".into()));
        };
        let r = schema::migrate(&mut conn.client).await;
        if let Err(e) = &r
            && e.breaks_connection()
        {
            conn.broken = true;
        }
        r
    }

    /// Adds a job, or returns the existing one for a repeated request id.
    ///
    /// A payload over `inline_payload_max` is written to `payload_dir`
    /// (atomically, named by its SHA-256) and the row names the file.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an empty or bad kind/key/request id or
    /// attempts out of 1..=1000; [`Error::PayloadTooLarge`] over
    /// `max_payload`, or over the inline limit without a `payload_dir`;
    /// [`Error::RequestIdConflict`] when the request id is another request's;
    /// [`Error::InvalidInput`] when a payload must spill and `payload_dir`
    /// does not exist or is not a folder (it is never created);
    /// [`Error::Io`] if the payload file cannot be written; database errors.
    pub async fn submit(&self, job: &NewJob) -> Result<Submitted> {
        check_name("job kind", &job.kind)?;
        check_name("key id", &job.key_id)?;
        if let Some(r) = &job.request_id {
            check_name("request id", r)?;
        }
        let max_attempts = job.max_attempts.unwrap_or(self.config.default_max_attempts);
        if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
            return Err(Error::InvalidInput(format!(
                "max attempts {max_attempts} is outside 1..={MAX_ATTEMPTS}"
            )));
        }
        let min_mem = to_i64("device memory", job.min_device_memory)?;
        let min_host = to_i64("host memory", job.min_host_memory)?;
        let len = job.payload.len() as u64;
        if len > self.config.max_payload {
            return Err(Error::PayloadTooLarge {
                len,
                limit: self.config.max_payload,
                hint: "",
            });
        }
        let payload_digest: Vec<u8> = Sha256::digest(&job.payload).to_vec();
        let request_digest = request_digest(job, max_attempts, &payload_digest);
        let (inline, path): (Option<&[u8]>, Option<String>) =
            if len <= self.config.inline_payload_max {
                (Some(&job.payload), None)
            } else {
                let Some(dir) = &self.config.payload_dir else {
                    return Err(Error::PayloadTooLarge {
                        len,
                        limit: self.config.inline_payload_max,
                        hint: " (set a payload folder to store larger payloads outside the row)",
                    });
                };
                let path = payload::spill(dir.clone(), job.payload.clone(), payload_digest.clone())
                    .await?;
                (None, Some(path))
            };
        let len_i64 = to_i64("payload length", len)?;
        let affinity = secs(self.config.affinity_wait);
        let mut s = self.session().await?;
        // Twice: a conflicting row seen by the insert may be gone (deleted)
        // by the time it is read.
        for _ in 0..2 {
            let row = s
                .query_opt(
                    SQL_SUBMIT,
                    &[
                        &job.request_id,
                        &request_digest,
                        &job.kind,
                        &job.key_id,
                        &job.priority,
                        &min_mem,
                        &inline,
                        &path,
                        &len_i64,
                        &payload_digest,
                        &max_attempts,
                        &affinity,
                        &min_host,
                    ],
                )
                .await?;
            if let Some(row) = row {
                return Ok(Submitted {
                    id: get(&row, 0)?,
                    created: true,
                });
            }
            let Some(request_id) = &job.request_id else {
                break;
            };
            if let Some(row) = s.query_opt(SQL_BY_REQUEST, &[request_id]).await? {
                let id: i64 = get(&row, 0)?;
                let digest: Vec<u8> = get(&row, 1)?;
                if digest == request_digest {
                    return Ok(Submitted { id, created: false });
                }
                return Err(Error::RequestIdConflict {
                    request_id: request_id.clone(),
                    job_id: id,
                });
            }
        }
        Err(Error::InvalidInput(
            "the job was neither inserted nor found; retry".into(),
        ))
    }

    /// Registers (or re-registers) a node and releases the jobs a previous
    /// incarnation with the same id still held (back to the queue, or failed
    /// if out of attempts). Returns how many were released.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for empty or bad names; database errors.
    pub async fn register(&self, node: &NodeInfo) -> Result<u64> {
        check_node(node)?;
        let mem = to_i64("device memory", node.device_memory)?;
        let host = to_i64("host memory", node.host_memory)?;
        let mut s = self.session().await?;
        s.query(
            SQL_REGISTER,
            &[
                &node.id,
                &node.backend,
                &node.devices,
                &mem,
                &node.kinds,
                &node.runnable_keys,
                &node.resident_keys,
                &host,
            ],
        )
        .await?;
        let released = s.query(SQL_RELEASE_ORPHANS, &[&node.id]).await?.len() as u64;
        if released > 0 {
            tracing::info!(node = %node.id, released, "released jobs of the node's previous run");
        }
        Ok(released)
    }

    /// Records that `node` is alive (and its resident keys now), and renews
    /// the leases it names. Returns the job ids whose leases were renewed: a
    /// lease missing from it was lost (cancelled, or expired and taken back)
    /// and its work should stop.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for bad names; database errors.
    pub async fn heartbeat(&self, node: &NodeInfo, leases: &[Lease]) -> Result<Vec<i64>> {
        check_node(node)?;
        let mem = to_i64("device memory", node.device_memory)?;
        let host = to_i64("host memory", node.host_memory)?;
        let ids: Vec<i64> = leases.iter().map(|l| l.job_id).collect();
        let attempts: Vec<i32> = leases.iter().map(|l| l.attempt).collect();
        let lease = secs(self.config.lease);
        let mut s = self.session().await?;
        let rows = s
            .query(
                SQL_HEARTBEAT,
                &[
                    &node.id,
                    &node.backend,
                    &node.devices,
                    &mem,
                    &node.kinds,
                    &node.runnable_keys,
                    &node.resident_keys,
                    &ids,
                    &attempts,
                    &lease,
                    &host,
                ],
            )
            .await?;
        rows.iter().map(|r| get(r, 0)).collect()
    }

    /// Takes the highest-priority, oldest queued job this node can run (its
    /// kinds, keys, device and host memory), respecting affinity, and
    /// leases it to the node for `config.lease`. `None` when there is
    /// nothing for it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for bad names; database errors; a payload
    /// path that is not a valid path ([`Error::Database`] cannot happen for
    /// it: the row is returned as written).
    pub async fn claim(&self, node: &NodeInfo) -> Result<Option<ClaimedJob>> {
        check_node(node)?;
        let mem = to_i64("device memory", node.device_memory)?;
        let host = to_i64("host memory", node.host_memory)?;
        let lease = secs(self.config.lease);
        let mut s = self.session().await?;
        let Some(row) = s
            .query_opt(
                SQL_CLAIM,
                &[
                    &node.id,
                    &node.kinds,
                    &node.runnable_keys,
                    &mem,
                    &node.resident_keys,
                    &lease,
                    &host,
                ],
            )
            .await?
        else {
            return Ok(None);
        };
        drop(s);
        let inline: Option<Vec<u8>> = get(&row, 7)?;
        let path: Option<String> = get(&row, 8)?;
        let len: i64 = get(&row, 9)?;
        let payload = match (inline, path) {
            (_, Some(p)) => Payload::File {
                path: PathBuf::from(p),
                len: to_u64(len),
            },
            (Some(b), None) => Payload::Inline(b),
            (None, None) => Payload::Inline(Vec::new()),
        };
        Ok(Some(ClaimedJob {
            id: get(&row, 0)?,
            kind: get(&row, 1)?,
            key_id: get(&row, 2)?,
            priority: get(&row, 3)?,
            attempt: get(&row, 4)?,
            max_attempts: get(&row, 5)?,
            min_device_memory: to_u64(get(&row, 6)?),
            min_host_memory: to_u64(get(&row, 11)?),
            payload,
            payload_digest: get(&row, 10)?,
        }))
    }

    /// Writes a job's result and timings and marks it succeeded, in one
    /// statement that first checks `lease` is still `node_id`'s current
    /// claim. A job is therefore completed at most once.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] if the lease is stale (nothing is written);
    /// database errors (then it is unknown whether it committed: retrying
    /// is safe, a second write finds the lease gone and returns `LeaseLost`).
    pub async fn complete(
        &self,
        node_id: &str,
        lease: Lease,
        result: &[u8],
        timings: &serde_json::Value,
    ) -> Result<()> {
        let mut s = self.session().await?;
        let rows = s
            .query(
                SQL_COMPLETE,
                &[&lease.job_id, &node_id, &lease.attempt, &result, timings],
            )
            .await?;
        if rows.is_empty() {
            return Err(Error::LeaseLost {
                job_id: lease.job_id,
            });
        }
        Ok(())
    }

    /// Records a failed attempt. `retryable` failures go back to the queue
    /// while attempts remain; others (and the last attempt) fail the job
    /// with `message`.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] if the lease is stale; database errors.
    pub async fn fail(
        &self,
        node_id: &str,
        lease: Lease,
        message: &str,
        retryable: bool,
    ) -> Result<FailOutcome> {
        let message = clean_message(message);
        let mut s = self.session().await?;
        let Some(row) = s
            .query_opt(
                SQL_FAIL,
                &[
                    &lease.job_id,
                    &node_id,
                    &lease.attempt,
                    &retryable,
                    &message,
                ],
            )
            .await?
        else {
            return Err(Error::LeaseLost {
                job_id: lease.job_id,
            });
        };
        let state: String = get(&row, 0)?;
        Ok(if state == "queued" {
            FailOutcome::Requeued
        } else {
            FailOutcome::Failed
        })
    }

    /// Gives a leased job back without counting the attempt (a node shutting
    /// down before finishing it).
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] if the lease is stale; database errors.
    pub async fn release(&self, node_id: &str, lease: Lease) -> Result<()> {
        let mut s = self.session().await?;
        let rows = s
            .query(SQL_RELEASE, &[&lease.job_id, &node_id, &lease.attempt])
            .await?;
        if rows.is_empty() {
            return Err(Error::LeaseLost {
                job_id: lease.job_id,
            });
        }
        Ok(())
    }

    /// Ends a queued or running job as cancelled. Returns `false` if it had
    /// already ended. A node running it loses its lease at its next
    /// heartbeat.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for an unknown id; database errors.
    pub async fn cancel(&self, job_id: i64, reason: &str) -> Result<bool> {
        let reason = clean_message(if reason.is_empty() {
            "cancelled"
        } else {
            reason
        });
        let mut s = self.session().await?;
        if !s.query(SQL_CANCEL, &[&job_id, &reason]).await?.is_empty() {
            return Ok(true);
        }
        drop(s);
        self.job(job_id).await.map(|_| false)
    }

    /// One housekeeping pass, run by every node at each heartbeat (running it
    /// twice at once is harmless): jobs whose lease expired go back to the
    /// queue (or fail when out of attempts), and queued jobs that no node
    /// seen within `unrunnable_wait` can run, and that waited that long,
    /// fail with the reason.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn maintain(&self) -> Result<Maintenance> {
        let wait = secs(self.config.unrunnable_wait);
        let mut s = self.session().await?;
        let mut m = Maintenance::default();
        for row in s.query(SQL_EXPIRE, &[]).await? {
            let state: String = get(&row, 0)?;
            if state == "queued" {
                m.requeued += 1;
            } else {
                m.expired_failed += 1;
            }
        }
        m.unrunnable_failed = s.query(SQL_UNRUNNABLE, &[&wait]).await?.len() as u64;
        if m != Maintenance::default() {
            tracing::info!(?m, "queue maintenance");
        }
        Ok(m)
    }

    /// A job as stored now.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for an unknown id; database errors.
    pub async fn job(&self, job_id: i64) -> Result<JobRecord> {
        let mut s = self.session().await?;
        let Some(row) = s.query_opt(SQL_JOB, &[&job_id]).await? else {
            return Err(Error::NotFound(job_id));
        };
        drop(s);
        let state: String = get(&row, 5)?;
        let state = JobState::parse(&state)
            .ok_or_else(|| Error::Schema(format!("job {job_id} has unknown state {state:?}")))?;
        Ok(JobRecord {
            id: get(&row, 0)?,
            request_id: get(&row, 1)?,
            kind: get(&row, 2)?,
            key_id: get(&row, 3)?,
            priority: get(&row, 4)?,
            state,
            attempts: get(&row, 6)?,
            max_attempts: get(&row, 7)?,
            lease_owner: get(&row, 8)?,
            result: get(&row, 9)?,
            timings: get(&row, 10)?,
            error: get(&row, 11)?,
        })
    }

    /// Waits until the job ends and returns it. Woken by `NOTIFY`; polls
    /// every `poll_interval` as a fallback and keeps waiting through
    /// database outages, however long.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] if it has not ended within `timeout`;
    /// [`Error::NotFound`] for an unknown id; non-transient database errors.
    pub async fn await_job(&self, job_id: i64, timeout: Duration) -> Result<JobRecord> {
        self.await_job_with(job_id, timeout, None, |_| {}).await
    }

    /// [`Queue::await_job`] for a client that must not wait on a database
    /// that is gone: through an outage it retries with backoff (50 ms up to
    /// `max_backoff`), tells `report` once when the database is lost and
    /// once when it is back, and gives up once it has had no answer for
    /// `max_outage` (`None`: never).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] after `max_outage` without the database (the
    /// message says how long and the last error); [`Error::Timeout`] if the
    /// job has not ended within `timeout`; [`Error::NotFound`] for an
    /// unknown id; non-transient database errors.
    pub async fn await_job_with(
        &self,
        job_id: i64,
        timeout: Duration,
        max_outage: Option<Duration>,
        mut report: impl FnMut(WaitEvent<'_>),
    ) -> Result<JobRecord> {
        use tokio::time::Instant;
        let mut done = self.subscribe_done();
        let deadline = Instant::now() + timeout;
        let mut backoff = Backoff::new(Duration::from_millis(50), self.config.max_backoff);
        // Since when the database has not answered, and its last error.
        let mut outage: Option<(Instant, String)> = None;
        loop {
            let asked = Instant::now();
            let since = outage.as_ref().map_or(asked, |(t, _)| *t);
            let give_up = max_outage.map(|m| since + m);
            // A check that hangs (a dead peer, no reset) counts as no answer.
            let limit = give_up.map_or(deadline, |g| g.min(deadline));
            let checked = tokio::time::timeout_at(limit, self.job(job_id)).await;
            let hung = checked.is_err();
            let lost = match checked {
                Ok(Ok(r)) => {
                    if let Some((t, _)) = outage.take() {
                        report(WaitEvent::Restored { after: t.elapsed() });
                    }
                    backoff.reset();
                    if r.state.is_terminal() {
                        return Ok(r);
                    }
                    None
                }
                // A conflict, not an outage: polled again as usual.
                Ok(Err(Error::Busy(_))) => None,
                Ok(Err(e @ Error::Unavailable(_))) => Some(e),
                Ok(Err(e)) => return Err(e),
                Err(_) if Instant::now() >= deadline => return Err(Error::Timeout(job_id)),
                Err(_) => Some(Error::Unavailable(format!(
                    "no answer within {:.1} s",
                    asked.elapsed().as_secs_f64()
                ))),
            };
            if let Some(e) = lost {
                if outage.is_none() {
                    report(WaitEvent::Lost(&e));
                }
                let (since, last) = outage.get_or_insert_with(|| (asked, String::new()));
                // A check cut short keeps the error before it, which says more.
                if let Error::Unavailable(m) = e
                    && (!hung || last.is_empty())
                {
                    *last = m;
                }
                if let Some(m) = max_outage
                    && since.elapsed() >= m
                {
                    return Err(Error::Unavailable(format!(
                        "no answer for {:.1} s while waiting for job {job_id}; giving up \
                         (last error: {last})",
                        since.elapsed().as_secs_f64()
                    )));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout(job_id));
            }
            let mut wake = match &outage {
                Some(_) => now + backoff.next_delay(),
                None => now + self.config.poll_interval,
            }
            .min(deadline);
            if let (Some((since, _)), Some(m)) = (&outage, max_outage) {
                wake = wake.min(*since + m);
            }
            loop {
                tokio::select! {
                    r = done.recv() => match r {
                        Ok(id) if id == job_id || id < 0 => break,
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => {
                            tokio::time::sleep_until(wake).await;
                            break;
                        }
                    },
                    () = tokio::time::sleep_until(wake) => break,
                }
            }
        }
    }

    /// Nodes, queue depth per priority, running jobs and the last minute's
    /// throughput.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn status(&self) -> Result<Status> {
        let lease = self.config.lease;
        let mut s = self.session().await?;
        let node_rows = s.query(SQL_STATUS_NODES, &[]).await?;
        let depth_rows = s.query(SQL_STATUS_DEPTH, &[]).await?;
        let counts = s.query(SQL_STATUS_COUNTS, &[]).await?;
        drop(s);
        let mut nodes = Vec::with_capacity(node_rows.len());
        for r in &node_rows {
            let age = Duration::from_secs_f64(get::<f64>(r, 6)?.clamp(0.0, 1e12));
            nodes.push(NodeStatus {
                id: get(r, 0)?,
                backend: get(r, 1)?,
                devices: get(r, 2)?,
                device_memory: to_u64(get(r, 3)?),
                host_memory: to_u64(get(r, 8)?),
                kinds: get(r, 4)?,
                resident_keys: get(r, 5)?,
                heartbeat_age: age,
                live: age < lease,
                running: get(r, 7)?,
            });
        }
        let queued_by_priority = depth_rows
            .iter()
            .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
            .collect::<Result<_>>()?;
        let Some(c) = counts.first() else {
            return Err(Error::Schema("status counts returned no row".into()));
        };
        Ok(Status {
            nodes,
            queued_by_priority,
            running: get(c, 0)?,
            succeeded_last_minute: get(c, 1)?,
            failed_last_minute: get(c, 2)?,
        })
    }

    /// A receiver bumped whenever a job may have become claimable (starts
    /// the listening connection on first use).
    #[must_use]
    pub fn subscribe_queued(&self) -> watch::Receiver<u64> {
        self.start_listener();
        self.events.queued.subscribe()
    }

    fn subscribe_done(&self) -> broadcast::Receiver<i64> {
        self.start_listener();
        self.events.done.subscribe()
    }

    fn start_listener(&self) {
        let Ok(mut slot) = self.listener.lock() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let (stop_tx, stop_rx) = oneshot::channel();
        *slot = Some(stop_tx);
        tokio::spawn(listen(
            self.pg.clone(),
            self.tls.clone(),
            Arc::clone(&self.events),
            self.config.max_backoff,
            stop_rx,
        ));
    }
}

fn check_config(c: &QueueConfig) -> Result<()> {
    let positive = [
        ("lease", c.lease),
        ("poll interval", c.poll_interval),
        ("connect timeout", c.connect_timeout),
        ("max backoff", c.max_backoff),
    ];
    for (what, d) in positive {
        if d.is_zero() {
            return Err(Error::InvalidInput(format!("{what} must be above zero")));
        }
    }
    if !(1..=MAX_ATTEMPTS).contains(&c.default_max_attempts) {
        return Err(Error::InvalidInput(format!(
            "default max attempts {} is outside 1..={MAX_ATTEMPTS}",
            c.default_max_attempts
        )));
    }
    if let Some(dir) = &c.payload_dir
        && dir.to_str().is_none()
    {
        return Err(Error::InvalidInput(format!(
            "payload folder {} is not valid UTF-8",
            dir.display()
        )));
    }
    Ok(())
}

/// SHA-256 over every field that makes a request what it is.
fn request_digest(job: &NewJob, max_attempts: i32, payload_digest: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    for part in [job.kind.as_bytes(), job.key_id.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(job.priority.to_le_bytes());
    h.update(job.min_device_memory.to_le_bytes());
    // Only when set: a job without it keeps the digest it had before the
    // field existed, so a retry across an upgrade is not a conflict.
    if job.min_host_memory != 0 {
        h.update(b"host");
        h.update(job.min_host_memory.to_le_bytes());
    }
    h.update(max_attempts.to_le_bytes());
    h.update(payload_digest);
    h.finalize().to_vec()
}

/// The listening connection: `LISTEN`s, forwards notifications to
/// [`Events`], and reconnects with backoff; every reconnect tells waiters
/// that notifications may have been missed.
async fn listen(
    pg: tokio_postgres::Config,
    tls: Tls,
    events: Arc<Events>,
    max_backoff: Duration,
    mut stop: oneshot::Receiver<()>,
) {
    let mut backoff = Backoff::new(Duration::from_millis(50), max_backoff);
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            r = pg.connect(tls.clone()) => r,
        };
        match connected {
            Err(e) => tracing::debug!("queue listener: cannot connect: {e}"),
            Ok((client, mut connection)) => {
                let mut listen = std::pin::pin!(
                    client.batch_execute("LISTEN zkpipe_queued; LISTEN zkpipe_done")
                );
                let mut listening = false;
                loop {
                    tokio::select! {
                        _ = &mut stop => return,
                        r = &mut listen, if !listening => match r {
                            Ok(()) => {
                                listening = true;
                                backoff.reset();
                                events.missed();
                            }
                            Err(e) => {
                                tracing::debug!("queue listener: LISTEN failed: {e}");
                                break;
                            }
                        },
                        m = std::future::poll_fn(|cx| connection.poll_message(cx)) => match m {
                            Some(Ok(AsyncMessage::Notification(n))) => match n.channel() {
                                "zkpipe_queued" => events
                                    .queued
                                    .send_modify(|v| *v = v.wrapping_add(1)),
                                "zkpipe_done" => {
                                    if let Ok(id) = n.payload().parse::<i64>() {
                                        let _ = events.done.send(id);
                                    }
                                }
                                _ => {}
                            },
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                tracing::debug!("queue listener: connection lost: {e}");
                                break;
                            }
                            None => break,
                        },
                    }
                }
                events.missed();
            }
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("key id", "").is_err());
        assert!(check_name("key id", "a\0b").is_err());
        assert!(check_name("key id", &"x".repeat(300)).is_err());
        assert!(check_name("key id", "sha256-1").is_ok());
    }

    #[test]
    fn bad_urls_are_refused() {
        let c = QueueConfig::default();
        assert!(matches!(
            Queue::new("mysql://h/db", c.clone()),
            Err(Error::InvalidUrl(_))
        ));
        assert!(matches!(
            Queue::new("postgres://h:notaport/db", c.clone()),
            Err(Error::InvalidUrl(_))
        ));
        assert!(Queue::new("postgres://u@localhost:5432/db", c).is_ok());
    }

    #[test]
    fn bad_urls_are_refused_without_their_password() {
        for (url, secret) in [
            ("postgres://u:pa/ss@h:notaport/db", "ss"),
            ("postgres://u:pa?ss@h:notaport/db?x=1", "pa?ss"),
            ("postgres://u@h:notaport/db?password=hunter2", "hunter2"),
            ("mysql://u:hunter2@h/db", "hunter2"),
        ] {
            let e = Queue::new(url, QueueConfig::default()).unwrap_err();
            assert!(matches!(e, Error::InvalidUrl(_)), "{url}: {e}");
            assert!(!e.to_string().contains(secret), "{url}: {e}");
        }
    }

    #[test]
    fn a_url_without_a_password_takes_pgpassword() {
        let c = QueueConfig::default();
        let env = Some(b"from env".as_slice());
        let q = Queue::with_env_password("postgres://u@h/db", c.clone(), env).unwrap();
        assert_eq!(q.pg.get_password(), Some(b"from env".as_slice()));
        // The handle's Debug hides it.
        assert!(!format!("{q:?}").contains("from env"));
        let q = Queue::with_env_password("postgres://u:mine@h/db", c.clone(), env).unwrap();
        assert_eq!(q.pg.get_password(), Some(b"mine".as_slice()));
        let q = Queue::with_env_password("postgres://u@h/db", c, None).unwrap();
        assert_eq!(q.pg.get_password(), None);
    }

    #[test]
    fn messages_are_bounded() {
        let m = clean_message(&"é".repeat(10_000));
        assert!(m.len() <= MAX_ERROR_LEN);
        assert_eq!(clean_message("a\0b"), "ab");
    }
}
