//! circom circuits and snarkjs files: the constraint system admitted
//! against memory, the witness from a .wtns or circom's generator, keys
//! from a zkey or zkpipe's folder, proofs self-checked, insecure test keys,
//! and snarkjs JSON verified.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use zkpipe_circom::binfile::BinFile;
use zkpipe_circom::r1cs::r1cs_curve;
use zkpipe_circom::{CircomR1cs, json, json_bn254, prove_bn254};
use zkpipe_core::groth16::{
    self, HQuery, Parameters, PreparedVerifyingKey, Proof, StageTimes, VerifyingKey,
};
use zkpipe_core::util::fsutil::{
    check_input, check_outputs, check_writable, check_writable_dir, read_capped, write_atomically,
};
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Curve, Error, Fr, ScalarField, bn254};

use crate::prove::self_check;
use crate::{Blinding, ProverOptions, Session};

/// The largest witness generator read.
const MAX_WASM_BYTES: u64 = 1 << 30;
/// The largest JSON file read: far above any real key's or proof's.
const MAX_JSON_BYTES: u64 = 256 << 20;

/// Where a circom proof's witness comes from.
#[derive(Debug, Clone)]
pub enum WitnessSource {
    /// A .wtns file (`snarkjs wtns calculate`).
    Wtns(PathBuf),
    /// circom's WebAssembly generator run on snarkjs's input.json, with at
    /// most `fuel` instructions (`None`: the generator's default bound).
    Generator {
        wasm: PathBuf,
        input: PathBuf,
        fuel: Option<u64>,
    },
}

impl WitnessSource {
    /// The source the command-line flags name: `--wtns`, else `--wasm`
    /// with `--input`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when they name none.
    pub fn from_flags(
        wtns: Option<&Path>,
        wasm: Option<&Path>,
        input: Option<&Path>,
        fuel: Option<u64>,
    ) -> Result<Self, Error> {
        match (wtns, wasm, input) {
            (Some(w), _, _) => Ok(WitnessSource::Wtns(w.to_path_buf())),
            (None, Some(wasm), Some(input)) => Ok(WitnessSource::Generator {
                wasm: wasm.to_path_buf(),
                input: input.to_path_buf(),
                fuel,
            }),
            _ => Err(Error::InvalidInput(
                "a circom proof needs a witness: --wtns FILE, or --wasm FILE --input FILE".into(),
            )),
        }
    }
}

/// Where a circom proof's keys come from.
#[derive(Debug, Clone)]
pub enum CircomKeys {
    /// snarkjs's Groth16 zkey.
    Zkey(PathBuf),
    /// A folder with zkpipe's `params.bin` (`zkpipe setup --r1cs`).
    Folder(PathBuf),
}

impl CircomKeys {
    /// The keys the command-line flags name: `--zkey`, else `--params`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when they name none.
    pub fn from_flags(zkey: Option<&Path>, params: Option<&Path>) -> Result<Self, Error> {
        match (zkey, params) {
            (Some(z), _) => Ok(CircomKeys::Zkey(z.to_path_buf())),
            (None, Some(dir)) => Ok(CircomKeys::Folder(dir.to_path_buf())),
            (None, None) => Err(Error::InvalidInput(
                "--r1cs needs keys: --zkey FILE (snarkjs) or --params DIR (`zkpipe setup --r1cs`)"
                    .into(),
            )),
        }
    }
}

/// A proof of a circom circuit.
#[derive(Debug, Clone)]
pub struct CircomProveRequest {
    /// circom's constraint system (compiled with `--prime bls12381`).
    /// `None`: the circuit's A and B come from the zkey, as snarkjs and
    /// rapidsnark prove (the witness is then not checked row by row).
    pub r1cs: Option<PathBuf>,
    pub witness: WitnessSource,
    pub keys: CircomKeys,
    /// Seed of the blinding (r, s); `None`: random, as a real proof needs.
    pub seed: Option<u64>,
    /// The name the self-check gives the proof in errors (its output).
    pub label: String,
}

