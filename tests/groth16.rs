//! Groth16 end to end on the CPU plugin: every built-in circuit records,
//! proves and verifies; keys, proofs and the R1CS cache round-trip and
//! reject bad bytes.

use std::sync::Arc;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::groth16::{self, Parameters, PreparedVerifyingKey, Proof, Prover, VerifyingKey};
use zkpipe::plugin::BackendConfig;
use zkpipe::r1cs::{R1cs, Witness};
use zkpipe::{Error, Fr};
use zkpipe_circuits::BenchCircuit;

#[path = "support/common.rs"]
mod common;
use common::cpu;

const SMALL: [(&str, &str); 3] = [
    ("squaring-chain", "100"),
    ("poseidon-merkle", "2x2"),
    ("sha256", "1"),
];

#[test]
fn every_circuit_proves_and_verifies() {
    let be = cpu();
    for (name, size) in SMALL {
        let (r1cs, recorded) = R1cs::record(BenchCircuit::new(name, size, 1).unwrap()).unwrap();
        assert_eq!(
            r1cs.first_unsatisfied(&recorded).unwrap(),
            None,
            "{name}: recorded witness does not satisfy"
        );
        // Witness-only synthesis must give exactly what recording saw.
        assert_eq!(
            Witness::generate(BenchCircuit::new(name, size, 1).unwrap()).unwrap(),
            recorded,
            "{name}"
        );

        let params = groth16::setup(&r1cs, 7);
        let prover =
            Prover::new(be.clone(), Arc::new(params.clone()), Arc::new(r1cs.clone())).unwrap();
        let pvk = PreparedVerifyingKey::new(&params.vk);
        for seed in [2u64, 3] {
            let circuit = BenchCircuit::new(name, size, seed).unwrap();
            let (proof, w, times) = prover
                .prove_circuit(circuit, Fr::from_u64(11), Fr::from_u64(13))
                .unwrap();
            assert_eq!(times.stages.len(), 6); // witness … msm, msm_g2, assemble
            assert!(
                groth16::verify(&pvk, &proof, w.public_inputs()).unwrap(),
                "{name} seed {seed}"
            );

            // A tampered proof or a wrong public input fails.
            let mut bad = proof;
            bad.c = proof.a;
            assert!(
                !groth16::verify(&pvk, &bad, w.public_inputs()).unwrap(),
                "{name}: tampered proof verified"
            );
            let mut inputs = w.public_inputs().to_vec();
            inputs[0] = inputs[0].add(&Fr::one());
            assert!(
                !groth16::verify(&pvk, &proof, &inputs).unwrap(),
                "{name}: wrong input verified"
            );
            assert!(matches!(
                groth16::verify(&pvk, &proof, &inputs[1..]),
                Err(Error::InvalidInput(_))
            ));
        }
        // The second proof reused the first's evaluation buffers (lent by
        // the CPU backend, holding the first proof's values: it verified,
        // so its rows past the constraints were written again).
        let (blocks, _) = prover.buffers().idle();
        assert_eq!(blocks, 3, "{name}: evaluation buffers were not reused");
    }
}

#[test]
fn proofs_are_deterministic_in_r_and_s() {
    let be = cpu();
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "64", 5).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 1);
    let prover = Prover::new(be, Arc::new(params), Arc::new(r1cs)).unwrap();
    let (p1, _) = prover.prove(&w, Fr::from_u64(3), Fr::from_u64(4)).unwrap();
    let (p2, _) = prover.prove(&w, Fr::from_u64(3), Fr::from_u64(4)).unwrap();
    let (p3, _) = prover.prove(&w, Fr::from_u64(3), Fr::from_u64(5)).unwrap();
    assert_eq!(p1.to_bytes(), p2.to_bytes());
    assert_ne!(p1.to_bytes(), p3.to_bytes());
}

#[test]
fn a_witness_that_does_not_satisfy_is_refused_naming_the_constraint() {
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "64", 5).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 1);
    let prover = Prover::new(cpu(), Arc::new(params), Arc::new(r1cs.clone())).unwrap();
    for at in [0, w.aux.len() / 2, w.aux.len() - 1] {
        let mut bad = w.clone();
        bad.aux[at] = bad.aux[at].add(&Fr::one());
        let row = r1cs
            .first_unsatisfied(&bad)
            .unwrap()
            .expect("a changed value fails a row");
        let e = prover
            .prove(&bad, Fr::from_u64(3), Fr::from_u64(4))
            .unwrap_err();
        assert!(
            matches!(e, Error::InvalidInput(ref m) if m.contains(&format!("constraint {row} "))),
            "aux {at}: {e}"
        );
    }
}

