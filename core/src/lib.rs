//! zkpipe-core: the seam between zkpipe's engine and its accelerator plugins.
//!
//! Layers, bottom up: [`types`] (BLS12-381 field and curve types laid out as
//! blst's) → [`reference`] (naive MSM and DFT, the oracle) → [`plugin`] (the
//! FFI-safe accelerator ABI) → [`loader`] (finds and loads backend libraries)
//! → [`Backend`] (the host's validated handle on one backend instance).

pub mod backend;
pub mod cache;
pub mod circuit;
pub mod crosscheck;
pub mod decimal;
mod error;
pub mod fsutil;
pub mod groth16;
pub mod group;
pub mod lent_buffers;
pub mod loader;
pub mod machine;
pub mod msm_split;
pub mod plugin;
pub mod progress;
pub mod r1cs;
pub mod random;
pub mod reference;
pub mod sample;
pub mod sched;
pub mod stage;
pub mod types;

pub use backend::Backend;
pub use error::Error;
pub use stage::Stage;
pub use types::{Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Re-exported for plugins (the export macro names it).
pub use abi_stable;
