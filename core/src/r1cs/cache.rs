//! Recorded R1CS kept on disk per circuit shape, so a circuit's constraints
//! are built once. Self-healing: a cached file that is truncated, corrupt
//! or for another shape is moved aside and recorded again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::R1cs;
use crate::Error;
use crate::r1cs::circuit::CircuitSource;
use crate::util::cache::{EntryLock, file_name_part, move_aside};
use crate::util::progress::Progress;

/// The R1CS cache folder (`<cache>/r1cs`).
#[derive(Debug, Clone)]
pub struct R1csCache {
    dir: PathBuf,
}

impl R1csCache {
    /// A cache in `dir` (made on first use).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        R1csCache { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds `circuit`'s R1CS.
    pub fn path(&self, circuit: &dyn CircuitSource) -> PathBuf {
        self.dir.join(format!(
            "{}-{}.r1cs",
            file_name_part(circuit.name()),
            file_name_part(circuit.size())
        ))
    }

    /// `circuit`'s R1CS from the cache, or recorded now and cached. Other
    /// processes asking for the same entry meanwhile wait and reuse it.
    ///
    /// # Errors
    /// Synthesis errors; [`Error::Io`] when the cache cannot be written;
    /// [`Error::InvalidInput`] for a bad `$ZKPIPE_CACHE_KEEP_FREE_GB`.
    pub fn get_or_record(
        &self,
        circuit: &dyn CircuitSource,
        progress: &dyn Progress,
    ) -> Result<R1cs, Error> {
        let path = self.path(circuit);
        let key = circuit.shape_key();
        let _lock = EntryLock::acquire(&path, || {
            progress.note(&format!(
                "waiting for another zkpipe process recording {}",
                path.display()
            ))
        })?;
        match R1cs::load(&path, &key) {
            Ok(r) => return Ok(r),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let aside = move_aside(&path)?;
                progress.note(&format!(
                    "cached R1CS cannot be used ({e}): moved it to {} and recording again",
                    aside.display()
                ));
            }
        }
        let t = Instant::now();
        progress.begin(
            &format!("recording {} {}", circuit.name(), circuit.size()),
            0,
        );
        let r1cs = circuit.record();
        progress.end();
        let r1cs = r1cs?;
        progress.note(&format!(
            "recorded {} {}: {} constraints, {} public inputs, {} private variables in {:.2?}",
            circuit.name(),
            circuit.size(),
            r1cs.num_constraints(),
            r1cs.num_inputs - 1,
            r1cs.num_aux,
            t.elapsed()
        ));
        match crate::util::cache::room_for(&self.dir, r1cs.file_bytes(&key))? {
            None => r1cs.save(&path, &key)?,
            Some(why) => progress.note(&format!(
                "not caching the recorded R1CS in {}: {why}; it is kept in memory for this run",
                self.dir.display()
            )),
        }
        Ok(r1cs)
    }
}
