//! [`Backend`]: the host's handle on one accelerator instance, loaded from a
//! plugin or built from a statically linked implementation.

use abi_stable::std_types::{RResult, RSlice, RSliceMut};

use crate::Error;
use crate::plugin::{
    AccelError, AccelResult, AcceleratorBox, BackendInfo, BasesHandle, BasesRef, Capabilities,
    MsmConfig, NttConfig, NttConfigOf, R1csHandle, SpmvConfig,
};
use crate::r1cs::R1cs;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use crate::{Curve, bn254};

pub mod group;
pub mod lent_buffers;
pub mod loader;
pub mod msm_split;
pub mod reference;

/// One backend instance. Cheap to share by reference across threads.
pub struct Backend {
    name: String,
    inner: AcceleratorBox,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'a, T> From<&'a [T]> for BasesRef<'a, T> {
    fn from(s: &'a [T]) -> Self {
        BasesRef::Host(RSlice::from_slice(s))
    }
}

impl<'a, T> From<&'a Vec<T>> for BasesRef<'a, T> {
    fn from(v: &'a Vec<T>) -> Self {
        BasesRef::Host(RSlice::from_slice(v))
    }
}

impl<T> From<BasesHandle> for BasesRef<'_, T> {
    fn from(h: BasesHandle) -> Self {
        BasesRef::Resident(h)
    }
}

/// A group's three calls, the same in G1 and G2 (the ABI names each;
/// [`crate::backend::group::Group`] is the generic face of them).
macro_rules! group_ops {
    ($g:literal, $aff:ty, $proj:ty, $msm:ident, $batch:ident, $upload:ident) => {
        #[doc = concat!("`Σ scalars[i]·bases[i]` in ", $g, "; bases from the host (a slice) or resident (a handle).")]
        ///
        /// # Errors
        /// [`Error::Backend`] with `INVALID_INPUT` for mismatched lengths,
        /// or whatever the backend reports.
        pub fn $msm<'a>(
            &self,
            bases: impl Into<BasesRef<'a, $aff>>,
            scalars: &[Fr],
            config: &MsmConfig,
        ) -> Result<$proj, Error> {
            self.lift(self.inner.$msm(bases.into(), scalars.into(), config))
        }

        #[doc = concat!("One ", $g, " MSM per scalar vector over the same bases.")]
        ///
        /// # Errors
        /// As the single MSM.
        pub fn $batch<'a>(
            &self,
            bases: impl Into<BasesRef<'a, $aff>>,
            scalars: &[&[Fr]],
            config: &MsmConfig,
        ) -> Result<Vec<$proj>, Error> {
            let sets: Vec<RSlice<'_, Fr>> = scalars.iter().map(|s| RSlice::from_slice(s)).collect();
            self.lift(self.inner.$batch(bases.into(), sets.as_slice().into(), config))
                .map(|v| v.into_vec())
        }

        #[doc = concat!("Keeps ", $g, " bases in the backend; refer to them by the returned handle.")]
        ///
        /// # Errors
        /// `OUT_OF_MEMORY`, `UNSUPPORTED`, or another backend error.
        pub fn $upload(&self, bases: &[$aff], device: u32) -> Result<BasesHandle, Error> {
            self.lift(self.inner.$upload(bases.into(), device))
        }
    };
}

impl Backend {
    /// Wraps a seam trait object (from [`crate::backend::loader`] or
    /// [`crate::plugin::into_accelerator`]).
    pub fn new(name: impl Into<String>, inner: AcceleratorBox) -> Self {
        Backend {
            name: name.into(),
            inner,
        }
    }

