//! circom circuits and snarkjs files: `prove --r1cs --wtns --zkey`,
//! `setup --r1cs`, `verify` of snarkjs JSON, `export-vk`.

use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_circom::{CircomR1cs, json};
use zkpipe_core::fsutil::{check_input, check_outputs, check_writable, write_atomically};
use zkpipe_core::groth16::{self, HQuery, Parameters, PreparedVerifyingKey, VerifyingKey};
use zkpipe_core::{Error, Fr};
use zkpipe_session::prove::self_check;
use zkpipe_session::{Blinding, ProverOptions};

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
    /// Where the proof goes, as snarkjs JSON (`-`: stdout).
    #[arg(
        long,
        value_name = "FILE",
        requires = "r1cs",
        default_value = "proof.json"
    )]
    pub proof: PathBuf,
    /// Where the public signals go, as snarkjs JSON (`-`: stdout).
    #[arg(
        long,
        value_name = "FILE",
        requires = "r1cs",
        default_value = "public.json"
    )]
    pub public: PathBuf,
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

/// The largest witness generator read.
const MAX_WASM_BYTES: u64 = 1 << 30;

/// Runs `wasm` on `input`: the full witness.
///
/// # Errors
/// Missing or malformed files, inputs the circuit refuses (exit 2).
/// `wires`: the constraint system's wire count, when known: a generator
/// declaring another is refused before it runs.
fn run_generator(
    wasm: &Path,
    input: &Path,
    fuel: Option<u64>,
    wires: Option<usize>,
) -> Result<Vec<Fr>, Error> {
    let code = zkpipe_core::fsutil::read_capped(wasm, MAX_WASM_BYTES)?;
    let input_json = read_json(input)?;
    let t = Instant::now();
    let (w, used) = zkpipe_circom::witness_wasm::calculate_witness_expecting(
        &name(wasm),
        &code,
        &input_json,
        fuel,
        wires,
    )
    .map_err(|e| match e {
        Error::InvalidInput(m) | Error::InvalidEncoding(m) => {
            Error::InvalidInput(format!("{}: {m}", name(input)))
        }
        other => other,
    })?;
    eprintln!(
        "witness: {} values in {:.2?} ({used} instructions)",
        w.len(),
        t.elapsed()
    );
    Ok(w)
}

