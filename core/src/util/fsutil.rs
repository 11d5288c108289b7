//! Files from and for strangers: read only regular files and no more than
//! a limit, never write over an input, and write so that readers never see
//! half of a file, and never over something that is not a file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// Refuses an input that is not a regular file: a folder, a device such as
/// `/dev/zero` (endless), a fifo (opening it waits for a writer) or a
/// socket. Checked on the path, without opening it.
///
/// # Errors
/// [`Error::Io`] when it cannot be found; [`Error::InvalidInput`] naming
/// what it is instead.
pub fn check_input(path: &Path) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        return Ok(());
    }
    let what = if meta.is_dir() {
        "a folder"
    } else {
        kind_of_special(&meta)
    };
    Err(Error::InvalidInput(format!(
        "{} is {what}, not a regular file",
        path.display()
    )))
}

#[cfg(unix)]
fn kind_of_special(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a pipe (fifo)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn kind_of_special(_: &std::fs::Metadata) -> &'static str {
    "not a file"
}

/// Reads the regular file `path` whole, refusing more than `limit` bytes
/// (checked on its size before reading, and again while reading, should it
/// grow meanwhile).
///
/// # Errors
/// [`Error::Io`] naming the path; [`Error::InvalidInput`] for something
/// that is not a regular file, or more than `limit` bytes.
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
    check_input(path)?;
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.len() > limit {
        return Err(too_large());
    }
    #[cfg(unix)]
    if meta.len() >= PARALLEL_READ_FROM {
        return read_in_pieces(path, &file, meta.len());
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

/// Files from this size on are read in pieces on the pool.
const PARALLEL_READ_FROM: u64 = 64 << 20;
/// Bytes one task reads.
const READ_PIECE: usize = 8 << 20;

/// The `len` bytes of `file`, read in pieces side by side: the kernel's
/// copies and the zeroing of the buffer's fresh pages (most of a one-thread
/// read of a cached 562 MB zkey) then run on every thread. A file that
/// changes size meanwhile is refused.
#[cfg(unix)]
fn read_in_pieces(path: &Path, file: &std::fs::File, len: u64) -> Result<Vec<u8>, Error> {
    let size = usize::try_from(len).map_err(|_| {
        Error::InvalidInput(format!(
            "{}: {len} bytes do not fit in memory",
            path.display()
        ))
    })?;
    // Zeroed by the allocator's fresh mapping: its pages are touched first
    // by the reads below, each on its own thread.
    let mut bytes = vec![0u8; size];
    read_at_in_pieces(path, file, len, 0, &mut bytes)?;
    Ok(bytes)
}

/// Fills `out` with the bytes of `file` from `offset` on, in pieces read
/// side by side on the pool (pages of a fresh `out` are first touched by
/// the thread that reads them); then checks that the file still has
/// `planned_size`, the size `offset` and `out` were planned from.
///
/// # Errors
/// [`Error::Io`] naming the path (a file cut short meanwhile among them);
/// [`Error::InvalidInput`] when the file changed size while it was read.
#[cfg(unix)]
pub fn read_at_in_pieces(
    path: &Path,
    file: &std::fs::File,
    planned_size: u64,
    offset: u64,
    out: &mut [u8],
) -> Result<(), Error> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    out.par_chunks_mut(READ_PIECE)
        .enumerate()
        .try_for_each(|(i, piece)| file.read_exact_at(piece, offset + (i * READ_PIECE) as u64))
        .map_err(io)?;
    check_unchanged(path, file, planned_size)
}

/// Refuses a file whose size is no longer `planned_size` (what its reader
/// planned from), after it was read.
fn check_unchanged(path: &Path, file: &std::fs::File, planned_size: u64) -> Result<(), Error> {
    let size = file.metadata().map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if size.len() != planned_size {
        return Err(Error::InvalidInput(format!(
            "{} changed size while it was read",
            path.display()
        )));
    }
    Ok(())
}

/// [`read_at_in_pieces`] in one piece, where positional reads are not
/// offered.
///
/// # Errors
/// As the Unix version.
#[cfg(not(unix))]
pub fn read_at_in_pieces(
    path: &Path,
    mut file: &std::fs::File,
    planned_size: u64,
    offset: u64,
    out: &mut [u8],
) -> Result<(), Error> {
    use std::io::{Seek, SeekFrom};
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    file.read_exact(out).map_err(io)?;
    check_unchanged(path, file, planned_size)
}

/// A path as the file system resolves it: the file itself when it exists,
/// else its resolved folder joined with its name; `None` when neither
/// resolves (a missing folder, which writing will report).
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let (dir, name) = dir_and_name(path).ok()?;
    Some(std::fs::canonicalize(dir).ok()?.join(name))
}

/// Whether two existing paths are one file (hard links included).
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &Path, _: &Path) -> bool {
    false
}

/// The flags among `flags` that name a file: `(flag, path)` for each
/// `Some`, for [`check_outputs`]'s inputs.
pub fn given<'a>(flags: &[(&'a str, Option<&'a Path>)]) -> Vec<(&'a str, &'a Path)> {
    flags
        .iter()
        .filter_map(|&(flag, path)| Some((flag, path?)))
        .collect()
}

