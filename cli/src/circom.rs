//! circom circuits and snarkjs files: `prove --zkey --wtns [--r1cs]`,
//! `setup --r1cs`, `verify` of snarkjs JSON, `export-vk`.

use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkpipe_core::Error;
use zkpipe_core::util::fsutil::{check_outputs, given};
use zkpipe_session::Session;
use zkpipe_session::circom::{CircomKeys, CircomProveRequest, SetupOutput, WitnessSource};
use zkpipe_session::output::{Output, proof_outputs};

use crate::progress::CliProgress;

use crate::plugin_args::PluginArgs;
use crate::prove::{ProveArgs, VerifyArgs};

/// `prove`'s flags for a circom circuit (snarkjs's files).
#[derive(Args, Debug, Clone, Default)]
pub struct CircomProveArgs {
    /// snarkjs's Groth16 proving key: prove this circom circuit instead of a
    /// built-in one. With the witness it is all a proof needs, as for
    /// snarkjs and rapidsnark.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["params", "circuit", "size", "partitions", "witness_seed"])]
    pub zkey: Option<PathBuf>,
    /// circom's constraint system (compiled with `--prime bls12381`): the
    /// witness is checked constraint by constraint and the zkey against it.
    /// Needed with --params DIR (keys from `zkpipe setup --r1cs`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["circuit", "size", "partitions", "witness_seed"])]
    pub r1cs: Option<PathBuf>,
    /// The witness (`snarkjs wtns calculate`).
    #[arg(long, value_name = "FILE")]
    pub wtns: Option<PathBuf>,
    /// circom's WebAssembly witness generator (`circuit_js/circuit.wasm`):
    /// compute the witness from --input instead of reading --wtns.
    #[arg(long, value_name = "FILE", requires = "input", conflicts_with = "wtns")]
    pub wasm: Option<PathBuf>,
    /// The circuit's inputs (snarkjs's input.json), for --wasm.
    #[arg(long, value_name = "FILE", requires = "wasm")]
    pub input: Option<PathBuf>,
    /// The most instructions the witness generator may run (default: 10^10
    /// plus 5·10^4 per wire), so that a generator that loops stops.
    #[arg(long, value_name = "N", requires = "wasm")]
    pub wasm_fuel: Option<u64>,
}

impl CircomProveArgs {
    /// Whether these flags ask for a circom proof.
    pub fn is_circom(&self) -> bool {
        self.zkey.is_some() || self.r1cs.is_some()
    }

    /// Refuses circom's witness flags on a proof of a built-in circuit: a
    /// flag that does not apply must not be ignored.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (exit 2) naming the first such flag.
    pub fn refuse_on_builtin(&self) -> Result<(), Error> {
        let given = [
            ("--wtns", self.wtns.is_some()),
            ("--wasm", self.wasm.is_some()),
            ("--input", self.input.is_some()),
            ("--wasm-fuel", self.wasm_fuel.is_some()),
        ];
        match given.iter().find(|(_, on)| *on) {
            Some((flag, _)) if !self.is_circom() => Err(Error::InvalidInput(format!(
                "{flag} belongs to a circom proof (--zkey FILE, or --r1cs FILE --params DIR); \
                 a built-in circuit makes its own witness"
            ))),
            _ => Ok(()),
        }
    }
}

/// `setup`'s flag for a circom circuit.
#[derive(Args, Debug, Clone, Default)]
pub struct CircomSetupArgs {
    /// Make insecure test keys for this circom constraint system instead of
    /// a built-in circuit: params.bin and vk.bin (zkpipe's), vk.json (snarkjs's).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["circuit", "size", "synthetic"])]
    pub r1cs: Option<PathBuf>,
    /// Write the insecure test keys as a snarkjs Groth16 zkey (which
    /// `snarkjs groth16 prove` and `zkpipe prove --zkey` both take) instead
    /// of a folder: no powers-of-tau ceremony needed.
    #[arg(long, value_name = "FILE", requires = "r1cs", conflicts_with = "out")]
    pub zkey: Option<PathBuf>,
}

