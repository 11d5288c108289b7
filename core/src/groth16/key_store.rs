//! Groth16 keys kept on disk per circuit shape: `params.bin` (bellperson's
//! layout, read through mmap), `vk.bin`, and `circuit.json` saying what they
//! were made for. Cached keys heal themselves: a set that is truncated,
//! corrupt or made for another circuit is moved aside and set up again. Keys
//! a user names (`--params DIR`) are never changed, only refused.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::keys::Parameters;
use crate::Error;
use crate::r1cs::R1cs;
use crate::r1cs::circuit::CircuitSource;
use crate::util::cache::{EntryLock, file_name_part, move_aside, publish_dir, staging_dir};
use crate::util::fsutil::write_atomically;
use crate::util::progress::Progress;

/// What a set of keys was made for (`circuit.json`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// Circuit name.
    pub circuit: String,
    /// Circuit size, as given.
    pub size: String,
    /// Random points instead of a setup: timing only, proofs will not verify.
    pub synthetic: bool,
}

impl KeyInfo {
    /// The info of keys for `circuit`.
    pub fn of(circuit: &dyn CircuitSource, synthetic: bool) -> Self {
        KeyInfo {
            circuit: circuit.name().to_string(),
            size: circuit.size().to_string(),
            synthetic,
        }
    }
}

/// Keys loaded from a folder.
#[derive(Debug)]
pub struct Keys {
    /// The proving parameters (the verifying key among them).
    pub params: Parameters,
    /// What they were made for, when the folder says (`circuit.json`).
    pub info: Option<KeyInfo>,
    /// The folder.
    pub dir: PathBuf,
}

impl Keys {
    /// Whether these are synthetic keys (proofs will not verify).
    pub fn synthetic(&self) -> bool {
        self.info.as_ref().is_some_and(|i| i.synthetic)
    }
}

const PARAMS: &str = "params.bin";
const VK: &str = "vk.bin";
const INFO: &str = "circuit.json";

/// The key cache folder (`<cache>/keys`): one folder of keys per circuit,
/// size and kind (test or synthetic).
#[derive(Debug, Clone)]
pub struct KeyStore {
    dir: PathBuf,
}

impl KeyStore {
    /// A key store in `dir` (made on first use).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KeyStore { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder that holds the keys described by `info`.
    pub fn entry(&self, info: &KeyInfo) -> PathBuf {
        self.dir.join(format!(
            "{}-{}{}",
            file_name_part(&info.circuit),
            file_name_part(&info.size),
            if info.synthetic { "-synthetic" } else { "" }
        ))
    }

