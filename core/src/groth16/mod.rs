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
mod setup;
mod verifier;

pub use crate::stage::Stage;
pub use builder::ProverBuilder;
pub use key_store::{KeyInfo, KeyStore, Keys, load_user_keys, write_keys};
pub use keys::{Parameters, VerifyingKey};
pub use odd_coset::{HQuery, odd_coset_scalars, root_exponent, snarkjs_root_of_unity};
pub use proof::Proof;
pub use prover::{G1Sums, Prover, StageTimes};
pub use quotient::{quotient_by_ntts, quotient_steps};
pub use setup::{setup, setup_for, setup_with_progress, synthetic_parameters};
pub use verifier::{PreparedVerifyingKey, verify};

use crate::types::Fr;

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

/// Formats a field element as a decimal string (snarkjs' convention).
pub fn fr_to_decimal(x: &Fr) -> String {
    let mut limbs: [u64; 4] = std::array::from_fn(|i| {
        u64::from_le_bytes(x.to_bytes_le()[8 * i..8 * i + 8].try_into().unwrap())
    });
    let mut digits = Vec::new();
    const TEN19: u64 = 10_000_000_000_000_000_000;
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u128 = 0;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 64) | *l as u128;
            *l = (cur / TEN19 as u128) as u64;
            rem = cur % TEN19 as u128;
        }
        digits.push(rem as u64);
    }
    match digits.split_last() {
        None => "0".into(),
        Some((top, rest)) => {
            let mut s = top.to_string();
            for d in rest.iter().rev() {
                s.push_str(&format!("{d:019}"));
            }
            s
        }
    }
}

/// Parses a decimal string into a field element.
///
/// # Errors
/// [`crate::Error::InvalidEncoding`] for a non-decimal string or a value ≥ r.
pub fn fr_from_decimal(s: &str) -> Result<Fr, crate::Error> {
    let bad = || crate::Error::InvalidEncoding(format!("`{s}` is not a decimal field element"));
    if s.is_empty() || s.len() > 80 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let mut limbs = [0u64; 4];
    for d in s.bytes() {
        let mut carry = (d - b'0') as u128;
        for l in limbs.iter_mut() {
            let cur = *l as u128 * 10 + carry;
            *l = cur as u64;
            carry = cur >> 64;
        }
        if carry != 0 {
            return Err(bad());
        }
    }
    let mut bytes = [0u8; 32];
    for (i, l) in limbs.iter().enumerate() {
        bytes[8 * i..8 * i + 8].copy_from_slice(&l.to_le_bytes());
    }
    Fr::from_bytes_le(&bytes).map_err(|_| bad())
}
