//! Filecoin's proofs through zkpipe: PoRep C2, WindowPoSt, WinningPoSt and
//! SnapDeals from filecoin-proofs 19's own circuits (written for bellperson 0.27),
//! recorded into zkpipe's R1CS once per parameter set, with keys read from
//! Filecoin's parameter cache, and every proof verified by filecoin-proofs'
//! verifiers before it is returned.
//!
//! ```ignore
//! let engine = FilecoinProver::new(Box::new(move |p, r| ProverBuilder::new(be.clone()).build(p, r)), cache);
//! let c1 = porep::C1::parse(&std::fs::read("c1.json")?)?;
//! let proof = porep::seal_commit(&engine, &c1, ids, Blinding::Random, &Silent)?.to_bytes();
//! ```

pub mod adapter;
pub mod commitment;
pub mod in_shape;
pub mod job;
pub mod params;
pub mod porep;
pub mod post;
pub mod prover;
pub mod registry;
pub mod shape;
pub mod snap;

pub use filecoin_proofs::types::PoStType;
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
pub use job::FilecoinJob;
pub use prover::{Blinding, FilecoinProver, Proved};

#[cfg(feature = "testing")]
pub mod testing;
