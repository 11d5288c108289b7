//! Claim throughput of the fleet queue: N simulated nodes (each its own
//! `Queue`, i.e. two connections, running `run_node` with a runner that
//! returns a 192-byte "proof" at once) against one throwaway PostgreSQL.
//!
//! ```sh
//! cargo run --manifest-path fleet/Cargo.toml --features testing --example claim_bench -- [NODES] [JOBS]
//! ```
//!
//! Two phases: a backlog (all jobs queued before the nodes start), then a
//! stream (jobs submitted by 4 clients while the nodes wait on NOTIFY).
//! Prints jobs/s claimed and completed, statements per job as the nodes
//! count them, and transactions per job as PostgreSQL counts them over both phases
//! (`pg_stat_database.xact_commit`, everything included).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use zkpipe_fleet::testing::TestPostgres;
use zkpipe_fleet::{
    ClaimedJob, JobFailure, JobOutput, NewJob, NodeInfo, NodeOptions, Queue, QueueConfig, run_node,
};

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    match client.query_one(sql, &[]).await {
        Ok(row) => row.try_get(0).unwrap_or(-1),
        Err(e) => {
            eprintln!("{sql}: {e}");
            -1
        }
    }
}

async fn xacts(client: &tokio_postgres::Client) -> i64 {
    // Statistics are flushed by backends now and then; ask for a fresh view.
    let _ = client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await;
    count(
        client,
        "SELECT (xact_commit + xact_rollback)::int8 FROM pg_stat_database \
         WHERE datname = current_database()",
    )
    .await
}

async fn wait_done(client: &tokio_postgres::Client, target: i64) {
    loop {
        let done = count(
            client,
            "SELECT count(*) FROM jobs WHERE state = 'succeeded'",
        )
        .await;
        if done >= target {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn statements(queues: &[Arc<Queue>]) -> u64 {
    queues.iter().map(|q| q.statements_sent()).sum()
}

fn report(phase: &str, jobs: usize, elapsed: Duration, stmts: u64) {
    println!(
        "{phase}: {jobs} jobs in {:.2} s = {:.0} jobs/s claimed and completed; \
         {:.2} statements/job from the nodes",
        elapsed.as_secs_f64(),
        jobs as f64 / elapsed.as_secs_f64(),
        stmts as f64 / jobs as f64,
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().map_or(Ok(64), |a| a.parse())?;
    let jobs: usize = args.next().map_or(Ok(4000), |a| a.parse())?;
    let pg = TestPostgres::start()?;
    let config = QueueConfig {
        lease: Duration::from_secs(30),
        ..QueueConfig::default()
    };
    let admin = Queue::connect(&pg.url(), config.clone()).await?;
    admin.migrate().await?;
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    let payload = vec![0x5a; 1024];
    println!("{nodes} nodes, {jobs} jobs per phase, 1 KiB payloads, 192-byte results");

    // Phase 1: backlog.
    let x0 = xacts(&client).await;
    for i in 0..jobs {
        let mut j = NewJob::new("groth16", "porep-32g", payload.clone());
        j.priority = (i % 4) as i16;
        admin.submit(&j).await?;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut queues = Vec::new();
    let mut tasks = Vec::new();
    let t0 = Instant::now();
    for n in 0..nodes {
        let q = Arc::new(Queue::new(&pg.url(), config.clone())?);
        queues.push(Arc::clone(&q));
        let info = NodeInfo {
            id: format!("node-{n:03}"),
            backend: "sim".into(),
            devices: serde_json::json!([{ "memory": 80u64 << 30 }]),
            device_memory: 80 << 30,
            host_memory: 512 << 30,
            kinds: vec!["groth16".into()],
            runnable_keys: None,
            resident_keys: vec!["porep-32g".into()],
        };
        let runner = Arc::new(|_job: ClaimedJob| async {
            Ok::<_, JobFailure>(JobOutput {
                result: vec![1; 192],
                timings: serde_json::json!({ "prove_ms": 0 }),
            })
        });
        let mut stop = stop_rx.clone();
        tasks.push(tokio::spawn(run_node(
            q,
            info,
            runner,
            NodeOptions::default(),
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
        )));
    }
    wait_done(&client, jobs as i64).await;
    let backlog = t0.elapsed();
    report("backlog", jobs, backlog, statements(&queues));

    // Phase 2: a stream from 4 clients while the nodes wait on NOTIFY.
    let s0 = statements(&queues);
    let t0 = Instant::now();
    let mut submitters = Vec::new();
    for c in 0..4 {
        let q = Queue::connect(&pg.url(), config.clone()).await?;
        let payload = payload.clone();
        submitters.push(tokio::spawn(async move {
            for i in (c..jobs).step_by(4) {
                let j = NewJob::new("groth16", "porep-32g", payload.clone());
                if let Err(e) = q.submit(&j).await {
                    eprintln!("submit {i}: {e}");
                }
            }
        }));
    }
    for s in submitters {
        s.await?;
    }
    let submitted = t0.elapsed();
    wait_done(&client, 2 * jobs as i64).await;
    let stream = t0.elapsed();
    println!(
        "stream: submitting took {:.2} s ({:.0} submits/s from 4 clients)",
        submitted.as_secs_f64(),
        jobs as f64 / submitted.as_secs_f64()
    );
    report("stream", jobs, stream, statements(&queues) - s0);

    // Backends report their statistics lazily; wait, then read the total.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "server: {:.2} transactions/job over both phases (pg_stat_database: submits, \
         claims, completes, heartbeats, housekeeping, this program's progress polls)",
        (xacts(&client).await - x0) as f64 / (2 * jobs) as f64
    );
    let _ = stop_tx.send(true);
    for t in tasks {
        t.await??;
    }
    Ok(())
}
