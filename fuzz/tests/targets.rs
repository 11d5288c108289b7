//! One test per parser: the corpus replayed, then mutants for the budget
//! (see the crate's documentation).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use prost::Message as _;
use zkpipe_circom::CircomR1cs;
use zkpipe_core::groth16::{Parameters, Proof, VerifyingKey};
use zkpipe_core::r1cs::R1cs;
use zkpipe_fuzz::{Budget, run};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

fn fuzz(target: &str, f: impl Fn(&[u8])) {
    run(target, &corpus(target), f, &Budget::from_env());
}

/// The circuit the zkey seeds were made for: a zkey is only read against
/// its circuit.
fn square_circuit() -> &'static CircomR1cs {
    static C: OnceLock<CircomR1cs> = OnceLock::new();
    C.get_or_init(|| {
        let bytes = std::fs::read(corpus("circom_r1cs").join("square.r1cs")).unwrap();
        CircomR1cs::from_bytes("square.r1cs", bytes).unwrap()
    })
}

#[test]
fn circom_r1cs() {
    fuzz("circom_r1cs", |b| {
        let _ = CircomR1cs::from_bytes("fuzz.r1cs", b.to_vec());
    });
}

#[test]
fn circom_wtns() {
    fuzz("circom_wtns", |b| {
        let _ = zkpipe_circom::wtns_from_bytes("fuzz.wtns", b.to_vec());
    });
}

#[test]
fn circom_zkey() {
    let circuit = square_circuit();
    fuzz("circom_zkey", |b| {
        let _ = zkpipe_circom::zkey_from_bytes("fuzz.zkey", b.to_vec(), circuit, "square.r1cs");
        // The BN254 reader on the same bytes.
        let parsed =
            zkpipe_circom::binfile::BinFile::parse("fuzz.zkey".into(), b.to_vec(), b"zkey", &[1]);
        if let Ok(f) = parsed {
            let _ = zkpipe_circom::zkey_bn254::zkey_vk(&f);
        }
    });
}

#[test]
fn snarkjs_json() {
    use zkpipe_circom::json::{proof_from_json, public_from_json, vk_from_json};
    fuzz("snarkjs_json", |b| {
        // Every reader on every document: a proof read as a key, too.
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(b) {
            let _ = proof_from_json(&v, "fuzz");
            let _ = vk_from_json(&v, "fuzz");
            let _ = public_from_json(&v, "fuzz");
            let _ = zkpipe_circom::json::curve_of(&v, "fuzz");
            let _ = zkpipe_circom::json_bn254::proof_from_json(&v, "fuzz");
            let _ = zkpipe_circom::json_bn254::vk_from_json(&v, "fuzz");
            let _ = zkpipe_circom::json_bn254::public_from_json(&v, "fuzz");
        }
    });
}

#[test]
fn groth16_vk() {
    fuzz("groth16_vk", |b| {
        let _ = VerifyingKey::from_bytes(b);
    });
}

#[test]
fn groth16_params() {
    fuzz("groth16_params", |b| {
        let _ = Parameters::from_bytes(b, true);
        let _ = Parameters::from_bytes(b, false);
    });
}

#[test]
fn groth16_proof() {
    fuzz("groth16_proof", |b| {
        let _ = Proof::from_bytes(b);
    });
}

/// Seeds hold the cache file without its trailing SHA-256, which the target
/// appends: mutants would otherwise never get past the checksum.
#[test]
fn r1cs_cache() {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.r1cs");
    fuzz("r1cs_cache", |b| {
        let mut file = b.to_vec();
        file.extend_from_slice(&Sha256::digest(b));
        std::fs::write(&path, &file).unwrap();
        let _ = R1cs::load(&path, "fuzz");
    });
}

#[test]
fn filecoin_c1() {
    fuzz("filecoin_c1", |b| {
        let _ = zkpipe_filecoin::porep::C1::parse(b);
    });
}

fn post_job(registered: zkpipe_filecoin::RegisteredPoStProof, vanilla: &[u8]) {
    let _ = zkpipe_filecoin::post::job(&zkpipe_filecoin::post::PostRequest {
        registered,
        randomness: [1; 32],
        prover_id: [2; 32],
        vanilla: vec![vanilla.to_vec()],
        partition: None,
    });
}

/// The bytes are one vanilla proof of a 2 KiB window or winning PoSt, as
/// `zkpipe filecoin window-post --vanilla` passes them on.
#[test]
fn filecoin_post_vanilla() {
    use zkpipe_filecoin::RegisteredPoStProof::{StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1};
    fuzz("filecoin_post_vanilla", |b| {
        post_job(StackedDrgWindow2KiBV1_2, b);
        post_job(StackedDrgWinning2KiBV1, b);
    });
}

