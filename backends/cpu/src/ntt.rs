//! Radix-2 NTT over Fr, parallel on rayon.
//!
//! Natural-order input runs Gentleman–Sande (DIF) stages and ends
//! bit-reversed; bit-reversed input runs Cooley–Tukey (DIT) stages and ends
//! natural. The other two orders add one bit-reversal permutation. Coset
//! shifts and the 1/n of the inverse are folded into one pointwise pass.

use blst::{blst_fr, blst_fr_ct_bfly, blst_fr_gs_bfly};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use zkpipe_core::Fr;
use zkpipe_core::backend::reference::reverse_bits;
use zkpipe_core::plugin::{NttConfig, NttDirection};

/// Work below this many butterflies per task is not split further.
const MIN_CHUNK: usize = 1 << 10;

/// (log n, inverse) of a twiddle table.
type TwiddleKey = (u32, bool);

/// Twiddle tables `[1, ω, ω², …, ω^(n/2−1)]`, per (log n, inverse), built once.
#[derive(Debug, Default)]
pub struct Twiddles {
    tables: Mutex<HashMap<TwiddleKey, Arc<Vec<Fr>>>>,
}

impl Twiddles {
    fn get(&self, log_n: u32, inverse: bool) -> Arc<Vec<Fr>> {
        if let Some(t) = self.tables.lock().unwrap().get(&(log_n, inverse)) {
            return t.clone();
        }
        let mut w = Fr::root_of_unity(log_n);
        if inverse {
            w = w.inverse().expect("roots of unity are nonzero");
        }
        let t = Arc::new(powers(&w, &Fr::one(), 1usize << log_n.saturating_sub(1)));
        self.tables
            .lock()
            .unwrap()
            .insert((log_n, inverse), t.clone());
        t
    }
}

/// `[c, c·x, c·x², …]` of length `len`, computed in parallel chunks.
fn powers(x: &Fr, c: &Fr, len: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; len];
    out.par_chunks_mut(MIN_CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut acc = c.mul(&x.pow(&[(i * MIN_CHUNK) as u64]));
            for v in chunk {
                *v = acc;
                acc = acc.mul(x);
            }
        });
    out
}

fn bfly_views(v: &mut Fr) -> *mut blst_fr {
    v.as_blst_mut() as *mut blst_fr
}

/// One radix-2 stage over every block of `2·half` elements.
fn stage(values: &mut [Fr], half: usize, twiddles: &[Fr], stride: usize, dit: bool) {
    let butterfly = |lo: &mut [Fr], hi: &mut [Fr], j0: usize| {
        for (j, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            let w = &twiddles[(j0 + j) * stride];
            // SAFETY: a and b are distinct valid elements; w is valid.
            unsafe {
                if dit {
                    blst_fr_ct_bfly(bfly_views(a), bfly_views(b), w.as_blst());
                } else {
                    blst_fr_gs_bfly(bfly_views(a), bfly_views(b), w.as_blst());
                }
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
pub(crate) fn bit_reverse<T: Send>(values: &mut [T]) {
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
fn scale_by_powers(values: &mut [Fr], x: &Fr, c: &Fr, reversed: bool) {
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
pub fn ntt(values: &mut [Fr], config: &NttConfig, twiddles: &Twiddles) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    let inverse = config.direction == NttDirection::Inverse;
    let coset = config.coset.into_option();
    let in_rev = config.order.input_reversed();
    let out_rev = config.order.output_reversed();

    // Forward coset: a_i ← a_i·g^i before the transform.
    if let (false, Some(g)) = (inverse, coset) {
        scale_by_powers(values, &g, &Fr::one(), in_rev);
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
        let n_inv = Fr::from_u64(n as u64).inverse().expect("n < r");
        match coset {
            Some(g) => {
                let g_inv = g.inverse().unwrap_or(Fr::ZERO);
                scale_by_powers(values, &g_inv, &n_inv, out_rev);
            }
            None => values
                .par_iter_mut()
                .with_min_len(MIN_CHUNK)
                .for_each(|v| *v = v.mul(&n_inv)),
        }
    }
}
