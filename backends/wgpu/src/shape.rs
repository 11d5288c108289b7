//! Shapes that the host code and the WGSL it generates or dispatches must
//! agree on: workgroup sizes, limb widths, chunk and tile sizes.
//!
//! A leaf: it names nothing else in the crate, so every other module may
//! depend on it and the modules' dependencies point one way
//! (lib → msm, ntt → gpu → shader → field, all of them → shape).

/// Threads per workgroup of the 1-D kernels: the `@workgroup_size(256)` of
/// shaders/*.wgsl (2-D grids above the per-dimension limit).
pub(crate) const WORKGROUP_THREADS: u64 = 256;

/// Threads per workgroup of the MSM's `reduce` and `merge` kernels
/// (`@workgroup_size(64)` in shaders/msm.wgsl).
pub(crate) const MSM_REDUCE_WORKGROUP_THREADS: u64 = 64;

/// Points of a bucket one MSM thread sums (WGSL `CHUNK`): a bucket of many
/// equal scalars is spread over many threads, and every thread's loop stays
/// far below lavapipe's 65 535 iterations.
pub(crate) const CHUNK: u32 = 32;

/// Chunk sums one MSM thread adds per tree pass, and ranges per merge pass
/// (WGSL `FAN`).
pub(crate) const FAN: u32 = 8;

/// Entries of a matrix row one SpMV thread sums per pass (WGSL `SEG`):
/// longer rows take more passes, so no thread's loop nears lavapipe's
/// 65 535 iterations.
pub(crate) const SPMV_SEGMENT: u32 = 256;

/// Column bit marking a coefficient of one in the uploaded matrices (WGSL
/// `ONE`): the multiplication is skipped. Variables stay below it.
pub(crate) const SPMV_ONE_BIT: u32 = 1 << 31;

/// Bits per limb of the MSM's Fp when column sums run in 64-bit integers
/// (`SHADER_INT64`).
pub(crate) const FP_LIMB_BITS_INT64: u32 = 28;

/// Bits per limb of the MSM's Fp when column sums run in u32.
pub(crate) const FP_LIMB_BITS_U32: u32 = 13;

/// log2 of the NTT tile: the most Fr elements (32 B) a workgroup memory of
/// `workgroup_storage_bytes` holds, rounded down to a power of two (WebGPU's
/// default 16 KiB: 2^9; lavapipe's 32 KiB and the H200's 48 KiB: 2^10).
pub(crate) fn tile_log(workgroup_storage_bytes: u32) -> u32 {
    (workgroup_storage_bytes / 32).max(2).ilog2()
}

/// Threads per NTT tile (WGSL `TILE_WG`): one per butterfly, at most 256
/// (WebGPU's guaranteed workgroup size, and room for the field code's
/// registers on GPUs).
pub(crate) fn tile_threads(tile_log: u32) -> u32 {
    (1u32 << (tile_log - 1)).min(256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles() {
        assert_eq!(tile_log(48 << 10), 10);
        assert_eq!(
            tile_log(wgpu::Limits::default().max_compute_workgroup_storage_size),
            9
        );
        assert_eq!(tile_threads(10), 256);
        assert_eq!(tile_threads(2), 2);
    }
}
