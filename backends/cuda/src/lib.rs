//! zkpipe's CUDA backend. Kernels (`kernels/*.cu`) are embedded in the
//! plugin, compiled by NVRTC at first use for each device's architecture and
//! cached on disk (key: source hash, architecture, NVRTC version).
//!
//! Ops: G1/G2 MSM (Pippenger, signed digits, bucket sorting, XYZZ buckets),
//! bases resident on the device behind handles, NTT in all orders and on
//! cosets.
//!
//! With no NVIDIA driver (or no NVRTC) the plugin still loads and reports
//! zero devices and the reason; it never panics or aborts.

mod msm;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtrMut, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use sha2::{Digest, Sha256};
use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesHandle, BasesRef,
    Capabilities, DeviceInfo, DeviceKind, ErrorCode, MsmConfig, NttConfig, NttDirection, NttOrder,
    OpSupport, QuotientConfig, ext_get, ops,
};
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

pub use msm::auto_window;

/// Kernel sources, in include order (the `#include` lines are dropped: NVRTC
/// gets one translation unit).
pub const KERNEL_SOURCES: [(&str, &str); 5] = [
    ("arith.cuh", include_str!("../kernels/arith.cuh")),
    ("fr.cuh", include_str!("../kernels/fr.cuh")),
    ("fp.cuh", include_str!("../kernels/fp.cuh")),
    ("ntt.cu", include_str!("../kernels/ntt.cu")),
    ("msm.cu", include_str!("../kernels/msm.cu")),
];

/// Every kernel entry point, for loading and for the compile test.
pub fn kernels() -> impl Iterator<Item = &'static str> {
    ["ntt_pass", "ntt_pass_top", "scale", "quotient_combine"]
        .into_iter()
        .chain(msm::KERNELS)
}

/// The single translation unit NVRTC compiles.
pub fn kernel_source() -> String {
    KERNEL_SOURCES
        .iter()
        .flat_map(|(_, s)| {
            s.lines().filter(|l| {
                let l = l.trim_start();
                !l.starts_with("#include") && !l.starts_with("#pragma once")
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What NVRTC produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// PTX text (the driver JIT-compiles it at load).
    Ptx,
    /// Machine code for exactly `arch`: no JIT at load, so it is what the cache keeps.
    Cubin,
}

/// Compiles the kernels for `arch` (e.g. `sm_90`) with the NVRTC found at run time.
///
/// # Errors
/// The NVRTC log when compilation fails, or why NVRTC could not be used.
pub fn compile(arch: &str, output: Output) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "libnvrtc not found (install the CUDA 13 NVRTC and put it on the library path)".into(),
        );
    }
    let src = std::ffi::CString::new(kernel_source()).expect("no NUL in the kernel sources");
    let opts = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--device-int128".into(),
    ];
    let run = || -> Result<Vec<u8>, String> {
        let prog = result::create_program(&src, None).map_err(|e| format!("NVRTC: {e:?}"))?;
        // SAFETY: `prog` is a live program until destroyed at the end; the
        // size queries size the buffers the getters fill.
        unsafe {
            let out = match result::compile_program(prog, &opts) {
                Err(e) => {
                    let log = result::get_program_log(prog).unwrap_or_default();
                    let log = std::ffi::CStr::from_ptr(log.as_ptr()).to_string_lossy();
                    Err(format!("NVRTC failed for {arch} ({e:?}):\n{log}"))
                }
                Ok(()) if output == Output::Ptx => result::get_ptx(prog)
                    .map(|p| {
                        p.iter()
                            .take_while(|&&c| c != 0)
                            .map(|&c| c as u8)
                            .collect()
                    })
                    .map_err(|e| format!("reading PTX: {e:?}")),
                Ok(()) => {
                    let mut size = 0usize;
                    sys::nvrtcGetCUBINSize(prog, &mut size)
                        .result()
                        .map_err(|e| format!("reading CUBIN size: {e:?}"))?;
                    let mut buf = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut std::ffi::c_char)
                        .result()
                        .map_err(|e| format!("reading CUBIN: {e:?}"))
                        .map(|_| buf)
                }
            };
            let _ = result::destroy_program(prog);
            out
        }
    };
    catch_unwind(AssertUnwindSafe(run)).map_err(|_| "NVRTC panicked".to_string())?
}

fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is present (checked by the caller); writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("{major}.{minor}")
}

/// `$ZKPIPE_CUDA_CACHE`, else `$XDG_CACHE_HOME/zkpipe/cuda` or `~/.cache/zkpipe/cuda`.
fn cache_dir() -> PathBuf {
    std::env::var_os("ZKPIPE_CUDA_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir)
                .join("zkpipe/cuda")
        })
}

/// Where the compiled kernels for `arch` are cached.
pub fn cache_path(arch: &str) -> PathBuf {
    let hash = Sha256::digest(kernel_source().as_bytes());
    let key: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    cache_dir().join(format!("{key}-{arch}-nvrtc{}.cubin", nvrtc_version()))
}

/// CUBIN for `arch`, from the disk cache or compiled now (and cached);
/// returns it and a note for `zkpipe backends`.
///
/// # Errors
/// Why NVRTC could not compile the kernels.
pub fn cubin_for(arch: &str) -> Result<(Vec<u8>, String), String> {
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("libnvrtc not found (install the CUDA 13 NVRTC)".into());
    }
    let path = cache_path(arch);
    if let Ok(bin) = std::fs::read(&path) {
        return Ok((bin, format!("kernels from cache {}", path.display())));
    }
    let t = Instant::now();
    let bin = compile(arch, Output::Cubin)?;
    let note = format!(
        "kernels compiled by NVRTC {} for {arch} in {:.1} s (cached in {})",
        nvrtc_version(),
        t.elapsed().as_secs_f64(),
        path.display()
    );
    // A failed cache write only costs the next start a compile.
    if std::fs::create_dir_all(path.parent().unwrap()).is_ok() {
        let _ = zkpipe_core::fsutil::write_atomically(&path, &bin);
    }
    Ok((bin, note))
}

