//! A scheduling policy loaded from a plugin (`policies/round-robin`) drives
//! the engine exactly like a built-in one, and can move its limits while it
//! runs; bad libraries are refused clearly.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::groth16;
use zkpipe::plugin::BackendConfig;
use zkpipe::r1cs::circuit::CircuitSource;
use zkpipe::sched::batch;
use zkpipe::sched::groth16_workload::Groth16Workload;
use zkpipe::sched::policy_plugin::{POLICY_ABI_VERSION, load_policy};
use zkpipe::sched::{Engine, JobRequest, Limits, Settings};
use zkpipe_circuits::BuiltinCircuit;

#[path = "support/common.rs"]
mod common;
use common::build_dir;

#[test]
fn the_round_robin_plugin_interleaves_jobs() {
    let lib = build_dir().join("libzkpipe_policy_round_robin.so");
    let overrides = vec![("partition_workers".to_string(), "1".to_string())];
    let policy = load_policy(&lib, &Settings::default(), &overrides).unwrap();
    assert_eq!(policy.name(), "round-robin");
    assert_eq!(policy.settings().partition_workers, 1, "host overrides win");
    assert_eq!(
        policy.settings().gpu_workers_per_device,
        2,
        "the plugin's preset applies"
    );

    let reg = Registry::load(&SearchPath::only([build_dir()]));
    let circuit = Arc::new(BuiltinCircuit::new("squaring-chain", "32").unwrap());
    let r1cs = Arc::new(circuit.record().unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 1));
    let be = Arc::new(reg.create("cpu", &BackendConfig::default()).unwrap());
    let workload =
        batch::groth16_workload(&reg, be, params, r1cs, circuit, policy.settings()).unwrap();
    let engine = Engine::new(workload, policy).unwrap();

    // Both jobs queued before anything starts: the order is the policy's alone.
    engine.set_paused(true);
    let a = engine.submit(JobRequest {
        partitions: 3,
        priority: 0,
        seed: 1,
    });
    let b = engine.submit(JobRequest {
        partitions: 3,
        priority: 0,
        seed: 2,
    });
    engine.set_paused(false);
    assert!(a.wait().result.is_ok() && b.wait().result.is_ok());

    let mut witness_spans: Vec<_> = engine
        .timeline()
        .into_iter()
        .filter(|s| s.stage == zkpipe::Stage::Witness)
        .collect();
    witness_spans.sort_by(|x, y| x.start_ms.total_cmp(&y.start_ms));
    let order: Vec<(u64, u32)> = witness_spans.iter().map(|s| (s.job, s.partition)).collect();
    assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
}

#[test]
fn libraries_that_are_not_policy_plugins_are_refused() {
    let e = load_policy(
        &build_dir().join("libzkpipe_backend_cpu.so"),
        &Settings::default(),
        &[],
    )
    .err()
    .expect("an error")
    .to_string();
    assert!(
        e.contains("policy plugin") && e.contains("libzkpipe_backend_cpu.so"),
        "{e}"
    );
    let e = load_policy(
        &build_dir().join("no-such-policy.so"),
        &Settings::default(),
        &[],
    )
    .err()
    .expect("an error")
    .to_string();
    assert!(e.contains("no-such-policy.so"), "{e}");
    let lib = build_dir().join("libzkpipe_policy_round_robin.so");
    let e = load_policy(
        &lib,
        &Settings::default(),
        &[("gpu_threads".into(), "0".into())],
    )
    .err()
    .expect("an error")
    .to_string();
    assert!(e.contains("gpu_threads must be at least 1"), "{e}");
}

/// A policy library cut inside the segments dlopen maps used to reach
/// dlopen, whose first touch past the end of the file raised SIGBUS and
/// killed the process. It is refused with the reason; the intact library
/// still loads afterwards.
#[test]
fn a_truncated_policy_library_is_refused_not_a_crash() {
    let lib = build_dir().join("libzkpipe_policy_round_robin.so");
    let bytes = std::fs::read(&lib).unwrap();
    let loaded_end = common::end_of_loaded_segments(&bytes) as usize;
    assert!(loaded_end < bytes.len(), "{loaded_end} of {}", bytes.len());
    let dir = tempfile::tempdir().unwrap();
    let cut_at = loaded_end / 2;
    let cut = dir.path().join("libzkpipe_policy_cut.so");
    std::fs::write(&cut, &bytes[..cut_at]).unwrap();

    let e = load_policy(&cut, &Settings::default(), &[])
        .err()
        .expect("an error")
        .to_string();
    for needle in [
        "policy plugin",
        "libzkpipe_policy_cut.so",
        "truncated ELF",
        "segment",
        &format!("file is {cut_at} bytes"),
    ] {
        assert!(e.contains(needle), "{e:?} does not mention {needle:?}");
    }
    let policy = load_policy(&lib, &Settings::default(), &[]).unwrap();
    assert_eq!(policy.name(), "round-robin");
}

