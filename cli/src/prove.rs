//! `zkpipe setup | prove | verify`: Groth16 over the built-in circuits.

use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkpipe_core::Error;
use zkpipe_core::groth16;
use zkpipe_session::output::{Output, proof_outputs};
use zkpipe_session::prove::ProveRequest;
use zkpipe_session::{Blinding, ProverOptions};

use crate::circuit::CircuitArgs;
use crate::plugin_args::PluginArgs;
use crate::progress::CliProgress;

/// Runs setup and writes `dir/params.bin`, `dir/vk.bin`, `dir/circuit.json`.
pub fn setup(c: &CircuitArgs, dir: &Path, seed: u64, synthetic: bool) -> Result<(), Error> {
    let c = c.request();
    let t = Instant::now();
    c.setup_into(dir, seed, synthetic, &CliProgress::new())?;
    let (kind, warning) = match synthetic {
        true => ("SYNTHETIC (unverifiable, timing only)", ""),
        false => (
            "insecure test",
            " (toxic waste from the seed: never use for real proofs)",
        ),
    };
    let (what, took) = (format!("{} {}", c.circuit, c.size()), t.elapsed());
    eprintln!(
        "{kind} keys for {what} in {took:.2?} → {}{warning}",
        dir.display()
    );
    Ok(())
}

/// Most partitions one `prove` makes (the proofs are kept in memory).
pub const MAX_PARTITIONS: u32 = 1 << 16;

/// Where a proof runs, and its blinding.
#[derive(Args, Debug)]
pub struct ProveOn {
    #[command(flatten)]
    pub plugins: PluginArgs,
    /// Backend name.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Device of the backend.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Seed for r, s (reproducible proofs); default: OS randomness.
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Args, Debug)]
pub struct ProveArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    #[command(flatten)]
    pub on: ProveOn,
    #[command(flatten)]
    pub circom: crate::circom::CircomProveArgs,
    /// Folder with params.bin (from `zkpipe setup`). Without it, insecure
    /// test keys are set up in the cache folder on first use.
    #[arg(long, value_name = "DIR")]
    pub params: Option<PathBuf>,
    /// Partitions: proofs of P witnesses sharing one key (witness seeds w, w+1, …).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_PARTITIONS as i64))]
    pub partitions: u32,
    /// Seed of the circuit's private witness (partition i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub witness_seed: u64,
    /// Where the proof goes (`-`: stdout). A built-in circuit's: 192 bytes
    /// per partition, default `<circuit>-<size>.proof`; a circom one's:
    /// snarkjs JSON, default proof.json.
    #[arg(long, value_name = "FILE", alias = "out")]
    pub proof: Option<PathBuf>,
    /// Where the public inputs go, as JSON decimal strings (`-`: stdout). A
    /// built-in circuit's: an array per partition when P > 1, default
    /// `<circuit>-<size>.public.json`; a circom one's: public.json.
    #[arg(long, value_name = "FILE", alias = "public-out")]
    pub public: Option<PathBuf>,
}

pub fn prove(args: &PluginArgs, p: &ProveArgs) -> Result<(), Error> {
    p.circom.refuse_on_builtin()?;
    let request = ProveRequest {
        builtin: p.circuit.request(),
        params_dir: p.params.clone(),
        partitions: p.partitions,
        witness_seed: p.witness_seed,
        blinding: Blinding::from_seed(p.on.seed),
        options: ProverOptions::default(),
    };
    let inputs: Vec<(&str, &Path)> = p.params.iter().map(|d| ("--params", d.as_path())).collect();
    let (proof_out, public_out) = proof_outputs(
        &inputs,
        p.proof.as_deref(),
        p.public.as_deref(),
        request.builtin.default_outputs(),
    )?;
    let stdout_free = !matches!(proof_out, Output::Stdout) && !matches!(public_out, Output::Stdout);
    let session = args.session(&p.on.backend, p.on.device)?;
    let proved = session.prove(&request, &mut |i, proved| {
        let t = &proved.times;
        eprintln!(
            "partition {i}: {:.1} ms ({})",
            t.total().as_secs_f64() * 1e3,
            t.summary()
        );
        let line = format!(
            "partition {i}: proof {} — valid",
            hex(&proved.proof.to_bytes()[..8])
        );
        if stdout_free {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    })?;
    let publics: Vec<Vec<String>> = proved
        .iter()
        .map(|p| p.public.iter().map(groth16::fr_to_decimal).collect())
        .collect();
    let json = zkpipe_session::output::one_or_many(&publics);
    proof_out.write(
        &proved
            .iter()
            .flat_map(|p| p.proof.to_bytes())
            .collect::<Vec<_>>(),
    )?;
    public_out.write(json.as_bytes())?;
    eprintln!(
        "wrote {} proof(s) to {} and public inputs to {}",
        proved.len(),
        proof_out.describe(),
        public_out.describe()
    );
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<String>() + "…"
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Verifying key (bellperson layout; at most 1 GiB).
    #[arg(long, value_name = "FILE")]
    pub vk: PathBuf,
    /// Proof file: 192 bytes per partition (at most 2^20 proofs).
    #[arg(long, value_name = "FILE")]
    pub proof: PathBuf,
    /// Public inputs: JSON array of decimal strings, or an array of those per
    /// partition (at most 64 MiB).
    #[arg(long, value_name = "FILE")]
    pub public: PathBuf,
}

/// Returns whether every proof verified. Every input problem (a file that
/// is missing, too large or malformed, counts that do not fit together) is
/// an [`Error::Io`] or [`Error::InvalidEncoding`] naming the file, so the
/// command exits with 2 for it; an invalid proof is `Ok(false)`.
pub fn verify(v: &VerifyArgs) -> Result<bool, Error> {
    if crate::circom::is_json(&v.vk) {
        return crate::circom::verify(v);
    }
    zkpipe_session::prove::verify_files(&v.vk, &v.proof, &v.public)
}
