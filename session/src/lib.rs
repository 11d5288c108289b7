//! zkpipe's front door: where a request to prove becomes verified proofs.
//!
//! The CLI and the daemon turn what they are given (flags, gRPC requests,
//! the fleet's queue) into this crate's plain requests and print or send
//! what comes back. What making a proof involves is decided here, once:
//! which backend proves and what falls back to the CPU ([`Session`]),
//! whether the machine can hold the work ([`builtin::BuiltinRequest::check_fits`]),
//! which keys ([`keys::KeySource`]), the blinding ([`Blinding`]), the self-check
//! before anything is written ([`prove`]), atomic outputs ([`output`]), and
//! the scheduling engine for batches ([`batch`], [`policy`]).

pub mod batch;
pub mod builtin;
pub mod circom;
mod crosscheck;
mod filecoin;
pub mod inventory;
pub mod keys;
pub mod output;
pub mod policy;
pub mod prove;
mod session;

pub use session::{BackendRequest, ProverOptions, Session, build_prover, registry};
pub use zkpipe_core::util::random::Blinding;
