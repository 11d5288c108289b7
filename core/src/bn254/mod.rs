//! BN254's field and curve types at the plugin seam.
//!
//! Like BLS12-381's [`types`](crate::types), each is a `#[repr(C)]` array
//! of little-endian `u64` limbs in Montgomery form, so a GPU or another
//! plugin reads them without conversion. The Montgomery constant is 2^256
//! for both fields (the convention of halo2curves, arkworks, gnark and
//! sppark). Affine points are `(x, y)` with the identity all zeros;
//! projective points are homogeneous `(X : Y : Z)` with `x = X/Z, y = Y/Z`,
//! `Z = 0` the identity. Host arithmetic goes through halo2curves (chosen by
//! measurement; see the benchmarks page): [`Fr::h2c`] and `from_h2c` convert
//! by copying limbs, with no arithmetic.

use abi_stable::StableAbi;
use halo2curves::CurveAffine as _;
use halo2curves::bn256;
use halo2curves::ff::{Field, PrimeField};
use halo2curves::group::{Curve as _, Group as _, prime::PrimeCurveAffine as _};
use rand_core::RngCore;

use crate::Error;

pub mod cpu;
pub mod groth16;
pub mod prover;
pub mod setup;

/// Two-adicity of r − 1: BN254's Fr has roots of unity of order up to 2^28.
pub const FR_TWO_ADICITY: u32 = 28;

/// (r − 1) / 2^28, the odd part of Fr*'s order, little-endian limbs.
const R_MINUS_1_ODD: [u64; 4] = [
    0x9b97_0914_3e1f_593f,
    0x1815_85d2_833e_8487,
    0x131a_029b_8504_5b68,
    0x0000_0003_0644_e72e,
];

/// An element of BN254's scalar field Fr (r ≈ 2^254), Montgomery form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct Fr {
    /// Little-endian Montgomery limbs.
    pub limbs: [u64; 4],
}

/// An element of BN254's base field Fp (q ≈ 2^254), Montgomery form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct Fp {
    /// Little-endian Montgomery limbs.
    pub limbs: [u64; 4],
}

/// An element of Fp2 = Fp\[u\]/(u² + 1): `c[0] + c[1]·u`.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct Fp2 {
    /// The coefficients of 1 and u.
    pub c: [Fp; 2],
}

impl Fr {
    /// The additive identity.
    pub const ZERO: Fr = Fr { limbs: [0; 4] };

    /// The halo2curves value these limbs are.
    #[inline]
    pub fn h2c(&self) -> bn256::Fr {
        bn256::Fr(self.limbs)
    }
    /// The seam value of a halo2curves element.
    #[inline]
    pub fn from_h2c(v: bn256::Fr) -> Fr {
        Fr { limbs: v.0 }
    }
    /// The field element with the given small integer value.
    pub fn from_u64(v: u64) -> Fr {
        Fr::from_h2c(bn256::Fr::from(v))
    }
    /// The multiplicative identity.
    pub fn one() -> Fr {
        Fr::from_h2c(bn256::Fr::ONE)
    }
    /// Whether this is zero.
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.limbs == [0; 4]
    }
    /// A uniform element.
    pub fn random(rng: &mut impl RngCore) -> Fr {
        Fr::from_h2c(bn256::Fr::random(rng))
    }
    /// `−self`.
    #[inline]
    pub fn neg(&self) -> Fr {
        Fr::from_h2c(-self.h2c())
    }
    /// `self + rhs`.
    #[inline]
    pub fn add(&self, rhs: &Fr) -> Fr {
        Fr::from_h2c(self.h2c() + rhs.h2c())
    }
    /// `1/self`, or `None` for zero.
    pub fn inverse(&self) -> Option<Fr> {
        Option::from(self.h2c().invert()).map(Fr::from_h2c)
    }
    /// `self − rhs`.
    #[inline]
    pub fn sub(&self, rhs: &Fr) -> Fr {
        Fr::from_h2c(self.h2c() - rhs.h2c())
    }
    /// `self · rhs`.
    #[inline]
    pub fn mul(&self, rhs: &Fr) -> Fr {
        Fr::from_h2c(self.h2c() * rhs.h2c())
    }
    /// A primitive `2^log_n`-th root of unity: 5^((r−1)/2^28) squared
    /// `28 − log_n` times. 5 is Fr's least quadratic non-residue: the root
    /// snarkjs, arkworks and gnark use, so that domains (and the points a
    /// zkey's quotient terms are evaluated at) agree with theirs.
    ///
    /// # Panics
    /// If `log_n > 28` (Fr has no such root).
    pub fn root_of_unity(log_n: u32) -> Fr {
        assert!(
            log_n <= FR_TWO_ADICITY,
            "BN254's Fr has no 2^{log_n}-th root of unity"
        );
        let mut w = bn256::Fr::from(5).pow_vartime(R_MINUS_1_ODD);
        for _ in log_n..FR_TWO_ADICITY {
            w = w.square();
        }
        Fr::from_h2c(w)
    }
    /// Canonical little-endian bytes (snarkjs's and circom's encoding).
    pub fn to_bytes_le(&self) -> [u8; 32] {
        self.h2c().to_repr().into()
    }
    /// The canonical value in decimal (snarkjs's JSON).
    pub fn to_decimal(&self) -> String {
        decimal_le(self.to_bytes_le())
    }
    /// The element with canonical little-endian bytes `bytes`.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for a value ≥ r.
    pub fn from_bytes_le(bytes: &[u8; 32]) -> Result<Fr, Error> {
        Option::from(bn256::Fr::from_repr((*bytes).into()))
            .map(Fr::from_h2c)
            .ok_or_else(|| Error::InvalidEncoding("a BN254 scalar is not below r".into()))
    }
}

