//! The plugin loader and the seam's error paths: libraries that are not
//! plugins, plugins of another ABI version, duplicates, panics inside a
//! plugin, bad configs and unknown names. Fixture libraries come from
//! `tests/plugins/*`, which `cargo test --workspace` builds next to this binary.

use std::path::{Path, PathBuf};
use zkpipe::Error;
use zkpipe::loader::{Registry, SearchPath};
use zkpipe::plugin::{BackendConfig, ErrorCode, KeyValue, MsmConfig, NttConfig};
use zkpipe::{Fr, G1Affine};

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
        failure_for(&reg, &garbage).contains("garbage"),
        "{}",
        failure_for(&reg, &garbage)
    );
    assert!(failure_for(&reg, &not_plugin).contains("not a zkpipe plugin"));
    let abi = failure_for(&reg, &old_abi);
    assert!(abi.contains("ABI 2") && abi.contains("ABI 1"), "{abi}");
    assert!(failure_for(&reg, &duplicate).contains("duplicate backend name `cpu`"));
    // The good plugin still works after all that.
    let cpu = reg.create("cpu", &BackendConfig::default()).unwrap();
    assert_eq!(cpu.info().devices.len(), 1);
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
