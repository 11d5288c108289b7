//! `zkpipe filecoin …`: Filecoin's proofs (PoRep C2, WindowPoSt,
//! WinningPoSt, SnapDeals) from the inputs Lotus, Curio and lotus-bench produce, proved
//! on the chosen backend with keys from `$FIL_PROOFS_PARAMETER_CACHE`, and
//! verified by filecoin-proofs before anything is written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use zkpipe_core::Error;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::util::fsutil::{check_outputs, check_writable, write_atomically};
use zkpipe_filecoin::commitment::Commitment;
use zkpipe_filecoin::params::{ParamSet, ProofKind};
use zkpipe_filecoin::porep::{C1, SealIds, seal_commit};
use zkpipe_filecoin::post::{PostRequest, prove_post, read_vanilla_proofs};
use zkpipe_filecoin::registry::{
    parse_hex32, post_proof_asked, prover_id_of_miner, update_proof, update_proof_for,
};
use zkpipe_filecoin::shape::{parse_sector_size, sector_size_name};
use zkpipe_filecoin::snap::{SnapRequest, prove_snap};
use zkpipe_filecoin::{
    Blinding, FilecoinProver, Proved, RegisteredSealProof, RegisteredUpdateProof,
};

use crate::plugin_args::PluginArgs;
use crate::progress::CliProgress;

/// `zkpipe filecoin`.
#[derive(Args, Debug)]
pub struct FilecoinArgs {
    #[command(subcommand)]
    command: FilecoinCommand,
}

#[derive(Subcommand, Debug)]
enum FilecoinCommand {
    /// Make parameters for test sector sizes (2KiB, 8MiB, 512MiB) in
    /// $FIL_PROOFS_PARAMETER_CACHE under filecoin-proofs' file names, as its
    /// `paramcache` does. INSECURE (this machine knows the toxic waste):
    /// production sizes must use the ceremony's parameters.
    Params(ParamsArgs),
    /// PoRep C2: prove a C1 output (filecoin-proofs-api JSON, or lotus-bench's
    /// and Curio's envelope) and write the proof, partitions × 192 bytes.
    SealCommit(SealCommitArgs),
    /// WindowPoSt from vanilla proofs (one per sector).
    WindowPost(PostArgs),
    /// WinningPoSt from vanilla proofs (one per sector).
    WinningPost(PostArgs),
    /// SnapDeals: the sector update proof from its vanilla proofs (one per
    /// partition) and the three commitments.
    SnapUpdate(SnapArgs),
    /// Timing only: what a PoRep C2 of a sector size costs on this machine,
    /// from vanilla proofs of that size's shape (partitions, challenges,
    /// layers, Merkle paths, columns) whose every hash is random. No
    /// sealed sector needed; no proof is made (the witness satisfies
    /// nothing: the stages run without the satisfaction check, on a
    /// synthetic key) and nothing is written. Refused up front, with the
    /// estimates, when this machine's memory or its device's cannot hold
    /// the run.
    InShape(crate::in_shape::InShapeArgs),
}

/// What every proving subcommand takes.
#[derive(Args, Debug)]
struct ProveOpts {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Backend name.
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Device of the backend.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Seed for r, s (reproducible proofs); default: OS randomness.
    #[arg(long)]
    seed: Option<u64>,
    /// zkpipe's cache folder (recorded circuits in `r1cs/`; default:
    /// $ZKPIPE_CACHE_DIR, else $XDG_CACHE_HOME/zkpipe or ~/.cache/zkpipe).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Where the proof goes (bytes as filecoin-proofs returns them).
    #[arg(long, value_name = "FILE", alias = "out")]
    proof: PathBuf,
    /// Prove this many times in this process and report each (a benchmark:
    /// the first pays the key load and the device's first use, later ones
    /// cost what a proof costs in `zkpipe serve`); the last proof is written.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
}

/// The miner: `--prover-id HEX` or `--miner-id N`.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
struct Miner {
    /// The prover id, 32 bytes as 64 hex digits.
    #[arg(long, value_name = "HEX")]
    prover_id: Option<String>,
    /// The miner actor's number (the digits after f0): its prover id is derived.
    #[arg(long, value_name = "N")]
    miner_id: Option<u64>,
}

impl Miner {
    fn prover_id(&self) -> Result<[u8; 32], Error> {
        match (&self.prover_id, self.miner_id) {
            (Some(hex), _) => parse_hex32("--prover-id", hex),
            (None, Some(m)) => Ok(prover_id_of_miner(m)),
            (None, None) => unreachable!("clap requires one"),
        }
    }
}