/// Refuses, before any work, outputs that would destroy an input or each
/// other: an output that is an input's file (by name, through links, or a
/// hard link to it), one inside an input folder (keys named as inputs are
/// never changed), or two outputs that are one file (the second write would
/// leave only it). Each path comes with the flag that named it; `-`
/// (stdout) is no file.
///
/// # Errors
/// [`Error::InvalidInput`] naming both flags.
pub fn check_outputs(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), Error> {
    let outputs: Vec<(&str, &Path, Option<PathBuf>)> = outputs
        .iter()
        .filter(|(_, p)| p.as_os_str() != "-")
        .map(|&(flag, p)| (flag, p, resolved(p)))
        .collect();
    for (i, (flag, path, at)) in outputs.iter().enumerate() {
        for (other_flag, other, other_at) in &outputs[..i] {
            if (at.is_some() && at == other_at) || same_file(path, other) {
                return Err(Error::InvalidInput(format!(
                    "{other_flag} and {flag} both name {}: give each output its own file",
                    path.display()
                )));
            }
        }
        for &(in_flag, input) in inputs {
            let input_at = resolved(input);
            let clash = if input.is_dir() {
                matches!((at, &input_at), (Some(o), Some(d)) if o.starts_with(d))
            } else {
                (at.is_some() && *at == input_at) || same_file(path, input)
            };
            if clash {
                let how = if input.is_dir() { "is inside" } else { "is" };
                return Err(Error::InvalidInput(format!(
                    "{flag} {} {how} the input {in_flag} {}: refusing to overwrite an input",
                    path.display(),
                    input.display()
                )));
            }
        }
    }
    Ok(())
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

/// Checks, before any work, that `dir` can receive files: made now when
/// missing (with its parents), then probed as [`check_writable`] does.
///
/// # Errors
/// [`Error::Io`] or [`Error::InvalidInput`] saying what is wrong.
pub fn check_writable_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    check_writable(&dir.join("params.bin"))
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

    #[cfg(unix)]
    /// A file past the size read in pieces comes back whole and in order,
    /// and the limit still holds.
    #[test]
    fn large_files_are_read_in_pieces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let len = PARALLEL_READ_FROM as usize + READ_PIECE / 2 + 3;
        let data: Vec<u8> = (0..len)
            .map(|i| (i % 251) as u8 ^ (i >> 20) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        assert!(read_capped(&path, len as u64).unwrap() == data);
        assert!(matches!(
            read_capped(&path, len as u64 - 1),
            Err(Error::InvalidInput(m)) if m.contains("larger than the limit")
        ));
    }

    #[cfg(unix)]
    /// A file that grows after its size was taken is refused; one that
    /// shrank fails its read, naming the file.
    #[test]
    fn a_file_that_changes_size_while_read_in_pieces_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moving");
        std::fs::write(&path, vec![7u8; 3 * READ_PIECE]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let grown = read_in_pieces(&path, &file, 2 * READ_PIECE as u64).unwrap_err();
        assert!(
            grown.to_string().contains("changed size while it was read"),
            "{grown}"
        );
        let shrunk = read_in_pieces(&path, &file, 4 * READ_PIECE as u64).unwrap_err();
        assert!(
            matches!(&shrunk, Error::Io { path: p, .. } if *p == path),
            "{shrunk}"
        );
    }

    #[test]
    fn inputs_that_are_not_regular_files_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_capped(Path::new("/dev/zero"), 1 << 30).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let e = read_capped(dir.path(), 10).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        // A fifo with no writer: opening it would wait forever.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_capped(&fifo, 10).unwrap_err();
            assert!(e.to_string().contains("pipe"), "{e}");
        }
        let f = dir.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_capped(&f, 5).unwrap(), b"12345");
        assert!(read_capped(&f, 4).is_err());
    }

    #[test]
    fn an_output_never_overwrites_an_input_or_another_output() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let zkey = d.join("c.zkey");
        std::fs::write(&zkey, b"key").unwrap();
        let keys = d.join("keys");
        std::fs::create_dir(&keys).unwrap();
        let proof = d.join("proof.json");
        let ok = check_outputs(
            &[("--zkey", &zkey), ("--params", &keys)],
            &[("--proof", &proof), ("--public", Path::new("-"))],
        );
        assert!(ok.is_ok(), "{ok:?}");
        // The same file by another spelling.
        let spelled = d.join("keys/../c.zkey");
        let e = check_outputs(&[("--zkey", &zkey)], &[("--proof", &spelled)]).unwrap_err();
        assert!(e.to_string().contains("--proof"), "{e}");
        assert!(e.to_string().contains("--zkey"), "{e}");
        // Inside an input folder, even a file not there yet.
        let e = check_outputs(
            &[("--params", &keys)],
            &[("--out", &keys.join("params.bin"))],
        )
        .unwrap_err();
        assert!(e.to_string().contains("inside"), "{e}");
        // Two outputs, one file (not there yet).
        let e = check_outputs(&[], &[("--out", &proof), ("--public-out", &proof)]).unwrap_err();
        assert!(e.to_string().contains("both name"), "{e}");
        // A hard link to an input.
        #[cfg(unix)]
        {
            let link = d.join("link");
            std::fs::hard_link(&zkey, &link).unwrap();
            assert!(check_outputs(&[("--zkey", &zkey)], &[("--proof", &link)]).is_err());
        }
        // A symbolic link to an input.
        #[cfg(unix)]
        {
            let sym = d.join("sym");
            std::os::unix::fs::symlink(&zkey, &sym).unwrap();
            assert!(check_outputs(&[("--zkey", &zkey)], &[("--proof", &sym)]).is_err());
        }
    }
}
