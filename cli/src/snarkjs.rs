//! `zkpipe groth16 prove | verify`: snarkjs's positional order (and
//! rapidsnark's `prover ZKEY WTNS PROOF PUBLIC`), so their users can swap
//! the command in scripts. (`fullprove` is `prove --zkey --wasm --input`.)

use clap::{Args, Subcommand};
use std::path::PathBuf;
use zkpipe_core::Error;
use zkpipe_session::circom::{CircomKeys, CircomProveRequest, WitnessSource};

use crate::plugin_args::PluginArgs;
use crate::prove::{ProveOn, VerifyArgs};

#[derive(Subcommand, Debug)]
pub enum Groth16 {
    /// `snarkjs groth16 prove`: the zkey and the witness are all it needs.
    Prove(ProveCmd),
    /// `snarkjs groth16 verify`: prints `valid` (exit 0) or `invalid` (exit 1).
    Verify {
        /// verification_key.json (or zkpipe's vk.bin).
        vk: PathBuf,
        /// The public signals.
        public: PathBuf,
        /// The proof.
        proof: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct ProveCmd {
    /// snarkjs's Groth16 proving key (BLS12-381).
    zkey: PathBuf,
    /// The witness (`snarkjs wtns calculate`).
    wtns: PathBuf,
    /// Where the proof goes, as snarkjs JSON (`-`: stdout).
    #[arg(default_value = "proof.json")]
    proof: PathBuf,
    /// Where the public signals go, as snarkjs JSON (`-`: stdout).
    #[arg(default_value = "public.json")]
    public: PathBuf,
    #[command(flatten)]
    on: ProveOn,
    /// circom's constraint system: checks the witness constraint by
    /// constraint and the zkey against it.
    #[arg(long, value_name = "FILE")]
    r1cs: Option<PathBuf>,
}

impl Groth16 {
    /// The `verify` arguments, for a verification.
    pub fn verify_args(&self) -> Option<VerifyArgs> {
        let Groth16::Verify { vk, public, proof } = self else {
            return None;
        };
        let [vk, proof, public] = [vk, proof, public].map(PathBuf::clone);
        Some(VerifyArgs { vk, proof, public })
    }
}

/// Proves as `p` asks.
///
/// # Errors
/// As [`crate::circom::prove_to`].
pub fn prove(args: &PluginArgs, p: &ProveCmd) -> Result<(), Error> {
    let req = CircomProveRequest {
        r1cs: p.r1cs.clone(),
        witness: WitnessSource::Wtns(p.wtns.clone()),
        keys: CircomKeys::Zkey(p.zkey.clone()),
        seed: p.on.seed,
        label: String::new(),
    };
    let (on, outputs) = ((p.on.backend.as_str(), p.on.device), (&p.proof, &p.public));
    let args = args.with(&p.on.plugins);
    crate::circom::prove_to(&args, on, req, Some(outputs.0), Some(outputs.1))
}
