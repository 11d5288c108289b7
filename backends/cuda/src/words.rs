//! Host data as the `u64` words the kernels take: field elements as limbs,
//! affine points as their coordinates' limbs.

use zkpipe_core::ScalarField;

use crate::nvrtc::KernelCurve;

/// A curve's scalar field as the kernels take it: four little-endian
/// Montgomery limbs (R = 2^256), and the module whose kernels work on it.
///
/// # Safety
/// The type must be `repr(C)` `[u64; 4]` (32 bytes, no padding, every bit
/// pattern a valid value): [`limbs`] views slices of it as words.
pub(crate) unsafe trait DeviceScalar: ScalarField {
    /// The kernel module of this field's curve.
    const KERNELS: KernelCurve;
    /// The limbs.
    fn limbs(&self) -> [u64; 4];
}

// SAFETY: both are repr(C) structs of one [u64; 4].
unsafe impl DeviceScalar for zkpipe_core::Fr {
    const KERNELS: KernelCurve = KernelCurve::Bls12_381;
    fn limbs(&self) -> [u64; 4] {
        self.limbs
    }
}

// SAFETY: as above.
unsafe impl DeviceScalar for zkpipe_core::bn254::Fr {
    const KERNELS: KernelCurve = KernelCurve::Bn254;
    fn limbs(&self) -> [u64; 4] {
        self.limbs
    }
}

/// Views field elements as the `u64` limbs the kernels take.
pub(crate) fn limbs<F: DeviceScalar>(v: &[F]) -> &[u64] {
    // SAFETY: F is repr(C) [u64; 4] (the trait's contract); the view covers the same bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, v.len() * 4) }
}

pub(crate) fn limbs_mut<F: DeviceScalar>(v: &mut [F]) -> &mut [u64] {
    // SAFETY: as in `limbs`; every bit pattern is a valid value.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u64, v.len() * 4) }
}

/// Views affine points (repr(C) limb arrays) as `u64` words.
pub(crate) fn point_words<T>(v: &[T]) -> &[u64] {
    // SAFETY: the seam's affine types are repr(C) arrays of u64 limbs with no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, std::mem::size_of_val(v) / 8) }
}
