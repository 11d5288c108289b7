//! circom and snarkjs files for zkpipe: bring your own circuit.
//!
//! Readers turn circom's `.r1cs`, snarkjs's `.wtns` and a snarkjs Groth16
//! `.zkey` (BLS12-381; `.r1cs` and the zkey's parts on BN254 too) into zkpipe's [`R1cs`](zkpipe_core::r1cs::R1cs),
//! [`Witness`](zkpipe_core::r1cs::Witness) and proving
//! [`Parameters`](zkpipe_core::groth16::Parameters), so the usual pipeline
//! proves them on any backend; [`WitnessGenerator`] runs circom's
//! WebAssembly witness generator on an `input.json` (as `snarkjs wtns
//! calculate` does); [`json`] reads and writes snarkjs's proof,
//! public-signal and verification-key JSON ([`json_bn254`] reads BN254's);
//! [`solidity`] writes an Ethereum verifier for a BN254 key; [`write_zkey`] and
//! [`write_zkey_bn254`] write zkpipe's test keys as a zkey that snarkjs
//! proves with. Readers never panic on bad
//! bytes and allocate no more than the file holds.

pub mod binfile;
pub mod field;
pub mod json;
pub mod json_bn254;
pub mod prove_bn254;
pub mod r1cs;
pub mod solidity;
pub mod witness_wasm;
pub mod wtns;
pub mod zkey;
pub mod zkey_bn254;
pub mod zkey_circuit;
pub mod zkey_write;

pub use r1cs::CircomR1cs;
pub use witness_wasm::{WitnessGenerator, calculate_witness};
pub use wtns::{
    CurveWitness, load_wtns, witness_for, wtns_either_from_bytes, wtns_from_bytes, wtns_to_bytes,
};
pub use zkey::{ZkeyHeader, load_zkey, load_zkey_alone, load_zkey_vk, zkey_from_bytes};
pub use zkey_circuit::products_as_c;
pub use zkey_write::{write_zkey, write_zkey_bn254};
