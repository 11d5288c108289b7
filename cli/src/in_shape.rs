//! `zkpipe filecoin in-shape`: what a PoRep C2 of a sector size would cost
//! on this machine (the harness's `in_shape`). Timing only: it takes no
//! output file, and nothing it runs can make a proof.

use std::path::PathBuf;

use clap::Args;
use zkpipe_core::Error;
use zkpipe_filecoin::shape::parse_sector_size;
use zkpipe_harness::InShapeRequest;

use crate::plugin_args::PluginArgs;
use crate::progress::CliProgress;

/// `zkpipe filecoin in-shape`.
#[derive(Args, Debug)]
pub struct InShapeArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, value_name = "SIZE")]
    sector_size: String,
    /// Whole C2s to time, one after another (each is every partition).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    proofs: u32,
    /// Partitions in flight: with --witness-only, partitions synthesised at
    /// once; otherwise witnesses held at once, synthesis running that many
    /// partitions minus one ahead of the prover. 1: one partition after
    /// another, as `seal-commit` proves them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    in_flight: u32,
    /// Synthesise the witnesses only (each partition's challenges on
    /// several threads, as `seal-commit` does): no R1CS, key or backend.
    #[arg(long)]
    witness_only: bool,
    /// Print the memory estimates and stop.
    #[arg(long)]
    estimate: bool,
    /// Host memory to plan for instead of what this machine has available
    /// (MemAvailable), e.g. 128GiB: whether a run fits another machine.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    /// Seed of the random values.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    plugins: PluginArgs,
    /// Backend name.
    #[arg(long, default_value = "cpu", conflicts_with = "witness_only")]
    backend: String,
    /// Device of the backend.
    #[arg(long, default_value_t = 0, conflicts_with = "witness_only")]
    device: u32,
    /// SpMV and the satisfaction scan on the host even on a GPU: the
    /// matrices stay off the device (27 GiB at 32 GiB), three domain-sized
    /// vectors per partition come back instead of one.
    #[arg(long, conflicts_with = "witness_only")]
    host_spmv: bool,
    /// zkpipe's cache folder (the circuit is recorded into `r1cs/`;
    /// default: $ZKPIPE_CACHE_DIR, else $XDG_CACHE_HOME/zkpipe or
    /// ~/.cache/zkpipe).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
}

/// Runs `zkpipe filecoin in-shape`.
///
/// # Errors
/// [`Error::InvalidInput`] (exit 2) for a size Filecoin does not register
/// and for a run this machine's memory (or `--memory-limit`) or its
/// device's cannot hold, with the estimates; backend errors (exit 1).
pub fn run(args: &PluginArgs, a: &InShapeArgs) -> Result<(), Error> {
    let memory_limit = (a.memory_limit.as_deref())
        .map(|s| {
            parse_sector_size(s)
                .map_err(|_| format!("--memory-limit {s}: expected a size such as 128GiB"))
        })
        .transpose()
        .map_err(Error::InvalidInput)?;
    let req = InShapeRequest {
        sector_size: parse_sector_size(&a.sector_size)?,
        proofs: a.proofs,
        in_flight: a.in_flight,
        estimate_only: a.estimate,
        memory_limit,
        seed: a.seed,
        device: a.device,
        host_spmv: a.host_spmv,
        cache_dir: a.cache_dir.clone(),
    };
    let session = if a.witness_only {
        None
    } else {
        Some(args.with(&a.plugins).session(&a.backend, a.device)?)
    };
    let lines = zkpipe_harness::in_shape(session.as_ref(), &req, &CliProgress::new())?;
    lines.iter().for_each(|l| println!("{l}"));
    Ok(())
}