#[test]
fn keys_round_trip_and_reject_bad_bytes() {
    let (r1cs, _) = R1cs::record(BenchCircuit::new("squaring-chain", "20", 1).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 3);
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, params.file_bytes());
    assert_eq!(Parameters::from_bytes(&bytes, true).unwrap(), params);
    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes).unwrap();
    assert_eq!(VerifyingKey::from_bytes(&vk_bytes).unwrap(), params.vk);

    // Truncated anywhere: an error naming what was being read.
    for cut in [0, 10, 96 * 2 + 5, bytes.len() / 2, bytes.len() - 1] {
        let e = Parameters::from_bytes(&bytes[..cut], false).unwrap_err();
        assert!(
            e.to_string().contains("truncated") || e.to_string().contains("invalid"),
            "cut {cut}: {e}"
        );
    }
    // A garbled point.
    let mut garbled = bytes.clone();
    garbled[96 * 3 + 40] ^= 0x55;
    assert!(Parameters::from_bytes(&garbled, false).is_err());
    // Trailing bytes.
    let mut long = bytes.clone();
    long.push(0);
    assert!(Parameters::from_bytes(&long, false).is_err());

    // Parameters of another circuit.
    let (other, _) = R1cs::record(BenchCircuit::new("squaring-chain", "300", 1).unwrap()).unwrap();
    let e = params.check_shape(&other).unwrap_err();
    assert!(e.to_string().contains("do not fit this circuit"), "{e}");
    assert!(Prover::new(cpu(), Arc::new(params), Arc::new(other)).is_err());
}

#[test]
fn proof_bytes_round_trip_and_reject_bad_lengths() {
    let be = cpu();
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "8", 1).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 2);
    let (proof, _) = Prover::new(be, Arc::new(params.clone()), Arc::new(r1cs))
        .unwrap()
        .prove(&w, Fr::from_u64(1), Fr::from_u64(2))
        .unwrap();
    let bytes = proof.to_bytes();
    assert_eq!(Proof::from_bytes(&bytes).unwrap(), proof);
    assert_eq!(
        Proof::many_from_bytes(&[bytes, bytes].concat()).unwrap(),
        vec![proof, proof]
    );
    assert!(Proof::from_bytes(&bytes[..191]).is_err());
    assert!(Proof::many_from_bytes(&bytes[..100]).is_err());
    assert!(Proof::many_from_bytes(&[]).is_err());
    let mut flipped = bytes;
    flipped[150] ^= 1;
    // Either not a point or a different point: never the same proof.
    assert_ne!(Proof::from_bytes(&flipped).ok(), Some(proof));
}

#[test]
fn r1cs_cache_round_trips_and_rejects_stale_or_corrupt_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r1cs.bin");
    let (r1cs, _) = R1cs::record(BenchCircuit::new("poseidon-merkle", "1x1", 1).unwrap()).unwrap();
    r1cs.save(&path, "poseidon-merkle 1x1 v1").unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        r1cs.file_bytes("poseidon-merkle 1x1 v1")
    );
    assert_eq!(R1cs::load(&path, "poseidon-merkle 1x1 v1").unwrap(), r1cs);

    let e = R1cs::load(&path, "poseidon-merkle 1x1 v2").unwrap_err();
    assert!(e.to_string().contains("stale"), "{e}");

    let bytes = std::fs::read(&path).unwrap();
    let mut corrupt = bytes.clone();
    corrupt[bytes.len() / 2] ^= 1;
    std::fs::write(&path, &corrupt).unwrap();
    assert!(
        R1cs::load(&path, "poseidon-merkle 1x1 v1")
            .unwrap_err()
            .to_string()
            .contains("checksum")
    );
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    assert!(R1cs::load(&path, "poseidon-merkle 1x1 v1").is_err());
    for short in [&b"hello"[..], b""] {
        std::fs::write(&path, short).unwrap();
        assert!(
            R1cs::load(&path, "poseidon-merkle 1x1 v1")
                .unwrap_err()
                .to_string()
                .contains("not a zkpipe R1CS")
        );
    }
    // A folder where the file should be: an I/O error, not a crash.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert!(R1cs::load(&path, "poseidon-merkle 1x1 v1").is_err());
}

