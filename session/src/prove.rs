//! Proving one request: every proof checked against its verifying key
//! before the caller may write or send it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zkpipe_core::groth16::{self, PreparedVerifyingKey, Proof, Prover, StageTimes, VerifyingKey};
use zkpipe_core::plugin::{AccelError, ErrorCode};
use zkpipe_core::{Error, Fr};

use crate::builtin::BuiltinRequest;
use crate::keys::{BuiltinKey, KeySource};
use crate::{Blinding, ProverOptions, Session};

/// Partitions of a built-in circuit: proofs of witnesses `witness_seed`,
/// `witness_seed + 1`, … sharing one key.
#[derive(Debug, Clone)]
pub struct ProveRequest {
    /// The circuit.
    pub builtin: BuiltinRequest,
    /// Folder of keys from `setup` (checked, never changed); `None`: the
    /// cache's insecure test keys, set up on first use.
    pub params_dir: Option<PathBuf>,
    /// Partitions to prove.
    pub partitions: u32,
    /// Seed of partition 0's witness.
    pub witness_seed: u64,
    /// Where `r, s` come from.
    pub blinding: Blinding,
    /// How the prover is built.
    pub options: ProverOptions,
}

/// One verified proof.
#[derive(Debug, Clone)]
pub struct Proved {
    /// The proof; it verified against the key's verifying key.
    pub proof: Proof,
    /// Its public inputs.
    pub public: Vec<Fr>,
    /// Time per stage.
    pub times: StageTimes,
}

/// Fails unless `proof` verifies for `public` under `pvk`: nothing
/// unverified leaves the session.
///
/// # Errors
/// [`Error::Backend`] naming `prover`'s backend (a proof that fails its
/// own check is the backend's fault, exit 1).
pub fn self_check(
    prover: &Prover,
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public: &[Fr],
    what: &str,
) -> Result<(), Error> {
    if groth16::verify(pvk, proof, public)? {
        return Ok(());
    }
    Err(Error::Backend {
        backend: prover.routing()[1].1.to_string(),
        source: AccelError::new(
            ErrorCode::INTERNAL,
            format!("{what}: the proof failed its self-check; nothing was written"),
        ),
    })
}

impl Session {
    /// Proves `request`'s partitions one after another, each verified,
    /// telling `each` about it as it comes.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a circuit that does not fit, unusable or
    /// synthetic keys (their proofs cannot verify); backend errors; a proof
    /// that fails its self-check.
    pub fn prove(
        &self,
        request: &ProveRequest,
        each: &mut dyn FnMut(usize, &Proved),
    ) -> Result<Vec<Proved>, Error> {
        request.builtin.check_fits()?;
        let loaded = BuiltinKey {
            request: request.builtin.clone(),
            user_dir: request.params_dir.clone(),
            synthetic: false,
        }
        .load(self.progress())?;
        if loaded.synthetic {
            return Err(Error::InvalidInput(format!(
                "{} holds SYNTHETIC keys (random points): their proofs cannot verify, so `prove` will not write one; use `bench prove --synthetic` for timing",
                loaded.from.display()
            )));
        }
        let params = Arc::new(loaded.params);
        let prover = self.prover(params.clone(), Arc::new(loaded.r1cs), request.options)?;
        let pvk = PreparedVerifyingKey::new(&params.vk);
        let mut out = Vec::with_capacity(request.partitions as usize);
        for i in 0..request.partitions as usize {
            let (r, s) = request.blinding.get(i)?;
            let witness_seed = request.witness_seed.wrapping_add(i as u64);
            let (proof, w, times) =
                prover.prove_circuit(loaded.circuit.build(witness_seed), r, s)?;
            self_check(
                &prover,
                &pvk,
                &proof,
                w.public_inputs(),
                &format!("partition {i}"),
            )?;
            let proved = Proved {
                proof,
                public: w.public_inputs().to_vec(),
                times,
            };
            each(i, &proved);
            out.push(proved);
        }
        Ok(out)
    }
}

/// Verifies proofs from files: a verifying key (bellperson's layout), 192
/// bytes per proof, and the public inputs as a JSON array of decimal
/// strings, or an array of those per proof. Returns whether every proof
/// verified.
///
/// # Errors
/// Every input problem (a file that is missing, too large or malformed,
/// counts that do not fit together) is an [`Error::Io`] or
/// [`Error::InvalidEncoding`] naming the file (exit 2); an invalid proof
/// is `Ok(false)`.
pub fn verify_files(vk_path: &Path, proof_path: &Path, public_path: &Path) -> Result<bool, Error> {
    /// Largest public-inputs file read: far above any real circuit's inputs.
    const MAX_PUBLIC_JSON_BYTES: u64 = 64 << 20;

    let vk = VerifyingKey::load(vk_path)?;
    let proofs = Proof::load_many(proof_path)?;

    let public = public_path.display();
    let bad_public = |e: String| Error::InvalidEncoding(format!("{public}: {e}"));
    let text = zkpipe_core::util::fsutil::read_capped(public_path, MAX_PUBLIC_JSON_BYTES)?;
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
            proof_path.display()
        )));
    }
    let pvk = PreparedVerifyingKey::new(&vk);
    let takes = pvk.num_public_inputs();
    let mut all = true;
    for (i, (proof, set)) in proofs.iter().zip(&sets).enumerate() {
        if set.len() != takes {
            return Err(bad_public(format!(
                "set {i}: the key {} takes {takes} public inputs, {} were given",
                vk_path.display(),
                set.len()
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
