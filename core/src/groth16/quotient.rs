//! Stage `quotient`: `h = (a·b − c)/Z` on a coset, through the fused op
//! where the backend has it, else through its NTTs (bellman's convention).

use super::prover::Prover;
use crate::Error;
use crate::backend::Backend;
use crate::plugin::{NttConfig, NttDirection, NttOrder, ops};
use crate::types::Fr;

impl Prover {
    /// `h = (a·b − c)/Z` as coefficients (n − 1 of them), bellman's convention:
    /// iNTT, NTT on the coset 7·⟨ω⟩, pointwise, divide by Z = 7^n − 1, coset iNTT.
    /// For a key with snarkjs's H query, `a·b − c` on its odd coset instead
    /// (n values, see [`super::HQuery::OddCoset`]).
    ///
    /// # Errors
    /// Backend errors.
    pub fn quotient(&self, abc: [Vec<Fr>; 3], inputs: &[Fr]) -> Result<Vec<Fr>, Error> {
        self.quotient_on(None, abc, inputs)
    }

    /// [`Prover::quotient`] with its NTTs on `on` when given.
    ///
    /// # Errors
    /// As [`Prover::quotient`].
    pub fn quotient_on(
        &self,
        on: Option<&Backend>,
        abc: [Vec<Fr>; 3],
        inputs: &[Fr],
    ) -> Result<Vec<Fr>, Error> {
        let ntt = on.unwrap_or(&self.ntt);
        let device = if on.is_some() { 0 } else { self.op_devices[0] };
        let [mut a, mut b, mut c] = abc;
        let (a, b, c) = (&mut a, &mut b, &mut c);
        let n = 1usize << self.log_n;
        // bellman's extra rows: input_i · 1 = 0.
        a.extend_from_slice(inputs);
        for v in [&mut *a, &mut *b, &mut *c] {
            pad_with_zeros(v, n);
        }
        let fused = match on {
            Some(be) => be.capabilities().supports(ops::QUOTIENT),
            None => self.fused_quotient,
        };
        if self.params.h_query == super::HQuery::OddCoset {
            return super::odd_coset_scalars(ntt, [a, b, c], device, fused);
        }
        let g = Fr::from_u64(super::COSET_SHIFT);
        if fused {
            let cfg = crate::plugin::QuotientConfig {
                device,
                coset: g,
                ext: Default::default(),
            };
            ntt.quotient(a, b, c, &cfg)?;
        } else {
            quotient_by_ntts(ntt, a, b, c, g, device)?;
        }
        a.truncate(n - 1);
        Ok(std::mem::take(a))
    }
}

/// `v` cut or padded with zeros to `n` elements. The padding is written on
/// all threads: at 2^25 it is ~0.2 GB of fresh pages per vector, which one
/// thread fills in ~75–120 ms (page faults), three times per proof.
fn pad_with_zeros(v: &mut Vec<Fr>, n: usize) {
    use rayon::prelude::*;
    if v.len() >= n {
        v.truncate(n);
        return;
    }
    let more = n - v.len();
    v.reserve_exact(more);
    v.par_extend(rayon::iter::repeat_n(Fr::ZERO, more));
}

/// Groth16's quotient through a backend's NTTs (for backends without the
/// fused op): `a, b, c` are evaluations over the n-th roots of unity; on
/// return `a` holds `h`'s coefficients, computed on the coset `g·⟨ω⟩`
/// (`b` and `c` are overwritten).
///
/// # Errors
/// Backend errors; [`Error::InvalidInput`] when `gⁿ = 1`.
pub fn quotient_by_ntts(
    ntt: &Backend,
    a: &mut [Fr],
    b: &mut [Fr],
    c: &mut [Fr],
    g: Fr,
    device: u32,
) -> Result<(), Error> {
    let cfg = |direction, order, coset: Option<Fr>| NttConfig {
        device,
        direction,
        order,
        coset: coset.into(),
        ext: Default::default(),
    };
    // Bit-reversed coefficients feed the coset NTT directly: no permutation between.
    for v in [&mut *a, &mut *b, &mut *c] {
        ntt.ntt(v, &cfg(NttDirection::Inverse, NttOrder::NR, None))?;
        ntt.ntt(v, &cfg(NttDirection::Forward, NttOrder::RN, Some(g)))?;
    }
    let z_inv = super::vanishing_inverse(&g, a.len())
        .ok_or_else(|| Error::InvalidInput("quotient: gⁿ = 1 for this coset shift".into()))?;
    pointwise(a, b, c, &z_inv);
    ntt.ntt(a, &cfg(NttDirection::Inverse, NttOrder::NN, Some(g)))
}

/// `a ← (a·b − c)·z_inv`, in parallel.
fn pointwise(a: &mut [Fr], b: &[Fr], c: &[Fr], z_inv: &Fr) {
    use rayon::prelude::*;
    a.par_iter_mut()
        .zip(b.par_iter().zip(c))
        .with_min_len(4096)
        .for_each(|(x, (y, z))| *x = x.mul(y).sub(z).mul(z_inv));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_with_zeros_and_cuts() {
        let x = Fr::from_u64(5);
        let mut v = vec![x; 3];
        pad_with_zeros(&mut v, 1 << 12);
        assert_eq!(v.len(), 1 << 12);
        assert!(v[..3].iter().all(|e| *e == x) && v[3..].iter().all(|e| *e == Fr::ZERO));
        pad_with_zeros(&mut v, 2);
        assert_eq!(v, [x, x]);
    }
}
