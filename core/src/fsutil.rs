//! Files from and for strangers: read no more than a limit, and written so
//! that readers never see half of one, and never over something that is
//! not a file.

use std::io::{Read, Write};
use std::path::Path;

use crate::Error;

/// Reads `path` whole, refusing more than `limit` bytes: a file's size is
/// checked before reading, and a stream with no size (a pipe, `/dev/zero`)
/// is read no further than one byte past the limit.
///
/// # Errors
/// [`Error::Io`] naming the path; [`Error::InvalidInput`] for more than
/// `limit` bytes.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || {
        Error::InvalidInput(format!(
            "{}: larger than the limit of {limit} bytes",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_file() && meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` through a temporary file in the same folder,
/// synced and then renamed over `path`: either the old file or the whole new
/// one is there, never a partial one.
///
/// # Errors
/// [`Error::Io`] naming the path that failed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// Like [`write_atomically`], with the content produced by `fill`.
///
/// # Errors
/// [`Error::Io`] naming the path that failed.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    check_target(path)?;
    let (dir, name) = dir_and_name(path)?;
    remove_stale_temporaries(dir, &name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// The folder of `path` (`.` for a bare name) and its file name.
fn dir_and_name(path: &Path) -> Result<(&Path, String), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::InvalidInput(format!("{} names no file", path.display())))?;
    Ok((dir, name))
}

/// Refuses a target that exists and is not a regular file (a folder, a
/// device such as `/dev/null`, a fifo, a socket): renaming over it would
/// replace it.
fn check_target(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(Error::InvalidInput(format!(
            "{} exists and is not a regular file; refusing to replace it",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Checks, before any work, that [`write_atomically`] could write `path`:
/// the target is a regular file or absent, its folder exists and takes a
/// new file.
///
/// # Errors
/// [`Error::InvalidInput`] or [`Error::Io`] saying what is wrong.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    check_target(path)?;
    let (dir, name) = dir_and_name(path)?;
    if !dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    let probe = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Removes `.{name}.tmp-<pid>` files in `dir` whose writer is gone (killed
/// mid-write): no process with that id is running.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for e in list.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_string_lossy()
            .strip_prefix(&prefix)
            .map(str::to_string)
        else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok_and(|p| {
            p == std::process::id() || Path::new("/proc").join(p.to_string()).exists()
        });
        if !alive && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_replace_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_atomically(&sub, b"x").is_err());
        assert!(sub.is_dir());
        assert!(check_writable(&sub).is_err());
        #[cfg(unix)]
        {
            // A device node: /dev/null must stay a device.
            let null = Path::new("/dev/null");
            assert!(check_writable(null).is_err());
            assert!(write_atomically(null, b"x").is_err());
        }
        assert!(check_writable(&dir.path().join("missing/f")).is_err());
        assert!(check_writable(&dir.path().join("f")).is_ok());
        assert!(!dir.path().join("f").exists());
    }

    #[test]
    fn a_dead_writer_s_temporary_is_removed_on_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        // No process has id 4294967295 (above Linux's pid_max).
        let stale = dir.path().join(".out.tmp-4294967295");
        std::fs::write(&stale, b"half").unwrap();
        write_atomically(&dir.path().join("out"), b"whole").unwrap();
        assert!(!stale.exists());
        assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), b"whole");
    }
}
