//! Compiles the kernels with NVRTC, once per curve, for the architectures
//! most GPUs in use have and embeds the CUBINs, so a fresh machine's first proof does not
//! wait a minute per device for a compile. NVRTC is loaded dynamically:
//! a build machine without it embeds nothing (the plugin then compiles at
//! first use, as before), unless `ZKPIPE_REQUIRE_NVRTC` is set, which makes
//! its absence an error. `ZKPIPE_CUDA_EMBED=0` skips the compile.

use std::path::{Path, PathBuf};

// The run-time path's own module: the same source, compiled the same way.
#[allow(dead_code)]
#[path = "src/kernel_build.rs"]
mod kernel_build;
use kernel_build::{KernelCurve, Output};

/// A100, A10/A40/RTX 30, L4/L40/RTX 40, H100/H200.
const ARCHS: [&str; 4] = ["sm_80", "sm_86", "sm_89", "sm_90"];

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-changed=src/kernel_build.rs");
    println!("cargo:rerun-if-env-changed=ZKPIPE_CUDA_EMBED");
    println!("cargo:rerun-if-env-changed=ZKPIPE_REQUIRE_NVRTC");
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let skip = std::env::var("ZKPIPE_CUDA_EMBED").is_ok_and(|v| v == "0");
    // SAFETY: only checks whether the library can be loaded.
    let present = !skip && unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !present && !skip && std::env::var_os("ZKPIPE_REQUIRE_NVRTC").is_some() {
        panic!("ZKPIPE_REQUIRE_NVRTC is set but libnvrtc was not found: no kernels to embed");
    }
    let cubins = if present {
        compile_all(&out)
    } else {
        Vec::new()
    };
    if !present && !skip {
        println!(
            "cargo:warning=libnvrtc not found: the CUDA kernels are not embedded and compile at first use"
        );
    }
    let version = if present {
        kernel_build::nvrtc_version()
    } else {
        String::new()
    };
    let entries: String = cubins
        .iter()
        .map(|(curve, arch, path)| {
            format!(
                "    ({:?}, {arch:?}, include_bytes!({:?})),\n",
                curve.name(),
                path.display()
            )
        })
        .collect();
    let code = format!(
        "/// NVRTC's version at build time (empty: nothing embedded).\n\
         pub const NVRTC_VERSION: &str = {version:?};\n\
         /// (curve, architecture, CUBIN) for each compiled at build time.\n\
         pub const CUBINS: &[(&str, &str, &[u8])] = &[\n{entries}];\n"
    );
    std::fs::write(out.join("embedded_kernels.rs"), code).expect("writing OUT_DIR");
}

/// Each curve's CUBIN for each architecture written under `out`, two
/// compiles at a time (NVRTC is single-threaded, about a minute each).
fn compile_all(out: &Path) -> Vec<(KernelCurve, &'static str, PathBuf)> {
    let jobs: Vec<(KernelCurve, &str)> = KernelCurve::ALL
        .iter()
        .flat_map(|&curve| ARCHS.iter().map(move |&arch| (curve, arch)))
        .collect();
    let compiled: Vec<_> = jobs
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|s| {
                let jobs: Vec<_> = pair
                    .iter()
                    .map(|&(curve, arch)| {
                        s.spawn(move || {
                            let bin = kernel_build::compile(curve, arch, Output::Cubin);
                            (curve, arch, bin)
                        })
                    })
                    .collect();
                jobs.into_iter()
                    .map(|j| j.join().expect("NVRTC compiles are caught"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    compiled
        .into_iter()
        .map(|(curve, arch, bin)| {
            let bin = bin.unwrap_or_else(|e| panic!("the CUDA kernels do not compile: {e}"));
            let path = out.join(format!("kernels-{}-{arch}.cubin", curve.name()));
            std::fs::write(&path, bin).expect("writing OUT_DIR");
            (curve, arch, path)
        })
        .collect()
}
