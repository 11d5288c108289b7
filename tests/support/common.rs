//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use zkpipe::Backend;
use zkpipe::loader::{Registry, SearchPath};
use zkpipe::plugin::BackendConfig;

/// Where cargo put this test binary and the workspace's plugin cdylibs.
pub fn build_dir() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The CPU backend, loaded as a plugin from [`build_dir`].
pub fn cpu() -> Arc<Backend> {
    Arc::new(
        Registry::load(&SearchPath::only([build_dir()]))
            .create("cpu", &BackendConfig::default())
            .unwrap(),
    )
}
