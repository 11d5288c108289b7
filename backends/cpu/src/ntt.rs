//! Radix-2 NTT over a curve's scalar field, parallel on rayon.
//!
//! Natural-order input runs Gentleman–Sande (DIF) stages and ends
//! bit-reversed; bit-reversed input runs Cooley–Tukey (DIT) stages and ends
//! natural. The other two orders add one bit-reversal permutation. Coset
//! shifts and the 1/n of the inverse are folded into one pointwise pass.
//! One implementation serves both curves: BLS12-381's Fr with blst's
//! butterflies, BN254's with halo2curves' arithmetic.

use blst::{blst_fr, blst_fr_ct_bfly, blst_fr_gs_bfly};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use zkpipe_core::backend::reference::reverse_bits;
use zkpipe_core::plugin::{NttConfigOf, NttDirection};
use zkpipe_core::{Fr, ScalarField, bn254};

/// Work below this many butterflies per task is not split further.
const MIN_CHUNK: usize = 1 << 10;

/// A scalar field the NTT runs over: the core's ring operations and the
/// two butterflies, which a field may do in one call.
pub trait NttField: ScalarField {
    /// Cooley–Tukey: `(a, b) ← (a + w·b, a − w·b)`.
    fn ct_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        let t = b.mul(w);
        *b = a.sub(&t);
        *a = a.add(&t);
    }
    /// Gentleman–Sande: `(a, b) ← (a + b, (a − b)·w)`.
    fn gs_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        let t = a.sub(b);
        *a = a.add(b);
        *b = t.mul(w);
    }
}

impl NttField for Fr {
    fn ct_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        // SAFETY: a and b are distinct valid elements; w is valid.
        unsafe { blst_fr_ct_bfly(blst_view(a), blst_view(b), w.as_blst()) }
    }
    fn gs_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        // SAFETY: as above.
        unsafe { blst_fr_gs_bfly(blst_view(a), blst_view(b), w.as_blst()) }
    }
}

fn blst_view(v: &mut Fr) -> *mut blst_fr {
    v.as_blst_mut() as *mut blst_fr
}

impl NttField for bn254::Fr {
    // halo2curves' operators on the same limbs, inlined here.
    fn ct_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        let (x, t) = (a.h2c(), b.h2c() * w.h2c());
        *a = bn254::Fr::from_h2c(x + t);
        *b = bn254::Fr::from_h2c(x - t);
    }
    fn gs_bfly(a: &mut Self, b: &mut Self, w: &Self) {
        let (x, y) = (a.h2c(), b.h2c());
        *a = bn254::Fr::from_h2c(x + y);
        *b = bn254::Fr::from_h2c((x - y) * w.h2c());
    }
}

/// (log n, inverse) of a twiddle table.
type TwiddleKey = (u32, bool);

/// Twiddle tables `[1, ω, ω², …, ω^(n/2−1)]`, per (log n, inverse), built once.
#[derive(Debug)]
pub struct Twiddles<F> {
    tables: Mutex<HashMap<TwiddleKey, Arc<Vec<F>>>>,
}

impl<F> Default for Twiddles<F> {
    fn default() -> Self {
        Twiddles {
            tables: Mutex::default(),
        }
    }
}

impl<F: NttField> Twiddles<F> {
    fn get(&self, log_n: u32, inverse: bool) -> Arc<Vec<F>> {
        if let Some(t) = self.tables.lock().unwrap().get(&(log_n, inverse)) {
            return t.clone();
        }
        let mut w = F::root_of_unity(log_n);
        if inverse {
            w = w.inverse().expect("roots of unity are nonzero");
        }
        let t = Arc::new(powers(&w, &F::one(), 1usize << log_n.saturating_sub(1)));
        self.tables
            .lock()
            .unwrap()
            .insert((log_n, inverse), t.clone());
        t
    }
}

/// `x^e`, square and multiply.
fn pow<F: ScalarField>(x: &F, mut e: u64) -> F {
    let (mut acc, mut base) = (F::one(), *x);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.mul(&base);
        }
        base = base.mul(&base);
        e >>= 1;
    }
    acc
}

