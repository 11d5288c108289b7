//! Host memory lent to the caller (`host_alloc`): page-locked and portable
//! (every device's context moves it at the link's speed), and cached, not
//! write-combined (the host reads it too: h goes on to the MSMs). Copies
//! from or into it skip the staging pieces (see `staging.rs`).

use std::sync::Arc;

use cudarc::driver::{CudaContext, result, sys};
use zkpipe_core::plugin::LentMemory;
use zkpipe_core::plugin::{AccelError, ErrorCode};

use crate::error::driver_err;

/// `bytes` of page-locked host memory, recorded in `lent`; its address.
///
/// # Errors
/// `OUT_OF_MEMORY` when the host has not that much available (pinned pages
/// cannot be swapped: pinning past what is free would starve the system)
/// or the driver refuses.
pub(crate) fn alloc(
    ctx: &Arc<CudaContext>,
    lent: &LentMemory,
    bytes: usize,
) -> Result<u64, AccelError> {
    let out_of_memory = |why: String| {
        AccelError::new(
            ErrorCode::OUT_OF_MEMORY,
            format!("host_alloc: {bytes} bytes: {why}"),
        )
    };
    if let Some(free) = zkpipe_core::util::machine::available_memory_bytes()
        && bytes as u64 > free
    {
        return Err(out_of_memory(format!(
            "the host has {free} bytes available"
        )));
    }
    ctx.bind_to_thread()
        .map_err(driver_err("binding the context"))?;
    // SAFETY: a plain allocation; the pointer is recorded and freed once.
    let p = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
        .map_err(|e| out_of_memory(format!("{e:?}")))?;
    lent.insert(p as usize, bytes);
    Ok(p as u64)
}

/// Frees memory from [`alloc`].
///
/// # Errors
/// `INVALID_INPUT` for an address not lent (or already freed).
pub(crate) fn free(
    ctx: &Arc<CudaContext>,
    lent: &LentMemory,
    address: u64,
) -> Result<(), AccelError> {
    lent.remove(address as usize)?;
    release(ctx, address)
}

/// Frees page-locked memory whose record is already gone.
///
/// # Errors
/// The driver's.
pub(crate) fn release(ctx: &Arc<CudaContext>, address: u64) -> Result<(), AccelError> {
    ctx.bind_to_thread()
        .map_err(driver_err("binding the context"))?;
    // SAFETY: `address` came from `malloc_host` (it was recorded) and its
    // record was removed by the one caller that frees it.
    unsafe { result::free_host(address as *mut std::ffi::c_void) }
        .map_err(driver_err("freeing page-locked host memory"))
}
