//! The MSM's kernel handles (`kernels/msm.cu`), loaded with each device's
//! module. Apart from `msm.rs` so that the device (`device.rs`) can hold
//! them without depending on the MSM's launch code above it.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

/// The scalar-side kernels, shared by G1 and G2.
pub(crate) struct ScalarKernels {
    pub(crate) from_mont: CudaFunction,
    pub(crate) count: CudaFunction,
    pub(crate) scan: CudaFunction,
    pub(crate) scatter: CudaFunction,
    pub(crate) chunk_map: CudaFunction,
}

/// The point kernels of one group.
pub(crate) struct PointKernels {
    pub(crate) accumulate: CudaFunction,
    pub(crate) tree_pass: CudaFunction,
    pub(crate) bucket_sum: CudaFunction,
    pub(crate) window_segments: CudaFunction,
    pub(crate) reduce: CudaFunction,
    pub(crate) precompute: CudaFunction,
    pub(crate) bit_sum: CudaFunction,
}

/// Every MSM kernel of a device.
pub(crate) struct MsmKernels {
    pub(crate) scalar: ScalarKernels,
    pub(crate) g1: PointKernels,
    pub(crate) g2: PointKernels,
}

/// Kernel entry points of `msm.cu`, for loading and for the compile test.
pub const KERNELS: [&str; 19] = [
    "msm_from_mont",
    "msm_count",
    "msm_scan",
    "msm_scatter",
    "msm_chunk_map",
    "msm_accumulate_g1",
    "msm_tree_pass_g1",
    "msm_bucket_sum_g1",
    "msm_window_segments_g1",
    "msm_reduce_g1",
    "msm_precompute_g1",
    "msm_bit_sum_g1",
    "msm_accumulate_g2",
    "msm_tree_pass_g2",
    "msm_bucket_sum_g2",
    "msm_window_segments_g2",
    "msm_reduce_g2",
    "msm_precompute_g2",
    "msm_bit_sum_g2",
];

impl MsmKernels {
    pub(crate) fn load(module: &Arc<CudaModule>) -> Result<Self, String> {
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| format!("kernel {name}: {e:?}"))
        };
        let points = |g: &str| -> Result<PointKernels, String> {
            Ok(PointKernels {
                accumulate: f(&format!("msm_accumulate_{g}"))?,
                tree_pass: f(&format!("msm_tree_pass_{g}"))?,
                bucket_sum: f(&format!("msm_bucket_sum_{g}"))?,
                window_segments: f(&format!("msm_window_segments_{g}"))?,
                reduce: f(&format!("msm_reduce_{g}"))?,
                precompute: f(&format!("msm_precompute_{g}"))?,
                bit_sum: f(&format!("msm_bit_sum_{g}"))?,
            })
        };
        Ok(MsmKernels {
            scalar: ScalarKernels {
                from_mont: f("msm_from_mont")?,
                count: f("msm_count")?,
                scan: f("msm_scan")?,
                scatter: f("msm_scatter")?,
                chunk_map: f("msm_chunk_map")?,
            },
            g1: points("g1")?,
            g2: points("g2")?,
        })
    }
}