/// Device vectors kept per key (scaling factors).
type DeviceCache<K> = Mutex<HashMap<K, Arc<CudaSlice<u64>>>>;

/// Per-step times on stderr when `ZKPIPE_CUDA_PROFILE` is set (it
/// synchronises after every step, so totals grow a little).
struct Profile<'a> {
    stream: Option<&'a Arc<CudaStream>>,
    last: Instant,
    marks: Vec<(&'static str, f64)>,
}

impl<'a> Profile<'a> {
    fn new(stream: &'a Arc<CudaStream>) -> Self {
        let on = std::env::var_os("ZKPIPE_CUDA_PROFILE").is_some();
        Profile {
            stream: on.then_some(stream),
            last: Instant::now(),
            marks: vec![],
        }
    }

    fn mark(&mut self, what: &'static str) {
        if let Some(s) = self.stream {
            let _ = s.synchronize();
            let now = Instant::now();
            self.marks
                .push((what, (now - self.last).as_secs_f64() * 1e3));
            self.last = now;
        }
    }

    fn report(&self, what: &str) {
        if self.stream.is_some() {
            let parts: Vec<String> = self
                .marks
                .iter()
                .map(|(w, ms)| format!("{} {ms:.3}", w.trim_start_matches("msm_")))
                .collect();
            eprintln!("cuda {what}: {} ms", parts.join(", "));
        }
    }
}

/// Elements per NTT block: at most 2^10 (32 B each, one thread per pair).
const NTT_TILE_MAX: u32 = 10;
/// Stages per pass, at most (`ZKPIPE_CUDA_NTT_STAGES` overrides it).
/// Measured on the H200 (docs/benchmarks.md, v6): 2^24 in four passes of
/// 6 stages beat three of 8 by 12 %, and 5, 6 and 7 are within noise at
/// 2^18–2^26; blocks of 2^8 beat 2^9 and 2^10.
const NTT_STAGES: u32 = 7;
/// Elements per block (log2) a pass fills up to with columns and rows
/// (`ZKPIPE_CUDA_NTT_BLOCK`): 2^8 elements, 128 threads.
const NTT_BLOCK_LOG: u32 = 8;
/// Neighbouring columns a pass above the lowest moves together (log2), so
/// that its global reads and writes are runs of 2^c · 32 B rather than
/// scattered 32-byte sectors (`ZKPIPE_CUDA_NTT_COLS`).
const NTT_COLS_LOG: u32 = 2;

/// The shape of [`ntt_passes`]'s plans.
#[derive(Clone, Copy, Debug)]
struct NttShape {
    stages: u32,
    block: u32,
    cols: u32,
}

impl NttShape {
    fn from_env() -> NttShape {
        NttShape {
            stages: env_u32("ZKPIPE_CUDA_NTT_STAGES", NTT_STAGES).clamp(1, NTT_TILE_MAX),
            block: env_u32("ZKPIPE_CUDA_NTT_BLOCK", NTT_BLOCK_LOG).clamp(1, NTT_TILE_MAX),
            cols: env_u32("ZKPIPE_CUDA_NTT_COLS", NTT_COLS_LOG).min(NTT_TILE_MAX - 1),
        }
    }
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One shared-memory pass: the stages of half-widths 2^lo … 2^(lo+s−1) over
/// blocks of 2^w elements: 2^low neighbouring columns (low ≤ lo) and
/// 2^(w−low−s) independent rows above the stage bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NttPass {
    lo: u32,
    s: u32,
    w: u32,
    low: u32,
}

/// The passes of a 2^`log_n` transform in execution order (DIT upward, DIF
/// downward). Stages are spread evenly over as few passes of at most
/// `shape.stages` as cover them, longer passes on the low bits; each pass's
/// block takes up to 2^cols columns, as far as lo allows, then rows up to
/// 2^shape.block elements.
fn ntt_passes(log_n: u32, dit: bool, shape: NttShape) -> Vec<NttPass> {
    let count = log_n.div_ceil(shape.stages).max(1);
    let (short, longer) = (log_n / count, log_n % count);
    let mut lo = 0;
    let mut passes: Vec<NttPass> = (0..count)
        .map(|i| {
            let s = short + (i < longer) as u32;
            lo += s;
            let lo = lo - s;
            let low = shape.cols.min(lo).min(NTT_TILE_MAX - s);
            let rows = shape.block.saturating_sub(s + low).min(log_n - lo - s);
            NttPass {
                lo,
                s,
                w: s + low + rows,
                low,
            }
        })
        .collect();
    if !dit {
        passes.reverse();
    }
    passes
}

/// Rows, at least, of a lowest pass that writes bit-reversed: taken from
/// the top index bits, they make its writes runs of 2^rows elements
/// (4 · 32 B = 128 B) instead of one element every 2^(log_n − w).
const NTT_TOP_ROWS: u32 = 2;

/// `pass` (the lowest: lo = low = 0) with its rows from the top index bits,
/// at least [`NTT_TOP_ROWS`] of them (`ntt_pass_top` in kernels/ntt.cu).
fn with_top_rows(pass: NttPass, log_n: u32) -> NttPass {
    let rows = (pass.w - pass.s)
        .max(NTT_TOP_ROWS)
        .min(NTT_TILE_MAX - pass.s)
        .min(log_n - pass.s);
    NttPass {
        w: pass.s + rows,
        ..pass
    }
}

/// A stage-major twiddle table and the largest log size it covers.
type TwiddleTable = (u32, Arc<CudaSlice<u64>>);

/// (x, c, log n) of a factor vector `c·x^i`.
type FactorKey = ([u64; 4], [u64; 4], u32);

