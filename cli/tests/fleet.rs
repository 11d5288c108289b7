//! A fleet for real: `zkpipe serve --queue` nodes as processes sharing a
//! throwaway PostgreSQL, jobs submitted through the queue, `zkpipe fleet`
//! and a node's gRPC API, one node killed with SIGKILL mid-run and
//! restarted. Every proof is verified again here with the key's verifying
//! key; a trigger counts completions per job in the database.
//!
//! Skipped (with a message) without PostgreSQL unless
//! `ZKPIPE_REQUIRE_POSTGRES=1`.

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use support::{pvk, verifies};
use zkpipe_daemon::client::{self, Address};
use zkpipe_daemon::fleet_jobs;
use zkpipe_daemon::proto::{self, JobState, Priority};
use zkpipe_fleet::testing::TestPostgres;
use zkpipe_fleet::{JobRecord, Queue, QueueConfig};

const CIRCUIT: &str = "squaring-chain";
const SIZE: &str = "512";

/// Short leases and waits, so that a dead node's jobs move on in seconds.
const QUEUE_SETTINGS: [&str; 10] = [
    "--set",
    "queue.lease_ms=2000",
    "--set",
    "queue.affinity_wait_ms=200",
    "--set",
    "queue.unrunnable_wait_ms=2000",
    "--set",
    "queue.poll_interval_ms=300",
    "--set",
    "queue.concurrency=2",
];

/// Keys shared by the nodes of every test here (set up on first use,
/// under a file lock).
fn shared_keys() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fleet-keys")
}

/// A `zkpipe serve --queue` process.
struct Node {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Node {
    fn start(url: &str, id: &str, extra: &[&str]) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("zkpipe.sock");
        let mut cmd = support::zkpipe_command();
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .arg("--keys-dir")
            .arg(shared_keys())
            .args(["--queue", url, "--node-id", id])
            .args(["--set", "logging.level=warn"])
            .args(QUEUE_SETTINGS)
            .args(extra);
        let (mut child, rx) = support::spawn_with_lines(cmd);
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(l) if l.starts_with("listening unix:") => break,
                Ok(_) => {}
                Err(_) => panic!("node {id} did not start: {:?}", child.try_wait()),
            }
        }
        Node {
            child,
            socket,
            _dir: dir,
        }
    }

    fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn request(seed: u64, priority: Priority, request_id: String) -> proto::SubmitRequest {
    proto::SubmitRequest {
        request_id,
        key: Some(proto::KeyId {
            circuit: CIRCUIT.into(),
            size: SIZE.into(),
        }),
        priority: priority as i32,
        partitions: 1,
        inputs: Some(proto::submit_request::Inputs::Builtin(
            proto::BuiltinInputs { seed },
        )),
    }
}

/// The test's own handle on the queue, and a trigger that records every
/// completion.
async fn test_queue(pg: &TestPostgres) -> Queue {
    let config = QueueConfig {
        lease: Duration::from_secs(2),
        poll_interval: Duration::from_millis(300),
        ..QueueConfig::default()
    };
    let queue = Queue::connect(&pg.url(), config).await.unwrap();
    queue.migrate().await.unwrap();
    sql(
        pg,
        "CREATE TABLE completions (job_id bigint NOT NULL);
         CREATE FUNCTION count_completion() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN INSERT INTO completions VALUES (NEW.id); RETURN NULL; END $$;
         CREATE TRIGGER count_completion AFTER UPDATE OF state ON jobs FOR EACH ROW
             WHEN (NEW.state = 'succeeded' AND OLD.state <> 'succeeded')
             EXECUTE FUNCTION count_completion();",
    )
    .await;
    queue
}

async fn sql(pg: &TestPostgres, statements: &str) -> Vec<tokio_postgres::SimpleQueryMessage> {
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client.simple_query(statements).await.unwrap()
}

/// The numbers in the rows of a one-column query.
async fn numbers(pg: &TestPostgres, query: &str) -> Vec<i64> {
    sql(pg, query)
        .await
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v.parse().unwrap()),
            _ => None,
        })
        .collect()
}