#[test]
fn decimal_public_inputs_round_trip() {
    for x in [
        Fr::ZERO,
        Fr::one(),
        Fr::from_u64(u64::MAX),
        Fr::one().neg(),
        Fr::random(&mut zkpipe::util::sample::rng(1)),
    ] {
        let s = groth16::fr_to_decimal(&x);
        assert_eq!(groth16::fr_from_decimal(&s).unwrap(), x, "{s}");
    }
    assert_eq!(
        groth16::fr_to_decimal(&Fr::from_u64(1234567890123456789)),
        "1234567890123456789"
    );
    // r itself, a sign, and junk are rejected.
    for bad in [
        "52435875175126190479447740508185965837690552500527637822603658699938581184513",
        "-1",
        "1e3",
        "",
    ] {
        assert!(groth16::fr_from_decimal(bad).is_err(), "{bad}");
    }
}

#[test]
fn ops_a_backend_lacks_run_on_the_fallback() {
    // The panicky fixture declares no ops at all: everything must go to the CPU.
    let dir = tempfile::tempdir().unwrap();
    let build = common::build_dir();
    std::fs::copy(
        build.join("libzkpipe_fixture_panicky.so"),
        dir.path().join("libzkpipe_backend_panicky.so"),
    )
    .unwrap();
    let bare = Arc::new(
        Registry::load(&SearchPath::only([dir.path().to_path_buf()]))
            .create("panicky", &BackendConfig::default())
            .unwrap(),
    );

    proves_through_the_fallback(bare, "does not support ntt", ["cpu", "cpu", "cpu"]);
}

/// On a 2^5 domain (squaring-chain 16): `backend` alone is refused with
/// `error`; with the CPU fallback the ops are routed as `routing` (NTT, MSM
/// G1, MSM G2) and the proof's bytes equal the CPU backend's.
fn proves_through_the_fallback(backend: Arc<zkpipe::Backend>, error: &str, routing: [&str; 3]) {
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "16", 1).unwrap()).unwrap();
    let params = Arc::new(groth16::setup(&r1cs, 1));
    let r1cs = Arc::new(r1cs);
    let e = Prover::new(backend.clone(), params.clone(), r1cs.clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains(error), "{e}");

    let cpu_fallback = cpu();
    let prover = zkpipe::groth16::ProverBuilder::new(backend)
        .fallback(&cpu_fallback)
        .build(params.clone(), r1cs.clone())
        .unwrap();
    assert!(prover.fallback_note().is_some());
    assert_eq!(prover.routing().map(|(_, b)| b), routing);
    let (proof, _) = prover.prove(&w, Fr::from_u64(2), Fr::from_u64(3)).unwrap();
    let (expected, _) = Prover::new(cpu(), params, r1cs)
        .unwrap()
        .prove(&w, Fr::from_u64(2), Fr::from_u64(3))
        .unwrap();
    assert_eq!(proof.to_bytes(), expected.to_bytes());
}

/// A backend with MSM in G1 and NTTs of at most 2^3 points (the CPU plugin
/// behind it): a larger domain's NTTs must go to the fallback.
struct SmallNtt(Arc<zkpipe::Backend>);

impl zkpipe::plugin::AcceleratorImpl for SmallNtt {
    fn info(&self) -> zkpipe::plugin::BackendInfo {
        zkpipe::plugin::BackendInfo {
            name: "small-ntt".into(),
            version: "0".into(),
            // The CPU's device: a prover refuses a backend with none.
            devices: self.0.info().devices,
            notes: Default::default(),
        }
    }
    fn capabilities(&self) -> zkpipe::plugin::Capabilities {
        use zkpipe::plugin::{OpSupport, ops};
        let op = OpSupport::new;
        zkpipe::plugin::Capabilities {
            ops: vec![op(ops::NTT, 3), op(ops::MSM_G1, 30)].into(),
        }
    }
    fn msm_g1(
        &self,
        bases: zkpipe::plugin::BasesRef<'_, zkpipe::G1Affine>,
        scalars: &[Fr],
        config: &zkpipe::plugin::MsmConfig,
    ) -> Result<zkpipe::G1Projective, zkpipe::plugin::AccelError> {
        self.0.msm_g1(bases, scalars, config).map_err(|e| match e {
            Error::Backend { source, .. } => source,
            e => zkpipe::plugin::AccelError::invalid_input(e.to_string()),
        })
    }
}

