//! The kernel sources as one translation unit and compiling them with
//! NVRTC. Shared by the build script (`build.rs`, which embeds CUBINs for
//! the common architectures) and the run-time path
//! (`nvrtc.rs`), so both compile the same source the same way.

/// Kernel sources, in include order (the `#include` lines are dropped: NVRTC
/// gets one translation unit).
pub const KERNEL_SOURCES: [(&str, &str); 6] = [
    ("arith.cuh", include_str!("../kernels/arith.cuh")),
    ("fr.cuh", include_str!("../kernels/fr.cuh")),
    ("fp.cuh", include_str!("../kernels/fp.cuh")),
    ("ntt.cu", include_str!("../kernels/ntt.cu")),
    ("msm.cu", include_str!("../kernels/msm.cu")),
    ("spmv.cu", include_str!("../kernels/spmv.cu")),
];

/// The curve a module of kernels is compiled for: the same sources, with
/// the field constants of one curve (`ZKPIPE_BN254` selects BN254's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelCurve {
    /// BLS12-381 (the default of the sources).
    Bls12_381,
    /// BN254.
    Bn254,
}

impl KernelCurve {
    /// Both, in the order the build embeds them.
    pub const ALL: [KernelCurve; 2] = [KernelCurve::Bls12_381, KernelCurve::Bn254];

    /// The name used in cache files and notes.
    pub fn name(self) -> &'static str {
        match self {
            KernelCurve::Bls12_381 => "bls12_381",
            KernelCurve::Bn254 => "bn254",
        }
    }
}

/// The single translation unit NVRTC compiles for `curve`.
pub fn kernel_source(curve: KernelCurve) -> String {
    let define = match curve {
        KernelCurve::Bls12_381 => "",
        KernelCurve::Bn254 => "#define ZKPIPE_BN254\n",
    };
    let body = KERNEL_SOURCES
        .iter()
        .flat_map(|(_, s)| {
            s.lines().filter(|l| {
                let l = l.trim_start();
                !l.starts_with("#include") && !l.starts_with("#pragma once")
            })
        })
        .collect::<Vec<_>>()
        .join("\n");
    format!("{define}{body}")
}

/// What NVRTC produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// PTX text (the driver JIT-compiles it at load).
    Ptx,
    /// Machine code for exactly `arch`: no JIT at load, so it is what the cache keeps.
    Cubin,
}

/// Compiles `curve`'s kernels for `arch` (e.g. `sm_90`) with the NVRTC found at run time.
///
/// # Errors
/// The NVRTC log when compilation fails, or why NVRTC could not be used.
pub fn compile(curve: KernelCurve, arch: &str, output: Output) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "libnvrtc not found (install the CUDA 13 NVRTC and put it on the library path)".into(),
        );
    }
    let src = std::ffi::CString::new(kernel_source(curve)).expect("no NUL in the kernel sources");
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
                    Err(format!(
                        "NVRTC failed for {} on {arch} ({e:?}):\n{log}",
                        curve.name()
                    ))
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
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .map_err(|_| "NVRTC panicked".to_string())?
}

/// The NVRTC version found, e.g. `13.0` (NVRTC must be present).
pub fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is present (checked by the caller); writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("{major}.{minor}")
}
