//! Deliberately naive, obviously correct MSM and DFT: the oracle every
//! backend's fast path is compared with. Quadratic or bit-serial on purpose;
//! use only at test sizes.

use rayon::prelude::*;

use crate::plugin::{NttConfig, NttDirection};
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

macro_rules! naive_msm {
    ($name:ident, $aff:ty, $proj:ty) => {
        /// `Σ scalars[i]·bases[i]` by double-and-add over each scalar's bits.
        ///
        /// # Panics
        /// If the lengths differ.
        pub fn $name(bases: &[$aff], scalars: &[Fr]) -> $proj {
            assert_eq!(
                bases.len(),
                scalars.len(),
                "bases and scalars must have equal lengths"
            );
            bases
                .par_iter()
                .zip(scalars)
                .map(|(p, k)| {
                    let bytes = k.to_bytes_le();
                    let mut acc = <$proj>::identity();
                    for bit in (0..256).rev() {
                        acc = acc.double();
                        if (bytes[bit / 8] >> (bit % 8)) & 1 == 1 {
                            acc = acc.add_affine(p);
                        }
                    }
                    acc
                })
                .reduce(<$proj>::identity, |a, b| a.add(&b))
        }
    };
}
naive_msm!(msm_g1, G1Affine, G1Projective);
naive_msm!(msm_g2, G2Affine, G2Projective);

/// Evaluates Σ c_i x^i by Horner's rule.
fn horner(coeffs: &[Fr], x: &Fr) -> Fr {
    coeffs
        .iter()
        .rev()
        .fold(Fr::ZERO, |acc, c| acc.mul(x).add(c))
}

/// The DFT by its definition, natural order in and out (`values.len()` a power of two).
///
/// Forward: `y_k = Σ_i a_i (g·ω^k)^i`. Inverse: `a_i = n⁻¹ g^{−i} Σ_k y_k ω^{−ik}`,
/// where ω is the primitive n-th root of [`Fr::root_of_unity`] and g the coset
/// shift (1 without a coset).
///
/// # Panics
/// If the length is not a power of two.
pub fn dft(values: &[Fr], direction: NttDirection, coset: Option<Fr>) -> Vec<Fr> {
    let n = values.len();
    assert!(n.is_power_of_two(), "dft length must be a power of two");
    let omega = Fr::root_of_unity(n.trailing_zeros());
    let g = coset.unwrap_or_else(Fr::one);
    match direction {
        NttDirection::Forward => (0..n)
            .into_par_iter()
            .map(|k| horner(values, &g.mul(&omega.pow(&[k as u64]))))
            .collect(),
        NttDirection::Inverse => {
            let omega_inv = omega.inverse().expect("root of unity is nonzero");
            let g_inv = g.inverse().expect("coset shift must be nonzero");
            let n_inv = Fr::from_u64(n as u64)
                .inverse()
                .expect("n is nonzero in Fr");
            (0..n)
                .into_par_iter()
                .map(|i| {
                    let sum = horner(values, &omega_inv.pow(&[i as u64]));
                    sum.mul(&n_inv).mul(&g_inv.pow(&[i as u64]))
                })
                .collect()
        }
    }
}

/// The reference answer for one NTT configuration: [`dft`] with the
/// config's input and output orders applied (`input` in its input order).
///
/// # Panics
/// As [`dft`].
pub fn ntt(input: &[Fr], cfg: &NttConfig) -> Vec<Fr> {
    let mut natural = input.to_vec();
    if cfg.order.input_reversed() {
        bit_reverse_permute(&mut natural);
    }
    let mut out = dft(&natural, cfg.direction, cfg.coset.into_option());
    if cfg.order.output_reversed() {
        bit_reverse_permute(&mut out);
    }
    out
}

/// Groth16's quotient, naively (the fused op's oracle): `a, b, c` are
/// evaluations over ⟨ω⟩; returns the coefficients of `(A·B − C)/Z` computed
/// on the coset g·⟨ω⟩, where `Z = gⁿ − 1`.
///
/// # Panics
/// If the lengths differ or are not a power of two, or `gⁿ = 1`.
pub fn quotient(a: &[Fr], b: &[Fr], c: &[Fr], g: Fr) -> Vec<Fr> {
    assert!(
        a.len() == b.len() && b.len() == c.len(),
        "quotient lengths differ"
    );
    let on_coset = |v: &[Fr]| {
        dft(
            &dft(v, NttDirection::Inverse, None),
            NttDirection::Forward,
            Some(g),
        )
    };
    let (a, b, c) = (on_coset(a), on_coset(b), on_coset(c));
    let z_inv = g
        .pow(&[a.len() as u64])
        .sub(&Fr::one())
        .inverse()
        .expect("gⁿ ≠ 1");
    let h: Vec<Fr> = a
        .iter()
        .zip(&b)
        .zip(&c)
        .map(|((x, y), z)| x.mul(y).sub(z).mul(&z_inv))
        .collect();
    dft(&h, NttDirection::Inverse, Some(g))
}

/// `i` with its low `log_n` bits reversed.
pub fn reverse_bits(i: usize, log_n: u32) -> usize {
    if log_n == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - log_n)
    }
}

/// Permutes `values` (length a power of two) into bit-reversed order.
pub fn bit_reverse_permute<T>(values: &mut [T]) {
    let n = values.len();
    debug_assert!(n.is_power_of_two());
    let log_n = n.trailing_zeros();
    for i in 0..n {
        let j = reverse_bits(i, log_n);
        if i < j {
            values.swap(i, j);
        }
    }
}
