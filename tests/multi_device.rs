//! Several devices for real, without GPUs: the CPU backend's `devices=N`
//! logical devices. Provers are bound to a device, their bases live there,
//! the engine places partitions on every device, and a device a backend
//! does not have is refused.

use std::sync::Arc;
use zkpipe::groth16::{self, PreparedVerifyingKey, ProverBuilder};
use zkpipe::loader::{Registry, SearchPath};
use zkpipe::plugin::{BackendConfig, KeyValue, MsmConfig};
use zkpipe::sched::batch::{self, BatchSpec, Verify};
use zkpipe::sched::{Engine, builtin};
use zkpipe::{Error, sample};
use zkpipe_circuits::BuiltinCircuit;

#[path = "support/common.rs"]
mod common;

fn cpu_with_devices(reg: &Registry, n: u32) -> Arc<zkpipe::Backend> {
    let config = BackendConfig {
        threads: Some(2 * n).into(),
        ext: vec![KeyValue {
            key: "devices".into(),
            value: n.to_string().into(),
        }]
        .into(),
    };
    Arc::new(reg.create("cpu", &config).unwrap())
}

#[test]
fn bases_live_on_the_device_they_were_uploaded_to() {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let be = cpu_with_devices(&reg, 2);
    assert_eq!(be.info().devices.len(), 2);
    let bases = sample::g1_points(64, 1);
    let scalars = sample::scalars(64, 2);
    let on = |device| MsmConfig {
        device,
        ..Default::default()
    };
    let h = be.upload_bases_g1(&bases, 1).unwrap();
    let want = be.msm_g1(&bases[..], &scalars, &on(0)).unwrap();
    assert_eq!(be.msm_g1(h, &scalars, &on(1)).unwrap(), want);
    let e = be.msm_g1(h, &scalars, &on(0)).unwrap_err().to_string();
    assert!(e.contains("lives on device 1"), "{e}");
    let e = be
        .msm_g1(&bases[..], &scalars, &on(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no device 2"), "{e}");
    be.drop_bases(h).unwrap();
}

#[test]
fn a_prover_for_a_device_the_backend_lacks_is_refused() {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let be = cpu_with_devices(&reg, 2);
    let c = BuiltinCircuit::new("squaring-chain", "16").unwrap();
    let r1cs = Arc::new(zkpipe::circuit::CircuitSource::record(&c).unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 1));
    let e = ProverBuilder::new(be.clone())
        .device(2)
        .build(params.clone(), r1cs.clone())
        .unwrap_err();
    assert!(matches!(e, Error::NoDevice { device: 2, .. }), "{e}");
    let prover = ProverBuilder::new(be)
        .device(1)
        .build(params, r1cs)
        .unwrap();
    assert_eq!(prover.device(), 1);
}

#[test]
fn a_batch_runs_on_every_device_and_every_proof_verifies() {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let be = cpu_with_devices(&reg, 2);
    let c = Arc::new(BuiltinCircuit::new("poseidon-merkle", "1x2").unwrap());
    let r1cs = Arc::new(zkpipe::circuit::CircuitSource::record(&*c).unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 4));
    let policy = builtin("pipelined", None, &[]).unwrap();
    let workload =
        batch::groth16_workload(&reg, be, params.clone(), r1cs, c, policy.settings()).unwrap();
    let engine = Engine::new(workload, policy.clone()).unwrap();
    let spec = BatchSpec {
        count: 4,
        partitions: 2,
        concurrency: 4,
        verify: Verify::All,
    };
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let run = batch::run_batch(engine, &spec, &pvk, &mut |_| {}).unwrap();
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    assert_eq!(run.verified, 8);
    assert_eq!(run.devices, 2);
    for d in 0..2 {
        assert!(
            run.timeline.iter().any(|s| s.device == Some(d)),
            "no device stage ran on device {d}"
        );
        assert!(
            run.timeline
                .iter()
                .any(|s| s.device == Some(d) && s.lane.starts_with(&format!("dev{d}-"))),
            "device {d}'s stages are on its own lanes"
        );
    }
    let summary = batch::summarize(policy.as_ref(), &run, spec.count);
    assert_eq!(summary.device_busy_s.len(), 2);
    assert!(summary.device_busy_s.iter().all(|&b| b > 0.0));
}
