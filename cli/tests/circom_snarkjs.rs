//! zkpipe against the real circom, snarkjs and solc (npm `circom2`,
//! `snarkjs`, `solc`; the verifier contract runs in revm):
//! circuits in cli/tests/circom/ compiled with `--prime bls12381`, keys
//! from a small powers of tau and `snarkjs groth16 setup`, witnesses from
//! `snarkjs wtns calculate`; then proofs checked both ways and bad files
//! refused.
//!
//! The tools are looked for in `$ZKPIPE_CIRCOM_TOOLS`, else
//! `target/circom-tools` (where `.ci/run` installs them); without them the
//! tests say so and pass, unless `ZKPIPE_REQUIRE_CIRCOM=1`. Compiled files
//! and keys are cached under `target/circom-fixtures/`, keyed by the
//! circuits' sources, so reruns take seconds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod support;

const CIRCUITS: [&str; 3] = ["hash_chain", "merkle", "many_public"];
/// BN254's circuits (circom's default prime): the chain again, and a
/// Merkle inclusion proof built from circomlib's Poseidon (npm `circomlib`).
const BN254_CIRCUITS: [&str; 2] = ["hash_chain", "poseidon_merkle"];
/// Powers of tau: 2^10 covers domains up to 2^9 (the H query reads 2n points).
const PTAU_POWER: u32 = 10;
/// BN254's: the Poseidon tree's 726 constraints need a domain of 2^10.
const BN254_PTAU_POWER: u32 = 11;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/circom")
}

/// The tools, or `None` (after saying why) when this machine lacks them.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("ZKPIPE_CIRCOM_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("circom-tools"));
    let bin = dir.join("node_modules/.bin");
    let (circom, snarkjs) = (bin.join("circom2"), bin.join("snarkjs"));
    let node = Command::new("node").arg("--version").output().is_ok();
    let circomlib = dir.join("node_modules/circomlib/circuits");
    if node
        && circom.exists()
        && snarkjs.exists()
        && bin.join("solcjs").exists()
        && circomlib.is_dir()
    {
        return Some((circom, snarkjs));
    }
    let why = format!(
        "circom2/snarkjs not found in {} (node on PATH: {node}); install with \
         `npm install --prefix {} circom2@0.2.23 snarkjs@0.7.6 solc@0.8.28 circomlib@2.0.5` or run .ci/run",
        bin.display(),
        dir.display()
    );
    assert!(
        std::env::var_os("ZKPIPE_REQUIRE_CIRCOM").is_none(),
        "ZKPIPE_REQUIRE_CIRCOM is set: {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// Runs a tool; panics with its output when it fails.
fn tool(cmd: &Path, args: &[&str], dir: &Path) -> Output {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        cmd.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// FNV-1a: a cache key that stays the same across Rust versions.
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100000001b3);
    }
    h
}

struct Fixtures {
    dir: PathBuf,
    snarkjs: PathBuf,
}

impl Fixtures {
    fn file(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }
}

/// Compiles the circuits and sets up their keys once per process, reusing
/// a cached folder when the sources are unchanged.
fn fixtures() -> Option<&'static Fixtures> {
    static F: OnceLock<Option<Fixtures>> = OnceLock::new();
    F.get_or_init(|| {
        let (circom, snarkjs) = tools()?;
        let mut key = fnv(format!("v5 {PTAU_POWER}").as_bytes(), 0xcbf29ce484222325);
        for c in CIRCUITS.iter().chain(&BN254_CIRCUITS[1..]) {
            for ext in ["circom", "input.json"] {
                key = fnv(
                    &std::fs::read(sources().join(format!("{c}.{ext}"))).unwrap(),
                    key,
                );
            }
        }
        let root = target_dir().join("circom-fixtures");
        let dir = root.join(format!("{key:016x}"));
        if !dir.join("done").exists() {
            build(&root, &dir, &circom, &snarkjs);
            build_bn254(&root, &dir, &circom, &snarkjs);
            std::fs::write(dir.join("done"), b"").unwrap();
        }
        Some(Fixtures { dir, snarkjs })
    })
    .as_ref()
}

/// A small powers of tau of 2^`power` for `curve` (`bls12381`, `bn128`),
/// made once.
fn powers_of_tau(root: &Path, snarkjs: &Path, curve: &str, power: u32) -> PathBuf {
    let ptau = root.join(format!("pot{power}_{curve}.ptau"));
    if ptau.exists() {
        return ptau;
    }
    let p = |s: &str| root.join(s).to_str().unwrap().to_string();
    let power = power.to_string();
    tool(
        snarkjs,
        &["powersoftau", "new", curve, &power, &p("pot_0.ptau")],
        root,
    );
    tool(
        snarkjs,
        &[
            "powersoftau",
            "contribute",
            &p("pot_0.ptau"),
            &p("pot_1.ptau"),
            "--name=zkpipe test",
            "-e=zkpipe test entropy",
        ],
        root,
    );
    tool(
        snarkjs,
        &[
            "powersoftau",
            "prepare",
            "phase2",
            &p("pot_1.ptau"),
            &p("pot.tmp"),
        ],
        root,
    );
    std::fs::rename(root.join("pot.tmp"), &ptau).unwrap();
    ptau
}

fn build(root: &Path, dir: &Path, circom: &Path, snarkjs: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ptau = powers_of_tau(root, snarkjs, "bls12381", PTAU_POWER);
    let ptau = ptau.to_str().unwrap();
    for c in CIRCUITS {
        let src = sources().join(format!("{c}.circom"));
        tool(
            circom,
            &[
                src.to_str().unwrap(),
                "--r1cs",
                "--wasm",
                "--prime",
                "bls12381",
                "-o",
                ".",
            ],
            dir,
        );
        keys_witness_and_proof(snarkjs, dir, c, ptau);
    }
}