struct Gpu {
    ctx: Arc<CudaContext>,
    name: String,
    memory: u64,
    sms: u32,
    ntt_pass: CudaFunction,
    /// `ntt_pass` for a permuting lowest pass with rows from the top bits.
    ntt_pass_top: CudaFunction,
    /// The NTT plans' shape (environment overrides, read once at start).
    ntt_shape: NttShape,
    scale: CudaFunction,
    quotient_combine: CudaFunction,
    msm: msm::MsmKernels,
    /// Twiddles `[ω^0 .. ω^(n/2−1)]` per (log n, inverse), kept on the device.
    /// Per direction (forward, inverse): the stage-major twiddle table and
    /// the largest log size it covers.
    twiddles: Mutex<[Option<TwiddleTable>; 2]>,
    /// Scaling factors `c·x^i` per (x, c, log n), kept on the device.
    factors: DeviceCache<FactorKey>,
    /// Idle lanes: a stream and the page-locked buffer its large copies go
    /// through (grown on demand). An op takes one for its whole length, so
    /// ops called from different threads (a daemon's workers) run on their
    /// own streams: one's copies overlap another's kernels.
    lanes: Mutex<Vec<IdleLane>>,
}

/// A stream and its staging pieces, waiting in [`Gpu::lanes`].
type IdleLane = (Arc<CudaStream>, Staging);

/// A device with one lane taken for the length of an op. Buffers shared
/// between lanes (resident bases, twiddles, factors) are complete before
/// they are shared, and an op keeps the ones it used until its stream has
/// finished with them: freeing one is queued on the stream that made it,
/// which knows nothing of this op's queued kernels.
struct Lane<'g> {
    gpu: &'g Gpu,
    stream: Arc<CudaStream>,
    staging: Mutex<Staging>,
    held: Mutex<Vec<Arc<CudaSlice<u64>>>>,
}

impl std::ops::Deref for Lane<'_> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        self.gpu
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        // After an error work may still be queued: finish it before the
        // held buffers go and before the lane serves another op.
        // Poisoned locks are taken as they are: a panic here, during an
        // unwind, would abort the host process.
        let _ = self.stream.synchronize();
        let held = self.held.get_mut().unwrap_or_else(PoisonError::into_inner);
        held.clear();
        let staging = self
            .staging
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let staging = std::mem::take(staging);
        self.gpu
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.stream.clone(), staging));
    }
}

impl Gpu {
    /// An idle lane, or a new stream when every lane is busy; binds the
    /// device's context to this thread.
    fn lane(&self) -> Result<Lane<'_>, AccelError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver_err("binding the context"))?;
        let idle = self.lanes.lock().unwrap().pop();
        let (stream, staging) = match idle {
            Some(l) => l,
            None => (
                self.ctx
                    .new_stream()
                    .map_err(driver_err("creating a stream"))?,
                Staging::default(),
            ),
        };
        Ok(Lane {
            gpu: self,
            stream,
            staging: Mutex::new(staging),
            held: Mutex::new(Vec::new()),
        })
    }
}

/// A base set kept on a device.
struct Resident {
    device: u32,
    g2: bool,
    len: usize,
    words: Arc<CudaSlice<u64>>,
}

/// The CUDA backend.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    notes: String,
    /// Pippenger window from `--backend-opt window_bits=C`; 0 = per size.
    window_bits: u32,
    resident: Mutex<HashMap<u64, Resident>>,
    next_handle: AtomicU64,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("devices", &self.gpus.len())
            .field("notes", &self.notes)
            .finish()
    }
}

fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> AccelError + '_ {
    move |e| AccelError::new(driver_error_code(&e), format!("{what}: {e:?}"))
}

/// The seam's code for a driver error, read from its `CUresult` (not from
/// its text, which is the driver's to word): out of memory is the one the
/// scheduler retries, a missing or broken device or driver is
/// `DEVICE_UNAVAILABLE`, a value the driver refused is `INVALID_INPUT`, an
/// operation this device or driver does not offer is `UNSUPPORTED` (callers
/// may fall back to the host), anything else is `INTERNAL`.
fn driver_error_code(e: &cudarc::driver::DriverError) -> ErrorCode {
    use cudarc::driver::sys::CUresult as R;
    match e.0 {
        R::CUDA_ERROR_OUT_OF_MEMORY => ErrorCode::OUT_OF_MEMORY,
        R::CUDA_ERROR_NO_DEVICE
        | R::CUDA_ERROR_INVALID_DEVICE
        | R::CUDA_ERROR_DEVICE_UNAVAILABLE
        | R::CUDA_ERROR_DEVICE_NOT_LICENSED
        | R::CUDA_ERROR_NOT_INITIALIZED
        | R::CUDA_ERROR_DEINITIALIZED
        | R::CUDA_ERROR_STUB_LIBRARY
        | R::CUDA_ERROR_SYSTEM_NOT_READY
        | R::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        | R::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
        | R::CUDA_ERROR_ECC_UNCORRECTABLE => ErrorCode::DEVICE_UNAVAILABLE,
        R::CUDA_ERROR_INVALID_VALUE => ErrorCode::INVALID_INPUT,
        R::CUDA_ERROR_NOT_SUPPORTED => ErrorCode::UNSUPPORTED,
        _ => ErrorCode::INTERNAL,
    }
}

