//! The two groups of BLS12-381 an MSM runs in, as one type parameter: code
//! that does the same in G1 and G2 (split MSMs, cross-checks, benchmarks)
//! is written once over [`Group`] and called as `f::<G1>` and `f::<G2>`.

use std::fmt::Debug;

use crate::backend::Backend;
use crate::plugin::{BasesHandle, BasesRef, MsmConfig, ops};
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use crate::{Error, util::sample};

/// A group's points and a backend's calls in it.
pub trait Group: 'static {
    /// `g1` or `g2`, as op names and reports spell it.
    const NAME: &'static str;
    /// The backend op of one MSM in this group.
    const MSM_OP: &'static str;
    /// Affine point.
    type Affine: Copy + Default + Debug + PartialEq + Send + Sync;
    /// Projective point.
    type Proj: Copy + Debug + PartialEq + Send + Sync;
    /// One MSM on `be`.
    ///
    /// # Errors
    /// As [`Backend::msm_g1`].
    fn msm(
        be: &Backend,
        bases: BasesRef<'_, Self::Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<Self::Proj, Error>;
    /// Bases kept on one device of `be`.
    ///
    /// # Errors
    /// As [`Backend::upload_bases_g1`].
    fn upload(be: &Backend, bases: &[Self::Affine], device: u32) -> Result<BasesHandle, Error>;
    /// `n` seeded points of the prime-order subgroup ([`sample`]).
    fn sample(n: usize, seed: u64) -> Vec<Self::Affine>;
    /// The identity, affine.
    fn identity_affine() -> Self::Affine;
    /// The identity.
    fn identity() -> Self::Proj;
    /// `p + q`.
    fn add(p: &Self::Proj, q: &Self::Proj) -> Self::Proj;
    /// `p` in affine form.
    fn to_affine(p: &Self::Proj) -> Self::Affine;
}

/// G1.
#[derive(Debug)]
pub enum G1 {}
/// G2.
#[derive(Debug)]
pub enum G2 {}

macro_rules! group {
    ($g:ty, $name:literal, $op:expr, $aff:ty, $proj:ty, $msm:ident, $upload:ident, $sample:path) => {
        impl Group for $g {
            const NAME: &'static str = $name;
            const MSM_OP: &'static str = $op;
            type Affine = $aff;
            type Proj = $proj;
            fn msm(
                be: &Backend,
                bases: BasesRef<'_, $aff>,
                scalars: &[Fr],
                config: &MsmConfig,
            ) -> Result<$proj, Error> {
                be.$msm(bases, scalars, config)
            }
            fn upload(be: &Backend, bases: &[$aff], device: u32) -> Result<BasesHandle, Error> {
                be.$upload(bases, device)
            }
            fn sample(n: usize, seed: u64) -> Vec<$aff> {
                $sample(n, seed)
            }
            fn identity_affine() -> $aff {
                <$aff>::identity()
            }
            fn identity() -> $proj {
                <$proj>::identity()
            }
            fn add(p: &$proj, q: &$proj) -> $proj {
                p.add(q)
            }
            fn to_affine(p: &$proj) -> $aff {
                p.to_affine()
            }
        }
    };
}
group!(
    G1,
    "g1",
    ops::MSM_G1,
    G1Affine,
    G1Projective,
    msm_g1,
    upload_bases_g1,
    sample::g1_points
);
group!(
    G2,
    "g2",
    ops::MSM_G2,
    G2Affine,
    G2Projective,
    msm_g2,
    upload_bases_g2,
    sample::g2_points
);
