//! Multi-scalar multiplication on blst's Pippenger tiles, scheduled on rayon.
//!
//! The 255 scalar bits are cut into rows of `w` bits and the points into
//! `nx` columns; each (row, column) tile is one call to blst's
//! `*_tile_pippenger` (signed Booth digits, XYZZ buckets). Rows are summed
//! across columns and combined top-down with `w` doublings between rows.

use blst::*;
use rayon::prelude::*;
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Scalars are below r < 2^255.
const NBITS: usize = 255;

/// The blst entry points one group needs.
pub trait PippengerGroup {
    /// Affine seam type.
    type Affine: Copy + Send + Sync;
    /// Projective seam type.
    type Proj: Copy + Send + Sync + Default;
    /// blst's per-bucket scratch size in bytes, times two.
    fn scratch_bytes_for_window2() -> usize;
    /// One tile: bits `[bit0, bit0 + window)` of `scalars` against `points`.
    fn tile(
        out: &mut Self::Proj,
        points: &[Self::Affine],
        scalars: &[blst_scalar],
        scratch: &mut [u64],
        bit0: usize,
        window: usize,
    );
    /// Whole MSM, single-threaded (blst picks its method for small inputs).
    fn serial(points: &[Self::Affine], scalars: &[blst_scalar]) -> Self::Proj;
    /// `a + b`.
    fn add(a: &Self::Proj, b: &Self::Proj) -> Self::Proj;
    /// `2·a`.
    fn double(a: &Self::Proj) -> Self::Proj;
    /// `a + b` for an affine `b` (complete).
    fn add_affine(a: &Self::Proj, b: &Self::Affine) -> Self::Proj;
}

macro_rules! pippenger_group {
    ($marker:ident, $aff:ty, $proj:ty, $b_aff:ty, $b_proj:ty, $tile:ident, $mult:ident, $sizeof:ident) => {
        /// Marker selecting this group's blst routines.
        #[derive(Debug)]
        pub struct $marker;
        impl PippengerGroup for $marker {
            type Affine = $aff;
            type Proj = $proj;
            fn scratch_bytes_for_window2() -> usize {
                // SAFETY: pure function of its argument.
                unsafe { $sizeof(0) }
            }
            fn tile(
                out: &mut $proj,
                points: &[$aff],
                scalars: &[blst_scalar],
                scratch: &mut [u64],
                bit0: usize,
                window: usize,
            ) {
                let p = [points.as_ptr() as *const $b_aff, std::ptr::null()];
                let s = [scalars.as_ptr() as *const u8, std::ptr::null()];
                // SAFETY: a null second pointer tells blst the arrays are contiguous;
                // `points` and `scalars` have equal lengths (checked by the caller) and
                // `scratch` holds 2^(window−1) buckets (see `scratch_len`).
                unsafe {
                    $tile(
                        out.as_blst_mut(),
                        p.as_ptr(),
                        points.len(),
                        s.as_ptr(),
                        NBITS,
                        scratch.as_mut_ptr() as *mut _,
                        bit0,
                        window,
                    )
                };
            }
            fn serial(points: &[$aff], scalars: &[blst_scalar]) -> $proj {
                // SAFETY: pure function of its argument.
                let bytes = unsafe { $sizeof(points.len()) };
                let mut scratch = vec![0u64; bytes.div_ceil(8)];
                let mut out = <$proj>::default();
                let p = [points.as_ptr() as *const $b_aff, std::ptr::null()];
                let s = [scalars.as_ptr() as *const u8, std::ptr::null()];
                // SAFETY: as in `tile`; the scratch has the size blst asks for.
                unsafe {
                    $mult(
                        out.as_blst_mut(),
                        p.as_ptr(),
                        points.len(),
                        s.as_ptr(),
                        NBITS,
                        scratch.as_mut_ptr() as *mut _,
                    )
                };
                out
            }
            fn add(a: &$proj, b: &$proj) -> $proj {
                a.add(b)
            }
            fn double(a: &$proj) -> $proj {
                a.double()
            }
            fn add_affine(a: &$proj, b: &$aff) -> $proj {
                a.add_affine(b)
            }
        }
    };
}
pippenger_group!(
    G1,
    G1Affine,
    G1Projective,
    blst_p1_affine,
    blst_p1,
    blst_p1s_tile_pippenger,
    blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof
);
pippenger_group!(
    G2,
    G2Affine,
    G2Projective,
    blst_p2_affine,
    blst_p2,
    blst_p2s_tile_pippenger,
    blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof
);

