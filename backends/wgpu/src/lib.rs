//! zkpipe's wgpu backend: NTT over Fr, G1 and G2 MSMs and Groth16's quotient
//! from a witness over resident R1CS matrices (`spmv`) in WGSL (`shaders/`), on
//! any adapter wgpu finds (Vulkan on Linux — lavapipe in CI, the NVIDIA
//! driver on the H200 —, Metal, DX12). BN254's ops (`bn254.ntt`,
//! `bn254.msm_g1`, `bn254.msm_g2`, host or resident bases) run the same shader
//! sources with BN254's constants generated in; their pipelines are built at
//! the first BN254 op, so BLS12-381 alone never compiles them.
//!
//! Devices are the adapters, high-performance first (discrete, integrated,
//! virtual, then CPU/software); `device` in an op's config is that index. A
//! device is opened and its shaders compiled at first use. With no adapter
//! the plugin reports zero devices and why.
//!
//! Fr (NTT, scalars) is Montgomery on u32 limbs, bit-identical with the
//! host's u64 limbs (blst's for BLS12-381, halo2curves' for BN254). The
//! MSM's Fp is Montgomery on narrow limbs with one carry per product column
//! (field::narrow_wgsl): 28-bit limbs summed in 64-bit integers when the
//! adapter offers `SHADER_INT64`, else 13-bit limbs summed in u32; bases
//! are converted to that form at upload. Results come back as
//! XYZZ points, which the host turns into the seam's projective form
//! (Jacobian for BLS12-381, homogeneous for BN254).
//!
//! Backend settings (`BackendConfig::ext`): `int64` = `auto` (default) or
//! `off` (force the u32-only multiply); `max_binding_mib` = N caps one
//! storage binding below the adapter's limit (to exercise the splitting that
//! adapters with small limits need, e.g. lavapipe's 128 MiB: an MSM runs in
//! pieces of points that fit, resident bases in several buffers, an NTT over
//! up to four buffers, R1CS matrices in chunks of rows and the SpMV's
//! witness over up to four buffers). `ZKPIPE_WGPU_TRACE=1` prints
//! pipeline compile times, each kernel's time (submitted and waited for
//! alone) and read-back times to stderr.
//! The G2 MSM runs the G1 shaders over Fp2 (Karatsuba products of the same
//! Fp code) where every adapter multiplies through 64-bit integers; the
//! u32-only G2 shaders took over 8 minutes to compile on lavapipe, so
//! without `SHADER_INT64` (or with `int64=off`) G2 (either curve's) is
//! declared unsupported and runs on the prover's CPU fallback.

// Module dependencies point one way: lib → adapter, msm, ntt, spmv; spmv →
// ntt; msm, ntt, spmv → gpu → shader → field; every module may use shape, a leaf.
mod adapter;
mod field;
mod gpu;
mod msm;
mod ntt;
mod shader;
mod shape;
mod slow_notice;
mod spmv;
mod transfer;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesHandle, BasesRef,
    Capabilities, DeviceInfo, DeviceKind, ErrorCode, Handles, MsmConfig, NttConfig, NttConfigOf,
    OpSupport, R1csHandle, R1csRef, SpmvConfig, ext_get, ops,
};
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, bn254};

use gpu::Gpu;

/// One adapter, opened at first use.
struct Slot {
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    gpu: OnceLock<Result<Arc<Gpu>, String>>,
}

/// Bases resident on a device.
struct Resident {
    device: u32,
    bases: msm::DeviceBases,
}

/// The wgpu backend.
pub struct WgpuBackend {
    _instance: Option<wgpu::Instance>,
    slots: Vec<Slot>,
    notes: String,
    want_int64: bool,
    binding_cap: Option<u64>,
    resident: Handles<Resident>,
    /// R1CS matrices on the devices.
    matrices: Handles<spmv::DeviceR1cs>,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("devices", &self.slots.len())
            .field("notes", &self.notes)
            .finish()
    }
}

