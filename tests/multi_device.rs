//! Several devices for real, without GPUs: the CPU backend's `devices=N`
//! logical devices. Provers are bound to a device, their bases live there,
//! the engine places partitions on every device, and a device a backend
//! does not have is refused.

use std::sync::Arc;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::groth16::{self, PreparedVerifyingKey, ProverBuilder};
use zkpipe::plugin::{BackendConfig, KeyValue, MsmConfig};
use zkpipe::sched::batch::{self, BatchSpec, Verify};
use zkpipe::sched::{Engine, Policy, builtin};
use zkpipe::{Error, util::sample};
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
    let r1cs = Arc::new(zkpipe::r1cs::circuit::CircuitSource::record(&c).unwrap());
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

/// `count` requests of two partitions, four in flight, under built-in
/// `policy` on the CPU backend's two logical devices, every proof verified.
fn batch_on_two_devices(policy: &str, count: u32) -> (batch::BatchRun, Arc<dyn Policy>) {
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let be = cpu_with_devices(&reg, 2);
    let c = Arc::new(BuiltinCircuit::new("poseidon-merkle", "1x2").unwrap());
    let r1cs = Arc::new(zkpipe::r1cs::circuit::CircuitSource::record(&*c).unwrap());
    let params = Arc::new(groth16::setup(&r1cs, 4));
    let policy = builtin(policy, None, &[]).unwrap();
    let workload =
        batch::groth16_workload(&reg, be, params.clone(), r1cs, c, policy.settings()).unwrap();
    let engine = Engine::new(workload, policy.clone()).unwrap();
    let spec = BatchSpec {
        count,
        partitions: 2,
        concurrency: 4,
        verify: Verify::All,
    };
    let verifier = batch::BatchVerifier::Bls12_381(Box::new(PreparedVerifyingKey::new(&params.vk)));
    let run = batch::run_batch(engine, &spec, &verifier, &mut |_| {}).unwrap();
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    assert_eq!(run.verified, 2 * count);
    (run, policy)
}

#[test]
fn a_batch_runs_on_every_device_and_every_proof_verifies() {
    let (run, policy) = batch_on_two_devices("pipelined", 4);
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
    let summary = batch::summarize(policy.as_ref(), &run, 4);
    assert_eq!(summary.device_busy_s.len(), 2);
    assert!(summary.device_busy_s.iter().all(|&b| b > 0.0));
}

/// The adaptive policy on the CPU backend's logical devices: it sees the
/// stage times of real proofs on two devices, the batch's summary says
/// what bounded it, and every proof verifies whatever the policy moved.
#[test]
fn the_adaptive_policy_proves_on_every_device_and_reports_the_bound() {
    let (run, policy) = batch_on_two_devices("adaptive", 12);
    assert!(!run.alone.is_empty(), "a partition ran alone first");
    let sized = run.settings.as_ref().expect("the engine's knobs");
    for (at, limits) in &run.limit_changes {
        assert!(*at >= -1e3, "a move {at} ms into the batch");
        assert!(
            (1..=sized.partition_workers).contains(&limits.synthesis),
            "{limits:?} within 1..={}",
            sized.partition_workers
        );
    }
    let summary = batch::summarize(policy.as_ref(), &run, 12);
    assert!(summary.bound == "device" || summary.bound == "host");
    assert!(summary.device_floor_alone_s_per_proof > 0.0);
    assert!(summary.host_floor_s_per_proof > 0.0);
    let stages: Vec<_> = summary
        .stages
        .iter()
        .map(|l| (l.stage, l.on_device))
        .collect();
    for want in [
        (zkpipe::stage::Stage::Witness, false),
        (zkpipe::stage::Stage::Spmv, false),
        (zkpipe::stage::Stage::Quotient, true),
        (zkpipe::stage::Stage::Msm, true),
    ] {
        assert!(stages.contains(&want), "{want:?} in {stages:?}");
    }
    assert!(summary.stages.iter().all(|l| l.inflation > 0.0));
}

