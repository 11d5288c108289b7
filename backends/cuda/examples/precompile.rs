//! Fills the kernel cache ahead of time, e.g. on a build machine without a
//! GPU, so a fleet's first start skips the NVRTC compile:
//!
//! ```text
//! ZKPIPE_CUDA_CACHE=/shared/zkpipe-cuda cargo run --release -p zkpipe-backend-cuda --example precompile -- sm_90
//! ```

fn main() {
    let archs: Vec<String> = std::env::args().skip(1).collect();
    if archs.is_empty() {
        eprintln!("usage: precompile ARCH... (e.g. sm_90 sm_80)");
        std::process::exit(2);
    }
    for arch in archs {
        for curve in zkpipe_backend_cuda::KernelCurve::ALL {
            let name = curve.name();
            match zkpipe_backend_cuda::cubin_for(curve, &arch) {
                Ok((bin, note)) => println!("{arch} {name}: {} bytes; {note}", bin.len()),
                Err(e) => {
                    eprintln!("{arch} {name}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
}
