//! The `zkpipe` binary end to end: doctor output, bench tables, exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

mod support;
use support::plugin_dir;

fn zkpipe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = support::zkpipe_command();
    cmd.args(args);
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

/// `backends --warm` runs a small NTT and MSMs on every device and says
/// how long each took; without it nothing runs.
#[test]
fn backends_warm_runs_each_device_once() {
    let env = [("ZKPIPE_PLUGIN_PATH", "")];
    let o = zkpipe(&["backends", "--warm", "--json"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cpu = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "cpu")
        .unwrap();
    assert_eq!(cpu["warm_ms"][0][0], 0, "{cpu}");
    let o = zkpipe(&["backends", "--json"], &env);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["backends"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["warm_ms"] == serde_json::json!([]))
    );
    let o = zkpipe(&["backends", "--warm"], &env);
    assert!(
        stdout(&o).contains("device 0: warm (first NTT and MSMs"),
        "{}",
        stdout(&o)
    );
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
        text.contains("BLS12-381 ops: msm_g1") && text.contains("BN254 ops: msm_g1"),
        "{text}"
    );
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
    let curves = &v["backends"][0]["curves"];
    assert_eq!(curves[0]["curve"], "BLS12-381");
    assert_eq!(curves[1]["curve"], "BN254");
    let bn254_ops: Vec<&str> = curves[1]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        bn254_ops,
        ["msm_g1", "msm_g2", "resident_bases", "ntt", "quotient"]
    );
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
fn bench_times_bn254_ops_and_refuses_what_bn254_lacks() {
    let bench = |args: &[&str]| {
        let mut all = vec!["bench"];
        all.extend(args);
        zkpipe(&all, &[])
    };
    let o = bench(&[
        "msm",
        "--curve",
        "bn254",
        "--log-size",
        "3..4",
        "--runs",
        "1",
        "--baseline",
        "halo2curves",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["op"], "bn254 msm_g1");
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    assert!(v["rows"][0]["baseline_median_ms"].as_f64().is_some());
    // Resident bases: the set of each size uploaded once, then timed.
    let o = bench(&[
        "msm",
        "--curve",
        "bn254",
        "--group",
        "g2",
        "--log-size",
        "3..4",
        "--runs",
        "1",
        "--resident",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["op"], "bn254 msm_g2 (resident bases)");
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    assert!(stderr(&o).contains("2^4 bases resident"), "{}", stderr(&o));
    let o = bench(&[
        "ntt",
        "--curve",
        "bn128",
        "--log-size",
        "4",
        "--runs",
        "1",
        "--coset",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("bn254 ntt forward coset"),
        "{}",
        stdout(&o)
    );
    for (args, why) in [
        (
            &[
                "msm",
                "--curve",
                "bn254",
                "--log-size",
                "3",
                "--baseline",
                "blst",
            ][..],
            "--baseline blst is not a BN254 library",
        ),
        (
            &[
                "msm",
                "--curve",
                "bn254",
                "--log-size",
                "3",
                "--split-devices",
                "0,0",
            ][..],
            "--split-devices is BLS12-381 only",
        ),
        (
            &["quotient", "--curve", "bn254", "--log-size", "3"][..],
            "BLS12-381 only for now, not BN254",
        ),
        (
            &["ntt", "--curve", "secp256k1", "--log-size", "3"][..],
            "unknown curve `secp256k1`",
        ),
    ] {
        let o = bench(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
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
            "--scalars",
            "bits",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("msm_g1 (resident bases) (bit scalars)"),
        "{}",
        stdout(&o)
    );
    let o = zkpipe(
        &["bench", "msm", "--log-size", "3", "--scalars", "ones"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// One MSM cut over the CPU backend's logical devices, host and resident
/// bases; a device named twice is bad input (exit 2), one the backend lacks
/// a runtime error (exit 1).
#[test]
fn bench_msm_splits_over_devices() {
    let split = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "msm",
            "--backend-opt",
            "devices=2",
            "--log-size",
            "4..5",
            "--runs",
            "1",
        ];
        args.extend_from_slice(extra);
        zkpipe(&args, &[])
    };
    for resident in [&[][..], &["--resident"]] {
        let o = split(&[&["--split-devices", "1,0"], resident].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("split over devices [1, 0]"),
            "{}",
            stdout(&o)
        );
    }
    let o = split(&["--split-devices", "0,0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("named twice"), "{}", stderr(&o));
    let o = split(&["--split-devices", "0,3", "--resident"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no device 3"), "{}", stderr(&o));
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
fn bench_ntt_and_quotient_take_values_in_lent_memory() {
    for op in ["ntt", "quotient"] {
        let o = zkpipe(
            &["bench", op, "--log-size", "4..5", "--runs", "1", "--lent"],
            &[],
        );
        assert!(o.status.success(), "{op}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("values in lent host memory"),
            "{op}: {}",
            stdout(&o)
        );
    }
    // A backend that lends none is refused up front (wgpu, where built).
    let o = zkpipe(
        &[
            "bench",
            "ntt",
            "--backend",
            "wgpu",
            "--log-size",
            "4",
            "--lent",
        ],
        &[],
    );
    let err = stderr(&o);
    if err.contains("unknown backend `wgpu`") {
        assert_eq!(o.status.code(), Some(1), "{err}");
    } else {
        assert!(err.contains("lends no host memory"), "{err}");
        assert_eq!(o.status.code(), Some(2), "{err}"); // invalid input
    }
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

/// A folder with a valid `vk.bin`, `proof.bin` and `public.json` for the
/// 16-squaring chain, made by `zkpipe setup` and `zkpipe prove`.
fn verify_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let circuit = [
        "--circuit",
        "squaring-chain",
        "--size",
        "16",
        "--cache-dir",
        &path("cache"),
    ];
    let o = zkpipe(
        &[&["setup"][..], &circuit, &["--out", &path("keys")]].concat(),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let prove = [
        "prove",
        "--params",
        &path("keys"),
        "--seed",
        "7",
        "--out",
        &path("proof.bin"),
        "--public-out",
        &path("public.json"),
    ];
    let o = zkpipe(&[&prove[..], &circuit].concat(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::copy(dir.path().join("keys/vk.bin"), dir.path().join("vk.bin")).unwrap();
    dir
}

/// `zkpipe verify` on `vk`, `proof` and `public`, each a path or a file name in `dir`.
fn verify_in(dir: &std::path::Path, vk: &str, proof: &str, public: &str) -> Output {
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    zkpipe(
        &[
            "verify",
            "--vk",
            &p(vk),
            "--proof",
            &p(proof),
            "--public",
            &p(public),
        ],
        &[],
    )
}

/// Asserts exit code 2 and an error on stderr containing each of `needles`.
fn assert_bad_input(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "no `{needle}` in: {err}");
    }
    assert_eq!(stdout(o), "", "nothing on stdout for bad input");
}

#[test]
fn verify_exits_0_valid_1_invalid_2_bad_input() {
    let fixture = verify_fixture();
    let dir = fixture.path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();

    let o = verify_in(dir, "vk.bin", "proof.bin", "public.json");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "valid\n");

    // Another public input: a well-formed proof that does not verify.
    let public: Vec<String> =
        serde_json::from_slice(&std::fs::read(dir.join("public.json")).unwrap()).unwrap();
    let mut other = public.clone();
    other[0] = if other[0] == "5" { "6" } else { "5" }.into();
    write("other.json", &serde_json::to_vec(&other).unwrap());
    let o = verify_in(dir, "vk.bin", "proof.bin", "other.json");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "invalid\n");

    // Missing files.
    assert_bad_input(
        &verify_in(dir, "nonesuch.bin", "proof.bin", "public.json"),
        &["nonesuch.bin"],
    );
    assert_bad_input(
        &verify_in(dir, "vk.bin", "nonesuch.bin", "public.json"),
        &["nonesuch.bin"],
    );
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "nonesuch.json"),
        &["nonesuch.json"],
    );
    // Wrong counts: public inputs per set, sets per proof.
    let mut longer = public.clone();
    longer.push("1".into());
    write("longer.json", &serde_json::to_vec(&longer).unwrap());
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "longer.json"),
        &[
            "longer.json",
            "set 0: the key ",
            &format!(
                "takes {} public inputs, {} were given",
                public.len(),
                public.len() + 1
            ),
        ],
    );
    write(
        "two.json",
        &serde_json::to_vec(&[&public, &public]).unwrap(),
    );
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "two.json"),
        &["two.json", "2 sets of public inputs for 1 proofs"],
    );
    // Malformed public inputs.
    write("junk.json", b"{\"a\": ");
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "junk.json"),
        &["junk.json"],
    );
    write("minus.json", br#"["-1"]"#);
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "minus.json"),
        &["minus.json", "not a decimal field element"],
    );
    // Malformed proofs: a length that is not a multiple of 192, a
    // non-canonical A (x = p), a C off the curve.
    let proof = std::fs::read(dir.join("proof.bin")).unwrap();
    write("short.bin", &proof[..191]);
    assert_bad_input(
        &verify_in(dir, "vk.bin", "short.bin", "public.json"),
        &["short.bin", "multiple of 192"],
    );
    let p_be = hex_bytes(
        "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab",
    );
    let mut non_canonical = proof.clone();
    non_canonical[..48].copy_from_slice(&p_be);
    non_canonical[0] |= 0x80;
    write("non-canonical.bin", &non_canonical);
    assert_bad_input(
        &verify_in(dir, "vk.bin", "non-canonical.bin", "public.json"),
        &["non-canonical.bin", "proof 0: A: "],
    );
    let mut off_curve = proof.clone();
    off_curve[144..192].fill(0);
    off_curve[144] = 0x80;
    off_curve[191] = 1; // x = 1: 1 + 4 = 5 is not a square mod p
    write("off-curve.bin", &off_curve);
    assert_bad_input(
        &verify_in(dir, "vk.bin", "off-curve.bin", "public.json"),
        &["off-curve.bin", "proof 0: C: ", "not on the curve"],
    );
    // A folder instead of a file.
    assert_bad_input(&verify_in(dir, "vk.bin", "keys", "public.json"), &["keys"]);
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Offsets in a verifying key file (α₁, β₁, β₂, γ₂, δ₁, δ₂, IC count): γ₂, δ₁, δ₂ and the count.
const VK_GAMMA_G2: usize = 2 * 96 + 192;
const VK_DELTA_G1: usize = VK_GAMMA_G2 + 192;
const VK_DELTA_G2: usize = VK_DELTA_G1 + 96;
const VK_IC_COUNT: usize = VK_DELTA_G2 + 192;

#[test]
fn verify_refuses_degenerate_keys() {
    let fixture = verify_fixture();
    let dir = fixture.path();
    let vk = std::fs::read(dir.join("vk.bin")).unwrap();

    // No IC points, with no public inputs (this panicked: index out of
    // bounds) or with the proof's.
    let mut no_ic = vk[..VK_IC_COUNT + 4].to_vec();
    no_ic[VK_IC_COUNT..].fill(0);
    std::fs::write(dir.join("no-ic.bin"), &no_ic).unwrap();
    std::fs::write(dir.join("none.json"), b"[]").unwrap();
    for public in ["none.json", "public.json"] {
        assert_bad_input(
            &verify_in(dir, "no-ic.bin", "proof.bin", public),
            &["no-ic.bin", "vk.ic has no points"],
        );
    }

    // γ or δ at infinity (uncompressed: the infinity flag, then zeros).
    for (field, at, len) in [
        ("vk.gamma_g2", VK_GAMMA_G2, 192),
        ("vk.delta_g1", VK_DELTA_G1, 96),
        ("vk.delta_g2", VK_DELTA_G2, 192),
    ] {
        let mut spoilt = vk.clone();
        spoilt[at..at + len].fill(0);
        spoilt[at] = 0x40;
        std::fs::write(dir.join("spoilt.bin"), &spoilt).unwrap();
        assert_bad_input(
            &verify_in(dir, "spoilt.bin", "proof.bin", "public.json"),
            &[field, "point at infinity"],
        );
    }
}

#[test]
fn verify_bounds_its_inputs_before_reading_them() {
    let fixture = verify_fixture();
    let dir = fixture.path();
    let vk = std::fs::read(dir.join("vk.bin")).unwrap();
    let sparse = |name: &str, head: &[u8], len: u64| {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        std::io::Write::write_all(&mut &file, head).unwrap();
        file.set_len(len).unwrap();
    };

    // A key whose IC count makes it larger than 1 GiB.
    let mut huge_count = vk[..VK_IC_COUNT + 4].to_vec();
    huge_count[VK_IC_COUNT..].copy_from_slice(&u32::MAX.to_be_bytes());
    std::fs::write(dir.join("huge-count.bin"), &huge_count).unwrap();
    assert_bad_input(
        &verify_in(dir, "huge-count.bin", "proof.bin", "public.json"),
        &["huge-count.bin", "4294967295 points", "over the limit"],
    );
    // A valid key with 2 GiB after it.
    sparse("long-vk.bin", &vk, 2 << 30);
    assert_bad_input(
        &verify_in(dir, "long-vk.bin", "proof.bin", "public.json"),
        &["long-vk.bin", "the file is 2147483648 bytes, its header"],
    );
    // A proof file of 2^20 + 1 proofs; public inputs over 64 MiB.
    sparse("many.bin", &[], 192 * ((1 << 20) + 1));
    assert_bad_input(
        &verify_in(dir, "vk.bin", "many.bin", "public.json"),
        &["many.bin", "larger than the limit"],
    );
    sparse("big.json", b"[", (64 << 20) + 1);
    assert_bad_input(
        &verify_in(dir, "vk.bin", "proof.bin", "big.json"),
        &["big.json", "larger than the limit"],
    );
}

/// A stream with no length (`/dev/zero`) as the proof or the public inputs:
/// refused before it is read. The child's address space is capped at 4 GiB
/// so that a reader without a limit fails here instead of filling the machine.
#[test]
fn verify_refuses_endless_streams_before_reading() {
    use std::os::unix::process::CommandExt;
    let fixture = verify_fixture();
    let dir = fixture.path();
    let zero = PathBuf::from("/dev/zero");
    for (proof, public) in [
        (zero.clone(), dir.join("public.json")),
        (dir.join("proof.bin"), zero.clone()),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkpipe"));
        cmd.arg("verify")
            .arg("--vk")
            .arg(dir.join("vk.bin"))
            .arg("--proof")
            .arg(proof)
            .arg("--public")
            .arg(public);
        // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 4 << 30,
                    rlim_max: 4 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let o = cmd.output().unwrap();
        assert_bad_input(&o, &["/dev/zero", "not a regular file"]);
    }
}

/// `--version` names the release, the commit built and the plugin ABIs, so
/// a report or a plugin mismatch can be traced.
#[test]
fn version_names_the_commit_and_the_plugin_abis() {
    let o = zkpipe(&["--version"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = stdout(&o);
    assert!(
        v.starts_with(&format!("zkpipe {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let abi = format!("backend plugin ABI {}", zkpipe_core::plugin::ABI_VERSION);
    assert!(v.contains("(commit ") && v.contains(&abi), "{v}");
    assert!(v.contains("policy plugin ABI"), "{v}");
}
