//! `zkpipe setup | prove | verify | crosscheck`: Groth16 over the built-in circuits.

use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkpipe_circuits::BenchCircuit;
use zkpipe_core::fsutil::write_atomically;
use zkpipe_core::groth16::{
    self, Parameters, PreparedVerifyingKey, Proof, Prover, Stage, StageTimes, VerifyingKey,
};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::{Backend, Error, Fr};

use crate::PluginArgs;

/// Which circuit, at which size.
#[derive(Args, Debug, Clone)]
pub struct CircuitArgs {
    /// Built-in circuit: sha256, poseidon-merkle, squaring-chain.
    #[arg(long, default_value = "poseidon-merkle")]
    pub circuit: String,
    /// Size: sha256 — blocks; poseidon-merkle — KxH (challenges x height);
    /// squaring-chain — squarings (2^k allowed). Default: a small demo size.
    #[arg(long)]
    pub size: Option<String>,
    /// Folder for recorded R1CS (default: $XDG_CACHE_HOME/zkpipe or ~/.cache/zkpipe).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CircuitArgs {
    pub fn size(&self) -> &str {
        self.size.as_deref().unwrap_or(match self.circuit.as_str() {
            "sha256" => "1",
            "squaring-chain" => "2^12",
            _ => "2x8",
        })
    }

    /// The circuit with the witness of `seed`.
    pub fn build(&self, seed: u64) -> Result<BenchCircuit, Error> {
        BenchCircuit::new(&self.circuit, self.size(), seed)
            .map_err(|e| Error::InvalidInput(e.to_string()))
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(default_cache_dir)
    }

    /// What identifies the circuit's shape (the R1CS cache key).
    fn shape_key(&self) -> String {
        format!(
            "{} {} zkpipe-circuits {}",
            self.circuit,
            self.size(),
            env!("CARGO_PKG_VERSION")
        )
    }

    /// The recorded R1CS, from the cache or recorded now (and cached).
    pub fn r1cs(&self) -> Result<R1cs, Error> {
        let dir = self.cache_dir().join("r1cs");
        let path = dir.join(format!(
            "{}-{}.r1cs",
            self.circuit,
            self.size().replace(['^', '/'], "_")
        ));
        match R1cs::load(&path, &self.shape_key()) {
            Ok(r) => return Ok(r),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let t = Instant::now();
        let (r1cs, _) = R1cs::record(self.build(0)?)?;
        eprintln!(
            "recorded {} {}: {} constraints, {} public inputs, {} private variables in {:.2?}",
            self.circuit,
            self.size(),
            r1cs.num_constraints(),
            r1cs.num_inputs - 1,
            r1cs.num_aux,
            t.elapsed()
        );
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        r1cs.save(&path, &self.shape_key())?;
        Ok(r1cs)
    }
}

pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("zkpipe")
}