/// Checks a succeeded job: verified by the node, and its one proof verifies here.
fn check_succeeded(pvk: &zkpipe_core::groth16::PreparedVerifyingKey, r: &JobRecord) {
    let result = fleet_jobs::result_of(r);
    assert_eq!(
        JobState::try_from(result.state),
        Ok(JobState::Succeeded),
        "job {}: {:?}",
        r.id,
        r.error
    );
    assert!(result.verified, "job {}", r.id);
    assert_eq!(result.proofs.len(), 1);
    assert!(verifies(pvk, &result.proofs[0]), "job {}", r.id);
}

/// A throwaway database with the schema and the completion counter, a
/// runtime, and the test's queue handle; `None` (skipped) without PostgreSQL.
fn fleet_db() -> Option<(TestPostgres, tokio::runtime::Runtime, Queue)> {
    let pg = TestPostgres::start_or_skip()?;
    let rt = runtime();
    let queue = rt.block_on(test_queue(&pg));
    Some((pg, rt, queue))
}

fn zkpipe(args: &[&str]) -> std::process::Output {
    support::zkpipe_command().args(args).output().unwrap()
}

#[test]
fn three_nodes_prove_300_jobs_once_through_a_kill_9_and_a_rejoin() {
    let Some((pg, rt, queue)) = fleet_db() else {
        return;
    };
    let url = pg.url();
    let t0 = Instant::now();

    // The first node sets the key up; `zkpipe fleet submit --wait` saves
    // the proof.
    let mut nodes: HashMap<&str, Node> = HashMap::new();
    nodes.insert("a", Node::start(&url, "a", &[]));
    let files = tempfile::tempdir().unwrap();
    let proof = files.path().join("p.proof");
    let public = files.path().join("p.json");
    let out = zkpipe(&[
        "fleet",
        "submit",
        "--queue",
        &url,
        "--circuit",
        CIRCUIT,
        "--size",
        SIZE,
        "--seed",
        "7",
        "--wait",
        "--out",
        proof.to_str().unwrap(),
        "--public-out",
        public.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::metadata(&proof).unwrap().len(), 192);
    let pvk = pvk(&shared_keys(), CIRCUIT, SIZE);
    nodes.insert("b", Node::start(&url, "b", &[]));
    nodes.insert("c", Node::start(&url, "c", &[]));
    let warm = t0.elapsed();

    // 300 jobs of mixed priorities.
    let n = 300u64;
    let priorities = [Priority::Low, Priority::Normal, Priority::High];
    let ids: Vec<i64> = rt.block_on(async {
        let mut ids = vec![];
        for i in 0..n {
            let req = request(1000 + i, priorities[(i % 3) as usize], format!("job-{i}"));
            let job = fleet_jobs::new_job(&req).unwrap();
            ids.push(queue.submit(&job).await.unwrap().id);
        }
        ids
    });

    // Kill b once the fleet is well into the batch; restart it after its
    // leases expired (so the others take its jobs).
    let succeeded =
        |pg: &TestPostgres| rt.block_on(numbers(pg, "SELECT count(*) FROM completions"))[0];
    while succeeded(&pg) < 30 {
        assert!(t0.elapsed() < Duration::from_secs(120), "too slow");
        std::thread::sleep(Duration::from_millis(50));
    }
    let held_by_b = rt.block_on(numbers(
        &pg,
        "SELECT id FROM jobs WHERE state = 'running' AND lease_owner = 'b'",
    ));
    nodes.get_mut("b").unwrap().kill_9();
    let killed_at = Instant::now();
    // Its leases expire and the others take its jobs back.
    while rt.block_on(numbers(
        &pg,
        "SELECT count(*) FROM jobs WHERE state = 'running' AND lease_owner = 'b'",
    ))[0]
        > 0
    {
        assert!(
            killed_at.elapsed() < Duration::from_secs(30),
            "b's leases stayed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = n as i64 - succeeded(&pg);
    let rejoined_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    nodes.insert("b", Node::start(&url, "b", &[]));

    // Meanwhile a node's gRPC API proves through the fleet too.
    let via_grpc = rt.block_on(async {
        let mut c = client::connect(&Address::Unix(nodes["c"].socket.clone()), None, 64 << 20)
            .await
            .unwrap();
        c.prove(request(5, Priority::Critical, String::new()))
            .await
            .unwrap()
            .into_inner()
    });
    assert_eq!(JobState::try_from(via_grpc.state), Ok(JobState::Succeeded));
    assert!(verifies(&pvk, &via_grpc.proofs[0]));

    let records: Vec<JobRecord> = rt.block_on(async {
        let mut out = vec![];
        for &id in &ids {
            out.push(queue.await_job(id, Duration::from_secs(120)).await.unwrap());
        }
        out
    });
    let wall = t0.elapsed();
    let mut by_node: HashMap<String, usize> = HashMap::new();
    let mut b_after_rejoin = 0;
    for r in &records {
        check_succeeded(&pvk, r);
        let t = r.timings.as_ref().unwrap();
        let node = t["node"].as_str().unwrap().to_string();
        if node == "b" && t["started_unix_ms"].as_u64().unwrap() >= rejoined_ms {
            b_after_rejoin += 1;
        }
        *by_node.entry(node).or_default() += 1;
    }
    // The jobs b held when it died were retried, by the others.
    for id in &held_by_b {
        let r = records.iter().find(|r| r.id == *id).unwrap();
        assert!(r.attempts >= 2, "job {id} was b's: {r:?}");
        let node = r.timings.as_ref().unwrap()["node"].as_str().unwrap();
        assert_ne!(
            node, "b",
            "job {id} was b's, and went elsewhere in b's absence"
        );
    }
    assert!(
        b_after_rejoin > 0,
        "the restarted b took none of the {left} jobs left: {by_node:?}"
    );
    // Every job (300, the warm-up and the gRPC one) completed exactly once.
    let counts = rt.block_on(numbers(
        &pg,
        "SELECT count(*) FROM completions GROUP BY job_id HAVING count(*) > 1
         UNION ALL SELECT -count(*) FROM completions",
    ));
    assert_eq!(
        counts,
        vec![-(n as i64 + 2)],
        "duplicate or missing completions"
    );
    let status = zkpipe(&["fleet", "status", "--queue", &url, "--json"]);
    assert!(status.status.success(), "{status:?}");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let live = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["live"] == true)
        .count();
    assert_eq!(live, 3, "{status}");
    eprintln!(
        "fleet: warm-up {:.1} s; {n} jobs in {:.1} s over 3 nodes {by_node:?}; b held {} job(s) \
         when killed {:.1} s before the end; restarted b took {b_after_rejoin} of the {left} left",
        warm.as_secs_f64(),
        (wall - warm).as_secs_f64(),
        held_by_b.len(),
        killed_at.elapsed().as_secs_f64(),
    );
}

#[test]
fn nodes_ride_out_a_database_restart_and_lose_nothing() {
    let Some((pg, rt, queue)) = fleet_db() else {
        return;
    };
    let url = pg.url();
    let _a = Node::start(&url, "ra", &[]);
    let _b = Node::start(&url, "rb", &[]);
    let n = 60u64;
    let ids: Vec<i64> = rt.block_on(async {
        let mut ids = vec![];
        for i in 0..n {
            let req = request(5000 + i, Priority::Normal, format!("restart-{i}"));
            ids.push(
                queue
                    .submit(&fleet_jobs::new_job(&req).unwrap())
                    .await
                    .unwrap()
                    .id,
            );
        }
        ids
    });
    let t0 = Instant::now();
    while rt.block_on(numbers(&pg, "SELECT count(*) FROM completions"))[0] < 5 {
        assert!(t0.elapsed() < Duration::from_secs(120), "too slow");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A crash of the database mid-batch: the nodes' connections drop; they
    // retry with backoff until it is back, and go on.
    let done_before = rt.block_on(numbers(&pg, "SELECT count(*) FROM completions"))[0];
    pg.stop().unwrap();
    assert!(
        done_before < n as i64 - 10,
        "the batch nearly ended before the database went down: nothing was tested"
    );
    std::thread::sleep(Duration::from_secs(3));
    pg.restart_after_stop().unwrap();
    eprintln!("database restarted with {done_before} of {n} jobs done");
    let records: Vec<JobRecord> = rt.block_on(async {
        let mut out = vec![];
        for &id in &ids {
            out.push(queue.await_job(id, Duration::from_secs(120)).await.unwrap());
        }
        out
    });
    // The nodes set the key up with the first job: its vk is there now.
    let pvk = pvk(&shared_keys(), CIRCUIT, SIZE);
    for r in &records {
        check_succeeded(&pvk, r);
    }
    let counts = rt.block_on(numbers(
        &pg,
        "SELECT count(*) FROM completions GROUP BY job_id HAVING count(*) > 1
         UNION ALL SELECT -count(*) FROM completions",
    ));
    assert_eq!(
        counts,
        vec![-(n as i64)],
        "duplicate or missing completions"
    );
}

#[test]
fn priorities_hold_and_jobs_no_node_can_run_fail_with_the_reason() {
    let Some((pg, rt, queue)) = fleet_db() else {
        return;
    };
    let url = pg.url();

    // Queued before any node is up: 12 low, then 4 critical.
    let (low, critical) = rt.block_on(async {
        let mut low = vec![];
        let mut critical = vec![];
        for i in 0..16u64 {
            let p = if i < 12 {
                Priority::Low
            } else {
                Priority::Critical
            };
            let job = fleet_jobs::new_job(&request(i, p, String::new())).unwrap();
            let id = queue.submit(&job).await.unwrap().id;
            if i < 12 { &mut low } else { &mut critical }.push(id);
        }
        (low, critical)
    });
    // A key no node has (circom, a zkey hash nobody holds): each attempt
    // fails on a node, the last with the reason.
    let files = tempfile::tempdir().unwrap();
    let zkey = files.path().join("nobody.zkey");
    let wtns = files.path().join("w.wtns");
    std::fs::write(&zkey, b"a zkey no node holds").unwrap();
    std::fs::write(&wtns, support::circom_files::wtns_bytes(&[1, 9, 3])).unwrap();
    let wait_for = |args: Vec<String>| {
        std::thread::spawn(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            zkpipe(&args)
        })
    };
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let missing = wait_for(owned(&[
        "fleet",
        "submit",
        "--queue",
        &url,
        "--max-attempts",
        "2",
        "--wait",
        "--zkey",
        zkey.to_str().unwrap(),
        "--wtns",
        wtns.to_str().unwrap(),
    ]));
    // A device no node has: failed by the queue after unrunnable_wait.
    let too_big = wait_for(owned(&[
        "fleet",
        "submit",
        "--queue",
        &url,
        "--circuit",
        CIRCUIT,
        "--size",
        SIZE,
        "--min-device-memory",
        "1000TiB",
        "--wait",
    ]));
    let _a = Node::start(&url, "p1", &[]);
    let _b = Node::start(&url, "p2", &[]);

    rt.block_on(async {
        for &id in low.iter().chain(&critical) {
            queue.await_job(id, Duration::from_secs(120)).await.unwrap();
        }
    });
    let pvk = pvk(&shared_keys(), CIRCUIT, SIZE);
    for &id in low.iter().chain(&critical) {
        check_succeeded(&pvk, &rt.block_on(queue.job(id)).unwrap());
    }
    // Every critical job was claimed before any low one.
    let last_critical = rt.block_on(numbers(
        &pg,
        "SELECT (extract(epoch FROM max(started)) * 1e6)::int8 FROM jobs WHERE priority = 4",
    ))[0];
    let first_low = rt.block_on(numbers(
        &pg,
        "SELECT (extract(epoch FROM min(started)) * 1e6)::int8 FROM jobs WHERE priority = 1",
    ))[0];
    assert!(last_critical <= first_low, "{last_critical} > {first_low}");

    let too_big = too_big.join().unwrap();
    assert_eq!(too_big.status.code(), Some(1), "{too_big:?}");
    let err = String::from_utf8_lossy(&too_big.stderr);
    assert!(err.contains("device memory"), "{err}");
    let missing = missing.join().unwrap();
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("loading key circom"), "{err}");
}

/// A node publishes its host budget; `fleet submit` of a key estimated
/// above every live node's budget exits 2 with both numbers, one that fits
/// is proved; with no node live the big job is queued (a node may join)
/// and the queue fails it with the reason once the small node is up.
#[test]
fn fleet_submit_refuses_a_job_no_live_node_has_the_host_memory_for() {
    let Some((pg, rt, queue)) = fleet_db() else {
        return;
    };
    let url = pg.url();
    // squaring-chain 2^31: 2^31 constraints, 800 bytes each.
    let huge = ["--circuit", CIRCUIT, "--size", "2^31"];
    let need = (1u64 << 31) * 800;
    let budget = 1u64 << 30;
    let submit = |extra: &[&str]| {
        let mut args = vec!["fleet", "submit", "--queue", &url];
        args.extend_from_slice(extra);
        zkpipe(&args)
    };

    let early = submit(&huge);
    assert!(early.status.success(), "{early:?}");
    let early_id: i64 = text(&early.stdout)
        .split_whitespace()
        .nth(1)
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("{early:?}"));
    let job = rt.block_on(queue.job(early_id)).unwrap();
    assert_eq!(job.state, zkpipe_fleet::JobState::Queued);

    let _node = Node::start(&url, "small-host", &["--set", "memory.host_budget=1GiB"]);
    // The node registers once its node loop runs, after it listens.
    let registered = Instant::now();
    let status = loop {
        let out = zkpipe(&["fleet", "status", "--queue", &url, "--json"]);
        assert!(out.status.success(), "{out:?}");
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if status["nodes"][0]["live"] == true {
            break status;
        }
        assert!(registered.elapsed() < Duration::from_secs(30), "{status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["nodes"][0]["host_memory"], budget, "{status}");

    let t0 = Instant::now();
    let out = submit(&huge);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{} MiB ({need} bytes) of host memory", need >> 20)),
        "{err}"
    );
    assert!(
        err.contains(&format!("is {} MiB ({budget} bytes)", budget >> 20)),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let jobs = rt.block_on(numbers(&pg, "SELECT count(*) FROM jobs"))[0];
    assert_eq!(jobs, 1, "a refused submit queued a job");

    // What fits is proved by the same node.
    let files = tempfile::tempdir().unwrap();
    let proof = files.path().join("p.proof");
    let public = files.path().join("p.json");
    let small = submit(&[
        "--circuit",
        CIRCUIT,
        "--size",
        SIZE,
        "--wait",
        "--out",
        proof.to_str().unwrap(),
        "--public-out",
        public.to_str().unwrap(),
    ]);
    assert!(small.status.success(), "{small:?}");
    assert_eq!(std::fs::metadata(&proof).unwrap().len(), 192);

    // The job queued before the node came: nobody claims it, and the queue
    // fails it with the numbers after queue.unrunnable_wait_ms.
    let early = zkpipe(&[
        "fleet",
        "await",
        "--queue",
        &url,
        &early_id.to_string(),
        "--timeout-ms",
        "30000",
    ]);
    assert_eq!(early.status.code(), Some(1), "{early:?}");
    let err = text(&early.stderr);
    assert!(
        err.contains(&format!("needs {need} bytes of host memory")),
        "{err}"
    );
    assert!(err.contains(&format!("is {budget}")), "{err}");
    let job = rt.block_on(queue.job(early_id)).unwrap();
    assert_eq!(job.attempts, 0, "a node claimed it: {job:?}");
}

/// Bad input exits 2 before anything reaches a queue; an unreachable queue 1.
#[test]
fn fleet_commands_refuse_bad_input_and_report_an_unreachable_queue() {
    let bad_url = zkpipe(&["fleet", "status", "--queue", "mysql://x"]);
    assert_eq!(bad_url.status.code(), Some(2), "{bad_url:?}");
    let no_queue = zkpipe(&["fleet", "status"]);
    assert_eq!(no_queue.status.code(), Some(2), "{no_queue:?}");
    let bad_job = zkpipe(&[
        "fleet",
        "submit",
        "--queue",
        "postgres://u@127.0.0.1:1/db",
        "--circuit",
        "no-such-circuit",
    ]);
    assert_eq!(bad_job.status.code(), Some(2), "{bad_job:?}");
    let down = zkpipe(&[
        "fleet",
        "submit",
        "--queue",
        "postgres://u@127.0.0.1:1/db",
        "--circuit",
        CIRCUIT,
        "--size",
        SIZE,
    ]);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    let serve_bad = zkpipe(&["serve", "--queue", "http://x", "--print-config"]);
    assert_eq!(serve_bad.status.code(), Some(2), "{serve_bad:?}");
}

/// `zkpipe …` with no password from the environment.
fn zkpipe_no_env(args: &[&str]) -> std::process::Output {
    support::zkpipe_command()
        .env_remove("PGPASSWORD")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every byte but letters and digits as `%XX`, as a URL's userinfo wants.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The password of the password-protected test clusters: a space, a `/`,
/// an `@` and a `?`, which a URL cannot hold as they are.
const PASSWORD: &str = "correct horse/b@ttery?";

/// A cluster that wants [`PASSWORD`], with the queue's schema; `None`
/// (skipped) without PostgreSQL.
fn password_db() -> Option<(TestPostgres, tokio::runtime::Runtime)> {
    let pg = TestPostgres::start_with_password_or_skip(PASSWORD)?;
    let rt = runtime();
    let url = format!(
        "postgres://zkpipe:{}@127.0.0.1:{}/postgres",
        percent_encode(PASSWORD),
        pg.port()
    );
    rt.block_on(async {
        let q = Queue::connect(&url, QueueConfig::default()).await.unwrap();
        q.migrate().await.unwrap();
    });
    Some((pg, rt))
}

/// A file only its owner may read, holding `contents`.
fn private_file(dir: &std::path::Path, name: &str, contents: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// `--print-config` and the errors about a URL show it with the password
/// replaced, however odd the password; a password on the command line is
/// warned about.
#[test]
fn the_queue_password_is_never_printed() {
    let url = "postgres://u:pa/ss?w@127.0.0.1:5432/db?sslmode=disable";
    let out = zkpipe_no_env(&["serve", "--queue", url, "--print-config"]);
    assert!(out.status.success(), "{out:?}");
    let printed = text(&out.stdout);
    assert!(
        printed.contains("url = \"postgres://u:***@127.0.0.1:5432/db?sslmode=disable\""),
        "{printed}"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("--queue-password-file") && err.contains("PGPASSWORD"),
        "{err}"
    );
    for (url, secret) in [
        ("postgres://u:pa/ss?w@127.0.0.1:notaport/db", "ss?w"),
        ("postgres://u:pa?ss@127.0.0.1:notaport/db?x=1", "pa?ss"),
        (
            "postgres://u@127.0.0.1:notaport/db?password=hunter2",
            "hunter2",
        ),
        ("postgresql://u:h%40nter@127.0.0.1:notaport", "nter"),
    ] {
        let out = zkpipe_no_env(&["fleet", "status", "--queue", url]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(!all.contains(secret), "{url}: {all}");
        assert!(all.contains("***"), "{url}: {all}");
    }
}

/// A wrong password gets PostgreSQL's own message and SQLSTATE, not
/// "db error", and the password is not in it.
#[test]
fn a_wrong_password_is_reported_as_postgresql_words_it() {
    let Some((pg, _rt)) = password_db() else {
        return;
    };
    let url = format!(
        "postgres://zkpipe:Wr0ng/pw?x@127.0.0.1:{}/postgres",
        pg.port()
    );
    let out = zkpipe_no_env(&["fleet", "status", "--queue", &url]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("password authentication failed for user \"zkpipe\" (28P01)"),
        "{err}"
    );
    assert!(!err.contains("Wr0ng") && !err.contains("pw?x"), "{err}");
}

/// The password may come from `PGPASSWORD` or a file only its owner can
/// read (flag or config key) instead of the URL.
#[test]
fn the_queue_password_comes_from_pgpassword_or_a_private_file() {
    let Some((pg, _rt)) = password_db() else {
        return;
    };
    let url = pg.url();
    let files = tempfile::tempdir().unwrap();
    let status_ok = |out: &std::process::Output| {
        assert!(out.status.success(), "{out:?}");
        assert!(text(&out.stdout).contains("0 of 0 node(s) live"), "{out:?}");
        assert!(
            !text(&out.stderr).contains("--queue-password-file"),
            "{out:?}"
        );
    };

    let none = zkpipe_no_env(&["fleet", "status", "--queue", &url]);
    assert_eq!(none.status.code(), Some(1), "{none:?}");

    let env = support::zkpipe_command()
        .env("PGPASSWORD", PASSWORD)
        .args(["fleet", "status", "--queue", &url])
        .output()
        .unwrap();
    status_ok(&env);

    let good = private_file(files.path(), "pw", &format!("{PASSWORD}\n"), 0o600);
    let good = good.to_str().unwrap();
    status_ok(&zkpipe_no_env(&[
        "fleet",
        "status",
        "--queue",
        &url,
        "--queue-password-file",
        good,
    ]));
    // The file wins over the environment.
    let both = support::zkpipe_command()
        .env("PGPASSWORD", "not it")
        .args([
            "fleet",
            "status",
            "--queue",
            &url,
            "--queue-password-file",
            good,
        ])
        .output()
        .unwrap();
    status_ok(&both);
    let config = files.path().join("node.toml");
    std::fs::write(
        &config,
        format!("[queue]\nurl = \"{url}\"\npassword_file = \"{good}\"\n"),
    )
    .unwrap();
    status_ok(&zkpipe_no_env(&[
        "fleet",
        "status",
        "--config",
        config.to_str().unwrap(),
    ]));

    // Refused with the reason, before any connection: a file others may
    // read, a folder, two lines, and a password given twice.
    let shared = private_file(files.path(), "shared", PASSWORD, 0o644);
    let lines = private_file(files.path(), "lines", "a\nb\n", 0o600);
    let refusals = [
        (shared.to_str().unwrap(), url.as_str(), "group or others"),
        (
            files.path().to_str().unwrap(),
            url.as_str(),
            "not a regular file",
        ),
        (lines.to_str().unwrap(), url.as_str(), "one line"),
        (
            good,
            "postgres://zkpipe:x@127.0.0.1:1/postgres",
            "give only one",
        ),
    ];
    for (file, url, why) in refusals {
        let out = zkpipe_no_env(&[
            "fleet",
            "status",
            "--queue",
            url,
            "--queue-password-file",
            file,
        ]);
        assert_eq!(out.status.code(), Some(2), "{file}: {out:?}");
        let err = text(&out.stderr);
        assert!(err.contains(why), "{file}: {err}");
        assert!(!err.contains("horse"), "{err}");
    }

    // A node takes the file too; its configuration shows the file only.
    let out = zkpipe_no_env(&[
        "serve",
        "--queue",
        &url,
        "--queue-password-file",
        good,
        "--print-config",
    ]);
    assert!(out.status.success(), "{out:?}");
    let printed = text(&out.stdout);
    assert!(
        printed.contains(&format!("password_file = \"{good}\"")),
        "{printed}"
    );
    assert!(!printed.contains("horse"), "{printed}");
}

/// A payload folder named by the user is never created: a missing one or
/// a file is refused before anything is queued.
#[test]
fn a_payload_folder_must_already_exist() {
    let Some((pg, rt, _queue)) = fleet_db() else {
        return;
    };
    let url = pg.url();
    let files = tempfile::tempdir().unwrap();
    // Every payload spills to the folder.
    let config = files.path().join("client.toml");
    std::fs::write(&config, "[queue]\ninline_payload_max = \"16\"\n").unwrap();
    let submit = |dir: &std::path::Path| {
        zkpipe_no_env(&[
            "fleet",
            "submit",
            "--queue",
            &url,
            "--config",
            config.to_str().unwrap(),
            "--payload-dir",
            dir.to_str().unwrap(),
            "--circuit",
            CIRCUIT,
            "--size",
            SIZE,
        ])
    };
    let missing = files.path().join("missing").join("pl");
    let out = submit(&missing);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("does not exist"), "{out:?}");
    assert!(
        !files.path().join("missing").exists(),
        "the folder was created"
    );

    let file = files.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let out = submit(&file);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("not a folder"), "{out:?}");

    let jobs = rt.block_on(numbers(&pg, "SELECT count(*) FROM jobs"))[0];
    assert_eq!(jobs, 0, "a refused submit queued a job");

    let shared = files.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let out = submit(&shared);
    assert!(out.status.success(), "{out:?}");
    let spilled = std::fs::read_dir(&shared).unwrap().count();
    assert_eq!(spilled, 1, "{out:?}");
}

/// Waits for a child to exit, killing it (and failing) past `limit`.
fn exit_within(mut child: Child, limit: Duration) -> (std::process::Output, Duration) {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let waited = t0.elapsed();
    (child.wait_with_output().unwrap(), waited)
}

/// `zkpipe fleet await` rides out a short database outage, saying so on
/// stderr once, and gives up with an error after `--max-outage-ms`
/// without the database.
#[test]
fn fleet_await_rides_out_a_short_outage_and_gives_up_on_a_long_one() {
    let Some((pg, rt, queue)) = fleet_db() else {
        return;
    };
    // The awaiting process's connections, told apart by their name.
    let url = format!("{}?application_name=await-test", pg.url());
    let submit = || {
        let job = zkpipe_fleet::NewJob::new("nobody.v1", "k", vec![]);
        rt.block_on(queue.submit(&job)).unwrap().id
    };
    let wait_for = |id: i64, max_outage_ms: &str| {
        let child = support::zkpipe_command()
            .args(["fleet", "await", "--queue", &url])
            .args(["--max-outage-ms", max_outage_ms, &id.to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Waiting: its query and listening connections are open.
        let t0 = Instant::now();
        while rt.block_on(numbers(
            &pg,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'await-test'",
        ))[0]
            < 2
        {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "await did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    };

    let short = submit();
    let child = wait_for(short, "30000");
    pg.stop().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    pg.restart_after_stop().unwrap();
    let t0 = Instant::now();
    // The test's own connection comes back on a later call.
    while rt
        .block_on(queue.cancel(short, "ended by the test"))
        .is_err()
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "no database");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (out, _) = exit_within(child, Duration::from_secs(60));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains("ended by the test"), "{err}");
    assert_eq!(err.matches("lost the queue database").count(), 1, "{err}");
    assert!(err.contains("queue database is back"), "{err}");
    assert!(!err.contains("giving up"), "{err}");

    let long = submit();
    let child = wait_for(long, "2000");
    pg.stop().unwrap();
    let (out, waited) = exit_within(child, Duration::from_secs(60));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(err.matches("lost the queue database").count(), 1, "{err}");
    assert!(err.contains("giving up"), "{err}");
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(15),
        "gave up after {waited:?}"
    );
}
