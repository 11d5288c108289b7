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
    use zkpipe_core::groth16::{self, KeyInfo};
    use zkpipe_core::r1cs::circuit::CircuitSource;
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

/// [`zkpipe`], killed (and the test failed) if it runs past `limit`: a
/// reader that blocks on a fifo must not hang the suite.
fn zkpipe_within(dir: &Path, args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = support::zkpipe_command()
        .args(args)
        .env("ZKPIPE_CACHE_DIR", dir.join("cache"))
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("{args:?} still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A file with `content`, for checks that run before any file is read.
fn file(dir: &Path, name: &str, content: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

#[test]
fn an_output_that_names_an_input_is_refused_and_the_input_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for name in ["c.r1cs", "w.wtns", "c.zkey", "c.wasm", "input.json"] {
        file(d, name, name.as_bytes());
    }
    let circom_prove = [
        "prove", "--r1cs", "c.r1cs", "--wtns", "w.wtns", "--zkey", "c.zkey",
    ];
    let with = |base: &[&'static str], extra: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (with(&circom_prove, &["--proof", "c.zkey"]), "c.zkey"),
        (with(&circom_prove, &["--public", "w.wtns"]), "w.wtns"),
        (
            with(&circom_prove, &["--proof", "./sub/../c.r1cs"]),
            "c.r1cs",
        ),
        (
            vec!["export-vk", "--zkey", "c.zkey", "--out", "c.zkey"],
            "c.zkey",
        ),
        (
            vec![
                "witness",
                "--wasm",
                "c.wasm",
                "--input",
                "input.json",
                "--out",
                "input.json",
            ],
            "input.json",
        ),
        (
            vec![
                "witness",
                "--wasm",
                "c.wasm",
                "--input",
                "input.json",
                "--out",
                "c.wasm",
            ],
            "c.wasm",
        ),
        (
            vec!["setup", "--r1cs", "c.r1cs", "--zkey", "c.r1cs"],
            "c.r1cs",
        ),
    ];
    std::fs::create_dir(d.join("sub")).unwrap();
    for (args, kept) in cases {
        let o = zkpipe(d, &args);
        refused(&o, 2, "refusing to overwrite an input");
        assert_eq!(
            std::fs::read(d.join(kept)).unwrap(),
            kept.as_bytes(),
            "{args:?} changed {kept}"
        );
    }
    // Keys named with --params are never changed.
    let o = zkpipe(
        d,
        &[
            "setup",
            "--circuit",
            "squaring-chain",
            "--size",
            "16",
            "--out",
            "k",
        ],
    );
    refused_not(&o);
    let params = std::fs::read(d.join("k/params.bin")).unwrap();
    let o = prove(d, &["--params", "k", "--out", "k/params.bin"]);
    refused(&o, 2, "inside the input --params");
    assert_eq!(std::fs::read(d.join("k/params.bin")).unwrap(), params);
    // Two outputs, one file: refused before the proof is made.
    let o = prove(
        d,
        &["--params", "k", "--out", "same", "--public-out", "./same"],
    );
    refused(&o, 2, "both name");
    assert!(!d.join("same").exists());
}

#[cfg(unix)]
#[test]
fn devices_pipes_and_folders_as_inputs_are_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for name in ["c.r1cs", "w.wtns", "c.zkey", "input.json"] {
        file(d, name, b"x");
    }
    let fifo = d.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let f = s(&fifo);
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "prove",
            "--r1cs",
            "/dev/zero",
            "--wtns",
            "w.wtns",
            "--zkey",
            "c.zkey",
        ],
        vec!["prove", "--r1cs", "c.r1cs", "--wtns", f, "--zkey", "c.zkey"],
        vec![
            "prove",
            "--r1cs",
            "c.r1cs",
            "--wtns",
            "w.wtns",
            "--zkey",
            "/dev/zero",
        ],
        vec![
            "witness",
            "--wasm",
            "/dev/zero",
            "--input",
            "input.json",
            "--out",
            "w2.wtns",
        ],
        vec![
            "witness",
            "--wasm",
            f,
            "--input",
            "input.json",
            "--out",
            "w2.wtns",
        ],
        vec![
            "verify",
            "--vk",
            "/dev/zero",
            "--proof",
            "c.zkey",
            "--public",
            "input.json",
        ],
        vec![
            "verify",
            "--vk",
            f,
            "--proof",
            "c.zkey",
            "--public",
            "input.json",
        ],
        vec!["export-vk", "--zkey", f],
        vec!["serve", "--config", "/dev/zero", "--print-config"],
        vec!["serve", "--config", f, "--print-config"],
        vec![
            "client",
            "--token-file",
            f,
            "--addr",
            "127.0.0.1:1",
            "status",
        ],
        vec![
            "client",
            "--addr",
            "127.0.0.1:1",
            "submit",
            "--zkey",
            "/dev/zero",
            "--wtns",
            "w.wtns",
        ],
    ];
    for args in cases {
        let o = zkpipe_within(d, &args, std::time::Duration::from_secs(60));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("not a regular file"),
            "{args:?}: expected `not a regular file` in: {err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn with_no_home_the_cache_is_the_user_s_own_temporary_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let o = support::zkpipe_command()
        .args(["prove", "--circuit", "squaring-chain", "--size", "16"])
        .env_remove("ZKPIPE_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .env("TMPDIR", tmp.path())
        .current_dir(tmp.path())
        .output()
        .unwrap();
    refused_not(&o);
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    assert!(tmp.path().join(format!("zkpipe-{uid}/keys")).is_dir());
    assert!(
        !tmp.path().join("zkpipe").exists(),
        "a folder shared by all users"
    );
}

#[test]
fn setup_into_a_folder_it_cannot_make_fails_before_the_setup() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    file(d, "plain", b"a file, not a folder");
    let t = std::time::Instant::now();
    // A setup of this size takes minutes; the refusal must come first.
    let o = zkpipe(
        d,
        &[
            "setup",
            "--circuit",
            "squaring-chain",
            "--size",
            "2^20",
            "--out",
            "plain/keys",
        ],
    );
    refused(&o, 2, "plain/keys");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
}

