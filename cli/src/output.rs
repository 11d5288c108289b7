//! Where a command's output goes: a file, written atomically and checked
//! writable before any work, or stdout (`-`).

use std::io::Write;
use std::path::{Path, PathBuf};
use zkpipe_core::Error;
use zkpipe_core::fsutil::{check_writable, write_atomically};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where an output goes: a file (written atomically), or stdout.
pub enum Output {
    File(PathBuf),
    Stdout,
}

impl Output {
    /// `given`, or `default` in the current folder; checked writable now,
    /// before any work.
    pub fn resolve(given: Option<&Path>, default: String) -> Result<Output, Error> {
        let path = given.map_or_else(|| PathBuf::from(default), Path::to_path_buf);
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout);
        }
        check_writable(&path)?;
        Ok(Output::File(path))
    }

    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            Output::File(p) => write_atomically(p, bytes),
            Output::Stdout => std::io::stdout()
                .write_all(bytes)
                .and_then(|()| std::io::stdout().flush())
                .map_err(io(Path::new("-"))),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Output::File(p) => p.display().to_string(),
            Output::Stdout => "stdout".into(),
        }
    }
}
