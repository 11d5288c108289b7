//! A small real batch through the scheduling engine on the CPU plugin: every
//! proof verifies and the waterfall holds every stage of every partition,
//! under each built-in policy.

use std::sync::Arc;
use zkpipe::Stage;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::groth16::{self, PreparedVerifyingKey};
use zkpipe::plugin::BackendConfig;
use zkpipe::r1cs::circuit::CircuitSource;
use zkpipe::sched::batch;
use zkpipe::sched::{Engine, JobRequest, builtin};
use zkpipe_circuits::BuiltinCircuit;

#[path = "support/common.rs"]
mod common;

#[test]
fn every_policy_proves_a_batch_that_verifies_with_a_complete_waterfall() {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let circuit = Arc::new(BuiltinCircuit::new("poseidon-merkle", "1x2").unwrap());
    let r1cs = Arc::new(circuit.record().unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 3));
    let pvk = PreparedVerifyingKey::new(&params.vk);

    for policy in ["serial", "pipelined", "split", "throttle", "priority"] {
        let policy_box = builtin(policy, None, &[]).unwrap();
        let device = Arc::new(reg.create("cpu", &BackendConfig::default()).unwrap());
        let workload = batch::groth16_workload(
            &reg,
            device,
            params.clone(),
            r1cs.clone(),
            circuit.clone(),
            policy_box.settings(),
        )
        .unwrap();
        let engine = Engine::new(workload, policy_box).unwrap();

        let jobs: Vec<_> = (0..3)
            .map(|j| {
                engine.submit(JobRequest {
                    partitions: 2,
                    priority: j as i32,
                    seed: j,
                })
            })
            .collect();
        for h in jobs {
            let out = h.wait();
            let proofs = out.result.unwrap_or_else(|e| panic!("{policy}: {e}"));
            assert_eq!(proofs.len(), 2);
            for p in &proofs {
                let (proof, public_inputs) = p.bls12_381().unwrap();
                assert!(
                    groth16::verify(&pvk, proof, public_inputs).unwrap(),
                    "{policy}: a proof does not verify"
                );
            }
        }
        let tl = engine.shutdown();
        for job in 0..3 {
            for part in 0..2 {
                for stage in Stage::ALL {
                    let n = tl
                        .iter()
                        .filter(|s| s.job == job && s.partition == part && s.stage == stage)
                        .count();
                    assert_eq!(
                        n, 1,
                        "{policy}: job {job} partition {part}: stage {stage} appears {n} times"
                    );
                }
            }
        }
        assert!(tl.iter().all(|s| s.end_ms >= s.start_ms));
    }
}

/// A partition over the device budget runs its device stages on the host
/// backend (the Groth16 workload's fallback) and still proves correctly.
#[test]
fn partitions_over_the_device_budget_fall_back_to_the_host_and_verify() {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let circuit = Arc::new(BuiltinCircuit::new("poseidon-merkle", "1x2").unwrap());
    let r1cs = Arc::new(circuit.record().unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 5));
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let device = Arc::new(reg.create("cpu", &BackendConfig::default()).unwrap());
    let knobs = [("device_memory_budget".to_string(), "1".to_string())];
    let policy = builtin("pipelined", None, &knobs).unwrap();
    let workload = batch::groth16_workload(
        &reg,
        device,
        params.clone(),
        r1cs,
        circuit,
        policy.settings(),
    )
    .unwrap();
    let engine = Engine::new(workload, policy).unwrap();
    let out = engine
        .submit(JobRequest {
            partitions: 2,
            priority: 0,
            seed: 7,
        })
        .wait();
    assert_eq!(out.oom_fallbacks, 2);
    for p in out.result.unwrap() {
        let (proof, public_inputs) = p.bls12_381().unwrap();
        assert!(groth16::verify(&pvk, proof, public_inputs).unwrap());
    }
    let tl = engine.timeline();
    assert!(
        tl.iter().all(|s| s.device.is_none()),
        "nothing ran as device work"
    );
    assert!(
        tl.iter()
            .any(|s| s.stage == Stage::Quotient && s.lane.ends_with("-host"))
    );
}

/// Where the prover runs SpMV in its backend (asked of the CPU plugin
/// here), synthesis makes only the witness, the device worker's `spmv`
/// span is the one call that also makes `h`, and the proofs are the host
/// path's, byte for byte.
#[test]
fn device_spmv_runs_as_device_work_and_proves_what_the_host_path_proves() {
    use zkpipe::sched::groth16_workload::{Groth16Workload, WitnessFn};
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let circuit = Arc::new(BuiltinCircuit::new("poseidon-merkle", "1x2").unwrap());
    let r1cs = Arc::new(circuit.record().unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 9));
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let cpu = Arc::new(reg.create("cpu", &BackendConfig::default()).unwrap());
    let run = |device_spmv: bool| {
        let prover = groth16::ProverBuilder::new(cpu.clone())
            .device_spmv(device_spmv)
            .build(params.clone(), r1cs.clone())
            .unwrap();
        assert_eq!(prover.device_spmv(), device_spmv);
        let c = circuit.clone();
        let witness: WitnessFn = Arc::new(move |seed, _| c.witness(seed));
        let workload = Groth16Workload::new(vec![prover], cpu.clone(), witness);
        let engine = Engine::new(workload, builtin("pipelined", None, &[]).unwrap()).unwrap();
        let out = engine
            .submit(JobRequest {
                partitions: 2,
                priority: 0,
                seed: 11,
            })
            .wait();
        (out.result.unwrap(), engine.shutdown())
    };
    let (fused, tl) = run(true);
    let (host, _) = run(false);
    assert_eq!(fused.len(), 2);
    for (a, b) in fused.iter().zip(&host) {
        assert_eq!(a.proof.encoded(), b.proof.encoded());
        let (proof, public_inputs) = a.bls12_381().unwrap();
        assert!(groth16::verify(&pvk, proof, public_inputs).unwrap());
    }
    let spmv: Vec<_> = tl.iter().filter(|s| s.stage == Stage::Spmv).collect();
    assert_eq!(spmv.len(), 2);
    assert!(spmv.iter().all(|s| s.device == Some(0)), "{spmv:?}");
    assert!(!tl.iter().any(|s| s.stage == Stage::Quotient));
}
