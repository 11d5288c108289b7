//! Groth16 over BLS12-381, bellman/bellperson-compatible: the same QAP
//! (with bellman's extra `input·1 = 0` constraint per public input), the
//! same parameter and proof byte layouts, the same quotient convention
//! (coset shift 7). With the same keys, witness and `r, s`, a proof here is
//! byte-identical to bellperson's.

mod builder;
mod key_store;
mod keys;
mod odd_coset;
mod proof;
mod prover;
mod quotient;
pub(crate) mod setup;
mod verifier;

pub use crate::stage::Stage;
pub use crate::util::decimal::{fr_from_decimal, fr_to_decimal};
pub use builder::ProverBuilder;
pub use key_store::{KeyInfo, KeyStore, Keys, load_user_keys, write_keys};
pub use keys::{Parameters, VerifyingKey};
pub use odd_coset::{HQuery, odd_coset_scalars, root_exponent, snarkjs_root_of_unity};
pub use proof::Proof;
pub use prover::{G1Sums, Prover, StageTimes};
pub use quotient::{quotient_by_ntts, quotient_steps};
pub use setup::{setup, setup_for, setup_with_progress, synthetic_parameters};
pub use verifier::{PreparedVerifyingKey, verify};

/// Coset shift of the quotient's NTTs (Fr's multiplicative generator, as in bellman).
pub const COSET_SHIFT: u64 = 7;

/// `1/Z` on the coset `g·⟨ω⟩` of size n, where `Z(g·ωⁱ) = gⁿ − 1` for every
/// i; `None` when `gⁿ = 1` (g in the subgroup itself).
pub fn vanishing_inverse(g: &crate::Fr, n: usize) -> Option<crate::Fr> {
    g.pow(&[n as u64]).sub(&crate::Fr::one()).inverse()
}

/// The evaluation domain of an R1CS with `constraints` rows and `inputs`
/// public inputs (one included): log2 of the next power of two at or above
/// `constraints + inputs`.
pub fn domain_log_size(constraints: usize, inputs: usize) -> u32 {
    (constraints + inputs)
        .max(1)
        .next_power_of_two()
        .trailing_zeros()
}