impl BackendPlugin for WgpuBackend {
    const NAME: &'static str = "wgpu";

    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        if config.threads.into_option() == Some(0) {
            return Err(AccelError::invalid_input("threads must be at least 1"));
        }
        for kv in config.ext.iter() {
            if !["int64", "max_binding_mib"].contains(&kv.key.as_str()) {
                return Err(AccelError::invalid_input(format!(
                    "unknown wgpu backend setting `{}` (known: int64, max_binding_mib)",
                    kv.key
                )));
            }
        }
        let binding_cap = match ext_get(&config.ext, "max_binding_mib") {
            None => None,
            Some(v) => match v.parse::<u64>() {
                Ok(mib) if mib > 0 => Some(mib << 20),
                _ => {
                    return Err(AccelError::invalid_input(format!(
                        "max_binding_mib = `{v}`: expected a whole number of MiB, at least 1"
                    )));
                }
            },
        };
        let want_int64 = match ext_get(&config.ext, "int64") {
            None | Some("auto") | Some("on") => true,
            Some("off") => false,
            Some(v) => {
                return Err(AccelError::invalid_input(format!(
                    "int64 = `{v}`: expected auto or off"
                )));
            }
        };
        let (instance, adapters, mut notes) = adapter::discover();
        let slots = adapters
            .into_iter()
            .map(|(adapter, info)| Slot {
                adapter,
                info,
                gpu: OnceLock::new(),
            })
            .collect();
        notes.push(
            "ops: ntt, msm_g1, msm_g2 (batch, resident bases), spmv (resident R1CS), \
             bn254.ntt, bn254.msm_g1, bn254.msm_g2 (resident bases) on the adapter; msm_g2 and bn254.msm_g2 \
             need SHADER_INT64 (else they run on the CPU fallback)"
                .into(),
        );
        Ok(WgpuBackend {
            _instance: instance,
            slots,
            notes: notes.join("; "),
            want_int64,
            binding_cap,
            resident: Handles::new("bases"),
            matrices: Handles::new("r1cs"),
        })
    }
}

