//! zkpipe's CUDA backend. Kernels (`kernels/*.cu`) are embedded in the
//! plugin, compiled by NVRTC at first use for each device's architecture and
//! cached on disk (key: source hash, architecture, NVRTC version).
//!
//! Status: NTT (all orders, cosets) runs on the GPU; MSM is not implemented
//! yet and is declared unsupported, so callers fall back or report it.
//!
//! With no NVIDIA driver (or no NVRTC) the plugin still loads and reports
//! zero devices and the reason; it never panics or aborts.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use sha2::{Digest, Sha256};
use zkpipe_core::Fr;
use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, Capabilities,
    DeviceInfo, DeviceKind, ErrorCode, NttConfig, NttDirection, OpSupport, ops,
};

/// Kernel sources, in include order (the `#include` lines are dropped: NVRTC
/// gets one translation unit).
pub const KERNEL_SOURCES: [(&str, &str); 2] = [
    ("fr.cuh", include_str!("../kernels/fr.cuh")),
    ("ntt.cu", include_str!("../kernels/ntt.cu")),
];

/// Every kernel entry point, for loading and for the compile test.
pub const KERNELS: [&str; 3] = ["ntt_stage", "bit_reverse", "scale"];

/// The single translation unit NVRTC compiles.
pub fn kernel_source() -> String {
    KERNEL_SOURCES
        .iter()
        .flat_map(|(_, s)| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("#include"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compiles the kernels for `arch` (e.g. `sm_90`) with the NVRTC found at run time.
///
/// # Errors
/// The NVRTC log when compilation fails, or why NVRTC could not be used.
pub fn compile(arch: &str) -> Result<String, String> {
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(
            "libnvrtc not found (install the CUDA 13 NVRTC and put it on the library path)".into(),
        );
    }
    let arch: &'static str = Box::leak(arch.to_string().into_boxed_str());
    let opts = CompileOptions {
        arch: Some(arch),
        options: vec!["--std=c++17".into(), "--device-int128".into()],
        ..Default::default()
    };
    let src = kernel_source();
    catch_unwind(AssertUnwindSafe(|| {
        cudarc::nvrtc::compile_ptx_with_opts(&src, opts)
    }))
    .map_err(|_| "NVRTC panicked".to_string())?
    .map(|ptx| ptx.to_src())
    .map_err(|e| format!("NVRTC failed for {arch}: {e}"))
}

fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is present (checked by the caller); writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("{major}.{minor}")
}

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

/// PTX for `arch`, from the disk cache or compiled now; returns it and a note.
fn ptx_for(arch: &str) -> Result<(String, String), String> {
    let version = nvrtc_version();
    let hash = Sha256::digest(kernel_source().as_bytes());
    let key: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let path = cache_dir().join(format!("{key}-{arch}-nvrtc{version}.ptx"));
    if let Ok(ptx) = std::fs::read_to_string(&path) {
        return Ok((ptx, format!("kernels from cache {}", path.display())));
    }
    let t = Instant::now();
    let ptx = compile(arch)?;
    let note = format!(
        "kernels compiled by NVRTC {version} for {arch} in {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    // A failed cache write only costs the next start a compile.
    if std::fs::create_dir_all(path.parent().unwrap()).is_ok() {
        let _ = zkpipe_core::fsutil::write_atomically(&path, ptx.as_bytes());
    }
    Ok((ptx, note))
}

/// (x, c, log n) of a factor vector `c·x^i`.
type FactorKey = ([u64; 4], [u64; 4], u32);

struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    memory: u64,
    sms: u32,
    stage: CudaFunction,
    bit_reverse: CudaFunction,
    scale: CudaFunction,
    /// Twiddles `[ω^0 .. ω^(n/2−1)]` per (log n, inverse), kept on the device.
    twiddles: Mutex<HashMap<(u32, bool), Arc<CudaSlice<u64>>>>,
    /// Scaling factors `c·x^i` per (x, c, log n), kept on the device.
    factors: Mutex<HashMap<FactorKey, Arc<CudaSlice<u64>>>>,
    /// Device work of one call at a time.
    busy: Mutex<()>,
}

/// The CUDA backend.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    notes: String,
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
    move |e| {
        let code = if format!("{e:?}").contains("OUT_OF_MEMORY") {
            ErrorCode::OUT_OF_MEMORY
        } else {
            ErrorCode::DEVICE_UNAVAILABLE
        };
        AccelError::new(code, format!("{what}: {e:?}"))
    }
}

fn open_gpu(ordinal: usize) -> Result<(Gpu, String), String> {
    let ctx = CudaContext::new(ordinal).map_err(|e| format!("device {ordinal}: {e:?}"))?;
    let (major, minor) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
    let arch = format!("sm_{major}{minor}");
    let (ptx, note) = ptx_for(&arch)?;
    let module = ctx
        .load_module(Ptx::from_src(ptx))
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
        stream: ctx.default_stream(),
        stage: f("ntt_stage")?,
        bit_reverse: f("bit_reverse")?,
        scale: f("scale")?,
        twiddles: Mutex::new(HashMap::new()),
        factors: Mutex::new(HashMap::new()),
        busy: Mutex::new(()),
        ctx,
    };
    Ok((gpu, format!("device {ordinal}: {note}")))
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
    notes.push("ops: ntt on the GPU; msm not implemented yet (declared unsupported)".into());
    (gpus, notes.join("; "))
}