/// BN254's circuits under `dir/bn254`: compiled with circom's default
/// prime (circomlib's templates copied beside them: circom2 runs in a
/// WebAssembly sandbox that sees only its working folder), then keys,
/// witness and a proof from snarkjs.
fn build_bn254(root: &Path, dir: &Path, circom: &Path, snarkjs: &Path) {
    let bn = dir.join("bn254");
    let lib = bn.join("lib/circomlib/circuits");
    std::fs::create_dir_all(&lib).unwrap();
    let circomlib = circom.parent().unwrap().join("../circomlib/circuits");
    for entry in std::fs::read_dir(&circomlib).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, lib.join(path.file_name().unwrap())).unwrap();
        }
    }
    let ptau = powers_of_tau(root, snarkjs, "bn128", BN254_PTAU_POWER);
    for c in BN254_CIRCUITS {
        let src = sources().join(format!("{c}.circom"));
        let flags = ["--r1cs", "--wasm", "--O2", "-l", "lib", "-o", "."];
        tool(
            circom,
            &[&[src.to_str().unwrap()][..], &flags].concat(),
            &bn,
        );
        keys_witness_and_proof(snarkjs, &bn, c, ptau.to_str().unwrap());
    }
}

/// snarkjs's keys (one phase-2 contribution), witness, verification key
/// and proof for the compiled circuit `c` in `dir`.
fn keys_witness_and_proof(snarkjs: &Path, dir: &Path, c: &str, ptau: &str) {
    let input = sources().join(format!("{c}.input.json"));
    let wasm = format!("{c}_js/{c}.wasm");
    tool(
        snarkjs,
        &[
            "groth16",
            "setup",
            &format!("{c}.r1cs"),
            ptau,
            &format!("{c}_0.zkey"),
        ],
        dir,
    );
    // One phase-2 contribution, so that δ is not the generator.
    tool(
        snarkjs,
        &[
            "zkey",
            "contribute",
            &format!("{c}_0.zkey"),
            &format!("{c}.zkey"),
            "--name=zkpipe test",
            "-e=zkpipe phase 2",
        ],
        dir,
    );
    tool(
        snarkjs,
        &[
            "wtns",
            "calculate",
            &wasm,
            input.to_str().unwrap(),
            &format!("{c}.wtns"),
        ],
        dir,
    );
    tool(
        snarkjs,
        &[
            "zkey",
            "export",
            "verificationkey",
            &format!("{c}.zkey"),
            &format!("{c}.vk.json"),
        ],
        dir,
    );
    tool(
        snarkjs,
        &[
            "groth16",
            "prove",
            &format!("{c}.zkey"),
            &format!("{c}.wtns"),
            &format!("{c}.sj.proof.json"),
            &format!("{c}.sj.public.json"),
        ],
        dir,
    );
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

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `snarkjs groth16 verify`: whether it accepted.
fn snarkjs_accepts(f: &Fixtures, vk: &str, public: &Path, proof: &Path) -> bool {
    let out = Command::new(&f.snarkjs)
        .args([
            "groth16",
            "verify",
            vk,
            public.to_str().unwrap(),
            proof.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    out.status.success() && said.contains("OK!")
}

/// zkpipe proves `c` from its r1cs, wtns and `keys` (`--zkey F` or `--params D`).
fn prove(
    f: &Fixtures,
    tmp: &Path,
    c: &str,
    keys: [&str; 2],
    backend: &str,
) -> (Output, PathBuf, PathBuf) {
    let (proof, public) = (
        tmp.join(format!("{c}.proof.json")),
        tmp.join(format!("{c}.public.json")),
    );
    let out = zkpipe(
        tmp,
        &[
            "prove",
            "--r1cs",
            &f.file(&format!("{c}.r1cs")),
            "--wtns",
            &f.file(&format!("{c}.wtns")),
            keys[0],
            keys[1],
            "--backend",
            backend,
            "--proof",
            proof.to_str().unwrap(),
            "--public",
            public.to_str().unwrap(),
        ],
    );
    (out, proof, public)
}

#[test]
fn zkpipe_proofs_from_snarkjs_keys_verify_with_snarkjs() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for c in CIRCUITS {
        let zkey = f.file(&format!("{c}.zkey"));
        let (out, proof, public) = prove(f, tmp.path(), c, ["--zkey", &zkey], "cpu");
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert_eq!(
            json(&public),
            json(&f.dir.join(format!("{c}.sj.public.json"))),
            "{c}"
        );
        assert!(
            snarkjs_accepts(f, &f.file(&format!("{c}.vk.json")), &public, &proof),
            "{c}"
        );
        // The check can fail: snarkjs refuses the proof for other signals.
        let other = tmp.path().join("other.json");
        let mut signals = json(&public);
        signals[0] = serde_json::json!("4242");
        std::fs::write(&other, signals.to_string()).unwrap();
        assert!(
            !snarkjs_accepts(f, &f.file(&format!("{c}.vk.json")), &other, &proof),
            "{c}"
        );
    }
}

#[test]
fn zkpipe_proves_on_wgpu_where_there_is_an_adapter() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let zkey = f.file("merkle.zkey");
    let (out, proof, public) = prove(f, tmp.path(), "merkle", ["--zkey", &zkey], "wgpu");
    let t = text(&out);
    if t.contains("unknown backend `wgpu`") || t.contains("no wgpu adapter") {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_none(),
            "ZKPIPE_REQUIRE_ADAPTER is set but wgpu cannot run: {t}"
        );
        eprintln!("skipped: no wgpu adapter here");
        return;
    }
    assert!(out.status.success(), "{t}");
    assert!(snarkjs_accepts(
        f,
        &f.file("merkle.vk.json"),
        &public,
        &proof
    ));
}

#[test]
fn snarkjs_proofs_verify_with_zkpipe() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for c in CIRCUITS {
        let verify = |public: &str| {
            zkpipe(
                tmp.path(),
                &[
                    "verify",
                    "--vk",
                    &f.file(&format!("{c}.vk.json")),
                    "--proof",
                    &f.file(&format!("{c}.sj.proof.json")),
                    "--public",
                    public,
                ],
            )
        };
        let out = verify(&f.file(&format!("{c}.sj.public.json")));
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "valid");
        let mut signals = json(&f.dir.join(format!("{c}.sj.public.json")));
        signals[0] = serde_json::json!("4242");
        let other = tmp.path().join("other.json");
        std::fs::write(&other, signals.to_string()).unwrap();
        let out = verify(other.to_str().unwrap());
        assert_eq!(out.status.code(), Some(1), "{c}: {}", text(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "invalid");
    }
}

#[test]
fn export_vk_of_a_zkey_equals_snarkjs_verification_key() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for c in CIRCUITS {
        let out = zkpipe(
            tmp.path(),
            &["export-vk", "--zkey", &f.file(&format!("{c}.zkey"))],
        );
        assert!(out.status.success(), "{}", text(&out));
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(ours, json(&f.dir.join(format!("{c}.vk.json"))), "{c}");
    }
}

