//! Stage `quotient`: `h = (a·b − c)/Z` on a coset, through the fused op
//! where the backend has it, else through its NTTs (bellman's convention).

use super::prover::Prover;
use crate::Error;
use crate::backend::Backend;
use crate::backend::lent_buffers::FrBuffer;
use crate::plugin::{NttConfig, NttDirection, NttOrder, ops};
use crate::types::Fr;

impl Prover {
    /// `h = (a·b − c)/Z` as coefficients (n − 1 of them), bellman's convention:
    /// iNTT, NTT on the coset 7·⟨ω⟩, pointwise, divide by Z = 7^n − 1, coset iNTT.
    /// For a key with snarkjs's H query, `a·b − c` on its odd coset instead
    /// (n values, see [`super::HQuery::OddCoset`]). `abc` is
    /// [`Prover::spmv`]'s result (the whole domain); `h` reuses `a`'s memory
    /// (for the odd coset, the heap).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for vectors not of the domain's length;
    /// backend errors.
    pub fn quotient(&self, abc: [FrBuffer; 3]) -> Result<FrBuffer, Error> {
        self.quotient_on(None, abc)
    }

    /// [`Prover::quotient`] with its NTTs on `on` when given.
    ///
    /// # Errors
    /// As [`Prover::quotient`].
    pub fn quotient_on(&self, on: Option<&Backend>, abc: [FrBuffer; 3]) -> Result<FrBuffer, Error> {
        let ntt = on.unwrap_or(&self.ntt);
        let device = if on.is_some() { 0 } else { self.op_devices[0] };
        let n = 1usize << self.log_n;
        if abc.iter().any(|v| v.len() != n) {
            return Err(Error::InvalidInput(format!(
                "quotient: vectors of {}, {}, {} elements for a domain of {n}",
                abc[0].len(),
                abc[1].len(),
                abc[2].len()
            )));
        }
        let [mut a, mut b, mut c] = abc;
        let fused = match on {
            Some(be) => be.capabilities().supports(ops::QUOTIENT),
            None => self.fused_quotient,
        };
        if self.params.h_query == super::HQuery::OddCoset {
            return super::odd_coset_scalars(ntt, [&a, &b, &c], device, fused).map(FrBuffer::from);
        }
        let g = Fr::from_u64(super::COSET_SHIFT);
        if fused {
            let cfg = crate::plugin::QuotientConfig {
                device,
                coset: g,
                ext: Default::default(),
            };
            ntt.quotient(&mut a, &b, &c, &cfg)?;
        } else {
            quotient_by_ntts(ntt, &mut a, &mut b, &mut c, g, device)?;
        }
        a.truncate(n - 1);
        Ok(a)
    }
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
    let z_inv = super::vanishing_inverse(&g, a.len())
        .ok_or_else(|| Error::InvalidInput("quotient: gⁿ = 1 for this coset shift".into()))?;
    quotient_steps(&mut |v, cfg| ntt.ntt(v, cfg), [a, b, c], g, z_inv, device)
}

/// The quotient's steps over any NTT (`ntt` transforms a vector in place
/// as [`Backend::ntt`] does), with `z_inv = 1/(gⁿ − 1)` given: the CPU
/// backend's [`ops::SPMV`](crate::plugin::ops::SPMV) runs it on its own
/// NTTs, so its quotient is this one.
///
/// # Errors
/// Whatever `ntt` returns.
pub fn quotient_steps<E>(
    ntt: &mut impl FnMut(&mut [Fr], &NttConfig) -> Result<(), E>,
    [a, b, c]: [&mut [Fr]; 3],
    g: Fr,
    z_inv: Fr,
    device: u32,
) -> Result<(), E> {
    let cfg = |direction, order, coset: Option<Fr>| NttConfig {
        device,
        direction,
        order,
        coset: coset.into(),
        ext: Default::default(),
    };
    // Bit-reversed coefficients feed the coset NTT directly: no permutation between.
    for v in [&mut *a, &mut *b, &mut *c] {
        ntt(v, &cfg(NttDirection::Inverse, NttOrder::NR, None))?;
        ntt(v, &cfg(NttDirection::Forward, NttOrder::RN, Some(g)))?;
    }
    pointwise(a, b, c, &z_inv);
    ntt(a, &cfg(NttDirection::Inverse, NttOrder::NN, Some(g)))
}

/// `a ← (a·b − c)·z_inv`, in parallel.
fn pointwise(a: &mut [Fr], b: &[Fr], c: &[Fr], z_inv: &Fr) {
    use rayon::prelude::*;
    a.par_iter_mut()
        .zip(b.par_iter().zip(c))
        .with_min_len(4096)
        .for_each(|(x, (y, z))| *x = x.mul(y).sub(z).mul(z_inv));
}
