//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use zkpipe::Backend;
use zkpipe::backend::loader::{Registry, SearchPath};
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

/// Where the last `PT_LOAD` segment's file bytes end in a little-endian
/// ELF64 file (read straight from the program headers, as `ld.so` does).
pub fn end_of_loaded_segments(elf: &[u8]) -> u64 {
    let field = |at: usize, width: usize| {
        let mut bytes = [0u8; 8];
        bytes[..width].copy_from_slice(&elf[at..at + width]);
        u64::from_le_bytes(bytes)
    };
    let (phoff, phentsize, phnum) = (field(32, 8), field(54, 2), field(56, 2));
    (0..phnum)
        .map(|i| (phoff + i * phentsize) as usize)
        .filter(|&ph| field(ph, 4) == 1) // PT_LOAD
        .map(|ph| field(ph + 8, 8) + field(ph + 32, 8))
        .max()
        .unwrap()
}