/// A disk that fills up in the middle of a cache write, stood in for by a
/// file-size limit (writes past it fail with EFBIG, the signal ignored):
/// the R1CS file at 256 KiB, the keys' `params.bin` at 1 MiB. The command
/// fails naming the file, and the cache keeps no staging folder, no partial
/// file and no empty entry; no proof is written.
#[test]
fn a_cache_write_cut_short_by_a_full_disk_leaves_nothing_half_made() {
    for (limit_kib, failing) in [(256, "squaring-chain-4096.r1cs"), (1024, "params.bin")] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let zk = support::zkpipe_command();
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("trap '' XFSZ; ulimit -f {limit_kib}; exec \"$@\""))
            .arg("bash")
            .arg(zk.get_program())
            .args(zk.get_args())
            .args(["prove", "--circuit", "squaring-chain", "--size", "4096"])
            .env_remove("ZKPIPE_PLUGIN_PATH")
            .env("ZKPIPE_CACHE_DIR", d.join("cache"))
            .current_dir(d)
            .output()
            .unwrap();
        refused(&o, 1, failing);
        refused(&o, 1, "File too large");
        let mut left = vec![];
        let mut stack = vec![d.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap())
                .collect();
            if entries.is_empty() && dir != d {
                left.push(format!("empty folder {}", dir.display()));
            }
            for e in entries {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().unwrap().is_dir() {
                    stack.push(path.clone());
                }
                if name.contains(".tmp-") || name.ends_with(".proof") || name.ends_with(".json") {
                    left.push(path.display().to_string());
                }
            }
        }
        assert!(left.is_empty(), "limit {limit_kib} KiB left: {left:?}");
    }
}

