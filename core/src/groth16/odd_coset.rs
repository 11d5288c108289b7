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
use crate::plugin::{NttConfig, NttDirection, NttOrder, QuotientConfig};
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

/// The inverse of an odd `k` modulo 2^64 (Newton's iteration: each step
/// doubles the correct low bits, from 3 bits for `k·k ≡ 1 mod 8`).
fn inverse_mod_2_64(k: u64) -> u64 {
    let mut x = k;
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(k.wrapping_mul(x)));
    }
    x
}

/// `out[(K·i) mod n] = v[i]`: moves snarkjs's position i to zkpipe's, as a
/// parallel gather (`out[j] = v[(K⁻¹·j) mod n]`).
fn to_zkpipe_order(v: &[Fr], k: u64) -> Vec<Fr> {
    let mask = v.len() as u64 - 1;
    let k_inv = inverse_mod_2_64(k);
    (0..v.len())
        .into_par_iter()
        .with_min_len(4096)
        .map(|j| v[((j as u64).wrapping_mul(k_inv) & mask) as usize])
        .collect()
}

/// The H scalars of an [`HQuery::OddCoset`] key: `a, b, c` are evaluations
/// over snarkjs's n-th roots (constraint rows, then bellman's input rows,
/// then zeros; n a power of two); returns `a·b − c` at `ω₂ₙ·ωₙᵐ` for
/// m < n, snarkjs's order. The transforms run on `ntt`'s `device`: through
/// its fused quotient op when `fused` (fewer copies), else six NTTs.
///
/// # Errors
/// Backend errors; [`Error::InvalidInput`] for a domain of 2^32 (snarkjs
/// shifts by another coset there).
pub fn odd_coset_scalars(
    ntt: &Backend,
    abc: [&[Fr]; 3],
    device: u32,
    fused: bool,
) -> Result<Vec<Fr>, Error> {
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
    let [mut a, mut b, mut c] = abc.map(|v| to_zkpipe_order(v, k));
    let mask = n as u64 - 1;
    // snarkjs's point m is zkpipe's K·m: gather back into snarkjs's order.
    let gather = |f: &(dyn Fn(usize) -> Fr + Sync)| -> Vec<Fr> {
        (0..n)
            .into_par_iter()
            .with_min_len(4096)
            .map(|m| f(((m as u64).wrapping_mul(k) & mask) as usize))
            .collect()
    };
    if fused {
        // On the odd coset Z = shiftⁿ − 1 = −2, a constant: the fused op's
        // h = (a·b − c)/Z, as coefficients of degree < n, evaluated on that
        // coset again is (a·b − c)/(−2) there.
        let q = QuotientConfig {
            device,
            coset: shift,
            ext: Default::default(),
        };
        ntt.quotient(&mut a, &b, &c, &q)?;
        ntt.ntt(
            &mut a,
            &cfg(NttDirection::Forward, NttOrder::NN, Some(shift)),
        )?;
        let minus_two = Fr::from_u64(2).neg();
        return Ok(gather(&|j| a[j].mul(&minus_two)));
    }
    for v in [&mut a, &mut b, &mut c] {
        // Bit-reversed coefficients feed the coset NTT directly.
        ntt.ntt(v, &cfg(NttDirection::Inverse, NttOrder::NR, None))?;
        ntt.ntt(v, &cfg(NttDirection::Forward, NttOrder::RN, Some(shift)))?;
    }
    Ok(gather(&|j| a[j].mul(&b[j]).sub(&c[j])))
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
    fn inverse_mod_2_64_inverts_odd_numbers() {
        for k in [1u64, 3, 5, root_exponent(), u64::MAX] {
            assert_eq!(k.wrapping_mul(inverse_mod_2_64(k)), 1, "{k}");
        }
    }

    /// The fused path's identity, on the reference ops: the quotient's
    /// coefficients on the odd coset, evaluated there again and times −2,
    /// are `a·b − c` at the odd points.
    #[test]
    fn fused_quotient_on_the_odd_coset_gives_a_b_minus_c_there() {
        use crate::backend::reference::{dft, quotient};
        let n = 16usize;
        let log_n = n.trailing_zeros();
        let mut rng = crate::util::sample::rng(4);
        let [a, b, c]: [Vec<Fr>; 3] =
            std::array::from_fn(|_| (0..n).map(|_| Fr::random(&mut rng)).collect());
        let shift = Fr::root_of_unity(log_n + 1);
        let h = quotient(&a, &b, &c, shift);
        let back = dft(&h, NttDirection::Forward, Some(shift));
        let on_coset = |v: &[Fr]| {
            dft(
                &dft(v, NttDirection::Inverse, None),
                NttDirection::Forward,
                Some(shift),
            )
        };
        let (ea, eb, ec) = (on_coset(&a), on_coset(&b), on_coset(&c));
        for i in 0..n {
            let want = ea[i].mul(&eb[i]).sub(&ec[i]);
            assert_eq!(back[i].mul(&Fr::from_u64(2).neg()), want, "{i}");
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        let v: Vec<Fr> = (0..64).map(Fr::from_u64).collect();
        let k = root_exponent();
        let mut p = to_zkpipe_order(&v, k);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(p[((i as u64).wrapping_mul(k) & 63) as usize], *x, "{i}");
        }
        p.sort_by_key(|x| x.to_bytes_le());
        let mut s = v.clone();
        s.sort_by_key(|x| x.to_bytes_le());
        assert_eq!(p, s);
    }
}
