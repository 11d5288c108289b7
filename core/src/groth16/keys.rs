//! Proving and verifying keys in bellperson's byte layouts.
//!
//! `VerifyingKey::write`: α₁, β₁, β₂, γ₂, δ₁, δ₂ (uncompressed), then
//! `u32` big-endian count and the IC points. `Parameters::write`: the
//! verifying key, then H, L, A, B₁, B₂, each as a `u32` big-endian count
//! followed by uncompressed points. A, B₁ and B₂ hold points only for
//! variables that appear in A or B (bellperson drops the identities).
//!
//! Key files are untrusted input: every count is checked against the bytes
//! that remain before anything is allocated for it, a verifying key file is
//! bounded by its header before it is read, and keys that would make
//! verification meaningless (no IC points, γ or δ at infinity) are refused.

use memmap2::Mmap;
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::Path;

use super::odd_coset::HQuery;
use crate::Error;
use crate::r1cs::R1cs;
use crate::types::{G1Affine, G2Affine};
use crate::util::fsutil::write_atomically_with;

/// The verifying key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// `(β·u_i + α·v_i + w_i)/γ` in G1 per public input (the one included).
    pub ic: Vec<G1Affine>,
}

/// The proving key (bellperson's `Parameters`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameters {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// `τ^i·Z(τ)/δ` for i < n − 1, or snarkjs's odd-coset form (see `h_query`).
    pub h: Vec<G1Affine>,
    /// `(β·u_j + α·v_j + w_j)/δ` per aux variable.
    pub l: Vec<G1Affine>,
    /// `u_j(τ)` for inputs and the aux variables in A.
    pub a: Vec<G1Affine>,
    /// `v_j(τ)` in G1 for the variables in B.
    pub b_g1: Vec<G1Affine>,
    /// `v_j(τ)` in G2 for the variables in B.
    pub b_g2: Vec<G2Affine>,
    /// The form of `h`: bellman's (every key zkpipe makes or loads from
    /// bellperson's layout) or snarkjs's (keys read from a `.zkey`).
    pub h_query: HQuery,
}

fn write_g1s(w: &mut impl Write, points: &[G1Affine]) -> std::io::Result<()> {
    w.write_all(&(points.len() as u32).to_be_bytes())?;
    points
        .iter()
        .try_for_each(|p| w.write_all(&p.to_uncompressed()))
}

fn write_g2s(w: &mut impl Write, points: &[G2Affine]) -> std::io::Result<()> {
    w.write_all(&(points.len() as u32).to_be_bytes())?;
    points
        .iter()
        .try_for_each(|p| w.write_all(&p.to_uncompressed()))
}

