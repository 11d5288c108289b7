//! snarkjs-made files kept in the repository (cli/tests/circom/fixtures/),
//! so the zkey reader, the odd-coset quotient and the JSON round trip are
//! tested where node is missing too.
//!
//! The files are `hash_chain` of cli/tests/circom/ as
//! `circom_snarkjs.rs` makes them: circom2 0.2.23 `--prime bls12381`,
//! snarkjs 0.7.6 powers of tau 2^10 with one contribution, `groth16
//! setup` and one `zkey contribute`, `wtns calculate`, `zkey export
//! verificationkey` and `groth16 prove` (the `sj.*` files).

use std::path::{Path, PathBuf};
use std::process::Output;

mod support;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/circom/fixtures")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn zkpipe(dir: &Path, args: &[&str]) -> Output {
    support::zkpipe_command()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn verify(dir: &Path, proof: &str, public: &str) -> Output {
    zkpipe(
        dir,
        &[
            "verify",
            "--vk",
            &fixture("hash_chain.vk.json"),
            "--proof",
            proof,
            "--public",
            public,
        ],
    )
}

fn prove(dir: &Path, zkey: &str) -> (Output, PathBuf, PathBuf) {
    let (proof, public) = (dir.join("proof.json"), dir.join("public.json"));
    let o = zkpipe(
        dir,
        &[
            "prove",
            "--r1cs",
            &fixture("hash_chain.r1cs"),
            "--wtns",
            &fixture("hash_chain.wtns"),
            "--zkey",
            zkey,
            "--proof",
            proof.to_str().unwrap(),
            "--public",
            public.to_str().unwrap(),
        ],
    );
    (o, proof, public)
}

#[test]
fn proof_from_the_snarkjs_zkey_verifies_under_its_verification_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, proof, public) = prove(tmp.path(), &fixture("hash_chain.zkey"));
    assert!(o.status.success(), "{}", text(&o));
    let o = verify(
        tmp.path(),
        proof.to_str().unwrap(),
        public.to_str().unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "valid",
        "{}",
        text(&o)
    );
    let ours: serde_json::Value = serde_json::from_slice(&std::fs::read(&public).unwrap()).unwrap();
    let theirs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("hash_chain.sj.public.json")).unwrap())
            .unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn snarkjs_proof_is_valid_and_invalid_for_other_signals() {
    let tmp = tempfile::tempdir().unwrap();
    let o = verify(
        tmp.path(),
        &fixture("hash_chain.sj.proof.json"),
        &fixture("hash_chain.sj.public.json"),
    );
    assert!(o.status.success(), "{}", text(&o));
    let other = tmp.path().join("other.json");
    std::fs::write(&other, b"[\"1\", \"678\"]").unwrap();
    let o = verify(
        tmp.path(),
        &fixture("hash_chain.sj.proof.json"),
        other.to_str().unwrap(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn export_vk_equals_the_verification_key_snarkjs_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let o = zkpipe(
        tmp.path(),
        &["export-vk", "--zkey", &fixture("hash_chain.zkey")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let ours: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let theirs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("hash_chain.vk.json")).unwrap()).unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn a_zkey_cut_anywhere_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("hash_chain.zkey")).unwrap();
    let cut = tmp.path().join("cut.zkey");
    // Every 997th length, and the last byte.
    let mut lengths: Vec<usize> = (0..bytes.len()).step_by(997).collect();
    lengths.push(bytes.len() - 1);
    for n in lengths {
        std::fs::write(&cut, &bytes[..n]).unwrap();
        let (o, proof, _) = prove(tmp.path(), cut.to_str().unwrap());
        assert_eq!(o.status.code(), Some(2), "cut at {n}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "cut at {n}: {}", text(&o));
        assert!(!proof.exists());
    }
}
