//! zkpipe's CUDA backend. Kernels (`kernels/*.cu`) are compiled by NVRTC
//! at build time for the common architectures (sm_80, sm_86, sm_89, sm_90)
//! and embedded in the plugin when the build machine has NVRTC; another
//! architecture (or a build without NVRTC) compiles at first use and is
//! cached on disk (key: source hash, architecture, NVRTC version).
//!
//! Ops: G1/G2 MSM (Pippenger, signed digits, bucket sorting, XYZZ buckets),
//! bases resident on the device behind handles, NTT in all orders and on
//! cosets, Groth16's quotient from a witness over resident R1CS matrices
//! (CSR SpMV on the device).
//!
//! With no NVIDIA driver (or no kernels: none embedded for the device and
//! no NVRTC) the plugin still loads and reports zero devices and the reason; it never panics or aborts.
//!
//! This file holds the backend itself (config, capabilities, resident
//! bases, the seam's methods). Modules, each using only those below it:
//! `ntt`, `msm` (the ops) → `lane` → `device` → `staging`, `msm_kernels`,
//! `ntt_plan`, `nvrtc` → `error`, `words`.

mod device;
mod error;
mod kernel_build;
mod lane;
mod lent_memory;
mod msm;
mod msm_bits;
mod msm_kernels;
mod ntt;
mod ntt_plan;
mod nvrtc;
mod spmv;
mod staging;
mod words;

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesHandle, BasesRef,
    Capabilities, DeviceInfo, DeviceKind, ErrorCode, Handles, MsmConfig, NttConfig, NttConfigOf,
    OpSupport, QuotientConfig, R1csHandle, R1csRef, SpmvConfig, ext_get, ops,
};
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, bn254};

use device::{Gpu, discover};
use error::driver_err;
use words::point_words;
use zkpipe_core::plugin::LentMemory;

pub use msm::auto_window;
pub use nvrtc::{
    KERNEL_SOURCES, KernelCurve, Output, cache_path, compile, cubin_for, embedded_archs,
    embedded_cubin, kernel_source, nvrtc_version,
};

/// Every kernel entry point, for loading and for the compile test.
pub fn kernels() -> impl Iterator<Item = &'static str> {
    [
        "ntt_pass",
        "ntt_pass_top",
        "scale",
        "quotient_combine",
        "powers",
        "twiddle_lower",
        "spmv_rows",
        "spmv_long",
        "r1cs_check",
    ]
    .into_iter()
    .chain(msm_kernels::KERNELS)
}

/// A base set kept on a device.
struct Resident {
    device: u32,
    /// [`msm::Curve::GROUP`] of the points.
    group: &'static str,
    len: usize,
    words: ResidentWords,
}

/// A resident set's device words.
enum ResidentWords {
    Plain(CudaSlice<u64>),
    /// With multiples for every window (`--backend-opt precompute`).
    Fixed(msm::FixedBases),
}

impl ResidentWords {
    fn bytes(&self) -> usize {
        match self {
            ResidentWords::Plain(w) => w.len() * 8,
            ResidentWords::Fixed(f) => f.words.len() * 8,
        }
    }
}

/// When resident bases get precomputed multiples (fixed-base MSMs: fewer
/// windows' work per MSM for several times the set's device memory).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Precompute {
    Off,
    /// Sets of 2^12 points and more, with [`msm::fixed_base_window`], when
    /// the table takes at most half the device's free memory.
    Auto,
    /// Every set, with this window.
    Window(u32),
}

impl Precompute {
    /// The table window for a set of `n` bases, if it gets one;
    /// `memory_allows(c)` says whether `auto` may spend the device memory
    /// of c-bit tables.
    ///
    /// # Errors
    /// `INVALID_INPUT` for an explicit window whose windows·n table entries
    /// exceed 32-bit indices; `memory_allows`'s errors.
    fn window(
        self,
        n: usize,
        memory_allows: impl FnOnce(u32) -> Result<bool, AccelError>,
    ) -> Result<Option<u32>, AccelError> {
        Ok(match self {
            Precompute::Off => None,
            Precompute::Window(c) if !msm::folded_fits(n, c) => {
                return Err(AccelError::invalid_input(format!(
                    "precompute={c}: {} windows of {n} bases exceed 2^32 table entries; \
                     use a wider window or precompute=auto",
                    msm::windows(c),
                )));
            }
            Precompute::Window(c) => Some(c),
            Precompute::Auto if n < 1 << 12 => None,
            Precompute::Auto => {
                let c = msm::fixed_base_window(n);
                (msm::folded_fits(n, c) && memory_allows(c)?).then_some(c)
            }
        })
    }

