//! The kernels compile with NVRTC for the architectures zkpipe embeds. The
//! build script compiles them (a compile error fails the build); this
//! checks what it embedded. CI installs NVRTC 13.0 (the H200 driver's
//! version) and sets `ZKPIPE_REQUIRE_NVRTC=1`, so there a build without
//! embedded kernels fails; elsewhere the check is skipped with a message.

use zkpipe_backend_cuda::{KernelCurve, embedded_archs, embedded_cubin, kernels};

#[test]
fn the_common_architectures_are_embedded_with_every_kernel() {
    for curve in KernelCurve::ALL {
        check_embedded(curve);
    }
}

fn check_embedded(curve: KernelCurve) {
    let (archs, version) = embedded_archs(curve);
    if archs.is_empty() {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_NVRTC").is_none(),
            "ZKPIPE_REQUIRE_NVRTC is set but this build embedded no kernels"
        );
        eprintln!("skipped: built without NVRTC (put a CUDA 13 NVRTC on LD_LIBRARY_PATH)");
        return;
    }
    assert_eq!(archs, ["sm_80", "sm_86", "sm_89", "sm_90"]);
    assert!(version.starts_with("13."), "NVRTC {version}");
    for arch in archs {
        let (bin, note) = embedded_cubin(curve, arch).unwrap();
        // An ELF for CUDA (e_machine 190).
        assert_eq!(&bin[..4], b"\x7fELF", "{arch}");
        assert_eq!(u16::from_le_bytes([bin[18], bin[19]]), 190, "{arch}");
        for k in kernels() {
            let name = format!("\0{k}\0");
            assert!(
                bin.windows(name.len()).any(|w| w == name.as_bytes()),
                "{arch}: kernel {k} missing from the CUBIN"
            );
        }
        assert!(note.contains(arch) && note.contains(version), "{note}");
    }
    assert!(embedded_cubin(curve, "sm_75").is_none());
}
