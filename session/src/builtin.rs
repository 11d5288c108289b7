//! The built-in circuits as a request: which circuit at which size, where
//! its recorded R1CS and test keys are cached, whether this machine can
//! hold it, and its keys.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zkpipe_circuits::BuiltinCircuit;
use zkpipe_core::groth16::{self, KeyStore, Keys};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Error, util::machine};

/// A built-in circuit at a size, cached where.
#[derive(Debug, Clone)]
pub struct BuiltinRequest {
    /// Circuit name (`sha256`, `sha256-gadget`, `poseidon-merkle`,
    /// `squaring-chain`).
    pub circuit: String,
    /// Its size; `None`: the circuit's demo size.
    pub size: Option<String>,
    /// Cache folder (`r1cs/`, `keys/`); `None`: zkpipe's default.
    pub cache_dir: Option<PathBuf>,
}

impl BuiltinRequest {
    /// The size asked for, or the circuit's demo size.
    pub fn size(&self) -> &str {
        self.size
            .as_deref()
            .unwrap_or(zkpipe_circuits::default_size(&self.circuit))
    }

    /// The circuit (name and size checked).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown circuit or a size it cannot take.
    pub fn source(&self) -> Result<Arc<BuiltinCircuit>, Error> {
        BuiltinCircuit::new(&self.circuit, self.size())
            .map(Arc::new)
            .map_err(|e| Error::InvalidInput(e.to_string()))
    }

    /// `<circuit>-<size>`, safe as a file name part.
    pub fn stem(&self) -> String {
        format!(
            "{}-{}",
            zkpipe_core::util::cache::file_name_part(&self.circuit),
            zkpipe_core::util::cache::file_name_part(self.size())
        )
    }

    /// The files a proof and its public inputs go to when no output is
    /// named: `<stem>.proof` and `<stem>.public.json`.
    pub fn default_outputs(&self) -> (String, String) {
        let stem = self.stem();
        (format!("{stem}.proof"), format!("{stem}.public.json"))
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .unwrap_or_else(zkpipe_core::util::cache::default_dir)
    }

    /// The cached test keys.
    pub fn key_store(&self) -> KeyStore {
        KeyStore::new(self.cache_dir().join("keys"))
    }

    /// Refuses a circuit too large for this machine's memory, before it is
    /// recorded.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] with the estimate and the limit; as
    /// [`BuiltinRequest::source`].
    pub fn check_fits(&self) -> Result<(), Error> {
        let shape = self.source()?.shape();
        machine::check_memory(
            &format!(
                "{} {} (about {} constraints)",
                self.circuit,
                self.size(),
                shape.estimated_constraints()
            ),
            shape
                .estimated_constraints()
                .saturating_mul(machine::PROVE_BYTES_PER_CONSTRAINT),
        )
    }

    /// The recorded R1CS, from the cache or recorded now (and cached).
    ///
    /// # Errors
    /// As [`R1csCache::get_or_record`].
    pub fn r1cs(&self, circuit: &BuiltinCircuit, progress: &dyn Progress) -> Result<R1cs, Error> {
        R1csCache::new(self.cache_dir().join("r1cs")).get_or_record(circuit, progress)
    }

    /// Keys for `circuit`: the user's folder (checked, never changed) or
    /// the cache's (set up on first use, healed when broken; synthetic
    /// when asked).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a user folder whose keys cannot be used;
    /// as [`groth16::KeyStore::get_or_setup`].
    pub fn keys(
        &self,
        circuit: &BuiltinCircuit,
        r1cs: &R1cs,
        user_dir: Option<&Path>,
        synthetic: bool,
        progress: &dyn Progress,
    ) -> Result<Keys, Error> {
        match user_dir {
            Some(dir) => groth16::load_user_keys(dir, circuit, r1cs).map_err(|e| {
                Error::InvalidInput(format!(
                    "keys in {} cannot be used: {e} (zkpipe never changes keys named with --params; `zkpipe setup --out DIR` makes new ones)",
                    dir.display()
                ))
            }),
            None => self
                .key_store()
                .get_or_setup(circuit, r1cs, synthetic, progress),
        }
    }

    /// Sets up keys for the circuit from `seed` and writes them into `dir`
    /// (`params.bin`, `vk.bin`, `circuit.json`): insecure test keys, the
    /// toxic waste known, or random valid ones that prove nothing when
    /// `synthetic` (timing only).
    ///
    /// # Errors
    /// A circuit too big for this machine, a folder that cannot be
    /// written, as [`groth16::write_keys`].
    pub fn setup_into(
        &self,
        dir: &Path,
        seed: u64,
        synthetic: bool,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        self.check_fits()?;
        zkpipe_core::util::fsutil::check_writable_dir(dir)?;
        let circuit = self.source()?;
        let r1cs = self.r1cs(&circuit, progress)?;
        let params = if synthetic {
            groth16::synthetic_parameters(&r1cs, seed)
        } else {
            groth16::setup_with_progress(&r1cs, seed, progress)
        };
        groth16::write_keys(dir, &params, &groth16::KeyInfo::of(&*circuit, synthetic))
    }
}
