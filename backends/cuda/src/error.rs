//! Turning a cudarc driver error into the `AccelError` the seam carries
//! (its code tells the host whether memory ran out). Used by every layer.

use zkpipe_core::plugin::{AccelError, ErrorCode};

pub(crate) fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> AccelError + '_ {
    move |e| {
        let code = if format!("{e:?}").contains("OUT_OF_MEMORY") {
            ErrorCode::OUT_OF_MEMORY
        } else {
            ErrorCode::DEVICE_UNAVAILABLE
        };
        AccelError::new(code, format!("{what}: {e:?}"))
    }
}
