//! The scalar fields a circom witness can be over, as the witness generator
//! and the `.wtns` writer need them: BLS12-381's r and BN254's r.

use zkpipe_core::{Curve, Error, bn254};

/// A circom prime's field: small integers, the ring operations that parse
/// an input, and canonical little-endian bytes.
pub trait WitnessField: Copy + Send + 'static {
    /// The curve whose scalar field this is.
    const CURVE: Curve;
    /// Zero.
    const ZERO: Self;
    /// The element `v`.
    fn from_u64(v: u64) -> Self;
    /// `−self`.
    fn neg(&self) -> Self;
    /// `self + rhs`.
    fn add(&self, rhs: &Self) -> Self;
    /// `self · rhs`.
    fn mul(&self, rhs: &Self) -> Self;
    /// Canonical little-endian bytes.
    fn to_bytes_le(&self) -> [u8; 32];
    /// The element with canonical bytes `b`.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for a value not below r.
    fn from_bytes_le(b: &[u8; 32]) -> Result<Self, Error>;
}

macro_rules! witness_field {
    ($t:ty, $curve:expr) => {
        impl WitnessField for $t {
            const CURVE: Curve = $curve;
            const ZERO: Self = <$t>::ZERO;
            fn from_u64(v: u64) -> Self {
                <$t>::from_u64(v)
            }
            fn neg(&self) -> Self {
                <$t>::neg(self)
            }
            fn add(&self, rhs: &Self) -> Self {
                <$t>::add(self, rhs)
            }
            fn mul(&self, rhs: &Self) -> Self {
                <$t>::mul(self, rhs)
            }
            fn to_bytes_le(&self) -> [u8; 32] {
                <$t>::to_bytes_le(self)
            }
            fn from_bytes_le(b: &[u8; 32]) -> Result<Self, Error> {
                <$t>::from_bytes_le(b)
            }
        }
    };
}

witness_field!(zkpipe_core::Fr, Curve::Bls12_381);
witness_field!(bn254::Fr, Curve::Bn254);
