//! The R1CS file format: matrices tagged with the circuit shape they were
//! recorded from, checked on load.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

use super::{Csr, R1cs};
use crate::Error;
use crate::types::Fr;

const MAGIC: &[u8; 8] = b"ZKPR1CS\0";
/// Bump when the file layout or the recording's meaning changes.
const FORMAT_VERSION: u32 = 1;

fn corrupt(path: &Path, why: impl Into<String>) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        reason: why.into(),
    }
}

impl R1cs {
    /// Size of the file [`R1cs::save`] writes with `key`.
    pub fn file_bytes(&self, key: &str) -> u64 {
        let rows = self.num_constraints() as u64;
        let mats: u64 = [&self.a, &self.b, &self.c]
            .iter()
            .map(|m| 8 + 8 * (rows + 1) + 36 * m.nnz() as u64)
            .sum();
        (MAGIC.len() + 4 + 4 + key.len() + 24 + 32) as u64 + mats
    }

    /// Writes the matrices to `path` (atomically: a temporary file, then a
    /// rename), tagged with `key` — whatever identifies the circuit shape
    /// (name, size, code version); [`R1cs::load`] rejects another key.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path, key: &str) -> Result<(), Error> {
        // Streamed through the checksum: no second copy of the matrices in memory.
        crate::util::fsutil::write_atomically_with(path, |file| {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, Hashing::new(file));
            w.write_all(MAGIC)?;
            w.write_all(&FORMAT_VERSION.to_le_bytes())?;
            w.write_all(&(key.len() as u32).to_le_bytes())?;
            w.write_all(key.as_bytes())?;
            for v in [self.num_inputs, self.num_aux, self.num_constraints()] {
                w.write_all(&(v as u64).to_le_bytes())?;
            }
            for m in [&self.a, &self.b, &self.c] {
                w.write_all(&(m.nnz() as u64).to_le_bytes())?;
                for p in &m.row_ptr {
                    w.write_all(&p.to_le_bytes())?;
                }
                for c in &m.cols {
                    w.write_all(&c.to_le_bytes())?;
                }
                for v in &m.vals {
                    for l in &v.limbs {
                        w.write_all(&l.to_le_bytes())?;
                    }
                }
            }
            let hashing = w.into_inner().map_err(|e| e.into_error())?;
            let (file, sum) = hashing.finish();
            file.write_all(&sum)
        })
    }

    /// Reads matrices written by [`R1cs::save`] with the same `key`.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Cache`] when the file is corrupt, truncated, of
    /// another format version, or recorded for another key (stale).
    pub fn load(path: &Path, key: &str) -> Result<R1cs, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: read-only and dropped before returning; the entry's lock
        // keeps zkpipe processes from rewriting it meanwhile, and anything
        // else rewriting it gives bytes the checksum refuses (truncating it
        // underneath raises SIGBUS, as with parameter files). Mapped, not
        // read: a 2^27 R1CS is tens of GB, and the parsed matrices would
        // otherwise sit beside a second copy of them.
        let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        if bytes.len() < MAGIC.len() + 32 || &bytes[..8] != MAGIC {
            return Err(corrupt(path, "not a zkpipe R1CS cache file"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body)[..] != *sum {
            return Err(corrupt(
                path,
                "checksum mismatch (truncated or corrupted); delete it to re-record",
            ));
        }
        let mut r = Reader { b: &body[8..] };
        let version = r.u32().ok_or_else(|| corrupt(path, "truncated header"))?;
        if version != FORMAT_VERSION {
            return Err(corrupt(
                path,
                format!(
                    "format version {version}, this zkpipe reads {FORMAT_VERSION}; delete it to re-record"
                ),
            ));
        }
        let found = r
            .u32()
            .and_then(|n| r.take(n as usize))
            .map(|k| String::from_utf8_lossy(k).into_owned());
        let found = found.ok_or_else(|| corrupt(path, "truncated header"))?;
        if found != key {
            return Err(corrupt(
                path,
                format!("stale: recorded for `{found}`, expected `{key}`; delete it to re-record"),
            ));
        }
        let r1cs = r
            .matrices()
            .ok_or_else(|| corrupt(path, "sizes in the header do not match the data"));
        crate::util::machine::return_freed_heap();
        r1cs
    }
}

impl Reader<'_> {
    fn matrices(&mut self) -> Option<R1cs> {
        let (num_inputs, num_aux, rows) = (
            self.u64()? as usize,
            self.u64()? as usize,
            self.u64()? as usize,
        );
        let mut mats = Vec::with_capacity(3);
        for _ in 0..3 {
            let nnz = self.u64()? as usize;
            // Bound allocations by what the file can hold before trusting counts.
            if rows.checked_add(1)?.checked_mul(8)? > self.b.len()
                || nnz.checked_mul(36)? > self.b.len()
            {
                return None;
            }
            let row_ptr: Vec<u64> = (0..=rows).map(|_| self.u64()).collect::<Option<_>>()?;
            let cols: Vec<u32> = (0..nnz).map(|_| self.u32()).collect::<Option<_>>()?;
            let vals: Vec<Fr> = (0..nnz)
                .map(|_| {
                    Some(Fr {
                        limbs: [self.u64()?, self.u64()?, self.u64()?, self.u64()?],
                    })
                })
                .collect::<Option<_>>()?;
            let wires = num_inputs.checked_add(num_aux)?;
            let cols_ok = cols.iter().all(|&c| (c as usize) < wires);
            let rows_ok = row_ptr[0] == 0
                && row_ptr.windows(2).all(|w| w[0] <= w[1])
                && row_ptr[rows] as usize == nnz;
            if !cols_ok || !rows_ok {
                return None;
            }
            mats.push(Csr {
                row_ptr,
                cols,
                vals,
            });
        }
        let [a, b, c]: [Csr; 3] = mats.try_into().ok()?;
        self.b.is_empty().then_some(R1cs {
            num_inputs,
            num_aux,
            a,
            b,
            c,
        })
    }
}

/// Little-endian cursor over a buffer whose length the checksum already vouched for.
struct Reader<'a> {
    b: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.b.len() {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
}

/// A writer that checksums what passes through it.
struct Hashing<W> {
    inner: W,
    sum: Sha256,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            sum: Sha256::new(),
        }
    }

    /// The writer and the SHA-256 of everything written.
    fn finish(self) -> (W, [u8; 32]) {
        (self.inner, self.sum.finalize().into())
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
