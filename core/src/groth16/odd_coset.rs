//! snarkjs's form of the H query, and the quotient scalars it takes.
//!
//! A snarkjs `.zkey` (section 9) holds n points `L_{2i+1}(τ)/δ`: the
//! Lagrange basis of the 2n-th roots of unity, at the odd ones. Its prover
//! MSMs them with `p = a·b − c` evaluated on that odd coset `ω₂ₙ·⟨ωₙ⟩`,
//! undivided by Z: since `p` vanishes on `⟨ωₙ⟩` and has degree < 2n, the sum
//! is `p(τ)/δ = h(τ)·Z(τ)/δ`, what bellman's `τⁱ·Z(τ)/δ` query gives from
//! h's coefficients.
//!
//! snarkjs's roots of unity come from 5 (ffjavascript takes Fr's smallest
//! quadratic non-residue), zkpipe's and bellman's from 7. Both are
//! generators of the same cyclic group of order 2^32, so `ω₅ = ω₇^K` for an
//! odd K, and the same K relates their 2^k-th roots for every k: snarkjs's
//! point `ω₅ᵢ` is zkpipe's `ω₇^(K·i mod n)`. The scalars are computed with
//! the backends' own NTTs (natural order, zkpipe's roots) between two index
//! permutations by K.

use rayon::prelude::*;
use std::sync::OnceLock;

use crate::Error;
use crate::backend::Backend;
use crate::plugin::{NttConfig, NttDirection, NttOrder};
use crate::types::{FR_TWO_ADICITY, Fr};

/// How a key's H query is laid out, and so which scalars the quotient stage
/// hands to its MSM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HQuery {
    /// bellman/bellperson: `τⁱ·Z(τ)/δ` for i < n − 1; the scalars are h's
    /// coefficients.
    #[default]
    TauPowers,
    /// snarkjs (`.zkey` section 9): n points `L_{2i+1}(τ)/δ` over
    /// ffjavascript's roots; the scalars are `a·b − c` at `ω₂ₙ·ωₙⁱ`.
    OddCoset,
}

/// ffjavascript's primitive `2^log_n`-th root of unity of Fr:
/// `5^((r−1)/2^32)` squared `32 − log_n` times.
///
/// # Panics
/// If `log_n > 32`.
pub fn snarkjs_root_of_unity(log_n: u32) -> Fr {
    assert!(
        log_n <= FR_TWO_ADICITY,
        "Fr has no 2^{log_n}-th root of unity"
    );
    let mut w = Fr::from_u64(5).pow(&R_MINUS_1_ODD);
    for _ in log_n..FR_TWO_ADICITY {
        w = w.mul(&w);
    }
    w
}

/// (r − 1) / 2^32, little-endian limbs.
const R_MINUS_1_ODD: [u64; 4] = [
    0xfffe5bfeffffffff,
    0x09a1d80553bda402,
    0x299d7d483339d808,
    0x0000000073eda753,
];

/// The odd K with `snarkjs_root_of_unity(32) = Fr::root_of_unity(32)^K`,
/// found by Pohlig–Hellman in the 2-group (32 steps, once per process).
pub fn root_exponent() -> u64 {
    static K: OnceLock<u64> = OnceLock::new();
    *K.get_or_init(|| {
        let g = Fr::root_of_unity(FR_TWO_ADICITY);
        let g_inv = g.inverse().expect("a root of unity is nonzero");
        let h = snarkjs_root_of_unity(FR_TWO_ADICITY);
        let mut k = 0u64;
        // Invariant: h·g^(−k) has order dividing 2^(32 − i).
        for i in 0..FR_TWO_ADICITY {
            let rest = h.mul(&g_inv.pow(&[k]));
            let probe = rest.pow(&[1u64 << (FR_TWO_ADICITY - 1 - i)]);
            if probe != Fr::one() {
                k |= 1 << i;
            }
        }
        k
    })
}

