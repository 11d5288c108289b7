//! Device discovery and the per-device `Gpu`: its context, the kernels
//! loaded on it (compiled through `nvrtc`; one module per curve),
//! device-resident caches, the memory pool setting, and its idle lanes
//! (see `lane.rs`).

use std::collections::HashMap;
use std::panic::catch_unwind;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::msm_kernels::MsmKernels;
use crate::ntt_plan::NttShape;
use crate::nvrtc::{KernelCurve, cubin_for, embedded_cubin};
use crate::staging::Staging;
use zkpipe_core::plugin::{AccelError, ErrorCode, LentMemory};

/// Device vectors kept per key (scaling factors).
pub(crate) type DeviceCache<K> = Mutex<HashMap<K, Arc<CudaSlice<u64>>>>;

/// A stage-major twiddle table and the largest log size it covers.
pub(crate) type TwiddleTable = (u32, Arc<CudaSlice<u64>>);

/// (x, c, log n) of a factor vector `c·x^i`.
pub(crate) type FactorKey = ([u64; 4], [u64; 4], u32);

/// One curve's field kernels on a device (its module), and the tables
/// built with them.
pub(crate) struct CurveKernels {
    pub(crate) ntt_pass: CudaFunction,
    /// `ntt_pass` for a permuting lowest pass with rows from the top bits.
    pub(crate) ntt_pass_top: CudaFunction,
    pub(crate) scale: CudaFunction,
    pub(crate) quotient_combine: CudaFunction,
    /// `c·x^i` tables (coset factors, the twiddles' top stage).
    pub(crate) powers: CudaFunction,
    /// The twiddle table's lower stages from its top one.
    pub(crate) twiddle_lower: CudaFunction,
    pub(crate) msm: MsmKernels,
    /// Per direction (forward, inverse): the stage-major twiddle table and
    /// the largest log size it covers, kept on the device.
    pub(crate) twiddles: Mutex<[Option<TwiddleTable>; 2]>,
    /// Scaling factors `c·x^i` per (x, c, log n), kept on the device.
    pub(crate) factors: DeviceCache<FactorKey>,
}

impl CurveKernels {
    fn load(module: &Arc<CudaModule>) -> Result<Self, String> {
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| format!("kernel {name}: {e:?}"))
        };
        Ok(CurveKernels {
            ntt_pass: f("ntt_pass")?,
            ntt_pass_top: f("ntt_pass_top")?,
            scale: f("scale")?,
            quotient_combine: f("quotient_combine")?,
            powers: f("powers")?,
            twiddle_lower: f("twiddle_lower")?,
            msm: MsmKernels::load(module)?,
            twiddles: Mutex::new([None, None]),
            factors: Mutex::new(HashMap::new()),
        })
    }
}

/// One CUDA device, opened with BLS12-381's kernels loaded (BN254's load
/// at its first op: a BLS12-381 user never pays for them).
pub(crate) struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) name: String,
    pub(crate) memory: u64,
    pub(crate) sms: u32,
    /// The compute architecture, e.g. `sm_90`.
    arch: String,
    /// The NTT plans' shape (environment overrides, read once at start).
    pub(crate) ntt_shape: NttShape,
    /// CSR SpMV (BLS12-381): a thread per short row, a warp per long one; the check.
    pub(crate) spmv_rows: CudaFunction,
    pub(crate) spmv_long: CudaFunction,
    pub(crate) r1cs_check: CudaFunction,
    pub(crate) bls12_381: CurveKernels,
    bn254: OnceLock<Result<CurveKernels, String>>,
    /// Idle lanes: a stream and the page-locked buffer its large copies go
    /// through (grown on demand). An op takes one for its whole length, so
    /// ops called from different threads (a daemon's workers) run on their
    /// own streams: one's copies overlap another's kernels.
    pub(crate) lanes: Mutex<Vec<IdleLane>>,
    /// Host memory the backend lent (shared by its devices: it is portable).
    pub(crate) lent: Arc<LentMemory>,
}

/// A stream and its staging pieces, waiting in [`Gpu::lanes`].
pub(crate) type IdleLane = (Arc<CudaStream>, Staging);

/// Lets the device's current memory pool (where the stream's allocations
/// come from) keep up to `keep` bytes of freed memory mapped between calls
/// instead of unmapping it at every synchronisation; `None` hands all of it
/// back now. Returns whether the driver took it (without a pool, or on
/// failure, allocations stay correct, only slower).
pub(crate) fn pool_keep(ctx: &CudaContext, keep: Option<u64>) -> bool {
    use cudarc::driver::sys;
    if !ctx.has_async_alloc() {
        return false;
    }
    let ok = sys::CUresult::CUDA_SUCCESS;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: valid out-pointer and device handle; the attribute takes a u64.
    unsafe {
        if sys::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) != ok {
            return false;
        }
        match keep {
            Some(mut bytes) => {
                let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
                sys::cuMemPoolSetAttribute(pool, attr, (&mut bytes as *mut u64).cast()) == ok
            }
            None => sys::cuMemPoolTrimTo(pool, 0) == ok,
        }
    }
}

