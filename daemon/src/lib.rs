//! zkpipe's proving service: `zkpipe serve` runs it, `zkpipe client` and
//! [`client`] talk to it.
//!
//! - [`config`]: `zkpipe.toml` and its command-line overrides.
//! - [`daemon`]: jobs, keys, devices and the engine, without gRPC.
//! - [`keys`]: keys loaded once and kept resident, evicted when idle.
//! - [`fleet_jobs`]: zkpipe's jobs in the fleet queue (payload, result).
//! - [`fleet_node`]: the daemon as a fleet node (`[queue] url`).
//! - [`circom_keys`]: circom keys found by their zkey's SHA-256.
//! - [`source`]: each job's key, witnesses and blinding, for the engine.
//! - [`verify`]: verify before return, recompute on the CPU reference.
//! - [`validate`]: every request field checked.
//! - [`service`]: the gRPC service (`proto/zkpipe/v1/prover.proto`).
//! - [`cuzk`]: cuzk's gRPC API (`proto/cuzk/v1/proving.proto`) for Curio.
//! - [`listen`]: Unix socket and TCP, bearer tokens.
//! - [`tls_files`]: TLS certificates and keys, checked when named.
//! - [`server`]: start, serve, drain on SIGTERM.
//! - [`metrics`], [`load`], [`status_http`], [`logging`]: observability;
//!   [`load`] says what bounds the daemon (stage inflation, floors).
//! - [`client`]: the Rust client.

pub mod circom_keys;
pub mod client;
pub mod config;
pub mod cuzk;
pub mod daemon;
pub mod fleet_jobs;
pub mod fleet_node;
pub mod fleet_submit;
pub mod incoming;
pub mod keys;
pub mod listen;
pub mod load;
pub mod logging;
pub mod metrics;
pub mod remote_batch;
pub mod reply_text;
pub mod server;
pub mod service;
pub mod source;
pub mod status_http;
pub mod tls_files;
pub mod validate;
pub mod verify;

/// The generated gRPC types and service of `proto/zkpipe/v1/prover.proto`.
#[allow(missing_docs, missing_debug_implementations, clippy::all)]
pub mod proto {
    tonic::include_proto!("zkpipe.v1");
}

/// The generated gRPC types and service of cuzk's
/// `proto/cuzk/v1/proving.proto`.
#[allow(missing_docs, missing_debug_implementations, clippy::all)]
pub mod cuzk_proto {
    tonic::include_proto!("cuzk.v1");
}