/// A checked circom proof.
#[derive(Debug)]
pub struct CircomProof {
    pub proof: Proof,
    /// The public signals, in circom's order.
    pub public: Vec<Fr>,
    pub times: StageTimes,
}

/// A circom proof on either curve, as snarkjs JSON.
#[derive(Debug)]
pub struct CircomJsonProof {
    /// snarkjs's proof.json.
    pub proof: serde_json::Value,
    /// snarkjs's public.json.
    pub public: serde_json::Value,
    /// Seconds the proof took, and what they went to.
    pub seconds: f64,
    pub summary: String,
}

impl CircomProveRequest {
    /// The files and folders it reads, each with the flag that names it.
    pub fn inputs(&self) -> Vec<(&'static str, &Path)> {
        let mut inputs = match &self.witness {
            WitnessSource::Wtns(w) => vec![("--wtns", w.as_path())],
            WitnessSource::Generator { wasm, input, .. } => {
                vec![("--wasm", wasm.as_path()), ("--input", input.as_path())]
            }
        };
        inputs.push(match &self.keys {
            CircomKeys::Zkey(z) => ("--zkey", z.as_path()),
            CircomKeys::Folder(d) => ("--params", d.as_path()),
        });
        inputs.extend(self.r1cs.as_deref().map(|r| ("--r1cs", r)));
        inputs
    }
}

fn name(p: &Path) -> String {
    p.display().to_string()
}

/// Reads circom's constraint system, refused before it is read in full
/// when its keys and proof would not fit this machine's memory.
///
/// # Errors
/// As [`CircomR1cs::load_checked`]; [`Error::InvalidInput`] for a circuit
/// too big for this machine.
pub fn load_circuit(path: &Path) -> Result<CircomR1cs, Error> {
    CircomR1cs::load_checked(path, admit_circuit(path))
}

/// Refuses, before its constraints are read, a circuit this machine's
/// memory cannot prove.
fn admit_circuit(path: &Path) -> impl FnOnce(u64, u64) -> Result<(), Error> + '_ {
    move |constraints, wires| {
        let size = constraints.max(wires);
        zkpipe_core::util::machine::check_memory(
            &format!("{} ({size} constraints or wires)", name(path)),
            size.saturating_mul(zkpipe_core::util::machine::PROVE_BYTES_PER_CONSTRAINT),
        )
    }
}

/// Runs the generator `wasm` on `input`: the full witness. `wires`: the
/// constraint system's wire count, when known: a generator declaring
/// another is refused before it runs.
///
/// # Errors
/// Missing or malformed files, inputs the circuit refuses (exit 2).
pub fn generate_witness<F: ScalarField>(
    wasm: &Path,
    input: &Path,
    fuel: Option<u64>,
    wires: Option<usize>,
    progress: &dyn Progress,
) -> Result<Vec<F>, Error> {
    let code = read_capped(wasm, MAX_WASM_BYTES)?;
    let input_json = read_json(input)?;
    let t = Instant::now();
    let (w, used) = zkpipe_circom::witness_wasm::calculate_witness_expecting(
        &name(wasm),
        &code,
        &input_json,
        fuel,
        wires,
    )
    .map_err(|e| blame_input(e, input))?;
    progress.note(&format!(
        "witness: {} values in {:.2?} ({used} instructions)",
        w.len(),
        t.elapsed()
    ));
    Ok(w)
}

/// `snarkjs wtns calculate`: runs the generator `wasm` on `input` and
/// writes the witness to `out` as a .wtns (checked writable first).
///
/// # Errors
/// As [`generate_witness`]; [`Error::InvalidInput`] for an output that is
/// one of the inputs; I/O errors writing `out`.
pub fn write_witness(
    wasm: &Path,
    input: &Path,
    fuel: Option<u64>,
    out: &Path,
    progress: &dyn Progress,
) -> Result<(), Error> {
    check_outputs(&[("--wasm", wasm), ("--input", input)], &[("--out", out)])?;
    check_input(wasm)?;
    check_input(input)?;
    check_writable(out)?;
    let code = read_capped(wasm, MAX_WASM_BYTES)?;
    let input_json = read_json(input)?;
    let t = Instant::now();
    let (bytes, used, n, curve) =
        zkpipe_circom::witness_wasm::calculate_wtns(&name(wasm), &code, &input_json, fuel)
            .map_err(|e| blame_input(e, input))?;
    progress.note(&format!(
        "witness: {n} values over {curve}'s r in {:.2?} ({used} instructions)",
        t.elapsed()
    ));
    write_atomically(out, &bytes)
}