    /// Cached keys for `circuit` (whose recorded R1CS is `r1cs`), set up on
    /// first use: INSECURE test keys from seed 0, or synthetic ones. Keys
    /// that cannot be used are moved aside and set up again (a note says
    /// so). Other processes asking for the same keys meanwhile wait and
    /// reuse them.
    ///
    /// # Errors
    /// [`Error::Io`] when the store cannot be written;
    /// [`Error::InvalidInput`] for a bad `$ZKPIPE_CACHE_KEEP_FREE_GB`.
    pub fn get_or_setup(
        &self,
        circuit: &dyn CircuitSource,
        r1cs: &R1cs,
        synthetic: bool,
        progress: &dyn Progress,
    ) -> Result<Keys, Error> {
        let info = KeyInfo::of(circuit, synthetic);
        let entry = self.entry(&info);
        let _lock = EntryLock::acquire(&entry, || {
            progress.note(&format!(
                "waiting for another zkpipe process setting up {}",
                entry.display()
            ))
        })?;
        if entry.exists() {
            match load_checked(&entry, &info, r1cs) {
                Ok(keys) => return Ok(keys),
                Err(e) => {
                    let aside = move_aside(&entry)?;
                    progress.note(&format!(
                        "cached keys cannot be used ({e}): moved them to {} and setting up new ones",
                        aside.display()
                    ));
                }
            }
        }
        let t = Instant::now();
        let params = if synthetic {
            super::synthetic_parameters(r1cs, 0)
        } else {
            super::setup::setup_with_progress(r1cs, 0, progress)
        };
        // Synthetic keys are for timing only and quick to make again: where
        // the disk lacks room they serve this run from memory.
        let short = if synthetic {
            crate::util::cache::room_for(&self.dir, params.file_bytes())?
        } else {
            None
        };
        if let Some(why) = short {
            progress.note(&format!(
                "not caching the synthetic keys in {}: {why}; they are kept in memory for this run",
                self.dir.display()
            ));
        } else {
            let staging = staging_dir(&entry)?;
            if let Err(e) = write_keys(&staging, &params, &info) {
                // A full disk: nothing half-written is left behind.
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
            publish_dir(&staging, &entry)?;
        }
        progress.note(&format!(
            "{} keys for {} {} in {:.2?} → {}{}",
            if synthetic {
                "SYNTHETIC (unverifiable, timing only)"
            } else {
                "insecure test"
            },
            info.circuit,
            info.size,
            t.elapsed(),
            entry.display(),
            if synthetic {
                ""
            } else {
                " (toxic waste from a public seed: never use for real proofs)"
            }
        ));
        Ok(Keys {
            params,
            info: Some(info),
            dir: entry,
        })
    }
}

/// Loads keys from a folder a user named, checking them against `circuit`
/// and `r1cs`. The folder is never changed.
///
/// # Errors
/// [`Error::InvalidInput`] naming the folder and what is wrong (missing,
/// unreadable, another circuit's keys).
pub fn load_user_keys(dir: &Path, circuit: &dyn CircuitSource, r1cs: &R1cs) -> Result<Keys, Error> {
    let info = read_info(dir)?;
    if let Some(i) = &info {
        check_info(dir, i, circuit.name(), circuit.size())?;
    }
    let params = Parameters::load(&dir.join(PARAMS), false)?;
    params.check_shape(r1cs)?;
    Ok(Keys {
        params,
        info,
        dir: dir.to_path_buf(),
    })
}

/// Writes keys into `dir` (`params.bin`, `vk.bin`, `circuit.json`), each
/// file atomically.
///
/// # Errors
/// [`Error::Io`].
pub fn write_keys(dir: &Path, params: &Parameters, info: &KeyInfo) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    params.save(&dir.join(PARAMS))?;
    params.vk.save(&dir.join(VK))?;
    let json = serde_json::to_string_pretty(info).expect("KeyInfo serialises");
    write_atomically(&dir.join(INFO), json.as_bytes())
}

/// `circuit.json` of `dir`, if it has one.
fn read_info(dir: &Path) -> Result<Option<KeyInfo>, Error> {
    let path = dir.join(INFO);
    match std::fs::read(&path) {
        Ok(bytes) if bytes.len() > 1 << 16 => Err(Error::InvalidEncoding(format!(
            "{}: {} bytes is too large for a key description",
            path.display(),
            bytes.len()
        ))),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::InvalidEncoding(format!("{}: {e}", path.display()))),
        // Keys from elsewhere (e.g. bellperson's): the shape check still applies.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { path, source }),
    }
}

fn check_info(dir: &Path, info: &KeyInfo, circuit: &str, size: &str) -> Result<(), Error> {
    if info.circuit != circuit || info.size != size {
        return Err(Error::InvalidInput(format!(
            "{} holds keys for {} {}, not {circuit} {size}",
            dir.display(),
            info.circuit,
            info.size,
        )));
    }
    Ok(())
}

/// A cached entry, checked completely: description, parameters, shape.
fn load_checked(dir: &Path, want: &KeyInfo, r1cs: &R1cs) -> Result<Keys, Error> {
    let info = read_info(dir)?
        .ok_or_else(|| Error::InvalidEncoding(format!("{}: no {INFO}", dir.display())))?;
    check_info(dir, &info, &want.circuit, &want.size)?;
    if info.synthetic != want.synthetic {
        return Err(Error::InvalidInput(format!(
            "{}: synthetic is {}, expected {}",
            dir.display(),
            info.synthetic,
            want.synthetic
        )));
    }
    let params = Parameters::load(&dir.join(PARAMS), false)?;
    params.check_shape(r1cs)?;
    Ok(Keys {
        params,
        info: Some(info),
        dir: dir.to_path_buf(),
    })
}