/// Lets the device's current memory pool (where the stream's allocations
/// come from) keep up to `keep` bytes of freed memory mapped between calls
/// instead of unmapping it at every synchronisation; `None` hands all of it
/// back now. Returns whether the driver took it (without a pool, or on
/// failure, allocations stay correct, only slower).
fn pool_keep(ctx: &CudaContext, keep: Option<u64>) -> bool {
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

fn open_gpu(ordinal: usize) -> Result<(Gpu, String), String> {
    let ctx = CudaContext::new(ordinal).map_err(|e| format!("device {ordinal}: {e:?}"))?;
    // SAFETY: buffers cross lanes (streams) only complete and read-only, and
    // each op keeps them until its own stream is done (see `Lane`), so
    // cudarc's per-argument events are not needed.
    unsafe { ctx.disable_event_tracking() };
    // Keep freed memory mapped, up to a quarter of the device: an op's
    // scratch (an NTT's second buffer, an MSM's tables) was otherwise mapped
    // afresh on every call, ~2 ms of a 2^24 NTT that permutes. check_free
    // hands it all back when memory looks short.
    let kept = pool_keep(&ctx, Some(ctx.total_mem().unwrap_or(0) as u64 / 4));
    let (major, minor) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
    let arch = format!("sm_{major}{minor}");
    let (cubin, note) = cubin_for(&arch)?;
    let module = ctx
        .load_module(Ptx::from_binary(cubin))
        .map_err(|e| format!("loading kernels for {arch}: {e:?}"))?;
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
        ntt_pass: f("ntt_pass")?,
        ntt_pass_top: f("ntt_pass_top")?,
        ntt_shape: NttShape::from_env(),
        scale: f("scale")?,
        quotient_combine: f("quotient_combine")?,
        msm: msm::MsmKernels::load(&module)?,
        twiddles: Mutex::new([None, None]),
        factors: Mutex::new(HashMap::new()),
        lanes: Mutex::new(Vec::new()),
        ctx,
    };
    let pool = if kept {
        ""
    } else {
        "; freed memory is unmapped per call (no pool threshold)"
    };
    Ok((gpu, format!("device {ordinal}: {note}{pool}")))
}

fn discover() -> (Vec<Gpu>, String) {
    // SAFETY: only checks whether the driver library can be loaded (cudarc
    // panics on first use when it is missing).
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return (vec![], "no NVIDIA driver (libcuda not found)".into());
    }
    let count = match catch_unwind(CudaContext::device_count) {
        Ok(Ok(n)) => n.max(0) as usize,
        Ok(Err(e)) => return (vec![], format!("CUDA driver error: {e:?}")),
        Err(_) => return (vec![], "the CUDA driver could not be initialised".into()),
    };
    let mut gpus = Vec::new();
    let mut notes = Vec::new();
    for i in 0..count {
        match catch_unwind(|| open_gpu(i)) {
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
    notes.push("ops: msm_g1, msm_g2 (resident bases), ntt, quotient".into());
    (gpus, notes.join("; "))
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
            .find(|kv| kv.key.as_str() != "window_bits")
        {
            return Err(AccelError::invalid_input(format!(
                "unknown cuda backend setting `{}` (known: window_bits)",
                kv.key
            )));
        }
        let window_bits = match ext_get(&config.ext, "window_bits") {
            None => 0,
            Some(v) => v.parse().map_err(|_| {
                AccelError::invalid_input(format!("window_bits must be a number, got `{v}`"))
            })?,
        };
        check_window(window_bits)?;
        let (gpus, notes) = discover();
        Ok(CudaBackend {
            gpus,
            notes,
            window_bits,
            resident: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
        })
    }
}

/// Views field elements as the `u64` limbs the kernels take.
fn limbs(v: &[Fr]) -> &[u64] {
    // SAFETY: Fr is repr(C) [u64; 4]; the view covers the same bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, v.len() * 4) }
}

fn limbs_mut(v: &mut [Fr]) -> &mut [u64] {
    // SAFETY: as in `limbs`; every bit pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u64, v.len() * 4) }
}

/// `c·x^i` for i < n.
fn powers(x: &Fr, c: &Fr, n: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; n];
    fill_powers(&mut out, x, c);
    out
}

/// `out[i] = c·x^i`, in pieces on several threads (each piece starts from
/// one exponentiation): a 2^27-entry table took seconds on one thread.
fn fill_powers(out: &mut [Fr], x: &Fr, c: &Fr) {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(16));
    let piece = out.len().div_ceil(threads).max(1 << 14);
    std::thread::scope(|sc| {
        for (k, chunk) in out.chunks_mut(piece).enumerate() {
            sc.spawn(move || {
                let mut acc = c.mul(&x.pow(&[(k * piece) as u64]));
                for v in chunk {
                    *v = acc;
                    acc = acc.mul(x);
                }
            });
        }
    });
}

/// The stage-major twiddle table for transforms up to 2^log_n: entry
/// 2^h + j is ω_(2^(h+1))^j (ω inverted for the inverse); entry 0 is unused.
/// The top stage is the powers of ω_(2^log_n); every lower stage takes
/// every 2^(log_n−1−h)-th of them.
fn stage_twiddles(log_n: u32, inverse: bool) -> Vec<Fr> {
    let n = 1usize << log_n;
    let mut w = Fr::root_of_unity(log_n);
    if inverse {
        w = w.inverse().expect("roots of unity are nonzero");
    }
    let mut table = vec![Fr::ZERO; n];
    let (lower, top) = table.split_at_mut(n / 2);
    fill_powers(top, &w, &Fr::one());
    let top = &*top;
    std::thread::scope(|sc| {
        // Entry 0 is unused; stage h then occupies [2^h, 2^(h+1)).
        let mut rest = &mut lower[1.min(n / 2)..];
        for h in 0..log_n.saturating_sub(1) {
            let (stage, tail) = std::mem::take(&mut rest).split_at_mut(1 << h);
            rest = tail;
            let stride = log_n - 1 - h;
            sc.spawn(move || {
                for (j, v) in stage.iter_mut().enumerate() {
                    *v = top[j << stride];
                }
            });
        }
    });
    table
}