/// Names the input file in a generator's refusal (its signals are at fault).
fn blame_input(e: Error, input: &Path) -> Error {
    match e {
        Error::InvalidInput(m) | Error::InvalidEncoding(m) => {
            Error::InvalidInput(format!("{}: {m}", name(input)))
        }
        other => other,
    }
}

impl Session {
    /// The host's own BN254 arithmetic first (the key is read after), then
    /// the backend's; either missing is the request's fault: exit 2.
    fn bn254_here(&self, zkey: &Path) -> Result<(), Error> {
        zkpipe_core::bn254::cpu::check()?;
        self.backend()
            .expect_curve(Curve::Bn254)
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", name(zkey))))
    }

    /// A BN254 zkey and one witness of its circuit, read and checked for a
    /// batch: both files, the key's curve, the host's and the backend's
    /// BN254 arithmetic, the witness's length and leading one.
    ///
    /// # Errors
    /// [`Error::InvalidInput`]/[`Error::InvalidEncoding`] (exit 2) for
    /// files that are missing, malformed or of BLS12-381, a witness the key
    /// cannot take, and a backend or host without BN254.
    pub(crate) fn load_bn254_pair(
        &self,
        zkey: &Path,
        wtns: &Path,
    ) -> Result<(bn254::prover::ProvingKey, Vec<bn254::Fr>), Error> {
        check_input(zkey)?;
        check_input(wtns)?;
        let f = BinFile::load_sections(zkey, b"zkey", &[1], &[2])?;
        if zkpipe_circom::zkey_bn254::zkey_curve(&f)? != Curve::Bn254 {
            return Err(Error::InvalidInput(format!(
                "{}: a BLS12-381 zkey; batches of zkeys take BN254's (BLS12-381 batches prove \
                 built-in circuits: --circuit)",
                name(zkey)
            )));
        }
        self.bn254_here(zkey)?;
        let key = prove_bn254::load_zkey(zkey)?;
        let witness = prove_bn254::load_wtns(wtns)?;
        key.check_witness(&witness)
            .map_err(|e| Error::InvalidInput(format!("{} for {}: {e}", name(wtns), name(zkey))))?;
        Ok((key, witness))
    }

    /// [`Session::prove_circom`] on the zkey's curve (BLS12-381's pipeline,
    /// or BN254's prover for a BN254 zkey), as snarkjs JSON.
    ///
    /// # Errors
    /// As [`Session::prove_circom`]; for BN254, `--r1cs` or keys from
    /// `--params` (exit 2: BN254 proves from the zkey and witness alone).
    pub fn prove_circom_json(&self, req: &CircomProveRequest) -> Result<CircomJsonProof, Error> {
        match bn254_zkey(req)? {
            Some(zkey) => {
                self.bn254_here(zkey)?;
                let key = read_bn254_key(req, zkey)?;
                self.prove_bn254_key(req, zkey, key, None)
            }
            None => self.prove_circom_bls(req),
        }
    }

