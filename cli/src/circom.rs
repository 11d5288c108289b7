//! circom circuits and snarkjs files: `prove --r1cs --wtns --zkey`,
//! `setup --r1cs`, `verify` of snarkjs JSON, `export-vk`.

use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkpipe_circom::json;
use zkpipe_core::Error;
use zkpipe_core::util::fsutil::{check_input, check_outputs, check_writable, write_atomically};
use zkpipe_session::circom::{
    CircomKeys, CircomProveRequest, SetupOutput, WitnessSource, generate_witness,
};

use crate::progress::CliProgress;

use crate::plugin_args::PluginArgs;
use crate::prove::{ProveArgs, VerifyArgs};

/// `prove`'s flags for a circom circuit (snarkjs's order of files).
#[derive(Args, Debug, Clone, Default)]
pub struct CircomProveArgs {
    /// circom's constraint system (compiled with `--prime bls12381`):
    /// prove this circuit instead of a built-in one.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["circuit", "size", "partitions", "witness_seed", "out", "public_out"])]
    pub r1cs: Option<PathBuf>,
    /// The witness (`snarkjs wtns calculate`).
    #[arg(long, value_name = "FILE", requires = "r1cs")]
    pub wtns: Option<PathBuf>,
    /// circom's WebAssembly witness generator (`circuit_js/circuit.wasm`):
    /// compute the witness from --input instead of reading --wtns.
    #[arg(long, value_name = "FILE", requires_all = ["r1cs", "input"], conflicts_with = "wtns")]
    pub wasm: Option<PathBuf>,
    /// The circuit's inputs (snarkjs's input.json), for --wasm.
    #[arg(long, value_name = "FILE", requires = "wasm")]
    pub input: Option<PathBuf>,
    /// The most instructions the witness generator may run (default: 10^10
    /// plus 5·10^4 per wire), so that a generator that loops stops.
    #[arg(long, value_name = "N", requires = "wasm")]
    pub wasm_fuel: Option<u64>,
    /// snarkjs's Groth16 proving key (or --params DIR from `zkpipe setup --r1cs`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "r1cs",
        conflicts_with = "params"
    )]
    pub zkey: Option<PathBuf>,
    /// Where the proof goes, as snarkjs JSON (`-`: stdout; default
    /// proof.json). Only with --r1cs: a built-in circuit's proof goes to --out.
    #[arg(long, value_name = "FILE", requires = "r1cs")]
    pub proof: Option<PathBuf>,
    /// Where the public signals go, as snarkjs JSON (`-`: stdout; default
    /// public.json). Only with --r1cs: a built-in circuit's go to --public-out.
    #[arg(long, value_name = "FILE", requires = "r1cs")]
    pub public: Option<PathBuf>,
}

impl CircomProveArgs {
    /// Refuses circom's flags on a proof of a built-in circuit (no
    /// `--r1cs`): clap drops their `requires` once a built-in's flag is
    /// given, and a flag that does not apply must not be ignored.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (exit 2) naming the first such flag.
    pub fn refuse_without_r1cs(&self) -> Result<(), Error> {
        let given = [
            ("--wtns", self.wtns.is_some()),
            ("--wasm", self.wasm.is_some()),
            ("--input", self.input.is_some()),
            ("--wasm-fuel", self.wasm_fuel.is_some()),
            ("--zkey", self.zkey.is_some()),
            ("--proof", self.proof.is_some()),
            ("--public", self.public.is_some()),
        ];
        match given.iter().find(|(_, on)| *on) {
            Some((flag, _)) if self.r1cs.is_none() => Err(Error::InvalidInput(format!(
                "{flag} belongs to a circom proof (--r1cs FILE); a built-in circuit's proof \
                 goes to --out and its public inputs to --public-out"
            ))),
            _ => Ok(()),
        }
    }

    /// The proof's path, or snarkjs's default.
    fn proof_path(&self) -> PathBuf {
        self.proof.clone().unwrap_or_else(|| "proof.json".into())
    }