impl WgpuBackend {
    /// The discovery notes and, per opened device, what it keeps between
    /// calls (a daemon's status shows where the adapter's memory went).
    fn notes_now(&self) -> String {
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let (resident, matrices) = (self.resident.values(), self.matrices.values());
        let mut notes = self.notes.clone();
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(Ok(gpu)) = slot.gpu.get() {
                let sets: Vec<_> = resident.iter().filter(|r| r.device == i as u32).collect();
                let count = sets.len();
                let bytes: u64 = (sets.iter().flat_map(|r| &r.bases.pieces))
                    .map(|(p, _)| p.size())
                    .sum();
                let systems: Vec<_> = matrices.iter().filter(|m| m.device == i as u32).collect();
                let r1cs_bytes: u64 = systems.iter().map(|m| m.bytes).sum();
                notes.push_str(&format!(
                    "; device {i}: resident bases {count} sets, {:.1} MiB; resident r1cs {}, \
                     {:.1} MiB; {:.1} MiB kept between calls (NTT data and tables, SpMV \
                     vectors, MSM scratch, copy buffers)",
                    mib(bytes),
                    systems.len(),
                    mib(r1cs_bytes),
                    mib(gpu.kept_bytes())
                ));
            }
        }
        notes
    }

    /// The opened device `device`.
    fn gpu(&self, device: u32) -> Result<Arc<Gpu>, AccelError> {
        let slot = self.slots.get(device as usize).ok_or_else(|| {
            if self.slots.is_empty() {
                // The notes say that there is no adapter, and why.
                AccelError::new(ErrorCode::DEVICE_UNAVAILABLE, self.notes.clone())
            } else {
                AccelError::invalid_input(format!(
                    "no wgpu device {device} ({} found)",
                    self.slots.len()
                ))
            }
        })?;
        slot.gpu
            .get_or_init(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    Gpu::open(&slot.adapter, self.want_int64, self.binding_cap)
                }))
                .unwrap_or_else(|_| Err("opening the device panicked".into()))
                .map(Arc::new)
            })
            .clone()
            .map_err(|e| {
                AccelError::new(
                    ErrorCode::DEVICE_UNAVAILABLE,
                    format!("device {device} ({}): {e}", slot.info.name),
                )
            })
    }

    fn resident(&self, h: BasesHandle, n: usize) -> Result<Arc<Resident>, AccelError> {
        let r = self.resident.get(h.0)?;
        if r.bases.len < n {
            return Err(AccelError::invalid_input(format!(
                "bases handle {:#x} holds {} points, fewer than the {n} scalars",
                h.0, r.bases.len
            )));
        }
        Ok(r)
    }

    /// Whether every adapter runs the G2 MSM: 64-bit integers wanted and offered.
    fn g2_everywhere(&self) -> bool {
        self.want_int64
            && self
                .slots
                .iter()
                .all(|s| s.adapter.features().contains(wgpu::Features::SHADER_INT64))
    }

    /// One MSM over host bases of `G` (either curve).
    ///
    /// # Errors
    /// `UNSUPPORTED` for G2 without 64-bit integers; as [`Gpu::msm`].
    fn msm_host<G: msm::Group>(
        &self,
        bases: &[G::Affine],
        scalars: &[G::Scalar],
        config: &MsmConfig,
    ) -> Result<G::Proj, AccelError> {
        if G::G2 && !self.g2_everywhere() {
            return Err(AccelError::unsupported(G::OP));
        }
        let gpu = self.gpu(config.device)?;
        if scalars.is_empty() {
            return Ok(G::identity());
        }
        let buf = gpu.upload_bases::<G>(bases)?;
        gpu.msm::<G>(&buf, scalars, config.window_bits)
    }

    /// One MSM over host or resident bases of `G` (either curve).
    ///
    /// # Errors
    /// `UNSUPPORTED` for G2 without 64-bit integers; as [`Gpu::msm`].
    fn msm<G: msm::Group>(
        &self,
        bases: BasesRef<'_, G::Affine>,
        scalars: &[G::Scalar],
        config: &MsmConfig,
    ) -> Result<G::Proj, AccelError> {
        if G::G2 && !self.g2_everywhere() {
            return Err(AccelError::unsupported(G::OP));
        }
        match bases {
            BasesRef::Host(b) => self.msm_host::<G>(b.as_slice(), scalars, config),
            BasesRef::Resident(h) => {
                let r = self.resident(h, scalars.len())?;
                if r.device != config.device {
                    return Err(AccelError::invalid_input(format!(
                        "bases handle {:#x} lives on device {}, not {}",
                        h.0, r.device, config.device
                    )));
                }
                self.gpu(r.device)?
                    .msm::<G>(&r.bases, scalars, config.window_bits)
            }
        }
    }

    fn upload_bases<G: msm::Group>(
        &self,
        bases: &[G::Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        if G::G2 && !self.g2_everywhere() {
            return Err(AccelError::unsupported(G::OP));
        }
        let bases = self.gpu(device)?.upload_bases::<G>(bases)?;
        Ok(BasesHandle(
            self.resident.insert(Resident { device, bases }),
        ))
    }

    /// The matrices behind `handle`, uploaded to `device`.
    fn matrices(
        &self,
        handle: R1csHandle,
        device: u32,
    ) -> Result<Arc<spmv::DeviceR1cs>, AccelError> {
        let m = self.matrices.get(handle.0)?;
        if m.device != device {
            return Err(AccelError::invalid_input(format!(
                "r1cs handle {:#x} lives on device {}, not on device {device}",
                handle.0, m.device
            )));
        }
        Ok(m)
    }

    /// An NTT over either curve's Fr, the coset shift checked.
    ///
    /// # Errors
    /// As [`Gpu::ntt`].
    fn ntt_of<F: ntt::NttField>(
        &self,
        values: &mut [F],
        config: &NttConfigOf<F>,
    ) -> Result<(), AccelError> {
        let gpu = self.gpu(config.device)?;
        if values.len() == 1 {
            return Ok(()); // every order, direction and coset leaves one element as it is
        }
        gpu.ntt(values, config)
    }

    /// Whether every adapter binds the SpMV kernels' storage buffers (five
    /// and at least one for the witness; WebGPU guarantees eight).
    fn spmv_everywhere(&self) -> bool {
        self.slots
            .iter()
            .all(|s| Gpu::max_aux_pieces(&s.adapter.limits()) >= 1)
    }

    /// Largest log2 NTT size every adapter runs: Fr elements in up to
    /// `ntt::max_pieces` buffers of one binding each.
    fn max_ntt_log(&self) -> u32 {
        self.slots
            .iter()
            .map(|s| {
                let l = s.adapter.limits();
                let max = gpu::binding_limit(&l, self.binding_cap);
                (max / 32).max(1).ilog2() + ntt::max_pieces(&l).ilog2()
            })
            .min()
            .unwrap_or(0)
    }
}