/// Two shapes that panicked inside filecoin-proofs before `post::job`
/// refused them: no sector proofs (a window partition is padded by copying
/// the last one), and a sector proof without inclusion proofs (the
/// verifier reads the first).
#[test]
fn filecoin_post_vanilla_without_sector_or_inclusion_proofs_is_refused() {
    use zkpipe_filecoin::RegisteredPoStProof::{StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1};
    for (file, needle) in [
        ("no-sectors.bin", "no sector proofs"),
        ("one-sector.bin", "inclusion proofs"),
    ] {
        let b = std::fs::read(corpus("filecoin_post_vanilla").join(file)).unwrap();
        for registered in [StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1] {
            let e = zkpipe_filecoin::post::job(&zkpipe_filecoin::post::PostRequest {
                registered,
                randomness: [1; 32],
                prover_id: [2; 32],
                vanilla: vec![b.clone()],
                partition: None,
            })
            .err()
            .unwrap_or_else(|| panic!("{file}: accepted"));
            assert!(e.to_string().contains(needle), "{file}: {e}");
        }
    }
}

/// The bytes are the one partition proof of a 2 KiB sector update.
#[test]
fn filecoin_snap_vanilla() {
    use zkpipe_filecoin::RegisteredUpdateProof;
    use zkpipe_filecoin::snap::{SnapRequest, job};
    fuzz("filecoin_snap_vanilla", |b| {
        let _ = job(&SnapRequest {
            registered: RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old: [1; 32],
            comm_r_new: [2; 32],
            comm_d_new: [3; 32],
            vanilla: vec![b.to_vec()],
        });
    });
}

#[test]
fn daemon_config() {
    use zkpipe_daemon::config::Config;
    fuzz("daemon_config", |b| {
        if let Ok(text) = std::str::from_utf8(b)
            && let Ok(config) = toml::from_str::<Config>(text)
        {
            let _ = config.validate();
        }
    });
}

#[test]
fn daemon_submit() {
    use zkpipe_daemon::proto::SubmitRequest;
    fuzz("daemon_submit", |b| {
        if let Ok(req) = SubmitRequest::decode(b) {
            let _ = zkpipe_daemon::validate::new_job(&req);
        }
    });
}

/// Writes the seed corpus (run after a format changes, then commit it).
#[test]
#[ignore = "writes corpus/; run by hand"]
fn make_corpus() {
    corpus_gen::write_all();
}

mod corpus_gen {
    use super::*;
    use zkpipe_daemon::proto::{self, submit_request::Inputs};

