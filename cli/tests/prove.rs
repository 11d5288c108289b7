//! `zkpipe setup | prove | verify | crosscheck` end to end, and their errors.

use std::path::Path;
use std::process::{Command, Output};

mod support;
use support::plugin_dir;

fn zkpipe(cache: &Path, args: &[&str]) -> Output {
    support::zkpipe_command()
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("ZKPIPE_CACHE_DIR")
        // These tests check what the cache holds: it may use the whole disk
        // (by default it leaves 1 GB free, and CI's disk can be that full).
        .env("ZKPIPE_CACHE_KEEP_FREE_GB", "0")
        // `prove` saves its proof in the current folder by default.
        .current_dir(cache)
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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn setup_prove_verify_round_trip_for_every_circuit() {
    let tmp = tempfile::tempdir().unwrap();
    for (circuit, size) in [
        ("squaring-chain", "300"),
        ("poseidon-merkle", "2x2"),
        ("sha256", "1"),
    ] {
        let keys = tmp.path().join(circuit);
        ok(&zkpipe(
            tmp.path(),
            &[
                "setup",
                "--circuit",
                circuit,
                "--size",
                size,
                "--out",
                s(&keys),
                "--seed",
                "5",
            ],
        ));
        for f in ["params.bin", "vk.bin", "circuit.json"] {
            assert!(keys.join(f).is_file(), "{circuit}: {f}");
        }
        let proof = tmp.path().join(format!("{circuit}.proof"));
        let public = tmp.path().join(format!("{circuit}.json"));
        ok(&zkpipe(
            tmp.path(),
            &[
                "prove",
                "--circuit",
                circuit,
                "--size",
                size,
                "--params",
                s(&keys),
                "--partitions",
                "2",
                "--seed",
                "9",
                "--out",
                s(&proof),
                "--public-out",
                s(&public),
            ],
        ));
        assert_eq!(std::fs::metadata(&proof).unwrap().len(), 2 * 192);
        let vk = keys.join("vk.bin");
        assert_eq!(
            ok(&zkpipe(
                tmp.path(),
                &[
                    "verify",
                    "--vk",
                    s(&vk),
                    "--proof",
                    s(&proof),
                    "--public",
                    s(&public)
                ]
            ))
            .trim(),
            "valid"
        );

        // With --seed the proof is reproducible byte for byte.
        let again = tmp.path().join("again.proof");
        ok(&zkpipe(
            tmp.path(),
            &[
                "prove",
                "--circuit",
                circuit,
                "--size",
                size,
                "--params",
                s(&keys),
                "--partitions",
                "2",
                "--seed",
                "9",
                "--out",
                s(&again),
            ],
        ));
        assert_eq!(
            std::fs::read(&proof).unwrap(),
            std::fs::read(&again).unwrap(),
            "{circuit}"
        );
    }
}

#[test]
fn the_default_job_sets_up_proves_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&zkpipe(
        tmp.path(),
        &["prove", "--circuit", "poseidon-merkle", "--size", "1x3"],
    ));
    assert!(out.contains("valid"), "{out}");
    assert!(
        tmp.path()
            .join("zkpipe/keys/poseidon-merkle-1x3/params.bin")
            .is_file()
    );
    assert!(
        tmp.path()
            .join("zkpipe/r1cs/poseidon-merkle-1x3.r1cs")
            .is_file()
    );
    // The second run reuses the cached R1CS and keys.
    assert!(
        ok(&zkpipe(
            tmp.path(),
            &["prove", "--circuit", "poseidon-merkle", "--size", "1x3"]
        ))
        .contains("valid")
    );
}

