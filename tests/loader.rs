//! The plugin loader and the seam's error paths: libraries that are not
//! plugins, plugins of another ABI version, duplicates, truncated or foreign
//! ELF files, directories, dangling links and FIFOs named like plugins,
//! panics inside a plugin, bad configs and unknown names. Fixture libraries come from
//! `tests/plugins/*`, which `cargo test --workspace` builds next to this binary.

use std::path::{Path, PathBuf};
use zkpipe::Error;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::plugin::{BackendConfig, ErrorCode, KeyValue, MsmConfig, NttConfig};
use zkpipe::{Fr, G1Affine, G1Projective};

#[path = "support/common.rs"]
mod common;
use common::build_dir;

fn library(stem: &str) -> PathBuf {
    let p = build_dir().join(format!("lib{stem}.so"));
    assert!(
        p.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`",
        p.display()
    );
    p
}

/// Copies a library into `dir` under a backend file name.
fn install(src: &Path, dir: &Path, backend_file_stem: &str) -> PathBuf {
    let dst = dir.join(format!("libzkpipe_backend_{backend_file_stem}.so"));
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn failure_for<'a>(reg: &'a Registry, path: &Path) -> &'a str {
    &reg.failures
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no failure recorded for {}", path.display()))
        .reason
}

#[test]
fn bad_libraries_are_reported_and_skipped_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = install(&library("zkpipe_backend_cpu"), dir.path(), "cpu");
    let garbage = dir.path().join("libzkpipe_backend_garbage.so");
    std::fs::write(&garbage, b"this is not an ELF file").unwrap();
    let not_plugin = install(
        &library("zkpipe_fixture_not_a_plugin"),
        dir.path(),
        "not_a_plugin",
    );
    let old_abi = install(&library("zkpipe_fixture_old_abi"), dir.path(), "old_abi");
    let duplicate = install(&library("zkpipe_backend_cpu"), dir.path(), "zz_cpu_again");
    std::fs::write(
        dir.path().join("README.txt"),
        "ignored: not a backend file name",
    )
    .unwrap();

    let reg = Registry::load(&SearchPath::only([dir.path().to_path_buf()]));

    let names: Vec<&str> = reg.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["cpu"]);
    assert_eq!(reg.plugins[0].path, cpu);
    assert_eq!(reg.failures.len(), 4, "{:#?}", reg.failures);
    assert!(
        failure_for(&reg, &garbage).contains("not an ELF file"),
        "{}",
        failure_for(&reg, &garbage)
    );
    assert!(failure_for(&reg, &not_plugin).contains("not a zkpipe plugin"));
    let abi = failure_for(&reg, &old_abi);
    let (host, other) = (zkpipe::plugin::ABI_VERSION, zkpipe::plugin::ABI_VERSION + 1);
    assert!(
        abi.contains(&format!("ABI {other}")) && abi.contains(&format!("ABI {host}")),
        "{abi}"
    );
    assert!(failure_for(&reg, &duplicate).contains("duplicate backend name `cpu`"));
    // The good plugin still works after all that.
    let cpu = reg.create("cpu", &BackendConfig::default()).unwrap();
    assert_eq!(cpu.info().devices.len(), 1);
}

/// Loads `dir` on another thread so that a loader that blocks (on a FIFO, say)
/// fails the test instead of hanging it.
fn load_within_a_minute(dir: &Path) -> Registry {
    let search = SearchPath::only([dir.to_path_buf()]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Registry::load(&search));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("Registry::load did not return within 60 s (blocked on a FIFO?)")
}

/// Writes `bytes` into `dir` under a backend file name.
fn write_backend_file(dir: &Path, backend_file_stem: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(format!("libzkpipe_backend_{backend_file_stem}.so"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn assert_reason_mentions(reg: &Registry, path: &Path, needles: &[&str]) {
    let reason = failure_for(reg, path);
    for needle in needles {
        assert!(
            reason.contains(needle),
            "{}: reason {reason:?} does not mention {needle:?}",
            path.display()
        );
    }
}

/// A half-copied library used to reach `dlopen`, which maps its segments
/// past the end of the file: the first touch raised SIGBUS and killed the
/// process. Every such file must be a reported failure, and the valid copy
/// beside them must still load and work.
#[test]
fn truncated_and_non_regular_plugin_files_are_failures_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let cpu_bytes = std::fs::read(library("zkpipe_backend_cpu")).unwrap();
    let len = cpu_bytes.len();

    let cut_at_100 = write_backend_file(dir.path(), "cut_at_100", &cpu_bytes[..100]);
    // Debug info makes up most of the file: cut inside the mapped segments
    // too, where dlopen's relocations touch pages past the end of the file.
    let loaded_end = common::end_of_loaded_segments(&cpu_bytes);
    assert!(loaded_end < len as u64 / 2, "{loaded_end} of {len}");
    let cut_in_segments = loaded_end as usize / 2;
    let cut_in_segments_path =
        write_backend_file(dir.path(), "cut_in_segments", &cpu_bytes[..cut_in_segments]);
    let cut_at_half = write_backend_file(dir.path(), "cut_at_half", &cpu_bytes[..len / 2]);
    let cut_at_last_byte =
        write_backend_file(dir.path(), "cut_at_last_byte", &cpu_bytes[..len - 1]);
    let cut_in_header = write_backend_file(dir.path(), "cut_in_header", &cpu_bytes[..40]);
    let empty = write_backend_file(dir.path(), "empty", b"");

    let directory = dir.path().join("libzkpipe_backend_directory.so");
    std::fs::create_dir(&directory).unwrap();
    let dangling = dir.path().join("libzkpipe_backend_dangling.so");
    std::os::unix::fs::symlink(dir.path().join("no-such-library.so"), &dangling).unwrap();
    let fifo = dir.path().join("libzkpipe_backend_fifo.so");
    let mkfifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(mkfifo.success());

    let good = write_backend_file(dir.path(), "renamed_copy", &cpu_bytes);

    let reg = load_within_a_minute(dir.path());

    let names: Vec<&str> = reg.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["cpu"], "{:#?}", reg.failures);
    assert_eq!(reg.plugins[0].path, good);
    assert_eq!(reg.failures.len(), 9, "{:#?}", reg.failures);

    let size = |n: usize| format!("file is {n} bytes");
    assert_reason_mentions(
        &reg,
        &cut_at_100,
        &["truncated ELF", "program header table", &size(100)],
    );
    assert_reason_mentions(
        &reg,
        &cut_in_segments_path,
        &["truncated ELF", "segment", &size(cut_in_segments)],
    );
    assert_reason_mentions(
        &reg,
        &cut_at_half,
        &["truncated ELF", "section table", &size(len / 2)],
    );
    assert_reason_mentions(
        &reg,
        &cut_at_last_byte,
        &["truncated ELF", "section table", &size(len - 1)],
    );
    assert_reason_mentions(&reg, &cut_in_header, &["truncated ELF", "ELF header"]);
    assert_reason_mentions(&reg, &empty, &["empty file"]);
    assert_reason_mentions(&reg, &directory, &["a directory", "not a library file"]);
    assert_reason_mentions(
        &reg,
        &dangling,
        &["dangling symbolic link", "no-such-library.so"],
    );
    assert_reason_mentions(&reg, &fifo, &["named pipe (FIFO)", "not a library file"]);

    let cpu = reg.create("cpu", &BackendConfig::default()).unwrap();
    assert_eq!(cpu.info().devices.len(), 1);
    let one = cpu
        .msm_g1(
            &[G1Affine::generator()][..],
            &[Fr::one()],
            &MsmConfig::default(),
        )
        .unwrap();
    assert!(one.eq_point(&G1Projective::generator()));
}

/// Complete ELF files that this host cannot load: another class, byte
/// order, machine or file type, each made by patching one header field of
/// the real plugin, and a file past the size limit.
#[test]
fn elf_files_for_another_machine_or_of_another_type_are_refused_before_dlopen() {
    let dir = tempfile::tempdir().unwrap();
    let cpu_bytes = std::fs::read(library("zkpipe_backend_cpu")).unwrap();
    let patched = |stem: &str, at: usize, value: &[u8]| {
        let mut bytes = cpu_bytes.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        write_backend_file(dir.path(), stem, &bytes)
    };
    let class_32 = patched("class_32", 4, &[1]);
    let big_endian = patched("big_endian", 5, &[2]);
    let executable = patched("executable", 16, &2u16.to_le_bytes());
    // AArch64 (183), or x86-64 (62) where the host is AArch64.
    let foreign_machine: u16 = if cfg!(target_arch = "aarch64") {
        62
    } else {
        183
    };
    let foreign = patched("foreign_machine", 18, &foreign_machine.to_le_bytes());
    // Segment 0's p_filesz (at +32 in its program header) claims ten times
    // the file's size.
    let e_phoff = u64::from_le_bytes(cpu_bytes[32..40].try_into().unwrap()) as usize;
    let long_segment = patched(
        "long_segment",
        e_phoff + 32,
        &(10 * cpu_bytes.len() as u64).to_le_bytes(),
    );
    let mut not_elf = cpu_bytes.clone();
    not_elf[0] = b'X';
    let not_elf = write_backend_file(dir.path(), "not_elf", &not_elf);
    // A valid library followed by a sparse tail past the 2 GiB limit (no
    // disk space used).
    let oversized = write_backend_file(dir.path(), "oversized", &cpu_bytes);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&oversized)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();

    let reg = load_within_a_minute(dir.path());

    assert!(reg.plugins.is_empty(), "{:?}", reg.plugins);
    assert_eq!(reg.failures.len(), 7, "{:#?}", reg.failures);
    assert_reason_mentions(&reg, &class_32, &["ELF class 1", "64-bit"]);
    assert_reason_mentions(&reg, &big_endian, &["byte order", "big-endian"]);
    assert_reason_mentions(&reg, &executable, &["executable", "not a shared object"]);
    assert_reason_mentions(
        &reg,
        &foreign,
        &[&format!("ELF machine {foreign_machine}"), "this host is"],
    );
    assert_reason_mentions(
        &reg,
        &long_segment,
        &[
            "truncated ELF",
            "segment 0",
            &format!("file is {} bytes", cpu_bytes.len()),
        ],
    );
    assert_reason_mentions(&reg, &not_elf, &["not an ELF file"]);
    assert_reason_mentions(&reg, &oversized, &["larger than", "limit"]);
}

#[test]
fn a_panic_inside_a_plugin_is_an_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    install(&library("zkpipe_fixture_panicky"), dir.path(), "panicky");
    let reg = Registry::load(&SearchPath::only([dir.path().to_path_buf()]));
    let be = reg.create("panicky", &BackendConfig::default()).unwrap();

    let e = be
        .msm_g1(
            &[G1Affine::generator()][..],
            &[Fr::one()],
            &MsmConfig::default(),
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INTERNAL));
    assert!(e.to_string().contains("deliberate panic in msm_g1"), "{e}");

    let e = be
        .ntt(&mut [Fr::one(); 4], &NttConfig::default())
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INTERNAL), "{e}");

    // Ops the plugin did not implement answer Unsupported.
    let e = be.msm_g2(&[][..], &[], &MsmConfig::default()).unwrap_err();
    assert!(zkpipe::backend::is_unsupported(&e), "{e}");

    let cfg = BackendConfig {
        ext: vec![KeyValue {
            key: "panic_in_new".into(),
            value: "1".into(),
        }]
        .into(),
        ..Default::default()
    };
    let e = reg.create("panicky", &cfg).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INTERNAL));
    assert!(e.to_string().contains("deliberate panic in new"), "{e}");
}

#[test]
fn cpu_backend_rejects_bad_configs() {
    let reg = Registry::load(&SearchPath::only([build_dir()]));
    let cfg = BackendConfig {
        threads: Some(0).into(),
        ..Default::default()
    };
    let e = reg.create("cpu", &cfg).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_INPUT));
    assert!(e.to_string().contains("threads must be at least 1"), "{e}");

    let cfg = BackendConfig {
        ext: vec![KeyValue {
            key: "bogus".into(),
            value: "1".into(),
        }]
        .into(),
        ..Default::default()
    };
    assert_eq!(
        reg.create("cpu", &cfg).unwrap_err().code(),
        Some(ErrorCode::INVALID_INPUT)
    );

    let cpu = reg
        .create(
            "cpu",
            &BackendConfig {
                threads: Some(1).into(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(cpu.info().devices[0].compute_units, 1);
    let e = cpu
        .msm_g1(
            &[G1Affine::generator()][..],
            &[Fr::one()],
            &MsmConfig {
                device: 3,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_INPUT));
    let zero_coset = NttConfig {
        coset: Some(Fr::ZERO).into(),
        ..Default::default()
    };
    assert_eq!(
        cpu.ntt(&mut [Fr::one(); 2], &zero_coset)
            .unwrap_err()
            .code(),
        Some(ErrorCode::INVALID_INPUT)
    );
}

#[test]
fn an_unknown_backend_names_what_was_searched() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::load(&SearchPath::only([
        dir.path().to_path_buf(),
        PathBuf::from("/nonexistent/zkpipe"),
    ]));
    let e = reg.create("cuda", &BackendConfig::default()).unwrap_err();
    assert!(matches!(e, Error::UnknownBackend { .. }));
    let msg = e.to_string();
    assert!(msg.contains("unknown backend `cuda`"), "{msg}");
    assert!(
        msg.contains(&dir.path().display().to_string()) && msg.contains("/nonexistent/zkpipe"),
        "{msg}"
    );
}
