//! `zkpipe setup --r1cs | prove --r1cs | verify (JSON) | export-vk` on
//! hand-made circom files (no node tools needed), and every refusal.

use std::path::Path;
use std::process::Output;

mod support;

use support::circom_files::{BLS_R, BN254_R, empty_r1cs, square_r1cs, wtns_bytes, wtns_bytes_over};

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
        "is a BN254 circuit: its test keys are written as a snarkjs zkey",
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
    fails(&run(&d, &no_witness), 2, "a circom proof needs a witness");
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

/// `--proof` and `--public` on every path (`--out` and `--public-out`
/// their old spellings); circom's witness flags refused on a built-in.
#[test]
fn output_flags_are_one_vocabulary_and_none_is_ignored() {
    let d = with_keys();
    let wtns = d.path("sq.wtns");
    let cache = d.path("cache");
    for (proof, public) in [("--proof", "--public"), ("--out", "--public-out")] {
        let (p, s) = (d.path(&format!("b{proof}")), d.path(&format!("b{public}")));
        let args = ["prove", "--cache-dir", &cache, proof, &p, public, &s];
        ok(&zkpipe(&d, &args));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 192, "{proof}");
        assert!(
            std::fs::read_to_string(&s).unwrap().starts_with('['),
            "{public}"
        );
        let mut circom = prove_args(&d, &wtns, &[]);
        circom.truncate(circom.len() - 4);
        let (p, s) = (d.path(&format!("c{proof}")), d.path(&format!("c{public}")));
        circom.extend([proof, &p, public, &s].map(String::from));
        ok(&run(&d, &circom));
        assert!(
            std::fs::read_to_string(&p).unwrap().contains("pi_a"),
            "{proof}"
        );
        assert!(
            std::fs::read_to_string(&s).unwrap().contains('"'),
            "{public}"
        );
    }
    for flag in ["--wtns", "--wasm", "--input"] {
        let args = ["prove", "--cache-dir", &cache, flag, &wtns];
        let o = zkpipe(&d, &args);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(flag) || err.contains("--wasm"),
            "{flag}: {err}"
        );
    }
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
    fails(
        &verify(&vk, &bn, &public),
        2,
        "bn.json is for BN254, not BLS12-381",
    );
}

/// A WebAssembly module whose `getFieldNumLen32` loops forever.
fn endless_loop_wasm() -> Vec<u8> {
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    m.extend([1, 5, 1, 0x60, 0, 1, 0x7f]); // type: () -> i32
    m.extend([3, 2, 1, 0]); // one function of that type
    m.extend([7, 20, 1, 16]);
    m.extend(b"getFieldNumLen32");
    m.extend([0, 0]);
    m.extend([10, 11, 1, 9, 0, 3, 0x40, 0x0c, 0, 0x0b, 0x41, 0, 0x0b]); // loop br 0 end
    m
}

#[test]
fn a_looping_witness_generator_stops_at_its_fuel() {
    let d = Dir(tempfile::tempdir().unwrap());
    let wasm = d.file("loop.wasm", &endless_loop_wasm());
    let input = d.file("input.json", b"{}");
    let out = d.path("w.wtns");
    let o = zkpipe(
        &d,
        &[
            "witness",
            "--wasm",
            &wasm,
            "--input",
            &input,
            "--out",
            &out,
            "--wasm-fuel",
            "200000",
        ],
    );
    fails(&o, 2, "ran past its budget of 200000 instructions");
    assert!(!Path::new(&out).exists(), "no witness file on failure");
}

#[test]
fn setup_writes_a_zkey_that_proves_and_verifies() {
    let d = Dir(tempfile::tempdir().unwrap());
    let r1cs = d.file("sq.r1cs", &square_r1cs(BLS_R, 5));
    let wtns = d.file("sq.wtns", &wtns_bytes(&[1, 9, 3]));
    let zkey = d.path("sq.zkey");
    // --zkey with --out is refused; so is --zkey without --r1cs.
    fails(
        &zkpipe(
            &d,
            &["setup", "--r1cs", &r1cs, "--zkey", &zkey, "--out", "k"],
        ),
        2,
        "--out",
    );
    fails(&zkpipe(&d, &["setup", "--zkey", &zkey]), 2, "--r1cs");
    ok(&zkpipe(
        &d,
        &["setup", "--r1cs", &r1cs, "--zkey", &zkey, "--seed", "8"],
    ));
    let vk = d.path("vk.json");
    ok(&zkpipe(&d, &["export-vk", "--zkey", &zkey, "--out", &vk]));
    ok(&zkpipe(
        &d,
        &[
            "prove", "--r1cs", &r1cs, "--wtns", &wtns, "--zkey", &zkey, "--proof", "p.json",
            "--public", "s.json",
        ],
    ));
    let o = zkpipe(
        &d,
        &[
            "verify",
            "--vk",
            &vk,
            "--proof",
            &d.path("p.json"),
            "--public",
            &d.path("s.json"),
        ],
    );
    assert_eq!(ok(&o).trim(), "valid");
    // The zkey is for this circuit: another one's r1cs is named.
    let other = d.file("other.r1cs", &square_r1cs(BLS_R, 40));
    fails(
        &zkpipe(
            &d,
            &["prove", "--r1cs", &other, "--wtns", &wtns, "--zkey", &zkey],
        ),
        2,
        "disagree",
    );
}

