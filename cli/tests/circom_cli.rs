//! `zkpipe setup --r1cs | prove --r1cs | verify (JSON) | export-vk` on
//! hand-made circom files (no node tools needed), and every refusal.

use std::path::Path;
use std::process::Output;

mod support;

/// BLS12-381's r, little-endian.
const BLS_R: &str = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
/// BN254's r, little-endian (circom's default prime).
const BN254_R: &str = "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001";

fn le(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
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

/// `x·x = y`, then `y·1 = y + 0·x` padding rows up to `rows`: wires one, y
/// (public output), x (private input).
fn square_r1cs(prime: &str, rows: u32) -> Vec<u8> {
    let mut header = 32u32.to_le_bytes().to_vec();
    header.extend(le(prime));
    for v in [3u32, 1, 0, 1] {
        header.extend(v.to_le_bytes());
    }
    header.extend(3u64.to_le_bytes());
    header.extend(rows.to_le_bytes());
    let mut cons = Vec::new();
    let lc = |cons: &mut Vec<u8>, wire: u32| {
        cons.extend(1u32.to_le_bytes());
        cons.extend(wire.to_le_bytes());
        cons.extend(scalar(1));
    };
    lc(&mut cons, 2);
    lc(&mut cons, 2);
    lc(&mut cons, 1);
    for _ in 1..rows {
        lc(&mut cons, 1);
        lc(&mut cons, 0);
        lc(&mut cons, 1);
    }
    let labels: Vec<u8> = (0u64..3).flat_map(|l| l.to_le_bytes()).collect();
    container(b"r1cs", 1, &[(1, header), (2, cons), (3, labels)])
}

fn wtns_bytes(values: &[u64]) -> Vec<u8> {
    let mut header = 32u32.to_le_bytes().to_vec();
    header.extend(le(BLS_R));
    header.extend((values.len() as u32).to_le_bytes());
    let data = values.iter().flat_map(|&v| scalar(v)).collect();
    container(b"wtns", 2, &[(1, header), (2, data)])
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.0.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }
    fn path(&self, name: &str) -> String {
        self.0.path().join(name).to_str().unwrap().to_string()
    }
}

fn zkpipe(dir: &Dir, args: &[&str]) -> Output {
    support::zkpipe_command()
        .args(args)
        .current_dir(dir.0.path())
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fails(o: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
}

/// A folder with the square circuit, a witness, keys from `setup --r1cs`.
fn with_keys() -> Dir {
    let d = Dir(tempfile::tempdir().unwrap());
    let r1cs = d.file("sq.r1cs", &square_r1cs(BLS_R, 5));
    d.file("sq.wtns", &wtns_bytes(&[1, 9, 3]));
    ok(&zkpipe(
        &d,
        &[
            "setup",
            "--r1cs",
            &r1cs,
            "--out",
            &d.path("keys"),
            "--seed",
            "3",
        ],
    ));
    d
}

fn prove_args<'a>(d: &'a Dir, wtns: &'a str, extra: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "prove",
        "--r1cs",
        &d.path("sq.r1cs"),
        "--wtns",
        wtns,
        "--params",
        &d.path("keys"),
        "--proof",
        &d.path("proof.json"),
        "--public",
        &d.path("public.json"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(d: &Dir, args: &[String]) -> Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    zkpipe(d, &a)
}

#[test]
fn setup_prove_verify_export_round_trip() {
    let d = with_keys();
    let wtns = d.path("sq.wtns");
    ok(&run(&d, &prove_args(&d, &wtns, &[])));
    let public: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path("public.json")).unwrap()).unwrap();
    assert_eq!(public, serde_json::json!(["9"]));
    let proof: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path("proof.json")).unwrap()).unwrap();
    assert_eq!(proof["protocol"], "groth16");
    assert_eq!(proof["curve"], "bls12381");
    let verify = |public: &str| {
        zkpipe(
            &d,
            &[
                "verify",
                "--vk",
                &d.path("keys/vk.json"),
                "--proof",
                &d.path("proof.json"),
                "--public",
                public,
            ],
        )
    };
    assert_eq!(ok(&verify(&d.path("public.json"))).trim(), "valid");
    // Another public signal: invalid, exit 1.
    let other = d.file("other.json", b"[\"10\"]");
    let o = verify(&other);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "invalid");
    // export-vk of zkpipe's binary key is the JSON setup wrote.
    let out = ok(&zkpipe(&d, &["export-vk", "--vk", &d.path("keys/vk.bin")]));
    let a: serde_json::Value = serde_json::from_str(&out).unwrap();
    let b: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path("keys/vk.json")).unwrap()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a["nPublic"], 1);
}