    /// The registry name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn lift<T>(&self, r: AccelResult<T>) -> Result<T, Error> {
        match r {
            RResult::ROk(v) => Ok(v),
            RResult::RErr(source) => Err(Error::Backend {
                backend: self.name.clone(),
                source,
            }),
        }
    }

    /// Name, version and devices.
    pub fn info(&self) -> BackendInfo {
        self.inner.info()
    }

    /// Device `device` of this backend.
    ///
    /// # Errors
    /// [`Error::NoDevice`] when there is no such device, with the backend's
    /// own reason when it found none (e.g. no driver).
    pub fn device_info(&self, device: u32) -> Result<crate::plugin::DeviceInfo, Error> {
        let info = self.info();
        let count = info.devices.len();
        info.devices
            .into_iter()
            .find(|d| d.id == device)
            .ok_or_else(|| Error::NoDevice {
                backend: self.name.clone(),
                device,
                reason: if count == 0 {
                    format!("it found no usable device ({})", info.notes)
                } else {
                    format!("it has {count} device(s), numbered from 0")
                },
            })
    }

    /// Supported ops.
    pub fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    group_ops!(
        "G1",
        G1Affine,
        G1Projective,
        msm_g1,
        msm_g1_batch,
        upload_bases_g1
    );
    group_ops!(
        "G2",
        G2Affine,
        G2Projective,
        msm_g2,
        msm_g2_batch,
        upload_bases_g2
    );

    /// Frees resident bases.
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    pub fn drop_bases(&self, handle: BasesHandle) -> Result<(), Error> {
        self.lift(self.inner.drop_bases(handle))
    }

    /// In-place NTT (length a power of two).
    ///
    /// # Errors
    /// `INVALID_INPUT` for a bad length, or another backend error.
    pub fn ntt(&self, values: &mut [Fr], config: &NttConfig) -> Result<(), Error> {
        self.lift(self.inner.ntt(RSliceMut::from_mut_slice(values), config))
    }

    /// Groth16's quotient in one call: see [`crate::plugin::Accelerator::quotient`].
    ///
    /// # Errors
    /// `UNSUPPORTED` unless [`Backend::capabilities`] lists it; `INVALID_INPUT`
    /// for unequal or non-power-of-two lengths; other backend errors.
    pub fn quotient(
        &self,
        a: &mut [Fr],
        b: &[Fr],
        c: &[Fr],
        config: &crate::plugin::QuotientConfig,
    ) -> Result<(), Error> {
        self.lift(self.inner.quotient(
            RSliceMut::from_mut_slice(a),
            RSlice::from_slice(b),
            RSlice::from_slice(c),
            config,
        ))
    }

    /// `bytes` of host memory from the backend (see
    /// [`crate::plugin::Accelerator::host_alloc`]); its address.
    ///
    /// # Errors
    /// `UNSUPPORTED` unless [`Backend::capabilities`] lists
    /// [`ops::HOST_MEMORY`](crate::plugin::ops::HOST_MEMORY); `OUT_OF_MEMORY`.
    pub fn host_alloc(&self, bytes: u64) -> Result<u64, Error> {
        self.lift(self.inner.host_alloc(bytes))
    }

    /// Gives back memory from [`Backend::host_alloc`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an address the backend did not lend.
    pub fn host_free(&self, address: u64) -> Result<(), Error> {
        self.lift(self.inner.host_free(address))
    }

    /// Keeps `r1cs`'s matrices in the backend on `device` (see
    /// [`crate::plugin::Accelerator::upload_r1cs`]).
    ///
    /// # Errors
    /// `UNSUPPORTED` unless [`Backend::capabilities`] lists
    /// [`ops::SPMV`](crate::plugin::ops::SPMV); `OUT_OF_MEMORY`; `INVALID_INPUT`
    /// for malformed matrices.
    pub fn upload_r1cs(&self, r1cs: &R1cs, device: u32) -> Result<R1csHandle, Error> {
        self.lift(self.inner.upload_r1cs(r1cs.as_seam(), device))
    }

    /// Frees matrices from [`Backend::upload_r1cs`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    pub fn drop_r1cs(&self, handle: R1csHandle) -> Result<(), Error> {
        self.lift(self.inner.drop_r1cs(handle))
    }

    /// Groth16's quotient from a witness over resident matrices, into
    /// `h_out`; `Some(row)`, `h_out` then unspecified, when `config.check`
    /// finds constraint `row` unsatisfied (see
    /// [`crate::plugin::Accelerator::quotient_from_witness`]).
    ///
    /// # Errors
    /// `INVALID_INPUT` for a handle this backend does not hold, a witness of
    /// another shape or an `h_out` not of the domain's length; other
    /// backend errors.
    pub fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: &[Fr],
        aux: &[Fr],
        h_out: &mut [Fr],
        config: &SpmvConfig,
    ) -> Result<Option<u64>, Error> {
        self.lift(self.inner.quotient_from_witness(
            handle,
            RSlice::from_slice(inputs),
            RSlice::from_slice(aux),
            RSliceMut::from_mut_slice(h_out),
            config,
        ))
        .map(|r| r.into_option())
    }

    /// Refuses `curve` when this backend lists no op for it, naming the
    /// curves it does serve.
    ///
    /// # Errors
    /// [`Error::Backend`] with `UNSUPPORTED`.
    pub fn expect_curve(&self, curve: Curve) -> Result<(), Error> {
        let served = self.capabilities().curves();
        if served.contains(&curve) {
            return Ok(());
        }
        let names: Vec<&str> = served.iter().map(|c| c.name()).collect();
        Err(Error::Backend {
            backend: self.name.clone(),
            source: AccelError::new(
                crate::plugin::ErrorCode::UNSUPPORTED,
                format!(
                    "it does not serve {curve} (it serves: {})",
                    if names.is_empty() {
                        "nothing".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ),
        })
    }

    /// `Σ scalars[i]·bases[i]` in BN254's G1; bases from the host (a
    /// slice) or resident (a handle from [`Backend::bn254_upload_bases_g1`]).
    ///
    /// # Errors
    /// `UNSUPPORTED` unless [`Backend::capabilities`] lists
    /// [`ops::bn254::MSM_G1`](crate::plugin::ops::bn254::MSM_G1);
    /// `INVALID_INPUT` for unequal lengths or a handle of another group;
    /// other backend errors.
    pub fn bn254_msm_g1<'a>(
        &self,
        bases: impl Into<BasesRef<'a, bn254::G1Affine>>,
        scalars: &[bn254::Fr],
        config: &MsmConfig,
    ) -> Result<bn254::G1Projective, Error> {
        self.lift(
            self.inner
                .bn254_msm_g1(bases.into(), scalars.into(), config),
        )
    }

    /// `Σ scalars[i]·bases[i]` in BN254's G2; bases from the host or resident.
    ///
    /// # Errors
    /// As [`Backend::bn254_msm_g1`].
    pub fn bn254_msm_g2<'a>(
        &self,
        bases: impl Into<BasesRef<'a, bn254::G2Affine>>,
        scalars: &[bn254::Fr],
        config: &MsmConfig,
    ) -> Result<bn254::G2Projective, Error> {
        self.lift(
            self.inner
                .bn254_msm_g2(bases.into(), scalars.into(), config),
        )
    }

    /// Keeps BN254 G1 bases in the backend; refer to them by the returned
    /// handle (free it with [`Backend::drop_bases`]).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY`, `UNSUPPORTED`, or another backend error.
    pub fn bn254_upload_bases_g1(
        &self,
        bases: &[bn254::G1Affine],
        device: u32,
    ) -> Result<BasesHandle, Error> {
        self.lift(self.inner.bn254_upload_bases_g1(bases.into(), device))
    }

    /// Keeps BN254 G2 bases in the backend.
    ///
    /// # Errors
    /// As [`Backend::bn254_upload_bases_g1`].
    pub fn bn254_upload_bases_g2(
        &self,
        bases: &[bn254::G2Affine],
        device: u32,
    ) -> Result<BasesHandle, Error> {
        self.lift(self.inner.bn254_upload_bases_g2(bases.into(), device))
    }

    /// BN254's Groth16 quotient in one call: `a`, `b` (A·w, B·w over the
    /// n-th roots) in, h = a·b − a∘b on the odd coset out, in `a`.
    ///
    /// # Errors
    /// `UNSUPPORTED` unless [`Backend::capabilities`] lists
    /// [`ops::bn254::QUOTIENT`](crate::plugin::ops::bn254::QUOTIENT);
    /// `INVALID_INPUT` for unequal lengths or one that is not a power of
    /// two below 2^28; other backend errors.
    pub fn bn254_quotient(
        &self,
        a: &mut [bn254::Fr],
        b: &[bn254::Fr],
        device: u32,
    ) -> Result<(), Error> {
        self.lift(
            self.inner
                .bn254_quotient(RSliceMut::from_mut_slice(a), b.into(), device),
        )
    }

    /// In-place NTT over BN254's Fr (length a power of two, at most 2^28).
    ///
    /// # Errors
    /// `UNSUPPORTED` unless listed; `INVALID_INPUT` for a bad length or a
    /// zero coset shift; other backend errors.
    pub fn bn254_ntt(
        &self,
        values: &mut [bn254::Fr],
        config: &NttConfigOf<bn254::Fr>,
    ) -> Result<(), Error> {
        self.lift(
            self.inner
                .bn254_ntt(RSliceMut::from_mut_slice(values), config),
        )
    }
}

/// Whether an error is the backend saying "I don't do that".
pub fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Backend { source: AccelError { code, .. }, .. } if *code == crate::plugin::ErrorCode::UNSUPPORTED)
}
