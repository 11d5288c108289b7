//! Which circuit a command proves, and where its recorded R1CS and test
//! keys are cached.

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use zkpipe_circuits::BuiltinCircuit;
use zkpipe_core::Error;
use zkpipe_core::groth16::KeyStore;
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::r1cs::cache::R1csCache;

use crate::progress::CliProgress;

/// Which circuit, at which size, cached where.
#[derive(Args, Debug, Clone)]
pub struct CircuitArgs {
    /// Built-in circuit: sha256, sha256-gadget (the same circuit, witnessed
    /// through bellpepper's gadget: a PoRep-like host cost),
    /// poseidon-merkle, squaring-chain.
    #[arg(long, default_value = "poseidon-merkle")]
    pub circuit: String,
    /// Size: sha256, sha256-gadget — blocks; poseidon-merkle — KxH (challenges x height);
    /// squaring-chain — squarings (2^k allowed). Default: a small demo size.
    #[arg(long)]
    pub size: Option<String>,
    /// Cache folder for recorded R1CS (`r1cs/`) and insecure test keys
    /// (`keys/`) (default: $ZKPIPE_CACHE_DIR, else $XDG_CACHE_HOME/zkpipe or
    /// ~/.cache/zkpipe).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CircuitArgs {
    /// The size asked for, or the circuit's demo size.
    pub fn size(&self) -> &str {
        self.size
            .as_deref()
            .unwrap_or(zkpipe_circuits::default_size(&self.circuit))
    }

    /// The circuit (name and size checked).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown circuit or a size it cannot take.
    pub fn source(&self) -> Result<Arc<BuiltinCircuit>, Error> {
        BuiltinCircuit::new(&self.circuit, self.size())
            .map(Arc::new)
            .map_err(|e| Error::InvalidInput(e.to_string()))
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .unwrap_or_else(zkpipe_core::cache::default_dir)
    }

    /// The cached test keys.
    pub fn key_store(&self) -> KeyStore {
        KeyStore::new(self.cache_dir().join("keys"))
    }

    /// The recorded R1CS, from the cache or recorded now (and cached).
    ///
    /// # Errors
    /// As [`R1csCache::get_or_record`].
    pub fn r1cs(&self, circuit: &BuiltinCircuit) -> Result<R1cs, Error> {
        R1csCache::new(self.cache_dir().join("r1cs")).get_or_record(circuit, &CliProgress::new())
    }
}
