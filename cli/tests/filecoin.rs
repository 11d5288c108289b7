//! `zkpipe filecoin …` as a miner runs it: a 2 KiB sector sealed by
//! filecoin-proofs (PC1, PC2, C1 here), C2, PoSts and a SnapDeals update by
//! the CLI, each proof
//! checked by filecoin-proofs' verifiers; bad inputs exit 2 with the reason
//! and leave no output file.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::seal::verify_seal;
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use support::filecoin_fixtures::{fixtures, fixtures_env};
use support::zkpipe_command;
use zkpipe_filecoin::testing::{
    SEAL_PROOF, Sealed, UPDATE_PROOF, WINDOW_POST, WINNING_POST, post_vanilla, seal_2kib, snap_2kib,
};

fn zkpipe(params: &Path, args: &[&str]) -> Output {
    zkpipe_command()
        .env("FIL_PROOFS_PARAMETER_CACHE", params)
        .env("ZKPIPE_CACHE_DIR", fixtures().join("zkpipe-cache"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn refused(o: &Output, out: &Path, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(
        stderr(o).contains(says),
        "wanted `{says}` in: {}",
        stderr(o)
    );
    assert!(!out.exists(), "no output after a refusal");
}

/// The 2 KiB parameters of `proofs` in the shared fixtures folder, made by
/// `zkpipe filecoin params`.
fn params_2kib(proofs: &str) -> PathBuf {
    fixtures_env();
    let params = fixtures().join("params");
    let args = [
        "filecoin",
        "params",
        "--sector-size",
        "2KiB",
        "--proofs",
        proofs,
    ];
    let o = zkpipe(&params, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    params
}

fn sealed(dir: &Path) -> Sealed {
    let s = seal_2kib(dir, [5; 32], 21, 5).unwrap();
    std::fs::write(dir.join("c1.json"), &s.c1_json).unwrap();
    s
}

#[test]
fn seal_commit_from_c1_files_and_refusals() {
    let params = params_2kib("porep");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = sealed(d);
    let pid = hex(&s.prover_id);
    let out = d.join("proof.bin");
    let c1 = d.join("c1.json").display().to_string();
    let o_str = out.display().to_string();
    let o = zkpipe(
        &params,
        &[
            "filecoin",
            "seal-commit",
            "--c1",
            &c1,
            "--sector-id",
            "21",
            "--prover-id",
            &pid,
            "--out",
            &o_str,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let proof = std::fs::read(&out).unwrap();
    let c1v: filecoin_proofs_api::seal::SealCommitPhase1Output =
        serde_json::from_slice(&s.c1_json).unwrap();
    assert!(
        verify_seal(
            SEAL_PROOF,
            c1v.comm_r,
            c1v.comm_d,
            s.prover_id,
            SectorId::from(21),
            c1v.ticket,
            c1v.seed,
            &proof
        )
        .unwrap()
    );
    std::fs::remove_file(&out).unwrap();

    // lotus-bench's / Curio's envelope, base64 inside.
    use base64::Engine as _;
    let envelope = serde_json::json!({
        "SectorNum": 21,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&s.c1_json),
        "SectorSize": 2048,
    });
    let wrapped = d.join("c1-wrapped.json");
    std::fs::write(&wrapped, serde_json::to_vec(&envelope).unwrap()).unwrap();
    let w = wrapped.display().to_string();
    let o = zkpipe(
        &params,
        &[
            "filecoin",
            "seal-commit",
            "--c1",
            &w,
            "--sector-id",
            "21",
            "--prover-id",
            &pid,
            "--out",
            &o_str,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        verify_seal(
            SEAL_PROOF,
            c1v.comm_r,
            c1v.comm_d,
            s.prover_id,
            SectorId::from(21),
            c1v.ticket,
            c1v.seed,
            &std::fs::read(&out).unwrap()
        )
        .unwrap()
    );
    std::fs::remove_file(&out).unwrap();

    // Refusals: exit 2, the reason, no proof file.
    let trunc = d.join("trunc.json");
    std::fs::write(&trunc, &s.c1_json[..s.c1_json.len() / 3]).unwrap();
    let mut other: serde_json::Value = serde_json::from_slice(&s.c1_json).unwrap();
    other["registered_proof"] = "StackedDrg32GiBV1_1".into();
    let other_size = d.join("other-size.json");
    std::fs::write(&other_size, serde_json::to_vec(&other).unwrap()).unwrap();
    let empty_params = d.join("no-params");
    std::fs::create_dir(&empty_params).unwrap();
    let t = trunc.display().to_string();
    let os = other_size.display().to_string();
    let cases: Vec<(&Path, Vec<&str>, &str)> = vec![
        (
            &params,
            vec!["--c1", &t, "--sector-id", "21", "--prover-id", &pid],
            "C1 output",
        ),
        (
            &params,
            vec!["--c1", &os, "--sector-id", "21", "--prover-id", &pid],
            "not for StackedDrg32GiBV1_1",
        ),
        (
            &params,
            vec!["--c1", &c1, "--sector-id", "21", "--miner-id", "1000"],
            "does not verify",
        ),
        (
            &params,
            vec!["--c1", &c1, "--sector-id", "21", "--prover-id", "abc"],
            "64 hex digits",
        ),
        (
            &params,
            vec!["--c1", &w, "--sector-id", "7", "--prover-id", &pid],
            "envelope is for sector 21",
        ),
        (
            &params,
            vec![
                "--c1",
                "/nonexistent/c1.json",
                "--sector-id",
                "21",
                "--prover-id",
                &pid,
            ],
            "nonexistent",
        ),
        (
            &params,
            vec![
                "--c1",
                "/dev/zero",
                "--sector-id",
                "21",
                "--prover-id",
                &pid,
            ],
            "not a regular file",
        ),
        (
            &empty_params,
            vec!["--c1", &c1, "--sector-id", "21", "--prover-id", &pid],
            "zkpipe filecoin params --sector-size 2KiB",
        ),
    ];
    for (p, args, says) in cases {
        let mut all = vec!["filecoin", "seal-commit"];
        all.extend(args);
        all.extend(["--out", &o_str]);
        refused(&zkpipe(p, &all), &out, says);
    }
    // Production sizes are never generated here.
    let o = zkpipe(
        &empty_params,
        &["filecoin", "params", "--sector-size", "32GiB"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("fetch-params"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&empty_params).unwrap().count(), 0);
}

#[test]
fn window_and_winning_post_from_vanilla_files() {
    let params = params_2kib("window-post,winning-post");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = sealed(d);
    let pid = hex(&s.prover_id);
    let randomness = [9u8; 32];
    let out = d.join("post.bin");
    let o_str = out.display().to_string();
    let mut replicas = BTreeMap::new();
    for (registered, cmd) in [(WINDOW_POST, "window-post"), (WINNING_POST, "winning-post")] {
        replicas.insert(
            SectorId::from(21),
            PublicReplicaInfo::new(registered, s.comm_r),
        );
        let vanilla = post_vanilla(&s, registered, randomness).unwrap();
        // Raw bincode for one, Go's JSON [][]byte for the other.
        let file = d.join(format!("{cmd}.vanilla"));
        if cmd == "window-post" {
            std::fs::write(&file, &vanilla).unwrap();
        } else {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&vanilla);
            std::fs::write(&file, serde_json::to_vec(&[b64]).unwrap()).unwrap();
        }
        let f = file.display().to_string();
        let r = hex(&randomness);
        let o = zkpipe(
            &params,
            &[
                "filecoin",
                cmd,
                "--vanilla",
                &f,
                "--randomness",
                &r,
                "--prover-id",
                &pid,
                "--sector-size",
                "2KiB",
                "--out",
                &o_str,
            ],
        );
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        let proof = std::fs::read(&out).unwrap();
        let ok = if cmd == "window-post" {
            verify_window_post(
                &randomness,
                &[(registered, &proof[..])],
                &replicas,
                s.prover_id,
            )
        } else {
            verify_winning_post(&randomness, &proof, &replicas, s.prover_id)
        };
        assert!(ok.unwrap(), "{cmd}: filecoin-proofs rejects the proof");
        std::fs::remove_file(&out).unwrap();

        let other = hex(&[8u8; 32]);
        let garbage = d.join("garbage");
        std::fs::write(&garbage, b"\x01\x02\x03").unwrap();
        let g = garbage.display().to_string();
        for (args, says) in [
            (
                vec![
                    "--vanilla",
                    &f,
                    "--randomness",
                    &other,
                    "--prover-id",
                    &pid,
                    "--sector-size",
                    "2KiB",
                ],
                "other randomness",
            ),
            (
                vec![
                    "--vanilla",
                    &g,
                    "--randomness",
                    &r,
                    "--prover-id",
                    &pid,
                    "--sector-size",
                    "2KiB",
                ],
                "vanilla proof 0",
            ),
            (
                vec![
                    "--vanilla",
                    "/dev/zero",
                    "--randomness",
                    &r,
                    "--prover-id",
                    &pid,
                    "--sector-size",
                    "2KiB",
                ],
                "not a regular file",
            ),
            (
                vec![
                    "--vanilla",
                    &f,
                    "--randomness",
                    &r,
                    "--prover-id",
                    &pid,
                    "--sector-size",
                    "3KiB",
                ],
                "not one Filecoin registers",
            ),
        ] {
            let mut all = vec!["filecoin", cmd];
            all.extend(args);
            all.extend(["--out", &o_str]);
            refused(&zkpipe(&params, &all), &out, says);
        }
    }
}

/// A commitment's CID as Lotus prints it: multibase base32 (`b…`) of CIDv1,
/// codec fil-commitment-unsealed, hash sha2-256-trunc254-padded.
fn comm_d_cid_text(comm: [u8; 32]) -> String {
    let bytes = [&[1u8, 0x81, 0xe2, 0x03, 0x92, 0x20, 32][..], &comm].concat();
    let alphabet = b"abcdefghijklmnopqrstuvwxyz234567";
    let (mut out, mut acc, mut bits) = (String::from("b"), 0u32, 0u32);
    for b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(alphabet[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(alphabet[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

#[test]
fn snap_update_from_vanilla_files() {
    let params = params_2kib("snap-update");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let snapped = snap_2kib(d, &sealed(d), 9).unwrap();
    // Curio stores the vanilla proofs as JSON [][]byte.
    let file = d.join("snap.vanilla.json");
    use base64::Engine as _;
    let b64: Vec<String> = snapped
        .vanilla
        .iter()
        .map(|v| base64::engine::general_purpose::STANDARD.encode(v))
        .collect();
    std::fs::write(&file, serde_json::to_vec(&b64).unwrap()).unwrap();
    let f = file.display().to_string();
    let out = d.join("snap.bin");
    let o_str = out.display().to_string();
    let (r_old, r_new) = (hex(&snapped.comm_r_old), hex(&snapped.comm_r_new));
    let d_new = comm_d_cid_text(snapped.comm_d_new);
    let run_n = |r_new: &str, d_new: &str, vanilla: &str, runs: &str| {
        zkpipe(
            &params,
            &[
                "filecoin",
                "snap-update",
                "--vanilla",
                vanilla,
                "--comm-r-old",
                &r_old,
                "--comm-r-new",
                r_new,
                "--comm-d-new",
                d_new,
                "--sector-size",
                "2KiB",
                "--runs",
                runs,
                "--out",
                &o_str,
            ],
        )
    };
    let run = |r_new: &str, d_new: &str, vanilla: &str| run_n(r_new, d_new, vanilla, "1");
    // Two runs in one process: the second finds the key resident.
    let o = run_n(&r_new, &d_new, &f, "2");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(run 2 of 2)") && stderr(&o).contains("(key load 0.00ns)"),
        "{}",
        stderr(&o)
    );
    let proof = std::fs::read(&out).unwrap();
    assert!(
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            UPDATE_PROOF,
            &proof,
            snapped.comm_r_old,
            snapped.comm_r_new,
            snapped.comm_d_new,
        )
        .unwrap(),
        "filecoin-proofs rejects the sector update proof"
    );
    std::fs::remove_file(&out).unwrap();

    let garbage = d.join("garbage");
    std::fs::write(&garbage, b"\x01\x02\x03").unwrap();
    let g = garbage.display().to_string();
    let other = hex(&[8u8; 32]);
    for (o, says) in [
        (run(&other, &d_new, &f), "does not fit this request"),
        (run(&d_new, &d_new, &f), "--comm-r-new"),
        (run(&r_new, "bafy", &f), "--comm-d-new"),
        (run(&r_new, &d_new, &g), "vanilla proof 0"),
    ] {
        refused(&o, &out, says);
    }
}

#[test]
fn runs_out_of_range_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("proof.bin");
    let o_str = out.display().to_string();
    for runs in ["0", "101", "many"] {
        let o = zkpipe(
            &dir.path().join("params"),
            &[
                "filecoin",
                "seal-commit",
                "--c1",
                "c1.json",
                "--sector-id",
                "1",
                "--miner-id",
                "1000",
                "--runs",
                runs,
                "--out",
                &o_str,
            ],
        );
        refused(&o, &out, "--runs");
    }
}

/// Files under `dir`, recursively.
fn files_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_in(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `zkpipe filecoin in-shape …` run in the empty folder `cwd`.
fn in_shape(cwd: &Path, args: &[&str]) -> Output {
    zkpipe_command()
        .current_dir(cwd)
        .env("FIL_PROOFS_PARAMETER_CACHE", fixtures().join("params"))
        .env("ZKPIPE_CACHE_DIR", fixtures().join("zkpipe-cache"))
        .args(["filecoin", "in-shape"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn in_shape_prints_timings_and_writes_nothing() {
    fixtures_env();
    let cwd = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--sector-size", "2KiB", "--witness-only", "--proofs", "2"][..],
            "witness per partition: median",
        ),
        (
            &[
                "--sector-size",
                "2KiB",
                "--backend",
                "cpu",
                "--in-flight",
                "2",
            ][..],
            "per partition, median: witness",
        ),
    ] {
        let o = in_shape(cwd.path(), args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        for want in [
            says,
            "s/proof",
            "peak RSS",
            "timing only: no proof was made",
        ] {
            assert!(out.contains(want), "{args:?}: wanted `{want}` in: {out}");
        }
        assert!(stderr(&o).contains("host estimate"), "{}", stderr(&o));
        assert!(
            files_in(cwd.path()).is_empty(),
            "{args:?} wrote {:?}",
            files_in(cwd.path())
        );
    }
    // No flag names an output.
    let o = in_shape(cwd.path(), &["--sector-size", "2KiB", "--out", "proof.bin"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(files_in(cwd.path()).is_empty());
}

#[test]
fn in_shape_32gib_is_refused_with_the_estimates_where_memory_cannot_hold_it() {
    fixtures_env();
    let cwd = tempfile::tempdir().unwrap();
    let refused_for = |args: &[&str], says: &str| {
        let o = in_shape(cwd.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        for want in [says, "needs about", "GiB"] {
            assert!(e.contains(want), "{args:?}: wanted `{want}` in: {e}");
        }
        assert!(files_in(cwd.path()).is_empty());
    };
    // A budget given: 16 GiB holds neither a 32 GiB C2 nor three 32 GiB
    // partitions' witnesses at once.
    refused_for(
        &["--sector-size", "32GiB", "--memory-limit", "16GiB"],
        "recorded R1CS",
    );
    refused_for(
        &[
            "--sector-size",
            "32GiB",
            "--witness-only",
            "--in-flight",
            "3",
            "--memory-limit",
            "16GiB",
        ],
        "witness synthesis",
    );
    // This machine's own memory, where it is under what a 32 GiB C2 needs
    // by any count (the key alone is over 40 GiB).
    let available = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap()
        << 10;
    if available < 40 << 30 {
        refused_for(&["--sector-size", "32GiB"], "this machine has");
    } else {
        eprintln!(
            "skipped the refusal on this machine's memory: it has {available} bytes available"
        );
    }
}

#[test]
fn seal_commit_refuses_random_vanilla_proofs() {
    let params = params_2kib("porep");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = sealed(d);
    let random = d.join("random-c1.json");
    std::fs::write(
        &random,
        zkpipe_filecoin::testing::with_random_vanilla(&s.c1_json, 3).unwrap(),
    )
    .unwrap();
    let out = d.join("proof.bin");
    let o = zkpipe(
        &params,
        &[
            "filecoin",
            "seal-commit",
            "--c1",
            &random.display().to_string(),
            "--sector-id",
            "21",
            "--prover-id",
            &hex(&s.prover_id),
            "--out",
            &out.display().to_string(),
        ],
    );
    refused(&o, &out, "does not satisfy the circuit");
}