    /// Opens a session for `backend` and proves `req` as
    /// [`Session::prove_circom_json`] does, for a one-shot command: a
    /// BN254 zkey is read while the session opens on another thread (a
    /// GPU's driver and kernels load meanwhile).
    ///
    /// # Errors
    /// As [`Session::open`] first, then as [`Session::prove_circom_json`].
    pub fn open_and_prove_circom_json(
        backend: &crate::BackendRequest,
        progress: Arc<dyn Progress + Send>,
        req: &CircomProveRequest,
    ) -> Result<CircomJsonProof, Error> {
        std::thread::scope(|scope| {
            let opening = scope.spawn(|| Session::open(backend, progress));
            let zkey = bn254_zkey(req);
            // A `.wtns` is read beside the key, on a thread of its own.
            let witness = match (&zkey, &req.witness) {
                (Ok(Some(_)), WitnessSource::Wtns(w)) => Some(scope.spawn(|| read_bn254_wtns(w))),
                _ => None,
            };
            let key = zkey.and_then(|zkey| {
                zkey.map(|z| read_bn254_key(req, z).map(|key| (z, key)))
                    .transpose()
            });
            let panicked = |what: &str| Error::Failed(format!("{what} panicked"));
            let session = opening
                .join()
                .map_err(|_| panicked("opening the backend"))??;
            let witness = match witness {
                Some(w) => Some(w.join().map_err(|_| panicked("reading the witness"))?),
                None => None,
            };
            match key? {
                Some((zkey, key)) => {
                    session.bn254_here(zkey)?;
                    session.prove_bn254_key(req, zkey, key, witness.transpose()?)
                }
                None => session.prove_circom_bls(req),
            }
        })
    }

    fn prove_circom_bls(&self, req: &CircomProveRequest) -> Result<CircomJsonProof, Error> {
        let p = self.prove_circom(req)?;
        Ok(CircomJsonProof {
            proof: json::proof_to_json(&p.proof),
            public: json::public_to_json(&p.public),
            seconds: p.times.total().as_secs_f64(),
            summary: p.times.summary(),
        })
    }

    /// Proves `req` with a BN254 key read by [`read_bn254_key`]: the
    /// witness read or generated (and checked row by row against the
    /// circuit where `--r1cs` gave one), the proof verified.
    /// `read_beside`: the `.wtns`, already read while the key was.
    fn prove_bn254_key(
        &self,
        req: &CircomProveRequest,
        zkey: &Path,
        read: Bn254Key,
        read_beside: Option<ReadWitness>,
    ) -> Result<CircomJsonProof, Error> {
        let Bn254Key {
            key,
            circuit,
            read_in,
        } = read;
        let t = Instant::now();
        let (witness, beside) = match (read_beside, &req.witness) {
            (Some(ReadWitness { values, read_in }), _) => (values, Some(read_in)),
            (None, WitnessSource::Wtns(w)) => (read_bn254_wtns(w)?.values, None),
            // The zkey's variable count refuses another circuit's
            // generator before it runs.
            (None, WitnessSource::Generator { wasm, input, fuel }) => (
                generate_witness(wasm, input, *fuel, Some(key.num_vars), self.progress())?,
                None,
            ),
        };
        if let Some(c) = &circuit {
            let r1cs = req.r1cs.as_deref().unwrap_or(zkey);
            let source = match &req.witness {
                WitnessSource::Wtns(w) => w,
                WitnessSource::Generator { wasm, .. } => wasm,
            };
            let unsatisfied = c.r1cs.first_failing_row(&witness).map_err(|e| {
                Error::InvalidInput(format!("{} and {}: {e}", name(source), name(r1cs)))
            })?;
            if let Some(row) = unsatisfied {
                return Err(Error::InvalidInput(format!(
                    "{} does not satisfy {}: constraint {row} fails (a witness of another circuit or input?)",
                    name(source),
                    name(r1cs)
                )));
            }
        }
        let mut rng = match req.seed {
            Some(s) => zkpipe_core::util::sample::rng(s),
            None => zkpipe_core::util::random::os_rng()?,
        };
        let witnessed = t.elapsed();
        let started = Instant::now();
        let (r, s) = (bn254::Fr::random(&mut rng), bn254::Fr::random(&mut rng));
        let (proof, public) = bn254::prover::prove(self.backend(), &key, &witness, r, s)?;
        let proved = started.elapsed();
        Ok(CircomJsonProof {
            proof: json_bn254::proof_to_json(&proof),
            public: json_bn254::public_to_json(&public),
            seconds: (read_in + t.elapsed()).as_secs_f64(),
            summary: format!(
                "BN254: backend opened {:.1} ms, zkey read {:.1} ms, witness {}, \
                 witness to verified proof {:.1} ms",
                self.opened_in().as_secs_f64() * 1e3,
                read_in.as_secs_f64() * 1e3,
                match beside {
                    Some(b) => format!("read beside the key in {:.1} ms", b.as_secs_f64() * 1e3),
                    None => format!("{:.1} ms", witnessed.as_secs_f64() * 1e3),
                },
                proved.as_secs_f64() * 1e3
            ),
        })
    }