#[test]
fn ntts_past_the_backend_size_limit_run_on_the_fallback() {
    let small = Arc::new(zkpipe::Backend::new(
        "small-ntt",
        zkpipe::plugin::into_accelerator(SmallNtt(cpu())),
    ));
    proves_through_the_fallback(
        small,
        "does not support ntt at 2^5",
        ["cpu", "small-ntt", "cpu"],
    );
}

/// A key, a proof of the 8-squaring chain and its public inputs.
fn small_proof() -> (Parameters, Proof, Vec<Fr>) {
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "8", 1).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 2);
    let (proof, _) = Prover::new(cpu(), Arc::new(params.clone()), Arc::new(r1cs))
        .unwrap()
        .prove(&w, Fr::from_u64(1), Fr::from_u64(2))
        .unwrap();
    (params, proof, w.public_inputs().to_vec())
}

fn vk_bytes(vk: &VerifyingKey) -> Vec<u8> {
    let mut bytes = Vec::new();
    vk.write(&mut bytes).unwrap();
    bytes
}

fn params_bytes(params: &Parameters) -> Vec<u8> {
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    bytes
}

/// Bytes of a verifying key before its IC points (six points and the count).
const VK_HEADER: usize = 3 * 96 + 3 * 192 + 4;

#[test]
fn verifying_keys_without_ic_points_are_refused() {
    let (params, proof, inputs) = small_proof();
    let mut empty = params.vk.clone();
    empty.ic.clear();
    let no_points = "vk.ic has no points";

    let e = VerifyingKey::from_bytes(&vk_bytes(&empty)).unwrap_err();
    assert!(e.to_string().contains(no_points), "{e}");
    let mut with_empty_vk = params.clone();
    with_empty_vk.vk = empty.clone();
    let e = Parameters::from_bytes(&params_bytes(&with_empty_vk), false).unwrap_err();
    assert!(e.to_string().contains(no_points), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vk.bin");
    std::fs::write(&path, vk_bytes(&empty)).unwrap();
    let e = VerifyingKey::load(&path).unwrap_err();
    assert!(e.to_string().contains(no_points), "{e}");

    // A key built in memory: verify refuses it (it used to index ic[0] and
    // panic) whatever the number of inputs.
    let pvk = PreparedVerifyingKey::new(&empty);
    for given in [&inputs[..0], &inputs[..]] {
        let e = groth16::verify(&pvk, &proof, given).unwrap_err();
        assert!(
            matches!(e, Error::InvalidInput(_)) && e.to_string().contains(no_points),
            "{e}"
        );
    }
}

#[test]
fn the_ic_count_must_match_the_public_inputs() {
    let (params, proof, inputs) = small_proof();
    let pvk = PreparedVerifyingKey::new(&params.vk);
    assert!(groth16::verify(&pvk, &proof, &inputs).unwrap());
    let takes = format!("the key takes {} public inputs", inputs.len());
    let mut one_more = inputs.clone();
    one_more.push(Fr::one());
    for given in [&inputs[..inputs.len() - 1], &one_more[..]] {
        let e = groth16::verify(&pvk, &proof, given).unwrap_err();
        assert!(
            matches!(e, Error::InvalidInput(_)) && e.to_string().contains(&takes),
            "{e}"
        );
    }
    // A key with an IC point more than the proof's inputs: the same refusal.
    let mut longer = params.vk.clone();
    longer.ic.push(zkpipe::G1Affine::generator());
    let e = groth16::verify(&PreparedVerifyingKey::new(&longer), &proof, &inputs).unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput(_))
            && e.to_string().contains(&format!(
                "takes {} public inputs ({} IC points), {} were given",
                inputs.len() + 1,
                inputs.len() + 2,
                inputs.len()
            )),
        "{e}"
    );
}

