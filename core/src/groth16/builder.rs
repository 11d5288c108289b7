//! [`ProverBuilder`]: the one place that decides which backend and device
//! run a prover's ops, and what runs on the CPU instead.

use std::sync::Arc;

use super::keys::Parameters;
use super::prover::Prover;
use crate::backend::loader::Registry;
use crate::plugin::BackendConfig;
use crate::r1cs::R1cs;
use crate::{Backend, Error};

/// Where a prover finds the backend for ops its own backend does not run.
#[derive(Debug, Clone, Copy)]
enum Fallback<'a> {
    /// None: every op must run on the proving backend.
    None,
    /// This backend.
    Given(&'a Arc<Backend>),
    /// The CPU backend of this registry, created only when needed.
    Cpu(&'a Registry),
}

/// Builds a [`Prover`] bound to one device of one backend.
///
/// ```ignore
/// let prover = ProverBuilder::new(cuda).device(1).cpu_fallback(&registry).build(params, r1cs)?;
/// ```
///
/// A backend with no usable device is refused with its own reason (e.g. no
/// NVIDIA driver): a proof is never run on the CPU while labelled as the
/// GPU. A fallback backend takes only the ops the proving backend does not
/// declare (or NTTs past its size limit, or an MSM it turns down at run
/// time), and [`Prover::fallback_note`] says which.
#[derive(Debug)]
pub struct ProverBuilder<'a> {
    backend: Arc<Backend>,
    device: u32,
    fallback: Fallback<'a>,
    msms_side_by_side: bool,
    device_spmv: Option<bool>,
}

impl<'a> ProverBuilder<'a> {
    /// A prover on device 0 of `backend`, with no fallback.
    pub fn new(backend: Arc<Backend>) -> Self {
        ProverBuilder {
            backend,
            device: 0,
            fallback: Fallback::None,
            msms_side_by_side: true,
            device_spmv: None,
        }
    }

    /// The device (an index into the backend's `info().devices`).
    pub fn device(mut self, device: u32) -> Self {
        self.device = device;
        self
    }

    /// Runs what the backend does not on `fallback` (its device 0).
    pub fn fallback(mut self, fallback: &'a Arc<Backend>) -> Self {
        self.fallback = Fallback::Given(fallback);
        self
    }

    /// Runs what the backend does not on a CPU backend from `registry`,
    /// created only if some op needs it.
    pub fn cpu_fallback(mut self, registry: &'a Registry) -> Self {
        self.fallback = Fallback::Cpu(registry);
        self
    }

    /// Whether a proof's MSMs may run side by side (the default where the
    /// device has room; see [`Prover::allow_msms_side_by_side`]).
    pub fn msms_side_by_side(mut self, allow: bool) -> Self {
        self.msms_side_by_side = allow;
        self
    }

    /// Whether SpMV and the quotient run in the NTT backend from the
    /// witness, over R1CS matrices uploaded there ([`ops::SPMV`](crate::plugin::ops::SPMV),
    /// where the backend declares it). Default: on where that backend's
    /// device is a GPU (a, b, c then never reach host memory), off on a
    /// host backend (the matrices would be a second copy in the same
    /// memory). Off keeps SpMV on the host, for comparisons.
    pub fn device_spmv(mut self, on: bool) -> Self {
        self.device_spmv = Some(on);
        self
    }

    /// Checks the device and the parameters, routes the ops and uploads
    /// the bases (and the matrices, see [`ProverBuilder::device_spmv`]) to
    /// the device.
    ///
    /// # Errors
    /// [`Error::NoDevice`] when the backend has no device of that index
    /// (with the backend's own reason); [`Error::InvalidInput`] for
    /// parameters of another circuit, or an op neither backend runs;
    /// backend errors from uploading (an `OutOfMemory` among them).
    pub fn build(self, params: Arc<Parameters>, r1cs: Arc<R1cs>) -> Result<Prover, Error> {
        self.backend.device_info(self.device)?;
        let created;
        let fallback = match self.fallback {
            Fallback::None => None,
            Fallback::Given(f) => Some(f.clone()),
            Fallback::Cpu(_) if self.backend.name() == "cpu" => None,
            Fallback::Cpu(_) if !Prover::needs_fallback(&self.backend, &r1cs) => None,
            Fallback::Cpu(registry) => {
                created = Arc::new(registry.create("cpu", &BackendConfig::default())?);
                Some(created)
            }
        };
        let mut prover = Prover::build(
            self.backend,
            self.device,
            fallback,
            params,
            r1cs,
            self.device_spmv,
        )?;
        if !self.msms_side_by_side {
            prover.allow_msms_side_by_side(false);
        }
        Ok(prover)
    }
}