/// `witness`: `snarkjs wtns calculate` in zkpipe.
#[derive(Args, Debug)]
pub struct WitnessArgs {
    /// circom's WebAssembly witness generator (`circuit_js/circuit.wasm`).
    #[arg(long, value_name = "FILE")]
    pub wasm: PathBuf,
    /// The circuit's inputs (input.json).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// The witness, as snarkjs's .wtns.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The most instructions the generator may run (default: 10^10 plus
    /// 5·10^4 per wire), so that a generator that loops stops.
    #[arg(long, value_name = "N")]
    pub wasm_fuel: Option<u64>,
}

/// `zkpipe witness --wasm --input --out`.
///
/// # Errors
/// As `generate_witness`; I/O errors writing `out`.
pub fn witness(a: &WitnessArgs) -> Result<(), Error> {
    let progress = CliProgress::new();
    zkpipe_session::circom::write_witness(&a.wasm, &a.input, a.wasm_fuel, &a.out, &progress)
}

/// `export-vk`: a verifying key as snarkjs's verification_key.json.
#[derive(Args, Debug)]
pub struct ExportVkArgs {
    /// zkpipe's verifying key (vk.bin, bellperson's layout).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "zkey",
        conflicts_with = "zkey"
    )]
    pub vk: Option<PathBuf>,
    /// A snarkjs Groth16 zkey.
    #[arg(long, value_name = "FILE")]
    pub zkey: Option<PathBuf>,
    /// Output (`-`: stdout).
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: PathBuf,
}

/// `zkpipe export-verifier`.
#[derive(clap::Args, Debug)]
pub struct ExportVerifierArgs {
    /// Write a Solidity contract (the one format so far).
    #[arg(long, required = true)]
    pub solidity: bool,
    /// snarkjs's verification_key.json for a BN254 circuit.
    #[arg(long, value_name = "FILE")]
    pub vk: PathBuf,
    /// The contract (`-`: stdout).
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: PathBuf,
    /// A proof to write calldata for (with --public).
    #[arg(long, value_name = "FILE", requires = "public")]
    pub proof: Option<PathBuf>,
    /// Its public signals.
    #[arg(long, value_name = "FILE", requires = "proof")]
    pub public: Option<PathBuf>,
    /// Where the calldata goes (`-`: stdout).
    #[arg(long, value_name = "FILE", default_value = "-", requires = "proof")]
    pub calldata: PathBuf,
}

/// `zkpipe export-verifier --solidity`: see
/// [`zkpipe_session::circom::solidity_verifier`].
///
/// # Errors
/// As that function; both outputs on stdout (exit 2).
pub fn export_verifier(a: &ExportVerifierArgs) -> Result<(), Error> {
    let proof = a.proof.as_deref().zip(a.public.as_deref());
    if proof.is_some() && a.out.as_os_str() == "-" && a.calldata.as_os_str() == "-" {
        return Err(Error::InvalidInput(
            "--out and --calldata both go to stdout: give one of them a file".into(),
        ));
    }
    let (vk, proof_in, public) = (
        Some(a.vk.as_path()),
        a.proof.as_deref(),
        a.public.as_deref(),
    );
    let inputs = given(&[("--vk", vk), ("--proof", proof_in), ("--public", public)]);
    check_outputs(&inputs, &[("--out", &a.out), ("--calldata", &a.calldata)])?;
    let (contract, calldata) = zkpipe_session::circom::solidity_verifier(&a.vk, proof)?;
    Output::resolve(Some(&a.out), String::new())?.write(contract.as_bytes())?;
    match calldata {
        Some(c) => Output::resolve(Some(&a.calldata), String::new())?.write((c + "\n").as_bytes()),
        None => Ok(()),
    }
}

fn name(p: &Path) -> String {
    p.display().to_string()
}

/// `zkpipe prove --zkey … --wtns …` (or `--r1cs … --params DIR`, or
/// `--wasm … --input …` for the witness): see [`prove_to`].
///
/// # Errors
/// As [`prove_to`]; [`Error::InvalidInput`] (exit 2) without a witness or keys.
pub fn prove(args: &PluginArgs, p: &ProveArgs) -> Result<(), Error> {
    let c = &p.circom;
    let (wtns, wasm, input) = (c.wtns.as_deref(), c.wasm.as_deref(), c.input.as_deref());
    let req = CircomProveRequest {
        r1cs: c.r1cs.clone(),
        witness: WitnessSource::from_flags(wtns, wasm, input, c.wasm_fuel)?,
        keys: CircomKeys::from_flags(c.zkey.as_deref(), p.params.as_deref())?,
        seed: p.on.seed,
        label: String::new(),
    };
    let on = (p.on.backend.as_str(), p.on.device);
    prove_to(args, on, req, p.proof.as_deref(), p.public.as_deref())
}