#[test]
fn zkpipe_setup_keys_give_proofs_snarkjs_accepts() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let out = zkpipe(
        tmp.path(),
        &[
            "setup",
            "--r1cs",
            &f.file("merkle.r1cs"),
            "--out",
            keys.to_str().unwrap(),
            "--seed",
            "9",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (out, proof, public) = prove(
        f,
        tmp.path(),
        "merkle",
        ["--params", keys.to_str().unwrap()],
        "cpu",
    );
    assert!(out.status.success(), "{}", text(&out));
    let vk = keys.join("vk.json");
    assert!(snarkjs_accepts(f, vk.to_str().unwrap(), &public, &proof));
}

/// `zkpipe setup --r1cs --zkey`: snarkjs proves with zkpipe's zkey (no
/// powers of tau), and both provers' proofs verify under its key.
#[test]
fn snarkjs_proves_with_a_zkey_from_zkpipe_setup() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for c in CIRCUITS {
        let zkey = t.join(format!("{c}.zk.zkey"));
        let zkey = zkey.to_str().unwrap();
        let vk = t.join(format!("{c}.zk.vk.json"));
        let vk = vk.to_str().unwrap();
        let r1cs = f.file(&format!("{c}.r1cs"));
        let out = zkpipe(
            t,
            &["setup", "--r1cs", &r1cs, "--zkey", zkey, "--seed", "11"],
        );
        assert!(out.status.success(), "{c}: {}", text(&out));
        // snarkjs reads the zkey's verifying key as zkpipe does.
        tool(
            &f.snarkjs,
            &["zkey", "export", "verificationkey", zkey, vk],
            t,
        );
        let out = zkpipe(t, &["export-vk", "--zkey", zkey]);
        assert!(out.status.success(), "{c}: {}", text(&out));
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(ours, json(Path::new(vk)), "{c}");
        // snarkjs proves with it; snarkjs and zkpipe accept that proof.
        let (sj_proof, sj_public) = (
            t.join(format!("{c}.sjzk.proof.json")),
            t.join(format!("{c}.sjzk.public.json")),
        );
        tool(
            &f.snarkjs,
            &[
                "groth16",
                "prove",
                zkey,
                &f.file(&format!("{c}.wtns")),
                sj_proof.to_str().unwrap(),
                sj_public.to_str().unwrap(),
            ],
            t,
        );
        assert!(snarkjs_accepts(f, vk, &sj_public, &sj_proof), "{c}");
        let out = zkpipe(
            t,
            &[
                "verify",
                "--vk",
                vk,
                "--proof",
                sj_proof.to_str().unwrap(),
                "--public",
                sj_public.to_str().unwrap(),
            ],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "valid",
            "{c}: {}",
            text(&out)
        );
        // zkpipe proves with it too; snarkjs accepts.
        let (out, proof, public) = prove(f, t, c, ["--zkey", zkey], "cpu");
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert!(snarkjs_accepts(f, vk, &public, &proof), "{c}");
    }
}

/// The byte range of section `ty` in an iden3 container.
fn section(bytes: &[u8], ty: u32) -> std::ops::Range<usize> {
    let mut pos = 12;
    loop {
        let t = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
        let len = u64::from_le_bytes(bytes[pos + 4..pos + 12].try_into().unwrap()) as usize;
        if t == ty {
            return pos + 12..pos + 12 + len;
        }
        pos += 12 + len;
    }
}

#[test]
fn bad_files_exit_2_with_the_reason_and_write_nothing() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let run = |r1cs: &str, wtns: &str, zkey: &str| {
        let proof = t.join("proof.json");
        let out = zkpipe(
            t,
            &[
                "prove",
                "--r1cs",
                r1cs,
                "--wtns",
                wtns,
                "--zkey",
                zkey,
                "--proof",
                proof.to_str().unwrap(),
                "--public",
                t.join("public.json").to_str().unwrap(),
            ],
        );
        assert!(!proof.exists(), "a refusal wrote a proof");
        out
    };
    let fails = |out: Output, needle: &str| {
        let s = text(&out);
        assert_eq!(out.status.code(), Some(2), "{s}");
        assert!(s.contains(needle), "expected `{needle}` in {s}");
        assert!(!s.contains("panicked"), "{s}");
    };
    let (r1cs, wtns, zkey) = (
        f.file("hash_chain.r1cs"),
        f.file("hash_chain.wtns"),
        f.file("hash_chain.zkey"),
    );
    // BN254's constraint system.
    let bn = f.dir.join("bn254/hash_chain.r1cs");
    fails(
        run(bn.to_str().unwrap(), &wtns, &zkey),
        "BN254 is not supported yet",
    );
    // A zkey cut short, at several places.
    let bytes = std::fs::read(&zkey).unwrap();
    for cut in [10, 200, bytes.len() / 2, bytes.len() - 1] {
        let p = t.join("cut.zkey");
        std::fs::write(&p, &bytes[..cut]).unwrap();
        fails(run(&r1cs, &wtns, p.to_str().unwrap()), "truncated");
    }
    // A witness of another circuit.
    fails(run(&r1cs, &f.file("merkle.wtns"), &zkey), "another circuit");
    // A zkey of another circuit.
    fails(run(&r1cs, &wtns, &f.file("merkle.zkey")), "disagree");
    // A zkey whose QAP coefficients disagree with the r1cs (one value changed).
    let mut changed = bytes.clone();
    let coefs = section(&bytes, 4);
    changed[coefs.start + 4 + 12] ^= 1;
    let p = t.join("coef.zkey");
    std::fs::write(&p, &changed).unwrap();
    fails(run(&r1cs, &wtns, p.to_str().unwrap()), "QAP coefficient 0");
}