#[test]
fn a_disk_without_room_keeps_the_r1cs_in_memory_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    // No disk has 10^9 GB free: the recorded R1CS is not cached.
    let o = support::zkpipe_command()
        .args(["prove", "--circuit", "squaring-chain", "--size", "30"])
        .env("XDG_CACHE_HOME", tmp.path())
        .env_remove("ZKPIPE_CACHE_DIR")
        .env("ZKPIPE_CACHE_KEEP_FREE_GB", "1e9")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(ok(&o).contains("valid"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not caching the recorded R1CS")
            && err.contains("1000000000.0 GB is kept free"),
        "{err}"
    );
    assert!(
        !tmp.path()
            .join("zkpipe/r1cs/squaring-chain-30.r1cs")
            .exists()
    );
}

#[test]
fn verify_rejects_tampering_and_bad_files() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    ok(&zkpipe(
        tmp.path(),
        &[
            "setup",
            "--circuit",
            "squaring-chain",
            "--size",
            "50",
            "--out",
            s(&keys),
        ],
    ));
    let (proof, public) = (tmp.path().join("p"), tmp.path().join("p.json"));
    ok(&zkpipe(
        tmp.path(),
        &[
            "prove",
            "--circuit",
            "squaring-chain",
            "--size",
            "50",
            "--params",
            s(&keys),
            "--out",
            s(&proof),
            "--public-out",
            s(&public),
        ],
    ));
    let vk = keys.join("vk.bin");
    let verify = |p: &Path, j: &Path| {
        zkpipe(
            tmp.path(),
            &["verify", "--vk", s(&vk), "--proof", s(p), "--public", s(j)],
        )
    };

    // A different public input: invalid, exit 1.
    let wrong = tmp.path().join("wrong.json");
    std::fs::write(&wrong, "[\"12345\"]").unwrap();
    let o = verify(&proof, &wrong);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "invalid");

    // A tampered proof: swap A and C.
    let bytes = std::fs::read(&proof).unwrap();
    let mut t = bytes.clone();
    t[..48].copy_from_slice(&bytes[144..]);
    t[144..].copy_from_slice(&bytes[..48]);
    let tampered = tmp.path().join("t");
    std::fs::write(&tampered, &t).unwrap();
    assert_eq!(verify(&tampered, &public).status.code(), Some(1));

    // Wrong length, wrong input count, garbage JSON, a truncated key: bad
    // input, exit 2 with the reason.
    std::fs::write(&tampered, &bytes[..191]).unwrap();
    fails(&verify(&tampered, &public), 2, "multiple of 192");
    std::fs::write(&wrong, "[\"1\", \"2\"]").unwrap();
    fails(
        &verify(&proof, &wrong),
        2,
        "takes 1 public inputs, 2 were given",
    );
    std::fs::write(&wrong, "{oops").unwrap();
    fails(&verify(&proof, &wrong), 2, "wrong.json");
    let bad_vk = tmp.path().join("bad_vk");
    std::fs::write(&bad_vk, &std::fs::read(&vk).unwrap()[..300]).unwrap();
    fails(
        &zkpipe(
            tmp.path(),
            &[
                "verify",
                "--vk",
                s(&bad_vk),
                "--proof",
                s(&proof),
                "--public",
                s(&public),
            ],
        ),
        2,
        "truncated",
    );
}