    fn parse(v: Option<&str>) -> Result<Precompute, AccelError> {
        Ok(match v {
            None | Some("off") => Precompute::Off,
            Some("auto") => Precompute::Auto,
            Some(c) => match c.parse::<u32>() {
                Ok(c) if (12..=22).contains(&c) => Precompute::Window(c),
                _ => {
                    return Err(AccelError::invalid_input(format!(
                        "precompute must be off, auto or a window of 12..=22 bits, got `{c}`"
                    )));
                }
            },
        })
    }
}

/// The CUDA backend.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    /// Page-locked host memory lent through `host_alloc` (see `lent_memory.rs`).
    lent: Arc<LentMemory>,
    notes: String,
    /// Pippenger window from `--backend-opt window_bits=C`; 0 = per size.
    window_bits: u32,
    /// `--backend-opt precompute=off|auto|C`.
    precompute: Precompute,
    resident: Handles<Resident>,
    /// R1CS matrices on the devices.
    matrices: Handles<spmv::DeviceR1cs>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("devices", &self.gpus.len())
            .field("notes", &self.notes)
            .finish()
    }
}

impl BackendPlugin for CudaBackend {
    const NAME: &'static str = "cuda";

    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        if config.threads.into_option() == Some(0) {
            return Err(AccelError::invalid_input("threads must be at least 1"));
        }
        if let Some(kv) = config
            .ext
            .iter()
            .find(|kv| !["window_bits", "precompute"].contains(&kv.key.as_str()))
        {
            return Err(AccelError::invalid_input(format!(
                "unknown cuda backend setting `{}` (known: window_bits, precompute)",
                kv.key
            )));
        }
        let precompute = Precompute::parse(ext_get(&config.ext, "precompute"))?;
        let window_bits = match ext_get(&config.ext, "window_bits") {
            None => 0,
            Some(v) => v.parse().map_err(|_| {
                AccelError::invalid_input(format!("window_bits must be a number, got `{v}`"))
            })?,
        };
        check_window(window_bits)?;
        let lent = Arc::new(LentMemory::default());
        let (gpus, notes) = discover(&lent);
        Ok(CudaBackend {
            lent,
            gpus,
            notes,
            window_bits,
            precompute,
            resident: Handles::new("bases"),
            matrices: Handles::new("r1cs"),
        })
    }
}

fn check_window(bits: u32) -> Result<(), AccelError> {
    if bits != 0 && !(2..=24).contains(&bits) {
        return Err(AccelError::invalid_input(format!(
            "window_bits must be 0 (automatic) or 2..=24, got {bits}"
        )));
    }
    Ok(())
}

impl CudaBackend {
    fn gpu(&self, device: u32) -> Result<&Gpu, AccelError> {
        self.gpus.get(device as usize).ok_or_else(|| {
            if self.gpus.is_empty() {
                AccelError::new(
                    ErrorCode::DEVICE_UNAVAILABLE,
                    format!("no CUDA device: {}", self.notes),
                )
            } else {
                AccelError::invalid_input(format!(
                    "no CUDA device {device} ({} found)",
                    self.gpus.len()
                ))
            }
        })
    }
}

