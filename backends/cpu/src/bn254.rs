//! BN254 on the CPU: halo2curves' Pippenger MSM and radix-2 FFT, with the
//! seam's orders and cosets around them.
//!
//! The seam's types hold the same Montgomery limbs as halo2curves', so each
//! call copies its inputs into halo2curves' types (no arithmetic) and runs
//! on the calling pool.

use halo2curves::bn256;
use halo2curves::ff::Field;
use halo2curves::group::Group;
use rayon::prelude::*;
use zkpipe_core::bn254::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use zkpipe_core::plugin::{NttConfigOf, NttDirection};

use crate::ntt::bit_reverse;

/// Elements per parallel task in the element-wise passes.
const MIN_CHUNK: usize = 4096;

fn h2c_scalars(scalars: &[Fr]) -> Vec<bn256::Fr> {
    scalars
        .par_iter()
        .with_min_len(MIN_CHUNK)
        .map(Fr::h2c)
        .collect()
}

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

/// Multiplies each element by `c·x^i`, `i` its index.
fn scale_by_powers(values: &mut [bn256::Fr], x: bn256::Fr, c: bn256::Fr) {
    values
        .par_chunks_mut(MIN_CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut p = c * x.pow_vartime([(k * MIN_CHUNK) as u64]);
            for v in chunk {
                *v *= p;
                p *= x;
            }
        });
}

/// In-place NTT per `config` (length a power of two ≤ 2^28 and a nonzero
/// coset, checked by the guard): natural order inside, the seam's orders
/// by bit reversal around it.
pub fn ntt(values: &mut [Fr], config: &NttConfigOf<Fr>) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    let inverse = config.direction == NttDirection::Inverse;
    let coset = config.coset.into_option().map(|g| g.h2c());
    let mut a = h2c_scalars(values);
    if config.order.input_reversed() {
        bit_reverse(&mut a);
    }
    if let (false, Some(g)) = (inverse, coset) {
        scale_by_powers(&mut a, g, bn256::Fr::ONE);
    }
    let omega = Fr::root_of_unity(log_n).h2c();
    let omega = if inverse {
        omega.invert().unwrap()
    } else {
        omega
    };
    halo2curves::fft::best_fft(&mut a, omega, log_n);
    if inverse {
        let n_inv = bn256::Fr::from(n as u64).invert().unwrap();
        let g_inv = coset.map_or(bn256::Fr::ONE, |g| g.invert().unwrap());
        scale_by_powers(&mut a, g_inv, n_inv);
    }
    if config.order.output_reversed() {
        bit_reverse(&mut a);
    }
    values
        .par_iter_mut()
        .with_min_len(MIN_CHUNK)
        .zip(a.par_iter())
        .for_each(|(v, x)| *v = Fr::from_h2c(*x));
}