#[test]
fn prove_rejects_bad_keys_and_stale_caches_without_writing_output() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    ok(&zkpipe(
        tmp.path(),
        &[
            "setup",
            "--circuit",
            "squaring-chain",
            "--size",
            "40",
            "--out",
            s(&keys),
        ],
    ));
    let out = tmp.path().join("proof.bin");
    let prove = |size: &str, dir: &Path| {
        zkpipe(
            tmp.path(),
            &[
                "prove",
                "--circuit",
                "squaring-chain",
                "--size",
                size,
                "--params",
                s(dir),
                "--out",
                s(&out),
            ],
        )
    };

    // Keys of another circuit size.
    fails(&prove("41", &keys), 2, "holds keys for squaring-chain 40");
    // Same keys without the circuit.json label: the shape check catches it.
    std::fs::remove_file(keys.join("circuit.json")).unwrap();
    fails(&prove("41", &keys), 2, "do not fit this circuit");
    // Truncated and garbled parameters.
    let params = keys.join("params.bin");
    let good = std::fs::read(&params).unwrap();
    std::fs::write(&params, &good[..good.len() - 10]).unwrap();
    fails(&prove("40", &keys), 2, "truncated");
    let mut garbled = good.clone();
    garbled[1000] ^= 0xff;
    std::fs::write(&params, &garbled).unwrap();
    fails(&prove("40", &keys), 2, "params.bin");
    assert!(!out.exists(), "a failed prove left an output file");
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp"))
    );

    // A stale R1CS cache (recorded for another shape) is not used: it is
    // moved aside and recorded again, and the proof is made.
    std::fs::write(&params, &good).unwrap();
    let cache = tmp.path().join("zkpipe/r1cs/squaring-chain-40.r1cs");
    let mut stale = std::fs::read(&cache).unwrap();
    let at = stale.windows(2).position(|w| w == b"40").unwrap();
    stale[at] = b'9';
    std::fs::write(&cache, &stale).unwrap();
    let healed = prove("40", &keys);
    ok(&healed);
    let err = String::from_utf8_lossy(&healed.stderr);
    assert!(err.contains("cached R1CS cannot be used"), "{err}");
    assert!(out.is_file());
    std::fs::remove_file(&out).unwrap();

    // Unknown circuit and bad size are bad requests, refused with the reason.
    fails(
        &zkpipe(tmp.path(), &["prove", "--circuit", "nope"]),
        2,
        "unknown circuit `nope`",
    );
    fails(
        &zkpipe(
            tmp.path(),
            &["prove", "--circuit", "sha256", "--size", "zero"],
        ),
        2,
        "block count",
    );
}

#[test]
fn crosscheck_cpu_against_cpu_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&zkpipe(
        tmp.path(),
        &[
            "crosscheck",
            "--backend",
            "cpu",
            "--circuit",
            "squaring-chain",
            "--size",
            "100",
            "--max-log-size",
            "8",
        ],
    ));
    assert!(out.contains("ok        groth16 proof bytes"), "{out}");
    assert!(!out.contains("MISMATCH"));
    // The last line counts them.
    let oks = out.lines().filter(|l| l.starts_with("ok ")).count();
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("cpu against cpu: {oks} matched, "))
            && last.ends_with("0 mismatched, 0 failed"),
        "{out}"
    );
}

/// BN254's crosscheck: its MSMs, NTTs and a whole proof at fixed r, s match
/// cpu against cpu; a backend whose G1 MSMs come back wrong (the CPU
/// backend's injected fault) is caught on every G1 MSM and on the proof,
/// and the command fails.
#[test]
fn crosscheck_bn254_matches_and_catches_a_wrong_msm() {
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "crosscheck",
        "--backend",
        "cpu",
        "--curve",
        "bn254",
        "--max-log-size",
        "8",
    ];
    let out = ok(&zkpipe(tmp.path(), &base));
    for line in [
        "ok        bn254.msm_g1/257",
        "ok        bn254.msm_g2/5",
        "ok        bn254.ntt/inverse/NR/coset/2^8",
        "ok        bn254 groth16 proof bytes (squaring chain 1000)",
        "ok        bn254 groth16 proof bytes, resident queries (squaring chain 1000)",
    ] {
        assert!(out.contains(line), "{line} missing:\n{out}");
    }
    assert!(!out.contains("MISMATCH") && !out.contains("ERROR"), "{out}");

    let mut corrupt = base.to_vec();
    corrupt.extend(["--backend-opt", "fault=corrupt:1"]);
    let out = zkpipe(tmp.path(), &corrupt);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let mismatched = text
        .lines()
        .filter(|l| l.starts_with("MISMATCH  bn254.msm_g1/"))
        .count();
    assert_eq!(
        mismatched, 5,
        "every G1 size (1, 5, 255, 257, 256):\n{text}"
    );
    assert!(
        text.contains("ok        bn254.msm_g2/") && text.contains("ok        bn254.ntt/"),
        "{text}"
    );
    assert!(
        text.contains("ERROR     bn254 groth16 proof bytes") && text.contains("does not verify"),
        "{text}"
    );
    assert!(
        text.contains("ERROR     bn254 groth16 proof bytes, resident queries"),
        "the resident bases' proof is checked too:\n{text}"
    );
}

