//! circom keys by the SHA-256 of their zkey: a folder of `NAME.zkey` +
//! `NAME.r1cs` pairs (`[keys] circom_dir`), hashed once per file version
//! (path, length, modification time), so a client names a key by the
//! bytes of the zkey it holds, never by a path on the server.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use zkpipe_core::Error;

/// The key kind (`KeyId::circuit`) of circom circuits.
pub const CIRCOM: &str = "circom";

/// Most `.zkey` files a folder may hold (a bound on a scan's work).
const MAX_ZKEYS: usize = 1024;

/// A zkey's SHA-256, as 64 lowercase hex digits.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn sha256_file(path: &Path) -> Result<String, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    zkpipe_core::util::fsutil::check_input(path)?;
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `s` is a SHA-256 in lowercase hex.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A circom key's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircomFiles {
    /// The snarkjs Groth16 proving key.
    pub zkey: PathBuf,
    /// Its circuit's constraints, beside it with the same stem.
    pub r1cs: PathBuf,
}

type Version = (u64, Option<SystemTime>);

/// The folder's zkeys by hash, kept between lookups.
#[derive(Debug)]
pub struct CircomIndex {
    dir: Option<PathBuf>,
    hashes: Mutex<HashMap<PathBuf, (Version, String)>>,
}

impl CircomIndex {
    /// An index of `dir` (`None`: circom keys are turned off).
    pub fn new(dir: Option<PathBuf>) -> Self {
        CircomIndex {
            dir,
            hashes: Mutex::new(HashMap::new()),
        }
    }

    /// The files of the zkey whose SHA-256 is `hash`, hashing the folder's
    /// zkeys that changed since the last lookup.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when circom keys are off, no zkey has that
    /// hash, or its `.r1cs` is missing; [`Error::Io`] reading the folder.
    pub fn find(&self, hash: &str) -> Result<CircomFiles, Error> {
        let Some(dir) = &self.dir else {
            return Err(Error::InvalidInput(
                "this daemon serves no circom keys (set keys.circom_dir)".into(),
            ));
        };
        let io = |source| Error::Io {
            path: dir.clone(),
            source,
        };
        let mut zkeys = vec![];
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|e| e == "zkey") && path.is_file() {
                zkeys.push(path);
            }
        }
        if zkeys.len() > MAX_ZKEYS {
            return Err(Error::InvalidInput(format!(
                "{}: {} zkeys, over the limit of {MAX_ZKEYS}",
                dir.display(),
                zkeys.len()
            )));
        }
        zkeys.sort();
        for zkey in zkeys {
            if self.hash_of(&zkey)? == hash {
                let r1cs = zkey.with_extension("r1cs");
                if !r1cs.is_file() {
                    return Err(Error::InvalidInput(format!(
                        "{} has no {} beside it (its circuit's constraints)",
                        zkey.display(),
                        r1cs.display()
                    )));
                }
                return Ok(CircomFiles { zkey, r1cs });
            }
        }
        Err(Error::InvalidInput(format!(
            "no zkey with SHA-256 {hash} in {} (copy the .zkey and its .r1cs there)",
            dir.display()
        )))
    }

    fn hash_of(&self, zkey: &Path) -> Result<String, Error> {
        let meta = std::fs::metadata(zkey).map_err(|source| Error::Io {
            path: zkey.to_path_buf(),
            source,
        })?;
        let version = (meta.len(), meta.modified().ok());
        if let Some((v, h)) = self.hashes.lock().unwrap().get(zkey)
            && *v == version
        {
            return Ok(h.clone());
        }
        let h = sha256_file(zkey)?;
        self.hashes
            .lock()
            .unwrap()
            .insert(zkey.to_path_buf(), (version, h.clone()));
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_zkey_by_its_hash_and_names_what_is_missing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.zkey"), b"zkey a").unwrap();
        std::fs::write(d.path().join("a.r1cs"), b"r1cs a").unwrap();
        std::fs::write(d.path().join("b.zkey"), b"zkey b").unwrap();
        let idx = CircomIndex::new(Some(d.path().to_path_buf()));
        let ha = sha256_file(&d.path().join("a.zkey")).unwrap();
        assert!(is_sha256_hex(&ha));
        assert_eq!(idx.find(&ha).unwrap().r1cs, d.path().join("a.r1cs"));
        let hb = sha256_file(&d.path().join("b.zkey")).unwrap();
        assert!(idx.find(&hb).unwrap_err().to_string().contains("b.r1cs"));
        let e = idx.find(&"0".repeat(64)).unwrap_err();
        assert!(e.to_string().contains("no zkey with SHA-256"), "{e}");
        let off = CircomIndex::new(None).find(&ha).unwrap_err();
        assert!(off.to_string().contains("keys.circom_dir"), "{off}");
        assert!(!is_sha256_hex("../etc"));
        assert!(!is_sha256_hex(&"A".repeat(64)));
    }
}
