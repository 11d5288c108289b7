//! What a hostile or unlucky user meets: every refusal is clear, has its
//! exit code (1: a runtime failure such as a missing device; 2: a bad
//! request or input), and leaves nothing behind.

use std::path::Path;
use std::process::{Command, Output};

mod support;

/// Runs zkpipe in `dir` (its cache and current folder).
fn zkpipe(dir: &Path, args: &[&str]) -> Output {
    support::zkpipe_command()
        .args(args)
        .env("ZKPIPE_CACHE_DIR", dir.join("cache"))
        .current_dir(dir)
        .output()
        .unwrap()
}

fn refused(o: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

const SMALL: [&str; 4] = ["--circuit", "squaring-chain", "--size", "16"];

fn prove(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["prove"];
    args.extend(SMALL);
    args.extend(extra);
    zkpipe(dir, &args)
}

#[test]
fn prove_saves_its_proof_by_default_and_says_where() {
    let tmp = tempfile::tempdir().unwrap();
    let o = prove(tmp.path(), &[]);
    refused_not(&o);
    let proof = tmp.path().join("squaring-chain-16.proof");
    let public = tmp.path().join("squaring-chain-16.public.json");
    assert_eq!(std::fs::read(&proof).unwrap().len(), 192);
    assert!(std::fs::read_to_string(&public).unwrap().starts_with('['));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("squaring-chain-16.proof"), "{err}");
    // The saved proof verifies.
    let vk = tmp.path().join("cache/keys/squaring-chain-16/vk.bin");
    let v = zkpipe(
        tmp.path(),
        &[
            "verify",
            "--vk",
            s(&vk),
            "--proof",
            s(&proof),
            "--public",
            s(&public),
        ],
    );
    refused_not(&v);
}

fn refused_not(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_dash_writes_the_proof_to_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let o = prove(tmp.path(), &["--out", "-", "--public-out", "public.json"]);
    refused_not(&o);
    assert_eq!(o.stdout.len(), 192, "stdout carries the proof bytes only");
    assert!(tmp.path().join("public.json").is_file());
    let both = prove(tmp.path(), &["--out", "-", "--public-out", "-"]);
    refused(&both, 2, "both write to stdout");
}

#[cfg(unix)]
#[test]
fn outputs_never_replace_what_is_not_a_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let o = prove(tmp.path(), &["--out", s(&fifo)]);
    refused(&o, 2, "not a regular file");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let dir = tmp.path().join("adir");
    std::fs::create_dir(&dir).unwrap();
    refused(
        &prove(tmp.path(), &["--out", s(&dir)]),
        2,
        "not a regular file",
    );
    assert!(dir.is_dir());
}

#[test]
fn an_unwritable_output_is_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let o = prove(tmp.path(), &["--out", "missing/proof.bin"]);
    refused(&o, 2, "does not exist");
    assert!(
        !tmp.path().join("cache").exists(),
        "nothing was recorded or set up before the output was checked"
    );
}

#[test]
fn a_proof_that_fails_its_self_check_is_never_written() {
    use zkpipe_core::circuit::CircuitSource;
    use zkpipe_core::groth16::{self, KeyInfo};
    let tmp = tempfile::tempdir().unwrap();
    let c = zkpipe_circuits::BuiltinCircuit::new("squaring-chain", "16").unwrap();
    let r1cs = c.record().unwrap();
    // Proving points of one setup with the verifying key of another: the
    // shape fits, the proofs do not verify.
    let mut params = groth16::setup(&r1cs, 1);
    params.vk = groth16::setup(&r1cs, 2).vk;
    let keys = tmp.path().join("keys");
    groth16::write_keys(&keys, &params, &KeyInfo::of(&c, false)).unwrap();
    let o = prove(tmp.path(), &["--params", s(&keys), "--out", "p.bin"]);
    refused(&o, 1, "failed its self-check");
    assert!(!tmp.path().join("p.bin").exists());
    assert!(!tmp.path().join("squaring-chain-16.public.json").exists());
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn sizes_and_counts_past_what_the_machine_has_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Used to overflow (panic) computing the message length.
    refused(
        &zkpipe(d, &["prove", "--circuit", "sha256", "--size", "2^58"]),
        2,
        "over the",
    );
    refused(
        &zkpipe(
            d,
            &["prove", "--circuit", "squaring-chain", "--size", "2^31"],
        ),
        2,
        "needs about",
    );
    refused(
        &zkpipe(d, &["--threads", "1000000", "backends"]),
        2,
        "--threads",
    );
    refused(&prove(d, &["--partitions", "10000000"]), 2, "partitions");
    refused(
        &zkpipe(
            d,
            &["crosscheck", "--backend", "cpu", "--max-log-size", "40"],
        ),
        2,
        "max-log-size",
    );
    refused(
        &zkpipe(d, &["bench", "ntt", "--log-size", "32", "--runs", "1"]),
        2,
        "needs about",
    );
}