impl BackendPlugin for CudaBackend {
    const NAME: &'static str = "cuda";

    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        if config.threads.into_option() == Some(0) {
            return Err(AccelError::invalid_input("threads must be at least 1"));
        }
        if let Some(kv) = config.ext.first() {
            return Err(AccelError::invalid_input(format!(
                "unknown cuda backend setting `{}`",
                kv.key
            )));
        }
        let (gpus, notes) = discover();
        Ok(CudaBackend { gpus, notes })
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

fn powers(x: &Fr, c: &Fr, n: usize) -> Vec<Fr> {
    let mut out = Vec::with_capacity(n);
    let mut acc = *c;
    for _ in 0..n {
        out.push(acc);
        acc = acc.mul(x);
    }
    out
}

fn grid(count: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.div_ceil(256).max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
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

impl Gpu {
    fn twiddles(&self, log_n: u32, inverse: bool) -> Result<Arc<CudaSlice<u64>>, AccelError> {
        if let Some(t) = self.twiddles.lock().unwrap().get(&(log_n, inverse)) {
            return Ok(t.clone());
        }
        let mut w = Fr::root_of_unity(log_n);
        if inverse {
            w = w.inverse().expect("nonzero");
        }
        let host = powers(&w, &Fr::one(), (1usize << log_n) / 2);
        let dev = Arc::new(
            self.stream
                .clone_htod(limbs(&host))
                .map_err(driver_err("uploading twiddles"))?,
        );
        self.twiddles
            .lock()
            .unwrap()
            .insert((log_n, inverse), dev.clone());
        Ok(dev)
    }

    fn check_free(&self, bytes: usize) -> Result<(), AccelError> {
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(driver_err("querying memory"))?;
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
            Some(s) => s,
            None => {
                let s = Arc::new(
                    self.stream
                        .clone_htod(limbs(&powers(x, c, n)))
                        .map_err(driver_err("uploading factors"))?,
                );
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
        let _busy = self.busy.lock().unwrap();
        self.ctx
            .bind_to_thread()
            .map_err(driver_err("binding the context"))?;
        let n = values.len();
        let log_n = n.trailing_zeros();
        self.check_free(n * 32 * 3)?;
        let inverse = cfg.direction == NttDirection::Inverse;
        let coset = cfg.coset.into_option();
        let (in_rev, out_rev) = (cfg.order.input_reversed(), cfg.order.output_reversed());
        let mut buf = self
            .stream
            .clone_htod(limbs(values))
            .map_err(driver_err("copying input"))?;
        let n32 = n as u32;

        if let (false, Some(g)) = (inverse, coset) {
            self.scale(&mut buf, &g, &Fr::one(), log_n, in_rev)?;
        }
        if n > 1 {
            let tw = self.twiddles(log_n, inverse)?;
            let permute = |buf: &mut CudaSlice<u64>| -> Result<(), AccelError> {
                let mut l = self.stream.launch_builder(&self.bit_reverse);
                l.arg(buf).arg(&n32).arg(&log_n);
                // SAFETY: the kernel swaps pairs of indices < n.
                unsafe { l.launch(grid(n)) }
                    .map_err(driver_err("bit_reverse kernel"))
                    .map(|_| ())
            };
            // DIT: bit-reversed in, natural out; DIF: the opposite (as on the CPU).
            let dit = match (in_rev, out_rev) {
                (true, false) => true,
                (false, true) => false,
                (false, false) => {
                    permute(&mut buf)?;
                    true
                }
                (true, true) => {
                    permute(&mut buf)?;
                    false
                }
            };
            let halves: Vec<u32> = if dit {
                (0..log_n).map(|k| 1 << k).collect()
            } else {
                (0..log_n).rev().map(|k| 1 << k).collect()
            };
            for half in halves {
                let stride = n32 / (2 * half);
                let d = dit as i32;
                let mut l = self.stream.launch_builder(&self.stage);
                l.arg(&mut buf)
                    .arg(&*tw)
                    .arg(&n32)
                    .arg(&half)
                    .arg(&stride)
                    .arg(&d);
                // SAFETY: n/2 butterflies over indices < n; twiddle indices < n/2.
                unsafe { l.launch(grid(n / 2)) }.map_err(driver_err("ntt_stage kernel"))?;
            }
        }
        if inverse {
            let n_inv = Fr::from_u64(n as u64).inverse().expect("n < r");
            let g_inv = coset
                .map(|g| g.inverse().unwrap_or(Fr::ZERO))
                .unwrap_or_else(Fr::one);
            self.scale(&mut buf, &g_inv, &n_inv, log_n, out_rev)?;
        }
        self.stream
            .memcpy_dtoh(&buf, limbs_mut(values))
            .map_err(driver_err("copying output"))?;
        self.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
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
        Capabilities {
            ops: vec![OpSupport {
                op: ops::NTT.into(),
                max_log_size: 28,
            }]
            .into(),
        }
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
        self.gpu(config.device)?.ntt(values, config)
    }
}

zkpipe_core::export_backend!(CudaBackend);
