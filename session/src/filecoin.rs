//! Filecoin's circuits on a session's backend.

use std::path::Path;

use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_filecoin::FilecoinProver;

use crate::{ProverOptions, Session};

impl Session {
    /// Filecoin's circuits proved on this session's backend, each key
    /// resident after its first proof, the circuits recorded into
    /// `cache_dir/r1cs`.
    pub fn into_filecoin_prover(self, cache_dir: &Path) -> FilecoinProver {
        FilecoinProver::new(
            Box::new(move |params, r1cs| self.prover(params, r1cs, ProverOptions::default())),
            R1csCache::new(cache_dir.join("r1cs")),
        )
    }
}
