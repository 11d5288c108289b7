//! The FFI-safe trait object every backend library hands the host.

#![allow(non_local_definitions)] // emitted by #[sabi_trait] on Rust ≥ 1.80

use abi_stable::{
    sabi_trait,
    std_types::{RBox, ROption, RSlice, RSliceMut, RVec},
};

use super::*;
use crate::bn254;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// The FFI-safe accelerator interface (one object per backend instance).
///
/// Plugin authors do not implement this directly: implement
/// [`AcceleratorImpl`] and export it with [`export_backend!`](crate::export_backend).
#[sabi_trait]
pub trait Accelerator: Send + Sync {
    /// Name, version and devices.
    fn info(&self) -> BackendInfo;
    /// Supported ops.
    fn capabilities(&self) -> Capabilities;
    /// `Σ scalars[i]·bases[i]` in G1.
    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G1Projective>;
    /// `Σ scalars[i]·bases[i]` in G2.
    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G2Projective>;
    /// One G1 MSM per scalar vector, all over the same bases.
    fn msm_g1_batch(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G1Projective>>;
    /// One G2 MSM per scalar vector, all over the same bases.
    fn msm_g2_batch(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G2Projective>>;
    /// Copies G1 bases into the backend (device memory for GPUs) and returns a handle.
    fn upload_bases_g1(&self, bases: RSlice<'_, G1Affine>, device: u32)
    -> AccelResult<BasesHandle>;
    /// Copies G2 bases into the backend and returns a handle.
    fn upload_bases_g2(&self, bases: RSlice<'_, G2Affine>, device: u32)
    -> AccelResult<BasesHandle>;
    /// Frees resident bases.
    fn drop_bases(&self, handle: BasesHandle) -> AccelResult<()>;
    /// In-place NTT of `values` (length a power of two).
    #[sabi(last_prefix_field)]
    fn ntt(&self, values: RSliceMut<'_, Fr>, config: &NttConfig) -> AccelResult<()>;
    /// Groth16's quotient in one call. `a, b, c` are evaluations over the
    /// n-th roots of unity (natural order, equal power-of-two lengths); on
    /// return `a` holds the coefficients of `h = (A·B − C)/Z`, computed on the
    /// coset g·⟨ω⟩ with `Z(g·ω^i) = gⁿ − 1` (the last coefficient is zero).
    /// Hosts call it only where [`Capabilities`] lists it (a plugin may
    /// leave it out and keep the default `UNSUPPORTED`).
    fn quotient(
        &self,
        a: RSliceMut<'_, Fr>,
        b: RSlice<'_, Fr>,
        c: RSlice<'_, Fr>,
        config: &QuotientConfig,
    ) -> AccelResult<()>;
    /// Host memory of `bytes` bytes (aligned to 64, contents unspecified)
    /// that this backend's copies read and write fastest: page-locked for
    /// a GPU, so inputs placed there skip its staging copies. Returns the
    /// address. Listed as [`ops::HOST_MEMORY`]. Added after `quotient`: a
    /// plugin built before it has a shorter vtable, which the loader's
    /// layout check refuses ("incompatible plugin interface"; rebuild it).
    fn host_alloc(&self, bytes: u64) -> AccelResult<u64>;
    /// Frees memory from [`Accelerator::host_alloc`]; the caller has no op
    /// in flight on it. `INVALID_INPUT` for an address it did not return.
    fn host_free(&self, address: u64) -> AccelResult<()>;
    /// Copies R1CS matrices into the backend (device memory for GPUs) for
    /// [`Accelerator::quotient_from_witness`]; they count against the
    /// device's memory like resident bases. Listed as [`ops::SPMV`].
    /// Added after `host_free`: a plugin built before it has a shorter
    /// vtable, which the loader's layout check refuses ("incompatible
    /// plugin interface"; rebuild it).
    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> AccelResult<R1csHandle>;
    /// Frees uploaded matrices. `INVALID_INPUT` for an unknown handle.
    fn drop_r1cs(&self, handle: R1csHandle) -> AccelResult<()>;
    /// Groth16's quotient from a witness `w = inputs ‖ aux` (two slices:
    /// joining them would cost the host copy this op exists to avoid), over
    /// the domain of n = `h_out.len()` = 2^`config.log_n` points: `a, b, c`
    /// = `A·w, B·w, C·w` on the constraints' rows, then bellman's rows
    /// `input_i · 1 = 0` (the inputs in `a`), then zeros; with
    /// `config.check`, the first constraint where `a·b ≠ c` is returned as
    /// `Some(row)` and `h_out`'s contents are unspecified (a host backend
    /// may have used it for `a`); else `h_out` gets what
    /// [`Accelerator::quotient`] gives for `a, b, c` and the result is
    /// `None`. The vectors stay inside the backend. `INVALID_INPUT` for an
    /// unknown or dropped handle, one of another device, a witness of
    /// another shape, or a domain too small for the rows.
    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: RSlice<'_, Fr>,
        aux: RSlice<'_, Fr>,
        h_out: RSliceMut<'_, Fr>,
        config: &SpmvConfig,
    ) -> AccelResult<ROption<u64>>;
    /// [`Accelerator::msm_g1`] on BN254. Listed as
    /// [`ops::bn254::MSM_G1`]. The BN254 ops were added after
    /// `quotient_from_witness`: a plugin built before them has a shorter
    /// vtable, which the loader's layout check refuses (rebuild it).
    fn bn254_msm_g1(
        &self,
        bases: BasesRef<'_, bn254::G1Affine>,
        scalars: RSlice<'_, bn254::Fr>,
        config: &MsmConfig,
    ) -> AccelResult<bn254::G1Projective>;
    /// [`Accelerator::msm_g2`] on BN254. Listed as [`ops::bn254::MSM_G2`].
    fn bn254_msm_g2(
        &self,
        bases: BasesRef<'_, bn254::G2Affine>,
        scalars: RSlice<'_, bn254::Fr>,
        config: &MsmConfig,
    ) -> AccelResult<bn254::G2Projective>;
    /// [`Accelerator::ntt`] over BN254's Fr (lengths up to 2^28). Listed
    /// as [`ops::bn254::NTT`].
    fn bn254_ntt(
        &self,
        values: RSliceMut<'_, bn254::Fr>,
        config: &NttConfigOf<bn254::Fr>,
    ) -> AccelResult<()>;
    /// [`Accelerator::upload_bases_g1`] for BN254's G1; the handle serves
    /// [`Accelerator::bn254_msm_g1`] only and is freed by
    /// [`Accelerator::drop_bases`].
    fn bn254_upload_bases_g1(
        &self,
        bases: RSlice<'_, bn254::G1Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle>;
    /// [`Accelerator::upload_bases_g2`] for BN254's G2.
    fn bn254_upload_bases_g2(
        &self,
        bases: RSlice<'_, bn254::G2Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle>;
    /// BN254's Groth16 quotient as snarkjs and rapidsnark make it, in one
    /// call: `a` and `b` are A·w and B·w over the n-th roots of unity
    /// (natural order, equal power-of-two lengths up to 2^27); with
    /// c = a∘b, the three are moved to the odd coset ω₂ₙ·⟨ω⟩ (the inverse
    /// NTT, then the forward NTT shifted by ω₂ₙ) and on return `a` holds
    /// h = a·b − c there, in natural order. Listed as
    /// [`ops::bn254::QUOTIENT`].
    fn bn254_quotient(
        &self,
        a: RSliceMut<'_, bn254::Fr>,
        b: RSlice<'_, bn254::Fr>,
        device: u32,
    ) -> AccelResult<()>;
}

/// An owned accelerator trait object, as returned by a plugin's `new`.
pub type AcceleratorBox = Accelerator_TO<'static, RBox<()>>;