    fn put(target: &str, name: &str, bytes: &[u8]) {
        let dir = corpus(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    /// BLS12-381's r, little-endian.
    fn bls_r() -> Vec<u8> {
        let hex = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
        (0..32)
            .rev()
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn container(magic: &[u8; 4], version: u32, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = magic.to_vec();
        out.extend(version.to_le_bytes());
        out.extend((sections.len() as u32).to_le_bytes());
        for (ty, data) in sections {
            out.extend(ty.to_le_bytes());
            out.extend((data.len() as u64).to_le_bytes());
            out.extend(data);
        }
        out
    }

    fn scalar(v: u64) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[..8].copy_from_slice(&v.to_le_bytes());
        b
    }

    /// `x·x = y` and `y·1 = y`: wires one, y (public output), x (private).
    fn square_r1cs() -> Vec<u8> {
        let mut header = 32u32.to_le_bytes().to_vec();
        header.extend(bls_r());
        for v in [3u32, 1, 0, 1] {
            header.extend(v.to_le_bytes());
        }
        header.extend(3u64.to_le_bytes());
        header.extend(2u32.to_le_bytes());
        let mut cons = Vec::new();
        for wire in [2u32, 2, 1, 1, 0, 1] {
            cons.extend(1u32.to_le_bytes());
            cons.extend(wire.to_le_bytes());
            cons.extend(scalar(1));
        }
        let labels: Vec<u8> = (0u64..3).flat_map(|l| l.to_le_bytes()).collect();
        container(b"r1cs", 1, &[(1, header), (2, cons), (3, labels)])
    }

    fn wtns(values: &[u64]) -> Vec<u8> {
        let mut header = 32u32.to_le_bytes().to_vec();
        header.extend(bls_r());
        header.extend((values.len() as u32).to_le_bytes());
        let data = values.iter().flat_map(|&v| scalar(v)).collect();
        container(b"wtns", 2, &[(1, header), (2, data)])
    }

    fn base64(bytes: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for c in bytes.chunks(3) {
            let n = c
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                s.push(if i <= c.len() {
                    A[(n >> (18 - 6 * i)) as usize & 63] as char
                } else {
                    '='
                });
            }
        }
        s
    }

    pub fn write_all() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/circom/fixtures");
        let fixture = |name: &str| std::fs::read(fixtures.join(name)).unwrap();

        let r1cs = square_r1cs();
        put("circom_r1cs", "square.r1cs", &r1cs);
        put(
            "circom_r1cs",
            "hash_chain.r1cs",
            &fixture("hash_chain.r1cs"),
        );
        put("circom_wtns", "square.wtns", &wtns(&[1, 9, 3]));
        put(
            "circom_wtns",
            "hash_chain.wtns",
            &fixture("hash_chain.wtns"),
        );

        let circuit = CircomR1cs::from_bytes("square.r1cs", r1cs).unwrap();
        let params = zkpipe_core::groth16::setup(&circuit.r1cs, 1);
        let dir = tempfile::tempdir().unwrap();
        let zkey = dir.path().join("square.zkey");
        // snarkjs's H query: a zkey holds no other.
        let odd = zkpipe_core::groth16::setup_for(
            &circuit.r1cs,
            1,
            zkpipe_core::groth16::HQuery::OddCoset,
            &zkpipe_core::util::progress::Silent,
        );
        zkpipe_circom::write_zkey(&zkey, &odd, &circuit).unwrap();
        put("circom_zkey", "square.zkey", &std::fs::read(&zkey).unwrap());

        let mut vk = Vec::new();
        params.vk.write(&mut vk).unwrap();
        put("groth16_vk", "square.vk", &vk);
        let mut p = Vec::new();
        params.write(&mut p).unwrap();
        put("groth16_params", "square.params", &p);

        let sj_proof: serde_json::Value =
            serde_json::from_slice(&fixture("hash_chain.sj.proof.json")).unwrap();
        let proof = zkpipe_circom::json::proof_from_json(&sj_proof, "fixture").unwrap();
        put("groth16_proof", "hash_chain.proof", &proof.to_bytes());

        for name in [
            "hash_chain.sj.proof.json",
            "hash_chain.sj.public.json",
            "hash_chain.vk.json",
        ] {
            put("snarkjs_json", name, &fixture(name));
        }
        let vk_json = zkpipe_circom::json::vk_to_json(&params.vk);
        put(
            "snarkjs_json",
            "square.vk.json",
            vk_json.to_string().as_bytes(),
        );

        let cache = dir.path().join("square.cache");
        circuit.r1cs.save(&cache, "fuzz").unwrap();
        let file = std::fs::read(&cache).unwrap();
        put("r1cs_cache", "square.body", &file[..file.len() - 32]);

        let zeros = format!("[{}]", ["0"; 32].join(","));
        let c1 = format!(
            r#"{{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{{"StackedDrg2KiBV1":[[]]}},"comm_r":{zeros},"comm_d":{zeros},"replica_id":{zeros},"seed":{zeros},"ticket":{zeros}}}"#
        );
        put("filecoin_c1", "c1.json", c1.as_bytes());
        let envelope = format!(
            r#"{{"SectorNum":1,"Phase1Out":"{}","SectorSize":2048}}"#,
            base64(c1.as_bytes())
        );
        put("filecoin_c1", "envelope.json", envelope.as_bytes());

        // bincode, fixed-width: sector id, comm_r, then the sectors' Vec.
        let mut post = 7u64.to_le_bytes().to_vec();
        post.extend([0u8; 32]);
        put(
            "filecoin_post_vanilla",
            "no-sectors.bin",
            &[&post[..], &0u64.to_le_bytes()].concat(),
        );
        // One sector: no inclusion proofs, comm_c, comm_r_last.
        let one: Vec<u8> = [
            &post[..],
            &1u64.to_le_bytes(),
            &0u64.to_le_bytes(),
            &[0u8; 64],
        ]
        .concat();
        put("filecoin_post_vanilla", "one-sector.bin", &one);
        // comm_r_last_old, comm_r_last_new, apex leaves, challenge proofs.
        let snap: Vec<u8> = [&[0u8; 64][..], &0u64.to_le_bytes(), &0u64.to_le_bytes()].concat();
        put("filecoin_snap_vanilla", "empty.bin", &snap);

        let config = toml::to_string_pretty(&zkpipe_daemon::config::Config::default()).unwrap();
        put("daemon_config", "default.toml", config.as_bytes());
        put(
            "daemon_config",
            "tcp.toml",
            b"[daemon]\nlisten = \"127.0.0.1:7000\"\n\n[keys]\nsynthetic = true\n",
        );

        let builtin = proto::SubmitRequest {
            request_id: "job-1".into(),
            key: Some(proto::KeyId {
                circuit: "sha256".into(),
                size: "1".into(),
            }),
            priority: 2,
            partitions: 2,
            inputs: Some(Inputs::Builtin(proto::BuiltinInputs { seed: 5 })),
        };
        put("daemon_submit", "builtin.pb", &builtin.encode_to_vec());
        let circom = proto::SubmitRequest {
            request_id: String::new(),
            key: Some(proto::KeyId {
                circuit: "circom".into(),
                size: "ab".repeat(32),
            }),
            priority: 0,
            partitions: 0,
            inputs: Some(Inputs::Circom(proto::CircomInputs {
                wtns: vec![wtns(&[1, 9, 3])],
            })),
        };
        put("daemon_submit", "circom.pb", &circom.encode_to_vec());
    }
}
