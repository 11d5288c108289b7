//! The scalar fields of the curves zkpipe proves on (BLS12-381's r and
//! BN254's r) behind one trait, so that code over a circuit's values —
//! recorded R1CS, witnesses, test-key setup — is written once for both.

use crate::{Curve, Error, bn254};

/// A curve's scalar field: the ring operations, inversion and canonical
/// little-endian bytes.
pub trait ScalarField: Copy + PartialEq + Send + Sync + std::fmt::Debug + 'static {
    /// The curve whose scalar field this is.
    const CURVE: Curve;
    /// Zero.
    const ZERO: Self;
    /// One.
    fn one() -> Self;
    /// The element `v`.
    fn from_u64(v: u64) -> Self;
    /// Whether this is zero.
    fn is_zero(&self) -> bool;
    /// `−self`.
    fn neg(&self) -> Self;
    /// `self + rhs`.
    fn add(&self, rhs: &Self) -> Self;
    /// `self − rhs`.
    fn sub(&self, rhs: &Self) -> Self;
    /// `self · rhs`.
    fn mul(&self, rhs: &Self) -> Self;
    /// `1 / self`, or `None` for zero.
    fn inverse(&self) -> Option<Self>;
    /// A uniformly random element.
    fn random(rng: &mut impl rand_core::RngCore) -> Self;
    /// The primitive `2^log_n`-th root of unity the curve's NTT uses.
    fn root_of_unity(log_n: u32) -> Self;
    /// Canonical little-endian bytes.
    fn to_bytes_le(&self) -> [u8; 32];
    /// The element with canonical bytes `b`.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for a value not below r.
    fn from_bytes_le(b: &[u8; 32]) -> Result<Self, Error>;

    /// `self^(2^k)`.
    fn square_times(&self, k: u32) -> Self {
        (0..k).fold(*self, |x, _| x.mul(&x))
    }
}

macro_rules! scalar_field {
    ($t:ty, $curve:expr) => {
        impl ScalarField for $t {
            const CURVE: Curve = $curve;
            const ZERO: Self = <$t>::ZERO;
            fn one() -> Self {
                <$t>::one()
            }
            fn from_u64(v: u64) -> Self {
                <$t>::from_u64(v)
            }
            fn is_zero(&self) -> bool {
                <$t>::is_zero(self)
            }
            fn neg(&self) -> Self {
                <$t>::neg(self)
            }
            fn add(&self, rhs: &Self) -> Self {
                <$t>::add(self, rhs)
            }
            fn sub(&self, rhs: &Self) -> Self {
                <$t>::sub(self, rhs)
            }
            fn mul(&self, rhs: &Self) -> Self {
                <$t>::mul(self, rhs)
            }
            fn inverse(&self) -> Option<Self> {
                <$t>::inverse(self)
            }
            fn random(rng: &mut impl rand_core::RngCore) -> Self {
                <$t>::random(rng)
            }
            fn root_of_unity(log_n: u32) -> Self {
                <$t>::root_of_unity(log_n)
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

scalar_field!(crate::Fr, Curve::Bls12_381);
scalar_field!(bn254::Fr, Curve::Bn254);

#[cfg(test)]
mod tests {
    use super::*;

    fn laws<F: ScalarField>() {
        let mut rng = crate::util::sample::rng(3);
        let (x, y) = (F::random(&mut rng), F::random(&mut rng));
        assert_eq!(x.sub(&y).add(&y), x);
        assert_eq!(x.mul(&x.inverse().unwrap()), F::one());
        assert_eq!(x.add(&x.neg()), F::ZERO);
        assert_eq!(F::from_bytes_le(&x.to_bytes_le()).unwrap(), x);
        assert_eq!(x.square_times(2), x.mul(&x).mul(&x).mul(&x));
        assert!(F::ZERO.inverse().is_none());
        // ω of order exactly 2^10.
        let w = F::root_of_unity(10);
        assert_eq!(w.square_times(10), F::one());
        assert_ne!(w.square_times(9), F::one());
    }

    #[test]
    fn both_fields_keep_the_ring_laws() {
        laws::<crate::Fr>();
        laws::<bn254::Fr>();
    }
}
