//! Payloads too large for a row: content-addressed files in a shared folder.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::types::{ClaimedJob, Payload};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Checks that a payload folder exists and is a folder (a link to one is
/// followed). It is never created: it is the folder every node mounts, and
/// a missing one is a typo or a mount that is not there.
///
/// # Errors
///
/// [`Error::InvalidInput`] naming the folder when it does not exist, is
/// not a folder, or cannot be looked at.
pub fn check_payload_dir(dir: &Path) -> Result<()> {
    let bad = |why: String| Error::InvalidInput(format!("payload folder {}: {why}", dir.display()));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad("not a folder".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(bad(
            "does not exist (it is not created: it must be the folder the nodes share)".into(),
        )),
        Err(e) => Err(bad(e.to_string())),
    }
}

/// Writes `data` to `dir/<sha256>.payload` through a temporary file and a
/// rename (readers never see half a file) unless a file of that name and
/// length is there already. Returns the path as text for the row. The
/// folder must exist ([`check_payload_dir`]).
pub(crate) async fn spill(dir: PathBuf, data: Vec<u8>, digest: Vec<u8>) -> Result<String> {
    tokio::task::spawn_blocking(move || spill_blocking(&dir, &data, &digest))
        .await
        .map_err(|e| Error::Io {
            path: PathBuf::new(),
            source: std::io::Error::other(e.to_string()),
        })?
}

fn spill_blocking(dir: &Path, data: &[u8], digest: &[u8]) -> Result<String> {
    let name = format!("{}.payload", hex(digest));
    let path = dir.join(&name);
    let text = path
        .to_str()
        .ok_or_else(|| Error::InvalidInput(format!("{} is not UTF-8", path.display())))?
        .to_owned();
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == data.len() as u64) {
        return Ok(text);
    }
    check_payload_dir(dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Io { path, source: e });
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(text)
}

impl ClaimedJob {
    /// The payload's bytes: from the row, or read from its file and checked
    /// against the length and SHA-256 recorded at submit.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be read; [`Error::PayloadCorrupt`]
    /// if its length or digest differ from the row's.
    pub async fn payload_bytes(&self) -> Result<Vec<u8>> {
        match &self.payload {
            Payload::Inline(b) => Ok(b.clone()),
            Payload::File { path, len } => {
                let (path, len, digest) = (path.clone(), *len, self.payload_digest.clone());
                tokio::task::spawn_blocking(move || {
                    let meta = std::fs::metadata(&path).map_err(io(&path))?;
                    if meta.len() != len {
                        return Err(Error::PayloadCorrupt(path));
                    }
                    let data = std::fs::read(&path).map_err(io(&path))?;
                    if Sha256::digest(&data)[..] != digest[..] {
                        return Err(Error::PayloadCorrupt(path));
                    }
                    Ok(data)
                })
                .await
                .map_err(|e| Error::Io {
                    path: PathBuf::new(),
                    source: std::io::Error::other(e.to_string()),
                })?
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilling_never_creates_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing").join("pl");
        let e = spill_blocking(&missing, b"x", &[1; 32]).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(!dir.path().join("missing").exists());
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let e = spill_blocking(&file, b"x", &[1; 32]).unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        let path = spill_blocking(dir.path(), b"x", &[1; 32]).unwrap();
        assert_eq!(std::fs::read(path).unwrap(), b"x");
    }
}