/// What `setup` writes beside the keys, so `prove` can check it has the right ones.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
struct KeyInfo {
    circuit: String,
    size: String,
    /// Random points instead of a setup: timing only, proofs will not verify.
    synthetic: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs setup and writes `dir/params.bin`, `dir/vk.bin`, `dir/circuit.json`.
pub fn setup(c: &CircuitArgs, dir: &Path, seed: u64, synthetic: bool) -> Result<(), Error> {
    let r1cs = c.r1cs()?;
    let t = Instant::now();
    let params = if synthetic {
        groth16::synthetic_parameters(&r1cs, seed)
    } else {
        groth16::setup(&r1cs, seed)
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    params.save(&dir.join("params.bin"))?;
    params.vk.save(&dir.join("vk.bin"))?;
    let info = KeyInfo {
        circuit: c.circuit.clone(),
        size: c.size().to_string(),
        synthetic,
    };
    write_atomically(
        &dir.join("circuit.json"),
        serde_json::to_string_pretty(&info).unwrap().as_bytes(),
    )?;
    eprintln!(
        "{} keys for {} {} in {:.2?} → {}{}",
        if synthetic {
            "SYNTHETIC (unverifiable, timing only)"
        } else {
            "insecure test"
        },
        c.circuit,
        c.size(),
        t.elapsed(),
        dir.display(),
        if synthetic {
            ""
        } else {
            " (toxic waste from the seed: never use for real proofs)"
        }
    );
    Ok(())
}

/// The cache folder's keys for this circuit (set up on first use: insecure
/// test keys from seed 0, or synthetic ones).
pub fn cached_keys(c: &CircuitArgs, synthetic: bool) -> Result<PathBuf, Error> {
    let name = format!(
        "{}-{}{}",
        c.circuit,
        c.size().replace(['^', '/'], "_"),
        if synthetic { "-synthetic" } else { "" }
    );
    let dir = c.cache_dir().join("keys").join(name);
    if !dir.join("params.bin").is_file() {
        setup(c, &dir, 0, synthetic)?;
    }
    Ok(dir)
}

/// Loads keys from `dir`, checking they were made for this circuit.
pub fn load_keys(c: &CircuitArgs, dir: &Path) -> Result<(Parameters, bool), Error> {
    let info_path = dir.join("circuit.json");
    let synthetic = match std::fs::read(&info_path) {
        Ok(bytes) => {
            let info: KeyInfo = serde_json::from_slice(&bytes)
                .map_err(|e| Error::InvalidEncoding(format!("{}: {e}", info_path.display())))?;
            if info.circuit != c.circuit || info.size != c.size() {
                return Err(Error::InvalidInput(format!(
                    "{} holds keys for {} {}, not {} {}",
                    dir.display(),
                    info.circuit,
                    info.size,
                    c.circuit,
                    c.size()
                )));
            }
            info.synthetic
        }
        // Keys from elsewhere (e.g. bellperson's): the shape check below still applies.
        Err(_) => false,
    };
    Ok((Parameters::load(&dir.join("params.bin"), false)?, synthetic))
}

/// `r, s` for partition `i`: from the seed when given, else from the OS.
fn blinding(seed: Option<u64>, i: usize) -> Result<(Fr, Fr), Error> {
    match seed {
        Some(s) => {
            let mut rng = zkpipe_core::sample::rng(s.wrapping_add(i as u64));
            Ok((Fr::random(&mut rng), Fr::random(&mut rng)))
        }
        None => {
            let mut b = [0u8; 128];
            let mut f =
                std::fs::File::open("/dev/urandom").map_err(io(Path::new("/dev/urandom")))?;
            std::io::Read::read_exact(&mut f, &mut b).map_err(io(Path::new("/dev/urandom")))?;
            Ok((
                Fr::from_bytes_le_mod_order(&b[..64]),
                Fr::from_bytes_le_mod_order(&b[64..]),
            ))
        }
    }
}

#[derive(Args, Debug)]
pub struct ProveArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Folder with params.bin (from `zkpipe setup`). Without it, keys are set
    /// up into the cache folder (insecure test keys) and the proof is verified.
    #[arg(long, value_name = "DIR")]
    pub params: Option<PathBuf>,
    /// Backend name.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Partitions: proofs of P witnesses sharing one key (witness seeds w, w+1, …).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub partitions: u32,
    /// Seed for r, s (reproducible proofs); default: OS randomness.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seed of the circuit's private witness (partition i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub witness_seed: u64,
    /// Proof output: 192 bytes per partition, in order.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Public inputs as JSON decimal strings (an array per partition when P > 1).
    #[arg(long, value_name = "FILE")]
    pub public_out: Option<PathBuf>,
}

fn print_times(label: &str, t: &StageTimes) {
    let parts: Vec<String> = Stage::ALL
        .iter()
        .map(|s| format!("{}={:.1}ms", s.name(), t.get(*s).as_secs_f64() * 1e3))
        .collect();
    eprintln!(
        "{label}: {:.1} ms ({})",
        t.total().as_secs_f64() * 1e3,
        parts.join(" ")
    );
}

pub fn prove(args: &PluginArgs, p: &ProveArgs) -> Result<(), Error> {
    let c = &p.circuit;
    let r1cs = c.r1cs()?;
    let embedded = p.params.is_none();
    let dir = match &p.params {
        Some(d) => d.clone(),
        None => cached_keys(c, false)?,
    };
    let (params, synthetic) = load_keys(c, &dir)?;
    if synthetic {
        eprintln!(
            "warning: SYNTHETIC keys (random points): the proof is for timing only and will not verify"
        );
    }
    let params = std::sync::Arc::new(params);
    let prover = prover_for(
        args,
        std::sync::Arc::new(args.backend(&p.backend)?),
        params.clone(),
        std::sync::Arc::new(r1cs),
    )?;
    let mut proofs = Vec::new();
    let mut publics = Vec::new();
    for i in 0..p.partitions as usize {
        let (r, s) = blinding(p.seed, i)?;
        let (proof, w, times) = prover.prove_circuit(c.build(p.witness_seed + i as u64)?, r, s)?;
        print_times(&format!("partition {i}"), &times);
        proofs.push(proof);
        publics.push(
            w.public_inputs()
                .iter()
                .map(groth16::fr_to_decimal)
                .collect::<Vec<_>>(),
        );
    }
    let json = if publics.len() == 1 {
        serde_json::to_string(&publics[0])
    } else {
        serde_json::to_string(&publics)
    };
    if let Some(out) = &p.out {
        write_atomically(
            out,
            &proofs.iter().flat_map(|p| p.to_bytes()).collect::<Vec<_>>(),
        )?;
    }
    if let Some(out) = &p.public_out {
        write_atomically(out, json.unwrap().as_bytes())?;
    }
    if embedded || p.out.is_none() {
        let pvk = PreparedVerifyingKey::new(&params.vk);
        for (i, (proof, public)) in proofs.iter().zip(&publics).enumerate() {
            let inputs: Vec<Fr> = public
                .iter()
                .map(|s| groth16::fr_from_decimal(s))
                .collect::<Result<_, _>>()?;
            let ok = groth16::verify(&pvk, proof, &inputs)?;
            println!(
                "partition {i}: proof {} — {}",
                hex(&proof.to_bytes()[..8]),
                if ok { "valid" } else { "INVALID" }
            );
            if !ok && !synthetic {
                return Err(Error::InvalidInput("a fresh proof failed to verify".into()));
            }
        }
    }
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
    /// Largest public-inputs file read: far above any real circuit's inputs.
    const MAX_PUBLIC_JSON_BYTES: u64 = 64 << 20;

    let vk = VerifyingKey::load(&v.vk)?;
    let proofs = Proof::load_many(&v.proof)?;

    let public = v.public.display();
    let bad_public = |e: String| Error::InvalidEncoding(format!("{public}: {e}"));
    let file = std::fs::File::open(&v.public).map_err(io(&v.public))?;
    let mut text = Vec::new();
    // One byte past the limit, so that a longer file or stream is seen and refused.
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_PUBLIC_JSON_BYTES + 1),
        &mut text,
    )
    .map_err(io(&v.public))?;
    if text.len() as u64 > MAX_PUBLIC_JSON_BYTES {
        return Err(bad_public(format!(
            "larger than the limit of {MAX_PUBLIC_JSON_BYTES} bytes"
        )));
    }
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad_public(e.to_string()))?;
    drop(text);
    let sets: Vec<Vec<String>> = match value {
        serde_json::Value::Array(a) if a.iter().all(serde_json::Value::is_string) => {
            vec![
                serde_json::from_value(serde_json::Value::Array(a))
                    .map_err(|e| bad_public(e.to_string()))?,
            ]
        }
        other => serde_json::from_value(other).map_err(|e| bad_public(e.to_string()))?,
    };
    if sets.len() != proofs.len() {
        return Err(bad_public(format!(
            "{} sets of public inputs for {} proofs in {}",
            sets.len(),
            proofs.len(),
            v.proof.display()
        )));
    }
    let pvk = PreparedVerifyingKey::new(&vk);
    let takes = pvk.num_public_inputs();
    let mut all = true;
    for (i, (proof, set)) in proofs.iter().zip(&sets).enumerate() {
        if set.len() != takes {
            return Err(bad_public(format!(
                "set {i} has {} public inputs, the key {} takes {takes}",
                set.len(),
                v.vk.display()
            )));
        }
        let inputs: Vec<Fr> = set
            .iter()
            .map(|s| groth16::fr_from_decimal(s))
            .collect::<Result<_, _>>()
            .map_err(|e| match e {
                Error::InvalidEncoding(why) => bad_public(format!("set {i}: {why}")),
                other => other,
            })?;
        all &= groth16::verify(&pvk, proof, &inputs)?;
    }
    Ok(all)
}

