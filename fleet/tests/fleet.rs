//! The fleet queue against a throwaway PostgreSQL: simulated nodes (tokio
//! tasks doing fake proofs), killed nodes, a restarted database,
//! priorities, affinity, jobs nobody can run, stale leases, hostile input.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use support::{SimNode, completions, config, count_completions, fake_proof, node, spawn_node};
use zkpipe_fleet::{Error, FailOutcome, JobState, NewJob, Payload, Queue, QueueConfig, Status};

fn job(i: usize) -> NewJob {
    NewJob::new("groth16", "sha256-1", format!("witness {i}").into_bytes())
}

async fn submit_all(q: &Queue, n: usize) -> Vec<(i64, Vec<u8>)> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let j = job(i);
        let s = q.submit(&j).await.expect("submit");
        ids.push((s.id, j.payload));
    }
    ids
}

/// Waits for every job and checks its result is the fake proof of its payload.
async fn check_all_succeeded(q: &Queue, jobs: &[(i64, Vec<u8>)]) -> HashMap<String, usize> {
    let mut per_node = HashMap::new();
    for (id, payload) in jobs {
        let r = q
            .await_job(*id, Duration::from_secs(60))
            .await
            .expect("job ends");
        assert_eq!(r.state, JobState::Succeeded, "job {id}: {:?}", r.error);
        assert_eq!(
            r.result.as_deref(),
            Some(&fake_proof(payload)[..]),
            "job {id}"
        );
        let by = r
            .timings
            .as_ref()
            .and_then(|t| t["node"].as_str())
            .unwrap_or("?");
        *per_node.entry(by.to_owned()).or_insert(0) += 1;
    }
    per_node
}