/// An engine proving the squaring chain on the CPU backend under the policy
/// plugin `lib`, with two synthesis workers.
fn engine_under(lib: &Path) -> Engine<Groth16Workload> {
    let overrides = [("partition_workers".to_string(), "2".to_string())];
    let policy = load_policy(lib, &Settings::default(), &overrides).unwrap();
    let reg = Registry::load(&SearchPath::only([build_dir()]));
    let circuit = Arc::new(BuiltinCircuit::new("squaring-chain", "32").unwrap());
    let r1cs = Arc::new(circuit.record().unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 1));
    let be = Arc::new(reg.create("cpu", &BackendConfig::default()).unwrap());
    let workload =
        batch::groth16_workload(&reg, be, params, r1cs, circuit, policy.settings()).unwrap();
    Engine::new(workload, policy).unwrap()
}

fn prove(engine: &Engine<Groth16Workload>, partitions: u32, seed: u64) {
    let job = engine.submit(JobRequest {
        partitions,
        priority: 0,
        seed,
    });
    let outcome = job.wait();
    assert!(outcome.result.is_ok(), "{:?}", outcome.result.err());
}

/// The engine asks the policy after a partition's device stages, once the
/// partition is already delivered: wait for the limits to move.
fn first_move(engine: &Engine<Groth16Workload>) -> (f64, Limits) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(&first) = engine.limit_changes().first() {
            return first;
        }
        assert!(Instant::now() < deadline, "the limits never moved");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `tests/plugins/adapting-policy` answers its first observation with one
/// synthesis at a time (and an SpMV limit and lookahead out of range): the
/// engine applies it, kept within its ceiling, and keeps it.
#[test]
fn a_plugin_policy_adjusts_the_limits_while_the_engine_runs() {
    let engine = engine_under(&build_dir().join("libzkpipe_fixture_adapting_policy.so"));
    let ceiling = engine.limits();
    assert_eq!(ceiling.synthesis, 2, "{ceiling:?}");

    prove(&engine, 1, 1);
    let (_, moved) = first_move(&engine);
    let expected = Limits {
        synthesis: 1,
        spmv: ceiling.spmv.min(1),
        lookahead: ceiling.lookahead * 4,
    };
    assert_eq!(moved, expected);
    assert_eq!(engine.limits(), expected);

    // The run goes on under the new limits; the plugin answered once.
    prove(&engine, 4, 2);
    assert_eq!(engine.limits(), expected);
    assert_eq!(engine.limit_changes().len(), 1);
}

/// `tests/plugins/panicky-policy` panics in its first `adjust` and asks for
/// one synthesis at a time in its second: the run goes on, the panic
/// changes nothing, and the next answer is applied.
#[test]
fn a_plugin_policy_whose_adjust_panics_keeps_the_run_going() {
    let engine = engine_under(&build_dir().join("libzkpipe_fixture_panicky_policy.so"));
    let ceiling = engine.limits();

    prove(&engine, 1, 1);
    prove(&engine, 2, 2);
    let (_, moved) = first_move(&engine);
    assert_eq!(
        moved,
        Limits {
            synthesis: 1,
            ..ceiling
        }
    );
    assert_eq!(engine.limit_changes().len(), 1);
    prove(&engine, 2, 3);
}

#[test]
fn a_plugin_built_for_another_policy_abi_is_refused() {
    let lib = build_dir().join("libzkpipe_fixture_old_policy_abi.so");
    let e = load_policy(&lib, &Settings::default(), &[])
        .err()
        .expect("an error")
        .to_string();
    for needle in [
        "libzkpipe_fixture_old_policy_abi.so".to_string(),
        format!("built for policy ABI {}", POLICY_ABI_VERSION - 1),
        format!("this host speaks policy ABI {POLICY_ABI_VERSION}"),
        "rebuild".to_string(),
    ] {
        assert!(e.contains(&needle), "{e:?} does not mention {needle:?}");
    }
}