#[derive(Args, Debug)]
pub struct CrosscheckArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Backend under test.
    #[arg(long)]
    pub backend: String,
    /// Reference backend (created without the `--backend-opt` settings,
    /// which belong to the backend under test).
    #[arg(long, default_value = "cpu")]
    pub reference: String,
    /// Largest op size checked, as log2.
    #[arg(long, default_value_t = 16)]
    pub max_log_size: u32,
    /// Seed for inputs and r, s.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Runs each op and one whole proof on both backends; returns whether all matched.
pub fn crosscheck(args: &PluginArgs, x: &CrosscheckArgs) -> Result<bool, Error> {
    let test = std::sync::Arc::new(args.backend(&x.backend)?);
    let reference = std::sync::Arc::new(args.reference_backend(&x.reference)?);
    let mut all = true;
    let mut report =
        |what: String, result: Result<crate::crosscheck_ops::Mismatch, Error>| match result {
            Ok(None) => println!("ok        {what}"),
            Ok(Some(detail)) => {
                all = false;
                println!("MISMATCH  {what}: {detail}");
            }
            Err(e) if zkpipe_core::backend::is_unsupported(&e) => println!("skipped   {what}: {e}"),
            Err(e) => {
                all = false;
                println!("ERROR     {what}: {e}");
            }
        };
    let sizes: Vec<usize> = [1usize, 5, 255]
        .into_iter()
        .chain((8..=x.max_log_size).step_by(4).map(|k| (1usize << k) + 1))
        .chain([1usize << x.max_log_size])
        .collect();
    for &n in &sizes {
        report(
            format!("msm_g1/{n}"),
            crate::crosscheck_ops::msm_g1(&test, &reference, n, x.seed),
        );
        report(
            format!("msm_g2/{n}"),
            crate::crosscheck_ops::msm_g2(&test, &reference, n.min(1 << 14), x.seed),
        );
    }
    for log in [1u32, 5, x.max_log_size] {
        for (name, cfg) in crate::crosscheck_ops::ntt_configs() {
            report(
                format!("ntt/{name}/2^{log}"),
                crate::crosscheck_ops::ntt(&test, &reference, log, &cfg, x.seed),
            );
        }
    }
    let proof = whole_proof(args, &test, &reference, &x.circuit, x.seed);
    report(
        format!(
            "groth16 proof bytes ({} {})",
            x.circuit.circuit,
            x.circuit.size()
        ),
        proof,
    );
    Ok(all)
}