impl Fp {
    /// q, little-endian limbs.
    pub const MODULUS: [u64; 4] = [
        0x3c20_8c16_d87c_fd47,
        0x9781_6a91_6871_ca8d,
        0xb850_45b6_8181_585d,
        0x3064_4e72_e131_a029,
    ];

    /// The element with canonical little-endian bytes `bytes`.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for a value ≥ q.
    pub fn from_bytes_le(bytes: &[u8; 32]) -> Result<Fp, Error> {
        Option::from(bn256::Fq::from_repr((*bytes).into()))
            .map(Fp::from_h2c)
            .ok_or_else(|| Error::InvalidEncoding("a BN254 coordinate is not below q".into()))
    }
    /// The halo2curves value these limbs are.
    #[inline]
    pub fn h2c(&self) -> bn256::Fq {
        bn256::Fq(self.limbs)
    }
    /// The seam value of a halo2curves element.
    #[inline]
    pub fn from_h2c(v: bn256::Fq) -> Fp {
        Fp { limbs: v.0 }
    }
    /// Canonical little-endian bytes.
    pub fn to_bytes_le(&self) -> [u8; 32] {
        self.h2c().to_repr().into()
    }
    /// The canonical value in decimal (snarkjs's JSON).
    pub fn to_decimal(&self) -> String {
        decimal_le(self.to_bytes_le())
    }
}

/// Canonical little-endian bytes in decimal.
fn decimal_le(bytes: [u8; 32]) -> String {
    let limbs: [u64; 4] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()));
    crate::util::decimal::limbs_to_decimal(&limbs)
}

impl Fp2 {
    /// The halo2curves value these limbs are.
    #[inline]
    pub fn h2c(&self) -> bn256::Fq2 {
        bn256::Fq2::new(self.c[0].h2c(), self.c[1].h2c())
    }
    /// The seam value of a halo2curves element.
    #[inline]
    pub fn from_h2c(v: bn256::Fq2) -> Fp2 {
        Fp2 {
            c: [Fp::from_h2c(*v.c0()), Fp::from_h2c(*v.c1())],
        }
    }
}

/// Whether r·p is the identity, by double-and-add over r's bits: the
/// subgroup check. (halo2curves' `is_torsion_free` for G2 prints to stdout
/// with its `std` feature, which would corrupt a command's output.)
fn times_r_is_identity<G: halo2curves::group::Group>(p: G) -> bool {
    let r = crate::Curve::Bn254.scalar_modulus_le();
    let mut acc = G::identity();
    for byte in r.iter().rev() {
        for bit in (0..8).rev() {
            acc = acc.double();
            if (byte >> bit) & 1 == 1 {
                acc += p;
            }
        }
    }
    bool::from(acc.is_identity())
}

