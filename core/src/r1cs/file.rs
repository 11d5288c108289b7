//! The R1CS file format: matrices tagged with the circuit shape they were
//! recorded from, checked on load.

use sha2::{Digest, Sha256};
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
    /// Writes the matrices to `path` (atomically: a temporary file, then a
    /// rename), tagged with `key` — whatever identifies the circuit shape
    /// (name, size, code version); [`R1cs::load`] rejects another key.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path, key: &str) -> Result<(), Error> {
        let mut buf = Vec::with_capacity(64 + 3 * (self.a.nnz() * 36 + self.num_constraints() * 8));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
        buf.extend_from_slice(key.as_bytes());
        for v in [self.num_inputs, self.num_aux, self.num_constraints()] {
            buf.extend_from_slice(&(v as u64).to_le_bytes());
        }
        for m in [&self.a, &self.b, &self.c] {
            buf.extend_from_slice(&(m.nnz() as u64).to_le_bytes());
            m.row_ptr
                .iter()
                .for_each(|p| buf.extend_from_slice(&p.to_le_bytes()));
            m.cols
                .iter()
                .for_each(|c| buf.extend_from_slice(&c.to_le_bytes()));
            m.vals.iter().for_each(|v| {
                v.limbs
                    .iter()
                    .for_each(|l| buf.extend_from_slice(&l.to_le_bytes()))
            });
        }
        let sum = Sha256::digest(&buf);
        buf.extend_from_slice(&sum);
        crate::fsutil::write_atomically(path, &buf)
    }

    /// Reads matrices written by [`R1cs::save`] with the same `key`.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Cache`] when the file is corrupt, truncated, of
    /// another format version, or recorded for another key (stale).
    pub fn load(path: &Path, key: &str) -> Result<R1cs, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
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
        r.matrices()
            .ok_or_else(|| corrupt(path, "sizes in the header do not match the data"))
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
            let cols_ok = cols.iter().all(|&c| (c as usize) < num_inputs + num_aux);
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