/// `zkpipe witness --wasm --input --out`.
///
/// # Errors
/// As [`run_generator`]; I/O errors writing `out`.
pub fn witness(a: &WitnessArgs) -> Result<(), Error> {
    check_outputs(
        &[("--wasm", &a.wasm), ("--input", &a.input)],
        &[("--out", &a.out)],
    )?;
    check_input(&a.wasm)?;
    check_input(&a.input)?;
    check_writable(&a.out)?;
    let w = run_generator(&a.wasm, &a.input, a.wasm_fuel, None)?;
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
    let r1cs_path = c.r1cs.as_ref().expect("dispatched on --r1cs");
    if c.wtns.is_none() && c.wasm.is_none() {
        return Err(Error::InvalidInput(
            "--r1cs needs a witness: --wtns FILE, or --wasm FILE --input FILE".into(),
        ));
    }
    if c.proof.as_os_str() == "-" && c.public.as_os_str() == "-" {
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
    check_outputs(&inputs, &[("--proof", &c.proof), ("--public", &c.public)])?;
    for &(flag, path) in &inputs {
        if flag != "--params" {
            check_input(path)?;
        }
    }
    for out in [&c.proof, &c.public] {
        if out.as_os_str() != "-" {
            check_writable(out)?;
        }
    }
    let t = Instant::now();
    let circuit = CircomR1cs::load_checked(r1cs_path, |constraints, wires| {
        check_fits(constraints, wires, r1cs_path)
    })?;
    let (values, wtns_path) = match (&c.wtns, &c.wasm, &c.input) {
        (Some(w), _, _) => (zkpipe_circom::load_wtns(w)?, w),
        (None, Some(wasm), Some(input)) => (
            run_generator(wasm, input, c.wasm_fuel, Some(circuit.num_wires))?,
            wasm,
        ),
        _ => unreachable!("checked above and by clap"),
    };
    let witness = zkpipe_circom::witness_for(values, &circuit, &name(wtns_path), &name(r1cs_path))?;
    if let Some(row) = circuit.r1cs.first_unsatisfied(&witness)? {
        return Err(Error::InvalidInput(format!(
            "{} does not satisfy {}: constraint {row} fails (a witness of another circuit or input?)",
            name(wtns_path),
            name(r1cs_path)
        )));
    }
    let params = match (&c.zkey, &p.params) {
        (Some(zkey), _) => zkpipe_circom::load_zkey(zkey, &circuit, &name(r1cs_path))?,
        (None, Some(dir)) => {
            let params = Parameters::load(&dir.join("params.bin"), false)?;
            params.check_shape(&circuit.r1cs).map_err(|e| {
                Error::InvalidInput(format!("{}: {e}", dir.join("params.bin").display()))
            })?;
            params
        }
        (None, None) => {
            return Err(Error::InvalidInput(
                "--r1cs needs keys: --zkey FILE (snarkjs) or --params DIR (`zkpipe setup --r1cs`)"
                    .into(),
            ));
        }
    };
    eprintln!(
        "read {} constraints, {} wires, {} public signals in {:.2?}",
        circuit.r1cs.num_constraints(),
        circuit.num_wires,
        circuit.num_public(),
        t.elapsed()
    );
    let params = Arc::new(params);
    let session = args.session(&p.backend, p.device)?;
    let prover = session.prover(
        params.clone(),
        Arc::new(circuit.r1cs.clone()),
        ProverOptions::default(),
    )?;
    let (r, s) = Blinding::from_seed(p.seed).get(0)?;
    let (proof, times) = prover.prove(&witness, r, s)?;
    let summary: Vec<String> = times
        .stages
        .iter()
        .map(|(st, d)| format!("{}={:.1}ms", st.name(), d.as_secs_f64() * 1e3))
        .collect();
    eprintln!(
        "proved in {:.1} ms ({})",
        times.total().as_secs_f64() * 1e3,
        summary.join(" ")
    );
    let public = witness.public_inputs();
    let pvk = PreparedVerifyingKey::new(&params.vk);
    self_check(&prover, &pvk, &proof, public, &name(&c.proof))?;
    let proof_json = serde_json::to_string_pretty(&json::proof_to_json(&proof)).expect("json");
    let public_json = serde_json::to_string_pretty(&json::public_to_json(public)).expect("json");
    write_out(&c.proof, &proof_json)?;
    write_out(&c.public, &public_json)?;
    eprintln!(
        "proof (valid) → {}, public signals → {}",
        name(&c.proof),
        name(&c.public)
    );
    Ok(())
}

/// Refuses a circuit whose keys and proof would not fit this machine's
/// memory, from the counts its header declares.
fn check_fits(constraints: u64, wires: u64, path: &Path) -> Result<(), Error> {
    let size = constraints.max(wires);
    zkpipe_core::machine::check_memory(
        &format!("{} ({size} constraints or wires)", name(path)),
        size.saturating_mul(zkpipe_core::machine::PROVE_BYTES_PER_CONSTRAINT),
    )
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
        zkpipe_core::fsutil::check_writable_dir(d)?;
    }
    let circuit = CircomR1cs::load_checked(r1cs_path, |constraints, wires| {
        check_fits(constraints, wires, r1cs_path)
    })?;
    let t = Instant::now();
    let h_query = if zkey.is_some() {
        HQuery::OddCoset
    } else {
        HQuery::TauPowers
    };
    let params = groth16::setup_for(
        &circuit.r1cs,
        seed,
        h_query,
        &crate::progress::CliProgress::new(),
    );
    let (dest, what) = match (zkey, dir) {
        (Some(z), _) => {
            zkpipe_circom::write_zkey(z, &params, &circuit)?;
            (z, "a snarkjs zkey")
        }
        (None, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            params.save(&dir.join("params.bin"))?;
            params.vk.save(&dir.join("vk.bin"))?;
            let vk_json =
                serde_json::to_string_pretty(&json::vk_to_json(&params.vk)).expect("json");
            write_atomically(&dir.join("vk.json"), vk_json.as_bytes())?;
            (dir, "params.bin, vk.bin, vk.json")
        }
        (None, None) => {
            return Err(Error::InvalidInput(
                "setup --r1cs needs --out DIR or --zkey FILE".into(),
            ));
        }
    };
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
/// As [`VerifyingKey::load`] or [`zkpipe_circom::load_zkey_vk`].
pub fn export_vk(a: &ExportVkArgs) -> Result<(), Error> {
    let inputs: Vec<(&str, &Path)> = [("--vk", a.vk.as_deref()), ("--zkey", a.zkey.as_deref())]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path?)))
        .collect();
    check_outputs(&inputs, &[("--out", &a.out)])?;
    let vk = match (&a.vk, &a.zkey) {
        (Some(vk), _) => VerifyingKey::load(vk)?,
        (None, Some(zkey)) => zkpipe_circom::load_zkey_vk(zkey)?.1,
        (None, None) => unreachable!("clap requires --vk or --zkey"),
    };
    if a.out.as_os_str() != "-" {
        check_writable(&a.out)?;
    }
    write_out(
        &a.out,
        &serde_json::to_string_pretty(&json::vk_to_json(&vk)).expect("json"),
    )
}

/// Whether `path` holds JSON (snarkjs's verification key) rather than
/// zkpipe's binary key: a `.json` name or a leading `{`.
pub fn is_json(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "json") {
        return true;
    }
    // Opening a fifo would wait for a writer: what is not a file is left
    // to the binary reader, which refuses it.
    if check_input(path).is_err() {
        return false;
    }
    let mut first = [0u8; 1];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut first))
        .is_ok_and(|()| first[0] == b'{')
}

/// The largest JSON file read: far above any real key's or proof's.
const MAX_JSON_BYTES: u64 = 256 << 20;

fn read_json(path: &Path) -> Result<serde_json::Value, Error> {
    let text = zkpipe_core::fsutil::read_capped(path, MAX_JSON_BYTES)?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::InvalidEncoding(format!("{}: {e}", name(path))))
}

/// `zkpipe verify` of snarkjs JSON: verification key, proof and public signals.
///
/// # Errors
/// Malformed or mismatched files ([`Error::InvalidEncoding`],
/// [`Error::InvalidInput`]: exit 2); an invalid proof is `Ok(false)`.
pub fn verify(v: &VerifyArgs) -> Result<bool, Error> {
    let vk = json::vk_from_json(&read_json(&v.vk)?, &name(&v.vk))?;
    let proof = json::proof_from_json(&read_json(&v.proof)?, &name(&v.proof))?;
    let public = json::public_from_json(&read_json(&v.public)?, &name(&v.public))?;
    if public.len() + 1 != vk.ic.len() {
        return Err(Error::InvalidInput(format!(
            "{} takes {} public signals, {} has {}",
            name(&v.vk),
            vk.ic.len().saturating_sub(1),
            name(&v.public),
            public.len()
        )));
    }
    groth16::verify(&vk.prepare(), &proof, &public)
}
