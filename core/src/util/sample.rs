//! Seeded random inputs for tests and benchmarks.
//!
//! Points come from a random walk (a random start plus a random step per
//! chunk), which costs one addition per point instead of a scalar
//! multiplication: fine for timing and testing, since Pippenger sees
//! distinct, unrelated-looking points.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Points per random-walk chunk.
const CHUNK: usize = 1024;

/// A reproducible generator for the given seed.
pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

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

macro_rules! sample_points {
    ($name:ident, $aff:ty, $proj:ty) => {
        /// `n` points of the prime-order subgroup from `seed`.
        pub fn $name(n: usize, seed: u64) -> Vec<$aff> {
            // Written in place: PoRep-sized keys are tens of GB, and
            // joining per-chunk vectors would hold each query twice.
            let mut out = vec![<$aff>::default(); n];
            out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, dst)| {
                let mut r = rng(seed ^ 0x5eed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let g = <$proj>::generator();
                let step = g.mul(&Fr::random(&mut r));
                let mut p = g.mul(&Fr::random(&mut r));
                let proj: Vec<$proj> = (0..dst.len())
                    .map(|_| {
                        p = p.add(&step);
                        p
                    })
                    .collect();
                dst.copy_from_slice(&<$proj>::batch_to_affine(&proj));
            });
            out
        }
    };
}
sample_points!(g1_points, G1Affine, G1Projective);
sample_points!(g2_points, G2Affine, G2Projective);

#[cfg(test)]
mod tests {
    use super::*;

    /// Each chunk is a walk of one step from a random start: points in the
    /// subgroup, consecutive differences equal inside a chunk, and a
    /// partial last chunk that starts its own walk.
    #[test]
    fn points_walk_one_step_per_chunk() {
        let n = 2 * CHUNK + 5;
        let p = g1_points(n, 7);
        assert_eq!(p.len(), n);
        assert!(p.iter().all(|q| q.is_in_subgroup() && !q.is_identity()));
        let diff = |i: usize| G1Projective::from(p[i + 1]).add(&G1Projective::from(p[i]).neg());
        for start in [0, CHUNK, 2 * CHUNK] {
            assert!(diff(start).eq_point(&diff(start + 3)), "chunk at {start}");
        }
        assert!(!diff(0).eq_point(&diff(CHUNK)));
        assert_eq!(g1_points(n, 7), p);
        assert_eq!(g2_points(3, 7).len(), 3);
    }
}