/// G1 and G2 alike: the seam's affine and projective types and their
/// halo2curves twins.
macro_rules! group_types {
    ($g:literal, $base:ty, $aff:ident, $proj:ident, $h2c_aff:ident, $h2c_proj:ident, $cofactor_one:expr) => {
        #[doc = concat!("A ", $g, " point in affine coordinates; the identity is all zeros.")]
        #[repr(C)]
        #[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
        pub struct $aff {
            /// x.
            pub x: $base,
            /// y.
            pub y: $base,
        }

        #[doc = concat!("A ", $g, " point in homogeneous projective coordinates; `z = 0` is the identity.")]
        /// Equality of the representation is not equality of points: use `eq_point`.
        #[repr(C)]
        #[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
        pub struct $proj {
            /// X.
            pub x: $base,
            /// Y.
            pub y: $base,
            /// Z.
            pub z: $base,
        }

        impl $aff {
            /// The halo2curves point these coordinates are.
            #[inline]
            pub fn h2c(&self) -> bn256::$h2c_aff {
                bn256::$h2c_aff {
                    x: self.x.h2c(),
                    y: self.y.h2c(),
                }
            }
            /// The seam value of a halo2curves point.
            #[inline]
            pub fn from_h2c(p: bn256::$h2c_aff) -> Self {
                $aff {
                    x: <$base>::from_h2c(p.x),
                    y: <$base>::from_h2c(p.y),
                }
            }
            /// The group's generator.
            pub fn generator() -> Self {
                Self::from_h2c(bn256::$h2c_aff::generator())
            }
            /// Whether this is the identity.
            pub fn is_identity(&self) -> bool {
                *self == Self::default()
            }
            /// Whether the point is on the curve (the identity is).
            pub fn is_on_curve(&self) -> bool {
                self.is_identity() || bool::from(self.h2c().is_on_curve())
            }
            /// Whether a point on the curve is in the prime-order subgroup
            /// (every one is in G1, whose cofactor is 1).
            pub fn is_in_subgroup(&self) -> bool {
                $cofactor_one || self.is_identity() || times_r_is_identity(self.h2c().to_curve())
            }
            /// `s·self`.
            pub fn mul(&self, s: &Fr) -> $proj {
                $proj::from_h2c(self.h2c() * s.h2c())
            }
            /// `−self`.
            pub fn neg(&self) -> Self {
                Self::from_h2c(-self.h2c())
            }
            /// Whether the point is on the curve and in the prime-order subgroup.
            pub fn is_valid(&self) -> bool {
                self.is_on_curve() && self.is_in_subgroup()
            }
            /// The same point, projective.
            pub fn to_projective(&self) -> $proj {
                $proj::from_h2c(self.h2c().to_curve())
            }
        }

        impl $proj {
            /// The halo2curves point these coordinates are.
            #[inline]
            pub fn h2c(&self) -> bn256::$h2c_proj {
                bn256::$h2c_proj {
                    x: self.x.h2c(),
                    y: self.y.h2c(),
                    z: self.z.h2c(),
                }
            }
            /// The seam value of a halo2curves point.
            #[inline]
            pub fn from_h2c(p: bn256::$h2c_proj) -> Self {
                $proj {
                    x: <$base>::from_h2c(p.x),
                    y: <$base>::from_h2c(p.y),
                    z: <$base>::from_h2c(p.z),
                }
            }
            /// The identity.
            pub fn identity() -> Self {
                Self::from_h2c(bn256::$h2c_proj::identity())
            }
            /// The same point, affine.
            pub fn to_affine(&self) -> $aff {
                $aff::from_h2c(self.h2c().to_affine())
            }
            /// Whether both represent the same point.
            pub fn eq_point(&self, other: &Self) -> bool {
                self.h2c() == other.h2c()
            }
            /// `self + other`.
            pub fn add(&self, other: &Self) -> Self {
                Self::from_h2c(self.h2c() + other.h2c())
            }
        }
    };
}

group_types!("BN254 G1", Fp, G1Affine, G1Projective, G1Affine, G1, true);
group_types!("BN254 G2", Fp2, G2Affine, G2Projective, G2Affine, G2, false);

/// Seeded random inputs for tests and benchmarks: `n` scalars, or `n`
/// subgroup points by a random walk from `seed` (one addition a point).
pub mod sample {
    use super::*;
    use crate::util::sample::rng;
    use rayon::prelude::*;

    const CHUNK: usize = 1024;

    /// `n` uniform scalars from `seed`.
    pub fn scalars(n: usize, seed: u64) -> Vec<Fr> {
        let mut out = vec![Fr::ZERO; n];
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(i, chunk)| {
                let mut r = rng(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                chunk.iter_mut().for_each(|s| *s = Fr::random(&mut r));
            });
        out
    }

