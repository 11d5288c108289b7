//! Whether this CPU runs this build's BN254 arithmetic. On x86-64 that is
//! halo2curves' assembly, which uses ADX and BMI2 (Intel since Broadwell,
//! AMD since Zen) and checks nothing at run time: on a CPU without them
//! the first multiplication would stop the process. Every BN254 door
//! ([`crate::Curve::expect`] of BN254, the backends' BN254 ops) asks here
//! first and refuses cleanly instead.

use std::sync::OnceLock;

use crate::Error;

/// Set (to anything) to act as on a CPU without ADX and BMI2: for tests of
/// the refusal on machines that have them.
pub const ASSUME_MISSING_ENV: &str = "ZKPIPE_ASSUME_NO_ADX";

/// Why BN254 cannot run here, or `None` when it can.
pub fn missing() -> Option<&'static str> {
    static MISSING: OnceLock<Option<&'static str>> = OnceLock::new();
    *MISSING.get_or_init(|| {
        let pretend = std::env::var_os(ASSUME_MISSING_ENV).is_some();
        (pretend || !has_adx_bmi2()).then_some(
            "BN254's field arithmetic in this build uses the ADX and BMI2 instructions \
             (Intel Broadwell, AMD Zen or later), which this CPU lacks",
        )
    })
}

#[cfg(target_arch = "x86_64")]
fn has_adx_bmi2() -> bool {
    std::arch::is_x86_feature_detected!("adx") && std::arch::is_x86_feature_detected!("bmi2")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_adx_bmi2() -> bool {
    // The portable arithmetic: nothing to ask of the CPU.
    true
}

/// Refuses BN254 work on a CPU that cannot run it.
///
/// # Errors
/// [`Error::InvalidInput`] (the request cannot be served here, exit 2)
/// naming the missing instructions.
pub fn check() -> Result<(), Error> {
    match missing() {
        Some(why) => Err(Error::InvalidInput(format!("BN254 cannot run here: {why}"))),
        None => Ok(()),
    }
}