impl Gpu {
    /// `curve`'s kernels on this device, loaded (and compiled, where none
    /// is embedded or cached for it) at the first call for BN254.
    ///
    /// # Errors
    /// `DEVICE_UNAVAILABLE` with the reason the module could not be loaded.
    pub(crate) fn kernels(&self, curve: KernelCurve) -> Result<&CurveKernels, AccelError> {
        let loaded = match curve {
            KernelCurve::Bls12_381 => return Ok(&self.bls12_381),
            KernelCurve::Bn254 => self.bn254.get_or_init(|| {
                let started = std::time::Instant::now();
                let (module, _) = load_module(&self.ctx, curve, &self.arch)?;
                if crate::lane::profiling() {
                    eprintln!(
                        "cuda BN254 kernels loaded in {:.1} ms",
                        started.elapsed().as_secs_f64() * 1e3
                    );
                }
                CurveKernels::load(&module)
            }),
        };
        loaded.as_ref().map_err(|e| {
            AccelError::new(
                ErrorCode::DEVICE_UNAVAILABLE,
                format!("{} kernels: {e}", curve.name()),
            )
        })
    }
}

/// `curve`'s module for `arch`: the build's own CUBIN first; one this
/// driver refuses (built by a newer NVRTC than it speaks) gives way to the
/// cache or a compile here. Returns it with a note for `zkpipe backends`.
fn load_module(
    ctx: &Arc<CudaContext>,
    curve: KernelCurve,
    arch: &str,
) -> Result<(Arc<CudaModule>, String), String> {
    let embedded = embedded_cubin(curve, arch).and_then(|(bin, note)| {
        match ctx.load_module(Ptx::from_binary(bin.to_vec())) {
            Ok(module) => Some((module, note)),
            Err(e) => {
                eprintln!(
                    "zkpipe cuda: the embedded {} kernels for {arch} do not load ({e:?}): compiling",
                    curve.name()
                );
                None
            }
        }
    });
    match embedded {
        Some(loaded) => Ok(loaded),
        None => {
            let (cubin, note) = cubin_for(curve, arch)?;
            let module = ctx
                .load_module(Ptx::from_binary(cubin))
                .map_err(|e| format!("loading {} kernels for {arch}: {e:?}", curve.name()))?;
            Ok((module, note))
        }
    }
}

fn open_gpu(ordinal: usize, lent: &Arc<LentMemory>) -> Result<(Gpu, String), String> {
    let started = std::time::Instant::now();
    let ctx = CudaContext::new(ordinal).map_err(|e| format!("device {ordinal}: {e:?}"))?;
    let context = started.elapsed();
    // SAFETY: buffers cross lanes (streams) only complete and read-only, and
    // each op keeps them until its own stream is done (see `Lane`), so
    // cudarc's per-argument events are not needed.
    unsafe { ctx.disable_event_tracking() };
    // Keep freed memory mapped, up to a quarter of the device: an op's
    // scratch (an NTT's second buffer, an MSM's tables) was otherwise mapped
    // afresh on every call, a visible share of a large NTT. check_free
    // hands it all back when memory looks short.
    let kept = pool_keep(&ctx, Some(ctx.total_mem().unwrap_or(0) as u64 / 4));
    let (major, minor) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
    let arch = format!("sm_{major}{minor}");
    let (module, note) = load_module(&ctx, KernelCurve::Bls12_381, &arch)?;
    if crate::lane::profiling() {
        eprintln!(
            "cuda open device {ordinal}: context {:.1} ms, kernels {:.1} ms",
            context.as_secs_f64() * 1e3,
            (started.elapsed() - context).as_secs_f64() * 1e3
        );
    }
    let f = |name: &str| {
        module
            .load_function(name)
            .map_err(|e| format!("kernel {name}: {e:?}"))
    };
    let sms = ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .unwrap_or(0) as u32;
    let gpu = Gpu {
        name: ctx.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
        memory: ctx.total_mem().unwrap_or(0) as u64,
        sms,
        arch,
        ntt_shape: NttShape::from_env(),
        spmv_rows: f("spmv_rows")?,
        spmv_long: f("spmv_long")?,
        r1cs_check: f("r1cs_check")?,
        bls12_381: CurveKernels::load(&module)?,
        bn254: OnceLock::new(),
        lanes: Mutex::new(Vec::new()),
        lent: lent.clone(),
        ctx,
    };
    let pool = if kept {
        ""
    } else {
        "; freed memory is unmapped per call (no pool threshold)"
    };
    Ok((gpu, format!("device {ordinal}: {note}{pool}")))
}

pub(crate) fn discover(lent: &Arc<LentMemory>) -> (Vec<Gpu>, String) {
    // SAFETY: only checks whether the driver library can be loaded (cudarc
    // panics on first use when it is missing).
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return (vec![], "no NVIDIA driver (libcuda not found)".into());
    }
    let started = std::time::Instant::now();
    let count = match catch_unwind(CudaContext::device_count) {
        Ok(Ok(n)) => {
            if crate::lane::profiling() {
                eprintln!(
                    "cuda driver: {n} devices in {:.1} ms",
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
            n.max(0) as usize
        }
        Ok(Err(e)) => return (vec![], format!("CUDA driver error: {e:?}")),
        Err(_) => return (vec![], "the CUDA driver could not be initialised".into()),
    };
    let mut gpus = Vec::new();
    let mut notes = Vec::new();
    for i in 0..count {
        match catch_unwind(|| open_gpu(i, lent)) {
            Ok(Ok((g, note))) => {
                gpus.push(g);
                notes.push(note);
            }
            Ok(Err(e)) => notes.push(e),
            Err(_) => notes.push(format!("device {i}: initialisation panicked")),
        }
    }
    if count == 0 {
        notes.push("the driver reports no CUDA devices".into());
    }
    notes.push(
        "ops: msm_g1, msm_g2 (resident bases), ntt, quotient, host_memory, spmv (resident r1cs); \
         bn254.msm_g1, bn254.msm_g2 (resident bases), bn254.ntt"
            .into(),
    );
    (gpus, notes.join("; "))
}