#[test]
fn keys_with_gamma_or_delta_at_infinity_are_refused() {
    let (params, proof, inputs) = small_proof();
    type Spoil = fn(&mut VerifyingKey);
    let spoilers: [(&str, Spoil); 3] = [
        ("vk.gamma_g2", |vk| {
            vk.gamma_g2 = zkpipe::G2Affine::identity()
        }),
        ("vk.delta_g1", |vk| {
            vk.delta_g1 = zkpipe::G1Affine::identity()
        }),
        ("vk.delta_g2", |vk| {
            vk.delta_g2 = zkpipe::G2Affine::identity()
        }),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (field, spoil) in spoilers {
        let mut vk = params.vk.clone();
        spoil(&mut vk);
        let refused = |e: Error| {
            let text = e.to_string();
            assert!(
                text.contains(field) && text.contains("point at infinity"),
                "{field}: {text}"
            );
        };
        refused(VerifyingKey::from_bytes(&vk_bytes(&vk)).unwrap_err());
        let path = dir.path().join("vk.bin");
        std::fs::write(&path, vk_bytes(&vk)).unwrap();
        refused(VerifyingKey::load(&path).unwrap_err());
        let mut spoilt = params.clone();
        spoilt.vk = vk.clone();
        refused(Parameters::from_bytes(&params_bytes(&spoilt), true).unwrap_err());
        let path = dir.path().join("params.bin");
        std::fs::write(&path, params_bytes(&spoilt)).unwrap();
        refused(Parameters::load(&path, false).unwrap_err());
        let e = groth16::verify(&PreparedVerifyingKey::new(&vk), &proof, &inputs).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        refused(e);
    }
}

#[test]
fn key_files_are_sized_by_their_header_before_they_are_read() {
    let (r1cs, _) = R1cs::record(BenchCircuit::new("squaring-chain", "8", 1).unwrap()).unwrap();
    let params = groth16::setup(&r1cs, 2);
    let vk = vk_bytes(&params.vk);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vk.bin");
    let load_error = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        VerifyingKey::load(&path).unwrap_err().to_string()
    };

    // An IC count whose key would pass 1 GiB: refused from the header.
    let mut huge_count = vk[..VK_HEADER].to_vec();
    huge_count[VK_HEADER - 4..].copy_from_slice(&u32::MAX.to_be_bytes());
    let e = load_error(&huge_count);
    assert!(
        e.contains("4294967295 points") && e.contains("over the limit"),
        "{e}"
    );
    // Shorter or longer than the header says, or shorter than the header.
    let e = load_error(&vk[..vk.len() - 1]);
    assert!(e.contains("its header"), "{e}");
    let e = load_error(&[&vk[..], &[0]].concat());
    assert!(e.contains("its header"), "{e}");
    let e = load_error(&vk[..VK_HEADER - 1]);
    assert!(e.contains("truncated key"), "{e}");

    // A 4 GiB file (sparse) holding a small key: refused without reading
    // the tail (a reader that read the file first would allocate 4 GiB).
    let file = std::fs::File::create(&path).unwrap();
    std::io::Write::write_all(&mut &file, &vk).unwrap();
    file.set_len(4 << 30).unwrap();
    let start = std::time::Instant::now();
    let e = VerifyingKey::load(&path).unwrap_err().to_string();
    assert!(e.contains("the file is 4294967296 bytes"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(1));

    // Parameters: every count set to 2^32 − 1 is checked against the bytes
    // left (an error, not an allocation or an abort).
    let bytes = params_bytes(&params);
    let mut count_at = VK_HEADER - 4;
    let counts = [
        ("vk.ic", 96),
        ("h", 96),
        ("l", 96),
        ("a", 96),
        ("b_g1", 96),
        ("b_g2", 192),
    ];
    let params_path = dir.path().join("params.bin");
    for (what, point_bytes) in counts {
        let mut huge = bytes.clone();
        huge[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = Parameters::from_bytes(&huge, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("truncated key: {what} needs")),
            "{what}: {e}"
        );
        std::fs::write(&params_path, &huge).unwrap();
        assert!(Parameters::load(&params_path, false).is_err(), "{what}");
        let n = u32::from_be_bytes(bytes[count_at..count_at + 4].try_into().unwrap());
        count_at += 4 + n as usize * point_bytes;
    }
    assert_eq!(count_at, bytes.len(), "every count was patched");
}

/// BLS12-381's base field modulus p, big-endian.
const P_BE: [u8; 48] = [
    0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6, 0x43, 0x4b, 0xac, 0xd7,
    0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf, 0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24,
    0x1e, 0xab, 0xff, 0xfe, 0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab,
];

/// A compressed coordinate (flag bit set) holding `x`: 48 big-endian bytes.
fn compressed_x(x: u64) -> [u8; 48] {
    let mut out = [0u8; 48];
    out[40..].copy_from_slice(&x.to_be_bytes());
    out[0] |= 0x80;
    out
}

/// The errors `Proof::from_bytes` gives when the point at `range` of a good
/// proof is replaced by each of `encodings`.
fn errors_with(
    good: &[u8; Proof::SIZE],
    range: std::ops::Range<usize>,
    encodings: &[Vec<u8>],
) -> Vec<Error> {
    encodings
        .iter()
        .map(|encoding| {
            let mut bytes = *good;
            bytes[range.clone()].copy_from_slice(encoding);
            Proof::from_bytes(&bytes).expect_err("a bad point was accepted")
        })
        .collect()
}

#[test]
fn proof_points_are_checked_encoding_curve_and_subgroup() {
    let (_, proof, _) = small_proof();
    let good = proof.to_bytes();

    // Non-canonical: x = p and x = p + 1 (a second encoding of 1); the
    // point at infinity with stray bits; no compression flag.
    let mut x_p = P_BE;
    x_p[0] |= 0x80;
    let mut x_p_plus_1 = x_p;
    x_p_plus_1[47] += 1;
    let mut stray_infinity = [0u8; 48];
    stray_infinity[0] = 0xc0;
    stray_infinity[47] = 1;
    let mut unflagged = good[..48].to_vec();
    unflagged[0] &= 0x7f;
    let malformed_g1 = [
        x_p.to_vec(),
        x_p_plus_1.to_vec(),
        stray_infinity.to_vec(),
        unflagged,
    ];
    for (name, range) in [("A", 0..48), ("C", 144..192)] {
        for e in errors_with(&good, range, &malformed_g1) {
            assert!(matches!(e, Error::InvalidEncoding(_)), "{name}: {e}");
            assert!(e.to_string().contains(&format!("{name}: ")), "{e}");
        }
    }
    // In G2 (c1, c0): c0 = p, and c1 = p.
    let mut c0_p = [0u8; 96];
    c0_p[0] = 0x80;
    c0_p[48..].copy_from_slice(&P_BE);
    let c1_p = [&x_p[..], &[0u8; 48][..]].concat();
    for e in errors_with(&good, 48..144, &[c0_p.to_vec(), c1_p]) {
        assert!(
            matches!(e, Error::InvalidEncoding(_)) && e.to_string().contains("B: "),
            "{e}"
        );
    }

    // Small x: off the curve (x³ + 4 not a square) or on it but outside the
    // prime-order subgroup (almost every curve point is); both kinds occur.
    let g1s: Vec<Vec<u8>> = (1..40).map(|x| compressed_x(x).to_vec()).collect();
    let g2s: Vec<Vec<u8>> = (1..40)
        .map(|x| [&compressed_x(0)[..], &compressed_x(x)[..]].concat())
        .map(|mut b| {
            b[48] &= 0x7f; // the flags live in the first byte only
            b
        })
        .collect();
    for (name, range, encodings) in [
        ("A", 0..48, &g1s),
        ("B", 48..144, &g2s),
        ("C", 144..192, &g1s),
    ] {
        let errors = errors_with(&good, range, encodings);
        assert!(
            errors.iter().any(|e| matches!(e, Error::NotOnCurve(_))),
            "{name}"
        );
        assert!(
            errors.iter().any(|e| matches!(e, Error::NotInSubgroup(_))),
            "{name}"
        );
        for e in &errors {
            assert!(
                matches!(e, Error::NotOnCurve(_) | Error::NotInSubgroup(_))
                    && e.to_string().starts_with(&format!("{name}: ")),
                "{name}: {e}"
            );
        }
    }
    // In a file of several, the error names the proof.
    let mut two = [good, good].concat();
    two[192..240].copy_from_slice(&compressed_x(1));
    let e = Proof::many_from_bytes(&two).unwrap_err();
    assert!(e.to_string().contains("proof 1: A: "), "{e}");
}

#[test]
fn proof_files_are_bounded_before_they_are_read() {
    let (_, proof, _) = small_proof();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proof.bin");
    std::fs::write(&path, [proof.to_bytes(), proof.to_bytes()].concat()).unwrap();
    assert_eq!(Proof::load_many(&path).unwrap(), vec![proof, proof]);

    std::fs::write(&path, &proof.to_bytes()[..191]).unwrap();
    let e = Proof::load_many(&path).unwrap_err().to_string();
    assert!(
        e.contains("multiple of 192") && e.contains("proof.bin"),
        "{e}"
    );

    // One proof more than the limit (sparse): refused before it is read.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(Proof::MAX_FILE_BYTES + Proof::SIZE as u64)
        .unwrap();
    let start = std::time::Instant::now();
    let e = Proof::load_many(&path).unwrap_err().to_string();
    assert!(
        e.contains("larger than the limit of 201326592 bytes"),
        "{e}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(1));
}

/// A backend that refuses the matrices (no room on its device: the CPU
/// plugin's `fault=r1cs-oom`) still proves, with SpMV on the host, and the
/// prover says why.
#[test]
fn matrices_refused_for_room_fall_back_to_host_spmv() {
    use zkpipe::plugin::KeyValue;
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "100", 1).unwrap()).unwrap();
    let params = Arc::new(groth16::setup(&r1cs, 5));
    let config = BackendConfig {
        ext: vec![KeyValue {
            key: "fault".into(),
            value: "r1cs-oom".into(),
        }]
        .into(),
        ..Default::default()
    };
    let refusing = Registry::load(&SearchPath::only([common::build_dir()]))
        .create("cpu", &config)
        .unwrap();
    let prover = groth16::ProverBuilder::new(Arc::new(refusing))
        .device_spmv(true)
        .build(params.clone(), Arc::new(r1cs))
        .unwrap();
    assert!(!prover.device_spmv());
    let note = prover.fallback_note().unwrap();
    assert!(
        note.contains("refused the matrices") && note.contains("r1cs-oom"),
        "{note}"
    );
    let (proof, _) = prover.prove(&w, Fr::from_u64(3), Fr::from_u64(4)).unwrap();
    let pvk = PreparedVerifyingKey::new(&params.vk);
    assert!(groth16::verify(&pvk, &proof, w.public_inputs()).unwrap());
}

