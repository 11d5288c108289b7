//! Versioned migrations: an ordered list of SQL scripts and a
//! `zkpipe_schema_version` table recording which ran.
//!
//! Migrations are append-only: a released script is never edited; a change
//! is a new version. `migrate` takes a transaction-scoped advisory lock, so
//! nodes starting together apply each script once, and refuses a database
//! whose schema is newer than this build.

use tokio_postgres::Client;

use crate::error::{Error, Result};

/// One schema version: its number, a name, and the SQL that brings the
/// previous version to it.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version this script produces (1, 2, …, no gaps).
    pub version: i32,
    /// A short name, recorded in `zkpipe_schema_version`.
    pub name: &'static str,
    /// The script (several statements).
    pub sql: &'static str,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "jobs, nodes, claim indexes, notify trigger",
        sql: V1,
    },
    Migration {
        version: 2,
        name: "host memory of nodes and jobs",
        sql: V2,
    },
];

/// The schema version this build writes and expects.
#[must_use]
pub fn latest_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Key of the advisory lock that serializes migrations ("zkpipe" + 1).
const MIGRATION_LOCK: i64 = 0x7a6b_7069_7065_0001;

const V1: &str = r#"
CREATE TABLE nodes (
    id             text PRIMARY KEY CHECK (id <> ''),
    backend        text NOT NULL,
    devices        jsonb NOT NULL DEFAULT '[]',
    -- Device memory of the node's largest device, bytes: a job asking for
    -- more is not offered to it.
    device_memory  bigint NOT NULL DEFAULT 0,
    -- Job kinds it runs; keys it can load (NULL: any key); keys loaded now.
    kinds          text[] NOT NULL DEFAULT '{}',
    runnable_keys  text[],
    resident_keys  text[] NOT NULL DEFAULT '{}',
    heartbeat      timestamptz NOT NULL DEFAULT now(),
    started        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id                bigserial PRIMARY KEY,
    request_id        text UNIQUE,
    -- SHA-256 over kind, key, priority, memory, attempts and payload: the
    -- same request id with another digest is a conflict.
    request_digest    bytea NOT NULL,
    kind              text NOT NULL CHECK (kind <> ''),
    key_id            text NOT NULL CHECK (key_id <> ''),
    priority          smallint NOT NULL DEFAULT 0,
    min_device_memory bigint NOT NULL DEFAULT 0 CHECK (min_device_memory >= 0),
    payload           bytea,
    payload_path      text,
    payload_len       bigint NOT NULL DEFAULT 0,
    payload_digest    bytea NOT NULL,
    state             text NOT NULL DEFAULT 'queued'
                      CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    -- Claims so far; the lease generation: a result is accepted only from
    -- the owner of the current attempt.
    attempts          int NOT NULL DEFAULT 0,
    max_attempts      int NOT NULL CHECK (max_attempts >= 1),
    lease_owner       text,
    lease_expires     timestamptz,
    created           timestamptz NOT NULL DEFAULT now(),
    -- Not claimable before (set on submit and on every requeue).
    not_before        timestamptz NOT NULL DEFAULT now(),
    -- Until then, a job whose key is resident on a live node is offered
    -- only to such nodes.
    affinity_until    timestamptz NOT NULL DEFAULT now(),
    started           timestamptz,
    finished          timestamptz,
    result            bytea,
    timings           jsonb,
    error             text,
    CHECK (payload IS NULL OR payload_path IS NULL),
    CHECK ((state = 'running') = (lease_owner IS NOT NULL))
);

-- The claim walks queued jobs by priority, then age.
CREATE INDEX jobs_claim ON jobs (priority DESC, id) WHERE state = 'queued';
-- The reaper looks for expired leases.
CREATE INDEX jobs_leases ON jobs (lease_expires) WHERE state = 'running';
-- Heartbeats renew a node's leases.
CREATE INDEX jobs_owner ON jobs (lease_owner) WHERE state = 'running';
-- Status: jobs done in the last minute.
CREATE INDEX jobs_finished ON jobs (finished) WHERE finished IS NOT NULL;

-- Wake idle nodes when a job becomes claimable, and waiters when a job
-- ends. NOTIFY is delivered at commit; equal payloads in one transaction
-- are sent once.
CREATE FUNCTION zkpipe_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'queued' AND (TG_OP = 'INSERT' OR OLD.state <> 'queued') THEN
        PERFORM pg_notify('zkpipe_queued', '');
    ELSIF NEW.state IN ('succeeded', 'failed', 'cancelled')
          AND (TG_OP = 'INSERT' OR OLD.state IN ('queued', 'running')) THEN
        PERFORM pg_notify('zkpipe_done', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION zkpipe_jobs_notify();
"#;

// A constant default: PostgreSQL adds the columns without rewriting the
// tables. Rows from before read 0: a job any node may run, a node that has
// not said (a node of an older build still running: it may take any job).
const V2: &str = r#"
-- The node's host memory budget, bytes (0: not published): a job asking
-- for more is not offered to it.
ALTER TABLE nodes ADD COLUMN host_memory bigint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN min_host_memory bigint NOT NULL DEFAULT 0
    CHECK (min_host_memory >= 0);
"#;

/// Brings the database to [`latest_version`], applying missing scripts in
/// one transaction. Returns the versions applied (empty if up to date).
///
/// # Errors
///
/// [`Error::Schema`] if the database is at a newer version than this build;
/// [`Error::Unavailable`] / [`Error::Database`] if a statement fails (the
/// transaction is rolled back: nothing is half-applied).
pub(crate) async fn migrate(client: &mut Client) -> Result<Vec<i32>> {
    let tx = client.transaction().await.map_err(Error::from_pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(Error::from_pg)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS zkpipe_schema_version (
             version int PRIMARY KEY,
             name text NOT NULL,
             applied timestamptz NOT NULL DEFAULT now())",
    )
    .await
    .map_err(Error::from_pg)?;
    let row = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM zkpipe_schema_version",
            &[],
        )
        .await
        .map_err(Error::from_pg)?;
    let current: i32 = row.try_get(0).map_err(Error::from_pg)?;
    let latest = latest_version();
    if current > latest {
        return Err(Error::Schema(format!(
            "the database is at schema version {current}, newer than this build's {latest}; \
             upgrade zkpipe"
        )));
    }
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(m.sql).await.map_err(Error::from_pg)?;
        tx.execute(
            "INSERT INTO zkpipe_schema_version (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(Error::from_pg)?;
        applied.push(m.version);
    }
    tx.commit().await.map_err(Error::from_pg)?;
    if !applied.is_empty() {
        tracing::info!(?applied, "queue schema migrated to version {latest}");
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i32 + 1, "{}", m.name);
        }
    }
}