    macro_rules! walk {
        ($name:ident, $aff:ident, $h2c_aff:ident, $h2c_proj:ident) => {
            /// `n` points of the prime-order subgroup from `seed`.
            pub fn $name(n: usize, seed: u64) -> Vec<$aff> {
                let mut out = vec![$aff::default(); n];
                out.par_chunks_mut(CHUNK)
                    .enumerate()
                    .for_each(|(i, chunk)| {
                        let mut r = rng(seed ^ (i as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
                        let g = bn256::$h2c_proj::generator();
                        let step = g * bn256::Fr::random(&mut r);
                        let mut p = g * bn256::Fr::random(&mut r);
                        let mut proj = Vec::with_capacity(chunk.len());
                        for _ in 0..chunk.len() {
                            proj.push(p);
                            p += step;
                        }
                        let mut aff = vec![bn256::$h2c_aff::identity(); chunk.len()];
                        bn256::$h2c_proj::batch_normalize(&proj, &mut aff);
                        for (o, a) in chunk.iter_mut().zip(aff) {
                            *o = $aff::from_h2c(a);
                        }
                    });
                out
            }
        };
    }

    walk!(g1_points, G1Affine, G1Affine, G1);
    walk!(g2_points, G2Affine, G2Affine, G2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limbs_are_montgomery_form_with_r_2_256() {
        // 1 in Montgomery form is 2^256 mod r = 2^256 − 5·r (r ≈ 2^253.6),
        // which in 256-bit arithmetic is the negation of 5·r.
        let r = crate::Curve::Bn254.scalar_modulus_le();
        let mut five_r = [0u8; 32];
        let mut carry = 0u16;
        for (o, b) in five_r.iter_mut().zip(r) {
            let v = b as u16 * 5 + carry;
            *o = v as u8;
            carry = v >> 8;
        }
        let two_256_minus_5r =
            (!u128::from_le_bytes(five_r[..16].try_into().unwrap())).wrapping_add(1);
        assert_eq!(Fr::one().limbs[0], two_256_minus_5r as u64);
        assert_eq!(Fr::one().limbs[1], (two_256_minus_5r >> 64) as u64);
        assert_eq!(Fr::from_u64(5).to_bytes_le()[0], 5);
    }

    #[test]
    fn roots_of_unity_have_their_order() {
        for log_n in [0, 1, 5, 28] {
            let w = Fr::root_of_unity(log_n).h2c();
            let mut x = w;
            for _ in 0..log_n {
                x = x.square();
            }
            assert_eq!(x, bn256::Fr::ONE, "2^{log_n}");
            if log_n > 0 {
                assert_ne!(w.pow_vartime([1u64 << (log_n - 1)]), bn256::Fr::ONE);
            }
        }
        // ffjavascript's (snarkjs's) 2^28-th root, big-endian hex.
        let mut be = Fr::root_of_unity(28).to_bytes_le();
        be.reverse();
        let hex: String = be.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "2a3c09f0a58a7e8500e0a7eb8ef62abc402d111e41112ed49bd61b6e725b19f0"
        );
    }

    #[test]
    fn points_round_trip_and_sampled_points_are_valid() {
        let g = G1Affine::generator();
        assert!(g.is_valid() && !g.is_identity());
        assert_eq!(g.to_projective().to_affine(), g);
        assert!(G1Affine::default().is_valid());
        assert_eq!(G1Projective::identity().to_affine(), G1Affine::default());
        let ps = sample::g1_points(2000, 3);
        assert!(ps.iter().all(G1Affine::is_valid));
        assert_ne!(ps[0], ps[1]);
        let qs = sample::g2_points(10, 3);
        assert!(qs.iter().all(G2Affine::is_valid));
        let mut bad = ps[0];
        bad.y.limbs[0] ^= 1;
        assert!(!bad.is_valid());
        assert_ne!(sample::scalars(4, 1), sample::scalars(4, 2));
    }

    #[test]
    fn a_g2_point_off_the_subgroup_is_caught() {
        use halo2curves::CurveAffine;
        // The twist has a huge cofactor: a point from a random x is on the
        // curve and almost surely outside the subgroup.
        let b = bn256::G2Affine::b();
        let p = (1u64..)
            .find_map(|i| {
                let x = bn256::Fq2::new(bn256::Fq::from(i), bn256::Fq::ONE);
                Option::from((x.square() * x + b).sqrt()).map(|y| G2Affine {
                    x: Fp2::from_h2c(x),
                    y: Fp2::from_h2c(y),
                })
            })
            .unwrap();
        assert!(p.is_on_curve() && !p.is_in_subgroup() && !p.is_valid());
        assert!(G2Affine::generator().is_in_subgroup());
    }

    #[test]
    fn scalars_above_r_are_refused() {
        let r = crate::Curve::Bn254.scalar_modulus_le();
        assert!(Fr::from_bytes_le(&r).is_err());
        let mut below = r;
        below[0] -= 1;
        assert_eq!(Fr::from_bytes_le(&below).unwrap(), Fr::one().neg());
    }
}
