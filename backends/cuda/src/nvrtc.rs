//! Kernels for a device's architecture: embedded at build time, else
//! from the on-disk CUBIN cache, else compiled now by NVRTC and cached.
//! The bottom layer: it knows nothing of devices, lanes or ops.

use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};

pub use crate::kernel_build::{
    KERNEL_SOURCES, KernelCurve, Output, compile, kernel_source, nvrtc_version,
};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_kernels.rs"));
}

/// The architectures whose CUBIN this build embeds for `curve` (none when
/// it was built without NVRTC), and the NVRTC version that compiled them.
pub fn embedded_archs(curve: KernelCurve) -> (Vec<&'static str>, &'static str) {
    (
        embedded::CUBINS
            .iter()
            .filter(|(c, _, _)| *c == curve.name())
            .map(|(_, arch, _)| *arch)
            .collect(),
        embedded::NVRTC_VERSION,
    )
}

/// The CUBIN this build embeds of `curve`'s kernels for `arch`, with a note
/// for `zkpipe backends`.
pub fn embedded_cubin(curve: KernelCurve, arch: &str) -> Option<(&'static [u8], String)> {
    let (_, _, bin) = embedded::CUBINS
        .iter()
        .find(|(c, a, _)| *c == curve.name() && *a == arch)?;
    let note = format!(
        "kernels embedded at build time (NVRTC {}, {arch})",
        embedded::NVRTC_VERSION
    );
    Some((bin, note))
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

/// Where `curve`'s compiled kernels for `arch` are cached.
pub fn cache_path(curve: KernelCurve, arch: &str) -> PathBuf {
    let hash = Sha256::digest(kernel_source(curve).as_bytes());
    let key: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let name = format!(
        "{key}-{}-{arch}-nvrtc{}.cubin",
        curve.name(),
        nvrtc_version()
    );
    cache_dir().join(name)
}

/// CUBIN of `curve`'s kernels for `arch`, from the disk cache or compiled
/// now (and cached); returns it and a note for `zkpipe backends`.
///
/// # Errors
/// Why NVRTC could not compile the kernels.
pub fn cubin_for(curve: KernelCurve, arch: &str) -> Result<(Vec<u8>, String), String> {
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("libnvrtc not found (install the CUDA 13 NVRTC)".into());
    }
    let path = cache_path(curve, arch);
    if let Ok(bin) = std::fs::read(&path) {
        return Ok((bin, format!("kernels from cache {}", path.display())));
    }
    // About a minute with no other output on an H200 host: say why.
    eprintln!(
        "zkpipe cuda: compiling {} kernels for {arch} (first use of this build here, about a minute; cached in {})",
        curve.name(),
        path.display()
    );
    let t = Instant::now();
    let bin = compile(curve, arch, Output::Cubin)?;
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
