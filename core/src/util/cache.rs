//! zkpipe's cache folder (recorded R1CS, keys) and the rules every entry
//! follows: one process fills an entry while the others wait for it (a file
//! lock), an entry that cannot be used is moved aside and rebuilt, and a
//! write cut short leaves nothing that a later run mistakes for an entry.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::Error;

/// Environment variable naming the cache folder.
pub const CACHE_DIR_ENV: &str = "ZKPIPE_CACHE_DIR";

/// The cache folder: `$ZKPIPE_CACHE_DIR`, else `$XDG_CACHE_HOME/zkpipe`,
/// else `~/.cache/zkpipe`, else the temporary folder's `zkpipe-<uid>` (one
/// per user: a shared one would be the first user's).
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        });
    match home {
        Some(dir) => dir.join("zkpipe"),
        None => std::env::temp_dir().join(format!("zkpipe-{}", user_id())),
    }
}

#[cfg(unix)]
fn user_id() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
fn user_id() -> u32 {
    0
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `entry` with `suffix` appended to its file name.
fn sibling(entry: &Path, suffix: &str) -> PathBuf {
    let mut name = entry.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    entry.with_file_name(name)
}

/// An exclusive lock on one cache entry (the file `<entry>.lock`), held
/// while the entry is checked or filled; released on drop.
#[derive(Debug)]
pub struct EntryLock {
    _file: File,
}

impl EntryLock {
    /// Takes the lock of `entry`, calling `on_wait` first if another
    /// process holds it (then waits for it).
    ///
    /// # Errors
    /// [`Error::Io`] when the lock file cannot be made or locked.
    pub fn acquire(entry: &Path, on_wait: impl FnOnce()) -> Result<EntryLock, Error> {
        if let Some(dir) = entry.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let path = sibling(entry, ".lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                on_wait();
                file.lock().map_err(io(&path))?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        Ok(EntryLock { _file: file })
    }
}

/// Moves a cache entry that cannot be used out of the way
/// (`<entry>.broken-<unix seconds>`) and returns where it went.
///
/// # Errors
/// [`Error::Io`] when it cannot be moved.
pub fn move_aside(entry: &Path) -> Result<PathBuf, Error> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut aside = sibling(entry, &format!(".broken-{secs}"));
    let mut k = 1;
    while aside.exists() {
        aside = sibling(entry, &format!(".broken-{secs}-{k}"));
        k += 1;
    }
    std::fs::rename(entry, &aside).map_err(io(entry))?;
    Ok(aside)
}

/// A folder to fill before it becomes `entry` (renamed into place by
/// [`publish_dir`]); leftovers of writers that were killed are removed
/// first. Call with the entry's lock held.
///
/// # Errors
/// [`Error::Io`].
pub fn staging_dir(entry: &Path) -> Result<PathBuf, Error> {
    remove_leftovers(entry);
    let dir = sibling(entry, &format!(".tmp-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(dir)
}

/// Renames a filled staging folder to `entry`.
///
/// # Errors
/// [`Error::Io`].
pub fn publish_dir(staging: &Path, entry: &Path) -> Result<(), Error> {
    std::fs::rename(staging, entry).map_err(|e| {
        let _ = std::fs::remove_dir_all(staging);
        io(entry)(e)
    })
}

/// Removes `<entry>.tmp-*` left by writers that died mid-write.
fn remove_leftovers(entry: &Path) {
    let (Some(dir), Some(name)) = (entry.parent(), entry.file_name()) else {
        return;
    };
    let prefix = format!("{}.tmp-", name.to_string_lossy());
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for e in list.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

/// Environment variable: GB a cache entry leaves free on its file system
/// (default 1; `0` lets entries fill a disk of their own).
pub const KEEP_FREE_ENV: &str = "ZKPIPE_CACHE_KEEP_FREE_GB";

/// Space an entry leaves free on its file system by default: a cache must
/// not take the disk the user's own work needs.
pub const KEEP_FREE_BYTES: u64 = 1_000_000_000;

/// The space a cache entry leaves free: `$ZKPIPE_CACHE_KEEP_FREE_GB`, else
/// [`KEEP_FREE_BYTES`].
///
/// # Errors
/// [`Error::InvalidInput`] when the variable is set to anything but a
/// number of GB from 0 to 10^9.
pub fn keep_free_bytes() -> Result<u64, Error> {
    match std::env::var_os(KEEP_FREE_ENV).filter(|v| !v.is_empty()) {
        None => Ok(KEEP_FREE_BYTES),
        Some(v) => parse_keep_free(&v.to_string_lossy()),
    }
}

fn parse_keep_free(text: &str) -> Result<u64, Error> {
    match text.trim().parse::<f64>() {
        Ok(gb) if (0.0..=1e9).contains(&gb) => Ok((gb * 1e9) as u64),
        _ => Err(Error::InvalidInput(format!(
            "{KEEP_FREE_ENV}={text:?}: not a number of GB from 0 to 1e9 (e.g. 0, 1, 2.5)"
        ))),
    }
}

/// Whether an entry of `bytes` may be written under `dir`: `Some` says why
/// not (too little space), for a note; the caller then keeps what it made
/// in memory for this run only. Where the free space cannot be read the
/// write is tried (and its own error reported).
///
/// # Errors
/// As [`keep_free_bytes`].
pub fn room_for(dir: &Path, bytes: u64) -> Result<Option<String>, Error> {
    Ok(room_given(free_bytes(dir), bytes, keep_free_bytes()?))
}

fn room_given(free: Option<u64>, bytes: u64, keep: u64) -> Option<String> {
    match free {
        Some(free) if free < bytes.saturating_add(keep) => Some(format!(
            "it needs {:.1} GB and {:.1} GB are free ({:.1} GB is kept free: ${KEEP_FREE_ENV})",
            bytes as f64 / 1e9,
            free as f64 / 1e9,
            keep as f64 / 1e9
        )),
        _ => None,
    }
}

/// Bytes an unprivileged writer may still use on the file system holding
/// `dir` (its nearest existing ancestor), `None` where unknown.
#[cfg(unix)]
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = dir.ancestors().find(|d| d.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path; statvfs fills `st` when it returns 0.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let st = unsafe { st.assume_init() };
    // The fields' widths differ across platforms (u32 on some).
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Bytes free on the file system holding `dir`: unknown off Unix.
#[cfg(not(unix))]
pub fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

/// A file-name-safe form of a cache key part (`2^20` → `2_20`).
pub fn file_name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_entry_is_moved_aside_and_leftovers_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("e");
        std::fs::write(&entry, b"junk").unwrap();
        let aside = move_aside(&entry).unwrap();
        assert!(!entry.exists() && aside.exists());
        std::fs::create_dir(dir.path().join("e.tmp-999999")).unwrap();
        let staging = staging_dir(&entry).unwrap();
        assert!(!dir.path().join("e.tmp-999999").exists());
        std::fs::write(staging.join("x"), b"1").unwrap();
        publish_dir(&staging, &entry).unwrap();
        assert!(entry.join("x").exists() && !staging.exists());
    }

    #[test]
    fn an_entry_is_written_only_with_room_to_spare() {
        let keep = KEEP_FREE_BYTES;
        assert!(room_given(Some(10 << 30), 8 << 30, keep).is_none());
        let (free, bytes) = (9_500_000_000, 8_600_000_000);
        let why = room_given(Some(free), bytes, keep).unwrap();
        assert!(
            why.contains("needs 8.6 GB and 9.5 GB are free (1.0 GB is kept free"),
            "{why}"
        );
        assert!(room_given(Some(free), bytes, 0).is_none());
        assert!(room_given(None, u64::MAX, keep).is_none());
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(&dir.path().join("not/made/yet")).expect("statvfs");
        assert!(free > 0);
        assert!(room_given(Some(free), free, keep).is_some());
        assert!(room_given(Some(free), 0, 0).is_none());
    }

    #[test]
    fn the_space_kept_free_is_a_number_of_gb() {
        assert_eq!(parse_keep_free("0").unwrap(), 0);
        assert_eq!(parse_keep_free(" 2.5 ").unwrap(), 2_500_000_000);
        for bad in ["", "-1", "1GB", "NaN", "inf", "1e10", "0x10"] {
            let e = parse_keep_free(bad).unwrap_err().to_string();
            assert!(
                e.contains(KEEP_FREE_ENV) && e.contains("not a number"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn names_are_made_safe() {
        assert_eq!(file_name_part("2^20"), "2_20");
        assert_eq!(file_name_part("../x"), ".._x");
    }
}