/// `--backend-opt` settings go to the backend under test only: the CPU
/// reference knows none and used to refuse them before checking anything.
/// With a wgpu adapter (lavapipe in CI) the run must pass (at these sizes
/// nothing exceeds the 1 MiB cap: the test is about where settings go).
#[test]
fn crosscheck_gives_backend_settings_to_the_tested_backend_only() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "crosscheck",
        "--backend",
        "wgpu",
        "--backend-opt",
        "max_binding_mib=1",
        "--circuit",
        "squaring-chain",
        "--size",
        "100",
        "--max-log-size",
        "6",
    ];
    let out = zkpipe(tmp.path(), &args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("unknown cpu backend setting"), "{text}");
    if text.contains("unknown backend `wgpu`") {
        eprintln!("the wgpu plugin is not built here: skipped");
        return;
    }
    if text.contains("no wgpu adapter") {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_none(),
            "ZKPIPE_REQUIRE_ADAPTER is set but there is no wgpu adapter: {text}"
        );
        eprintln!("no wgpu adapter here: checked only that the reference took no settings");
        return;
    }
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ok        groth16 proof bytes"), "{text}");
}

#[test]
fn bench_batch_prints_proofs_summary_timeline_and_waterfall() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("wf");
    let out = ok(&zkpipe(
        tmp.path(),
        &[
            "bench",
            "batch",
            "--circuit",
            "squaring-chain",
            "--size",
            "64",
            "--count",
            "3",
            "--partitions",
            "2",
            "--concurrency",
            "2",
            "--policy",
            "throttle",
            "--set",
            "gpu_threads=1",
            "--verify",
            "--timeline",
            "--out-dir",
            s(&out_dir),
        ],
    ));
    for i in 1..=3 {
        assert!(out.contains(&format!("[{i}/3] COMPLETED — ")), "{out}");
    }
    assert!(out.contains("completed 3, failed 0, verified 6"), "{out}");
    assert!(
        out.contains("policy throttle (")
            && out.contains("throttle=true")
            && out.contains("gpu_threads=1"),
        "{out}"
    );
    assert!(
        out.lines().filter(|l| l.starts_with("TIMELINE,")).count() >= 2 * 6 * 7,
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("waterfall.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["completed"], 3);
    assert!(json["spans"].as_array().unwrap().len() >= 6 * 7);
    let svg = std::fs::read_to_string(out_dir.join("waterfall.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("msm_g2"));

    fails(
        &zkpipe(
            tmp.path(),
            &[
                "bench",
                "batch",
                "--circuit",
                "squaring-chain",
                "--size",
                "64",
                "--set",
                "b_g2=moon",
            ],
        ),
        2,
        "b_g2",
    );
    fails(
        &zkpipe(
            tmp.path(),
            &[
                "bench",
                "batch",
                "--circuit",
                "squaring-chain",
                "--size",
                "64",
                "--policy",
                "fastest",
            ],
        ),
        2,
        "unknown policy `fastest`",
    );
}

#[test]
fn bench_compare_runs_each_setting_and_a_policy_plugin_loads_by_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("cmp");
    let out = ok(&zkpipe(
        tmp.path(),
        &[
            "bench",
            "compare",
            "--circuit",
            "squaring-chain",
            "--size",
            "64",
            "--count",
            "2",
            "--partitions",
            "2",
            "--policy",
            "serial",
            "--policy",
            "split",
            "--sweep",
            "gpu_workers_per_device=1,2",
            "--out-dir",
            s(&out_dir),
        ],
    ));
    for row in [
        "serial gpu_workers_per_device=1",
        "serial gpu_workers_per_device=2",
        "split gpu_workers_per_device=1",
        "split gpu_workers_per_device=2",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(row)),
            "missing {row}: {out}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("compare.json")).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 4);
    assert!(
        std::fs::read_to_string(out_dir.join("compare.svg"))
            .unwrap()
            .starts_with("<svg")
    );

    let plugin = plugin_dir().join("libzkpipe_policy_round_robin.so");
    let out = ok(&zkpipe(
        tmp.path(),
        &[
            "bench",
            "batch",
            "--circuit",
            "squaring-chain",
            "--size",
            "64",
            "--count",
            "2",
            "--policy",
            s(&plugin),
            "--out-dir",
            s(&tmp.path().join("wf")),
        ],
    ));
    assert!(
        out.contains("policy round-robin (") && out.contains("completed 2, failed 0"),
        "{out}"
    );
    fails(
        &zkpipe(
            tmp.path(),
            &[
                "bench",
                "batch",
                "--circuit",
                "squaring-chain",
                "--size",
                "64",
                "--policy",
                "/nonexistent/libx.so",
            ],
        ),
        2,
        "policy plugin /nonexistent/libx.so",
    );
}

/// `zkpipe … | head` used to end in a panic (exit 101) when the reader went
/// away; now the process ends as a pipe writer should, without a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .arg("backends")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is written
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}

/// `bench prove` reports each stage and, on Linux, the memory resident
/// before the timed proofs and the peak during them (the peak restarted
/// at their start, so it is at least the resident size).
#[test]
fn bench_prove_reports_stages_and_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "prove",
        "--circuit",
        "squaring-chain",
        "--size",
        "300",
        "--runs",
        "1",
    ];
    let text = ok(&zkpipe(tmp.path(), &args));
    assert!(
        text.contains("  quotient ") && text.contains("  total "),
        "{text}"
    );
    let json = ok(&zkpipe(tmp.path(), &[&args[..], &["--json"]].concat()));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let stages: Vec<&str> = v["stages_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    assert!(
        stages.contains(&"msm") && stages.contains(&"spmv"),
        "{json}"
    );
    assert!(
        text.contains("recorded R1CS: witness-only + SpMV"),
        "{text}"
    );
    assert!(
        v["synthesis_with_constraints_ms"].as_f64().is_some(),
        "{json}"
    );
    let skipped = ok(&zkpipe(
        tmp.path(),
        &[&args[..], &["--no-synthesis-comparison", "--json"]].concat(),
    ));
    let w: serde_json::Value = serde_json::from_str(&skipped).unwrap();
    assert!(w["synthesis_with_constraints_ms"].is_null(), "{skipped}");
    assert!(w["total_ms"].as_f64().unwrap() > 0.0, "{skipped}");
    if cfg!(target_os = "linux") {
        assert!(
            text.contains("memory: ") && text.contains("for a proof in flight"),
            "{text}"
        );
        let before = v["resident_before_proofs_bytes"].as_u64().unwrap();
        let peak = v["peak_during_proofs_bytes"].as_u64().unwrap();
        assert!(v["peak_reset"].as_bool().unwrap(), "{json}");
        assert!(before > 0 && peak >= before, "{json}");
        let earlier = v["peak_before_proofs_bytes"].as_u64().unwrap();
        assert!(earlier >= before, "{json}");
        // The CPU backend lends the evaluation buffers; the prover keeps them.
        let lent = v["lent_buffers_bytes"].as_u64().unwrap();
        assert!(lent > 0 && lent <= before, "{json}");
        assert!(text.contains("lent evaluation buffers"), "{text}");
    }
}
