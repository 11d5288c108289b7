//! The `zkpipe` binary end to end: doctor output, bench tables, exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Where `cargo test --workspace` put the CPU plugin (next to this test binary).
fn plugin_dir() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

fn zkpipe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkpipe"));
    cmd.arg("--plugin-dir")
        .arg(plugin_dir())
        .args(args)
        .env_remove("ZKPIPE_PLUGIN_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn backends_lists_cpu_and_reports_a_bogus_library() {
    let bogus = tempfile::tempdir().unwrap();
    std::fs::write(
        bogus.path().join("libzkpipe_backend_bogus.so"),
        b"not a library",
    )
    .unwrap();
    let env = [("ZKPIPE_PLUGIN_PATH", bogus.path().to_str().unwrap())];

    let o = zkpipe(&["backends"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("cpu 0.1.0"), "{text}");
    assert!(
        text.contains("failed to load") && text.contains("libzkpipe_backend_bogus.so"),
        "{text}"
    );

    let o = zkpipe(&["backends", "--json"], &env);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backends"][0]["name"], "cpu");
    assert_eq!(v["backends"][0]["devices"][0]["kind"], "cpu");
    assert!(v["backends"][0]["capabilities"].as_array().unwrap().len() >= 6);
    let failure = &v["failures"][0];
    assert!(
        failure["path"]
            .as_str()
            .unwrap()
            .ends_with("libzkpipe_backend_bogus.so")
    );
    assert!(!failure["reason"].as_str().unwrap().is_empty());
    let searched: Vec<&str> = v["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        searched[0],
        plugin_dir().to_str().unwrap(),
        "--plugin-dir comes first"
    );
    assert_eq!(
        searched[1],
        bogus.path().to_str().unwrap(),
        "then $ZKPIPE_PLUGIN_PATH"
    );
}

#[test]
fn bench_msm_prints_a_row_per_size_with_the_blst_baseline() {
    let o = zkpipe(
        &[
            "bench",
            "msm",
            "--group",
            "g2",
            "--log-size",
            "3..4",
            "--runs",
            "2",
            "--baseline",
            "blst",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["op"], "msm_g2");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["n"], 16);
    assert!(rows[0]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(rows[0]["baseline_median_ms"].as_f64().is_some());

    let o = zkpipe(
        &[
            "bench",
            "msm",
            "--log-size",
            "5",
            "--runs",
            "1",
            "--resident",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("msm_g1 (resident bases)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bench_ntt_prints_a_table() {
    let o = zkpipe(
        &[
            "--threads",
            "1",
            "bench",
            "ntt",
            "--log-size",
            "4..6",
            "--inverse",
            "--coset",
            "--order",
            "nr",
            "--runs",
            "2",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("machine:") && text.contains("ntt inverse coset NR"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with(['4', '5', '6']))
            .count(),
        3,
        "{text}"
    );
}

#[test]
fn runtime_errors_exit_1_with_a_clear_message() {
    let o = zkpipe(
        &["bench", "msm", "--backend", "nonesuch", "--log-size", "4"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("unknown backend `nonesuch`") && err.contains("searched"),
        "{err}"
    );

    let o = zkpipe(&["bench", "ntt", "--log-size", "4", "--device", "7"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot run on device 7"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["bench", "msm", "--log-size", "9..3"][..],
        &["bench", "ntt"],
        &["frobnicate"],
        &["--backend-opt", "novalue", "backends"],
    ] {
        let o = zkpipe(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}