/// One MSM cut over several devices equals the one-device MSM, for host and
/// resident bases, G1 and G2, sizes that do not divide evenly (and fewer
/// points than devices); bad requests are refused.
#[test]
fn a_split_msm_equals_the_one_device_msm() {
    use zkpipe::backend::group::{G1, G2};
    use zkpipe::backend::msm_split::{self, SplitBases, SplitSource};
    use zkpipe::{G1Projective, G2Projective};
    let reg = Registry::load(&SearchPath::only([common::build_dir()]));
    let be = cpu_with_devices(&reg, 3);
    let one = MsmConfig::default();
    let devices = [2, 0, 1];
    for n in [0usize, 1, 2, 5, 301] {
        let (b1, b2) = (sample::g1_points(n, 3), sample::g2_points(n, 4));
        let s = sample::scalars(n, 5);
        let want1 = be.msm_g1(&b1[..], &s, &one).unwrap();
        let want2 = be.msm_g2(&b2[..], &s, &one).unwrap();
        let host1 = msm_split::msm::<G1>(&be, SplitSource::Host(&b1, &devices), &s).unwrap();
        let host2 = msm_split::msm::<G2>(&be, SplitSource::Host(&b2, &devices), &s).unwrap();
        let same = |a: (G1Projective, G2Projective), b: (G1Projective, G2Projective)| {
            (a.0.to_affine(), a.1.to_affine()) == (b.0.to_affine(), b.1.to_affine())
        };
        assert!(same((host1, host2), (want1, want2)), "host bases, n = {n}");
        let r1 = SplitBases::upload::<G1>(&be, &b1, &devices).unwrap();
        let r2 = SplitBases::upload::<G2>(&be, &b2, &devices).unwrap();
        assert_eq!(r1.len(), n);
        let res1 = msm_split::msm::<G1>(&be, SplitSource::Resident(&r1), &s).unwrap();
        let res2 = msm_split::msm::<G2>(&be, SplitSource::Resident(&r2), &s).unwrap();
        assert!(
            same((res1, res2), (want1, want2)),
            "resident bases, n = {n}"
        );
        // A prefix of the resident points, as one device's handle allows.
        let m = n * 2 / 3;
        let prefix = msm_split::msm::<G1>(&be, SplitSource::Resident(&r1), &s[..m]).unwrap();
        let want = be.msm_g1(&b1[..m], &s[..m], &one).unwrap();
        assert_eq!(prefix.to_affine(), want.to_affine(), "prefix {m}");
        let e = msm_split::msm::<G1>(&be, SplitSource::Resident(&r1), &sample::scalars(n + 1, 1))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        r1.drop_from(&be).unwrap();
        r2.drop_from(&be).unwrap();
    }
    let (b, s) = (sample::g1_points(8, 1), sample::scalars(8, 2));
    let refused = |devices: &[u32], scalars: &[zkpipe::Fr]| {
        msm_split::msm::<G1>(&be, SplitSource::Host(&b, devices), scalars).unwrap_err()
    };
    assert!(matches!(refused(&[], &s), Error::InvalidInput(_)));
    assert!(refused(&[1, 1], &s).to_string().contains("named twice"));
    assert!(
        refused(&[0, 1], &s[..7])
            .to_string()
            .contains("8 bases for 7 scalars")
    );
    assert!(refused(&[0, 7], &s).to_string().contains("no device 7"));
    // A failed upload leaves nothing behind on the devices that took a piece.
    let e = SplitBases::upload::<G1>(&be, &b, &[0, 9]).unwrap_err();
    assert!(e.to_string().contains("no device 9"), "{e}");
}

#[test]
fn split_pieces_are_contiguous_and_even() {
    for (n, k) in [(0, 3), (1, 3), (10, 3), (9, 3), (1 << 20, 2), (5, 1)] {
        let p = zkpipe::backend::msm_split::pieces(n, k);
        assert_eq!(p.len(), k);
        assert_eq!((p[0].start, p[k - 1].end), (0, n));
        assert!(p.windows(2).all(|w| w[0].end == w[1].start));
        let lens: Vec<usize> = p.iter().map(|r| r.len()).collect();
        assert!(
            lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1,
            "{lens:?}"
        );
    }
}