/// `[c, c·x, c·x², …]` of length `len`, computed in parallel chunks.
fn powers<F: ScalarField>(x: &F, c: &F, len: usize) -> Vec<F> {
    let mut out = vec![F::ZERO; len];
    out.par_chunks_mut(MIN_CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut acc = c.mul(&pow(x, (i * MIN_CHUNK) as u64));
            for v in chunk {
                *v = acc;
                acc = acc.mul(x);
            }
        });
    out
}

/// One radix-2 stage over every block of `2·half` elements.
fn stage<F: NttField>(values: &mut [F], half: usize, twiddles: &[F], stride: usize, dit: bool) {
    let butterfly = |lo: &mut [F], hi: &mut [F], j0: usize| {
        for (j, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            let w = &twiddles[(j0 + j) * stride];
            if dit {
                F::ct_bfly(a, b, w);
            } else {
                F::gs_bfly(a, b, w);
            }
        }
    };
    if half >= MIN_CHUNK {
        // Few big blocks: split each block's butterflies across threads.
        for block in values.chunks_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            lo.par_chunks_mut(MIN_CHUNK)
                .zip(hi.par_chunks_mut(MIN_CHUNK))
                .enumerate()
                .for_each(|(i, (l, h))| butterfly(l, h, i * MIN_CHUNK));
        }
    } else {
        // Many small blocks: one task per group of blocks.
        let per_task = (MIN_CHUNK / half).max(1) * 2 * half;
        values.par_chunks_mut(per_task).for_each(|group| {
            for block in group.chunks_mut(2 * half) {
                let (lo, hi) = block.split_at_mut(half);
                butterfly(lo, hi, 0);
            }
        });
    }
}

/// Bit-reversal permutation, parallel (each swap pair is touched by one task).
fn bit_reverse<T: Send>(values: &mut [T]) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    let base = SendPtr(values.as_mut_ptr());
    (0..n)
        .into_par_iter()
        .with_min_len(MIN_CHUNK)
        .for_each(|i| {
            let j = reverse_bits(i, log_n);
            if i < j {
                let p = base;
                // SAFETY: i < j < n and each unordered pair {i, j} is swapped by exactly
                // one index (the smaller), so no two tasks touch the same element.
                unsafe { std::ptr::swap(p.0.add(i), p.0.add(j)) };
            }
        });
}

struct SendPtr<T>(*mut T);
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: used only for disjoint element access, see `bit_reverse`.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// Multiplies element at position p by `c·x^idx(p)`, idx the natural index.
fn scale_by_powers<F: ScalarField>(values: &mut [F], x: &F, c: &F, reversed: bool) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    let pw = powers(x, c, n);
    values
        .par_iter_mut()
        .with_min_len(MIN_CHUNK)
        .enumerate()
        .for_each(|(p, v)| {
            let idx = if reversed { reverse_bits(p, log_n) } else { p };
            *v = v.mul(&pw[idx]);
        });
}

/// In-place NTT per `config` (length a power of two, checked by the caller).
pub fn ntt<F: NttField>(values: &mut [F], config: &NttConfigOf<F>, twiddles: &Twiddles<F>) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    let inverse = config.direction == NttDirection::Inverse;
    let coset = config.coset.into_option();
    let in_rev = config.order.input_reversed();
    let out_rev = config.order.output_reversed();

    // Forward coset: a_i ← a_i·g^i before the transform.
    if let (false, Some(g)) = (inverse, coset) {
        scale_by_powers(values, &g, &F::one(), in_rev);
    }
    if n > 1 {
        let tw = twiddles.get(log_n, inverse);
        let plan = config.order.radix2();
        if plan.permute_first {
            bit_reverse(values);
        }
        for half in plan.halves(log_n) {
            let half = half as usize;
            stage(values, half, &tw, n / (2 * half), plan.dit);
        }
    }
    // Inverse: scale by 1/n, and for a coset by g^{−i}.
    if inverse {
        let n_inv = F::from_u64(n as u64).inverse().expect("n < r");
        match coset {
            Some(g) => {
                let g_inv = g.inverse().unwrap_or(F::ZERO);
                scale_by_powers(values, &g_inv, &n_inv, out_rev);
            }
            None => values
                .par_iter_mut()
                .with_min_len(MIN_CHUNK)
                .for_each(|v| *v = v.mul(&n_inv)),
        }
    }
}