    /// The public signals' path, or snarkjs's default.
    fn public_path(&self) -> PathBuf {
        self.public.clone().unwrap_or_else(|| "public.json".into())
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
/// As [`generate_witness`]; I/O errors writing `out`.
pub fn witness(a: &WitnessArgs) -> Result<(), Error> {
    check_outputs(
        &[("--wasm", &a.wasm), ("--input", &a.input)],
        &[("--out", &a.out)],
    )?;
    check_input(&a.wasm)?;
    check_input(&a.input)?;
    check_writable(&a.out)?;
    let w = generate_witness(&a.wasm, &a.input, a.wasm_fuel, None, &CliProgress::new())?;
    write_atomically(&a.out, &zkpipe_circom::wtns_to_bytes(&w))
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

/// Writes `text` to `path`, or stdout for `-`.
fn write_out(path: &Path, text: &str) -> Result<(), Error> {
    if path.as_os_str() == "-" {
        println!("{text}");
        return Ok(());
    }
    write_atomically(path, text.as_bytes())
}

fn name(p: &Path) -> String {
    p.display().to_string()
}

/// `zkpipe prove --r1cs … --wtns … (--zkey … | --params DIR)`: proves on the
/// chosen backend, checks the proof, writes snarkjs JSON.
///
/// # Errors
/// [`Error::InvalidInput`]/[`Error::InvalidEncoding`] (exit 2) for files
/// that are malformed or disagree; backend errors (exit 1).
pub fn prove(args: &PluginArgs, p: &ProveArgs) -> Result<(), Error> {
    let c = &p.circom;
    let (proof_path, public_path) = (c.proof_path(), c.public_path());
    let r1cs_path = c.r1cs.as_ref().expect("dispatched on --r1cs");
    if c.wtns.is_none() && c.wasm.is_none() {
        return Err(Error::InvalidInput(
            "--r1cs needs a witness: --wtns FILE, or --wasm FILE --input FILE".into(),
        ));
    }
    if proof_path.as_os_str() == "-" && public_path.as_os_str() == "-" {
        return Err(Error::InvalidInput(
            "--proof - and --public - would both write to stdout: give one a file".into(),
        ));
    }
    let inputs: Vec<(&str, &Path)> = [
        ("--r1cs", c.r1cs.as_deref()),
        ("--wtns", c.wtns.as_deref()),
        ("--wasm", c.wasm.as_deref()),
        ("--input", c.input.as_deref()),
        ("--zkey", c.zkey.as_deref()),
        ("--params", p.params.as_deref()),
    ]
    .into_iter()
    .filter_map(|(flag, path)| Some((flag, path?)))
    .collect();
    check_outputs(
        &inputs,
        &[("--proof", &proof_path), ("--public", &public_path)],
    )?;
    for &(flag, path) in &inputs {
        if flag != "--params" {
            check_input(path)?;
        }
    }
    for out in [&proof_path, &public_path] {
        if out.as_os_str() != "-" {
            check_writable(out)?;
        }
    }
    let witness = match (&c.wtns, &c.wasm, &c.input) {
        (Some(w), _, _) => WitnessSource::Wtns(w.clone()),
        (None, Some(wasm), Some(input)) => WitnessSource::Generator {
            wasm: wasm.clone(),
            input: input.clone(),
            fuel: c.wasm_fuel,
        },
        _ => unreachable!("checked above and by clap"),
    };
    let keys = match (&c.zkey, &p.params) {
        (Some(zkey), _) => CircomKeys::Zkey(zkey.clone()),
        (None, Some(dir)) => CircomKeys::Folder(dir.clone()),
        (None, None) => {
            return Err(Error::InvalidInput(
                "--r1cs needs keys: --zkey FILE (snarkjs) or --params DIR (`zkpipe setup --r1cs`)"
                    .into(),
            ));
        }
    };
    let session = args.session(&p.backend, p.device)?;
    let proved = session.prove_circom(&CircomProveRequest {
        r1cs: r1cs_path.clone(),
        witness,
        keys,
        seed: p.seed,
        label: name(&proof_path),
    })?;
    eprintln!(
        "proved in {:.1} ms ({})",
        proved.times.total().as_secs_f64() * 1e3,
        proved.times.summary()
    );
    let proof_json =
        serde_json::to_string_pretty(&json::proof_to_json(&proved.proof)).expect("json");
    let public_json =
        serde_json::to_string_pretty(&json::public_to_json(&proved.public)).expect("json");
    write_out(&proof_path, &proof_json)?;
    write_out(&public_path, &public_json)?;
    eprintln!(
        "proof (valid) → {}, public signals → {}",
        name(&proof_path),
        name(&public_path)
    );
    Ok(())
}

/// `zkpipe setup --r1cs c.r1cs (--out DIR | --zkey FILE)`: insecure test
/// keys from `seed`.
///
/// # Errors
/// As [`CircomR1cs::load`]; I/O errors writing `dir` or `zkey`.
pub fn setup(
    r1cs_path: &Path,
    dir: Option<&Path>,
    zkey: Option<&Path>,
    seed: u64,
) -> Result<(), Error> {
    let dir_files = dir.map(|d| ["params.bin", "vk.bin", "vk.json"].map(|f| d.join(f)));
    let mut outputs: Vec<(&str, &Path)> = zkey.map(|z| ("--zkey", z)).into_iter().collect();
    if let Some(files) = &dir_files {
        outputs.extend(files.iter().map(|f| ("--out", f.as_path())));
    }
    check_outputs(&[("--r1cs", r1cs_path)], &outputs)?;
    if let Some(z) = zkey {
        check_writable(z)?;
    }
    if let Some(d) = dir {
        zkpipe_core::util::fsutil::check_writable_dir(d)?;
    }
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
    let inputs: Vec<(&str, &Path)> = [("--vk", a.vk.as_deref()), ("--zkey", a.zkey.as_deref())]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path?)))
        .collect();
    check_outputs(&inputs, &[("--out", &a.out)])?;
    let vk = zkpipe_session::circom::verifying_key(a.vk.as_deref(), a.zkey.as_deref())?;
    if a.out.as_os_str() != "-" {
        check_writable(&a.out)?;
    }
    write_out(
        &a.out,
        &serde_json::to_string_pretty(&json::vk_to_json(&vk)).expect("json"),
    )
}

pub use zkpipe_session::circom::is_json;

/// `zkpipe verify` of snarkjs JSON: verification key, proof and public signals.
///
/// # Errors
/// As [`zkpipe_session::circom::verify_json`]; an invalid proof is `Ok(false)`.
pub fn verify(v: &VerifyArgs) -> Result<bool, Error> {
    zkpipe_session::circom::verify_json(&v.vk, &v.proof, &v.public)
}