impl AcceleratorImpl for WgpuBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: Self::NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            devices: self
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| DeviceInfo {
                    id: i as u32,
                    name: s.info.name.clone().into(),
                    kind: match s.info.device_type {
                        wgpu::DeviceType::Cpu | wgpu::DeviceType::Other => DeviceKind::Other,
                        _ => DeviceKind::Gpu,
                    },
                    // wgpu reports neither memory size nor compute units.
                    memory_bytes: 0,
                    compute_units: 0,
                })
                .collect::<Vec<_>>()
                .into(),
            notes: self.notes_now().into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        if self.slots.is_empty() {
            return Capabilities::default();
        }
        let op = OpSupport::new;
        // Larger MSMs run in pieces (bases in several buffers): memory is the limit.
        let msm = 30;
        let mut ops = vec![
            op(ops::MSM_G1, msm),
            op(ops::MSM_G1_BATCH, msm),
            op(ops::RESIDENT_BASES, msm),
            op(ops::NTT, self.max_ntt_log().min(32)),
        ];
        if self.g2_everywhere() {
            ops.extend([op(ops::MSM_G2, msm), op(ops::MSM_G2_BATCH, msm)]);
        }
        // BN254: Fr of two-adicity 28.
        ops.extend([
            op(ops::bn254::MSM_G1, msm),
            op(ops::bn254::RESIDENT_BASES, msm),
            op(
                ops::bn254::NTT,
                self.max_ntt_log().min(bn254::FR_TWO_ADICITY),
            ),
        ]);
        if self.g2_everywhere() {
            ops.push(op(ops::bn254::MSM_G2, msm));
        }
        if self.spmv_everywhere() {
            // The domain's a, b, c are split as the NTT splits its data:
            // the same size limit. Scratch: a, b, c, the witness (taken as
            // no longer than the domain) and the NTT tables the quotient
            // uses (both twiddle tables, n; three factor tables, 3n).
            ops.push(
                op(ops::SPMV, self.max_ntt_log().min(32)).with_scratch(|n| (3 + 1 + 4) * 32 * n),
            );
        }
        Capabilities { ops: ops.into() }
    }

    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        self.msm::<msm::G1>(bases, scalars, config)
    }

    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<G2Projective, AccelError> {
        self.msm::<msm::G2>(bases, scalars, config)
    }

    fn upload_bases_g1(&self, bases: &[G1Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.upload_bases::<msm::G1>(bases, device)
    }

    fn upload_bases_g2(&self, bases: &[G2Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.upload_bases::<msm::G2>(bases, device)
    }

    fn drop_bases(&self, handle: BasesHandle) -> Result<(), AccelError> {
        self.resident.remove(handle.0)
    }

    fn ntt(&self, values: &mut [Fr], config: &NttConfig) -> Result<(), AccelError> {
        if config.coset.into_option().is_some_and(|g| g.is_zero()) {
            return Err(AccelError::invalid_input(
                "ntt: coset shift must be nonzero",
            ));
        }
        self.ntt_of(values, config)
    }

    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> Result<R1csHandle, AccelError> {
        if !self.spmv_everywhere() {
            return Err(AccelError::unsupported(ops::SPMV));
        }
        let matrices = self.gpu(device)?.upload_r1cs(&r1cs, device)?;
        Ok(R1csHandle(self.matrices.insert(matrices)))
    }

    fn drop_r1cs(&self, handle: R1csHandle) -> Result<(), AccelError> {
        self.matrices.remove(handle.0)
    }

    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: &[Fr],
        aux: &[Fr],
        h_out: &mut [Fr],
        config: &SpmvConfig,
    ) -> Result<Option<u64>, AccelError> {
        let matrices = self.matrices(handle, config.device)?;
        matrices
            .shape
            .check_call(inputs.len(), aux.len(), h_out.len())?;
        self.gpu(config.device)?.quotient_from_witness(
            &matrices,
            inputs,
            aux,
            h_out,
            &config.coset,
            config.check,
        )
    }

    fn bn254_msm_g1(
        &self,
        bases: BasesRef<'_, bn254::G1Affine>,
        scalars: &[bn254::Fr],
        config: &MsmConfig,
    ) -> Result<bn254::G1Projective, AccelError> {
        self.msm::<msm::Bn254G1>(bases, scalars, config)
    }

    fn bn254_upload_bases_g1(
        &self,
        bases: &[bn254::G1Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        self.upload_bases::<msm::Bn254G1>(bases, device)
    }

    fn bn254_msm_g2(
        &self,
        bases: BasesRef<'_, bn254::G2Affine>,
        scalars: &[bn254::Fr],
        config: &MsmConfig,
    ) -> Result<bn254::G2Projective, AccelError> {
        self.msm::<msm::Bn254G2>(bases, scalars, config)
    }

    fn bn254_upload_bases_g2(
        &self,
        bases: &[bn254::G2Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        self.upload_bases::<msm::Bn254G2>(bases, device)
    }

    fn bn254_ntt(
        &self,
        values: &mut [bn254::Fr],
        config: &NttConfigOf<bn254::Fr>,
    ) -> Result<(), AccelError> {
        let coset = config.coset.as_ref().into_option();
        if coset.is_some_and(bn254::Fr::is_zero) {
            return Err(AccelError::invalid_input(
                "ntt: coset shift must be nonzero",
            ));
        }
        self.ntt_of(values, config)
    }
}

zkpipe_core::export_backend!(WgpuBackend);
