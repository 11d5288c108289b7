//! In-shape PoRep: random vanilla proofs have exactly the shape of a 2 KiB
//! sector's real ones (and, drawn for its replica id and seed, the same
//! challenges and parents), synthesise every partition's full assignment at
//! 2 KiB and 8 MiB, are counted as recording counts them, and never make a
//! proof: the normal prove path refuses their witness.

mod support;

use filecoin_proofs::constants::SectorShape2KiB;
use serde_json::Value;
use storage_proofs_core::merkle::MerkleTreeTrait;
use support::{engine, fixtures_env};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Silent;
use zkpipe_filecoin::in_shape::{self, Draw};
use zkpipe_filecoin::porep::{C1, SealIds, VanillaProof, seal_commit};
use zkpipe_filecoin::testing::{SEAL_PROOF, seal_2kib};
use zkpipe_filecoin::{Blinding, RegisteredSealProof};

/// `v` with every hash (32 bytes) as `"hash"`; other numbers (path
/// positions, column indices, challenge nodes, layers) kept when `numbers`,
/// else `"n"`. Arrays keep their lengths, objects their keys.
fn skeleton(v: &Value, numbers: bool) -> Value {
    match v {
        Value::Array(a) if a.len() == 32 && a.iter().all(Value::is_u64) => "hash".into(),
        Value::Array(a) => a.iter().map(|x| skeleton(x, numbers)).collect(),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), skeleton(x, numbers)))
                .collect(),
        ),
        Value::Number(_) if !numbers => "n".into(),
        other => other.clone(),
    }
}

fn json<Tree: 'static + MerkleTreeTrait>(proofs: &Vec<Vec<VanillaProof<Tree>>>) -> Value {
    serde_json::to_value(proofs).unwrap()
}

#[test]
fn random_vanilla_proofs_have_a_real_sectors_shape_and_prove_nothing() {
    fixtures_env();
    let dir = tempfile::tempdir().unwrap();
    let sealed = seal_2kib(dir.path(), [4; 32], 3, 4).unwrap();
    let c1 = C1::parse(&sealed.c1_json).unwrap();
    let real: Vec<Vec<VanillaProof<SectorShape2KiB>>> =
        c1.output.vanilla_proofs.clone().try_into().unwrap();
    let real = json(&real);

    // Any draw: the same shape, other values.
    let (_, drawn) =
        in_shape::vanilla_proofs::<SectorShape2KiB>(SEAL_PROOF, &Draw::new(5)).unwrap();
    let drawn = json(&drawn);
    assert_eq!(skeleton(&drawn, false), skeleton(&real, false));
    assert_ne!(drawn, real);
    // Its own replica id and seed: other challenges, which the comparison
    // with positions sees.
    assert_ne!(skeleton(&drawn, true), skeleton(&real, true));
    let again = in_shape::vanilla_proofs::<SectorShape2KiB>(SEAL_PROOF, &Draw::new(5)).unwrap();
    assert_eq!(json(&again.1), drawn, "a seed draws the same proofs");

    // Drawn for the sector's replica id and seed: the same challenges,
    // parents and path positions too, every hash still random.
    let for_sector = Draw {
        replica_id: c1.output.replica_id.into(),
        seed: c1.output.seed,
        ..Draw::new(6)
    };
    let (_, same) = in_shape::vanilla_proofs::<SectorShape2KiB>(SEAL_PROOF, &for_sector).unwrap();
    assert_eq!(skeleton(&json(&same), true), skeleton(&real, true));

    // Put in the sector's C1 output, they make the circuit's witness (its
    // public inputs are the verifier's), which does not satisfy it:
    // seal-commit's path refuses before any device work.
    let engine = engine();
    let set = zkpipe_filecoin::porep::param_set(SEAL_PROOF).unwrap();
    set.ensure(engine.r1cs_cache(), &Silent).unwrap();
    let random_c1 =
        C1::parse(&zkpipe_filecoin::testing::with_random_vanilla(&sealed.c1_json, 6).unwrap())
            .unwrap();
    let vanilla: Vec<Vec<VanillaProof<SectorShape2KiB>>> =
        random_c1.output.vanilla_proofs.clone().try_into().unwrap();
    assert_eq!(json(&vanilla), json(&same));
    let ids = SealIds {
        prover_id: sealed.prover_id,
        sector_id: sealed.sector_id,
    };
    let job = zkpipe_filecoin::porep::job(&random_c1, ids).unwrap();
    job.witness(0).unwrap();
    let e = seal_commit(&engine, &random_c1, ids, Blinding::Random, &Silent).unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput(ref m) if m.contains("does not satisfy the circuit")),
        "{e}"
    );

    // The in-shape job itself: refused the same way, and its final check
    // refuses anything.
    let job = in_shape::job(SEAL_PROOF, 7).unwrap();
    let e = engine.prove(&*job, Blinding::Random, &Silent).unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput(ref m) if m.contains("does not satisfy the circuit")),
        "{e}"
    );
    let e = job.check(&[0; 192]).unwrap_err();
    assert!(e.to_string().contains(in_shape::NO_PROOF), "{e}");
}

/// Every partition's witness of `rp` in shape: the recorded circuit's
/// full assignment, which satisfies nothing; and the count equals the
/// recording.
fn synthesises_every_partition(rp: RegisteredSealProof) {
    let engine = engine();
    let job = in_shape::job(rp, 1).unwrap();
    let r1cs = job.param_set().r1cs(engine.r1cs_cache(), &Silent).unwrap();
    let size = in_shape::circuit_size(rp).unwrap();
    assert_eq!(size.partitions, job.partitions());
    assert_eq!(usize::from(rp.as_v1_config().partitions), job.partitions());
    let c = size.counts;
    let density = r1cs.density();
    let ones = |v: &[bool]| v.iter().filter(|&&b| b).count() as u64;
    assert_eq!(
        (c.constraints, c.inputs, c.aux),
        (
            r1cs.num_constraints() as u64,
            r1cs.num_inputs as u64,
            r1cs.num_aux as u64
        ),
        "{rp:?}"
    );
    assert_eq!(
        c.nonzeros,
        (r1cs.a.nnz() + r1cs.b.nnz() + r1cs.c.nnz()) as u64
    );
    assert_eq!(
        (c.a_aux, c.b_inputs, c.b_aux),
        (
            ones(&density.a_aux),
            ones(&density.b_input),
            ones(&density.b_aux)
        )
    );
    assert_eq!(size.r1cs_bytes(), r1cs.as_seam().bytes());
    for k in 0..job.partitions() {
        let w = job.witness(k).unwrap();
        assert_eq!(w.inputs.len(), r1cs.num_inputs, "{rp:?} partition {k}");
        assert_eq!(w.aux.len(), r1cs.num_aux, "{rp:?} partition {k}");
        assert!(r1cs.first_unsatisfied(&w).unwrap().is_some());
    }
}

#[test]
fn every_partition_synthesises_at_2kib_and_8mib() {
    fixtures_env();
    synthesises_every_partition(SEAL_PROOF);
    synthesises_every_partition(RegisteredSealProof::StackedDrg8MiBV1_1);
}