impl CudaBackend {
    fn upload<C: msm::Curve>(
        &self,
        bases: &[C::Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        let lane = self.gpu(device)?.lane()?;
        let size = std::mem::size_of_val(bases);
        let c = self.precompute.window(bases.len(), |c| {
            Ok(msm::windows(c) as usize * size <= lane.free_bytes()? / 2)
        })?;
        let words = match c {
            Some(c) => ResidentWords::Fixed(lane.precompute::<C>(point_words(bases), c)?),
            None => {
                lane.check_free(size)?;
                let words = lane.upload(point_words(bases))?;
                lane.stream
                    .synchronize()
                    .map_err(driver_err("synchronising"))?;
                ResidentWords::Plain(words)
            }
        };
        Ok(BasesHandle(self.resident.insert(Resident {
            device,
            group: C::GROUP,
            len: bases.len(),
            words,
        })))
    }

    fn msm<C: msm::Curve>(
        &self,
        bases: BasesRef<'_, C::Affine>,
        scalars: &[C::Scalar],
        config: &MsmConfig,
    ) -> Result<C::Proj, AccelError> {
        check_window(config.window_bits)?;
        if scalars.len() > 1 << 28 {
            return Err(AccelError::invalid_input(
                "msm: the CUDA backend handles up to 2^28 points",
            ));
        }
        let gpu = self.gpu(config.device)?;
        if scalars.is_empty() {
            return Ok(C::identity());
        }
        let c = match (config.window_bits, self.window_bits) {
            (0, 0) => 0, // per size, chosen by the lane (see `Lane::msm`)
            (0, w) | (w, _) => w,
        };
        let resident = match bases {
            BasesRef::Host(_) => None,
            BasesRef::Resident(h) => {
                let r = self.resident.get(h.0)?;
                if r.group != C::GROUP || r.device != config.device || r.len < scalars.len() {
                    return Err(AccelError::invalid_input(format!(
                        "bases handle {:#x} holds {} {} points on device {}; this MSM needs {} {} points on device {}",
                        h.0,
                        r.len,
                        r.group,
                        r.device,
                        scalars.len(),
                        C::GROUP,
                        config.device
                    )));
                }
                Some(r)
            }
        };
        let lane = gpu.lane()?;
        match (resident.as_deref().map(|r| &r.words), bases) {
            (Some(ResidentWords::Plain(w)), _) => {
                lane.msm::<C>(msm::MsmBases::Device(w), scalars, c)
            }
            // A window asked for in this call, other than the table's, uses
            // the table's first points: the bases themselves.
            (Some(ResidentWords::Fixed(f)), _) if ![0, f.c].contains(&config.window_bits) => {
                lane.msm::<C>(msm::MsmBases::Device(&f.words), scalars, c)
            }
            (Some(ResidentWords::Fixed(f)), _) => {
                lane.msm::<C>(msm::MsmBases::Fixed(f), scalars, c)
            }
            (None, BasesRef::Host(b)) => {
                lane.msm::<C>(msm::MsmBases::Host(point_words(b.as_slice())), scalars, c)
            }
            (None, BasesRef::Resident(_)) => unreachable!("resolved above"),
        }
    }
}

impl CudaBackend {
    /// An NTT over either curve's scalar field.
    fn ntt_of<F: words::DeviceScalar>(
        &self,
        values: &mut [F],
        config: &NttConfigOf<F>,
    ) -> Result<(), AccelError> {
        if config.coset.into_option().is_some_and(|g| g.is_zero()) {
            return Err(AccelError::invalid_input(
                "ntt: coset shift must be nonzero",
            ));
        }
        if values.len() > 1 << 28 {
            return Err(AccelError::invalid_input(
                "ntt: the CUDA backend handles up to 2^28 elements",
            ));
        }
        self.gpu(config.device)?.lane()?.ntt(values, config)
    }
}

impl CudaBackend {
    /// Device memory that precomputed tables on `device` hold beyond their
    /// bases: not available to ops. Reported as memory the device lacks, so
    /// a host budgeting "memory less the bases it made resident" (the
    /// prover, the scheduler) still counts right.
    fn precomputed_extra(&self, device: u32) -> u64 {
        self.resident
            .values()
            .iter()
            .filter(|r| r.device == device)
            .map(|r| match &r.words {
                ResidentWords::Fixed(f) => {
                    let table = (f.words.len() * 8) as u64;
                    table - table / msm::windows(f.c) as u64
                }
                ResidentWords::Plain(_) => 0,
            })
            .sum()
    }