/// The CUDA plugin loads everywhere and reports why it has no device; with
/// `--backend cuda` a command fails with that reason instead of running on
/// the CPU under the GPU's name.
#[test]
fn a_gpu_backend_without_a_device_fails_with_the_real_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let listing = zkpipe(d, &["backends", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&listing.stdout).unwrap();
    let cuda = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "cuda");
    let Some(cuda) = cuda else {
        panic!("the cuda plugin did not load: {v}");
    };
    if cuda["devices"].as_array().is_some_and(|a| !a.is_empty()) {
        eprintln!("skipped: this machine has a CUDA device");
        return;
    }
    for args in [
        &["prove", "--backend", "cuda"][..],
        &["bench", "prove", "--backend", "cuda", "--runs", "1"],
        &["bench", "batch", "--backend", "cuda", "--count", "1"],
        &["crosscheck", "--backend", "cuda", "--max-log-size", "4"],
    ] {
        let mut a = args.to_vec();
        a.extend(SMALL);
        let o = zkpipe(d, &a);
        refused(&o, 1, "cannot run on device 0");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("valid"), "{args:?} ran anyway: {err}");
    }
}

/// Each command's help lists the flags it uses: the plugin flags appear
/// where a backend is loaded, not under `verify` or `setup`; they work
/// after the command name as well as before it.
#[test]
fn help_lists_only_the_flags_a_command_uses() {
    let tmp = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let o = zkpipe(tmp.path(), args);
        assert!(o.status.success(), "{args:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for cmd in ["verify", "setup"] {
        let text = help(&[cmd, "--help"]);
        for flag in ["--threads", "--backend-opt", "--plugin-dir"] {
            assert!(!text.contains(flag), "`{cmd} --help` lists {flag}:\n{text}");
        }
    }
    for cmd in [
        &["prove"][..],
        &["crosscheck"],
        &["backends"],
        &["bench", "batch"],
        &["bench", "msm"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        assert!(
            help(&args).contains("--threads"),
            "{cmd:?} --help lacks --threads"
        );
    }
    let listing = help(&["backends", "--threads", "3"]);
    assert!(listing.contains("3 threads"), "{listing}");
}

/// `bench compare` checks every policy and sweep value before the first
/// run: a typo in the last one costs nothing.
#[test]
fn compare_checks_every_setting_before_the_first_run() {
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "bench",
        "compare",
        "--circuit",
        "squaring-chain",
        "--size",
        "16",
        "--count",
        "1",
        "--partitions",
        "1",
    ];
    for (extra, needle) in [
        (
            &["--policy", "pipelined", "--policy", "fastest"][..],
            "unknown policy `fastest`",
        ),
        (
            &["--sweep", "gpu_workers_per_device=1,zero"],
            "gpu_workers_per_device",
        ),
        (&["--sweep", "gpu_workers_per_device="], "lists no values"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let o = zkpipe(tmp.path(), &args);
        refused(&o, 2, needle);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("[1/"),
            "a run started before the check: {err}"
        );
    }
}

#[test]
fn a_bad_cache_setting_is_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["lots", "-1", "1GB", "NaN"] {
        let mut cmd = support::zkpipe_command();
        let o = cmd
            .args(["prove"])
            .args(SMALL)
            .env("ZKPIPE_CACHE_DIR", tmp.path().join("cache"))
            .env("ZKPIPE_CACHE_KEEP_FREE_GB", bad)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        refused(&o, 2, "ZKPIPE_CACHE_KEEP_FREE_GB");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
