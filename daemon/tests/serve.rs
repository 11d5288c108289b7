//! `zkpipe serve` for real: the binary started as a process on its own
//! socket, driven through the gRPC client, killed, signalled and restarted.
//! Every proof a test receives is verified again here with the key's
//! verifying key, independently of the daemon's own check.
//!
//! The binary comes from the `zkpipe-cli` crate: `cargo test --workspace`
//! builds it first; `cargo test -p zkpipe-daemon` alone does not, and the
//! tests then say what to build (see `support::binary`).

// Shared with the CLI's process tests rather than copied.
#[path = "../../cli/tests/support/mod.rs"]
mod support;

use support::{pvk, verifies};

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zkpipe_core::groth16::{KeyInfo, KeyStore};
use zkpipe_daemon::client::{self, Address, Client};
use zkpipe_daemon::proto::{self, JobState, Priority};

/// A daemon process on its own socket.
struct Served {
    child: Child,
    socket: PathBuf,
    tcp: Option<String>,
    keys: PathBuf,
    _dir: tempfile::TempDir,
}

/// Keys shared by the tests that do not spoil them (setup runs once).
fn shared_keys() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("daemon-keys")
}

impl Served {
    /// `zkpipe serve` with `args`, once it says it listens.
    fn start(keys: &Path, args: &[&str]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, keys, args)
    }

    fn start_in(dir: tempfile::TempDir, keys: &Path, args: &[&str]) -> Served {
        let socket = dir.path().join("zkpipe.sock");
        let (child, lines) = spawn(&socket, keys, args);
        let mut served = Served {
            child,
            socket,
            tcp: None,
            keys: keys.to_path_buf(),
            _dir: dir,
        };
        loop {
            match lines.recv_timeout(Duration::from_secs(300)) {
                Ok(l) if l.starts_with("listening unix:") => break,
                Ok(l) if l.starts_with("listening tcp:") => {
                    served.tcp = Some(l["listening tcp:".len()..].to_string())
                }
                Ok(_) => {}
                Err(_) => panic!("the daemon did not start: {:?}", served.child.try_wait()),
            }
        }
        // The TCP line comes after the Unix one.
        if args.iter().any(|a| a.starts_with("--listen")) {
            let l = lines.recv_timeout(Duration::from_secs(10)).unwrap();
            served.tcp = Some(l.trim_start_matches("listening tcp:").to_string());
        }
        served
    }

    async fn client(&self) -> Client {
        client::connect(&Address::Unix(self.socket.clone()), None, 64 << 20)
            .await
            .unwrap()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Waits up to `limit` for the process to exit.
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t0.elapsed() < limit,
                "the daemon did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `zkpipe serve` on `socket` with `args`.
fn serve_command(socket: &Path, keys: &Path, args: &[&str]) -> Command {
    let mut cmd = support::zkpipe_command();
    cmd.arg("serve")
        .arg("--socket")
        .arg(socket)
        .arg("--keys-dir")
        .arg(keys)
        .args(["--set", "logging.level=warn"])
        .args(args);
    cmd
}

/// Starts the daemon; its stdout lines arrive on the channel.
fn spawn(socket: &Path, keys: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    support::spawn_with_lines(serve_command(socket, keys, args))
}

/// Starts the daemon in a folder of its own with `args`, `adjust` applied
/// to its command (environment, stderr); its stdout lines arrive on the
/// channel, none read yet.
fn spawn_adjusted(
    keys: &Path,
    args: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> (Served, mpsc::Receiver<String>) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let mut cmd = serve_command(&socket, keys, args);
    adjust(&mut cmd);
    let (child, lines) = support::spawn_with_lines(cmd);
    let served = Served {
        child,
        socket,
        tcp: None,
        keys: keys.to_path_buf(),
        _dir: dir,
    };
    (served, lines)
}

/// One synthesis worker and one device worker: jobs queue behind each other.
const ONE_WORKER_EACH: [&str; 4] = [
    "--set",
    "scheduler.knobs=partition_workers=1",
    "--set",
    "devices.gpu_workers_per_device=1",
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn job(
    circuit: &str,
    size: &str,
    seed: u64,
    partitions: u32,
    priority: Priority,
) -> proto::SubmitRequest {
    proto::SubmitRequest {
        request_id: String::new(),
        key: Some(proto::KeyId {
            circuit: circuit.into(),
            size: size.into(),
        }),
        priority: priority as i32,
        partitions,
        inputs: Some(proto::submit_request::Inputs::Builtin(
            proto::BuiltinInputs { seed },
        )),
    }
}

fn state(r: &proto::JobResult) -> JobState {
    JobState::try_from(r.state).unwrap()
}

/// Checks every proof of a succeeded job with the key's verifying key.
fn check_proofs(keys: &Path, req: &proto::SubmitRequest, r: &proto::JobResult) {
    assert_eq!(state(r), JobState::Succeeded, "{}", r.error);
    let key = req.key.as_ref().unwrap();
    let pvk = pvk(keys, &key.circuit, &key.size);
    assert_eq!(r.proofs.len() as u32, req.partitions.max(1));
    for p in &r.proofs {
        assert!(verifies(&pvk, p), "job {}", r.job_id);
    }
    // Its stage times, in pipeline order, the device's share within them.
    let order: Vec<&str> = r.stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(order.first(), Some(&"witness"), "{order:?}");
    let known: Vec<&str> = zkpipe_core::stage::Stage::ALL
        .iter()
        .map(|s| s.name())
        .collect();
    assert!(
        order.is_sorted_by_key(|s| known.iter().position(|k| k == s)),
        "{order:?}"
    );
    let total: f64 = r.stages.iter().map(|s| s.seconds).sum();
    assert!(r.device_s > 0.0 && r.device_s <= total + 1e-9, "{r:?}");
}

#[test]
fn load_of_15_clients_each_100_jobs_completes_every_job_once_verified() {
    // Beside them, a hostile client sends requests that must each be
    // refused (never queued, never taking the daemon down).
    let keys = shared_keys();
    let served = Served::start(&keys, &["--set", "scheduler.knobs=partition_workers=2"]);
    let rt = runtime();
    let shapes = [
        ("squaring-chain", "16"),
        ("squaring-chain", "32"),
        ("squaring-chain", "64"),
    ];
    let priorities = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    let t0 = Instant::now();
    let honest_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut hostile_client = rt.block_on(served.client());
    let hostile = {
        let done = honest_done.clone();
        rt.spawn(async move {
            let spoiled: Vec<(proto::SubmitRequest, tonic::Code)> = vec![
                (
                    job("squaring-chain", "2^31", 1, 1, Priority::Critical),
                    tonic::Code::ResourceExhausted,
                ),
                (
                    job("squaring-chain", "64", 1, 1000, Priority::Normal),
                    tonic::Code::InvalidArgument,
                ),
                (
                    proto::SubmitRequest {
                        priority: 77,
                        ..job("squaring-chain", "64", 1, 1, Priority::Normal)
                    },
                    tonic::Code::InvalidArgument,
                ),
                (
                    job("../../etc/passwd", "64", 1, 1, Priority::Normal),
                    tonic::Code::InvalidArgument,
                ),
                (
                    proto::SubmitRequest {
                        request_id: "z".repeat(5 << 20),
                        ..job("squaring-chain", "64", 1, 1, Priority::Normal)
                    },
                    tonic::Code::OutOfRange,
                ),
            ];
            let mut refused = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                for (req, code) in &spoiled {
                    let e = hostile_client.submit(req.clone()).await.unwrap_err();
                    assert_eq!(e.code(), *code, "{e:?}");
                    refused += 1;
                }
            }
            refused
        })
    };
    let results: Vec<Vec<(u64, Duration, proto::SubmitRequest, proto::JobResult)>> =
        rt.block_on(async {
            let mut tasks = vec![];
            for c in 0..15u64 {
                let mut client = served.client().await;
                tasks.push(tokio::spawn(async move {
                    let mut done = vec![];
                    for i in 0..100u64 {
                        let (circuit, size) = shapes[((c + i) % 3) as usize];
                        let mut req =
                            job(circuit, size, c * 1000 + i, 1, priorities[(i % 4) as usize]);
                        req.request_id = format!("client{c}-job{i}");
                        let t = Instant::now();
                        let r = client.prove(req.clone()).await.unwrap().into_inner();
                        done.push((r.job_id, t.elapsed(), req, r));
                    }
                    done
                }));
            }
            let mut all = vec![];
            for t in tasks {
                all.push(t.await.unwrap());
            }
            all
        });
    let wall = t0.elapsed();
    honest_done.store(true, std::sync::atomic::Ordering::Relaxed);
    let refused = rt.block_on(hostile).unwrap();
    assert!(refused >= 5, "the hostile client sent {refused} requests");
    // The daemon's peak memory stayed that of small keys.
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(peak_kib < 2 << 20, "the daemon peaked at {peak_kib} KiB");
    let mut ids = std::collections::HashSet::new();
    let mut latencies = vec![];
    for (id, latency, req, r) in results.iter().flatten() {
        assert!(ids.insert(*id), "job {id} returned twice");
        check_proofs(&served.keys, req, r);
        assert!(r.verified);
        latencies.push(*latency);
    }
    assert_eq!(ids.len(), 1500);
    latencies.sort();
    eprintln!(
        "1500 jobs in {:.2} s: {:.1} jobs/s, latency p50 {:.1} ms, p95 {:.1} ms",
        wall.as_secs_f64(),
        1500.0 / wall.as_secs_f64(),
        latencies[750].as_secs_f64() * 1e3,
        latencies[1425].as_secs_f64() * 1e3
    );
    // Nothing is left running or queued, and the metrics agree.
    let status = rt.block_on(async {
        served
            .client()
            .await
            .status(proto::StatusRequest {})
            .await
            .unwrap()
            .into_inner()
    });
    assert_eq!(status.jobs_in_flight, 0);
    let metrics = rt.block_on(async {
        served
            .client()
            .await
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text
    });
    let succeeded: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("zkpipe_jobs_ended_total{") && l.contains("state=\"succeeded\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(succeeded, 1500.0);
}

#[test]
fn kill_9_mid_batch_gives_clients_errors_and_a_restart_serves_cleanly() {
    let keys = shared_keys();
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_path_buf();
    let mut served = Served::start_in(dir, &keys, &[]);
    let rt = runtime();
    let killed_job = rt.block_on(async {
        let mut c = served.client().await;
        // Long enough to be mid-run when the daemon dies.
        let r = c
            .submit(job("squaring-chain", "16384", 1, 64, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        tokio::time::sleep(Duration::from_millis(500)).await;
        served.signal(libc::SIGKILL);
        let t = Instant::now();
        let awaited = tokio::time::timeout(
            Duration::from_secs(10),
            c.r#await(proto::AwaitRequest {
                job_id: r.job_id,
                timeout_ms: 0,
            }),
        )
        .await
        .expect("the client must not hang when the daemon dies");
        let status = awaited.unwrap_err();
        assert!(
            matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
            ),
            "{status:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(5));
        r.job_id
    });
    served.wait_exit(Duration::from_secs(5));
    // The socket file is left behind; a new daemon replaces it.
    assert!(served.socket.exists());
    let socket = served.socket.clone();
    drop(served);
    let (child, lines) = spawn(&socket, &keys, &[]);
    let line = lines.recv_timeout(Duration::from_secs(120)).unwrap();
    assert!(line.starts_with("listening unix:"), "{line}");
    let mut restarted = Served {
        child,
        socket,
        tcp: None,
        keys: keys.clone(),
        _dir: tempfile::tempdir().unwrap(),
    };
    rt.block_on(async {
        let mut c = restarted.client().await;
        for seed in 0..5 {
            let req = job("squaring-chain", "64", seed, 2, Priority::Normal);
            let r = c.prove(req.clone()).await.unwrap().into_inner();
            check_proofs(&keys, &req, &r);
        }
        // The killed run's job id names no job of the new run: its client
        // is never handed another client's proofs.
        let e = c
            .r#await(proto::AwaitRequest {
                job_id: killed_job,
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    });
    restarted.signal(libc::SIGTERM);
    assert!(restarted.wait_exit(Duration::from_secs(30)).success());
    assert!(!dir_path.join("zkpipe.sock").exists());
}

#[test]
fn cancel_removes_a_queued_job_and_stops_a_running_one() {
    let keys = shared_keys();
    let served = Served::start(&keys, &ONE_WORKER_EACH);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        let running = c
            .submit(job("squaring-chain", "16384", 1, 64, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        let queued = c
            .submit(job("squaring-chain", "16384", 2, 64, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        assert!(queued.queue_position >= 1, "{queued:?}");
        // Wait until the first is running.
        let t0 = Instant::now();
        loop {
            let r = c
                .r#await(proto::AwaitRequest {
                    job_id: running.job_id,
                    timeout_ms: 50,
                })
                .await
                .unwrap()
                .into_inner();
            if state(&r) == JobState::Running {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "never started: {r:?}"
            );
        }
        let q = c
            .cancel(proto::CancelRequest {
                job_id: queued.job_id,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(q.state, JobState::Cancelled as i32);
        let t = Instant::now();
        let r = c
            .cancel(proto::CancelRequest {
                job_id: running.job_id,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.state, JobState::Cancelled as i32);
        for id in [queued.job_id, running.job_id] {
            let r = c
                .r#await(proto::AwaitRequest {
                    job_id: id,
                    timeout_ms: 0,
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(state(&r), JobState::Cancelled);
            assert!(r.proofs.is_empty());
            assert!(r.error.contains("cancelled"), "{}", r.error);
        }
        // The running job's partitions stop at their next stage boundary
        // and their memory is returned.
        loop {
            let s = c
                .status(proto::StatusRequest {})
                .await
                .unwrap()
                .into_inner();
            if s.partitions_bytes == 0 && s.jobs_in_flight == 0 {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "memory not released: {s:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Cancelling an ended job leaves it as it ended; an unknown one is NOT_FOUND.
        let again = c
            .cancel(proto::CancelRequest {
                job_id: running.job_id,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(again.state, JobState::Cancelled as i32);
        let e = c
            .cancel(proto::CancelRequest { job_id: 999_999 })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
    });
}

#[test]
fn await_times_out_with_the_state_and_submit_is_idempotent() {
    let keys = shared_keys();
    let served = Served::start(&keys, &[]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        let mut req = job("squaring-chain", "16384", 5, 32, Priority::Normal);
        req.request_id = "same-id".into();
        let first = c.submit(req.clone()).await.unwrap().into_inner();
        let again = c.submit(req.clone()).await.unwrap().into_inner();
        assert_eq!(first.job_id, again.job_id);
        assert!(!first.duplicate && again.duplicate);
        let mut other = req.clone();
        other.partitions = 3;
        let e = c.submit(other).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::AlreadyExists, "{e:?}");

        let t = Instant::now();
        let r = c
            .r#await(proto::AwaitRequest {
                job_id: first.job_id,
                timeout_ms: 100,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(
            matches!(state(&r), JobState::Queued | JobState::Running),
            "{r:?}"
        );
        let r = c
            .r#await(proto::AwaitRequest {
                job_id: first.job_id,
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        check_proofs(&keys, &req, &r);
        // After the job ended, the same id still returns it.
        let late = c.submit(req.clone()).await.unwrap().into_inner();
        assert_eq!(late.job_id, first.job_id);
    });
}

#[test]
fn critical_jobs_overtake_a_full_normal_queue() {
    let keys = shared_keys();
    let served = Served::start(&keys, &ONE_WORKER_EACH);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        // Load the key first so that every job is queued behind the same start.
        c.preload_keys(proto::KeysRequest {
            keys: vec![proto::KeyId {
                circuit: "squaring-chain".into(),
                size: "4096".into(),
            }],
        })
        .await
        .unwrap();
        let mut normal = vec![];
        for seed in 0..12 {
            let r = c
                .submit(job("squaring-chain", "4096", seed, 4, Priority::Normal))
                .await
                .unwrap()
                .into_inner();
            normal.push(r.job_id);
        }
        let critical = c
            .submit(job("squaring-chain", "4096", 99, 4, Priority::Critical))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(critical.queue_position, 0, "{critical:?}");
        let mut ends = vec![];
        let mut handles = vec![];
        for id in normal.iter().copied().chain([critical.job_id]) {
            let mut c = c.clone();
            handles.push(tokio::spawn(async move {
                let r = c
                    .r#await(proto::AwaitRequest {
                        job_id: id,
                        timeout_ms: 0,
                    })
                    .await
                    .unwrap()
                    .into_inner();
                (Instant::now(), id, r)
            }));
        }
        for h in handles {
            let (at, id, r) = h.await.unwrap();
            assert_eq!(state(&r), JobState::Succeeded, "{}", r.error);
            ends.push((at, id));
        }
        ends.sort();
        let rank = ends
            .iter()
            .position(|(_, id)| *id == critical.job_id)
            .unwrap();
        // At most the jobs already started when it arrived finish before it.
        assert!(
            rank <= 3,
            "the critical job finished {rank}th of {}",
            ends.len()
        );
    });
}

#[test]
fn keys_are_evicted_under_a_small_budget_and_on_request() {
    let keys = shared_keys();
    // Room for one small key and its partitions, not two.
    let served = Served::start(&keys, &["--set", "memory.host_budget=6MiB"]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        for size in ["4096", "4097"] {
            let req = job("squaring-chain", size, 1, 1, Priority::Normal);
            let r = c.prove(req.clone()).await.unwrap().into_inner();
            check_proofs(&keys, &req, &r);
        }
        let s = c
            .status(proto::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        let loaded: Vec<String> = s.keys.iter().map(|k| k.key.clone().unwrap().size).collect();
        assert_eq!(loaded, vec!["4097"], "{s:?}");
        let m = c
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text;
        assert!(m.contains("zkpipe_key_evictions_total 1"), "{m}");

        let k = |size: &str| proto::KeysRequest {
            keys: vec![proto::KeyId {
                circuit: "squaring-chain".into(),
                size: size.into(),
            }],
        };
        let r = c.preload_keys(k("64")).await.unwrap().into_inner();
        assert!(r.keys[0].done, "{r:?}");
        let r = c.evict_keys(k("64")).await.unwrap().into_inner();
        assert!(r.keys[0].done, "{r:?}");
        let r = c.evict_keys(k("64")).await.unwrap().into_inner();
        assert!(
            !r.keys[0].done && r.keys[0].error.contains("not loaded"),
            "{r:?}"
        );
        // A key too large for the budget is refused with the reason, before
        // it is queued; the daemon stays up.
        let e = c
            .prove(job("squaring-chain", "65536", 1, 1, Priority::Normal))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
        assert!(e.message().contains("budget"), "{e:?}");
        c.status(proto::StatusRequest {}).await.unwrap();
    });
}

#[test]
fn a_corrupted_key_file_is_healed_and_an_unusable_key_folder_fails_only_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let rt = runtime();
    {
        let served = Served::start(&keys, &[]);
        rt.block_on(async {
            let req = job("squaring-chain", "64", 1, 1, Priority::Normal);
            let r = served
                .client()
                .await
                .prove(req.clone())
                .await
                .unwrap()
                .into_inner();
            check_proofs(&keys, &req, &r);
        });
    }
    // Corrupt the cached parameters; a new daemon must not prove with them.
    let entry = KeyStore::new(keys.join("keys")).entry(&KeyInfo {
        circuit: "squaring-chain".into(),
        size: "64".into(),
        synthetic: false,
    });
    let params = entry.join("params.bin");
    let mut bytes = std::fs::read(&params).unwrap();
    let n = bytes.len();
    bytes.truncate(n / 2);
    std::fs::write(&params, &bytes).unwrap();
    let served = Served::start(&keys, &[]);
    rt.block_on(async {
        let mut c = served.client().await;
        let req = job("squaring-chain", "64", 2, 1, Priority::Normal);
        let r = c.prove(req.clone()).await.unwrap().into_inner();
        check_proofs(&keys, &req, &r);
    });
    // A key folder that cannot be used: the job fails with the reason.
    let blocked = dir.path().join("not-a-folder");
    std::fs::write(&blocked, b"x").unwrap();
    let served = Served::start(&blocked, &[]);
    rt.block_on(async {
        let mut c = served.client().await;
        let r = c
            .prove(job("squaring-chain", "64", 1, 1, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(state(&r), JobState::Failed);
        assert!(r.error.contains("loading key"), "{}", r.error);
        c.status(proto::StatusRequest {}).await.unwrap();
    });
}

#[test]
fn malformed_and_oversized_requests_are_refused_and_the_daemon_stays_up() {
    let keys = shared_keys();
    let served = Served::start(&keys, &["--set", "daemon.max_message_bytes=65536"]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        let bad = [
            job("no-such-circuit", "1", 1, 1, Priority::Normal),
            job("squaring-chain", "../../etc", 1, 1, Priority::Normal),
            job("squaring-chain", "64", 1, 1000, Priority::Normal),
            proto::SubmitRequest {
                inputs: None,
                ..job("squaring-chain", "64", 1, 1, Priority::Normal)
            },
            proto::SubmitRequest {
                priority: 42,
                ..job("squaring-chain", "64", 1, 1, Priority::Normal)
            },
            proto::SubmitRequest {
                request_id: "x".repeat(500),
                ..job("squaring-chain", "64", 1, 1, Priority::Normal)
            },
        ];
        for req in bad {
            let e = c.submit(req.clone()).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{req:?}: {e:?}");
        }
        let huge = proto::SubmitRequest {
            request_id: "y".repeat(200_000),
            ..job("squaring-chain", "64", 1, 1, Priority::Normal)
        };
        let e = c.submit(huge).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::OutOfRange, "{e:?}");
        // A key far over the host budget is refused before it is queued
        // (recording it would abort the daemon), by submit and by preload.
        let e = c
            .submit(job("squaring-chain", "2^31", 1, 1, Priority::Normal))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
        assert!(e.message().contains("host budget"), "{e:?}");
        let r = c
            .preload_keys(proto::KeysRequest {
                keys: vec![proto::KeyId {
                    circuit: "squaring-chain".into(),
                    size: "2^31".into(),
                }],
            })
            .await;
        let refused = match r {
            Err(e) => e.message().contains("host budget"),
            Ok(reply) => format!("{:?}", reply.into_inner()).contains("host budget"),
        };
        assert!(refused, "preload of a key over the budget");
        let e = c
            .r#await(proto::AwaitRequest {
                job_id: 12345,
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
        let e = c
            .r#await(proto::AwaitRequest {
                job_id: 0,
                timeout_ms: u32::MAX,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
    });
    // Garbage on the socket: the connection is dropped, the daemon goes on.
    {
        use std::io::Write;
        let mut s = std::os::unix::net::UnixStream::connect(&served.socket).unwrap();
        let _ = s.write_all(&[0xff; 4096]);
    }
    rt.block_on(async {
        let req = job("squaring-chain", "64", 3, 1, Priority::Normal);
        let r = served
            .client()
            .await
            .prove(req.clone())
            .await
            .unwrap()
            .into_inner();
        check_proofs(&keys, &req, &r);
    });
}

#[test]
fn tcp_wants_the_token_on_every_call_and_off_loopback_needs_one() {
    let keys = shared_keys();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    let served = Served::start(
        &keys,
        &[
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let addr = Address::parse(served.tcp.as_deref().unwrap()).unwrap();
    let rt = runtime();
    rt.block_on(async {
        for wrong in [None, Some("guess")] {
            let mut c = client::connect(&addr, wrong, 1 << 20).await.unwrap();
            let e = c.status(proto::StatusRequest {}).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::Unauthenticated, "{wrong:?}");
        }
        let mut c = client::connect(&addr, Some("s3cret-token"), 1 << 20)
            .await
            .unwrap();
        let req = job("squaring-chain", "64", 4, 1, Priority::Normal);
        let r = c.prove(req.clone()).await.unwrap().into_inner();
        check_proofs(&keys, &req, &r);
    });
    // Refused before listening, exit 2: off loopback with no token or no
    // TLS; on loopback with no token unless asked for; plain HTTP off
    // loopback; status over HTTP with no token.
    let token = token.to_str().unwrap();
    for (args, needle) in [
        (vec!["--listen", "0.0.0.0:0"], "token_file"),
        (
            vec!["--listen", "0.0.0.0:0", "--token-file", token],
            "tls_cert",
        ),
        (vec!["--listen", "127.0.0.1:0"], "tcp_without_token"),
        (vec!["--status-http", "127.0.0.1:0"], "tcp_without_token"),
        (
            vec!["--status-http", "0.0.0.0:0", "--token-file", token],
            "not loopback",
        ),
        (
            vec!["--set", &format!("daemon.tls_cert={token}")],
            "tls_key",
        ),
    ] {
        let out = support::zkpipe_command()
            .arg("serve")
            .args(&args)
            .arg("--socket")
            .arg(dir.path().join("x.sock"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected `{needle}` in {err}"
        );
    }
    // Asked for: loopback TCP with no token starts, and serves.
    let open = Served::start(
        &keys,
        &[
            "--listen",
            "127.0.0.1:0",
            "--set",
            "daemon.tcp_without_token=true",
        ],
    );
    let addr = Address::parse(open.tcp.as_deref().unwrap()).unwrap();
    rt.block_on(async {
        let mut c = client::connect(&addr, None, 1 << 20).await.unwrap();
        c.status(proto::StatusRequest {}).await.unwrap();
    });
}

/// `GET path` over HTTP/1.1 with an optional bearer token: the status code.
fn http_get(addr: &str, path: &str, token: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn status_over_http_wants_the_token() {
    let keys = shared_keys();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "http-token\n").unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let (mut child, lines) = spawn(
        &socket,
        &keys,
        &[
            "--status-http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let http = loop {
        let l = lines.recv_timeout(Duration::from_secs(300)).unwrap();
        if let Some(a) = l.strip_prefix("listening http:") {
            break a.to_string();
        }
    };
    for path in ["/metrics", "/status"] {
        assert_eq!(http_get(&http, path, None), 401, "{path}");
        assert_eq!(http_get(&http, path, Some("guess")), 401, "{path}");
        assert_eq!(http_get(&http, path, Some("http-token")), 200, "{path}");
    }
    // The probes say nothing a token protects: an orchestrator's probe
    // carries none.
    for path in ["/healthz", "/readyz"] {
        assert_eq!(http_get(&http, path, None), 200, "{path}");
    }
    assert_eq!(http_get(&http, "/nothing-here", None), 404);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn build_info_is_reported_and_readyz_fails_while_draining() {
    let keys = shared_keys();
    let args = [
        "--status-http",
        "127.0.0.1:0",
        "--set",
        "daemon.tcp_without_token=true",
        "--set",
        "daemon.drain_timeout_s=120",
    ];
    let (mut served, lines) = spawn_adjusted(&keys, &args, |_| {});
    let http = loop {
        let l = lines.recv_timeout(Duration::from_secs(300)).unwrap();
        if let Some(a) = l.strip_prefix("listening http:") {
            break a.to_string();
        }
    };
    assert_eq!(http_get(&http, "/readyz", None), 200);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        let metrics = c
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text;
        let build = (metrics.lines())
            .find(|l| l.starts_with("zkpipe_build_info{"))
            .expect("zkpipe_build_info");
        let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
        assert!(build.ends_with(" 1"), "{build}");
        assert!(build.contains(&version), "{build}");
        assert!(build.contains("backend=\"cpu\""), "{build}");
        assert!(!build.contains("commit=\"\""), "{build}");
        for m in [
            "process_resident_memory_bytes ",
            "process_cpu_seconds_total ",
        ] {
            assert!(
                metrics.lines().any(|l| l.starts_with(m)),
                "no {m}in\n{metrics}"
            );
        }
        // Long enough to drain for a while: the probe is read meanwhile.
        let req = job("squaring-chain", "16384", 1, 32, Priority::Normal);
        let sub = c.submit(req.clone()).await.unwrap().into_inner();
        tokio::time::sleep(Duration::from_millis(200)).await;
        served.signal(libc::SIGTERM);
        let t0 = Instant::now();
        while http_get(&http, "/readyz", None) != 503 {
            assert!(t0.elapsed() < Duration::from_secs(30), "/readyz stayed 200");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(http_get(&http, "/healthz", None), 200);
        let r = c
            .r#await(proto::AwaitRequest {
                job_id: sub.job_id,
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        check_proofs(&keys, &req, &r);
    });
    assert!(served.wait_exit(Duration::from_secs(60)).success());
}

#[test]
fn tls_with_client_certificates_carries_jobs_and_refuses_clients_without() {
    let keys = shared_keys();
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key, client_cert, client_key] = support::tls_files(dir.path());
    let token = dir.path().join("token");
    std::fs::write(&token, "tls-token\n").unwrap();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let served = Served::start(
        &keys,
        &[
            "--listen",
            "0.0.0.0:0",
            "--token-file",
            &s(&token),
            "--set",
            &format!("daemon.tls_cert={}", s(&cert)),
            "--set",
            &format!("daemon.tls_key={}", s(&key)),
            "--set",
            &format!("daemon.tls_client_ca={}", s(&ca)),
        ],
    );
    let port = served
        .tcp
        .as_deref()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let addr = Address::parse(&format!("https://localhost:{port}")).unwrap();
    let read = |p: &PathBuf| std::fs::read(p).unwrap();
    let with_identity = client::ClientTls {
        ca: read(&ca),
        identity: Some((read(&client_cert), read(&client_key))),
    };
    let rt = runtime();
    rt.block_on(async {
        let mut c = client::connect_tls(&addr, Some("tls-token"), Some(&with_identity), 1 << 20)
            .await
            .unwrap();
        let req = job("squaring-chain", "64", 5, 1, Priority::Normal);
        let r = c.prove(req.clone()).await.unwrap().into_inner();
        check_proofs(&keys, &req, &r);
        // No client certificate: the handshake or the first call fails.
        let without = client::ClientTls {
            ca: read(&ca),
            identity: None,
        };
        let refused =
            match client::connect_tls(&addr, Some("tls-token"), Some(&without), 1 << 20).await {
                Err(_) => true,
                Ok(mut c) => c.status(proto::StatusRequest {}).await.is_err(),
            };
        assert!(refused, "a client without a certificate was served");
        // Plain h2c to the TLS port: no answer.
        let plain = Address::parse(&format!("127.0.0.1:{port}")).unwrap();
        let refused = match client::connect(&plain, Some("tls-token"), 1 << 20).await {
            Err(_) => true,
            Ok(mut c) => c.status(proto::StatusRequest {}).await.is_err(),
        };
        assert!(refused, "plain h2c was served on the TLS port");
    });
    // The CLI client speaks TLS with the same files.
    let out = support::zkpipe_command()
        .args(["client", "--addr", &format!("https://localhost:{port}")])
        .args(["--token-file", &s(&token), "--tls-ca", &s(&ca)])
        .args(["--tls-cert", &s(&client_cert), "--tls-key", &s(&client_key)])
        .arg("status")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verify_before_return_catches_a_device_that_corrupts_results() {
    let keys = shared_keys();
    // Every 3rd G1 MSM of the backend comes back wrong.
    let served = Served::start(&keys, &["--backend-opt", "fault=corrupt:3"]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = served.client().await;
        let mut recomputed = 0;
        for seed in 0..4 {
            let req = job("squaring-chain", "64", seed, 2, Priority::Normal);
            let r = c.prove(req.clone()).await.unwrap().into_inner();
            check_proofs(&keys, &req, &r);
            recomputed += r.recomputed_on_cpu as u32;
        }
        assert!(recomputed > 0);
        let s = c
            .status(proto::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(
            s.devices[0].flagged && s.devices[0].verify_failures > 0,
            "{s:?}"
        );
        let m = c
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text;
        assert!(m.contains("zkpipe_device_flagged{device=\"0\"} 1"), "{m}");
    });
    drop(served);
    // The same fault with verification off returns the wrong proofs: the
    // check above is what caught them.
    let served = Served::start(
        &keys,
        &[
            "--backend-opt",
            "fault=corrupt:1",
            "--set",
            "daemon.verify_before_return=false",
        ],
    );
    rt.block_on(async {
        let req = job("squaring-chain", "64", 1, 1, Priority::Normal);
        let r = served.client().await.prove(req).await.unwrap().into_inner();
        assert_eq!(state(&r), JobState::Succeeded);
        assert!(!r.verified);
        assert!(!verifies(&pvk(&keys, "squaring-chain", "64"), &r.proofs[0]));
    });
    drop(served);
    // A backend that fails outright fails the job with its reason.
    let served = Served::start(&keys, &["--backend-opt", "fault=fail:1"]);
    rt.block_on(async {
        let r = served
            .client()
            .await
            .prove(job("squaring-chain", "64", 1, 1, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(state(&r), JobState::Failed);
        assert!(r.error.contains("injected fault"), "{}", r.error);
    });
}

#[test]
fn sigterm_finishes_running_jobs_and_cancels_the_rest_at_the_deadline() {
    let keys = shared_keys();
    let rt = runtime();
    // A generous deadline: the running job finishes, the daemon exits 0.
    let mut served = Served::start(&keys, &["--set", "daemon.drain_timeout_s=120"]);
    rt.block_on(async {
        let mut c = served.client().await;
        let req = job("squaring-chain", "4096", 1, 8, Priority::Normal);
        let sub = c.submit(req.clone()).await.unwrap().into_inner();
        tokio::time::sleep(Duration::from_millis(200)).await;
        served.signal(libc::SIGTERM);
        let r = c
            .r#await(proto::AwaitRequest {
                job_id: sub.job_id,
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        check_proofs(&keys, &req, &r);
    });
    assert!(served.wait_exit(Duration::from_secs(60)).success());
    assert!(!served.socket.exists());
    // No deadline: the running job is cancelled with the reason, exit 0.
    let mut served = Served::start(&keys, &["--set", "daemon.drain_timeout_s=0"]);
    rt.block_on(async {
        let mut c = served.client().await;
        let sub = c
            .submit(job("squaring-chain", "16384", 1, 64, Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let waiter = {
            let mut c = c.clone();
            tokio::spawn(async move {
                c.r#await(proto::AwaitRequest {
                    job_id: sub.job_id,
                    timeout_ms: 0,
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        served.signal(libc::SIGTERM);
        let r = waiter.await.unwrap().unwrap().into_inner();
        assert_eq!(state(&r), JobState::Cancelled);
        assert!(r.error.contains("shutting down"), "{}", r.error);
    });
    assert!(served.wait_exit(Duration::from_secs(60)).success());
}

#[test]
fn a_live_daemon_keeps_its_socket() {
    let keys = shared_keys();
    let served = Served::start(&keys, &[]);
    let out = support::zkpipe_command()
        .arg("serve")
        .arg("--socket")
        .arg(&served.socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another zkpipe daemon"));
}

#[test]
fn config_files_and_flags_are_checked_and_printed() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        "[daemon]\nmax_jobs = 5\n[scheduler]\npolicy = \"split\"\n",
    )
    .unwrap();
    let out = support::zkpipe_command()
        .args(["serve", "--print-config", "--config"])
        .arg(&good)
        .args(["--set", "memory.host_budget=1GiB"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("max_jobs = 5") && text.contains("policy = \"split\""),
        "{text}"
    );
    assert!(text.contains("host_budget = \"1GiB\""), "{text}");
    // The socket it would listen on, not the empty default.
    assert!(
        !text.contains("socket = \"\"") && text.contains("zkpipe.sock"),
        "{text}"
    );
    for (name, body) in [
        ("unknown.toml", "[daemon]\nmax_jobz = 5\n"),
        ("type.toml", "[daemon]\nmax_jobs = \"many\"\n"),
        ("size.toml", "[memory]\nhost_budget = \"lots\"\n"),
        ("syntax.toml", "[daemon\n"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        let out = support::zkpipe_command()
            .args(["serve", "--print-config", "--config"])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
    }
    let out = support::zkpipe_command()
        .args(["serve", "--print-config", "--set", "daemon.nope=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_cli_client_proves_and_saves_verifiable_files() {
    let keys = shared_keys();
    let served = Served::start(&keys, &[]);
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("unix:{}", served.socket.display());
    let out = support::zkpipe_command()
        .current_dir(dir.path())
        .args([
            "client",
            "--addr",
            &addr,
            "prove",
            "--circuit",
            "squaring-chain",
            "--size",
            "64",
            "--partitions",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entry = KeyStore::new(keys.join("keys")).entry(&KeyInfo {
        circuit: "squaring-chain".into(),
        size: "64".into(),
        synthetic: false,
    });
    let verify = support::zkpipe_command()
        .current_dir(dir.path())
        .args([
            "verify",
            "--proof",
            "squaring-chain-64.proof",
            "--public",
            "squaring-chain-64.public.json",
            "--vk",
        ])
        .arg(entry.join("vk.bin"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&verify.stdout).trim(), "valid");
    let status = support::zkpipe_command()
        .args(["client", "--addr", &addr, "status"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&status.stdout).contains("key squaring-chain 64"));
    // Bad requests exit 2; no daemon at the address exits 1.
    let bad = support::zkpipe_command()
        .args(["client", "--addr", &addr, "submit", "--circuit", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let none = support::zkpipe_command()
        .args([
            "client",
            "--addr",
            "unix:/nonexistent/zkpipe.sock",
            "status",
        ])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
}

/// The value of every sample line of `name` (`name{…} value`).
fn samples<'a>(text: &'a str, name: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series, value.parse::<f64>().unwrap())
        })
        .collect()
}

#[test]
fn metrics_and_status_say_how_load_inflates_stages_and_what_bounds_the_daemon() {
    let keys = shared_keys();
    let served = Served::start(&keys, &[]);
    let rt = runtime();
    let status = rt.block_on(async {
        let mut c = served.client().await;
        // One at a time: each partition runs alone, the stages' baselines.
        for seed in 0..3 {
            let req = job("squaring-chain", "4096", seed, 1, Priority::Normal);
            let r = c.prove(req.clone()).await.unwrap().into_inner();
            check_proofs(&keys, &req, &r);
        }
        // Then together: partitions overlap, the stages run under load.
        let mut tasks = vec![];
        for seed in 10..14 {
            let mut c = served.client().await;
            tasks.push(tokio::spawn(async move {
                let req = job("squaring-chain", "4096", seed, 3, Priority::Normal);
                (req.clone(), c.prove(req).await.unwrap().into_inner())
            }));
        }
        for t in tasks {
            let (req, r) = t.await.unwrap();
            check_proofs(&keys, &req, &r);
        }
        // Spans reach the record at the daemon's next tick (every 250 ms),
        // and lone ones are settled a tick after their jobs end.
        let t0 = Instant::now();
        loop {
            let s = c
                .status(proto::StatusRequest {})
                .await
                .unwrap()
                .into_inner();
            let load = s.load.clone().unwrap();
            if load.partitions >= 15 && load.stages.iter().any(|st| st.samples > 0) {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "{load:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let load = status.load.clone().unwrap();
    assert!(load.bound == "device" || load.bound == "host", "{load:?}");
    assert!(
        load.host_floor_s > 0.0 && load.device_floor_s > 0.0,
        "{load:?}"
    );
    for st in &load.stages {
        assert_eq!(st.key, "squaring-chain 4096");
        assert!(st.alone_s > 0.0, "{st:?}");
        if st.samples > 0 {
            assert!(st.inflation.is_finite() && st.inflation > 0.0, "{st:?}");
        }
    }
    for d in &status.devices {
        assert!(d.busy_ratio > 0.0 && d.busy_ratio <= 1.0, "{d:?}");
    }

    let text = rt.block_on(async {
        served
            .client()
            .await
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text
    });
    let inflation = samples(&text, "zkpipe_stage_inflation");
    assert!(!inflation.is_empty(), "{text}");
    for (series, v) in &inflation {
        assert!(v.is_finite() && *v > 0.0, "{series} {v}");
        assert!(series.contains("key=\"squaring-chain 4096\""), "{series}");
    }
    let alone = samples(&text, "zkpipe_stage_alone_seconds");
    assert!(alone.len() >= inflation.len(), "{text}");
    assert!(alone.iter().all(|(_, v)| *v > 0.0), "{text}");
    let bound = samples(&text, "zkpipe_bound");
    assert_eq!(bound.len(), 2, "{text}");
    let current: Vec<_> = bound.iter().filter(|(_, v)| *v == 1.0).collect();
    assert_eq!(current.len(), 1, "{text}");
    assert!(current[0].0.contains(&format!("bound=\"{}\"", load.bound)));
    let floors = samples(&text, "zkpipe_floor_seconds_per_partition");
    assert_eq!(floors.len(), 2, "{text}");
    assert!(floors.iter().all(|(_, v)| *v > 0.0), "{text}");
    let ratio = samples(&text, "zkpipe_device_busy_ratio");
    assert!(!ratio.is_empty(), "{text}");
    assert!(ratio.iter().all(|(_, v)| *v > 0.0 && *v <= 1.0), "{text}");
    // Busy time only grows: a counter, under the counter's name.
    assert!(
        text.contains("# TYPE zkpipe_device_busy_seconds_total counter"),
        "{text}"
    );
    assert!(!text.contains("zkpipe_device_busy_seconds{"), "{text}");

    let out = support::zkpipe_command()
        .args([
            "client",
            "--addr",
            &format!("unix:{}", served.socket.display()),
        ])
        .arg("status")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}");
    assert!(
        printed.contains(&format!("bound: {0} ({0} floor ", load.bound)),
        "{printed}"
    );
    let line = printed
        .lines()
        .find(|l| l.starts_with("inflation, key squaring-chain 4096: "))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(line.contains("witness") && line.contains('×'), "{line}");
}

#[test]
fn bench_batch_through_the_daemon_reports_like_the_in_process_batch() {
    let keys = shared_keys();
    let served = Served::start(&keys, &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = support::zkpipe_command()
        .current_dir(dir.path())
        .args([
            "bench",
            "batch",
            "--circuit",
            "squaring-chain",
            "--size",
            "4096",
            "--count",
            "4",
        ])
        .args([
            "--partitions",
            "2",
            "--concurrency",
            "2",
            "--timeline",
            "--daemon",
        ])
        .arg(format!("unix:{}", served.socket.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("COMPLETED").count(), 4, "{text}");
    assert!(text.contains("policy daemon:priority"), "{text}");
    assert!(text.contains("verified 8"), "{text}");
    assert!(text.contains("TIMELINE,"), "{text}");
    let waterfall: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("zkpipe-batch/waterfall.json")).unwrap(),
    )
    .unwrap();
    let spans = waterfall["spans"].as_array().unwrap();
    // Every partition of every job has its device stage on the timeline.
    let msm = spans.iter().filter(|s| s["stage"] == "msm").count();
    assert_eq!(msm, 8, "{spans:?}");
    // The daemon's policy and knobs are its own: refused here.
    let out = support::zkpipe_command()
        .args([
            "bench",
            "batch",
            "--policy",
            "serial",
            "--daemon",
            "unix:/x.sock",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `zkpipe client` with `args` against `served`, in `dir`.
fn client_cli(served: &Served, dir: &Path, args: &[&str]) -> std::process::Output {
    let addr = format!("unix:{}", served.socket.display());
    support::zkpipe_command()
        .current_dir(dir)
        .args(["client", "--addr", &addr])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn circom_jobs_name_their_key_by_zkey_hash_and_return_snarkjs_json() {
    use support::circom_files::{BLS_R, square_r1cs, wtns_bytes};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let circom = d.join("circom");
    std::fs::create_dir(&circom).unwrap();
    std::fs::write(circom.join("sq.r1cs"), square_r1cs(BLS_R, 5)).unwrap();
    let zkey = circom.join("sq.zkey");
    let zkey = zkey.to_str().unwrap();
    let ok = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    ok(&support::zkpipe_command()
        .args(["setup", "--r1cs"])
        .arg(circom.join("sq.r1cs"))
        .args(["--zkey", zkey, "--seed", "5"])
        .output()
        .unwrap());
    ok(&support::zkpipe_command()
        .current_dir(d)
        .args(["export-vk", "--zkey", zkey, "--out", "vk.json"])
        .output()
        .unwrap());
    for (name, values) in [
        ("good.wtns", &[1u64, 9, 3][..]),
        ("short.wtns", &[1, 9]),
        ("wrong.wtns", &[1, 10, 3]),
    ] {
        std::fs::write(d.join(name), wtns_bytes(values)).unwrap();
    }
    std::fs::write(d.join("garbage.wtns"), b"wtns but not really").unwrap();
    // A zkey the daemon does not hold: the same circuit, another seed.
    let other = d.join("other.zkey");
    ok(&support::zkpipe_command()
        .args(["setup", "--r1cs"])
        .arg(circom.join("sq.r1cs"))
        .arg("--zkey")
        .arg(&other)
        .output()
        .unwrap());

    let served = Served::start(&shared_keys(), &["--circom-dir", circom.to_str().unwrap()]);
    let prove = |wtns: &[&str], zkey: &str| {
        let mut args = vec!["prove", "--zkey", zkey];
        for w in wtns {
            args.extend(["--wtns", w]);
        }
        client_cli(&served, d, &args)
    };
    ok(&prove(&["good.wtns"], zkey));
    let verify = support::zkpipe_command()
        .current_dir(d)
        .args([
            "verify",
            "--vk",
            "vk.json",
            "--proof",
            "proof.json",
            "--public",
            "public.json",
        ])
        .output()
        .unwrap();
    ok(&verify);
    assert_eq!(String::from_utf8_lossy(&verify.stdout).trim(), "valid");
    let public: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("public.json")).unwrap()).unwrap();
    assert_eq!(public, serde_json::json!(["9"]));
    // Two partitions: arrays of proofs and of public signals.
    ok(&prove(&["good.wtns", "good.wtns"], zkey));
    let proofs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("proof.json")).unwrap()).unwrap();
    assert_eq!(proofs.as_array().map(Vec::len), Some(2));
    assert_eq!(proofs[1]["curve"], "bls12381");
    let status = client_cli(&served, d, &["status"]);
    assert!(String::from_utf8_lossy(&status.stdout).contains("key circom "));

    // Refusals: each names the reason; the daemon stays up.
    let fails = |o: std::process::Output, code: i32, needle: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert!(err.contains(needle), "expected `{needle}` in: {err}");
    };
    fails(prove(&["garbage.wtns"], zkey), 2, "inputs.circom.wtns[0]");
    fails(prove(&["short.wtns"], zkey), 1, "another circuit");
    fails(prove(&["wrong.wtns"], zkey), 1, "constraint 0 fails");
    fails(
        prove(&["good.wtns"], other.to_str().unwrap()),
        1,
        "no zkey with SHA-256",
    );
    fails(
        client_cli(
            &served,
            d,
            &["submit", "--circuit", "circom", "--size", "../../x"],
        ),
        2,
        "SHA-256",
    );
    ok(&client_cli(&served, d, &["evict", "--zkey", zkey]));
    ok(&prove(&["good.wtns"], zkey));
    // Over gRPC: a witness that does not fit is the inputs' fault (a fleet
    // does not retry it); a good one is not.
    let hash = zkpipe_daemon::circom_keys::sha256_file(Path::new(zkey)).unwrap();
    let request = |wtns: &str| proto::SubmitRequest {
        key: Some(proto::KeyId {
            circuit: "circom".into(),
            size: hash.clone(),
        }),
        inputs: Some(proto::submit_request::Inputs::Circom(proto::CircomInputs {
            wtns: vec![std::fs::read(d.join(wtns)).unwrap()],
        })),
        ..Default::default()
    };
    runtime().block_on(async {
        let mut c = served.client().await;
        let bad = c.prove(request("wrong.wtns")).await.unwrap().into_inner();
        assert_eq!(state(&bad), JobState::Failed);
        assert!(bad.inputs_at_fault, "{bad:?}");
        let good = c.prove(request("good.wtns")).await.unwrap().into_inner();
        assert_eq!(state(&good), JobState::Succeeded);
        assert!(!good.inputs_at_fault);
    });
}

#[test]
fn bn254_circom_jobs_prove_verify_and_refuse_the_other_curve() {
    use support::circom_files::{BLS_R, BN254_R, square_r1cs, wtns_bytes_over};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let circom = d.join("circom");
    std::fs::create_dir(&circom).unwrap();
    // Both curves' keys in one folder: each job is proved on its key's curve.
    let zkey = |stem: &str, prime: &str| {
        std::fs::write(circom.join(format!("{stem}.r1cs")), square_r1cs(prime, 5)).unwrap();
        let zkey = circom.join(format!("{stem}.zkey"));
        let o = support::zkpipe_command()
            .args(["setup", "--r1cs"])
            .arg(circom.join(format!("{stem}.r1cs")))
            .arg("--zkey")
            .arg(&zkey)
            .args(["--seed", "5"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        zkey.to_str().unwrap().to_string()
    };
    let (bn, bls) = (zkey("bn", BN254_R), zkey("bls", BLS_R));
    let o = support::zkpipe_command()
        .current_dir(d)
        .args(["export-vk", "--zkey", &bn, "--out", "vk.json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (name, prime, values) in [
        ("good.wtns", BN254_R, &[1u64, 9, 3][..]),
        ("wrong.wtns", BN254_R, &[1, 10, 3]),
        ("no_one.wtns", BN254_R, &[2, 9, 3]),
        ("bls.wtns", BLS_R, &[1, 9, 3]),
    ] {
        std::fs::write(d.join(name), wtns_bytes_over(prime, values)).unwrap();
    }

    let served = Served::start(&shared_keys(), &["--circom-dir", circom.to_str().unwrap()]);
    let prove = |wtns: &[&str], zkey: &str| {
        let mut args = vec!["prove", "--zkey", zkey];
        for w in wtns {
            args.extend(["--wtns", w]);
        }
        client_cli(&served, d, &args)
    };
    let ok = |o: std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    ok(prove(&["good.wtns", "good.wtns"], &bn));
    let proofs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("proof.json")).unwrap()).unwrap();
    assert_eq!(proofs[1]["curve"], "bn128");
    ok(prove(&["good.wtns"], &bn));
    let verify = support::zkpipe_command()
        .current_dir(d)
        .args(["groth16", "verify", "vk.json", "public.json", "proof.json"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&verify.stdout).trim(), "valid");
    let public: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("public.json")).unwrap()).unwrap();
    assert_eq!(public, serde_json::json!(["9"]));
    // The BLS12-381 key beside it still proves its own witnesses.
    std::fs::write(d.join("bls_good.wtns"), wtns_bytes_over(BLS_R, &[1, 9, 3])).unwrap();
    ok(prove(&["bls_good.wtns"], &bls));

    let fails = |o: std::process::Output, code: i32, needle: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert!(err.contains(needle), "expected `{needle}` in: {err}");
    };
    fails(prove(&["bls.wtns"], &bn), 1, "is for BLS12-381, not BN254");
    fails(
        prove(&["good.wtns"], &bls),
        1,
        "is for BN254, not BLS12-381",
    );
    fails(
        prove(&["good.wtns", "bls.wtns"], &bn),
        2,
        "another curve's prime",
    );
    fails(prove(&["wrong.wtns"], &bn), 1, "constraint 0 fails");
    fails(prove(&["no_one.wtns"], &bn), 1, "does not start with 1");

    // Over gRPC: the result names its curve and carries Ethereum's 256 bytes.
    let hash = zkpipe_daemon::circom_keys::sha256_file(Path::new(&bn)).unwrap();
    runtime().block_on(async {
        let mut c = served.client().await;
        let good = c
            .prove(proto::SubmitRequest {
                key: Some(proto::KeyId {
                    circuit: "circom".into(),
                    size: hash.clone(),
                }),
                inputs: Some(proto::submit_request::Inputs::Circom(proto::CircomInputs {
                    wtns: vec![std::fs::read(d.join("good.wtns")).unwrap()],
                })),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(state(&good), JobState::Succeeded, "{good:?}");
        assert!(good.verified);
        assert_eq!(good.curve, "BN254");
        assert_eq!(good.proofs[0].proof.len(), 256);
        assert_eq!(good.proofs[0].public_inputs, ["9"]);
        let names: Vec<&str> = good.stages.iter().map(|s| s.stage.as_str()).collect();
        for stage in ["witness", "quotient", "msm", "msm_g2"] {
            assert!(names.contains(&stage), "{names:?}");
        }
        // The job metrics say which curve each job was over.
        let text = c
            .metrics(proto::MetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .text;
        let ended = |curve: &str| -> f64 {
            text.lines()
                .filter(|l| {
                    l.starts_with("zkpipe_jobs_ended_total{")
                        && l.contains("state=\"succeeded\"")
                        && l.contains(&format!("curve=\"{curve}\""))
                })
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
                .sum()
        };
        assert_eq!((ended("BN254"), ended("BLS12-381")), (3.0, 1.0), "{text}");
        assert!(
            text.contains("zkpipe_job_latency_seconds_count{curve=\"BN254\""),
            "{text}"
        );
    });
}

/// A circom job's witnesses travel in its request: past the client's old
/// 64 MiB cap they reach a daemon whose limit allows them (they used to
/// end in an opaque "h2 protocol error"), and witnesses no daemon takes
/// (over 1 GiB together) are refused before any is read.
#[test]
fn large_circom_requests_reach_the_daemon_and_impossible_ones_are_refused_up_front() {
    use support::circom_files::{BN254_R, square_r1cs, wtns_bytes_over};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let circom = d.join("circom");
    std::fs::create_dir(&circom).unwrap();
    std::fs::write(circom.join("bn.r1cs"), square_r1cs(BN254_R, 5)).unwrap();
    let zkey = circom.join("bn.zkey");
    let o = support::zkpipe_command()
        .args(["setup", "--r1cs"])
        .arg(circom.join("bn.r1cs"))
        .arg("--zkey")
        .arg(&zkey)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 1.2 M values (~38 MiB) each: the right prime, the wrong length.
    let values: Vec<u64> = (0..1_200_000).collect();
    std::fs::write(d.join("big.wtns"), wtns_bytes_over(BN254_R, &values)).unwrap();
    let served = Served::start(
        &shared_keys(),
        &[
            "--circom-dir",
            circom.to_str().unwrap(),
            "--set",
            "daemon.max_message_bytes=134217728",
        ],
    );
    let zkey = zkey.to_str().unwrap();
    let o = client_cli(
        &served,
        d,
        &[
            "prove", "--zkey", zkey, "--wtns", "big.wtns", "--wtns", "big.wtns",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && !err.contains("protocol error"),
        "{err}"
    );
    assert!(
        err.contains("1200000"),
        "the daemon read the witnesses: {err}"
    );

    for name in ["huge1.wtns", "huge2.wtns"] {
        let f = std::fs::File::create(d.join(name)).unwrap();
        f.set_len(600 << 20).unwrap(); // sparse: never read
    }
    let o = client_cli(
        &served,
        d,
        &[
            "submit",
            "--zkey",
            zkey,
            "--wtns",
            "huge1.wtns",
            "--wtns",
            "huge2.wtns",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("over the 1024 MiB a daemon takes"), "{err}");
}

/// User and system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): 14 and 15 of
    // the whole line are utime and stime.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn idle_tcp_connections_past_the_descriptor_limit_neither_spin_nor_lock_out_the_owner() {
    use std::os::unix::process::CommandExt;
    let keys = shared_keys();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let mut cmd = support::zkpipe_command();
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--keys-dir")
        .arg(&keys)
        .args(["--set", "logging.level=error"])
        .args(["--listen", "127.0.0.1:0"])
        .args(["--set", "daemon.tcp_without_token=true"]);
    // SAFETY: setrlimit is async-signal-safe and touches only `lim`.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 128,
                rlim_max: 128,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (child, lines) = support::spawn_with_lines(cmd);
    let child = KillOnDrop(child);
    let tcp = loop {
        let l = lines.recv_timeout(Duration::from_secs(300)).unwrap();
        if let Some(a) = l.strip_prefix("listening tcp:") {
            break a.to_string();
        }
    };
    // More idle connections than the daemon has descriptors.
    let idle: Vec<std::net::TcpStream> = (0..150)
        .map(|_| std::net::TcpStream::connect(&tcp).unwrap())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_ticks(child.0.id());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(child.0.id()) - before;
    // 100 ticks a second: a busy loop would use most of 300.
    assert!(
        used < 60,
        "the daemon used {used} ticks of CPU in 3 s with idle clients"
    );
    let rt = runtime();
    rt.block_on(async {
        let t = Instant::now();
        let mut c = client::connect(&Address::Unix(socket.clone()), None, 1 << 20)
            .await
            .unwrap();
        c.status(proto::StatusRequest {}).await.unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "the owner waited {:?}",
            t.elapsed()
        );
    });
    // Silent connections are closed after the grace period (what the
    // server sent first, its HTTP/2 settings, then the end).
    let mut first = idle.into_iter().next().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut got = Vec::new();
    let end = std::io::Read::read_to_end(&mut first, &mut got);
    assert!(end.is_ok(), "a silent connection was kept open: {end:?}");
}

/// Kills the child when the test ends, also on a failed assertion.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The startup line says what started (version, backend, devices, policy,
/// where it listens), and JSON logs carry plain values: an absent listener
/// is absent, not Rust's `None`.
#[test]
fn the_startup_line_says_what_started_in_plain_json() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let mut child = support::zkpipe_command()
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .args(["--set", "logging.format=json", "--policy", "split"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        if line.unwrap().starts_with("listening unix:") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    let started = logs
        .lines()
        .find(|l| l.contains("zkpipe daemon listening"))
        .unwrap_or_else(|| panic!("no startup line in: {logs}"));
    let v: serde_json::Value = serde_json::from_str(started).unwrap();
    let f = &v["fields"];
    assert_eq!(f["version"], env!("CARGO_PKG_VERSION"), "{started}");
    assert_eq!(f["backend"], "cpu", "{started}");
    assert_eq!(f["policy"], "split", "{started}");
    assert!(
        f["devices"].as_str().is_some_and(|d| d.starts_with("0 ")),
        "{started}"
    );
    assert!(f["tcp"].is_null() && f.get("tcp").is_none(), "{started}");
    assert!(
        !started.contains("None") && !started.contains("Some("),
        "{started}"
    );
}

#[test]
fn tells_systemd_when_it_is_ready_and_when_it_stops() {
    use std::os::unix::net::UnixDatagram;
    let keys = shared_keys();
    let notify_dir = tempfile::tempdir().unwrap();
    let notify_path = notify_dir.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    let (mut served, lines) = spawn_adjusted(&keys, &[], |cmd| {
        cmd.env("NOTIFY_SOCKET", &notify_path);
    });
    let mut buf = [0u8; 512];
    let read = |buf: &mut [u8]| {
        let n = notify.recv(buf).expect("a message to systemd");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    // READY only once it listens: the ready line is already out.
    assert_eq!(read(&mut buf), "READY=1\n");
    let first = lines.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(first.starts_with("listening unix:"), "{first}");
    served.signal(libc::SIGTERM);
    let stopping = read(&mut buf);
    assert!(
        stopping.starts_with("STOPPING=1\nSTATUS=draining"),
        "{stopping}"
    );
    assert!(served.wait_exit(Duration::from_secs(60)).success());
}

#[test]
fn a_jobs_stage_lines_come_before_its_end_line() {
    let keys = shared_keys();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("daemon.log");
    let args = [
        "--set",
        "logging.level=warn,zkpipe::stage=debug,zkpipe_daemon=info",
        "--set",
        "logging.format=json",
    ];
    let (mut served, lines) = spawn_adjusted(&keys, &args, |cmd| {
        cmd.stderr(std::fs::File::create(&log).unwrap());
    });
    let first = lines.recv_timeout(Duration::from_secs(300)).unwrap();
    assert!(first.starts_with("listening unix:"), "{first}");
    let rt = runtime();
    let ids: Vec<u64> = rt.block_on(async {
        let mut c = served.client().await;
        let mut ids = Vec::new();
        for seed in 0..3 {
            let req = job("squaring-chain", "64", seed, 2, Priority::Normal);
            let r = c.prove(req.clone()).await.unwrap().into_inner();
            check_proofs(&keys, &req, &r);
            ids.push(r.job_id);
        }
        ids
    });
    served.signal(libc::SIGTERM);
    assert!(served.wait_exit(Duration::from_secs(60)).success());
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = (text.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for id in ids {
        let of_job = |e: &serde_json::Value, msg: &str| {
            e["fields"]["message"] == msg && e["fields"]["job"].as_u64() == Some(id)
        };
        let ended = (events.iter())
            .position(|e| of_job(e, "job ended"))
            .unwrap_or_else(|| panic!("no 'job ended' for job {id}:\n{text}"));
        let stages: Vec<usize> = (events.iter().enumerate())
            .filter(|(_, e)| of_job(e, "stage"))
            .map(|(i, _)| i)
            .collect();
        assert!(!stages.is_empty(), "no stage lines for job {id}:\n{text}");
        assert!(
            stages.iter().all(|&i| i < ended),
            "job {id}: a stage line after 'job ended':\n{text}"
        );
    }
}

#[test]
fn a_notify_socket_that_is_not_there_costs_a_warning_not_the_daemon() {
    let keys = shared_keys();
    let (served, lines) = spawn_adjusted(&keys, &[], |cmd| {
        cmd.env("NOTIFY_SOCKET", "/nonexistent/zkpipe-notify");
    });
    let first = lines.recv_timeout(Duration::from_secs(300)).unwrap();
    assert!(first.starts_with("listening unix:"), "{first}");
    let status = runtime().block_on(async {
        served
            .client()
            .await
            .status(proto::StatusRequest {})
            .await
            .unwrap()
            .into_inner()
    });
    assert!(!status.draining);
}

/// A key set up for a preload shows in `Status` while it loads, with the
/// phase its setup is in, and is gone from it once loaded.
#[test]
fn status_shows_a_key_while_it_loads() {
    let keys = tempfile::tempdir().unwrap();
    let served = Served::start(keys.path(), &[]);
    let rt = runtime();
    rt.block_on(async {
        let key = proto::KeyId {
            circuit: "squaring-chain".into(),
            size: "65536".into(),
        };
        let mut loader = served.client().await;
        let request = proto::KeysRequest {
            keys: vec![key.clone()],
        };
        let preload = tokio::spawn(async move { loader.preload_keys(request).await });
        let mut c = served.client().await;
        let mut seen = None;
        while !preload.is_finished() && seen.is_none() {
            let s = c
                .status(proto::StatusRequest {})
                .await
                .unwrap()
                .into_inner();
            seen = s.loading.into_iter().find(|l| l.key.as_ref() == Some(&key));
        }
        let seen = seen.expect("the load never showed in Status");
        assert!(
            seen.phase.contains("setup") || seen.phase.contains("record"),
            "{seen:?}"
        );
        assert!(seen.done <= seen.total, "{seen:?}");
        let r = preload.await.unwrap().unwrap().into_inner();
        assert!(r.keys.iter().all(|k| k.done), "{r:?}");
        let s = c
            .status(proto::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(s.loading.is_empty(), "{:?}", s.loading);
        let lines = zkpipe_daemon::reply_text::status_lines(&s).join("\n");
        assert!(lines.contains("squaring-chain 65536"), "{lines}");
    });
}