fn grid(count: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.div_ceil(256).max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
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

/// Views affine points (repr(C) limb arrays) as `u64` words.
fn point_words<T>(v: &[T]) -> &[u64] {
    // SAFETY: the seam's affine types are repr(C) arrays of u64 limbs with no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u64, std::mem::size_of_val(v) / 8) }
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
    fn upload<T>(&self, bases: &[T], device: u32, g2: bool) -> Result<BasesHandle, AccelError> {
        let lane = self.gpu(device)?.lane()?;
        lane.check_free(std::mem::size_of_val(bases))?;
        let words = lane.upload(point_words(bases))?;
        lane.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
        let id = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.resident.lock().unwrap().insert(
            id,
            Resident {
                device,
                g2,
                len: bases.len(),
                words: Arc::new(words),
            },
        );
        Ok(BasesHandle(id))
    }

    fn msm<C: msm::Curve>(
        &self,
        bases: BasesRef<'_, C::Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
        g2: bool,
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
            (0, 0) => msm::auto_window(scalars.len()),
            (0, w) | (w, _) => w,
        };
        let resident = match bases {
            BasesRef::Host(_) => None,
            BasesRef::Resident(h) => {
                let map = self.resident.lock().unwrap();
                let r = map.get(&h.0).ok_or_else(|| {
                    AccelError::invalid_input(format!("unknown bases handle {}", h.0))
                })?;
                if r.g2 != g2 || r.device != config.device || r.len < scalars.len() {
                    return Err(AccelError::invalid_input(format!(
                        "bases handle {} holds {} {} points on device {}; this MSM needs {} {} points on device {}",
                        h.0,
                        r.len,
                        if r.g2 { "G2" } else { "G1" },
                        r.device,
                        scalars.len(),
                        if g2 { "G2" } else { "G1" },
                        config.device
                    )));
                }
                Some(r.words.clone())
            }
        };
        let lane = gpu.lane()?;
        match (&resident, bases) {
            (Some(w), _) => lane.msm::<C>(msm::MsmBases::Device(w), scalars, c),
            (None, BasesRef::Host(b)) => {
                lane.msm::<C>(msm::MsmBases::Host(point_words(b.as_slice())), scalars, c)
            }
            (None, BasesRef::Resident(_)) => unreachable!("resolved above"),
        }
    }
}

/// Copies below this size skip the staging buffer.
const STAGING_MIN_BYTES: usize = 1 << 20;
/// Staged copies move in pieces of this many words (32 MiB), so the host
/// copy of one piece overlaps the device transfer of another.
const STAGING_PIECE_WORDS: usize = 1 << 22;
/// Page-locked pieces per lane, used in turn (64 MiB, whatever the copy's size).
const STAGING_PIECES: usize = 2;

/// A lane's page-locked staging pieces and the copy last queued on each.
#[derive(Default)]
struct Staging {
    pieces: [Option<PinnedHostSlice<u64>>; STAGING_PIECES],
    done: [Option<cudarc::driver::CudaEvent>; STAGING_PIECES],
}

/// `dst.copy_from_slice(src)` on several threads: one thread cannot keep up
/// with a pinned transfer (~55 GB/s on the H200 machine).
fn parallel_copy(dst: &mut [u64], src: &[u64]) {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(16));
    let chunk = src.len().div_ceil(threads).max(1 << 16);
    std::thread::scope(|sc| {
        for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            sc.spawn(move || d.copy_from_slice(s));
        }
    });
}

impl Staging {
    /// Piece `slot`, once the copy last queued on it has finished
    /// (allocated on first use).
    fn piece(&mut self, ctx: &Arc<CudaContext>, slot: usize) -> Result<&mut [u64], AccelError> {
        if let Some(done) = self.done[slot].take() {
            done.synchronize().map_err(driver_err("synchronising"))?;
        }
        if self.pieces[slot].is_none() {
            // SAFETY: a piece is written before it is read (uploads fill it,
            // downloads overwrite it).
            let buf = unsafe { ctx.alloc_pinned::<u64>(STAGING_PIECE_WORDS) }
                .map_err(driver_err("allocating page-locked host memory"))?;
            self.pieces[slot] = Some(buf);
        }
        let buf = self.pieces[slot].as_mut().expect("allocated above");
        // Never waits: this type tracks the pieces' copies itself.
        buf.as_mut_slice().map_err(driver_err("staging"))
    }
}

