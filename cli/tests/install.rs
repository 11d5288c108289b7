//! `packaging/install.sh` and `packaging/release.sh`: the installed layout
//! works with no plugin path set (the binary finds its backends in
//! `../lib/zkpipe`), carries the config, unit, man pages and completions,
//! and the scripts refuse what they cannot use.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;

fn packaging(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("packaging")
        .join(script)
}

/// A folder holding this build's binary and CPU backend, as a cargo
/// target folder would: what `--from` takes.
fn built(dir: &Path) -> PathBuf {
    let from = dir.join("built");
    std::fs::create_dir_all(&from).unwrap();
    std::fs::copy(support::binary::zkpipe_binary(), from.join("zkpipe")).unwrap();
    let cpu = "libzkpipe_backend_cpu.so";
    std::fs::copy(support::plugin_dir().join(cpu), from.join(cpu)).unwrap();
    from
}

fn run(cmd: &mut Command) -> Output {
    cmd.env_remove("ZKPIPE_PLUGIN_PATH").output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `bin/zkpipe backends` under `prefix` with no plugin path: it must list
/// the CPU backend from `prefix/lib/zkpipe`.
fn assert_finds_its_backend(prefix: &Path) {
    let o = run(Command::new(prefix.join("bin/zkpipe")).arg("backends"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lib = prefix.join("lib/zkpipe/libzkpipe_backend_cpu.so");
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("cpu 0.1.0 — {}", lib.display())),
        "{out}"
    );
}

#[test]
fn install_lays_out_a_prefix_whose_binary_finds_its_backend_and_proves() {
    let dir = tempfile::tempdir().unwrap();
    let from = built(dir.path());
    let prefix = dir.path().join("prefix");
    let o = run(Command::new(packaging("install.sh"))
        .arg("--from")
        .arg(&from)
        .arg("--prefix")
        .arg(&prefix));
    assert!(o.status.success(), "{}", text(&o.stderr));
    for f in [
        "bin/zkpipe",
        "lib/zkpipe/libzkpipe_backend_cpu.so",
        "share/zkpipe/zkpipe.toml",
        "share/zkpipe/zkpipe.service",
        "share/zkpipe/grafana-dashboard.json",
        "share/man/man1/zkpipe.1",
        "share/man/man1/zkpipe-serve.1",
        "share/bash-completion/completions/zkpipe",
        "share/zsh/site-functions/_zkpipe",
        "share/fish/vendor_completions.d/zkpipe.fish",
    ] {
        let len = std::fs::metadata(prefix.join(f)).map(|m| m.len());
        assert!(matches!(len, Ok(n) if n > 0), "{f}: {len:?}");
    }
    assert_finds_its_backend(&prefix);
    let unit = std::fs::read_to_string(prefix.join("share/zkpipe/zkpipe.service")).unwrap();
    let exec = format!("ExecStart={}/bin/zkpipe serve ", prefix.display());
    assert!(unit.contains(&exec), "{unit}");
    assert!(unit.contains("Type=notify"), "{unit}");
    assert!(!unit.contains("@BINDIR@"), "{unit}");
    // The packaged config is the daemon's own: it parses.
    let o = run(Command::new(prefix.join("bin/zkpipe"))
        .args(["serve", "--print-config", "--config"])
        .arg(prefix.join("share/zkpipe/zkpipe.toml")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The README's main job, from the installed binary alone.
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = run(Command::new(prefix.join("bin/zkpipe"))
        .args(["prove", "--circuit", "squaring-chain", "--size", "64"])
        .env("ZKPIPE_CACHE_DIR", dir.path().join("cache"))
        .current_dir(&work));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(work.join("squaring-chain-64.proof").exists());
}

#[test]
fn install_refuses_unknown_arguments_and_a_folder_without_zkpipe() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    for args in [&["--bogus"][..], &["--prefix"], &["--from", ""]] {
        let o = run(Command::new(packaging("install.sh")).args(args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("Usage:"), "{args:?}");
    }
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(Command::new(packaging("install.sh"))
        .arg("--from")
        .arg(&empty)
        .arg("--prefix")
        .arg(&prefix));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no zkpipe binary"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !prefix.exists(),
        "nothing is installed from a folder without zkpipe"
    );
}

#[test]
fn release_archive_unpacks_to_a_layout_that_finds_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    let from = built(dir.path());
    let out = dir.path().join("dist");
    let o = run(Command::new(packaging("release.sh"))
        .arg(&out)
        .arg("--from")
        .arg(&from));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let archives: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let archive = archives
        .iter()
        .find(|n| n.ends_with("-linux.tar.gz"))
        .unwrap_or_else(|| panic!("no archive in {archives:?}"));
    assert!(
        archives.contains(&format!("{archive}.sha256")),
        "{archives:?}"
    );
    assert!(
        !archives.iter().any(|n| n.ends_with(".part")),
        "{archives:?}"
    );
    let check = run(Command::new("sha256sum")
        .args(["-c", &format!("{archive}.sha256")])
        .current_dir(&out));
    assert!(check.status.success(), "{}", text(&check.stdout));
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let tar = run(Command::new("tar")
        .arg("-xzf")
        .arg(out.join(archive))
        .arg("-C")
        .arg(&unpacked));
    assert!(tar.status.success(), "{}", text(&tar.stderr));
    let root = unpacked.join(archive.trim_end_matches(".tar.gz"));
    assert!(root.join("README.md").exists());
    assert_finds_its_backend(&root);
}

#[test]
fn release_refuses_unknown_arguments_and_leaves_no_archive_from_a_folder_without_zkpipe() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dist");
    for args in [&["--bogus"][..], &["--from"], &["--from", ""]] {
        let o = run(Command::new(packaging("release.sh")).arg(&out).args(args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("Usage:"), "{args:?}");
    }
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(Command::new(packaging("release.sh"))
        .arg(&out)
        .arg("--from")
        .arg(&empty));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no zkpipe binary"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !out.exists(),
        "nothing is written from a folder without zkpipe"
    );
}

#[test]
fn completions_and_man_refuse_an_unknown_shell_and_an_unwritable_folder() {
    let o = run(support::zkpipe_command().args(["completions", "tcsh"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("bash"), "{}", text(&o.stderr));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let o = run(support::zkpipe_command().arg("man").arg(file.join("man1")));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("a-file"), "{}", text(&o.stderr));
}
