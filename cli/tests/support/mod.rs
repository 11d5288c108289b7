//! What the CLI test files share: the binary, pointed at this build's plugins.
#![allow(dead_code)]

pub mod circom_files;

use std::path::PathBuf;
use std::process::Command;

/// Where `cargo test --workspace` put the plugins (next to the test binary).
pub fn plugin_dir() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `zkpipe --plugin-dir <this build>`, with no plugin folders from the
/// environment.
pub fn zkpipe_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkpipe"));
    cmd.arg("--plugin-dir")
        .arg(plugin_dir())
        .env_remove("ZKPIPE_PLUGIN_PATH");
    cmd
}
