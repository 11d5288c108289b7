//! A Groth16 proof and its 192-byte encoding (bellperson's: compressed A, B, C).

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

impl Proof {
    /// Encoded size in bytes.
    pub const SIZE: usize = 48 + 96 + 48;

    /// bellperson's `Proof::write` bytes.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Parses one proof, checking every point is on the curve and in the subgroup.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for the wrong length, or a point error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, Error> {
        if bytes.len() != Self::SIZE {
            return Err(Error::InvalidEncoding(format!(
                "a proof is {} bytes, got {}",
                Self::SIZE,
                bytes.len()
            )));
        }
        Ok(Proof {
            a: G1Affine::from_compressed(bytes[..48].try_into().unwrap())?,
            b: G2Affine::from_compressed(bytes[48..144].try_into().unwrap())?,
            c: G1Affine::from_compressed(bytes[144..].try_into().unwrap())?,
        })
    }

    /// Parses a file of P proofs (P × 192 bytes, partitions in order).
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] when the length is not a positive multiple of 192.
    pub fn many_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>, Error> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(Self::SIZE) {
            return Err(Error::InvalidEncoding(format!(
                "a proof file holds a multiple of {} bytes, got {}",
                Self::SIZE,
                bytes.len()
            )));
        }
        bytes.chunks(Self::SIZE).map(Proof::from_bytes).collect()
    }
}