fn whole_proof(
    args: &PluginArgs,
    test: &std::sync::Arc<Backend>,
    reference: &std::sync::Arc<Backend>,
    c: &CircuitArgs,
    seed: u64,
) -> Result<crate::crosscheck_ops::Mismatch, Error> {
    let r1cs = c.r1cs()?;
    let params = groth16::setup(&r1cs, seed);
    let w = zkpipe_core::r1cs::Witness::generate(c.build(seed)?)?;
    let (r, s) = blinding(Some(seed), 0)?;
    let (params, r1cs) = (std::sync::Arc::new(params), std::sync::Arc::new(r1cs));
    let (a, _) = prover_for(args, test.clone(), params.clone(), r1cs.clone())?.prove(&w, r, s)?;
    let (b, _) = Prover::new(reference.clone(), params, r1cs)?.prove(&w, r, s)?;
    let differing: Vec<&str> = [("A", a.a != b.a), ("B", a.b != b.b), ("C", a.c != b.c)]
        .iter()
        .filter(|(_, d)| *d)
        .map(|(n, _)| *n)
        .collect();
    Ok((!differing.is_empty()).then(|| format!("proof points {} differ", differing.join(", "))))
}

/// A prover on `backend`; ops it declares unsupported, or NTTs past its
/// size limit, run on the CPU backend instead, and a note says so.
///
/// # Errors
/// As [`Prover::with_fallback`]; loading the CPU backend.
pub fn prover_for(
    args: &PluginArgs,
    backend: std::sync::Arc<Backend>,
    params: std::sync::Arc<Parameters>,
    r1cs: std::sync::Arc<R1cs>,
) -> Result<Prover, Error> {
    let fallback = if !Prover::needs_fallback(&backend, &r1cs) || backend.name() == "cpu" {
        None
    } else {
        Some(std::sync::Arc::new(args.registry().create(
            "cpu",
            &zkpipe_core::plugin::BackendConfig::default(),
        )?))
    };
    let prover = Prover::with_fallback(backend.clone(), fallback, params, r1cs)?;
    let moved: Vec<&str> = prover
        .routing()
        .into_iter()
        .filter(|(_, on)| *on != backend.name())
        .map(|(op, _)| op)
        .collect();
    if !moved.is_empty() {
        eprintln!(
            "note: backend `{}` does not run {} (unsupported, or past its size limit): \
             the cpu backend runs them",
            backend.name(),
            moved.join(", ")
        );
    }
    Ok(prover)
}