/// A daemon start with TLS files: what is wrong, the certificate, key and
/// client CA given, and what the refusal must name.
struct DaemonTls<'a> {
    what: &'a str,
    cert: &'a Path,
    key: &'a Path,
    client_ca: Option<&'a Path>,
    named: Vec<&'a str>,
}

/// A client run with TLS files: what is wrong, --tls-ca, --tls-cert and
/// --tls-key, and what the refusal must name.
struct ClientTls<'a> {
    what: &'a str,
    ca: &'a Path,
    identity: Option<(&'a Path, &'a Path)>,
    named: Vec<&'a str>,
}

/// Every TLS file of the daemon (`daemon.tls_cert`, `daemon.tls_key`,
/// `daemon.tls_client_ca`) and of the client (`--tls-ca`, `--tls-cert`,
/// `--tls-key`) given empty, cut short, of the wrong kind (a key for a
/// certificate or the reverse) or as garbage, and a certificate with
/// another's key, is refused at start: exit 2 naming the setting or flag
/// and the file, no panic, no hang, no socket left behind.
#[test]
fn malformed_tls_files_are_refused_at_start_naming_the_setting_and_the_file() {
    use std::time::Duration;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let [ca, cert, key, client_cert, client_key] = support::tls_files(dir);
    let token = file(dir, "token", b"tls-token\n");
    let cert_pem = std::fs::read(&cert).unwrap();
    let key_pem = std::fs::read(&key).unwrap();
    let empty = file(dir, "empty.pem", b"");
    let cut_cert = file(dir, "cut-cert.pem", &cert_pem[..cert_pem.len() / 2]);
    let cut_key = file(dir, "cut-key.pem", &key_pem[..key_pem.len() / 2]);
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(7919) >> 3) as u8)
        .collect();
    let garbage = file(dir, "garbage.pem", &garbage);
    let limit = Duration::from_secs(30);
    // (what is wrong, a bad certificate file, a bad key file)
    let bad = [
        ("empty", &empty, &empty),
        ("cut short", &cut_cert, &cut_key),
        ("garbage", &garbage, &garbage),
        ("wrong kind", &key, &cert),
    ];

    let mut daemon_cases = vec![];
    for (what, bad_cert, bad_key) in bad {
        daemon_cases.push(DaemonTls {
            what,
            cert: bad_cert,
            key: &key,
            client_ca: None,
            named: vec!["daemon.tls_cert", s(bad_cert)],
        });
        daemon_cases.push(DaemonTls {
            what,
            cert: &cert,
            key: bad_key,
            client_ca: None,
            named: vec!["daemon.tls_key", s(bad_key)],
        });
        daemon_cases.push(DaemonTls {
            what,
            cert: &cert,
            key: &key,
            client_ca: Some(bad_cert),
            named: vec!["daemon.tls_client_ca", s(bad_cert)],
        });
    }
    daemon_cases.push(DaemonTls {
        what: "mismatched",
        cert: &cert,
        key: &client_key,
        client_ca: None,
        named: vec![
            "daemon.tls_cert",
            "daemon.tls_key",
            s(&cert),
            s(&client_key),
        ],
    });
    for (i, case) in daemon_cases.iter().enumerate() {
        let socket = dir.join(format!("sock-{i}")).join("zkpipe.sock");
        let mut args = vec![
            "serve".to_string(),
            "--socket".into(),
            s(&socket).into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--token-file".into(),
            s(&token).into(),
            "--set".into(),
            format!("daemon.tls_cert={}", s(case.cert)),
            "--set".into(),
            format!("daemon.tls_key={}", s(case.key)),
        ];
        if let Some(ca) = case.client_ca {
            args.extend(["--set".into(), format!("daemon.tls_client_ca={}", s(ca))]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = zkpipe_within(dir, &args, limit);
        for needle in &case.named {
            refused(&o, 2, needle);
        }
        assert!(!socket.exists(), "{}: a socket was left behind", case.what);
        assert!(o.stdout.is_empty(), "{}: {:?}", case.what, o.stdout);
    }

    // The client checks its files before it connects (nothing listens on
    // port 1: files that passed would fail there, with exit 1).
    let mut client_cases = vec![];
    for (what, bad_cert, bad_key) in bad {
        client_cases.push(ClientTls {
            what,
            ca: bad_cert,
            identity: None,
            named: vec!["--tls-ca", s(bad_cert)],
        });
        client_cases.push(ClientTls {
            what,
            ca: &ca,
            identity: Some((bad_cert, &client_key)),
            named: vec!["--tls-cert", s(bad_cert)],
        });
        client_cases.push(ClientTls {
            what,
            ca: &ca,
            identity: Some((&client_cert, bad_key)),
            named: vec!["--tls-key", s(bad_key)],
        });
    }
    client_cases.push(ClientTls {
        what: "mismatched",
        ca: &ca,
        identity: Some((&client_cert, &key)),
        named: vec!["--tls-cert", "--tls-key", s(&client_cert), s(&key)],
    });
    for case in &client_cases {
        let mut args = vec![
            "client",
            "--addr",
            "https://127.0.0.1:1",
            "--token-file",
            s(&token),
            "--tls-ca",
            s(case.ca),
        ];
        if let Some((cert, key)) = case.identity {
            args.extend(["--tls-cert", s(cert), "--tls-key", s(key)]);
        }
        args.push("status");
        let o = zkpipe_within(dir, &args, limit);
        for needle in &case.named {
            refused(&o, 2, needle);
        }
        assert!(o.stdout.is_empty(), "{}: {:?}", case.what, o.stdout);
    }
}

/// A built-in circuit's proof goes to --out: circom's flags (--proof,
/// --public, --wtns, --zkey) are refused for it (exit 2), not silently
/// ignored, and nothing is written.
#[test]
fn circom_flags_are_refused_for_a_builtin_circuit() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, why) in [
        ("--wtns", "--wtns belongs to a circom proof"),
        ("--zkey", "cannot be used with"),
        ("--r1cs", "cannot be used with"),
    ] {
        let o = prove(tmp.path(), &[flag, "x.json"]);
        refused(&o, 2, why);
    }
    assert!(!tmp.path().join("x.json").exists());
    assert!(!tmp.path().join("squaring-chain-16.proof").exists());
}