/// A cursor over key bytes that names what it was reading when the data ran out.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    /// Check subgroup membership of bulk points (the VK is always checked).
    checked: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        if self.b.len() - self.pos < n {
            return Err(Error::InvalidEncoding(format!(
                "truncated key: {what} needs {n} bytes at offset {}, {} left",
                self.pos,
                self.b.len() - self.pos
            )));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A `u32` count. The points it announces are only read through
    /// [`Cursor::take`], which checks them against the bytes left: a hostile
    /// count gives a "truncated" error, never an allocation.
    fn count(&mut self, what: &str) -> Result<usize, Error> {
        Ok(u32::from_be_bytes(self.take(4, what)?.try_into().unwrap()) as usize)
    }

    fn g1(&mut self, what: &str) -> Result<G1Affine, Error> {
        G1Affine::from_uncompressed(self.take(96, what)?.try_into().unwrap())
            .map_err(|e| context(e, what))
    }

    fn g2(&mut self, what: &str) -> Result<G2Affine, Error> {
        G2Affine::from_uncompressed(self.take(192, what)?.try_into().unwrap())
            .map_err(|e| context(e, what))
    }

    fn g1s(&mut self, what: &str) -> Result<Vec<G1Affine>, Error> {
        let n = self.count(what)?;
        let bytes = self.take(n.checked_mul(96).ok_or_else(|| overflow(what))?, what)?;
        let checked = self.checked;
        bytes
            .par_chunks(96)
            .map(|c| {
                let c: &[u8; 96] = c.try_into().unwrap();
                if checked {
                    G1Affine::from_uncompressed(c)
                } else {
                    G1Affine::from_uncompressed_unchecked(c)
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|e| context(e, what))
    }

    fn g2s(&mut self, what: &str) -> Result<Vec<G2Affine>, Error> {
        let n = self.count(what)?;
        let bytes = self.take(n.checked_mul(192).ok_or_else(|| overflow(what))?, what)?;
        let checked = self.checked;
        bytes
            .par_chunks(192)
            .map(|c| {
                let c: &[u8; 192] = c.try_into().unwrap();
                if checked {
                    G2Affine::from_uncompressed(c)
                } else {
                    G2Affine::from_uncompressed_unchecked(c)
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|e| context(e, what))
    }
}

fn overflow(what: &str) -> Error {
    Error::InvalidEncoding(format!("{what}: count overflows"))
}

fn context(e: Error, what: &str) -> Error {
    Error::InvalidEncoding(format!("{what}: {e}"))
}

/// Bytes of a verifying key before its IC points: α₁, β₁, β₂, γ₂, δ₁, δ₂ and the IC count.
const VK_HEADER_BYTES: usize = 3 * 96 + 3 * 192 + 4;

impl VerifyingKey {
    /// The largest verifying key file [`VerifyingKey::load`] reads: 1 GiB,
    /// about 11 million public inputs.
    pub const MAX_FILE_BYTES: u64 = 1 << 30;

    /// Refuses a key that no honest setup produces and that would make
    /// verification meaningless or panic: no IC points (a key has one for
    /// the constant input at least), δ at infinity in G1 or G2 (bellperson's
    /// prover refuses it: a subverted key), γ at infinity (the public
    /// inputs' term `e(Σ xᵢ·ICᵢ, γ)` would vanish, so a proof would verify
    /// for any public inputs; bellperson's setup refuses γ = 0).
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] naming the field.
    pub fn validate(&self) -> Result<(), Error> {
        match self.defect() {
            Some(why) => Err(Error::InvalidEncoding(why)),
            None => Ok(()),
        }
    }

    /// What [`VerifyingKey::validate`] refuses, in words.
    pub(crate) fn defect(&self) -> Option<String> {
        if self.ic.is_empty() {
            return Some(
                "vk.ic has no points; a verifying key has at least one (for the constant input)"
                    .into(),
            );
        }
        [
            ("vk.gamma_g2", self.gamma_g2.is_identity()),
            ("vk.delta_g1", self.delta_g1.is_identity()),
            ("vk.delta_g2", self.delta_g2.is_identity()),
        ]
        .into_iter()
        .find(|&(_, at_infinity)| at_infinity)
        .map(|(what, _)| {
            format!("{what} is the point at infinity: a degenerate (subverted) key, refused")
        })
    }

    /// Writes bellperson's `VerifyingKey::write` layout.
    ///
    /// # Errors
    /// Any I/O error of `w`.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.alpha_g1.to_uncompressed())?;
        w.write_all(&self.beta_g1.to_uncompressed())?;
        w.write_all(&self.beta_g2.to_uncompressed())?;
        w.write_all(&self.gamma_g2.to_uncompressed())?;
        w.write_all(&self.delta_g1.to_uncompressed())?;
        w.write_all(&self.delta_g2.to_uncompressed())?;
        write_g1s(w, &self.ic)
    }

    fn read(c: &mut Cursor<'_>) -> Result<VerifyingKey, Error> {
        let (checked, was) = (true, c.checked);
        c.checked = checked;
        let vk = VerifyingKey {
            alpha_g1: c.g1("vk.alpha_g1")?,
            beta_g1: c.g1("vk.beta_g1")?,
            beta_g2: c.g2("vk.beta_g2")?,
            gamma_g2: c.g2("vk.gamma_g2")?,
            delta_g1: c.g1("vk.delta_g1")?,
            delta_g2: c.g2("vk.delta_g2")?,
            ic: c.g1s("vk.ic")?,
        };
        c.checked = was;
        vk.validate()?;
        Ok(vk)
    }

    /// Parses a verifying key (every point checked), rejecting trailing bytes
    /// and keys [`VerifyingKey::validate`] refuses.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] naming the field that failed.
    pub fn from_bytes(bytes: &[u8]) -> Result<VerifyingKey, Error> {
        let mut c = Cursor {
            b: bytes,
            pos: 0,
            checked: true,
        };
        let vk = VerifyingKey::read(&mut c)?;
        if c.pos != bytes.len() {
            return Err(Error::InvalidEncoding(format!(
                "{} bytes after the verifying key",
                bytes.len() - c.pos
            )));
        }
        Ok(vk)
    }

    /// Writes the key to `path` atomically.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        write_atomically_with(path, |w| self.write(w))
    }

    /// Reads a key file. The header's IC count fixes the file's size: a
    /// file of another size, or one whose count passes
    /// [`VerifyingKey::MAX_FILE_BYTES`], is refused before its points are
    /// read; a stream with no size (a pipe, `/dev/zero`) is read no further
    /// than the count allows.
    ///
    /// # Errors
    /// [`Error::Io`], or [`Error::InvalidEncoding`] for a file of the wrong
    /// size or a key [`VerifyingKey::from_bytes`] refuses.
    pub fn load(path: &Path) -> Result<VerifyingKey, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        crate::util::fsutil::check_input(path)?;
        let mut file = std::fs::File::open(path).map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        // A pipe or a device has no length to check: it is read no further than the key's.
        let file_len = metadata.is_file().then_some(metadata.len());
        let mut bytes = Vec::with_capacity(VK_HEADER_BYTES);
        (&mut file)
            .take(VK_HEADER_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() < VK_HEADER_BYTES {
            return Err(with_path(
                Error::InvalidEncoding(format!(
                    "truncated key: the header is {VK_HEADER_BYTES} bytes, the file has {}",
                    bytes.len()
                )),
                path,
            ));
        }
        let ic_count = u32::from_be_bytes(bytes[VK_HEADER_BYTES - 4..].try_into().unwrap());
        let key_len = VK_HEADER_BYTES as u64 + 96 * u64::from(ic_count);
        if key_len > Self::MAX_FILE_BYTES {
            return Err(with_path(
                Error::InvalidEncoding(format!(
                    "vk.ic: {ic_count} points make a {key_len}-byte key, over the limit of {} bytes",
                    Self::MAX_FILE_BYTES
                )),
                path,
            ));
        }
        if let Some(file_len) = file_len.filter(|&n| n != key_len) {
            return Err(with_path(
                Error::InvalidEncoding(format!(
                    "the file is {file_len} bytes, its header (vk.ic: {ic_count} points) makes a {key_len}-byte key"
                )),
                path,
            ));
        }
        // One byte past the key, so that trailing data is seen and refused.
        file.take(key_len - VK_HEADER_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        VerifyingKey::from_bytes(&bytes).map_err(|e| with_path(e, path))
    }
}

fn with_path(e: Error, path: &Path) -> Error {
    match e {
        Error::InvalidEncoding(m) => Error::InvalidEncoding(format!("{}: {m}", path.display())),
        other => other,
    }
}

impl Parameters {
    /// Writes bellperson's `Parameters::write` layout.
    ///
    /// # Errors
    /// Any I/O error of `w`; an error for a key in snarkjs's H form, which
    /// that layout cannot say.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        if self.h_query != HQuery::TauPowers {
            return Err(std::io::Error::other(
                "a key with snarkjs's H query cannot be written in bellperson's layout",
            ));
        }
        self.vk.write(w)?;
        write_g1s(w, &self.h)?;
        write_g1s(w, &self.l)?;
        write_g1s(w, &self.a)?;
        write_g1s(w, &self.b_g1)?;
        write_g2s(w, &self.b_g2)
    }

    /// Parses parameters. Bulk points are checked to lie on the curve; with
    /// `check_subgroups` also in the subgroup (slow: minutes for large keys).
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] naming the field that failed.
    pub fn from_bytes(bytes: &[u8], check_subgroups: bool) -> Result<Parameters, Error> {
        let mut c = Cursor {
            b: bytes,
            pos: 0,
            checked: check_subgroups,
        };
        let p = Parameters {
            vk: VerifyingKey::read(&mut c)?,
            h: c.g1s("h")?,
            l: c.g1s("l")?,
            a: c.g1s("a")?,
            b_g1: c.g1s("b_g1")?,
            b_g2: c.g2s("b_g2")?,
            h_query: HQuery::TauPowers,
        };
        if c.pos != bytes.len() {
            return Err(Error::InvalidEncoding(format!(
                "{} bytes after the parameters",
                bytes.len() - c.pos
            )));
        }
        Ok(p)
    }

    /// Size of the file [`Parameters::save`] writes.
    pub fn file_bytes(&self) -> u64 {
        // The verifying key: 3 G1 + 3 G2 points and IC; then five counted lists.
        let vk = 3 * 96 + 3 * 192 + 4 + 96 * self.vk.ic.len() as u64;
        let g1 = (self.a.len() + self.b_g1.len() + self.l.len() + self.h.len()) as u64;
        vk + 5 * 4 + 96 * g1 + 192 * self.b_g2.len() as u64
    }

    /// Writes the parameters to `path` atomically.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        write_atomically_with(path, |w| self.write(w))
    }

    /// Reads a parameter file through mmap. Parameter files have no size
    /// cap (Filecoin's are tens of GB); each count is checked against the
    /// bytes left in the map before its points are decoded.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::InvalidEncoding`].
    pub fn load(path: &Path, check_subgroups: bool) -> Result<Parameters, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        crate::util::fsutil::check_input(path)?;
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and dropped before returning; a file
        // rewritten underneath would at worst give garbage points, which
        // decoding rejects (one truncated underneath raises SIGBUS, as with
        // any mmap reader, bellperson's included).
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let params = Parameters::from_bytes(&map, check_subgroups).map_err(|e| with_path(e, path));
        crate::util::machine::return_freed_heap();
        params
    }

    /// Checks that these parameters were made for `r1cs` (counts of every query).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] saying which query does not fit.
    pub fn check_shape(&self, r1cs: &R1cs) -> Result<(), Error> {
        let d = r1cs.density();
        let count = |v: &[bool]| v.iter().filter(|&&b| b).count();
        let n = 1usize << super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
        let want = [
            (
                "vk.ic (public inputs + 1)",
                self.vk.ic.len(),
                r1cs.num_inputs,
            ),
            match self.h_query {
                HQuery::TauPowers => ("h (domain size − 1)", self.h.len(), n - 1),
                HQuery::OddCoset => ("h (domain size)", self.h.len(), n),
            },
            ("l (private variables)", self.l.len(), r1cs.num_aux),
            ("a", self.a.len(), r1cs.num_inputs + count(&d.a_aux)),
            ("b_g1", self.b_g1.len(), count(&d.b_input) + count(&d.b_aux)),
            ("b_g2", self.b_g2.len(), count(&d.b_input) + count(&d.b_aux)),
        ];
        for (what, have, need) in want {
            if have != need {
                return Err(Error::InvalidInput(format!(
                    "parameters do not fit this circuit: {what} has {have} points, the circuit needs {need} (params of another circuit or size?)"
                )));
            }
        }
        Ok(())
    }
}
