//! Filecoin's parameter cache folder (`$FIL_PROOFS_PARAMETER_CACHE`, by
//! default `/var/tmp/filecoin-proof-parameters`): the files filecoin-proofs
//! reads, by the names it gives them, read as zkpipe keys; and test-size
//! parameters made the way its `paramcache` tool makes them.

use std::path::{Path, PathBuf};

use std::sync::Arc;
use storage_proofs_core::parameter_cache::{
    CacheEntryMetadata, parameter_cache_dir, parameter_cache_metadata_path,
    parameter_cache_params_path, parameter_cache_verifying_key_path,
};
use zkpipe_core::Error;
use zkpipe_core::groth16::{self, Parameters};
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::r1cs::circuit::CircuitSource;
use zkpipe_core::r1cs::{R1cs, Witness};
use zkpipe_core::util::cache::EntryLock;
use zkpipe_core::util::fsutil::write_atomically;
use zkpipe_core::util::progress::Progress;

/// The largest sector size whose parameters zkpipe generates: production
/// sizes use the ceremony's parameters, never locally made ones.
pub const MAX_GENERATED_SECTOR_SIZE: u64 = 512 << 20;

/// Records a parameter set's blank circuit.
pub type Blank = Arc<dyn Fn() -> Result<R1cs, Error> + Send + Sync>;

/// A parameter set: what it proves, its cache identifier, its blank circuit.
#[derive(Clone)]
pub struct ParamSet {
    /// `porep 2KiB`, `window-post 32GiB`.
    pub what: String,
    /// filecoin-proofs' cache identifier.
    pub id: String,
    /// The sector size it is for.
    pub sector_size: u64,
    /// Records the blank circuit its keys are made from.
    pub blank: Blank,
}

impl std::fmt::Debug for ParamSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamSet")
            .field("what", &self.what)
            .field("id", &self.id)
            .finish()
    }
}

/// The proofs Filecoin keeps parameters for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofKind {
    Porep,
    WindowPost,
    WinningPost,
    SnapUpdate,
}

impl ProofKind {
    /// Every kind, in the order `zkpipe filecoin params` makes them.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::Porep,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapUpdate,
    ];

    /// `porep`, `window-post`, `winning-post`, `snap-update`.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::Porep => "porep",
            ProofKind::WindowPost => "window-post",
            ProofKind::WinningPost => "winning-post",
            ProofKind::SnapUpdate => "snap-update",
        }
    }

    /// The kind [`ProofKind::name`] names.
    ///
    /// # Errors
    /// The names it takes, for any other word.
    pub fn from_name(s: &str) -> Result<ProofKind, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("`{s}`: porep, window-post, winning-post or snap-update"))
    }
}

impl ParamSet {
    /// The parameter set of `kind` for `sector_size`, at the proof version
    /// Lotus and Curio use now.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a size Filecoin does not register.
    pub fn of(kind: ProofKind, sector_size: u64) -> Result<ParamSet, Error> {
        use crate::registry::{post_proof_for, seal_proof_for, update_proof_for};
        match kind {
            ProofKind::Porep => crate::porep::param_set(seal_proof_for(sector_size)?),
            ProofKind::WindowPost => crate::post::param_set(post_proof_for(true, sector_size)?),
            ProofKind::WinningPost => crate::post::param_set(post_proof_for(false, sector_size)?),
            ProofKind::SnapUpdate => crate::snap::param_set(update_proof_for(sector_size)?),
        }
    }

    /// Its files.
    pub fn files(&self) -> ParamFiles {
        ParamFiles::of(&self.id)
    }

    /// Its R1CS, from `cache` or recorded now from the blank circuit.
    ///
    /// # Errors
    /// Synthesis and cache errors.
    pub fn r1cs(&self, cache: &R1csCache, progress: &dyn Progress) -> Result<R1cs, Error> {
        cache.get_or_record(self, progress)
    }

    /// Its parameters, checked against `r1cs` (see [`ParamFiles::load`]).
    ///
    /// # Errors
    /// As [`ParamFiles::load`].
    pub fn load(&self, r1cs: &R1cs) -> Result<Parameters, Error> {
        self.files().load(self.sector_size, r1cs)
    }

    /// Makes the files unless they are there; whether it made them. Other
    /// processes doing the same meanwhile wait, then reuse them.
    ///
    /// # Errors
    /// As [`ParamFiles::generate`], and synthesis or R1CS cache errors.
    pub fn ensure(&self, cache: &R1csCache, progress: &dyn Progress) -> Result<bool, Error> {
        let files = self.files();
        if files.exist() {
            return Ok(false);
        }
        refuse_production(self.sector_size)?;
        let dir = parameter_cache_dir();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let _lock = EntryLock::acquire(&files.params, || {
            progress.note(&format!(
                "waiting for another process making {}",
                files.params.display()
            ))
        })?;
        if files.exist() {
            return Ok(false);
        }
        let r1cs = self.r1cs(cache, progress)?;
        files.generate(self.sector_size, &r1cs, progress)?;
        Ok(true)
    }
}