#[derive(Args, Debug)]
struct ParamsArgs {
    /// Sector size: 2KiB, 8MiB or 512MiB.
    #[arg(long, value_name = "SIZE")]
    sector_size: String,
    /// Which proofs, comma-separated: porep, window-post, winning-post,
    /// snap-update (default: all four).
    #[arg(long, value_delimiter = ',', value_parser = ProofKind::from_name)]
    proofs: Vec<ProofKind>,
    /// zkpipe's cache folder (recorded circuits in `r1cs/`).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct SealCommitArgs {
    /// The C1 output (JSON).
    #[arg(long, value_name = "FILE")]
    c1: PathBuf,
    /// The sector number.
    #[arg(long, value_name = "N")]
    sector_id: u64,
    #[command(flatten)]
    miner: Miner,
    #[command(flatten)]
    opts: ProveOpts,
}

#[derive(Args, Debug)]
struct PostArgs {
    /// Vanilla proofs: files of bincode bytes (as `generate_single_vanilla_proof`
    /// returns them), or JSON arrays of base64 strings (Go's `[][]byte`).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    vanilla: Vec<PathBuf>,
    /// The challenge randomness, 32 bytes as 64 hex digits.
    #[arg(long, value_name = "HEX")]
    randomness: String,
    #[command(flatten)]
    miner: Miner,
    /// Sector size (the current proof version for it).
    #[arg(
        long,
        value_name = "SIZE",
        required_unless_present = "registered_proof"
    )]
    sector_size: Option<String>,
    /// The PoSt type by number (go-state-types) or name, instead of --sector-size.
    #[arg(long, value_name = "TYPE", conflicts_with = "sector_size")]
    registered_proof: Option<String>,
    /// WindowPoSt: prove only this partition (as cuzk's per-partition jobs).
    #[arg(long, value_name = "K")]
    partition: Option<usize>,
    #[command(flatten)]
    opts: ProveOpts,
}

#[derive(Args, Debug)]
struct SnapArgs {
    /// Vanilla proofs: files of bincode bytes (one partition each, as
    /// `generate_partition_proofs` returns them), or JSON arrays of base64
    /// strings (Curio's stored `[][]byte`), in partition order.
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    vanilla: Vec<PathBuf>,
    /// CommR of the sector key: 64 hex digits or its CID (`bagboea4b5abc…`).
    #[arg(long, value_name = "COMM")]
    comm_r_old: String,
    /// CommR of the updated replica: 64 hex digits or its CID.
    #[arg(long, value_name = "COMM")]
    comm_r_new: String,
    /// CommD of the new data: 64 hex digits or its CID (`baga6ea4seaq…`).
    #[arg(long, value_name = "COMM")]
    comm_d_new: String,
    /// Sector size.
    #[arg(
        long,
        value_name = "SIZE",
        required_unless_present = "registered_proof"
    )]
    sector_size: Option<String>,
    /// The update proof type by its go-state-types number (0–4), instead of
    /// --sector-size.
    #[arg(long, value_name = "N", conflicts_with = "sector_size")]
    registered_proof: Option<u64>,
    #[command(flatten)]
    opts: ProveOpts,
}

/// Runs `zkpipe filecoin …`.
///
/// # Errors
/// [`Error::InvalidInput`] (exit 2) for inputs that are malformed, do not
/// fit or do not verify for the ids given, and for missing parameters;
/// backend errors (exit 1).
pub fn run(args: &PluginArgs, f: &FilecoinArgs) -> Result<(), Error> {
    match &f.command {
        FilecoinCommand::Params(p) => params(args, p),
        FilecoinCommand::SealCommit(s) => seal(args, s),
        FilecoinCommand::WindowPost(p) => post(args, p, true),
        FilecoinCommand::WinningPost(p) => post(args, p, false),
        FilecoinCommand::SnapUpdate(u) => snap_update(args, u),
        FilecoinCommand::InShape(a) => crate::in_shape::run(args, a),
    }
}

fn cache_dir(given: &Option<PathBuf>) -> PathBuf {
    given
        .clone()
        .unwrap_or_else(zkpipe_core::util::cache::default_dir)
}

fn prover(args: &PluginArgs, opts: &ProveOpts) -> Result<FilecoinProver, Error> {
    let session = args
        .with(&opts.plugins)
        .session(&opts.backend, opts.device)?;
    Ok(session.into_filecoin_prover(&cache_dir(&opts.cache_dir)))
}

/// Proves `runs` times (one prover: the key stays resident), reporting
/// each; returns the last proof.
fn prove_runs(
    what: &str,
    runs: u32,
    mut prove: impl FnMut() -> Result<Proved, Error>,
) -> Result<Proved, Error> {
    let mut last = None;
    for i in 1..=runs {
        let t = Instant::now();
        let proved = prove()?;
        let run = if runs > 1 {
            format!(" (run {i} of {runs})")
        } else {
            String::new()
        };
        let lines = proved.lines(&format!("{what}{run}"), t.elapsed());
        lines.iter().for_each(|l| eprintln!("{l}"));
        last = Some(proved);
    }
    Ok(last.expect("clap asks for at least one run"))
}

