//! Independent checks of zkpipe's Groth16: bellperson 0.27 (the Filecoin
//! prover) reads our keys and produces byte-identical proofs from the same
//! witness and `r, s`; we read bellperson's keys and do the same; bellperson
//! and ark-groth16 0.6 both verify our proofs and reject a tampered one.
//!
//! bellperson speaks bellpepper-core 0.2, our circuits 0.4: the recorded
//! R1CS and witness are replayed into bellperson through [`Replay`].

use ark_serialize::CanonicalDeserialize;
use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use std::sync::Arc;
use zkpipe::Fr;
use zkpipe::groth16::{self, Parameters, Prover};
use zkpipe::r1cs::{R1cs, Witness};
use zkpipe_circuits::BenchCircuit;

#[path = "support/common.rs"]
mod common;
use common::cpu;

#[path = "support/replay.rs"]
mod replay;
use replay::{Replay, scalar};

fn record(name: &str, size: &str) -> (Arc<R1cs>, Arc<Witness>) {
    let (r1cs, w) = R1cs::record(BenchCircuit::new(name, size, 9).unwrap()).unwrap();
    (Arc::new(r1cs), Arc::new(w))
}

fn bellperson_proof(replay: Replay, params: &bp::Parameters<Bls12>, r: &Fr, s: &Fr) -> Vec<u8> {
    let proof = bp::create_proof(replay, params, scalar(r), scalar(s)).unwrap();
    let mut bytes = Vec::new();
    proof.write(&mut bytes).unwrap();
    bytes
}

const CIRCUITS: [(&str, &str); 3] = [
    ("squaring-chain", "37"),
    ("poseidon-merkle", "2x2"),
    ("sha256", "1"),
];

#[test]
fn bellperson_proves_the_same_bytes_with_our_keys() {
    let be = cpu();
    let (r, s) = (Fr::from_u64(123456789), Fr::one().neg());
    for (name, size) in CIRCUITS {
        let (r1cs, w) = record(name, size);
        let ours = groth16::setup(&r1cs, 42);
        let mut bytes = Vec::new();
        ours.write(&mut bytes).unwrap();
        let theirs = bp::Parameters::<Bls12>::read(&bytes[..], true)
            .expect("bellperson reads our parameters");

        let (proof, _) = Prover::new(be.clone(), Arc::new(ours.clone()), r1cs.clone())
            .unwrap()
            .prove(&w, r, s)
            .unwrap();
        let expected = bellperson_proof(
            Replay {
                r1cs: r1cs.clone(),
                witness: w.clone(),
            },
            &theirs,
            &r,
            &s,
        );
        assert_eq!(
            proof.to_bytes().to_vec(),
            expected,
            "{name}: proof bytes differ from bellperson's"
        );

        let pvk = bp::prepare_verifying_key(&theirs.vk);
        let inputs: Vec<Scalar> = w.public_inputs().iter().map(scalar).collect();
        let bp_proof = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
        assert!(
            bp::verify_proof(&pvk, &bp_proof, &inputs).unwrap(),
            "{name}: bellperson rejects our proof"
        );
    }
}

#[test]
fn we_prove_the_same_bytes_with_bellpersons_keys() {
    let be = cpu();
    let (r, s) = (Fr::from_u64(5), Fr::from_u64(6));
    for (name, size) in &CIRCUITS[..2] {
        let (r1cs, w) = record(name, size);
        let replay = Replay {
            r1cs: r1cs.clone(),
            witness: w.clone(),
        };
        let theirs = bp::generate_random_parameters::<Bls12, _, _>(
            replay.clone(),
            &mut zkpipe::util::sample::rng(3),
        )
        .unwrap();
        let mut bytes = Vec::new();
        theirs.write(&mut bytes).unwrap();
        let ours = Parameters::from_bytes(&bytes, true).expect("we read bellperson's parameters");

        let (proof, _) = Prover::new(be.clone(), Arc::new(ours.clone()), r1cs.clone())
            .unwrap()
            .prove(&w, r, s)
            .unwrap();
        assert_eq!(
            proof.to_bytes().to_vec(),
            bellperson_proof(replay, &theirs, &r, &s),
            "{name}"
        );
        let pvk = groth16::PreparedVerifyingKey::new(&ours.vk);
        assert!(groth16::verify(&pvk, &proof, w.public_inputs()).unwrap());
    }
}

#[test]
fn ark_groth16_verifies_our_proofs_and_rejects_a_tampered_one() {
    use ark_bls12_381::{Bls12_381, Fr as ArkFr, G1Affine as ArkG1, G2Affine as ArkG2};
    use ark_ff::PrimeField;

    let be = cpu();
    let (r1cs, w) = record("poseidon-merkle", "2x2");
    let params = groth16::setup(&r1cs, 8);
    let (proof, _) = Prover::new(be.clone(), Arc::new(params.clone()), r1cs.clone())
        .unwrap()
        .prove(&w, Fr::from_u64(77), Fr::from_u64(88))
        .unwrap();

    let g1 = |p: &zkpipe::G1Affine| ArkG1::deserialize_compressed(&p.to_compressed()[..]).unwrap();
    let g2 = |p: &zkpipe::G2Affine| ArkG2::deserialize_compressed(&p.to_compressed()[..]).unwrap();
    let vk = ark_groth16::VerifyingKey::<Bls12_381> {
        alpha_g1: g1(&params.vk.alpha_g1),
        beta_g2: g2(&params.vk.beta_g2),
        gamma_g2: g2(&params.vk.gamma_g2),
        delta_g2: g2(&params.vk.delta_g2),
        gamma_abc_g1: params.vk.ic.iter().map(g1).collect(),
    };
    let pvk = ark_groth16::prepare_verifying_key(&vk);
    let inputs: Vec<ArkFr> = w
        .public_inputs()
        .iter()
        .map(|x| ArkFr::from_le_bytes_mod_order(&x.to_bytes_le()))
        .collect();
    let bytes = proof.to_bytes();
    let ark_proof = ark_groth16::Proof::<Bls12_381> {
        a: ArkG1::deserialize_compressed(&bytes[..48]).unwrap(),
        b: ArkG2::deserialize_compressed(&bytes[48..144]).unwrap(),
        c: ArkG1::deserialize_compressed(&bytes[144..]).unwrap(),
    };
    assert!(ark_groth16::Groth16::<Bls12_381>::verify_proof(&pvk, &ark_proof, &inputs).unwrap());

    let tampered = ark_groth16::Proof::<Bls12_381> {
        c: ark_proof.a,
        ..ark_proof.clone()
    };
    assert!(!ark_groth16::Groth16::<Bls12_381>::verify_proof(&pvk, &tampered, &inputs).unwrap());
    let mut wrong = inputs.clone();
    wrong[0] += ArkFr::from(1u64);
    assert!(!ark_groth16::Groth16::<Bls12_381>::verify_proof(&pvk, &ark_proof, &wrong).unwrap());
}
