//! Writing files so that readers never see half of one.

use std::io::Write;
use std::path::Path;

use crate::Error;

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
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
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