/// Window (bits) for a Pippenger over `n` points: balances n·255/w bucket
/// additions against 2^w·255/w bucket reductions.
pub fn default_window(n: usize) -> usize {
    let log = usize::BITS - n.max(1).leading_zeros(); // bits of n
    match log {
        0..=5 => 2,
        6..=13 => log as usize - 3,
        _ => log as usize - 4,
    }
}

/// u64 words of scratch for one tile of `window` bits (2^(window−1) buckets).
fn scratch_len<G: PippengerGroup>(window: usize) -> usize {
    // blst sizes one bucket pair at window 2.
    (G::scratch_bytes_for_window2() / 8) << (window.max(2) - 1)
}

/// Below this many points one serial blst call beats splitting.
const SERIAL_BELOW: usize = 64;

/// Converts Montgomery-form scalars to the canonical bytes Pippenger reads.
pub fn to_blst_scalars(scalars: &[Fr]) -> Vec<blst_scalar> {
    scalars
        .par_iter()
        .with_min_len(4096)
        .map(|k| {
            let mut s = blst_scalar::default();
            // SAFETY: valid pointers.
            unsafe { blst_scalar_from_fr(&mut s, k.as_blst()) };
            s
        })
        .collect()
}

/// `Σ scalars[i]·points[i]`, parallel on the current rayon pool.
/// `window` 0 chooses one. Lengths must be equal.
///
/// Witness vectors are full of zeros and ones (bits, flags): when enough
/// scalars are 0 or 1, the ones are summed directly, the zeros dropped, and
/// only the rest goes through Pippenger.
pub fn msm<G: PippengerGroup>(points: &[G::Affine], scalars: &[Fr], window: usize) -> G::Proj {
    assert_eq!(points.len(), scalars.len());
    let one = Fr::one();
    let trivial = scalars
        .par_iter()
        .with_min_len(4096)
        .filter(|k| k.is_zero() || **k == one)
        .count();
    if trivial * 16 < points.len() {
        return pippenger::<G>(points, scalars, window);
    }
    let ones = points
        .par_iter()
        .zip(scalars)
        .with_min_len(1024)
        .filter(|(_, k)| **k == one)
        .fold(G::Proj::default, |acc, (p, _)| G::add_affine(&acc, p))
        .reduce(G::Proj::default, |a, b| G::add(&a, &b));
    let (rest_points, rest_scalars): (Vec<G::Affine>, Vec<Fr>) = points
        .iter()
        .zip(scalars)
        .filter(|(_, k)| !k.is_zero() && **k != one)
        .map(|(p, k)| (*p, *k))
        .unzip();
    G::add(&ones, &pippenger::<G>(&rest_points, &rest_scalars, window))
}

/// Pippenger over every input (no scalar is special-cased).
fn pippenger<G: PippengerGroup>(points: &[G::Affine], scalars: &[Fr], window: usize) -> G::Proj {
    let n = points.len();
    if n == 0 {
        return G::Proj::default();
    }
    let scalars = to_blst_scalars(scalars);
    let threads = rayon::current_num_threads();
    if n < SERIAL_BELOW || threads == 1 && window == 0 {
        return G::serial(points, &scalars);
    }

    // Columns: enough tiles to keep every thread busy, each column still large.
    let mut nx = 1;
    let mut w = if window > 0 {
        window
    } else {
        default_window(n)
    };
    while window == 0 && (NBITS / w + 1) * nx < threads && n / (nx + 1) >= 4096 {
        nx += 1;
        w = default_window(n / nx);
    }
    let w = w.clamp(2, 24);
    let ny = NBITS / w + 1; // the top row (possibly 0 bits wide) takes the last Booth carry
    let col = n.div_ceil(nx);

    let tiles: Vec<(usize, usize)> = (0..ny).flat_map(|r| (0..nx).map(move |c| (r, c))).collect();
    let results: Vec<G::Proj> = tiles
        .par_iter()
        .map_init(
            || vec![0u64; scratch_len::<G>(w)],
            |scratch, &(r, c)| {
                let lo = c * col;
                let hi = (lo + col).min(n);
                let mut out = G::Proj::default();
                G::tile(
                    &mut out,
                    &points[lo..hi],
                    &scalars[lo..hi],
                    scratch,
                    r * w,
                    w,
                );
                out
            },
        )
        .collect();

    // Horner over rows, top row first.
    let mut acc = G::Proj::default();
    for r in (0..ny).rev() {
        for _ in 0..w {
            acc = G::double(&acc);
        }
        for c in 0..nx {
            acc = G::add(&acc, &results[r * nx + c]);
        }
    }
    acc
}