impl Lane<'_> {
    /// A device copy of `words`, through page-locked memory when large.
    /// Returns once the last piece is queued (the pieces' events guard their
    /// reuse; the copy is ordered before later work on this lane's stream).
    fn upload(&self, words: &[u64]) -> Result<CudaSlice<u64>, AccelError> {
        if words.len() * 8 < STAGING_MIN_BYTES {
            return self
                .stream
                .clone_htod(words)
                .map_err(driver_err("copying to the device"));
        }
        // SAFETY: every element is written by the copies below before use.
        let mut dev = unsafe { self.stream.alloc::<u64>(words.len()) }
            .map_err(driver_err("allocating device memory"))?;
        let mut st = self.staging.lock().unwrap();
        // The threads fill one piece while the copy engine moves the other
        // (an asynchronous copy from page-locked memory returns at once).
        for (k, w) in words.chunks(STAGING_PIECE_WORDS).enumerate() {
            let slot = k % STAGING_PIECES;
            let host = &mut st.piece(&self.ctx, slot)?[..w.len()];
            parallel_copy(host, w);
            let at = k * STAGING_PIECE_WORDS;
            self.stream
                .memcpy_htod(&*host, &mut dev.slice_mut(at..at + w.len()))
                .map_err(driver_err("copying to the device"))?;
            st.done[slot] = Some(
                self.stream
                    .record_event(None)
                    .map_err(driver_err("recording an event"))?,
            );
        }
        Ok(dev)
    }

    /// Copies `dev` into `out`, through page-locked memory when large.
    fn download(&self, dev: &CudaSlice<u64>, out: &mut [u64]) -> Result<(), AccelError> {
        if out.len() * 8 < STAGING_MIN_BYTES {
            self.stream
                .memcpy_dtoh(dev, out)
                .map_err(driver_err("copying from the device"))?;
            return self
                .stream
                .synchronize()
                .map_err(driver_err("synchronising"));
        }
        let mut st = self.staging.lock().unwrap();
        let count = out.len().div_ceil(STAGING_PIECE_WORDS);
        let len = out.len();
        let range = |k: usize| k * STAGING_PIECE_WORDS..((k + 1) * STAGING_PIECE_WORDS).min(len);
        // Piece k's copy is queued into its slot; the threads copy it out
        // once its event has passed, and the slot takes piece k + PIECES.
        let queue = |st: &mut Staging, k: usize| -> Result<(), AccelError> {
            let (r, slot) = (range(k), k % STAGING_PIECES);
            let host = &mut st.piece(&self.ctx, slot)?[..r.len()];
            self.stream
                .memcpy_dtoh(&dev.slice(r), host)
                .map_err(driver_err("copying from the device"))?;
            st.done[slot] = Some(
                self.stream
                    .record_event(None)
                    .map_err(driver_err("recording an event"))?,
            );
            Ok(())
        };
        for k in 0..count.min(STAGING_PIECES) {
            queue(&mut st, k)?;
        }
        for k in 0..count {
            let r = range(k);
            let host = &st.piece(&self.ctx, k % STAGING_PIECES)?[..r.len()];
            parallel_copy(&mut out[r], host);
            if k + STAGING_PIECES < count {
                queue(&mut st, k + STAGING_PIECES)?;
            }
        }
        Ok(())
    }

    /// Twiddles for every stage of transforms up to 2^log_n, stage after
    /// stage: entry 2^h + j is ω_(2^(h+1))^j (inverted for the inverse), so
    /// a stage's factors are contiguous and one table serves all smaller
    /// sizes. Rebuilt only when a larger transform comes.
    fn twiddles(&self, log_n: u32, inverse: bool) -> Result<Arc<CudaSlice<u64>>, AccelError> {
        let mut cache = self.twiddles.lock().unwrap();
        let slot = &mut cache[inverse as usize];
        if let Some((_, t)) = slot.as_ref().filter(|(log, _)| *log >= log_n) {
            return Ok(self.hold(t));
        }
        let host = stage_twiddles(log_n, inverse);
        let dev = Arc::new(
            self.stream
                .clone_htod(limbs(&host))
                .map_err(driver_err("uploading twiddles"))?,
        );
        self.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
        *slot = Some((log_n, dev.clone()));
        Ok(self.hold(&dev))
    }

    /// `buf`, kept alive until this op's stream is done (see [`Lane`]).
    fn hold(&self, buf: &Arc<CudaSlice<u64>>) -> Arc<CudaSlice<u64>> {
        self.held.lock().unwrap().push(buf.clone());
        buf.clone()
    }

    fn check_free(&self, bytes: usize) -> Result<(), AccelError> {
        let query = || {
            self.ctx
                .mem_get_info()
                .map(|(free, _)| free)
                .map_err(driver_err("querying memory"))
        };
        let mut free = query()?;
        if free < bytes + (64 << 20) {
            // Memory the pool keeps counts as used: hand it back, then look again.
            self.stream
                .synchronize()
                .map_err(driver_err("synchronising"))?;
            pool_keep(&self.ctx, None);
            free = query()?;
        }
        if free < bytes + (64 << 20) {
            return Err(AccelError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!("needs {bytes} bytes of device memory, {free} free"),
            ));
        }
        Ok(())
    }

    /// `buf[p] *= c·x^i` (i the natural index of p), with the factors kept
    /// on the device per (x, c, n): a prover's quotient repeats the same few.
    fn scale(
        &self,
        buf: &mut CudaSlice<u64>,
        x: &Fr,
        c: &Fr,
        log_n: u32,
        reversed: bool,
    ) -> Result<(), AccelError> {
        let n = 1usize << log_n;
        let key = (x.limbs, c.limbs, log_n);
        let cached = self.factors.lock().unwrap().get(&key).cloned();
        let s = match cached {
            Some(s) => self.hold(&s),
            None => {
                let s = Arc::new(
                    self.stream
                        .clone_htod(limbs(&powers(x, c, n)))
                        .map_err(driver_err("uploading factors"))?,
                );
                self.stream
                    .synchronize()
                    .map_err(driver_err("synchronising"))?;
                self.hold(&s);
                let mut cache = self.factors.lock().unwrap();
                if cache.len() >= 8 {
                    cache.clear(); // bound device memory held by the cache
                }
                cache.insert(key, s.clone());
                s
            }
        };
        let (n32, rev) = (n as u32, reversed as i32);
        let mut l = self.stream.launch_builder(&self.scale);
        l.arg(buf).arg(&*s).arg(&n32).arg(&log_n).arg(&rev);
        // SAFETY: `buf` and `s` hold n field elements; the kernel reads/writes indices < n.
        unsafe { l.launch(grid(n)) }.map_err(driver_err("scale kernel"))?;
        Ok(())
    }

    fn ntt(&self, values: &mut [Fr], cfg: &NttConfig) -> Result<(), AccelError> {
        let n = values.len();
        self.check_free(n * 32 * 3)?;
        let mut prof = Profile::new(&self.stream);
        let mut buf = self.upload(limbs(values))?;
        prof.mark("copy in");
        self.ntt_on_device(&mut buf, n.trailing_zeros(), cfg)?;
        prof.mark("transform");
        self.download(&buf, limbs_mut(values))?;
        prof.mark("copy out");
        prof.report(&format!("ntt n={n} {:?}", cfg.order));
        Ok(())
    }

    /// Groth16's quotient with a, b, c on the device from upload to download.
    fn quotient(&self, a: &mut [Fr], b: &[Fr], c: &[Fr], g: &Fr) -> Result<(), AccelError> {
        let n = a.len();
        let log_n = n.trailing_zeros();
        self.check_free(n * 32 * 5)?;
        // Bit-reversed coefficients feed the coset NTT directly: no permutation between.
        let to_coeffs = NttConfig {
            direction: NttDirection::Inverse,
            order: NttOrder::NR,
            ..Default::default()
        };
        let to_coset = NttConfig {
            order: NttOrder::RN,
            coset: Some(*g).into(),
            ..Default::default()
        };
        // Each input's transforms are queued as soon as it is on the device,
        // so they run while the host copies the next input (the slow part).
        let to_coset_values = |v: &[Fr]| {
            let mut buf = self.upload(limbs(v))?;
            self.ntt_on_device(&mut buf, log_n, &to_coeffs)?;
            self.ntt_on_device(&mut buf, log_n, &to_coset)?;
            Ok::<_, AccelError>(buf)
        };
        let bufs = [
            to_coset_values(a)?,
            to_coset_values(b)?,
            to_coset_values(c)?,
        ];
        let z_inv = zkpipe_core::groth16::vanishing_inverse(g, n)
            .ok_or_else(|| AccelError::invalid_input("quotient: gⁿ = 1 for this coset shift"))?;
        let [mut qa, qb, qc] = bufs;
        let (z, n32) = (z_inv.limbs, n as u32);
        let mut l = self.stream.launch_builder(&self.quotient_combine);
        l.arg(&mut qa)
            .arg(&qb)
            .arg(&qc)
            .arg(&z[0])
            .arg(&z[1])
            .arg(&z[2])
            .arg(&z[3])
            .arg(&n32);
        // SAFETY: the three buffers hold n elements each; one thread per index < n.
        unsafe { l.launch(grid(n)) }.map_err(driver_err("quotient_combine kernel"))?;
        let from_coset = NttConfig {
            direction: NttDirection::Inverse,
            coset: Some(*g).into(),
            ..Default::default()
        };
        self.ntt_on_device(&mut qa, log_n, &from_coset)?;
        self.download(&qa, limbs_mut(a))
    }

    /// The NTT of `buf` (2^log_n elements on this device), in place.
    fn ntt_on_device(
        &self,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        cfg: &NttConfig,
    ) -> Result<(), AccelError> {
        let n = 1usize << log_n;
        let inverse = cfg.direction == NttDirection::Inverse;
        let coset = cfg.coset.into_option();
        let (in_rev, out_rev) = (cfg.order.input_reversed(), cfg.order.output_reversed());
        if let (false, Some(g)) = (inverse, coset) {
            self.scale(buf, &g, &Fr::one(), log_n, in_rev)?;
        }
        if n > 1 {
            let tw = self.twiddles(log_n, inverse)?;
            // The permutation an order needs rides on the last pass's writes
            // (scattered 32-byte writes cost less than scattered reads:
            // measured 2^24 NN 7.7 ms permuting on the first pass's reads,
            // 5.6 ms for NR with no permutation), so the transform is the
            // opposite decimation of the plan that permutes first.
            let plan = cfg.order.radix2();
            let (permute, dit) = (plan.permute_first, plan.dit ^ plan.permute_first);
            let passes = ntt_passes(log_n, dit, self.ntt_shape);
            // A permuting pass writes elements other blocks have yet to read,
            // so it goes to a second buffer unless it is the only block.
            let mut scratch = if permute && passes.len() > 1 {
                Some(
                    self.stream
                        .alloc_zeros::<u64>(4 * n)
                        .map_err(driver_err("allocating NTT scratch"))?,
                )
            } else {
                None
            };
            let count = passes.len();
            for (k, pass) in passes.into_iter().enumerate() {
                let last = k + 1 == count;
                // DIF ends on the lowest pass: permuting there, it takes its
                // rows from the top bits (a DIT top pass's reversed writes
                // are runs already).
                let top = permute && last && !dit && count > 1;
                let NttPass { lo, s, w, low } = if top {
                    with_top_rows(pass, log_n)
                } else {
                    pass
                };
                let (d, rev) = (dit as i32, (permute && last) as i32);
                let (src, _sb) = buf.device_ptr_mut(&self.stream);
                let out = scratch
                    .as_mut()
                    .filter(|_| last)
                    .map(|t| t.device_ptr_mut(&self.stream));
                let dst = out.as_ref().map_or(src, |t| t.0);
                let kernel = if top {
                    &self.ntt_pass_top
                } else {
                    &self.ntt_pass
                };
                let mut l = self.stream.launch_builder(kernel);
                l.arg(&src)
                    .arg(&dst)
                    .arg(&*tw)
                    .arg(&log_n)
                    .arg(&lo)
                    .arg(&s)
                    .arg(&w)
                    .arg(&low)
                    .arg(&d)
                    .arg(&rev);
                let cfg = LaunchConfig {
                    grid_dim: ((n >> w) as u32, 1, 1),
                    block_dim: (1 << (w - 1), 1, 1),
                    shared_mem_bytes: 32 << w,
                };
                // SAFETY: src and dst hold n elements; each block reads and
                // writes its own 2^w indices < n (tile_index is a bijection
                // for low ≤ lo and lo + w − low ≤ log_n, and with top rows
                // for lo = low = 0 and w ≤ log_n; bit reversal too), and a permuting pass
                // writes another buffer unless it is the only pass (then
                // one block: w = s = log_n); twiddle indices < 2^log_n,
                // the table's length at least;
                // 1 ≤ w ≤ 10: 2^(w−1) ≤ 512 threads, one butterfly each, and
                // 32·2^w bytes of shared memory ≤ 32 KiB.
                unsafe { l.launch(cfg) }.map_err(driver_err("ntt_pass kernel"))?;
            }
            if let Some(t) = scratch.as_mut() {
                std::mem::swap(buf, t);
            }
        }
        if inverse {
            let n_inv = Fr::from_u64(n as u64).inverse().expect("n < r");
            let g_inv = coset
                .map(|g| g.inverse().unwrap_or(Fr::ZERO))
                .unwrap_or_else(Fr::one);
            self.scale(buf, &g_inv, &n_inv, log_n, out_rev)?;
        }
        Ok(())
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
                    memory_bytes: g.memory,
                    compute_units: g.sms,
                })
                .collect::<Vec<_>>()
                .into(),
            notes: self.notes.clone().into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        if self.gpus.is_empty() {
            return Capabilities::default();
        }
        let op = |op: &str| OpSupport {
            op: op.into(),
            max_log_size: 28,
        };
        Capabilities {
            ops: vec![
                op(ops::MSM_G1),
                op(ops::MSM_G2),
                op(ops::MSM_G1_BATCH),
                op(ops::MSM_G2_BATCH),
                op(ops::RESIDENT_BASES),
                op(ops::NTT),
                op(ops::QUOTIENT),
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
        self.msm::<msm::G1>(bases, scalars, config, false)
    }

    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<G2Projective, AccelError> {
        self.msm::<msm::G2>(bases, scalars, config, true)
    }

    fn upload_bases_g1(&self, bases: &[G1Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.upload(bases, device, false)
    }

    fn upload_bases_g2(&self, bases: &[G2Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.upload(bases, device, true)
    }

    fn drop_bases(&self, handle: BasesHandle) -> Result<(), AccelError> {
        match self.resident.lock().unwrap().remove(&handle.0) {
            Some(_) => Ok(()),
            None => Err(AccelError::invalid_input(format!(
                "unknown bases handle {}",
                handle.0
            ))),
        }
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

zkpipe_core::export_backend!(CudaBackend);

#[cfg(test)]
mod tests {
    use super::{
        NTT_TILE_MAX, NttPass, NttShape, driver_error_code, ntt_passes, powers, stage_twiddles,
        with_top_rows,
    };
    use cudarc::driver::DriverError;
    use cudarc::driver::sys::CUresult;
    use zkpipe_core::Fr;
    use zkpipe_core::plugin::ErrorCode;

    /// Classified by code alone: no driver is needed (the error's text
    /// would ask libcuda for it), and no wording can be mistaken for
    /// out-of-memory.
    #[test]
    fn driver_errors_are_classified_by_their_code() {
        let cases = [
            (CUresult::CUDA_ERROR_OUT_OF_MEMORY, ErrorCode::OUT_OF_MEMORY),
            (
                CUresult::CUDA_ERROR_NO_DEVICE,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (
                CUresult::CUDA_ERROR_NOT_INITIALIZED,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (
                CUresult::CUDA_ERROR_DEINITIALIZED,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (
                CUresult::CUDA_ERROR_INVALID_DEVICE,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (
                CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (
                CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
                ErrorCode::DEVICE_UNAVAILABLE,
            ),
            (CUresult::CUDA_ERROR_INVALID_VALUE, ErrorCode::INVALID_INPUT),
            (CUresult::CUDA_ERROR_NOT_SUPPORTED, ErrorCode::UNSUPPORTED),
            // Out of launch resources (registers, shared memory) is a
            // kernel configuration problem: retrying cannot help.
            (
                CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                ErrorCode::INTERNAL,
            ),
            (CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, ErrorCode::INTERNAL),
            (CUresult::CUDA_ERROR_INVALID_HANDLE, ErrorCode::INTERNAL),
            (CUresult::CUDA_ERROR_UNKNOWN, ErrorCode::INTERNAL),
        ];
        for (result, code) in cases {
            assert_eq!(driver_error_code(&DriverError(result)), code, "{result:?}");
        }
    }

    #[test]
    fn powers_match_a_serial_loop() {
        let (x, c) = (Fr::from_u64(5).inverse().unwrap(), Fr::from_u64(3));
        for n in [0, 1, 5, (1 << 14) + 1, 100_003] {
            let got = powers(&x, &c, n);
            let mut acc = c;
            for (i, v) in got.iter().enumerate() {
                assert_eq!(*v, acc, "n = {n}, i = {i}");
                acc = acc.mul(&x);
            }
            assert_eq!(got.len(), n);
        }
    }

    #[test]
    fn stage_twiddles_hold_each_stages_roots() {
        for log_n in 1..=12 {
            for inverse in [false, true] {
                let t = stage_twiddles(log_n, inverse);
                assert_eq!(t.len(), 1 << log_n);
                for h in 0..log_n {
                    let mut w = Fr::root_of_unity(h + 1);
                    if inverse {
                        w = w.inverse().unwrap();
                    }
                    for j in 0..1usize << h {
                        let want = w.pow(&[j as u64]);
                        assert_eq!(
                            t[(1 << h) + j],
                            want,
                            "2^{log_n} inverse={inverse} h={h} j={j}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn ntt_passes_cover_every_stage_once() {
        let p = |lo, s, w, low| NttPass { lo, s, w, low };
        let shape = |stages, block, cols| NttShape {
            stages,
            block,
            cols,
        };
        assert_eq!(ntt_passes(3, true, shape(6, 8, 2)), vec![p(0, 3, 3, 0)]);
        assert_eq!(
            ntt_passes(20, true, shape(10, 8, 2)),
            vec![p(0, 10, 10, 0), p(10, 10, 10, 0)]
        );
        assert_eq!(
            ntt_passes(24, false, shape(6, 8, 2)),
            vec![p(18, 6, 8, 2), p(12, 6, 8, 2), p(6, 6, 8, 2), p(0, 6, 8, 0)]
        );
        assert_eq!(
            ntt_passes(13, true, shape(5, 9, 1)),
            vec![p(0, 5, 9, 0), p(5, 4, 9, 1), p(9, 4, 5, 1)]
        );
        for log_n in 1..=28 {
            for (stages, block, cols) in [(10, 10, 0), (8, 8, 2), (6, 8, 2), (5, 9, 3), (1, 1, 9)] {
                // A permuting DIF pass with top rows: still the lowest, a
                // block within the tile limit and the transform's size.
                let dif = ntt_passes(log_n, false, shape(stages, block, cols));
                if let [.., last] = dif[..] {
                    let t = with_top_rows(last, log_n);
                    assert!(t.lo == 0 && t.low == 0 && t.s == last.s, "{t:?}");
                    assert!(t.w >= t.s && t.w <= NTT_TILE_MAX.min(log_n), "{t:?}");
                }
                let mut next = 0;
                for NttPass { lo, s, w, low } in ntt_passes(log_n, true, shape(stages, block, cols))
                {
                    assert_eq!(lo, next, "2^{log_n}: passes are consecutive");
                    assert!(
                        s >= 1 && s <= stages && w >= s + low && w <= NTT_TILE_MAX,
                        "2^{log_n}: ({lo}, {s}, {w}, {low})"
                    );
                    assert!(
                        low <= lo && lo + w - low <= log_n,
                        "2^{log_n}: ({lo}, {s}, {w}, {low})"
                    );
                    next = lo + s;
                }
                assert_eq!(next, log_n);
            }
        }
    }
}
