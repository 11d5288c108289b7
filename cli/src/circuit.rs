//! The flags that say which built-in circuit a command proves, and where
//! its recorded R1CS and test keys are cached.

use clap::Args;
use std::path::PathBuf;
use zkpipe_session::builtin::BuiltinRequest;

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
    /// The request these flags make.
    pub fn request(&self) -> BuiltinRequest {
        BuiltinRequest {
            circuit: self.circuit.clone(),
            size: self.size.clone(),
            cache_dir: self.cache_dir.clone(),
        }
    }
}