/// The R1CS cache keeps a parameter set's circuit under its identifier.
impl CircuitSource for ParamSet {
    fn name(&self) -> &str {
        "filecoin"
    }
    fn size(&self) -> &str {
        &self.id
    }
    fn shape_key(&self) -> String {
        format!("filecoin-proofs 19.1 {}", self.id)
    }
    fn record(&self) -> Result<R1cs, Error> {
        (self.blank)()
    }
    fn witness(&self, _seed: u64) -> Result<Witness, Error> {
        Err(Error::InvalidInput(
            "Filecoin circuits take their witnesses from vanilla proofs, not from a seed".into(),
        ))
    }
}

/// One parameter set's files, named by its filecoin-proofs cache identifier
/// (`stacked-proof-of-replication-…-<sha256 of the public parameters>`).
#[derive(Debug, Clone)]
pub struct ParamFiles {
    /// The cache identifier.
    pub id: String,
    /// `v28-<id>.params`: bellperson's parameter layout.
    pub params: PathBuf,
    /// `v28-<id>.vk`: the verifying key.
    pub vk: PathBuf,
    /// `v28-<id>.meta`: `{"sector_size": N}`.
    pub meta: PathBuf,
}

impl ParamFiles {
    /// The files of parameter set `id` in the parameter cache folder.
    pub fn of(id: &str) -> ParamFiles {
        ParamFiles {
            id: id.to_string(),
            params: parameter_cache_params_path(id),
            vk: parameter_cache_verifying_key_path(id),
            meta: parameter_cache_metadata_path(id),
        }
    }

    /// Reads the parameters and checks they were made for `r1cs`. Points
    /// are not subgroup-checked (as filecoin-proofs reads them): every
    /// proof made with them is verified before it is returned.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the file is missing (saying how to get
    /// it) or made for another circuit; [`Error::InvalidEncoding`] /
    /// [`Error::Io`] for an unreadable one.
    pub fn load(&self, sector_size: u64, r1cs: &R1cs) -> Result<Parameters, Error> {
        let params = self.read(sector_size)?;
        self.check(&params, r1cs)?;
        Ok(params)
    }

    /// The first half of [`ParamFiles::load`]: reads the parameters, not
    /// yet checked against a circuit (so it can run beside reading the R1CS).
    ///
    /// # Errors
    /// As [`ParamFiles::load`].
    pub fn read(&self, sector_size: u64) -> Result<Parameters, Error> {
        if !self.params.is_file() {
            return Err(Error::InvalidInput(missing(&self.params, sector_size)));
        }
        Parameters::load(&self.params, false)
    }

    /// The second half of [`ParamFiles::load`]: `params` were made for `r1cs`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when they were not.
    pub fn check(&self, params: &Parameters, r1cs: &R1cs) -> Result<(), Error> {
        params.check_shape(r1cs).map_err(|e| {
            Error::InvalidInput(format!(
                "{}: not the parameters of this circuit ({e})",
                self.params.display()
            ))
        })
    }

    /// Whether all three files are there.
    pub fn exist(&self) -> bool {
        [&self.params, &self.vk, &self.meta]
            .iter()
            .all(|p| p.is_file())
    }

    /// Generates parameters for `r1cs` from fresh OS randomness (INSECURE
    /// for production: one party knows the toxic waste) and writes the
    /// three files atomically. Test sector sizes only.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a sector size above
    /// [`MAX_GENERATED_SECTOR_SIZE`]; [`Error::Io`] when the folder cannot be written.
    pub fn generate(
        &self,
        sector_size: u64,
        r1cs: &R1cs,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        refuse_production(sector_size)?;
        let dir = parameter_cache_dir();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        // Test parameters only (production sizes are refused above).
        let seed = u64::from_le_bytes(zkpipe_core::util::random::os_bytes()?);
        let params = groth16::setup_with_progress(r1cs, seed, progress);
        params.vk.save(&self.vk)?;
        let meta = serde_json::to_vec(&CacheEntryMetadata { sector_size })
            .map_err(|e| Error::Failed(e.to_string()))?;
        write_atomically(&self.meta, &meta)?;
        // Last: the .params file is what readers look for first.
        params.save(&self.params)
    }
}

/// Production sizes use the ceremony's parameters.
fn refuse_production(sector_size: u64) -> Result<(), Error> {
    if sector_size > MAX_GENERATED_SECTOR_SIZE {
        return Err(Error::InvalidInput(format!(
            "parameters for {} sectors come from Filecoin's trusted setup, not from zkpipe: {}",
            crate::shape::sector_size_name(sector_size),
            fetch_hint(sector_size)
        )));
    }
    Ok(())
}

fn fetch_hint(sector_size: u64) -> String {
    format!(
        "fetch them with `curio fetch-params {0}` or `lotus fetch-params {0}` into $FIL_PROOFS_PARAMETER_CACHE",
        crate::shape::sector_size_name(sector_size)
    )
}

fn missing(path: &Path, sector_size: u64) -> String {
    let how = if sector_size <= MAX_GENERATED_SECTOR_SIZE {
        format!(
            "generate test parameters with `zkpipe filecoin params --sector-size {}`, or {}",
            crate::shape::sector_size_name(sector_size),
            fetch_hint(sector_size)
        )
    } else {
        fetch_hint(sector_size)
    };
    format!(
        "Filecoin parameters not found: {} (the folder is $FIL_PROOFS_PARAMETER_CACHE); {how}",
        path.display()
    )
}