#[test]
fn bad_circom_inputs_exit_2_with_the_reason() {
    let d = with_keys();
    let wtns = d.path("sq.wtns");
    // A BN254 constraint system: named.
    let bn = d.file("bn.r1cs", &square_r1cs(BN254_R, 5));
    let mut args = prove_args(&d, &wtns, &[]);
    args[2] = bn.clone();
    fails(&run(&d, &args), 2, "BN254 is not supported yet");
    fails(
        &zkpipe(&d, &["setup", "--r1cs", &bn, "--out", &d.path("k2")]),
        2,
        "BN254 is not supported yet",
    );
    // A truncated constraint system.
    let full = square_r1cs(BLS_R, 5);
    let cut = d.file("cut.r1cs", &full[..full.len() - 9]);
    args[2] = cut;
    fails(&run(&d, &args), 2, "truncated");
    // A witness of another circuit, and one that does not satisfy.
    let short = d.file("short.wtns", &wtns_bytes(&[1, 9]));
    fails(&run(&d, &prove_args(&d, &short, &[])), 2, "another circuit");
    let wrong = d.file("wrong.wtns", &wtns_bytes(&[1, 9, 4]));
    fails(
        &run(&d, &prove_args(&d, &wrong, &[])),
        2,
        "constraint 0 fails",
    );
    let no_one = d.file("no_one.wtns", &wtns_bytes(&[2, 9, 3]));
    fails(&run(&d, &prove_args(&d, &no_one, &[])), 2, "not 1");
    // Keys of another circuit (more constraints).
    let big = d.file("big.r1cs", &square_r1cs(BLS_R, 40));
    ok(&zkpipe(
        &d,
        &["setup", "--r1cs", &big, "--out", &d.path("bigkeys")],
    ));
    let mut args = prove_args(&d, &wtns, &[]);
    args[6] = d.path("bigkeys");
    fails(&run(&d, &args), 2, "do not fit this circuit");
    // Nothing was written by any refusal.
    assert!(!Path::new(&d.path("proof.json")).exists());
}

#[test]
fn usage_errors_exit_2() {
    let d = with_keys();
    let wtns = d.path("sq.wtns");
    // --wtns without --r1cs; --r1cs with a built-in circuit; --zkey with --params.
    fails(&zkpipe(&d, &["prove", "--wtns", &wtns]), 2, "--r1cs");
    fails(
        &run(&d, &prove_args(&d, &wtns, &["--circuit", "sha256"])),
        2,
        "cannot be used with",
    );
    fails(
        &run(&d, &prove_args(&d, &wtns, &["--zkey", &wtns])),
        2,
        "cannot be used with",
    );
    // --wasm without --input, or beside --wtns; --r1cs with no witness.
    fails(
        &run(&d, &prove_args(&d, &wtns, &["--wasm", &wtns])),
        2,
        "cannot be used with",
    );
    let no_witness: Vec<String> = prove_args(&d, &wtns, &[])
        .into_iter()
        .filter(|a| a != "--wtns" && !a.ends_with("sq.wtns"))
        .collect();
    fails(&run(&d, &no_witness), 2, "--r1cs needs a witness");
    let mut wasm_only = no_witness.clone();
    wasm_only.extend(["--wasm".to_string(), wtns.clone()]);
    fails(&run(&d, &wasm_only), 2, "--input");
    // `witness` with a file that is not WebAssembly.
    let input = d.file("input.json", b"{}");
    fails(
        &zkpipe(
            &d,
            &[
                "witness",
                "--wasm",
                &wtns,
                "--input",
                &input,
                "--out",
                &d.path("w.wtns"),
            ],
        ),
        2,
        "not a WebAssembly module",
    );
    // --r1cs with no keys.
    let args: Vec<String> = prove_args(&d, &wtns, &[])
        .into_iter()
        .filter(|a| !a.ends_with("keys") && a != "--params")
        .collect();
    fails(&run(&d, &args), 2, "--r1cs needs keys");
    // export-vk of nothing, or of a missing file.
    fails(&zkpipe(&d, &["export-vk"]), 2, "--vk");
    fails(
        &zkpipe(&d, &["export-vk", "--zkey", &d.path("none.zkey")]),
        2,
        "none.zkey",
    );
    // A zkey that is not one.
    fails(
        &zkpipe(&d, &["export-vk", "--zkey", &wtns]),
        2,
        "not a .zkey file",
    );
}

#[test]
fn bad_snarkjs_json_exits_2_naming_the_file() {
    let d = with_keys();
    ok(&run(&d, &prove_args(&d, &d.path("sq.wtns"), &[])));
    let vk = d.path("keys/vk.json");
    let verify = |vk: &str, proof: &str, public: &str| {
        zkpipe(
            &d,
            &["verify", "--vk", vk, "--proof", proof, "--public", public],
        )
    };
    let proof_text = std::fs::read_to_string(d.path("proof.json")).unwrap();
    let public = d.path("public.json");
    let not_json = d.file("x.json", b"{ nope");
    fails(&verify(&vk, &not_json, &public), 2, "x.json");
    let mut p: serde_json::Value = serde_json::from_str(&proof_text).unwrap();
    p["pi_a"][1] = serde_json::json!("5");
    let off = d.file("off.json", p.to_string().as_bytes());
    fails(&verify(&vk, &off, &public), 2, "not on the curve");
    let two = d.file("two.json", b"[\"9\", \"1\"]");
    fails(
        &verify(&vk, &d.path("proof.json"), &two),
        2,
        "takes 1 public",
    );
    let big = d.file(
        "big.json",
        b"[\"52435875175126190479447740508185965837690552500527637822603658699938581184513\"]",
    );
    fails(&verify(&vk, &d.path("proof.json"), &big), 2, "big.json");
    let mut p: serde_json::Value = serde_json::from_str(&proof_text).unwrap();
    p["curve"] = serde_json::json!("bn128");
    let bn = d.file("bn.json", p.to_string().as_bytes());
    fails(&verify(&vk, &bn, &public), 2, "BN254 is not supported yet");
}
