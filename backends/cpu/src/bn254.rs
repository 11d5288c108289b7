//! BN254's MSMs on the CPU: halo2curves' Pippenger. (Its NTT is the
//! backend's own, shared with BLS12-381: `ntt`.)
//!
//! The seam's types hold the same Montgomery limbs as halo2curves', so each
//! call copies its inputs into halo2curves' types (no arithmetic) and runs
//! on the calling pool.

use halo2curves::bn256;
use halo2curves::group::Group;
use rayon::prelude::*;
use zkpipe_core::bn254::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Terms per parallel task when the inputs are copied.
const MIN_CHUNK: usize = 4096;

/// The terms in halo2curves' types, without those that add nothing: over
/// the identity (halo2curves' bucket method, from ~22,000 points, reads
/// every base's affine coordinates, which the identity lacks, and panics
/// on one; zkeys hold many: the variables absent from A or B) and with a
/// zero scalar (circom witnesses hold many: bits, unused branches).
fn h2c_terms<A: Sync, H: Send>(
    bases: &[A],
    scalars: &[Fr],
    is_identity: impl Fn(&A) -> bool + Sync,
    h2c: impl Fn(&A) -> H + Sync,
) -> (Vec<bn256::Fr>, Vec<H>) {
    bases
        .par_iter()
        .zip(scalars)
        .with_min_len(MIN_CHUNK)
        .filter(|(b, s)| !s.is_zero() && !is_identity(b))
        .map(|(b, s)| (s.h2c(), h2c(b)))
        .unzip()
}

/// `Σ scalars[i]·bases[i]` in G1 (equal lengths, checked by the guard).
pub fn msm_g1(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    let (s, b) = h2c_terms(bases, scalars, G1Affine::is_identity, G1Affine::h2c);
    if b.is_empty() {
        return G1Projective::identity();
    }
    G1Projective::from_h2c(halo2curves::msm::msm_best(&s, &b))
}

/// `Σ scalars[i]·bases[i]` in G2 (equal lengths, checked by the guard).
pub fn msm_g2(bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    let (s, b) = h2c_terms(bases, scalars, G2Affine::is_identity, G2Affine::h2c);
    if b.is_empty() {
        return G2Projective::from_h2c(bn256::G2::identity());
    }
    G2Projective::from_h2c(halo2curves::msm::msm_best(&s, &b))
}