fn write(proved: &Proved, out: &Path) -> Result<(), Error> {
    write_atomically(out, &proved.to_bytes())?;
    eprintln!("→ {}", out.display());
    Ok(())
}

fn params(_args: &PluginArgs, p: &ParamsArgs) -> Result<(), Error> {
    let size = parse_sector_size(&p.sector_size)?;
    let kinds = match &p.proofs[..] {
        [] => &ProofKind::ALL[..],
        given => given,
    };
    let sets = (kinds.iter())
        .map(|k| ParamSet::of(*k, size))
        .collect::<Result<Vec<_>, Error>>()?;
    let r1cs = R1csCache::new(cache_dir(&p.cache_dir).join("r1cs"));
    let progress = CliProgress::new();
    for set in sets {
        let t = Instant::now();
        let made = set.ensure(&r1cs, &progress)?;
        if made {
            eprintln!("{}: made in {:.1?}", set.what, t.elapsed());
        } else {
            eprintln!("{}: already there", set.what);
        }
        println!("{}", set.files().params.display());
    }
    Ok(())
}

fn seal(args: &PluginArgs, s: &SealCommitArgs) -> Result<(), Error> {
    check_outputs(&[("--c1", &s.c1)], &[("--proof", &s.opts.proof)])?;
    check_writable(&s.opts.proof)?;
    let prover_id = s.miner.prover_id()?;
    let c1 = C1::read_for_sector(&s.c1, s.sector_id)?;
    let rp: RegisteredSealProof = c1.registered_proof();
    eprintln!(
        "C1 output: {rp:?} ({}), {} partition(s)",
        sector_size_name(u64::from(rp.sector_size())),
        rp.partitions()
    );
    let prover = prover(args, &s.opts)?;
    let ids = SealIds {
        prover_id,
        sector_id: s.sector_id,
    };
    let proved = prove_runs("seal-commit", s.opts.runs, || {
        seal_commit(
            &prover,
            &c1,
            ids,
            Blinding::from_seed(s.opts.seed),
            &CliProgress::new(),
        )
    })?;
    write(&proved, &s.opts.proof)?;
    Ok(())
}

/// The vanilla proofs of `files`, in order, once `out` is known to be
/// writable and none of them.
fn read_vanilla(files: &[PathBuf], out: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let inputs: Vec<(&str, &Path)> = files.iter().map(|v| ("--vanilla", v.as_path())).collect();
    check_outputs(&inputs, &[("--proof", out)])?;
    check_writable(out)?;
    files
        .iter()
        .map(|f| read_vanilla_proofs(f))
        .try_fold(Vec::new(), |mut all, v| {
            all.extend(v?);
            Ok(all)
        })
}

fn post(args: &PluginArgs, p: &PostArgs, window: bool) -> Result<(), Error> {
    let vanilla = read_vanilla(&p.vanilla, &p.opts.proof)?;
    let size = p
        .sector_size
        .as_deref()
        .map(parse_sector_size)
        .transpose()?;
    let registered = post_proof_asked(window, p.registered_proof.as_deref(), size)?;
    let req = PostRequest {
        registered,
        randomness: parse_hex32("--randomness", &p.randomness)?,
        prover_id: p.miner.prover_id()?,
        vanilla,
        partition: p.partition,
    };
    let prover = prover(args, &p.opts)?;
    let what = if window {
        "window-post"
    } else {
        "winning-post"
    };
    let proved = prove_runs(what, p.opts.runs, || {
        prove_post(
            &prover,
            &req,
            Blinding::from_seed(p.opts.seed),
            &CliProgress::new(),
        )
    })?;
    write(&proved, &p.opts.proof)?;
    Ok(())
}

fn snap_update(args: &PluginArgs, u: &SnapArgs) -> Result<(), Error> {
    let vanilla = read_vanilla(&u.vanilla, &u.opts.proof)?;
    let registered: RegisteredUpdateProof = match (u.registered_proof, &u.sector_size) {
        (Some(n), _) => update_proof(n)?,
        (None, Some(s)) => update_proof_for(parse_sector_size(s)?)?,
        (None, None) => unreachable!("clap requires one"),
    };
    let req = SnapRequest {
        registered,
        comm_r_old: Commitment::Sealed.parse_text("--comm-r-old", &u.comm_r_old)?,
        comm_r_new: Commitment::Sealed.parse_text("--comm-r-new", &u.comm_r_new)?,
        comm_d_new: Commitment::Unsealed.parse_text("--comm-d-new", &u.comm_d_new)?,
        vanilla,
    };
    let prover = prover(args, &u.opts)?;
    let proved = prove_runs("snap-update", u.opts.runs, || {
        prove_snap(
            &prover,
            &req,
            Blinding::from_seed(u.opts.seed),
            &CliProgress::new(),
        )
    })?;
    write(&proved, &u.opts.proof)?;
    Ok(())
}