/// `bench batch --zkey --wtns` proves a BN254 zkey's circuit through the
/// scheduler, verifies every proof and labels the curve in its summary and
/// waterfall; what it cannot prove is refused with exit 2 and no output.
#[test]
fn bench_batch_proves_a_bn254_zkey_and_refuses_what_it_cannot() {
    let d = Dir(tempfile::tempdir().unwrap());
    let r1cs = d.file("sq.r1cs", &square_r1cs(BN254_R, 5));
    let wtns = d.file("sq.wtns", &wtns_bytes_over(BN254_R, &[1, 9, 3]));
    let zkey = d.path("sq.zkey");
    ok(&zkpipe(
        &d,
        &["setup", "--r1cs", &r1cs, "--zkey", &zkey, "--seed", "3"],
    ));
    let batch = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "batch",
            "--backend",
            "cpu",
            "--count",
            "3",
            "--partitions",
            "2",
            "--concurrency",
            "2",
            "--out-dir",
            "wf",
        ];
        args.extend_from_slice(extra);
        zkpipe(&d, &args)
    };
    let out = ok(&batch(&["--zkey", &zkey, "--wtns", &wtns, "--verify"]));
    assert!(
        out.contains("completed 3, failed 0, verified 6 (BN254)"),
        "{out}"
    );
    let json = std::fs::read_to_string(d.path("wf/waterfall.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["curve"], "BN254");
    let svg = std::fs::read_to_string(d.path("wf/waterfall.svg")).unwrap();
    assert!(svg.contains("(BN254)"), "the waterfall names the curve");
    // A built-in circuit's batch names BLS12-381.
    let out = ok(&batch(&["--circuit", "squaring-chain", "--size", "64"]));
    assert!(out.contains("(BLS12-381)"), "{out}");
    std::fs::remove_dir_all(d.path("wf")).unwrap();

    let bls_r1cs = d.file("bls.r1cs", &square_r1cs(BLS_R, 5));
    let bls_zkey = d.path("bls.zkey");
    ok(&zkpipe(
        &d,
        &["setup", "--r1cs", &bls_r1cs, "--zkey", &bls_zkey],
    ));
    let short = d.file("short.wtns", &wtns_bytes_over(BN254_R, &[1, 9]));
    let wrong = d.file("wrong.wtns", &wtns_bytes_over(BN254_R, &[1, 9, 4]));
    let other_prime = d.file("bls.wtns", &wtns_bytes(&[1, 9, 3]));
    for (args, needle) in [
        (
            vec!["--zkey", &bls_zkey, "--wtns", &wtns],
            "a BLS12-381 zkey",
        ),
        (vec!["--zkey", &zkey, "--wtns", &short], "2 values"),
        (vec!["--zkey", &zkey, "--wtns", &wrong], "does not satisfy"),
        (vec!["--zkey", &zkey, "--wtns", &other_prime], "BLS12-381"),
        (vec!["--zkey", &zkey, "--wtns", "none.wtns"], "none.wtns"),
        (vec!["--zkey", &zkey], "--wtns"),
        (vec!["--wtns", &wtns], "--zkey"),
        (
            vec!["--zkey", &zkey, "--wtns", &wtns, "--synthetic"],
            "--synthetic",
        ),
        (
            vec!["--zkey", &zkey, "--wtns", &wtns, "--circuit", "sha256"],
            "--circuit",
        ),
        (
            vec!["--zkey", &zkey, "--wtns", &wtns, "--daemon", "unix:/x"],
            "--daemon",
        ),
    ] {
        fails(&batch(&args), 2, needle);
        assert!(!Path::new(&d.path("wf")).exists(), "{args:?}: no waterfall");
    }
}

/// `MemAvailable` in bytes.
fn available_memory() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn setup_of_more_constraints_than_memory_holds_is_refused_before_it_starts() {
    // Keys and proof take ~800 bytes a constraint: half again what this
    // machine has now (other work may free memory before the command looks),
    // in a file of 12 bytes a constraint.
    let rows = available_memory() / 800 * 3 / 2;
    if rows > 1 << 28 {
        eprintln!("skipped: a machine this large would need a file over 3 GB");
        return;
    }
    let dir = Dir(tempfile::tempdir().unwrap());
    let r1cs = dir.file("big.r1cs", &empty_r1cs(rows as u32));
    for args in [
        vec!["setup", "--r1cs", &r1cs, "--zkey", "big.zkey"],
        vec!["setup", "--r1cs", &r1cs, "--out", "keys"],
    ] {
        let o = zkpipe(&dir, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("needs about") && err.contains("available"),
            "{err}"
        );
    }
    assert!(!dir.0.path().join("big.zkey").exists());
}
