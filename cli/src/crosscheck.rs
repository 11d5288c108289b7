//! `zkpipe crosscheck`: every op and a whole proof on a backend and on the
//! reference, compared bit for bit ([`zkpipe_core::crosscheck`]).

use clap::Args;
use zkpipe_core::crosscheck::{self, Check, Outcome, Spec};
use zkpipe_core::{Curve, Error};

use crate::circuit::CircuitArgs;
use crate::plugin_args::PluginArgs;

#[derive(Args, Debug)]
pub struct CrosscheckArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    #[command(flatten)]
    pub plugins: PluginArgs,
    /// Backend under test.
    #[arg(long)]
    pub backend: String,
    /// Device of the backend under test.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Reference backend (created without the `--backend-opt` settings,
    /// which belong to the backend under test).
    #[arg(long, default_value = "cpu")]
    pub reference: String,
    /// Largest op size checked, as log2 (at most 26).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=crosscheck::MAX_LOG_SIZE as i64))]
    pub max_log_size: u32,
    /// Seed for inputs and r, s.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Curve whose ops are checked: bls12-381, or bn254 (also bn128), whose
    /// whole proof is of a squaring chain of 1,000 constraints (the
    /// circuit flags are then not used).
    #[arg(long, default_value = "bls12-381")]
    pub curve: zkpipe_core::Curve,
}

/// Runs the checks, printing a line each; returns whether all matched.
pub fn run(args: &PluginArgs, x: &CrosscheckArgs) -> Result<bool, Error> {
    let session = args.session(&x.backend, x.device)?;
    let spec = Spec {
        max_log_size: x.max_log_size,
        seed: x.seed,
        device: x.device,
    };
    // ok, skipped, mismatched or failed: the summary's counts.
    let mut counts = [0usize; 4];
    let mut each = |c: &Check| {
        let (kind, line) = match &c.outcome {
            Outcome::Match => (0, format!("ok        {}", c.what)),
            Outcome::Skipped(why) => (1, format!("skipped   {}: {why}", c.what)),
            Outcome::Mismatch(d) => (2, format!("MISMATCH  {}: {d}", c.what)),
            Outcome::Failed(why) => (3, format!("ERROR     {}: {why}", c.what)),
        };
        counts[kind] += 1;
        println!("{line}");
    };
    let all_matched = match x.curve {
        Curve::Bls12_381 => {
            session.crosscheck(&x.circuit.request(), &x.reference, &spec, &mut each)?
        }
        Curve::Bn254 => session.crosscheck_bn254(&x.reference, &spec, &mut each)?,
    };
    let [ok, skipped, mismatched, failed] = counts;
    println!(
        "{} against {}: {ok} matched, {skipped} skipped, {mismatched} mismatched, {failed} failed",
        x.backend, x.reference
    );
    Ok(all_matched)
}
