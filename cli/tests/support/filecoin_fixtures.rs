//! Where the Filecoin tests keep what is slow to make (parameters, the
//! parent cache, recorded circuits): `target/filecoin`, kept between runs.

use std::path::PathBuf;
use std::sync::Once;

/// `target/filecoin` (this binary is `target/<profile>/deps/<name>`).
pub fn fixtures() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().join("filecoin")
}

/// Points filecoin-proofs' parameter and parent caches at [`fixtures`].
/// filecoin-proofs reads its settings once per process: every test calls
/// this first.
pub fn fixtures_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: every test calls this before anything else and the Once
        // makes the others wait, so no thread reads the environment meanwhile.
        unsafe {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", fixtures().join("params"));
            std::env::set_var("FIL_PROOFS_PARENT_CACHE", fixtures().join("parents"));
        }
    });
}
