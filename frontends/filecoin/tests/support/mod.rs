//! Shared by the Filecoin tests: fixture folders under the target dir (kept
//! between runs: parameters are slow to make) and a CPU engine.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Once};

use zkpipe_core::backend::loader::{Registry, SearchPath};
use zkpipe_core::groth16::ProverBuilder;
use zkpipe_core::plugin::BackendConfig;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_filecoin::FilecoinProver;

/// `target/` (this binary is `target/<profile>/deps/<name>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// Points filecoin-proofs' parameter and parent caches at the target dir.
/// Every test calls this first; filecoin-proofs reads them once per process.
pub fn fixtures_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let root = target_dir().join("filecoin");
        // SAFETY: every test calls this before anything else, and the Once
        // makes the others wait, so no thread reads the environment meanwhile.
        unsafe {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", root.join("params"));
            std::env::set_var("FIL_PROOFS_PARENT_CACHE", root.join("parents"));
        }
    });
}

/// An engine on the CPU backend (the plugin cargo built beside this binary).
pub fn engine() -> FilecoinProver {
    let dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let cpu = Arc::new(
        Registry::load(&SearchPath::only([dir]))
            .create("cpu", &BackendConfig::default())
            .unwrap(),
    );
    FilecoinProver::new(
        Box::new(move |params, r1cs| ProverBuilder::new(cpu.clone()).build(params, r1cs)),
        // The folder the CLI's tests use (ZKPIPE_CACHE_DIR there): each
        // circuit is recorded once for the whole suite (600 MB for PoRep).
        R1csCache::new(
            target_dir()
                .join("filecoin")
                .join("zkpipe-cache")
                .join("r1cs"),
        ),
    )
}