    /// The discovery notes, the precompute setting and what resident sets
    /// hold now (precomputed tables are several times their bases).
    fn notes_now(&self) -> String {
        let resident = self.resident.values();
        let fixed = resident
            .iter()
            .filter(|r| matches!(r.words, ResidentWords::Fixed(_)))
            .count();
        let bytes: usize = resident.iter().map(|r| r.words.bytes()).sum();
        let mut notes = self.notes.clone();
        if !notes.is_empty() {
            notes.push_str("; ");
        }
        let matrices = self.matrices.values();
        let matrix_bytes: usize = matrices.iter().map(|m| m.bytes).sum();
        notes.push_str(&format!(
            "precompute {}; resident bases: {} sets ({fixed} precomputed), {} MiB; \
             resident r1cs: {} ({} MiB)",
            match self.precompute {
                Precompute::Off => "off".to_string(),
                Precompute::Auto => "auto".to_string(),
                Precompute::Window(c) => format!("{c}-bit"),
            },
            resident.len(),
            bytes >> 20,
            matrices.len(),
            matrix_bytes >> 20
        ));
        notes
    }
}

impl AcceleratorImpl for CudaBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: Self::NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            devices: self
                .gpus
                .iter()
                .enumerate()
                .map(|(i, g)| DeviceInfo {
                    id: i as u32,
                    name: g.name.clone().into(),
                    kind: DeviceKind::Gpu,
                    memory_bytes: g.memory.saturating_sub(self.precomputed_extra(i as u32)),
                    compute_units: g.sms,
                })
                .collect::<Vec<_>>()
                .into(),
            notes: self.notes_now().into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        if self.gpus.is_empty() {
            return Capabilities::default();
        }
        const MAX_LOG: u32 = 28;
        let op = |op: &str| OpSupport::new(op, MAX_LOG);
        // What each op allocates on the device besides its inputs: the
        // MSM's plan (scalars, sorted indices, chunk, bucket and segment
        // sums), the NTT's data, permutation scratch and twiddle table per
        // direction (what `check_free` asks for, plus the tables).
        let msm = |words: usize| {
            move |n: u64| {
                let n = n as usize;
                msm::Plan::new(n, auto_window(n), false).device_bytes(words) as u64
            }
        };
        let (ntt, quotient) = (|n: u64| (3 + 1) * 32 * n, |n: u64| (5 + 2) * 32 * n);
        // The quotient's, and the witness (taken as no longer than the domain).
        let spmv = |n: u64| (5 + 2 + 1) * 32 * n;
        Capabilities {
            ops: vec![
                op(ops::MSM_G1).with_scratch(msm(<msm::G1 as msm::Curve>::WORDS)),
                op(ops::MSM_G2).with_scratch(msm(<msm::G2 as msm::Curve>::WORDS)),
                op(ops::MSM_G1_BATCH).with_scratch(msm(<msm::G1 as msm::Curve>::WORDS)),
                op(ops::MSM_G2_BATCH).with_scratch(msm(<msm::G2 as msm::Curve>::WORDS)),
                op(ops::RESIDENT_BASES),
                op(ops::NTT).with_scratch(ntt),
                op(ops::QUOTIENT).with_scratch(quotient),
                OpSupport::new(ops::HOST_MEMORY, MAX_LOG),
                op(ops::SPMV).with_scratch(spmv),
                op(ops::bn254::MSM_G1).with_scratch(msm(<msm::Bn254G1 as msm::Curve>::WORDS)),
                op(ops::bn254::MSM_G2).with_scratch(msm(<msm::Bn254G2 as msm::Curve>::WORDS)),
                op(ops::bn254::RESIDENT_BASES),
                OpSupport::new(ops::bn254::NTT, zkpipe_core::bn254::FR_TWO_ADICITY)
                    .with_scratch(ntt),
                // a, b, c and a transform's scratch, and the tables.
                OpSupport::new(ops::bn254::QUOTIENT, zkpipe_core::bn254::FR_TWO_ADICITY - 1)
                    .with_scratch(|n| (4 + 2) * 32 * n),
            ]
            .into(),
        }
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
        self.upload::<msm::G1>(bases, device)
    }

    fn upload_bases_g2(&self, bases: &[G2Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.upload::<msm::G2>(bases, device)
    }

    fn drop_bases(&self, handle: BasesHandle) -> Result<(), AccelError> {
        self.resident.remove(handle.0)
    }

    fn quotient(
        &self,
        a: &mut [Fr],
        b: &[Fr],
        c: &[Fr],
        config: &QuotientConfig,
    ) -> Result<(), AccelError> {
        if a.len() > 1 << 28 {
            return Err(AccelError::invalid_input(
                "quotient: the CUDA backend handles up to 2^28 elements",
            ));
        }
        self.gpu(config.device)?
            .lane()?
            .quotient(a, b, c, &config.coset)
    }

    fn ntt(&self, values: &mut [Fr], config: &NttConfig) -> Result<(), AccelError> {
        self.ntt_of(values, config)
    }

    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> Result<R1csHandle, AccelError> {
        spmv::DeviceR1cs::fits(&r1cs)?;
        let matrices = self.gpu(device)?.lane()?.upload_r1cs(&r1cs, device)?;
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
        if h_out.len() > 1 << 28 {
            return Err(AccelError::invalid_input(
                "quotient_from_witness: the CUDA backend handles domains up to 2^28",
            ));
        }
        let matrices = self.matrices.get(handle.0)?;
        if matrices.device != config.device {
            return Err(AccelError::invalid_input(format!(
                "r1cs handle {:#x} lives on device {}, not on device {}",
                handle.0, matrices.device, config.device
            )));
        }
        matrices
            .shape
            .check_call(inputs.len(), aux.len(), h_out.len())?;
        self.gpu(config.device)?.lane()?.quotient_from_witness(
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
        self.upload::<msm::Bn254G1>(bases, device)
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
        self.upload::<msm::Bn254G2>(bases, device)
    }

    fn bn254_ntt(
        &self,
        values: &mut [bn254::Fr],
        config: &NttConfigOf<bn254::Fr>,
    ) -> Result<(), AccelError> {
        self.ntt_of(values, config)
    }

    fn bn254_quotient(
        &self,
        a: &mut [bn254::Fr],
        b: &[bn254::Fr],
        device: u32,
    ) -> Result<(), AccelError> {
        self.gpu(device)?.lane()?.bn254_quotient(a, b)
    }

    fn host_alloc(&self, bytes: u64) -> Result<u64, AccelError> {
        lent_memory::alloc(&self.gpu(0)?.ctx, &self.lent, bytes as usize)
    }

    fn host_free(&self, address: u64) -> Result<(), AccelError> {
        lent_memory::free(&self.gpu(0)?.ctx, &self.lent, address)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let started = std::time::Instant::now();
        // The host frees lent memory before dropping the backend; whatever
        // is left is freed here, while the context is still open.
        if let Some(gpu) = self.gpus.first() {
            for (address, _) in self.lent.take_all() {
                let _ = lent_memory::release(&gpu.ctx, address as u64);
            }
        }
        let lent = started.elapsed();
        // Device buffers first: each holds its context, which closes with
        // the last of them.
        drop(std::mem::replace(&mut self.resident, Handles::new("bases")));
        drop(std::mem::replace(&mut self.matrices, Handles::new("r1cs")));
        let buffers = started.elapsed();
        drop(std::mem::take(&mut self.gpus));
        if lane::profiling() {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!(
                "cuda closed in {:.1} ms: lent memory {:.1}, device buffers {:.1}, devices {:.1}",
                ms(started.elapsed()),
                ms(lent),
                ms(buffers - lent),
                ms(started.elapsed() - buffers)
            );
        }
    }
}

zkpipe_core::export_backend!(CudaBackend);

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_core::plugin::KeyValue;

    fn create(settings: &[(&str, &str)]) -> Result<CudaBackend, AccelError> {
        CudaBackend::create(&BackendConfig {
            ext: settings
                .iter()
                .map(|(k, v)| KeyValue {
                    key: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            ..Default::default()
        })
    }

    /// Which sets get tables: an explicit window that cannot index 2^28
    /// points' table is refused, auto asks about memory only for sets of
    /// 2^12 points and more (no GPU needed).
    #[test]
    fn table_windows_by_set_size() {
        let never = |_| -> Result<bool, AccelError> { panic!("memory asked") };
        let yes = |_| Ok(true);
        let err = Precompute::Window(12).window(1 << 28, never).unwrap_err();
        assert_eq!(err.code, zkpipe_core::plugin::ErrorCode::INVALID_INPUT);
        assert!(err.message.contains("precompute=12"), "{}", err.message);
        assert_eq!(
            Precompute::Window(20).window(1 << 28, never).unwrap(),
            Some(20)
        );
        assert_eq!(
            Precompute::Window(12).window(1 << 24, never).unwrap(),
            Some(12)
        );
        assert_eq!(Precompute::Off.window(1 << 24, never).unwrap(), None);
        assert_eq!(Precompute::Auto.window(4095, never).unwrap(), None);
        assert_eq!(Precompute::Auto.window(1 << 22, yes).unwrap(), Some(20));
        assert_eq!(
            Precompute::Auto.window(1 << 22, |_| Ok(false)).unwrap(),
            None
        );
    }

    /// Settings are refused when the backend is made (no GPU needed), with
    /// the values allowed; good ones are taken.
    #[test]
    fn settings_are_checked_when_the_backend_is_made() {
        for (v, want) in [
            ("off", Precompute::Off),
            ("auto", Precompute::Auto),
            ("12", Precompute::Window(12)),
            ("22", Precompute::Window(22)),
        ] {
            let be = create(&[("precompute", v)]).unwrap();
            assert_eq!(be.precompute, want, "precompute={v}");
            assert!(be.notes_now().contains("precompute"), "{}", be.notes_now());
        }
        assert_eq!(create(&[]).unwrap().precompute, Precompute::Off);
        for bad in ["11", "23", "on", "", "-1", "99999999999"] {
            let e = create(&[("precompute", bad)]).expect_err(bad);
            assert_eq!(e.code, ErrorCode::INVALID_INPUT);
            assert!(
                e.message.contains("precompute must be off, auto or"),
                "{}",
                e.message
            );
        }
        let e = create(&[("precompute_bits", "16")]).err().unwrap();
        assert!(
            e.message.contains("known: window_bits, precompute"),
            "{}",
            e.message
        );
        let e = create(&[("window_bits", "30")]).err().unwrap();
        assert_eq!(e.code, ErrorCode::INVALID_INPUT);
    }
}