    /// Proves `req` on this session's backend and checks the proof against
    /// the key's verifying key before returning it.
    ///
    /// # Errors
    /// [`Error::InvalidInput`]/[`Error::InvalidEncoding`] (exit 2) for
    /// files that are malformed or disagree (a witness that does not
    /// satisfy the circuit among them); the backend's errors (exit 1).
    pub fn prove_circom(&self, req: &CircomProveRequest) -> Result<CircomProof, Error> {
        for (flag, path) in req.inputs() {
            if flag != "--params" {
                check_input(path)?;
            }
        }
        let t = Instant::now();
        let (mut circuit, params) = match (&req.r1cs, &req.keys) {
            (None, CircomKeys::Zkey(zkey)) => {
                self.progress().note(&format!(
                    "{}: circuit read from the key, without an r1cs: the witness is not checked \
                     constraint by constraint (the proof's self-check still runs)",
                    name(zkey)
                ));
                zkpipe_circom::load_zkey_alone(zkey)?
            }
            (None, CircomKeys::Folder(dir)) => {
                return Err(Error::InvalidInput(format!(
                    "{}: zkpipe's key folder needs the circuit's r1cs too (or a zkey alone)",
                    dir.display()
                )));
            }
            (Some(r1cs), CircomKeys::Zkey(zkey)) => {
                let circuit = load_circuit(r1cs)?;
                let params = zkpipe_circom::load_zkey(zkey, &circuit, &name(r1cs))?;
                (circuit, params)
            }
            (Some(r1cs), CircomKeys::Folder(dir)) => {
                let circuit = load_circuit(r1cs)?;
                let file = dir.join("params.bin");
                let params = Parameters::load(&file, false)?;
                params
                    .check_shape(&circuit.r1cs)
                    .map_err(|e| Error::InvalidInput(format!("{}: {e}", file.display())))?;
                (circuit, params)
            }
        };
        let circuit_name = match &req.r1cs {
            Some(r1cs) => name(r1cs),
            None => match &req.keys {
                CircomKeys::Zkey(z) | CircomKeys::Folder(z) => name(z),
            },
        };
        let (values, wtns_path) = match &req.witness {
            WitnessSource::Wtns(w) => (zkpipe_circom::load_wtns(w)?, w),
            WitnessSource::Generator { wasm, input, fuel } => (
                generate_witness(wasm, input, *fuel, Some(circuit.num_wires), self.progress())?,
                wasm,
            ),
        };
        let witness =
            zkpipe_circom::witness_for(values, &circuit, &name(wtns_path), &circuit_name)?;
        if req.r1cs.is_none() {
            zkpipe_circom::products_as_c(&mut circuit.r1cs, &witness)?;
        } else if let Some(row) = circuit.r1cs.first_unsatisfied(&witness)? {
            return Err(Error::InvalidInput(format!(
                "{} does not satisfy {circuit_name}: constraint {row} fails (a witness of another circuit or input?)",
                name(wtns_path),
            )));
        }
        self.progress().note(&format!(
            "read {} constraints, {} wires, {} public signals in {:.2?}",
            circuit.r1cs.num_constraints(),
            circuit.num_wires,
            circuit.num_public(),
            t.elapsed()
        ));
        let params = Arc::new(params);
        let prover = self.prover(
            params.clone(),
            Arc::new(circuit.r1cs.clone()),
            ProverOptions::default(),
        )?;
        let (r, s) = Blinding::from_seed(req.seed).get(0)?;
        let (proof, times) = prover.prove(&witness, r, s)?;
        let public = witness.public_inputs().to_vec();
        let pvk = PreparedVerifyingKey::new(&params.vk);
        if req.r1cs.is_none() && !groth16::verify(&pvk, &proof, &public)? {
            return Err(Error::InvalidInput(format!(
                "{}: the proof does not verify against {circuit_name}'s key, and without the r1cs \
                 the witness was not checked: a witness of another circuit or input? (--r1cs \
                 FILE names the failing constraint); nothing was written",
                name(wtns_path)
            )));
        }
        self_check(&prover, &pvk, &proof, &public, &req.label)?;
        Ok(CircomProof {
            proof,
            public,
            times,
        })
    }
}

