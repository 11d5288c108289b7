//! Host data as the `u64` words the kernels take: field elements as limbs,
//! affine points as their coordinates' limbs.

use zkpipe_core::Fr;

/// Views field elements as the `u64` limbs the kernels take.
pub(crate) fn limbs(v: &[Fr]) -> &[u64] {
    // SAFETY: Fr is repr(C) [u64; 4]; the view covers the same bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, v.len() * 4) }
}

pub(crate) fn limbs_mut(v: &mut [Fr]) -> &mut [u64] {
    // SAFETY: as in `limbs`; every bit pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u64, v.len() * 4) }
}

/// Views affine points (repr(C) limb arrays) as `u64` words.
pub(crate) fn point_words<T>(v: &[T]) -> &[u64] {
    // SAFETY: the seam's affine types are repr(C) arrays of u64 limbs with no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, std::mem::size_of_val(v) / 8) }
}
