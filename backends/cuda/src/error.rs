//! Turning a cudarc driver error into the `AccelError` the seam carries
//! (its code tells the host whether memory ran out). Used by every layer.

use zkpipe_core::plugin::{AccelError, ErrorCode};

pub(crate) fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> AccelError + '_ {
    move |e| AccelError::new(driver_error_code(&e), format!("{what}: {e:?}"))
}

/// The seam's code for a driver error, read from its `CUresult` (not from
/// its text, which is the driver's to word): out of memory is the one the
/// scheduler retries, a missing or broken device or driver is
/// `DEVICE_UNAVAILABLE`, a value the driver refused is `INVALID_INPUT`, an
/// operation this device or driver does not offer is `UNSUPPORTED` (callers
/// may fall back to the host), anything else is `INTERNAL`.
fn driver_error_code(e: &cudarc::driver::DriverError) -> ErrorCode {
    use cudarc::driver::sys::CUresult as R;
    match e.0 {
        R::CUDA_ERROR_OUT_OF_MEMORY => ErrorCode::OUT_OF_MEMORY,
        R::CUDA_ERROR_NO_DEVICE
        | R::CUDA_ERROR_INVALID_DEVICE
        | R::CUDA_ERROR_DEVICE_UNAVAILABLE
        | R::CUDA_ERROR_DEVICE_NOT_LICENSED
        | R::CUDA_ERROR_NOT_INITIALIZED
        | R::CUDA_ERROR_DEINITIALIZED
        | R::CUDA_ERROR_STUB_LIBRARY
        | R::CUDA_ERROR_SYSTEM_NOT_READY
        | R::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        | R::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
        | R::CUDA_ERROR_ECC_UNCORRECTABLE => ErrorCode::DEVICE_UNAVAILABLE,
        R::CUDA_ERROR_INVALID_VALUE => ErrorCode::INVALID_INPUT,
        R::CUDA_ERROR_NOT_SUPPORTED => ErrorCode::UNSUPPORTED,
        _ => ErrorCode::INTERNAL,
    }
}

#[cfg(test)]
mod tests {
    use super::driver_error_code;
    use cudarc::driver::DriverError;
    use cudarc::driver::sys::CUresult as R;
    use zkpipe_core::plugin::ErrorCode as C;

    /// Classified by code alone: no driver is needed (the error's text
    /// would ask libcuda for it), and no wording can be mistaken for
    /// out-of-memory.
    #[test]
    fn driver_errors_are_classified_by_their_code() {
        let cases = [
            (R::CUDA_ERROR_OUT_OF_MEMORY, C::OUT_OF_MEMORY),
            (R::CUDA_ERROR_NO_DEVICE, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_NOT_INITIALIZED, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_DEINITIALIZED, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_INVALID_DEVICE, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_DEVICE_UNAVAILABLE, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, C::DEVICE_UNAVAILABLE),
            (R::CUDA_ERROR_INVALID_VALUE, C::INVALID_INPUT),
            (R::CUDA_ERROR_NOT_SUPPORTED, C::UNSUPPORTED),
            // Out of launch resources (registers, shared memory) is a
            // kernel configuration problem: retrying cannot help.
            (R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, C::INTERNAL),
            (R::CUDA_ERROR_ILLEGAL_ADDRESS, C::INTERNAL),
            (R::CUDA_ERROR_INVALID_HANDLE, C::INTERNAL),
            (R::CUDA_ERROR_UNKNOWN, C::INTERNAL),
        ];
        for (result, code) in cases {
            assert_eq!(driver_error_code(&DriverError(result)), code, "{result:?}");
        }
    }
}
