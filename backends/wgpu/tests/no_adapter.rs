//! With no adapter the backend says why: each case starts this test binary
//! again as a child process (wgpu and the Vulkan loader read the environment
//! once per process) with the environment changed, and reads the notes and
//! an op's error the child prints.
//!
//! `VK_DRIVER_FILES` takes the machine's drivers away (an empty folder) or
//! replaces them with a manifest whose library does not exist, so these
//! cases run the same with or without a Vulkan driver installed; they need
//! the loader library (libvulkan1), and say so when it is missing (fail,
//! when `ZKPIPE_REQUIRE_ADAPTER` is set).

use std::path::Path;
use std::process::Command;

use zkpipe_backend_wgpu::WgpuBackend;
use zkpipe_core::plugin::{AcceleratorImpl, BackendConfig, BackendPlugin, NttConfig};
use zkpipe_core::util::sample;

const CHILD: &str = "ZKPIPE_WGPU_NO_ADAPTER_CHILD";

/// The child's half: prints the backend's notes and the error of an NTT.
#[test]
fn child_prints_notes() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let be = WgpuBackend::create(&BackendConfig::default()).unwrap();
    let info = be.info();
    println!("DEVICES<<{}>>", info.devices.len());
    println!("NOTES<<{}>>", info.notes);
    let mut values = sample::scalars(4, 1);
    let err = match be.ntt(&mut values, &NttConfig::default()) {
        Ok(()) => "none".to_string(),
        Err(e) => e.to_string(),
    };
    println!("ERROR<<{err}>>");
}

/// What a child reported.
struct Report {
    devices: usize,
    notes: String,
    error: String,
}

/// Runs [`child_prints_notes`] with `set` added to and `unset` removed
/// from this process's environment.
fn child(set: &[(&str, &Path)], unset: &[&str]) -> Report {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_prints_notes",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    for var in unset {
        cmd.env_remove(var);
    }
    for (var, value) in set {
        cmd.env(var, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| {
        let start = stdout
            .find(&format!("{name}<<"))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            + name.len()
            + 2;
        let len = stdout[start..].find(">>").unwrap();
        stdout[start..start + len].to_string()
    };
    Report {
        devices: field("DEVICES").parse().unwrap(),
        notes: field("NOTES"),
        error: field("ERROR"),
    }
}

/// A private XDG_RUNTIME_DIR (mode 0700, as a login session's).
fn runtime_dir(root: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("xdg");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// A driver manifest whose library does not exist: the loader reads it and
/// skips the driver, so there is no adapter though a manifest is there.
fn broken_manifest(root: &Path) -> std::path::PathBuf {
    let icd = root.join("icd.d");
    std::fs::create_dir(&icd).unwrap();
    let manifest = icd.join("missing_icd.json");
    let library = root.join("libvulkan_missing.so");
    std::fs::write(
        &manifest,
        format!(
            r#"{{"file_format_version": "1.0.0", "ICD": {{"library_path": "{}", "api_version": "1.3.0"}}}}"#,
            library.display()
        ),
    )
    .unwrap();
    icd
}

/// Whether a child found no loader library; the cases below need it.
///
/// # Panics
/// When it is missing and `ZKPIPE_REQUIRE_ADAPTER` is set (CI sets it).
fn loader_missing(r: &Report) -> bool {
    if r.notes.contains("cannot be opened") {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_none(),
            "ZKPIPE_REQUIRE_ADAPTER is set but the Vulkan loader is missing: {}",
            r.notes
        );
        eprintln!("no Vulkan loader here, case not run: {}", r.notes);
        return true;
    }
    false
}

/// No manifest where VK_DRIVER_FILES points: that folder is named as the
/// likely cause, in the notes and in an op's error; XDG_RUNTIME_DIR is
/// fine, so it is not mentioned.
#[test]
fn no_driver_manifest_is_named() {
    let root = tempfile::tempdir().unwrap();
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let xdg = runtime_dir(root.path());
    let r = child(
        &[("VK_DRIVER_FILES", &empty), ("XDG_RUNTIME_DIR", &xdg)],
        &["VK_ICD_FILENAMES"],
    );
    if loader_missing(&r) {
        return;
    }
    assert_eq!(r.devices, 0, "{}", r.notes);
    for text in [&r.notes, &r.error] {
        assert!(
            text.contains("likely cause: no Vulkan driver manifest"),
            "{text}"
        );
        assert!(
            text.contains(&format!("VK_DRIVER_FILES = {}", empty.display())),
            "{text}"
        );
        assert!(!text.contains("XDG_RUNTIME_DIR"), "{text}");
    }
}

/// A driver manifest is there but gives no adapter, and XDG_RUNTIME_DIR is
/// removed from the environment: the notes and the error name
/// XDG_RUNTIME_DIR as a possible cause and list the manifest. With it set
/// to a private folder they do not mention it, and still list the manifest.
#[test]
fn unset_runtime_dir_is_named() {
    let root = tempfile::tempdir().unwrap();
    let icd = broken_manifest(root.path());
    let manifest = icd.join("missing_icd.json").display().to_string();
    let r = child(
        &[("VK_DRIVER_FILES", &icd)],
        &["XDG_RUNTIME_DIR", "VK_ICD_FILENAMES"],
    );
    if loader_missing(&r) {
        return;
    }
    assert_eq!(r.devices, 0, "{}", r.notes);
    for text in [&r.notes, &r.error] {
        assert!(
            text.contains("possible cause: XDG_RUNTIME_DIR is unset"),
            "{text}"
        );
        assert!(text.contains(&manifest), "{text}");
        assert!(!text.contains("no Vulkan driver manifest"), "{text}");
    }

    let xdg = runtime_dir(root.path());
    let r = child(
        &[("VK_DRIVER_FILES", &icd), ("XDG_RUNTIME_DIR", &xdg)],
        &["VK_ICD_FILENAMES"],
    );
    assert_eq!(r.devices, 0, "{}", r.notes);
    for text in [&r.notes, &r.error] {
        assert!(!text.contains("XDG_RUNTIME_DIR"), "{text}");
        assert!(text.contains("no driver gave an adapter"), "{text}");
        assert!(text.contains(&manifest), "{text}");
    }
}

/// XDG_RUNTIME_DIR naming a file is reported as not a folder.
#[test]
fn runtime_dir_file_is_named() {
    let root = tempfile::tempdir().unwrap();
    let icd = broken_manifest(root.path());
    let file = root.path().join("not-a-folder");
    std::fs::write(&file, "").unwrap();
    let r = child(
        &[("VK_DRIVER_FILES", &icd), ("XDG_RUNTIME_DIR", &file)],
        &["VK_ICD_FILENAMES"],
    );
    if loader_missing(&r) {
        return;
    }
    let want = format!(
        "possible cause: XDG_RUNTIME_DIR ({}) is not a folder",
        file.display()
    );
    assert!(r.notes.contains(&want), "{}", r.notes);
}
