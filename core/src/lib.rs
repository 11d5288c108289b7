//! zkpipe-core: the seam between zkpipe's engine and its accelerator plugins.
//!
//! Layers, bottom up: [`types`] (BLS12-381 field and curve types laid out as
//! blst's) → [`reference`](backend::reference) (naive MSM and DFT, the
//! oracle) → [`plugin`] (the FFI-safe accelerator ABI) →
//! [`loader`](backend::loader) (finds and loads backend libraries) →
//! [`Backend`] (the host's validated handle on one backend instance).
//!
//! # Modules
//!
//! The ground every layer stands on:
//! - [`types`]: BLS12-381's field and curve types that cross the plugin seam;
//!   [`bn254`]: BN254's; [`curve`]: which curve a key, proof or op is for.
//! - [`stage`]: the stages of one partition's proof, as stage times and timelines name them.
//! - `error`: the engine's [`Error`]; errors that cross the seam convert into it.
//!
//! The seam, and the host's side of it:
//! - [`plugin`]: the accelerator plugin ABI: what a backend library exports.
//! - [`backend`]: [`Backend`], its loader, lent buffers, groups, split MSMs, oracle.
//!
//! Proving:
//! - [`r1cs`]: circuit sources and their constraints, recorded once as R1CS.
//! - [`groth16`]: Groth16 over BLS12-381, bellperson-compatible: setup, proving, verifying.
//! - [`sched`]: the scheduling engine: many proof requests over worker pools.
//! - [`crosscheck`]: a backend against the reference, op by op and a whole
//!   proof, compared bit for bit (it stands on `backend` and `groth16`).
//!
//! Helpers:
//! - [`util`]: the cache folder, files, decimals, the machine, progress, randomness, samples.

// The ground.
pub mod bn254;
pub mod curve;
mod error;
pub mod stage;
pub mod types;

// The seam.
pub mod backend;
pub mod plugin;

// Proving.
pub mod crosscheck;
pub mod groth16;
pub mod r1cs;
pub mod scalar;
pub mod sched;

// Helpers.
pub mod util;

pub use backend::Backend;
pub use curve::Curve;
pub use error::Error;
pub use scalar::ScalarField;
pub use stage::Stage;
pub use types::{Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Re-exported for plugins (the export macro names it).
pub use abi_stable;
