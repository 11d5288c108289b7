//! Where keys come from: one trait for every kind of key zkpipe proves
//! with — a built-in circuit's (cached test keys or a user's folder), a
//! circom circuit's zkey, a Filecoin parameter set's.

use std::path::PathBuf;
use std::sync::Arc;

use zkpipe_circom::binfile::BinFile;
use zkpipe_circom::{CircomR1cs, prove_bn254};
use zkpipe_circuits::BuiltinCircuit;
use zkpipe_core::groth16::Parameters;
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Curve, Error, bn254};
use zkpipe_filecoin::params::ParamSet;

use crate::builtin::BuiltinRequest;

/// A key and the circuit it proves, checked to belong together.
#[derive(Debug)]
pub struct Key<C> {
    /// The circuit, as it makes (or checks) witnesses.
    pub circuit: C,
    /// Its recorded constraints.
    pub r1cs: R1cs,
    /// Its proving parameters.
    pub params: Parameters,
    /// Random points instead of a setup: proofs made with them cannot
    /// verify (timing only).
    pub synthetic: bool,
    /// The folder or file the parameters were read from.
    pub from: PathBuf,
}

/// Where a key comes from.
pub trait KeySource {
    /// The circuit a key of this kind proves.
    type Circuit;

    /// The key's name, for messages.
    fn describe(&self) -> String;

    /// The circuit, its recorded R1CS and its parameters.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] or [`Error::InvalidEncoding`] for files that
    /// are malformed or belong to another circuit; I/O and cache errors.
    fn load(&self, progress: &dyn Progress) -> Result<Key<Self::Circuit>, Error>;
}

/// A built-in circuit's key: a user's folder from `setup` (checked, never
/// changed), else the cache's test keys (set up on first use).
#[derive(Debug, Clone)]
pub struct BuiltinKey {
    /// The circuit and the cache.
    pub request: BuiltinRequest,
    /// The user's key folder, if one was named.
    pub user_dir: Option<PathBuf>,
    /// Cached keys of random points where none are cached yet.
    pub synthetic: bool,
}

impl KeySource for BuiltinKey {
    type Circuit = Arc<BuiltinCircuit>;

    fn describe(&self) -> String {
        format!("{} {}", self.request.circuit, self.request.size())
    }

    fn load(&self, progress: &dyn Progress) -> Result<Key<Self::Circuit>, Error> {
        let circuit = self.request.source()?;
        let r1cs = self.request.r1cs(&circuit, progress)?;
        let keys = self.request.keys(
            &circuit,
            &r1cs,
            self.user_dir.as_deref(),
            self.synthetic,
            progress,
        )?;
        Ok(Key {
            synthetic: keys.synthetic(),
            from: keys.dir,
            circuit,
            r1cs,
            params: keys.params,
        })
    }
}

/// A circom circuit's key: its `.r1cs` and a snarkjs `.zkey` of it.
#[derive(Debug, Clone)]
pub struct CircomKey {
    /// The `.r1cs` file.
    pub r1cs: PathBuf,
    /// The `.zkey` file.
    pub zkey: PathBuf,
}

impl CircomKey {
    /// The curve of the zkey (its header alone is read).
    ///
    /// # Errors
    /// The zkey's I/O and format errors.
    pub fn curve(&self) -> Result<Curve, Error> {
        zkpipe_core::util::fsutil::check_input(&self.zkey)?;
        let f = BinFile::load_sections(&self.zkey, b"zkey", &[1], &[2])?;
        zkpipe_circom::zkey_bn254::zkey_curve(&f)
    }

    /// A BN254 key: its circuit and its proving key, checked against each
    /// other (counts, domain, every QAP coefficient).
    ///
    /// # Errors
    /// A CPU without BN254's arithmetic; the files' errors; files that
    /// disagree.
    pub fn load_bn254(
        &self,
    ) -> Result<(Arc<CircomR1cs<bn254::Fr>>, bn254::prover::ProvingKey), Error> {
        bn254::cpu::check()?;
        let key = prove_bn254::load_zkey(&self.zkey)?;
        zkpipe_core::util::fsutil::check_input(&self.r1cs)?;
        let file = BinFile::load(&self.r1cs, b"r1cs", &[1])?;
        let circuit = CircomR1cs::<bn254::Fr>::read(&file, |_, _| Ok(()))?;
        let name = |p: &PathBuf| p.display().to_string();
        prove_bn254::check_circuit(&key, &circuit, &name(&self.zkey), &name(&self.r1cs))?;
        Ok((Arc::new(circuit), key))
    }
}

impl KeySource for CircomKey {
    type Circuit = Arc<CircomR1cs>;

    fn describe(&self) -> String {
        self.zkey.display().to_string()
    }

    fn load(&self, _progress: &dyn Progress) -> Result<Key<Self::Circuit>, Error> {
        let circuit = CircomR1cs::load(&self.r1cs)?;
        let params =
            zkpipe_circom::load_zkey(&self.zkey, &circuit, &self.r1cs.display().to_string())?;
        Ok(Key {
            r1cs: circuit.r1cs.clone(),
            circuit: Arc::new(circuit),
            params,
            synthetic: false,
            from: self.zkey.clone(),
        })
    }
}

/// A Filecoin parameter set's key: its circuit recorded once (cached) and
/// its parameters from Filecoin's parameter folder.
#[derive(Debug, Clone)]
pub struct FilecoinKey {
    /// The parameter set.
    pub set: ParamSet,
    /// Folder of recorded circuits.
    pub r1cs_cache: PathBuf,
}

impl KeySource for FilecoinKey {
    type Circuit = ParamSet;

    fn describe(&self) -> String {
        self.set.id.clone()
    }

    fn load(&self, progress: &dyn Progress) -> Result<Key<Self::Circuit>, Error> {
        let r1cs = self
            .set
            .r1cs(&R1csCache::new(self.r1cs_cache.clone()), progress)?;
        let params = self.set.load(&r1cs)?;
        Ok(Key {
            from: self.set.files().params.clone(),
            circuit: self.set.clone(),
            r1cs,
            params,
            synthetic: false,
        })
    }
}
