//! [`Guarded`]: a Rust implementation adapted to the seam, its arguments
//! checked and its panics caught.

use abi_stable::std_types::{ROption, RResult, RSlice, RSliceMut, RVec};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::*;
use crate::bn254;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Adapts an [`AcceleratorImpl`] to the seam: checks arguments, then runs
/// the op under `catch_unwind` (a panic crossing the seam would abort the
/// host) and converts results to FFI types.
#[derive(Debug)]
pub struct Guarded<T>(pub T);

/// Runs `f`, turning a panic into an [`ErrorCode::INTERNAL`] error.
pub fn guard<R>(op: &str, f: impl FnOnce() -> Result<R, AccelError>) -> AccelResult<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into(),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            RResult::RErr(AccelError::new(
                ErrorCode::INTERNAL,
                format!("panic in {op}: {msg}"),
            ))
        }
    }
}

fn check_msm_lengths<T>(
    op: &str,
    bases: &BasesRef<'_, T>,
    scalars: usize,
) -> Result<(), AccelError> {
    match bases {
        BasesRef::Host(b) if b.len() != scalars => Err(AccelError::invalid_input(format!(
            "{op}: {} bases but {scalars} scalars (lengths must be equal)",
            b.len()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a BN254 op on a CPU without the instructions its host
/// arithmetic uses (a call would stop the process with an illegal
/// instruction).
fn bn254_here() -> Result<(), AccelError> {
    match bn254::cpu::missing() {
        Some(why) => Err(AccelError::new(ErrorCode::UNSUPPORTED, why)),
        None => Ok(()),
    }
}

fn check_ntt_length(len: usize) -> Result<(), AccelError> {
    check_ntt_length_on(crate::Curve::Bls12_381, len)
}

fn check_ntt_length_on(curve: crate::Curve, len: usize) -> Result<(), AccelError> {
    if len == 0 || !len.is_power_of_two() {
        return Err(AccelError::invalid_input(format!(
            "ntt: length {len} is not a power of two"
        )));
    }
    let max = curve.two_adicity();
    if len.trailing_zeros() > max {
        return Err(AccelError::invalid_input(format!(
            "ntt: length 2^{} exceeds {curve}'s Fr, whose roots of unity go up to 2^{max}",
            len.trailing_zeros()
        )));
    }
    Ok(())
}

/// A group's three calls, guarded the same way in G1 and G2: lengths
/// checked, panics caught.
macro_rules! group_ops {
    ($aff:ty, $proj:ty, ($msm:ident, $msm_op:expr), ($batch:ident, $batch_op:expr), $upload:ident) => {
        fn $msm(
            &self,
            bases: BasesRef<'_, $aff>,
            scalars: RSlice<'_, Fr>,
            config: &MsmConfig,
        ) -> AccelResult<$proj> {
            guard($msm_op, || {
                check_msm_lengths($msm_op, &bases, scalars.len())?;
                self.0.$msm(bases, scalars.as_slice(), config)
            })
        }
        fn $batch(
            &self,
            bases: BasesRef<'_, $aff>,
            scalars: RSlice<'_, RSlice<'_, Fr>>,
            config: &MsmConfig,
        ) -> AccelResult<RVec<$proj>> {
            guard($batch_op, || {
                for s in scalars.iter() {
                    check_msm_lengths($batch_op, &bases, s.len())?;
                }
                self.0
                    .$batch(bases, scalars.as_slice(), config)
                    .map(RVec::from)
            })
        }
        fn $upload(&self, bases: RSlice<'_, $aff>, device: u32) -> AccelResult<BasesHandle> {
            guard(stringify!($upload), || {
                self.0.$upload(bases.as_slice(), device)
            })
        }
    };
}

impl<T: AcceleratorImpl> Accelerator for Guarded<T> {
    fn info(&self) -> BackendInfo {
        // Infallible at the seam: a panic here becomes an info record that says so.
        match guard("info", || Ok(self.0.info())) {
            RResult::ROk(i) => i,
            RResult::RErr(e) => BackendInfo {
                name: "unknown".into(),
                version: "?".into(),
                devices: RVec::new(),
                notes: e.message,
            },
        }
    }
    fn capabilities(&self) -> Capabilities {
        let mut caps = guard("capabilities", || Ok(self.0.capabilities())).unwrap_or_default();
        // BN254's host arithmetic needs ADX and BMI2: where they are
        // missing no backend serves BN254 (its calls are refused below).
        if bn254::cpu::missing().is_some() {
            caps.ops
                .retain(|o| Capabilities::curve_of(&o.op) != crate::Curve::Bn254);
        }
        caps
    }
    group_ops!(
        G1Affine,
        G1Projective,
        (msm_g1, ops::MSM_G1),
        (msm_g1_batch, ops::MSM_G1_BATCH),
        upload_bases_g1
    );
    group_ops!(
        G2Affine,
        G2Projective,
        (msm_g2, ops::MSM_G2),
        (msm_g2_batch, ops::MSM_G2_BATCH),
        upload_bases_g2
    );
    fn drop_bases(&self, handle: BasesHandle) -> AccelResult<()> {
        guard("drop_bases", || self.0.drop_bases(handle))
    }
    fn ntt(&self, mut values: RSliceMut<'_, Fr>, config: &NttConfig) -> AccelResult<()> {
        guard(ops::NTT, || {
            check_ntt_length(values.len())?;
            self.0.ntt(values.as_mut_slice(), config)
        })
    }
    fn quotient(
        &self,
        mut a: RSliceMut<'_, Fr>,
        b: RSlice<'_, Fr>,
        c: RSlice<'_, Fr>,
        config: &QuotientConfig,
    ) -> AccelResult<()> {
        guard(ops::QUOTIENT, || {
            check_ntt_length(a.len())?;
            if b.len() != a.len() || c.len() != a.len() {
                return Err(AccelError::invalid_input(format!(
                    "quotient: lengths {}, {}, {} differ",
                    a.len(),
                    b.len(),
                    c.len()
                )));
            }
            if config.coset.is_zero() {
                return Err(AccelError::invalid_input(
                    "quotient: coset shift must be nonzero",
                ));
            }
            self.0
                .quotient(a.as_mut_slice(), b.as_slice(), c.as_slice(), config)
        })
    }
    fn host_alloc(&self, bytes: u64) -> AccelResult<u64> {
        guard(ops::HOST_MEMORY, || {
            if bytes == 0 || bytes > isize::MAX as u64 {
                return Err(AccelError::invalid_input(format!(
                    "host_alloc: {bytes} bytes (1 to isize::MAX allowed)"
                )));
            }
            self.0.host_alloc(bytes)
        })
    }
    fn host_free(&self, address: u64) -> AccelResult<()> {
        guard(ops::HOST_MEMORY, || self.0.host_free(address))
    }
    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> AccelResult<R1csHandle> {
        guard("upload_r1cs", || {
            r1cs.check()?;
            self.0.upload_r1cs(r1cs, device)
        })
    }
    fn drop_r1cs(&self, handle: R1csHandle) -> AccelResult<()> {
        guard("drop_r1cs", || self.0.drop_r1cs(handle))
    }
    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: RSlice<'_, Fr>,
        aux: RSlice<'_, Fr>,
        mut h_out: RSliceMut<'_, Fr>,
        config: &SpmvConfig,
    ) -> AccelResult<ROption<u64>> {
        guard("quotient_from_witness", || {
            if config.log_n > crate::types::FR_TWO_ADICITY
                || h_out.len() as u64 != 1u64 << config.log_n
            {
                return Err(AccelError::invalid_input(format!(
                    "quotient_from_witness: h_out holds {} elements, not the 2^{} of the domain",
                    h_out.len(),
                    config.log_n
                )));
            }
            if config.coset.is_zero() {
                return Err(AccelError::invalid_input(
                    "quotient_from_witness: coset shift must be nonzero",
                ));
            }
            self.0
                .quotient_from_witness(
                    handle,
                    inputs.as_slice(),
                    aux.as_slice(),
                    h_out.as_mut_slice(),
                    config,
                )
                .map(ROption::from)
        })
    }
    fn bn254_msm_g1(
        &self,
        bases: BasesRef<'_, bn254::G1Affine>,
        scalars: RSlice<'_, bn254::Fr>,
        config: &MsmConfig,
    ) -> AccelResult<bn254::G1Projective> {
        guard(ops::bn254::MSM_G1, || {
            bn254_here()?;
            check_msm_lengths(ops::bn254::MSM_G1, &bases, scalars.len())?;
            self.0.bn254_msm_g1(bases, scalars.as_slice(), config)
        })
    }
    fn bn254_upload_bases_g1(
        &self,
        bases: RSlice<'_, bn254::G1Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle> {
        guard("bn254.upload_bases_g1", || {
            bn254_here()?;
            self.0.bn254_upload_bases_g1(bases.as_slice(), device)
        })
    }
    fn bn254_msm_g2(
        &self,
        bases: BasesRef<'_, bn254::G2Affine>,
        scalars: RSlice<'_, bn254::Fr>,
        config: &MsmConfig,
    ) -> AccelResult<bn254::G2Projective> {
        guard(ops::bn254::MSM_G2, || {
            bn254_here()?;
            check_msm_lengths(ops::bn254::MSM_G2, &bases, scalars.len())?;
            self.0.bn254_msm_g2(bases, scalars.as_slice(), config)
        })
    }
    fn bn254_upload_bases_g2(
        &self,
        bases: RSlice<'_, bn254::G2Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle> {
        guard("bn254.upload_bases_g2", || {
            bn254_here()?;
            self.0.bn254_upload_bases_g2(bases.as_slice(), device)
        })
    }
    fn bn254_ntt(
        &self,
        mut values: RSliceMut<'_, bn254::Fr>,
        config: &NttConfigOf<bn254::Fr>,
    ) -> AccelResult<()> {
        guard(ops::bn254::NTT, || {
            bn254_here()?;
            check_ntt_length_on(crate::Curve::Bn254, values.len())?;
            if config
                .coset
                .as_ref()
                .into_option()
                .is_some_and(bn254::Fr::is_zero)
            {
                return Err(AccelError::invalid_input(
                    "ntt: coset shift must be nonzero",
                ));
            }
            self.0.bn254_ntt(values.as_mut_slice(), config)
        })
    }
    fn bn254_quotient(
        &self,
        mut a: RSliceMut<'_, bn254::Fr>,
        b: RSlice<'_, bn254::Fr>,
        device: u32,
    ) -> AccelResult<()> {
        guard(ops::bn254::QUOTIENT, || {
            bn254_here()?;
            let n = a.len();
            if b.len() != n {
                return Err(AccelError::invalid_input(format!(
                    "bn254.quotient: a has {n} values, b {}",
                    b.len()
                )));
            }
            // The odd coset needs the 2n-th roots: n below 2^28.
            if n == 0 || !n.is_power_of_two() || n.trailing_zeros() >= bn254::FR_TWO_ADICITY {
                return Err(AccelError::invalid_input(format!(
                    "bn254.quotient: {n} values; a power of two below 2^{} is needed",
                    bn254::FR_TWO_ADICITY
                )));
            }
            self.0
                .bn254_quotient(a.as_mut_slice(), b.as_slice(), device)
        })
    }
}

/// Wraps an implementation as a seam trait object (what plugins export; the
/// host can also use it to run a statically linked backend through the same path).
pub fn into_accelerator<T: AcceleratorImpl>(backend: T) -> AcceleratorBox {
    Accelerator_TO::from_value(Guarded(backend), abi_stable::sabi_trait::TD_Opaque)
}
