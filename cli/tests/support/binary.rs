//! The `zkpipe` binary under test. Cargo names it to the CLI's own tests
//! (`CARGO_BIN_EXE_zkpipe`) and builds it before they run; another crate's
//! tests (the daemon's) find it where cargo puts it, `target/<profile>/`,
//! beside the `deps` folder that holds the test executable.
//!
//! `cargo test --workspace` builds it before any test runs (the CLI's
//! integration tests need it), but `cargo test -p zkpipe-daemon` alone does
//! not: there it may be missing, or older than the sources, and a test
//! would then run yesterday's daemon. Both are refused with the command
//! that builds it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The `zkpipe` binary of this build.
///
/// # Panics
/// Outside the CLI's tests, when the binary is missing or older than a
/// source file it was built from (per its dep-info file, as cargo judges).
pub fn zkpipe_binary() -> PathBuf {
    if let Some(bin) = option_env!("CARGO_BIN_EXE_zkpipe") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = profile_dir.join(format!("zkpipe{}", std::env::consts::EXE_SUFFIX));
    let build = build_command(profile_dir);
    let Ok(built) = std::fs::metadata(&bin).and_then(|m| m.modified()) else {
        panic!(
            "no zkpipe binary at {}: these tests start it, and `cargo test -p zkpipe-daemon` \
             does not build it (`cargo test --workspace` does); run `{build}` first",
            bin.display()
        );
    };
    if let Some(newer) = newer_source(&profile_dir.join("zkpipe.d"), built) {
        panic!(
            "the zkpipe binary at {} is older than {}: these tests would run a stale daemon; \
             run `{build}` first",
            bin.display(),
            newer.display()
        );
    }
    bin
}

/// `cargo build -p zkpipe-cli`, with the profile that built this test.
fn build_command(profile_dir: &Path) -> String {
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "cargo build -p zkpipe-cli".to_string(),
        Some(profile) => format!("cargo build -p zkpipe-cli --profile {profile}"),
    }
}

/// A source file listed in the dep-info file `dep_info` (`target: src src
/// …`, spaces in names escaped) that changed after `built`; `None` when
/// every one is older or the file cannot be read.
fn newer_source(dep_info: &Path, built: SystemTime) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dep_info).ok()?;
    let (_, sources) = text.lines().next()?.split_once(": ")?;
    let mut paths = vec![String::new()];
    let mut chars = sources.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => paths.last_mut()?.extend(chars.next()),
            ' ' => paths.push(String::new()),
            c => paths.last_mut()?.push(c),
        }
    }
    paths
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .find(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t > built)
        })
}
