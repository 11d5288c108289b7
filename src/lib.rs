//! zkpipe: Groth16 over BLS12-381 with swappable accelerator plugins.
//!
//! This root crate re-exports [`zkpipe_core`] and owns the workspace-level
//! conformance tests (`tests/`) and benches (`benches/`).
pub use zkpipe_core::*;
