//! Where a command's output goes: a file, written atomically and checked
//! writable before any work, or stdout (`-`).

use std::io::Write;
use std::path::{Path, PathBuf};
use zkpipe_core::Error;
use zkpipe_core::util::fsutil::{check_writable, write_atomically};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where an output goes: a file (written atomically), or stdout.
#[derive(Debug)]
pub enum Output {
    File(PathBuf),
    Stdout,
}

impl Output {
    /// `given`, or `default` in the current folder; checked writable now,
    /// before any work.
    ///
    /// # Errors
    /// As [`check_writable`].
    pub fn resolve(given: Option<&Path>, default: String) -> Result<Output, Error> {
        let path = given.map_or_else(|| PathBuf::from(default), Path::to_path_buf);
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout);
        }
        check_writable(&path)?;
        Ok(Output::File(path))
    }

    /// Writes `bytes`: a file atomically (all or nothing), or stdout.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file (or `-`).
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            Output::File(p) => write_atomically(p, bytes),
            Output::Stdout => std::io::stdout()
                .write_all(bytes)
                .and_then(|()| std::io::stdout().flush())
                .map_err(io(Path::new("-"))),
        }
    }

    /// The file's path, or `stdout`.
    pub fn describe(&self) -> String {
        match self {
            Output::File(p) => p.display().to_string(),
            Output::Stdout => "stdout".into(),
        }
    }
}

/// A proof's and its public inputs' outputs (`--proof`, `--public`):
/// the flags, else the defaults; checked before any work against the
/// command's `inputs` and each other, and not both stdout.
///
/// # Errors
/// [`Error::InvalidInput`] for outputs that clash; errors of
/// [`Output::resolve`].
pub fn proof_outputs(
    inputs: &[(&str, &Path)],
    out: Option<&Path>,
    public_out: Option<&Path>,
    defaults: (String, String),
) -> Result<(Output, Output), Error> {
    let proof_path = out.map_or_else(|| defaults.0.into(), Path::to_path_buf);
    let public_path = public_out.map_or_else(|| defaults.1.into(), Path::to_path_buf);
    zkpipe_core::util::fsutil::check_outputs(
        inputs,
        &[("--proof", &proof_path), ("--public", &public_path)],
    )?;
    let proof_out = Output::resolve(Some(&proof_path), String::new())?;
    let public_out = Output::resolve(Some(&public_path), String::new())?;
    if matches!((&proof_out, &public_out), (Output::Stdout, Output::Stdout)) {
        return Err(Error::InvalidInput(
            "--proof - and --public - would both write to stdout: give one a file".into(),
        ));
    }
    Ok((proof_out, public_out))
}

/// A value for one partition, an array for several: how the public inputs
/// of one or many proofs are written.
pub fn one_or_many<T: serde::Serialize>(items: &[T]) -> String {
    if items.len() == 1 {
        serde_json::to_string(&items[0])
    } else {
        serde_json::to_string(items)
    }
    .expect("JSON values serialise")
}