/// `out[(K·i) mod n] = v[i]`: moves snarkjs's position i to zkpipe's.
fn to_zkpipe_order(v: &[Fr], k: u64) -> Vec<Fr> {
    let mask = v.len() as u64 - 1;
    let mut out = vec![Fr::ZERO; v.len()];
    for (i, x) in v.iter().enumerate() {
        out[((i as u64).wrapping_mul(k) & mask) as usize] = *x;
    }
    out
}

/// The H scalars of an [`HQuery::OddCoset`] key: `a, b, c` are evaluations
/// over snarkjs's n-th roots (constraint rows, then bellman's input rows,
/// then zeros; n a power of two); returns `a·b − c` at `ω₂ₙ·ωₙᵐ` for
/// m < n, snarkjs's order. The NTTs run on `ntt`'s `device`.
///
/// # Errors
/// Backend errors; [`Error::InvalidInput`] for a domain of 2^32 (snarkjs
/// shifts by another coset there).
pub fn odd_coset_scalars(ntt: &Backend, abc: [&[Fr]; 3], device: u32) -> Result<Vec<Fr>, Error> {
    let n = abc[0].len();
    let log_n = n.trailing_zeros();
    if !n.is_power_of_two() || log_n >= FR_TWO_ADICITY || abc.iter().any(|v| v.len() != n) {
        return Err(Error::InvalidInput(format!(
            "odd-coset quotient: domain of {n} points (a power of two below 2^32 needed)"
        )));
    }
    let k = root_exponent();
    let shift = snarkjs_root_of_unity(log_n + 1);
    let cfg = |direction, order, coset: Option<Fr>| NttConfig {
        device,
        direction,
        order,
        coset: coset.into(),
        ext: Default::default(),
    };
    let mut evals = Vec::with_capacity(3);
    for v in abc {
        let mut v = to_zkpipe_order(v, k);
        // Bit-reversed coefficients feed the coset NTT directly.
        ntt.ntt(&mut v, &cfg(NttDirection::Inverse, NttOrder::NR, None))?;
        ntt.ntt(
            &mut v,
            &cfg(NttDirection::Forward, NttOrder::RN, Some(shift)),
        )?;
        evals.push(v);
    }
    let (a, b, c) = (&evals[0], &evals[1], &evals[2]);
    let mask = n as u64 - 1;
    // snarkjs's point m is zkpipe's K·m: gather back into snarkjs's order.
    Ok((0..n)
        .into_par_iter()
        .with_min_len(4096)
        .map(|m| {
            let j = ((m as u64).wrapping_mul(k) & mask) as usize;
            a[j].mul(&b[j]).sub(&c[j])
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_is_the_smallest_non_residue_and_generates_the_2_group() {
        let half = [
            0x7fffffff80000000,
            0xa9ded2017fff2dff,
            0x199cec0404d0ec02,
            0x39f6d3a994cebea4,
        ];
        let minus_one = Fr::one().neg();
        for x in 2..5 {
            assert_ne!(Fr::from_u64(x).pow(&half), minus_one, "{x} is a residue");
        }
        assert_eq!(Fr::from_u64(5).pow(&half), minus_one);
        let w = snarkjs_root_of_unity(32);
        assert_eq!(w.pow(&[1 << 31]), minus_one, "primitive");
    }

    #[test]
    fn exponent_maps_zkpipe_roots_onto_snarkjs_roots_at_every_size() {
        let k = root_exponent();
        assert_eq!(k & 1, 1);
        for log_n in [1, 2, 5, 16, 31, 32] {
            let mask = (1u64 << log_n) - 1;
            assert_eq!(
                Fr::root_of_unity(log_n).pow(&[k & mask]),
                snarkjs_root_of_unity(log_n),
                "2^{log_n}"
            );
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        let v: Vec<Fr> = (0..64).map(Fr::from_u64).collect();
        let mut p = to_zkpipe_order(&v, root_exponent());
        p.sort_by_key(|x| x.to_bytes_le());
        let mut s = v.clone();
        s.sort_by_key(|x| x.to_bytes_le());
        assert_eq!(p, s);
    }
}