/// Where insecure test keys go.
#[derive(Debug, Clone)]
pub enum SetupOutput {
    /// A snarkjs Groth16 zkey.
    Zkey(PathBuf),
    /// A folder: params.bin and vk.bin (zkpipe's), vk.json (snarkjs's).
    Folder(PathBuf),
}

/// Makes insecure test keys for circom's constraint system at `r1cs`
/// from `seed` (toxic waste known: never for real proofs) and writes them.
///
/// # Errors
/// As [`load_circuit`]; I/O errors writing the output.
pub fn setup(
    r1cs: &Path,
    out: &SetupOutput,
    seed: u64,
    progress: &dyn Progress,
) -> Result<(), Error> {
    let files: Vec<(&str, PathBuf)> = match out {
        SetupOutput::Zkey(z) => vec![("--zkey", z.clone())],
        SetupOutput::Folder(d) => ["params.bin", "vk.bin", "vk.json"]
            .map(|f| ("--out", d.join(f)))
            .to_vec(),
    };
    let files: Vec<(&str, &Path)> = files.iter().map(|(f, p)| (*f, p.as_path())).collect();
    check_outputs(&[("--r1cs", r1cs)], &files)?;
    let file = BinFile::load(r1cs, b"r1cs", &[1])?;
    let curve = r1cs_curve(&file)?;
    match out {
        SetupOutput::Zkey(z) => check_writable(z)?,
        SetupOutput::Folder(_) if curve == Curve::Bn254 => {
            return Err(Error::InvalidInput(format!(
                "{} is a BN254 circuit: its test keys are written as a snarkjs zkey (--zkey FILE); \
                 --out writes zkpipe's BLS12-381 keys",
                name(r1cs)
            )));
        }
        SetupOutput::Folder(d) => check_writable_dir(d)?,
    }
    if let (Curve::Bn254, SetupOutput::Zkey(z)) = (curve, out) {
        let circuit = CircomR1cs::<bn254::Fr>::read(&file, admit_circuit(r1cs))?;
        drop(file);
        let key = bn254::setup::setup(&circuit.r1cs, seed, progress);
        return zkpipe_circom::write_zkey_bn254(z, &key, &circuit);
    }
    let circuit = CircomR1cs::read(&file, admit_circuit(r1cs))?;
    drop(file);
    let h_query = match out {
        SetupOutput::Zkey(_) => HQuery::OddCoset,
        SetupOutput::Folder(_) => HQuery::TauPowers,
    };
    let params = groth16::setup_for(&circuit.r1cs, seed, h_query, progress);
    match out {
        SetupOutput::Zkey(z) => zkpipe_circom::write_zkey(z, &params, &circuit),
        SetupOutput::Folder(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            params.save(&dir.join("params.bin"))?;
            params.vk.save(&dir.join("vk.bin"))?;
            let vk_json =
                serde_json::to_string_pretty(&json::vk_to_json(&params.vk)).expect("json");
            write_atomically(&dir.join("vk.json"), vk_json.as_bytes())
        }
    }
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

fn read_json(path: &Path) -> Result<serde_json::Value, Error> {
    let text = read_capped(path, MAX_JSON_BYTES)?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::InvalidEncoding(format!("{}: {e}", name(path))))
}

