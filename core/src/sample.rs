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
            let chunks: Vec<Vec<$aff>> = (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .map(|i| {
                    let mut r = rng(seed ^ 0x5eed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let g = <$proj>::generator();
                    let step = g.mul(&Fr::random(&mut r));
                    let mut p = g.mul(&Fr::random(&mut r));
                    let len = CHUNK.min(n - i * CHUNK);
                    let proj: Vec<$proj> = (0..len)
                        .map(|_| {
                            p = p.add(&step);
                            p
                        })
                        .collect();
                    <$proj>::batch_to_affine(&proj)
                })
                .collect();
            chunks.concat()
        }
    };
}
sample_points!(g1_points, G1Affine, G1Projective);
sample_points!(g2_points, G2Affine, G2Projective);
