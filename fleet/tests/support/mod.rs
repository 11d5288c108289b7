//! Shared by the fleet tests: a throwaway cluster, short timings, simulated
//! nodes doing fake proofs, and a count of completions kept by the database.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use zkpipe_fleet::testing::TestPostgres;
use zkpipe_fleet::{
    ClaimedJob, JobFailure, JobOutput, NodeInfo, NodeOptions, Queue, QueueConfig, run_node,
};

/// A cluster, or `None` (test skipped, reason printed).
pub fn postgres() -> Option<TestPostgres> {
    TestPostgres::start_or_skip()
}

/// Timings short enough for tests: 1.5 s leases.
pub fn config() -> QueueConfig {
    QueueConfig {
        lease: Duration::from_millis(1500),
        affinity_wait: Duration::from_secs(1),
        unrunnable_wait: Duration::from_secs(1),
        poll_interval: Duration::from_millis(500),
        connect_timeout: Duration::from_secs(2),
        max_backoff: Duration::from_millis(400),
        ..QueueConfig::default()
    }
}

pub async fn queue(pg: &TestPostgres) -> Arc<Queue> {
    let q = Queue::connect(&pg.url(), config()).await.expect("connect");
    q.migrate().await.expect("migrate");
    Arc::new(q)
}

/// A CPU node that runs `groth16` jobs for any key.
pub fn node(id: &str) -> NodeInfo {
    NodeInfo {
        id: id.to_owned(),
        backend: "cpu".to_owned(),
        devices: serde_json::json!([{ "name": "fake", "memory": 1u64 << 30 }]),
        device_memory: 1 << 30,
        host_memory: 16 << 30,
        kinds: vec!["groth16".to_owned()],
        runnable_keys: None,
        resident_keys: vec![],
    }
}

/// The fake proof of a payload.
pub fn fake_proof(payload: &[u8]) -> Vec<u8> {
    Sha256::digest(payload).to_vec()
}

/// Counts every transition to `succeeded` in a side table: the database's
/// own record of how many times each job was completed.
pub async fn count_completions(pg: &TestPostgres) {
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE completions (job_id bigint NOT NULL, at timestamptz DEFAULT now());
             CREATE FUNCTION count_completion() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN INSERT INTO completions (job_id) VALUES (NEW.id); RETURN NULL; END $$;
             CREATE TRIGGER count_completion AFTER UPDATE OF state ON jobs FOR EACH ROW
                 WHEN (NEW.state = 'succeeded' AND OLD.state <> 'succeeded')
                 EXECUTE FUNCTION count_completion();",
        )
        .await
        .expect("completion counter");
}

/// (jobs completed once, jobs completed more than once, completions in all).
pub async fn completions(pg: &TestPostgres) -> (i64, i64, i64) {
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE n = 1), count(*) FILTER (WHERE n > 1),
                    coalesce(sum(n), 0)::int8
             FROM (SELECT job_id, count(*) AS n FROM completions GROUP BY job_id) c",
            &[],
        )
        .await
        .expect("count");
    (row.get(0), row.get(1), row.get(2))
}

/// A running simulated node: its task (abort it to "kill -9" the node) and
/// a switch for a clean shutdown.
pub struct SimNode {
    pub task: JoinHandle<zkpipe_fleet::Result<()>>,
    pub stop: Option<oneshot::Sender<()>>,
}

impl SimNode {
    pub async fn shutdown(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.expect("node task").expect("node");
    }
}

/// Starts a node on its own `Queue` whose fake proof takes `work` and
/// returns the payload's SHA-256, with the node and attempt in the timings.
pub fn spawn_node(url: &str, info: NodeInfo, work: Duration, concurrency: usize) -> SimNode {
    let queue = Arc::new(Queue::new(url, config()).expect("queue"));
    let id = info.id.clone();
    let runner = Arc::new(move |job: ClaimedJob| {
        let id = id.clone();
        async move {
            let payload = job.payload_bytes().await.map_err(|e| JobFailure {
                message: e.to_string(),
                retryable: true,
            })?;
            tokio::time::sleep(work).await;
            Ok(JobOutput {
                result: fake_proof(&payload),
                timings: serde_json::json!({ "node": id, "attempt": job.attempt }),
            })
        }
    });
    let (stop_tx, stop_rx) = oneshot::channel();
    let options = NodeOptions {
        concurrency,
        release_on_shutdown: true,
    };
    let task = tokio::spawn(run_node(queue, info, runner, options, async {
        let _ = stop_rx.await;
    }));
    SimNode {
        task,
        stop: Some(stop_tx),
    }
}