/// Proves `req` on `(backend, device)`, checks the proof, writes it and the
/// public signals as snarkjs JSON (default proof.json, public.json).
///
/// # Errors
/// [`Error::InvalidInput`]/[`Error::InvalidEncoding`] (exit 2) for files
/// that are malformed or disagree, or outputs that clash with the inputs;
/// backend errors (exit 1).
pub fn prove_to(
    args: &PluginArgs,
    (backend, device): (&str, u32),
    mut req: CircomProveRequest,
    proof: Option<&Path>,
    public: Option<&Path>,
) -> Result<(), Error> {
    let defaults = ("proof.json".into(), "public.json".into());
    let (proof_out, public_out) = proof_outputs(&req.inputs(), proof, public, defaults)?;
    req.label = proof_out.describe();
    // The key is read while the backend opens: a one-shot command pays
    // for the slower of the two, not both.
    let proved = Session::open_and_prove_circom_json(
        &args.request(backend, device),
        std::sync::Arc::new(CliProgress::new()),
        &req,
    )?;
    eprintln!(
        "proved in {:.1} ms ({})",
        proved.seconds * 1e3,
        proved.summary
    );
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("json") + "\n";
    proof_out.write(pretty(&proved.proof).as_bytes())?;
    public_out.write(pretty(&proved.public).as_bytes())?;
    eprintln!(
        "proof (valid) → {}, public signals → {}",
        proof_out.describe(),
        public_out.describe()
    );
    Ok(())
}

/// `zkpipe setup --r1cs c.r1cs (--out DIR | --zkey FILE)`: insecure test
/// keys from `seed`.
///
/// # Errors
/// As `CircomR1cs::load`; I/O errors writing `dir` or `zkey`.
pub fn setup(
    r1cs_path: &Path,
    dir: Option<&Path>,
    zkey: Option<&Path>,
    seed: u64,
) -> Result<(), Error> {
    let (out, dest, what) = match (zkey, dir) {
        (Some(z), _) => (SetupOutput::Zkey(z.to_path_buf()), z, "a snarkjs zkey"),
        (None, Some(d)) => (
            SetupOutput::Folder(d.to_path_buf()),
            d,
            "params.bin, vk.bin, vk.json",
        ),
        (None, None) => {
            return Err(Error::InvalidInput(
                "setup --r1cs needs --out DIR or --zkey FILE".into(),
            ));
        }
    };
    let t = Instant::now();
    zkpipe_session::circom::setup(r1cs_path, &out, seed, &CliProgress::new())?;
    eprintln!(
        "insecure test keys for {} in {:.2?} → {} ({what}; toxic waste from the seed: never use for real proofs)",
        name(r1cs_path),
        t.elapsed(),
        dest.display()
    );
    Ok(())
}

/// `zkpipe export-vk`: zkpipe's vk.bin or a zkey's key as snarkjs JSON.
///
/// # Errors
/// As [`zkpipe_session::circom::verifying_key`].
pub fn export_vk(a: &ExportVkArgs) -> Result<(), Error> {
    let inputs = given(&[("--vk", a.vk.as_deref()), ("--zkey", a.zkey.as_deref())]);
    check_outputs(&inputs, &[("--out", &a.out)])?;
    let vk = zkpipe_session::circom::verifying_key_json(a.vk.as_deref(), a.zkey.as_deref())?;
    let text = serde_json::to_string_pretty(&vk).expect("json") + "\n";
    Output::resolve(Some(&a.out), String::new())?.write(text.as_bytes())
}

pub use zkpipe_session::circom::is_json;

/// `zkpipe verify` of snarkjs JSON: verification key, proof and public signals.
///
/// # Errors
/// As [`zkpipe_session::circom::verify_json`]; an invalid proof is `Ok(false)`.
pub fn verify(v: &VerifyArgs) -> Result<bool, Error> {
    zkpipe_session::circom::verify_json(&v.vk, &v.proof, &v.public)
}