/// Verifies snarkjs JSON: a verification key, a proof and public signals.
///
/// # Errors
/// Malformed or mismatched files ([`Error::InvalidEncoding`],
/// [`Error::InvalidInput`]: exit 2); an invalid proof is `Ok(false)`.
pub fn verify_json(vk: &Path, proof: &Path, public: &Path) -> Result<bool, Error> {
    let (vk_json, proof_json) = (read_json(vk)?, read_json(proof)?);
    let curve = json::curve_of(&vk_json, &name(vk))?;
    // A proof that names no curve (rapidsnark's) is read as the key's.
    if let Some(c) = json::declared_curve(&proof_json, &name(proof))? {
        curve.expect(c, &name(proof))?;
    }
    let public_json = read_json(public)?;
    let count = |ic: usize, signals: usize| {
        if signals + 1 == ic {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "{} takes {} public signals, {} has {signals}",
            name(vk),
            ic.saturating_sub(1),
            name(public),
        )))
    };
    match curve {
        Curve::Bls12_381 => {
            let key = json::vk_from_json(&vk_json, &name(vk))?;
            let p = json::proof_from_json(&proof_json, &name(proof))?;
            let signals = json::public_from_json(&public_json, &name(public))?;
            count(key.ic.len(), signals.len())?;
            groth16::verify(&key.prepare(), &p, &signals)
        }
        Curve::Bn254 => {
            let key = json_bn254::vk_from_json(&vk_json, &name(vk))?;
            let p = json_bn254::proof_from_json(&proof_json, &name(proof))?;
            let signals = json_bn254::public_from_json(&public_json, &name(public))?;
            count(key.ic.len(), signals.len())?;
            zkpipe_core::bn254::groth16::verify(&key, &p, &signals)
        }
    }
}

/// A Solidity verifier for a BN254 snarkjs verification key and, given a
/// proof and its public signals, their calldata for it (`verifyProof`'s
/// arguments); the proof is verified first, so no calldata is written for
/// a proof that would fail on chain.
///
/// # Errors
/// [`Error::WrongCurve`] for a key or proof that is not BN254 (Ethereum's
/// precompiles are BN254's); as [`verify_json`] for malformed files; an
/// [`Error::InvalidInput`] for a proof that does not verify (all exit 2).
pub fn solidity_verifier(
    vk: &Path,
    proof: Option<(&Path, &Path)>,
) -> Result<(String, Option<String>), Error> {
    let vk_json = read_json(vk)?;
    Curve::Bn254.expect(json::curve_of(&vk_json, &name(vk))?, &name(vk))?;
    let key = json_bn254::vk_from_json(&vk_json, &name(vk))?;
    let contract = zkpipe_circom::solidity::verifier_contract(&key);
    let Some((proof, public)) = proof else {
        return Ok((contract, None));
    };
    if !verify_json(vk, proof, public)? {
        return Err(Error::InvalidInput(format!(
            "{} does not verify under {} with {}: no calldata written",
            name(proof),
            name(vk),
            name(public)
        )));
    }
    let p = json_bn254::proof_from_json(&read_json(proof)?, &name(proof))?;
    let signals = json_bn254::public_from_json(&read_json(public)?, &name(public))?;
    let calldata = zkpipe_circom::solidity::calldata_text(&p, &signals);
    Ok((contract, Some(calldata)))
}