#[test]
fn witness_from_the_wasm_generator_equals_snarkjs_wtns() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    // The BLS12-381 circuits, and the chain compiled for BN254.
    let bn254 = ["bn254/hash_chain"];
    for c in CIRCUITS.iter().chain(&bn254) {
        let out = tmp.path().join("w.wtns");
        let base = c.rsplit('/').next().unwrap();
        let input = sources().join(format!("{base}.input.json"));
        let o = zkpipe(
            tmp.path(),
            &[
                "witness",
                "--wasm",
                &f.file(&format!("{c}_js/{base}.wasm")),
                "--input",
                input.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{c}: {}", text(&o));
        let ours = std::fs::read(&out).unwrap();
        let theirs = std::fs::read(f.dir.join(format!("{c}.wtns"))).unwrap();
        assert!(ours == theirs, "{c}: the witness differs from snarkjs's");
    }
}

#[test]
fn one_command_from_inputs_to_a_proof_snarkjs_accepts() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (proof, public) = (t.join("proof.json"), t.join("public.json"));
    let input = sources().join("merkle.input.json");
    let o = zkpipe(
        t,
        &[
            "prove",
            "--r1cs",
            &f.file("merkle.r1cs"),
            "--wasm",
            &f.file("merkle_js/merkle.wasm"),
            "--input",
            input.to_str().unwrap(),
            "--zkey",
            &f.file("merkle.zkey"),
            "--proof",
            proof.to_str().unwrap(),
            "--public",
            public.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(snarkjs_accepts(
        f,
        &f.file("merkle.vk.json"),
        &public,
        &proof
    ));
}

#[test]
fn bad_inputs_to_the_wasm_generator_exit_2_with_the_reason() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let wasm = f.file("merkle_js/merkle.wasm");
    let run = |wasm: &str, input: serde_json::Value| {
        let p = t.join("input.json");
        std::fs::write(&p, input.to_string()).unwrap();
        let out = t.join("w.wtns");
        let o = zkpipe(
            t,
            &[
                "witness",
                "--wasm",
                wasm,
                "--input",
                p.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(!out.exists(), "a refusal wrote a witness");
        o
    };
    let fails = |o: Output, needle: &str| {
        let s = text(&o);
        assert_eq!(o.status.code(), Some(2), "{s}");
        assert!(s.contains(needle), "expected `{needle}` in {s}");
    };
    let good = json(&sources().join("merkle.input.json"));
    let mut unknown = good.clone();
    unknown["nope"] = serde_json::json!("1");
    fails(run(&wasm, unknown), "`nope` is not an input signal");
    let mut short = good.clone();
    short["siblings"].as_array_mut().unwrap().pop();
    fails(run(&wasm, short), "takes 8 values, 7 were given");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("leaf");
    fails(run(&wasm, missing), "needs 17");
    let mut not_a_bit = good.clone();
    not_a_bit["bits"][0] = serde_json::json!("2");
    fails(run(&wasm, not_a_bit), "assert");
    let mut not_a_number = good.clone();
    not_a_number["leaf"] = serde_json::json!("12x");
    fails(run(&wasm, not_a_number), "not an integer");
    // A BN254 generator with a BLS12-381 key, and the other way round.
    let chain_input = sources().join("hash_chain.input.json");
    let input = chain_input.to_str().unwrap();
    for (wasm, zkey, why) in [
        (
            "bn254/hash_chain_js/hash_chain.wasm",
            "hash_chain.zkey",
            "is for BN254, not BLS12-381",
        ),
        (
            "hash_chain_js/hash_chain.wasm",
            "bn254/hash_chain.zkey",
            "is for BLS12-381, not BN254",
        ),
        // Another BN254 circuit's generator, refused by the key's
        // variable count before it runs.
        (
            "bn254/poseidon_merkle_js/poseidon_merkle.wasm",
            "bn254/hash_chain.zkey",
            "witness values but the constraint system has",
        ),
    ] {
        let (wasm, zkey) = (f.file(wasm), f.file(zkey));
        let flags = ["prove", "--zkey", &zkey, "--wasm", &wasm, "--input", input];
        fails(zkpipe(t, &flags), why);
        assert!(!t.join("proof.json").exists());
    }
    let garbage = t.join("g.wasm");
    std::fs::write(&garbage, b"not wasm").unwrap();
    fails(
        run(garbage.to_str().unwrap(), good),
        "not a WebAssembly module",
    );
}

/// snarkjs's and rapidsnark's order, from the zkey and the witness alone:
/// snarkjs accepts the proof, and `groth16 verify` takes snarkjs's order.
#[test]
fn groth16_prove_and_verify_in_snarkjs_order_without_the_r1cs() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for c in CIRCUITS {
        let (proof, public) = (t.join(format!("{c}.p.json")), t.join(format!("{c}.s.json")));
        let [zkey, wtns, vk] = ["zkey", "wtns", "vk.json"].map(|e| f.file(&format!("{c}.{e}")));
        let (p, s) = (proof.to_str().unwrap(), public.to_str().unwrap());
        let out = zkpipe(t, &["groth16", "prove", &zkey, &wtns, p, s]);
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert_eq!(
            json(&public),
            json(&f.dir.join(format!("{c}.sj.public.json")))
        );
        assert!(snarkjs_accepts(f, &vk, &public, &proof), "{c}");
        let sj_proof = f.file(&format!("{c}.sj.proof.json"));
        for pr in [p, sj_proof.as_str()] {
            let out = zkpipe(t, &["groth16", "verify", &vk, s, pr]);
            assert_eq!(out.status.code(), Some(0), "{c}: {}", text(&out));
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "valid");
        }
        // The same through `prove`'s flags, with the r1cs as a cross-check.
        let r1cs = f.file(&format!("{c}.r1cs"));
        let flags = ["prove", "--zkey", &zkey, "--wtns", &wtns, "--r1cs", &r1cs];
        let out = zkpipe(t, &[&flags[..], &["--proof", p, "--public", s]].concat());
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert!(snarkjs_accepts(f, &vk, &public, &proof), "{c}");
    }
}

/// Without the r1cs a witness is not checked row by row: one that does not
/// satisfy the circuit is caught by the proof's check (exit 2, nothing
/// written); one of another circuit by its length.
#[test]
fn a_zkey_alone_refuses_a_witness_that_does_not_fit() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let mut bad = std::fs::read(f.file("merkle.wtns")).unwrap();
    let n = bad.len();
    bad[n - 32..].copy_from_slice(
        &[5u8; 1]
            .iter()
            .chain(&[0u8; 31])
            .copied()
            .collect::<Vec<_>>(),
    );
    std::fs::write(t.join("bad.wtns"), &bad).unwrap();
    let other = f.file("hash_chain.wtns");
    for (wtns, needle) in [
        (
            t.join("bad.wtns").to_str().unwrap().to_string(),
            "does not verify against",
        ),
        (other, "a witness of another circuit"),
    ] {
        let out = zkpipe(
            t,
            &[
                "groth16",
                "prove",
                &f.file("merkle.zkey"),
                &wtns,
                "p.json",
                "s.json",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(needle), "{needle}: {}", text(&out));
        assert!(!t.join("p.json").exists() && !t.join("s.json").exists());
    }
}

/// snarkjs's BN254 proof (circom's default prime) verifies with zkpipe;
/// a changed signal or proof does not; a key and a proof of different
/// curves are refused naming both.
#[test]
fn snarkjs_bn254_proofs_verify_with_zkpipe_and_changes_do_not() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bn = |e: &str| f.dir.join(format!("bn254/hash_chain.{e}"));
    let (vk, proof, public) = (bn("vk.json"), bn("sj.proof.json"), bn("sj.public.json"));
    let arg = |p: &Path| p.to_str().unwrap().to_string();
    let verify = |vk: &Path, public: &Path, proof: &Path| {
        zkpipe(
            t,
            &["groth16", "verify", &arg(vk), &arg(public), &arg(proof)],
        )
    };
    let said = |o: &Output| String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(json(&vk)["curve"], "bn128");
    let out = verify(&vk, &public, &proof);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(said(&out), "valid");

    let write = |name: &str, v: &serde_json::Value| {
        let p = t.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let mut signals = json(&public);
    signals[0] = serde_json::json!("4242");
    let out = verify(&vk, &write("other.json", &signals), &proof);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(said(&out), "invalid");
    // A and C swapped: both valid points, not a proof.
    let mut p = json(&proof);
    let a = p["pi_a"].clone();
    p["pi_a"] = p["pi_c"].clone();
    p["pi_c"] = a;
    let out = verify(&vk, &public, &write("swapped.json", &p));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let mut p = json(&proof);
    p["pi_a"][1] = serde_json::json!("5");
    let out = verify(&vk, &public, &write("off.json", &p));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("not on the curve"), "{}", text(&out));

    // The key from the zkey equals snarkjs's (e(α, β) aside, which zkpipe
    // does not write); a zkey cut short is refused.
    let exported = t.join("vk.json");
    let out = zkpipe(
        t,
        &[
            "export-vk",
            "--zkey",
            &arg(&bn("zkey")),
            "--out",
            &arg(&exported),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let mut theirs = json(&vk);
    theirs.as_object_mut().unwrap().remove("vk_alphabeta_12");
    assert_eq!(json(&exported), theirs);
    let bytes = std::fs::read(bn("zkey")).unwrap();
    for cut in [20, 300, 700] {
        let short = t.join("short.zkey");
        std::fs::write(&short, &bytes[..cut]).unwrap();
        let out = zkpipe(t, &["export-vk", "--zkey", &arg(&short)]);
        assert_eq!(out.status.code(), Some(2), "cut at {cut}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{}", text(&out));
    }

    // Across curves, either way round.
    let bls_proof = f.dir.join("hash_chain.sj.proof.json");
    let out = verify(&vk, &public, &bls_proof);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("hash_chain.sj.proof.json is for BLS12-381, not BN254"),
        "{}",
        text(&out)
    );
    let bls_vk = f.dir.join("hash_chain.vk.json");
    let out = verify(&bls_vk, &f.dir.join("hash_chain.sj.public.json"), &proof);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is for BN254, not BLS12-381"),
        "{}",
        text(&out)
    );
}