async fn wait_for(what: &str, timeout: Duration, mut f: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn running_on(s: &Status, id: &str) -> i64 {
    s.nodes.iter().find(|n| n.id == id).map_or(0, |n| n.running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_300_jobs_each_completed_once() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    count_completions(&pg).await;
    let jobs = submit_all(&q, 300).await;
    let nodes: Vec<SimNode> = (0..3)
        .map(|i| {
            spawn_node(
                &pg.url(),
                node(&format!("n{i}")),
                Duration::from_millis(1),
                2,
            )
        })
        .collect();
    let per_node = check_all_succeeded(&q, &jobs).await;
    assert_eq!(completions(&pg).await, (300, 0, 300));
    assert_eq!(per_node.values().sum::<usize>(), 300);
    assert!(per_node.len() >= 2, "work was shared: {per_node:?}");
    let status = q.status().await.expect("status");
    assert_eq!(status.nodes.len(), 3);
    assert!(status.nodes.iter().all(|n| n.live), "{status:?}");
    assert_eq!(status.succeeded_last_minute, 300);
    assert!(status.queued_by_priority.is_empty());
    for n in nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_loses_its_leases_and_rejoins() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    count_completions(&pg).await;
    let jobs = submit_all(&q, 40).await;
    let work = Duration::from_millis(150);
    let victim = spawn_node(&pg.url(), node("victim"), work, 3);
    wait_for(
        "the victim to hold jobs",
        Duration::from_secs(20),
        async || running_on(&q.status().await.expect("status"), "victim") >= 2,
    )
    .await;
    // kill -9: no release, no cleanup; its leases stay in the table.
    victim.task.abort();
    let _ = victim.task.await;
    let held = running_on(&q.status().await.expect("status"), "victim");
    assert!(held >= 2, "the dead node still holds its leases: {held}");
    let others: Vec<SimNode> = (0..2)
        .map(|i| spawn_node(&pg.url(), node(&format!("n{i}")), work, 2))
        .collect();
    check_all_succeeded(&q, &jobs).await;
    assert_eq!(completions(&pg).await, (40, 0, 40));
    let retried = {
        let mut n = 0;
        for (id, _) in &jobs {
            if q.job(*id).await.expect("job").attempts > 1 {
                n += 1;
            }
        }
        n
    };
    assert!(retried >= 2, "the victim's jobs were retried: {retried}");
    for n in others {
        n.shutdown().await;
    }
    // The same id comes back and takes new work.
    let victim = spawn_node(&pg.url(), node("victim"), Duration::from_millis(1), 1);
    let more: Vec<(i64, Vec<u8>)> = {
        let mut v = Vec::new();
        for i in 1000..1005 {
            let j = job(i);
            v.push((q.submit(&j).await.expect("submit").id, j.payload));
        }
        v
    };
    let per_node = check_all_succeeded(&q, &more).await;
    assert_eq!(per_node.get("victim"), Some(&5));
    let status = q.status().await.expect("status");
    assert!(status.nodes.iter().any(|n| n.id == "victim" && n.live));
    assert_eq!(completions(&pg).await, (45, 0, 45));
    victim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_restarts_mid_run_and_nothing_is_lost() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let pg = std::sync::Arc::new(pg);
    let q = support::queue(&pg).await;
    count_completions(&pg).await;
    let mut jobs = Vec::new();
    for i in 0..150 {
        let mut j = job(i);
        j.max_attempts = Some(10);
        jobs.push((q.submit(&j).await.expect("submit").id, j.payload));
    }
    let nodes: Vec<SimNode> = (0..3)
        .map(|i| {
            spawn_node(
                &pg.url(),
                node(&format!("n{i}")),
                Duration::from_millis(20),
                1,
            )
        })
        .collect();
    wait_for("some progress", Duration::from_secs(20), async || {
        q.status().await.expect("status").succeeded_last_minute >= 30
    })
    .await;
    let p = pg.clone();
    tokio::task::spawn_blocking(move || {
        p.stop().expect("stop");
        std::thread::sleep(Duration::from_millis(800));
        p.restart_after_stop().expect("start again");
    })
    .await
    .expect("restart");
    check_all_succeeded(&q, &jobs).await;
    assert_eq!(completions(&pg).await.1, 0, "no job completed twice");
    // Completions recorded before the crash may be lost with it only if the
    // commit was not flushed; the job rows say every job succeeded once.
    for n in nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priorities_then_age_decide_the_order() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let mut ids = HashMap::new();
    for (i, prio) in [0i16, 5, 10, 0, 5, 10, 3, 10, 0, 5].iter().enumerate() {
        let mut j = job(i);
        j.priority = *prio;
        ids.insert(q.submit(&j).await.expect("submit").id, *prio);
    }
    let me = node("solo");
    q.register(&me).await.expect("register");
    let mut order = Vec::new();
    while let Some(c) = q.claim(&me).await.expect("claim") {
        order.push((c.priority, c.id));
        q.complete(&me.id, c.lease(), b"p", &serde_json::json!({}))
            .await
            .expect("complete");
    }
    assert_eq!(order.len(), 10);
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(order, sorted, "highest priority first, then oldest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn affinity_prefers_the_node_with_the_key_resident() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let mut warm = node("warm");
    warm.resident_keys = vec!["sha256-1".into()];
    let cold = node("cold");
    q.register(&warm).await.expect("register");
    q.register(&cold).await.expect("register");
    let a = q.submit(&job(1)).await.expect("submit").id;
    let other_key = q
        .submit(&NewJob::new("groth16", "poseidon-2x8", vec![1]))
        .await
        .expect("submit")
        .id;
    // Within the wait, the cold node gets only the job whose key nobody has.
    let c = q.claim(&cold).await.expect("claim").expect("a job");
    assert_eq!(c.id, other_key);
    assert!(q.claim(&cold).await.expect("claim").is_none());
    let w = q.claim(&warm).await.expect("claim").expect("a job");
    assert_eq!(w.id, a);
    // After the wait, anyone capable takes it.
    let b = q.submit(&job(2)).await.expect("submit").id;
    assert!(q.claim(&cold).await.expect("claim").is_none());
    tokio::time::sleep(config().affinity_wait + Duration::from_millis(100)).await;
    q.heartbeat(&warm, &[w.lease()]).await.expect("heartbeat");
    let c2 = q
        .claim(&cold)
        .await
        .expect("claim")
        .expect("after the wait");
    assert_eq!(c2.id, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_no_node_can_run_fail_with_the_reason() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let mut me = node("small");
    me.runnable_keys = Some(vec!["sha256-1".into()]);
    q.register(&me).await.expect("register");
    let wrong_kind = q
        .submit(&NewJob::new("winning-post", "sha256-1", vec![]))
        .await
        .expect("submit")
        .id;
    let wrong_key = q
        .submit(&NewJob::new("groth16", "porep-32g", vec![]))
        .await
        .expect("submit")
        .id;
    let mut big = job(0);
    big.min_device_memory = 32 << 30;
    let too_big = q.submit(&big).await.expect("submit").id;
    let fine = q.submit(&job(1)).await.expect("submit").id;
    // Nothing fails before the wait.
    assert_eq!(q.maintain().await.expect("maintain").unrunnable_failed, 0);
    tokio::time::sleep(config().unrunnable_wait + Duration::from_millis(200)).await;
    q.heartbeat(&me, &[]).await.expect("heartbeat");
    assert_eq!(q.maintain().await.expect("maintain").unrunnable_failed, 3);
    let reason = async |id| {
        let r = q.job(id).await.expect("job");
        assert_eq!(r.state, JobState::Failed);
        r.error.unwrap_or_default()
    };
    assert!(
        reason(wrong_kind)
            .await
            .contains("no live node runs jobs of kind 'winning-post'")
    );
    assert!(reason(wrong_key).await.contains("can load key 'porep-32g'"));
    let mem = reason(too_big).await;
    assert!(
        mem.contains("34359738368") && mem.contains("1073741824"),
        "{mem}"
    );
    assert_eq!(q.job(fine).await.expect("job").state, JobState::Queued);
}

/// A job asking for more host memory than a node's budget is not offered
/// to it, and fails with the numbers once no live node has it; a node that
/// does not say its host memory is offered any job; the request digest
/// covers the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_above_every_host_budget_are_not_claimed_and_fail_with_the_reason() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let me = node("small-host");
    assert_eq!(me.host_memory, 16 << 30);
    q.register(&me).await.expect("register");
    let mut big = job(0);
    big.min_host_memory = 64 << 30;
    let too_big = q.submit(&big).await.expect("submit").id;
    let mut fits = job(1);
    fits.min_host_memory = 16 << 30;
    let fits = q.submit(&fits).await.expect("submit").id;
    let c = q
        .claim(&me)
        .await
        .expect("claim")
        .expect("the job that fits");
    assert_eq!((c.id, c.min_host_memory), (fits, 16 << 30));
    assert!(q.claim(&me).await.expect("claim").is_none(), "too big");
    assert_eq!(q.maintain().await.expect("maintain").unrunnable_failed, 0);
    tokio::time::sleep(config().unrunnable_wait + Duration::from_millis(200)).await;
    q.heartbeat(&me, &[c.lease()]).await.expect("heartbeat");
    assert_eq!(q.maintain().await.expect("maintain").unrunnable_failed, 1);
    let r = q.job(too_big).await.expect("job");
    assert_eq!(r.state, JobState::Failed);
    let reason = r.error.unwrap_or_default();
    assert!(
        reason.contains("needs 68719476736 bytes of host memory"),
        "{reason}"
    );
    assert!(
        reason.contains("host budget of a live node that can load key 'sha256-1' is 17179869184"),
        "{reason}"
    );
    assert_eq!(q.job(fits).await.expect("job").state, JobState::Running);
    let s = q.status().await.expect("status");
    assert_eq!(s.nodes[0].host_memory, 16 << 30);

    // Not said: offered anything.
    let mut quiet = node("quiet");
    quiet.host_memory = 0;
    q.register(&quiet).await.expect("register");
    let again = q.submit(&big).await.expect("submit").id;
    assert!(q.claim(&me).await.expect("claim").is_none());
    let c = q.claim(&quiet).await.expect("claim").expect("job");
    assert_eq!(c.id, again);

    // The same request with another host memory is another request.
    let mut first = job(2);
    first.request_id = Some("host-req".into());
    first.min_host_memory = 1 << 30;
    let id = q.submit(&first).await.expect("submit").id;
    assert!(!q.submit(&first).await.expect("again").created);
    let mut other = first.clone();
    other.min_host_memory = 2 << 30;
    assert!(matches!(
        q.submit(&other).await,
        Err(Error::RequestIdConflict { job_id, .. }) if job_id == id
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_lease_cannot_complete_and_failures_retry() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let (a, b) = (node("a"), node("b"));
    q.register(&a).await.expect("register");
    q.register(&b).await.expect("register");
    let id = q.submit(&job(0)).await.expect("submit").id;
    let first = q.claim(&a).await.expect("claim").expect("job");
    assert!(q.claim(&b).await.expect("claim").is_none(), "leased");
    // a stops heartbeating; its lease expires and b takes the job.
    tokio::time::sleep(config().lease + Duration::from_millis(200)).await;
    q.heartbeat(&b, &[]).await.expect("heartbeat");
    assert_eq!(q.maintain().await.expect("maintain").requeued, 1);
    let second = q.claim(&b).await.expect("claim").expect("job");
    assert_eq!((second.id, second.attempt), (id, 2));
    let t = serde_json::json!({});
    assert!(matches!(
        q.complete(&a.id, first.lease(), b"late", &t).await,
        Err(Error::LeaseLost { job_id }) if job_id == id
    ));
    // a's renewal of the old lease renews nothing.
    assert!(
        q.heartbeat(&a, &[first.lease()])
            .await
            .expect("hb")
            .is_empty()
    );
    q.complete(&b.id, second.lease(), b"proof", &t)
        .await
        .expect("complete");
    assert!(matches!(
        q.complete(&b.id, second.lease(), b"again", &t).await,
        Err(Error::LeaseLost { .. })
    ));
    assert_eq!(
        q.job(id).await.expect("job").result.as_deref(),
        Some(&b"proof"[..])
    );

    // Retryable failures requeue until the attempts run out.
    let mut j = job(1);
    j.max_attempts = Some(2);
    let id = q.submit(&j).await.expect("submit").id;
    let c = q.claim(&a).await.expect("claim").expect("job");
    assert_eq!(
        q.fail(&a.id, c.lease(), "device lost", true)
            .await
            .expect("fail"),
        FailOutcome::Requeued
    );
    let c = q.claim(&a).await.expect("claim").expect("job");
    assert_eq!(
        q.fail(&a.id, c.lease(), "device lost again", true)
            .await
            .expect("fail"),
        FailOutcome::Failed
    );
    let r = q.job(id).await.expect("job");
    assert_eq!(
        (r.state, r.error.as_deref()),
        (JobState::Failed, Some("device lost again"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_submit_cancel_and_await() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let mut j = job(7);
    j.request_id = Some("req-7".into());
    let s1 = q.submit(&j).await.expect("submit");
    let s2 = q.submit(&j).await.expect("submit again");
    assert!(s1.created && !s2.created);
    assert_eq!(s1.id, s2.id);
    let mut other = j.clone();
    other.payload = b"another witness".to_vec();
    assert!(matches!(
        q.submit(&other).await,
        Err(Error::RequestIdConflict { job_id, .. }) if job_id == s1.id
    ));
    // await_job is woken by NOTIFY, well before the fallback poll.
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.await_job(s1.id, Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let me = node("a");
    q.register(&me).await.expect("register");
    let c = q.claim(&me).await.expect("claim").expect("job");
    let t0 = Instant::now();
    q.complete(
        &me.id,
        c.lease(),
        b"proof",
        &serde_json::json!({"prove_ms": 3}),
    )
    .await
    .expect("complete");
    let r = waiter.await.expect("task").expect("await");
    assert_eq!(r.state, JobState::Succeeded);
    assert_eq!(r.timings, Some(serde_json::json!({"prove_ms": 3})));
    assert!(
        t0.elapsed() < Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );

    let id = q.submit(&job(8)).await.expect("submit").id;
    assert!(q.cancel(id, "").await.expect("cancel"));
    assert!(!q.cancel(id, "").await.expect("cancel again"));
    let r = q
        .await_job(id, Duration::from_secs(1))
        .await
        .expect("await");
    assert_eq!(r.state, JobState::Cancelled);
    assert!(matches!(
        q.cancel(987_654, "").await,
        Err(Error::NotFound(987_654))
    ));
    assert!(matches!(q.job(987_654).await, Err(Error::NotFound(_))));
    let id = q.submit(&job(9)).await.expect("submit").id;
    assert!(matches!(
        q.await_job(id, Duration::from_millis(300)).await,
        Err(Error::Timeout(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_gets_clear_errors() {
    for bad in [
        "mysql://h/db",
        "",
        "postgres://h:99999999/db",
        "host=h user=u",
    ] {
        match Queue::new(bad, QueueConfig::default()) {
            Err(Error::InvalidUrl(m)) => assert!(!m.is_empty()),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    // Nothing listens on port 1: a clear error, quickly, no panic.
    let t0 = Instant::now();
    match Queue::connect("postgres://u:pw@127.0.0.1:1/db", config()).await {
        Err(e @ Error::Unavailable(_)) => {
            assert!(e.is_transient());
            assert!(!e.to_string().contains("pw"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(5));

    let Some(pg) = support::postgres() else {
        return;
    };
    let spill = pg.scratch_dir("payloads").expect("dir");
    let cfg = QueueConfig {
        inline_payload_max: 1024,
        max_payload: 1 << 20,
        ..config()
    };
    let q = Queue::connect(&pg.url(), cfg.clone())
        .await
        .expect("connect");
    q.migrate().await.expect("migrate");
    assert_eq!(q.migrate().await.expect("again"), Vec::<i32>::new());
    let bad_jobs = [
        NewJob::new("groth16", "", vec![]),
        NewJob::new("", "k", vec![]),
        NewJob::new("groth\0", "k", vec![]),
        NewJob::new("groth16", "k".repeat(1000), vec![]),
        NewJob {
            max_attempts: Some(0),
            ..NewJob::new("groth16", "k", vec![])
        },
        NewJob {
            request_id: Some("\n".into()),
            ..NewJob::new("groth16", "k", vec![])
        },
    ];
    for j in &bad_jobs {
        assert!(
            matches!(q.submit(j).await, Err(Error::InvalidInput(_))),
            "{j:?}"
        );
    }
    let big = NewJob::new("groth16", "k", vec![7u8; 4096]);
    assert!(matches!(
        q.submit(&big).await,
        Err(Error::PayloadTooLarge { limit: 1024, .. })
    ));
    let huge = NewJob::new("groth16", "k", vec![0u8; (1 << 20) + 1]);
    let spilling = Queue::connect(
        &pg.url(),
        QueueConfig {
            payload_dir: Some(spill.clone()),
            ..cfg
        },
    )
    .await
    .expect("connect");
    assert!(matches!(
        spilling.submit(&huge).await,
        Err(Error::PayloadTooLarge {
            limit: 1_048_576,
            ..
        })
    ));
    spilling.submit(&big).await.expect("spilled");
    let mut me = node("a");
    me.kinds = vec!["groth16".into()];
    let c = spilling.claim(&me).await.expect("claim").expect("job");
    let Payload::File { path, len } = &c.payload else {
        panic!("{:?}", c.payload)
    };
    assert_eq!(*len, 4096);
    assert!(path.starts_with(&spill));
    assert_eq!(c.payload_bytes().await.expect("read"), big.payload);
    std::fs::write(path, vec![8u8; 4096]).expect("tamper");
    assert!(matches!(
        c.payload_bytes().await,
        Err(Error::PayloadCorrupt(_))
    ));
    let mut nameless = node("");
    assert!(matches!(
        q.register(&nameless).await,
        Err(Error::InvalidInput(_))
    ));
    nameless.id = "x".into();
    nameless.device_memory = u64::MAX;
    assert!(matches!(
        q.claim(&nameless).await,
        Err(Error::InvalidInput(_))
    ));
}

/// A wrong password is reported in the server's words with its SQLSTATE,
/// is not worth retrying, and the password is in no message; the right one
/// from a file only its owner can read connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_and_a_password_file_connects() {
    let Some(pg) = zkpipe_fleet::testing::TestPostgres::start_with_password_or_skip("s3cret/pw")
    else {
        return;
    };
    let wrong = format!(
        "postgres://zkpipe:Wr0ng?pw@127.0.0.1:{}/postgres",
        pg.port()
    );
    let e = Queue::connect(&wrong, config()).await.unwrap_err();
    let shown = e.to_string();
    assert!(matches!(e, Error::Database(_)), "{e:?}");
    assert!(!e.is_transient());
    assert!(
        shown.contains("password authentication failed for user \"zkpipe\" (28P01)"),
        "{shown}"
    );
    assert!(!shown.contains("Wr0ng"), "{shown}");

    let dir = pg.scratch_dir("secrets").expect("dir");
    let file = dir.join("pw");
    std::fs::write(&file, "s3cret/pw\n").expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let with_file = QueueConfig {
        password_file: Some(file),
        ..config()
    };
    let q = Queue::connect(&pg.url(), with_file).await.expect("connect");
    q.migrate().await.expect("migrate");
}

/// `await_job_with` rides out a short outage (reporting its start and end
/// once each) and gives up after `max_outage` without the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_rides_out_a_short_outage_and_gives_up_on_a_long_one() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let q = support::queue(&pg).await;
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let wait = |id: i64, max_outage: Duration| {
        let (q, events) = (q.clone(), events.clone());
        tokio::spawn(async move {
            let t0 = Instant::now();
            let r = q
                .await_job_with(id, Duration::from_secs(120), Some(max_outage), |e| {
                    events.lock().unwrap().push(match e {
                        zkpipe_fleet::WaitEvent::Lost(e) => format!("lost: {e}"),
                        zkpipe_fleet::WaitEvent::Restored { .. } => "back".into(),
                    });
                })
                .await;
            (r, t0.elapsed())
        })
    };

    let short = q.submit(&job(1)).await.expect("submit").id;
    let waiter = wait(short, Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(300)).await;
    pg.stop().expect("stop");
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.restart_after_stop().expect("restart");
    wait_for("the database", Duration::from_secs(30), async || {
        q.cancel(short, "done").await.is_ok()
    })
    .await;
    let (r, _) = waiter.await.expect("join");
    assert_eq!(r.expect("ended").state, JobState::Cancelled);
    let seen = std::mem::take(&mut *events.lock().unwrap());
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].starts_with("lost: queue database unavailable"),
        "{seen:?}"
    );
    assert_eq!(seen[1], "back");

    let long = q.submit(&job(2)).await.expect("submit").id;
    let waiter = wait(long, Duration::from_millis(1500));
    tokio::time::sleep(Duration::from_millis(300)).await;
    pg.stop().expect("stop");
    let (r, waited) = waiter.await.expect("join");
    let e = r.expect_err("gave up");
    assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
    assert!(e.to_string().contains("giving up"), "{e}");
    // The last error seen, not the final check cut short at the bound.
    assert!(e.to_string().contains("error connecting to server"), "{e}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    let seen = events.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
}

/// A database at schema version 1, with a node and a job in it, migrates
/// to the latest version: the old rows read 0 host memory (a job any node
/// may run, a node that has not said) and go on working; a database newer
/// than the build is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_migrates_and_keeps_its_rows() {
    let Some(pg) = support::postgres() else {
        return;
    };
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let v1 = &zkpipe_fleet::schema::MIGRATIONS[0];
    assert_eq!(v1.version, 1);
    client
        .batch_execute(&format!(
            "CREATE TABLE zkpipe_schema_version (
                 version int PRIMARY KEY,
                 name text NOT NULL,
                 applied timestamptz NOT NULL DEFAULT now());
             {}
             INSERT INTO zkpipe_schema_version (version, name) VALUES (1, 'v1');
             INSERT INTO nodes (id, backend, kinds, device_memory)
                 VALUES ('old-node', 'cpu', '{{groth16}}', 1073741824);
             INSERT INTO jobs (request_digest, kind, key_id, payload, payload_digest, max_attempts)
                 VALUES ('\\x00', 'groth16', 'sha256-1', 'old', '\\x00', 3);",
            v1.sql
        ))
        .await
        .expect("a version 1 database");

    let q = Queue::connect(&pg.url(), config()).await.expect("connect");
    let latest = zkpipe_fleet::schema::latest_version();
    assert_eq!(
        q.migrate().await.expect("migrate"),
        (2..=latest).collect::<Vec<_>>()
    );
    assert_eq!(q.migrate().await.expect("again"), Vec::<i32>::new());
    let s = q.status().await.expect("status");
    assert_eq!(s.nodes.len(), 1);
    assert_eq!(
        (s.nodes[0].id.as_str(), s.nodes[0].host_memory),
        ("old-node", 0)
    );
    // The old job asks for no host memory: the smallest node takes it.
    let mut small = node("new-node");
    small.host_memory = 1;
    q.register(&small).await.expect("register");
    let c = q.claim(&small).await.expect("claim").expect("the old job");
    assert_eq!((c.key_id.as_str(), c.min_host_memory), ("sha256-1", 0));
    q.complete(&small.id, c.lease(), b"proof", &serde_json::json!({}))
        .await
        .expect("complete");
    let mut new = job(1);
    new.min_host_memory = 2;
    let id = q.submit(&new).await.expect("submit").id;
    assert!(q.claim(&small).await.expect("claim").is_none());
    q.cancel(id, "").await.expect("cancel");

    client
        .batch_execute(&format!(
            "INSERT INTO zkpipe_schema_version (version, name) VALUES ({}, 'future')",
            latest + 1
        ))
        .await
        .expect("a newer version");
    let e = q.migrate().await.unwrap_err();
    assert!(matches!(e, Error::Schema(_)), "{e:?}");
    assert!(e.to_string().contains("newer than this build"), "{e}");
}
