//! The plain-Rust trait a backend implements.

use abi_stable::std_types::RSlice;

use super::*;
use crate::bn254;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// What a backend implements, in plain Rust types. Every op has a default
/// that answers [`ErrorCode::UNSUPPORTED`]. Arguments arrive validated by
/// [`Guarded`] (equal host lengths, NTT length a power of two); panics are
/// caught there too, so implementations may use ordinary Rust.
pub trait AcceleratorImpl: Send + Sync + 'static {
    /// Name, version and devices.
    fn info(&self) -> BackendInfo;
    /// Supported ops.
    fn capabilities(&self) -> Capabilities;
    /// See [`Accelerator::msm_g1`].
    ///
    /// # Errors
    /// Any [`AccelError`]; `INVALID_INPUT` for a resident set shorter than `scalars`.
    fn msm_g1(
        &self,
        _bases: BasesRef<'_, G1Affine>,
        _scalars: &[Fr],
        _config: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        Err(AccelError::unsupported(ops::MSM_G1))
    }
    /// See [`Accelerator::msm_g2`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g2(
        &self,
        _bases: BasesRef<'_, G2Affine>,
        _scalars: &[Fr],
        _config: &MsmConfig,
    ) -> Result<G2Projective, AccelError> {
        Err(AccelError::unsupported(ops::MSM_G2))
    }
    /// See [`Accelerator::msm_g1_batch`]; the default runs one MSM per vector.
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g1_batch(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: &[RSlice<'_, Fr>],
        config: &MsmConfig,
    ) -> Result<Vec<G1Projective>, AccelError> {
        scalars
            .iter()
            .map(|s| self.msm_g1(bases, s.as_slice(), config))
            .collect()
    }
    /// See [`Accelerator::msm_g2_batch`]; the default runs one MSM per vector.
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g2_batch(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: &[RSlice<'_, Fr>],
        config: &MsmConfig,
    ) -> Result<Vec<G2Projective>, AccelError> {
        scalars
            .iter()
            .map(|s| self.msm_g2(bases, s.as_slice(), config))
            .collect()
    }
    /// See [`Accelerator::upload_bases_g1`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the set does not fit; any other [`AccelError`].
    fn upload_bases_g1(
        &self,
        _bases: &[G1Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::upload_bases_g2`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the set does not fit; any other [`AccelError`].
    fn upload_bases_g2(
        &self,
        _bases: &[G2Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::drop_bases`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    fn drop_bases(&self, _handle: BasesHandle) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::ntt`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn ntt(&self, _values: &mut [Fr], _config: &NttConfig) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::NTT))
    }
    /// See [`Accelerator::quotient`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn quotient(
        &self,
        _a: &mut [Fr],
        _b: &[Fr],
        _c: &[Fr],
        _config: &QuotientConfig,
    ) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::QUOTIENT))
    }
    /// See [`Accelerator::host_alloc`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the memory cannot be had.
    fn host_alloc(&self, _bytes: u64) -> Result<u64, AccelError> {
        Err(AccelError::unsupported(ops::HOST_MEMORY))
    }
    /// See [`Accelerator::host_free`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an address this backend did not lend.
    fn host_free(&self, _address: u64) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::HOST_MEMORY))
    }
    /// See [`Accelerator::upload_r1cs`]; the matrices arrive checked
    /// ([`R1csRef::check`]).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when they do not fit; any other [`AccelError`].
    fn upload_r1cs(&self, _r1cs: R1csRef<'_>, _device: u32) -> Result<R1csHandle, AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
    /// See [`Accelerator::drop_r1cs`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    fn drop_r1cs(&self, _handle: R1csHandle) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
    /// See [`Accelerator::quotient_from_witness`]; `h_out` arrives of
    /// length 2^`config.log_n` and the coset shift nonzero. Check the rest
    /// with [`R1csShape::check_call`].
    ///
    /// # Errors
    /// `INVALID_INPUT` as listed there; any other [`AccelError`].
    fn quotient_from_witness(
        &self,
        _handle: R1csHandle,
        _inputs: &[Fr],
        _aux: &[Fr],
        _h_out: &mut [Fr],
        _config: &SpmvConfig,
    ) -> Result<Option<u64>, AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
    /// See [`Accelerator::bn254_msm_g1`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn bn254_msm_g1(
        &self,
        _bases: BasesRef<'_, bn254::G1Affine>,
        _scalars: &[bn254::Fr],
        _config: &MsmConfig,
    ) -> Result<bn254::G1Projective, AccelError> {
        Err(AccelError::unsupported(ops::bn254::MSM_G1))
    }
    /// See [`Accelerator::bn254_msm_g2`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn bn254_msm_g2(
        &self,
        _bases: BasesRef<'_, bn254::G2Affine>,
        _scalars: &[bn254::Fr],
        _config: &MsmConfig,
    ) -> Result<bn254::G2Projective, AccelError> {
        Err(AccelError::unsupported(ops::bn254::MSM_G2))
    }
    /// See [`Accelerator::bn254_ntt`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn bn254_ntt(
        &self,
        _values: &mut [bn254::Fr],
        _config: &NttConfigOf<bn254::Fr>,
    ) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::bn254::NTT))
    }
    /// See [`Accelerator::bn254_upload_bases_g1`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY`, `UNSUPPORTED` (the default), or another error.
    fn bn254_upload_bases_g1(
        &self,
        _bases: &[bn254::G1Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::bn254::RESIDENT_BASES))
    }
    /// See [`Accelerator::bn254_upload_bases_g2`].
    ///
    /// # Errors
    /// As [`AcceleratorImpl::bn254_upload_bases_g1`].
    fn bn254_upload_bases_g2(
        &self,
        _bases: &[bn254::G2Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::bn254::RESIDENT_BASES))
    }
    /// See [`Accelerator::bn254_quotient`] (lengths checked by the seam).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY`, `UNSUPPORTED` (the default), or another error.
    fn bn254_quotient(
        &self,
        _a: &mut [bn254::Fr],
        _b: &[bn254::Fr],
        _device: u32,
    ) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::bn254::QUOTIENT))
    }
}