/// A binary copied alone proves on its built-in CPU backend; `backends`
/// says so and where it looked for plugins, and a backend it lacks is
/// refused naming those folders.
#[test]
fn a_binary_alone_proves_on_its_built_in_cpu_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("bin");
    std::fs::create_dir(&alone).unwrap();
    let bin = alone.join("zkpipe");
    std::fs::copy(support::binary::zkpipe_binary(), &bin).unwrap();
    let run = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .env_remove("ZKPIPE_PLUGIN_PATH")
            .env("ZKPIPE_CACHE_DIR", tmp.path().join("cache"))
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let o = run(&["backends"]);
    refused_not(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("cpu 0.1.0 — built into {}", bin.display())),
        "{out}"
    );
    assert!(out.contains(&alone.display().to_string()), "{out}");
    refused_not(&run(&[
        "prove",
        "--circuit",
        "squaring-chain",
        "--size",
        "16",
    ]));
    assert_eq!(
        std::fs::read(tmp.path().join("squaring-chain-16.proof"))
            .unwrap()
            .len(),
        192
    );
    let o = run(&["prove", "--backend", "cuda"]);
    refused(&o, 1, "cuda");
    assert!(String::from_utf8_lossy(&o.stderr).contains(&alone.display().to_string()));
}

/// Help shows no empty defaults (`[default: ""]`) for the client's options.
#[test]
fn client_help_shows_no_empty_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["client", "--help"][..],
        &["client", "prove", "--help"],
        &["client", "preload", "--help"],
    ] {
        let o = zkpipe(tmp.path(), args);
        refused_not(&o);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(!help.contains("[default: \"\"]"), "{help}");
    }
}