/// With SpMV in the backend (asked of the CPU plugin here), a proof's host
/// bytes leave out the three evaluation vectors and the device's memory
/// left for proofs leaves out the uploaded matrices; the proofs are the
/// host path's.
#[test]
fn device_spmv_accounts_for_its_memory_and_proves_the_same_bytes() {
    let (r1cs, w) = R1cs::record(BenchCircuit::new("squaring-chain", "100", 1).unwrap()).unwrap();
    let params = Arc::new(groth16::setup(&r1cs, 5));
    let r1cs = Arc::new(r1cs);
    let build = |on: bool| {
        groth16::ProverBuilder::new(cpu())
            .device_spmv(on)
            .build(params.clone(), r1cs.clone())
            .unwrap()
    };
    let (fused, host) = (build(true), build(false));
    // The CPU's default: host SpMV (the matrices would be a second copy).
    assert!(
        !Prover::new(cpu(), params.clone(), r1cs.clone())
            .unwrap()
            .device_spmv()
    );
    assert!(fused.device_spmv() && !host.device_spmv());
    let n = 1u64 << groth16::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    assert_eq!(host.partition_bytes() - fused.partition_bytes(), 3 * 32 * n);
    let matrices = r1cs.as_seam().bytes();
    assert!(matrices > 0);
    assert_eq!(host.device_memory() - fused.device_memory(), matrices);
    let (r, s) = (Fr::from_u64(3), Fr::from_u64(4));
    let (a, times) = fused.prove(&w, r, s).unwrap();
    let (b, _) = host.prove(&w, r, s).unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
    assert_eq!(
        times.get(groth16::Stage::Quotient),
        std::time::Duration::ZERO
    );
}