/// A verifying key as snarkjs's `verification_key.json`: from zkpipe's
/// vk.bin, or a snarkjs zkey on either curve.
///
/// # Errors
/// As [`verifying_key`]; for a BN254 zkey, as
/// [`zkpipe_circom::zkey_bn254::zkey_vk`].
pub fn verifying_key_json(
    vk_bin: Option<&Path>,
    zkey: Option<&Path>,
) -> Result<serde_json::Value, Error> {
    if let (None, Some(path)) = (vk_bin, zkey) {
        // Protocol, header and IC: all a BN254 verifying key needs.
        let f = BinFile::load_sections(path, b"zkey", &[1], &[1, 2, 3])?;
        if zkpipe_circom::zkey_bn254::zkey_curve(&f)? == Curve::Bn254 {
            let (header, vk) = zkpipe_circom::zkey_bn254::zkey_vk(&f)?;
            return Ok(json_bn254::vk_to_json(&vk, header.num_public));
        }
    }
    Ok(json::vk_to_json(&verifying_key(vk_bin, zkey)?))
}

/// A verifying key from zkpipe's vk.bin or from a snarkjs zkey.
///
/// # Errors
/// As [`VerifyingKey::load`] or [`zkpipe_circom::load_zkey_vk`].
pub fn verifying_key(vk_bin: Option<&Path>, zkey: Option<&Path>) -> Result<VerifyingKey, Error> {
    match (vk_bin, zkey) {
        (Some(vk), _) => VerifyingKey::load(vk),
        (None, Some(zkey)) => Ok(zkpipe_circom::load_zkey_vk(zkey)?.1),
        (None, None) => Err(Error::InvalidInput("give --vk or --zkey".into())),
    }
}

/// The zkey of `req` when it is a BN254 one (its header read), after every
/// input was checked to be a regular file (a device or a fifo among them
/// is refused at once, whichever it is).
///
/// # Errors
/// As [`check_input`] and [`BinFile::load_sections`].
fn bn254_zkey(req: &CircomProveRequest) -> Result<Option<&Path>, Error> {
    for (flag, path) in req.inputs() {
        if flag != "--params" {
            check_input(path)?;
        }
    }
    let CircomKeys::Zkey(zkey) = &req.keys else {
        return Ok(None);
    };
    // The header alone: the prover reads the whole file next.
    let f = BinFile::load_sections(zkey, b"zkey", &[1], &[2])?;
    let bn254 = zkpipe_circom::zkey_bn254::zkey_curve(&f)? == Curve::Bn254;
    Ok(bn254.then_some(zkey.as_path()))
}

/// A BN254 `.wtns` read, and how long reading it took.
struct ReadWitness {
    values: Vec<bn254::Fr>,
    read_in: std::time::Duration,
}

/// Reads the `.wtns` at `path` as BN254 values.
///
/// # Errors
/// As [`prove_bn254::load_wtns`].
fn read_bn254_wtns(path: &Path) -> Result<ReadWitness, Error> {
    let t = Instant::now();
    check_input(path)?;
    Ok(ReadWitness {
        values: prove_bn254::load_wtns(path)?,
        read_in: t.elapsed(),
    })
}

/// A BN254 key read for one proof: the zkey, the circuit `--r1cs` named
/// (checked against the key), and how long reading them took.
struct Bn254Key {
    key: bn254::prover::ProvingKey,
    circuit: Option<CircomR1cs<bn254::Fr>>,
    read_in: std::time::Duration,
}

/// Reads `zkey` (a BN254 one) and `req`'s r1cs where it names one.
///
/// # Errors
/// A host without BN254's arithmetic; the readers' errors;
/// [`Error::InvalidInput`] for an r1cs the key is not for.
fn read_bn254_key(req: &CircomProveRequest, zkey: &Path) -> Result<Bn254Key, Error> {
    zkpipe_core::bn254::cpu::check()?;
    let t = Instant::now();
    let key = prove_bn254::load_zkey(zkey)?;
    let circuit = match &req.r1cs {
        Some(r1cs) => {
            let file = BinFile::load(r1cs, b"r1cs", &[1])?;
            let c = CircomR1cs::<bn254::Fr>::read(&file, admit_circuit(r1cs))?;
            prove_bn254::check_circuit(&key, &c, &name(zkey), &name(r1cs))?;
            Some(c)
        }
        None => None,
    };
    Ok(Bn254Key {
        key,
        circuit,
        read_in: t.elapsed(),
    })
}
