//! A Groth16 proof and its 192-byte encoding (bellperson's: compressed A, B, C).

use std::path::Path;

use crate::Error;
use crate::types::{G1Affine, G2Affine};

/// A proof: A, C in G1 and B in G2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// A.
    pub a: G1Affine,
    /// B.
    pub b: G2Affine,
    /// C.
    pub c: G1Affine,
}

/// Puts `what` (which proof, which point) in front of a point's decoding error,
/// keeping its kind.
fn naming(what: String) -> impl FnOnce(Error) -> Error {
    move |e| match e {
        Error::NotOnCurve(point) => Error::NotOnCurve(format!("{what}: {point}")),
        Error::NotInSubgroup(point) => Error::NotInSubgroup(format!("{what}: {point}")),
        Error::InvalidEncoding(m) => Error::InvalidEncoding(format!("{what}: {m}")),
        other => other,
    }
}

impl Proof {
    /// Encoded size in bytes.
    pub const SIZE: usize = 48 + 96 + 48;

    /// The largest proof file [`Proof::load_many`] reads: 2^20 proofs.
    pub const MAX_FILE_BYTES: u64 = (Self::SIZE as u64) << 20;

    /// bellperson's `Proof::write` bytes.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Parses one proof, checking every point is canonically encoded, on the
    /// curve and in the subgroup.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for the wrong length or a malformed point,
    /// [`Error::NotOnCurve`] or [`Error::NotInSubgroup`], naming the point.
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, Error> {
        if bytes.len() != Self::SIZE {
            return Err(Error::InvalidEncoding(format!(
                "a proof is {} bytes, got {}",
                Self::SIZE,
                bytes.len()
            )));
        }
        Ok(Proof {
            a: G1Affine::from_compressed(bytes[..48].try_into().unwrap())
                .map_err(naming("A".into()))?,
            b: G2Affine::from_compressed(bytes[48..144].try_into().unwrap())
                .map_err(naming("B".into()))?,
            c: G1Affine::from_compressed(bytes[144..].try_into().unwrap())
                .map_err(naming("C".into()))?,
        })
    }

    /// Parses a file of P proofs (P × 192 bytes, partitions in order).
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] when the length is not a positive multiple
    /// of 192; any error of [`Proof::from_bytes`], naming the proof.
    pub fn many_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>, Error> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(Self::SIZE) {
            return Err(Error::InvalidEncoding(format!(
                "a proof file holds a multiple of {} bytes, got {}",
                Self::SIZE,
                bytes.len()
            )));
        }
        bytes
            .chunks(Self::SIZE)
            .enumerate()
            .map(|(i, chunk)| Proof::from_bytes(chunk).map_err(naming(format!("proof {i}"))))
            .collect()
    }

    /// Reads a proof file of at most [`Proof::MAX_FILE_BYTES`]: a larger file
    /// is refused before it is read, and a stream with no size (a pipe,
    /// `/dev/zero`) is read no further than the limit.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::InvalidInput`] for a file over the limit;
    /// any error of [`Proof::many_from_bytes`]. Errors name the file.
    pub fn load_many(path: &Path) -> Result<Vec<Proof>, Error> {
        let bytes = crate::util::fsutil::read_capped(path, Self::MAX_FILE_BYTES)?;
        Proof::many_from_bytes(&bytes).map_err(naming(path.display().to_string()))
    }
}
