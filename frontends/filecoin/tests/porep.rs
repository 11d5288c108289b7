//! PoRep C2 for a 2 KiB sector sealed by filecoin-proofs (PC1, PC2, C1 on
//! the CPU): zkpipe's proof is accepted by `verify_seal`, is byte-identical
//! to bellperson 0.27's with the same parameters and `r, s`, and bad C1
//! outputs are refused with the reason.

mod support;

use std::time::Instant;

use bellperson::groth16 as bp;
use filecoin_proofs::constants::{DefaultPieceHasher, SectorShape2KiB};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use support::{engine, fixtures_env};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Silent;
use zkpipe_filecoin::Blinding;
use zkpipe_filecoin::porep::{C1, SealIds, param_set, seal_commit};
use zkpipe_filecoin::testing::{SEAL_PROOF, seal_2kib};

fn json_of(sealed: &zkpipe_filecoin::testing::Sealed) -> &[u8] {
    &sealed.c1_json
}

#[test]
fn seal_commit_verifies_matches_bellperson_and_refuses_bad_c1() {
    fixtures_env();
    let engine = engine();
    let t = Instant::now();
    let set = param_set(SEAL_PROOF).unwrap();
    let made = set.ensure(engine.r1cs_cache(), &Silent).unwrap();
    eprintln!("porep 2KiB parameters: made {made} in {:.1?}", t.elapsed());
    let dir = tempfile::tempdir().unwrap();
    let sealed = seal_2kib(dir.path(), [9; 32], 11, 9).unwrap();
    let c1 = C1::parse(&sealed.c1_json).unwrap();
    let ids = SealIds {
        prover_id: sealed.prover_id,
        sector_id: sealed.sector_id,
    };
    let t = Instant::now();
    let proved = seal_commit(&engine, &c1, ids, Blinding::Seeded(7), &Silent).unwrap();
    eprintln!(
        "C2 (key load {:.1?}) in {:.1?}",
        proved.key_load,
        t.elapsed()
    );
    let ours = proved.to_bytes();
    assert_eq!(ours.len(), 192);

    // bellperson 0.27, same circuit, parameters and r, s.
    let params = bp::Parameters::<blstrs::Bls12>::read(
        std::fs::File::open(set.files().params).unwrap(),
        false,
    )
    .unwrap();
    let config = SEAL_PROOF.as_v1_config();
    let vanilla: Vec<Vec<_>> = c1.output.vanilla_proofs.clone().try_into().unwrap();
    let pub_params = <StackedCompound<SectorShape2KiB, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, SectorShape2KiB, DefaultPieceHasher>,
        _,
    >>::setup(&storage_proofs_core::compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(&config).unwrap(),
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    })
    .unwrap();
    let o = &c1.output;
    let replica_id: blstrs::Scalar = o.replica_id.into();
    let pub_in = storage_proofs_porep::stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(storage_proofs_porep::stacked::Tau {
            comm_d: filecoin_proofs::as_safe_commitment(&o.comm_d, "comm_d").unwrap(),
            comm_r: filecoin_proofs::as_safe_commitment(&o.comm_r, "comm_r").unwrap(),
        }),
        k: None,
        seed: Some(o.seed),
    };
    let circuit = StackedCompound::<SectorShape2KiB, DefaultPieceHasher>::circuit(
        &pub_in,
        (),
        &vanilla[0],
        &pub_params.vanilla_params,
        Some(0),
    )
    .unwrap();
    let (r, s) = Blinding::Seeded(7).get(0).unwrap();
    let scalar = |x: &zkpipe_core::Fr| blstrs::Scalar::from_bytes_le(&x.to_bytes_le()).unwrap();
    let t = Instant::now();
    let theirs = bp::create_proof(circuit, &params, scalar(&r), scalar(&s)).unwrap();
    eprintln!("bellperson C2 in {:.1?}", t.elapsed());
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(ours, theirs_bytes, "zkpipe's C2 differs from bellperson's");

    // Synthesis split over the challenges gives what one pass gives.
    let job = zkpipe_filecoin::porep::job(&c1, ids).unwrap();
    let t = Instant::now();
    let serial = job.witness_serial(0).unwrap();
    let serial_time = t.elapsed();
    let t = Instant::now();
    let split = job.witness(0).unwrap();
    eprintln!(
        "witness: one thread {serial_time:.1?}, split over challenges {:.1?}",
        t.elapsed()
    );
    assert!(
        serial.inputs == split.inputs,
        "split synthesis: other inputs"
    );
    assert!(serial.aux == split.aux, "split synthesis: other aux values");

    // Challenges out of order, or one from another sector: refused by the
    // split synthesis and the one-pass one alike.
    let other = seal_2kib(dir.path().join("other").as_path(), [9; 32], 12, 10).unwrap();
    let challenges = |json: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        let (kind, partitions) = v["vanilla_proofs"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        (
            v.clone(),
            kind.clone(),
            partitions[0].as_array().unwrap().clone(),
        )
    };
    let (mut swapped, kind, mine) = challenges(json_of(&sealed));
    assert!(mine.len() >= 2, "2 KiB PoRep has {} challenges", mine.len());
    let mut reordered = mine.clone();
    reordered.swap(0, 1);
    swapped["vanilla_proofs"][&kind][0] = reordered.into();
    let (mut mixed, _, _) = challenges(json_of(&sealed));
    let mut theirs_too = mine.clone();
    theirs_too[1] = challenges(json_of(&other)).2[1].clone();
    mixed["vanilla_proofs"][&kind][0] = theirs_too.into();
    for (what, v) in [("reordered", swapped), ("mixed", mixed)] {
        let c1 = C1::parse(&serde_json::to_vec(&v).unwrap()).unwrap();
        let job = zkpipe_filecoin::porep::job(&c1, ids).unwrap();
        for e in [
            job.witness(0).unwrap_err(),
            job.witness_serial(0).unwrap_err(),
        ] {
            assert!(matches!(e, Error::InvalidInput(_)), "{what}: {e}");
        }
    }

    // A wrong prover id or sector number: the proof does not verify.
    for bad_ids in [
        SealIds {
            prover_id: [1; 32],
            ..ids
        },
        SealIds {
            sector_id: 12,
            ..ids
        },
    ] {
        let e = seal_commit(&engine, &c1, bad_ids, Blinding::Random, &Silent).unwrap_err();
        assert!(
            matches!(e, Error::InvalidInput(ref m) if m.contains("does not verify")),
            "{e}"
        );
    }

    // Truncated, garbage, and C1 outputs that claim another sector size.
    let json = &sealed.c1_json;
    let mut other_size: serde_json::Value = serde_json::from_slice(json).unwrap();
    other_size["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let mut zero_seed: serde_json::Value = serde_json::from_slice(json).unwrap();
    zero_seed["seed"] = serde_json::to_value([0u8; 32]).unwrap();
    let mut empty_partition: serde_json::Value = serde_json::from_slice(json).unwrap();
    empty_partition["vanilla_proofs"][&kind][0] = serde_json::json!([]);
    let e = C1::parse(&serde_json::to_vec(&empty_partition).unwrap())
        .and_then(|c1| seal_commit(&engine, &c1, ids, Blinding::Random, &Silent))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("partition 0 of the vanilla proofs is empty"),
        "{e}"
    );
    for (what, bytes) in [
        ("truncated", json[..json.len() / 2].to_vec()),
        ("garbage", b"\x00\x01not json".to_vec()),
        ("empty", vec![]),
        ("other size", serde_json::to_vec(&other_size).unwrap()),
        ("zero seed", serde_json::to_vec(&zero_seed).unwrap()),
    ] {
        let e = C1::parse(&bytes)
            .and_then(|c1| seal_commit(&engine, &c1, ids, Blinding::Random, &Silent))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{what}: {e}");
    }
}
