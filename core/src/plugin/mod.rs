//! The accelerator plugin ABI: what a backend shared library exports and how
//! the host talks to it.
//!
//! A backend is a `cdylib` that implements [`AcceleratorImpl`] (plain Rust
//! types) and exports it with [`export_backend!`](crate::export_backend). The
//! macro wraps the implementation in [`Guarded`], which validates arguments,
//! catches panics and turns everything into the FFI-safe [`Accelerator`]
//! trait object that crosses the seam. The host loads libraries with
//! [`crate::backend::loader`] and calls them through [`crate::Backend`].
//!
//! Compatibility: [`BackendMod`] and the [`Accelerator`] vtable are abi_stable
//! prefix types. abi_stable checks their layouts and the core crate's version
//! at load time: a plugin built before an op was appended has a shorter
//! vtable and is refused, so appending an op bumps [`ABI_VERSION`], zkpipe's
//! own check on the meaning of the calls.
//!
//! | file | what |
//! |---|---|
//! | `error.rs` | [`ErrorCode`], [`AccelError`] |
//! | `describe.rs` | settings, devices, [`Capabilities`] and the op names in [`ops`] |
//! | `inputs.rs` | the ops' inputs: handles, configs, borrowed R1CS |
//! | `abi.rs` | [`Accelerator`], the FFI-safe trait object |
//! | `rust_trait.rs` | [`AcceleratorImpl`], what a backend implements |
//! | `guard.rs` | [`Guarded`]: arguments checked, panics caught |
//! | `export.rs` | [`BackendMod`], [`BackendPlugin`], [`export_backend!`](crate::export_backend) |

mod abi;
mod describe;
mod error;
mod export;
mod guard;
mod handles;
mod inputs;
mod lent;
mod rust_trait;

pub use abi::*;
pub use describe::*;
pub use error::*;
pub use export::*;
pub use guard::*;
pub use handles::*;
pub use inputs::*;
pub use lent::*;
pub use rust_trait::*;

/// zkpipe's plugin ABI version. Bump it when the meaning of a call changes
/// or an op is appended; the loader refuses plugins whose version differs.
/// 3: BN254's ops (MSMs, resident bases, NTT, quotient) appended.
pub const ABI_VERSION: u32 = 3;
