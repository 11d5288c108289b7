//! `zkpipe`: pick a backend at run time, inspect what loaded, benchmark ops.
//!
//! Exit codes (see [`exit_code`]):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; `verify`: every proof is valid (`valid` on stdout) |
//! | 1 | `verify`: a proof is invalid (`invalid` on stdout); any command: a runtime failure (unknown backend, no usable device, backend failure, a proof that failed its self-check, failed requests, crosscheck mismatch) |
//! | 2 | usage error, or a bad request or input: flags or sizes this machine or command cannot take (refused before any work, with the limit), bad settings, a file that is missing, unreadable, too large or malformed, keys for another circuit, inputs that do not fit together (`verify`: wrong number of proofs or public inputs); the error is on stderr |

mod batch;
mod batch_daemon;
mod bench;
mod circom;
mod circuit;
mod client;
mod crosscheck;
mod doctor;
mod filecoin;
mod fleet;
mod in_shape;
mod plugin_args;
mod progress;
mod prove;
mod serve;
mod snarkjs;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use plugin_args::PluginArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use zkpipe_core::Error;

#[derive(Parser, Debug)]
#[command(
    name = "zkpipe",
    version,
    about = "Groth16 over BLS12-381 with swappable accelerator plugins"
)]
struct Cli {
    /// Plugin flags may come before the command too (`zkpipe --threads 4
    /// prove …`); those after it win.
    #[command(flatten)]
    plugins: PluginArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the plugin search path, loaded backends (version, devices,
    /// capabilities) and libraries that failed to load, with reasons.
    Backends {
        #[command(flatten)]
        plugins: PluginArgs,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Also run a small NTT on every device: kernels or shaders a
        /// backend makes on first use are then made (and cached) now.
        #[arg(long)]
        warm: bool,
    },
    /// Generate Groth16 keys for a built-in circuit or a circom r1cs from a
    /// seed (INSECURE test keys: the toxic waste is derivable from the seed).
    Setup {
        #[command(flatten)]
        circuit: circuit::CircuitArgs,
        /// Output folder: params.bin (bellperson Parameters), vk.bin (VerifyingKey), circuit.json.
        #[arg(long, value_name = "DIR", required_unless_present = "zkey")]
        out: Option<PathBuf>,
        /// Seed of the toxic waste.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Random valid points instead of a setup (honest timing, unverifiable proofs).
        #[arg(long)]
        synthetic: bool,
        #[command(flatten)]
        circom: circom::CircomSetupArgs,
    },
    /// Prove a built-in circuit (no --params: insecure test keys from the
    /// cache folder, set up on first use) or a circom one (--zkey and its
    /// witness), verify the proof and save it with its public inputs.
    Prove(prove::ProveArgs),
    /// Verify proofs: prints `valid` (exit 0) or `invalid` (exit 1); bad
    /// or missing files exit 2 with the reason. Takes zkpipe's binary files
    /// or snarkjs's JSON (a `.json` or `{`-led --vk).
    Verify(prove::VerifyArgs),
    /// snarkjs's commands in its positional order (`zkpipe groth16 prove
    /// circuit.zkey witness.wtns proof.json public.json`).
    #[command(subcommand)]
    Groth16(snarkjs::Groth16),
    /// Write a verifying key (zkpipe's vk.bin, or a snarkjs zkey's) as
    /// snarkjs's verification_key.json.
    ExportVk(circom::ExportVkArgs),
    /// Write an Ethereum verifier contract for a BN254 verification key
    /// (`--solidity`), and a proof's calldata for it.
    ExportVerifier(circom::ExportVerifierArgs),
    /// Compute a circom circuit's witness from its WebAssembly generator and
    /// input.json, as snarkjs's .wtns (`snarkjs wtns calculate`).
    Witness(circom::WitnessArgs),
    /// Run each op and a whole proof on a backend and on the reference
    /// backend; report per-op equality (exit 1 on any mismatch).
    Crosscheck(crosscheck::CrosscheckArgs),
    /// Time backend ops: median over several runs after a warm-up.
    Bench {
        #[command(subcommand)]
        op: bench::BenchOp,
    },
    /// Run the proving daemon: gRPC on a Unix socket (and optionally TCP),
    /// keys resident, priorities, every proof verified before it is
    /// returned. SIGTERM/SIGINT drain it and exit 0.
    Serve(serve::ServeArgs),
    /// Talk to a running daemon.
    Client(client::ClientArgs),
    /// Filecoin's proofs: PoRep C2 from a C1 output, WindowPoSt, WinningPoSt
    /// and SnapDeals' sector update from vanilla proofs, keys from
    /// $FIL_PROOFS_PARAMETER_CACHE (test sizes made with `filecoin params`).
    Filecoin(filecoin::FilecoinArgs),
    /// A fleet of `zkpipe serve --queue` nodes: submit jobs to its
    /// PostgreSQL queue, await them, see its nodes and queues.
    Fleet(fleet::FleetArgs),
    /// Print a shell's completion script (e.g. `zkpipe completions bash >
    /// /usr/share/bash-completion/completions/zkpipe`).
    Completions { shell: clap_complete::Shell },
    /// Write the man pages (zkpipe.1, zkpipe-prove.1, …) into DIR.
    Man {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// `zkpipe --version`: the release, the commit and the plugin ABIs a
/// plugin must speak.
fn version() -> String {
    format!(
        "{} (commit {}; backend plugin ABI {}, policy plugin ABI {})",
        env!("CARGO_PKG_VERSION"),
        env!("ZKPIPE_COMMIT"),
        zkpipe_core::plugin::ABI_VERSION,
        zkpipe_core::sched::policy_plugin::POLICY_ABI_VERSION
    )
}

fn main() -> ExitCode {
    // Usage errors exit with 2.
    // Made once, for the life of the process: clap keeps a `&'static str`.
    let version: &'static str = Box::leak(version().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A daemon outlives its clients: it keeps SIGPIPE ignored.
    if !matches!(cli.command, Command::Serve(_)) {
        restore_sigpipe();
    }
    // A bad setting is refused before any work, not when a cache is written.
    if let Err(e) = zkpipe_core::util::cache::keep_free_bytes() {
        eprintln!("error: {e}");
        return ExitCode::from(exit_code(&e));
    }
    let result = match &cli.command {
        Command::Serve(s) => serve::run(s, &cli.plugins),
        Command::Client(c) => client::run(c),
        Command::Fleet(f) => fleet::run(f),
        Command::Filecoin(f) => filecoin::run(&cli.plugins, f),
        Command::Completions { shell } => {
            let (cmd, out) = (&mut Cli::command(), &mut std::io::stdout());
            clap_complete::generate(*shell, cmd, "zkpipe", out);
            Ok(())
        }
        Command::Man { dir } => std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(Cli::command().version(version), dir))
            .map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            }),
        Command::Backends {
            plugins,
            json,
            warm,
        } => doctor::run(&cli.plugins.with(plugins), *json, *warm),
        Command::Bench { op } => bench::run(&cli.plugins, op),
        Command::Setup {
            circom:
                circom::CircomSetupArgs {
                    r1cs: Some(r1cs),
                    zkey,
                },
            out,
            seed,
            ..
        } => circom::setup(r1cs, out.as_deref(), zkey.as_deref(), *seed),
        Command::Setup {
            circuit,
            out: Some(out),
            seed,
            synthetic,
            ..
        } => prove::setup(circuit, out, *seed, *synthetic),
        Command::Setup { .. } => Err(Error::InvalidInput(
            "setup needs --out DIR (or --r1cs FILE --zkey FILE)".into(),
        )),
        Command::Prove(p) if p.circom.is_circom() => {
            circom::prove(&cli.plugins.with(&p.on.plugins), p)
        }
        Command::Prove(p) => prove::prove(&cli.plugins.with(&p.on.plugins), p),
        Command::ExportVk(a) => circom::export_vk(a),
        Command::ExportVerifier(a) => circom::export_verifier(a),
        Command::Witness(a) => circom::witness(a),
        Command::Groth16(snarkjs::Groth16::Prove(p)) => snarkjs::prove(&cli.plugins, p),
        // 0 valid, 1 invalid, 2 bad input (from `exit_code` below).
        Command::Verify(_) | Command::Groth16(_) => match verify(&cli.command) {
            Ok(valid) => {
                println!("{}", if valid { "valid" } else { "invalid" });
                return ExitCode::from(u8::from(!valid));
            }
            Err(e) => Err(e),
        },
        Command::Crosscheck(x) => match crosscheck::run(&cli.plugins.with(&x.plugins), x) {
            Ok(true) => Ok(()),
            Ok(false) => {
                eprintln!("crosscheck: mismatches found");
                return ExitCode::from(1);
            }
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit_code(&e))
        }
    }
}

/// `verify`, or `groth16 verify`: whether every proof is valid.
fn verify(c: &Command) -> Result<bool, Error> {
    let v = match c {
        Command::Verify(v) => v,
        Command::Groth16(op) => &op.verify_args().expect("a verification"),
        _ => unreachable!("only verifications"),
    };
    prove::verify(v)
}

/// 2 when the command's input is at fault ([`Error::blames_input`]), 1
/// for everything else.
fn exit_code(e: &Error) -> u8 {
    if e.blames_input() { 2 } else { 1 }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`zkpipe … | head`)
/// fails and `println!` panics. A command-line tool should end quietly
/// there, as `cat` does: the default action. (A long-running server that
/// must outlive its clients would keep SIGPIPE ignored and handle the
/// write errors instead.)
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    };
}
