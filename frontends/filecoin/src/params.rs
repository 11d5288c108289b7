//! Filecoin's parameter cache folder (`$FIL_PROOFS_PARAMETER_CACHE`, by
//! default `/var/tmp/filecoin-proof-parameters`): the files filecoin-proofs
//! reads, by the names it gives them, read as zkpipe keys; and test-size
//! parameters made the way its `paramcache` tool makes them.

use std::path::{Path, PathBuf};

use storage_proofs_core::parameter_cache::{
    CacheEntryMetadata, parameter_cache_dir, parameter_cache_metadata_path,
    parameter_cache_params_path, parameter_cache_verifying_key_path,
};
use zkpipe_core::Error;
use zkpipe_core::cache::EntryLock;
use zkpipe_core::groth16::{self, Parameters};
use zkpipe_core::progress::Progress;
use zkpipe_core::r1cs::R1cs;

/// The largest sector size whose parameters zkpipe generates: production
/// sizes use the ceremony's parameters, never locally made ones.
pub const MAX_GENERATED_SECTOR_SIZE: u64 = 512 << 20;

/// A parameter set: what it proves, its cache identifier, its blank circuit.
pub struct ParamSet {
    /// `porep 2KiB`, `window-post 32GiB`.
    pub what: String,
    /// filecoin-proofs' cache identifier.
    pub id: String,
    /// The sector size it is for.
    pub sector_size: u64,
    /// Records the blank circuit its keys are made from.
    pub blank: Box<dyn Fn() -> Result<R1cs, Error> + Send + Sync>,
}

impl std::fmt::Debug for ParamSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamSet")
            .field("what", &self.what)
            .field("id", &self.id)
            .finish()
    }
}

impl ParamSet {
    /// Its files.
    pub fn files(&self) -> ParamFiles {
        ParamFiles::of(&self.id)
    }

    /// Makes the files unless they are there; whether it made them. Other
    /// processes doing the same meanwhile wait, then reuse them.
    ///
    /// # Errors
    /// As [`ParamFiles::generate`], and synthesis or R1CS cache errors.
    pub fn ensure(&self, engine: &crate::Engine, progress: &dyn Progress) -> Result<bool, Error> {
        let files = self.files();
        if files.exist() {
            return Ok(false);
        }
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
        let r1cs = engine.r1cs(&self.id, &*self.blank, progress)?;
        files.generate(self.sector_size, &r1cs, progress)?;
        Ok(true)
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
        if !self.params.is_file() {
            return Err(Error::InvalidInput(missing(&self.params, sector_size)));
        }
        let params = Parameters::load(&self.params, false)?;
        params.check_shape(r1cs).map_err(|e| {
            Error::InvalidInput(format!(
                "{}: not the parameters of this circuit ({e})",
                self.params.display()
            ))
        })?;
        Ok(params)
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
        if sector_size > MAX_GENERATED_SECTOR_SIZE {
            return Err(Error::InvalidInput(format!(
                "parameters for {} sectors come from Filecoin's trusted setup, not from zkpipe: {}",
                crate::shape::sector_size_name(sector_size),
                fetch_hint(sector_size)
            )));
        }
        let dir = parameter_cache_dir();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let seed = os_seed()?;
        let params = groth16::setup_with_progress(r1cs, seed, progress);
        params.vk.save(&self.vk)?;
        let meta = serde_json::to_vec(&CacheEntryMetadata { sector_size })
            .map_err(|e| Error::Failed(e.to_string()))?;
        write_atomically(&self.meta, &meta)?;
        // Last: the .params file is what readers look for first.
        params.save(&self.params)
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn os_seed() -> Result<u64, Error> {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).map_err(|e| Error::Failed(format!("OS randomness: {e}")))?;
    Ok(u64::from_le_bytes(b))
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