/// Runs `calls` against the contract `creation` deploys, in revm: for each,
/// whether it returned true, and the transaction's gas.
fn in_evm(creation: Vec<u8>, calls: &[Vec<u8>]) -> Vec<(bool, u64)> {
    use revm::context::TxEnv;
    use revm::context_interface::result::{ExecutionResult, Output};
    use revm::database::{CacheDB, EmptyDB};
    use revm::primitives::{Address, TxKind};
    use revm::{Context, ExecuteCommitEvm, MainBuilder, MainContext};
    let mut evm = Context::mainnet()
        .with_db(CacheDB::<EmptyDB>::default())
        .build_mainnet();
    let caller = Address::repeat_byte(0x11);
    let tx = |nonce: u64, kind: TxKind, data: Vec<u8>| {
        let b = TxEnv::builder().caller(caller).kind(kind).data(data.into());
        b.gas_limit(10_000_000).nonce(nonce).build().unwrap()
    };
    let deployed = evm
        .transact_commit(tx(0, TxKind::Create, creation))
        .unwrap();
    let at = deployed.created_address().expect("the contract deploys");
    calls
        .iter()
        .enumerate()
        .map(|(i, data)| {
            match evm
                .transact_commit(tx(1 + i as u64, TxKind::Call(at), data.clone()))
                .unwrap()
            {
                ExecutionResult::Success {
                    output: Output::Call(out),
                    gas,
                    ..
                } => (out.len() == 32 && out[31] == 1, gas.tx_gas_used()),
                other => panic!("call {i} did not return: {other:?}"),
            }
        })
        .collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim().trim_start_matches("0x");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `export-verifier --solidity`: solc compiles the contract, it accepts
/// snarkjs's proof in revm and rejects changed ones (false, not a revert);
/// the calldata equals snarkjs's; a BLS12-381 key or an invalid proof is
/// refused with exit 2 and nothing written.
#[test]
fn the_solidity_verifier_accepts_real_proofs_and_rejects_changed_ones_in_an_evm() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bn = |e: &str| f.file(&format!("bn254/hash_chain.{e}"));
    let (sol, calldata) = (t.join("Verifier.sol"), t.join("calldata.txt"));
    let out = zkpipe(
        t,
        &[
            "export-verifier",
            "--solidity",
            "--vk",
            &bn("vk.json"),
            "--out",
            sol.to_str().unwrap(),
            "--proof",
            &bn("sj.proof.json"),
            "--public",
            &bn("sj.public.json"),
            "--calldata",
            calldata.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let sj = tool(
        &f.snarkjs,
        &[
            "zkey",
            "export",
            "soliditycalldata",
            &bn("sj.public.json"),
            &bn("sj.proof.json"),
        ],
        t,
    );
    let words = |s: &str| -> Vec<Vec<u8>> {
        s.split('"')
            .filter(|w| w.starts_with("0x"))
            .map(unhex)
            .collect()
    };
    let ours = words(&std::fs::read_to_string(&calldata).unwrap());
    let theirs: Vec<Vec<u8>> = words(&String::from_utf8_lossy(&sj.stdout))
        .into_iter()
        .map(|w| [vec![0; 32 - w.len()], w].concat())
        .collect();
    assert_eq!(ours, theirs, "calldata differs from snarkjs's");

    let solc = f.snarkjs.with_file_name("solcjs");
    tool(
        &solc,
        &["--bin", "--optimize", "-o", "out", "Verifier.sol"],
        t,
    );
    let creation =
        unhex(&std::fs::read_to_string(t.join("out/Verifier_sol_Groth16Verifier.bin")).unwrap());
    let n = ours.len() - 8;
    let selector = {
        use revm::primitives::keccak256;
        let sig = format!("verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[{n}])");
        keccak256(sig.as_bytes())[..4].to_vec()
    };
    let call = |w: &[Vec<u8>]| [selector.clone(), w.concat()].concat();
    let mut changed_input = ours.clone();
    changed_input[8][31] ^= 1;
    let mut swapped = ours.clone();
    swapped.swap(0, 6);
    swapped.swap(1, 7);
    let mut off_curve = ours.clone();
    off_curve[1] = [vec![0; 31], vec![5]].concat();
    let mut above_r = ours.clone();
    above_r[8] = vec![0xff; 32];
    let results = in_evm(
        creation,
        &[
            call(&ours),
            call(&changed_input),
            call(&swapped),
            call(&off_curve),
            call(&above_r),
        ],
    );
    let accepted: Vec<bool> = results.iter().map(|r| r.0).collect();
    assert_eq!(accepted, [true, false, false, false, false]);
    let gas = results[0].1;
    eprintln!("verifyProof with {n} public inputs: {gas} gas (the whole transaction)");
    assert!((150_000..400_000).contains(&gas), "{gas} gas");

    // A BLS12-381 key, and an invalid proof: exit 2, nothing written.
    let (sol2, call2) = (t.join("no.sol"), t.join("no.txt"));
    let (s2, c2) = (sol2.to_str().unwrap(), call2.to_str().unwrap());
    let out = zkpipe(
        t,
        &[
            "export-verifier",
            "--solidity",
            "--vk",
            &f.file("hash_chain.vk.json"),
            "--out",
            s2,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is for BLS12-381, not BN254"),
        "{}",
        text(&out)
    );
    let mut signals = json(Path::new(&bn("sj.public.json")));
    signals[0] = serde_json::json!("4242");
    let other = t.join("other.json");
    std::fs::write(&other, signals.to_string()).unwrap();
    let args = [
        "export-verifier",
        "--solidity",
        "--vk",
        &bn("vk.json"),
        "--out",
        s2,
        "--proof",
        &bn("sj.proof.json"),
        "--public",
        other.to_str().unwrap(),
        "--calldata",
        c2,
    ];
    let out = zkpipe(t, &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("does not verify"), "{}", text(&out));
    assert!(!sol2.exists() && !call2.exists(), "a refusal wrote a file");
    // Both outputs on stdout, a missing key, calldata without a proof.
    let (vk, p, s) = (bn("vk.json"), bn("sj.proof.json"), bn("sj.public.json"));
    let refusals: [(&[&str], &str); 4] = [
        (
            &["--vk", &vk, "--proof", &p, "--public", &s],
            "both go to stdout",
        ),
        (&["--vk", "nope.json", "--out", s2], "nope.json"),
        (&["--vk", &vk, "--out", s2, "--calldata", c2], "--proof"),
        (
            &["--vk", &vk, "--out", &vk],
            "refusing to overwrite an input",
        ),
    ];
    for (args, why) in refusals {
        let out = zkpipe(t, &[&["export-verifier", "--solidity"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(why), "{args:?}: {}", text(&out));
        assert!(!sol2.exists() && !call2.exists(), "a refusal wrote a file");
    }
}

/// zkpipe proves BN254 from snarkjs's zkey and a witness (a .wtns, or the
/// generator and input.json): snarkjs, zkpipe and the Solidity verifier in
/// revm accept the proof; a seed reproduces it; a witness that does not
/// satisfy the circuit, or an r1cs (not read on BN254), exits 2 with
/// nothing written.
#[test]
fn zkpipe_proves_bn254_and_snarkjs_and_the_evm_accept_it() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bn = |e: &str| f.file(&format!("bn254/hash_chain.{e}"));
    let (zkey, wtns, vk) = (bn("zkey"), bn("wtns"), bn("vk.json"));
    let path = |n: &str| t.join(n).to_str().unwrap().to_string();
    let prove = |extra: &[&str], p: &str, s: &str| {
        let args = [&["groth16", "prove", &zkey, &wtns, p, s][..], extra].concat();
        zkpipe(t, &args)
    };
    let (p, s) = (path("p.json"), path("s.json"));
    let out = prove(&[], &p, &s);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(Path::new(&s)), json(Path::new(&bn("sj.public.json"))));
    assert_eq!(json(Path::new(&p))["curve"], "bn128");
    assert!(snarkjs_accepts(f, &vk, Path::new(&s), Path::new(&p)));
    let out = zkpipe(t, &["groth16", "verify", &vk, &s, &p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // From the generator and the inputs, one command.
    let (wasm, input) = (
        f.file("bn254/hash_chain_js/hash_chain.wasm"),
        sources().join("hash_chain.input.json"),
    );
    let (p2, s2) = (path("p2.json"), path("s2.json"));
    let flags = [
        "prove",
        "--zkey",
        &zkey,
        "--wasm",
        &wasm,
        "--input",
        input.to_str().unwrap(),
    ];
    let out = zkpipe(
        t,
        &[&flags[..], &["--proof", &p2, "--public", &s2]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(snarkjs_accepts(f, &vk, Path::new(&s2), Path::new(&p2)));

    // A seed reproduces a proof; another seed does not.
    let seeded = |seed: &str, name: &str| {
        let (p, s) = (
            path(&format!("{name}.p.json")),
            path(&format!("{name}.s.json")),
        );
        let out = prove(&["--seed", seed], &p, &s);
        assert!(out.status.success(), "{}", text(&out));
        std::fs::read(p).unwrap()
    };
    assert_eq!(seeded("5", "a"), seeded("5", "b"));
    assert_ne!(seeded("5", "c"), seeded("6", "d"));

    // The Solidity verifier takes zkpipe's proof.
    let (sol, calldata) = (path("V.sol"), path("calldata.txt"));
    let args = [
        "export-verifier",
        "--solidity",
        "--vk",
        &vk,
        "--out",
        &sol,
        "--proof",
        &p,
        "--public",
        &s,
        "--calldata",
        &calldata,
    ];
    let out = zkpipe(t, &args);
    assert!(out.status.success(), "{}", text(&out));
    tool(
        &f.snarkjs.with_file_name("solcjs"),
        &["--bin", "--optimize", "-o", "out", "V.sol"],
        t,
    );
    let creation =
        unhex(&std::fs::read_to_string(t.join("out/V_sol_Groth16Verifier.bin")).unwrap());
    let words: Vec<Vec<u8>> = std::fs::read_to_string(&calldata)
        .unwrap()
        .split('"')
        .filter(|w| w.starts_with("0x"))
        .map(unhex)
        .collect();
    let sig = format!(
        "verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[{}])",
        words.len() - 8
    );
    let selector = revm::primitives::keccak256(sig.as_bytes())[..4].to_vec();
    let results = in_evm(creation, &[[selector, words.concat()].concat()]);
    assert!(results[0].0, "the contract refused zkpipe's proof");

    // Refusals.
    let mut bytes = std::fs::read(&wtns).unwrap();
    bytes[76 + 32 * 2] ^= 1; // the third value's low byte
    let bad = path("bad.wtns");
    std::fs::write(&bad, &bytes).unwrap();
    let (p3, s3) = (path("p3.json"), path("s3.json"));
    let out = zkpipe(t, &["groth16", "prove", &zkey, &bad, &p3, &s3]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("does not verify"), "{}", text(&out));
    // With the r1cs: the key checked against it, and a witness that does
    // not satisfy it named by its constraint, before any proving.
    let with_r1cs = |r1cs: &str, w: &str| {
        let args = ["groth16", "prove", &zkey, w, &p3, &s3, "--r1cs", r1cs];
        zkpipe(t, &args)
    };
    let out = with_r1cs(&bn("r1cs"), &wtns);
    assert!(out.status.success(), "{}", text(&out));
    assert!(snarkjs_accepts(f, &vk, Path::new(&s3), Path::new(&p3)));
    std::fs::remove_file(&p3).unwrap();
    std::fs::remove_file(&s3).unwrap();
    let out = with_r1cs(&bn("r1cs"), &bad);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("constraint 0 fails"), "{}", text(&out));
    let other = f.file("bn254/poseidon_merkle.r1cs");
    let out = with_r1cs(&other, &wtns);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("disagree"), "{}", text(&out));
    let out = with_r1cs(&f.file("hash_chain.r1cs"), &wtns);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is for BLS12-381, not BN254"),
        "{}",
        text(&out)
    );
    assert!(!Path::new(&p3).exists() && !Path::new(&s3).exists());
    let out = zkpipe(
        t,
        &[
            "groth16",
            "prove",
            &zkey,
            &f.file("hash_chain.wtns"),
            &p3,
            &s3,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is for BLS12-381, not BN254"),
        "{}",
        text(&out)
    );
    // wgpu (where an adapter is: lavapipe in CI) proves it as the CPU does.
    let out = zkpipe(
        t,
        &[
            "groth16",
            "prove",
            &zkey,
            &wtns,
            &p3,
            &s3,
            "--backend",
            "wgpu",
        ],
    );
    if !text(&out).contains("no wgpu adapter") {
        assert!(out.status.success(), "{}", text(&out));
        assert!(snarkjs_accepts(f, &vk, Path::new(&s3), Path::new(&p3)));
        std::fs::remove_file(&p3).unwrap();
        std::fs::remove_file(&s3).unwrap();
    }
    // A backend without BN254's ops (the loader tests' fixture, which
    // serves nothing) says so and writes nothing.
    let fixture = support::binary::zkpipe_binary()
        .parent()
        .unwrap()
        .join("deps/libzkpipe_fixture_panicky.so");
    assert!(
        fixture.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`",
        fixture.display()
    );
    let plugins = t.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&fixture, plugins.join("libzkpipe_backend_panicky.so")).unwrap();
    let out = zkpipe(
        t,
        &[
            "groth16",
            "prove",
            &zkey,
            &wtns,
            &p3,
            &s3,
            "--backend",
            "panicky",
            "--plugin-dir",
            plugins.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("backend `panicky`: unsupported: it does not serve BN254"),
        "{}",
        text(&out)
    );
    assert!(
        !Path::new(&p3).exists() && !Path::new(&s3).exists(),
        "a refusal wrote a file"
    );
}

/// Every BN254 circuit, circomlib's Poseidon tree among them, both ways:
/// zkpipe's witness is snarkjs's, zkpipe's proof passes snarkjs's verifier
/// and snarkjs's proof passes zkpipe's.
#[test]
fn bn254_circuits_from_circomlib_prove_and_verify_both_ways() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for c in BN254_CIRCUITS {
        let bn = |e: &str| f.file(&format!("bn254/{c}.{e}"));
        let (w, p, s) = (t.join("w.wtns"), t.join("p.json"), t.join("s.json"));
        let input = sources().join(format!("{c}.input.json"));
        let wasm = f.file(&format!("bn254/{c}_js/{c}.wasm"));
        let flags = ["--wasm", &wasm, "--input", input.to_str().unwrap(), "--out"];
        let out = zkpipe(
            t,
            &[&["witness"][..], &flags, &[w.to_str().unwrap()]].concat(),
        );
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert!(
            std::fs::read(&w).unwrap() == std::fs::read(bn("wtns")).unwrap(),
            "{c}: witness"
        );
        let (ps, ss) = (p.to_str().unwrap(), s.to_str().unwrap());
        let out = zkpipe(t, &["groth16", "prove", &bn("zkey"), &bn("wtns"), ps, ss]);
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert_eq!(json(&s), json(Path::new(&bn("sj.public.json"))), "{c}");
        assert!(snarkjs_accepts(f, &bn("vk.json"), &s, &p), "{c}");
        let sj = [bn("sj.public.json"), bn("sj.proof.json")];
        let out = zkpipe(t, &["groth16", "verify", &bn("vk.json"), &sj[0], &sj[1]]);
        assert_eq!(out.status.code(), Some(0), "{c}: {}", text(&out));
    }
}

/// `zkpipe setup --r1cs --zkey` on BN254 circuits: snarkjs reads the
/// zkey's verifying key as zkpipe does, proves with it, and both provers'
/// proofs verify under it with snarkjs and zkpipe. `--out` (zkpipe's
/// BLS12-381 key folder) is refused for a BN254 circuit.
#[test]
fn bn254_keys_from_zkpipe_setup_prove_with_snarkjs_and_zkpipe() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let path = |n: &str| t.join(n).to_str().unwrap().to_string();
    for c in BN254_CIRCUITS {
        let bn = |e: &str| f.file(&format!("bn254/{c}.{e}"));
        let (zkey, vk) = (path(&format!("{c}.zkey")), path(&format!("{c}.vk.json")));
        let out = zkpipe(
            t,
            &[
                "setup",
                "--r1cs",
                &bn("r1cs"),
                "--zkey",
                &zkey,
                "--seed",
                "5",
            ],
        );
        assert!(out.status.success(), "{c}: {}", text(&out));
        tool(
            &f.snarkjs,
            &["zkey", "export", "verificationkey", &zkey, &vk],
            t,
        );
        let out = zkpipe(t, &["export-vk", "--zkey", &zkey]);
        assert!(out.status.success(), "{c}: {}", text(&out));
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut theirs = json(Path::new(&vk));
        theirs.as_object_mut().unwrap().remove("vk_alphabeta_12");
        assert_eq!(ours, theirs, "{c}");

        let (sp, ss) = (path("sj.proof.json"), path("sj.public.json"));
        tool(
            &f.snarkjs,
            &["groth16", "prove", &zkey, &bn("wtns"), &sp, &ss],
            t,
        );
        assert!(
            snarkjs_accepts(f, &vk, Path::new(&ss), Path::new(&sp)),
            "{c}"
        );
        let out = zkpipe(t, &["groth16", "verify", &vk, &ss, &sp]);
        assert_eq!(out.status.code(), Some(0), "{c}: {}", text(&out));

        let (zp, zs) = (path("zk.proof.json"), path("zk.public.json"));
        let out = zkpipe(t, &["groth16", "prove", &zkey, &bn("wtns"), &zp, &zs]);
        assert!(out.status.success(), "{c}: {}", text(&out));
        assert!(
            snarkjs_accepts(f, &vk, Path::new(&zs), Path::new(&zp)),
            "{c}"
        );
        // snarkjs's key for the circuit (other toxic waste) does not.
        assert!(
            !snarkjs_accepts(f, &bn("vk.json"), Path::new(&zs), Path::new(&zp)),
            "{c}"
        );
        // A proof that names no curve (as rapidsnark writes them) is read
        // as the key's.
        let mut bare = json(Path::new(&zp));
        bare.as_object_mut().unwrap().remove("curve");
        let bare_path = path("bare.proof.json");
        std::fs::write(&bare_path, bare.to_string()).unwrap();
        let out = zkpipe(t, &["groth16", "verify", &vk, &zs, &bare_path]);
        assert_eq!(out.status.code(), Some(0), "{c}: {}", text(&out));
    }
    let dir = path("keys");
    let out = zkpipe(
        t,
        &[
            "setup",
            "--r1cs",
            &f.file("bn254/hash_chain.r1cs"),
            "--out",
            &dir,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("BN254 circuit"), "{}", text(&out));
    assert!(!Path::new(&dir).exists());
}

/// On a CPU without ADX and BMI2 (which this build's BN254 arithmetic
/// uses), every BN254 door refuses with exit 2 and writes nothing, the CPU
/// backend does not list BN254's ops, and BLS12-381 still proves.
#[test]
fn bn254_is_refused_cleanly_on_a_cpu_without_adx() {
    let Some(f) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let no_adx = |args: &[&str]| {
        support::zkpipe_command()
            .args(args)
            .current_dir(t)
            .env(zkpipe_core::bn254::cpu::ASSUME_MISSING_ENV, "1")
            .output()
            .unwrap()
    };
    let bn = |e: &str| f.file(&format!("bn254/hash_chain.{e}"));
    let (zkey, wtns, vk) = (bn("zkey"), bn("wtns"), bn("vk.json"));
    let (proof, public) = (bn("sj.proof.json"), bn("sj.public.json"));
    let wasm = f.file("bn254/hash_chain_js/hash_chain.wasm");
    let input = sources().join("hash_chain.input.json");
    let input = input.to_str().unwrap();
    for args in [
        &["groth16", "prove", &zkey, &wtns, "p.json", "s.json"][..],
        &["prove", "--zkey", &zkey, "--wasm", &wasm, "--input", input],
        &["groth16", "verify", &vk, &public, &proof],
        &["export-vk", "--zkey", &zkey, "--out", "vk.json"],
        &[
            "export-verifier",
            "--solidity",
            "--vk",
            &vk,
            "--out",
            "V.sol",
        ],
        &[
            "witness", "--wasm", &wasm, "--input", input, "--out", "w.wtns",
        ],
        &["setup", "--r1cs", &bn("r1cs"), "--zkey", "k.zkey"],
        &["bench", "msm", "--curve", "bn254", "--log-size", "10"],
        &["bench", "batch", "--zkey", &zkey, "--wtns", &wtns],
    ] {
        let out = no_adx(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("ADX and BMI2"),
            "{args:?}: {}",
            text(&out)
        );
    }
    let left: Vec<_> = std::fs::read_dir(t).unwrap().collect();
    assert!(left.is_empty(), "files written: {left:?}");
    let out = no_adx(&["backends"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("BN254 ops"), "{}", text(&out));
    // BLS12-381 is untouched.
    let (p, s) = (t.join("p.json"), t.join("s.json"));
    let (p, s) = (p.to_str().unwrap(), s.to_str().unwrap());
    let bls = |e: &str| f.file(&format!("hash_chain.{e}"));
    let out = no_adx(&["groth16", "prove", &bls("zkey"), &bls("wtns"), p, s]);
    assert!(out.status.success(), "{}", text(&out));
}
