//! NVRTC: the kernel sources as one translation unit, compiling them for a
//! device's architecture, and the on-disk CUBIN cache. The bottom layer:
//! it knows nothing of devices, lanes or ops.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};

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
    // About a minute with no other output on an H200 host: say why.
    eprintln!(
        "zkpipe cuda: compiling kernels for {arch} (first use of this build here, about a minute; cached in {})",
        path.display()
    );
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
        let _ = zkpipe_core::util::fsutil::write_atomically(&path, &bin);
    }
    Ok((bin, note))
}
